//===- StepScheduleTest.cpp - a GPU step's launches, checked on the CPU ---===//
//
// The CUDA runner issues a step through cuda::scheduleOps and
// scheduleEagerEnd (runtime/backends/cuda/StepSchedule.h). Here a launcher
// that records instead of calling CUDA walks real prepared programs (the
// tiny plan, and the seed CNN when graph-import and graphc are built) for
// 1 and 2 replicas, and the recorded sequence is checked against the plan
// with CUDA's stream semantics:
//   - every op of the program appears once, in program order, on its own
//     device and stream (an all-reduce once per replica, 0 first);
//   - every event wait follows a record of that event in the same step;
//   - every all-reduce happens after each op that writes its bucket (the
//     gradients' pack) and before each later op that reads or writes it,
//     through stream order and record/wait edges only;
//   - each replica's completion comes after all its streams' work.
// Broken schedules (a wait removed, a record after its wait) must fail the
// same checks, so the checks have teeth.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/StepSchedule.h"
#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/core/Executor.h"
#include "runtime/plan/PlanLoader.h"
#include "test/runtime/SeedPlan.h"
#include "test/runtime/TinyPlan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

using namespace graph::runtime;
namespace plan = graph::plan;

namespace {

struct Launch {
  enum Kind {
    kernel,
    allReduce,
    copy,
    record,
    wait,
    timestamp,
    output,
    join,
    done
  };
  Kind kind = kernel;
  size_t op = 0; // index in PreparedProgram::ops (not for join/done)
  int device = 0;
  plan::StreamKind stream = plan::StreamKind::compute;
  int event = -1;
  plan::StreamKind joined = plan::StreamKind::compute; // join: the stream
};

/// Records what the CUDA runner would issue.
class RecordingLauncher final : public cuda::StepLauncher {
public:
  std::vector<Launch> launches;

  Status kernel(size_t i, const PreparedOp &op) override {
    return add(Launch::kernel, i, op);
  }
  Status allReduce(size_t i, const PreparedOp &op, int replica) override {
    Launch l;
    l.kind = Launch::allReduce;
    l.op = i;
    l.device = replica; // NCCL enqueues replica r's part on r's comm stream
    l.stream = op.stream;
    launches.push_back(l);
    return Status::ok();
  }
  Status copy(size_t i, const PreparedOp &op) override {
    return add(Launch::copy, i, op);
  }
  Status record(size_t i, const PreparedOp &op) override {
    return add(Launch::record, i, op);
  }
  Status wait(size_t i, const PreparedOp &op) override {
    return add(Launch::wait, i, op);
  }
  Status timestamp(size_t i, const PreparedOp &op) override {
    return add(Launch::timestamp, i, op);
  }
  Status output(size_t i, const PreparedOp &op) override {
    return add(Launch::output, i, op);
  }
  Status join(int replica, plan::StreamKind stream) override {
    Launch l;
    l.kind = Launch::join;
    l.device = replica;
    l.stream = plan::StreamKind::compute; // compute waits for `stream`
    l.joined = stream;
    launches.push_back(l);
    return Status::ok();
  }
  Status done(int replica) override {
    Launch l;
    l.kind = Launch::done;
    l.device = replica;
    launches.push_back(l);
    return Status::ok();
  }

private:
  Status add(Launch::Kind kind, size_t i, const PreparedOp &op) {
    Launch l;
    l.kind = kind;
    l.op = i;
    l.device = op.device;
    l.stream = op.stream;
    l.event = op.event;
    launches.push_back(l);
    return Status::ok();
  }
};

/// Happens-before over a recorded sequence, with CUDA's semantics: work on
/// one (device, stream) runs in issue order; a wait makes its stream wait
/// for the latest record of the event issued before it; a join makes
/// compute wait for everything issued on the joined stream before it.
class HappensBefore {
public:
  explicit HappensBefore(const std::vector<Launch> &launches)
      : preds_(launches.size()) {
    std::map<std::pair<int, plan::StreamKind>, int> last; // queue -> launch
    std::map<int, int> lastRecord;                        // event -> launch
    for (size_t k = 0; k < launches.size(); ++k) {
      const Launch &l = launches[k];
      auto queue = std::make_pair(l.device, l.stream);
      if (auto it = last.find(queue); it != last.end())
        preds_[k].push_back(it->second);
      if (l.kind == Launch::wait)
        if (auto it = lastRecord.find(l.event); it != lastRecord.end())
          preds_[k].push_back(it->second);
      if (l.kind == Launch::join)
        if (auto it = last.find({l.device, l.joined}); it != last.end())
          preds_[k].push_back(it->second);
      if (l.kind == Launch::record)
        lastRecord[l.event] = static_cast<int>(k);
      last[queue] = static_cast<int>(k);
    }
  }
  /// Whether launch `a` completes before launch `b` starts.
  bool operator()(size_t a, size_t b) const {
    if (a >= b)
      return false;
    std::vector<char> seen(preds_.size(), 0);
    std::vector<int> stack = {static_cast<int>(b)};
    while (!stack.empty()) {
      int k = stack.back();
      stack.pop_back();
      for (int p : preds_[k]) {
        if (p == static_cast<int>(a))
          return true;
        if (!seen[p]) {
          seen[p] = 1;
          stack.push_back(p);
        }
      }
    }
    return false;
  }

private:
  std::vector<std::vector<int>> preds_;
};

bool overlaps(const TensorRef &t, const float *data, int64_t count) {
  if (!t.data || !data)
    return false;
  auto *begin = static_cast<const std::byte *>(t.data);
  auto *end = begin + t.elements() * static_cast<int64_t>(dtypeBytes(t.dtype));
  auto *b = reinterpret_cast<const std::byte *>(data);
  auto *e = b + count * static_cast<int64_t>(sizeof(float));
  return begin < e && b < end;
}

bool touches(const std::vector<TensorRef> &refs, const float *data,
             int64_t count) {
  return std::any_of(refs.begin(), refs.end(), [&](const TensorRef &t) {
    return overlaps(t, data, count);
  });
}

std::string describe(const PreparedProgram &p, const Launch &l) {
  static const char *kinds[] = {"kernel", "all_reduce", "copy",
                                "record", "wait",       "timestamp",
                                "output", "join",       "done"};
  std::string s = kinds[l.kind];
  if (l.kind != Launch::join && l.kind != Launch::done) {
    const PreparedOp &op = p.ops[l.op];
    s += " op " + std::to_string(l.op);
    if (!op.kernelName.empty())
      s += " '" + op.kernelName + "'";
    if (l.event >= 0)
      s += " event " + std::to_string(l.event);
  }
  return s + " on device " + std::to_string(l.device) + " " +
         plan::EnumNameStreamKind(l.stream);
}

/// How many bucket writers and later users checkSchedule related to an
/// all-reduce part (so a test knows the buckets were found at all).
struct BucketUses {
  int writers = 0, later = 0;
};

/// Every way `launches` fails to be the plan's step (empty: none).
std::vector<std::string> checkSchedule(const PreparedProgram &p,
                                       const std::vector<Launch> &launches,
                                       BucketUses *uses = nullptr) {
  BucketUses ignored;
  BucketUses &u = uses ? *uses : ignored;
  std::vector<std::string> problems;
  // Once, in program order, on the op's device and stream; then the end.
  size_t k = 0;
  std::map<std::pair<size_t, int>, size_t> position; // (op, replica) -> k
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const PreparedOp &op = p.ops[i];
    int parts = op.kind == plan::OpKind::all_reduce ? p.replicas : 1;
    for (int r = 0; r < parts; ++r, ++k) {
      if (k >= launches.size() || launches[k].op != i ||
          launches[k].kind == Launch::join ||
          launches[k].kind == Launch::done) {
        problems.push_back("op " + std::to_string(i) +
                           (parts > 1 ? " part " + std::to_string(r) : "") +
                           " is not launch " + std::to_string(k));
        return problems;
      }
      const Launch &l = launches[k];
      int device = op.kind == plan::OpKind::all_reduce ? r : op.device;
      if (l.device != device || l.stream != op.stream)
        problems.push_back(describe(p, l) + ": the plan puts it on device " +
                           std::to_string(device) + " " +
                           plan::EnumNameStreamKind(op.stream));
      position[{i, op.kind == plan::OpKind::all_reduce ? r : 0}] = k;
    }
  }
  const size_t opsEnd = k;
  for (int r = 0; r < p.replicas; ++r) {
    for (plan::StreamKind s : {plan::StreamKind::comm, plan::StreamKind::copy})
      if (k >= launches.size() || launches[k].kind != Launch::join ||
          launches[k].device != r || launches[k].joined != s)
        problems.push_back("launch " + std::to_string(k) + " is not replica " +
                           std::to_string(r) + "'s join of " +
                           plan::EnumNameStreamKind(s));
      else
        ++k;
    if (k >= launches.size() || launches[k].kind != Launch::done ||
        launches[k].device != r)
      problems.push_back("launch " + std::to_string(k) + " is not replica " +
                         std::to_string(r) + "'s completion");
    else
      ++k;
  }
  if (k != launches.size())
    problems.push_back(std::to_string(launches.size() - k) +
                       " launches after the step's end");
  if (!problems.empty())
    return problems;

  // Every wait follows a record of its event in this step.
  std::set<int> recorded;
  for (size_t j = 0; j < opsEnd; ++j) {
    const Launch &l = launches[j];
    if (l.kind == Launch::record)
      recorded.insert(l.event);
    if (l.kind == Launch::wait && !recorded.count(l.event))
      problems.push_back(describe(p, l) +
                         " waits for an event not yet recorded in the step");
  }

  // All-reduces after their bucket's writers, before its later users.
  HappensBefore before(launches);
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const PreparedOp &ar = p.ops[i];
    if (ar.kind != plan::OpKind::all_reduce)
      continue;
    for (int r = 0; r < p.replicas; ++r) {
      const float *bucket = ar.reduceData[r];
      size_t at = position[{i, r}];
      for (size_t j = 0; j < p.ops.size(); ++j) {
        const PreparedOp &op = p.ops[j];
        if (j == i || op.device != r ||
            (op.kind != plan::OpKind::launch && op.kind != plan::OpKind::copy &&
             op.kind != plan::OpKind::output))
          continue;
        size_t other = position[{j, 0}];
        bool writes = touches(op.outs, bucket, ar.reduceCount);
        bool reads = touches(op.ins, bucket, ar.reduceCount);
        u.writers += j < i && writes;
        u.later += j > i && (writes || reads);
        if (j < i && writes && !before(other, at))
          problems.push_back(describe(p, launches[at]) + " may start before " +
                             describe(p, launches[other]) +
                             ", which writes its bucket");
        if (j > i && (writes || reads) && !before(at, other))
          problems.push_back(describe(p, launches[other]) + " may run before " +
                             describe(p, launches[at]) +
                             " is done with the bucket it " +
                             (writes ? "writes" : "reads"));
      }
    }
  }
  // Completion after every launch of the replica.
  for (size_t d = opsEnd; d < launches.size(); ++d) {
    if (launches[d].kind != Launch::done)
      continue;
    for (size_t j = 0; j < opsEnd; ++j)
      if (launches[j].device == launches[d].device && !before(j, d))
        problems.push_back(describe(p, launches[j]) +
                           " may still run after its replica's completion");
  }
  return problems;
}

std::vector<Launch> record(const PreparedProgram &program) {
  RecordingLauncher launcher;
  Status s = cuda::scheduleOps(program, launcher);
  EXPECT_TRUE(s) << s.message();
  s = cuda::scheduleEagerEnd(program, launcher);
  EXPECT_TRUE(s) << s.message();
  return launcher.launches;
}

/// Kernels that do nothing under the tiny plan's names: the walk never
/// runs them, the executor only instantiates them.
void registerNoOpKernels() {
  auto &r = KernelRegistry::global();
  for (const char *name : {"test.mul", "test.sum", "test.colsum", "test.sgd"})
    if (!r.has(name, Backend::reference))
      r.add(name, Backend::reference,
            [](const KernelContext &, const KernelConfig &,
               const std::vector<TensorRef> &,
               const std::vector<TensorRef> &) { return Status::ok(); });
}

struct Prepared {
  std::vector<uint8_t> bytes;
  LoadedPlan loaded;
  const plan::Plan *plan = nullptr;
  MirroredVariables variables;
  std::unique_ptr<Executor> executor;
};

Status prepareTiny(Prepared &p, int replicas) {
  registerNoOpKernels();
  p.bytes = testplan::buildTinyPlan(replicas, 4, "test.mul", "test.sgd");
  if (Status s =
          verifyPlan(p.bytes.data(), p.bytes.size(), "tiny.plan", p.plan);
      !s)
    return s;
  if (Status s = p.variables.initialize(*p.plan, replicas, 0); !s)
    return s;
  ExecutorOptions o;
  o.backend = Backend::reference;
  return Executor::create(*p.plan, *p.plan->programs()->Get(0), p.variables, o,
                          p.executor);
}

/// The program's position of its first op of `kind` on `device` (and, with
/// `stream`, on that stream) after op `from`; -1 when none.
int findOp(const PreparedProgram &p, plan::OpKind kind, size_t from = 0,
           std::optional<plan::StreamKind> stream = std::nullopt) {
  for (size_t i = from; i < p.ops.size(); ++i)
    if (p.ops[i].kind == kind && (!stream || p.ops[i].stream == *stream))
      return static_cast<int>(i);
  return -1;
}

std::string joined(const std::vector<std::string> &problems) {
  std::string s;
  for (const std::string &p : problems)
    s += "\n  " + p;
  return s;
}

} // namespace

TEST(StepSchedule, TheTinyPlansLaunchesFollowThePlan) {
  for (int replicas : {1, 2}) {
    Prepared p;
    ASSERT_TRUE(prepareTiny(p, replicas)) << replicas;
    const PreparedProgram &program = p.executor->prepared();
    std::vector<Launch> launches = record(program);
    // The ops plus one extra part per all-reduce per further replica, then
    // two joins and a completion per replica.
    size_t allReduces = std::count_if(
        program.ops.begin(), program.ops.end(), [](const PreparedOp &op) {
          return op.kind == plan::OpKind::all_reduce;
        });
    EXPECT_EQ(allReduces, replicas > 1 ? 1u : 0u);
    EXPECT_EQ(launches.size(), program.ops.size() +
                                   allReduces * (replicas - 1) +
                                   3 * static_cast<size_t>(replicas));
    BucketUses uses;
    std::vector<std::string> problems = checkSchedule(program, launches, &uses);
    EXPECT_TRUE(problems.empty())
        << replicas << " replica(s):" << joined(problems);
    if (replicas > 1) {
      EXPECT_EQ(uses.writers, replicas); // test.colsum writes g
      EXPECT_EQ(uses.later, replicas);   // test.sgd reads it
    }
  }
}

TEST(StepSchedule, AMissingWaitBeforeTheAllReduceIsCaught) {
  Prepared p;
  ASSERT_TRUE(prepareTiny(p, 2));
  PreparedProgram broken = p.executor->prepared();
  // The comm stream's wait for the gradients, just before the all-reduce.
  int ar = findOp(broken, plan::OpKind::all_reduce);
  ASSERT_GE(ar, 0);
  int wait = -1;
  for (int i = ar - 1; i >= 0 && wait < 0; --i)
    if (broken.ops[i].kind == plan::OpKind::wait &&
        broken.ops[i].stream == plan::StreamKind::comm)
      wait = i;
  ASSERT_GE(wait, 0);
  broken.ops.erase(broken.ops.begin() + wait);
  std::vector<std::string> problems = checkSchedule(broken, record(broken));
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(joined(problems).find("which writes its bucket"), std::string::npos)
      << joined(problems);
}

TEST(StepSchedule, AWaitBeforeItsRecordIsCaught) {
  Prepared p;
  ASSERT_TRUE(prepareTiny(p, 2));
  PreparedProgram broken = p.executor->prepared();
  int rec = findOp(broken, plan::OpKind::record);
  ASSERT_GE(rec, 0);
  int wait = -1;
  for (size_t i = rec + 1; i < broken.ops.size() && wait < 0; ++i)
    if (broken.ops[i].kind == plan::OpKind::wait &&
        broken.ops[i].event == broken.ops[rec].event)
      wait = static_cast<int>(i);
  ASSERT_GE(wait, 0);
  // Move the record after its wait.
  PreparedOp moved = broken.ops[rec];
  broken.ops.erase(broken.ops.begin() + rec);
  broken.ops.insert(broken.ops.begin() + wait, moved);
  std::vector<std::string> problems = checkSchedule(broken, record(broken));
  EXPECT_NE(joined(problems).find("waits for an event not yet recorded"),
            std::string::npos)
      << joined(problems);
}

TEST(StepSchedule, TheUpdateAfterTheAllReduceWithoutItsWaitIsCaught) {
  Prepared p;
  ASSERT_TRUE(prepareTiny(p, 2));
  PreparedProgram broken = p.executor->prepared();
  // The compute stream's wait for the reduced gradients, after the
  // all-reduce: without it the update may read them mid-reduction.
  int ar = findOp(broken, plan::OpKind::all_reduce);
  int wait =
      findOp(broken, plan::OpKind::wait, ar + 1, plan::StreamKind::compute);
  ASSERT_GE(wait, 0);
  broken.ops.erase(broken.ops.begin() + wait);
  std::vector<std::string> problems = checkSchedule(broken, record(broken));
  EXPECT_NE(joined(problems).find("is done with the bucket it reads"),
            std::string::npos)
      << joined(problems);
}

TEST(StepSchedule, TheSeedCnnsLaunchesFollowThePlan) {
  std::filesystem::path plan;
  std::string why;
  switch (testplan::seedPlanPath("step-schedule-test-seed", plan, why)) {
  case testplan::SeedPlan::ready:
    break;
  case testplan::SeedPlan::noTools:
    GTEST_SKIP() << why;
  case testplan::SeedPlan::failed:
    FAIL() << why;
  }
  reference::registerReferenceKernels();
  LoadedPlan loaded;
  ASSERT_TRUE(loadPlan(plan.string(), loaded));
  for (int replicas : {1, 2}) {
    const plan::Program *program = nullptr;
    ASSERT_TRUE(findProgram(*loaded.plan, plan::ProgramKind::train, replicas,
                            "seed.plan", program));
    MirroredVariables variables;
    ASSERT_TRUE(variables.initialize(*loaded.plan, replicas, 0));
    ExecutorOptions o;
    o.backend = Backend::reference;
    std::unique_ptr<Executor> executor;
    Status s = Executor::create(*loaded.plan, *program, variables, o, executor);
    ASSERT_TRUE(s) << s.message();
    const PreparedProgram &prepared = executor->prepared();
    std::vector<Launch> launches = record(prepared);
    if (replicas > 1) {
      EXPECT_GT(std::count_if(launches.begin(), launches.end(),
                              [](const Launch &l) {
                                return l.kind == Launch::allReduce;
                              }),
                0);
    }
    BucketUses uses;
    std::vector<std::string> problems =
        checkSchedule(prepared, launches, &uses);
    EXPECT_TRUE(problems.empty())
        << replicas << " replica(s):" << joined(problems);
    if (replicas > 1) {
      // Each replica's gradients are packed into the buckets and read back
      // by the optimizer: both sides of every all-reduce were checked.
      EXPECT_GE(uses.writers, replicas);
      EXPECT_GE(uses.later, replicas);
    }
  }
}
