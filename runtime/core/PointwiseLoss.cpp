//===- PointwiseLoss.cpp - the kinds of graph.pointwise_loss --------------===//

#include "runtime/core/PointwiseLoss.h"

#include <string>

namespace graph::runtime {

namespace {

struct KindName {
  const char *name;
  PointwiseKind kind;
};

/// The graph dialect's LossKind names of the element-wise kinds.
const KindName kKinds[] = {
    {"mean_squared_error", PointwiseKind::meanSquaredError},
    {"mean_absolute_error", PointwiseKind::meanAbsoluteError},
    {"mean_absolute_percentage_error",
     PointwiseKind::meanAbsolutePercentageError},
    {"mean_squared_logarithmic_error",
     PointwiseKind::meanSquaredLogarithmicError},
    {"huber", PointwiseKind::huber},
    {"log_cosh", PointwiseKind::logCosh},
    {"binary_crossentropy", PointwiseKind::binaryCrossentropy},
    {"poisson", PointwiseKind::poisson},
    {"kl_divergence", PointwiseKind::klDivergence},
    {"hinge", PointwiseKind::hinge},
    {"squared_hinge", PointwiseKind::squaredHinge},
    {"binary_accuracy", PointwiseKind::binaryAccuracy},
};

} // namespace

Status readPointwiseLossConfig(const char *kernel, const KernelConfig &config,
                               bool gradient, PointwiseLossConfig &out) {
  const std::string at = std::string(kernel) + ": ";
  std::string kinds;
  for (const KindName &k : kKinds)
    kinds += std::string(kinds.empty() ? "" : ", ") + k.name;
  if (!config.has("kind"))
    return Status::invalidInput(at + "needs a kind (" + kinds + ")");
  std::string name = config.getString("kind");
  const KindName *found = nullptr;
  for (const KindName &k : kKinds)
    if (name == k.name)
      found = &k;
  if (!found)
    return Status::invalidInput(
        at + "kind '" + name + "' is not an element-wise loss (" + kinds + ")");
  out = PointwiseLossConfig();
  out.kind = found->kind;
  bool bce = out.kind == PointwiseKind::binaryCrossentropy;
  for (const char *option : {"from_logits", "label_smoothing"})
    if (!bce && config.has(option))
      return Status::invalidInput(
          at + option + " is binary_crossentropy's option, not " + name + "'s");
  if (out.kind != PointwiseKind::huber && config.has("delta"))
    return Status::invalidInput(at + "delta is huber's option, not " + name +
                                "'s");
  if (gradient && out.kind == PointwiseKind::binaryAccuracy)
    return Status::invalidInput(at + "binary_accuracy is a metric: it has no "
                                     "gradient");
  // Unit attributes arrive as 1, i1 as +-1.
  out.fromLogits = config.getInt("from_logits", 0) != 0;
  out.labelSmoothing = config.getFloat("label_smoothing", 0.0);
  out.delta = config.getFloat("delta", 1.0);
  return Status::ok();
}

} // namespace graph::runtime
