//===- VectorMetricKernels.cpp - confusion counts, masked and grouped losses
//-===//
//
// The kernels around Keras' losses and metrics that look at a batch's rows
// as a whole rather than element by element:
//   confusion_counts   Precision's, Recall's and AUC's per-batch state
//                      (runtime/core/ConfusionMetrics.h, shared with the
//                      reference backend so both count as Keras does)
//   kept_rows,         SparseCategoricalCrossentropy's ignore_class: the
//   ignore_class       kept rows, and the labels and weights the loss sees
//   sample_overlap_loss(_grad)
//                      Dice and Tversky with an axis: a ratio per sample
//                      and position left (runtime/core/PointwiseLoss.h's
//                      groups), the sums in double
// Each is small next to the layers around it, so each is a plain loop on
// the replica's thread.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ConfusionMetrics.h"
#include "runtime/core/PointwiseLoss.h"

#include <array>
#include <memory>
#include <vector>

namespace graph::runtime::cpu {

namespace {

using Tensors = std::vector<TensorRef>;
using vec::checkRowWeights;
using vec::kernelError;

/// A class-index label of an i32, i64 or f32 tensor.
double labelAt(const TensorRef &t, int64_t i) {
  switch (t.dtype) {
  case plan::DType::i32:
    return t.i32()[i];
  case plan::DType::i64:
    return static_cast<double>(static_cast<const int64_t *>(t.data)[i]);
  default:
    return t.f32()[i];
  }
}

bool isLabelType(plan::DType dtype) {
  return dtype == plan::DType::i32 || dtype == plan::DType::i64 ||
         dtype == plan::DType::f32;
}

Status confusionCountsFactory(const KernelContext &, const KernelConfig &cfg,
                              const Tensors &ins, const Tensors &outs,
                              KernelFn &out) {
  static constexpr const char *kName = "confusion_counts";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  ConfusionCountsConfig config;
  if (Status s = readConfusionCountsConfig(kName, cfg, config); !s)
    return s;
  const TensorRef &p = ins[0], &t = ins[1];
  if (p.shape.empty() || p.shape[0] == 0)
    return kernelError(kName,
                       "needs predictions [B, ...], got " + shapeText(p.shape));
  if (t.shape != p.shape)
    return kernelError(kName, "labels " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  if (outs[0].elements() != 4 * config.columns())
    return kernelError(kName, "the counts must be [4, " +
                                  std::to_string(config.columns()) + "], got " +
                                  shapeText(outs[0].shape));
  // Rows along the last axis (Keras' top_k and class_id take it), each
  // example's weight over its rows; predictions [B] are B rows of one.
  const int64_t examples = p.shape[0],
                width = p.shape.size() > 1 ? p.shape.back() : 1;
  const int64_t rows = p.elements() / width, rowsPerWeight = rows / examples;
  if (config.classId >= width)
    return kernelError(kName, "class_id " + std::to_string(config.classId) +
                                  " is past the " + std::to_string(width) +
                                  " columns");
  if (Status s = checkRowWeights(kName, ins, 2, examples, "sample_weight"); !s)
    return s;
  // The counting's scratch, sized here: a step allocates nothing.
  auto scratch = std::make_shared<ConfusionScratch>(config, width);
  out = [config, rows, rowsPerWeight, width,
         scratch](const KernelContext &, const KernelConfig &,
                  const Tensors &ins, const Tensors &outs) {
    confusionCounts(config, ins[0].f32(), ins[1].f32(),
                    ins.size() > 2 ? ins[2].f32() : nullptr, rows,
                    rowsPerWeight, width, outs[0].f32(), *scratch);
    return Status::ok();
  };
  return Status::ok();
}

Status keptRowsFactory(const KernelContext &, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "kept_rows";
  if (Status s = checkOperands(
          kName, ins, outs, 2, 2, 1,
          OperandRule::f32WithLabels(0).because(" (labels: class indices)"));
      !s)
    return s;
  const int64_t rows = ins[0].elements();
  if (!isLabelType(ins[0].dtype))
    return kernelError(kName, "labels must be i32, i64 or f32");
  if (Status s = checkRowWeights(kName, ins, 1, rows, "metric_weight"); !s)
    return s;
  if (outs[0].elements() != 2)
    return kernelError(kName, "the counts must be [2], got " +
                                  shapeText(outs[0].shape));
  const double ignored = static_cast<double>(cfg.getInt("ignore_class"));
  out = [ignored, rows](const KernelContext &, const KernelConfig &,
                        const Tensors &ins, const Tensors &outs) {
    double kept = 0, real = 0;
    const float *w = ins[1].f32();
    for (int64_t r = 0; r < rows; ++r) {
      if (w[r] == 0.0f)
        continue;
      real += 1;
      kept += labelAt(ins[0], r) != ignored;
    }
    outs[0].f32()[0] = static_cast<float>(kept);
    outs[0].f32()[1] = static_cast<float>(real);
    return Status::ok();
  };
  return Status::ok();
}

Status ignoreClassFactory(const KernelContext &, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "ignore_class";
  if (ins.size() != 3 || outs.size() != 2)
    return kernelError(kName, "takes labels, sample_weight and kept_rows' "
                              "counts, and writes labels and weights");
  const int64_t rows = ins[0].elements();
  if (ins[0].dtype != plan::DType::i32 || outs[0].dtype != plan::DType::i32 ||
      outs[0].elements() != rows)
    return kernelError(kName, "labels in and out must be i32 [B]");
  if (Status s = checkRowWeights(kName, ins, 1, rows, "sample_weight"); !s)
    return s;
  if (outs[1].dtype != plan::DType::f32 || outs[1].elements() != rows)
    return kernelError(kName, "the weights out must be f32 [B]");
  if (ins[2].dtype != plan::DType::f32 || ins[2].elements() != 2)
    return kernelError(kName, "needs kept_rows' f32 [2]");
  const int32_t ignored = static_cast<int32_t>(cfg.getInt("ignore_class"));
  const bool sum = cfg.getInt("sum_reduction", 0) != 0;
  out = [ignored, sum, rows](const KernelContext &, const KernelConfig &,
                             const Tensors &ins, const Tensors &outs) {
    const float kept = ins[2].f32()[0], real = ins[2].f32()[1];
    // Keras' apply_mask: the kept rows weigh total / valid, the others 0.
    const float scale = sum ? 1.0f : kept == 0.0f ? 0.0f : real / kept;
    const int32_t *labels = ins[0].i32();
    const float *w = ins[1].f32();
    int32_t *labelsOut = outs[0].i32();
    float *wOut = outs[1].f32();
    for (int64_t r = 0; r < rows; ++r) {
      const bool drop = labels[r] == ignored;
      labelsOut[r] = drop ? 0 : labels[r];
      wOut[r] = drop ? 0.0f : w[r] * scale;
    }
    return Status::ok();
  };
  return Status::ok();
}

/// Each group's sums [I, T, P, 1, 1] (the weights enter per group).
void groupSums(const OverlapGroups &groups, const float *p, const float *t,
               int64_t n, std::vector<std::array<double, 5>> &sums) {
  sums.assign(static_cast<size_t>(groups.groups), {0, 0, 0, 1, 1});
  for (int64_t i = 0; i < n; ++i) {
    std::array<double, 5> &g = sums[static_cast<size_t>(groups.groupOf(i))];
    g[0] += static_cast<double>(t[i]) * p[i];
    g[1] += t[i];
    g[2] += p[i];
  }
}

Status sampleOverlapFactory(const char *kName, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs,
                            bool gradient, KernelFn &out) {
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  const TensorRef &p = ins[0], &t = ins[1];
  if (t.shape != p.shape)
    return kernelError(kName, "targets " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  auto groups = std::make_shared<OverlapGroups>();
  if (Status s =
          makeOverlapGroups(kName, p.shape, cfg.getInts("axis"), *groups);
      !s)
    return s;
  if (Status s = checkRowWeights(kName, ins, 2, p.shape[0], "sample_weight");
      !s)
    return s;
  if (gradient ? outs[0].shape != p.shape : outs[0].elements() != 1)
    return kernelError(kName, "the output " + shapeText(outs[0].shape) +
                                  (gradient ? " must match the predictions"
                                            : " must be a scalar"));
  const int64_t n = p.elements();
  // Per-group scratch, sized once: a step allocates nothing.
  auto sums = std::make_shared<std::vector<std::array<double, 5>>>(
      static_cast<size_t>(groups->groups));
  auto slopes = std::make_shared<std::vector<float>>(
      2 * static_cast<size_t>(groups->groups));
  out = [loss, groups, sums, slopes, n,
         gradient](const KernelContext &, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs) {
    const float *p = ins[0].f32(), *t = ins[1].f32();
    const float *w = ins.size() > 2 ? ins[2].f32() : nullptr;
    groupSums(*groups, p, t, n, *sums);
    const double count = static_cast<double>(groups->groups);
    auto weight = [&](int64_t g) {
      return w ? static_cast<double>(w[g / groups->perSample]) : 1.0;
    };
    if (!gradient) {
      double total = 0;
      for (int64_t g = 0; g < groups->groups; ++g)
        total += weight(g) * loss.value((*sums)[g].data());
      outs[0].f32()[0] = static_cast<float>(total / count);
      return Status::ok();
    }
    float *slope = slopes->data(), *offset = slope + groups->groups;
    for (int64_t g = 0; g < groups->groups; ++g) {
      double a, b;
      loss.gradient((*sums)[g].data(), a, b);
      const double scale = weight(g) / count;
      slope[g] = static_cast<float>(a * scale);
      offset[g] = static_cast<float>(b * scale);
    }
    float *dp = outs[0].f32();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t g = groups->groupOf(i);
      dp[i] = slope[g] * t[i] + offset[g];
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorMetricKernels(KernelRegistry &registry) {
  registry.addFactory("confusion_counts", Backend::cpu, confusionCountsFactory);
  registry.addFactory("kept_rows", Backend::cpu, keptRowsFactory);
  registry.addFactory("ignore_class", Backend::cpu, ignoreClassFactory);
  registry.addFactory("sample_overlap_loss", Backend::cpu,
                      [](const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
                        return sampleOverlapFactory("sample_overlap_loss", cfg,
                                                    ins, outs, false, out);
                      });
  registry.addFactory("sample_overlap_loss_grad", Backend::cpu,
                      [](const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
                        return sampleOverlapFactory("sample_overlap_loss_grad",
                                                    cfg, ins, outs, true, out);
                      });
}

} // namespace graph::runtime::cpu
