//===- BuildTrainingStepPass.cpp - training and evaluation steps ----------===//
//
// From the model that graph.training names, builds @train_step (the forward
// pass in training mode, loss, metrics, reverse-mode gradients, one
// optimizer_update per trained variable), @eval_step (the forward pass in
// inference mode, loss, metrics, and the predictions, from which the runtime
// counts a confusion matrix) and @predict_step (the forward pass in inference
// mode and its predictions only: Keras' predict). docs/compiler-ir.md,
// section 1, is the contract.
//
// Gradients are computed only for values that both depend on a trainable
// variable and reach the loss, so nothing is emitted below the first
// trainable layer. A value's gradient is summed (one graph.add) as soon as
// the last of its uses has contributed, so each variable's gradient appears
// as early in backward as it can: the order of the updates, and of the
// all-reduce buckets built later, follows it.
//
// Under dynamic loss scaling (a model that computes in float16, or a
// graph.training with a loss_scale: Keras' LossScaleOptimizer) three more
// variables hold the scale, the finite steps since it last changed and the
// updates applied (optimizer/dynamic_scale, optimizer/step_counter,
// optimizer/iterations); each loss gradient is multiplied by the scale
// (graph.scale_by), the updates skip a step whose gradients are not finite
// and divide the others by it, and graph.loss_scale_update moves the scale
// as Keras does. The step's grad_norm is then that of the unscaled
// gradients, and a `loss_scale` output reports the scale after the step
// (Keras' dynamic_scale as a callback's on_train_batch_end reads it).
//
// A frozen batch_norm (gamma and beta not trainable: Keras'
// BatchNormalization with trainable = False) stays in inference mode in
// @train_step; layers below it still train, through
// batch_norm_inference_grad, dx = dy * gamma / sqrt(moving_variance + eps).
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Sequence.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallVectorExtras.h"
#include "llvm/ADT/TypeSwitch.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_BUILDTRAININGSTEP
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

/// Dynamic loss scaling's variables, named after Keras'
/// LossScaleOptimizer's (dynamic_scale, step_counter) and its inner
/// optimizer's iterations; the "optimizer/" prefix keeps them out of weights
/// files (isOptimizerSlotName).
static constexpr StringLiteral kDynamicScale = "optimizer/dynamic_scale";
static constexpr StringLiteral kStepCounter = "optimizer/step_counter";
static constexpr StringLiteral kIterations = "optimizer/iterations";
static constexpr StringLiteral kLossScaleVariables[] = {
    kDynamicScale, kStepCounter, kIterations};

//===----------------------------------------------------------------------===//
// Gradient rules, one per forward op
//===----------------------------------------------------------------------===//

/// The operands of a batch norm (batch_norm or batch_norm_train, which share
/// their operand layout) that gradients reach: input, gamma and beta. The
/// moving statistics do not affect a training-mode output.
template <typename BatchNormLike>
static SmallVector<unsigned> batchNormGradientOperands(BatchNormLike op) {
  SmallVector<unsigned> indices;
  for (unsigned segment : {0u, 3u, 4u}) {
    auto [start, length] = op.getODSOperandIndexAndLength(segment);
    for (unsigned i = start; i < start + length; ++i)
      indices.push_back(i);
  }
  return indices;
}

/// The operands of a forward op that receive a gradient, or nullopt when the
/// op has no gradient rule. batch_norm is taken in training mode, or, when
/// frozen, in inference mode, where gamma and beta (frozen) get none.
static std::optional<SmallVector<unsigned>> gradientOperands(Operation *op) {
  using Result = std::optional<SmallVector<unsigned>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case<Conv2DOp, DenseOp, BiasAddOp, ChannelScaleOp, Conv2DGradInputOp>(
          [](Operation *) {
            return SmallVector<unsigned>{0, 1};
          })
      .Case<ReluOp, SigmoidOp, TanhOp, EluOp, LeakyReluOp, GeluOp, SoftmaxOp,
            DropoutOp, MaxPool2DOp, AvgPool2DOp, GlobalAvgPool2DOp, FlattenOp,
            ReshapeOp, PadOp, ClippedReluOp, SiluOp, HardSigmoidOp, HardSiluOp,
            ScaleShiftOp, AvgPool2DGradOp, TransposeOp, RandomImageTransformOp,
            RandomContrastOp, BroadcastOp, SumToOp, NormalizeOp,
            ChannelScaleShiftOp, CastOp>(
          [](Operation *) { return SmallVector<unsigned>{0}; })
      .Case<AddOp, ConcatenateOp, MultiplyOp, MaximumOp, LayerNormOp>(
          [](Operation *op) {
            return llvm::to_vector(
                llvm::seq<unsigned>(0, op->getNumOperands()));
          })
      .Case<BatchNormOp, BatchNormTrainOp>(
          [](auto op) { return batchNormGradientOperands(op); })
      .Default([](Operation *) { return std::nullopt; });
}

/// Emits the gradients of `op`'s operands from `dy`, the gradient of its
/// result, for each operand index where `wanted` holds, and hands each to
/// `give`. `op` is the training-step forward op (batch_norm_train in place of
/// batch_norm). Weight gradients come before the input gradient, so they are
/// ready as early as possible.
static void
emitOperandGradients(OpBuilder &b, Operation *op, Value dy,
                     llvm::function_ref<bool(unsigned)> wanted,
                     llvm::function_ref<void(unsigned, Value)> give) {
  Location loc = op->getLoc();
  Type dyType = dy.getType();
  llvm::TypeSwitch<Operation *>(op)
      .Case([&](Conv2DOp op) {
        if (wanted(1))
          give(1, Conv2DGradKernelOp::create(
                      b, loc, op.getKernel().getType(), op.getInput(), dy,
                      op.getStridesAttr(), op.getPaddingAttr(),
                      op.getDilationsAttr(), op.getGroupsAttr(),
                      op.getFilterLayoutAttr()));
        if (wanted(0))
          give(0, Conv2DGradInputOp::create(
                      b, loc, op.getInput().getType(), dy, op.getKernel(),
                      op.getStridesAttr(), op.getPaddingAttr(),
                      op.getDilationsAttr(), op.getGroupsAttr(),
                      op.getFilterLayoutAttr()));
      })
      .Case([&](Conv2DGradInputOp op) {
        // In the forward model (Conv2DTranspose): a convolution's adjoint,
        // linear in both operands. Its input gradient is the convolution
        // of dy, its kernel gradient the convolution's kernel gradient with
        // dy as the convolution's input and the transposed convolution's
        // input as the convolution's output gradient.
        if (wanted(1))
          give(1, Conv2DGradKernelOp::create(
                      b, loc, op.getKernel().getType(), dy, op.getOutputGrad(),
                      op.getStridesAttr(), op.getPaddingAttr(),
                      op.getDilationsAttr(), op.getGroupsAttr(),
                      op.getFilterLayoutAttr()));
        if (wanted(0))
          give(0,
               Conv2DOp::create(b, loc, op.getOutputGrad().getType(), dy,
                                op.getKernel(), op.getStridesAttr(),
                                op.getPaddingAttr(), op.getDilationsAttr(),
                                op.getGroupsAttr(), op.getFilterLayoutAttr()));
      })
      .Case([&](DenseOp op) {
        if (wanted(1))
          give(1, DenseGradKernelOp::create(b, loc, op.getInput(), dy));
        if (wanted(0))
          give(0, DenseGradInputOp::create(b, loc, dy, op.getKernel()));
      })
      .Case([&](BiasAddOp op) {
        if (wanted(1))
          give(1, BiasAddGradOp::create(b, loc, dy));
        if (wanted(0))
          give(0, dy);
      })
      .Case([&](ReluOp op) {
        give(0, ReluGradOp::create(b, loc, dyType, dy, op.getOutput()));
      })
      .Case([&](SigmoidOp op) {
        give(0, SigmoidGradOp::create(b, loc, dyType, dy, op.getOutput()));
      })
      .Case([&](TanhOp op) {
        give(0, TanhGradOp::create(b, loc, dyType, dy, op.getOutput()));
      })
      .Case([&](EluOp op) {
        give(0, EluGradOp::create(b, loc, dyType, dy, op.getOutput(),
                                  op.getAlphaAttr()));
      })
      .Case([&](SoftmaxOp op) {
        give(0, SoftmaxGradOp::create(b, loc, dyType, dy, op.getOutput(),
                                      op.getAxisAttr()));
      })
      .Case([&](LeakyReluOp op) {
        give(0, LeakyReluGradOp::create(b, loc, dyType, dy, op.getInput(),
                                        op.getAlphaAttr()));
      })
      .Case([&](GeluOp op) {
        give(0, GeluGradOp::create(b, loc, dyType, dy, op.getInput(),
                                   op.getApproximateAttr()));
      })
      .Case([&](DropoutOp op) {
        give(0,
             DropoutGradOp::create(b, loc, dyType, dy, op.getRateAttr(),
                                   op.getSeedAttr(), op.getNoiseShapeAttr()));
      })
      .Case([&](RandomImageTransformOp op) {
        // Same attributes, so the same draws; the result is the input's type.
        auto grad = RandomImageTransformGradOp::create(
            b, loc, op.getInput().getType(), dy, op.getKindAttr(),
            op.getSeedAttr(), op.getModeAttr(), op.getFactorAttr(),
            op.getHeightFactorAttr(), op.getWidthFactorAttr(),
            op.getFillModeAttr(), op.getInterpolationAttr(),
            op.getFillValueAttr());
        give(0, grad);
      })
      .Case([&](RandomContrastOp op) {
        give(0, RandomContrastGradOp::create(
                    b, loc, dyType, dy, op.getInput(), op.getSeedAttr(),
                    op.getContrastRangeAttr(), op.getValueRangeAttr()));
      })
      .Case([&](MaxPool2DOp op) {
        give(0, MaxPool2DGradOp::create(
                    b, loc, op.getInput().getType(),
                    /*input_grad_sum=*/Type(), op.getInput(), op.getOutput(),
                    dy, op.getPoolSizeAttr(), op.getStridesAttr(),
                    op.getPaddingAttr(), /*relu_grad=*/UnitAttr())
                    .getInputGrad());
      })
      .Case([&](AvgPool2DOp op) {
        give(0, AvgPool2DGradOp::create(
                    b, loc, op.getInput().getType(), dy, op.getPoolSizeAttr(),
                    op.getStridesAttr(), op.getPaddingAttr()));
      })
      .Case([&](GlobalAvgPool2DOp op) {
        give(0, GlobalAvgPool2DGradOp::create(b, loc, op.getInput().getType(),
                                              dy));
      })
      .Case([&](CastOp op) {
        // A cast's gradient is the cast back: a bfloat16 activation's
        // gradient arrives in bfloat16, a float32 weight's in float32.
        give(0, CastOp::create(b, loc, op.getInput().getType(), dy));
      })
      .Case<FlattenOp, ReshapeOp>([&](Operation *op) {
        give(0, ReshapeOp::create(b, loc, op->getOperand(0).getType(), dy));
      })
      .Case([&](ClippedReluOp op) {
        give(0, ClippedReluGradOp::create(
                    b, loc, dyType, dy, op.getInput(), op.getMaxValueAttr(),
                    op.getNegativeSlopeAttr(), op.getThresholdAttr()));
      })
      .Case([&](SiluOp op) {
        give(0, SiluGradOp::create(b, loc, dyType, dy, op.getInput()));
      })
      .Case([&](HardSigmoidOp op) {
        give(0, HardSigmoidGradOp::create(b, loc, dyType, dy, op.getInput()));
      })
      .Case([&](HardSiluOp op) {
        give(0, HardSiluGradOp::create(b, loc, dyType, dy, op.getInput()));
      })
      .Case([&](ScaleShiftOp op) {
        give(0, ScaleShiftOp::create(b, loc, dyType, dy, op.getScaleAttr(),
                                     b.getF64FloatAttr(0.0)));
      })
      .Case([&](MultiplyOp op) {
        // The product rule: dy times the other factors.
        for (unsigned i : llvm::seq<unsigned>(0, op->getNumOperands())) {
          if (!wanted(i))
            continue;
          SmallVector<Value> factors{dy};
          for (unsigned j : llvm::seq<unsigned>(0, op->getNumOperands()))
            if (j != i)
              factors.push_back(op->getOperand(j));
          give(i, MultiplyOp::create(b, loc, dyType, factors));
        }
      })
      .Case([&](MaximumOp op) {
        for (unsigned i : llvm::seq<unsigned>(0, op->getNumOperands()))
          if (wanted(i))
            give(i, MaximumGradOp::create(b, loc, dyType, dy, op.getInputs(),
                                          b.getI64IntegerAttr(i)));
      })
      .Case([&](AvgPool2DGradOp op) {
        // In the forward model (UpSampling2D): a linear map whose adjoint
        // is the average pooling it is the gradient of.
        give(0, AvgPool2DOp::create(b, loc, op.getOutputGrad().getType(), dy,
                                    op.getPoolSizeAttr(), op.getStridesAttr(),
                                    op.getPaddingAttr()));
      })
      .Case([&](ChannelScaleShiftOp op) {
        SmallVector<double> zeros(op.getOffset().size(), 0.0);
        give(0,
             ChannelScaleShiftOp::create(b, loc, dyType, dy, op.getScaleAttr(),
                                         b.getDenseF64ArrayAttr(zeros)));
      })
      .Case([&](BroadcastOp op) {
        // Each input element fed every output element it was repeated to.
        give(0, SumToOp::create(b, loc, op.getInput().getType(), dy));
      })
      .Case([&](SumToOp op) {
        give(0, BroadcastOp::create(b, loc, op.getInput().getType(), dy));
      })
      .Case([&](NormalizeOp op) {
        // The statistics are constants (non-trainable variables): only the
        // input has a gradient, dy / max(sqrt(variance), epsilon).
        give(0, NormalizeOp::create(b, loc, dyType, dy, op.getVariance(),
                                    Value(), op.getEpsilonAttr()));
      })
      .Case([&](TransposeOp op) {
        ArrayRef<int64_t> perm = op.getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [d, axis] : llvm::enumerate(perm))
          inverse[axis] = static_cast<int64_t>(d);
        give(0,
             TransposeOp::create(b, loc, op.getInput().getType(), dy, inverse));
      })
      .Case([&](PadOp op) {
        // Cropping what was padded and padding what was cropped.
        auto negate = [](ArrayRef<int64_t> v) {
          return llvm::map_to_vector(v, [](int64_t a) { return -a; });
        };
        give(0, PadOp::create(b, loc, op.getInput().getType(), dy,
                              negate(op.getLow()), negate(op.getHigh())));
      })
      .Case([&](AddOp op) {
        for (unsigned i : llvm::seq<unsigned>(0, op->getNumOperands()))
          if (wanted(i))
            give(i, dy);
      })
      .Case([&](ConcatenateOp op) {
        int64_t rank = op.getOutput().getType().getRank();
        int64_t axis = op.getAxisAttr().getInt();
        if (axis < 0)
          axis += rank;
        int64_t offset = 0;
        for (auto [i, input] : llvm::enumerate(op.getInputs())) {
          if (wanted(i))
            give(i, SliceOp::create(b, loc, input.getType(), dy, axis, offset));
          offset += cast<RankedTensorType>(input.getType()).getDimSize(axis);
        }
      })
      .Case([&](BatchNormOp op) {
        // A frozen batch_norm, in inference mode in @train_step too: its
        // moving statistics, gamma and beta are constants, so only the
        // input has a gradient (gamma and beta are frozen variables, which
        // no gradient is wanted for).
        if (wanted(0))
          give(0, BatchNormInferenceGradOp::create(
                      b, loc, dy, op.getMovingVariance(), op.getGamma(),
                      op.getEpsilonAttr()));
      })
      .Case([&](ChannelScaleOp op) {
        // y = x * scale per channel: dscale sums dy * x over the rows.
        if (wanted(1))
          give(1, BiasAddGradOp::create(
                      b, loc,
                      MultiplyOp::create(b, loc, dyType,
                                         ValueRange{dy, op.getInput()})));
        if (wanted(0))
          give(0, ChannelScaleOp::create(b, loc, dyType, dy, op.getScale()));
      })
      .Case([&](LayerNormOp op) {
        // operands = [input, gamma?, beta?]; one layer_norm_grad gives all.
        if (llvm::none_of(llvm::seq<unsigned>(0, op->getNumOperands()), wanted))
          return;
        RankedTensorType input = op.getInput().getType();
        auto channels = RankedTensorType::get({input.getShape().back()},
                                              input.getElementType());
        auto grad = LayerNormGradOp::create(b, loc, input, channels, channels,
                                            dy, op.getInput(), op.getGamma(),
                                            op.getEpsilonAttr());
        unsigned next = 1;
        if (op.getGamma() && wanted(next++))
          give(next - 1, grad.getGammaGrad());
        if (op.getBeta() && wanted(next))
          give(next, grad.getBetaGrad());
        if (wanted(0))
          give(0, grad.getInputGrad());
      })
      .Case([&](BatchNormTrainOp op) {
        SmallVector<unsigned> operands = batchNormGradientOperands(op);
        if (llvm::none_of(operands, wanted))
          return;
        Type channels = op.getBatchMean().getType();
        auto grad = BatchNormGradOp::create(
            b, loc, op.getInput().getType(), channels, channels, dy,
            op.getInput(), op.getBatchMean(), op.getBatchInvStd(),
            op.getGamma(), op.getRowMask());
        // operands = [input, gamma?, beta?]: gamma and beta first.
        unsigned next = 1;
        if (op.getGamma() && wanted(operands[next++]))
          give(operands[next - 1], grad.getGammaGrad());
        if (op.getBeta() && wanted(operands[next]))
          give(operands[next], grad.getBetaGrad());
        if (wanted(operands[0]))
          give(operands[0], grad.getInputGrad());
      })
      .Default([](Operation *op) {
        llvm_unreachable("checked by gradientOperands");
      });
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

namespace {

/// Keras runs a BatchNormalization layer with trainable = False in inference
/// mode, in training too: a batch_norm whose gamma and beta (those it has)
/// are all frozen variables keeps its moving statistics in @train_step.
bool isFrozenBatchNorm(BatchNormOp op, SymbolTable &symbols) {
  SmallVector<Value> params;
  for (Value v : {op.getGamma(), op.getBeta()})
    if (v)
      params.push_back(v);
  return !params.empty() && llvm::all_of(params, [&](Value v) {
    auto read = v.getDefiningOp<ReadVariableOp>();
    auto var = read ? symbols.lookup<VariableOp>(read.getVariable()) : nullptr;
    return var && !var.getTrainable();
  });
}

/// What the model needs differentiated: decided before anything is built,
/// so an error leaves the module untouched.
struct GradientPlan {
  /// Values on a path from a trainable variable to the loss.
  DenseSet<Value> needsGrad;
  /// Ops of @m whose result needs a gradient, in forward order.
  SmallVector<Operation *> active;
  /// How many gradients each value in needsGrad receives.
  DenseMap<Value, unsigned> contributions;
  /// Per trained variable, how many of its reads need a gradient.
  DenseMap<Operation *, unsigned> readsPerVariable;
  /// Per trained variable, its first read: the value its update takes.
  DenseMap<Operation *, Value> firstRead;
  /// The trained variables, in module order.
  SmallVector<VariableOp> trained;
  /// batch_norm ops run in training mode in @train_step.
  DenseSet<Operation *> trainingBatchNorms;
};

/// A trained variable's gradient, in the order backward completes them.
struct VariableGradient {
  VariableOp variable;
  Value grad;
};

class TrainingStepBuilder {
public:
  TrainingStepBuilder(ModuleOp module, TrainingOp training, ModelOp model)
      : module(module), training(training), losses(training.getLossList()),
        outputNamesAttr(model.getOutputOp().getNamesAttr()), model(model),
        symbols(module), b(module.getContext()) {}

  LogicalResult run();

private:
  LogicalResult plan();
  /// Keras' LossScaleOptimizer: whether the step scales its loss, and how.
  LogicalResult planLossScale();
  void addSlotVariables();
  /// A read of the loss-scale variable `name` (optimizer/...).
  Value readLossScaleVariable(StringRef name);
  void buildTrainStep();
  void buildEvalStep();
  void buildPredictStep();
  /// Clones @m's forward pass in inference mode (dropout is the identity)
  /// into the step being built; returns its predictions, one per output.
  SmallVector<Value> cloneInferencePass(IRMapping &mapping);
  /// `names` as a string array attribute.
  ArrayAttr strings(ArrayRef<std::string> names);

  /// The inputs a step adds to @m's: each output's labels, and each row's
  /// weights.
  struct StepInputs {
    /// One per output, in the outputs' order.
    SmallVector<Value> labels;
    /// The loss's (and its gradient's): Keras' sample_weight.
    Value weights;
    /// The metrics': Keras' compiled `metrics` take no sample weights, so
    /// these are 1 an example (times a short batch's scale), 0 padding.
    Value metricWeights;
  };
  /// What one output's loss reads, which its gradient reads too.
  struct HeadLoss {
    /// The labels and row weights the loss takes (ignore_class' own).
    Value labels, weights;
    /// graph.overlap_sums' sums (dice, tversky over the whole batch).
    Value overlapSums;
  };
  /// A new step model at the end of the module, its inputs (those of @m,
  /// then each output's labels, "sample_weight" and "metric_weight")
  /// already in it; `mapping` maps @m's inputs.
  ModelOp startStep(StringRef name, IRMapping &mapping, StepInputs &inputs);
  /// The logged values (loggedValues' order) of the step's `predictions`
  /// (one per output); `heads` gets what each output's loss read.
  SmallVector<Value> lossAndMetrics(ArrayRef<Value> predictions,
                                    const StepInputs &in,
                                    SmallVector<HeadLoss> &heads);
  /// Output `i`'s loss (unweighted, reduced as it asks).
  Value headLoss(size_t i, Value predictions, const StepInputs &in,
                 HeadLoss &head);
  /// The gradient of output `i`'s weighted loss by its predictions.
  Value headSeed(size_t i, Value predictions, const HeadLoss &head);
  /// The value of one metric of output `i`.
  Value metricValue(size_t i, MetricAttr metric, Value predictions,
                    Value labels, Value metricWeights);
  /// The runtime's names of lossAndMetrics' values.
  SmallVector<std::string> outputNames();
  /// The labels the loss sees: with label_smoothing, the one-hot `labels`
  /// mixed with the uniform distribution over `predictions`' classes.
  Value lossLabels(OutputLossAttr loss, Value predictions, Value labels);
  /// `value` (output `i`'s batch-mean loss or its gradient) as its
  /// reduction asks: times the number of values it is the mean of for
  /// "sum" (with replicas too: see graph.training).
  Value reduce(size_t i, Value value, Value predictions);
  /// The name of output `i`'s labels input: "labels" for a model of one
  /// output, "labels:<output>" for each of several.
  std::string labelsName(size_t i) {
    if (losses.size() < 2)
      return "labels";
    return ("labels:" + cast<StringAttr>(outputNamesAttr[i]).getValue()).str();
  }
  /// The name of output `i`'s predictions in the evaluation and prediction
  /// steps: "predictions", or "predictions:<output>".
  std::string predictionsName(size_t i) {
    if (losses.size() < 2)
      return "predictions";
    return ("predictions:" + cast<StringAttr>(outputNamesAttr[i]).getValue())
        .str();
  }
  /// Records one gradient of `value` (of @m); sums them when all are in.
  void contribute(Value value, Value grad);

  /// The slot variables each trained variable gets: the optimizer's, and
  /// `average` with Keras' use_ema.
  SmallVector<StringRef> variableSlotNames() {
    SmallVector<StringRef> names =
        OptimizerUpdateOp::slotNames(training.getOptimizer());
    if (training.getEmaMomentum())
      names.push_back("average");
    return names;
  }

  bool isSparse(size_t i) {
    return losses[i].getKind() == LossKind::sparse_categorical_crossentropy;
  }
  /// Output `i`'s loss compares each prediction with a target of its shape.
  bool isPointwise(size_t i) { return isPointwiseLoss(losses[i].getKind()); }
  LossKindAttr kindAttr(size_t i) {
    return LossKindAttr::get(b.getContext(), losses[i].getKind());
  }
  /// An optional double as an optional attribute.
  FloatAttr f64(std::optional<llvm::APFloat> value) {
    return value ? b.getF64FloatAttr(value->convertToDouble()) : FloatAttr();
  }
  VariableOp variableOf(ReadVariableOp read) {
    return symbols.lookup<VariableOp>(read.getVariable());
  }
  std::string slotName(VariableOp variable, StringRef slot) {
    return (variable.getSymName() + "/" + slot).str();
  }

  ModuleOp module;
  TrainingOp training;
  /// Dynamic loss scaling (Keras' LossScaleOptimizer): its initial scale
  /// and growth steps, when on.
  std::optional<std::pair<double, int64_t>> lossScale;
  /// One per output of @m.
  SmallVector<OutputLossAttr> losses;
  /// @m's graph.output names (null for one output).
  ArrayAttr outputNamesAttr;
  ModelOp model;
  SymbolTable symbols;
  OpBuilder b;
  GradientPlan planned;

  // Backward state, keyed by values and ops of @m.
  DenseMap<Value, SmallVector<Value>> pending;
  DenseMap<Value, Value> grads;
  DenseMap<Operation *, SmallVector<Value>> variableGrads;
  SmallVector<VariableGradient> completed;
};

} // namespace

LogicalResult TrainingStepBuilder::plan() {
  Block &body = model.getBlock();
  auto outputs = model.getOutputOp().getOutputs();

  for (InputOp input : model.getInputOps())
    if (input.getName() == "labels" || input.getName().starts_with("labels:") ||
        input.getName() == "sample_weight" ||
        input.getName() == "metric_weight")
      return input.emitError("input name '")
             << input.getName()
             << "' is taken by an input that the training step adds";
  for (StringRef name : {"train_step", "eval_step", "predict_step"})
    if (Operation *existing = symbols.lookup(name))
      return existing->emitError("symbol '")
             << name << "' already exists; graph-build-training-step adds it";

  auto operandsOf = [](Operation *op) {
    return gradientOperands(op).value_or(
        llvm::to_vector(llvm::seq<unsigned>(0, op->getNumOperands())));
  };

  // Forward: what depends on a trainable variable.
  DenseSet<Value> fromTrainable;
  for (Operation &op : body) {
    if (auto read = dyn_cast<ReadVariableOp>(op)) {
      VariableOp var = variableOf(read);
      if (var && var.getTrainable())
        fromTrainable.insert(read);
      continue;
    }
    if (llvm::any_of(operandsOf(&op), [&](unsigned i) {
          return fromTrainable.contains(op.getOperand(i));
        }))
      fromTrainable.insert(op.result_begin(), op.result_end());
  }

  // Backward: what the loss depends on.
  DenseSet<Value> toLoss(outputs.begin(), outputs.end());
  for (Operation &op : llvm::reverse(body))
    if (llvm::any_of(op.getResults(),
                     [&](Value r) { return toLoss.contains(r); }))
      for (unsigned i : operandsOf(&op))
        toLoss.insert(op.getOperand(i));

  for (Operation &op : body)
    for (Value r : op.getResults())
      if (fromTrainable.contains(r) && toLoss.contains(r))
        planned.needsGrad.insert(r);
  if (llvm::none_of(outputs,
                    [&](Value v) { return planned.needsGrad.contains(v); }))
    return training.emitError("no trainable variable of @")
           << model.getSymName() << " affects the loss: nothing to train";

  for (Operation &op : body) {
    if (auto bn = dyn_cast<BatchNormOp>(op)) {
      // A frozen one stays in inference mode; gradients pass through it
      // by batch_norm_inference_grad (see emitOperandGradients).
      if (!isFrozenBatchNorm(bn, symbols)) {
        for (auto [name, stat] : {std::pair{"moving_mean", bn.getMovingMean()},
                                  {"moving_variance", bn.getMovingVariance()}})
          if (!stat.getDefiningOp<ReadVariableOp>())
            return bn.emitError("batch_norm's ")
                   << name
                   << " must come from graph.read_variable: training "
                      "updates it with graph.assign_variable";
        planned.trainingBatchNorms.insert(bn);
      }
    }
    if (isa<ReadVariableOp>(op) || llvm::none_of(op.getResults(), [&](Value r) {
          return planned.needsGrad.contains(r);
        }))
      continue;
    std::optional<SmallVector<unsigned>> operands = gradientOperands(&op);
    if (!operands)
      return op.emitError("cannot differentiate '")
             << op.getName()
             << "': it lies between trainable variables and the loss, and "
                "has no gradient rule";
    planned.active.push_back(&op);
    for (unsigned i : *operands)
      if (planned.needsGrad.contains(op.getOperand(i)))
        ++planned.contributions[op.getOperand(i)];
  }
  // Each output's loss contributes its gradient (an output no trainable
  // variable reaches gets none).
  for (Value output : outputs)
    if (planned.needsGrad.contains(output))
      ++planned.contributions[output];

  // Trained variables: those with a read on the path to the loss.
  llvm::SetVector<Operation *> readButUnused;
  for (auto read : body.getOps<ReadVariableOp>()) {
    VariableOp var = variableOf(read);
    if (!var || !var.getTrainable())
      continue;
    if (planned.needsGrad.contains(read)) {
      ++planned.readsPerVariable[var];
      planned.firstRead.try_emplace(var, read);
    } else {
      readButUnused.insert(var);
    }
  }
  for (Operation *var : readButUnused)
    if (!planned.readsPerVariable.count(var))
      var->emitWarning("trainable variable '")
          << cast<VariableOp>(var).getSymName()
          << "' does not affect the loss: it gets no gradient and no update";

  SmallVector<StringRef> slots = variableSlotNames();
  for (VariableOp var : module.getOps<VariableOp>()) {
    if (!planned.readsPerVariable.count(var))
      continue;
    planned.trained.push_back(var);
    for (StringRef slot : slots)
      if (Operation *existing = symbols.lookup(slotName(var, slot)))
        return existing->emitError("symbol '")
               << slotName(var, slot) << "' is taken: the optimizer keeps "
               << "slot '" << slot << "' of '" << var.getSymName()
               << "' under that name";
  }
  return success();
}

void TrainingStepBuilder::addSlotVariables() {
  // Slots start at zero, except Adagrad's accumulator, which starts at
  // initial_accumulator_value (Keras' Constant initializer).
  MLIRContext *context = module.getContext();
  InitializerAttr zeros = InitializerAttr::get(context, InitKind::zeros);
  InitializerAttr accumulator = zeros;
  if (auto adagrad = dyn_cast<AdagradAttr>(training.getOptimizer()))
    accumulator = InitializerAttr::get(
        context, InitKind::constant, zeros.getMean(), zeros.getStddev(),
        zeros.getMinval(), zeros.getMaxval(),
        adagrad.getInitialAccumulatorValue(), std::nullopt);
  if (lossScale) {
    // Scalars stored as one element (a variable holds a tensor of rank 1
    // or more): the scale starts at its initial value, the counts at 0.
    VariableOp last = planned.trained.back();
    b.setInsertionPointAfter(last);
    auto type = RankedTensorType::get({1}, b.getF32Type());
    InitializerAttr initial = InitializerAttr::get(
        context, InitKind::constant, zeros.getMean(), zeros.getStddev(),
        zeros.getMinval(), zeros.getMaxval(), llvm::APFloat(lossScale->first),
        std::nullopt);
    for (StringRef name : kLossScaleVariables)
      VariableOp::create(
          b, last.getLoc(), name, type, name == kDynamicScale ? initial : zeros,
          /*trainable=*/false, DenseI64ArrayAttr(), DenseI64ArrayAttr());
  }
  for (VariableOp var : planned.trained) {
    b.setInsertionPointAfter(var);
    for (StringRef slot : variableSlotNames())
      VariableOp::create(
          b, var.getLoc(), slotName(var, slot), var.getTensorType(),
          slot == "accumulator" ? accumulator : zeros,
          /*trainable=*/false,
          // Stored as the variable is (an OHWI kernel's
          // slots OHWI), named in the same Keras form.
          var.getLogicalShapeAttr(), var.getLogicalPermutationAttr());
  }
}

ModelOp TrainingStepBuilder::startStep(StringRef name, IRMapping &mapping,
                                       StepInputs &inputs) {
  b.setInsertionPointToEnd(module.getBody());
  auto step = ModelOp::create(b, model.getLoc(), name);
  b.createBlock(&step.getBody());
  for (InputOp input : model.getInputOps())
    b.clone(*input, mapping);
  auto outputs = model.getOutputOp().getOutputs();
  auto first = cast<RankedTensorType>(outputs[0].getType());
  for (auto [i, output] : llvm::enumerate(outputs)) {
    auto predictions = cast<RankedTensorType>(output.getType());
    Type labelsType = isSparse(i)
                          ? RankedTensorType::get({predictions.getDimSize(0)},
                                                  b.getIntegerType(32))
                          : Type(predictions);
    inputs.labels.push_back(
        InputOp::create(b, training.getLoc(), labelsType, labelsName(i)));
  }
  // Each row's weight in the loss and its gradient (Keras' sample_weight, or
  // class_weight's) and in the metrics, both 0 for the rows that pad a short
  // batch to the static shape (an epoch's last, the test set's last), so
  // that every example counts once (TPU Keras pads and masks the same way).
  // One of each weighs every output's rows, as Keras' one sample_weight
  // array does.
  auto rowType =
      RankedTensorType::get({first.getDimSize(0)}, first.getElementType());
  inputs.weights =
      InputOp::create(b, training.getLoc(), rowType, "sample_weight");
  inputs.metricWeights =
      InputOp::create(b, training.getLoc(), rowType, "metric_weight");
  return step;
}

/// `axis` with negative axes counted from the end of `rank` axes, sorted.
static SmallVector<int64_t> positiveAxes(ArrayRef<int64_t> axis, int64_t rank) {
  SmallVector<int64_t> positive;
  for (int64_t a : axis)
    positive.push_back(a < 0 ? a + rank : a);
  llvm::sort(positive);
  positive.erase(llvm::unique(positive), positive.end());
  return positive;
}

Value TrainingStepBuilder::headLoss(size_t i, Value predictions,
                                    const StepInputs &in, HeadLoss &head) {
  Location loc = training.getLoc();
  OutputLossAttr loss = losses[i];
  head.labels = in.labels[i];
  head.weights = in.weights;
  if (std::optional<int64_t> ignore = loss.getIgnoreClass()) {
    // Keras' ignore_class: the rows of that label weigh nothing, and the
    // mean is over the global batch's kept rows (graph.kept_rows, summed
    // over the replicas).
    Value counts = KeptRowsOp::create(b, loc, head.labels, in.metricWeights,
                                      b.getI64IntegerAttr(*ignore));
    auto ignoreOp = IgnoreClassOp::create(
        b, loc, head.labels, head.weights, counts, b.getI64IntegerAttr(*ignore),
        loss.getSumReduction() ? b.getUnitAttr() : UnitAttr());
    head.labels = ignoreOp.getKeptLabels();
    head.weights = ignoreOp.getWeights();
  }
  UnitAttr fromLogits = loss.getFromLogits() ? b.getUnitAttr() : UnitAttr();
  LossKind kind = loss.getKind();
  if (isOverlapLoss(kind) && loss.getAxis().empty()) {
    // Dice and Tversky: one ratio of the batch's sums, which the gradient
    // (buildTrainStep) reads too.
    head.overlapSums =
        OverlapSumsOp::create(b, loc, predictions, head.labels, head.weights);
    return OverlapLossOp::create(b, loc, kindAttr(i), head.overlapSums,
                                 f64(loss.getAlpha()), f64(loss.getBeta()),
                                 loss.getSumReduction() ? b.getUnitAttr()
                                                        : UnitAttr());
  }
  if (isOverlapLoss(kind)) {
    auto type = cast<RankedTensorType>(predictions.getType());
    return reduce(
        i,
        SampleOverlapLossOp::create(b, loc, kindAttr(i), predictions,
                                    head.labels, head.weights,
                                    b.getDenseI64ArrayAttr(positiveAxes(
                                        loss.getAxis(), type.getRank())),
                                    f64(loss.getAlpha()), f64(loss.getBeta())),
        predictions);
  }
  if (isPointwise(i))
    return reduce(
        i,
        PointwiseLossOp::create(
            b, loc, kindAttr(i), predictions, head.labels, head.weights,
            fromLogits, f64(loss.getLabelSmoothing()), f64(loss.getDelta()),
            f64(loss.getAlpha()), f64(loss.getGamma()),
            loss.getApplyClassBalancing() ? b.getUnitAttr() : UnitAttr()),
        predictions);
  if (isSparse(i))
    return reduce(
        i,
        SparseCategoricalCrossentropyOp::create(
            b, loc, predictions, head.labels, head.weights, fromLogits),
        predictions);
  return reduce(i,
                CategoricalCrossentropyOp::create(
                    b, loc, predictions,
                    lossLabels(loss, predictions, head.labels), head.weights,
                    fromLogits),
                predictions);
}

Value TrainingStepBuilder::metricValue(size_t i, MetricAttr metric,
                                       Value predictions, Value labels,
                                       Value metricWeights) {
  Location loc = training.getLoc();
  auto predType = cast<RankedTensorType>(predictions.getType());
  auto pointwise = [&](LossKind kind, Value p) -> Value {
    return PointwiseLossOp::create(
        b, loc, LossKindAttr::get(b.getContext(), kind), p, labels,
        metricWeights, UnitAttr(), FloatAttr(), FloatAttr(), FloatAttr(),
        FloatAttr(), UnitAttr());
  };
  using K = MetricKind;
  switch (metric.getKind()) {
  case K::accuracy:
    // Keras' compile_utils.get_metric: binary accuracy for an output whose
    // last axis is 1 under a loss of targets, else categorical (or sparse)
    // accuracy.
    if (predType.getShape().back() == 1 && isPointwise(i))
      return pointwise(LossKind::binary_accuracy, predictions);
    return AccuracyOp::create(b, loc, predictions, labels, metricWeights,
                              IntegerAttr());
  case K::binary_accuracy: {
    // (p > threshold) == t, as binary_accuracy's (p > 0.5) == t of p
    // shifted by 0.5 - threshold.
    double threshold = metric.getThreshold().convertToDouble();
    Value p = predictions;
    if (threshold != 0.5)
      p = ScaleShiftOp::create(b, loc, p, b.getF64FloatAttr(1.0),
                               b.getF64FloatAttr(0.5 - threshold));
    return pointwise(LossKind::binary_accuracy, p);
  }
  case K::categorical_accuracy:
  case K::sparse_categorical_accuracy:
    return AccuracyOp::create(b, loc, predictions, labels, metricWeights,
                              IntegerAttr());
  case K::top_k_categorical_accuracy:
  case K::sparse_top_k_categorical_accuracy:
    return AccuracyOp::create(b, loc, predictions, labels, metricWeights,
                              b.getI64IntegerAttr(metric.getK()));
  case K::precision:
  case K::recall: {
    // The threshold as it applies (the importer writes Keras' -1e10 for
    // a top_k without thresholds).
    return ConfusionCountsOp::create(
        b, loc, predictions, labels, metricWeights, IntegerAttr(),
        b.getF64FloatAttr(metric.getThreshold().convertToDouble()),
        metric.getK() > 0 ? b.getI64IntegerAttr(metric.getK()) : IntegerAttr(),
        metric.getClassId() >= 0 ? b.getI64IntegerAttr(metric.getClassId())
                                 : IntegerAttr(),
        UnitAttr());
  }
  case K::auc:
    return ConfusionCountsOp::create(
        b, loc, predictions, labels, metricWeights,
        b.getI64IntegerAttr(metric.getNumThresholds()), FloatAttr(),
        IntegerAttr(), IntegerAttr(),
        metric.getFromLogits() ? b.getUnitAttr() : UnitAttr());
  default:
    // The errors; the root mean squared error steps as the mean squared
    // error, whose epoch mean the runtime takes the root of.
    return pointwise(*pointwiseMetricKind(metric.getKind()), predictions);
  }
}

SmallVector<Value>
TrainingStepBuilder::lossAndMetrics(ArrayRef<Value> predictions,
                                    const StepInputs &in,
                                    SmallVector<HeadLoss> &heads) {
  Location loc = training.getLoc();
  heads.assign(losses.size(), HeadLoss());
  SmallVector<Value> perOutput;
  Value total;
  for (auto [i, p] : llvm::enumerate(predictions)) {
    Value loss = headLoss(i, p, in, heads[i]);
    perOutput.push_back(loss);
    // Keras' loss_weights: the total is their weighted sum.
    double weight = losses[i].getWeight().convertToDouble();
    Value weighted =
        weight == 1.0
            ? loss
            : ScaleShiftOp::create(b, loc, loss, b.getF64FloatAttr(weight),
                                   b.getF64FloatAttr(0.0))
                  .getResult();
    total = total ? AddOp::create(b, loc, total.getType(),
                                  ValueRange{total, weighted})
                        .getResult()
                  : weighted;
  }
  SmallVector<Value> outputs{total};
  if (losses.size() > 1)
    outputs.append(perOutput);
  // The metrics read the labels as given: an ignored class is a miss, as
  // in Keras.
  for (auto [i, p] : llvm::enumerate(predictions))
    for (MetricAttr metric : losses[i].getMetricList())
      outputs.push_back(
          metricValue(i, metric, p, in.labels[i], in.metricWeights));
  return outputs;
}

Value TrainingStepBuilder::lossLabels(OutputLossAttr loss, Value predictions,
                                      Value labels) {
  std::optional<llvm::APFloat> smoothingF = loss.getLabelSmoothing();
  // A pointwise loss smooths its targets itself (binary_crossentropy).
  if (!smoothingF || smoothingF->isZero() || isPointwiseLoss(loss.getKind()))
    return labels;
  double smoothing = smoothingF->convertToDouble();
  // Keras (losses.py, categorical_crossentropy): y * (1 - ls) + ls / C.
  double classes = static_cast<double>(
      cast<RankedTensorType>(predictions.getType()).getShape().back());
  return ScaleShiftOp::create(b, training.getLoc(), labels,
                              b.getF64FloatAttr(1.0 - smoothing),
                              b.getF64FloatAttr(smoothing / classes));
}

Value TrainingStepBuilder::reduce(size_t i, Value value, Value predictions) {
  OutputLossAttr loss = losses[i];
  // Dice and Tversky over the whole batch are one value, which Keras'
  // reduce_values returns as it is under every reduction.
  if (!loss.getSumReduction() ||
      (isOverlapLoss(loss.getKind()) && loss.getAxis().empty()))
    return value;
  // The sum over the per-sample losses: the batch for the class losses,
  // every position but the last axis for a pointwise loss (Keras reduces
  // over the last axis only), every position but the reduced axes for
  // Dice and Tversky with an axis.
  auto type = cast<RankedTensorType>(predictions.getType());
  double count = 1;
  if (!isPointwise(i)) {
    count = static_cast<double>(type.getDimSize(0));
  } else if (isOverlapLoss(loss.getKind())) {
    SmallVector<int64_t> axes = positiveAxes(loss.getAxis(), type.getRank());
    for (int64_t d = 0; d < type.getRank(); ++d)
      if (!llvm::is_contained(axes, d))
        count *= static_cast<double>(type.getDimSize(d));
  } else {
    for (int64_t d = 0; d + 1 < type.getRank(); ++d)
      count *= static_cast<double>(type.getDimSize(d));
  }
  return ScaleShiftOp::create(b, training.getLoc(), value,
                              b.getF64FloatAttr(count), b.getF64FloatAttr(0.0));
}

SmallVector<std::string> TrainingStepBuilder::outputNames() {
  SmallVector<std::string> names;
  for (const LoggedValue &value : loggedValues(training, outputNamesAttr))
    names.push_back(value.name);
  return names;
}

Value TrainingStepBuilder::headSeed(size_t i, Value predictions,
                                    const HeadLoss &head) {
  Location loc = training.getLoc();
  OutputLossAttr loss = losses[i];
  LossKind kind = loss.getKind();
  Type predType = predictions.getType();
  UnitAttr fromLogits = loss.getFromLogits() ? b.getUnitAttr() : UnitAttr();
  Value seed;
  if (isOverlapLoss(kind) && loss.getAxis().empty()) {
    seed = OverlapLossGradOp::create(
        b, loc, kindAttr(i), head.labels, head.overlapSums, head.weights,
        f64(loss.getAlpha()), f64(loss.getBeta()), IntegerAttr(),
        loss.getSumReduction() ? b.getUnitAttr() : UnitAttr());
  } else if (isOverlapLoss(kind)) {
    auto type = cast<RankedTensorType>(predType);
    seed = SampleOverlapLossGradOp::create(
        b, loc, predType, kindAttr(i), predictions, head.labels, head.weights,
        b.getDenseI64ArrayAttr(positiveAxes(loss.getAxis(), type.getRank())),
        f64(loss.getAlpha()), f64(loss.getBeta()));
  } else if (isPointwise(i)) {
    seed = PointwiseLossGradOp::create(
        b, loc, predType, kindAttr(i), predictions, head.labels, head.weights,
        fromLogits, f64(loss.getLabelSmoothing()), f64(loss.getDelta()),
        f64(loss.getAlpha()), f64(loss.getGamma()),
        loss.getApplyClassBalancing() ? b.getUnitAttr() : UnitAttr());
  } else if (isSparse(i)) {
    seed = SparseCategoricalCrossentropyGradOp::create(
        b, loc, predType, predictions, head.labels, head.weights, fromLogits);
  } else {
    seed = CategoricalCrossentropyGradOp::create(
        b, loc, predType, predictions,
        lossLabels(loss, predictions, head.labels), head.weights, fromLogits);
  }
  seed = reduce(i, seed, predictions);
  double weight = loss.getWeight().convertToDouble();
  if (weight != 1.0)
    seed = ScaleShiftOp::create(b, loc, seed, b.getF64FloatAttr(weight),
                                b.getF64FloatAttr(0.0));
  return seed;
}

void TrainingStepBuilder::contribute(Value value, Value grad) {
  SmallVector<Value> &parts = pending[value];
  parts.push_back(grad);
  if (parts.size() < planned.contributions.lookup(value))
    return;
  Value total = parts.size() == 1
                    ? parts.front()
                    : AddOp::create(b, value.getLoc(), value.getType(), parts)
                          .getResult();
  grads[value] = total;

  auto read = value.getDefiningOp<ReadVariableOp>();
  if (!read)
    return;
  VariableOp var = variableOf(read);
  SmallVector<Value> &reads = variableGrads[var];
  reads.push_back(total);
  if (reads.size() < planned.readsPerVariable.lookup(var))
    return;
  Value varGrad = reads.size() == 1 ? reads.front()
                                    : AddOp::create(b, var.getLoc(),
                                                    var.getTensorType(), reads)
                                          .getResult();
  completed.push_back({var, varGrad});
}

void TrainingStepBuilder::buildTrainStep() {
  IRMapping mapping;
  StepInputs in;
  startStep("train_step", mapping, in);

  // Forward, training mode.
  DenseMap<Operation *, Operation *> trainOp;
  SmallVector<std::pair<BatchNormOp, BatchNormTrainOp>> statistics;
  // A batch norm called twice in a step (a shared layer, a nested model
  // called twice) updates its moving statistics once a call, in order, as
  // Keras assigns them: each call starts from the previous call's.
  DenseMap<Attribute, Value> updatedStatistic;
  auto statistic = [&](Value moving) {
    if (auto read = moving.getDefiningOp<ReadVariableOp>())
      if (Value updated = updatedStatistic.lookup(read.getVariableAttr()))
        return updated;
    return mapping.lookup(moving);
  };
  for (Operation &op : model.getBlock().without_terminator()) {
    if (isa<InputOp>(op))
      continue;
    if (planned.trainingBatchNorms.contains(&op)) {
      auto bn = cast<BatchNormOp>(op);
      Type channels = bn.getMovingMean().getType();
      // The metric weights mask the padding rows of a short batch out of
      // the statistics, as Keras' are over the batch's examples alone.
      Value rowMask = in.metricWeights;
      if (bn.getInput().getType().getDimSize(0) !=
          cast<RankedTensorType>(rowMask.getType()).getDimSize(0))
        rowMask = nullptr;
      auto train = BatchNormTrainOp::create(
          b, bn.getLoc(), bn.getInput().getType(), channels, channels, channels,
          channels, mapping.lookup(bn.getInput()),
          statistic(bn.getMovingMean()), statistic(bn.getMovingVariance()),
          mapping.lookupOrNull(bn.getGamma()),
          mapping.lookupOrNull(bn.getBeta()), rowMask, bn.getEpsilonAttr(),
          bn.getMomentumAttr(), bn.getUnbiasedMovingVarianceAttr());
      for (auto [moving, updated] :
           {std::pair{bn.getMovingMean(), train.getNewMovingMean()},
            {bn.getMovingVariance(), train.getNewMovingVariance()}})
        if (auto read = moving.getDefiningOp<ReadVariableOp>())
          updatedStatistic[read.getVariableAttr()] = updated;
      mapping.map(bn.getOutput(), train.getOutput());
      trainOp[&op] = train;
      statistics.push_back({bn, train});
      continue;
    }
    trainOp[&op] = b.clone(op, mapping);
  }

  auto forwardOutputs = model.getOutputOp().getOutputs();
  SmallVector<Value> trainPredictions = llvm::map_to_vector(
      forwardOutputs, [&](Value v) { return mapping.lookup(v); });
  SmallVector<HeadLoss> heads;
  SmallVector<Value> outputs = lossAndMetrics(trainPredictions, in, heads);

  // Backward, in reverse order of the forward, from each output's share of
  // the total loss.
  Location loc = training.getLoc();
  // Keras' scale_loss, taken through the loss's gradient: each output's
  // share of it times the scale.
  Value scale, counter, iterations;
  if (lossScale) {
    scale = readLossScaleVariable(kDynamicScale);
    counter = readLossScaleVariable(kStepCounter);
    iterations = readLossScaleVariable(kIterations);
  }
  for (auto [i, output] : llvm::enumerate(forwardOutputs)) {
    if (!planned.needsGrad.contains(output))
      continue;
    Value seed = headSeed(i, trainPredictions[i], heads[i]);
    if (scale)
      seed = ScaleByOp::create(b, loc, seed, scale, IntegerAttr());
    contribute(output, seed);
  }
  for (Operation *op : llvm::reverse(planned.active)) {
    Value dy = grads.lookup(op->getResult(0));
    assert(dy && "every use of an active result has contributed");
    emitOperandGradients(
        b, trainOp[op], dy,
        [&](unsigned i) {
          return planned.needsGrad.contains(op->getOperand(i));
        },
        [&](unsigned i, Value g) { contribute(op->getOperand(i), g); });
  }

  // Updates, in the order backward completed the gradients.
  Attribute optimizer = training.getOptimizer();
  SmallVector<Value> applied;
  for (auto [var, grad] : completed)
    applied.push_back(grad);
  // The norm of the gradients the optimizer applies: one scalar that is
  // finite exactly when every gradient is, which the runtime's NaN guard
  // reads instead of every tensor (dist-insert-all-reduce rewires it to the
  // reduced gradients, as it does the updates, so that clipping by it
  // follows the all-reduce, as in MirroredStrategy).
  // Made before the updates only when they clip by it.
  OptimizerOptions options = getOptimizerOptions(optimizer);
  // Under loss scaling it also decides whether the updates apply.
  Value gradNorm;
  if (options.globalClipnorm > 0 || lossScale)
    gradNorm = GlobalNormOp::create(b, loc, applied);
  SmallVector<Value> lossScaleOperands;
  if (lossScale)
    lossScaleOperands = {scale, gradNorm, iterations};
  SmallVector<StringRef> slotNames = OptimizerUpdateOp::slotNames(optimizer);
  std::optional<double> emaMomentum;
  if (std::optional<llvm::APFloat> m = training.getEmaMomentum())
    emaMomentum = m->convertToDouble();
  SmallVector<std::pair<VariableOp, Value>> updated;
  for (auto [var, grad] : completed) {
    Location varLoc = var.getLoc();
    RankedTensorType type = var.getTensorType();
    SmallVector<Value> slots;
    for (StringRef slot : slotNames)
      slots.push_back(ReadVariableOp::create(
          b, varLoc, type,
          FlatSymbolRefAttr::get(b.getStringAttr(slotName(var, slot)))));
    SmallVector<Type> slotTypes(slots.size(), type);
    Value param = mapping.lookup(planned.firstRead.lookup(var));
    // Clipping by norm takes each variable's norm (clipnorm) or all of
    // theirs (global_clipnorm), computed in the step.
    SmallVector<Value> norms;
    if (options.clipnorm > 0)
      norms.push_back(GlobalNormOp::create(b, varLoc, ValueRange{grad}));
    else if (options.globalClipnorm > 0)
      norms.push_back(gradNorm);
    auto update = OptimizerUpdateOp::create(
        b, varLoc, TypeRange{type}, slotTypes, optimizer, param, grad, slots,
        norms, lossScaleOperands, IntegerAttr());
    if (emaMomentum)
      updated.push_back({var, update.getNewParams()[0]});
    else
      AssignVariableOp::create(b, varLoc, var.getSymName(),
                               update.getNewParams()[0]);
    for (auto [slot, value] : llvm::zip(slotNames, update.getNewSlots()))
      AssignVariableOp::create(b, varLoc, slotName(var, slot), value);
  }
  // Keras' use_ema: the averages follow the updated variables, after every
  // update (so that graph-fuse can still merge the updates into one).
  for (auto [var, value] : updated) {
    Location varLoc = var.getLoc();
    Value average = ReadVariableOp::create(
        b, varLoc, var.getTensorType(),
        FlatSymbolRefAttr::get(b.getStringAttr(slotName(var, "average"))));
    auto ema = EmaUpdateOp::create(
        b, varLoc, value, average, b.getF64FloatAttr(*emaMomentum),
        b.getI64IntegerAttr(training.getEmaOverwriteFrequency().value_or(0)),
        b.getI64IntegerAttr(
            std::max<int64_t>(1, options.gradientAccumulationSteps)));
    AssignVariableOp::create(b, varLoc, var.getSymName(), ema.getNewValue());
    AssignVariableOp::create(b, varLoc, slotName(var, "average"),
                             ema.getNewAverage());
  }

  // Batch-norm statistics: assigned, not trained (a shared one's last
  // call holds every call's update).
  for (auto [bn, train] : statistics) {
    auto mean = bn.getMovingMean().getDefiningOp<ReadVariableOp>();
    auto variance = bn.getMovingVariance().getDefiningOp<ReadVariableOp>();
    AssignVariableOp::create(b, bn.getLoc(), mean.getVariableAttr(),
                             train.getNewMovingMean());
    AssignVariableOp::create(b, bn.getLoc(), variance.getVariableAttr(),
                             train.getNewMovingVariance());
  }
  if (!gradNorm)
    gradNorm = GlobalNormOp::create(b, loc, applied);
  SmallVector<std::string> names = outputNames();
  if (lossScale) {
    auto next = LossScaleUpdateOp::create(
        b, loc, scale, counter, iterations, gradNorm,
        b.getI64IntegerAttr(lossScale->second), IntegerAttr());
    AssignVariableOp::create(b, loc, kDynamicScale, next.getNewScale());
    AssignVariableOp::create(b, loc, kStepCounter, next.getNewCounter());
    AssignVariableOp::create(b, loc, kIterations, next.getNewIterations());
    outputs.push_back(next.getGradNorm());
    names.push_back("grad_norm");
    outputs.push_back(next.getNewScale());
    names.push_back("loss_scale");
  } else {
    outputs.push_back(gradNorm);
    names.push_back("grad_norm");
  }
  OutputOp::create(b, training.getLoc(), outputs, strings(names));
}

Value TrainingStepBuilder::readLossScaleVariable(StringRef name) {
  return ReadVariableOp::create(b, training.getLoc(),
                                RankedTensorType::get({1}, b.getF32Type()),
                                FlatSymbolRefAttr::get(b.getStringAttr(name)));
}

ArrayAttr TrainingStepBuilder::strings(ArrayRef<std::string> names) {
  SmallVector<StringRef> refs(names.begin(), names.end());
  return b.getStrArrayAttr(refs);
}

void TrainingStepBuilder::buildEvalStep() {
  IRMapping mapping;
  StepInputs in;
  startStep("eval_step", mapping, in);
  SmallVector<Value> predictions = cloneInferencePass(mapping);
  SmallVector<HeadLoss> heads;
  SmallVector<Value> outputs = lossAndMetrics(predictions, in, heads);
  SmallVector<std::string> names = outputNames();
  for (auto [i, p] : llvm::enumerate(predictions)) {
    outputs.push_back(p);
    names.push_back(predictionsName(i));
  }
  OutputOp::create(b, training.getLoc(), outputs, strings(names));
}

void TrainingStepBuilder::buildPredictStep() {
  b.setInsertionPointToEnd(module.getBody());
  auto step = ModelOp::create(b, model.getLoc(), "predict_step");
  b.createBlock(&step.getBody());
  IRMapping mapping;
  for (InputOp input : model.getInputOps())
    b.clone(*input, mapping);
  SmallVector<Value> predictions = cloneInferencePass(mapping);
  SmallVector<std::string> names;
  for (size_t i = 0; i < predictions.size(); ++i)
    names.push_back(predictionsName(i));
  OutputOp::create(b, training.getLoc(), predictions, strings(names));
}

SmallVector<Value> TrainingStepBuilder::cloneInferencePass(IRMapping &mapping) {
  for (Operation &op : model.getBlock().without_terminator()) {
    if (isa<InputOp>(op))
      continue;
    // Dropout and the random image layers are the identity in inference,
    // but for a random crop, which keeps the centre window.
    if (isa<DropoutOp, RandomContrastOp>(op) ||
        (isa<RandomImageTransformOp>(op) &&
         cast<RandomImageTransformOp>(op).getKind() != "crop")) {
      mapping.map(op.getResult(0), mapping.lookup(op.getOperand(0)));
      continue;
    }
    if (auto crop = dyn_cast<RandomImageTransformOp>(op)) {
      Operation *clone = b.clone(op, mapping);
      clone->setAttr("kind", b.getStringAttr("center_crop"));
      continue;
    }
    b.clone(op, mapping);
  }
  return llvm::map_to_vector(model.getOutputOp().getOutputs(),
                             [&](Value v) { return mapping.lookup(v); });
}

/// The compute types graph-assign-precision turns into casts must be gone.
static LogicalResult checkPrecisionAssigned(ModelOp model) {
  for (Operation &op : model.getBlock())
    if (op.hasAttr(GraphDialect::getComputeTypeAttrName()))
      return op.emitOpError("carries a compute type that no pass has "
                            "made real: run graph-assign-precision first"),
             failure();
  return success();
}

/// The first layer op that computes in float16 (not a cast of an input:
/// messages name a layer), or null.
static Operation *firstFloat16Op(ModelOp model) {
  for (Operation &op : model.getBlock())
    for (Value result : op.getResults())
      if (auto type = dyn_cast<RankedTensorType>(result.getType());
          type && type.getElementType().isF16() && !isa<CastOp>(op))
        return &op;
  return nullptr;
}

LogicalResult TrainingStepBuilder::planLossScale() {
  // Keras' compile wraps the optimizer of a mixed_float16 model in a
  // LossScaleOptimizer (auto_scale_loss), with its defaults; float16
  // gradients underflow without one.
  Operation *float16 = firstFloat16Op(model);
  if (std::optional<llvm::APFloat> initial = training.getLossScale())
    lossScale = {initial->convertToDouble(),
                 training.getLossScaleGrowthSteps().value_or(2000)};
  else if (float16 && !training.getNoAutoLossScale())
    lossScale = {32768.0, 2000};
  if (!lossScale)
    return success();
  auto refuse = [&](StringRef what) {
    InFlightDiagnostic diag =
        training.emitError("dynamic loss scaling (")
        << (float16 ? "the model computes in float16" : "a LossScaleOptimizer")
        << ") with " << what << " is not supported";
    if (float16)
      diag.attachNote(float16->getLoc())
          << "this op computes in float16; train under mixed_bfloat16 "
             "(graphc --precision mixed_bfloat16), which needs no loss "
             "scaling";
    return diag;
  };
  if (training.getEmaMomentum())
    return refuse("use_ema");
  if (getOptimizerOptions(training.getOptimizer()).gradientAccumulationSteps >
      0)
    return refuse("gradient_accumulation_steps");
  for (StringRef name : kLossScaleVariables)
    if (Operation *existing = symbols.lookup(name))
      return existing->emitError("symbol '")
             << name << "' is taken: dynamic loss scaling keeps its state "
             << "under that name";
  return success();
}

LogicalResult TrainingStepBuilder::run() {
  if (failed(checkPrecisionAssigned(model)) || failed(planLossScale()) ||
      failed(plan()))
    return failure();
  addSlotVariables();
  buildTrainStep();
  buildEvalStep();
  buildPredictStep();
  return success();
}

namespace {
struct BuildTrainingStepPass
    : graphc::impl::BuildTrainingStepBase<BuildTrainingStepPass> {
  using BuildTrainingStepBase::BuildTrainingStepBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto trainings = llvm::to_vector(module.getOps<TrainingOp>());
    if (trainings.empty()) {
      module.emitError("no graph.training op: nothing says which model to "
                       "train, with which loss and optimizer");
      return signalPassFailure();
    }
    if (trainings.size() > 1) {
      InFlightDiagnostic diag = trainings[1].emitError(
          "only one graph.training per module is supported");
      diag.attachNote(trainings[0].getLoc()) << "the first one is here";
      return signalPassFailure();
    }
    TrainingOp training = trainings.front();
    // The verifier has checked that the model exists, with one loss per
    // output.
    auto model = SymbolTable::lookupNearestSymbolFrom<ModelOp>(
        training, training.getModelAttr());
    if (failed(TrainingStepBuilder(module, training, model).run()))
      signalPassFailure();
  }
};
} // namespace
