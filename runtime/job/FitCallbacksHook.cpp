//===- FitCallbacksHook.cpp - Keras' fit callbacks at each epoch's end ----===//

#include "runtime/job/FitCallbacksHook.h"

#include "runtime/job/LogCutBack.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>

namespace graph::runtime::job {

namespace {

using Json = nlohmann::json;

constexpr const char *kStateFormat = "graphrun fit callbacks 1";

double wallNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

/// A double in JSON: a number (nlohmann writes the shortest digits that
/// read back exactly), or "nan", "inf", "-inf", which JSON has no number
/// for (a monitored loss can be NaN).
Json number(double value) {
  if (std::isfinite(value))
    return value;
  return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf";
}

double numberOf(const Json &j) {
  if (j.is_number())
    return j.get<double>();
  const std::string text = j.get<std::string>();
  if (text == "nan")
    return std::numeric_limits<double>::quiet_NaN();
  if (text == "inf" || text == "-inf")
    return text[0] == '-' ? -INFINITY : INFINITY;
  throw std::invalid_argument("'" + text + "' is not a number");
}

Json optionalNumber(const std::optional<double> &value) {
  return value ? number(*value) : Json(nullptr);
}

std::optional<double> optionalNumberOf(const Json &j) {
  if (j.is_null())
    return std::nullopt;
  return numberOf(j);
}

const char *modeName(MonitorMode mode) {
  switch (mode) {
  case MonitorMode::min:
    return "min";
  case MonitorMode::max:
    return "max";
  case MonitorMode::automatic:
    break;
  }
  return "auto";
}

/// What a callback's saved state was measured against: its monitor and
/// mode. A best of another key (or direction) means nothing to it.
Json monitorOf(const std::string &monitor, MonitorMode mode) {
  return {{"monitor", monitor}, {"mode", modeName(mode)}};
}

bool sameMonitor(const Json &saved, const std::string &monitor,
                 MonitorMode mode) {
  return saved.at("monitor").get<std::string>() == monitor &&
         saved.at("mode").get<std::string>() == modeName(mode);
}

/// Cuts each event file of `files` ({path, bytes}, a checkpoint's) that
/// lies in one of `folders` back to its recorded size, if longer.
Status cutEventFiles(const Json &files, const std::set<std::string> &folders) {
  for (const Json &file : files) {
    const std::string path = file.at("path").get<std::string>();
    if (folders.count(std::filesystem::path(path).parent_path().string()))
      if (Status s = cutBack(path, file.at("bytes").get<uint64_t>()); !s)
        return s;
  }
  return Status::ok();
}

} // namespace

FitCallbacksHook::FitCallbacksHook(Callbacks callbacks, Job job,
                                   int64_t stepsPerEpoch, double learningRate,
                                   bool chief, std::ostream &out)
    : c_(std::move(callbacks)), job_(std::move(job)),
      stepsPerEpoch_(std::max<int64_t>(1, stepsPerEpoch)),
      learningRate_(learningRate), chief_(chief),
      planLearningRate_(learningRate), out_(out) {}

Status FitCallbacksHook::begin(const SessionInfo &info) {
  globalBatch_ = info.globalBatch;
  if (resumed_) {
    // Where the checkpointed run was; the rate it lowered to from the
    // first step (a rate never set stays the plan's, a new --learning-rate
    // included).
    if (rateSet_)
      if (Status s = job_.setLearningRate(learningRate_); !s)
        return Status::error("--reduce-lr-on-plateau: " + s.message());
    return Status::ok();
  }
  // Keras' callbacks start afresh with each fit().
  if (c_.earlyStopping)
    c_.earlyStopping->onTrainBegin();
  if (c_.reduceLr)
    c_.reduceLr->onTrainBegin();
  return Status::ok();
}

std::string FitCallbacksHook::saveState() const {
  Json j;
  j["format"] = kStateFormat;
  j["learning_rate"] = number(learningRate_);
  j["learning_rate_set"] = rateSet_;
  j["plan_learning_rate"] = number(planLearningRate_);
  j["stopped"] = stop_;
  EpochMeans::Sums sums = epoch_.sums();
  Json metrics = Json::array();
  for (size_t i = 0; i < sums.names.size() && i < sums.states.size(); ++i) {
    Json state = Json::array();
    for (double v : sums.states[i])
      state.push_back(number(v));
    metrics.push_back({{"name", sums.names[i]}, {"state", state}});
  }
  j["epoch_sums"] = {{"steps", sums.steps},
                     {"loss", number(sums.loss)},
                     {"examples", number(sums.examples)},
                     {"metrics", metrics}};
  if (c_.reduceLr) {
    const ReduceLROnPlateauOptions &o = c_.reduceLr->options();
    ReduceLROnPlateau::State state = c_.reduceLr->state();
    Json r = monitorOf(o.monitor, o.mode);
    r["wait"] = state.wait;
    r["cooldown_counter"] = state.cooldownCounter;
    r["best"] = optionalNumber(state.best);
    j["reduce_lr_on_plateau"] = r;
  }
  if (c_.earlyStopping) {
    const EarlyStoppingOptions &o = c_.earlyStopping->options();
    EarlyStopping::State state = c_.earlyStopping->state();
    Json e = monitorOf(o.monitor, o.mode);
    e["wait"] = state.wait;
    e["stopped_epoch"] = state.stoppedEpoch;
    e["best_epoch"] = state.bestEpoch;
    e["best"] = optionalNumber(state.best);
    e["kept_weights"] = state.keptWeights && !bestWeights_.empty();
    j["early_stopping"] = e;
  }
  if (c_.bestCheckpoint) {
    const BestCheckpointOptions &o = c_.bestCheckpoint->options();
    Json b = monitorOf(o.monitor, o.mode);
    b["best"] = optionalNumber(c_.bestCheckpoint->best());
    j["checkpoint_best"] = b;
  }
  if (c_.csv && c_.csv->size())
    j["csv_log"] = {{"path", absolutePath(c_.csv->path())},
                    {"bytes", *c_.csv->size()}};
  Json events = Json::array();
  for (const TensorBoardWriter *tb :
       {c_.tensorBoardTrain.get(), c_.tensorBoardValidation.get()})
    if (tb)
      events.push_back(
          {{"path", absolutePath(tb->path())}, {"bytes", tb->size()}});
  if (!events.empty())
    j["tensorboard"] = events;
  return j.dump();
}

Status
FitCallbacksHook::restoreState(const std::string &text,
                               std::vector<std::vector<float>> bestWeights,
                               std::vector<std::string> &notes) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !j.contains("format") ||
      j["format"] != kStateFormat)
    return Status::error("the fit callbacks' state is not '" +
                         std::string(kStateFormat) + "' JSON");
  auto afresh = [&](const std::string &flag, const char *why) {
    notes.push_back(flag + ": " + why + "; it starts afresh");
  };
  try {
    const double rate = numberOf(j.at("learning_rate"));
    const bool rateSet = j.at("learning_rate_set").get<bool>();
    const double planRate = numberOf(j.at("plan_learning_rate"));
    auto rateDropped = [&](const std::string &why) {
      notes.push_back(why + "; the rate it had lowered to, " +
                      pythonFloatRepr(static_cast<float>(rate)) +
                      ", is dropped: this run trains at " +
                      pythonFloatRepr(planLearningRate_));
    };
    const Json &sums = j.at("epoch_sums");
    EpochMeans::Sums epoch;
    epoch.steps = sums.at("steps").get<int64_t>();
    epoch.loss = numberOf(sums.at("loss"));
    epoch.examples = numberOf(sums.at("examples"));
    for (const Json &m : sums.at("metrics")) {
      epoch.names.push_back(m.at("name").get<std::string>());
      std::vector<double> state;
      for (const Json &v : m.at("state"))
        state.push_back(numberOf(v));
      epoch.states.push_back(std::move(state));
    }
    epoch_.setSums(std::move(epoch));
    stop_ = j.at("stopped").get<bool>();

    if (c_.reduceLr) {
      const ReduceLROnPlateauOptions &o = c_.reduceLr->options();
      if (!j.contains("reduce_lr_on_plateau")) {
        afresh("--reduce-lr-on-plateau",
               "the checkpointed run did not have it");
      } else if (const Json &r = j["reduce_lr_on_plateau"];
                 !sameMonitor(r, o.monitor, o.mode)) {
        afresh("--reduce-lr-on-plateau",
               "in the checkpointed run it monitored another key or mode");
        if (rateSet)
          rateDropped("--reduce-lr-on-plateau");
      } else {
        c_.reduceLr->setState({r.at("wait").get<int64_t>(),
                               r.at("cooldown_counter").get<int64_t>(),
                               optionalNumberOf(r.at("best"))});
        if (rateSet) {
          learningRate_ = rate;
          rateSet_ = true;
          if (planRate != planLearningRate_)
            notes.push_back(
                "--reduce-lr-on-plateau: the checkpointed run had lowered "
                "its rate of " +
                pythonFloatRepr(planRate) + " to " +
                pythonFloatRepr(static_cast<float>(rate)) +
                ", from which this run goes on (not from " +
                pythonFloatRepr(planLearningRate_) + ")");
        }
      }
    } else if (rateSet) {
      rateDropped("the checkpointed run had --reduce-lr-on-plateau");
    }
    if (c_.earlyStopping) {
      const EarlyStoppingOptions &o = c_.earlyStopping->options();
      if (!j.contains("early_stopping")) {
        afresh("--early-stopping", "the checkpointed run did not have it");
        stop_ = false;
      } else if (const Json &e = j["early_stopping"];
                 !sameMonitor(e, o.monitor, o.mode)) {
        afresh("--early-stopping",
               "in the checkpointed run it monitored another key or mode");
        stop_ = false;
      } else {
        EarlyStopping::State state;
        state.wait = e.at("wait").get<int64_t>();
        state.stoppedEpoch = e.at("stopped_epoch").get<int64_t>();
        state.bestEpoch = e.at("best_epoch").get<int64_t>();
        state.best = optionalNumberOf(e.at("best"));
        state.keptWeights = e.at("kept_weights").get<bool>();
        if (state.keptWeights != !bestWeights.empty())
          return Status::error(
              "the fit callbacks' state says EarlyStopping " +
              std::string(state.keptWeights ? "kept" : "did not keep") +
              " the best weights, and the checkpoint " +
              (bestWeights.empty() ? "holds none" : "holds them"));
        c_.earlyStopping->setState(state);
        bestWeights_ = std::move(bestWeights);
      }
    } else {
      // No EarlyStopping now: nothing stops this run.
      stop_ = false;
    }
    if (c_.bestCheckpoint) {
      const BestCheckpointOptions &o = c_.bestCheckpoint->options();
      if (!j.contains("checkpoint_best"))
        afresh("--checkpoint-best", "the checkpointed run did not have it");
      else if (const Json &b = j["checkpoint_best"];
               !sameMonitor(b, o.monitor, o.mode))
        afresh("--checkpoint-best",
               "in the checkpointed run it monitored another key or mode");
      else
        c_.bestCheckpoint->setBest(optionalNumberOf(b.at("best")));
    }
    // The checkpointed run's event files, in the folders this run writes
    // to, lose the events after the checkpoint (this run writes them again,
    // to new files, as Keras' TensorBoard does each fit()).
    if (c_.tensorBoardTrain && j.contains("tensorboard")) {
      std::set<std::string> folders;
      for (const TensorBoardWriter *tb :
           {c_.tensorBoardTrain.get(), c_.tensorBoardValidation.get()})
        if (tb)
          folders.insert(std::filesystem::path(absolutePath(tb->path()))
                             .parent_path()
                             .string());
      if (Status s = cutEventFiles(j["tensorboard"], folders); !s)
        return Status::error("--tensorboard: " + s.message());
    }
    // Only the log the checkpointed run wrote is cut back: another path
    // is another file.
    if (c_.csv && j.contains("csv_log") &&
        j["csv_log"].at("path").get<std::string>() ==
            absolutePath(c_.csv->path()))
      if (Status s = c_.csv->resumeAt(j["csv_log"].at("bytes").get<uint64_t>());
          !s)
        return Status::error("--csv-log: " + s.message());
  } catch (const std::exception &e) {
    return Status::error("the fit callbacks' state is damaged: " +
                         std::string(e.what()));
  }
  resumed_ = true;
  return Status::ok();
}

Status FitCallbacksHook::afterStep(const StepContext &ctx) {
  epoch_.add(ctx);
  if (chief_ && c_.tensorBoardTrain && c_.batchEvery > 0 &&
      (ctx.step - c_.stepOrigin) % c_.batchEvery == 0) {
    // Keras' TensorBoard numbers a fit()'s batches from 1.
    const int64_t batch = ctx.step - c_.stepOrigin;
    double wall = wallNow();
    double seconds = std::chrono::duration<double>(ctx.end - ctx.begin).count();
    TensorBoardWriter &tb = *c_.tensorBoardTrain;
    // Keras' batch logs are its metric trackers' results: the epoch's
    // running means, not the step's own values.
    if (Status s = tb.addScalar("batch_loss", batch, epoch_.loss(), wall); !s)
      return s;
    for (const auto &[name, value] : epoch_.metrics())
      if (Status s = tb.addScalar("batch_" + name, batch, value, wall); !s)
        return s;
    if (Status s = tb.addScalar("batch_step_seconds", batch, seconds, wall); !s)
      return s;
    if (seconds > 0)
      if (Status s = tb.addScalar(
              "batch_examples_per_second", batch,
              static_cast<double>(ctx.globalBatch) / seconds, wall);
          !s)
        return s;
  }
  if ((ctx.step - c_.stepOrigin) % stepsPerEpoch_ == 0)
    return epochEnd(ctx);
  return Status::ok();
}

Status FitCallbacksHook::epochEnd(const StepContext &ctx) {
  // Keras numbers the epochs its callbacks see from 0, or from fit's
  // initial_epoch.
  const int64_t epoch =
      c_.epochOrigin + (ctx.step - c_.stepOrigin) / stepsPerEpoch_ - 1;
  EpochLogs logs;
  logs["loss"] = epoch_.loss();
  for (const auto &[name, mean] : epoch_.metrics())
    logs[name] = mean;
  epoch_.reset();
  if (job_.validate)
    if (Status s = job_.validate(ctx.step, logs); !s)
      return s;
  // Keras' logs are its metrics' float32 results (as Python floats): the
  // callbacks decide on, and CSVLogger and History hold, those values.
  for (auto &[key, value] : logs)
    value = static_cast<float>(value);

  auto say = [&](const std::string &line) {
    if (chief_ && !line.empty())
      out_ << line << "\n";
  };
  if (c_.reduceLr) {
    // Keras' ReduceLROnPlateau logs the rate the epoch trained with, then
    // lowers it for the next.
    const float trainedWith = static_cast<float>(learningRate_);
    ReduceLROnPlateau::Decision d =
        c_.reduceLr->onEpochEnd(epoch, logs, trainedWith);
    // The session keeps the plan's rate (a double) until a reduction
    // sets another.
    if (d.reduced && d.learningRate != static_cast<float>(learningRate_)) {
      if (Status s = job_.setLearningRate(d.learningRate); !s)
        return Status::error("--reduce-lr-on-plateau: " + s.message());
      learningRate_ = d.learningRate;
      rateSet_ = true;
    }
    logs["learning_rate"] = trainedWith;
    say(d.message);
    if (d.reduced && d.message.empty())
      say("epoch " + std::to_string(epoch + 1) +
          ": ReduceLROnPlateau reducing learning rate to " +
          pythonFloatRepr(d.learningRate));
  }
  if (c_.earlyStopping) {
    EarlyStopping::Decision d = c_.earlyStopping->onEpochEnd(epoch, logs);
    if (d.keepWeights)
      if (Status s = job_.readWeights(bestWeights_); !s)
        return s;
    if (d.stop) {
      stop_ = true;
      say("epoch " + std::to_string(epoch + 1) + ": early stopping (" +
          c_.earlyStopping->options().monitor + " did not improve for " +
          std::to_string(c_.earlyStopping->wait()) + " epochs)");
    }
  }
  if (c_.bestCheckpoint) {
    BestCheckpoint::Decision d = c_.bestCheckpoint->onEpochEnd(epoch, logs);
    // Keras formats the filepath with the epoch and its logs.
    std::string path;
    if (Status s =
            formatKerasFilepath(c_.bestCheckpointPath, epoch, &logs, path);
        !s)
      return Status::error("--checkpoint-best filepath " +
                           c_.bestCheckpointPath + ": " + s.message());
    say(c_.bestCheckpoint->message(epoch, d, path));
    if (d.save && chief_)
      if (Status s = job_.save(path, learningRate_); !s)
        return Status::error("--checkpoint-best: " + s.message());
  }
  if (chief_ && !c_.epochCheckpointPattern.empty()) {
    std::string path = c_.epochCheckpointPattern;
    size_t at = path.find("{epoch}");
    if (at != std::string::npos)
      path.replace(at, 7, std::to_string(epoch + 1));
    if (Status s = job_.save(path, learningRate_); !s)
      return Status::error("--checkpoint-format keras: " + s.message());
  }
  if (chief_ && c_.csv)
    if (Status s = c_.csv->onEpochEnd(epoch, logs); !s)
      return Status::error("--csv-log: " + s.message());
  if (chief_ && c_.tensorBoardTrain) {
    // Keras' TensorBoard: train logs under train/, val_* under
    // validation/ without the prefix, the rate with the train logs.
    double wall = wallNow();
    bool rateLogged = false;
    for (const auto &[key, value] : logs) {
      bool validation = key.rfind("val_", 0) == 0;
      TensorBoardWriter *tb = validation ? c_.tensorBoardValidation.get()
                                         : c_.tensorBoardTrain.get();
      if (!tb)
        continue;
      rateLogged = rateLogged || key == "learning_rate";
      if (Status s =
              tb->addScalar("epoch_" + (validation ? key.substr(4) : key),
                            epoch, value, wall);
          !s)
        return Status::error("--tensorboard: " + s.message());
    }
    if (!rateLogged)
      if (Status s = c_.tensorBoardTrain->addScalar(
              "epoch_learning_rate", epoch, static_cast<float>(learningRate_),
              wall);
          !s)
        return Status::error("--tensorboard: " + s.message());
    for (TensorBoardWriter *tb :
         {c_.tensorBoardTrain.get(), c_.tensorBoardValidation.get()})
      if (tb)
        if (Status s = tb->flush(); !s)
          return Status::error("--tensorboard: " + s.message());
  }
  if (c_.history)
    c_.history->push_back(logs);
  out_.flush();
  return Status::ok();
}

Status FitCallbacksHook::trainEnd() {
  if (c_.earlyStopping) {
    EarlyStopping::TrainEnd e = c_.earlyStopping->onTrainEnd();
    for (const std::string &line : e.messages)
      if (chief_)
        out_ << line << "\n";
    if (e.restoreEpoch && !bestWeights_.empty()) {
      if (Status s = job_.writeWeights(bestWeights_); !s)
        return s;
      restored_ = true;
      if (chief_)
        out_ << "graphrun: restored the weights of epoch "
             << *e.restoreEpoch + 1 << " (the best "
             << c_.earlyStopping->options().monitor << ")\n";
    }
  }
  out_.flush();
  return Status::ok();
}

Status FitCallbacksHook::end(const SessionInfo &) {
  Status status;
  if (c_.csv)
    if (Status s = c_.csv->close(); !s)
      status = Status::error("--csv-log: " + s.message());
  for (TensorBoardWriter *tb :
       {c_.tensorBoardTrain.get(), c_.tensorBoardValidation.get()})
    if (tb)
      if (Status s = tb->close(); !s && status)
        status = Status::error("--tensorboard: " + s.message());
  out_.flush();
  return status;
}

} // namespace graph::runtime::job
