//===- PlanEmitter.h - exec programs to a plan file -------------*- C++ -*-===//

#ifndef COMPILER_PLANEMITTER_H
#define COMPILER_PLANEMITTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <vector>

namespace mlir::graphc {

/// Serialises `module` (graph.variable ops, graph.training and lowered,
/// memory-planned exec.program ops) as a FlatBuffers plan
/// (runtime/plan/plan.fbs). Emits a diagnostic and fails on anything the
/// plan cannot represent.
LogicalResult emitPlan(ModuleOp module, std::vector<uint8_t> &bytes);

} // namespace mlir::graphc

#endif // COMPILER_PLANEMITTER_H
