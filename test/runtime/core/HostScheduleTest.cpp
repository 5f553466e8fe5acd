//===- HostScheduleTest.cpp - the order a host device's thread runs ops ---===//

#include "runtime/core/HostSchedule.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace graph::runtime;

namespace {

/// Builds a program op by op, in program order, as the plan lists them.
struct ProgramBuilder {
  std::vector<PreparedOp> ops;
  std::vector<std::string> names; // for the test's messages
  int events = 0;

  void launch(int device, const std::string &name) {
    PreparedOp op;
    op.kind = graph::plan::OpKind::launch;
    op.device = device;
    add(op, name);
  }
  int record(int device, graph::plan::StreamKind stream,
             const std::string &name) {
    PreparedOp op;
    op.kind = graph::plan::OpKind::record;
    op.device = device;
    op.stream = stream;
    op.event = events++;
    add(op, name);
    return op.event;
  }
  void wait(int event, int device, graph::plan::StreamKind stream,
            const std::string &name) {
    PreparedOp op;
    op.kind = graph::plan::OpKind::wait;
    op.device = device;
    op.stream = stream;
    op.event = event;
    add(op, name);
  }
  void allReduce(const std::string &name) {
    PreparedOp op;
    op.kind = graph::plan::OpKind::all_reduce;
    op.device = -1;
    op.stream = graph::plan::StreamKind::comm;
    add(op, name);
  }
  void add(PreparedOp op, const std::string &name) {
    op.index = ops.size();
    ops.push_back(op);
    names.push_back(name);
  }
  std::vector<std::string> order(int device) const {
    std::vector<std::vector<const PreparedOp *>> lists =
        scheduleHostOps(ops, 2, events);
    std::vector<std::string> out;
    for (const PreparedOp *op : lists[device])
      out.push_back(names[op->index]);
    return out;
  }
};

constexpr auto compute = graph::plan::StreamKind::compute;
constexpr auto comm = graph::plan::StreamKind::comm;

/// Two replicas, two buckets, as graph-lower-to-exec lowers them: each
/// replica's backward in turn, compute marking each bucket filled at its
/// pack, each comm stream waiting for its replica's mark right before the
/// all-reduce, and compute waiting for the reductions before the update.
ProgramBuilder twoBuckets() {
  ProgramBuilder p;
  int filled[2][2];
  for (int d = 0; d < 2; ++d) {
    std::string r = std::to_string(d);
    p.launch(d, "grad_b0." + r);
    filled[0][d] = p.record(d, compute, "filled_b0." + r);
    p.launch(d, "grad_b1." + r);
    filled[1][d] = p.record(d, compute, "filled_b1." + r);
  }
  int reduced[2][2];
  for (int b = 0; b < 2; ++b) {
    std::string k = std::to_string(b);
    for (int d = 0; d < 2; ++d)
      p.wait(filled[b][d], d, comm,
             "comm_wait_b" + k + "." + std::to_string(d));
    p.allReduce("all_reduce_b" + k);
    for (int d = 0; d < 2; ++d)
      reduced[b][d] =
          p.record(d, comm, "reduced_b" + k + "." + std::to_string(d));
  }
  for (int d = 0; d < 2; ++d) {
    std::string r = std::to_string(d);
    p.wait(reduced[0][d], d, compute, "wait_b0." + r);
    p.wait(reduced[1][d], d, compute, "wait_b1." + r);
    p.launch(d, "update." + r);
  }
  return p;
}

TEST(HostSchedule, EachBucketIsReducedAsSoonAsItsReplicaFilledIt) {
  ProgramBuilder p = twoBuckets();
  // Replica 0 reduces bucket 0 before its backward goes on into bucket 1:
  // in program order it would reach the all-reduce only after its whole
  // backward, holding replica 1 there.
  std::vector<std::string> expected0 = {
      "grad_b0.0",     "filled_b0.0",  "comm_wait_b0.0", "all_reduce_b0",
      "reduced_b0.0",  "grad_b1.0",    "filled_b1.0",    "comm_wait_b1.0",
      "all_reduce_b1", "reduced_b1.0", "wait_b0.0",      "wait_b1.0",
      "update.0"};
  EXPECT_EQ(p.order(0), expected0);
  std::vector<std::string> expected1 = {
      "grad_b0.1",     "filled_b0.1",  "comm_wait_b0.1", "all_reduce_b0",
      "reduced_b0.1",  "grad_b1.1",    "filled_b1.1",    "comm_wait_b1.1",
      "all_reduce_b1", "reduced_b1.1", "wait_b0.1",      "wait_b1.1",
      "update.1"};
  EXPECT_EQ(p.order(1), expected1);
}

TEST(HostSchedule, EveryDeviceReducesTheBucketsInTheSameOrder) {
  ProgramBuilder p = twoBuckets();
  for (int d = 0; d < 2; ++d) {
    std::vector<std::string> reductions;
    for (const std::string &name : p.order(d))
      if (name.rfind("all_reduce", 0) == 0)
        reductions.push_back(name);
    EXPECT_EQ(reductions,
              (std::vector<std::string>{"all_reduce_b0", "all_reduce_b1"}))
        << "device " << d;
  }
}

TEST(HostSchedule, AWaitForAnotherDevicesEventKeepsItsPlace) {
  ProgramBuilder p;
  int other = p.record(1, compute, "done.1");
  p.launch(0, "a.0");
  p.launch(0, "b.0");
  p.wait(other, 0, comm, "comm_waits_for_1");
  p.allReduce("all_reduce");
  p.launch(0, "c.0");
  // Device 0's comm wait is on device 1's event: it runs where program
  // order puts it, after b.0, not right at the start.
  EXPECT_EQ(p.order(0),
            (std::vector<std::string>{"a.0", "b.0", "comm_waits_for_1",
                                      "all_reduce", "c.0"}));
}

TEST(HostSchedule, ComputeWaitingForAReductionRunsTheCommSideFirst) {
  ProgramBuilder p;
  // A comm wait on an event recorded later in program order than the
  // compute wait would deadlock; the compute wait must pull the reduction
  // ahead of itself.
  int filled = p.record(0, compute, "filled");
  p.wait(filled, 0, comm, "comm_wait");
  p.allReduce("all_reduce");
  int reduced = p.record(0, comm, "reduced");
  p.wait(reduced, 0, compute, "compute_wait");
  p.launch(0, "update");
  EXPECT_EQ(p.order(0),
            (std::vector<std::string>{"filled", "comm_wait", "all_reduce",
                                      "reduced", "compute_wait", "update"}));
}

} // namespace
