//===- FusePass.cpp - graph-fuse ------------------------------------------===//
//
// Rewrites every graph.model (the train and eval steps, and plain models)
// into the fused ops the kernels implement, in five independent stages:
//   1. softmax + cross-entropy (+ its gradient and softmax_grad) ->
//      softmax_cross_entropy; a sigmoid's binary (focal) cross-entropy (+
//      its gradient and sigmoid_grad) -> the same loss from the logits;
//   2. conv2d/dense + bias_add + relu/sigmoid/tanh -> fused_conv2d/fused_dense;
//   3. max_pool2d_grad + the relu_grad of the pooled relu ->
//      max_pool2d_grad {relu_grad}, and + the bias_add_grad of its result
//      -> max_pool2d_grad with an input_grad_sum; then fused_conv2d ->
//      max_pool2d (and its max_pool2d_grad) -> fused_conv2d_pool (and
//      max_pool2d_argmax_grad) where nothing else reads the conv's output,
//      and that gradient + the conv2d_grad_kernel that reads it ->
//      fused_conv2d_pool_grad_kernel (writing the dense gradient for its
//      other readers);
//   4. chains of elementwise ops -> graph.elementwise;
//   5. optimizer_updates with the same optimizer -> one multi-tensor update.
// Each stage only matches the unfused ops and leaves nothing it could match
// again, so the pass is idempotent; every stage walks the block in order, so
// it is deterministic.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_FUSE
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

/// The op that uses `value`, when exactly one op does (possibly through
/// several operands); null otherwise.
static Operation *soleUser(Value value) {
  Operation *user = nullptr;
  for (Operation *u : value.getUsers()) {
    if (user && user != u)
      return nullptr;
    user = u;
  }
  return user;
}

/// Whether softmax's `axis` (signed: the I64Attr getters return it unsigned,
/// callers cast it back) names the last of `rank` axes.
static bool isLastAxis(int64_t axis, int64_t rank) {
  return axis == rank - 1 || axis == -1;
}

/// A mixed-precision plan's compute types.
static bool isReducedFloat(Type type) {
  return isa<BFloat16Type, Float16Type>(type);
}

/// Whether a max pool's gradient in `type` can be computed as the fused
/// pool ops do: in float32 always; in bfloat16 or float16 only where the
/// windows (`window` at `stride`) do not overlap. The fused ops sum a
/// position's gradient from several windows before rounding it once, or
/// sum it per channel from the unrounded values, where the unfused ops
/// round the dense gradient first; with tiling windows each position is
/// one pooled gradient or zero, which rounding keeps.
static bool poolGradFusesIn(Type type, ArrayRef<int64_t> window,
                            ArrayRef<int64_t> stride) {
  if (type.isF32())
    return true;
  return isReducedFloat(type) && stride[0] >= window[0] &&
         stride[1] >= window[1];
}

/// One location naming every op a fused op replaces, so a diagnostic on the
/// fused op points at the layers it came from.
static Location fusedLocation(ArrayRef<Operation *> ops) {
  SmallVector<Location> locs;
  for (Operation *op : ops)
    locs.push_back(op->getLoc());
  return FusedLoc::get(ops.front()->getContext(), locs);
}

//===----------------------------------------------------------------------===//
// 1. softmax + cross-entropy
//===----------------------------------------------------------------------===//

namespace {
/// A categorical or sparse categorical cross-entropy, or its gradient.
struct CrossEntropy {
  Operation *op = nullptr;
  Value labels;
  /// The loss's sample_weight (never set on a gradient).
  Value weights;
  bool fromLogits = false;
  bool sparse = false;
};
} // namespace

static std::optional<CrossEntropy> matchLoss(Operation *op) {
  if (auto loss = dyn_cast<CategoricalCrossentropyOp>(op))
    return CrossEntropy{op, loss.getLabels(), loss.getSampleWeight(),
                        loss.getFromLogits(), false};
  if (auto loss = dyn_cast<SparseCategoricalCrossentropyOp>(op))
    return CrossEntropy{op, loss.getLabels(), loss.getSampleWeight(),
                        loss.getFromLogits(), true};
  return std::nullopt;
}

static std::optional<CrossEntropy> matchLossGrad(Operation *op) {
  if (auto grad = dyn_cast<CategoricalCrossentropyGradOp>(op))
    return CrossEntropy{op, grad.getLabels(), grad.getSampleWeight(),
                        grad.getFromLogits(), false};
  if (auto grad = dyn_cast<SparseCategoricalCrossentropyGradOp>(op))
    return CrossEntropy{op, grad.getLabels(), grad.getSampleWeight(),
                        grad.getFromLogits(), true};
  return std::nullopt;
}

/// Replaces a softmax over the last axis whose probabilities feed a
/// (sparse) categorical cross-entropy by one softmax_cross_entropy of the
/// logits. In a train step the cross-entropy gradient and the softmax_grad it
/// feeds go too: their composition is the op's logits_grad, (p - y) / B.
///
/// The rewrite preserves semantics, and is what Keras itself computes: with
/// from_logits=False on a softmax output, Keras' TensorFlow backend finds
/// the Softmax op behind the predictions and calls
/// (sparse_)softmax_cross_entropy_with_logits on its logits instead of
/// taking the log of clipped probabilities. The probabilities still come out
/// for accuracy and for the model's outputs.
///
/// In @eval_step there is no gradient and the fusion happens all the same:
/// evaluation then computes the loss with the very kernel training uses;
/// the unused logits_grad costs one [B, C] write.
static bool fuseSoftmaxCrossEntropy(SoftmaxOp softmax) {
  Value probabilities = softmax.getOutput();
  auto type = cast<RankedTensorType>(probabilities.getType());
  if (type.getRank() != 2 ||
      !isLastAxis(static_cast<int64_t>(softmax.getAxis()), 2))
    return false;

  std::optional<CrossEntropy> loss, lossGrad;
  SoftmaxGradOp softmaxGrad;
  SmallVector<Operation *> keptUsers; // accuracy and outputs
  for (OpOperand &use : probabilities.getUses()) {
    Operation *user = use.getOwner();
    unsigned operand = use.getOperandNumber();
    if (auto match = matchLoss(user); match && operand == 0) {
      if (loss)
        return false;
      loss = match;
    } else if (auto match = matchLossGrad(user); match && operand == 0) {
      if (lossGrad)
        return false;
      lossGrad = match;
    } else if (auto grad = dyn_cast<SoftmaxGradOp>(user);
               grad && operand == 1) {
      if (softmaxGrad)
        return false;
      softmaxGrad = grad;
    } else if ((isa<AccuracyOp>(user) && operand == 0) || isa<OutputOp>(user)) {
      keptUsers.push_back(user);
    } else {
      return false;
    }
  }
  if (!loss || loss->fromLogits)
    return false;
  // Under a LossScaleOptimizer the loss gradient is scaled (graph.scale_by)
  // before softmax_grad; the scale is linear, so it moves onto the fused
  // logits_grad. Unfused, training would take the log of clipped
  // probabilities where evaluation (fused) takes the logits.
  ScaleByOp scale;
  // The gradient pair goes together or not at all: dL/dp alone has no
  // fused form.
  if (lossGrad.has_value() != static_cast<bool>(softmaxGrad))
    return false;
  if (lossGrad) {
    // The fused logits_grad weights its rows as the loss does: loss and
    // gradient must take the same weights.
    if (lossGrad->fromLogits || lossGrad->sparse != loss->sparse ||
        lossGrad->labels != loss->labels || lossGrad->weights != loss->weights)
      return false;
    Value lossGradValue = lossGrad->op->getResult(0);
    Value outputGrad = softmaxGrad.getOutputGrad();
    scale = outputGrad.getDefiningOp<ScaleByOp>();
    if (scale && (scale.getInput() != lossGradValue || !outputGrad.hasOneUse()))
      return false;
    if (!lossGradValue.hasOneUse() ||
        (scale ? scale.getOutput() : lossGradValue) != outputGrad ||
        !isLastAxis(static_cast<int64_t>(softmaxGrad.getAxis()), 2))
      return false;
  }

  // The fused op sits at the softmax, or right after the labels (and
  // weights) when they are defined later; the probabilities' remaining users
  // must follow it.
  Value labels = loss->labels;
  OpBuilder builder(softmax);
  Operation *latest = softmax;
  for (Value operand : {labels, loss->weights}) {
    Operation *def = operand ? operand.getDefiningOp() : nullptr;
    if (def && def->getBlock() == softmax->getBlock() &&
        latest->isBeforeInBlock(def))
      latest = def;
  }
  if (latest != softmax) {
    for (Operation *user : keptUsers)
      if (!latest->isBeforeInBlock(user))
        return false;
    builder.setInsertionPointAfter(latest);
  }
  // The scale then reads the fused op's logits_grad: it must follow it.
  if (scale && (scale->getBlock() != latest->getBlock() ||
                !latest->isBeforeInBlock(scale)))
    return false;

  SmallVector<Operation *> replaced{softmax, loss->op};
  if (lossGrad)
    replaced.append({lossGrad->op, softmaxGrad});
  Value lossValue = loss->op->getResult(0);
  auto fused = SoftmaxCrossEntropyOp::create(
      builder, fusedLocation(replaced), type, lossValue.getType(), type,
      softmax.getInput(), labels, loss->weights);
  lossValue.replaceAllUsesWith(fused.getLoss());
  if (softmaxGrad) {
    Value logitsGrad = fused.getLogitsGrad();
    if (scale) {
      scale.getInputMutable().assign(logitsGrad);
      logitsGrad = scale.getOutput();
    }
    softmaxGrad.getInputGrad().replaceAllUsesWith(logitsGrad);
    softmaxGrad->erase();
    lossGrad->op->erase();
  }
  loss->op->erase();
  probabilities.replaceAllUsesWith(fused.getProbabilities());
  softmax->erase();
  return true;
}

/// A sigmoid whose probabilities feed a binary (focal) cross-entropy: the
/// loss, and in a train step its gradient, read the sigmoid's logits
/// instead (from_logits), and the sigmoid_grad between that gradient and
/// the logits goes. This is what Keras' TensorFlow backend computes, as for
/// the softmax above: its binary_crossentropy finds the Sigmoid behind
/// predictions given as probabilities (_get_logits) and calls
/// sigmoid_cross_entropy_with_logits, so a saturated sigmoid's loss is not
/// clipped at -log(1e-7) and its gradient not cut to zero (binary focal
/// cross-entropy takes its bce from there and p_t from the probabilities,
/// as its from_logits form does). The sigmoid stays for its other readers
/// (binary accuracy, the model's outputs).
static bool fuseSigmoidBinaryCrossEntropy(SigmoidOp sigmoid) {
  Value probabilities = sigmoid.getOutput();
  auto binary = [](LossKind kind) {
    return kind == LossKind::binary_crossentropy ||
           kind == LossKind::binary_focal_crossentropy;
  };
  PointwiseLossOp loss;
  PointwiseLossGradOp lossGrad;
  SigmoidGradOp sigmoidGrad;
  for (OpOperand &use : probabilities.getUses()) {
    Operation *user = use.getOwner();
    unsigned operand = use.getOperandNumber();
    if (auto l = dyn_cast<PointwiseLossOp>(user);
        l && operand == 0 && binary(l.getKind())) {
      if (loss)
        return false;
      loss = l;
    } else if (auto g = dyn_cast<PointwiseLossGradOp>(user);
               g && operand == 0 && binary(g.getKind())) {
      if (lossGrad)
        return false;
      lossGrad = g;
    } else if (auto g = dyn_cast<SigmoidGradOp>(user); g && operand == 1) {
      if (sigmoidGrad)
        return false;
      sigmoidGrad = g;
    }
  }
  if (!loss || loss.getFromLogits())
    return false;
  // The gradient pair goes together or not at all, and only where the
  // sigmoid's gradient is the loss's alone (perhaps scaled by a
  // LossScaleOptimizer's graph.scale_by, which is linear): a sigmoid read
  // by other layers too sums their gradients before its sigmoid_grad.
  if (static_cast<bool>(lossGrad) != static_cast<bool>(sigmoidGrad))
    return false;
  if (lossGrad) {
    if (lossGrad.getFromLogits() || lossGrad.getKind() != loss.getKind() ||
        lossGrad.getTargets() != loss.getTargets() ||
        lossGrad.getSampleWeight() != loss.getSampleWeight() ||
        lossGrad.getLabelSmoothingAttr() != loss.getLabelSmoothingAttr() ||
        lossGrad.getAlphaAttr() != loss.getAlphaAttr() ||
        lossGrad.getGammaAttr() != loss.getGammaAttr() ||
        lossGrad.getApplyClassBalancing() != loss.getApplyClassBalancing())
      return false;
    Value lossGradValue = lossGrad.getPredictionsGrad();
    Value outputGrad = sigmoidGrad.getOutputGrad();
    auto scale = outputGrad.getDefiningOp<ScaleByOp>();
    if (scale && (scale.getInput() != lossGradValue || !outputGrad.hasOneUse()))
      return false;
    if (!lossGradValue.hasOneUse() ||
        (scale ? scale.getOutput() : lossGradValue) != outputGrad)
      return false;
  }

  Value logits = sigmoid.getInput();
  loss.getPredictionsMutable().assign(logits);
  loss.setFromLogits(true);
  if (lossGrad) {
    lossGrad.getPredictionsMutable().assign(logits);
    lossGrad.setFromLogits(true);
    sigmoidGrad.getInputGrad().replaceAllUsesWith(sigmoidGrad.getOutputGrad());
    sigmoidGrad->erase();
  }
  if (probabilities.use_empty())
    sigmoid->erase();
  return true;
}

//===----------------------------------------------------------------------===//
// 2. conv2d / dense epilogues
//===----------------------------------------------------------------------===//

static std::optional<EpilogueActivation> epilogueActivation(Operation *op) {
  if (isa<ReluOp>(op))
    return EpilogueActivation::relu;
  if (isa<SigmoidOp>(op))
    return EpilogueActivation::sigmoid;
  if (isa<TanhOp>(op))
    return EpilogueActivation::tanh;
  return std::nullopt;
}

/// Turns every conv2d and dense into its fused form, absorbing a following
/// bias_add and then a relu/sigmoid/tanh when the value between them has no
/// other user. A conv2d or dense with nothing to absorb still becomes a
/// fused op (no bias, activation none): every forward matrix product and
/// convolution then runs the same kernel, and nothing unfused is left for a
/// second run to find. The fused result is the last absorbed op's, which is
/// also what the activation's gradient reads (relu_grad, sigmoid_grad and
/// tanh_grad take the output).
static void fuseEpilogue(Operation *producer) {
  SmallVector<Operation *> absorbed{producer};
  Value value = producer->getResult(0);
  Value bias;
  if (auto biasAdd = dyn_cast_or_null<BiasAddOp>(soleUser(value));
      biasAdd && value.hasOneUse() && biasAdd.getInput() == value) {
    bias = biasAdd.getBias();
    absorbed.push_back(biasAdd);
    value = biasAdd.getOutput();
  }
  EpilogueActivation activation = EpilogueActivation::none;
  if (Operation *user = soleUser(value); user && value.hasOneUse()) {
    if (auto act = epilogueActivation(user)) {
      activation = *act;
      absorbed.push_back(user);
      value = user->getResult(0);
    }
  }

  // At the last absorbed op every operand (the bias may be read after the
  // conv) is defined and the result is needed no earlier.
  Operation *last = absorbed.back();
  OpBuilder builder(last);
  Location loc = fusedLocation(absorbed);
  auto activationAttr =
      EpilogueActivationAttr::get(builder.getContext(), activation);
  Value fused;
  if (auto conv = dyn_cast<Conv2DOp>(producer))
    fused = FusedConv2DOp::create(
        builder, loc, value.getType(), conv.getInput(), conv.getKernel(), bias,
        conv.getStridesAttr(), conv.getPaddingAttr(), conv.getDilationsAttr(),
        activationAttr, conv.getGroupsAttr(), conv.getFilterLayoutAttr());
  else {
    auto dense = cast<DenseOp>(producer);
    fused =
        FusedDenseOp::create(builder, loc, value.getType(), dense.getInput(),
                             dense.getKernel(), bias, activationAttr);
  }
  value.replaceAllUsesWith(fused);
  for (Operation *op : llvm::reverse(absorbed))
    op->erase();
}

//===----------------------------------------------------------------------===//
// 3. relu and bias gradients into max-pool gradients
//===----------------------------------------------------------------------===//

/// relu -> max_pool2d in the forward step makes max_pool2d_grad(x = the
/// relu's output) -> relu_grad(saved = x) in the backward one. The pool's
/// gradient kernel already reads x for every window, so it can zero the
/// positions where x <= 0 in the same pass, and the relu's gradient, a
/// second pass over the layer's largest tensor, goes away. Only when the
/// pool's gradient has no other user: anything else reading it wants the
/// gradient before the relu's.
static void fuseReluGradIntoPoolGrad(ReluGradOp reluGrad) {
  auto poolGrad = reluGrad.getOutputGrad().getDefiningOp<MaxPool2DGradOp>();
  // A pool gradient that already sums its result would sum it before the
  // relu's gradient.
  if (!poolGrad || poolGrad.getReluGrad() || poolGrad.getInputGradSum() ||
      poolGrad.getInput() != reluGrad.getSaved() ||
      !poolGrad.getInputGrad().hasOneUse())
    return;
  poolGrad.setReluGrad(true);
  poolGrad->setLoc(fusedLocation({poolGrad, reluGrad}));
  reluGrad.getInputGrad().replaceAllUsesWith(poolGrad.getInputGrad());
  reluGrad->erase();
}

/// conv2d + bias_add (+ relu) -> max_pool2d in the forward step makes
/// max_pool2d_grad -> bias_add_grad(dx) in the backward one: a second pass
/// over dx, the layer's largest gradient, to sum it per channel. The pool's
/// gradient kernel writes every element of dx, so it sums them as it goes
/// (input_grad_sum) and the bias_add_grad goes away. The fused op replaces
/// the pool's gradient where it stands: the bias_add_grad came after it.
/// In bfloat16 or float16 only for tiling windows (poolGradFusesIn): the
/// kernel sums dx as it computes it, bias_add_grad as it is stored.
static void fuseBiasGradIntoPoolGrad(BiasAddGradOp biasGrad) {
  auto poolGrad = biasGrad.getOutputGrad().getDefiningOp<MaxPool2DGradOp>();
  if (!poolGrad || poolGrad.getInputGradSum() ||
      !poolGradFusesIn(poolGrad.getInputGrad().getType().getElementType(),
                       poolGrad.getPoolSize(), poolGrad.getStrides()))
    return;
  OpBuilder builder(poolGrad);
  auto fused = MaxPool2DGradOp::create(
      builder, fusedLocation({poolGrad, biasGrad}),
      poolGrad.getInputGrad().getType(), biasGrad.getBiasGrad().getType(),
      poolGrad.getInput(), poolGrad.getOutput(), poolGrad.getOutputGrad(),
      poolGrad.getPoolSizeAttr(), poolGrad.getStridesAttr(),
      poolGrad.getPaddingAttr(), poolGrad.getReluGradAttr());
  poolGrad.getInputGrad().replaceAllUsesWith(fused.getInputGrad());
  biasGrad.getBiasGrad().replaceAllUsesWith(fused.getInputGradSum());
  biasGrad->erase();
  poolGrad->erase();
}

/// fused_conv2d -> max_pool2d, and in a train step max_pool2d_grad(x = the
/// conv's output, y = the pool's): the conv's output, the layer's largest
/// activation, is written, read by the pool, and read again by the pool's
/// gradient for where each window's maximum was. With the pool's argmax
/// recorded instead (fused_conv2d_pool), its gradient reads that
/// (max_pool2d_argmax_grad) and nothing else needs the conv's output, so a
/// kernel can pool it a slice at a time while it is in cache and never
/// store it. Only when the pool and its gradient are the output's only
/// readers. The fused ops take the places of the pool and its gradient,
/// where their operands are defined. In bfloat16 or float16 too: the pool
/// picks its maximum among the rounded activations, where ties are common
/// (and the gradient goes to the first), so fused_conv2d_pool rounds the
/// convolution's output to that type before it pools it (GraphOps.td).
/// Not float64, which the kernels would pool from a float32 convolution.
static void fuseConvIntoPool(MaxPool2DOp pool) {
  auto conv = pool.getInput().getDefiningOp<FusedConv2DOp>();
  Type type = pool.getInput().getType().getElementType();
  if (!conv || !(type.isF32() || isReducedFloat(type)))
    return;
  Value x = conv.getOutput();
  MaxPool2DGradOp grad;
  for (OpOperand &use : x.getUses()) {
    Operation *user = use.getOwner();
    if (user == pool)
      continue;
    auto poolGrad = dyn_cast<MaxPool2DGradOp>(user);
    if (!poolGrad || (grad && grad != poolGrad) ||
        use.getOperandNumber() != 0 ||
        poolGrad.getOutput() != pool.getOutput() ||
        poolGrad.getPoolSize() != pool.getPoolSize() ||
        poolGrad.getStrides() != pool.getStrides() ||
        poolGrad.getPadding() != pool.getPadding())
      return;
    grad = poolGrad;
  }
  auto pooled = cast<RankedTensorType>(pool.getOutput().getType());
  OpBuilder builder(pool);
  auto fused = FusedConv2DPoolOp::create(
      builder, fusedLocation({conv, pool}), pooled,
      pooled.clone(builder.getI32Type()), conv.getInput(), conv.getKernel(),
      conv.getBias(), conv.getStridesAttr(), conv.getPaddingAttr(),
      conv.getDilationsAttr(), conv.getActivationAttr(), conv.getGroupsAttr(),
      conv.getFilterLayoutAttr(), pool.getPoolSizeAttr(), pool.getStridesAttr(),
      pool.getPaddingAttr());
  pool.getOutput().replaceAllUsesWith(fused.getOutput());
  if (grad) {
    builder.setInsertionPoint(grad);
    Value sum = grad.getInputGradSum();
    auto argmaxGrad = MaxPool2DArgmaxGradOp::create(
        builder, grad.getLoc(), grad.getInputGrad().getType(),
        sum ? sum.getType() : Type(), fused.getArgmax(), fused.getOutput(),
        grad.getOutputGrad(), grad.getPoolSizeAttr(), grad.getStridesAttr(),
        grad.getPaddingAttr(), grad.getReluGradAttr());
    grad.getInputGrad().replaceAllUsesWith(argmaxGrad.getInputGrad());
    if (sum)
      sum.replaceAllUsesWith(argmaxGrad.getInputGradSum());
    grad->erase();
  }
  pool->erase();
  conv->erase();
}

/// conv2d_grad_kernel(x, max_pool2d_argmax_grad(...)) ->
/// fused_conv2d_pool_grad_kernel, which multiplies each window's gradient
/// into the input patch under its argmax: a quarter of the products the
/// dense gradient takes for a 2x2 pool. Where that kernel gradient is the
/// dense gradient's only reader (the first convolution: its input needs no
/// gradient) the dense gradient is not written at all; where others read
/// it (the convolution's input gradient) the fused op writes it into its
/// workspace for them (writes_workspace), in the argmax gradient's place.
/// The convolution's geometry must be the fused_conv2d_pool's (the argmax
/// says where in its output each window's maximum was); in bfloat16 or
/// float16 only where the pool's windows do not overlap (poolGradFusesIn).
static void fuseArgmaxGradIntoKernelGrad(Conv2DGradKernelOp kernelGrad) {
  auto argmaxGrad =
      kernelGrad.getOutputGrad().getDefiningOp<MaxPool2DArgmaxGradOp>();
  if (!argmaxGrad)
    return;
  // One kernel gradient: a second (a shared convolution's) would take the
  // dense gradient from the first's workspace.
  Value dense = argmaxGrad.getInputGrad();
  bool othersRead = false;
  for (Operation *user : dense.getUsers()) {
    if (user == kernelGrad.getOperation())
      continue;
    if (isa<Conv2DGradKernelOp>(user))
      return;
    othersRead = true;
  }
  if (!poolGradFusesIn(argmaxGrad.getInputGrad().getType().getElementType(),
                       argmaxGrad.getPoolSize(), argmaxGrad.getStrides()))
    return;
  auto forward = argmaxGrad.getArgmax().getDefiningOp<FusedConv2DPoolOp>();
  if (!forward || forward.getInput() != kernelGrad.getInput() ||
      forward.getStrides() != kernelGrad.getStrides() ||
      forward.getPadding() != kernelGrad.getPadding() ||
      forward.getDilations() != kernelGrad.getDilations() ||
      forward.getGroups() != kernelGrad.getGroups() ||
      forward.getFilterLayout() != kernelGrad.getFilterLayout())
    return;
  Value sum = argmaxGrad.getInputGradSum();
  // At the argmax gradient's place, so the bias gradient (the sum) stays
  // where its readers find it (a shared conv's two bias gradients added, a
  // mixed-precision step's cast of it, both before the kernel gradient);
  // the convolution's input is defined before it, read by the forward op.
  OpBuilder builder(argmaxGrad);
  auto fused = FusedConv2DPoolGradKernelOp::create(
      builder, fusedLocation({argmaxGrad, kernelGrad}),
      kernelGrad.getKernelGrad().getType(), argmaxGrad.getInputGrad().getType(),
      sum ? sum.getType() : Type(), kernelGrad.getInput(),
      argmaxGrad.getArgmax(), argmaxGrad.getOutput(),
      argmaxGrad.getOutputGrad(), kernelGrad.getStridesAttr(),
      kernelGrad.getPaddingAttr(), kernelGrad.getDilationsAttr(),
      kernelGrad.getGroupsAttr(), kernelGrad.getFilterLayoutAttr(),
      argmaxGrad.getPoolSizeAttr(), argmaxGrad.getStridesAttr(),
      argmaxGrad.getPaddingAttr(), argmaxGrad.getReluGradAttr(),
      othersRead ? builder.getUnitAttr() : UnitAttr());
  kernelGrad.getKernelGrad().replaceAllUsesWith(fused.getKernelGrad());
  if (sum)
    sum.replaceAllUsesWith(fused.getBiasGrad());
  if (othersRead)
    dense.replaceUsesWithIf(fused.getWorkspace(), [&](OpOperand &use) {
      return use.getOwner() != kernelGrad.getOperation();
    });
  kernelGrad->erase();
  argmaxGrad->erase();
}

//===----------------------------------------------------------------------===//
// 4. elementwise chains
//===----------------------------------------------------------------------===//

/// Ops computed one element at a time from same-shaped operands, which a
/// graph.elementwise body can hold on scalars. Softmax and its gradient
/// reduce over an axis, dropout's mask depends on the element's position:
/// neither is elementwise in this sense.
static bool isElementwise(Operation *op) {
  if (auto add = dyn_cast<AddOp>(op))
    return add.getInputs().size() == 2;
  return isa<ReluOp, SigmoidOp, TanhOp, EluOp, LeakyReluOp, GeluOp, ReluGradOp,
             SigmoidGradOp, TanhGradOp, EluGradOp, LeakyReluGradOp, GeluGradOp>(
      op);
}

/// The elementwise ops that feed `root` and feed nothing else, transitively,
/// with `root`: each absorbed value disappears into the fused body.
static SmallVector<Operation *>
collectElementwiseGroup(Operation *root,
                        llvm::SmallPtrSetImpl<Operation *> &claimed) {
  SmallVector<Operation *> group{root}, worklist{root};
  claimed.insert(root);
  while (!worklist.empty()) {
    Operation *op = worklist.pop_back_val();
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (!def || def->getBlock() != root->getBlock() || claimed.count(def) ||
          !isElementwise(def) || soleUser(operand) != op)
        continue;
      claimed.insert(def);
      group.push_back(def);
      worklist.push_back(def);
    }
  }
  return group;
}

/// Replaces `group` (its root first) by one graph.elementwise at the root.
static void fuseElementwiseGroup(ArrayRef<Operation *> group) {
  Operation *root = group.front();
  SmallVector<Operation *> ops(group);
  llvm::sort(ops,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  llvm::SmallPtrSet<Operation *, 8> members(ops.begin(), ops.end());

  // Operands from outside the group, in order of first use.
  llvm::SetVector<Value> inputs;
  for (Operation *op : ops)
    for (Value operand : op->getOperands())
      if (!members.contains(operand.getDefiningOp()))
        inputs.insert(operand);

  auto type = cast<RankedTensorType>(root->getResult(0).getType());
  auto scalar = RankedTensorType::get({}, type.getElementType());
  OpBuilder builder(root);
  auto fused = ElementwiseOp::create(builder, fusedLocation(ops), type,
                                     inputs.getArrayRef());
  SmallVector<Type> argTypes(inputs.size(), scalar);
  SmallVector<Location> argLocs;
  for (Value input : inputs)
    argLocs.push_back(input.getLoc());
  Block *body = builder.createBlock(&fused.getBody(), {}, argTypes, argLocs);
  IRMapping mapping;
  for (auto [input, arg] : llvm::zip(inputs, body->getArguments()))
    mapping.map(input, arg);
  for (Operation *op : ops) {
    Operation *clone = builder.clone(*op, mapping);
    clone->getResult(0).setType(scalar);
  }
  YieldOp::create(builder, root->getLoc(), mapping.lookup(root->getResult(0)));

  root->getResult(0).replaceAllUsesWith(fused.getOutput());
  for (Operation *op : llvm::reverse(ops))
    op->erase();
}

//===----------------------------------------------------------------------===//
// 5. optimizer updates
//===----------------------------------------------------------------------===//

/// Merges `updates` (same optimizer, in block order) into one multi-tensor
/// update at the last one's position, where every operand is defined. The
/// results' users that sit before it are assign_variables, which write at the
/// end of the step, so moving them after the fused update changes nothing.
static void fuseOptimizerUpdates(ArrayRef<OptimizerUpdateOp> updates) {
  OptimizerUpdateOp last = updates.back();
  SmallVector<Operation *> moved;
  for (OptimizerUpdateOp update : updates.drop_back())
    for (Operation *user : update->getUsers()) {
      if (!user->isBeforeInBlock(last))
        continue;
      if (!isa<AssignVariableOp>(user))
        return;
      moved.push_back(user);
    }
  llvm::sort(moved,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  moved.erase(llvm::unique(moved), moved.end());

  SmallVector<Value> params, grads, slots, norms;
  SmallVector<Type> newParams, newSlots;
  SmallVector<Operation *> ops;
  for (OptimizerUpdateOp update : updates) {
    llvm::append_range(params, update.getParams());
    llvm::append_range(grads, update.getGrads());
    llvm::append_range(slots, update.getSlots());
    llvm::append_range(norms, update.getNorms());
    llvm::append_range(newParams, update.getNewParams().getTypes());
    llvm::append_range(newSlots, update.getNewSlots().getTypes());
    ops.push_back(update);
  }
  OpBuilder builder(last);
  // The group shares its loss-scale operands (see fuseModel).
  auto fused = OptimizerUpdateOp::create(
      builder, fusedLocation(ops), newParams, newSlots, last.getOptimizer(),
      params, grads, slots, norms, last.getLossScale(), last.getReplicasAttr());
  size_t param = 0, slot = 0;
  for (OptimizerUpdateOp update : updates) {
    for (Value result : update.getNewParams())
      result.replaceAllUsesWith(fused.getNewParams()[param++]);
    for (Value result : update.getNewSlots())
      result.replaceAllUsesWith(fused.getNewSlots()[slot++]);
  }
  Operation *after = fused;
  for (Operation *op : moved) {
    op->moveAfter(after);
    after = op;
  }
  for (OptimizerUpdateOp update : updates)
    update->erase();
}

//===----------------------------------------------------------------------===//
// The pass
//===----------------------------------------------------------------------===//

static void fuseModel(ModelOp model) {
  Block &block = model.getBlock();

  for (SoftmaxOp softmax : llvm::to_vector(block.getOps<SoftmaxOp>()))
    fuseSoftmaxCrossEntropy(softmax);
  for (SigmoidOp sigmoid : llvm::to_vector(block.getOps<SigmoidOp>()))
    fuseSigmoidBinaryCrossEntropy(sigmoid);

  SmallVector<Operation *> producers;
  for (Operation &op : block)
    if (isa<Conv2DOp, DenseOp>(op))
      producers.push_back(&op);
  for (Operation *producer : producers)
    fuseEpilogue(producer);

  for (ReluGradOp reluGrad : llvm::to_vector(block.getOps<ReluGradOp>()))
    fuseReluGradIntoPoolGrad(reluGrad);
  for (BiasAddGradOp biasGrad : llvm::to_vector(block.getOps<BiasAddGradOp>()))
    fuseBiasGradIntoPoolGrad(biasGrad);
  for (MaxPool2DOp pool : llvm::to_vector(block.getOps<MaxPool2DOp>()))
    fuseConvIntoPool(pool);
  for (Conv2DGradKernelOp grad :
       llvm::to_vector(block.getOps<Conv2DGradKernelOp>()))
    fuseArgmaxGradIntoKernelGrad(grad);

  // From the end, so that each group is rooted at its last op and grows
  // backwards as far as it can: groups are maximal and disjoint.
  llvm::SmallPtrSet<Operation *, 16> claimed;
  SmallVector<SmallVector<Operation *>> groups;
  for (Operation &op : llvm::reverse(block)) {
    if (claimed.contains(&op) || !isElementwise(&op))
      continue;
    SmallVector<Operation *> group = collectElementwiseGroup(&op, claimed);
    if (group.size() >= 2)
      groups.push_back(std::move(group));
  }
  for (ArrayRef<Operation *> group : llvm::reverse(groups))
    fuseElementwiseGroup(group);

  // Updates merge when they run the same optimizer under the same loss
  // scaling: the norm that decides the skip names it (the training step
  // gives every update the same scale, norm and iterations).
  llvm::MapVector<std::pair<Attribute, Value>, SmallVector<OptimizerUpdateOp>>
      updates;
  for (OptimizerUpdateOp update : block.getOps<OptimizerUpdateOp>()) {
    Value norm =
        update.getLossScale().empty() ? Value() : update.getLossScale()[1];
    updates[{update.getOptimizer(), norm}].push_back(update);
  }
  for (auto &entry : updates)
    if (entry.second.size() >= 2)
      fuseOptimizerUpdates(entry.second);
}

namespace {
struct FusePass : graphc::impl::FuseBase<FusePass> {
  using FuseBase::FuseBase;
  void runOnOperation() override {
    for (ModelOp model : getOperation().getOps<ModelOp>())
      fuseModel(model);
  }
};
} // namespace
