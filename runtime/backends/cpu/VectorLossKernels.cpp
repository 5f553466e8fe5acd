//===- VectorLossKernels.cpp - softmax, losses and accuracy ---------------===//
//
// Row-wise kernels over [B, C] (softmax: any axis). Per-element math is
// float and vectorised along the row; the sums that decide the result (the
// softmax denominator, dot products, the loss over the batch) accumulate in
// double. Rows are split across the replica's threads when the tensor is
// big enough, and per-row losses are summed in row order afterwards, so
// the loss does not depend on the thread count.
//
// Cross-entropy from probabilities (not logits) is computed in double, as
// the reference does: its clip at epsilon decides which terms have a
// gradient, and a float q could land on the other side of that boundary.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"

#include <cmath>
#include <limits>
#include <memory>
#include <span>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

constexpr double kEpsilon = 1e-7; // keras.config.epsilon(), as the reference

float rowMax(const float *x, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < n; ++j)
    m = std::max(m, x[j]);
  return m;
}

/// e[j] = exp(x[j] - m); returns the sum of e in double.
double expShifted(const float *x, float m, float *e, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    e[j] = simdExp(x[j] - m);
  double sum = 0.0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j)
    sum += e[j];
  return sum;
}

void scale(float *x, float factor, int64_t n) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j)
    x[j] *= factor;
}

//===----------------------------------------------------------------------===//
// softmax and softmax_grad
//===----------------------------------------------------------------------===//

/// outer x size x inner of a softmax launch, fixed at instantiation.
struct SoftmaxGeometry {
  int64_t outer = 1, size = 1, inner = 1;
};

Status softmaxGeometry(const char *kName, const KernelConfig &cfg,
                       const TensorRef &t, SoftmaxGeometry &g) {
  int64_t axis;
  if (!splitAxis(t.shape, cfg.getInt("axis", -1), g.outer, g.size, g.inner,
                 axis))
    return kernelError(kName, "axis " + std::to_string(cfg.getInt("axis", -1)) +
                                  " is out of range for " + shapeText(t.shape));
  return Status::ok();
}

/// y = softmax(x) along the middle axis of [outer, size, inner].
void softmaxForward(const SoftmaxGeometry &g, const float *x, float *y) {
  int64_t n = g.outer * g.size * g.inner;
  if (g.inner == 1) {
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t r = 0; r < g.outer; ++r) {
      const float *xr = x + r * g.size;
      float *yr = y + r * g.size;
      double sum = expShifted(xr, rowMax(xr, g.size), yr, g.size);
      scale(yr, static_cast<float>(1.0 / sum), g.size);
    }
    return;
  }
  // A middle axis: each step along it is a contiguous run of `inner`
  // independent softmaxes, vectorised across them.
#pragma omp parallel if (n >= kParallelElements)
  {
    std::span<float> m(threadScratch<float>(g.inner), g.inner);
    std::span<double> sum(threadScratch<double>(g.inner), g.inner);
#pragma omp for schedule(static)
    for (int64_t o = 0; o < g.outer; ++o) {
      const float *xo = x + o * g.size * g.inner;
      float *yo = y + o * g.size * g.inner;
      std::fill(m.begin(), m.end(), -std::numeric_limits<float>::infinity());
      std::fill(sum.begin(), sum.end(), 0.0);
      float *mp = m.data();
      double *sp = sum.data();
      for (int64_t a = 0; a < g.size; ++a) {
        const float *xa = xo + a * g.inner;
#pragma omp simd
        for (int64_t i = 0; i < g.inner; ++i)
          mp[i] = std::max(mp[i], xa[i]);
      }
      for (int64_t a = 0; a < g.size; ++a) {
        const float *xa = xo + a * g.inner;
        float *ya = yo + a * g.inner;
#pragma omp simd
        for (int64_t i = 0; i < g.inner; ++i) {
          ya[i] = simdExp(xa[i] - mp[i]);
          sp[i] += ya[i];
        }
      }
      for (int64_t a = 0; a < g.size; ++a) {
        float *ya = yo + a * g.inner;
#pragma omp simd
        for (int64_t i = 0; i < g.inner; ++i)
          ya[i] = static_cast<float>(ya[i] / sp[i]);
      }
    }
  }
}

/// dx = y * (dy - sum(dy * y)) along the middle axis.
void softmaxBackward(const SoftmaxGeometry &g, const float *dy, const float *y,
                     float *dx) {
  int64_t n = g.outer * g.size * g.inner;
  if (g.inner == 1) {
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t r = 0; r < g.outer; ++r) {
      const float *dyr = dy + r * g.size, *yr = y + r * g.size;
      float *dxr = dx + r * g.size;
      double dot = 0.0;
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < g.size; ++j)
        dot += static_cast<double>(dyr[j]) * yr[j];
      float d = static_cast<float>(dot);
#pragma omp simd
      for (int64_t j = 0; j < g.size; ++j)
        dxr[j] = yr[j] * (dyr[j] - d);
    }
    return;
  }
#pragma omp parallel if (n >= kParallelElements)
  {
    std::span<double> dot(threadScratch<double>(g.inner), g.inner);
#pragma omp for schedule(static)
    for (int64_t o = 0; o < g.outer; ++o) {
      int64_t base = o * g.size * g.inner;
      std::fill(dot.begin(), dot.end(), 0.0);
      double *dp = dot.data();
      for (int64_t a = 0; a < g.size; ++a) {
        const float *dya = dy + base + a * g.inner,
                    *ya = y + base + a * g.inner;
#pragma omp simd
        for (int64_t i = 0; i < g.inner; ++i)
          dp[i] += static_cast<double>(dya[i]) * ya[i];
      }
      for (int64_t a = 0; a < g.size; ++a) {
        int64_t at = base + a * g.inner;
#pragma omp simd
        for (int64_t i = 0; i < g.inner; ++i)
          dx[at + i] = y[at + i] * (dy[at + i] - static_cast<float>(dp[i]));
      }
    }
  }
}

Status softmaxFactory(const KernelContext &, const KernelConfig &cfg,
                      const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "softmax";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  SoftmaxGeometry g;
  if (Status s = softmaxGeometry(kName, cfg, ins[0], g); !s)
    return s;
  if (outs[0].elements() != ins[0].elements())
    return kernelError(kName, "output " + shapeText(outs[0].shape) +
                                  " differs in size from the input " +
                                  shapeText(ins[0].shape));
  out = [g](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    softmaxForward(g, ins[0].f32(), outs[0].f32());
    return Status::ok();
  };
  return Status::ok();
}

Status softmaxGradFactory(const KernelContext &, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "softmax_grad";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kCpuOperands); !s)
    return s;
  SoftmaxGeometry g;
  if (Status s = softmaxGeometry(kName, cfg, ins[1], g); !s)
    return s;
  if (ins[0].elements() != ins[1].elements() ||
      outs[0].elements() != ins[1].elements())
    return kernelError(kName, "output_grad " + shapeText(ins[0].shape) +
                                  ", output " + shapeText(ins[1].shape) +
                                  " and input_grad " +
                                  shapeText(outs[0].shape) + " differ in size");
  out = [g](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    softmaxBackward(g, ins[0].f32(), ins[1].f32(), outs[0].f32());
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Labels
//===----------------------------------------------------------------------===//

/// A launch's labels: one-hot rows ([B, C] f32) or class indices (B
/// elements of f32, i32 or i64), decided at instantiation as the reference
/// decides it.
struct Labels {
  bool oneHot = false;
  int64_t rows = 0, classes = 0;

  /// The class index of row r (one-hot labels have none).
  static int64_t indexAt(const TensorRef &t, int64_t r) {
    switch (t.dtype) {
    case plan::DType::i32:
      return static_cast<const int32_t *>(t.data)[r];
    case plan::DType::i64:
      return static_cast<const int64_t *>(t.data)[r];
    default:
      return static_cast<int64_t>(std::llround(t.f32()[r]));
    }
  }

  /// Every class index is in [0, classes): labels change every step, so
  /// this runs every step (B reads, before any output is written).
  Status checkIndices(const char *kName, const TensorRef &t) const {
    if (oneHot)
      return Status::ok();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t k = indexAt(t, r);
      if (k < 0 || k >= classes)
        return kernelError(kName, "label " + std::to_string(k) + " of row " +
                                      std::to_string(r) +
                                      " is out of range [0, " +
                                      std::to_string(classes) + ")");
    }
    return Status::ok();
  }
};

/// Resolves predictions [..., C] and their labels; `sparse` forbids one-hot
/// labels, as sparse_categorical_crossentropy's do.
Status resolveLabels(const char *kName, const TensorRef &predictions,
                     const TensorRef &labels, bool sparse, Labels &out) {
  if (predictions.shape.empty())
    return kernelError(kName, "needs [B, C] predictions, got a scalar");
  out.classes = predictions.shape.back();
  out.rows = out.classes ? predictions.elements() / out.classes : 0;
  if (out.rows == 0)
    return kernelError(kName, "empty batch " + shapeText(predictions.shape));
  if (!labels.data)
    return kernelError(kName, "labels have no buffer");
  out.oneHot = !sparse && labels.elements() == predictions.elements();
  if (out.oneHot) {
    if (labels.dtype != plan::DType::f32)
      return kernelError(kName, "one-hot labels must be f32");
    return Status::ok();
  }
  if (labels.elements() != out.rows)
    return kernelError(kName, "labels " + shapeText(labels.shape) +
                                  " match neither [B, C] nor [B] for "
                                  "predictions " +
                                  shapeText(predictions.shape));
  if (labels.dtype != plan::DType::f32 && labels.dtype != plan::DType::i32 &&
      labels.dtype != plan::DType::i64)
    return kernelError(kName, "class-index labels must be f32, i32 or i64");
  return Status::ok();
}

/// A loss's or metric's optional sample_weight (input `index`): f32 [B].
Status checkSampleWeight(const char *kName, const Tensors &ins, size_t index,
                         int64_t rows) {
  if (ins.size() <= index)
    return Status::ok();
  if (ins[index].dtype != plan::DType::f32 || ins[index].elements() != rows)
    return kernelError(kName, "sample_weight " + shapeText(ins[index].shape) +
                                  " must be f32 [" + std::to_string(rows) +
                                  "]");
  return Status::ok();
}

/// Row r's weight: 1 without a sample_weight input.
inline double weightAt(const Tensors &ins, size_t index, int64_t r) {
  return ins.size() > index ? ins[index].f32()[r] : 1.0;
}

//===----------------------------------------------------------------------===//
// Cross-entropy losses and their gradients
//===----------------------------------------------------------------------===//

/// One row from logits: returns -sum y log_softmax(z); writes, when `grad`
/// is set, (softmax(z) * sum(y) - y) * gradScale.
double logitsRow(const float *z, const float *y, int64_t k, int64_t c,
                 float *grad, float gradScale, float *scratch) {
  float m = rowMax(z, c);
  float *e = grad ? grad : scratch;
  double sum = expShifted(z, m, e, c);
  double lse = m + std::log(sum);
  double loss, ysum;
  if (y) {
    double yz = 0.0, ys = 0.0;
#pragma omp simd reduction(+ : yz, ys)
    for (int64_t j = 0; j < c; ++j) {
      yz += static_cast<double>(y[j]) * z[j];
      ys += y[j];
    }
    loss = ys * lse - yz;
    ysum = ys;
  } else {
    loss = lse - z[k];
    ysum = 1.0;
  }
  if (grad) {
    float p = static_cast<float>(ysum / sum) * gradScale;
    if (y) {
#pragma omp simd
      for (int64_t j = 0; j < c; ++j)
        grad[j] = e[j] * p - y[j] * gradScale;
    } else {
      scale(grad, p, c);
      grad[k] -= gradScale;
    }
  }
  return loss;
}

double clip(double p) {
  return std::min(std::max(p, kEpsilon), 1.0 - kEpsilon);
}
bool unclipped(double p) { return p > kEpsilon && p < 1.0 - kEpsilon; }

/// One row from probabilities, in double (see the file comment): the
/// reference's formulas, keras/src/backend/tensorflow/nn.py.
double probabilitiesRow(const float *p, const float *y, int64_t k, int64_t c,
                        bool sparse, float *grad, double gradScale) {
  auto label = [&](int64_t j) { return y ? y[j] : (j == k ? 1.0 : 0.0); };
  double loss = 0.0;
  if (sparse) {
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j)
      s += clip(p[j]);
    for (int64_t j = 0; j < c; ++j) {
      loss -= label(j) * std::log(clip(p[j]));
      if (grad)
        grad[j] = static_cast<float>(
            (unclipped(p[j]) ? 1.0 / s - label(j) / clip(p[j]) : 0.0) *
            gradScale);
    }
    return loss + std::log(s);
  }
  double s = 0.0;
  for (int64_t j = 0; j < c; ++j)
    s += p[j];
  double common = 0.0;
  for (int64_t j = 0; j < c; ++j) {
    double q = p[j] / s;
    loss -= label(j) * std::log(clip(q));
    if (unclipped(q))
      common += label(j) * q / clip(q);
  }
  if (grad)
    for (int64_t j = 0; j < c; ++j) {
      double q = p[j] / s;
      grad[j] = static_cast<float>(
          ((unclipped(q) ? -label(j) / clip(q) : 0.0) + common) / s *
          gradScale);
    }
  return loss;
}

/// categorical_crossentropy, sparse_categorical_crossentropy and their
/// _grad kernels: ins predictions, labels (and, for a loss, an optional
/// sample_weight); out the mean loss sum_i w_i l_i / B (a scalar) or
/// d(mean loss)/d(predictions).
class CrossEntropy {
public:
  CrossEntropy(const char *name, Labels labels, bool sparse, bool fromLogits,
               bool gradient)
      : name(name), labels(labels), sparse(sparse), fromLogits(fromLogits),
        gradient(gradient), rowLoss(labels.rows) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    if (Status s = labels.checkIndices(name, ins[1]); !s)
      return s;
    const float *p = ins[0].f32();
    const float *y = labels.oneHot ? ins[1].f32() : nullptr;
    float *grad = gradient ? outs[0].f32() : nullptr;
    int64_t rows = labels.rows, c = labels.classes;
    double gradScale = 1.0 / static_cast<double>(rows);
#pragma omp parallel if (rows * c >= kParallelElements)
    {
      // Without a gradient output, the exponentials need a row of their own.
      float *exps = gradient ? nullptr : threadScratch<float>(c);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        int64_t k = y ? -1 : Labels::indexAt(ins[1], r);
        const float *yr = y ? y + r * c : nullptr;
        float *gr = grad ? grad + r * c : nullptr;
        rowLoss[r] = fromLogits ? logitsRow(p + r * c, yr, k, c, gr,
                                            static_cast<float>(gradScale), exps)
                                : probabilitiesRow(p + r * c, yr, k, c, sparse,
                                                   gr, gradScale);
      }
    }
    if (!gradient) {
      double total = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        total += weightAt(ins, 2, r) * rowLoss[r];
      outs[0].f32()[0] = static_cast<float>(total / rows);
    }
    return Status::ok();
  }

private:
  const char *name;
  Labels labels;
  bool sparse, fromLogits, gradient;
  std::vector<double> rowLoss; // reused every step
};

KernelFactory crossEntropyFactory(const char *kName, bool sparse,
                                  bool gradient) {
  return [=](const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
             const Tensors &outs, KernelFn &out) -> Status {
    if (ins.size() != 2 + (gradient ? 0 : ins.size() == 3) || outs.size() != 1)
      return kernelError(kName, gradient
                                    ? "takes predictions and labels and "
                                      "writes one output"
                                    : "takes predictions, labels and an "
                                      "optional sample_weight and writes one "
                                      "output");
    if (Status s = checkOperands(kName, {ins[0]}, outs, 1, 1, 1, kCpuOperands);
        !s)
      return s;
    Labels labels;
    if (Status s = resolveLabels(kName, ins[0], ins[1], sparse, labels); !s)
      return s;
    if (Status s = checkSampleWeight(kName, ins, 2, labels.rows); !s)
      return s;
    if (gradient && outs[0].elements() != ins[0].elements())
      return kernelError(kName, "predictions_grad " + shapeText(outs[0].shape) +
                                    " differs in size from the predictions " +
                                    shapeText(ins[0].shape));
    if (!gradient && outs[0].elements() != 1)
      return kernelError(kName, "the loss must be a scalar, got " +
                                    shapeText(outs[0].shape));
    bool fromLogits = cfg.getInt("from_logits", 0) != 0;
    auto kernel = std::make_shared<CrossEntropy>(kName, labels, sparse,
                                                 fromLogits, gradient);
    out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
      return (*kernel)(ctx, cfg, ins, outs);
    };
    return Status::ok();
  };
}

//===----------------------------------------------------------------------===//
// softmax_cross_entropy: probabilities, mean loss and (p - y) / B in one pass
//===----------------------------------------------------------------------===//

class SoftmaxCrossEntropy {
public:
  explicit SoftmaxCrossEntropy(Labels labels)
      : labels(labels), rowLoss(labels.rows) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    static constexpr const char *kName = "softmax_cross_entropy";
    useReplicaThreads(ctx);
    if (Status s = labels.checkIndices(kName, ins[1]); !s)
      return s;
    const float *z = ins[0].f32();
    const float *y = labels.oneHot ? ins[1].f32() : nullptr;
    float *prob = outs[0].f32(), *grad = outs[2].f32();
    int64_t rows = labels.rows, c = labels.classes;
#pragma omp parallel for schedule(static) if (rows * c >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      double weight = weightAt(ins, 2, r);
      float invRows = static_cast<float>(weight / static_cast<double>(rows));
      const float *zr = z + r * c;
      float *pr = prob + r * c, *gr = grad + r * c;
      float m = rowMax(zr, c);
      double sum = expShifted(zr, m, pr, c);
      double lse = m + std::log(sum);
      scale(pr, static_cast<float>(1.0 / sum), c);
      if (y) {
        const float *yr = y + r * c;
        double loss = 0.0;
#pragma omp simd reduction(+ : loss)
        for (int64_t j = 0; j < c; ++j) {
          loss -= static_cast<double>(yr[j]) * (zr[j] - lse);
          gr[j] = (pr[j] - yr[j]) * invRows;
        }
        rowLoss[r] = weight * loss;
      } else {
        int64_t k = Labels::indexAt(ins[1], r);
        rowLoss[r] = weight * (lse - zr[k]);
#pragma omp simd
        for (int64_t j = 0; j < c; ++j)
          gr[j] = pr[j] * invRows;
        gr[k] = (pr[k] - 1.0f) * invRows;
      }
    }
    double total = 0.0;
    for (double l : rowLoss)
      total += l;
    outs[1].f32()[0] = static_cast<float>(total / rows);
    return Status::ok();
  }

private:
  Labels labels;
  std::vector<double> rowLoss; // reused every step
};

Status softmaxCrossEntropyFactory(const KernelContext &, const KernelConfig &,
                                  const Tensors &ins, const Tensors &outs,
                                  KernelFn &out) {
  static constexpr const char *kName = "softmax_cross_entropy";
  if ((ins.size() != 2 && ins.size() != 3) || outs.size() != 3)
    return kernelError(kName, "takes logits, labels and an optional "
                              "sample_weight and writes probabilities, loss "
                              "and logits_grad");
  if (Status s = checkOperands(kName, {ins[0]}, outs, 1, 1, 3, kCpuOperands);
      !s)
    return s;
  Labels labels;
  if (Status s = resolveLabels(kName, ins[0], ins[1], false, labels); !s)
    return s;
  if (Status s = checkSampleWeight(kName, ins, 2, labels.rows); !s)
    return s;
  if (outs[0].elements() != ins[0].elements() ||
      outs[2].elements() != ins[0].elements() || outs[1].elements() != 1)
    return kernelError(
        kName, "outputs " + shapeText(outs[0].shape) + ", " +
                   shapeText(outs[1].shape) + ", " + shapeText(outs[2].shape) +
                   " do not match logits " + shapeText(ins[0].shape) +
                   " (expected logits' shape, a scalar, "
                   "logits' shape)");
  auto kernel = std::make_shared<SoftmaxCrossEntropy>(labels);
  out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
    return (*kernel)(ctx, cfg, ins, outs);
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// accuracy
//===----------------------------------------------------------------------===//

/// The first index of the row's maximum, as the reference breaks ties.
int64_t argmax(const float *v, int64_t c) {
  int64_t best = 0;
  for (int64_t j = 1; j < c; ++j)
    if (v[j] > v[best])
      best = j;
  return best;
}

Status accuracyFactory(const KernelContext &, const KernelConfig &,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "accuracy";
  if ((ins.size() != 2 && ins.size() != 3) || outs.size() != 1)
    return kernelError(kName, "takes predictions, labels and an optional "
                              "sample_weight and writes one output");
  if (Status s = checkOperands(kName, {ins[0]}, outs, 1, 1, 1, kCpuOperands);
      !s)
    return s;
  if (outs[0].elements() != 1)
    return kernelError(kName, "accuracy must be a scalar, got " +
                                  shapeText(outs[0].shape));
  // With one class, one-hot labels and indices look alike; the reference
  // reads them as indices.
  bool indices = ins[0].shape.empty() || ins[0].shape.back() <= 1;
  Labels labels;
  if (Status s = resolveLabels(kName, ins[0], ins[1], indices, labels); !s)
    return s;
  if (Status s = checkSampleWeight(kName, ins, 2, labels.rows); !s)
    return s;
  out = [labels](const KernelContext &ctx, const KernelConfig &,
                 const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *p = ins[0].f32();
    int64_t rows = labels.rows, c = labels.classes;
    double hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits) if (rows * c >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = labels.oneHot ? argmax(ins[1].f32() + r * c, c)
                                    : Labels::indexAt(ins[1], r);
      if (argmax(p + r * c, c) == label)
        hits += weightAt(ins, 2, r);
    }
    outs[0].f32()[0] = static_cast<float>(hits / static_cast<double>(rows));
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorLossKernels(KernelRegistry &registry) {
  registry.addFactory("softmax", Backend::cpu, softmaxFactory);
  registry.addFactory("softmax_grad", Backend::cpu, softmaxGradFactory);
  registry.addFactory(
      "categorical_crossentropy", Backend::cpu,
      crossEntropyFactory("categorical_crossentropy", false, false));
  registry.addFactory(
      "categorical_crossentropy_grad", Backend::cpu,
      crossEntropyFactory("categorical_crossentropy_grad", false, true));
  registry.addFactory(
      "sparse_categorical_crossentropy", Backend::cpu,
      crossEntropyFactory("sparse_categorical_crossentropy", true, false));
  registry.addFactory(
      "sparse_categorical_crossentropy_grad", Backend::cpu,
      crossEntropyFactory("sparse_categorical_crossentropy_grad", true, true));
  registry.addFactory("softmax_cross_entropy", Backend::cpu,
                      softmaxCrossEntropyFactory);
  registry.addFactory("accuracy", Backend::cpu, accuracyFactory);
}

} // namespace graph::runtime::cpu
