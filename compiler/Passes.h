//===- Passes.h - the graphc passes -----------------------------*- C++ -*-===//

#ifndef COMPILER_PASSES_H
#define COMPILER_PASSES_H

#include "dialects/dist/DistOps.h"
#include "dialects/exec/ExecOps.h"
#include "dialects/graph/GraphOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Pass/Pass.h"

namespace mlir::graphc {

#define GEN_PASS_DECL
#include "compiler/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Passes.h.inc"

} // namespace mlir::graphc

#endif // COMPILER_PASSES_H
