//===- AssignPrecisionPass.cpp - Keras' mixed precision in tensor types ---===//
//
// Under Keras' mixed policies (mixed_bfloat16, mixed_float16) a layer keeps
// its variables in float32 and computes in the reduced type: its __call__
// casts its floating inputs to the compute dtype, and each variable it reads
// is cast when read (keras/src/layers/layer.py, AutocastScope). The importer
// marks the ops of such a layer with graph.compute_type; this pass makes
// that real in the forward model, before the training step is built, so that
// autodiff derives every gradient in its forward value's type:
//   - a marked op's float operands are cast to its compute type and its
//     float results get that type;
//   - a float32 op (unmarked) that reads a reduced value reads it cast to
//     float32: Keras' `Activation("softmax", dtype="float32")` head;
//   - a few ops compute in float32 even when marked, as Keras' layers do
//     (BatchNormalization and LayerNormalization cast bf16/f16 inputs to
//     float32 and their output back): their operands are cast to float32
//     and their results back to the compute type;
//   - variables stay float32 (master weights): each read is cast once per
//     step for all its consumers;
//   - the model's outputs are cast to float32, which is what Keras' losses
//     and metrics do with y_pred before they compute.
// The casts are graph.cast ops (round to nearest even), shared: one per
// value and type. The marks are removed afterwards: the types carry them.
// A model without marks (float32) passes untouched, float64 included.
//
// `precision` overrides the model's policy as `graphc --precision` does:
// every marked op takes the new compute type (float32 removes the mark);
// in a model without marks, mixed_* marks every op. Ops the model keeps in
// float32 next to marked ones (Keras' advice for a softmax head) stay
// float32 either way.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_ASSIGNPRECISION
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

namespace {

/// Ops that compute in float32 whatever their layer's policy, as the Keras
/// layers they come from do.
bool computesInFloat32(Operation *op) {
  return isa<BatchNormOp, LayerNormOp>(op);
}

Type elementTypeOf(Value value) {
  auto tensor = dyn_cast<RankedTensorType>(value.getType());
  return tensor ? tensor.getElementType() : Type();
}

bool isFloatTensor(Value value) {
  return isa_and_nonnull<FloatType>(elementTypeOf(value));
}

/// Whether any op of `model` carries a compute type: a float32 model
/// (without --precision) passes untouched.
bool isMarked(ModelOp model) {
  return llvm::any_of(model.getBlock(), [](Operation &op) {
    return op.hasAttr(GraphDialect::getComputeTypeAttrName());
  });
}

class PrecisionAssigner {
public:
  explicit PrecisionAssigner(ModelOp model)
      : model(model), b(model.getContext()) {}

  LogicalResult run() {
    Type f32 = b.getF32Type();
    StringRef mark = GraphDialect::getComputeTypeAttrName();
    for (Operation &op :
         llvm::make_early_inc_range(model.getBlock().without_terminator())) {
      auto attr = op.getAttrOfType<TypeAttr>(mark);
      op.removeAttr(mark);
      if (isa<CastOp, ReadVariableOp, InputOp>(op))
        continue; // float32 variables and inputs; their readers cast.
      // Fused regions and training-step ops come after this pass.
      if (op.getNumRegions() != 0 ||
          isa<OptimizerUpdateOp, AssignVariableOp>(op))
        return op.emitOpError("is not a forward layer op: "
                              "graph-assign-precision runs on the imported "
                              "model, before graph-build-training-step");
      Type compute = attr ? attr.getValue() : f32;
      // Already assigned (a second run): its types say its compute type.
      if (!attr && llvm::any_of(op.getResults(), [&](Value result) {
            return isFloatTensor(result) && elementTypeOf(result) != f32;
          }))
        continue;
      if (compute != f32 && computesInFloat32(&op)) {
        // Keras' __call__ casts the layer's inputs to the compute type
        // before the layer widens them: an input arrives rounded. Its
        // variables (moving statistics, gamma, beta) are not autocast.
        for (OpOperand &operand : op.getOpOperands())
          if (isConvertible(operand.get()) &&
              !operand.get().getDefiningOp<ReadVariableOp>())
            operand.set(castTo(castTo(operand.get(), compute), f32));
        b.setInsertionPointAfter(&op);
        for (Value result : op.getResults())
          if (isConvertible(result) && !result.use_empty()) {
            Value narrowed = castTo(result, compute);
            result.replaceAllUsesExcept(narrowed, narrowed.getDefiningOp());
          }
        continue;
      }
      castOperands(op, compute);
      for (Value result : op.getResults())
        if (isConvertible(result))
          result.setType(
              cast<RankedTensorType>(result.getType()).clone(compute));
    }
    castOperands(*model.getOutputOp(), f32);
    return success();
  }

private:
  /// A tensor of the types a policy mixes (f32, bf16, f16): a float64
  /// model, which the reference backend runs, keeps its types.
  static bool isConvertible(Value value) {
    Type type = elementTypeOf(value);
    return type && (type.isF32() || type.isBF16() || type.isF16());
  }

  void castOperands(Operation &op, Type to) {
    for (OpOperand &operand : op.getOpOperands())
      if (isConvertible(operand.get()))
        operand.set(castTo(operand.get(), to));
  }

  /// `value` as `to`, through one shared graph.cast placed right after its
  /// definition.
  Value castTo(Value value, Type to) {
    if (elementTypeOf(value) == to)
      return value;
    Value &cached = casts[{value, to}];
    if (cached)
      return cached;
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointAfterValue(value);
    auto type = cast<RankedTensorType>(value.getType()).clone(to);
    cached = CastOp::create(b, value.getLoc(), type, value);
    return cached;
  }

  ModelOp model;
  OpBuilder b;
  DenseMap<std::pair<Value, Type>, Value> casts;
};

struct AssignPrecisionPass
    : mlir::graphc::impl::AssignPrecisionBase<AssignPrecisionPass> {
  using AssignPrecisionBase::AssignPrecisionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    StringRef mark = GraphDialect::getComputeTypeAttrName();
    for (ModelOp model : module.getOps<ModelOp>()) {
      if (!precision.empty() && failed(override(model, mark)))
        return signalPassFailure();
      if (isMarked(model) && failed(PrecisionAssigner(model).run()))
        return signalPassFailure();
    }
  }

  LogicalResult override(ModelOp model, StringRef mark) {
    FailureOr<Type> compute =
        GraphDialect::policyComputeType(&getContext(), precision);
    if (failed(compute))
      return emitError(model.getLoc()) << "unknown precision '" << precision
                                       << "' (Keras' policies: float32, "
                                          "mixed_bfloat16, mixed_float16)";
    // The model's policy replaced by mixed_float16: Keras' compile would
    // wrap its optimizer in a LossScaleOptimizer.
    if (precision == "mixed_float16")
      for (TrainingOp training :
           model->getParentOfType<ModuleOp>().getOps<TrainingOp>())
        if (training.getModel() == model.getSymName())
          training.setNoAutoLossScale(false);
    bool marked = isMarked(model);
    for (Operation &op : model.getBlock().without_terminator()) {
      if (!marked && *compute && !isa<InputOp, ReadVariableOp>(op))
        op.setAttr(mark, TypeAttr::get(*compute));
      else if (op.hasAttr(mark)) {
        if (*compute)
          op.setAttr(mark, TypeAttr::get(*compute));
        else
          op.removeAttr(mark);
      }
    }
    return success();
  }
};

} // namespace
