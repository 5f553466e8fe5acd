//===- ProgressBarHook.cpp - a one-line progress bar ----------------------===//

#include "runtime/core/Hooks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace graph::runtime {

namespace {

using Clock = std::chrono::steady_clock;

/// Redraws closer together than this are skipped: a terminal redrawn every
/// step of a fast model costs more than the step.
constexpr std::chrono::milliseconds kRedrawInterval{100};
constexpr int kBarWidth = 30;

/// "1:23", or "1:02:03" from an hour on.
std::string clockTime(double seconds) {
  auto total = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%lld:%02lld:%02lld", total / 3600,
                  total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%lld:%02lld", total / 60, total % 60);
  return text;
}

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", value);
  return text;
}

} // namespace

ProgressBarHook::~ProgressBarHook() {
  if (lineOpen_)
    out_ << '\n' << std::flush;
}

Status ProgressBarHook::begin(const SessionInfo &info) {
  globalBatch_ = info.globalBatch;
  stepsSeen_ = 0;
  stepDrawn_ = true;
  return Status::ok();
}

Status ProgressBarHook::afterStep(const StepContext &ctx) {
  if (stepsSeen_++ == 0) {
    firstBegin_ = ctx.begin;
    firstEnd_ = ctx.end;
  }
  loss_ = ctx.loss;
  metrics_ = ctx.metrics;
  if (ctx.globalBatch > 0)
    globalBatch_ = ctx.globalBatch;
  lastEnd_ = ctx.end;
  bool last = total_ > 0 && stepsSeen_ >= total_;
  if (stepsSeen_ == 1 || last || ctx.end - lastDraw_ >= kRedrawInterval) {
    draw();
    lastDraw_ = ctx.end;
  } else {
    stepDrawn_ = false;
  }
  return Status::ok();
}

void ProgressBarHook::draw() {
  std::string line;
  if (total_ > 0) {
    // The bar: '=' for what is done, '>' at the front while it runs.
    int filled = static_cast<int>(
        std::min<int64_t>(kBarWidth, stepsSeen_ * kBarWidth / total_));
    std::string bar(kBarWidth, ' ');
    std::fill_n(bar.begin(), filled, '=');
    if (filled < kBarWidth)
      bar[static_cast<size_t>(filled)] = '>';
    line.append("[").append(bar).append("] ");
    line.append(std::to_string(stepsSeen_))
        .append("/")
        .append(std::to_string(total_));
  } else {
    line.append("step ").append(std::to_string(stepsSeen_));
  }
  line += " loss " + number(loss_);
  for (const auto &[name, value] : metrics_)
    line += " " + (name == "accuracy" ? std::string("acc") : name) + " " +
            number(value);

  // The rate leaves out the first step (allocation, first touches) once
  // there are others to measure.
  double seconds =
      stepsSeen_ > 1
          ? std::chrono::duration<double>(lastEnd_ - firstEnd_).count()
          : std::chrono::duration<double>(firstEnd_ - firstBegin_).count();
  int64_t steps = stepsSeen_ > 1 ? stepsSeen_ - 1 : 1;
  double secondsPerStep = seconds / static_cast<double>(steps);
  if (secondsPerStep > 0) {
    char rate[32];
    std::snprintf(rate, sizeof rate, " %.0f img/s",
                  static_cast<double>(globalBatch_) / secondsPerStep);
    line += rate;
  }
  if (total_ > 0 && stepsSeen_ < total_ && secondsPerStep > 0)
    line += " ETA " + clockTime(static_cast<double>(total_ - stepsSeen_) *
                                secondsPerStep);
  else if (total_ > 0)
    line += " in " +
            clockTime(
                std::chrono::duration<double>(lastEnd_ - firstBegin_).count());

  // Spaces clear what a longer previous line left behind.
  size_t width = line.size();
  if (width < lastWidth_)
    line.append(lastWidth_ - width, ' ');
  lastWidth_ = width;
  out_ << '\r' << line << std::flush;
  lineOpen_ = true;
  stepDrawn_ = true;
  ++redraws_;
}

Status ProgressBarHook::end(const SessionInfo &) {
  if (!stepDrawn_)
    draw();
  if (lineOpen_)
    out_ << '\n' << std::flush;
  lineOpen_ = false;
  return Status::ok();
}

} // namespace graph::runtime
