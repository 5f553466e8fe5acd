//===- FitCallbacksHook.cpp - Keras' fit callbacks at each epoch's end ----===//

#include "runtime/job/FitCallbacksHook.h"

#include <chrono>
#include <cmath>

namespace graph::runtime::job {

namespace {

double wallNow() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

FitCallbacksHook::FitCallbacksHook(Callbacks callbacks, Job job,
                                   int64_t stepsPerEpoch, double learningRate,
                                   bool chief, std::ostream &out)
    : c_(std::move(callbacks)), job_(std::move(job)),
      stepsPerEpoch_(std::max<int64_t>(1, stepsPerEpoch)),
      learningRate_(learningRate), chief_(chief), out_(out) {}

Status FitCallbacksHook::begin(const SessionInfo &info) {
  // Keras' callbacks start afresh with each fit(): a resumed run too.
  if (c_.earlyStopping)
    c_.earlyStopping->onTrainBegin();
  if (c_.reduceLr)
    c_.reduceLr->onTrainBegin();
  globalBatch_ = info.globalBatch;
  return Status::ok();
}

Status FitCallbacksHook::afterStep(const StepContext &ctx) {
  epoch_.add(ctx);
  if (chief_ && c_.tensorBoardTrain && c_.batchEvery > 0 &&
      ctx.step % c_.batchEvery == 0) {
    double wall = wallNow();
    double seconds = std::chrono::duration<double>(ctx.end - ctx.begin).count();
    TensorBoardWriter &tb = *c_.tensorBoardTrain;
    if (Status s = tb.addScalar("batch_loss", ctx.step, ctx.loss, wall); !s)
      return s;
    for (const auto &[name, value] : ctx.metrics)
      if (Status s = tb.addScalar("batch_" + name, ctx.step, value, wall); !s)
        return s;
    if (Status s = tb.addScalar("batch_step_seconds", ctx.step, seconds, wall);
        !s)
      return s;
    if (seconds > 0)
      if (Status s = tb.addScalar(
              "batch_examples_per_second", ctx.step,
              static_cast<double>(ctx.globalBatch) / seconds, wall);
          !s)
        return s;
  }
  if ((ctx.step - c_.stepOrigin) % stepsPerEpoch_ == 0)
    return epochEnd(ctx);
  return Status::ok();
}

Status FitCallbacksHook::epochEnd(const StepContext &ctx) {
  // Keras numbers the epochs its callbacks see from 0.
  const int64_t epoch = (ctx.step - c_.stepOrigin) / stepsPerEpoch_ - 1;
  EpochLogs logs;
  logs["loss"] = epoch_.loss();
  for (const auto &[name, mean] : epoch_.metrics())
    logs[name] = mean;
  epoch_.reset();
  ++epochsSeen_;
  if (job_.validate)
    if (Status s = job_.validate(ctx.step, logs); !s)
      return s;

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
    if (d.reduced && d.learningRate != static_cast<float>(learningRate_)) {
      if (Status s = job_.setLearningRate(d.learningRate); !s)
        return Status::error("--reduce-lr-on-plateau: " + s.message());
    }
    learningRate_ = d.learningRate;
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
