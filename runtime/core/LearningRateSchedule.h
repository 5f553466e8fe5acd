//===- LearningRateSchedule.h - Keras 3 schedules, for every backend ------===//
//
// The learning rate of an optimizer step as a function of the step counter,
// Keras 3's keras/src/optimizers/schedules/learning_rate_schedule.py: the
// one definition the reference, cpu and CUDA optimizer kernels share (host
// and device code), so that the CUDA kernel evaluates it from the step in
// device memory and a replayed CUDA graph follows the schedule. Keras
// evaluates the schedule at the optimizer's `iterations` before the update
// (0 on the first step): `iteration` here is the runtime's step minus one.
//
// The kernels' configuration carries it next to the optimizer's
// hyper-parameters: `lr_schedule` (the Kind, as a number), `learning_rate`
// (the initial rate), `lr_decay_steps`, `lr_decay_rate`, `lr_staircase`,
// `lr_alpha`, `lr_warmup_target`, `lr_warmup_steps`, `lr_end_learning_rate`,
// `lr_power`, `lr_cycle`, `lr_t_mul`, `lr_m_mul`, `lr_boundaries` and
// `lr_values` (float lists).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_LEARNINGRATESCHEDULE_H
#define RUNTIME_CORE_LEARNINGRATESCHEDULE_H

#include "runtime/core/Kernel.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <variant>

#if defined(__CUDACC__)
#define GRAPH_SCHEDULE_HOST_DEVICE __host__ __device__
#else
#define GRAPH_SCHEDULE_HOST_DEVICE
#endif

namespace graph::runtime {

struct LearningRateSchedule {
  enum Kind : int32_t {
    constant = 0,
    exponential_decay = 1,
    inverse_time_decay = 2,
    piecewise_constant_decay = 3,
    polynomial_decay = 4,
    cosine_decay = 5,
    cosine_decay_restarts = 6,
  };
  /// PiecewiseConstantDecay's boundaries at most (the struct travels by
  /// value to the CUDA kernel).
  static constexpr int kMaxBoundaries = 16;

  int32_t kind = constant;
  double initial = 0.01; // the optimizer's learning_rate
  double decaySteps = 1, decayRate = 0;
  double alpha = 0, warmupTarget = 0, warmupSteps = 0;
  double endLearningRate = 0, power = 1;
  double tMul = 2, mMul = 1; // CosineDecayRestarts (decaySteps: the first)
  bool staircase = false, cycle = false;
  int32_t numBoundaries = 0;
  double boundaries[kMaxBoundaries] = {};
  double values[kMaxBoundaries + 1] = {};
};

/// The learning rate at Keras' `iterations` = `iteration` (0 on the first
/// update).
GRAPH_SCHEDULE_HOST_DEVICE inline double
learningRateAt(const LearningRateSchedule &s, int64_t iteration) {
  double step = static_cast<double>(iteration);
  switch (s.kind) {
  case LearningRateSchedule::exponential_decay: {
    double p = step / s.decaySteps;
    if (s.staircase)
      p = floor(p);
    return s.initial * pow(s.decayRate, p);
  }
  case LearningRateSchedule::inverse_time_decay: {
    double p = step / s.decaySteps;
    if (s.staircase)
      p = floor(p);
    return s.initial / (1.0 + s.decayRate * p);
  }
  case LearningRateSchedule::piecewise_constant_decay: {
    // values[i] for boundaries[i-1] < step <= boundaries[i].
    int32_t i = 0;
    while (i < s.numBoundaries && step > s.boundaries[i])
      ++i;
    return s.values[i];
  }
  case LearningRateSchedule::polynomial_decay: {
    double decaySteps = s.decaySteps;
    if (s.cycle) {
      double multiplier = step == 0 ? 1.0 : ceil(step / s.decaySteps);
      decaySteps *= multiplier;
    } else {
      step = fmin(step, decaySteps);
    }
    double p = step / decaySteps;
    return (s.initial - s.endLearningRate) * pow(1.0 - p, s.power) +
           s.endLearningRate;
  }
  case LearningRateSchedule::cosine_decay: {
    const double pi = 3.14159265358979323846;
    auto decay = [&](double t, double from) {
      double cosine = 0.5 * (1.0 + cos(pi * (t / s.decaySteps)));
      return from * ((1.0 - s.alpha) * cosine + s.alpha);
    };
    if (s.warmupSteps <= 0)
      return decay(fmin(step, s.decaySteps), s.initial);
    step = fmin(step, s.decaySteps + s.warmupSteps);
    if (step < s.warmupSteps)
      return (s.warmupTarget - s.initial) * (step / s.warmupSteps) + s.initial;
    return decay(step - s.warmupSteps, s.warmupTarget);
  }
  case LearningRateSchedule::cosine_decay_restarts: {
    // keras/src/optimizers/schedules/learning_rate_schedule.py: which
    // period the step is in (periods t_mul times longer each), and how far
    // into it.
    const double pi = 3.14159265358979323846;
    double fraction = step / s.decaySteps, restart;
    if (s.tMul == 1.0) {
      restart = floor(fraction);
      fraction -= restart;
    } else {
      restart = floor(log(1.0 - fraction * (1.0 - s.tMul)) / log(s.tMul));
      double before = (1.0 - pow(s.tMul, restart)) / (1.0 - s.tMul);
      fraction = (fraction - before) / pow(s.tMul, restart);
    }
    double cosine = 0.5 * pow(s.mMul, restart) * (1.0 + cos(pi * fraction));
    return s.initial * ((1.0 - s.alpha) * cosine + s.alpha);
  }
  default:
    return s.initial;
  }
}

/// The schedule of an optimizer_update launch's configuration (a constant
/// learning_rate when it names none). Fails, with `error` set, on a
/// PiecewiseConstantDecay whose lists do not fit.
/// Nadam's momentum cache (keras/src/optimizers/nadam.py) at `step` (1 on
/// the first update): beta_1 * (1 - 0.5 * 0.96^step).
GRAPH_SCHEDULE_HOST_DEVICE inline double nadamMomentumCache(double beta1,
                                                            int64_t step) {
  return beta1 * (1.0 - 0.5 * pow(0.96, static_cast<double>(step)));
}

/// Nadam's `u_product` as Keras holds it during update `step`: the product
/// of the momentum cache over 1..step. Keras keeps it in a scalar variable
/// that every step multiplies; it is a function of the step alone, so the
/// kernels compute it here and a checkpoint restores it with the step.
/// Past i = 1000, 1 - 0.5 * 0.96^i is 1 in double (0.5 * 0.96^1000 <
/// 1e-18): those steps contribute beta_1 alone, and the loop stays short.
GRAPH_SCHEDULE_HOST_DEVICE inline double nadamUProduct(double beta1,
                                                       int64_t step) {
  int64_t n = step < 1000 ? step : 1000;
  double product = 1.0, decay = 1.0;
  for (int64_t i = 1; i <= n; ++i) {
    decay *= 0.96;
    product *= 1.0 - 0.5 * decay;
  }
  return product * pow(beta1, static_cast<double>(step));
}

inline bool scheduleFromConfig(const KernelConfig &cfg, LearningRateSchedule &s,
                               std::string &error) {
  s = LearningRateSchedule();
  s.kind = static_cast<int32_t>(cfg.getInt("lr_schedule", 0));
  s.initial = cfg.getFloat("learning_rate", 0.01);
  s.decaySteps = cfg.getFloat("lr_decay_steps", 1.0);
  s.decayRate = cfg.getFloat("lr_decay_rate", 0.0);
  s.staircase = cfg.getFloat("lr_staircase", 0.0) != 0.0;
  s.alpha = cfg.getFloat("lr_alpha", 0.0);
  s.warmupTarget = cfg.getFloat("lr_warmup_target", 0.0);
  s.warmupSteps = cfg.getFloat("lr_warmup_steps", 0.0);
  s.endLearningRate = cfg.getFloat("lr_end_learning_rate", 0.0);
  s.power = cfg.getFloat("lr_power", 1.0);
  s.cycle = cfg.getFloat("lr_cycle", 0.0) != 0.0;
  s.tMul = cfg.getFloat("lr_t_mul", 2.0);
  s.mMul = cfg.getFloat("lr_m_mul", 1.0);
  if (s.kind < LearningRateSchedule::constant ||
      s.kind > LearningRateSchedule::cosine_decay_restarts) {
    error = "unknown learning-rate schedule " + std::to_string(s.kind);
    return false;
  }
  if (s.kind != LearningRateSchedule::piecewise_constant_decay)
    return true;
  std::vector<double> boundaries = cfg.getFloats("lr_boundaries"),
                      values = cfg.getFloats("lr_values");
  if (boundaries.empty() ||
      boundaries.size() > LearningRateSchedule::kMaxBoundaries ||
      values.size() != boundaries.size() + 1) {
    error = "piecewise_constant_decay needs 1 to " +
            std::to_string(LearningRateSchedule::kMaxBoundaries) +
            " boundaries and one value more, got " +
            std::to_string(boundaries.size()) + " and " +
            std::to_string(values.size());
    return false;
  }
  s.numBoundaries = static_cast<int32_t>(boundaries.size());
  for (size_t i = 0; i < boundaries.size(); ++i)
    s.boundaries[i] = boundaries[i];
  for (size_t i = 0; i < values.size(); ++i)
    s.values[i] = values[i];
  return true;
}

} // namespace graph::runtime

#endif // RUNTIME_CORE_LEARNINGRATESCHEDULE_H
