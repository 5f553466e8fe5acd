//===- DenormalsTest.cpp - the cpu backend flushes subnormals to zero -----===//
//
// The cpu backend's step runs with FTZ and DAZ set on every thread that
// computes (ExecutorOptions::flushDenormals, runtime/core/DenormalMode.h):
// the device threads, one per replica, and each one's OpenMP team, whose
// threads libgomp keeps from region to region. A subnormal times 1 is then
// 0. `graphrun --keep-denormals` (flushDenormals = false) keeps IEEE
// arithmetic, and the reference backend always has it, whatever the
// calling thread's mode.
//
// A probe kernel in the tiny plan (test/runtime/TinyPlan.h) reports the
// mode of its device thread and of every thread of its OpenMP team; the real
// `multiply` kernel on the OpenMP path shows the arithmetic.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/DenormalMode.h"
#include "runtime/core/Executor.h"
#include "runtime/plan/PlanLoader.h"
#include "test/runtime/TinyPlan.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <mutex>
#include <vector>

using namespace graph::runtime;
namespace plan = graph::plan;

namespace {

/// A subnormal float (the smallest normal one is about 1.18e-38).
constexpr float kSubnormal = 1e-40f;

/// kSubnormal * 1, computed at run time on the calling thread: kSubnormal
/// where IEEE arithmetic holds, 0 where it flushes.
float subnormalTimesOne() {
  volatile float x = kSubnormal, one = 1.0f;
  return x * one;
}

/// A float's bits. The checks compare bits, not floats: a comparison on a
/// thread with DAZ set reads a subnormal as 0, so `v == 0.0f` would hold
/// for the values under test.
uint32_t bitsOf(float v) { return std::bit_cast<uint32_t>(v); }

/// What one thread of a probe launch saw.
struct Seen {
  int replica = 0;
  int thread = 0;   // in its OpenMP team; 0 is the device thread
  int teamSize = 1; // the team's
  bool flushes = false;
  float product = 0; // subnormalTimesOne() there
};

std::mutex seenMutex;
std::vector<Seen> seen;

void record(const KernelContext &ctx, int thread, int teamSize) {
  Seen s{ctx.replica, thread, teamSize, flushesDenormals(),
         subnormalTimesOne()};
  std::lock_guard<std::mutex> lock(seenMutex);
  seen.push_back(s);
}

/// out[r, j] = x[r, j] * w[j]
void multiplyRows(const std::vector<TensorRef> &ins,
                  const std::vector<TensorRef> &outs) {
  int64_t cols = ins[1].elements();
  for (int64_t i = 0; i < outs[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] * ins[1].f32()[i % cols];
}

// The cpu probe starts as every cpu kernel does (useReplicaThreads), then
// reports from every thread of a parallel region of its team.
Status cpuProbe(const KernelContext &ctx, const KernelConfig &,
                const std::vector<TensorRef> &ins,
                const std::vector<TensorRef> &outs) {
  cpu::useReplicaThreads(ctx);
#pragma omp parallel
  record(ctx, omp_get_thread_num(), omp_get_num_threads());
  multiplyRows(ins, outs);
  return Status::ok();
}
// The reference backend runs no OpenMP: its device thread only.
Status referenceProbe(const KernelContext &ctx, const KernelConfig &,
                      const std::vector<TensorRef> &ins,
                      const std::vector<TensorRef> &outs) {
  record(ctx, 0, 1);
  multiplyRows(ins, outs);
  return Status::ok();
}

void registerProbeKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    cpu::registerCpuKernels();
    KernelRegistry &r = KernelRegistry::global();
    r.add("test.denormal_probe", Backend::cpu, cpuProbe);
    r.add("test.denormal_probe", Backend::reference, referenceProbe);
    for (Backend b : {Backend::cpu, Backend::reference}) {
      r.add("test.sum", b, testplan::sumKernel);
      r.add("test.colsum", b, testplan::colSumKernel);
      r.add("test.sgd", b, testplan::sgdKernel);
    }
  });
}

/// `rows` rows of subnormal images.
data::Batch subnormalBatch(int64_t rows) {
  data::Batch batch;
  batch.size = rows;
  batch.shape = {1, 1, 2};
  batch.numClasses = 2;
  batch.labelFormat = data::LabelFormat::OneHot;
  for (int64_t r = 0; r < rows; ++r) {
    batch.images.push_back(kSubnormal);
    batch.images.push_back(kSubnormal);
    batch.oneHotLabels.push_back(1);
    batch.oneHotLabels.push_back(0);
    batch.sourceIndices.push_back(r);
  }
  return batch;
}

/// One step of the tiny plan on `backend` with `replicas` replicas; what
/// the probes saw and the loss (the sum of the batch times ones).
struct Step {
  std::vector<Seen> seen;
  double loss = 0;
};
Status runStep(Backend backend, int replicas, bool flushDenormals, Step &out) {
  registerProbeKernels();
  std::vector<uint8_t> bytes =
      testplan::buildTinyPlan(replicas, 4, "test.denormal_probe", "test.sgd");
  const plan::Plan *p = nullptr;
  if (Status s = verifyPlan(bytes.data(), bytes.size(), "tiny.plan", p); !s)
    return s;
  MirroredVariables variables;
  if (Status s = variables.initialize(*p, replicas, 0); !s)
    return s;
  ExecutorOptions options;
  options.backend = backend;
  options.flushDenormals = flushDenormals;
  std::unique_ptr<Executor> executor;
  if (Status s = Executor::create(*p, *p->programs()->Get(0), variables,
                                  options, executor);
      !s)
    return s;
  {
    std::lock_guard<std::mutex> lock(seenMutex);
    seen.clear();
  }
  data::Batch batch = subnormalBatch(4);
  StepResult result;
  if (Status s = executor->run(batch, 1, result); !s)
    return s;
  std::lock_guard<std::mutex> lock(seenMutex);
  out.seen = seen;
  out.loss = result.value("loss");
  return Status::ok();
}

/// Makes the calling thread's OpenMP team (all of the process's threads)
/// exist before a test runs, in the caller's present mode: the executor
/// must set the mode of threads that are already there, not only of new
/// ones (which inherit their creator's).
void warmOpenMpTeam() {
  volatile int sink = 0;
#pragma omp parallel num_threads(cpu::threadsPerReplica(1))
  sink = sink + omp_get_thread_num();
}

class CpuDenormals : public ::testing::TestWithParam<int> {
protected:
  void SetUp() override {
    registerProbeKernels();
    // Tests start from IEEE arithmetic on the test's thread.
    setFlushDenormals(false);
    warmOpenMpTeam();
  }
};

} // namespace

TEST(DenormalMode, ScopeSetsAndRestoresTheCallingThread) {
#ifndef GRAPH_HAVE_MXCSR
  GTEST_SKIP() << "no MXCSR on this architecture: nothing flushes";
#endif
  setFlushDenormals(false);
  EXPECT_EQ(bitsOf(subnormalTimesOne()), bitsOf(kSubnormal));
  {
    ScopedDenormalMode flush(true);
    EXPECT_TRUE(flushesDenormals());
    EXPECT_EQ(bitsOf(subnormalTimesOne()), bitsOf(0.0f));
    {
      ScopedDenormalMode exact(false);
      EXPECT_FALSE(flushesDenormals());
      EXPECT_EQ(bitsOf(subnormalTimesOne()), bitsOf(kSubnormal));
    }
    EXPECT_TRUE(flushesDenormals());
  }
  EXPECT_FALSE(flushesDenormals());
}

TEST_P(CpuDenormals, EveryThreadOfTheStepFlushes) {
#ifndef GRAPH_HAVE_MXCSR
  GTEST_SKIP() << "no MXCSR on this architecture: nothing flushes";
#endif
  const int replicas = GetParam();
  Step step;
  Status s = runStep(Backend::cpu, replicas, true, step);
  ASSERT_TRUE(s) << s.message();
  // Every replica's device thread and every thread of its team reported.
  const int team = cpu::threadsPerReplica(replicas);
  ASSERT_EQ(step.seen.size(), static_cast<size_t>(replicas * team));
  for (const Seen &t : step.seen) {
    EXPECT_EQ(t.teamSize, team);
    EXPECT_TRUE(t.flushes) << "replica " << t.replica << ", team thread "
                           << t.thread;
    EXPECT_EQ(bitsOf(t.product), bitsOf(0.0f))
        << "replica " << t.replica << ", team thread " << t.thread;
  }
  // Subnormal images times ones: flushed to 0 before the loss sums them.
  EXPECT_EQ(step.loss, 0.0);
  // The caller's thread (device 0's) has its own mode back.
  EXPECT_FALSE(flushesDenormals());
}

TEST_P(CpuDenormals, KeepDenormalsKeepsIeeeArithmetic) {
  const int replicas = GetParam();
  // A flushing step first, so that the team's threads were set to flush
  // and must be set back.
  Step flushed, kept;
  ASSERT_TRUE(runStep(Backend::cpu, replicas, true, flushed));
  Status s = runStep(Backend::cpu, replicas, false, kept);
  ASSERT_TRUE(s) << s.message();
  const int team = cpu::threadsPerReplica(replicas);
  ASSERT_EQ(kept.seen.size(), static_cast<size_t>(replicas * team));
  for (const Seen &t : kept.seen) {
    EXPECT_FALSE(t.flushes)
        << "replica " << t.replica << ", team thread " << t.thread;
    EXPECT_EQ(bitsOf(t.product), bitsOf(kSubnormal))
        << "replica " << t.replica << ", team thread " << t.thread;
  }
  // 4 rows x 2 columns of kSubnormal, summed per replica and averaged.
  EXPECT_GT(kept.loss, 0.0);
  EXPECT_NEAR(kept.loss, 8.0 * kSubnormal / replicas, 1e-44);
}

TEST_P(CpuDenormals, ReferenceBackendStaysExact) {
  const int replicas = GetParam();
  // Even from a caller's thread that flushes, which keeps its mode.
  Step step;
  Status s;
  {
    ScopedDenormalMode callerFlushes(true);
    s = runStep(Backend::reference, replicas, true, step);
#ifdef GRAPH_HAVE_MXCSR
    EXPECT_TRUE(flushesDenormals());
#endif
  }
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(step.seen.size(), static_cast<size_t>(replicas));
  for (const Seen &t : step.seen) {
    EXPECT_FALSE(t.flushes) << "replica " << t.replica;
    EXPECT_EQ(bitsOf(t.product), bitsOf(kSubnormal)) << "replica " << t.replica;
  }
  EXPECT_NEAR(step.loss, 8.0 * kSubnormal / replicas, 1e-44);
}

INSTANTIATE_TEST_SUITE_P(Replicas, CpuDenormals, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return "x" + std::to_string(info.param);
                         });

// The real `multiply` kernel on its OpenMP path (more than
// kParallelElements elements): under a flushing device thread every element
// of subnormal x ones is 0, every thread of the team included; under an
// exact one every element keeps its value.
TEST_F(CpuDenormals, MultiplyKernelOnItsTeamFollowsTheDeviceThread) {
#ifndef GRAPH_HAVE_MXCSR
  GTEST_SKIP() << "no MXCSR on this architecture: nothing flushes";
#endif
  const int64_t n = 4 * cpu::vec::kParallelElements + 3;
  std::vector<float> x(n, kSubnormal), ones(n, 1.0f), out(n, -1.0f);
  std::vector<TensorRef> ins{{x.data(), {n}}, {ones.data(), {n}}},
      outs{{out.data(), {n}}};
  KernelContext ctx;
  KernelConfig cfg;
  KernelFn fn;
  Status s = KernelRegistry::global().instantiate("multiply", Backend::cpu, ctx,
                                                  cfg, ins, outs, fn);
  ASSERT_TRUE(s) << s.message();
  for (bool flush : {true, false, true}) {
    ScopedDenormalMode mode(flush);
    std::fill(out.begin(), out.end(), -1.0f);
    s = fn(ctx, cfg, ins, outs);
    ASSERT_TRUE(s) << s.message();
    const uint32_t want = bitsOf(flush ? 0.0f : kSubnormal);
    int64_t wrong = 0;
    for (float v : out)
      wrong += bitsOf(v) != want;
    EXPECT_EQ(wrong, 0) << (flush ? "flushing" : "exact") << ": " << wrong
                        << " of " << n << " elements differ";
  }
}
