//===- Checkpoint.h - checkpoints a killed run resumes from -----*- C++ -*-===//
//
// A checkpoint directory D holds, as TensorFlow's does:
//
//   D/ckpt-<step>.safetensors   every variable (weights and optimizer slots)
//                               and, in __metadata__, the run state
//   D/checkpoint                the index: the newest and the kept files
//
// Saving writes the checkpoint under a temporary name, fsyncs it, renames it
// into place and fsyncs the directory (AtomicFile.h), then replaces the index
// the same way and deletes all but the newest `keep` checkpoints. A run
// killed at any point leaves the previous checkpoints intact and at most a
// "*.tmp" file, which loading ignores with a warning.
//
// Loading does not trust the index (a kill between the checkpoint's rename
// and the index's leaves a newer complete checkpoint than the index names):
// it takes the checkpoint files from newest to oldest and returns the first
// that parses completely, warning about each one it skips. The index is for
// people and tools, as TensorFlow's is for tf.train.latest_checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_CHECKPOINT_H
#define RUNTIME_CHECKPOINT_CHECKPOINT_H

#include "runtime/base/Status.h"
#include "runtime/checkpoint/Safetensors.h"
#include "runtime/core/MirroredVariables.h"
#include "runtime/core/Session.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime::checkpoint {

/// What the layers above keep across a resume besides the variables:
/// named texts the checkpoint does not interpret (the fit callbacks' state,
/// the size of a log to cut back to), saved as metadata "extra.<name>",
/// and vectors of floats (EarlyStopping's copy of the best weights), saved
/// as F32 tensors beside the variables under names that no variable has.
struct ExtraState {
  std::map<std::string, std::string> texts;
  std::vector<std::pair<std::string, std::vector<float>>> tensors;

  bool empty() const { return texts.empty() && tensors.empty(); }
  /// The text named `name`, or null.
  const std::string *text(const std::string &name) const {
    auto it = texts.find(name);
    return it == texts.end() ? nullptr : &it->second;
  }
  /// The tensor named `name`, or null.
  const std::vector<float> *find(const std::string &name) const;
};

/// What a run needs, besides its variables, to continue exactly where it
/// stopped. Every step consumes one global batch, so the global step also
/// positions the input: a resumed run rebuilds the same pipeline (same seed,
/// same shuffle) and opens it at batch `globalStep` (Pipeline::open), which
/// derives the epoch, the position in it and the shuffle's state from these
/// without reading the batches before it.
struct RunState {
  /// Steps taken; Adam's bias correction and dropout masks key on it.
  int64_t globalStep = 0;
  /// The global step the run's data started at: 0, or the optimizer
  /// iterations of a Keras file the run started from (--init-weights),
  /// whose training goes on at that step from the data's first batch.
  int64_t stepOrigin = 0;
  /// The run's --seed: it names the shuffle order and dropout masks.
  uint64_t seed = 0;
  int64_t globalBatch = 0;
  /// Examples per epoch of the training data.
  int64_t epochExamples = 0;
  /// How the training data are ordered ("fashion_mnist, shuffle buffer
  /// 5000"): a run that orders them otherwise cannot resume exactly. Not
  /// the job's shape: W workers x R replicas order them as one worker of
  /// W x R does, so any shape with the same global batch resumes.
  std::string data;
  /// The plan's model name, for the message that refuses a checkpoint of
  /// another model (empty: unknown, as in checkpoints written before it).
  std::string model;
  /// Saved with the checkpoint and given back by findLatest.
  ExtraState extra;

  /// Steps an epoch: ceil(epochExamples / globalBatch), each epoch ending
  /// with its short batch, as Keras' do.
  int64_t stepsPerEpoch() const;
  /// The batches of the data taken: globalStep - stepOrigin.
  int64_t dataStep() const { return globalStep - stepOrigin; }
  /// The epoch the next batch comes from (0 first) and how many of its
  /// examples were consumed.
  int64_t epoch() const;
  int64_t exampleInEpoch() const;
};

/// The file name of the checkpoint of `step`: "ckpt-<step>.safetensors".
std::string checkpointFileName(int64_t step);

/// A checkpoint found by CheckpointManager::findLatest.
struct LoadedCheckpoint {
  std::string path;
  RunState state;
  SafetensorsFile file;
};

class CheckpointManager {
public:
  /// Keeps the newest `keep` (>= 1) checkpoints in `directory`.
  explicit CheckpointManager(std::string directory, int keep = 3)
      : directory_(std::move(directory)), keep_(keep) {}

  /// Before the first step: makes the directory, checks that a file can be
  /// written in it (a read-only or immutable directory is found now, not at
  /// the first checkpoint; root ignores permissions, so it tries), and
  /// locks it for this process (flock on DIR/.lock, which holds the pid):
  /// a second run on the same directory is refused, naming the first's
  /// pid, instead of overwriting its checkpoints. The lock lasts as long as
  /// the manager (and its copies).
  Status claim();

  /// Saves every variable and `state`, updates the index and deletes the
  /// checkpoints older than the newest `keep`. Creates the directory.
  Status save(const MirroredVariables &variables, const RunState &state);

  /// The newest complete checkpoint; `found` is false when there is none
  /// (no directory, or nothing complete in it). Files skipped on the way
  /// (unfinished or corrupt) are described in `warnings`.
  Status findLatest(LoadedCheckpoint &out, bool &found,
                    std::vector<std::string> &warnings) const;

  /// Sets every variable from `checkpoint`, after checking that it was
  /// written by this model and by a run whose seed, global batch and data
  /// order are `expected`'s (anything else cannot resume exactly). The
  /// replica and worker counts may differ: every copy of a variable is
  /// equal between steps (batch-norm statistics included, averaged across
  /// replicas each step), so one copy restores them all.
  static Status restore(const LoadedCheckpoint &checkpoint,
                        const RunState &expected, MirroredVariables &variables);

  /// The steps of the complete-looking checkpoint files in the directory,
  /// oldest first (by name; their content is not checked).
  std::vector<int64_t> checkpointSteps() const;

  const std::string &directory() const { return directory_; }
  std::string indexPath() const;

private:
  Status writeIndex(const std::vector<int64_t> &steps) const;

  std::string directory_;
  int keep_;
  /// claim()'s lock: the open DIR/.lock, closed (unlocked) with the last
  /// copy.
  std::shared_ptr<const int> lock_;
};

/// Saves a checkpoint every `every` steps of the data (0: only at the end)
/// and after the last step of a run that succeeded, unless that step was
/// just saved.
class CheckpointHook : public Hook {
public:
  /// `state` describes the run; the hook fills in the step when it saves.
  CheckpointHook(CheckpointManager &manager, const MirroredVariables &variables,
                 int64_t every, RunState state)
      : manager_(manager), variables_(variables), every_(every),
        state_(std::move(state)) {}

  Status afterStep(const StepContext &ctx) override;
  Status end(const SessionInfo &info) override;
  bool needsStateAfter(int64_t step) const override {
    return every_ > 0 && (step - state_.stepOrigin) % every_ == 0;
  }

  /// Each checkpoint from now on carries what `extra` returns then (the
  /// fit callbacks' state after the step's epoch end, if any: they run
  /// before this hook).
  void setExtraState(std::function<ExtraState()> extra) {
    extra_ = std::move(extra);
  }

  /// The step of the last checkpoint this hook saved (0: none).
  int64_t lastSaved() const { return lastSaved_; }

private:
  Status save(int64_t step);

  CheckpointManager &manager_;
  const MirroredVariables &variables_;
  int64_t every_;
  RunState state_;
  std::function<ExtraState()> extra_;
  int64_t lastStep_ = 0;
  int64_t lastSaved_ = 0;
};

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_CHECKPOINT_H
