//===- InsertTimestampsPass.cpp - timestamp points for the step hooks -----===//
//
// Per device r of every exec.program, on <compute, r>:
//   step_begin      first op of the program;
//   forward_begin   right before r's first compute launch;
//   backward_begin  right before r's first gradient launch (train only);
//   backward_end    right before r's first wait for a reduction, where
//                   what the all-reduce did not hide begins (train only);
//   update_begin    right before r's first optimizer_update (train only);
//   step_end        last op of the program;
// and on <comm, r>, when the program has all-reduces (N > 1):
//   allreduce_begin right before the first exec.all_reduce (after the comm
//                   stream's wait for compute, so it marks when the
//                   reduction can really start);
//   allreduce_end   right after the last exec.all_reduce.
//
// A gradient launch is one whose kernel name contains "_grad" (every
// gradient op: relu_grad, dense_grad_kernel, conv2d_grad_input, ...) or an
// elementwise launch whose body calls one. The loss kernel itself
// (softmax_cross_entropy, which also yields the logits' gradient) counts as
// forward, so backward begins with the first op that propagates a gradient
// back through a layer. A train program whose device has no gradient or no
// update launch, or waits for no reduction, gets those marks at the next
// phase's mark, so every train program has all six compute marks in order.
//
// Programs that already have timestamps are left alone (idempotence).
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "mlir/IR/Builders.h"

namespace mlir::graphc {
#define GEN_PASS_DEF_INSERTTIMESTAMPS
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;

static bool isGradientLaunch(exec::LaunchOp launch) {
  if (launch.getKernel().contains("_grad"))
    return true;
  if (launch.getKernel() != "elementwise")
    return false;
  auto body = launch.getConfig().getAs<StringAttr>("body");
  return body && body.getValue().contains("_grad");
}

namespace {
/// Where one device's compute marks go (the op each is inserted before).
struct DeviceMarks {
  Operation *forward = nullptr;
  Operation *backward = nullptr;
  Operation *reduced = nullptr; // the first wait for a reduction
  Operation *update = nullptr;
};

struct InsertTimestampsPass
    : graphc::impl::InsertTimestampsBase<InsertTimestampsPass> {
  using InsertTimestampsBase::InsertTimestampsBase;

  void runOnOperation() override {
    for (auto program : getOperation().getOps<exec::ProgramOp>())
      insertTimestamps(program);
  }

  void insertTimestamps(exec::ProgramOp program) {
    Block &body = program.getBody().front();
    if (!body.getOps<exec::TimestampOp>().empty())
      return;
    int64_t replicas = program.getReplicas();
    bool train = program.getKind() == exec::ProgramKind::train;

    SmallVector<DeviceMarks> marks(replicas);
    exec::AllReduceOp firstReduce, lastReduce;
    for (Operation &op : body) {
      if (auto reduce = dyn_cast<exec::AllReduceOp>(op)) {
        if (!firstReduce)
          firstReduce = reduce;
        lastReduce = reduce;
        continue;
      }
      if (auto wait = dyn_cast<exec::WaitOp>(op)) {
        auto record = wait.getEvent().getDefiningOp<exec::RecordOp>();
        int64_t device = wait.getStream().getDevice();
        if (record && record.getStream().getKind() == exec::StreamKind::comm &&
            wait.getStream().getKind() == exec::StreamKind::compute &&
            device >= 0 && device < replicas && marks[device].backward &&
            !marks[device].reduced)
          marks[device].reduced = wait;
        continue;
      }
      auto launch = dyn_cast<exec::LaunchOp>(op);
      if (!launch || launch.getStream().getKind() != exec::StreamKind::compute)
        continue;
      int64_t device = launch.getStream().getDevice();
      if (device < 0 || device >= replicas)
        continue; // the verifier reports it
      DeviceMarks &m = marks[device];
      if (!m.forward)
        m.forward = launch;
      if (!m.backward && isGradientLaunch(launch))
        m.backward = launch;
      if (!m.update && launch.getKernel() == "optimizer_update")
        m.update = launch;
    }

    MLIRContext *ctx = program.getContext();
    auto compute = [&](int64_t r) {
      return exec::StreamAttr::get(ctx, exec::StreamKind::compute, r);
    };
    auto comm = [&](int64_t r) {
      return exec::StreamAttr::get(ctx, exec::StreamKind::comm, r);
    };
    Location loc = program.getLoc();
    OpBuilder builder(ctx);
    // Inserts before `before`, or at the end of the program when null.
    auto mark = [&](StringRef name, exec::StreamAttr stream,
                    Operation *before) {
      if (before)
        builder.setInsertionPoint(before);
      else
        builder.setInsertionPointToEnd(&body);
      exec::TimestampOp::create(builder, loc, name, stream);
    };

    Operation *first = body.empty() ? nullptr : &body.front();
    for (int64_t r = 0; r < replicas; ++r)
      mark("step_begin", compute(r), first);
    if (firstReduce && replicas > 1) {
      for (int64_t r = 0; r < replicas; ++r)
        mark("allreduce_begin", comm(r), firstReduce);
      Operation *afterLast = lastReduce->getNextNode();
      for (int64_t r = 0; r < replicas; ++r)
        mark("allreduce_end", comm(r), afterLast);
    }
    for (int64_t r = 0; r < replicas; ++r) {
      DeviceMarks &m = marks[r];
      mark("forward_begin", compute(r), m.forward);
      if (!train)
        continue;
      // A missing phase starts where the next one does.
      Operation *update = m.update;
      Operation *reduced = m.reduced ? m.reduced : update;
      Operation *backward = m.backward ? m.backward : reduced;
      mark("backward_begin", compute(r), backward);
      mark("backward_end", compute(r), reduced);
      mark("update_begin", compute(r), update);
    }
    for (int64_t r = 0; r < replicas; ++r)
      mark("step_end", compute(r), nullptr);
  }
};
} // namespace
