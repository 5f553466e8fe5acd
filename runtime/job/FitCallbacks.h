//===- FitCallbacks.h - what Keras' fit callbacks decide --------*- C++ -*-===//
//
// The decisions of Keras 3's EarlyStopping, ReduceLROnPlateau,
// ModelCheckpoint(save_best_only=True) and CSVLogger, made from the epoch's
// logs alone, so that graphrun can act on them at an epoch's end and a test
// can replay the same logs through Keras' own classes and ours (Keras
// 3.15's keras/src/callbacks/*.py are the specification; the comments below
// say where Keras' behaviour is subtle). Nothing here knows the session or
// the executor: the caller keeps weights, sets the learning rate and writes
// checkpoints.
//
// Epochs are numbered from 0, as Keras' callbacks see them (Keras prints
// epoch + 1). Each flag takes Keras' argument names and defaults:
//   --early-stopping monitor=val_loss,patience=3,restore_best_weights=true
//   --reduce-lr-on-plateau factor=0.5,patience=2,min_lr=1e-5
//   --checkpoint-best monitor=val_accuracy,mode=max
// an empty string meaning all defaults.
//
// Where graphrun is stricter than Keras, it fails before training instead
// of warning at every epoch: a key Keras does not have, a mode other than
// auto/min/max (Keras warns and uses auto), a mode=auto whose direction
// cannot be told (Keras raises at the first epoch's end), and a monitored
// key the epochs will not log (checkMonitorLogged; Keras warns and
// decides nothing, or for ModelCheckpoint saves every epoch).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_FITCALLBACKS_H
#define RUNTIME_JOB_FITCALLBACKS_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime::job {

/// One epoch's logs under Keras' names (loss, accuracy, val_loss, ...). A
/// std::map iterates its keys in Python's sorted() order (bytes of UTF-8
/// sort as code points), which CSVLogger's columns follow.
using EpochLogs = std::map<std::string, double>;

/// Keras' `mode`: auto infers the direction from the monitored name.
enum class MonitorMode { automatic, min, max };

/// Which way a monitored quantity improves: a Keras metric's `_direction`.
enum class MetricDirection { down, up };

/// The directions of the model's compiled metrics by name; nullopt for a
/// name that is not one of them (or has no direction).
using MetricDirections =
    std::function<std::optional<MetricDirection>(const std::string &name)>;

/// The `_direction` of the metric Keras' compile() makes from the string
/// `name` (metrics=["accuracy", "mae", ...]; the metric takes that name):
/// up for accuracies, auc, precision, recall, f1_score, r2_score,
/// cosine_similarity and the correlations, down for errors, crossentropies,
/// hinges, kl_divergence and poisson; nullopt for any other name.
std::optional<MetricDirection> kerasMetricDirection(std::string_view name);

/// The lookup mode=auto uses for a model compiled with `metrics` (their
/// compile() names): kerasMetricDirection of a name among them.
MetricDirections compiledMetricDirections(std::vector<std::string> metrics);

/// How a monitored value is compared with the best one. Keras computes
/// `current - min_delta` in Python (float64) and compares it through
/// keras.ops, which on the numpy backend compares float64s and on the
/// TensorFlow backend first converts both Python floats to float32 (JAX
/// and torch convert Python floats to float32 too). The two differ only
/// for values closer than float32's precision, min_delta edges included.
enum class MonitorPrecision { float32, float64 };

/// What EarlyStopping, ReduceLROnPlateau and ModelCheckpoint share: Keras'
/// MonitorCallback. Improvement is Keras' `_is_improvement`: `current -
/// delta` below the reference for down (delta = -|min_delta|), above it for
/// up (delta = |min_delta|); any reference beats none; a comparison with
/// NaN is false, so a NaN is an improvement only over none (and then it
/// stays the best: nothing compares better than NaN).
class Monitor {
public:
  Monitor() = default;
  /// Resolves `mode` as Keras' `_set_monitor_op`: min and max are what
  /// they say; auto is down for `loss` (after one leading `val_` is
  /// removed), else the direction `metrics` gives that name (a compiled
  /// metric overrides `loss`), else an error naming `flag` that asks for
  /// mode=min or mode=max.
  static Status create(std::string_view flag, std::string monitor,
                       MonitorMode mode, double minDelta,
                       const MetricDirections &metrics,
                       MonitorPrecision precision, Monitor &out);

  bool isImprovement(double current, std::optional<double> reference) const;
  const std::string &key() const { return key_; }
  MetricDirection direction() const { return direction_; }

private:
  std::string key_;
  MetricDirection direction_ = MetricDirection::down;
  double delta_ = 0; // Keras' signed self.min_delta
  MonitorPrecision precision_ = MonitorPrecision::float32;
};

//===----------------------------------------------------------------------===//
// EarlyStopping
//===----------------------------------------------------------------------===//

/// keras.callbacks.EarlyStopping's arguments, with its defaults.
struct EarlyStoppingOptions {
  std::string monitor = "val_loss";
  double minDelta = 0;
  int64_t patience = 0;
  /// Keras' 0 or 1: 1 fills the decisions' messages.
  int64_t verbose = 0;
  MonitorMode mode = MonitorMode::automatic;
  std::optional<double> baseline;
  bool restoreBestWeights = false;
  int64_t startFromEpoch = 0;
  /// Not a Keras argument: see MonitorPrecision.
  MonitorPrecision precision = MonitorPrecision::float32;
};

/// Parses `--early-stopping`'s value: comma-separated key=value with the
/// keys monitor, min_delta, patience, verbose, mode, baseline,
/// restore_best_weights (true/false, True/False or 1/0) and
/// start_from_epoch. Counts are whole numbers >= 0, numbers finite. An
/// error names the flag, the key and the value (or lists the keys).
Status parseEarlyStoppingOptions(std::string_view text,
                                 EarlyStoppingOptions &out);

class EarlyStopping {
public:
  struct Decision {
    /// Keras' model.stop_training: end the fit after this epoch.
    bool stop = false;
    /// restore_best_weights: copy this epoch's weights now, replacing any
    /// copy kept before (Keras' get_weights); they are the best so far.
    bool keepWeights = false;
    /// The monitored key is not in the logs: Keras warns and decides
    /// nothing this epoch.
    bool missing = false;
  };
  struct TrainEnd {
    /// The epoch whose kept weights are to be set back: Keras restores at
    /// on_train_end whenever restore_best_weights kept any, whether the
    /// run stopped early or ran all its epochs (the last epoch's own
    /// weights, when it was the best).
    std::optional<int64_t> restoreEpoch;
    /// verbose: "Epoch 5: early stopping" when it stopped, then
    /// "Restoring model weights from the end of the best epoch: 3." when
    /// it restores (each a line of Keras' output).
    std::vector<std::string> messages;
  };

  EarlyStopping() = default;
  /// Fails when mode=auto cannot tell the monitor's direction.
  static Status create(const EarlyStoppingOptions &options,
                       const MetricDirections &metrics, EarlyStopping &out);

  /// on_train_begin: forgets a previous fit (Keras keeps no state across
  /// fit() calls, so a resumed run starts afresh, as here).
  void onTrainBegin();
  /// Keras' on_epoch_end. Before start_from_epoch nothing is counted. Each
  /// counted epoch adds one to the wait; an improvement on the best
  /// becomes the best and returns, resetting the wait only if it also
  /// improves on the baseline (if any); otherwise the run stops once the
  /// wait reaches patience, except at epoch 0.
  Decision onEpochEnd(int64_t epoch, const EpochLogs &logs);
  TrainEnd onTrainEnd() const;

  /// What on_epoch_end changes, for a checkpoint: a resumed run goes on
  /// counting its patience where the interrupted one was (Keras' own
  /// BackupAndRestore keeps none of it: its resumed fit() starts afresh).
  struct State {
    int64_t wait = 0, stoppedEpoch = 0, bestEpoch = 0;
    std::optional<double> best;
    /// restore_best_weights kept a copy (the caller keeps the copy).
    bool keptWeights = false;
  };
  State state() const {
    return {wait_, stoppedEpoch_, bestEpoch_, best_, haveWeights_};
  }
  void setState(const State &state);

  int64_t wait() const { return wait_; }
  std::optional<double> best() const { return best_; }
  int64_t bestEpoch() const { return bestEpoch_; }
  /// The epoch it stopped at; 0 when it has not (it never stops at 0).
  int64_t stoppedEpoch() const { return stoppedEpoch_; }
  const EarlyStoppingOptions &options() const { return options_; }

private:
  EarlyStoppingOptions options_;
  Monitor monitor_;
  int64_t wait_ = 0, stoppedEpoch_ = 0, bestEpoch_ = 0;
  std::optional<double> best_;
  bool haveWeights_ = false; // Keras' best_weights is not None
};

//===----------------------------------------------------------------------===//
// ReduceLROnPlateau
//===----------------------------------------------------------------------===//

/// keras.callbacks.ReduceLROnPlateau's arguments, with its defaults.
struct ReduceLROnPlateauOptions {
  std::string monitor = "val_loss";
  double factor = 0.1;
  int64_t patience = 10;
  int64_t verbose = 0;
  MonitorMode mode = MonitorMode::automatic;
  double minDelta = 1e-4;
  int64_t cooldown = 0;
  double minLr = 0;
  MonitorPrecision precision = MonitorPrecision::float32;
};

/// Parses `--reduce-lr-on-plateau`'s value: the keys monitor, factor,
/// patience, verbose, mode, min_delta, cooldown and min_lr. factor must be
/// in [0, 1) (Keras refuses >= 1; a negative one would only ever set
/// min_lr) and min_lr >= 0.
Status parseReduceLROnPlateauOptions(std::string_view text,
                                     ReduceLROnPlateauOptions &out);

/// The learning rate is Keras' optimizer variable, a float32: Keras reads
/// it as a float64 (exact), reduces when it is above float32(min_lr),
/// assigns max(lr * factor, min_lr) computed in float64, and the variable
/// rounds that to float32 (to nearest). A schedule's rate cannot be set
/// (Keras raises); the caller refuses that combination.
class ReduceLROnPlateau {
public:
  struct Decision {
    /// The optimizer's learning rate from now on.
    float learningRate = 0;
    /// The rate was assigned (it may come out unchanged at min_lr); the
    /// cooldown restarts.
    bool reduced = false;
    /// What was assigned before the float32 rounding, as Keras prints it.
    double assigned = 0;
    /// The monitored key is not in the logs: Keras warns, changes nothing.
    bool missing = false;
    /// verbose and reduced: "Epoch 3: ReduceLROnPlateau reducing learning
    /// rate to 0.00010000000474974513."
    std::string message;
  };

  ReduceLROnPlateau() = default;
  static Status create(const ReduceLROnPlateauOptions &options,
                       const MetricDirections &metrics, ReduceLROnPlateau &out);

  void onTrainBegin();
  /// Keras' on_epoch_end with the optimizer's rate `learningRate`. Keras
  /// first writes that rate into the shared logs as `learning_rate` (so
  /// monitor=learning_rate reads it, and the callbacks after this one, a
  /// CSVLogger too, see that column: the caller adds it to the logs it
  /// passes on). A cooldown epoch counts the cooldown down and clears the
  /// wait; an improvement becomes the best and clears the wait; otherwise,
  /// out of cooldown, the wait grows and at patience the rate is reduced
  /// (if above min_lr).
  Decision onEpochEnd(int64_t epoch, const EpochLogs &logs, float learningRate);

  /// What on_epoch_end changes, for a checkpoint (the rate is the
  /// caller's).
  struct State {
    int64_t wait = 0, cooldownCounter = 0;
    std::optional<double> best;
  };
  State state() const { return {wait_, cooldownCounter_, best_}; }
  void setState(const State &state) {
    wait_ = state.wait;
    cooldownCounter_ = state.cooldownCounter;
    best_ = state.best;
  }

  int64_t wait() const { return wait_; }
  int64_t cooldownCounter() const { return cooldownCounter_; }
  std::optional<double> best() const { return best_; }
  const ReduceLROnPlateauOptions &options() const { return options_; }

private:
  ReduceLROnPlateauOptions options_;
  Monitor monitor_;
  int64_t wait_ = 0, cooldownCounter_ = 0;
  std::optional<double> best_;
};

//===----------------------------------------------------------------------===//
// ModelCheckpoint(save_best_only=True)
//===----------------------------------------------------------------------===//

/// keras.callbacks.ModelCheckpoint's arguments that decide which epochs
/// save with save_best_only=True (it has no min_delta: 0).
struct BestCheckpointOptions {
  std::string monitor = "val_loss";
  int64_t verbose = 0;
  MonitorMode mode = MonitorMode::automatic;
  /// The best to beat at first; none: the first epoch saves.
  std::optional<double> initialValueThreshold;
  MonitorPrecision precision = MonitorPrecision::float32;
};

/// Parses `--checkpoint-best`'s value: the keys monitor, verbose, mode and
/// initial_value_threshold.
Status parseBestCheckpointOptions(std::string_view text,
                                  BestCheckpointOptions &out);

class BestCheckpoint {
public:
  struct Decision {
    /// Save this epoch's weights.
    bool save = false;
    /// The monitored key is not in the logs: Keras warns and saves.
    bool missing = false;
    /// The best before this epoch and this epoch's value, for message().
    std::optional<double> previousBest;
    double current = 0;
  };

  BestCheckpoint() = default;
  static Status create(const BestCheckpointOptions &options,
                       const MetricDirections &metrics, BestCheckpoint &out);

  /// ModelCheckpoint has no on_train_begin: its best carries over fit()
  /// calls on one instance, from initial_value_threshold at construction.
  Decision onEpochEnd(int64_t epoch, const EpochLogs &logs);
  /// verbose: Keras' line for `decision` at `epoch`, saving to `path`:
  ///   Epoch 2: val_loss improved from 0.51230 to 0.48810, saving model
  ///   to PATH
  ///   Epoch 3: val_loss did not improve from 0.48810
  /// (empty when not verbose or the key was missing). Keras prints
  /// "Epoch 2: finished saving model to PATH" after the save as well.
  std::string message(int64_t epoch, const Decision &decision,
                      const std::string &path) const;

  std::optional<double> best() const { return best_; }
  /// A checkpoint's best, for a resumed run.
  void setBest(std::optional<double> best) { best_ = best; }
  const BestCheckpointOptions &options() const { return options_; }

private:
  BestCheckpointOptions options_;
  Monitor monitor_;
  std::optional<double> best_;
};

/// Fails, naming `flag` and the keys the epochs will log, when `monitor` is
/// not among `epochLogKeys`: graphrun refuses before step 1 what Keras
/// would warn about at every epoch's end (val_* keys need validation
/// data). ReduceLROnPlateau's callers add `learning_rate` to the keys.
Status checkMonitorLogged(std::string_view flag, const std::string &monitor,
                          const std::vector<std::string> &epochLogKeys);

//===----------------------------------------------------------------------===//
// CSVLogger
//===----------------------------------------------------------------------===//

/// Python's repr() of a float, which csv writes for one (and str() is):
/// the shortest digits that read back as `value`; positional when the
/// decimal exponent is from -4 to 15 ("0.0001", "1.0", "123.5",
/// "1234567890123456.0"), else "1e-05", "1.5e+16"; "nan", "inf", "-inf".
std::string pythonFloatRepr(double value);

/// Keras' ModelCheckpoint filepath for `epoch` (0-based): Python's
/// str.format with epoch=epoch + 1 and the epoch's logs, as
/// "m-{epoch:02d}-{val_loss:.2f}.keras". A field is a name, optionally
/// ':' and a spec [0][width][.precision][d|f|e|g|%] (d for the epoch
/// only, as Python refuses d for a float); "{{" and "}}" are braces. A name
/// not in the logs is an error naming it, as Keras' KeyError is. With
/// `logs` null only the syntax is checked (every name taken).
Status formatKerasFilepath(std::string_view pattern, int64_t epoch,
                           const EpochLogs *logs, std::string &out);

/// Keras' CSVLogger: `epoch` and then the first epoch's log keys sorted;
/// if none of those starts with val_, a val_<key> column follows for each
/// (filled "NA" when the logs lack it). The columns stay fixed after the
/// first epoch: a key that appears later is left out. Rows are Python csv's
/// excel dialect: minimal quoting ('"' doubled), "\r\n" after each row.
class CsvLogger {
public:
  /// Opens `path` as Keras' on_train_begin does: truncated, or with
  /// `append` appended to, the header then written only if the file was
  /// missing or empty. `separator` is one character, not '"', '\r' or
  /// '\n'.
  static Status open(const std::string &path, char separator, bool append,
                     std::unique_ptr<CsvLogger> &out);
  ~CsvLogger();
  CsvLogger(const CsvLogger &) = delete;
  CsvLogger &operator=(const CsvLogger &) = delete;

  /// Writes the epoch's row (the header before the first) and flushes it,
  /// as Keras does, so that a killed run keeps its rows.
  Status onEpochEnd(int64_t epoch, const EpochLogs &logs);
  Status close();

  /// The file's size: what it held when opened and every row since
  /// (nullopt: not a file that has one, as a pipe).
  std::optional<uint64_t> size() const { return size_; }
  const std::string &path() const { return path_; }
  /// A resumed run's, before its first row: cuts the file to the `size`
  /// it had at the checkpoint (if longer), dropping the rows of epochs the
  /// run will train again, and writes the header only if that leaves the
  /// file empty. Nothing for a file without a size.
  Status resumeAt(uint64_t size);

  /// The columns after `epoch` that the first epoch's `logs` give.
  static std::vector<std::string> columns(const EpochLogs &logs);
  /// The header line, "\r\n" included.
  static std::string formatHeader(const std::vector<std::string> &columns,
                                  char separator);
  /// One row: the epoch, then each column's value ("NA" when missing).
  static std::string formatRow(int64_t epoch,
                               const std::vector<std::string> &columns,
                               const EpochLogs &logs, char separator);

private:
  CsvLogger(std::string path, std::FILE *file, char separator, bool header,
            std::optional<uint64_t> size)
      : path_(std::move(path)), file_(file), separator_(separator),
        header_(header), size_(size) {}
  Status write(const std::string &text);

  std::string path_;
  std::FILE *file_ = nullptr;
  char separator_;
  bool header_;
  std::optional<uint64_t> size_;
  std::optional<std::vector<std::string>> columns_;
};

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_FITCALLBACKS_H
