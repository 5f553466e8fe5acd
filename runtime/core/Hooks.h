//===- Hooks.h - the built-in step hooks ------------------------*- C++ -*-===//
//
// StepTimerHook is the seeds' TimeHistory callback: per-step times, their
// mean and median after a warm-up, images/s, and where a step's time goes
// (forward, backward, all-reduce, update) from the devices' timestamps.
// LoggerHook prints what TensorFlow's estimator logs:
//   loss = 0.31297606, step = 1000 (0.694 sec)
//   global_step/sec: 144.403
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_HOOKS_H
#define RUNTIME_CORE_HOOKS_H

#include "runtime/core/Session.h"

#include <chrono>
#include <cstdint>
#include <ostream>
#include <vector>

namespace graph::runtime {

/// Where the devices' time went in one step, averaged over devices.
struct StepSplit {
  double forward = 0, backward = 0, allReduce = 0, update = 0;
};

/// The split of one step from its per-device timestamps.
StepSplit splitStep(const StepResult &result);

class StepTimerHook : public Hook {
public:
  /// Statistics skip the first `warmupSteps` steps (allocation, caches);
  /// the summary goes to `out` at end().
  StepTimerHook(int64_t warmupSteps, std::ostream &out)
      : warmup_(warmupSteps), out_(out) {}

  Status begin(const SessionInfo &info) override;
  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;

  /// Over the steps after the warm-up (all steps if there are no more).
  double meanStepSeconds() const;
  double medianStepSeconds() const;
  double imagesPerSecond() const;
  const std::vector<double> &stepSeconds() const { return steps_; }

private:
  std::vector<double> measured() const;

  int64_t warmup_;
  std::ostream &out_;
  int64_t globalBatch_ = 0;
  std::vector<double> steps_;
  std::vector<StepSplit> splits_;
};

class LoggerHook : public Hook {
public:
  /// Logs the first step and every `every` steps to `out`.
  LoggerHook(int64_t every, std::ostream &out) : every_(every), out_(out) {}

  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;

private:
  int64_t every_;
  std::ostream &out_;
  bool logged_ = false;
  int64_t lastStep_ = 0;
  std::chrono::steady_clock::time_point lastTime_;
  double lastLoss_ = 0;
};

/// `graphrun --metrics m.jsonl`: one JSON object per logged step,
///   {"step": 10, "loss": 0.52, "accuracy": 0.81, "seconds": 0.63}
/// and one per evaluation,
///   {"eval": true, "step": 100, "loss": 0.37, "accuracy": 0.87}.
/// Each line is flushed when written, so a killed run keeps what it logged.
/// A non-finite value is written as null (JSON has no NaN).
class MetricsFileHook : public Hook {
public:
  /// Writes the first step and every `every` steps to `out`.
  MetricsFileHook(int64_t every, std::ostream &out)
      : every_(every), out_(out) {}

  Status afterStep(const StepContext &ctx) override;
  /// Writes an evaluation's result, taken after `step` training steps.
  void writeEvaluation(int64_t step, const std::vector<std::string> &names,
                       const std::vector<double> &values);

private:
  int64_t every_;
  std::ostream &out_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_HOOKS_H
