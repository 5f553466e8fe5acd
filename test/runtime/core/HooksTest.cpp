//===- HooksTest.cpp - the step timer and the logger ----------------------===//

#include "runtime/core/Hooks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

using namespace graph::runtime;
using Clock = std::chrono::steady_clock;

TEST(StepTimerHook, StatisticsAfterWarmup) {
  std::ostringstream out;
  StepTimerHook timer(2, out);
  SessionInfo info;
  info.globalBatch = 100;
  info.program = "train_x1";
  ASSERT_TRUE(timer.begin(info).isOk());
  Clock::time_point t0{};
  for (int i = 1; i <= 10; ++i) {
    StepContext ctx;
    ctx.step = i;
    ctx.begin = t0;
    ctx.end = t0 + std::chrono::milliseconds(i); // steps of 1..10 ms
    ASSERT_TRUE(timer.afterStep(ctx).isOk());
  }
  // Steps 3..10: mean and median 6.5 ms.
  EXPECT_NEAR(timer.meanStepSeconds(), 0.0065, 1e-9);
  EXPECT_NEAR(timer.medianStepSeconds(), 0.0065, 1e-9);
  EXPECT_NEAR(timer.imagesPerSecond(), 100 / 0.0065, 1e-3);
  info.stepsDone = 10;
  ASSERT_TRUE(timer.end(info).isOk());
  EXPECT_NE(out.str().find("TimeHistory: 10 steps in 0.055 sec"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("over 8 steps after 2 warm-up steps"),
            std::string::npos)
      << out.str();
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
  hook.writeEvaluation(4, {"loss", "accuracy"}, {0.375, 0.875});
  EXPECT_EQ(
      out.str(),
      "{\"step\": 1, \"loss\": 1, \"accuracy\": 0.25, \"seconds\": 0.5}\n"
      "{\"step\": 2, \"loss\": 0.5, \"accuracy\": 0.5, \"seconds\": 0.5}\n"
      "{\"step\": 4, \"loss\": null, \"accuracy\": 1, \"seconds\": 0.5}\n"
      "{\"eval\": true, \"step\": 4, \"loss\": 0.375, \"accuracy\": 0.875}\n");
}

} // namespace
} // namespace graph::runtime
