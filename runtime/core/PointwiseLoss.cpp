//===- PointwiseLoss.cpp - the kinds of graph.pointwise_loss --------------===//

#include "runtime/core/PointwiseLoss.h"

#include <cmath>
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
    {"binary_focal_crossentropy", PointwiseKind::binaryFocalCrossentropy},
    {"categorical_focal_crossentropy",
     PointwiseKind::categoricalFocalCrossentropy},
    {"cosine_similarity", PointwiseKind::cosineSimilarity},
    {"categorical_hinge", PointwiseKind::categoricalHinge},
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
  using K = PointwiseKind;
  const K kind = out.kind;
  const bool focal = kind == K::binaryFocalCrossentropy ||
                     kind == K::categoricalFocalCrossentropy;
  const bool crossEntropy = kind == K::binaryCrossentropy || focal;
  struct Owner {
    const char *option;
    bool takes;
    const char *owners;
  };
  const Owner owners[] = {
      {"from_logits", crossEntropy,
       "binary_crossentropy's and the focal cross-entropies'"},
      {"label_smoothing", crossEntropy,
       "binary_crossentropy's and the focal cross-entropies'"},
      {"delta", kind == K::huber, "huber's"},
      {"alpha", focal, "the focal cross-entropies'"},
      {"gamma", focal, "the focal cross-entropies'"},
      {"apply_class_balancing", kind == K::binaryFocalCrossentropy,
       "binary_focal_crossentropy's"},
  };
  for (const Owner &o : owners)
    if (!o.takes && config.has(o.option))
      return Status::invalidInput(at + o.option + " is " + o.owners +
                                  " option, not " + name + "'s");
  if (gradient && out.kind == PointwiseKind::binaryAccuracy)
    return Status::invalidInput(at + "binary_accuracy is a metric: it has no "
                                     "gradient");
  // Unit attributes arrive as 1, i1 as +-1.
  out.fromLogits = config.getInt("from_logits", 0) != 0;
  out.labelSmoothing = config.getFloat("label_smoothing", 0.0);
  out.delta = config.getFloat("delta", 1.0);
  out.alpha = config.getFloat("alpha", 0.25);
  out.gamma = config.getFloat("gamma", 2.0);
  out.applyClassBalancing = config.getInt("apply_class_balancing", 0) != 0;
  if (!std::isfinite(out.alpha) || !std::isfinite(out.gamma) || out.gamma < 0)
    return Status::invalidInput(at + "needs a finite alpha and a finite, "
                                     "non-negative gamma");
  return Status::ok();
}

namespace {
constexpr double kEpsilon = 1e-7; // keras.config.epsilon()
} // namespace

// keras dice: 1 - 2 I / (T + P + eps); tversky: 1 - I / (I + alpha fp +
// beta fn + eps) with fp = sum (1 - p) t = T - I, fn = sum p (1 - t) = P - I.
/// Keras' reduce_weighted_values of a scalar loss: times the weights'
/// mean (divide_no_nan: 0 without rows).
Status readOverlapLossConfig(const char *kernel, const KernelConfig &config,
                             OverlapLossConfig &out) {
  const std::string at = std::string(kernel) + ": ";
  std::string kind = config.has("kind") ? config.getString("kind") : "";
  if (kind != "dice" && kind != "tversky")
    return Status::invalidInput(at + "needs kind dice or tversky, got '" +
                                kind + "'");
  out = OverlapLossConfig();
  out.tversky = kind == "tversky";
  if (!out.tversky && (config.has("alpha") || config.has("beta")))
    return Status::invalidInput(at + "alpha and beta are tversky's options, "
                                     "not dice's");
  out.alpha = config.getFloat("alpha", 0.5);
  out.beta = config.getFloat("beta", 0.5);
  out.replicas = config.getInt("replicas", 1);
  out.sumReduction = config.getInt("sum_reduction", 0) != 0;
  if (!std::isfinite(out.alpha) || !std::isfinite(out.beta) || out.replicas < 1)
    return Status::invalidInput(at + "needs a finite alpha and beta and "
                                     "replicas >= 1");
  return Status::ok();
}

Status makeOverlapGroups(const char *kernel, const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &axis, OverlapGroups &out) {
  out = OverlapGroups();
  const std::string at = std::string(kernel) + ": ";
  if (shape.size() < 2 || shape[0] < 1)
    return Status::invalidInput(at + "needs predictions [B, ...], got " +
                                shapeText(shape));
  if (axis.empty())
    return Status::invalidInput(at + "needs at least one axis");
  out.shape = shape;
  out.reduced.assign(shape.size(), false);
  for (int64_t a : axis) {
    if (a < 1 || a >= static_cast<int64_t>(shape.size()) ||
        out.reduced[static_cast<size_t>(a)])
      return Status::invalidInput(at + "axis " + std::to_string(a) +
                                  " is not a distinct axis of " +
                                  shapeText(shape) + " past the batch");
    out.reduced[static_cast<size_t>(a)] = true;
  }
  out.keptStride.assign(shape.size(), 0);
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;)
    if (!out.reduced[d]) {
      out.keptStride[d] = stride;
      stride *= shape[d];
    }
  out.groups = stride;
  out.perSample = stride / shape[0];
  return Status::ok();
}

} // namespace graph::runtime
