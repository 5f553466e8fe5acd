//===- ConfusionMetrics.cpp - Keras' Precision, Recall and AUC ------------===//

#include "runtime/core/ConfusionMetrics.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace graph::runtime {

namespace {

/// Keras' divide_no_nan.
double divideNoNan(double a, double b) { return b == 0.0 ? 0.0 : a / b; }

/// metrics_utils._filter_top_k's value of one prediction: itself when among
/// its row's k largest (ties go to the lower index, as top_k's), else
/// NEG_INF.
constexpr float kNegInf = -1e10f;

} // namespace

Status readConfusionCountsConfig(const char *kernel, const KernelConfig &config,
                                 ConfusionCountsConfig &out) {
  out = ConfusionCountsConfig();
  out.numThresholds = config.getInt("num_thresholds", 0);
  out.threshold = config.getFloat("threshold", 0.5);
  out.k = config.getInt("k", 0);
  out.classId = config.getInt("class_id", -1);
  out.fromLogits = config.getInt("from_logits", 0) != 0;
  const std::string at = std::string(kernel) + ": ";
  if (out.numThresholds == 1 || out.numThresholds < 0)
    return Status::invalidInput(at + "needs num_thresholds >= 2, got " +
                                std::to_string(out.numThresholds));
  if (out.k < 0)
    return Status::invalidInput(at + "needs k >= 0, got " +
                                std::to_string(out.k));
  if (out.classId < -1)
    return Status::invalidInput(at + "needs class_id >= 0, got " +
                                std::to_string(out.classId));
  if (!std::isfinite(out.threshold))
    return Status::invalidInput(at + "needs a finite threshold");
  return Status::ok();
}

void confusionCounts(const ConfusionCountsConfig &config, const float *p,
                     const float *labels, const float *weights, int64_t rows,
                     int64_t rowsPerWeight, int64_t width, float *out) {
  ConfusionScratch scratch(config, width);
  confusionCounts(config, p, labels, weights, rows, rowsPerWeight, width, out,
                  scratch);
}

void confusionCounts(const ConfusionCountsConfig &config, const float *p,
                     const float *labels, const float *weights, int64_t rows,
                     int64_t rowsPerWeight, int64_t width, float *out,
                     ConfusionScratch &scratch) {
  const int64_t columns = config.columns();
  std::vector<float> &tp = scratch.tp, &fp = scratch.fp, &row = scratch.row;
  std::vector<int64_t> &order = scratch.order;
  std::fill(tp.begin(), tp.end(), 0.0f);
  std::fill(fp.begin(), fp.end(), 0.0f);
  float positives = 0.0f, negatives = 0.0f;
  const float threshold = static_cast<float>(config.threshold);
  for (int64_t r = 0; r < rows; ++r) {
    const float w = weights ? weights[r / rowsPerWeight] : 1.0f;
    const float *pr = p + r * width, *tr = labels + r * width;
    std::copy(pr, pr + width, row.begin());
    if (config.fromLogits)
      for (float &v : row)
        v = 1.0f / (1.0f + std::exp(-v));
    if (config.k > 0 && config.k < width) {
      // The k largest keep their value, the lower index first among
      // equals, as top_k does (a total order: nth_element needs no
      // stability, and unlike stable_sort allocates nothing).
      for (int64_t j = 0; j < width; ++j)
        order[static_cast<size_t>(j)] = j;
      std::nth_element(order.begin(), order.begin() + config.k, order.end(),
                       [&](int64_t a, int64_t b) {
                         const float va = row[static_cast<size_t>(a)],
                                     vb = row[static_cast<size_t>(b)];
                         return va > vb || (va == vb && a < b);
                       });
      for (int64_t j = config.k; j < width; ++j)
        row[static_cast<size_t>(order[static_cast<size_t>(j)])] = kNegInf;
    }
    const int64_t first = config.classId >= 0 ? config.classId : 0;
    const int64_t last = config.classId >= 0 ? config.classId + 1 : width;
    for (int64_t j = first; j < last; ++j) {
      const bool positive = tr[j] != 0.0f;
      const float value = row[static_cast<size_t>(j)];
      (positive ? positives : negatives) += w;
      if (config.numThresholds == 0) {
        // One threshold: Keras' slow path, pred > threshold unclipped.
        if (value > threshold)
          (positive ? tp : fp)[0] += w;
        continue;
      }
      // AUC's evenly spaced thresholds: Keras' bucket of the clipped
      // prediction, ceil(p (T - 1)) - 1 and at least 0, counts for every
      // threshold up to it (p > threshold_i exactly when i <= bucket).
      const float clipped = std::clamp(value, 0.0f, 1.0f);
      const float scaled =
          clipped * static_cast<float>(config.numThresholds - 1);
      const int64_t bucket =
          std::max<int64_t>(static_cast<int64_t>(std::ceil(scaled)) - 1, 0);
      (positive ? tp : fp)[static_cast<size_t>(bucket)] += w;
    }
  }
  if (config.numThresholds > 0)
    // Keras' reverse cumulative sum over the buckets.
    for (int64_t i = columns - 2; i >= 0; --i) {
      tp[static_cast<size_t>(i)] += tp[static_cast<size_t>(i + 1)];
      fp[static_cast<size_t>(i)] += fp[static_cast<size_t>(i + 1)];
    }
  for (int64_t i = 0; i < columns; ++i) {
    const float t = tp[static_cast<size_t>(i)], f = fp[static_cast<size_t>(i)];
    out[i] = t;
    out[columns + i] = f;
    out[2 * columns + i] = negatives - f;
    out[3 * columns + i] = positives - t;
  }
}

double confusionMetric(ConfusionMetric metric, AucCurve curve,
                       AucSummation summation, const double *counts,
                       int64_t columns) {
  const double *tp = counts, *fp = counts + columns, *tn = counts + 2 * columns,
               *fn = counts + 3 * columns;
  if (metric == ConfusionMetric::precision)
    return divideNoNan(tp[0], tp[0] + fp[0]);
  if (metric == ConfusionMetric::recall)
    return divideNoNan(tp[0], tp[0] + fn[0]);
  // AUC (confusion_metrics.py, AUC.result and interpolate_pr_auc).
  if (curve == AucCurve::pr && summation == AucSummation::interpolation) {
    // Davis & Goadrich's interpolation of precision between thresholds.
    double area = 0.0;
    for (int64_t i = 0; i + 1 < columns; ++i) {
      double p0 = tp[i] + fp[i], p1 = tp[i + 1] + fp[i + 1];
      double dtp = tp[i] - tp[i + 1], dp = p0 - p1;
      double slope = divideNoNan(dtp, std::max(dp, 0.0));
      double intercept = tp[i + 1] - slope * p1;
      double ratio =
          p0 > 0 && p1 > 0 ? divideNoNan(p0, std::max(p1, 0.0)) : 1.0;
      area += divideNoNan(slope * (dtp + intercept * std::log(ratio)),
                          std::max(tp[i + 1] + fn[i + 1], 0.0));
    }
    return area;
  }
  std::vector<double> x(static_cast<size_t>(columns)),
      y(static_cast<size_t>(columns));
  for (int64_t i = 0; i < columns; ++i) {
    double recall = divideNoNan(tp[i], tp[i] + fn[i]);
    if (curve == AucCurve::roc) {
      x[static_cast<size_t>(i)] = divideNoNan(fp[i], fp[i] + tn[i]);
      y[static_cast<size_t>(i)] = recall;
    } else {
      x[static_cast<size_t>(i)] = recall;
      y[static_cast<size_t>(i)] = divideNoNan(tp[i], tp[i] + fp[i]);
    }
  }
  double area = 0.0;
  for (size_t i = 0; i + 1 < static_cast<size_t>(columns); ++i) {
    double height =
        summation == AucSummation::interpolation ? (y[i] + y[i + 1]) / 2.0
        : summation == AucSummation::minoring    ? std::min(y[i], y[i + 1])
                                                 : std::max(y[i], y[i + 1]);
    area += (x[i] - x[i + 1]) * height;
  }
  return area;
}

} // namespace graph::runtime
