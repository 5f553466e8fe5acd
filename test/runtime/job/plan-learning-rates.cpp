//===- plan-learning-rates.cpp - a plan's learning rate, step by step -----===//
//
//   plan-learning-rates PLAN STEPS
//
// Prints the learning rate the optimizer update of PLAN uses at Keras'
// iterations 0 .. STEPS-1, one "<iteration> <rate>" line each (%.17g): the
// schedule graphc emitted, evaluated by runtime/core/LearningRateSchedule.h
// as every backend's update kernel evaluates it. keras-lr-schedule-values.test
// compares the lines with Keras' own schedule objects.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Kernel.h"
#include "runtime/core/LearningRateSchedule.h"
#include "runtime/plan/PlanLoader.h"

#include <cstdio>
#include <cstdlib>
#include <string>

using namespace graph::runtime;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: plan-learning-rates PLAN STEPS\n");
    return 2;
  }
  LoadedPlan loaded;
  if (Status s = loadPlan(argv[1], loaded); !s) {
    std::fprintf(stderr, "plan-learning-rates: %s\n", s.message().c_str());
    return 1;
  }
  const graph::plan::Training *training = loaded.plan->training();
  if (!training || !training->hyper_parameters()) {
    std::fprintf(stderr, "plan-learning-rates: %s has no training\n", argv[1]);
    return 1;
  }
  KernelConfig config = KernelConfig::fromPlan(training->hyper_parameters());
  LearningRateSchedule schedule;
  std::string error;
  if (!scheduleFromConfig(config, schedule, error)) {
    std::fprintf(stderr, "plan-learning-rates: %s\n", error.c_str());
    return 1;
  }
  long steps = std::strtol(argv[2], nullptr, 10);
  for (long i = 0; i < steps; ++i)
    std::printf("%ld %.17g\n", i, learningRateAt(schedule, i));
  return 0;
}
