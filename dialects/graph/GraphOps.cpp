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
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"

using namespace mlir;
using namespace mlir::graph;

int64_t mlir::graph::windowOutputSize(int64_t input, int64_t window,
                                      int64_t stride, int64_t dilation,
                                      Padding padding) {
  if (padding == Padding::same)
    return (input + stride - 1) / stride;
  int64_t extent = (window - 1) * dilation + 1;
  if (input < extent)
    return 0;
  return (input - extent) / stride + 1;
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

LogicalResult
ReadVariableOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto variable =
      symbolTable.lookupNearestSymbolFrom<VariableOp>(*this, getVariableAttr());
  if (!variable)
    return emitOpError("'")
           << getVariable() << "' does not name a graph.variable";
  if (variable.getType() != getValue().getType())
    return emitOpError("result type ")
           << getValue().getType() << " does not match variable @"
           << getVariable() << " of type " << variable.getType();
  return success();
}

OutputOp ModelOp::getOutputOp() {
  return dyn_cast<OutputOp>(getBlock().getTerminator());
}

SmallVector<InputOp> ModelOp::getInputOps() {
  return llvm::to_vector(getBlock().getOps<InputOp>());
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
  llvm::StringSet<> names;
  for (InputOp input : block.getOps<InputOp>())
    if (!names.insert(input.getName()).second)
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
  Attribute optimizer = getOptimizer();
  if (auto sgd = dyn_cast<SGDAttr>(optimizer))
    return sgd.getLearningRate().convertToDouble();
  if (auto adam = dyn_cast<AdamAttr>(optimizer))
    return adam.getLearningRate().convertToDouble();
  return cast<RMSpropAttr>(optimizer).getLearningRate().convertToDouble();
}

LogicalResult TrainingOp::verify() {
  for (StringRef metric : getMetrics().getAsValueRange<StringAttr>())
    if (metric != "accuracy")
      return emitOpError("unknown metric '")
             << metric << "' (supported: accuracy)";
  return success();
}

LogicalResult TrainingOp::verifySymbolUses(SymbolTableCollection &symbolTable) {
  auto model =
      symbolTable.lookupNearestSymbolFrom<ModelOp>(*this, getModelAttr());
  if (!model)
    return emitOpError("'") << getModel() << "' does not name a graph.model";
  OutputOp output = model.getOutputOp();
  if (!output || output.getOutputs().size() != 1)
    return emitOpError("needs a model with exactly one output");
  auto predictions = cast<RankedTensorType>(output.getOutputs()[0].getType());
  if (predictions.getRank() != 2 ||
      !isa<FloatType>(predictions.getElementType()))
    return emitOpError("loss ")
           << stringifyLossKind(getLoss())
           << " needs float model output [batch, classes], got " << predictions;
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

LogicalResult Conv2DOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", 4, "NHWC");
  if (failed(input))
    return failure();
  auto kernel = rankedOperand(loc, adaptor.getKernel(), "kernel", 4, "HWIO");
  if (failed(kernel))
    return failure();
  ArrayRef<int64_t> strides = adaptor.getStrides();
  ArrayRef<int64_t> dilations = adaptor.getDilations();
  if (failed(verifyPositivePair(loc, "strides", strides)) ||
      failed(verifyPositivePair(loc, "dilations", dilations)))
    return failure();
  if (llvm::any_of(strides, [](int64_t s) { return s > 1; }) &&
      llvm::any_of(dilations, [](int64_t d) { return d > 1; }))
    return emitOptionalError(loc, "strides > 1 cannot be combined with "
                                  "dilations > 1 (as in Keras)");
  if (input->getElementType() != kernel->getElementType())
    return emitOptionalError(
        loc, "input element type ", input->getElementType(),
        " differs from kernel element type ", kernel->getElementType());
  if (kernel->getDimSize(2) != input->getDimSize(3))
    return emitOptionalError(
        loc, "kernel input channels (", kernel->getDimSize(2),
        ") must match input channels (", input->getDimSize(3), ")");
  auto shape = slideWindow(loc, *input, kernel->getShape().take_front(2),
                           strides, dilations, adaptor.getPadding(),
                           kernel->getDimSize(3), "kernel");
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, input->getElementType()));
  return success();
}

template <typename PoolAdaptor>
static LogicalResult inferPool(std::optional<Location> loc, PoolAdaptor adaptor,
                               SmallVectorImpl<Type> &results) {
  auto input = rankedOperand(loc, adaptor.getInput(), "input", 4, "NHWC");
  if (failed(input))
    return failure();
  if (failed(verifyPositivePair(loc, "pool_size", adaptor.getPoolSize())) ||
      failed(verifyPositivePair(loc, "strides", adaptor.getStrides())))
    return failure();
  int64_t ones[] = {1, 1};
  auto shape = slideWindow(loc, *input, adaptor.getPoolSize(),
                           adaptor.getStrides(), ones, adaptor.getPadding(),
                           input->getDimSize(3), "pool window");
  if (failed(shape))
    return failure();
  results.push_back(RankedTensorType::get(*shape, input->getElementType()));
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
  int64_t features = 1;
  for (int64_t d : input->getShape().drop_front())
    features *= d;
  results.push_back(RankedTensorType::get({input->getDimSize(0), features},
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
  auto expectChannels = [&](Value v, StringRef name) -> LogicalResult {
    if (!v)
      return success();
    auto type = rankedOperand(loc, v, name, 1);
    if (failed(type))
      return failure();
    if (type->getDimSize(0) != channels)
      return emitOptionalError(loc, name, " has ", type->getDimSize(0),
                               " values, the input has ", channels,
                               " channels");
    return success();
  };
  if (failed(expectChannels(adaptor.getMovingMean(), "moving_mean")) ||
      failed(expectChannels(adaptor.getMovingVariance(), "moving_variance")) ||
      failed(expectChannels(adaptor.getGamma(), "gamma")) ||
      failed(expectChannels(adaptor.getBeta(), "beta")))
    return failure();
  double epsilon = adaptor.getEpsilon().convertToDouble();
  double momentum = adaptor.getMomentum().convertToDouble();
  if (!(epsilon > 0))
    return emitOptionalError(loc, "epsilon must be > 0, got ",
                             formatF64(epsilon));
  if (!(momentum >= 0 && momentum <= 1))
    return emitOptionalError(loc, "momentum must be in [0, 1], got ", momentum);
  results.push_back(*input);
  return success();
}

//===----------------------------------------------------------------------===//
// Losses and metrics
//===----------------------------------------------------------------------===//

/// Checks predictions [B, C] against one-hot labels [B, C] (float) or class
/// indices [B] (integer) and yields the scalar result type.
static LogicalResult inferClassification(std::optional<Location> loc,
                                         Value predictionsValue,
                                         Value labelsValue,
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
  results.push_back(RankedTensorType::get({}, predictions->getElementType()));
  return success();
}

LogicalResult CategoricalCrossentropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             /*sparse=*/false, results);
}

LogicalResult SparseCategoricalCrossentropyOp::inferReturnTypes(
    MLIRContext *, std::optional<Location> loc, Adaptor adaptor,
    SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             /*sparse=*/true, results);
}

LogicalResult AccuracyOp::inferReturnTypes(MLIRContext *,
                                           std::optional<Location> loc,
                                           Adaptor adaptor,
                                           SmallVectorImpl<Type> &results) {
  return inferClassification(loc, adaptor.getPredictions(), adaptor.getLabels(),
                             std::nullopt, results);
}

#define GET_OP_CLASSES
#include "dialects/graph/GraphOps.cpp.inc"
