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
//      pack, one dist.unpack per replica, and the updates (and the gradient
//      norm) rewired to the unpacked values;
//   4. one more bucket averages the batch norms' new moving statistics, so
//      that every replica holds their mean (see insertAllReduces);
//   5. the updates, and what uses them, move after the collectives, because
//      with replicas laid out one after the other replica 0's update would
//      otherwise come before the all-reduce that feeds it.
// Gradients that already come out of a dist.unpack, and statistics that
// already feed a dist.pack, are reduced, which makes the pass idempotent.
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
    FailureOr<SmallVector<SmallVector<Value>>> statistics =
        collectStatistics(model, replicas);
    if (failed(statistics))
      return failure();
    SmallVector<size_t> order = backwardOrder((*gradients)[0]);
    SmallVector<SmallVector<size_t>> buckets =
        makeBuckets((*gradients)[0], order);

    BucketInserter inserter(model.getContext(), replicas);
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      SmallVector<SmallVector<Value>> values(replicas);
      for (int64_t r = 0; r < replicas; ++r)
        for (size_t i : bucket)
          values[r].push_back((*gradients)[r][i].value());
      SmallVector<SmallVector<Value>> reduced =
          inserter.reduce(values, static_cast<int64_t>(k));
      // The update and the gradient norm take the mean; the pack keeps the
      // replica's own gradient.
      for (int64_t r = 0; r < replicas; ++r)
        for (auto [own, mean] : llvm::zip_equal(values[r], reduced[r]))
          own.replaceUsesWithIf(mean, [](OpOperand &use) {
            return isa<OptimizerUpdateOp, GlobalNormOp>(use.getOwner());
          });
    }

    // The moving statistics of batch norms: every replica updates its own
    // from its own rows; averaging the new values each step keeps the
    // replicas' copies equal to the mean of what they would have drifted
    // to (the update is linear in the batch statistics), which is what
    // MirroredStrategy reads from its per-replica copies (ON_READ, MEAN).
    // One small bucket after the gradients' keeps it off the gradients'
    // critical path.
    if (!(*statistics)[0].empty()) {
      SmallVector<SmallVector<Value>> reduced =
          inserter.reduce(*statistics, static_cast<int64_t>(buckets.size()));
      Operation *terminator = model.getBlock().getTerminator();
      for (int64_t r = 0; r < replicas; ++r)
        for (auto [stat, mean] : llvm::zip_equal((*statistics)[r], reduced[r]))
          for (OpOperand &use : llvm::make_early_inc_range(stat.getUses()))
            if (auto assign = dyn_cast<AssignVariableOp>(use.getOwner())) {
              use.set(mean);
              assign->moveBefore(terminator);
            }
    }

    moveUpdatesAfterCollectives(model);
    return success();
  }

  /// Every replica's new moving statistics (batch_norm_train's
  /// new_moving_mean and new_moving_variance that are assigned to their
  /// variables), in block order, checked to mirror replica 0's. Statistics
  /// that already feed a dist.pack are reduced: the pass stays idempotent.
  static FailureOr<SmallVector<SmallVector<Value>>>
  collectStatistics(ModelOp model, int64_t replicas) {
    SmallVector<SmallVector<Value>> statistics(replicas);
    for (auto bn : model.getBlock().getOps<BatchNormTrainOp>()) {
      std::optional<int64_t> replica = dist::getReplica(bn);
      if (!replica || *replica < 0 || *replica >= replicas)
        return bn.emitOpError("must be placed on one of the ")
               << replicas << " replicas (dist.device)";
      for (Value stat : {bn.getNewMovingMean(), bn.getNewMovingVariance()}) {
        bool assigned =
            llvm::any_of(stat.getUsers(), llvm::IsaPred<AssignVariableOp>);
        bool packed =
            llvm::any_of(stat.getUsers(), llvm::IsaPred<dist::PackOp>);
        if (assigned && !packed)
          statistics[*replica].push_back(stat);
      }
    }
    for (int64_t r = 1; r < replicas; ++r) {
      bool same = statistics[r].size() == statistics[0].size();
      for (size_t i = 0; same && i < statistics[r].size(); ++i)
        same = statistics[r][i].getType() == statistics[0][i].getType();
      if (!same)
        return model.emitOpError("replica ")
               << r << "'s batch-norm statistics do not mirror replica 0's";
    }
    return statistics;
  }

  /// Inserts all-reduces: per bucket, one dist.pack per replica right after
  /// the bucket's last value there, one dist.all_reduce mean after the last
  /// pack and after the previous bucket's collective (so every replica
  /// meets the collectives in one order), and one dist.unpack per replica.
  class BucketInserter {
  public:
    BucketInserter(MLIRContext *context, int64_t replicas)
        : builder(context), replicas(replicas) {}

    /// Reduces `values` ([replica][i], same types across replicas) as
    /// bucket `index`; returns the means, [replica][i].
    SmallVector<SmallVector<Value>> reduce(ArrayRef<SmallVector<Value>> values,
                                           int64_t index) {
      SmallVector<Type> types =
          llvm::map_to_vector(values[0], [](Value v) { return v.getType(); });
      int64_t elements = 0;
      for (Type type : types)
        elements += cast<RankedTensorType>(type).getNumElements();
      auto bucketType = RankedTensorType::get(
          {elements}, cast<RankedTensorType>(types.front()).getElementType());

      SmallVector<Value> packed;
      Operation *lastPack = nullptr;
      for (int64_t r = 0; r < replicas; ++r) {
        Operation *last = nullptr;
        for (Value value : values[r])
          if (!last || isBefore(last, producer(value)))
            last = producer(value);
        insertAfter(last);
        auto pack = dist::PackOp::create(builder, last->getLoc(), bucketType,
                                         values[r]);
        dist::setReplica(pack, r);
        created.insert(pack);
        packed.push_back(pack.getBucket());
        if (!lastPack || isBefore(lastPack, pack))
          lastPack = pack;
      }

      Operation *anchor = lastPack;
      if (previousCollective && isBefore(anchor, previousCollective))
        anchor = previousCollective;
      insertAfter(anchor);
      auto allReduce = dist::AllReduceOp::create(
          builder, lastPack->getLoc(), dist::ReduceKind::mean, packed, index);
      created.insert(allReduce);

      builder.setInsertionPointAfter(allReduce);
      SmallVector<SmallVector<Value>> reduced;
      for (int64_t r = 0; r < replicas; ++r) {
        auto unpack = dist::UnpackOp::create(builder, allReduce.getLoc(), types,
                                             allReduce.getOutputs()[r]);
        dist::setReplica(unpack, r);
        created.insert(unpack);
        previousCollective = unpack;
        reduced.push_back(SmallVector<Value>(unpack.getOutputs()));
      }
      return reduced;
    }

  private:
    /// A new op goes after those this inserter already placed right after
    /// its anchor, so buckets keep their order in the IR.
    void insertAfter(Operation *anchor) {
      while (anchor->getNextNode() && created.contains(anchor->getNextNode()))
        anchor = anchor->getNextNode();
      builder.setInsertionPointAfter(anchor);
    }

    OpBuilder builder;
    int64_t replicas;
    SmallPtrSet<Operation *, 16> created;
    Operation *previousCollective = nullptr;
  };

  /// Moves every optimizer_update and gradient norm, and everything that
  /// uses them, to the end of the block, keeping their order: each
  /// replica's update now waits for the all-reduces, which follow the last
  /// replica's backward.
  static void moveUpdatesAfterCollectives(ModelOp model) {
    Block &block = model.getBlock();
    SetVector<Operation *> moving;
    for (Operation &op : block.without_terminator()) {
      bool usesMoving = llvm::any_of(op.getOperands(), [&](Value v) {
        return v.getDefiningOp() && moving.contains(v.getDefiningOp());
      });
      if (isa<OptimizerUpdateOp, GlobalNormOp>(op) || usesMoving)
        moving.insert(&op);
    }
    Operation *terminator = block.getTerminator();
    for (Operation *op : moving)
      op->moveBefore(terminator);
  }
};
} // namespace
