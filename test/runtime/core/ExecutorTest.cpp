//===- ExecutorTest.cpp - the executor on hand-built plans ----------------===//
//
// The tiny plan of test/runtime/TinyPlan.h, run with tiny kernels
// registered here under names no backend uses ("test.*").
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Executor.h"
#include "runtime/core/Hooks.h"
#include "runtime/core/Initializers.h"
#include "runtime/core/Session.h"
#include "runtime/plan/PlanLoader.h"
#include "test/runtime/TinyPlan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <sstream>

using namespace graph::runtime;
namespace plan = graph::plan;

namespace {

// out[r, j] = x[r, j] * w[j]
Status mulKernel(const KernelContext &, const KernelConfig &,
                 const std::vector<TensorRef> &ins,
                 const std::vector<TensorRef> &outs) {
  int64_t cols = ins[1].elements();
  for (int64_t i = 0; i < outs[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] * ins[1].f32()[i % cols];
  return Status::ok();
}
Status failKernel(const KernelContext &ctx, const KernelConfig &,
                  const std::vector<TensorRef> &,
                  const std::vector<TensorRef> &) {
  if (ctx.replica == 1)
    return Status::error("deliberate failure");
  return Status::ok();
}

void registerTestKernels() {
  static bool done = false;
  if (done)
    return;
  done = true;
  auto &r = KernelRegistry::global();
  r.add("test.mul", Backend::reference, mulKernel);
  r.add("test.sum", Backend::reference, testplan::sumKernel);
  r.add("test.colsum", Backend::reference, testplan::colSumKernel);
  r.add("test.sgd", Backend::reference, testplan::sgdKernel);
  r.add("test.fail", Backend::reference, failKernel);
}

/// The tiny plan (test/runtime/TinyPlan.h) over these kernels: per
/// replica loss = sum(x * w), g = column sums of x, all-reduce mean of g,
/// w -= 0.1 g. `kernel0` replaces the first launch (to test failures and
/// missing kernels).
std::vector<uint8_t> buildPlan(int replicas, int64_t batch,
                               const char *kernel0 = "test.mul") {
  return testplan::buildTinyPlan(replicas, batch, kernel0, "test.sgd");
}

data::Batch makeBatch(int64_t rows) {
  data::Batch batch;
  batch.size = rows;
  batch.shape = {1, 1, 2};
  batch.numClasses = 2;
  batch.labelFormat = data::LabelFormat::OneHot;
  for (int64_t r = 0; r < rows; ++r) {
    batch.images.push_back(static_cast<float>(r + 1));
    batch.images.push_back(static_cast<float>(10 * (r + 1)));
    batch.oneHotLabels.push_back(1);
    batch.oneHotLabels.push_back(0);
    batch.sourceIndices.push_back(r);
  }
  return batch;
}

struct Prepared {
  std::vector<uint8_t> bytes;
  const plan::Plan *plan = nullptr;
  MirroredVariables variables;
  std::unique_ptr<Executor> executor;
};

Status
prepare(Prepared &p, int replicas, int64_t batch,
        const char *kernel0 = "test.mul",
        std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  registerTestKernels();
  p.bytes = buildPlan(replicas, batch, kernel0);
  if (Status s =
          verifyPlan(p.bytes.data(), p.bytes.size(), "tiny.plan", p.plan);
      !s)
    return s;
  if (Status s = p.variables.initialize(*p.plan, replicas, 0); !s)
    return s;
  ExecutorOptions options;
  options.timeout = timeout;
  return Executor::create(*p.plan, *p.plan->programs()->Get(0), p.variables,
                          options, p.executor);
}

} // namespace

TEST(Executor, OneReplicaStep) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 1, 4)) << "prepare";
  data::Batch batch = makeBatch(4);
  StepResult result;
  Status s = p.executor->run(batch, 1, result);
  ASSERT_TRUE(s) << s.message();
  // x rows (1,10),(2,20),(3,30),(4,40); w = (1,1): loss = 10 + 100.
  EXPECT_DOUBLE_EQ(result.value("loss"), 110.0);
  // w -= 0.1 * (10, 100)
  EXPECT_FLOAT_EQ(p.variables.f32(0, 0)[0], 0.0f);
  EXPECT_FLOAT_EQ(p.variables.f32(0, 0)[1], -9.0f);
  ASSERT_EQ(result.timestamps.size(), 1u);
  EXPECT_EQ(result.timestamps[0].front().name, "step_begin");
  EXPECT_EQ(result.timestamps[0].back().name, "step_end");
}

TEST(Executor, TwoReplicasAllReduceAndEvents) {
  Prepared p;
  Status s = prepare(p, 2, 4);
  ASSERT_TRUE(s) << s.message();
  data::Batch batch = makeBatch(4);
  StepResult result;
  s = p.executor->run(batch, 1, result);
  ASSERT_TRUE(s) << s.message();
  // Replica 0 sees rows 1-2, replica 1 rows 3-4.
  EXPECT_DOUBLE_EQ(result.perReplica[0][0], 33.0);
  EXPECT_DOUBLE_EQ(result.perReplica[1][0], 77.0);
  EXPECT_DOUBLE_EQ(result.value("loss"), 55.0);
  // Mean of the column sums (3, 30) and (7, 70) = (5, 50); both mirrors
  // apply it.
  for (int d = 0; d < 2; ++d) {
    EXPECT_FLOAT_EQ(p.variables.f32(d, 0)[0], 0.5f);
    EXPECT_FLOAT_EQ(p.variables.f32(d, 0)[1], -4.0f);
  }
  StepSplit split = splitStep(result);
  EXPECT_GE(split.allReduce, 0.0);
  EXPECT_EQ(result.timestamps.size(), 2u);
}

TEST(Executor, ArenaAllocatedOnce) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 2, 8));
  const void *arena0 = p.executor->arena(0).data();
  const void *arena1 = p.executor->arena(1).data();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(arena0) % kArenaAlignment, 0u);
  int64_t before = Arena::allocations();
  data::Batch batch = makeBatch(8);
  StepResult result;
  for (int step = 1; step <= 5; ++step)
    ASSERT_TRUE(p.executor->run(batch, step, result));
  EXPECT_EQ(Arena::allocations(), before);
  EXPECT_EQ(p.executor->arena(0).data(), arena0);
  EXPECT_EQ(p.executor->arena(1).data(), arena1);
}

TEST(Executor, MissingKernelIsNamed) {
  Prepared p;
  Status s = prepare(p, 1, 4, "test.no_such_kernel");
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("test.no_such_kernel"), std::string::npos)
      << s.message();
}

TEST(Executor, KernelFailureReleasesTheOtherReplica) {
  Prepared p;
  // Replica 1's first kernel fails; replica 0 must not wait for the
  // all-reduce until the timeout.
  Status s = prepare(p, 2, 4, "test.fail", std::chrono::milliseconds(30000));
  ASSERT_TRUE(s) << s.message();
  data::Batch batch = makeBatch(4);
  StepResult result;
  auto start = std::chrono::steady_clock::now();
  s = p.executor->run(batch, 1, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("deliberate failure"), std::string::npos)
      << s.message();
  EXPECT_NE(s.message().find("test.fail"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Executor, WrongBatchSizeIsAnError) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 1, 4));
  data::Batch batch = makeBatch(6);
  StepResult result;
  Status s = p.executor->run(batch, 1, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("global batch of 4"), std::string::npos)
      << s.message();
}

TEST(Executor, FindProgramListsReplicaCounts) {
  registerTestKernels();
  auto bytes = buildPlan(2, 4);
  const plan::Plan *plan = nullptr;
  ASSERT_TRUE(verifyPlan(bytes.data(), bytes.size(), "tiny.plan", plan));
  const plan::Program *program = nullptr;
  EXPECT_TRUE(
      findProgram(*plan, plan::ProgramKind::train, 2, "tiny.plan", program));
  Status s =
      findProgram(*plan, plan::ProgramKind::train, 3, "tiny.plan", program);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("programs for 2 replica(s)"), std::string::npos)
      << s.message();
}

TEST(Executor, VariablesAreTheSameOnEveryDevice) {
  registerTestKernels();
  auto bytes = buildPlan(1, 4);
  const plan::Plan *plan = nullptr;
  ASSERT_TRUE(verifyPlan(bytes.data(), bytes.size(), "tiny.plan", plan));
  MirroredVariables vars;
  ASSERT_TRUE(vars.initialize(*plan, 4, 123));
  for (int d = 1; d < 4; ++d)
    EXPECT_EQ(std::memcmp(vars.data(0, 0), vars.data(d, 0), 8), 0);
}

// A conv kernel stored OHWI (and a depthwise one, stored [C * m, kh, kw, 1])
// is drawn, read and written in Keras' HWIO: its values do not depend on how
// it is stored, and checkpoints see Keras' layout.
TEST(Executor, VariablesStoredInAnotherLayoutSpeakKeras) {
  flatbuffers::FlatBufferBuilder b;
  const std::vector<int64_t> hwio{2, 3, 4, 5}, ohwi{5, 2, 3, 4};
  const std::vector<int64_t> depthwise{3, 3, 2, 2}, stored{4, 3, 3, 1};
  auto glorot = [&] {
    return plan::CreateInitializer(b, plan::InitKind::glorot_uniform);
  };
  std::vector<flatbuffers::Offset<plan::Variable>> variables{
      plan::CreateVariable(b, b.CreateString("conv/kernel"),
                           b.CreateVector(ohwi), plan::DType::f32, glorot(),
                           true, b.CreateVector(hwio),
                           b.CreateVector(std::vector<int32_t>{3, 0, 1, 2})),
      plan::CreateVariable(b, b.CreateString("dw/depthwise_kernel"),
                           b.CreateVector(stored), plan::DType::f32, glorot(),
                           true, b.CreateVector(depthwise),
                           b.CreateVector(std::vector<int32_t>{2, 3, 0, 1}))};
  b.Finish(plan::CreatePlan(b, kPlanVersion, 0, b.CreateVector(variables)));
  const plan::Plan *p = flatbuffers::GetRoot<plan::Plan>(b.GetBufferPointer());

  MirroredVariables vars;
  ASSERT_TRUE(vars.initialize(*p, 2, 7));
  EXPECT_EQ(vars.shape(0), hwio);
  EXPECT_EQ(vars.shape(1), depthwise);

  // What an HWIO variable of the same name would hold.
  std::vector<float> keras(120), dwKeras(36);
  InitSpec init;
  init.kind = plan::InitKind::glorot_uniform;
  ASSERT_TRUE(initializeVariable("conv/kernel", hwio, init, 7, keras.data()));
  ASSERT_TRUE(initializeVariable("dw/depthwise_kernel", depthwise, init, 7,
                                 dwKeras.data()));
  auto hwioAt = [](int64_t i, int64_t j, int64_t c, int64_t f) {
    return ((i * 3 + j) * 4 + c) * 5 + f;
  };
  for (int d = 0; d < 2; ++d) {
    const float *k = vars.f32(d, 0);
    for (int64_t f = 0; f < 5; ++f)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t c = 0; c < 4; ++c)
            ASSERT_EQ(k[((f * 2 + i) * 3 + j) * 4 + c],
                      keras[hwioAt(i, j, c, f)]);
    // Depthwise [kh, kw, C, m] -> filter c * m + q at [c * m + q, kh, kw].
    const float *dw = vars.f32(d, 1);
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t q = 0; q < 2; ++q)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 3; ++j)
            ASSERT_EQ(dw[((c * 2 + q) * 3 + i) * 3 + j],
                      dwKeras[((i * 3 + j) * 2 + c) * 2 + q]);
  }

  std::vector<float> read(120);
  ASSERT_TRUE(vars.read(0, read.data()));
  EXPECT_EQ(read, keras);
  ASSERT_TRUE(vars.readCopy(1, 0, read.data()));
  EXPECT_EQ(read, keras);
  std::vector<float> dwRead(36);
  ASSERT_TRUE(vars.read(1, dwRead.data()));
  EXPECT_EQ(dwRead, dwKeras);

  // Written in Keras' layout, stored OHWI on every device.
  std::vector<float> written(120);
  for (size_t e = 0; e < written.size(); ++e)
    written[e] = static_cast<float>(e);
  ASSERT_TRUE(vars.write(0, written.data()));
  for (int d = 0; d < 2; ++d)
    EXPECT_EQ(vars.f32(d, 0)[((4 * 2 + 1) * 3 + 2) * 4 + 3],
              static_cast<float>(hwioAt(1, 2, 3, 4)));
  ASSERT_TRUE(vars.read(0, read.data()));
  EXPECT_EQ(read, written);
}

namespace {
/// A data iterator over copies of one batch.
class RepeatBatches : public data::BatchIterator {
public:
  RepeatBatches(data::Batch batch, int count)
      : batch_(std::move(batch)), left_(count) {}
  Status next(data::Batch &out, bool &end) override {
    end = left_-- <= 0;
    if (!end)
      out = batch_;
    return Status::ok();
  }

private:
  data::Batch batch_;
  int left_;
};
} // namespace

TEST(Session, TrainsWithHooks) {
  registerTestKernels();
  LoadedPlan loaded;
  loaded.path = "tiny.plan";
  loaded.bytes = buildPlan(2, 4);
  ASSERT_TRUE(verifyPlan(loaded.bytes.data(), loaded.bytes.size(), loaded.path,
                         loaded.plan));
  SessionOptions options;
  options.replicas = 2;
  std::unique_ptr<Session> session;
  Status s = Session::create(loaded, options, session);
  ASSERT_TRUE(s) << s.message();
  std::ostringstream log, timing;
  LoggerHook logger(2, log);
  StepTimerHook timer(1, timing);
  RepeatBatches batches(makeBatch(4), 4);
  s = session->train(batches, 10, {&logger, &timer});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(session->globalStep(), 4);
  EXPECT_EQ(timer.stepSeconds().size(), 4u);
  EXPECT_GT(timer.imagesPerSecond(), 0.0);
  std::string text = log.str();
  EXPECT_NE(text.find("loss = 55, step = 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("global_step/sec: "), std::string::npos) << text;
  EXPECT_NE(text.find(", step = 4 ("), std::string::npos) << text;
  EXPECT_NE(timing.str().find("images/sec: "), std::string::npos);
  EXPECT_NE(timing.str().find("after 1 warm-up steps"), std::string::npos)
      << timing.str();
}

TEST(Session, AVoteToStopReachesTheHooksOfItsStep) {
  // A hook votes from step 2 on (a preemption signal came); the votes
  // counted with step 2's outputs stop the run after it.
  registerTestKernels();
  LoadedPlan loaded;
  loaded.path = "tiny.plan";
  loaded.bytes = buildPlan(2, 4);
  ASSERT_TRUE(verifyPlan(loaded.bytes.data(), loaded.bytes.size(), loaded.path,
                         loaded.plan));
  SessionOptions options;
  options.replicas = 2;
  std::unique_ptr<Session> session;
  Status s = Session::create(loaded, options, session);
  ASSERT_TRUE(s) << s.message();
  struct Voter : Hook {
    int64_t seen = 0;
    std::vector<int> votes;
    bool stop = false;
    Status afterStep(const StepContext &ctx) override {
      seen = ctx.step;
      votes.push_back(ctx.stopVotes);
      stop = ctx.stopVotes > 0;
      return Status::ok();
    }
    bool votesToStop() const override { return seen >= 1; }
    bool stopRequested() const override { return stop; }
  } voter;
  RepeatBatches batches(makeBatch(4), 10);
  s = session->train(batches, 10, {&voter});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(session->globalStep(), 2);
  EXPECT_EQ(voter.votes, (std::vector<int>{0, 1}));
}

TEST(Executor, StagedStepsMatchRun) {
  // stage(k+1) between launch(k) and wait(k), as Session::train calls them,
  // computes what run() computes step by step.
  Prepared a, b;
  ASSERT_TRUE(prepare(a, 2, 4));
  ASSERT_TRUE(prepare(b, 2, 4));
  data::Batch first = makeBatch(4), second = makeBatch(4);
  for (float &x : second.images)
    x *= -0.5f;
  StepResult ra, rb;
  ASSERT_TRUE(a.executor->run(first, 1, ra));
  double loss1 = ra.value("loss");
  ASSERT_TRUE(a.executor->run(second, 2, ra));

  ASSERT_TRUE(b.executor->stage(first));
  ASSERT_TRUE(b.executor->launch(1, rb));
  ASSERT_TRUE(b.executor->stage(second));
  Status s = b.executor->wait();
  ASSERT_TRUE(s) << s.message();
  EXPECT_DOUBLE_EQ(rb.value("loss"), loss1);
  ASSERT_TRUE(b.executor->launch(2, rb));
  ASSERT_TRUE(b.executor->wait());
  EXPECT_DOUBLE_EQ(rb.value("loss"), ra.value("loss"));
  for (int d = 0; d < 2; ++d)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(b.variables.f32(d, 0)[j], a.variables.f32(d, 0)[j]);
}

TEST(Executor, OutOfOrderCallsAreErrorsNotHangs) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 2, 4));
  data::Batch batch = makeBatch(4);
  StepResult result;
  Status s = p.executor->launch(1, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("no staged batch"), std::string::npos)
      << s.message();
  s = p.executor->wait();
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("no step launched"), std::string::npos)
      << s.message();
  ASSERT_TRUE(p.executor->stage(batch));
  s = p.executor->stage(batch);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("stage() twice"), std::string::npos)
      << s.message();
  // The misuse left the executor usable: the staged batch still runs.
  ASSERT_TRUE(p.executor->launch(1, result));
  ASSERT_TRUE(p.executor->stage(batch));
  s = p.executor->launch(2, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("into the result of a step in flight"),
            std::string::npos)
      << s.message();
  // A second step in flight, into its own result; a third is refused.
  StepResult second, third;
  ASSERT_EQ(p.executor->maxStepsInFlight(), 2);
  ASSERT_TRUE(p.executor->launch(2, second));
  EXPECT_EQ(p.executor->stepsInFlight(), 2);
  ASSERT_TRUE(p.executor->stage(batch));
  s = p.executor->launch(3, third);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("while 2 step(s) are in flight"),
            std::string::npos)
      << s.message();
  ASSERT_TRUE(p.executor->wait());
  EXPECT_DOUBLE_EQ(result.value("loss"), 55.0);
  ASSERT_TRUE(p.executor->wait());
  EXPECT_EQ(p.executor->stepsInFlight(), 0);
  EXPECT_TRUE(std::isfinite(second.value("loss")));
}

TEST(Executor, TwoStepsInFlightMatchOneAtATime) {
  // launch(k+1) before wait(k), each into its own result: the results and
  // the variables are those of one step at a time.
  Prepared a, b;
  ASSERT_TRUE(prepare(a, 2, 4));
  ASSERT_TRUE(prepare(b, 2, 4));
  std::vector<data::Batch> batches;
  for (int k = 0; k < 4; ++k) {
    batches.push_back(makeBatch(4));
    for (float &x : batches.back().images)
      x *= 1.0f - 0.4f * static_cast<float>(k);
  }
  std::vector<double> losses;
  StepResult ra;
  for (int k = 0; k < 4; ++k) {
    ASSERT_TRUE(a.executor->run(batches[k], k + 1, ra));
    losses.push_back(ra.value("loss"));
  }
  StepResult rb[2];
  ASSERT_TRUE(b.executor->stage(batches[0]));
  ASSERT_TRUE(b.executor->launch(1, rb[0]));
  for (int k = 1; k <= 4; ++k) {
    if (k < 4) {
      ASSERT_TRUE(b.executor->stage(batches[k]));
      ASSERT_TRUE(b.executor->launch(k + 1, rb[k % 2]));
    }
    Status s = b.executor->wait();
    ASSERT_TRUE(s) << s.message();
    EXPECT_DOUBLE_EQ(rb[(k - 1) % 2].value("loss"), losses[k - 1]) << k;
  }
  for (int d = 0; d < 2; ++d)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(b.variables.f32(d, 0)[j], a.variables.f32(d, 0)[j]);
}

namespace {
/// Six examples of shape 1x1x2: example i is (i + 1, 10 (i + 1)), label 0,
/// so indices 0..3 are the rows of makeBatch(4).
std::shared_ptr<data::Dataset> makeDataset() {
  auto ds = std::make_shared<data::Dataset>();
  ds->name = "six";
  ds->shape = {1, 1, 2};
  ds->numClasses = 2;
  for (int i = 0; i < 6; ++i) {
    ds->images.push_back(static_cast<float>(i + 1));
    ds->images.push_back(static_cast<float>(10 * (i + 1)));
    ds->labels.push_back(0);
  }
  return ds;
}

data::Batch indexBatch(std::vector<int64_t> indices) {
  data::Batch b;
  b.size = static_cast<int64_t>(indices.size());
  b.sourceIndices = std::move(indices);
  return b;
}
} // namespace

TEST(Executor, ACachedDatasetGathersTheRowsTheIndicesName) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 2, 4));
  StepResult result;
  Status s = p.executor->run(indexBatch({3, 1, 2, 0}), 1, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("no dataset is cached"), std::string::npos)
      << s.message();

  ASSERT_TRUE(p.executor->cacheDataset(makeDataset()));
  s = p.executor->run(indexBatch({3, 1, 2, 0}), 1, result);
  ASSERT_TRUE(s) << s.message();
  // Replica 0 gathers examples 3 and 1: (4 + 40) + (2 + 20).
  EXPECT_DOUBLE_EQ(result.perReplica[0][0], 66.0);
  EXPECT_DOUBLE_EQ(result.perReplica[1][0], 44.0);
  // The same update as the batch of those rows: mean column sums (5, 50).
  for (int d = 0; d < 2; ++d) {
    EXPECT_FLOAT_EQ(p.variables.f32(d, 0)[0], 0.5f);
    EXPECT_FLOAT_EQ(p.variables.f32(d, 0)[1], -4.0f);
  }
  // Batches with images still run on an executor that caches.
  ASSERT_TRUE(p.executor->run(makeBatch(4), 2, result));

  s = p.executor->run(indexBatch({0, 1, 6, 2}), 3, result);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("row 2 of the batch names example 6"),
            std::string::npos)
      << s.message();
}

TEST(Executor, ACachedDatasetMustFitTheInputs) {
  Prepared p;
  ASSERT_TRUE(prepare(p, 1, 4));
  auto wide = makeDataset();
  wide->shape = {1, 1, 3};
  wide->images.resize(18);
  Status s = p.executor->cacheDataset(wide);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("do not fit the plan's input"), std::string::npos)
      << s.message();
  EXPECT_FALSE(p.executor->cacheDataset(nullptr));
}

namespace {
/// Index batches over `batches`, counting next() calls, failing the call
/// numbered `failAt` (1-based; 0: never).
class IndexBatches : public data::BatchIterator {
public:
  IndexBatches(std::vector<std::vector<int64_t>> batches, int failAt = 0)
      : batches_(std::move(batches)), failAt_(failAt) {}
  Status next(data::Batch &out, bool &end) override {
    ++calls;
    if (calls == failAt_)
      return Status::error("deliberate pipeline failure");
    end = next_ >= batches_.size();
    if (!end)
      out = indexBatch(batches_[next_++]);
    return Status::ok();
  }
  int calls = 0;

private:
  std::vector<std::vector<int64_t>> batches_;
  size_t next_ = 0;
  int failAt_;
};

/// Counts the steps the hooks saw.
class CountingHook : public Hook {
public:
  Status afterStep(const StepContext &ctx) override {
    steps.push_back(ctx.step);
    EXPECT_LE(ctx.begin, ctx.end);
    return Status::ok();
  }
  std::vector<int64_t> steps;
};

Status makeSession(LoadedPlan &loaded, std::unique_ptr<Session> &out,
                   int stepsInFlight = 0) {
  registerTestKernels();
  loaded.path = "tiny.plan";
  loaded.bytes = buildPlan(2, 4);
  if (Status s = verifyPlan(loaded.bytes.data(), loaded.bytes.size(),
                            loaded.path, loaded.plan);
      !s)
    return s;
  SessionOptions options;
  options.replicas = 2;
  options.stepsInFlight = stepsInFlight;
  return Session::create(loaded, options, out);
}

/// Two sessions on the cached dataset: one step at a time, and two in
/// flight.
struct OneAndTwoInFlight {
  LoadedPlan plans[2];
  std::unique_ptr<Session> one, two;
  Status make() {
    if (Status s = makeSession(plans[0], one, 1); !s)
      return s;
    if (Status s = makeSession(plans[1], two, 2); !s)
      return s;
    for (Session *session : {one.get(), two.get()})
      if (Status s = session->cacheTrainingData(makeDataset()); !s)
        return s;
    return Status::ok();
  }
};

/// Batches whose rows differ from step to step, so that a step computed on
/// the wrong variables shows in the loss.
std::vector<std::vector<int64_t>> varyingOrder(int steps) {
  std::vector<std::vector<int64_t>> order;
  for (int k = 0; k < steps; ++k)
    order.push_back({k % 6, (k + 2) % 6, (k + 3) % 6, (5 * k + 1) % 6});
  return order;
}

/// Writes the order in which the session calls it ("b3" before step 3,
/// "a3" after it) and each step's loss.
class OrderHook : public Hook {
public:
  Status begin(const SessionInfo &info) override {
    stepsInFlight = info.stepsInFlight;
    return Status::ok();
  }
  Status beforeStep(StepContext &ctx) override {
    calls += "b" + std::to_string(ctx.step) + " ";
    return Status::ok();
  }
  Status afterStep(const StepContext &ctx) override {
    calls += "a" + std::to_string(ctx.step) + " ";
    losses.push_back(ctx.loss);
    return Status::ok();
  }
  std::string calls;
  std::vector<double> losses;
  int stepsInFlight = 0;
};
} // namespace

TEST(Session, TrainsOnCachedIndicesAsOnTheirBatches) {
  LoadedPlan la, lb;
  std::unique_ptr<Session> a, b;
  ASSERT_TRUE(makeSession(la, a));
  ASSERT_TRUE(makeSession(lb, b));
  // Session a trains on the rows themselves, b on their indices.
  auto ds = makeDataset();
  std::vector<std::vector<int64_t>> order{
      {5, 1, 2, 0}, {3, 4, 0, 1}, {2, 2, 5, 3}};
  class RowBatches : public data::BatchIterator {
  public:
    RowBatches(const data::Dataset &ds, std::vector<std::vector<int64_t>> o)
        : ds_(ds), order_(std::move(o)) {}
    Status next(data::Batch &out, bool &end) override {
      end = k_ >= order_.size();
      if (end)
        return Status::ok();
      out = data::Batch();
      out.size = 4;
      out.shape = ds_.shape;
      out.numClasses = ds_.numClasses;
      out.labelFormat = data::LabelFormat::OneHot;
      out.images.resize(8);
      out.oneHotLabels.resize(8);
      out.sourceIndices = order_[k_++];
      data::gatherExamples(ds_, out.sourceIndices.data(), 4,
                           data::LabelFormat::OneHot, out.images.data(),
                           out.oneHotLabels.data());
      return Status::ok();
    }

  private:
    const data::Dataset &ds_;
    std::vector<std::vector<int64_t>> order_;
    size_t k_ = 0;
  } rows(*ds, order);
  IndexBatches indices(order);
  ASSERT_TRUE(b->cacheTrainingData(ds));
  Status s = a->train(rows, -1, {});
  ASSERT_TRUE(s) << s.message();
  s = b->train(indices, -1, {});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(b->globalStep(), 3);
  float wa[2], wb[2];
  ASSERT_TRUE(a->variables().read(0, wa));
  ASSERT_TRUE(b->variables().read(0, wb));
  EXPECT_EQ(wa[0], wb[0]);
  EXPECT_EQ(wa[1], wb[1]);
  EXPECT_NE(wa[1], 1.0f); // it trained
}

TEST(Session, FetchesNoBatchBeyondItsSteps) {
  // The next batch is fetched while a step runs, but never one past the
  // steps asked for: a later train() continues the data where this one
  // stopped.
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}));
  CountingHook hook;
  ASSERT_TRUE(session->train(batches, 3, {&hook}));
  EXPECT_EQ(batches.calls, 3);
  EXPECT_EQ(hook.steps, (std::vector<int64_t>{1, 2, 3}));
  ASSERT_TRUE(session->train(batches, 0, {&hook}));
  EXPECT_EQ(batches.calls, 3);
  ASSERT_TRUE(session->train(batches, -1, {&hook}));
  EXPECT_EQ(batches.calls, 11); // 7 batches and the end
  EXPECT_EQ(session->globalStep(), 10);
}

TEST(Session, APipelineFailureEndsTheRunAfterTheStepInFlight) {
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  // The third fetch fails while step 2 runs: step 2 completes and is
  // counted, and the hooks see it, then the run fails.
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}), 3);
  CountingHook hook;
  Status s = session->train(batches, -1, {&hook});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("deliberate pipeline failure"), std::string::npos)
      << s.message();
  EXPECT_EQ(session->globalStep(), 2);
  EXPECT_EQ(hook.steps, (std::vector<int64_t>{1, 2}));
}

TEST(Session, AHookThatStopsTheRunLeavesNothingStaged) {
  // The next batch was staged when the hook stopped the run; a later
  // train() must start afresh, not fail with "stage() twice".
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  class StopAtTwo : public Hook {
  public:
    Status afterStep(const StepContext &ctx) override {
      return ctx.step == 2 ? Status::error("stop at 2") : Status::ok();
    }
  } stop;
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}));
  Status s = session->train(batches, -1, {&stop});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "stop at 2");
  EXPECT_EQ(session->globalStep(), 2);
  s = session->train(batches, 2, {});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(session->globalStep(), 4);
}

TEST(Session, LaunchingAheadTrainsAsOneStepAtATime) {
  // Launched ahead, step k+1 starts before the hooks of step k: the hooks
  // see the same losses and the run ends with the same variables.
  OneAndTwoInFlight sessions;
  ASSERT_TRUE(sessions.make());
  std::unique_ptr<Session> &one = sessions.one, &two = sessions.two;
  EXPECT_EQ(one->stepsInFlight(), 1);
  EXPECT_EQ(two->stepsInFlight(), 2);
  IndexBatches ba(varyingOrder(5)), bb(varyingOrder(5));
  OrderHook ha, hb;
  ASSERT_TRUE(one->train(ba, -1, {&ha}));
  ASSERT_TRUE(two->train(bb, -1, {&hb}));
  EXPECT_EQ(ha.stepsInFlight, 1);
  EXPECT_EQ(hb.stepsInFlight, 2);
  EXPECT_EQ(ha.calls, "b1 a1 b2 a2 b3 a3 b4 a4 b5 a5 ");
  EXPECT_EQ(hb.calls, "b1 b2 a1 b3 a2 b4 a3 b5 a4 a5 ");
  ASSERT_EQ(ha.losses.size(), 5u);
  EXPECT_EQ(ha.losses, hb.losses);
  EXPECT_NE(ha.losses[1], ha.losses[2]); // the steps differ
  EXPECT_EQ(two->globalStep(), 5);
  float wa[2], wb[2];
  ASSERT_TRUE(one->variables().read(0, wa));
  ASSERT_TRUE(two->variables().read(0, wb));
  EXPECT_EQ(wa[0], wb[0]);
  EXPECT_EQ(wa[1], wb[1]);
}

TEST(Session, AHookThatNeedsTheStateAfterAStepGetsIt) {
  // A hook that reads the variables after step 2 (a checkpoint) sees them
  // as they were after step 2, not after a step 3 launched ahead: on the
  // host backends a launched step has run, so a launch ahead would show.
  OneAndTwoInFlight sessions;
  ASSERT_TRUE(sessions.make());
  std::unique_ptr<Session> &one = sessions.one, &two = sessions.two;
  class ReadAtTwo : public Hook {
  public:
    explicit ReadAtTwo(const Session &s) : session(s) {}
    bool needsStateAfter(int64_t step) const override { return step == 2; }
    Status beforeStep(StepContext &ctx) override {
      calls += "b" + std::to_string(ctx.step) + " ";
      return Status::ok();
    }
    Status afterStep(const StepContext &ctx) override {
      calls += "a" + std::to_string(ctx.step) + " ";
      if (ctx.step == 2)
        return session.variables().read(0, w);
      return Status::ok();
    }
    const Session &session;
    float w[2] = {0, 0};
    std::string calls;
  } hook(*two);
  IndexBatches ba(varyingOrder(4)), bb(varyingOrder(4));
  ASSERT_TRUE(one->train(ba, 2, {}));
  float after2[2];
  ASSERT_TRUE(one->variables().read(0, after2));
  ASSERT_TRUE(two->train(bb, 4, {&hook}));
  EXPECT_EQ(hook.calls, "b1 b2 a1 a2 b3 b4 a3 a4 ");
  EXPECT_EQ(hook.w[0], after2[0]);
  EXPECT_EQ(hook.w[1], after2[1]);
  EXPECT_NE(after2[1], 1.0f); // it trained
}

TEST(Session, SettleFinishesTheStepLaunchedAhead) {
  // A hook that settles in afterStep(2) finds step 3 finished; the run
  // goes on, and step 3's hooks still see it.
  OneAndTwoInFlight sessions;
  ASSERT_TRUE(sessions.make());
  std::unique_ptr<Session> &one = sessions.one, &two = sessions.two;
  class SettleAtTwo : public OrderHook {
  public:
    explicit SettleAtTwo(const Session &s) : session(s) {}
    Status afterStep(const StepContext &ctx) override {
      if (Status s = OrderHook::afterStep(ctx); !s)
        return s;
      if (ctx.step != 2)
        return Status::ok();
      if (Status s = ctx.settle(); !s)
        return s;
      return session.variables().read(0, w);
    }
    const Session &session;
    float w[2] = {0, 0};
  } hook(*two);
  IndexBatches ba(varyingOrder(5)), bb(varyingOrder(5));
  OrderHook reference;
  ASSERT_TRUE(one->train(ba, 3, {&reference}));
  float after3[2];
  ASSERT_TRUE(one->variables().read(0, after3));
  ASSERT_TRUE(one->train(ba, 2, {&reference}));
  ASSERT_TRUE(two->train(bb, 5, {&hook}));
  EXPECT_EQ(hook.calls, "b1 b2 a1 b3 a2 b4 a3 b5 a4 a5 ");
  EXPECT_EQ(hook.w[0], after3[0]);
  EXPECT_EQ(hook.w[1], after3[1]);
  EXPECT_EQ(hook.losses, reference.losses);
  EXPECT_EQ(two->globalStep(), 5);
}

TEST(Session, AStopWithAStepLaunchedAheadFinishesAndCountsIt) {
  // The hooks of step 2 stop the run while step 3 runs: step 3 finishes
  // (nothing runs once train() returns) and counts, though no hook saw
  // it; a later train() goes on from step 4.
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session, 2));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  class StopAtTwo : public OrderHook {
  public:
    Status afterStep(const StepContext &ctx) override {
      if (Status s = OrderHook::afterStep(ctx); !s)
        return s;
      return ctx.step == 2 ? Status::error("stop at 2") : Status::ok();
    }
  } stop;
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}));
  Status s = session->train(batches, -1, {&stop});
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "stop at 2");
  EXPECT_EQ(stop.calls, "b1 b2 a1 b3 a2 ");
  EXPECT_EQ(session->globalStep(), 3);
  OrderHook after;
  s = session->train(batches, 2, {&after});
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(after.calls, "b4 b5 a4 a5 ");
  EXPECT_EQ(session->globalStep(), 5);
}

TEST(Session, LaunchingAheadFetchesNoBatchBeyondItsSteps) {
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session, 2));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}));
  CountingHook hook;
  ASSERT_TRUE(session->train(batches, 3, {&hook}));
  EXPECT_EQ(batches.calls, 3);
  EXPECT_EQ(hook.steps, (std::vector<int64_t>{1, 2, 3}));
  ASSERT_TRUE(session->train(batches, -1, {&hook}));
  EXPECT_EQ(batches.calls, 11); // 7 batches and the end
  EXPECT_EQ(session->globalStep(), 10);
}

TEST(Session, APipelineFailureWithAStepAheadEndsTheRunAfterBoth) {
  // The third fetch fails after step 2 was launched, while steps 1 and 2
  // run: both complete and their hooks see them, then the run fails.
  LoadedPlan loaded;
  std::unique_ptr<Session> session;
  ASSERT_TRUE(makeSession(loaded, session, 2));
  ASSERT_TRUE(session->cacheTrainingData(makeDataset()));
  IndexBatches batches(std::vector<std::vector<int64_t>>(10, {0, 1, 2, 3}), 3);
  OrderHook hook;
  Status s = session->train(batches, -1, {&hook});
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("deliberate pipeline failure"), std::string::npos)
      << s.message();
  EXPECT_EQ(hook.calls, "b1 b2 a1 a2 ");
  EXPECT_EQ(session->globalStep(), 2);
}

TEST(Executor, BackendWithoutDevicesIsNamed) {
  // runtime-unit-tests links no CUDA: Backend::cuda has no device platform.
  if (hasDevicePlatform(Backend::cuda))
    GTEST_SKIP() << "a cuda device platform is registered in this binary";
  EXPECT_EQ(physicalDeviceCount(Backend::cuda), 0);
  Prepared p;
  registerTestKernels();
  p.bytes = buildPlan(1, 4);
  ASSERT_TRUE(verifyPlan(p.bytes.data(), p.bytes.size(), "tiny.plan", p.plan));
  ASSERT_TRUE(p.variables.initialize(*p.plan, 1, 0));
  ExecutorOptions options;
  options.backend = Backend::cuda;
  Status s = Executor::create(*p.plan, *p.plan->programs()->Get(0), p.variables,
                              options, p.executor);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("cuda backend's devices are not available"),
            std::string::npos)
      << s.message();
  EXPECT_EQ(p.variables.placement(), nullptr);
}

namespace {
/// Devices whose "device memory" is host memory behind a counter, so a test
/// sees that placed variables are read and written only through copies.
class CountingDevice final : public Device {
public:
  std::string name() const override { return "counting"; }
  Status allocate(int64_t bytes, DeviceMemory &out) override {
    auto *block = new std::vector<std::byte>(static_cast<size_t>(bytes));
    out = DeviceMemory(block->data(), bytes, [block](void *) { delete block; });
    return Status::ok();
  }
  Status copyFromHost(void *dst, const void *src, size_t bytes) override {
    ++copiesIn;
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    ++copiesOut;
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
  int copiesIn = 0, copiesOut = 0;
};
class CountingDeviceSet final : public DeviceSet {
public:
  explicit CountingDeviceSet(int n) : devices(static_cast<size_t>(n)) {}
  Backend backend() const override { return Backend::cuda; }
  int size() const override { return static_cast<int>(devices.size()); }
  Device &device(int index) override { return devices[index]; }
  Status createRunner(const PreparedProgram &, const ExecutorOptions &,
                      std::unique_ptr<ProgramRunner> &) override {
    return Status::error("no runner");
  }
  std::vector<CountingDevice> devices;
};
} // namespace

TEST(MirroredVariables, PlacedCopiesMoveOnlyThroughTheDevice) {
  auto bytes = buildPlan(1, 4);
  const plan::Plan *plan = nullptr;
  ASSERT_TRUE(verifyPlan(bytes.data(), bytes.size(), "tiny.plan", plan));
  MirroredVariables vars;
  ASSERT_TRUE(vars.initialize(*plan, 2, 0));
  const void *hostCopy = vars.data(1, 0);
  auto set = std::make_shared<CountingDeviceSet>(2);
  ASSERT_TRUE(vars.placeOn(set));
  EXPECT_EQ(vars.placement(), set);
  EXPECT_NE(vars.data(1, 0), hostCopy);
  // Placement copied each device's host-initialized value once.
  EXPECT_EQ(set->devices[0].copiesIn, 1);
  EXPECT_EQ(set->devices[1].copiesIn, 1);
  float w[2] = {0, 0};
  ASSERT_TRUE(vars.read(0, w));
  EXPECT_EQ(w[0], 1.0f); // ones
  EXPECT_EQ(set->devices[0].copiesOut, 1);
  float next[2] = {2.0f, -3.0f};
  ASSERT_TRUE(vars.write(0, next));
  EXPECT_EQ(set->devices[1].copiesIn, 2);
  ASSERT_TRUE(vars.readCopy(1, 0, w));
  EXPECT_EQ(w[1], -3.0f);
  // Placing again on the same devices is a no-op; on others, an error.
  EXPECT_TRUE(vars.placeOn(set));
  Status s = vars.placeOn(std::make_shared<CountingDeviceSet>(2));
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("already placed"), std::string::npos);
  // A host executor refuses variables that live on devices.
  ExecutorOptions options;
  std::unique_ptr<Executor> executor;
  s = Executor::create(*plan, *plan->programs()->Get(0), vars, options,
                       executor);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("not in host memory"), std::string::npos)
      << s.message();
}

TEST(DevicePlatform, ALostDeviceIsReportedThroughItsPlatform) {
  // graphrun ends with std::_Exit when this says so (a hung GPU), so it
  // must follow the platform's own flag and nothing else.
  ASSERT_FALSE(deviceLost());
  bool lost = false;
  DevicePlatform platform;
  platform.lost = [&lost] { return lost; };
  registerDevicePlatform(Backend::reference, platform);
  EXPECT_FALSE(deviceLost());
  lost = true;
  EXPECT_TRUE(deviceLost());
  registerDevicePlatform(Backend::reference, DevicePlatform{});
  EXPECT_FALSE(deviceLost());
}

TEST(Precision, NamesRoundTripAndTheLibraryDefaultIsFp32) {
  EXPECT_EQ(parsePrecision("fp32"), Precision::fp32);
  EXPECT_EQ(parsePrecision("tf32"), Precision::tf32);
  EXPECT_EQ(parsePrecision("fp16"), std::nullopt);
  EXPECT_EQ(parsePrecision("TF32"), std::nullopt);
  for (Precision p : {Precision::fp32, Precision::tf32})
    EXPECT_EQ(parsePrecision(precisionName(p)), p);
  // Tests and library users get exact fp32 unless they ask; graphrun asks
  // for tf32 on a GPU.
  EXPECT_EQ(ExecutorOptions{}.precision, Precision::fp32);
  EXPECT_EQ(SessionOptions{}.executorOptions().precision, Precision::fp32);
  SessionOptions so;
  so.precision = Precision::tf32;
  EXPECT_EQ(so.executorOptions().precision, Precision::tf32);
}
