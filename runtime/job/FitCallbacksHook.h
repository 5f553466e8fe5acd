//===- FitCallbacksHook.h - Keras' fit callbacks at epoch ends -*- C++ -*-===//
//
// What Keras' fit() does between two epochs, as one step hook: the epoch's
// logs (the mean of its steps' loss and metrics, as Keras' metric trackers
// average equal batches; then validation's val_*), given in turn to
// ReduceLROnPlateau (which adds `learning_rate`), EarlyStopping,
// ModelCheckpoint(save_best_only), CSVLogger and TensorBoard, in that order
// (Keras calls callbacks in the order given; this is the order in which
// each sees what the ones before it did). The decisions are FitCallbacks.h's.
//
// Every worker of a job runs the hook on the same (all-reduced) logs, so
// all make the same decisions: all stop, all lower the rate; only the chief
// writes files. At an epoch's end no step is in flight (needsStateAfter),
// so a new learning rate applies from the next epoch's first step, as in
// Keras. TensorBoard follows Keras' layout: DIR/train and DIR/validation,
// epoch_<log> at the epoch (0-based), batch_<log> every `batchEvery`
// global steps (the epoch's running means so far, as Keras' batch logs
// are), plus batch_step_seconds and batch_examples_per_second.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_FITCALLBACKSHOOK_H
#define RUNTIME_JOB_FITCALLBACKSHOOK_H

#include "runtime/core/Hooks.h"
#include "runtime/core/Session.h"
#include "runtime/job/FitCallbacks.h"
#include "runtime/job/TensorBoardEvents.h"

#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace graph::runtime::job {

class FitCallbacksHook : public Hook {
public:
  struct Callbacks {
    std::optional<EarlyStopping> earlyStopping;
    std::optional<ReduceLROnPlateau> reduceLr;
    std::optional<BestCheckpoint> bestCheckpoint;
    std::string bestCheckpointPath;
    /// ModelCheckpoint's every-epoch save: "{epoch}" in the path becomes
    /// the epoch from 1 (empty: none).
    std::string epochCheckpointPattern;
    std::unique_ptr<CsvLogger> csv;
    std::unique_ptr<TensorBoardWriter> tensorBoardTrain, tensorBoardValidation;
    /// TensorBoard's per-step scalars every this many steps (0: none).
    int64_t batchEvery = 0;
    /// Each epoch's logs, as the callbacks left them, appended here
    /// (Keras' History; null: none).
    std::vector<EpochLogs> *history = nullptr;
    /// The global step the epochs count from: 0 for graphrun, whose global
    /// step is the data's; the Python module's second fit() starts its
    /// first epoch at the optimizer's step so far.
    int64_t stepOrigin = 0;
    /// The first epoch's number (Keras' initial_epoch): the epochs the
    /// callbacks see count from it.
    int64_t epochOrigin = 0;
  };
  /// What the hook asks of the job.
  struct Job {
    /// Validation at the end of the epoch that ends at global step `step`:
    /// val_loss and val_<metric> into `logs` (unset: no validation data).
    std::function<Status(int64_t step, EpochLogs &logs)> validate;
    /// The model's weights, every one (restore_best_weights' copy).
    std::function<Status(std::vector<std::vector<float>> &)> readWeights;
    std::function<Status(const std::vector<std::vector<float>> &)> writeWeights;
    /// Sets the optimizer's rate for the steps to come.
    std::function<Status(double rate)> setLearningRate;
    /// Saves the model to `path` (its format by its name).
    std::function<Status(const std::string &path, double learningRate)> save;
  };

  /// `stepsPerEpoch` steps make an epoch; the run starts after
  /// `initialStep` (a resumed run's epochs keep their numbers);
  /// `learningRate` is the plan's constant rate. Messages (Keras' verbose
  /// lines) go to `out` when `chief`.
  FitCallbacksHook(Callbacks callbacks, Job job, int64_t stepsPerEpoch,
                   double learningRate, bool chief, std::ostream &out);

  Status begin(const SessionInfo &info) override;
  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;
  bool needsStateAfter(int64_t step) const override {
    return (step - c_.stepOrigin) % stepsPerEpoch_ == 0;
  }
  bool stopRequested() const override { return stop_; }

  /// The optimizer's rate now (ReduceLROnPlateau's last assignment).
  double learningRate() const { return learningRate_; }
  /// Keras' on_train_end for a run that ended (not one a preemption
  /// stopped, which resumes): EarlyStopping's restore_best_weights sets the
  /// best epoch's weights back. The job calls it after the hooks' end(),
  /// so that the last checkpoint holds the last step's state, which a
  /// resumed run goes on from.
  Status trainEnd();
  /// Whether trainEnd() set the best epoch's weights back.
  bool restoredBestWeights() const { return restored_; }

  /// The state a checkpoint after the last step keeps, so that a resumed
  /// run decides what the uninterrupted one would have: a JSON text (the
  /// rate, whether EarlyStopping stopped the run, the epoch's sums so far,
  /// each callback's counters and best, the paths and sizes of the CSV log
  /// and the TensorBoard event files) and
  /// EarlyStopping's copy of the best weights (bestWeights(); empty:
  /// none). Keras' BackupAndRestore keeps only the weights and optimizer,
  /// and its resumed fit() restarts every callback.
  std::string saveState() const;
  const std::vector<std::vector<float>> &bestWeights() const {
    return bestWeights_;
  }
  /// Before begin(): continues from a checkpoint's saveState() and best
  /// weights. The callbacks count on where the interrupted run was, the
  /// rate it lowered applies from the first step, the CSV log and the
  /// event files in this run's TensorBoard folders drop what came after
  /// the checkpoint (this run writes it again), and a run EarlyStopping
  /// stopped
  /// stays stopped (stopRequested()). A callback that the checkpointed run
  /// did not have, or had monitor another key or in another mode, starts
  /// afresh, as `notes` say. A text that is not saveState()'s is an error.
  Status restoreState(const std::string &text,
                      std::vector<std::vector<float>> bestWeights,
                      std::vector<std::string> &notes);

private:
  Status epochEnd(const StepContext &ctx);

  Callbacks c_;
  Job job_;
  int64_t stepsPerEpoch_;
  double learningRate_;
  bool chief_;
  bool restored_ = false;
  // restoreState() ran: begin() keeps the callbacks' state and sets the
  // rate.
  bool resumed_ = false;
  double planLearningRate_;
  // A reduction set the session's rate to learningRate_.
  bool rateSet_ = false;
  std::ostream &out_;
  // The epoch's sums of the steps' loss and metrics.
  EpochMeans epoch_;
  bool stop_ = false;
  std::vector<std::vector<float>> bestWeights_;
  int64_t globalBatch_ = 0;
};

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_FITCALLBACKSHOOK_H
