//===- InsertAllReducePass.cpp - dist-insert-all-reduce -------------------===//
//
// Averages every gradient across replicas before the optimizer uses it, the
// way MirroredStrategy does, in buckets so that the reduction of the last
// layers' gradients overlaps the backward pass of the first layers:
//   1. the gradients are the `grads` of each replica's optimizer_updates,
//      ordered as replica 0's backward produces them;
//   2. greedy buckets of at most `bucket-bytes` in that order;
//   3. per bucket: one dist.pack per replica right after the bucket's last
//      producer in that replica, one dist.all_reduce mean after the last
//      pack, one dist.unpack per replica, and the updates rewired to the
//      unpacked values;
//   4. the updates, and what uses them, move after the collectives, because
//      with replicas laid out one after the other replica 0's update would
//      otherwise come before the all-reduce that feeds it.
// Gradients that already come out of a dist.unpack are reduced, which makes
// the pass idempotent.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_INSERTALLREDUCE
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;
using namespace mlir::graph;

namespace {
/// One `grads` operand of one replica's optimizer_update.
struct Gradient {
  OptimizerUpdateOp update;
  unsigned index;
  Value value() const { return OptimizerUpdateOp(update).getGrads()[index]; }
};

/// Gradients by position: gradient i of every replica is the same variable's.
using ReplicaGradients = SmallVector<SmallVector<Gradient>>;
} // namespace

static int64_t byteSize(RankedTensorType type) {
  return type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
}

/// Whether `a` comes before `b` in their (shared) block.
static bool isBefore(Operation *a, Operation *b) {
  return a != b && a->isBeforeInBlock(b);
}

/// Every replica's gradients, in update order and operand order, checked to
/// mirror replica 0's.
static FailureOr<ReplicaGradients> collectGradients(ModelOp model,
                                                    int64_t replicas) {
  ReplicaGradients gradients(replicas);
  for (auto update : model.getBlock().getOps<OptimizerUpdateOp>()) {
    std::optional<int64_t> replica = dist::getReplica(update);
    if (!replica || *replica < 0 || *replica >= replicas)
      return update.emitOpError("must be placed on one of the ")
             << replicas << " replicas (dist.device)";
    for (unsigned i = 0, e = update.getGrads().size(); i < e; ++i)
      gradients[*replica].push_back({update, i});
  }
  for (int64_t r = 1; r < replicas; ++r) {
    if (gradients[r].size() != gradients[0].size())
      return model.emitOpError("replica ")
             << r << " updates " << gradients[r].size()
             << " gradients, replica 0 updates " << gradients[0].size()
             << ": replicas must mirror each other";
    for (auto [mine, first] : llvm::zip_equal(gradients[r], gradients[0]))
      if (mine.value().getType() != first.value().getType())
        return mine.update.emitOpError("gradient #")
               << mine.index << " of replica " << r << " has type "
               << mine.value().getType() << ", replica 0's has "
               << first.value().getType();
  }
  return gradients;
}

/// The op that produces `value`; every gradient is an op result, since a
/// model takes no block arguments.
static Operation *producer(Value value) { return value.getDefiningOp(); }

/// Positions (into replica 0's gradients) of the gradients still to reduce,
/// in the order replica 0's backward produces them.
static SmallVector<size_t> backwardOrder(ArrayRef<Gradient> replica0) {
  SmallVector<size_t> order;
  for (auto [i, gradient] : llvm::enumerate(replica0))
    if (!isa<dist::UnpackOp>(producer(gradient.value())))
      order.push_back(i);
  llvm::stable_sort(order, [&](size_t a, size_t b) {
    Value va = replica0[a].value(), vb = replica0[b].value();
    Operation *pa = producer(va), *pb = producer(vb);
    if (pa != pb)
      return isBefore(pa, pb);
    return cast<OpResult>(va).getResultNumber() <
           cast<OpResult>(vb).getResultNumber();
  });
  return order;
}

namespace {
struct InsertAllReducePass
    : graphc::impl::InsertAllReduceBase<InsertAllReducePass> {
  using InsertAllReduceBase::InsertAllReduceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (bucketBytes < 0) {
      module.emitError("dist-insert-all-reduce: bucket-bytes must be >= 0, "
                       "got ")
          << bucketBytes.getValue();
      return signalPassFailure();
    }
    for (ModelOp model : module.getOps<ModelOp>()) {
      Attribute attr = model->getAttr(dist::DistDialect::kReplicasAttrName);
      if (!attr)
        continue;
      auto replicas = dyn_cast<IntegerAttr>(attr);
      if (!replicas || replicas.getInt() < 1) {
        model.emitOpError() << dist::DistDialect::kReplicasAttrName
                            << " must be a positive integer, got " << attr;
        return signalPassFailure();
      }
      if (replicas.getInt() == 1)
        continue;
      if (failed(insertAllReduces(model, replicas.getInt())))
        return signalPassFailure();
    }
  }

  /// Greedy buckets over `order`: a bucket closes when the next gradient
  /// would take it past bucket-bytes (0: no limit), or has another element
  /// type, since a bucket is one flat tensor.
  SmallVector<SmallVector<size_t>> makeBuckets(ArrayRef<Gradient> replica0,
                                               ArrayRef<size_t> order) {
    SmallVector<SmallVector<size_t>> buckets;
    int64_t bytes = 0;
    Type element;
    for (size_t i : order) {
      auto type = cast<RankedTensorType>(replica0[i].value().getType());
      int64_t size = byteSize(type);
      bool full = bucketBytes > 0 && bytes + size > bucketBytes;
      if (buckets.empty() || full || type.getElementType() != element) {
        buckets.emplace_back();
        bytes = 0;
        element = type.getElementType();
      }
      buckets.back().push_back(i);
      bytes += size;
    }
    return buckets;
  }

  LogicalResult insertAllReduces(ModelOp model, int64_t replicas) {
    FailureOr<ReplicaGradients> gradients = collectGradients(model, replicas);
    if (failed(gradients))
      return failure();
    SmallVector<size_t> order = backwardOrder((*gradients)[0]);
    if (order.empty())
      return success();
    SmallVector<SmallVector<size_t>> buckets =
        makeBuckets((*gradients)[0], order);

    // Ops this pass creates: a new op goes after those already placed right
    // after its anchor, so buckets keep their order in the IR.
    SmallPtrSet<Operation *, 16> created;
    auto insertAfter = [&](OpBuilder &builder, Operation *anchor) {
      while (anchor->getNextNode() && created.contains(anchor->getNextNode()))
        anchor = anchor->getNextNode();
      builder.setInsertionPointAfter(anchor);
    };

    OpBuilder builder(model.getContext());
    Operation *previousCollective = nullptr;
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      SmallVector<Type> types = llvm::map_to_vector(bucket, [&](size_t i) {
        return (*gradients)[0][i].value().getType();
      });
      int64_t elements = 0;
      for (Type type : types)
        elements += cast<RankedTensorType>(type).getNumElements();
      auto bucketType = RankedTensorType::get(
          {elements}, cast<RankedTensorType>(types.front()).getElementType());

      // One pack per replica, right after the bucket's last gradient there.
      SmallVector<Value> packed;
      Operation *lastPack = nullptr;
      for (int64_t r = 0; r < replicas; ++r) {
        SmallVector<Value> values;
        Operation *last = nullptr;
        for (size_t i : bucket) {
          Value value = (*gradients)[r][i].value();
          values.push_back(value);
          if (!last || isBefore(last, producer(value)))
            last = producer(value);
        }
        insertAfter(builder, last);
        auto pack =
            dist::PackOp::create(builder, last->getLoc(), bucketType, values);
        dist::setReplica(pack, r);
        created.insert(pack);
        packed.push_back(pack.getBucket());
        if (!lastPack || isBefore(lastPack, pack))
          lastPack = pack;
      }

      // The all-reduce after every pack, and after the previous bucket's, so
      // every replica meets the collectives in one order.
      Operation *anchor = lastPack;
      if (previousCollective && isBefore(anchor, previousCollective))
        anchor = previousCollective;
      insertAfter(builder, anchor);
      auto allReduce = dist::AllReduceOp::create(builder, lastPack->getLoc(),
                                                 dist::ReduceKind::mean, packed,
                                                 static_cast<int64_t>(k));
      created.insert(allReduce);

      builder.setInsertionPointAfter(allReduce);
      for (int64_t r = 0; r < replicas; ++r) {
        auto unpack = dist::UnpackOp::create(builder, allReduce.getLoc(), types,
                                             allReduce.getOutputs()[r]);
        dist::setReplica(unpack, r);
        created.insert(unpack);
        previousCollective = unpack;
        for (auto [i, reduced] : llvm::zip_equal(bucket, unpack.getOutputs())) {
          Gradient &gradient = (*gradients)[r][i];
          gradient.update.getGradsMutable()[gradient.index].set(reduced);
        }
      }
    }

    moveUpdatesAfterCollectives(model);
    return success();
  }

  /// Moves every optimizer_update, and everything that uses it, to the end
  /// of the block, keeping their order: each replica's update now waits for
  /// the all-reduces, which follow the last replica's backward.
  static void moveUpdatesAfterCollectives(ModelOp model) {
    Block &block = model.getBlock();
    SetVector<Operation *> moving;
    for (Operation &op : block.without_terminator()) {
      bool usesMoving = llvm::any_of(op.getOperands(), [&](Value v) {
        return v.getDefiningOp() && moving.contains(v.getDefiningOp());
      });
      if (isa<OptimizerUpdateOp>(op) || usesMoving)
        moving.insert(&op);
    }
    Operation *terminator = block.getTerminator();
    for (Operation *op : moving)
      op->moveBefore(terminator);
  }
};
} // namespace
