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

/// A convolution kernel of type `kernel`, stored in `layout`, as the HWIO
/// type the convolution's shape rules speak of: OHWI [F, kh, kw, C / g]
/// reads as [kh, kw, C / g, F]; an HWIO kernel is returned as it is.
RankedTensorType hwioKernelType(RankedTensorType kernel, FilterLayout layout);

/// The result type of a conv2d of `input` (NHWC) by `kernel` (HWIO, input
/// channels per group when `groups` > 1), or failure with a diagnostic at
/// `loc` when given.
FailureOr<RankedTensorType>
inferConv2DType(std::optional<Location> loc, RankedTensorType input,
                RankedTensorType kernel, ArrayRef<int64_t> strides,
                Padding padding, ArrayRef<int64_t> dilations,
                int64_t groups = 1);
/// The result type of a 2-D pooling window over `input` (NHWC).
FailureOr<RankedTensorType> inferPool2DType(std::optional<Location> loc,
                                            RankedTensorType input,
                                            ArrayRef<int64_t> poolSize,
                                            ArrayRef<int64_t> strides,
                                            Padding padding);

/// Whether loss `kind` compares each prediction with its target (computed by
/// graph.pointwise_loss), rather than taking class labels.
bool isPointwiseLoss(LossKind kind);
/// Whether loss `kind` is one ratio of sums over the whole batch (dice,
/// tversky: graph.overlap_sums and graph.overlap_loss), among the
/// pointwise ones.
bool isOverlapLoss(LossKind kind);
/// graph.overlap_sums' length: sum t p, sum t, sum p, sum w, rows.
inline constexpr int64_t kOverlapSums = 5;
/// The pointwise kind whose mean is Keras metric `metric` (the errors,
/// binary accuracy; the root mean squared error is the mean squared
/// error's), or none (the other accuracies, the confusion metrics).
std::optional<LossKind> pointwiseMetricKind(MetricKind metric);

/// Ops whose result is a sum over their replica's rows that dist-replicate
/// sums over the replicas (graph.overlap_sums, graph.kept_rows).
template <typename ConcreteType>
class SummedAcrossReplicas
    : public OpTrait::TraitBase<ConcreteType, SummedAcrossReplicas> {};
} // namespace mlir::graph

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.h.inc"

namespace mlir::graph {
/// One value the training and evaluation steps log.
struct LoggedValue {
  /// Keras' log name: "loss", "<output>_loss", a metric's ("accuracy", or
  /// "<output>_accuracy" for a model of several outputs).
  std::string name;
  /// The output it is about (-1: the total loss).
  int64_t output = -1;
  /// The metric, or null for a loss.
  MetricAttr metric;
};
/// What `training`'s steps log, in order: the loss, each output's loss when
/// there are several, then each output's metrics. `outputNames` are the
/// model's (its graph.output's names; null for a model of one output).
SmallVector<LoggedValue> loggedValues(TrainingOp training,
                                      ArrayAttr outputNames);
} // namespace mlir::graph

#endif // DIALECTS_GRAPH_GRAPHOPS_H
