//===- DistOps.h - dist dialect ops and attributes --------------*- C++ -*-===//

#ifndef DIALECTS_DIST_DISTOPS_H
#define DIALECTS_DIST_DISTOPS_H

#include "dialects/dist/DistDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/dist/DistEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/dist/DistAttrs.h.inc"

#define GET_OP_CLASSES
#include "dialects/dist/DistOps.h.inc"

namespace mlir::dist {
/// The replica `op` runs on, if it has been placed.
std::optional<int64_t> getReplica(Operation *op);
/// Places `op` on `replica`.
void setReplica(Operation *op, int64_t replica);
} // namespace mlir::dist

#endif // DIALECTS_DIST_DISTOPS_H
