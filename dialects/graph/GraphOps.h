//===- GraphOps.h - graph dialect ops ---------------------------*- C++ -*-===//

#ifndef DIALECTS_GRAPH_GRAPHOPS_H
#define DIALECTS_GRAPH_GRAPHOPS_H

#include "dialects/graph/GraphAttrs.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::graph {
class InputOp;
class OutputOp;

/// The size of one spatial output axis of a Keras convolution or pooling
/// window, or a value <= 0 when the window does not fit.
int64_t windowOutputSize(int64_t input, int64_t window, int64_t stride,
                         int64_t dilation, Padding padding);
} // namespace mlir::graph

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

#endif // DIALECTS_GRAPH_GRAPHOPS_H
