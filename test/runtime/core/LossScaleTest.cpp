//===- LossScaleTest.cpp - Keras' dynamic loss scale, step by step --------===//
//
// The oracle is Keras' LossScaleOptimizer (keras/src/optimizers/
// loss_scale_optimizer.py, the TensorFlow path) written out: a finite step
// counts (step_counter += 1, or at dynamic_growth_steps - 1 the counter
// restarts and the scale doubles) and is applied (iterations += 1); a
// non-finite one halves the scale and restarts the counter.

#include "runtime/core/LossScale.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

using namespace graph::runtime;
using graph::plan::DType;

namespace {

struct State {
  float scale, counter, iterations;
};

/// One loss_scale_update with `norm`: the new state and the reported norm.
State step(State in, float norm, int64_t growth, float &reported,
           int64_t replicas = 1) {
  float ins[4] = {in.scale, in.counter, in.iterations, norm};
  float outs[4] = {};
  std::vector<TensorRef> insRef, outsRef;
  for (int k = 0; k < 4; ++k) {
    insRef.push_back(TensorRef{&ins[k], {1}, DType::f32});
    outsRef.push_back(TensorRef{&outs[k], {1}, DType::f32});
  }
  KernelConfig cfg;
  cfg.set("growth_steps", growth);
  cfg.set("replicas", replicas);
  Status s = lossScaleUpdateKernel({}, cfg, insRef, outsRef);
  EXPECT_TRUE(s.isOk()) << s.message();
  reported = outs[3];
  return {outs[0], outs[1], outs[2]};
}

TEST(LossScale, FollowsKerasLossScaleOptimizer) {
  const float inf = std::numeric_limits<float>::infinity();
  // Growth every 3 finite steps; a NaN or an infinity skips.
  const float norms[] = {1, 1, 1, 1, inf, 1, std::nanf(""), 1, 1, 1};
  State s{1024.0f, 0.0f, 0.0f};
  // Keras' variables, by hand.
  double scale = 1024, counter = 0, iterations = 0;
  for (float norm : norms) {
    float reported;
    State next = step(s, norm, 3, reported);
    if (std::isfinite(norm)) {
      EXPECT_EQ(reported, norm / s.scale);
      iterations += 1;
      if (counter == 2) {
        counter = 0;
        scale *= 2;
      } else {
        counter += 1;
      }
    } else {
      EXPECT_FALSE(std::isfinite(reported));
      counter = 0;
      scale /= 2;
    }
    EXPECT_EQ(next.scale, scale);
    EXPECT_EQ(next.counter, counter);
    EXPECT_EQ(next.iterations, iterations);
    s = next;
  }
  // 1024 -> 2048 after 3 finite steps, halved twice, doubled once more.
  EXPECT_EQ(s.scale, 1024.0f);
  EXPECT_EQ(s.iterations, 8.0f);
}

TEST(LossScale, ReplicasReportTheUnscaledNorm) {
  // Two replicas' averaged gradients carry scale / 2.
  float reported;
  step({1024.0f, 0.0f, 0.0f}, 6.0f, 2000, reported, 2);
  EXPECT_EQ(reported, 6.0f / 512.0f);
}

TEST(LossScale, RefusesToCountPastFloatPrecision) {
  float ins[4] = {1.0f, 0.0f, 16777215.0f, 1.0f}, outs[4] = {};
  std::vector<TensorRef> i, o;
  for (int k = 0; k < 4; ++k) {
    i.push_back(TensorRef{&ins[k], {1}, DType::f32});
    o.push_back(TensorRef{&outs[k], {1}, DType::f32});
  }
  Status s = lossScaleUpdateKernel({}, {}, i, o);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("reached 2^24"), std::string::npos) << s.message();
}

TEST(LossScale, ScaleByMultipliesByTheReplicasShare) {
  std::vector<float> x = {1.5f, -2.0f, 0.25f}, y(3);
  float scale = 32768.0f;
  KernelConfig cfg;
  cfg.set("replicas", int64_t{4});
  Status s = scaleByKernel({}, cfg,
                           {TensorRef{x.data(), {3}, DType::f32},
                            TensorRef{&scale, {1}, DType::f32}},
                           {TensorRef{y.data(), {3}, DType::f32}});
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_EQ(y, (std::vector<float>{12288.0f, -16384.0f, 2048.0f}));
  float wide[2] = {1, 2};
  s = scaleByKernel(
      {}, {},
      {TensorRef{x.data(), {3}, DType::f32}, TensorRef{wide, {2}, DType::f32}},
      {TensorRef{y.data(), {3}, DType::f32}});
  EXPECT_FALSE(s.isOk());
}

} // namespace
