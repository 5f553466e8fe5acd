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
};

/// A launch's configuration: kind, from_logits and label_smoothing
/// (binary_crossentropy's), delta (huber's, Keras' default 1).
struct PointwiseLossConfig {
  PointwiseKind kind = PointwiseKind::meanSquaredError;
  bool fromLogits = false;
  double labelSmoothing = 0.0;
  double delta = 1.0;

  /// Each sample's loss is the sum over the last axis, not the mean.
  bool sumsLastAxis() const { return kind == PointwiseKind::klDivergence; }
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

} // namespace graph::runtime

#endif // RUNTIME_CORE_POINTWISELOSS_H
