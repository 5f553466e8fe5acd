//===- GraphOps.cpp - graph dialect ops -----------------------------------===//
//
// Shape inference doubles as verification: every op with InferTypeOpAdaptor
// checks its operands here and says precisely what is wrong, and MLIR checks
// the declared result type against the inferred one.
//
//===----------------------------------------------------------------------===//

#include "dialects/graph/GraphOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/CheckedArithmetic.h"

#include <cmath>

using namespace mlir;
using namespace mlir::graph;

int64_t mlir::graph::windowOutputSize(int64_t input, int64_t window,
                                      int64_t stride, int64_t dilation,
                                      Padding padding) {
  // Written so that no step can overflow for positive arguments: a window
  // whose extent does not fit in int64_t does not fit the input either.
  if (padding == Padding::same)
    return input / stride + (input % stride != 0);
  std::optional<int64_t> span = llvm::checkedMul(window - 1, dilation);
  if (!span || *span >= input)
    return 0;
  return (input - 1 - *span) / stride + 1;
}

/// `value`'s type as a ranked tensor of rank `rank` (any rank when negative),
/// or an error naming the operand.
static FailureOr<RankedTensorType> rankedOperand(std::optional<Location> loc,
                                                 Value value, StringRef name,
                                                 int64_t rank,
                                                 StringRef layout = "") {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  if (!type || !type.hasStaticShape())
    return emitOptionalError(loc, "expects ", name,
                             " to be a statically shaped tensor, got ",
                             value.getType());
  if (rank >= 0 && type.getRank() != rank) {
    if (layout.empty())
      return emitOptionalError(loc, "expects ", name, " of rank ", rank,
                               ", got rank ", type.getRank());
    return emitOptionalError(loc, "expects ", name, " of rank ", rank, " (",
                             layout, "), got rank ", type.getRank());
  }
  return type;
}

static std::string pairText(ArrayRef<int64_t> v) {
  return std::to_string(v[0]) + "x" + std::to_string(v[1]);
}

static LogicalResult verifyPositivePair(std::optional<Location> loc,
                                        StringRef name, ArrayRef<int64_t> v) {
  if (v.size() != 2)
    return emitOptionalError(loc, "expects ", name, " to have 2 values, got ",
                             v.size());
  if (v[0] < 1 || v[1] < 1)
    return emitOptionalError(loc, "expects ", name, " >= 1, got [", v[0], ", ",
                             v[1], "]");
  return success();
}

/// The NHWC output shape of a window of `window` (HxW) sliding over `input`.
static FailureOr<SmallVector<int64_t>>
slideWindow(std::optional<Location> loc, RankedTensorType input,
            ArrayRef<int64_t> window, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> dilations, Padding padding, int64_t channels,
            StringRef what) {
  SmallVector<int64_t> shape{input.getDimSize(0), 0, 0, channels};
  for (int axis = 0; axis < 2; ++axis) {
    shape[1 + axis] = windowOutputSize(input.getDimSize(1 + axis), window[axis],
                                       strides[axis], dilations[axis], padding);
    if (shape[1 + axis] <= 0)
      return emitOptionalError(loc, what, " ", pairText(window),
                               " does not fit input ",
                               pairText(input.getShape().slice(1, 2)),
                               " with padding ", stringifyPadding(padding));
  }
  return shape;
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult VariableOp::verify() {
  std::optional<ArrayRef<int64_t>> shape = getLogicalShape();
  std::optional<ArrayRef<int64_t>> permutation = getLogicalPermutation();
  if (!shape && !permutation)
    return success();
  if (!shape || !permutation)
    return emitOpError("logical_shape and logical_permutation go together");
  if (shape->size() != permutation->size())
    return emitOpError("logical_permutation has ")
           << permutation->size() << " axes, logical_shape " << shape->size();
  SmallVector<bool> seen(shape->size(), false);
  for (int64_t axis : *permutation) {
    if (axis < 0 || axis >= static_cast<int64_t>(shape->size()) || seen[axis])
      return emitOpError("logical_permutation is not a permutation of ")
             << shape->size() << " axes";
    seen[axis] = true;
  }
  int64_t elements = 1;
  for (int64_t d : *shape) {
    std::optional<int64_t> product =
        d < 1 ? std::nullopt : llvm::checkedMul(elements, d);
    if (!product)
      return emitOpError("logical_shape must have dimensions >= 1 whose "
                         "product fits in 64 bits");
    elements = *product;
  }
  if (elements != getTensorType().getNumElements())
    return emitOpError("logical_shape has ")
           << elements << " elements, the type "
           << getTensorType().getNumElements();
  return success();
}

LogicalResult
ReadVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto variable =
      symbolTable.lookupNearestSymbolFrom<VariableOp>(*this, getVariableAttr());
  if (!variable)
    return emitOpError("'")
           << getVariable() << "' does not name a graph.variable";
  if (variable.getType() != getValue().getType())
    return emitOpError("result type ")
           << getValue().getType() << " does not match variable "
           << getVariableAttr() << " of type " << variable.getType();
  return success();
}

OutputOp ModelOp::getOutputOp() {
  return dyn_cast<OutputOp>(getBlock().getTerminator());
}

SmallVector<InputOp> ModelOp::getInputOps() {
  return llvm::to_vector(getBlock().getOps<InputOp>());
}

LogicalResult OutputOp::verify() {
  std::optional<ArrayAttr> names = getNames();
  if (names && (names->empty() || getOutputs().size() % names->size() != 0))
    return emitOpError("names ")
           << names->size() << " values per replica, but returns "
           << getOutputs().size();
  return success();
}

LogicalResult ModelOp::verify() {
  Block &block = getBlock();
  if (block.getNumArguments() != 0)
    return emitOpError("takes its inputs from graph.input ops, not block "
                       "arguments");
  if (block.empty() || !isa<OutputOp>(block.back()))
    return emitOpError("must end with graph.output");
  if (cast<OutputOp>(block.back()).getOutputs().empty())
    return emitOpError("must return at least one value");
  // Replicas share input names (dist-replicate): a name is unique per device.
  llvm::DenseSet<std::pair<StringRef, Attribute>> names;
  for (InputOp input : block.getOps<InputOp>())
    if (!names.insert({input.getName(), input->getAttr("dist.device")}).second)
      return input.emitOpError("duplicate input name '")
             << input.getName() << "'";
  return success();
}

LogicalResult InputOp::verify() {
  if (getOutput().getType().getRank() < 1)
    return emitOpError("needs a leading batch dimension");
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  return success();
}

double TrainingOp::getLearningRate() {
  return getOptimizerOptions(getOptimizer()).learningRate;
}

SmallVector<OutputLossAttr> TrainingOp::getLossList() {
  return llvm::to_vector(getLosses().getAsRange<OutputLossAttr>());
}

namespace {
/// A loss's options, as #graph.output_loss, graph.pointwise_loss and its
/// gradient carry them.
struct LossOptions {
  bool fromLogits = false;
  std::optional<llvm::APFloat> smoothing, delta, alpha, beta, gamma;
  bool classBalancing = false;
};

/// Where a loss's option errors go: an op's location (none: no diagnostic,
/// as inferReturnTypes wants), or an attribute's emitError.
class LossDiagnostic {
public:
  LossDiagnostic(std::optional<Location> loc) : loc_(loc) {}
  LossDiagnostic(Location loc) : loc_(loc) {}
  LossDiagnostic(function_ref<InFlightDiagnostic()> emit) : emit_(emit) {}

  template <typename... Args> LogicalResult operator()(Args &&...args) const {
    if (emit_) {
      InFlightDiagnostic diag = emit_();
      (diag << ... << std::forward<Args>(args));
      return diag;
    }
    return emitOptionalError(loc_, std::forward<Args>(args)...);
  }

private:
  std::optional<Location> loc_;
  function_ref<InFlightDiagnostic()> emit_;
};
} // namespace

/// A #graph.output_loss's options.
static LossOptions lossOptionsOf(OutputLossAttr loss) {
  return {loss.getFromLogits(),
          loss.getLabelSmoothing(),
          loss.getDelta(),
          loss.getAlpha(),
          loss.getBeta(),
          loss.getGamma(),
          loss.getApplyClassBalancing()};
}
/// graph.pointwise_loss's (or its adaptor's, or its gradient's): no beta.
template <typename OpOrAdaptor>
static LossOptions lossOptionsOf(OpOrAdaptor op) {
  return {op.getFromLogits(),
          op.getLabelSmoothing(),
          op.getDelta(),
          op.getAlpha(),
          std::nullopt,
          op.getGamma(),
          op.getApplyClassBalancing()};
}

static LogicalResult verifyLossOptions(const LossDiagnostic &error,
                                       LossKind kind,
                                       const LossOptions &options);

std::optional<LossKind> mlir::graph::pointwiseMetricKind(MetricKind metric) {
  switch (metric) {
  case MetricKind::mean_absolute_error:
    return LossKind::mean_absolute_error;
  case MetricKind::mean_squared_error:
  case MetricKind::root_mean_squared_error:
    return LossKind::mean_squared_error;
  case MetricKind::mean_absolute_percentage_error:
    return LossKind::mean_absolute_percentage_error;
  case MetricKind::mean_squared_logarithmic_error:
    return LossKind::mean_squared_logarithmic_error;
  case MetricKind::binary_accuracy:
    return LossKind::binary_accuracy;
  default:
    return std::nullopt;
  }
}

bool MetricAttr::isConfusionMetric() const {
  return getKind() == MetricKind::precision ||
         getKind() == MetricKind::recall || getKind() == MetricKind::auc;
}

LogicalResult MetricAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 MetricKind kind, StringRef name, int64_t k,
                                 llvm::APFloat threshold, int64_t classId,
                                 int64_t numThresholds, AucCurve curve,
                                 AucSummation summation, bool fromLogits) {
  using K = MetricKind;
  auto one = [&](std::initializer_list<K> kinds) {
    return llvm::is_contained(kinds, kind);
  };
  StringRef what = stringifyMetricKind(kind);
  if (name.empty())
    return emitError() << "metric " << what << " needs a name";
  bool topK = one(
      {K::top_k_categorical_accuracy, K::sparse_top_k_categorical_accuracy});
  bool confusion = one({K::precision, K::recall});
  if (topK && k < 1)
    return emitError() << "metric " << what << " needs k >= 1, got " << k;
  if (!topK && !confusion && k != 0)
    return emitError() << "k is the top-k accuracies', precision's and "
                          "recall's, not "
                       << what << "'s";
  if (confusion && k < 0)
    return emitError() << "metric " << what << " needs k >= 0 (0: off), got "
                       << k;
  double t = threshold.convertToDouble();
  if (!std::isfinite(t))
    return emitError() << "metric " << what << " needs a finite threshold";
  if (t != 0.5 && !confusion && kind != K::binary_accuracy)
    return emitError() << "threshold is binary_accuracy's, precision's and "
                          "recall's, not "
                       << what << "'s";
  if (classId != -1 && !confusion)
    return emitError() << "class_id is precision's and recall's, not " << what
                       << "'s";
  if (classId < -1)
    return emitError() << "metric " << what
                       << " needs class_id >= 0 (-1: off), got " << classId;
  bool auc = kind == K::auc;
  if (!auc && (numThresholds != 200 || curve != AucCurve::roc ||
               summation != AucSummation::interpolation || fromLogits))
    return emitError() << "num_thresholds, curve, summation and from_logits "
                          "are auc's, not "
                       << what << "'s";
  if (auc && numThresholds < 2)
    return emitError() << "metric auc needs num_thresholds >= 2, got "
                       << numThresholds;
  return success();
}

SmallVector<MetricAttr> OutputLossAttr::getMetricList() const {
  SmallVector<MetricAttr> list;
  if (ArrayAttr metrics = getMetrics())
    for (Attribute m : metrics)
      list.push_back(cast<MetricAttr>(m));
  return list;
}

LogicalResult OutputLossAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, LossKind kind,
    llvm::APFloat weight, bool fromLogits,
    std::optional<llvm::APFloat> labelSmoothing,
    std::optional<llvm::APFloat> delta, std::optional<llvm::APFloat> alpha,
    std::optional<llvm::APFloat> beta, std::optional<llvm::APFloat> gamma,
    bool applyClassBalancing, std::optional<int64_t> ignoreClass,
    ArrayRef<int64_t> axis, bool sumReduction, ArrayAttr metrics) {
  if (kind == LossKind::binary_accuracy)
    return emitError() << "binary_accuracy is a metric, not a loss";
  if (!std::isfinite(weight.convertToDouble()))
    return emitError() << "needs a finite weight";
  if (labelSmoothing) {
    double ls = labelSmoothing->convertToDouble();
    if (kind == LossKind::categorical_crossentropy && !(ls >= 0 && ls < 1))
      return emitError() << "needs label_smoothing in [0, 1), got "
                         << formatF64(ls);
    if (kind == LossKind::sparse_categorical_crossentropy)
      return emitError() << "label_smoothing needs categorical_crossentropy "
                            "(Keras' sparse cross-entropy has none)";
  }
  if (failed(verifyLossOptions(LossDiagnostic(emitError), kind,
                               {fromLogits, labelSmoothing, delta, alpha, beta,
                                gamma, applyClassBalancing})))
    return failure();
  if (ignoreClass && kind != LossKind::sparse_categorical_crossentropy)
    return emitError() << "ignore_class is sparse_categorical_crossentropy's, "
                          "not "
                       << stringifyLossKind(kind) << "'s";
  if (!axis.empty()) {
    if (!isOverlapLoss(kind))
      return emitError() << "axis is dice's and tversky's, not "
                         << stringifyLossKind(kind) << "'s";
    for (auto [i, a] : llvm::enumerate(axis))
      if (a == 0 || llvm::is_contained(axis.drop_front(i + 1), a))
        return emitError() << "axis needs distinct axes other than the batch "
                              "(0), got "
                           << a;
  }
  if (!metrics)
    return success();
  // Class indices (sparse) have no shape to compare predictions with; the
  // one-hot labels of categorical_crossentropy and the targets of the
  // pointwise losses do.
  bool sparse = kind == LossKind::sparse_categorical_crossentropy;
  for (Attribute attr : metrics) {
    auto metric = dyn_cast<MetricAttr>(attr);
    if (!metric)
      return emitError() << "metrics must be #graph.metric attributes, got "
                         << attr;
    MetricKind m = metric.getKind();
    StringRef name = metric.getName();
    if (sparse && (pointwiseMetricKind(m) || metric.isConfusionMetric() ||
                   m == MetricKind::top_k_categorical_accuracy ||
                   m == MetricKind::categorical_accuracy))
      return emitError() << "metric '" << name
                         << "' compares predictions with labels of their "
                            "shape; loss "
                         << stringifyLossKind(kind) << " takes class indices";
    if (!sparse && (m == MetricKind::sparse_top_k_categorical_accuracy ||
                    m == MetricKind::sparse_categorical_accuracy))
      return emitError() << "metric '" << name << "' takes class indices; loss "
                         << stringifyLossKind(kind)
                         << " takes labels of the predictions' shape";
    for (Attribute other : metrics)
      if (other != attr && cast<MetricAttr>(other).getName() == name)
        return emitError() << "two metrics are named '" << name << "'";
  }
  return success();
}

SmallVector<LoggedValue> mlir::graph::loggedValues(TrainingOp training,
                                                   ArrayAttr outputNames) {
  SmallVector<OutputLossAttr> losses = training.getLossList();
  SmallVector<LoggedValue> values{{"loss", -1, MetricAttr()}};
  auto prefix = [&](size_t i) -> std::string {
    if (losses.size() < 2 || !outputNames || i >= outputNames.size())
      return "";
    return (cast<StringAttr>(outputNames[i]).getValue() + "_").str();
  };
  if (losses.size() > 1)
    for (size_t i = 0; i < losses.size(); ++i)
      values.push_back({prefix(i) + "loss", static_cast<int64_t>(i), {}});
  for (auto [i, loss] : llvm::enumerate(losses))
    for (MetricAttr metric : loss.getMetricList())
      values.push_back({prefix(i) + metric.getName().str(),
                        static_cast<int64_t>(i), metric});
  return values;
}

LogicalResult TrainingOp::verify() {
  if (getLosses().empty())
    return emitOpError("needs a loss");
  // One sample_weight input weighs every output's rows, and an epoch's
  // short batch scales it for a mean, not for a sum: the outputs must
  // agree (Dice and Tversky over the whole batch take no reduction).
  std::optional<bool> sum;
  for (OutputLossAttr loss : getLossList()) {
    if (isOverlapLoss(loss.getKind()) && loss.getAxis().empty())
      continue;
    if (sum && *sum != loss.getSumReduction())
      return emitOpError("mixes losses of reduction 'sum' and "
                         "'sum_over_batch_size' over its outputs, which is "
                         "not supported: give every output's loss the same "
                         "reduction");
    sum = loss.getSumReduction();
  }
  if (std::optional<llvm::APFloat> momentum = getEmaMomentum()) {
    double m = momentum->convertToDouble();
    if (!(m >= 0 && m <= 1))
      return emitOpError("needs ema_momentum in [0, 1], got ") << formatF64(m);
  }
  if (std::optional<int64_t> frequency = getEmaOverwriteFrequency()) {
    if (!getEmaMomentum())
      return emitOpError("ema_overwrite_frequency needs ema_momentum");
    if (*frequency < 1)
      return emitOpError("needs ema_overwrite_frequency >= 1, got ")
             << *frequency;
  }
  if (std::optional<llvm::APFloat> scale = getLossScale()) {
    double s = scale->convertToDouble();
    if (!(s > 0) || !std::isfinite(s))
      return emitOpError("needs a finite loss_scale > 0, got ") << formatF64(s);
  }
  if (std::optional<int64_t> steps = getLossScaleGrowthSteps()) {
    if (!getLossScale())
      return emitOpError("loss_scale_growth_steps needs loss_scale");
    if (*steps < 1)
      return emitOpError("needs loss_scale_growth_steps >= 1, got ") << *steps;
  }
  return success();
}

LogicalResult TrainingOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto model =
      symbolTable.lookupNearestSymbolFrom<ModelOp>(*this, getModelAttr());
  if (!model)
    return emitOpError("'") << getModel() << "' does not name a graph.model";
  OutputOp output = model.getOutputOp();
  SmallVector<OutputLossAttr> losses = getLossList();
  if (!output || output.getOutputs().size() != losses.size())
    return emitOpError("has ") << losses.size() << " losses for a model of "
                               << (output ? output.getOutputs().size() : 0)
                               << " outputs: one loss per output";
  std::optional<ArrayAttr> names = output.getNames();
  if (losses.size() > 1 &&
      (!names || names->size() != output.getOutputs().size()))
    return emitOpError("needs the names of the model's ")
           << losses.size()
           << " outputs (graph.output's names): the logs and the data name "
              "each output";
  for (auto [i, loss, value] : llvm::enumerate(losses, output.getOutputs())) {
    auto predictions = cast<RankedTensorType>(value.getType());
    std::string which =
        losses.size() > 1
            ? (" of output '" + cast<StringAttr>((*names)[i]).getValue() + "'")
                  .str()
            : std::string();
    LossKind kind = loss.getKind();
    if (isPointwiseLoss(kind)) {
      if (predictions.getRank() < 2 ||
          !isa<FloatType>(predictions.getElementType()))
        return emitOpError("loss ")
               << stringifyLossKind(kind) << which
               << " needs float model output [batch, ...], got " << predictions;
    } else if (predictions.getRank() != 2 ||
               !isa<FloatType>(predictions.getElementType())) {
      return emitOpError("loss ")
             << stringifyLossKind(kind) << which
             << " needs float model output [batch, classes], got "
             << predictions;
    }
    for (int64_t a : loss.getAxis())
      if (a >= predictions.getRank() || a < -(predictions.getRank() - 1))
        return emitOpError("loss ")
               << stringifyLossKind(kind) << which << ": axis " << a
               << " is outside the output's " << predictions.getRank()
               << " axes";
    // graph.accuracy compares one row of classes an example; Keras' per
    // position accuracy of a [batch, T, classes] output is not built.
    for (MetricAttr metric : loss.getMetricList()) {
      MetricKind m = metric.getKind();
      bool binary = m == MetricKind::accuracy &&
                    predictions.getShape().back() == 1 && isPointwiseLoss(kind);
      bool rowAccuracy = m == MetricKind::categorical_accuracy ||
                         m == MetricKind::sparse_categorical_accuracy ||
                         m == MetricKind::top_k_categorical_accuracy ||
                         m == MetricKind::sparse_top_k_categorical_accuracy ||
                         (m == MetricKind::accuracy && !binary);
      if (rowAccuracy && predictions.getRank() != 2)
        return emitOpError("metric '")
               << metric.getName() << "'" << which
               << " needs model output [batch, classes], got " << predictions
               << " (an accuracy per position of a sequence is not "
                  "supported; binary_accuracy, the error metrics and AUC "
                  "are)";
    }
  }
  SmallVector<LoggedValue> logged =
      loggedValues(*this, names ? *names : ArrayAttr());
  for (auto [i, value] : llvm::enumerate(logged))
    for (const LoggedValue &other : llvm::ArrayRef(logged).drop_front(i + 1))
      if (other.name == value.name)
        return emitOpError("logs two values named '")
               << value.name << "': rename a metric";
  int64_t batch = getGlobalBatchSize();
  for (InputOp input : model.getInputOps())
    if (input.getOutput().getType().getDimSize(0) != batch)
      return emitOpError("global_batch_size ")
             << batch << " does not match the batch dimension "
             << input.getOutput().getType().getDimSize(0) << " of input '"
             << input.getName() << "'";
  return success();
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// The result type of a conv2d of `inputValue` by `kernelValue`.
static FailureOr<RankedTensorType>
inferConv2D(std::optional<Location> loc, Value inputValue, Value kernelValue,
            ArrayRef<int64_t> strides, Padding padding,
            ArrayRef<int64_t> dilations, int64_t groups, FilterLayout layout,
            StringRef inputName = "input", StringRef kernelName = "kernel") {
  auto input = rankedOperand(loc, inputValue, inputName, 4, "NHWC");
  if (failed(input))
    return failure();
  auto kernel = rankedOperand(loc, kernelValue, kernelName, 4,
                              layout == FilterLayout::ohwi ? "OHWI" : "HWIO");
  if (failed(kernel))
    return failure();
  if (layout == FilterLayout::ohwi) {
    // Checked on the stored type, so messages name the operand's own.
    if (llvm::any_of(kernel->getShape(), [](int64_t d) { return d < 1; }))
      return emitOptionalError(loc, "kernel dimensions must be >= 1, got ",
                               *kernel);
    // OHWI has no depthwise form of its own ([C * m, kh, kw, 1] is the
    // grouped one), so a grouped kernel holds exactly C / groups channels.
    int64_t channels = input->getDimSize(3), perGroup = kernel->getDimSize(3);
    if (groups > 1 && (channels % groups != 0 || perGroup != channels / groups))
      return emitOptionalError(loc, "ohwi kernel input channels (", perGroup,
                               ") times groups (", groups,
                               ") must match input channels (", channels, ")");
  }
  return inferConv2DType(loc, *input, hwioKernelType(*kernel, layout), strides,
                         padding, dilations, groups);
}

RankedTensorType mlir::graph::hwioKernelType(RankedTensorType kernel,
                                             FilterLayout layout) {
  if (layout == FilterLayout::hwio || kernel.getRank() != 4)
    return kernel;
  ArrayRef<int64_t> d = kernel.getShape();
  return RankedTensorType::get({d[1], d[2], d[3], d[0]},
                               kernel.getElementType());
}

FailureOr<RankedTensorType>
mlir::graph::inferConv2DType(std::optional<Location> loc,
                             RankedTensorType input, RankedTensorType kernel,
                             ArrayRef<int64_t> strides, Padding padding,
                             ArrayRef<int64_t> dilations, int64_t groups) {
  if (failed(verifyPositivePair(loc, "strides", strides)) ||
      failed(verifyPositivePair(loc, "dilations", dilations)))
    return failure();
  if (llvm::any_of(strides, [](int64_t s) { return s > 1; }) &&
      llvm::any_of(dilations, [](int64_t d) { return d > 1; }))
    return emitOptionalError(loc, "strides > 1 cannot be combined with "
                                  "dilations > 1 (as in Keras)");
  if (input.getElementType() != kernel.getElementType())
    return emitOptionalError(loc, "input element type ", input.getElementType(),
                             " differs from kernel element type ",
                             kernel.getElementType());
  if (llvm::any_of(kernel.getShape(), [](int64_t d) { return d < 1; }))
    return emitOptionalError(loc, "kernel dimensions must be >= 1, got ",
                             kernel);
  int64_t channels = input.getDimSize(3);
  if (groups < 1)
    return emitOptionalError(loc, "groups must be >= 1, got ", groups);
  if (groups == 1 && kernel.getDimSize(2) != channels)
    return emitOptionalError(loc, "kernel input channels (",
                             kernel.getDimSize(2),
                             ") must match input channels (", channels, ")");
  // Grouped: [kh, kw, C / groups, F]; depthwise (groups = C > 1) also
  // [kh, kw, C, multiplier], Keras' DepthwiseConv2D kernel.
  bool depthwiseForm =
      groups > 1 && groups == channels && kernel.getDimSize(2) == channels;
  if (groups > 1 && !depthwiseForm && kernel.getDimSize(2) * groups != channels)
    return emitOptionalError(loc, "kernel input channels (",
                             kernel.getDimSize(2), ") times groups (", groups,
                             ") must match input channels (", channels, ")");
  int64_t filters =
      depthwiseForm ? channels * kernel.getDimSize(3) : kernel.getDimSize(3);
  if (filters % groups != 0)
    return emitOptionalError(loc, "kernel filters (", filters,
                             ") must be a multiple of groups (", groups, ")");
  auto shape = slideWindow(loc, input, kernel.getShape().take_front(2), strides,
                           dilations, padding, filters, "kernel");
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, input.getElementType());
}

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto type = inferConv2D(loc, adaptor.getInput(), adaptor.getKernel(),
                          adaptor.getStrides(), adaptor.getPadding(),
                          adaptor.getDilations(), adaptor.getGroups(),
                          adaptor.getFilterLayout());
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

FailureOr<RankedTensorType>
mlir::graph::inferPool2DType(std::optional<Location> loc,
                             RankedTensorType input, ArrayRef<int64_t> poolSize,
                             ArrayRef<int64_t> strides, Padding padding) {
  if (failed(verifyPositivePair(loc, "pool_size", poolSize)) ||
      failed(verifyPositivePair(loc, "strides", strides)))
    return failure();
  int64_t ones[] = {1, 1};
  auto shape = slideWindow(loc, input, poolSize, strides, ones, padding,
                           input.getDimSize(3), "pool window");
  if (failed(shape))
    return failure();
  return RankedTensorType::get(*shape, input.getElementType());
}

template <typename PoolAdaptor>
static LogicalResult inferPool(std::optional<Location> loc, PoolAdaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", 4, "NHWC");
  if (failed(input))
    return failure();
  auto type = inferPool2DType(loc, *input, adaptor.getPoolSize(),
                              adaptor.getStrides(), adaptor.getPadding());
  if (failed(type))
    return failure();
  results.push_back(*type);
  return success();
}

LogicalResult MaxPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferPool(loc, adaptor, results);
}

LogicalResult AvgPool2DOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  return inferPool(loc, adaptor, results);
}

LogicalResult
GlobalAvgPool2DOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", 4, "NHWC");
  if (failed(input))
    return failure();
  results.push_back(RankedTensorType::get(
      {input->getDimSize(0), input->getDimSize(3)}, input->getElementType()));
  return success();
}

LogicalResult PadOp::inferReturnTypes(MLIRContext *,
                                      std::optional<Location> loc,
                                      Adaptor adaptor,
                                      SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> low = adaptor.getLow(), high = adaptor.getHigh();
  int64_t rank = input->getRank();
  if (static_cast<int64_t>(low.size()) != rank ||
      static_cast<int64_t>(high.size()) != rank)
    return emitOptionalError(loc,
                             "expects one low and one high amount per axis (",
                             rank, "), got ", low.size(), " and ", high.size());
  if (rank >= 1 && (low[0] != 0 || high[0] != 0))
    return emitOptionalError(loc, "may not pad or crop the batch axis");
  SmallVector<int64_t> shape;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t size = input->getDimSize(d);
    // Amounts are bounded by the sizes, which fit in 63 bits, when valid.
    if (low[d] < -size || high[d] < -size || low[d] > (int64_t(1) << 40) ||
        high[d] > (int64_t(1) << 40) || size + low[d] + high[d] < 1)
      return emitOptionalError(loc, "amounts [", low[d], ", ", high[d],
                               "] leave nothing of axis ", d, " of size ",
                               size);
    shape.push_back(size + low[d] + high[d]);
  }
  results.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input->getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "expects a permutation of ", rank,
                             " axes, got ", perm.size());
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t axis : perm) {
    if (axis < 0 || axis >= rank || seen[axis]) {
      std::string text;
      for (int64_t a : perm)
        text += (text.empty() ? "" : ", ") + std::to_string(a);
      return emitOptionalError(loc, "[", text, "] is not a permutation of 0..",
                               rank - 1);
    }
    seen[axis] = true;
    shape.push_back(input->getDimSize(axis));
  }
  if (rank >= 1 && perm[0] != 0)
    return emitOptionalError(loc, "may not move the batch axis");
  results.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult DenseOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  auto kernel =
      rankedOperand(loc, adaptor.getKernel(), "kernel", 2, "[in, out]");
  if (failed(kernel))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc,
                             "expects input of rank >= 2 ([batch, ..., "
                             "features]), got rank ",
                             input->getRank());
  if (input->getElementType() != kernel->getElementType())
    return emitOptionalError(
        loc, "input element type ", input->getElementType(),
        " differs from kernel element type ", kernel->getElementType());
  int64_t features = input->getShape().back();
  if (kernel->getDimSize(0) != features)
    return emitOptionalError(loc, "kernel rows (", kernel->getDimSize(0),
                             ") must match input features (", features, ")");
  SmallVector<int64_t> shape(input->getShape());
  shape.back() = kernel->getDimSize(1);
  results.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

LogicalResult BiasAddOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  auto bias = rankedOperand(loc, adaptor.getBias(), "bias", 1);
  if (failed(bias))
    return failure();
  if (input->getRank() < 1 || bias->getDimSize(0) != input->getShape().back())
    return emitOptionalError(loc, "bias size (", bias->getDimSize(0),
                             ") must match the input's last dimension (",
                             input->getRank() ? input->getShape().back() : 0,
                             ")");
  if (input->getElementType() != bias->getElementType())
    return emitOptionalError(loc, "bias element type ", bias->getElementType(),
                             " differs from input element type ",
                             input->getElementType());
  results.push_back(*input);
  return success();
}

LogicalResult SoftmaxOp::verify() {
  int64_t rank = getInput().getType().getRank();
  int64_t axis = getAxis();
  if (axis < -rank || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  return success();
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError("rate must be in [0, 1), got ") << formatF64(rate);
  if (std::optional<ArrayRef<int64_t>> noise = getNoiseShape()) {
    ArrayRef<int64_t> shape = getInput().getType().getShape();
    if (shape.empty() || noise->size() != shape.size() - 1)
      return emitOpError("noise_shape has ")
             << noise->size()
             << " dimensions: expected one per input axis after the batch "
                "axis";
    for (auto [d, n] : llvm::enumerate(*noise))
      if (n != shape[d + 1] && n != 1)
        return emitOpError("noise_shape dimension ")
               << d << " is " << n << ": expected 1 or " << shape[d + 1];
  }
  return success();
}

/// Whether every dimension of `unit` is 1 or `full`'s, at one rank.
static LogicalResult checkBroadcastable(Operation *op, RankedTensorType unit,
                                        RankedTensorType full) {
  if (unit.getRank() != full.getRank())
    return op->emitOpError("ranks differ: ") << unit << " and " << full;
  for (auto [u, f] : llvm::zip(unit.getShape(), full.getShape()))
    if (u != 1 && u != f)
      return op->emitOpError("cannot broadcast ") << unit << " to " << full;
  return success();
}

LogicalResult ChannelScaleShiftOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type.getRank() < 1)
    return emitOpError("expects an input of rank >= 1");
  int64_t channels = type.getShape().back();
  for (ArrayRef<double> v : {getScale(), getOffset()})
    if (static_cast<int64_t>(v.size()) != channels)
      return emitOpError("scale and offset need ")
             << channels << " elements (one per channel), got " << v.size();
  return success();
}

LogicalResult BroadcastOp::verify() {
  return checkBroadcastable(*this, getInput().getType(), getOutput().getType());
}

LogicalResult SumToOp::verify() {
  return checkBroadcastable(*this, getOutput().getType(), getInput().getType());
}

LogicalResult NormalizeOp::verify() {
  RankedTensorType type = getInput().getType();
  if (type != getOutput().getType())
    return emitOpError("output type differs from the input's");
  if (type.getRank() < 1)
    return emitOpError("expects an input of rank >= 1");
  int64_t channels = type.getShape().back();
  for (Value v : {getVariance(), getMean()})
    if (v && cast<RankedTensorType>(v.getType()).getShape() !=
                 ArrayRef<int64_t>{channels})
      return emitOpError("mean and variance must have shape [")
             << channels << "], got " << v.getType();
  if (!(getEpsilon().convertToDouble() >= 0))
    return emitOpError("epsilon must not be negative");
  return success();
}

/// A [lower, upper] attribute with lower <= upper, or an error naming it.
static LogicalResult verifyRange(Operation *op, StringRef name,
                                 ArrayAttr range) {
  if (!range || range.size() != 2)
    return op->emitOpError("needs ") << name << " = [lower, upper]";
  double lower = cast<FloatAttr>(range[0]).getValueAsDouble();
  double upper = cast<FloatAttr>(range[1]).getValueAsDouble();
  if (!(lower <= upper))
    return op->emitOpError() << name << " must have lower <= upper";
  return success();
}

LogicalResult RandomImageTransformOp::verify() {
  auto in = cast<RankedTensorType>(getInput().getType());
  auto out = cast<RankedTensorType>(getOutput().getType());
  if (in.getRank() != 4 || out.getRank() != 4)
    return emitOpError("expects NHWC input and output");
  if (in.getDimSize(0) != out.getDimSize(0) ||
      in.getDimSize(3) != out.getDimSize(3))
    return emitOpError("input and output differ in batch or channels");
  StringRef kind = getKind();
  bool crop = kind == "crop" || kind == "center_crop";
  if (!crop && in.getShape() != out.getShape())
    return emitOpError("only crops change the image size");
  if (kind == "flip") {
    std::optional<StringRef> mode = getMode();
    if (!mode ||
        !llvm::is_contained({StringRef("horizontal"), StringRef("vertical"),
                             StringRef("horizontal_and_vertical")},
                            *mode))
      return emitOpError("flip needs mode = horizontal, vertical or "
                         "horizontal_and_vertical");
  } else if (kind == "rotation") {
    if (failed(verifyRange(*this, "factor", getFactorAttr())))
      return failure();
  } else if (kind == "zoom" || kind == "translation") {
    if (failed(verifyRange(*this, "height_factor", getHeightFactorAttr())))
      return failure();
    if ((kind == "translation" || getWidthFactorAttr()) &&
        failed(verifyRange(*this, "width_factor", getWidthFactorAttr())))
      return failure();
  } else if (!crop) {
    return emitOpError("unknown kind '") << kind << "'";
  }
  if (!llvm::is_contained({StringRef("reflect"), StringRef("wrap"),
                           StringRef("constant"), StringRef("nearest")},
                          getFillMode()))
    return emitOpError("unknown fill_mode '") << getFillMode() << "'";
  if (getInterpolation() != "bilinear" && getInterpolation() != "nearest")
    return emitOpError("unknown interpolation '") << getInterpolation() << "'";
  return success();
}

LogicalResult RandomContrastOp::verify() {
  if (cast<RankedTensorType>(getInput().getType()).getRank() != 4)
    return emitOpError("expects an NHWC input");
  if (failed(verifyRange(*this, "contrast_range", getContrastRange())) ||
      failed(verifyRange(*this, "value_range", getValueRange())))
    return failure();
  return success();
}

LogicalResult FlattenOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location> loc,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  if (input->getRank() < 1)
    return emitOptionalError(loc, "expects input with a batch dimension");
  std::optional<int64_t> features = 1;
  for (int64_t d : input->getShape().drop_front())
    if (!(features = llvm::checkedMul(*features, d)))
      return emitOptionalError(loc, "cannot flatten ", *input,
                               ": its element count overflows 64 bits");
  results.push_back(RankedTensorType::get({input->getDimSize(0), *features},
                                          input->getElementType()));
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = getInput().getType(), out = getOutput().getType();
  if (in.getRank() < 1 || out.getRank() < 1 ||
      in.getDimSize(0) != out.getDimSize(0))
    return emitOpError("must keep the batch dimension: ")
           << in << " -> " << out;
  if (in.getNumElements() != out.getNumElements())
    return emitOpError("cannot reshape ")
           << in.getNumElements() << " elements (" << in << ") into "
           << out.getNumElements() << " (" << out << ")";
  if (in.getElementType() != out.getElementType())
    return emitOpError("must keep the element type");
  return success();
}

LogicalResult MultiplyOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("expects at least 2 inputs, got ") << getInputs().size();
  return success();
}

LogicalResult MaximumOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("expects at least 2 inputs, got ") << getInputs().size();
  return success();
}

LogicalResult MaximumGradOp::verify() {
  int64_t n = static_cast<int64_t>(getInputs().size());
  int64_t index = getIndexAttr().getInt();
  if (n < 2)
    return emitOpError("expects at least 2 inputs, got ") << n;
  if (index < 0 || index >= n)
    return emitOpError("index ")
           << index << " is out of range for " << n << " inputs";
  return success();
}

LogicalResult AddOp::verify() {
  if (getInputs().size() < 2)
    return emitOpError("needs at least 2 inputs, got ") << getInputs().size();
  return success();
}

LogicalResult ConcatenateOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.size() < 2)
    return emitOptionalError(loc, "needs at least 2 inputs, got ",
                             inputs.size());
  auto first = rankedOperand(loc, inputs[0], "input #0", -1);
  if (failed(first))
    return failure();
  int64_t rank = first->getRank();
  int64_t axis = adaptor.getAxis();
  if (axis < -rank || axis >= rank || axis == 0 || axis == -rank)
    return emitOptionalError(loc, "axis ", axis,
                             " must name a non-batch axis of rank ", rank);
  if (axis < 0)
    axis += rank;
  SmallVector<int64_t> shape(first->getShape());
  for (auto [i, value] : llvm::enumerate(inputs.drop_front())) {
    std::string name = "input #" + std::to_string(i + 1);
    auto type = rankedOperand(loc, value, name, rank);
    if (failed(type))
      return failure();
    if (type->getElementType() != first->getElementType())
      return emitOptionalError(loc, name, " has element type ",
                               type->getElementType(), ", input #0 has ",
                               first->getElementType());
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && type->getDimSize(d) != first->getDimSize(d))
        return emitOptionalError(loc, name, " has shape ", *type,
                                 ", which differs from input #0 (", *first,
                                 ") outside axis ", axis);
    shape[axis] += type->getDimSize(axis);
  }
  results.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

/// A batch norm's per-channel operand `v` (absent: nothing to check) has
/// one value per channel of `of`, which has `channels`.
static LogicalResult expectChannels(std::optional<Location> loc, Value v,
                                    StringRef name, int64_t channels,
                                    StringRef of) {
  if (!v)
    return success();
  auto type = rankedOperand(loc, v, name, 1);
  if (failed(type))
    return failure();
  if (type->getDimSize(0) != channels)
    return emitOptionalError(loc, name, " has ", type->getDimSize(0),
                             " values, ", of, " has ", channels, " channels");
  return success();
}

LogicalResult BatchNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc, "expects input of rank >= 2, got rank ",
                             input->getRank());
  int64_t channels = input->getShape().back();
  if (failed(expectChannels(loc, adaptor.getMovingMean(), "moving_mean",
                            channels, "the input")) ||
      failed(expectChannels(loc, adaptor.getMovingVariance(), "moving_variance",
                            channels, "the input")) ||
      failed(expectChannels(loc, adaptor.getGamma(), "gamma", channels,
                            "the input")) ||
      failed(expectChannels(loc, adaptor.getBeta(), "beta", channels,
                            "the input")))
    return failure();
  double epsilon = adaptor.getEpsilon().convertToDouble();
  double momentum = adaptor.getMomentum().convertToDouble();
  if (!(epsilon > 0))
    return emitOptionalError(loc, "epsilon must be > 0, got ",
                             formatF64(epsilon));
  if (!(momentum >= 0 && momentum <= 1))
    return emitOptionalError(loc, "momentum must be in [0, 1], got ",
                             formatF64(momentum));
  results.push_back(*input);
  return success();
}

LogicalResult ChannelScaleOp::inferReturnTypes(MLIRContext *,
                                               std::optional<Location> loc,
                                               Adaptor adaptor,
                                               SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  if (input->getRank() < 1)
    return emitOptionalError(loc, "expects input of rank >= 1");
  if (failed(expectChannels(loc, adaptor.getScale(), "scale",
                            input->getShape().back(), "the input")))
    return failure();
  results.push_back(*input);
  return success();
}

LogicalResult LayerNormOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(input))
    return failure();
  if (input->getRank() < 2)
    return emitOptionalError(loc, "expects input of rank >= 2, got rank ",
                             input->getRank());
  int64_t channels = input->getShape().back();
  if (failed(expectChannels(loc, adaptor.getGamma(), "gamma", channels,
                            "the input")) ||
      failed(expectChannels(loc, adaptor.getBeta(), "beta", channels,
                            "the input")))
    return failure();
  double epsilon = adaptor.getEpsilon().convertToDouble();
  if (!(epsilon > 0))
    return emitOptionalError(loc, "epsilon must be > 0, got ",
                             formatF64(epsilon));
  results.push_back(*input);
  return success();
}

//===----------------------------------------------------------------------===//
// Losses and metrics
//===----------------------------------------------------------------------===//

/// Sample weights [batch], one per row of a batch of `batch`.
static LogicalResult verifySampleWeight(std::optional<Location> loc,
                                        Value weightsValue, int64_t batch) {
  auto weights =
      rankedOperand(loc, weightsValue, "sample_weight", 1, "[batch]");
  if (failed(weights))
    return failure();
  if (weights->getDimSize(0) != batch)
    return emitOptionalError(loc, "sample_weight batch (",
                             weights->getDimSize(0),
                             ") differs from predictions batch (", batch, ")");
  return success();
}

/// Checks predictions [B, C] against one-hot labels [B, C] (float) or class
/// indices [B] (integer) and yields the scalar result type.
static LogicalResult inferClassification(std::optional<Location> loc,
                                         Value predictionsValue,
                                         Value labelsValue, Value weightsValue,
                                         std::optional<bool> sparse,
                                         SmallVectorImpl<Type> &results) {
  auto predictions = rankedOperand(loc, predictionsValue, "predictions", 2,
                                   "[batch, classes]");
  if (failed(predictions))
    return failure();
  auto labels = rankedOperand(loc, labelsValue, "labels", -1);
  if (failed(labels))
    return failure();
  bool isSparse = labels->getRank() == 1;
  if (sparse && *sparse != isSparse)
    return emitOptionalError(
        loc,
        *sparse ? "expects class-index labels [batch] of integers, got "
                : "expects one-hot labels [batch, classes], got ",
        *labels);
  if (isSparse) {
    if (!labels->getElementType().isSignlessInteger())
      return emitOptionalError(loc, "class-index labels must be integers, got ",
                               *labels);
  } else {
    if (labels->getRank() != 2 || labels->getShape() != predictions->getShape())
      return emitOptionalError(loc, "one-hot labels ", *labels,
                               " must have the predictions' shape ",
                               *predictions);
    if (!isa<FloatType>(labels->getElementType()))
      return emitOptionalError(loc, "one-hot labels must be floats, got ",
                               *labels);
  }
  if (labels->getDimSize(0) != predictions->getDimSize(0))
    return emitOptionalError(loc, "labels batch (", labels->getDimSize(0),
                             ") differs from predictions batch (",
                             predictions->getDimSize(0), ")");
  if (weightsValue &&
      failed(verifySampleWeight(loc, weightsValue, predictions->getDimSize(0))))
    return failure();
  results.push_back(RankedTensorType::get({}, predictions->getElementType()));
  return success();
}

LogicalResult CategoricalCrossentropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             adaptor.getSampleWeight(), /*sparse=*/false,
                             results);
}

LogicalResult SparseCategoricalCrossentropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             adaptor.getSampleWeight(), /*sparse=*/true,
                             results);
}

/// Whether `kind` is computed element by element (graph.pointwise_loss),
/// not from class labels.
bool mlir::graph::isPointwiseLoss(LossKind kind) {
  return kind != LossKind::categorical_crossentropy &&
         kind != LossKind::sparse_categorical_crossentropy;
}

bool mlir::graph::isOverlapLoss(LossKind kind) {
  return kind == LossKind::dice || kind == LossKind::tversky;
}

/// The options of a loss (a #graph.output_loss, a graph.pointwise_loss): each
/// only on the loss that takes it, each in its range.
static LogicalResult verifyLossOptions(const LossDiagnostic &error,
                                       LossKind kind,
                                       const LossOptions &options) {
  using K = LossKind;
  auto one = [&](std::initializer_list<K> kinds) {
    return llvm::is_contained(kinds, kind);
  };
  bool focal =
      one({K::binary_focal_crossentropy, K::categorical_focal_crossentropy});
  if (options.fromLogits && isPointwiseLoss(kind) &&
      !one({K::binary_crossentropy, K::binary_focal_crossentropy,
            K::categorical_focal_crossentropy}))
    return error("from_logits is binary_crossentropy's and the "
                 "focal cross-entropies', not ",
                 stringifyLossKind(kind), "'s");
  if (options.smoothing) {
    double ls = options.smoothing->convertToDouble();
    if (!(ls >= 0 && ls <= 1))
      return error("needs label_smoothing in [0, 1], got ", formatF64(ls));
    if (!focal && !one({K::binary_crossentropy, K::categorical_crossentropy}))
      return error("label_smoothing needs categorical_crossentropy, "
                   "binary_crossentropy or a focal cross-entropy, not ",
                   stringifyLossKind(kind));
  }
  if (options.delta) {
    double d = options.delta->convertToDouble();
    if (kind != K::huber)
      return error("delta is huber's, not ", stringifyLossKind(kind), "'s");
    if (!(d > 0) || !std::isfinite(d))
      return error("needs a positive delta, got ", formatF64(d));
  }
  // alpha: the focal cross-entropies' class weight, Tversky's false
  // positive coefficient; beta: Tversky's false negative one; gamma: the
  // focal factor's exponent.
  auto finite = [&](const std::optional<llvm::APFloat> &value, StringRef name,
                    bool allowed, StringRef owners) -> LogicalResult {
    if (!value)
      return success();
    if (!allowed)
      return error(name, " is ", owners, ", not ", stringifyLossKind(kind),
                   "'s");
    double v = value->convertToDouble();
    if (!std::isfinite(v) || (name == "gamma" && v < 0))
      return error("needs a finite ", name == "gamma" ? "non-negative " : "",
                   name, ", got ", formatF64(v));
    return success();
  };
  if (failed(finite(options.alpha, "alpha", focal || kind == K::tversky,
                    "the focal cross-entropies' and tversky's")) ||
      failed(finite(options.beta, "beta", kind == K::tversky, "tversky's")) ||
      failed(
          finite(options.gamma, "gamma", focal, "the focal cross-entropies'")))
    return failure();
  if (options.classBalancing && kind != K::binary_focal_crossentropy)
    return error("apply_class_balancing is "
                 "binary_focal_crossentropy's, not ",
                 stringifyLossKind(kind), "'s");
  return success();
}

/// Predictions and targets of one shape, floats; sample weights [batch].
static LogicalResult verifyPointwiseOperands(std::optional<Location> loc,
                                             LossKind kind, Value predValue,
                                             Value targetValue,
                                             Value weightsValue) {
  // (binary_accuracy, a metric, is refused as a gradient by the caller.)
  if (!isPointwiseLoss(kind))
    return emitOptionalError(loc, stringifyLossKind(kind),
                             " takes class labels, not element-wise targets");
  if (isOverlapLoss(kind))
    return emitOptionalError(loc, stringifyLossKind(kind),
                             " is one ratio over the whole batch: "
                             "graph.overlap_sums and graph.overlap_loss");
  auto predictions = rankedOperand(loc, predValue, "predictions", -1);
  if (failed(predictions))
    return failure();
  auto targets = rankedOperand(loc, targetValue, "targets", -1);
  if (failed(targets))
    return failure();
  if (predictions->getRank() < 1)
    return emitOptionalError(loc, "predictions need a batch dimension, got ",
                             *predictions);
  if (targets->getShape() != predictions->getShape() ||
      targets->getElementType() != predictions->getElementType())
    return emitOptionalError(loc, "targets ", *targets,
                             " must have the predictions' type ", *predictions);
  if (weightsValue &&
      failed(verifySampleWeight(loc, weightsValue, predictions->getDimSize(0))))
    return failure();
  return success();
}

LogicalResult
PointwiseLossOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                  Adaptor adaptor,
                                  SmallVectorImpl<Type> &results) {
  LossKind kind = adaptor.getKind();
  if (failed(verifyPointwiseOperands(loc, kind, adaptor.getPredictions(),
                                     adaptor.getTargets(),
                                     adaptor.getSampleWeight())) ||
      failed(verifyLossOptions(loc, kind, lossOptionsOf(adaptor))))
    return failure();
  results.push_back(RankedTensorType::get(
      {}, cast<RankedTensorType>(adaptor.getPredictions().getType())
              .getElementType()));
  return success();
}

LogicalResult PointwiseLossGradOp::verify() {
  if (getKind() == LossKind::binary_accuracy)
    return emitOpError("binary_accuracy is a metric: it has no gradient");
  if (failed(verifyPointwiseOperands(getLoc(), getKind(), getPredictions(),
                                     getTargets(), getSampleWeight())))
    return failure();
  return verifyLossOptions(getLoc(), getKind(), lossOptionsOf(*this));
}

/// Dice's or Tversky's kind, and alpha and beta only on tversky.
static LogicalResult verifyOverlapKind(std::optional<Location> loc,
                                       LossKind kind,
                                       std::optional<llvm::APFloat> alpha,
                                       std::optional<llvm::APFloat> beta) {
  if (!isOverlapLoss(kind))
    return emitOptionalError(loc, "needs dice or tversky, got ",
                             stringifyLossKind(kind));
  return verifyLossOptions(loc, kind, {false, {}, {}, alpha, beta, {}, false});
}

/// `sums` must be graph.overlap_sums' tensor<5xT> of element type `element`.
static LogicalResult verifySums(std::optional<Location> loc, Value sums,
                                Type element) {
  auto type = cast<RankedTensorType>(sums.getType());
  if (type.getRank() != 1 || type.getDimSize(0) != kOverlapSums ||
      type.getElementType() != element)
    return emitOptionalError(
        loc, "sums must be ", RankedTensorType::get({kOverlapSums}, element),
        " (sum t p, sum t, sum p, sum w, rows), got ", type);
  return success();
}

LogicalResult OverlapSumsOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  auto predictions =
      rankedOperand(loc, adaptor.getPredictions(), "predictions", -1);
  if (failed(predictions))
    return failure();
  if (predictions->getRank() < 1)
    return emitOptionalError(loc, "predictions need a batch dimension, got ",
                             *predictions);
  if (adaptor.getTargets().getType() != *predictions)
    return emitOptionalError(loc, "targets ", adaptor.getTargets().getType(),
                             " must have the predictions' type ", *predictions);
  if (adaptor.getSampleWeight() &&
      failed(verifySampleWeight(loc, adaptor.getSampleWeight(),
                                predictions->getDimSize(0))))
    return failure();
  results.push_back(
      RankedTensorType::get({kOverlapSums}, predictions->getElementType()));
  return success();
}

LogicalResult OverlapLossOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  Type element =
      cast<RankedTensorType>(adaptor.getSums().getType()).getElementType();
  if (failed(verifyOverlapKind(loc, adaptor.getKind(), adaptor.getAlpha(),
                               adaptor.getBeta())) ||
      failed(verifySums(loc, adaptor.getSums(), element)))
    return failure();
  results.push_back(RankedTensorType::get({}, element));
  return success();
}

LogicalResult
OverlapLossGradOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  auto targets = rankedOperand(loc, adaptor.getTargets(), "targets", -1);
  if (failed(targets))
    return failure();
  if (failed(verifyOverlapKind(loc, adaptor.getKind(), adaptor.getAlpha(),
                               adaptor.getBeta())) ||
      failed(verifySums(loc, adaptor.getSums(), targets->getElementType())))
    return failure();
  if (targets->getRank() < 1)
    return emitOptionalError(loc, "targets need a batch dimension, got ",
                             *targets);
  if (adaptor.getSampleWeight() &&
      failed(verifySampleWeight(loc, adaptor.getSampleWeight(),
                                targets->getDimSize(0))))
    return failure();
  if (std::optional<int64_t> replicas = adaptor.getReplicas();
      replicas && *replicas < 1)
    return emitOptionalError(loc, "needs replicas >= 1, got ", *replicas);
  results.push_back(*targets);
  return success();
}

/// Dice's or Tversky's per-sample form: predictions and targets of one
/// type, the reduced axes positive, distinct and inside it.
static LogicalResult verifySampleOverlap(std::optional<Location> loc,
                                         LossKind kind, Value predValue,
                                         Value targetValue, Value weights,
                                         ArrayRef<int64_t> axis,
                                         std::optional<llvm::APFloat> alpha,
                                         std::optional<llvm::APFloat> beta) {
  if (failed(verifyOverlapKind(loc, kind, alpha, beta)))
    return failure();
  auto predictions = rankedOperand(loc, predValue, "predictions", -1);
  if (failed(predictions))
    return failure();
  if (predictions->getRank() < 2)
    return emitOptionalError(loc, "predictions need [batch, ...], got ",
                             *predictions);
  if (targetValue.getType() != *predictions)
    return emitOptionalError(loc, "targets ", targetValue.getType(),
                             " must have the predictions' type ", *predictions);
  if (weights &&
      failed(verifySampleWeight(loc, weights, predictions->getDimSize(0))))
    return failure();
  if (axis.empty())
    return emitOptionalError(loc, "needs at least one axis");
  for (auto [i, a] : llvm::enumerate(axis))
    if (a < 1 || a >= predictions->getRank() ||
        llvm::is_contained(axis.drop_front(i + 1), a))
      return emitOptionalError(loc, "axis needs distinct axes in [1, ",
                               predictions->getRank() - 1, "], got ", a);
  return success();
}

LogicalResult SampleOverlapLossOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  if (failed(verifySampleOverlap(loc, adaptor.getKind(),
                                 adaptor.getPredictions(), adaptor.getTargets(),
                                 adaptor.getSampleWeight(), adaptor.getAxis(),
                                 adaptor.getAlpha(), adaptor.getBeta())))
    return failure();
  results.push_back(RankedTensorType::get(
      {}, cast<RankedTensorType>(adaptor.getPredictions().getType())
              .getElementType()));
  return success();
}

LogicalResult SampleOverlapLossGradOp::verify() {
  return verifySampleOverlap(getLoc(), getKind(), getPredictions(),
                             getTargets(), getSampleWeight(), getAxis(),
                             getAlpha(), getBeta());
}

/// Labels [B] of integers, weights [B] of floats.
static LogicalResult verifyRowLabels(std::optional<Location> loc, Value labels,
                                     Value weights, StringRef weightsName) {
  auto l = rankedOperand(loc, labels, "labels", 1, "[batch]");
  auto w = rankedOperand(loc, weights, weightsName, 1, "[batch]");
  if (failed(l) || failed(w))
    return failure();
  if (!isa<IntegerType>(l->getElementType()))
    return emitOptionalError(loc,
                             "labels must be class indices (integers), "
                             "got ",
                             *l);
  if (!isa<FloatType>(w->getElementType()) ||
      w->getDimSize(0) != l->getDimSize(0))
    return emitOptionalError(loc, weightsName,
                             " must be floats, one per "
                             "label, got ",
                             *w);
  return success();
}

LogicalResult KeptRowsOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  if (failed(verifyRowLabels(loc, adaptor.getLabels(),
                             adaptor.getMetricWeight(), "metric_weight")))
    return failure();
  results.push_back(RankedTensorType::get(
      {2}, cast<RankedTensorType>(adaptor.getMetricWeight().getType())
               .getElementType()));
  return success();
}

LogicalResult IgnoreClassOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  if (failed(verifyRowLabels(loc, adaptor.getLabels(),
                             adaptor.getSampleWeight(), "sample_weight")))
    return failure();
  auto weights = cast<RankedTensorType>(adaptor.getSampleWeight().getType());
  auto counts = cast<RankedTensorType>(adaptor.getCounts().getType());
  if (counts.getRank() != 1 || counts.getDimSize(0) != 2 ||
      counts.getElementType() != weights.getElementType())
    return emitOptionalError(
        loc, "counts must be graph.kept_rows' ",
        RankedTensorType::get({2}, weights.getElementType()), ", got ", counts);
  results.push_back(adaptor.getLabels().getType());
  results.push_back(weights);
  return success();
}

LogicalResult
ConfusionCountsOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  auto predictions =
      rankedOperand(loc, adaptor.getPredictions(), "predictions", -1);
  if (failed(predictions))
    return failure();
  if (predictions->getRank() < 1)
    return emitOptionalError(loc, "predictions need a batch dimension, got ",
                             *predictions);
  if (adaptor.getLabels().getType() != *predictions)
    return emitOptionalError(loc, "labels ", adaptor.getLabels().getType(),
                             " must have the predictions' type ", *predictions);
  if (adaptor.getSampleWeight() &&
      failed(verifySampleWeight(loc, adaptor.getSampleWeight(),
                                predictions->getDimSize(0))))
    return failure();
  std::optional<int64_t> thresholds = adaptor.getNumThresholds();
  if (thresholds && adaptor.getThreshold())
    return emitOptionalError(loc, "takes num_thresholds (AUC's) or one "
                                  "threshold, not both");
  if (thresholds && *thresholds < 2)
    return emitOptionalError(loc, "needs num_thresholds >= 2, got ",
                             *thresholds);
  if (thresholds && (adaptor.getK() || adaptor.getClassId()))
    return emitOptionalError(loc, "k and class_id are Precision's and "
                                  "Recall's: not with num_thresholds");
  if (adaptor.getFromLogits() && !thresholds)
    return emitOptionalError(loc, "from_logits is AUC's: it needs "
                                  "num_thresholds");
  int64_t last =
      predictions->getRank() > 1 ? predictions->getShape().back() : 1;
  if (std::optional<int64_t> k = adaptor.getK(); k && *k < 1)
    return emitOptionalError(loc, "needs k >= 1, got ", *k);
  if (std::optional<int64_t> c = adaptor.getClassId();
      c && (*c < 0 || *c >= last || predictions->getRank() < 2))
    return emitOptionalError(loc, "class_id ", *c,
                             " is not a column of the predictions ",
                             *predictions);
  results.push_back(RankedTensorType::get({4, thresholds.value_or(1)},
                                          predictions->getElementType()));
  return success();
}

LogicalResult AccuracyOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             adaptor.getSampleWeight(), std::nullopt, results);
}

LogicalResult GlobalNormOp::inferReturnTypes(MLIRContext *,
                                             std::optional<Location> loc,
                                             Adaptor adaptor,
                                             SmallVectorImpl<Type> &results) {
  if (adaptor.getInputs().empty())
    return emitOptionalError(loc, "needs at least one operand");
  Type element;
  for (auto [i, input] : llvm::enumerate(adaptor.getInputs())) {
    Type mine = cast<ShapedType>(input.getType()).getElementType();
    if (element && mine != element)
      return emitOptionalError(loc, "operand #", i, " has element type ", mine,
                               ", operand #0 has ", element);
    element = mine;
  }
  results.push_back(RankedTensorType::get({}, element));
  return success();
}

//===----------------------------------------------------------------------===//
// Training: gradients and updates
//===----------------------------------------------------------------------===//

/// `actual` must be `expected`; the message names what was compared.
static LogicalResult expectType(Operation *op, Type actual, Type expected,
                                StringRef what) {
  if (actual != expected)
    return op->emitOpError()
           << what << " must be " << expected << ", got " << actual;
  return success();
}

LogicalResult Conv2DGradInputOp::verify() {
  auto forward = inferConv2D(
      getLoc(), getInputGrad(), getKernel(), getStrides(), getPadding(),
      getDilations(), getGroups(), getFilterLayout(), "input_grad", "kernel");
  if (failed(forward))
    return failure();
  return expectType(*this, getOutputGrad().getType(), *forward,
                    "output_grad (the forward conv2d's result)");
}

LogicalResult Conv2DGradKernelOp::verify() {
  auto forward = inferConv2D(
      getLoc(), getInput(), getKernelGrad(), getStrides(), getPadding(),
      getDilations(), getGroups(), getFilterLayout(), "input", "kernel_grad");
  if (failed(forward))
    return failure();
  return expectType(*this, getOutputGrad().getType(), *forward,
                    "output_grad (the forward conv2d's result)");
}

/// A pool gradient's optional `input_grad_sum`: one per channel of `input`.
static LogicalResult verifyInputGradSum(Operation *op, Value sum,
                                        RankedTensorType input) {
  if (!sum)
    return success();
  return expectType(
      op, sum.getType(),
      RankedTensorType::get({input.getShape().back()}, input.getElementType()),
      "input_grad_sum (one per channel)");
}

/// The argmax of a pool whose result is `pooled`: its shape, i32.
static RankedTensorType argmaxType(RankedTensorType pooled) {
  return pooled.clone(IntegerType::get(pooled.getContext(), 32));
}

LogicalResult MaxPool2DGradOp::verify() {
  auto input = rankedOperand(getLoc(), getInput(), "input", 4, "NHWC");
  if (failed(input))
    return failure();
  auto forward = inferPool2DType(getLoc(), *input, getPoolSize(), getStrides(),
                                 getPadding());
  if (failed(forward) ||
      failed(expectType(*this, getOutput().getType(), *forward,
                        "output (the forward max_pool2d's result)")) ||
      failed(expectType(*this, getOutputGrad().getType(), *forward,
                        "output_grad")))
    return failure();
  if (failed(expectType(*this, getInputGrad().getType(), *input, "input_grad")))
    return failure();
  return verifyInputGradSum(*this, getInputGradSum(), *input);
}

LogicalResult AvgPool2DGradOp::verify() {
  auto input = rankedOperand(getLoc(), getInputGrad(), "input_grad", 4, "NHWC");
  if (failed(input))
    return failure();
  auto forward = inferPool2DType(getLoc(), *input, getPoolSize(), getStrides(),
                                 getPadding());
  if (failed(forward))
    return failure();
  return expectType(*this, getOutputGrad().getType(), *forward,
                    "output_grad (the forward avg_pool2d's result)");
}

LogicalResult GlobalAvgPool2DGradOp::verify() {
  auto input = rankedOperand(getLoc(), getInputGrad(), "input_grad", 4, "NHWC");
  if (failed(input))
    return failure();
  auto expected = RankedTensorType::get(
      {input->getDimSize(0), input->getDimSize(3)}, input->getElementType());
  return expectType(*this, getOutputGrad().getType(), expected, "output_grad");
}

LogicalResult
DenseGradInputOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                   Adaptor adaptor,
                                   SmallVectorImpl<Type> &results) {
  auto dy = rankedOperand(loc, adaptor.getOutputGrad(), "output_grad", -1);
  if (failed(dy))
    return failure();
  auto kernel =
      rankedOperand(loc, adaptor.getKernel(), "kernel", 2, "[in, out]");
  if (failed(kernel))
    return failure();
  if (dy->getRank() < 2 || dy->getShape().back() != kernel->getDimSize(1))
    return emitOptionalError(loc, "output_grad ", *dy,
                             " does not match kernel columns (",
                             kernel->getDimSize(1), ")");
  SmallVector<int64_t> shape(dy->getShape());
  shape.back() = kernel->getDimSize(0);
  results.push_back(RankedTensorType::get(shape, dy->getElementType()));
  return success();
}

LogicalResult
DenseGradKernelOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  auto x = rankedOperand(loc, adaptor.getInput(), "input", -1);
  if (failed(x))
    return failure();
  auto dy = rankedOperand(loc, adaptor.getOutputGrad(), "output_grad", -1);
  if (failed(dy))
    return failure();
  if (x->getRank() < 2 || x->getRank() != dy->getRank() ||
      x->getShape().drop_back() != dy->getShape().drop_back())
    return emitOptionalError(loc, "input ", *x, " and output_grad ", *dy,
                             " must agree on every axis but the last");
  results.push_back(RankedTensorType::get(
      {x->getShape().back(), dy->getShape().back()}, x->getElementType()));
  return success();
}

LogicalResult BiasAddGradOp::inferReturnTypes(MLIRContext *,
                                              std::optional<Location> loc,
                                              Adaptor adaptor,
                                              SmallVectorImpl<Type> &results) {
  auto dy = rankedOperand(loc, adaptor.getOutputGrad(), "output_grad", -1);
  if (failed(dy))
    return failure();
  if (dy->getRank() < 1)
    return emitOptionalError(loc, "expects output_grad of rank >= 1");
  results.push_back(
      RankedTensorType::get({dy->getShape().back()}, dy->getElementType()));
  return success();
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = getInput().getType(), out = getOutput().getType();
  // I64Attr getters are unsigned; read the signed values.
  int64_t rank = in.getRank(), axis = getAxisAttr().getInt();
  int64_t offset = getOffsetAttr().getInt();
  if (out.getRank() != rank)
    return emitOpError("must keep the rank");
  if (axis < 0 || axis >= rank)
    return emitOpError("axis ") << axis << " is out of range for rank " << rank;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && in.getDimSize(d) != out.getDimSize(d))
      return emitOpError("may only shrink axis ") << axis;
  if (offset < 0 || offset + out.getDimSize(axis) > in.getDimSize(axis))
    return emitOpError("slice [")
           << offset << ", " << offset + out.getDimSize(axis)
           << ") is outside axis " << axis << " of size "
           << in.getDimSize(axis);
  return success();
}

/// Statistics and per-channel parameters of batch norm are [C].
static LogicalResult verifyChannels(Operation *op, ValueRange values,
                                    int64_t channels) {
  for (Value v : values) {
    if (!v)
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != channels)
      return op->emitOpError("expects per-channel tensors of shape [")
             << channels << "], got " << type;
  }
  return success();
}

/// A batch norm's row_mask, when it has one, is [N]: one per row of its
/// input's leading axis.
static LogicalResult verifyRowMask(Operation *op, Value mask,
                                   RankedTensorType input) {
  if (!mask)
    return success();
  auto type = cast<RankedTensorType>(mask.getType());
  if (type.getRank() != 1 || input.getRank() < 1 ||
      type.getDimSize(0) != input.getDimSize(0))
    return op->emitOpError("expects a row_mask of shape [")
           << (input.getRank() ? input.getDimSize(0) : 0)
           << "], one per row of the input, got " << type;
  return success();
}

LogicalResult BatchNormTrainOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 2)
    return emitOpError("expects input of rank >= 2");
  if (failed(expectType(*this, getOutput().getType(), input, "output")) ||
      failed(verifyRowMask(*this, getRowMask(), input)))
    return failure();
  return verifyChannels(*this,
                        {getMovingMean(), getMovingVariance(), getGamma(),
                         getBeta(), getBatchMean(), getBatchInvStd(),
                         getNewMovingMean(), getNewMovingVariance()},
                        input.getShape().back());
}

LogicalResult BatchNormGradOp::verify() {
  RankedTensorType input = getInput().getType();
  if (failed(
          expectType(*this, getOutputGrad().getType(), input, "output_grad")) ||
      failed(
          expectType(*this, getInputGrad().getType(), input, "input_grad")) ||
      failed(verifyRowMask(*this, getRowMask(), input)))
    return failure();
  return verifyChannels(*this,
                        {getBatchMean(), getBatchInvStd(), getGamma(),
                         getGammaGrad(), getBetaGrad()},
                        input.getRank() ? input.getShape().back() : 0);
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType input = getInput().getType();
  if (input.getRank() < 2)
    return emitOpError("expects input of rank >= 2");
  if (failed(
          expectType(*this, getOutputGrad().getType(), input, "output_grad")) ||
      failed(expectType(*this, getInputGrad().getType(), input, "input_grad")))
    return failure();
  return verifyChannels(*this, {getGamma(), getGammaGrad(), getBetaGrad()},
                        input.getShape().back());
}

LogicalResult BatchNormInferenceGradOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  auto dy = rankedOperand(loc, adaptor.getOutputGrad(), "output_grad", -1);
  if (failed(dy))
    return failure();
  if (dy->getRank() < 1)
    return emitOptionalError(loc, "expects output_grad of rank >= 1");
  int64_t channels = dy->getShape().back();
  if (failed(expectChannels(loc, adaptor.getMovingVariance(), "moving_variance",
                            channels, "output_grad")) ||
      failed(expectChannels(loc, adaptor.getGamma(), "gamma", channels,
                            "output_grad")))
    return failure();
  results.push_back(*dy);
  return success();
}

template <typename LossGradOp>
static LogicalResult verifyLossGrad(LossGradOp op, bool sparse) {
  SmallVector<Type> scalar;
  if (failed(inferClassification(op.getLoc(), op.getPredictions(),
                                 op.getLabels(), op.getSampleWeight(), sparse,
                                 scalar)))
    return failure();
  return expectType(op, op.getPredictionsGrad().getType(),
                    op.getPredictions().getType(), "predictions_grad");
}

LogicalResult CategoricalCrossentropyGradOp::verify() {
  return verifyLossGrad(*this, /*sparse=*/false);
}

LogicalResult SparseCategoricalCrossentropyGradOp::verify() {
  return verifyLossGrad(*this, /*sparse=*/true);
}

/// The optimizer's own slots, before gradient accumulation's.
static SmallVector<StringRef> updateSlotNames(Attribute optimizer) {
  if (auto sgd = dyn_cast<SGDAttr>(optimizer)) {
    if (sgd.getMomentum().isZero())
      return {};
    return {"momentum"};
  }
  if (auto adam = dyn_cast<AdamAttr>(optimizer)) {
    if (adam.getAmsgrad())
      return {"m", "v", "vhat"};
    return {"m", "v"};
  }
  if (isa<AdagradAttr>(optimizer))
    return {"accumulator"};
  if (isa<AdamaxAttr>(optimizer))
    return {"m", "u"};
  if (isa<NadamAttr>(optimizer))
    return {"m", "v"};
  auto rms = cast<RMSpropAttr>(optimizer);
  SmallVector<StringRef> names{"rms"};
  if (!rms.getMomentum().isZero())
    names.push_back("momentum");
  if (rms.getCentered())
    names.push_back("mg");
  return names;
}

SmallVector<StringRef> OptimizerUpdateOp::slotNames(Attribute optimizer) {
  SmallVector<StringRef> names = updateSlotNames(optimizer);
  if (getOptimizerOptions(optimizer).gradientAccumulationSteps > 0)
    names.push_back("grad_accum");
  return names;
}

unsigned OptimizerUpdateOp::slotsPerVariable(Attribute optimizer) {
  return slotNames(optimizer).size();
}

LogicalResult OptimizerUpdateOp::verify() {
  size_t n = getParams().size();
  if (n == 0)
    return emitOpError("needs at least one variable");
  if (getGrads().size() != n || getNewParams().size() != n)
    return emitOpError("needs as many grads and new values as params (")
           << n << "), got " << getGrads().size() << " grads and "
           << getNewParams().size() << " new values";
  unsigned k = slotsPerVariable(getOptimizer());
  if (getSlots().size() != n * k || getNewSlots().size() != n * k)
    return emitOpError("needs ")
           << k << " slot(s) per variable (" << n * k << " in all), got "
           << getSlots().size() << " slots and " << getNewSlots().size()
           << " new slots";
  for (size_t i = 0; i < n; ++i) {
    Type param = getParams()[i].getType();
    if (getGrads()[i].getType() != param ||
        getNewParams()[i].getType() != param)
      return emitOpError("variable #")
             << i << ": grad and new value must have the variable's type "
             << param;
    for (unsigned j = 0; j < k; ++j)
      if (getSlots()[i * k + j].getType() != param ||
          getNewSlots()[i * k + j].getType() != param)
        return emitOpError("variable #")
               << i << ": slot '" << slotNames(getOptimizer())[j]
               << "' must have the variable's type " << param;
  }
  OptimizerOptions options = getOptimizerOptions(getOptimizer());
  bool clipsByNorm = options.clipnorm > 0 || options.globalClipnorm > 0;
  if (clipsByNorm && getNorms().size() != n)
    return emitOpError("clips by norm and needs one norm per variable (")
           << n << "), got " << getNorms().size();
  if (!clipsByNorm && !getNorms().empty())
    return emitOpError("takes norms only with clipnorm or global_clipnorm");
  if (!getLossScale().empty()) {
    if (getLossScale().size() != 3)
      return emitOpError("takes loss_scale as (scale, norm, iterations), got ")
             << getLossScale().size() << " operand(s)";
    for (Value v : getLossScale())
      if (cast<RankedTensorType>(v.getType()).getNumElements() != 1)
        return emitOpError("loss_scale operand ")
               << v.getType() << " must hold one element";
    if (options.gradientAccumulationSteps > 0)
      return emitOpError("cannot both accumulate gradients and scale the "
                         "loss (Keras' LossScaleOptimizer does not take "
                         "gradient_accumulation_steps either)");
  }
  return success();
}

/// Whether `value`'s type holds one element.
static bool holdsOneElement(Value value) {
  auto type = dyn_cast<RankedTensorType>(value.getType());
  return type && type.hasStaticShape() && type.getNumElements() == 1;
}

LogicalResult ScaleByOp::verify() {
  if (!holdsOneElement(getScale()))
    return emitOpError("needs a scale of one element, got ")
           << getScale().getType();
  return success();
}

LogicalResult ScaleByOp::inferReturnTypes(MLIRContext *,
                                          std::optional<Location>,
                                          Adaptor adaptor,
                                          SmallVectorImpl<Type> &results) {
  results.push_back(adaptor.getInput().getType());
  return success();
}

LogicalResult
LossScaleUpdateOp::inferReturnTypes(MLIRContext *, std::optional<Location> loc,
                                    Adaptor adaptor,
                                    SmallVectorImpl<Type> &results) {
  for (Value v : {adaptor.getScale(), adaptor.getCounter(),
                  adaptor.getIterations(), adaptor.getNorm()}) {
    if (!holdsOneElement(v))
      return emitOptionalError(loc, "graph.loss_scale_update: operand ",
                               v.getType(), " must hold one element");
    results.push_back(v.getType());
  }
  return success();
}

LogicalResult
AssignVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto variable =
      symbolTable.lookupNearestSymbolFrom<VariableOp>(*this, getVariableAttr());
  if (!variable)
    return emitOpError("'")
           << getVariable() << "' does not name a graph.variable";
  if (variable.getType() != getValue().getType())
    return emitOpError("value type ")
           << getValue().getType() << " does not match variable "
           << getVariableAttr() << " of type " << variable.getType();
  return success();
}

//===----------------------------------------------------------------------===//
// Fused forms
//===----------------------------------------------------------------------===//

/// A fused bias is [C] for the result's last axis.
static LogicalResult verifyFusedBias(Operation *op, Value bias,
                                     RankedTensorType result) {
  if (!bias)
    return success();
  auto type = cast<RankedTensorType>(bias.getType());
  if (type.getRank() != 1 || type.getDimSize(0) != result.getShape().back())
    return op->emitOpError("bias must be [")
           << result.getShape().back() << "], got " << type;
  return success();
}

LogicalResult FusedConv2DOp::verify() {
  auto forward =
      inferConv2D(getLoc(), getInput(), getKernel(), getStrides(), getPadding(),
                  getDilations(), getGroups(), getFilterLayout());
  if (failed(forward) ||
      failed(expectType(*this, getOutput().getType(), *forward, "output")))
    return failure();
  return verifyFusedBias(*this, getBias(), *forward);
}

LogicalResult FusedConv2DPoolOp::verify() {
  auto conv =
      inferConv2D(getLoc(), getInput(), getKernel(), getStrides(), getPadding(),
                  getDilations(), getGroups(), getFilterLayout());
  if (failed(conv) || failed(verifyFusedBias(*this, getBias(), *conv)))
    return failure();
  auto pooled = inferPool2DType(getLoc(), *conv, getPoolSize(),
                                getPoolStrides(), getPoolPadding());
  if (failed(pooled) ||
      failed(expectType(*this, getOutput().getType(), *pooled, "output")))
    return failure();
  return expectType(*this, getArgmax().getType(), argmaxType(*pooled),
                    "argmax");
}

/// The operands an argmax pool gradient reads, against the pool of
/// `input` (the pool's input, the convolution's output): the forward
/// pool's `output`, `outputGrad`, the i32 `argmax`, all of the pooled
/// shape; and the optional per-channel `sum` of the routed gradient.
static LogicalResult verifyArgmaxRouting(Operation *op, RankedTensorType input,
                                         ArrayRef<int64_t> poolSize,
                                         ArrayRef<int64_t> strides,
                                         Padding padding, Value output,
                                         Value outputGrad, Value argmax,
                                         Value sum) {
  auto pooled =
      inferPool2DType(op->getLoc(), input, poolSize, strides, padding);
  if (failed(pooled) ||
      failed(expectType(op, output.getType(), *pooled,
                        "output (the forward pool's result)")) ||
      failed(expectType(op, outputGrad.getType(), *pooled, "output_grad")) ||
      failed(expectType(op, argmax.getType(), argmaxType(*pooled), "argmax")))
    return failure();
  return verifyInputGradSum(op, sum, input);
}

LogicalResult MaxPool2DArgmaxGradOp::verify() {
  auto input = rankedOperand(getLoc(), getInputGrad(), "input_grad", 4, "NHWC");
  if (failed(input))
    return failure();
  return verifyArgmaxRouting(*this, *input, getPoolSize(), getStrides(),
                             getPadding(), getOutput(), getOutputGrad(),
                             getArgmax(), getInputGradSum());
}

LogicalResult FusedConv2DPoolGradKernelOp::verify() {
  // Without writes_workspace a backend may leave the workspace as it was.
  if (!getWritesWorkspace() && !getWorkspace().use_empty())
    return emitOpError("workspace is read, but without writes_workspace no "
                       "backend need write it");
  auto conv = inferConv2D(getLoc(), getInput(), getKernelGrad(), getStrides(),
                          getPadding(), getDilations(), getGroups(),
                          getFilterLayout(), "input", "kernel_grad");
  if (failed(conv) ||
      failed(expectType(*this, getWorkspace().getType(), *conv,
                        "workspace (the convolution's output)")))
    return failure();
  return verifyArgmaxRouting(*this, *conv, getPoolSize(), getPoolStrides(),
                             getPoolPadding(), getOutput(), getOutputGrad(),
                             getArgmax(), getBiasGrad());
}

LogicalResult FusedDenseOp::verify() {
  SmallVector<Type> inferred;
  DenseOp::Adaptor adaptor({getInput(), getKernel()});
  if (failed(DenseOp::inferReturnTypes(getContext(), getLoc(), adaptor,
                                       inferred)) ||
      failed(
          expectType(*this, getOutput().getType(), inferred.front(), "output")))
    return failure();
  return verifyFusedBias(*this, getBias(),
                         cast<RankedTensorType>(inferred.front()));
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  SmallVector<Type> scalar;
  if (failed(inferClassification(getLoc(), getLogits(), getLabels(),
                                 getSampleWeight(), std::nullopt, scalar)))
    return failure();
  Type logits = getLogits().getType();
  if (failed(expectType(*this, getProbabilities().getType(), logits,
                        "probabilities")) ||
      failed(
          expectType(*this, getLogitsGrad().getType(), logits, "logits_grad")))
    return failure();
  return expectType(*this, getLoss().getType(), scalar.front(), "loss");
}

LogicalResult ElementwiseOp::verify() {
  RankedTensorType result = getOutput().getType();
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (input.getType() != result)
      return emitOpError("input #") << i << " must have the result's type "
                                    << result << ", got " << input.getType();
  Block &body = getBody().front();
  auto element = RankedTensorType::get({}, result.getElementType());
  if (body.getNumArguments() != getInputs().size())
    return emitOpError("body needs one argument per input (")
           << getInputs().size() << "), got " << body.getNumArguments();
  for (BlockArgument arg : body.getArguments())
    if (arg.getType() != element)
      return emitOpError("body arguments must be ") << element;
  auto yield = dyn_cast<YieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end with graph.yield");
  if (yield.getValue().getType() != element)
    return emitOpError("body must yield ") << element;
  for (Operation &op : body.without_terminator())
    if (op.getNumRegions() || !isMemoryEffectFree(&op))
      return op.emitOpError("cannot appear in a graph.elementwise body");
  return success();
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
