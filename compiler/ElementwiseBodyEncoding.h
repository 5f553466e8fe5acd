//===- ElementwiseBodyEncoding.h - a fused body as plan text ----*- C++ -*-===//
//
// graph-lower-to-exec writes a `graph.elementwise` body into its launch's
// config as text; runtime/plan/ElementwiseBody.h parses it back. The two
// sides are tested against each other (test/unit/ElementwiseBodyTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef COMPILER_ELEMENTWISEBODYENCODING_H
#define COMPILER_ELEMENTWISEBODYENCODING_H

#include "dialects/graph/GraphOps.h"

#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::graphc {

/// The body of `op` in the plan's elementwise encoding (the grammar is at
/// the definition, LowerToExecPass.cpp); a diagnostic on `op` and failure
/// for a body the encoding cannot hold.
FailureOr<std::string> encodeElementwiseBody(graph::ElementwiseOp op);

} // namespace mlir::graphc

#endif // COMPILER_ELEMENTWISEBODYENCODING_H
