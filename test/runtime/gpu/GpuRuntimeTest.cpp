//===- GpuRuntimeTest.cpp - the CUDA device runtime -----------------------===//
//
// Streams, events, arenas, variables in device memory, CUDA graphs, the
// logical-GPU and NCCL all-reduce, and training agreement with the CPU.
// Without a GPU every test but the first skips, saying so; the first checks
// that no GPU means a device count of 0 and a clear error.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cuda/CudaDevice.h"
#include "runtime/backends/cuda/InputGather.h"
#include "runtime/backends/cuda/NcclCollective.h"
#include "runtime/core/Executor.h"
#include "runtime/core/Session.h"
#include "runtime/plan/PlanLoader.h"
#include "test/runtime/SeedPlan.h"
#include "test/runtime/TinyPlan.h"
#include "test/runtime/gpu/TestKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <set>

using namespace graph::runtime;
namespace plan = graph::plan;
namespace gputest = graph::runtime::gputest;

namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    std::string why;                                                           \
    if (cuda::physicalGpuCount(&why) == 0)                                     \
      GTEST_SKIP() << "no CUDA GPU: " << why;                                  \
  } while (0)

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    Status s_ = (expr);                                                        \
    ASSERT_TRUE(s_) << s_.message();                                           \
  } while (0)

#define ASSERT_CUDA(expr) ASSERT_EQ((expr), cudaSuccess) << #expr

/// A verified plan, its variables and one executor.
struct TinyRun {
  std::vector<uint8_t> bytes;
  const plan::Plan *plan = nullptr;
  MirroredVariables variables;
  std::unique_ptr<Executor> executor;
};

Status prepareTiny(TinyRun &run, int replicas, int64_t batch,
                   const ExecutorOptions &options) {
  gputest::registerGpuTestKernels();
  cuda::registerCudaBackend();
  run.bytes = testplan::buildTinyPlan(replicas, batch);
  if (Status s =
          verifyPlan(run.bytes.data(), run.bytes.size(), "tiny.plan", run.plan);
      !s)
    return s;
  if (Status s = run.variables.initialize(*run.plan, replicas, 0); !s)
    return s;
  return Executor::create(*run.plan, *run.plan->programs()->Get(0),
                          run.variables, options, run.executor);
}

ExecutorOptions cudaOptions(bool graph, int physical = 1) {
  ExecutorOptions o;
  o.backend = Backend::cuda;
  o.cudaGraph = graph;
  o.maxPhysicalDevices = physical;
  o.timeout = std::chrono::milliseconds(30000);
  return o;
}

/// Losses of `steps` steps and every replica's final copy of w.
struct Trace {
  std::vector<double> losses;
  std::vector<std::vector<float>> w; // [replica]
};

Status trainTiny(TinyRun &run, int steps, Trace &out) {
  int replicas = run.executor->replicas();
  StepResult result;
  for (int step = 1; step <= steps; ++step) {
    data::Batch batch = testplan::tinyBatch(run.executor->globalBatch(), step);
    if (Status s = run.executor->run(batch, step, result); !s)
      return s;
    out.losses.push_back(result.value("loss"));
  }
  out.w.assign(static_cast<size_t>(replicas), std::vector<float>(2));
  for (int r = 0; r < replicas; ++r)
    if (Status s = run.variables.readCopy(r, 0, out.w[r].data()); !s)
      return s;
  return Status::ok();
}

void expectClose(const Trace &a, const Trace &b, double tolerance) {
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_NEAR(a.losses[i], b.losses[i],
                tolerance * std::max(1.0, std::fabs(b.losses[i])))
        << "step " << i + 1;
  for (size_t r = 0; r < a.w.size(); ++r)
    for (int j = 0; j < 2; ++j)
      EXPECT_NEAR(a.w[r][j], b.w[0][j],
                  tolerance * std::max(1.0f, std::fabs(b.w[0][j])))
          << "replica " << r << ", w[" << j << "]";
}

} // namespace

TEST(GpuRuntime, WithoutGpuTheDeviceCountIsZeroAndCudaFailsClearly) {
  cuda::registerCudaBackend();
  std::string why;
  int count = cuda::physicalGpuCount(&why);
  ASSERT_GE(count, 0);
  EXPECT_EQ(physicalDeviceCount(Backend::cuda), count);
  if (count > 0)
    GTEST_SKIP() << count
                 << " GPU(s) present: the no-GPU path is not "
                    "reachable here";
  EXPECT_FALSE(why.empty());
  TinyRun run;
  Status s = prepareTiny(run, 1, 4, cudaOptions(true));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("no CUDA GPU"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--backend cpu"), std::string::npos)
      << s.message();
  // The variables stay usable in host memory.
  EXPECT_EQ(run.variables.placement(), nullptr);
  float w[2];
  ASSERT_OK(run.variables.read(0, w));
  EXPECT_EQ(w[0], 1.0f);
}

/// In a child process (a death test): a kernel that spins for days ahead of
/// the step on replica 0's compute stream, a 1 s watchdog. The step must
/// fail naming the replica, the hang be declared, and tearing everything
/// down return (no CUDA call waits for the spinning kernel); then exit 3.
void hangTheStepAndTearDown() {
  {
    TinyRun run;
    ExecutorOptions o = cudaOptions(false);
    o.timeout = std::chrono::milliseconds(1000);
    if (Status s = prepareTiny(run, 1, 4, o); !s) {
      std::fprintf(stderr, "prepare: %s\n", s.message().c_str());
      std::_Exit(4);
    }
    auto &set = dynamic_cast<cuda::CudaDeviceSet &>(run.executor->devices());
    float *flag = nullptr;
    if (cudaMalloc(&flag, sizeof(float)) != cudaSuccess ||
        gputest::enqueueDelayedWrite(flag, 1.0f, 1LL << 60,
                                     set.cudaDevice(0).state().compute) !=
            cudaSuccess)
      std::_Exit(5);
    StepResult result;
    Status s = run.executor->run(
        testplan::tinyBatch(run.executor->globalBatch(), 1), 1, result);
    std::fprintf(stderr, "%s\n", s ? "the step finished" : s.message().c_str());
    if (s || !deviceLost())
      std::_Exit(6);
  } // the executor, variables and devices go here
  std::fflush(stderr);
  std::_Exit(3);
}

TEST(GpuRuntimeDeathTest, AHungStepIsNamedAndTeardownDoesNotWaitForIt) {
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(hangTheStepAndTearDown(), testing::ExitedWithCode(3),
              "cuda:0 \\(GPU 0\\) did not finish within 1000 ms");
}

TEST(GpuRuntime, VariablesLiveInDeviceMemory) {
  SKIP_WITHOUT_GPU();
  TinyRun run;
  ASSERT_OK(prepareTiny(run, 2, 8, cudaOptions(true)));
  ASSERT_NE(run.variables.placement(), nullptr);
  cudaPointerAttributes attributes{};
  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, run.variables.data(1, 0)));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  // write() reaches every copy; read() and readCopy() come back from them.
  float in[2] = {3.5f, -2.25f}, out[2] = {0, 0};
  ASSERT_OK(run.variables.write(0, in));
  for (int d = 0; d < 2; ++d) {
    ASSERT_OK(run.variables.readCopy(d, 0, out));
    EXPECT_EQ(out[0], 3.5f);
    EXPECT_EQ(out[1], -2.25f);
  }
}

TEST(GpuRuntime, ArenaAllocatedOnceAndStepsAllocateNothing) {
  SKIP_WITHOUT_GPU();
  TinyRun run;
  ASSERT_OK(prepareTiny(run, 2, 8, cudaOptions(true)));
  const void *arena0 = run.executor->arena(0).data();
  const void *arena1 = run.executor->arena(1).data();
  cudaPointerAttributes attributes{};
  ASSERT_CUDA(cudaPointerGetAttributes(&attributes, arena0));
  EXPECT_EQ(attributes.type, cudaMemoryTypeDevice);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena0) % 256, 0u);
  int64_t before = cuda::cudaAllocations();
  Trace trace;
  // Eager, capture and replays all allocate nothing.
  ASSERT_OK(trainTiny(run, 5, trace));
  EXPECT_EQ(cuda::cudaAllocations(), before);
  EXPECT_EQ(run.executor->arena(0).data(), arena0);
  EXPECT_EQ(run.executor->arena(1).data(), arena1);
}

TEST(GpuRuntime, EventsOrderStreams) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<cuda::CudaDevice> device;
  ASSERT_OK(cuda::CudaDevice::create(0, 0, false, device));
  DeviceMemory memory;
  ASSERT_OK(device->allocate(2 * sizeof(float), memory));
  float *value = static_cast<float *>(memory.data());
  cudaEvent_t event = nullptr;
  ASSERT_CUDA(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  const cuda::CudaDeviceState &s = device->state();
  // The compute stream writes late (about 20 ms of spinning); the comm
  // stream copies it only after waiting for the event, so it must see it.
  ASSERT_CUDA(
      gputest::enqueueDelayedWrite(value, 42.0f, 40'000'000LL, s.compute));
  ASSERT_CUDA(cudaEventRecord(event, s.compute));
  ASSERT_CUDA(cudaStreamWaitEvent(s.comm, event, 0));
  ASSERT_CUDA(gputest::enqueueCopyOne(value + 1, value, s.comm));
  ASSERT_OK(device->synchronize());
  float host[2] = {0, 0};
  ASSERT_OK(device->copyToHost(host, value, sizeof host));
  EXPECT_EQ(host[0], 42.0f);
  EXPECT_EQ(host[1], 42.0f);
  ASSERT_CUDA(cudaEventDestroy(event));
}

namespace {

/// All-reduces `ranks` random buffers of `count` floats with NCCL or the
/// logical kernel and compares with a double-precision host reduction.
void checkAllReduce(const std::vector<int> &ordinals, int64_t count,
                    ReduceOp op) {
  int ranks = static_cast<int>(ordinals.size());
  std::vector<std::unique_ptr<cuda::CudaDevice>> devices(ranks);
  std::vector<DeviceMemory> memory(ranks);
  std::vector<float *> data(ranks);
  std::vector<cuda::CollectiveRank> collectiveRanks;
  std::vector<std::vector<float>> host(ranks, std::vector<float>(count));
  std::mt19937 random(1234);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int r = 0; r < ranks; ++r) {
    ASSERT_OK(cuda::CudaDevice::create(r, ordinals[r], false, devices[r]));
    ASSERT_OK(devices[r]->allocate(count * 4, memory[r]));
    data[r] = static_cast<float *>(memory[r].data());
    for (float &v : host[r])
      v = uniform(random);
    ASSERT_OK(devices[r]->copyFromHost(data[r], host[r].data(), count * 4));
    collectiveRanks.push_back({ordinals[r], devices[r]->state().comm});
  }
  std::unique_ptr<cuda::NcclCollective> collective;
  ASSERT_OK(cuda::NcclCollective::create(collectiveRanks, {ranks, 0, ranks},
                                         nullptr, collective));
  // One call per local replica, as the executor makes them; the last one
  // enqueues the reduction.
  for (int r = 0; r < ranks; ++r)
    ASSERT_OK(collective->allReduce(r, data[r], count, op));
  for (int r = 0; r < ranks; ++r) {
    std::vector<float> got(count, std::nanf(""));
    ASSERT_OK(devices[r]->copyToHost(got.data(), data[r], count * 4));
    for (int64_t i = 0; i < count; ++i) {
      double want = 0;
      for (int k = 0; k < ranks; ++k)
        want += host[k][i];
      if (op == ReduceOp::mean)
        want /= ranks;
      ASSERT_NEAR(got[i], want, 1e-5) << "rank " << r << ", element " << i;
    }
  }
  ASSERT_OK(collective->asyncError());
}

} // namespace

TEST(GpuRuntime, LogicalAllReduceOnOneGpu) {
  SKIP_WITHOUT_GPU();
  checkAllReduce({0, 0, 0}, 100003, ReduceOp::mean);
  checkAllReduce({0, 0}, 4097, ReduceOp::sum);
}

TEST(GpuRuntime, NcclAllReduceAcrossGpus) {
  SKIP_WITHOUT_GPU();
  if (cuda::physicalGpuCount() < 2)
    GTEST_SKIP() << "one GPU: NCCL across GPUs needs two";
  checkAllReduce({0, 1}, 100003, ReduceOp::mean);
  checkAllReduce({0, 1}, 1000, ReduceOp::sum);
  // Two logical GPUs on each: in-GPU sums, NCCL, then the scaled write-back.
  checkAllReduce({0, 1, 0, 1}, 65537, ReduceOp::mean);
}

TEST(GpuRuntime, TinyPlanMatchesTheHost) {
  SKIP_WITHOUT_GPU();
  for (int replicas : {1, 2}) {
    TinyRun host, gpu;
    ExecutorOptions hostOptions;
    ASSERT_OK(prepareTiny(host, replicas, 8, hostOptions));
    ASSERT_OK(prepareTiny(gpu, replicas, 8, cudaOptions(true)));
    Trace want, got;
    ASSERT_OK(trainTiny(host, 6, want));
    ASSERT_OK(trainTiny(gpu, 6, got));
    SCOPED_TRACE("replicas " + std::to_string(replicas));
    expectClose(got, want, 1e-5);
  }
}

TEST(GpuRuntime, GraphReplayMatchesEager) {
  SKIP_WITHOUT_GPU();
  TinyRun eager, graph;
  ASSERT_OK(prepareTiny(eager, 2, 8, cudaOptions(false)));
  ASSERT_OK(prepareTiny(graph, 2, 8, cudaOptions(true)));
  Trace a, b;
  // Step 1 eager, step 2 captured, steps 3-7 replayed: the step scalar must
  // change under the replay (sgd_step scales by it).
  ASSERT_OK(trainTiny(eager, 7, a));
  ASSERT_OK(trainTiny(graph, 7, b));
  ASSERT_EQ(a.losses.size(), b.losses.size());
  for (size_t i = 0; i < a.losses.size(); ++i)
    EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i + 1;
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(a.w[r][j], b.w[r][j]) << "replica " << r;
}

TEST(GpuRuntime, StagingTheNextBatchDuringAStepMatchesRun) {
  SKIP_WITHOUT_GPU();
  // stage(k+1) between launch(k) and wait(k), as Session::train calls it:
  // the copy of batch k+1 into the other staging slot must not disturb
  // step k, under replay and eagerly, on one GPU and on two logical GPUs.
  for (bool graph : {true, false})
    for (int replicas : {1, 2}) {
      SCOPED_TRACE(std::string(graph ? "graph" : "eager") + ", replicas " +
                   std::to_string(replicas));
      TinyRun byRun, staged;
      ASSERT_OK(prepareTiny(byRun, replicas, 8, cudaOptions(graph)));
      ASSERT_OK(prepareTiny(staged, replicas, 8, cudaOptions(graph)));
      Trace want;
      ASSERT_OK(trainTiny(byRun, 7, want));
      StepResult result;
      std::vector<double> losses;
      data::Batch next = testplan::tinyBatch(8, 1);
      ASSERT_OK(staged.executor->stage(next));
      for (int step = 1; step <= 7; ++step) {
        ASSERT_OK(staged.executor->launch(step, result));
        if (step < 7) {
          // Freed before the step ends: the staging holds its own copy.
          data::Batch following = testplan::tinyBatch(8, step + 1);
          ASSERT_OK(staged.executor->stage(following));
        }
        ASSERT_OK(staged.executor->wait());
        losses.push_back(result.value("loss"));
      }
      ASSERT_EQ(losses.size(), want.losses.size());
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_EQ(losses[i], want.losses[i]) << "step " << i + 1;
      for (int r = 0; r < replicas; ++r) {
        std::vector<float> w(2);
        ASSERT_OK(staged.variables.readCopy(r, 0, w.data()));
        EXPECT_EQ(w, want.w[r]) << "replica " << r;
      }
    }
}

/// Runs `steps` steps as Session::train does with two steps in flight:
/// step k+1 is launched, and batch k+2 staged, before step k is waited
/// for. Each step's loss and timestamps.
Status trainAhead(Executor &executor,
                  const std::function<data::Batch(int)> &batchOf, int steps,
                  std::vector<double> &losses,
                  std::vector<std::vector<std::vector<Timestamp>>> &times) {
  StepResult results[2];
  if (Status s = executor.stage(batchOf(1)); !s)
    return s;
  if (Status s = executor.launch(1, results[0]); !s)
    return s;
  for (int step = 1; step <= steps; ++step) {
    if (step < steps) {
      // Freed on return: the staging holds its own copy.
      if (Status s = executor.stage(batchOf(step + 1)); !s)
        return s;
      if (Status s = executor.launch(step + 1, results[step % 2]); !s)
        return s;
    }
    if (Status s = executor.wait(); !s)
      return s;
    const StepResult &r = results[(step - 1) % 2];
    losses.push_back(r.value("loss"));
    times.push_back(r.timestamps);
  }
  return Status::ok();
}

TEST(GpuRuntime, TwoStepsInFlightMatchOneAtATime) {
  SKIP_WITHOUT_GPU();
  // Step k+1 launched before step k is waited for (Session::train on a
  // GPU): each step has its own step scalar, output staging, timestamp and
  // completion events and graph, so the losses, the weights and each
  // step's timestamps are those of one step at a time, under replay (steps
  // 2 and 3 capture the two graphs) and eagerly, on one GPU and on two
  // logical GPUs.
  for (bool graph : {true, false})
    for (int replicas : {1, 2}) {
      SCOPED_TRACE(std::string(graph ? "graph" : "eager") + ", replicas " +
                   std::to_string(replicas));
      TinyRun byRun, ahead;
      ASSERT_OK(prepareTiny(byRun, replicas, 8, cudaOptions(graph)));
      ASSERT_OK(prepareTiny(ahead, replicas, 8, cudaOptions(graph)));
      ASSERT_EQ(ahead.executor->maxStepsInFlight(), 2);
      Trace want;
      ASSERT_OK(trainTiny(byRun, 9, want));
      std::vector<double> losses;
      std::vector<std::vector<std::vector<Timestamp>>> times;
      ASSERT_OK(trainAhead(
          *ahead.executor,
          [](int step) { return testplan::tinyBatch(8, step); }, 9, losses,
          times));
      ASSERT_EQ(losses.size(), want.losses.size());
      for (size_t i = 0; i < losses.size(); ++i)
        EXPECT_EQ(losses[i], want.losses[i]) << "step " << i + 1;
      for (int r = 0; r < replicas; ++r) {
        std::vector<float> w(2);
        ASSERT_OK(ahead.variables.readCopy(r, 0, w.data()));
        EXPECT_EQ(w, want.w[r]) << "replica " << r;
      }
      // Each step's own timestamp events, complete when it is: read while
      // the next step re-records them, they would not be ready and the
      // step would have no timestamps.
      for (size_t k = 0; k < times.size(); ++k)
        for (int r = 0; r < replicas; ++r) {
          const std::vector<Timestamp> &t = times[k][r];
          ASSERT_FALSE(t.empty()) << "step " << k + 1;
          EXPECT_EQ(t.front().name, "step_begin");
          EXPECT_EQ(t.back().name, "step_end");
          EXPECT_LE(t.front().at, t.back().at) << "step " << k + 1;
        }
    }
}

/// The tiny plan's batches, step after step (testplan::tinyBatch).
class TinyBatches : public data::BatchIterator {
public:
  explicit TinyBatches(int64_t rows) : rows_(rows) {}
  Status next(data::Batch &out, bool &end) override {
    end = false;
    out = testplan::tinyBatch(rows_, ++step_);
    return Status::ok();
  }

private:
  int64_t rows_;
  int step_ = 0;
};

/// Reads w as a checkpoint would after steps 3 and 6 (saying so), and
/// after step 5 as the NaN guard does on a trip (settling first).
class ReadingHook : public Hook {
public:
  explicit ReadingHook(const Session &session) : session_(session) {}
  bool needsStateAfter(int64_t step) const override {
    return step == 3 || step == 6;
  }
  Status afterStep(const StepContext &ctx) override {
    losses.push_back(ctx.loss);
    if (ctx.step == 5)
      if (Status s = ctx.settle(); !s)
        return s;
    if (ctx.step == 3 || ctx.step == 5 || ctx.step == 6)
      return session_.variables().read(0, w[ctx.step].data());
    return Status::ok();
  }
  std::vector<double> losses;
  std::map<int64_t, std::array<float, 2>> w;

private:
  const Session &session_;
};

TEST(GpuRuntime, SessionLaunchingAheadMatchesOneAtATime) {
  SKIP_WITHOUT_GPU();
  // Session::train on the GPU with step k+1 launched before step k's
  // hooks: the same losses and weights as one step at a time; a hook that
  // needs the state after step 3 or 6 reads it then (the variables are
  // read on the copy stream, which the step launched ahead would race);
  // one that settles after step 5 reads the state after step 6.
  gputest::registerGpuTestKernels();
  cuda::registerCudaBackend();
  for (bool graph : {true, false}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    LoadedPlan plans[2];
    std::unique_ptr<Session> sessions[2];
    std::unique_ptr<ReadingHook> hooks[2];
    for (int i = 0; i < 2; ++i) {
      plans[i].path = "tiny.plan";
      plans[i].bytes = testplan::buildTinyPlan(2, 8);
      ASSERT_OK(verifyPlan(plans[i].bytes.data(), plans[i].bytes.size(),
                           plans[i].path, plans[i].plan));
      SessionOptions o;
      o.replicas = 2;
      o.backend = Backend::cuda;
      o.cudaGraph = graph;
      o.maxPhysicalDevices = 1;
      o.timeout = std::chrono::milliseconds(30000);
      o.stepsInFlight = i + 1;
      ASSERT_OK(Session::create(plans[i], o, sessions[i]));
      ASSERT_EQ(sessions[i]->stepsInFlight(), i + 1);
      hooks[i] = std::make_unique<ReadingHook>(*sessions[i]);
      TinyBatches batches(8);
      ASSERT_OK(sessions[i]->train(batches, 8, {hooks[i].get()}));
      EXPECT_EQ(sessions[i]->globalStep(), 8);
    }
    const ReadingHook &one = *hooks[0], &two = *hooks[1];
    EXPECT_EQ(two.losses, one.losses);
    EXPECT_EQ(two.w.at(3), one.w.at(3));
    EXPECT_EQ(two.w.at(6), one.w.at(6));
    EXPECT_EQ(two.w.at(5), one.w.at(6)); // settled: step 6 had run
    EXPECT_NE(one.w.at(5), one.w.at(6)); // so the check has teeth
    float w[2][2];
    for (int i = 0; i < 2; ++i)
      ASSERT_OK(sessions[i]->variables().read(0, w[i]));
    EXPECT_EQ(w[1][0], w[0][0]);
    EXPECT_EQ(w[1][1], w[0][1]);
  }
}

TEST(GpuRuntime, TheGatherKernelWritesWhatTheHostGatherWrites) {
  SKIP_WITHOUT_GPU();
  // 28x28x1 rows take the float4 path, 1x2x3 rows the scalar one; both
  // label formats; repeated and unsorted indices.
  for (data::ExampleShape shape :
       {data::ExampleShape{28, 28, 1}, data::ExampleShape{1, 2, 3}})
    for (data::LabelFormat format :
         {data::LabelFormat::Sparse, data::LabelFormat::OneHot}) {
      SCOPED_TRACE(shape.str() + (format == data::LabelFormat::Sparse
                                      ? ", sparse"
                                      : ", one-hot"));
      data::Dataset ds;
      ds.shape = shape;
      ds.numClasses = 10;
      std::mt19937 rng(3);
      std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
      const int64_t n = 300, rows = 37, e = shape.elements();
      for (int64_t i = 0; i < n * e; ++i)
        ds.images.push_back(pixel(rng));
      for (int64_t i = 0; i < n; ++i)
        ds.labels.push_back(static_cast<int32_t>(rng() % 10));
      std::vector<int64_t> indices;
      for (int64_t r = 0; r < rows; ++r)
        indices.push_back(static_cast<int64_t>(rng() % n));
      indices[5] = indices[6];
      const bool oneHot = format == data::LabelFormat::OneHot;
      const size_t labelBytes = oneHot ? rows * 10 * 4 : rows * 4;
      std::vector<float> wantImages(rows * e);
      std::vector<std::byte> wantLabels(labelBytes);
      data::gatherExamples(ds, indices.data(), rows, format, wantImages.data(),
                           wantLabels.data());

      void *images = nullptr, *labels = nullptr, *outImages = nullptr,
           *outLabels = nullptr, *deviceIndices = nullptr;
      ASSERT_CUDA(cudaMalloc(&images, ds.images.size() * 4));
      ASSERT_CUDA(cudaMalloc(&labels, ds.labels.size() * 4));
      ASSERT_CUDA(cudaMalloc(&outImages, wantImages.size() * 4));
      ASSERT_CUDA(cudaMalloc(&outLabels, labelBytes));
      ASSERT_CUDA(cudaMalloc(&deviceIndices, indices.size() * 8));
      ASSERT_CUDA(cudaMemcpy(images, ds.images.data(), ds.images.size() * 4,
                             cudaMemcpyHostToDevice));
      ASSERT_CUDA(cudaMemcpy(labels, ds.labels.data(), ds.labels.size() * 4,
                             cudaMemcpyHostToDevice));
      ASSERT_CUDA(cudaMemcpy(deviceIndices, indices.data(), indices.size() * 8,
                             cudaMemcpyHostToDevice));
      // Stale one-hot values must be overwritten, not left.
      ASSERT_CUDA(cudaMemset(outLabels, 0x3f, labelBytes));
      cuda::CachedExamples view;
      view.images = static_cast<const float *>(images);
      view.labels = static_cast<const int32_t *>(labels);
      view.examples = n;
      view.elements = e;
      view.classes = 10;
      ASSERT_CUDA(cuda::enqueueGatherExamples(
          view, static_cast<const int64_t *>(deviceIndices), rows,
          static_cast<float *>(outImages), outLabels, oneHot, nullptr));
      std::vector<float> gotImages(wantImages.size());
      std::vector<std::byte> gotLabels(labelBytes);
      ASSERT_CUDA(cudaMemcpy(gotImages.data(), outImages, gotImages.size() * 4,
                             cudaMemcpyDeviceToHost));
      ASSERT_CUDA(cudaMemcpy(gotLabels.data(), outLabels, labelBytes,
                             cudaMemcpyDeviceToHost));
      EXPECT_EQ(gotImages, wantImages);
      EXPECT_EQ(gotLabels, wantLabels);
      for (void *p : {images, labels, outImages, outLabels, deviceIndices})
        ASSERT_CUDA(cudaFree(p));
    }
}

TEST(GpuRuntime, ACachedDatasetIsGatheredOnTheDevice) {
  SKIP_WITHOUT_GPU();
  // The dataset holds tinyBatch(16, 1)'s rows; index batches name them in
  // a shuffled order and must train exactly as the batches of those rows.
  data::Batch all = testplan::tinyBatch(16, 1);
  auto ds = std::make_shared<data::Dataset>();
  ds->name = "tiny";
  ds->shape = all.shape;
  ds->numClasses = 2;
  ds->images = all.images;
  for (int64_t r = 0; r < 16; ++r)
    ds->labels.push_back(r % 3 == 0 ? 1 : 0);
  std::mt19937 rng(7);
  for (bool graph : {true, false})
    for (int replicas : {1, 2}) {
      SCOPED_TRACE(std::string(graph ? "graph" : "eager") + ", replicas " +
                   std::to_string(replicas));
      TinyRun rows, cached;
      ASSERT_OK(prepareTiny(rows, replicas, 8, cudaOptions(graph)));
      ASSERT_OK(prepareTiny(cached, replicas, 8, cudaOptions(graph)));
      ASSERT_OK(cached.executor->cacheDataset(ds));
      StepResult a, b;
      for (int step = 1; step <= 5; ++step) {
        data::Batch indices;
        indices.size = 8;
        for (int k = 0; k < 8; ++k)
          indices.sourceIndices.push_back(static_cast<int64_t>(rng() % 16));
        data::Batch batch;
        batch.size = 8;
        batch.shape = ds->shape;
        batch.numClasses = 2;
        batch.labelFormat = data::LabelFormat::OneHot;
        batch.images.resize(16);
        batch.oneHotLabels.resize(16);
        batch.sourceIndices = indices.sourceIndices;
        data::gatherExamples(*ds, batch.sourceIndices.data(), 8,
                             data::LabelFormat::OneHot, batch.images.data(),
                             batch.oneHotLabels.data());
        ASSERT_OK(rows.executor->run(batch, step, a));
        ASSERT_OK(cached.executor->run(indices, step, b));
        for (int r = 0; r < replicas; ++r)
          EXPECT_EQ(a.perReplica[r][0], b.perReplica[r][0])
              << "step " << step << ", replica " << r;
      }
      // An index outside the dataset never reaches the device.
      data::Batch bad;
      bad.size = 8;
      bad.sourceIndices.assign(8, 0);
      bad.sourceIndices[5] = 16;
      Status s = cached.executor->run(bad, 6, b);
      ASSERT_FALSE(s);
      EXPECT_NE(s.message().find("names example 16"), std::string::npos)
          << s.message();
    }
}

TEST(GpuRuntime, TimestampsAreOrderedHostTimes) {
  SKIP_WITHOUT_GPU();
  TinyRun run;
  ASSERT_OK(prepareTiny(run, 2, 8, cudaOptions(true)));
  StepResult result;
  for (int step = 1; step <= 4; ++step) {
    data::Batch batch = testplan::tinyBatch(8, step);
    auto before = std::chrono::steady_clock::now();
    ASSERT_OK(run.executor->run(batch, step, result));
    auto after = std::chrono::steady_clock::now();
    ASSERT_EQ(result.timestamps.size(), 2u);
    for (const auto &timeline : result.timestamps) {
      ASSERT_FALSE(timeline.empty()) << "step " << step;
      EXPECT_EQ(timeline.front().name, "step_begin");
      EXPECT_EQ(timeline.back().name, "step_end");
      // Converted through the completion event: inside the host's view of
      // the step (the anchor is seen after the event completes).
      EXPECT_GE(timeline.front().at, before - std::chrono::milliseconds(1));
      EXPECT_LE(timeline.back().at, after);
      EXPECT_LE(timeline.front().at, timeline.back().at);
    }
  }
}

TEST(GpuRuntime, WrongBatchFailsBeforeAnyCopy) {
  SKIP_WITHOUT_GPU();
  gputest::registerGpuTestKernels();
  cuda::registerCudaBackend();
  TinyRun run;
  run.bytes = testplan::buildTinyPlan(1, 4);
  ASSERT_OK(
      verifyPlan(run.bytes.data(), run.bytes.size(), "tiny.plan", run.plan));
  ASSERT_OK(run.variables.initialize(*run.plan, 1, 0));
  ExecutorOptions options = cudaOptions(true);
  ASSERT_OK(Executor::create(*run.plan, *run.plan->programs()->Get(0),
                             run.variables, options, run.executor));
  data::Batch wrong = testplan::tinyBatch(6, 1);
  StepResult result;
  Status s = run.executor->run(wrong, 1, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("global batch of 4"), std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// The seed CNN: CPU, one GPU and two logical GPUs agree after 10 steps.
//===----------------------------------------------------------------------===//

namespace {

/// The seed plan (test/runtime/SeedPlan.h), loaded, or why not.
bool compileSeedPlan(LoadedPlan &out, std::string &why) {
  std::filesystem::path plan;
  if (testplan::seedPlanPath("gpu-runtime-tests-seed", plan, why) !=
      testplan::SeedPlan::ready)
    return false;
  if (Status s = loadPlan(plan.string(), out); !s) {
    why = s.message();
    return false;
  }
  return true;
}

data::Batch seedBatch(int64_t rows, int step) {
  data::Batch batch;
  batch.size = rows;
  batch.shape = {28, 28, 1};
  batch.numClasses = 10;
  batch.labelFormat = data::LabelFormat::OneHot;
  std::mt19937 random(static_cast<unsigned>(step));
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  batch.images.resize(static_cast<size_t>(rows * 28 * 28));
  for (float &v : batch.images)
    v = pixel(random);
  batch.oneHotLabels.assign(static_cast<size_t>(rows * 10), 0.0f);
  for (int64_t r = 0; r < rows; ++r) {
    batch.oneHotLabels[r * 10 + random() % 10] = 1.0f;
    batch.sourceIndices.push_back(r);
  }
  return batch;
}

/// Trains the seed plan 10 steps, one at a time or two in flight
/// (`ahead`); the losses and every variable after.
Status trainSeed(const LoadedPlan &loaded, int replicas,
                 const ExecutorOptions &options, std::vector<double> &losses,
                 std::vector<std::vector<float>> &variables,
                 bool ahead = false) {
  const plan::Program *program = nullptr;
  if (Status s = findProgram(*loaded.plan, plan::ProgramKind::train, replicas,
                             loaded.path, program);
      !s)
    return s;
  MirroredVariables vars;
  if (Status s = vars.initialize(*loaded.plan, replicas, 7); !s)
    return s;
  std::unique_ptr<Executor> executor;
  if (Status s =
          Executor::create(*loaded.plan, *program, vars, options, executor);
      !s)
    return s;
  if (ahead) {
    std::vector<std::vector<std::vector<Timestamp>>> times;
    const int64_t rows = executor->globalBatch();
    if (Status s = trainAhead(
            *executor, [&](int step) { return seedBatch(rows, step); }, 10,
            losses, times);
        !s)
      return s;
  } else {
    StepResult result;
    for (int step = 1; step <= 10; ++step) {
      data::Batch batch = seedBatch(executor->globalBatch(), step);
      if (Status s = executor->run(batch, step, result); !s)
        return s;
      losses.push_back(result.value("loss"));
    }
  }
  variables.assign(static_cast<size_t>(vars.count()), {});
  for (int v = 0; v < vars.count(); ++v) {
    variables[v].resize(static_cast<size_t>(vars.bytes(v) / 4));
    if (Status s = vars.read(v, variables[v].data()); !s)
      return s;
  }
  return Status::ok();
}

} // namespace

TEST(GpuRuntime, SeedModelAgreesOnCpuOneGpuAndTwoLogicalGpus) {
  SKIP_WITHOUT_GPU();
  cuda::registerCudaBackend();
  cpu::registerCpuKernels();
  LoadedPlan loaded;
  std::string why;
  if (!compileSeedPlan(loaded, why))
    GTEST_SKIP() << why;
  std::set<std::string> missing;
  for (const plan::Program *p : *loaded.plan->programs())
    for (const plan::Op *op : *p->ops())
      if (op->kind() == plan::OpKind::launch &&
          !KernelRegistry::global().has(op->kernel()->str(), Backend::cuda))
        missing.insert(op->kernel()->str());
  if (!missing.empty()) {
    std::string list;
    for (const std::string &k : missing)
      list += (list.empty() ? "" : ", ") + k;
    GTEST_SKIP() << "the cuda backend has no kernel for: " << list;
  }
  ExecutorOptions cpuOptions;
  cpuOptions.backend = Backend::cpu;
  std::vector<double> cpuLosses, oneLosses, twoLosses, aheadLosses;
  std::vector<std::vector<float>> cpuVars, oneVars, twoVars, aheadVars;
  ASSERT_OK(trainSeed(loaded, 1, cpuOptions, cpuLosses, cpuVars));
  ASSERT_OK(trainSeed(loaded, 1, cudaOptions(true), oneLosses, oneVars));
  ASSERT_OK(trainSeed(loaded, 2, cudaOptions(true, 1), twoLosses, twoVars));
  // Two steps in flight, as graphrun trains on a GPU.
  ASSERT_OK(trainSeed(loaded, 1, cudaOptions(true), aheadLosses, aheadVars,
                      /*ahead=*/true));
  // Float sums in other orders, TF32 in cuDNN/cuBLASLt and Adam's
  // normalisation of near-zero gradients move results by rounding-sized
  // amounts; a wrong gradient, step or all-reduce moves the loss by far more
  // than 1%. Adam moves a weight at most about lr = 1e-3 per step, so 2e-3
  // after ten steps bounds the rounding drift of any weight.
  for (size_t i = 0; i < cpuLosses.size(); ++i) {
    EXPECT_NEAR(oneLosses[i], cpuLosses[i], 1e-2 * std::fabs(cpuLosses[i]))
        << "1 GPU, step " << i + 1;
    EXPECT_NEAR(twoLosses[i], cpuLosses[i], 1e-2 * std::fabs(cpuLosses[i]))
        << "2 logical GPUs, step " << i + 1;
    EXPECT_NEAR(aheadLosses[i], cpuLosses[i], 1e-2 * std::fabs(cpuLosses[i]))
        << "2 steps in flight, step " << i + 1;
  }
  auto maxAbsDiff = [](const std::vector<float> &a,
                       const std::vector<float> &b) {
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      worst = std::max(worst, std::fabs(double(a[i]) - b[i]));
    return worst;
  };
  ASSERT_EQ(oneVars.size(), cpuVars.size());
  for (size_t v = 0; v < cpuVars.size(); ++v) {
    EXPECT_LT(maxAbsDiff(oneVars[v], cpuVars[v]), 2e-3) << "variable " << v;
    EXPECT_LT(maxAbsDiff(twoVars[v], cpuVars[v]), 2e-3) << "variable " << v;
    EXPECT_LT(maxAbsDiff(aheadVars[v], cpuVars[v]), 2e-3) << "variable " << v;
  }
}
