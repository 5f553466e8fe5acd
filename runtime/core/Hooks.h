//===- Hooks.h - the built-in step hooks ------------------------*- C++ -*-===//
//
// StepTimerHook is the seeds' TimeHistory callback: per-step wall times
// (from one step's start to the next's, hooks and input included), their
// mean and median after a warm-up, images/s, and where a step's time goes
// (input wait, forward, backward, all-reduce and update from the devices'
// timestamps, hooks, the rest), the parts adding up to the wall time.
// LoggerHook prints what TensorFlow's estimator logs:
//   loss = 0.31297606, step = 1000 (0.694 sec)
//   global_step/sec: 144.403
// NanGuardHook stops a run at the first step whose loss, a metric or a
// variable is non-finite; TraceHook records each step's phases per replica
// and stream for Perfetto; ProgressBarHook draws a one-line bar on a
// terminal.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_HOOKS_H
#define RUNTIME_CORE_HOOKS_H

#include "runtime/core/Session.h"

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace graph::runtime {

/// Where the devices' time went in one step, averaged over devices.
struct StepSplit {
  double forward = 0, backward = 0, allReduce = 0, update = 0;
  double total() const { return forward + backward + allReduce + update; }
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
  /// Notes where a step begins: the wall time of the step before it ends
  /// there (with steps launched ahead, this comes before that step's
  /// afterStep).
  Status beforeStep(StepContext &ctx) override;
  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;

  /// Over the steps after the warm-up (all steps if there are no more).
  double meanStepSeconds() const;
  double medianStepSeconds() const;
  double imagesPerSecond() const;
  /// Each step's wall time, complete once the next step began (the last
  /// one's at end()).
  const std::vector<double> &stepSeconds() const { return steps_; }

  /// Where one step's wall time went; the parts add up to `wall`. The
  /// after-step hooks count where the devices waited for them: when the
  /// next step was launched ahead, they ran while it did, and count 0.
  struct Parts {
    double wall = 0, input = 0, hooks = 0, other = 0;
    StepSplit devices;
    /// Of devices.allReduce: the seconds spent between workers.
    double crossWorker = 0;
  };
  /// Each finished step's parts (as stepSeconds()).
  const std::vector<Parts> &stepParts() const { return parts_; }

private:
  using TimePoint = std::chrono::steady_clock::time_point;
  /// A step seen by afterStep whose wall time is still open.
  struct Open {
    Parts parts;
    TimePoint begin, end;
  };
  std::vector<double> measured() const;
  /// Closes the open steps whose next step has begun; at end(), every
  /// open step, a last one at `now`.
  void closeReady(std::optional<TimePoint> now = std::nullopt);

  int64_t warmup_;
  std::ostream &out_;
  int64_t globalBatch_ = 0;
  std::vector<double> steps_;
  std::vector<Parts> parts_;
  // Oldest first, a few of each: vectors, which stop allocating.
  std::vector<Open> open_;
  std::vector<TimePoint> begins_; // steps' begins, from the oldest open's
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
/// A non-finite value is written as null (JSON has no NaN). A line that
/// cannot be written (a full disk) stops the run with an error naming the
/// file, rather than losing the lines after it silently.
class MetricsFileHook : public Hook {
public:
  /// Writes the first step and every `every` steps to `out`; `name` says
  /// what `out` is in errors ("--metrics m.jsonl").
  MetricsFileHook(int64_t every, std::ostream &out,
                  std::string name = "the metrics file")
      : every_(every), out_(out), name_(std::move(name)) {}

  Status afterStep(const StepContext &ctx) override;
  /// Writes an evaluation's result, taken after `step` training steps,
  /// with its confusion matrix (row-major, true class by predicted) when
  /// it has one.
  Status writeEvaluation(int64_t step, const std::vector<std::string> &names,
                         const std::vector<double> &values,
                         const std::vector<int64_t> &confusion = {});
  /// Writes a validation at the end of `epoch` (after `step` steps): its
  /// values under Keras' log names, val_loss and val_<metric>.
  Status writeValidation(int64_t step, int64_t epoch,
                         const std::vector<std::string> &names,
                         const std::vector<double> &values);

private:
  int64_t every_;
  std::ostream &out_;
  std::string name_;
};

/// Stops a run at the first step whose loss, a metric or the gradient norm
/// is non-finite, with an error that names the step and the first
/// non-finite variable:
///   step 17: non-finite loss (nan); first non-finite variable:
///   'dense_1/kernel' (12 of 640 values)
/// A step costs it nothing: it reads the outputs every step brings back
/// anyway (the training step's `grad_norm` is finite exactly when every
/// gradient it applied is), and reads the variables (device 0's copy,
/// through MirroredVariables::read) only once one of those trips, to name
/// the culprit. `graphrun --check-numerics` (Mode::everyTensor) also reads
/// every variable after every step, which catches an update that overflows
/// from finite gradients at the step that does it; a plan without
/// `grad_norm` is checked that way too.
class NanGuardHook : public Hook {
public:
  enum class Mode { outputs, everyTensor };
  explicit NanGuardHook(const MirroredVariables &variables,
                        Mode mode = Mode::outputs)
      : variables_(variables), mode_(mode) {}

  /// Allocates the scratch buffer the variables are read into, once, and
  /// checks the variables the run starts from, so that a non-finite
  /// variable found later was produced by the run.
  Status begin(const SessionInfo &info) override;
  Status afterStep(const StepContext &ctx) override;
  /// Every step when it scans the variables every step; otherwise never
  /// (a trip settles the steps launched ahead before it reads them).
  bool needsStateAfter(int64_t) const override { return everyStep_; }

  /// How many times the variables were read (tests check the cheap mode
  /// reads them only at begin()).
  int64_t scans() const { return scans_; }

private:
  /// The first variable holding a non-finite value and how many it holds.
  struct Finding {
    int variable = -1;
    int64_t nonFinite = 0, elements = 0;
  };
  Status scan(Finding &out);

  const MirroredVariables &variables_;
  Mode mode_;
  /// The plan's step has a `grad_norm` output (SessionInfo::outputs).
  bool hasNorm_ = true;
  /// It scales its loss (a `loss_scale` output): a non-finite gradient
  /// norm is then a step the optimizer skipped, as Keras'
  /// LossScaleOptimizer does, not a divergence; the loss still vouches.
  bool lossScaled_ = false;
  /// Mode::everyTensor, or a step without a gradient norm.
  bool everyStep_ = false;
  std::vector<float> scratch_;
  int64_t scans_ = 0;
};

/// `graphrun --trace trace.json`: Chrome's trace event format, for Perfetto
/// (ui.perfetto.dev) or chrome://tracing. One process per replica with one
/// thread per stream (compute, comm) holding each step's phases (forward,
/// backward, all-reduce, update), and a host process with each step and its
/// wait for input. Events are kept in memory and written at end(); a run
/// that fails writes what it recorded when the hook is destroyed.
class TraceHook : public Hook {
public:
  explicit TraceHook(std::string path) : path_(std::move(path)) {}
  ~TraceHook() override;
  TraceHook(const TraceHook &) = delete;
  TraceHook &operator=(const TraceHook &) = delete;

  /// Opens the temporary file next to `path`, so that an unwritable path
  /// fails the run before its first step rather than after its last.
  Status begin(const SessionInfo &info) override;
  Status afterStep(const StepContext &ctx) override;
  /// Writes the trace to the temporary file and renames it to `path`.
  Status end(const SessionInfo &info) override;

private:
  /// A complete event ("ph": "X"); `name` is a string literal.
  struct Event {
    const char *name;
    int process; // 0: the host, r + 1: replica r
    int thread;  // host: 0; replica: the stream (plan::StreamKind)
    int64_t step;
    std::chrono::steady_clock::time_point begin, end;
  };
  /// Writes the events; `complete` says whether the run reached end().
  Status write(bool complete);

  std::string path_, tempPath_;
  std::ofstream file_;
  bool written_ = false;
  std::string program_;
  int replicas_ = 0;
  std::chrono::steady_clock::time_point origin_;
  std::vector<Event> events_;
};

/// Keras' epoch logs from the steps of an epoch: the running means of fit's
/// loss tracker (each batch's loss weighted by its examples) and of its
/// compiled metrics (each example counts once: Keras' `metrics` take no
/// sample weights), and the stateful metrics' state over the epoch (the
/// root of the mean squared error's mean; Precision's, Recall's and AUC's
/// counts, summed). A step reports its mean over its static rows, of which
/// an epoch's short last batch has padding (StepContext::batch tells how
/// many examples, and the scale its weights carried); without a batch a
/// step counts as one.
class EpochMeans {
public:
  void add(const StepContext &ctx);
  void reset() { *this = EpochMeans(); }
  double loss() const;

  /// The sums so far, for a checkpoint taken mid-epoch: a resumed run's
  /// epoch logs then count the steps before the interruption too.
  struct Sums {
    int64_t steps = 0;
    double loss = 0, examples = 0;
    std::vector<std::string> names;
    std::vector<std::vector<double>> states;
  };
  Sums sums() const { return {steps_, loss_, examples_, names_, states_}; }
  /// Continues from `sums`; the metrics' specs come with the next step.
  void setSums(Sums sums);
  /// Each logged value's epoch value, in the steps' order.
  std::vector<std::pair<std::string, double>> metrics() const;

private:
  int64_t steps_ = 0;
  double loss_ = 0, examples_ = 0;
  std::vector<std::string> names_;
  std::vector<const MetricSpec *> specs_;
  /// Each value's sum over the epoch: of its means times the examples, or
  /// of its counts.
  std::vector<std::vector<double>> states_;
};

/// `graphrun --data-order order.txt`: the source position of every example
/// each step trains on, one line a step ("17: 5 9 0 3 ..."), flushed as it
/// goes. What a test compares to know which data a run (or a worker of a
/// job) saw, and an aid for anyone who wonders. A line that cannot be
/// written stops the run with an error naming `name` ("--data-order
/// order.txt").
class DataOrderHook : public Hook {
public:
  explicit DataOrderHook(std::ostream &out, std::string name = "--data-order")
      : out_(out), name_(std::move(name)) {}
  Status afterStep(const StepContext &ctx) override;

private:
  std::ostream &out_;
  std::string name_;
};

/// A one-line progress bar redrawn in place with '\r', at most ten times a
/// second of the steps' own clock (StepContext::end):
///   [=====>     ] 120/2000 loss 0.4123 acc 0.8512 912 img/s ETA 1:23
/// It counts the steps of this run (the `totalSteps` train() was asked
/// for), not the global step a restored checkpoint continues. With an
/// unknown number of steps (totalSteps <= 0) it shows the count without bar
/// or ETA. end() draws the last step and ends the line.
class ProgressBarHook : public Hook {
public:
  ProgressBarHook(std::ostream &out, int64_t totalSteps)
      : out_(out), total_(totalSteps) {}
  /// Ends a line left open by a run that failed (end() never ran). A caller
  /// that prints the error while the hook lives calls end() first.
  ~ProgressBarHook() override;
  ProgressBarHook(const ProgressBarHook &) = delete;
  ProgressBarHook &operator=(const ProgressBarHook &) = delete;

  Status begin(const SessionInfo &info) override;
  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;

  /// How many times the line was drawn (tests check the throttling).
  int64_t redraws() const { return redraws_; }

private:
  void draw();

  std::ostream &out_;
  int64_t total_;
  int64_t redraws_ = 0;
  size_t lastWidth_ = 0;
  bool lineOpen_ = false;
  // The steps seen in this run, and whether the last one was drawn.
  int64_t stepsSeen_ = 0;
  bool stepDrawn_ = true;
  double loss_ = 0;
  std::vector<std::pair<std::string, double>> metrics_;
  int64_t globalBatch_ = 0;
  std::chrono::steady_clock::time_point firstBegin_, firstEnd_, lastEnd_,
      lastDraw_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_HOOKS_H
