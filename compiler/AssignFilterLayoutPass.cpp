//===- AssignFilterLayoutPass.cpp - convolution kernels stored as OHWI ----===//
//
// Keras stores a convolution kernel HWIO [kh, kw, C / g, F]; cuDNN reads
// OHWI [F, kh, kw, C / g] (KRSC), and so does oneDNN's `ohwi`. A kernel
// variable kept HWIO is transposed by the CUDA backend in every step: twice
// for the forward and input-gradient convolutions, once more for the kernel
// gradient. This pass stores such a variable OHWI instead, with what follows
// from it, so that no step transposes a filter:
//   - the variable and its optimizer slots get the OHWI type and name their
//     Keras form (`logical_shape`, `logical_permutation`), through which the
//     runtime initializes, checkpoints and saves them in Keras' layout;
//   - every convolution that reads it, and the conv2d_grad_kernel (or
//     graph-fuse's fused_conv2d_pool_grad_kernel) that computes its
//     gradient, get `filter_layout = ohwi`;
//   - the optimizer update, the gradient norm and the assignments are
//     elementwise in it, so they only change type.
// A Keras depthwise kernel [kh, kw, C, m] becomes [C * m, kh, kw, 1]
// (stored axes C, m, kh, kw).
//
// Only a variable whose every use is one of these is converted: read as a
// convolution's kernel (all of them in one form), or as an optimizer
// update's parameter whose gradient is one of those, read only by
// updates and the gradient norm, and whose slots are used by that update
// alone (Keras' use_ema: an EMA update of its new value, with an average
// variable of its own). Anything else (a regularizer reading the kernel, a
// kernel shared by two layers, whose gradient is a sum) keeps Keras' layout
// and the per-step transposes; the IR stays correct either way. Idempotent.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "llvm/ADT/MapVector.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_ASSIGNFILTERLAYOUT
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

namespace {

/// How a variable's HWIO kernel is rearranged: a permutation of its Keras
/// axes and the OHWI type that results.
struct KernelForm {
  bool depthwise = false;

  SmallVector<int64_t> permutation() const {
    // [kh, kw, C/g, F] -> [F, kh, kw, C/g]; depthwise [kh, kw, C, m] ->
    // [C, m, kh, kw], the memory of [C * m, kh, kw, 1].
    return depthwise ? SmallVector<int64_t>{2, 3, 0, 1}
                     : SmallVector<int64_t>{3, 0, 1, 2};
  }
  RankedTensorType ohwiType(RankedTensorType hwio) const {
    ArrayRef<int64_t> d = hwio.getShape();
    SmallVector<int64_t> shape =
        depthwise ? SmallVector<int64_t>{d[2] * d[3], d[0], d[1], 1}
                  : SmallVector<int64_t>{d[3], d[0], d[1], d[2]};
    return RankedTensorType::get(shape, hwio.getElementType());
  }
};

/// One parameter of one optimizer update: its index among the params.
struct UpdateSlot {
  OptimizerUpdateOp update;
  unsigned index;
};

/// What converting one variable changes.
struct Conversion {
  KernelForm form;
  SmallVector<Operation *> convolutions; // read the kernel: get ohwi
  SmallVector<Operation *> gradients;    // kernelGradient()s
  SmallVector<UpdateSlot> updates;
  SmallVector<EmaUpdateOp> emas; // use_ema: the average follows the update
  SmallVector<VariableOp> slots; // the optimizer's, and the EMA averages
};

/// The kernel's form where `use` is a convolution's kernel operand in
/// Keras' layout; nullopt for any other use (a convolution's input
/// included).
std::optional<KernelForm> kernelFormOf(OpOperand &use) {
  Value kernel = use.get();
  auto form = [&](auto conv, Value input) -> std::optional<KernelForm> {
    if (use.getOperandNumber() != conv.getKernelMutable().getOperandNumber() ||
        conv.getFilterLayout() != FilterLayout::hwio)
      return std::nullopt;
    int64_t channels = cast<RankedTensorType>(input.getType()).getDimSize(3);
    auto type = cast<RankedTensorType>(kernel.getType());
    int64_t groups = conv.getGroups();
    // Keras' depthwise form, as inferConv2DType tells it apart.
    return KernelForm{groups > 1 && groups == channels &&
                      type.getDimSize(2) == channels};
  };
  Operation *op = use.getOwner();
  if (auto conv = dyn_cast<Conv2DOp>(op))
    return form(conv, conv.getInput());
  if (auto conv = dyn_cast<FusedConv2DOp>(op))
    return form(conv, conv.getInput());
  if (auto conv = dyn_cast<FusedConv2DPoolOp>(op))
    return form(conv, conv.getInput());
  if (auto conv = dyn_cast<Conv2DGradInputOp>(op))
    return form(conv, conv.getInputGrad());
  return std::nullopt;
}

/// The op that computes `value` as a Keras-layout kernel's gradient, as its
/// first result: a conv2d_grad_kernel, or graph-fuse's
/// fused_conv2d_pool_grad_kernel; null for anything else.
Operation *kernelGradient(Value value) {
  Operation *op = value.getDefiningOp();
  auto hwio = [](auto grad) -> Operation * {
    return grad.getFilterLayout() == FilterLayout::hwio ? grad.getOperation()
                                                        : nullptr;
  };
  if (auto grad = dyn_cast_or_null<Conv2DGradKernelOp>(op))
    return value == grad.getKernelGrad() ? hwio(grad) : nullptr;
  if (auto grad = dyn_cast_or_null<FusedConv2DPoolGradKernelOp>(op))
    return value == grad.getKernelGrad() ? hwio(grad) : nullptr;
  return nullptr;
}

/// `use`'s position in `segment` (an op's variadic operands), or nullopt
/// when it is another operand.
std::optional<unsigned> indexIn(OpOperand &use, OperandRange segment) {
  unsigned first = segment.getBeginOperandIndex();
  if (use.getOperandNumber() < first ||
      use.getOperandNumber() - first >= segment.size())
    return std::nullopt;
  return use.getOperandNumber() - first;
}

struct AssignFilterLayoutPass
    : graphc::impl::AssignFilterLayoutBase<AssignFilterLayoutPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    llvm::MapVector<StringAttr, SmallVector<ReadVariableOp>> reads;
    llvm::DenseMap<StringAttr, SmallVector<AssignVariableOp>> assigns;
    module.walk([&](Operation *op) {
      if (auto read = dyn_cast<ReadVariableOp>(op))
        reads[read.getVariableAttr().getAttr()].push_back(read);
      else if (auto assign = dyn_cast<AssignVariableOp>(op))
        assigns[assign.getVariableAttr().getAttr()].push_back(assign);
    });
    SymbolTable symbols(module);
    auto readsOf = [&](VariableOp v) -> ArrayRef<ReadVariableOp> {
      auto it = reads.find(v.getSymNameAttr());
      return it == reads.end() ? ArrayRef<ReadVariableOp>() : it->second;
    };
    auto assignsOf = [&](VariableOp v) -> ArrayRef<AssignVariableOp> {
      auto it = assigns.find(v.getSymNameAttr());
      return it == assigns.end() ? ArrayRef<AssignVariableOp>() : it->second;
    };

    // Slot variables are analysed with their parameter, not on their own.
    llvm::DenseSet<Operation *> slotVariables;
    for (VariableOp v : module.getOps<VariableOp>()) {
      if (slotVariables.contains(v) || v.getLogicalPermutation() ||
          v.getTensorType().getRank() != 4)
        continue;
      std::optional<Conversion> c =
          analyse(v, readsOf(v), assignsOf(v), symbols, readsOf, assignsOf);
      if (!c)
        continue;
      for (VariableOp slot : c->slots)
        slotVariables.insert(slot);
      apply(v, *c, readsOf);
    }
  }

private:
  using ReadsOf = llvm::function_ref<ArrayRef<ReadVariableOp>(VariableOp)>;
  using AssignsOf = llvm::function_ref<ArrayRef<AssignVariableOp>(VariableOp)>;

  /// What converting `v` takes, or nullopt when some use of it (or of its
  /// gradient or slots) needs Keras' layout.
  static std::optional<Conversion>
  analyse(VariableOp v, ArrayRef<ReadVariableOp> reads,
          ArrayRef<AssignVariableOp> assigns, SymbolTable &symbols,
          ReadsOf readsOf, AssignsOf assignsOf) {
    Conversion c;
    std::optional<bool> depthwise;
    for (ReadVariableOp read : reads) {
      for (OpOperand &use : read.getValue().getUses()) {
        Operation *user = use.getOwner();
        if (auto update = dyn_cast<OptimizerUpdateOp>(user)) {
          std::optional<unsigned> index = indexIn(use, update.getParams());
          if (!index)
            return std::nullopt;
          c.updates.push_back({update, *index});
          continue;
        }
        std::optional<KernelForm> form = kernelFormOf(use);
        if (!form || (depthwise && *depthwise != form->depthwise))
          return std::nullopt;
        depthwise = form->depthwise;
        c.convolutions.push_back(user);
      }
    }
    if (!depthwise)
      return std::nullopt; // no convolution reads it
    c.form.depthwise = *depthwise;

    // Every write is one of the updates' new values for it, or (use_ema)
    // the value an EMA update passes on from one.
    auto isNewValue = [&](Value value) {
      if (auto ema = value.getDefiningOp<EmaUpdateOp>();
          ema && ema.getNewValue() == value)
        value = ema.getValue();
      auto result = dyn_cast<OpResult>(value);
      auto update = result ? dyn_cast<OptimizerUpdateOp>(result.getOwner())
                           : OptimizerUpdateOp();
      return update && llvm::any_of(c.updates, [&](const UpdateSlot &u) {
               return u.update == update &&
                      update.getNewParams()[u.index] == result;
             });
    };
    for (AssignVariableOp assign : assigns)
      if (!isNewValue(assign.getValue()))
        return std::nullopt;

    for (UpdateSlot u : c.updates) {
      OptimizerUpdateOp update = u.update;
      // The gradient: a conv2d_grad_kernel of this kernel's form, read only
      // where layout does not matter.
      Operation *grad = kernelGradient(update.getGrads()[u.index]);
      if (!grad)
        return std::nullopt;
      for (OpOperand &use : grad->getResult(0).getUses()) {
        if (isa<GlobalNormOp>(use.getOwner()))
          continue;
        // Else only as this variable's gradient in one of its updates.
        auto other = dyn_cast<OptimizerUpdateOp>(use.getOwner());
        std::optional<unsigned> at =
            other ? indexIn(use, other.getGrads()) : std::nullopt;
        if (!at || !llvm::any_of(c.updates, [&](const UpdateSlot &v) {
              return v.update == other && v.index == *at;
            }))
          return std::nullopt;
      }
      c.gradients.push_back(grad);
      // The new value goes back into v, directly or through an EMA update
      // (Keras' use_ema) whose average is a variable of its own.
      auto intoV = [&](Value value) {
        return llvm::all_of(value.getUsers(), [&](Operation *user) {
          auto assign = dyn_cast<AssignVariableOp>(user);
          return assign && assign.getVariable() == v.getSymName();
        });
      };
      for (OpOperand &use : update.getNewParams()[u.index].getUses()) {
        if (auto assign = dyn_cast<AssignVariableOp>(use.getOwner());
            assign && assign.getVariable() == v.getSymName())
          continue;
        auto ema = dyn_cast<EmaUpdateOp>(use.getOwner());
        if (!ema || use.get() != ema.getValue() || !intoV(ema.getNewValue()))
          return std::nullopt;
        VariableOp average = ownedSlot(ema.getAverage(), ema.getNewAverage(),
                                       symbols, readsOf, assignsOf);
        if (!average)
          return std::nullopt;
        c.emas.push_back(ema);
        c.slots.push_back(average);
      }
      // Its slots: variables this update alone reads and writes.
      unsigned k = OptimizerUpdateOp::slotsPerVariable(update.getOptimizer());
      for (unsigned s = 0; s < k; ++s) {
        unsigned at = u.index * k + s;
        VariableOp slot =
            ownedSlot(update.getSlots()[at], update.getNewSlots()[at], symbols,
                      readsOf, assignsOf);
        if (!slot)
          return std::nullopt;
        c.slots.push_back(slot);
      }
    }
    return c;
  }

  /// The variable `value` reads, when one op alone reads it (as `value`)
  /// and only `updated` is written back into it, and `updated` goes
  /// nowhere else: a slot that takes its parameter's layout. Null
  /// otherwise.
  static VariableOp ownedSlot(Value value, Value updated, SymbolTable &symbols,
                              ReadsOf readsOf, AssignsOf assignsOf) {
    auto read = value.getDefiningOp<ReadVariableOp>();
    if (!read || !read.getValue().hasOneUse())
      return {};
    auto slot = symbols.lookup<VariableOp>(read.getVariable());
    if (!slot || slot.getLogicalPermutation() || readsOf(slot).size() != 1)
      return {};
    for (AssignVariableOp assign : assignsOf(slot))
      if (assign.getValue() != updated)
        return {};
    for (Operation *user : updated.getUsers())
      if (auto assign = dyn_cast<AssignVariableOp>(user);
          !assign || assign.getVariable() != slot.getSymName())
        return {};
    return slot;
  }

  /// Stores `v` (and its slots) OHWI, retyping everything that carries it.
  static void apply(VariableOp v, const Conversion &c, ReadsOf readsOf) {
    RankedTensorType hwio = v.getTensorType();
    RankedTensorType ohwi = c.form.ohwiType(hwio);
    Builder b(v.getContext());
    auto store = [&](VariableOp variable) {
      variable.setType(ohwi);
      variable.setLogicalShapeAttr(b.getDenseI64ArrayAttr(hwio.getShape()));
      variable.setLogicalPermutationAttr(
          b.getDenseI64ArrayAttr(c.form.permutation()));
      for (ReadVariableOp read : readsOf(variable))
        read.getValue().setType(ohwi);
    };
    store(v);
    for (VariableOp slot : c.slots)
      store(slot);
    auto layout = FilterLayoutAttr::get(v.getContext(), FilterLayout::ohwi);
    for (Operation *conv : c.convolutions)
      conv->setAttr("filter_layout", layout);
    for (Operation *grad : c.gradients) {
      grad->setAttr("filter_layout", layout);
      grad->getResult(0).setType(ohwi);
    }
    for (EmaUpdateOp ema : c.emas) {
      ema.getNewAverage().setType(ohwi);
      ema.getNewValue().setType(ohwi);
    }
    for (UpdateSlot u : c.updates) {
      u.update.getNewParams()[u.index].setType(ohwi);
      unsigned k = OptimizerUpdateOp::slotsPerVariable(u.update.getOptimizer());
      for (unsigned s = 0; s < k; ++s)
        u.update.getNewSlots()[u.index * k + s].setType(ohwi);
    }
  }
};

} // namespace
