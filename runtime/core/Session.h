//===- Session.h - the training loop and its hooks --------------*- C++ -*-===//
//
// A Session owns a run's state: the mirrored variables, the executor of the
// training program and, when asked to evaluate, of the evaluation program.
// train() pulls a batch, runs a step and lets the hooks look before and
// after each step, the C++ form of TensorFlow's SessionRunHook. The loop
// itself judges no value: stopping on a non-finite loss or variable is
// NanGuardHook's job (Hooks.h), which graphrun always installs first.
//
// On a GPU the loop launches step k+1 before it waits for step k
// (SessionOptions::stepsInFlight), so that the device runs the steps back
// to back while the host reads step k's outputs and runs its hooks: no
// step waits for a host round trip. Hooks then see step k while k+1 runs,
// and beforeStep(k+1) comes before afterStep(k). A hook that reads the
// variables after step k (a checkpoint, an evaluation) says so in
// Hook::needsStateAfter, and the loop launches k+1 only after its hooks.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_SESSION_H
#define RUNTIME_CORE_SESSION_H

#include "runtime/base/Status.h"
#include "runtime/core/Executor.h"
#include "runtime/data/Pipeline.h"
#include "runtime/plan/PlanLoader.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime {

/// How a logged value besides the loss is made from the steps' outputs of
/// its name (plan.fbs, Metric): a weighted mean over the rows (the errors,
/// the accuracies, the per-output losses), the root of one (Keras'
/// RootMeanSquaredError), or Keras' result() of confusion counts that add
/// up over replicas, workers and steps (Precision, Recall, AUC).
struct MetricSpec {
  std::string name;
  plan::MetricReduction reduction = plan::MetricReduction::mean;
  plan::AucCurve curve = plan::AucCurve::roc;
  plan::AucSummation summation = plan::AucSummation::interpolation;

  /// Whether its state is confusion counts [4, T] rather than a mean.
  bool counted() const {
    return reduction != plan::MetricReduction::mean &&
           reduction != plan::MetricReduction::root_mean;
  }
  /// The value of a state: {mean} (mean, root_mean) or the counts.
  double value(const std::vector<double> &state) const;
};

/// The logged values besides the loss, as the plan makes them (its
/// Training.metrics and metric_specs; a metric without a spec is a mean).
std::vector<MetricSpec> metricSpecs(const plan::Plan &plan);

/// What a hook knows about the run as a whole.
struct SessionInfo {
  std::string model;
  std::string program; // "train_x2"
  int replicas = 1;
  Backend backend = Backend::reference;
  int64_t globalBatch = 0;
  /// The global step when train() began (non-zero for a resumed run).
  int64_t initialStep = 0;
  /// The steps train() was asked for (-1: until the data end).
  int64_t plannedSteps = -1;
  /// The training program's scalar outputs ("loss", "accuracy",
  /// "grad_norm"), in program order.
  std::vector<std::string> outputs;
  /// How many steps train() keeps launched at once (1: each step waits for
  /// the previous one's hooks).
  int stepsInFlight = 1;
  /// At end(): the steps this train() ran and their wall time.
  int64_t stepsDone = 0;
  double seconds = 0;
};

/// One step, as the hooks see it.
struct StepContext {
  /// The global step this step produces (1 for the first).
  int64_t step = 0;
  int64_t globalBatch = 0;
  int replicas = 1;
  /// After the step: the mean over replicas of the loss, and each logged
  /// value besides it (the per-output losses, the metrics) over the job's
  /// global batch, in the plan's order.
  double loss = 0;
  std::vector<std::pair<std::string, double>> metrics;
  /// After the step: what each of `metrics` is made of, to add up over an
  /// epoch (EpochMeans): its spec, and its state, {mean} or the counts.
  std::vector<const MetricSpec *> metricSpecs;
  std::vector<std::vector<double>> metricStates;
  /// After the step: the norm of the gradients it applied (the training
  /// program's `grad_norm` output), NaN when the program has none. Finite
  /// exactly when every gradient is: the NaN guard reads it.
  double gradNorm = 0;
  /// After the step: the loss scale it left (its `loss_scale` output: Keras'
  /// LossScaleOptimizer.dynamic_scale after the batch), NaN when it scales
  /// no loss. A step whose gradients were not finite applied no update and
  /// halved it.
  double lossScale = std::numeric_limits<double>::quiet_NaN();
  /// After the step: how many workers had a hook voting to stop
  /// (Hook::votesToStop) as the step finished: the same count on every
  /// worker, so that all stop after the same step.
  int stopVotes = 0;
  /// After the step: per-replica outputs and per-device timestamps.
  const StepResult *result = nullptr;
  /// The batch this process feeds the step (its rows' source positions in
  /// Batch::sourceIndices), valid during beforeStep and afterStep.
  const data::Batch *batch = nullptr;
  /// Host time when the step began (when it was launched; for the first
  /// step, before its batch was fetched), when its batch was ready and its
  /// beforeStep hooks began, and when its outputs were on the host. A
  /// step's wall time runs from its begin to the next step's, hooks
  /// included, as Keras' TimeHistory measures it.
  std::chrono::steady_clock::time_point begin, inputReady, end;
  /// Seconds of [begin, end] spent in the beforeStep hooks, and those in
  /// which the devices waited for input: the first step's batch, and the
  /// part of fetching and staging the next batch that outlasted the step
  /// on the devices (all of it on the host backends, which run the step
  /// before the fetch).
  double hooksBeforeSeconds = 0, inputWaitSeconds = 0;
  /// During afterStep: finishes the steps launched after this one, so that
  /// the variables hold the state after the last of them and no step runs
  /// on them. A hook that must read them without having said so in
  /// Hook::needsStateAfter (the NaN guard, once it trips) calls it first.
  std::function<Status()> settle;
};

/// Sees the run's steps. A hook that returns an error stops the run with it
/// (the NaN guard, a checkpoint that cannot be written); end() runs only
/// after a run that succeeded.
class Hook {
public:
  virtual ~Hook() = default;
  virtual Status begin(const SessionInfo &) { return Status::ok(); }
  virtual Status beforeStep(StepContext &) { return Status::ok(); }
  virtual Status afterStep(const StepContext &) { return Status::ok(); }
  virtual Status end(const SessionInfo &) { return Status::ok(); }
  /// True when afterStep(step) reads or changes the variables (saves a
  /// checkpoint, evaluates): the session then launches the next step only
  /// after this one's hooks. Asked before `step` has finished.
  virtual bool needsStateAfter(int64_t /*step*/) const { return false; }
  /// Asked after each step's afterStep hooks: true ends the run there, as
  /// Keras' model.stop_training does (EarlyStopping). No further step is
  /// launched, those already launched finish, and end() runs: a run
  /// stopped so succeeded.
  virtual bool stopRequested() const { return false; }
  /// Asked on every worker as each step finishes, before its outputs are
  /// summed over the workers, which carry the votes with them
  /// (StepContext::stopVotes): how a fact one worker alone knows (a signal
  /// only it received) becomes a decision every worker takes at the same
  /// step.
  virtual bool votesToStop() const { return false; }
};

/// Runs an evaluation every `every` steps of the data, through a callback
/// that owns the test data and reports the result (graphrun --eval-every):
/// the evaluation runs between two steps, outside both steps' timed intervals,
/// so the step timer's statistics stay those of training alone.
class EvaluationHook : public Hook {
public:
  using EvaluateFn = std::function<Status(int64_t step)>;
  /// Evaluates every `every` steps of the data: after the global steps
  /// `origin + k * every` (origin: the step a Keras file's optimizer
  /// brought, at which the data started).
  EvaluationHook(int64_t every, EvaluateFn evaluate, int64_t origin = 0)
      : every_(every), origin_(origin), evaluate_(std::move(evaluate)) {}

  Status afterStep(const StepContext &ctx) override;
  bool needsStateAfter(int64_t step) const override { return due(step); }

private:
  bool due(int64_t step) const {
    return every_ > 0 && (step - origin_) % every_ == 0;
  }

  int64_t every_, origin_;
  EvaluateFn evaluate_;
};

struct SessionOptions {
  /// This process's replicas. With `workers`, the job has replicas x
  /// workers->size() of them and runs the plan's program for that many.
  int replicas = 1;
  /// The job's workers (null: one process); must outlive the session.
  Workers *workers = nullptr;
  /// What gradients cross between workers as (ExecutorOptions).
  WireType allReduceWire = WireType::f32;
  Backend backend = Backend::reference;
  uint64_t seed = 0;
  std::chrono::milliseconds timeout{60000};
  /// Overrides the plan's learning rate (negative: keep it).
  double learningRate = -1;
  /// cpu: flush subnormals to zero (ExecutorOptions::flushDenormals).
  bool flushDenormals = true;
  /// CUDA: replay the step as a CUDA graph; the physical GPUs to use (0:
  /// all) and the first of them. See ExecutorOptions.
  bool cudaGraph = true;
  int maxPhysicalDevices = 0;
  int firstPhysicalDevice = 0;
  Precision precision = Precision::fp32;
  std::string convAlgoCachePath;
  /// How many steps train() keeps launched at once: 2 launches step k+1
  /// before waiting for step k; 0 takes the backend's choice (2 on a GPU,
  /// whose launches return at once; 1 on the host backends, which run the
  /// step inside its launch, so that launching ahead would only delay its
  /// hooks). The executor's limit caps it (Executor::maxStepsInFlight),
  /// and several workers on a host backend run one at a time.
  int stepsInFlight = 0;

  /// The options of the executors this session creates.
  ExecutorOptions executorOptions() const;
};

/// Evaluation over a whole iterator: loss and metrics averaged over its
/// examples (a padded last batch counts its examples only). With several
/// workers, each evaluates its own iterator and the result is over all of
/// theirs.
struct EvalResult {
  int64_t batches = 0;
  int64_t examples = 0;
  /// "loss" and the logged values besides it, as the plan makes them.
  std::vector<std::string> names;
  std::vector<double> values;
  double value(const std::string &name) const;
  /// When the evaluation program outputs its predictions: the confusion
  /// matrix over the examples, confusion[label * classes + predicted] (the
  /// predicted class is the arg max, the first on a tie, as Keras'
  /// accuracy takes it). Empty otherwise.
  int64_t classes = 0;
  std::vector<int64_t> confusion;
};

/// One output's predictions of one batch: `width` floats an example.
struct OutputRows {
  /// The output's name; empty for a model of one output.
  std::string_view output;
  const float *values = nullptr;
  int64_t width = 0;
};

/// One batch's predictions, handed over in the data's order: every
/// output's rows (in the plan's order) for `rows` examples (padding left
/// out), and each row's position in the source dataset.
using PredictionFn =
    std::function<Status(const std::vector<OutputRows> &outputs, int64_t rows,
                         const int64_t *sourceIndices)>;

class Session {
public:
  /// Initializes the variables (one copy per replica) and prepares the
  /// training program for `options.replicas`.
  static Status create(const LoadedPlan &plan, const SessionOptions &options,
                       std::unique_ptr<Session> &out);

  /// Runs up to `maxSteps` steps (-1: until `batches` ends). While a step
  /// runs, the next batch is fetched and staged (Executor::stage), so on a
  /// GPU its copy overlaps the step; a hook sees a step only after it
  /// finished. With stepsInFlight() 2 the next step is launched before the
  /// hooks of the one before it run, unless one of them needsStateAfter
  /// it; a run that a hook stops then still finishes the step launched
  /// ahead, which counts in globalStep() though no hook saw it.
  Status train(data::BatchIterator &batches, int64_t maxSteps,
               const std::vector<Hook *> &hooks);
  /// Keeps the training data on the devices (Executor::cacheDataset):
  /// train() then takes batches of indices (Pipeline::batchIndices).
  Status cacheTrainingData(std::shared_ptr<const data::Dataset> dataset);
  /// Runs the evaluation program over every batch of `batches`, or over
  /// the first `maxBatches` (-1: all); on a GPU two batches in flight, as
  /// train() runs its steps.
  Status evaluate(data::BatchIterator &batches, EvalResult &out,
                  int64_t maxBatches = -1);
  /// Runs the prediction program (the forward pass in inference mode, as
  /// Keras' predict) over every batch of `batches` and hands each batch's
  /// predictions to `consume`. One worker only: predictions come back in
  /// the order of this process's data.
  Status predict(data::BatchIterator &batches, const PredictionFn &consume);

  int64_t globalStep() const { return globalStep_; }
  /// Continues the step count of a restored checkpoint: the next step is
  /// `step` + 1 (Adam's bias correction and dropout masks key on it).
  Status setGlobalStep(int64_t step);
  /// The training step's learning rate from the next step on, replacing
  /// the plan's constant rate (ReduceLROnPlateau): Executor::setLearningRate.
  Status setLearningRate(double rate) { return train_->setLearningRate(rate); }
  int64_t globalBatch() const { return train_->globalBatch(); }
  /// The rows this process feeds a step (the global batch over the
  /// workers).
  int64_t localBatch() const { return train_->localBatch(); }
  data::LabelFormat labelFormat() const { return train_->labelFormat(); }
  const MirroredVariables &variables() const { return variables_; }
  MirroredVariables &variables() { return variables_; }
  const plan::Program &trainProgram() const { return train_->program(); }

  /// The job's replicas: this process's times its workers.
  int totalReplicas() const;
  /// How many steps train() keeps launched at once (SessionOptions).
  int stepsInFlight() const;

private:
  Session(const LoadedPlan &plan, const SessionOptions &options)
      : plan_(plan), options_(options) {}
  /// Runs `executor` (an evaluation or prediction program, which changes
  /// no variable) over `batches`, the first `maxBatches` of them (-1: all),
  /// handing each batch and its result to `consume`, in order. The next
  /// batch is staged while a step runs and, with stepsInFlight() 2, the
  /// next step launched before the host reads the one before it.
  Status runBatches(Executor &executor, data::BatchIterator &batches,
                    int64_t maxBatches,
                    const std::function<Status(const data::Batch &,
                                               const StepResult &)> &consume);
  /// Replaces result.mean by the mean over every worker's replicas, adds
  /// `counts` (the confusion metrics' counts of this worker's replicas, as
  /// countsOf gave them) over the workers, and counts the workers whose
  /// hooks vote to stop (`vote` is this one's).
  Status meanOverWorkers(StepResult &result,
                         std::vector<std::vector<double>> &counts, bool vote,
                         int &votes);
  /// Each of specs_' counted metrics' counts, summed over this worker's
  /// replicas (empty for the others); an error when the step has no
  /// output of its name.
  Status countsOf(const StepResult &result,
                  std::vector<std::vector<double>> &counts) const;
  /// ctx's loss, gradient norm and logged values from a step's result and
  /// counts.
  void readOutputs(const StepResult &result,
                   std::vector<std::vector<double>> &counts,
                   StepContext &ctx) const;
  /// The executor of the plan's `kind` program for the job's replicas,
  /// made on first use.
  Status programExecutor(plan::ProgramKind kind,
                         std::unique_ptr<Executor> &out);

  const LoadedPlan &plan_;
  SessionOptions options_;
  MirroredVariables variables_;
  std::unique_ptr<Executor> train_;
  std::unique_ptr<Executor> eval_;
  std::unique_ptr<Executor> predict_;
  int64_t globalStep_ = 0;
  /// The logged values besides the loss (metricSpecs of the plan).
  std::vector<MetricSpec> specs_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_SESSION_H
