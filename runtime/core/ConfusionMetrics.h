//===- ConfusionMetrics.h - Keras' Precision, Recall and AUC ----*- C++ -*-===//
//
// Keras' confusion metrics keep state across an epoch's batches: true and
// false positives and negatives per threshold, which add up over batches,
// replicas and workers, and from which result() makes the value. The
// evaluation and training steps output each batch's counts
// (graph.confusion_counts, whose kernels call confusionCounts below); the
// runtime adds them and makes the metric (confusionMetric), so an epoch's
// or an evaluation's value is exact over its examples, as Keras' is.
// The formulas are Keras 3's (keras/src/metrics/metrics_utils.py,
// confusion_metrics.py), in float32 where Keras' state is float32.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_CONFUSIONMETRICS_H
#define RUNTIME_CORE_CONFUSIONMETRICS_H

#include "runtime/base/Status.h"
#include "runtime/core/Kernel.h"

#include <cstdint>
#include <vector>

namespace graph::runtime {

/// graph.confusion_counts' configuration.
struct ConfusionCountsConfig {
  /// AUC's evenly spaced thresholds from -1e-7 to 1 + 1e-7 (0: one
  /// `threshold`).
  int64_t numThresholds = 0;
  double threshold = 0.5;
  /// Keep each row's k largest predictions (0: all).
  int64_t k = 0;
  /// Count this column only (-1: all).
  int64_t classId = -1;
  /// Sigmoid before counting (AUC's from_logits).
  bool fromLogits = false;

  /// The thresholds: the columns of the counts.
  int64_t columns() const { return numThresholds > 0 ? numThresholds : 1; }
};

Status readConfusionCountsConfig(const char *kernel, const KernelConfig &config,
                                 ConfusionCountsConfig &out);

/// What confusionCounts works in, sized for a configuration and a row
/// width, so that a kernel that keeps one allocates nothing per batch.
struct ConfusionScratch {
  ConfusionScratch(const ConfusionCountsConfig &config, int64_t width)
      : tp(static_cast<size_t>(config.columns())),
        fp(static_cast<size_t>(config.columns())),
        row(static_cast<size_t>(width)), order(static_cast<size_t>(width)) {}
  std::vector<float> tp, fp, row;
  std::vector<int64_t> order;
};

/// Rows [tp, fp, tn, fn] by `config.columns()` columns, into `out`: the
/// weighted counts of `rows` rows of `width` (prediction, label) pairs each
/// (a label not 0 is positive). A row is the output's last axis, where
/// Keras takes top_k and class_id; weight i covers rows [i * rowsPerWeight,
/// (i + 1) * rowsPerWeight), an example's (`weights` null: every row weighs
/// 1).
void confusionCounts(const ConfusionCountsConfig &config, const float *p,
                     const float *labels, const float *weights, int64_t rows,
                     int64_t rowsPerWeight, int64_t width, float *out,
                     ConfusionScratch &scratch);
/// The same with a scratch of its own.
void confusionCounts(const ConfusionCountsConfig &config, const float *p,
                     const float *labels, const float *weights, int64_t rows,
                     int64_t rowsPerWeight, int64_t width, float *out);

/// What a confusion metric is made of (plan.fbs, MetricReduction).
enum class ConfusionMetric { precision, recall, auc };
enum class AucCurve { roc, pr };
enum class AucSummation { interpolation, minoring, majoring };

/// Keras' result() of counts [4, columns] (rows tp, fp, tn, fn): tp / (tp +
/// fp), tp / (tp + fn) (0 when there is nothing to divide, as
/// divide_no_nan), or the area under the ROC or PR curve.
double confusionMetric(ConfusionMetric metric, AucCurve curve,
                       AucSummation summation, const double *counts,
                       int64_t columns);

} // namespace graph::runtime

#endif // RUNTIME_CORE_CONFUSIONMETRICS_H
