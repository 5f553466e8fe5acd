//===- Hooks.cpp - the built-in step hooks -------------------------------===//

#include "runtime/core/Hooks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string_view>

namespace graph::runtime {

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
    auto arBegin = find("allreduce_begin", false);
    auto arEnd = find("allreduce_end", true);
    auto upd = find("update_begin", false), stepEnd = find("step_end", true);
    if (!fwd.first)
      continue;
    ++devices;
    auto forwardEnd = bwd.first ? bwd : stepEnd;
    if (forwardEnd.first)
      total.forward += seconds(fwd.second, forwardEnd.second);
    auto backwardEnd = arBegin.first ? arBegin : upd;
    if (bwd.first && backwardEnd.first)
      total.backward += seconds(bwd.second, backwardEnd.second);
    if (arBegin.first && arEnd.first)
      total.allReduce += seconds(arBegin.second, arEnd.second);
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
  splits_.clear();
  return Status::ok();
}

Status StepTimerHook::afterStep(const StepContext &ctx) {
  steps_.push_back(std::chrono::duration<double>(ctx.end - ctx.begin).count());
  splits_.push_back(ctx.result ? splitStep(*ctx.result) : StepSplit());
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
  if (steps_.empty())
    return Status::ok();
  double total = std::accumulate(steps_.begin(), steps_.end(), 0.0);
  size_t skip = static_cast<size_t>(std::max<int64_t>(0, warmup_));
  bool warm = steps_.size() > skip;
  size_t from = warm ? skip : 0;
  StepSplit split;
  for (size_t i = from; i < splits_.size(); ++i) {
    split.forward += splits_[i].forward;
    split.backward += splits_[i].backward;
    split.allReduce += splits_[i].allReduce;
    split.update += splits_[i].update;
  }
  double n = static_cast<double>(splits_.size() - from);
  double mean = meanStepSeconds();
  auto pct = [&](double s) { return mean > 0 ? 100.0 * s / n / mean : 0.0; };
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
                  "after %lld warm-up steps\n",
                  mean, medianStepSeconds(),
                  static_cast<long long>(steps_.size() - skip),
                  static_cast<long long>(skip));
  else
    std::snprintf(line, sizeof line,
                  "step time: mean %.4f sec, median %.4f sec over all %lld "
                  "steps (no more than the %lld warm-up steps)\n",
                  mean, medianStepSeconds(),
                  static_cast<long long>(steps_.size()),
                  static_cast<long long>(skip));
  out_ << line;
  std::snprintf(line, sizeof line, "images/sec: %.1f\n", imagesPerSecond());
  out_ << line;
  std::snprintf(line, sizeof line,
                "step split: forward %.4f sec (%.1f%%), backward %.4f sec "
                "(%.1f%%), all-reduce %.4f sec (%.1f%%), update %.4f sec "
                "(%.1f%%)\n",
                split.forward / n, pct(split.forward), split.backward / n,
                pct(split.backward), split.allReduce / n, pct(split.allReduce),
                split.update / n, pct(split.update));
  out_ << line;
  out_.flush();
  return Status::ok();
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
  out_ << ", \"seconds\": " << jsonNumber(seconds) << "}\n";
  out_.flush();
  return Status::ok();
}

void MetricsFileHook::writeEvaluation(int64_t step,
                                      const std::vector<std::string> &names,
                                      const std::vector<double> &values) {
  out_ << "{\"eval\": true, \"step\": " << step;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i)
    out_ << ", \"" << names[i] << "\": " << jsonNumber(values[i]);
  out_ << "}\n";
  out_.flush();
}

} // namespace graph::runtime
