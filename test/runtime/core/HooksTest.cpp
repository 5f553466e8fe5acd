//===- HooksTest.cpp - the built-in step hooks
//-----------------------------===//

#include "runtime/core/Hooks.h"
#include "runtime/plan/PlanLoader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <unistd.h>
#include <variant>

using namespace graph::runtime;
using Clock = std::chrono::steady_clock;

TEST(StepTimerHook, StatisticsAfterWarmup) {
  std::ostringstream out;
  StepTimerHook timer(2, out);
  SessionInfo info;
  info.globalBatch = 100;
  info.program = "train_x1";
  ASSERT_TRUE(timer.begin(info).isOk());
  auto ms = [](int n) { return std::chrono::milliseconds(n); };
  // Step i runs i ms and its hooks 1 ms: its wall time, from its start to
  // the next step's, is i + 1 ms.
  Clock::time_point t{};
  for (int i = 1; i <= 10; ++i) {
    StepContext ctx;
    ctx.step = i;
    ctx.begin = t;
    ASSERT_TRUE(timer.beforeStep(ctx).isOk());
    ctx.end = t + ms(i);
    ASSERT_TRUE(timer.afterStep(ctx).isOk());
    t = ctx.end + ms(1);
  }
  StepContext next;
  next.begin = t;
  ASSERT_TRUE(timer.beforeStep(next).isOk()); // closes step 10
  // Steps 3..10: mean and median 7.5 ms.
  EXPECT_NEAR(timer.meanStepSeconds(), 0.0075, 1e-9);
  EXPECT_NEAR(timer.medianStepSeconds(), 0.0075, 1e-9);
  EXPECT_NEAR(timer.imagesPerSecond(), 100 / 0.0075, 1e-3);
  info.stepsDone = 10;
  ASSERT_TRUE(timer.end(info).isOk());
  EXPECT_NE(out.str().find("TimeHistory: 10 steps in 0.065 sec"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("over 8 steps after 2 warm-up steps"),
            std::string::npos)
      << out.str();
}

/// The parts of a step (input wait, the devices' forward, backward,
/// all-reduce and update, hooks, the rest) add up to its wall time.
TEST(StepTimerHook, PartsAddUpToTheWallTime) {
  std::ostringstream out;
  StepTimerHook timer(0, out);
  SessionInfo info;
  info.globalBatch = 8;
  info.program = "train_x1";
  ASSERT_TRUE(timer.begin(info).isOk());
  Clock::time_point t0{};
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  StepResult r;
  // Forward 10 ms, backward 20, update 2, from 3 ms into the step.
  r.timestamps.push_back({{"forward_begin", at(3)},
                          {"backward_begin", at(13)},
                          {"update_begin", at(33)},
                          {"step_end", at(35)}});
  StepContext ctx;
  ctx.step = 1;
  ctx.begin = at(0);
  ctx.hooksBeforeSeconds = 0.001;
  ctx.inputWaitSeconds = 0.004;
  ASSERT_TRUE(timer.beforeStep(ctx).isOk());
  ctx.end = at(40);
  ctx.result = &r;
  ASSERT_TRUE(timer.afterStep(ctx).isOk());
  StepContext next;
  next.begin = at(43); // 3 ms of after-step hooks
  ASSERT_TRUE(timer.beforeStep(next).isOk());
  ASSERT_EQ(timer.stepParts().size(), 1u);
  const StepTimerHook::Parts &p = timer.stepParts()[0];
  EXPECT_NEAR(p.wall, 0.043, 1e-12);
  EXPECT_NEAR(p.input, 0.004, 1e-12);
  EXPECT_NEAR(p.hooks, 0.004, 1e-12);
  EXPECT_NEAR(p.devices.forward, 0.010, 1e-12);
  EXPECT_NEAR(p.devices.backward, 0.020, 1e-12);
  EXPECT_NEAR(p.devices.update, 0.002, 1e-12);
  EXPECT_NEAR(p.other, 0.003, 1e-12);
  EXPECT_NEAR(p.input + p.hooks + p.devices.total() + p.other, p.wall, 1e-12);
  ASSERT_TRUE(timer.end(info).isOk());
  EXPECT_NE(out.str().find("step split: input wait 0.0040 sec (9.3%), "
                           "forward 0.0100 sec (23.3%), backward 0.0200 sec "
                           "(46.5%), all-reduce 0.0000 sec (0.0%), update "
                           "0.0020 sec (4.7%), hooks 0.0040 sec (9.3%), "
                           "other 0.0030 sec (7.0%) = 0.0430 sec"),
            std::string::npos)
      << out.str();
}

/// With the next step launched ahead, beforeStep(k+1) comes before
/// afterStep(k): each wall time still runs from a step's begin to the
/// next's, and after-step hooks that ran while the next step did cost
/// nothing; those of a step that was not launched ahead count again.
TEST(StepTimerHook, StepsLaunchedAheadRunFromBeginToBegin) {
  std::ostringstream out;
  StepTimerHook timer(0, out);
  SessionInfo info;
  info.globalBatch = 8;
  info.program = "train_x1";
  info.stepsInFlight = 2;
  ASSERT_TRUE(timer.begin(info).isOk());
  Clock::time_point t0{};
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  auto begin = [&](int step, int ms) {
    StepContext ctx;
    ctx.step = step;
    ctx.begin = at(ms);
    return timer.beforeStep(ctx).isOk();
  };
  auto after = [&](int step, int beginMs, int endMs) {
    StepContext ctx;
    ctx.step = step;
    ctx.begin = at(beginMs);
    ctx.end = at(endMs);
    return timer.afterStep(ctx).isOk();
  };
  // Steps 1 and 2 launched at 0 and 1 ms; step 1 ends at 10, step 3 is
  // launched at 11, step 2 ends at 20. Step 3 is not launched ahead of
  // step 4 (a checkpoint): it ends at 30, step 4 begins at 35.
  ASSERT_TRUE(begin(1, 0));
  ASSERT_TRUE(begin(2, 1));
  ASSERT_TRUE(after(1, 0, 10));
  ASSERT_EQ(timer.stepSeconds().size(), 1u); // 1's next step had begun
  ASSERT_TRUE(begin(3, 11));
  ASSERT_TRUE(after(2, 1, 20));
  ASSERT_TRUE(after(3, 11, 30));
  ASSERT_EQ(timer.stepSeconds().size(), 2u); // 3 waits for 4's begin
  ASSERT_TRUE(begin(4, 35));
  ASSERT_TRUE(after(4, 35, 40));
  ASSERT_EQ(timer.stepParts().size(), 3u);
  const auto &p = timer.stepParts();
  EXPECT_NEAR(p[0].wall, 0.001, 1e-12);
  EXPECT_NEAR(p[0].hooks, 0.0, 1e-12);
  EXPECT_NEAR(p[1].wall, 0.010, 1e-12);
  EXPECT_NEAR(p[1].hooks, 0.0, 1e-12);
  EXPECT_NEAR(p[2].wall, 0.024, 1e-12);
  EXPECT_NEAR(p[2].hooks, 0.005, 1e-12); // 30..35: the devices waited
  for (const StepTimerHook::Parts &part : p)
    EXPECT_NEAR(part.input + part.hooks + part.devices.total() + part.other,
                part.wall, 1e-12);
  info.stepsDone = 4;
  ASSERT_TRUE(timer.end(info).isOk());
  EXPECT_EQ(timer.stepSeconds().size(), 4u);
}

TEST(StepSplit, FromTimestamps) {
  Clock::time_point t0{};
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  StepResult r;
  // Two devices: forward 10 / 20 ms, backward 30 / 40, all-reduce 5 / 5,
  // update 2 / 2.
  for (int d = 0; d < 2; ++d) {
    int f = 10 * (d + 1), b = 30 + 10 * d;
    r.timestamps.push_back({{"step_begin", at(0)},
                            {"forward_begin", at(0)},
                            {"backward_begin", at(f)},
                            {"allreduce_begin", at(f + b)},
                            {"allreduce_end", at(f + b + 5)},
                            {"update_begin", at(f + b + 5)},
                            {"step_end", at(f + b + 7)}});
  }
  StepSplit s = splitStep(r);
  EXPECT_NEAR(s.forward, 0.015, 1e-9);
  EXPECT_NEAR(s.backward, 0.035, 1e-9);
  EXPECT_NEAR(s.allReduce, 0.005, 1e-9);
  EXPECT_NEAR(s.update, 0.002, 1e-9);
}

TEST(StepSplit, HostReductionsBetweenBackwardOpsCountWhole) {
  Clock::time_point t0{};
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  StepResult r;
  // A host thread: backward 10..50 ms with two all-reduce calls of 4 and
  // 6 ms inside it; the compute marks come from the plan, the reduce marks
  // from the executor.
  r.timestamps.push_back({{"step_begin", at(0)},
                          {"forward_begin", at(0)},
                          {"backward_begin", at(10)},
                          {kReduceBegin, at(20)},
                          {kReduceEnd, at(24)},
                          {"allreduce_begin", at(20)},
                          {kReduceBegin, at(40)},
                          {kReduceEnd, at(46)},
                          {"allreduce_end", at(46)},
                          {"backward_end", at(50)},
                          {"update_begin", at(50)},
                          {"step_end", at(52)}});
  StepSplit s = splitStep(r);
  EXPECT_NEAR(s.forward, 0.010, 1e-9);
  EXPECT_NEAR(s.backward, 0.030, 1e-9);
  EXPECT_NEAR(s.allReduce, 0.010, 1e-9);
  EXPECT_NEAR(s.update, 0.002, 1e-9);
}

TEST(StepSplit, AGpuCountsTheReductionsItWaitedForAfterBackward) {
  Clock::time_point t0{};
  auto at = [&](int ms) { return t0 + std::chrono::milliseconds(ms); };
  StepResult r;
  // The comm stream reduced from 20 to 47 ms beside a backward that ended
  // at 40: 7 ms were not hidden.
  r.timestamps.push_back({{"step_begin", at(0)},
                          {"forward_begin", at(0)},
                          {"backward_begin", at(10)},
                          {"allreduce_begin", at(20)},
                          {"backward_end", at(40)},
                          {"allreduce_end", at(47)},
                          {"update_begin", at(47)},
                          {"step_end", at(50)}});
  StepSplit s = splitStep(r);
  EXPECT_NEAR(s.backward, 0.030, 1e-9);
  EXPECT_NEAR(s.allReduce, 0.007, 1e-9);
  EXPECT_NEAR(s.update, 0.003, 1e-9);
}

TEST(LoggerHook, TensorFlowFormat) {
  std::ostringstream out;
  LoggerHook logger(2, out);
  Clock::time_point t0{};
  for (int i = 1; i <= 4; ++i) {
    StepContext ctx;
    ctx.step = i;
    ctx.loss = 1.0 / i;
    ctx.end = t0 + std::chrono::milliseconds(500 * i);
    ASSERT_TRUE(logger.afterStep(ctx).isOk());
  }
  SessionInfo info;
  info.stepsDone = 4;
  ASSERT_TRUE(logger.end(info).isOk());
  EXPECT_EQ(out.str(), "loss = 1, step = 1\n"
                       "global_step/sec: 2\n"
                       "loss = 0.5, step = 2 (0.500 sec)\n"
                       "global_step/sec: 2\n"
                       "loss = 0.25, step = 4 (1.000 sec)\n"
                       "Loss for final step: 0.25.\n");
}

TEST(LoggerHook, FinalLossWhenNothingIsLogged) {
  std::ostringstream out;
  LoggerHook logger(0, out);
  for (int i = 1; i <= 3; ++i) {
    StepContext ctx;
    ctx.step = i;
    ctx.loss = 1.0 / i;
    ASSERT_TRUE(logger.afterStep(ctx).isOk());
  }
  SessionInfo info;
  info.stepsDone = 3;
  ASSERT_TRUE(logger.end(info).isOk());
  EXPECT_EQ(out.str(), "Loss for final step: 0.33333333.\n");
}

namespace graph::runtime {
namespace {

TEST(MetricsFileHook, OneJsonLinePerLoggedStepAndEvaluation) {
  std::ostringstream out;
  MetricsFileHook hook(2, out);
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i <= 4; ++i) {
    StepContext ctx;
    ctx.step = i;
    ctx.loss = i == 4 ? std::nan("") : 1.0 / i;
    ctx.metrics = {{"accuracy", 0.25 * i}};
    ctx.begin = t0;
    ctx.end = t0 + std::chrono::milliseconds(500);
    ASSERT_TRUE(hook.afterStep(ctx).isOk());
  }
  ASSERT_TRUE(
      hook.writeEvaluation(4, {"loss", "accuracy"}, {0.375, 0.875}).isOk());
  EXPECT_EQ(
      out.str(),
      "{\"step\": 1, \"loss\": 1, \"accuracy\": 0.25, \"seconds\": 0.5}\n"
      "{\"step\": 2, \"loss\": 0.5, \"accuracy\": 0.5, \"seconds\": 0.5}\n"
      "{\"step\": 4, \"loss\": null, \"accuracy\": 1, \"seconds\": 0.5}\n"
      "{\"eval\": true, \"step\": 4, \"loss\": 0.375, \"accuracy\": 0.875}\n");
}

} // namespace
} // namespace graph::runtime

namespace graph::runtime {
namespace {

//===----------------------------------------------------------------------===//
// NanGuardHook
//===----------------------------------------------------------------------===//

/// Variables "dense/kernel" [4, 5], "dense_1/kernel" [64, 10] (640 values)
/// and "dense_1/bias" [10], all ones, mirrored on two devices.
class NanGuardTest : public ::testing::Test {
protected:
  void SetUp() override {
    flatbuffers::FlatBufferBuilder b;
    std::vector<flatbuffers::Offset<plan::Variable>> vars;
    for (const auto &[name, shape] :
         std::vector<std::pair<const char *, std::vector<int64_t>>>{
             {"dense/kernel", {4, 5}},
             {"dense_1/kernel", {64, 10}},
             {"dense_1/bias", {10}}})
      vars.push_back(plan::CreateVariableDirect(
          b, name, &shape, plan::DType::f32,
          plan::CreateInitializer(b, plan::InitKind::ones)));
    b.Finish(plan::CreatePlanDirect(b, kPlanVersion, "tiny", &vars));
    bytes_.assign(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
    ASSERT_TRUE(variables_.initialize(*plan::GetPlan(bytes_.data()), 2, 0));
  }

  /// Sets `count` values of `variable`, spread over it, to `value`.
  void poison(const std::string &name, int count, float value) {
    int v = variables_.find(name);
    ASSERT_GE(v, 0) << name;
    std::vector<float> values(
        static_cast<size_t>(variables_.bytes(v)) / sizeof(float), 1.0f);
    for (int i = 0; i < count; ++i)
      values[static_cast<size_t>(i) * values.size() / count] = value;
    ASSERT_TRUE(variables_.write(v, values.data()));
  }

  /// A run whose step outputs `outputs` (by default with a gradient norm).
  static SessionInfo info(std::vector<std::string> outputs = {
                              "loss", "accuracy", "grad_norm"}) {
    SessionInfo info;
    info.outputs = std::move(outputs);
    return info;
  }

  static StepContext step(int64_t n, double loss, double accuracy = 0.5) {
    StepContext ctx;
    ctx.step = n;
    ctx.loss = loss;
    ctx.metrics = {{"accuracy", accuracy}};
    return ctx;
  }

  std::vector<uint8_t> bytes_;
  MirroredVariables variables_;
  const double nan_ = std::numeric_limits<double>::quiet_NaN();
  const float nanf_ = std::numeric_limits<float>::quiet_NaN();
  const float inff_ = std::numeric_limits<float>::infinity();
};

TEST_F(NanGuardTest, PassesFiniteStepsReadingNoVariable) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  EXPECT_EQ(guard.scans(), 1); // the variables the run starts from
  for (int i = 1; i <= 5; ++i) {
    Status s = guard.afterStep(step(i, 1.0 / i));
    EXPECT_TRUE(s) << s.message();
  }
  // The outputs vouched for every step: no variable was read again.
  EXPECT_EQ(guard.scans(), 1);
}

TEST_F(NanGuardTest, NamesTheStepTheLossAndTheFirstPoisonedVariable) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  ASSERT_TRUE(guard.afterStep(step(16, 0.5)));
  // Both later variables poisoned: the guard names the first in plan order.
  poison("dense_1/kernel", 12, nanf_);
  poison("dense_1/bias", 3, inff_);
  Status s = guard.afterStep(step(17, nan_));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "step 17: non-finite loss (nan); first non-finite "
                         "variable: 'dense_1/kernel' (12 of 640 values); "
                         "lower the learning rate or check the data");
}

TEST_F(NanGuardTest, TripsOnTheGradientNorm) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  poison("dense/kernel", 2, nanf_);
  StepContext ctx = step(5, 0.75);
  ctx.gradNorm = nan_;
  Status s = guard.afterStep(ctx);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "step 5: non-finite gradient norm (nan); first "
                         "non-finite variable: 'dense/kernel' (2 of 20 "
                         "values); lower the learning rate or check the "
                         "data");
  EXPECT_EQ(guard.scans(), 2);
}

TEST_F(NanGuardTest, EveryTensorModeFindsAPoisonedVariableBehindFiniteOutputs) {
  poison("dense_1/bias", 0, 1.0f);
  NanGuardHook cheap(variables_);
  NanGuardHook everyTensor(variables_, NanGuardHook::Mode::everyTensor);
  ASSERT_TRUE(cheap.begin(info()));
  ASSERT_TRUE(everyTensor.begin(info()));
  ASSERT_TRUE(everyTensor.afterStep(step(2, 0.5)));
  // An update that overflowed from finite gradients: the outputs of its
  // step are finite, so only --check-numerics sees it at once.
  poison("dense_1/bias", 10, -inff_);
  EXPECT_TRUE(cheap.afterStep(step(3, 0.25)));
  Status s = everyTensor.afterStep(step(3, 0.25));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(),
            "step 3: non-finite variable 'dense_1/bias' (10 of 10 values), "
            "the update of step 3 produced it after a finite loss (0.25); "
            "lower the learning rate or clip the gradients");
  EXPECT_EQ(everyTensor.scans(), 3);
}

TEST_F(NanGuardTest, ReadsEveryVariableWhenTheStepHasNoGradientNorm) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info({"loss", "accuracy"})));
  EXPECT_TRUE(guard.needsStateAfter(4));
  StepContext ctx = step(4, 0.5);
  poison("dense/kernel", 1, nanf_);
  Status s = guard.afterStep(ctx);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("non-finite variable 'dense/kernel'"),
            std::string::npos)
      << s.message();
}

TEST_F(NanGuardTest, SettlesTheStepLaunchedAheadBeforeReadingVariables) {
  // Cheap mode never holds back a launch; when it trips, a step launched
  // ahead may be running on the variables: it finishes before they are
  // read, and its failure is the guard's.
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  EXPECT_FALSE(guard.needsStateAfter(3));
  int settled = 0;
  StepContext ctx = step(3, 0.5);
  ctx.settle = [&] {
    ++settled;
    return Status::ok();
  };
  ASSERT_TRUE(guard.afterStep(ctx));
  EXPECT_EQ(settled, 0);
  ctx.loss = nan_;
  EXPECT_FALSE(guard.afterStep(ctx));
  EXPECT_EQ(settled, 1);
  ctx.settle = [] { return Status::error("step 4 failed"); };
  Status s = guard.afterStep(ctx);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "step 4 failed");
}

TEST_F(NanGuardTest, SaysWhenOnlyTheLossIsNonFinite) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  Status s = guard.afterStep(step(8, std::numeric_limits<double>::infinity()));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "step 8: non-finite loss (inf) while every variable "
                         "is finite: the forward pass of step 8 produced it; "
                         "check that step's data");
}

TEST_F(NanGuardTest, ChecksTheMetrics) {
  NanGuardHook guard(variables_);
  ASSERT_TRUE(guard.begin(info()));
  Status s = guard.afterStep(step(2, 0.5, nan_));
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message().rfind("step 2: non-finite metric 'accuracy' (nan) "
                              "while every variable is finite",
                              0),
            0u)
      << s.message();
}

TEST_F(NanGuardTest, RefusesToStartFromNonFiniteVariables) {
  poison("dense/kernel", 1, nanf_);
  NanGuardHook guard(variables_);
  Status s = guard.begin(info());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("before the first step, variable 'dense/kernel' "
                             "holds 1 non-finite values (of 20)"),
            std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// TraceHook
//===----------------------------------------------------------------------===//

/// Just enough JSON to check the trace's structure: a strict parser of
/// objects, arrays, strings (escapes \" \\ \uXXXX as '?'), numbers, true,
/// false and null; it fails on anything else, trailing text included.
struct Json;
using JsonObject = std::map<std::string, Json>;
using JsonArray = std::vector<Json>;
struct Json {
  std::variant<std::nullptr_t, bool, double, std::string,
               std::shared_ptr<JsonArray>, std::shared_ptr<JsonObject>>
      value;
  const JsonObject &object() const {
    return *std::get<std::shared_ptr<JsonObject>>(value);
  }
  const JsonArray &array() const {
    return *std::get<std::shared_ptr<JsonArray>>(value);
  }
  const std::string &string() const { return std::get<std::string>(value); }
  double number() const { return std::get<double>(value); }
  const Json &operator[](const std::string &key) const {
    return object().at(key);
  }
  bool has(const std::string &key) const { return object().count(key) > 0; }
};

class JsonParser {
public:
  explicit JsonParser(std::string text) : text_(std::move(text)) {}
  bool parse(Json &out) {
    if (!value(out))
      return false;
    space();
    return pos_ == text_.size();
  }

private:
  void space() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }
  bool string(std::string &out) {
    if (text_[pos_] != '"')
      return false;
    for (++pos_; pos_ < text_.size(); ++pos_) {
      char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return false;
      if (c == '\\') {
        char e = text_[++pos_];
        if (e == 'u') {
          pos_ += 4;
          out += '?';
        } else if (e == '"' || e == '\\' || e == '/') {
          out += e;
        } else {
          return false;
        }
        continue;
      }
      out += c;
    }
    return false;
  }
  bool value(Json &out) {
    space();
    if (pos_ >= text_.size())
      return false;
    char c = text_[pos_];
    if (c == '{') {
      auto object = std::make_shared<JsonObject>();
      ++pos_;
      space();
      if (text_[pos_] == '}') {
        ++pos_;
      } else {
        while (true) {
          space();
          std::string key;
          if (!string(key))
            return false;
          space();
          if (text_[pos_++] != ':')
            return false;
          Json member;
          if (!value(member) || object->count(key))
            return false;
          (*object)[key] = std::move(member);
          space();
          char next = text_[pos_++];
          if (next == '}')
            break;
          if (next != ',')
            return false;
        }
      }
      out.value = object;
      return true;
    }
    if (c == '[') {
      auto array = std::make_shared<JsonArray>();
      ++pos_;
      space();
      if (text_[pos_] == ']') {
        ++pos_;
      } else {
        while (true) {
          Json element;
          if (!value(element))
            return false;
          array->push_back(std::move(element));
          space();
          char next = text_[pos_++];
          if (next == ']')
            break;
          if (next != ',')
            return false;
        }
      }
      out.value = array;
      return true;
    }
    if (c == '"') {
      std::string s;
      if (!string(s))
        return false;
      out.value = s;
      return true;
    }
    if (literal("true") || literal("false")) {
      out.value = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
      return true;
    }
    if (literal("null")) {
      out.value = nullptr;
      return true;
    }
    // Numbers: JSON's grammar, which (unlike strtod) has no nan, inf or hex.
    size_t start = pos_;
    if (text_[pos_] == '-')
      ++pos_;
    size_t digits = pos_;
    while (pos_ < text_.size() &&
           (std::isdigit(static_cast<unsigned char>(text_[pos_])) ||
            text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E' ||
            text_[pos_] == '+' || text_[pos_] == '-'))
      ++pos_;
    if (pos_ == digits ||
        !std::isdigit(static_cast<unsigned char>(text_[digits])))
      return false;
    out.value = std::stod(text_.substr(start, pos_ - start));
    return true;
  }

  std::string text_;
  size_t pos_ = 0;
};

TEST(JsonParser, RejectsWhatJsonDoesNotAllow) {
  Json j;
  EXPECT_TRUE(JsonParser("{\"a\": [1, -2.5e3, true, null, \"x\"]}").parse(j));
  EXPECT_EQ(j["a"].array()[1].number(), -2500);
  for (const char *bad : {"{\"a\": nan}", "{\"a\": 1,}", "[1] x", "{\"a\" 1}",
                          "[1, 2", "{\"a\": 1, \"a\": 2}"})
    EXPECT_FALSE(JsonParser(bad).parse(j)) << bad;
}

class TraceHookTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ =
        std::filesystem::path(::testing::TempDir()) /
        ("graph-trace-" +
         std::string(
             ::testing::UnitTest::GetInstance()->current_test_info()->name()) +
         "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// Runs `steps` steps of a 2-replica program through `hook`: each device
  /// goes through forward (100 us, replica 1: 200), backward (300 us), an
  /// all-reduce (50 us) and an update (20 us) after its step_begin. The
  /// times are real (the test waits them out), so the hook's own clock
  /// (the input wait) agrees with them.
  static void runSteps(TraceHook &hook, int steps) {
    using std::chrono::microseconds;
    for (int i = 1; i <= steps; ++i) {
      StepContext ctx;
      ctx.step = i;
      ctx.replicas = 2;
      ctx.begin = Clock::now();
      ctx.inputReady = Clock::now(); // the input wait ends
      Clock::time_point t = Clock::now();
      StepResult result;
      for (int d = 0; d < 2; ++d) {
        Clock::time_point f = t + microseconds(10);
        Clock::time_point b = f + microseconds(100 * (d + 1));
        Clock::time_point a = b + microseconds(300);
        Clock::time_point u = a + microseconds(50);
        result.timestamps.push_back({{"step_begin", t},
                                     {"forward_begin", f},
                                     {"backward_begin", b},
                                     {"allreduce_begin", a},
                                     {"allreduce_end", u},
                                     {"update_begin", u},
                                     {"step_end", u + microseconds(20)}});
      }
      // After the slower replica's step_end (t + 580): the next step starts
      // no earlier, so each track's events stay in time order (with 500,
      // a prompt wake-up put step 2's forward before step 1's update).
      ctx.end = t + microseconds(600);
      ctx.result = &result;
      ASSERT_TRUE(hook.afterStep(ctx));
      std::this_thread::sleep_until(ctx.end);
    }
  }

  static Json parseFile(const std::string &path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    Json j;
    EXPECT_TRUE(JsonParser(text.str()).parse(j)) << text.str();
    return j;
  }

  std::string path(const std::string &name) const {
    return (dir_ / name).string();
  }
  std::filesystem::path dir_;
};

TEST_F(TraceHookTest, OneTrackPerReplicaAndStreamAndAHostTrack) {
  std::string file = path("trace.json");
  {
    TraceHook hook(file);
    SessionInfo info;
    info.program = "train_x2";
    info.replicas = 2;
    info.plannedSteps = 3;
    ASSERT_TRUE(hook.begin(info));
    runSteps(hook, 3);
    EXPECT_FALSE(std::filesystem::exists(file)); // written at end() only
    info.stepsDone = 3;
    ASSERT_TRUE(hook.end(info));
  }
  EXPECT_FALSE(std::filesystem::exists(file + ".tmp"));
  Json trace = parseFile(file);
  ASSERT_TRUE(trace.has("traceEvents"));
  EXPECT_EQ(trace["displayTimeUnit"].string(), "ms");
  EXPECT_EQ(trace["otherData"]["complete"].value, Json{true}.value);

  std::map<int, std::string> processes;
  std::map<std::pair<int, int>, std::string> threads;
  // Per track: the names of its complete events, in order.
  std::map<std::pair<int, int>, std::vector<std::string>> tracks;
  std::map<std::pair<int, int>, double> lastTs;
  std::map<std::string, std::vector<double>> durations; // "pid/name"
  for (const Json &e : trace["traceEvents"].array()) {
    const std::string &ph = e["ph"].string();
    int pid = static_cast<int>(e["pid"].number());
    int tid = static_cast<int>(e["tid"].number());
    if (ph == "M") {
      if (e["name"].string() == "process_name")
        processes[pid] = e["args"]["name"].string();
      else if (e["name"].string() == "thread_name")
        threads[{pid, tid}] = e["args"]["name"].string();
      continue;
    }
    ASSERT_EQ(ph, "X");
    double ts = e["ts"].number(), dur = e["dur"].number();
    EXPECT_GE(ts, 0);
    EXPECT_GE(dur, 0);
    auto track = std::make_pair(pid, tid);
    if (lastTs.count(track)) {
      EXPECT_GE(ts, lastTs[track]) << e["name"].string();
    }
    lastTs[track] = ts;
    EXPECT_TRUE(threads.count(track)) << "metadata after the events";
    tracks[track].push_back(e["name"].string());
    durations[std::to_string(pid) + "/" + e["name"].string()].push_back(dur);
    EXPECT_GE(e["args"]["step"].number(), 1);
  }
  EXPECT_EQ(processes,
            (std::map<int, std::string>{
                {0, "host (train_x2)"}, {1, "replica 0"}, {2, "replica 1"}}));
  EXPECT_EQ(threads,
            (std::map<std::pair<int, int>, std::string>{{{0, 0}, "steps"},
                                                        {{1, 0}, "compute"},
                                                        {{1, 1}, "comm"},
                                                        {{2, 0}, "compute"},
                                                        {{2, 1}, "comm"}}));
  std::vector<std::string> host, compute, comm;
  for (int i = 0; i < 3; ++i) {
    host.insert(host.end(), {"step", "input"});
    compute.insert(compute.end(), {"forward", "backward", "update"});
    comm.push_back("all-reduce");
  }
  EXPECT_EQ(tracks[std::make_pair(0, 0)], host);
  for (int pid : {1, 2}) {
    EXPECT_EQ(tracks[std::make_pair(pid, 0)], compute);
    EXPECT_EQ(tracks[std::make_pair(pid, 1)], comm);
  }
  for (double d : durations["2/forward"])
    EXPECT_NEAR(d, 200, 0.01);
  for (double d : durations["1/backward"])
    EXPECT_NEAR(d, 300, 0.01);
  for (double d : durations["1/all-reduce"])
    EXPECT_NEAR(d, 50, 0.01);
  for (double d : durations["2/update"])
    EXPECT_NEAR(d, 20, 0.01);
  for (double d : durations["0/step"])
    EXPECT_GE(d, 600);
}

TEST_F(TraceHookTest, HostReductionsAreDrawnWhereTheThreadRanThem) {
  std::string file = path("host.json");
  {
    TraceHook hook(file);
    SessionInfo info;
    info.program = "train_x1";
    info.replicas = 1;
    ASSERT_TRUE(hook.begin(info));
    StepContext ctx;
    ctx.step = 1;
    ctx.replicas = 1;
    ctx.begin = Clock::now();
    ctx.inputReady = Clock::now();
    using std::chrono::microseconds;
    Clock::time_point t = Clock::now();
    // Backward 100..500 us with two reductions inside it, 40 and 60 us.
    StepResult result;
    result.timestamps.push_back({{"step_begin", t},
                                 {"forward_begin", t},
                                 {"backward_begin", t + microseconds(100)},
                                 {kReduceBegin, t + microseconds(200)},
                                 {kReduceEnd, t + microseconds(240)},
                                 {kReduceBegin, t + microseconds(400)},
                                 {kReduceEnd, t + microseconds(460)},
                                 {"backward_end", t + microseconds(500)},
                                 {"update_begin", t + microseconds(500)},
                                 {"step_end", t + microseconds(520)}});
    ctx.end = t + microseconds(520);
    ctx.result = &result;
    ASSERT_TRUE(hook.afterStep(ctx));
    info.stepsDone = 1;
    ASSERT_TRUE(hook.end(info));
  }
  Json trace = parseFile(file);
  std::map<std::pair<int, int>, std::vector<std::pair<std::string, double>>>
      tracks;
  for (const Json &e : trace["traceEvents"].array())
    if (e["ph"].string() == "X")
      tracks[{static_cast<int>(e["pid"].number()),
              static_cast<int>(e["tid"].number())}]
          .push_back({e["name"].string(), e["dur"].number()});
  // The compute track: backward around the two reductions (100 + 160 + 40
  // us), which the comm track shows one by one.
  std::vector<std::pair<std::string, double>> compute = tracks[{1, 0}];
  ASSERT_EQ(compute.size(), 5u);
  std::vector<std::string> names;
  double backward = 0;
  for (const auto &[name, dur] : compute) {
    names.push_back(name);
    if (name == "backward")
      backward += dur;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"forward", "backward", "backward",
                                             "backward", "update"}));
  EXPECT_NEAR(backward, 300, 0.01);
  std::vector<std::pair<std::string, double>> comm = tracks[{1, 1}];
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_EQ(comm[0].first, "all-reduce");
  EXPECT_NEAR(comm[0].second, 40, 0.01);
  EXPECT_NEAR(comm[1].second, 60, 0.01);
}

TEST_F(TraceHookTest, AFailedRunLeavesAPartialTrace) {
  std::string file = path("partial.json");
  {
    TraceHook hook(file);
    SessionInfo info;
    info.program = "train_x2";
    info.replicas = 2;
    ASSERT_TRUE(hook.begin(info));
    runSteps(hook, 2);
    // No end(): the session stopped on an error.
  }
  Json trace = parseFile(file);
  EXPECT_EQ(trace["otherData"]["complete"].value, Json{false}.value);
  int complete = 0;
  for (const Json &e : trace["traceEvents"].array())
    complete += e["ph"].string() == "X";
  EXPECT_EQ(complete, 2 * (2 + 2 * 4));
}

TEST_F(TraceHookTest, AnUnwritablePathFailsBeforeTheFirstStep) {
  TraceHook hook(path("missing/trace.json"));
  Status s = hook.begin(SessionInfo());
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("--trace: cannot open '" +
                             path("missing/trace.json.tmp") + "'"),
            std::string::npos)
      << s.message();
}

//===----------------------------------------------------------------------===//
// ProgressBarHook
//===----------------------------------------------------------------------===//

/// Step i of 256 images ran in [t0 + (i-1) * 10 ms, t0 + i * 10 ms).
StepContext barStep(int64_t i) {
  StepContext ctx;
  ctx.step = i;
  ctx.globalBatch = 256;
  ctx.loss = 1.0 / static_cast<double>(i);
  ctx.metrics = {{"accuracy", 0.75}};
  Clock::time_point t0{};
  ctx.begin = t0 + std::chrono::milliseconds(10 * (i - 1));
  ctx.end = t0 + std::chrono::milliseconds(10 * i);
  return ctx;
}

/// The lines drawn: `out` split at '\r', trailing padding removed.
std::vector<std::string> drawnLines(const std::string &out) {
  std::vector<std::string> lines;
  std::stringstream in(out);
  std::string line;
  while (std::getline(in, line, '\r'))
    if (!line.empty()) {
      line.erase(line.find_last_not_of(" \n") + 1);
      lines.push_back(line);
    }
  return lines;
}

TEST(ProgressBarHook, RedrawsAtMostTenTimesASecond) {
  std::ostringstream out;
  ProgressBarHook bar(out, 2000);
  SessionInfo info;
  info.globalBatch = 256;
  ASSERT_TRUE(bar.begin(info));
  // 50 steps of 10 ms: drawn at steps 1, 11, 21, 31, 41 (100 ms apart) and
  // at end() for step 50.
  for (int i = 1; i <= 50; ++i)
    ASSERT_TRUE(bar.afterStep(barStep(i)));
  EXPECT_EQ(bar.redraws(), 5);
  ASSERT_TRUE(bar.end(info));
  EXPECT_EQ(bar.redraws(), 6);
  std::vector<std::string> lines = drawnLines(out.str());
  ASSERT_EQ(lines.size(), 6u) << out.str();
  std::string text = out.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 6);
  // Steps 2..50 took 490 ms: 10 ms a step, 25600 img/s; 1950 steps left.
  EXPECT_EQ(lines.back(), "[>                             ] 50/2000 loss "
                          "0.0200 acc 0.7500 25600 img/s ETA 0:20");
  EXPECT_EQ(lines[1].substr(0, 42),
            "[>                             ] 11/2000 l");
  EXPECT_EQ(text.back(), '\n');
}

TEST(ProgressBarHook, AFinishedBarShowsTheTotalTime) {
  std::ostringstream out;
  ProgressBarHook bar(out, 4);
  ASSERT_TRUE(bar.begin(SessionInfo()));
  for (int i = 1; i <= 4; ++i)
    ASSERT_TRUE(bar.afterStep(barStep(i)));
  ASSERT_TRUE(bar.end(SessionInfo()));
  std::vector<std::string> lines = drawnLines(out.str());
  ASSERT_EQ(lines.size(), 2u) << out.str(); // step 1, then the last step
  EXPECT_EQ(lines.back(), "[==============================] 4/4 loss 0.2500 "
                          "acc 0.7500 25600 img/s in 0:00");
}

TEST(ProgressBarHook, UnknownTotalShowsOnlyTheCount) {
  std::ostringstream out;
  ProgressBarHook bar(out, -1);
  ASSERT_TRUE(bar.begin(SessionInfo()));
  for (int i = 1; i <= 7; ++i)
    ASSERT_TRUE(bar.afterStep(barStep(i)));
  ASSERT_TRUE(bar.end(SessionInfo()));
  std::vector<std::string> lines = drawnLines(out.str());
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines.back(), "step 7 loss 0.1429 acc 0.7500 25600 img/s");
}

TEST(ProgressBarHook, AShorterLineClearsTheLongerOneAndAFailedRunEndsIt) {
  std::ostringstream out;
  {
    ProgressBarHook bar(out, -1);
    ASSERT_TRUE(bar.begin(SessionInfo()));
    StepContext first = barStep(1);
    first.metrics = {{"a_long_metric_name", 0.5}};
    ASSERT_TRUE(bar.afterStep(first));
    StepContext second = barStep(20); // 190 ms later: drawn
    second.metrics.clear();
    ASSERT_TRUE(bar.afterStep(second));
    // No end(): the run failed; the destructor ends the line.
  }
  std::string text = out.str();
  size_t second = text.find('\r', 1);
  ASSERT_NE(second, std::string::npos);
  EXPECT_EQ(second, text.size() - 1 - second) << text; // same width
  EXPECT_EQ(text.back(), '\n');
}

} // namespace
} // namespace graph::runtime
