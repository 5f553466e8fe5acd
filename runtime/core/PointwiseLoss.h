//===- PointwiseLoss.h - the kinds of graph.pointwise_loss ------*- C++ -*-===//
//
// A pointwise_loss or pointwise_loss_grad launch names its Keras loss (or
// metric) by `kind`, with the options of the kinds that take them. One
// table and one reader for every backend, so they accept and refuse the
// same configurations in the same words; each backend computes the kinds
// its own way.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_POINTWISELOSS_H
#define RUNTIME_CORE_POINTWISELOSS_H

#include "runtime/base/Status.h"
#include "runtime/core/Kernel.h"

#include <vector>

// OverlapLossConfig's formulas run on the host and, in the cuda backend's
// kernels, on the device: one definition for both.
#if defined(__CUDACC__)
#define GRAPH_LOSS_HOST_DEVICE __host__ __device__
#else
#define GRAPH_LOSS_HOST_DEVICE
#endif

namespace graph::runtime {

enum class PointwiseKind {
  meanSquaredError,
  meanAbsoluteError,
  meanAbsolutePercentageError,
  meanSquaredLogarithmicError,
  huber,
  logCosh,
  binaryCrossentropy,
  poisson,
  klDivergence,
  hinge,
  squaredHinge,
  /// A metric: (p > 0.5) == t, forward only (Keras' binary_accuracy).
  binaryAccuracy,
  binaryFocalCrossentropy,
  /// Functions of a whole row of the last axis: one loss a row.
  categoricalFocalCrossentropy,
  cosineSimilarity,
  categoricalHinge,
};

/// A launch's configuration: kind, from_logits and label_smoothing
/// (binary_crossentropy's and the focal cross-entropies'), delta (huber's,
/// Keras' default 1), alpha and gamma (the focal cross-entropies'; Keras'
/// defaults 0.25 and 2) and apply_class_balancing (binary focal's).
struct PointwiseLossConfig {
  PointwiseKind kind = PointwiseKind::meanSquaredError;
  bool fromLogits = false;
  double labelSmoothing = 0.0;
  double delta = 1.0;
  double alpha = 0.25;
  double gamma = 2.0;
  bool applyClassBalancing = false;

  /// Each sample's loss is the sum over the last axis, not the mean.
  bool sumsLastAxis() const { return kind == PointwiseKind::klDivergence; }
  /// Each row of the last axis gives one loss, a function of the whole row.
  bool rowWise() const {
    return kind == PointwiseKind::categoricalFocalCrossentropy ||
           kind == PointwiseKind::cosineSimilarity ||
           kind == PointwiseKind::categoricalHinge;
  }
  /// Targets smoothed towards 0.5 by label_smoothing.
  bool binarySmoothing() const {
    return kind == PointwiseKind::binaryCrossentropy ||
           kind == PointwiseKind::binaryFocalCrossentropy;
  }
  /// Targets all 0 or 1 are read as -1 and 1 (keras
  /// convert_binary_labels_to_hinge).
  bool hingeLabels() const {
    return kind == PointwiseKind::hinge || kind == PointwiseKind::squaredHinge;
  }
};

/// Reads `config` of kernel `kernel` (its name, for errors): the kind,
/// required, and only the options it takes; with `gradient`, a kind that
/// has a gradient (not a metric).
Status readPointwiseLossConfig(const char *kernel, const KernelConfig &config,
                               bool gradient, PointwiseLossConfig &out);

/// An overlap_loss or overlap_loss_grad launch: Keras' dice or tversky
/// (alpha and beta, Keras' defaults 0.5), from overlap_sums' [sum t p,
/// sum t, sum p]; `replicas` scales the gradient (graph.overlap_loss_grad).
struct OverlapLossConfig {
  bool tversky = false;
  double alpha = 0.5, beta = 0.5;
  int64_t replicas = 1;
  /// Keras' reduction="sum": the value is not multiplied by the weights'
  /// mean (graph.overlap_loss).
  bool sumReduction = false;

  /// overlap_sums' length: sum t p, sum t, sum p, sum w, rows.
  static constexpr int64_t kSums = 5;
  /// keras.config.epsilon().
  static constexpr double kEpsilon = 1e-7;

  /// The weights' mean, sum w / rows (0 without rows).
  GRAPH_LOSS_HOST_DEVICE static double weightMean(const double sums[kSums]) {
    return sums[4] > 0 ? sums[3] / sums[4] : 0.0;
  }
  /// What the ratio is multiplied by: the weights' mean, or 1 for a summed
  /// loss.
  GRAPH_LOSS_HOST_DEVICE double scale(const double sums[kSums]) const {
    return sumReduction ? 1.0 : weightMean(sums);
  }
  /// The loss of `sums` (the ratio times scale()).
  GRAPH_LOSS_HOST_DEVICE double value(const double sums[kSums]) const {
    const double i = sums[0], t = sums[1], p = sums[2];
    if (!tversky)
      return (1.0 - 2.0 * i / (t + p + kEpsilon)) * scale(sums);
    return (1.0 - i / (i + alpha * (t - i) + beta * (p - i) + kEpsilon)) *
           scale(sums);
  }
  /// Its gradient by each prediction p_i of a row weighing more than 0, as
  /// slope t_i + offset (unscaled by replicas).
  GRAPH_LOSS_HOST_DEVICE void gradient(const double sums[kSums], double &slope,
                                       double &offset) const {
    const double i = sums[0], t = sums[1], p = sums[2];
    const double by = scale(sums);
    if (!tversky) {
      // d/dp_k: I' = t_k, T + P' = 1.
      const double d = t + p + kEpsilon;
      slope = -2.0 / d * by;
      offset = 2.0 * i / (d * d) * by;
      return;
    }
    // D = I + alpha (T - I) + beta (P - I) + eps, D' = t_k (1 - alpha -
    // beta) + beta.
    const double d = i + alpha * (t - i) + beta * (p - i) + kEpsilon;
    const double q = i / (d * d);
    slope = (-1.0 / d + q * (1.0 - alpha - beta)) * by;
    offset = q * beta * by;
  }
};

Status readOverlapLossConfig(const char *kernel, const KernelConfig &config,
                             OverlapLossConfig &out);

/// graph.sample_overlap_loss' groups: the elements of a tensor of `shape`
/// that share the batch index and every coordinate outside the reduced
/// `axis`, each group one ratio of Dice or Tversky.
struct OverlapGroups {
  /// Groups in all, and in one sample (the batch's row).
  int64_t groups = 0, perSample = 0;
  /// The group of element `i` (row-major).
  int64_t groupOf(int64_t i) const {
    int64_t group = 0;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t coordinate = i % shape[d];
      i /= shape[d];
      if (!reduced[d])
        group += coordinate * keptStride[d];
    }
    return group;
  }

  std::vector<int64_t> shape;
  std::vector<bool> reduced;
  std::vector<int64_t> keptStride;
};

/// The groups of `shape` [B, ...] with `axis` (positive, never 0) reduced.
Status makeOverlapGroups(const char *kernel, const std::vector<int64_t> &shape,
                         const std::vector<int64_t> &axis, OverlapGroups &out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_POINTWISELOSS_H
