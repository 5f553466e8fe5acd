//===- ReplicatePass.cpp - dist-replicate ---------------------------------===//
//
// In-graph replication, as TensorFlow's MirroredStrategy does it: the step
// models `@train_step`, `@eval_step` and `@predict_step` become N copies of
// themselves in one block, replica by replica, each op placed with
// `dist.device`. Every input's batch axis is split B -> B/N and every type that
// carries the batch is re-derived:
//   - ops with InferTypeOpInterface infer their result types again;
//   - SameOperandsAndResultType ops, and graph.elementwise, take their
//     operand's type;
//   - every other op is looked up in one explicit table that says which of
//     its results carry the batch on their leading axis. Nothing is guessed
//     from sizes: a kernel dimension may well equal the batch.
// Variables stay symbols: each device reads and writes its own mirror.
// Everything that could stop the split is checked before anything changes.
// Sums that must be the global batch's (ops with the SummedAcrossReplicas
// trait: Dice's and Tversky's graph.overlap_sums, ignore_class'
// graph.kept_rows) are made so again: the replicas' sums are added
// (dist.all_reduce sum) before anything reads them. Dice's and Tversky's
// gradient, one part of the one global loss's, is then scaled by N against
// the mean of the replicas' gradients.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include <utility>

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_REPLICATE
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

/// The step models the pass replicates, in the order it visits them.
/// The step models, and whether the pass needs them (IR written before the
/// prediction step existed has none).
static constexpr std::pair<StringLiteral, bool> kStepModels[] = {
    {"train_step", true}, {"eval_step", true}, {"predict_step", false}};

/// For ops whose result types are written out rather than inferred: which
/// results carry the batch on their leading axis. std::nullopt for an op this
/// pass does not know, which is an error rather than a guess.
static std::optional<SmallVector<bool>> batchCarryingResults(Operation *op) {
  // Nothing batch-shaped: variables, kernel gradients, optimizer updates.
  if (isa<ReadVariableOp, AssignVariableOp, Conv2DGradKernelOp,
          OptimizerUpdateOp, EmaUpdateOp>(op))
    return SmallVector<bool>(op->getNumResults(), false);
  // One result, shaped like an activation: [batch, ...].
  if (isa<Conv2DGradInputOp, AvgPool2DGradOp, GlobalAvgPool2DGradOp, ReshapeOp,
          SliceOp, FusedConv2DOp, FusedDenseOp, CategoricalCrossentropyGradOp,
          SparseCategoricalCrossentropyGradOp, RandomImageTransformOp,
          RandomImageTransformGradOp, BroadcastOp, SumToOp, NormalizeOp>(op))
    return SmallVector<bool>{true};
  // output; batch_mean, batch_inv_std and the new moving statistics are [C].
  if (isa<BatchNormTrainOp>(op))
    return SmallVector<bool>{true, false, false, false, false};
  // input_grad; input_grad_sum, when graph-fuse gave it one, is [C].
  // output and argmax.
  if (isa<FusedConv2DPoolOp>(op))
    return SmallVector<bool>{true, true};
  if (isa<MaxPool2DGradOp, MaxPool2DArgmaxGradOp>(op)) {
    SmallVector<bool> carries{true, false};
    carries.resize(op->getNumResults());
    return carries;
  }
  // kernel_grad and bias_grad are not; the workspace is the conv's output.
  if (isa<FusedConv2DPoolGradKernelOp>(op)) {
    SmallVector<bool> carries{false, true, false};
    carries.resize(op->getNumResults());
    return carries;
  }
  // input_grad; gamma_grad and beta_grad are [C].
  if (isa<BatchNormGradOp, LayerNormGradOp>(op))
    return SmallVector<bool>{true, false, false};
  // probabilities and logits_grad are [B, C]; the loss is a scalar.
  if (isa<SoftmaxCrossEntropyOp>(op))
    return SmallVector<bool>{true, false, true};
  return std::nullopt;
}

/// Ops that mix rows of the batch cannot be split across replicas.
static LogicalResult checkSplittable(Operation *op) {
  auto batchAxis = [](int64_t axis, int64_t rank) {
    return axis == 0 || axis == -rank;
  };
  if (auto slice = dyn_cast<SliceOp>(op); slice && slice.getAxis() == 0)
    return op->emitOpError("slices the batch axis, which dist-replicate "
                           "splits across replicas");
  int64_t axis = 0, rank = 0;
  if (auto softmax = dyn_cast<SoftmaxOp>(op)) {
    axis = softmax.getAxis();
    rank = softmax.getInput().getType().getRank();
  } else if (auto grad = dyn_cast<SoftmaxGradOp>(op)) {
    axis = grad.getAxis();
    rank = grad.getInputGrad().getType().getRank();
  } else {
    return success();
  }
  if (batchAxis(axis, rank))
    return op->emitOpError("normalises over the batch axis, which "
                           "dist-replicate splits across replicas");
  return success();
}

/// `type` with its leading (batch) axis set to `batch`.
static RankedTensorType withBatch(RankedTensorType type, int64_t batch) {
  SmallVector<int64_t> shape(type.getShape());
  shape[0] = batch;
  return RankedTensorType::get(shape, type.getElementType(),
                               type.getEncoding());
}

/// Whether the per-replica result types of `op` can be derived; checked on
/// the original ops, so that nothing changes when they cannot.
static LogicalResult checkDerivable(Operation *op, int64_t batch) {
  if (op->getNumResults() == 0 ||
      isa<InputOp, ElementwiseOp, InferTypeOpInterface>(op) ||
      op->hasTrait<OpTrait::SameOperandsAndResultType>() ||
      op->hasTrait<OpTrait::SameOperandsAndResultShape>())
    return success();
  std::optional<SmallVector<bool>> carries = batchCarryingResults(op);
  if (!carries)
    return op->emitOpError("is not known to dist-replicate: add it to the "
                           "table of batch-carrying results");
  for (auto [i, result, carriesBatch] :
       llvm::enumerate(op->getResults(), *carries)) {
    auto type = cast<RankedTensorType>(result.getType());
    if (carriesBatch && (type.getRank() < 1 || type.getDimSize(0) != batch))
      return op->emitOpError("result #")
             << i << " (" << type << ") should carry the global batch " << batch
             << " on its leading axis";
  }
  return success();
}

/// Re-derives the result types of `clone`, whose operands already have their
/// per-replica types.
static LogicalResult retype(Operation *clone, int64_t localBatch) {
  if (clone->getNumResults() == 0)
    return success();
  if (auto input = dyn_cast<InputOp>(clone)) {
    input.getOutput().setType(
        withBatch(input.getOutput().getType(), localBatch));
    return success();
  }
  if (auto infer = dyn_cast<InferTypeOpInterface>(clone)) {
    SmallVector<Type> types;
    if (failed(infer.inferReturnTypes(
            clone->getContext(), clone->getLoc(), clone->getOperands(),
            clone->getRawDictionaryAttrs(), clone->getPropertiesStorage(),
            clone->getRegions(), types)))
      return failure();
    for (auto [result, type] : llvm::zip_equal(clone->getResults(), types))
      result.setType(type);
    return success();
  }
  if (clone->hasTrait<OpTrait::SameOperandsAndResultType>()) {
    for (OpResult result : clone->getResults())
      result.setType(clone->getOperand(0).getType());
    return success();
  }
  // graph.cast: the operand's shape, its own element type.
  if (clone->hasTrait<OpTrait::SameOperandsAndResultShape>()) {
    auto shape = cast<RankedTensorType>(clone->getOperand(0).getType());
    for (OpResult result : clone->getResults())
      result.setType(shape.clone(
          cast<RankedTensorType>(result.getType()).getElementType()));
    return success();
  }
  // Its verifier demands that every input have the result's type.
  if (auto elementwise = dyn_cast<ElementwiseOp>(clone)) {
    if (!elementwise.getInputs().empty())
      elementwise.getOutput().setType(
          cast<RankedTensorType>(elementwise.getInputs()[0].getType()));
    return success();
  }
  // checkDerivable has vouched for the table entry and the leading axes.
  for (auto [result, carriesBatch] :
       llvm::zip_equal(clone->getResults(), *batchCarryingResults(clone)))
    if (carriesBatch)
      result.setType(
          withBatch(cast<RankedTensorType>(result.getType()), localBatch));
  return success();
}

namespace {
struct ReplicatePass : graphc::impl::ReplicateBase<ReplicatePass> {
  using ReplicateBase::ReplicateBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (numReplicas < 1) {
      module.emitError("dist-replicate: num-replicas must be >= 1, got ")
          << numReplicas.getValue();
      return signalPassFailure();
    }
    SmallVector<ModelOp> steps;
    for (auto [name, required] : kStepModels) {
      auto model =
          dyn_cast_or_null<ModelOp>(SymbolTable::lookupSymbolIn(module, name));
      if (!model && !required)
        continue;
      if (!model) {
        module.emitError("dist-replicate needs graph.model @")
            << name << " (run graph-build-training-step first)";
        return signalPassFailure();
      }
      if (Attribute replicas =
              model->getAttr(dist::DistDialect::kReplicasAttrName)) {
        model.emitOpError("is already replicated (")
            << dist::DistDialect::kReplicasAttrName << " = " << replicas << ")";
        return signalPassFailure();
      }
      steps.push_back(model);
    }
    for (ModelOp model : steps)
      if (failed(checkModel(model)))
        return signalPassFailure();
    for (ModelOp model : steps)
      if (failed(replicate(model)))
        return signalPassFailure();
  }

  /// Everything that can be wrong with `model`, found before anything
  /// changes.
  LogicalResult checkModel(ModelOp model) {
    SmallVector<InputOp> inputs = model.getInputOps();
    if (inputs.empty())
      return model.emitOpError("has no graph.input whose batch to split");
    int64_t batch = inputs.front().getOutput().getType().getDimSize(0);
    for (InputOp input : inputs) {
      int64_t b = input.getOutput().getType().getDimSize(0);
      if (b != batch)
        return input.emitOpError("has batch ")
               << b << ", input '" << inputs.front().getName() << "' has "
               << batch << ": the replicas need one global batch";
    }
    if (batch % numReplicas != 0)
      return inputs.front().emitOpError("global batch ")
             << batch << " does not divide into " << numReplicas.getValue()
             << " replicas";
    for (Operation &op : model.getBlock().without_terminator())
      if (failed(checkSplittable(&op)) || failed(checkDerivable(&op, batch)))
        return failure();
    return success();
  }

  /// Clones the body of `model` once per replica, replica after replica; the
  /// output lists every replica's values, replica-major.
  LogicalResult replicate(ModelOp model) {
    Block &block = model.getBlock();
    OutputOp output = model.getOutputOp();
    SmallVector<Operation *> originals = llvm::map_to_vector(
        block.without_terminator(), [](Operation &op) { return &op; });
    int64_t localBatch =
        model.getInputOps().front().getOutput().getType().getDimSize(0) /
        numReplicas;

    OpBuilder builder(output);
    SmallVector<Value> outputs;
    // Each op whose sums are the global batch's (graph.overlap_sums,
    // graph.kept_rows): its clones, replica by replica.
    llvm::MapVector<Operation *, SmallVector<Operation *>> overlapSums;
    for (int64_t r = 0; r < numReplicas; ++r) {
      IRMapping mapping;
      for (Operation *op : originals) {
        Operation *clone = builder.clone(*op, mapping);
        dist::setReplica(clone, r);
        if (failed(retype(clone, localBatch)))
          return failure();
        if (op->hasTrait<graph::SummedAcrossReplicas>())
          overlapSums[op].push_back(clone);
        if (auto grad = dyn_cast<OverlapLossGradOp>(clone);
            grad && numReplicas > 1)
          grad.setReplicasAttr(builder.getI64IntegerAttr(numReplicas));
        // Loss scaling: each replica's gradient is its share of the global
        // batch's (MirroredStrategy's), and the update and the reported
        // norm undo that share of the averaged gradients.
        if (numReplicas > 1) {
          auto replicas = builder.getI64IntegerAttr(numReplicas);
          if (auto scale = dyn_cast<ScaleByOp>(clone))
            scale.setReplicasAttr(replicas);
          if (auto next = dyn_cast<LossScaleUpdateOp>(clone))
            next.setReplicasAttr(replicas);
          if (auto update = dyn_cast<OptimizerUpdateOp>(clone);
              update && !update.getLossScale().empty())
            update.setReplicasAttr(replicas);
        }
      }
      for (Value value : output.getOutputs())
        outputs.push_back(mapping.lookup(value));
    }
    if (numReplicas > 1)
      for (auto &[original, clones] : overlapSums)
        sumAcrossReplicas(model, clones);
    // The output gathers every replica's values, so it stays unplaced, as
    // the collectives do.
    auto replicated = OutputOp::create(builder, output.getLoc(), outputs,
                                       output.getNamesAttr());
    replicated->setDiscardableAttrs(output->getDiscardableAttrDictionary());
    output.erase();
    for (Operation *op : llvm::reverse(originals))
      op->erase();
    model->setAttr(dist::DistDialect::kReplicasAttrName,
                   builder.getI64IntegerAttr(numReplicas));
    return success();
  }

  /// Replaces every replica's `clones` result (one graph.overlap_sums a
  /// replica) by the sum over the replicas, a dist.all_reduce after the
  /// last of them; what replica r computed from its own sums before that
  /// point (its loss, its gradient and all of its backward) moves after
  /// it, in order.
  static void sumAcrossReplicas(ModelOp model, ArrayRef<Operation *> clones) {
    Operation *last = clones.back();
    OpBuilder builder(last->getContext());
    builder.setInsertionPointAfter(last);
    SmallVector<Value> sums = llvm::map_to_vector(
        clones, [](Operation *op) -> Value { return op->getResult(0); });
    auto allReduce = dist::AllReduceOp::create(
        builder, last->getLoc(), ValueRange(sums).getTypes(),
        dist::ReduceKind::sum, sums, IntegerAttr());
    for (auto [own, total] : llvm::zip_equal(sums, allReduce.getOutputs()))
      own.replaceAllUsesExcept(total, allReduce);
    llvm::SetVector<Operation *> moving;
    for (Operation &op : model.getBlock()) {
      if (&op == allReduce.getOperation())
        break;
      if (llvm::any_of(op.getOperands(), [&](Value v) {
            Operation *def = v.getDefiningOp();
            return def == allReduce.getOperation() || moving.contains(def);
          }))
        moving.insert(&op);
    }
    Operation *anchor = allReduce;
    for (Operation *op : moving) {
      op->moveAfter(anchor);
      anchor = op;
    }
  }
};
} // namespace
