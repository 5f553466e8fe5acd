//===- EmaScheduleTest.cpp - Keras' use_ema schedule ----------------------===//
//
// The schedule of graph.ema_update against Keras 3.15's
// base_optimizer.py: _update_model_variables_moving_average runs every
// step with momentum 0 while `iterations` (applied updates: the raw
// counter floor-divided by gradient_accumulation_steps) is 0, and the
// variables are overwritten when (iterations + 1) % ema_overwrite_frequency
// is 0. The expected columns are that formula evaluated by hand for the
// raw counter _iterations = step - 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/EmaSchedule.h"

#include <gtest/gtest.h>

using graph::runtime::EmaSchedule;

TEST(EmaSchedule, WithoutAccumulationEveryStepIsAnUpdate) {
  EmaSchedule s{0.9, 2, 1};
  // step:            1    2    3    4    5
  const double m[] = {0.0, 0.9, 0.9, 0.9, 0.9};
  const bool w[] = {false, true, false, true, false};
  for (int64_t step = 1; step <= 5; ++step) {
    EXPECT_EQ(s.momentumAt(step), m[step - 1]) << step;
    EXPECT_EQ(s.overwritesAt(step), w[step - 1]) << step;
  }
}

TEST(EmaSchedule, AccumulationCountsAppliedUpdates) {
  EmaSchedule s{0.5, 2, 3};
  // step:        1  2  3  4  5  6  7  8  9  10
  // iterations:  0  0  0  1  1  1  2  2  2  3
  for (int64_t step = 1; step <= 10; ++step) {
    int64_t iterations = (step - 1) / 3;
    EXPECT_EQ(s.iterations(step), iterations) << step;
    EXPECT_EQ(s.momentumAt(step), step <= 3 ? 0.0 : 0.5) << step;
    EXPECT_EQ(s.overwritesAt(step), iterations == 1 || iterations == 3) << step;
  }
  EmaSchedule never{0.5, 0, 3};
  for (int64_t step = 1; step <= 10; ++step)
    EXPECT_FALSE(never.overwritesAt(step)) << step;
}
