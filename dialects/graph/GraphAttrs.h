//===- GraphAttrs.h - graph dialect attributes ------------------*- C++ -*-===//

#ifndef DIALECTS_GRAPH_GRAPHATTRS_H
#define DIALECTS_GRAPH_GRAPHATTRS_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include <optional>

#include "dialects/graph/GraphEnums.h.inc"

namespace mlir::graph {
/// Parses a double written as an MLIR float or integer literal.
FailureOr<llvm::APFloat> parseF64(AsmParser &parser);
/// Prints a double so that it reads back exactly and always as a float.
void printF64(AsmPrinter &printer, const llvm::APFloat &value);
/// The shortest decimal text that reads back as `value` ("0.001", "-1").
std::string formatF64(double value);
/// Parses `true` or `false`.
FailureOr<bool> parseBool(AsmParser &parser);
/// Parses a double that is there (an optional parameter's value).
FailureOr<std::optional<llvm::APFloat>> parseMaybeF64(AsmParser &parser);
/// Whether two optional doubles are both absent or bitwise equal.
bool sameF64(const std::optional<llvm::APFloat> &a,
             const std::optional<llvm::APFloat> &b);
/// Parses `[1, 2]`, printed by printI64List.
FailureOr<SmallVector<int64_t>> parseI64List(AsmParser &parser);
void printI64List(AsmPrinter &printer, ArrayRef<int64_t> values);
} // namespace mlir::graph

#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.h.inc"

namespace mlir::graph {
/// The options every optimizer attribute (#graph.sgd, #graph.adam,
/// #graph.rmsprop, #graph.adagrad, #graph.adamax, #graph.nadam) carries besides
/// its own hyper-parameters; 0 is off.
struct OptimizerOptions {
  double learningRate = 0;
  double clipnorm = 0, globalClipnorm = 0, clipvalue = 0, weightDecay = 0;
  /// A learning-rate schedule attribute (#graph.exponential_decay, ...), or
  /// null for a constant rate.
  Attribute schedule;
  /// Keras' gradient_accumulation_steps (0: off, else >= 2): the update
  /// adds the gradient to a slot and applies the mean every N steps.
  int64_t gradientAccumulationSteps = 0;
};
/// PiecewiseConstantDecay's boundaries at most (the runtime's
/// LearningRateSchedule::kMaxBoundaries).
constexpr size_t kMaxScheduleBoundaries = 16;
/// The options of `optimizer`, which must be one of the optimizer
/// attributes.
OptimizerOptions getOptimizerOptions(Attribute optimizer);
} // namespace mlir::graph

#endif // DIALECTS_GRAPH_GRAPHATTRS_H
