//===- NanGuardHook.cpp - stop at the first non-finite value --------------===//
//
// Cost per step in the default mode: comparing the step's outputs (loss,
// metrics, grad_norm) with themselves. The gradient norm itself is computed
// in the step (global_norm, one pass over the gradients the update reads
// anyway). --check-numerics reads and scans every variable every step:
// over the 279,966 floats of examples/fashion_mnist_cnn.json (30 variables
// with the optimizer's slots) 0.14 ms on the 2-core development machine,
// and on a GPU one blocking copy per variable.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Hooks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace graph::runtime {

/// Counts the NaNs and infinities of `values` by their exponent bits (all
/// ones): a branch-free count the compiler can vectorise.
static int64_t countNonFinite(const float *values, int64_t count) {
  int64_t nonFinite = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &values[i], sizeof bits);
    nonFinite += (bits & 0x7f800000u) == 0x7f800000u;
  }
  return nonFinite;
}

/// "nan", "inf", "-inf", or the value.
static std::string describe(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

Status NanGuardHook::scan(Finding &out) {
  out = Finding();
  ++scans_;
  for (int v = 0; v < variables_.count(); ++v) {
    if (Status s = variables_.read(v, scratch_.data()); !s)
      return Status::error("nan guard: " + s.message());
    int64_t elements =
        variables_.bytes(v) / static_cast<int64_t>(sizeof(float));
    int64_t nonFinite = countNonFinite(scratch_.data(), elements);
    if (nonFinite > 0) {
      out = {v, nonFinite, elements};
      return Status::ok();
    }
  }
  return Status::ok();
}

Status NanGuardHook::begin(const SessionInfo &info) {
  hasNorm_ = std::find(info.outputs.begin(), info.outputs.end(), "grad_norm") !=
             info.outputs.end();
  lossScaled_ = std::find(info.outputs.begin(), info.outputs.end(),
                          "loss_scale") != info.outputs.end();
  everyStep_ = mode_ == Mode::everyTensor || !hasNorm_;
  int64_t largest = 0;
  for (int v = 0; v < variables_.count(); ++v)
    largest = std::max(largest, variables_.bytes(v));
  scratch_.assign(static_cast<size_t>(largest) / sizeof(float), 0.0f);
  Finding found;
  if (Status s = scan(found); !s)
    return s;
  if (found.variable >= 0)
    return Status::error(
        "nan guard: before the first step, variable '" +
        variables_.name(found.variable) + "' holds " +
        std::to_string(found.nonFinite) + " non-finite values (of " +
        std::to_string(found.elements) +
        "): check the checkpoint or the initializer it came from");
  return Status::ok();
}

Status NanGuardHook::afterStep(const StepContext &ctx) {
  // The first non-finite output: the loss, the metrics, the gradient norm.
  std::string output;
  double outputValue = 0;
  if (!std::isfinite(ctx.loss)) {
    output = "loss";
    outputValue = ctx.loss;
  } else {
    for (const auto &[name, value] : ctx.metrics)
      if (!std::isfinite(value)) {
        output = "metric '" + name + "'";
        outputValue = value;
        break;
      }
  }
  if (output.empty() && hasNorm_ && !lossScaled_ &&
      !std::isfinite(ctx.gradNorm)) {
    output = "gradient norm";
    outputValue = ctx.gradNorm;
  }
  // The outputs vouch for the gradients; only --check-numerics, or a plan
  // whose step has no gradient norm, reads the variables of a clean step.
  if (output.empty() && !everyStep_)
    return Status::ok();
  // A step launched ahead may be running on the variables: it finishes
  // first (then they are those after it, still non-finite once they were).
  if (ctx.settle)
    if (Status s = ctx.settle(); !s)
      return s;
  Finding found;
  if (Status s = scan(found); !s)
    return s;
  if (output.empty() && found.variable < 0)
    return Status::ok();

  std::string step = "step " + std::to_string(ctx.step);
  // With every variable checked after every step, this step's update is
  // what produced a non-finite one; otherwise an update since the start.
  std::string variable;
  if (found.variable >= 0)
    variable = "'" + variables_.name(found.variable) + "' (" +
               std::to_string(found.nonFinite) + " of " +
               std::to_string(found.elements) + " values)" +
               (everyStep_ ? ", the update of " + step + " produced it" : "");
  if (output.empty())
    return Status::error(step + ": non-finite variable " + variable +
                         " after a finite loss (" + describe(ctx.loss) +
                         "); lower the learning rate or clip the gradients");
  if (found.variable >= 0)
    return Status::error(step + ": non-finite " + output + " (" +
                         describe(outputValue) +
                         "); first non-finite variable: " + variable +
                         "; lower the learning rate or check the data");
  return Status::error(step + ": non-finite " + output + " (" +
                       describe(outputValue) +
                       ") while every variable is finite: the forward pass "
                       "of " +
                       step + " produced it; check that step's data");
}

} // namespace graph::runtime
