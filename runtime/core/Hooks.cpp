//===- Hooks.cpp - the built-in step hooks -------------------------------===//

#include "runtime/core/Hooks.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string_view>

namespace graph::runtime {

namespace {

/// Flushes a line file (--metrics, --data-order) and says, naming it, why
/// it could not be written: its later lines would be lost.
Status flushLines(std::ostream &out, const std::string &name) {
  errno = 0;
  out.flush();
  if (out)
    return Status::ok();
  int error = errno;
  return Status::resourceExhausted(
      name + ": cannot write: " +
      (error ? std::string(std::strerror(error))
             : std::string("the write failed")) +
      "; the run stops rather than lose the file's lines (free space there, "
      "or name another file)");
}

} // namespace

StepSplit splitStep(const StepResult &result) {
  StepSplit total;
  int devices = 0;
  for (const std::vector<Timestamp> &timeline : result.timestamps) {
    using Clock = std::chrono::steady_clock;
    auto find = [&](std::string_view name, bool last) {
      Clock::time_point at{};
      bool found = false;
      for (const Timestamp &t : timeline)
        if (t.name == name && (!found || last)) {
          at = t.at;
          found = true;
        }
      return std::make_pair(found, at);
    };
    auto seconds = [](Clock::time_point a, Clock::time_point b) {
      return std::max(0.0, std::chrono::duration<double>(b - a).count());
    };
    auto fwd = find("forward_begin", false),
         bwd = find("backward_begin", false);
    auto bwdEnd = find("backward_end", false);
    auto arBegin = find("allreduce_begin", false);
    auto arEnd = find("allreduce_end", true);
    auto upd = find("update_begin", false), stepEnd = find("step_end", true);
    if (!fwd.first)
      continue;
    ++devices;
    auto forwardEnd = bwd.first ? bwd : stepEnd;
    if (forwardEnd.first)
      total.forward += seconds(fwd.second, forwardEnd.second);
    double reduce = 0;
    bool hostReduce = false;
    for (size_t i = 0; i + 1 < timeline.size(); ++i)
      if (timeline[i].name == kReduceBegin &&
          timeline[i + 1].name == kReduceEnd) {
        reduce += seconds(timeline[i].at, timeline[i + 1].at);
        hostReduce = true;
      }
    if (hostReduce) {
      // A host thread runs its all-reduces between its backward ops: all
      // of their time is the step's.
      total.allReduce += reduce;
      if (bwd.first && upd.first)
        total.backward +=
            std::max(0.0, seconds(bwd.second, upd.second) - reduce);
    } else if (bwdEnd.first) {
      // A GPU's reductions run on its comm stream beside the backward:
      // what the step waited for after its backward is theirs.
      if (bwd.first)
        total.backward += seconds(bwd.second, bwdEnd.second);
      if (upd.first)
        total.allReduce += seconds(bwdEnd.second, upd.second);
    } else {
      // A plan from before backward_end: the reductions' own span.
      auto backwardEnd = arBegin.first ? arBegin : upd;
      if (bwd.first && backwardEnd.first)
        total.backward += seconds(bwd.second, backwardEnd.second);
      if (arBegin.first && arEnd.first)
        total.allReduce += seconds(arBegin.second, arEnd.second);
    }
    if (upd.first && stepEnd.first)
      total.update += seconds(upd.second, stepEnd.second);
  }
  if (devices > 0) {
    total.forward /= devices;
    total.backward /= devices;
    total.allReduce /= devices;
    total.update /= devices;
  }
  return total;
}

Status StepTimerHook::begin(const SessionInfo &info) {
  globalBatch_ = info.globalBatch;
  steps_.clear();
  parts_.clear();
  open_.clear();
  begins_.clear();
  return Status::ok();
}

void StepTimerHook::closeReady(std::optional<TimePoint> now) {
  auto seconds = [](TimePoint a, TimePoint b) {
    return std::chrono::duration<double>(b - a).count();
  };
  while (!open_.empty()) {
    const Open &o = open_.front();
    // The begin of the step after it, the first one after its own.
    while (!begins_.empty() && begins_.front() <= o.begin)
      begins_.erase(begins_.begin());
    if (begins_.empty() && !now)
      return;
    TimePoint next = begins_.empty() ? *now : begins_.front();
    Parts p = o.parts;
    p.wall = seconds(o.begin, next);
    // Launched after this step ended: the devices waited for its
    // after-step hooks. Launched before: the hooks ran while it did.
    if (next > o.end)
      p.hooks += seconds(o.end, next);
    p.other = p.wall - p.input - p.hooks - p.devices.total();
    steps_.push_back(p.wall);
    parts_.push_back(p);
    open_.erase(open_.begin());
  }
}

Status StepTimerHook::beforeStep(StepContext &ctx) {
  begins_.push_back(ctx.begin);
  closeReady();
  return Status::ok();
}

Status StepTimerHook::afterStep(const StepContext &ctx) {
  Open o;
  o.parts.input = ctx.inputWaitSeconds;
  o.parts.hooks = ctx.hooksBeforeSeconds;
  o.parts.devices = ctx.result ? splitStep(*ctx.result) : StepSplit();
  o.parts.crossWorker = ctx.result ? ctx.result->crossWorkerSeconds : 0.0;
  o.begin = ctx.begin;
  o.end = ctx.end;
  open_.push_back(o);
  closeReady();
  return Status::ok();
}

std::vector<double> StepTimerHook::measured() const {
  size_t skip = static_cast<size_t>(std::max<int64_t>(0, warmup_));
  if (steps_.size() <= skip)
    return steps_;
  return std::vector<double>(steps_.begin() + static_cast<ptrdiff_t>(skip),
                             steps_.end());
}

double StepTimerHook::meanStepSeconds() const {
  std::vector<double> m = measured();
  if (m.empty())
    return 0;
  return std::accumulate(m.begin(), m.end(), 0.0) /
         static_cast<double>(m.size());
}

double StepTimerHook::medianStepSeconds() const {
  std::vector<double> m = measured();
  if (m.empty())
    return 0;
  std::sort(m.begin(), m.end());
  size_t n = m.size();
  return n % 2 ? m[n / 2] : (m[n / 2 - 1] + m[n / 2]) / 2;
}

double StepTimerHook::imagesPerSecond() const {
  double mean = meanStepSeconds();
  return mean > 0 ? static_cast<double>(globalBatch_) / mean : 0;
}

Status StepTimerHook::end(const SessionInfo &info) {
  closeReady(std::chrono::steady_clock::now());
  if (steps_.empty())
    return Status::ok();
  double total = std::accumulate(steps_.begin(), steps_.end(), 0.0);
  size_t skip = static_cast<size_t>(std::max<int64_t>(0, warmup_));
  bool warm = steps_.size() > skip;
  size_t from = warm ? skip : 0;
  Parts sum;
  for (size_t i = from; i < parts_.size(); ++i) {
    const Parts &p = parts_[i];
    sum.wall += p.wall;
    sum.input += p.input;
    sum.hooks += p.hooks;
    sum.other += p.other;
    sum.devices.forward += p.devices.forward;
    sum.devices.backward += p.devices.backward;
    sum.devices.allReduce += p.devices.allReduce;
    sum.devices.update += p.devices.update;
    sum.crossWorker += p.crossWorker;
  }
  double n = static_cast<double>(parts_.size() - from);
  double mean = meanStepSeconds();
  char line[512];
  std::snprintf(line, sizeof line,
                "TimeHistory: %lld steps in %.3f sec (%s, %d replica(s), "
                "global batch %lld)\n",
                static_cast<long long>(steps_.size()), total,
                info.program.c_str(), info.replicas,
                static_cast<long long>(globalBatch_));
  out_ << line;
  if (warm)
    std::snprintf(line, sizeof line,
                  "step time: mean %.4f sec, median %.4f sec over %lld steps "
                  "after %lld warm-up steps (wall clock, start to start)\n",
                  mean, medianStepSeconds(),
                  static_cast<long long>(steps_.size() - skip),
                  static_cast<long long>(skip));
  else
    std::snprintf(line, sizeof line,
                  "step time: mean %.4f sec, median %.4f sec over all %lld "
                  "steps (no more than the %lld warm-up steps; wall clock, "
                  "start to start)\n",
                  mean, medianStepSeconds(),
                  static_cast<long long>(steps_.size()),
                  static_cast<long long>(skip));
  out_ << line;
  std::snprintf(line, sizeof line, "images/sec: %.1f\n", imagesPerSecond());
  out_ << line;
  // Each part's mean over the measured steps, and its share of the mean
  // wall time; the parts add up to it.
  auto part = [&](const char *name, double s) {
    char text[96];
    std::snprintf(text, sizeof text, "%s %.4f sec (%.1f%%)", name, s / n,
                  sum.wall > 0 ? 100.0 * s / sum.wall : 0.0);
    return std::string(text);
  };
  std::string split =
      "step split: " + part("input wait", sum.input) + ", " +
      part("forward", sum.devices.forward) + ", " +
      part("backward", sum.devices.backward) + ", " +
      part("all-reduce", sum.devices.allReduce) +
      (sum.crossWorker > 0
           ? " [" + part("across workers", sum.crossWorker) + "]"
           : std::string()) +
      ", " + part("update", sum.devices.update) + ", " +
      part("hooks", sum.hooks) + ", " + part("other", sum.other);
  std::snprintf(line, sizeof line, " = %.4f sec\n", sum.wall / n);
  out_ << split << line;
  out_.flush();
  return Status::ok();
}

void EpochMeans::setSums(Sums sums) {
  steps_ = sums.steps;
  loss_ = sums.loss;
  examples_ = sums.examples;
  names_ = std::move(sums.names);
  states_ = std::move(sums.states);
  specs_.clear();
}

void EpochMeans::add(const StepContext &ctx) {
  if (steps_++ == 0) {
    names_.clear();
    specs_ = ctx.metricSpecs;
    states_.clear();
    for (const auto &[name, value] : ctx.metrics)
      names_.push_back(name);
    for (size_t i = 0; i < names_.size(); ++i)
      states_.emplace_back(
          i < ctx.metricStates.size() ? ctx.metricStates[i].size() : 1, 0.0);
  } else if (specs_.empty()) {
    specs_ = ctx.metricSpecs; // sums set from a checkpoint
  }
  // The step's values are the job's means over its global batch of g rows,
  // sum_i s w_i v_i / g (s the batch's scale, g / n for the n examples of
  // an epoch's short batch; w the loss's weights or the metrics' 1 an
  // example): times n = g / s, the sums Keras accumulates. Every worker
  // computes the same n, so every worker's logs are the job's. Confusion
  // counts are sums already, of the metrics' weights: each of the short
  // batch's examples counted s times, so they add up divided by s.
  double n = 1, s = 1;
  if (const data::Batch *b = ctx.batch) {
    n = static_cast<double>(ctx.globalBatch) / b->weightScale;
    s = b->weightScale;
  }
  loss_ += ctx.loss * n;
  examples_ += n;
  for (size_t i = 0; i < states_.size() && i < ctx.metrics.size(); ++i) {
    const MetricSpec *spec = i < specs_.size() ? specs_[i] : nullptr;
    if (spec && spec->counted() && i < ctx.metricStates.size()) {
      const std::vector<double> &counts = ctx.metricStates[i];
      for (size_t j = 0; j < counts.size() && j < states_[i].size(); ++j)
        states_[i][j] += counts[j] / s;
      continue;
    }
    // A mean's state is the mean (the root of a root_mean is taken last).
    double mean = i < ctx.metricStates.size() && !ctx.metricStates[i].empty()
                      ? ctx.metricStates[i][0]
                      : ctx.metrics[i].second;
    states_[i][0] += mean * n;
  }
}

double EpochMeans::loss() const {
  return examples_ > 0 ? loss_ / examples_ : 0.0;
}

std::vector<std::pair<std::string, double>> EpochMeans::metrics() const {
  std::vector<std::pair<std::string, double>> values;
  for (size_t i = 0; i < names_.size(); ++i) {
    const MetricSpec *spec = i < specs_.size() ? specs_[i] : nullptr;
    std::vector<double> state = states_[i];
    if (!spec || !spec->counted())
      state[0] = examples_ != 0 ? state[0] / examples_ : 0.0; // divide_no_nan
    values.emplace_back(names_[i], spec ? spec->value(state) : state[0]);
  }
  return values;
}

Status DataOrderHook::afterStep(const StepContext &ctx) {
  if (!ctx.batch)
    return Status::ok();
  out_ << ctx.step << ":";
  for (int64_t row = 0; row < ctx.batch->examples(); ++row)
    out_ << ' ' << ctx.batch->sourceIndices[static_cast<size_t>(row)];
  out_ << '\n';
  return flushLines(out_, name_);
}

Status LoggerHook::afterStep(const StepContext &ctx) {
  // The final loss is reported at end() even when no step is logged.
  lastLoss_ = ctx.loss;
  if (every_ <= 0)
    return Status::ok();
  if (ctx.step != 1 && ctx.step % every_ != 0)
    return Status::ok();
  char line[256];
  if (logged_) {
    double elapsed = std::chrono::duration<double>(ctx.end - lastTime_).count();
    double rate =
        elapsed > 0 ? static_cast<double>(ctx.step - lastStep_) / elapsed : 0;
    std::snprintf(line, sizeof line, "global_step/sec: %.6g\n", rate);
    out_ << line;
    std::snprintf(line, sizeof line, "loss = %.8g, step = %lld (%.3f sec)\n",
                  ctx.loss, static_cast<long long>(ctx.step), elapsed);
  } else {
    std::snprintf(line, sizeof line, "loss = %.8g, step = %lld\n", ctx.loss,
                  static_cast<long long>(ctx.step));
  }
  out_ << line;
  out_.flush();
  logged_ = true;
  lastStep_ = ctx.step;
  lastTime_ = ctx.end;
  return Status::ok();
}

Status LoggerHook::end(const SessionInfo &info) {
  if (info.stepsDone == 0)
    return Status::ok();
  char line[128];
  std::snprintf(line, sizeof line, "Loss for final step: %.8g.\n", lastLoss_);
  out_ << line;
  out_.flush();
  return Status::ok();
}

} // namespace graph::runtime

namespace graph::runtime {

/// A JSON number, or null for what JSON cannot hold.
static std::string jsonNumber(double value) {
  if (!std::isfinite(value))
    return "null";
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

Status MetricsFileHook::afterStep(const StepContext &ctx) {
  if (every_ <= 0 || (ctx.step != 1 && ctx.step % every_ != 0))
    return Status::ok();
  double seconds = std::chrono::duration<double>(ctx.end - ctx.begin).count();
  out_ << "{\"step\": " << ctx.step << ", \"loss\": " << jsonNumber(ctx.loss);
  for (const auto &[name, value] : ctx.metrics)
    out_ << ", \"" << name << "\": " << jsonNumber(value);
  if (!std::isnan(ctx.lossScale))
    out_ << ", \"loss_scale\": " << jsonNumber(ctx.lossScale);
  out_ << ", \"seconds\": " << jsonNumber(seconds) << "}\n";
  return flushLines(out_, name_);
}

Status MetricsFileHook::writeEvaluation(int64_t step,
                                        const std::vector<std::string> &names,
                                        const std::vector<double> &values,
                                        const std::vector<int64_t> &confusion) {
  out_ << "{\"eval\": true, \"step\": " << step;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    out_ << ", \"" << names[i] << "\": " << jsonNumber(values[i]);
  if (!confusion.empty()) {
    out_ << ", \"confusion\": [";
    for (size_t i = 0; i < confusion.size(); ++i)
      out_ << (i ? ", " : "") << confusion[i];
    out_ << "]";
  }
  out_ << "}\n";
  return flushLines(out_, name_);
}

Status MetricsFileHook::writeValidation(int64_t step, int64_t epoch,
                                        const std::vector<std::string> &names,
                                        const std::vector<double> &values) {
  out_ << "{\"validation\": true, \"step\": " << step
       << ", \"epoch\": " << epoch;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    out_ << ", \"val_" << names[i] << "\": " << jsonNumber(values[i]);
  out_ << "}\n";
  return flushLines(out_, name_);
}

} // namespace graph::runtime
