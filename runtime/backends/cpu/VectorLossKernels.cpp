//===- VectorLossKernels.cpp - softmax, losses and accuracy ---------------===//
//
// Row-wise kernels over [B, C] (softmax: any axis). Per-element math is
// float and vectorised along the row; the sums that decide the result (the
// softmax denominator, dot products, the loss over the batch) accumulate in
// double. Rows are split across the replica's threads when the tensor is
// big enough, and per-row losses are summed in row order afterwards, so
// the loss does not depend on the thread count. The element-wise losses
// (pointwise_loss) split fixed chunks of elements instead of rows, and sum
// them in chunk order, for the same reason.
//
// Cross-entropy from probabilities (not logits) is computed in double, as
// the reference does: its clip at epsilon decides which terms have a
// gradient, and a float q could land on the other side of that boundary.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/PointwiseLoss.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <type_traits>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

constexpr double kEpsilon = 1e-7; // keras.config.epsilon(), as the reference
/// Keras' clip(p, epsilon, 1 - epsilon) bounds on a float32 tensor, as the
/// reference's (1 - 1e-7 rounds to 0.99999988).
constexpr double kClipLow = static_cast<float>(kEpsilon);
constexpr double kClipHigh = static_cast<float>(1.0 - kEpsilon);

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

double clip(double p) { return std::min(std::max(p, kClipLow), kClipHigh); }
bool unclipped(double p) { return p > kClipLow && p < kClipHigh; }

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
#pragma omp parallel if (rows * c >= kParallelElements)
    {
      // Without a gradient output, the exponentials need a row of their own.
      float *exps = gradient ? nullptr : threadScratch<float>(c);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        // The gradient of the weighted loss: the row's times its weight.
        double gradScale = weightAt(ins, 2, r) / static_cast<double>(rows);
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
    if ((ins.size() != 2 && ins.size() != 3) || outs.size() != 1)
      return kernelError(kName, "takes predictions, labels and an optional "
                                "sample_weight and writes one output");
    if (Status s = checkOperands(kName, {ins[0]}, outs, 1, 1, 1, kCpuOperands);
        !s)
      return s;
    Labels labels;
    if (Status s = resolveLabels(kName, ins[0], ins[1], sparse, labels); !s)
      return s;
    if (Status s = checkRowWeights(kName, ins, 2, labels.rows); !s)
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
  if (Status s = checkRowWeights(kName, ins, 2, labels.rows); !s)
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
// pointwise_loss and pointwise_loss_grad: Keras 3's element-wise losses
//
// The reference's formulas (keras/src/losses/losses.py and TensorFlow's
// gradients), per element in float; each launch is cut into fixed chunks
// of kPointwiseChunk elements, shared among the threads, and the chunks'
// double sums are added in chunk order, so the loss does not depend on the
// thread count.
//===----------------------------------------------------------------------===//

/// log(x) to about 1 ulp (Cephes' logf), for simd loops: log(0) = -inf,
/// log(+inf) = +inf, NaN for x < 0 and for NaN.
[[gnu::always_inline]] inline float simdLog(float x) {
  // Subnormals are scaled by 2^23 into the normal range first.
  bool tiny = x < 1.17549435e-38f;
  uint32_t bits = std::bit_cast<uint32_t>(simdSelect(tiny, x * 8388608.0f, x));
  // x = m 2^e with m in [0.5, 1), then m in [sqrt(1/2), sqrt(2)) - 1.
  int32_t e = static_cast<int32_t>((bits >> 23) & 0xFFu) - 126 -
              (23 & -static_cast<int32_t>(tiny));
  float m = std::bit_cast<float>((bits & 0x007FFFFFu) | 0x3F000000u);
  bool low = m < 0.707106781186547524f;
  e -= static_cast<int32_t>(low);
  float r = simdSelect(low, m + m, m) - 1.0f;
  float z = r * r;
  float y = 7.0376836292e-2f;
  y = y * r - 1.1514610310e-1f;
  y = y * r + 1.1676998740e-1f;
  y = y * r - 1.2420140846e-1f;
  y = y * r + 1.4249322787e-1f;
  y = y * r - 1.6668057665e-1f;
  y = y * r + 2.0000714765e-1f;
  y = y * r - 2.4999993993e-1f;
  y = y * r + 3.3333331174e-1f;
  float fe = static_cast<float>(e);
  y = y * r * z - 2.12194440e-4f * fe - 0.5f * z;
  float result = r + y + 0.693359375f * fe;
  constexpr float kInf = std::numeric_limits<float>::infinity();
  result = simdSelect(
      x > 0.0f, result,
      simdSelect(x == 0.0f, -kInf, std::numeric_limits<float>::quiet_NaN()));
  return simdSelect(x == kInf, kInf, result);
}

/// log(1 + y) for y > -1, accurate for small y too: log(u) y / (u - 1)
/// with u = 1 + y rounded cancels u's rounding (Goldberg).
[[gnu::always_inline]] inline float simdLog1p(float y) {
  float u = 1.0f + y;
  return simdSelect(u == 1.0f, y, simdLog(u) * (y / (u - 1.0f)));
}

/// std::max and std::min (NaN in `a` stays) as blends: GCC leaves a loop
/// scalar when a float operation uses the result of their ?: (see
/// simdSelect).
[[gnu::always_inline]] inline float simdMax(float a, float b) {
  return simdSelect(a < b, b, a);
}
[[gnu::always_inline]] inline float simdMin(float a, float b) {
  return simdSelect(b < a, b, a);
}

/// sign(x), 0 at 0 and NaN at NaN, as tf.sign.
[[gnu::always_inline]] inline float simdSign(float x) {
  return simdSelect(x > 0.0f, 1.0f, simdSelect(x < 0.0f, -1.0f, x));
}

/// log cosh(x) for |x| <= 0.5 by its Taylor series through x^14 (under
/// 2e-8 relative), where the closed form's log 2 would cancel.
[[gnu::always_inline]] inline float logCoshSeries(float x) {
  float z = x * x;
  float s = 10922.0f / 42567525.0f;
  s = s * z - 691.0f / 935550.0f;
  s = s * z + 31.0f / 14175.0f;
  s = s * z - 17.0f / 2520.0f;
  s = s * z + 1.0f / 45.0f;
  s = s * z - 1.0f / 12.0f;
  s = s * z + 0.5f;
  return s * z;
}

constexpr float kEps = static_cast<float>(kEpsilon);
constexpr float kEpsF = kEps;

/// u^g for u >= 0 and g >= 0, as tf.pow: 0^0 = 1, 0^g = 0.
[[gnu::always_inline]] inline float simdPow(float u, float g) {
  return simdSelect(u > 0.0f, simdExp(g * simdLog(u)),
                    simdSelect(g == 0.0f, 1.0f, 0.0f));
}

/// runtime/core/PointwiseLoss.h's element-wise kinds, in its order
/// (parsePointwiseLoss converts by value), then the cross-entropies' logits
/// forms, which the loops compile apart. Its row and whole-batch kinds are
/// RowLossKernel's.
enum class Pointwise {
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
  binaryAccuracy,
  binaryFocalCrossentropy,
  binaryCrossentropyLogits,
  binaryFocalCrossentropyLogits,
};
static_assert(static_cast<int>(Pointwise::binaryFocalCrossentropy) ==
                  static_cast<int>(PointwiseKind::binaryFocalCrossentropy),
              "Pointwise starts with PointwiseKind's element-wise kinds, in "
              "order");

/// What one element's loss needs besides p and t: the targets' map
/// t * targetScale + targetShift (label smoothing, hinge's -1/1 labels),
/// huber's delta, and binary focal's gamma and class weights (weightOne
/// for t = 1, weightZero for t = 0; both 1 without class balancing).
struct PointwiseParams {
  float targetScale = 1.0f, targetShift = 0.0f, delta = 1.0f;
  float gamma = 2.0f, weightOne = 1.0f, weightZero = 1.0f;
};

/// Binary focal cross-entropy's factors of one element: the bce (from
/// probabilities, clipped as binary_crossentropy's, or from logits), its
/// derivative, the probability and its derivative by the input.
struct FocalTerms {
  float bce, dbce, prob, dprob;
};
template <bool Logits>
[[gnu::always_inline]] inline FocalTerms focalTerms(float p, float t) {
  if constexpr (Logits) {
    float prob = simdSigmoid(p);
    return {simdMax(p, 0.0f) - p * t + simdLog1p(simdExp(-std::fabs(p))),
            prob - t, prob, prob * (1.0f - prob)};
  } else {
    float q = simdMin(simdMax(p, kEpsF), 1.0f - kEpsF);
    return {-(t * simdLog(q) + (1.0f - t) * simdLog(1.0f - q)),
            simdSelect((p >= kEpsF) & (p <= 1.0f - kEpsF),
                       -t / q + (1.0f - t) / (1.0f - q), 0.0f),
            p, 1.0f};
  }
}

constexpr float kLog2 = 0.693147180559945309f;

/// f(p, t) of kind K; `t` is already mapped.
template <Pointwise K>
[[gnu::always_inline]] inline float pointwiseValue(float p, float t,
                                                   const PointwiseParams &c) {
  const float e = p - t;
  if constexpr (K == Pointwise::meanSquaredError) {
    return e * e;
  } else if constexpr (K == Pointwise::meanAbsoluteError) {
    return std::fabs(e);
  } else if constexpr (K == Pointwise::meanAbsolutePercentageError) {
    return 100.0f * std::fabs(t - p) / simdMax(std::fabs(t), kEps);
  } else if constexpr (K == Pointwise::meanSquaredLogarithmicError) {
    float d =
        simdLog(simdMax(p, kEps) + 1.0f) - simdLog(simdMax(t, kEps) + 1.0f);
    return d * d;
  } else if constexpr (K == Pointwise::huber) {
    float a = std::fabs(e);
    return simdSelect(a <= c.delta, 0.5f * e * e,
                      c.delta * a - 0.5f * c.delta * c.delta);
  } else if constexpr (K == Pointwise::logCosh) {
    float a = std::fabs(e);
    return simdSelect(a <= 0.5f, logCoshSeries(a),
                      a + simdLog1p(simdExp(-2.0f * a)) - kLog2);
  } else if constexpr (K == Pointwise::binaryCrossentropy) {
    // Clipped to float32's bounds, as Keras clips a float32 tensor: 1 - q
    // at the top is 1 - 0.99999988 = 1.19e-7.
    float q = simdMin(simdMax(p, kEps), 1.0f - kEps);
    return -(t * simdLog(q) + (1.0f - t) * simdLog(1.0f - q));
  } else if constexpr (K == Pointwise::binaryCrossentropyLogits) {
    return simdMax(p, 0.0f) - p * t + simdLog1p(simdExp(-std::fabs(p)));
  } else if constexpr (K == Pointwise::poisson) {
    return p - t * simdLog(p + kEps);
  } else if constexpr (K == Pointwise::klDivergence) {
    float tc = simdMin(simdMax(t, kEps), 1.0f);
    float pc = simdMin(simdMax(p, kEps), 1.0f);
    return tc * simdLog(tc / pc);
  } else if constexpr (K == Pointwise::hinge) {
    return simdMax(1.0f - t * p, 0.0f);
  } else if constexpr (K == Pointwise::binaryAccuracy) {
    return simdSelect(simdSelect(p > 0.5f, 1.0f, 0.0f) == t, 1.0f, 0.0f);
  } else if constexpr (K == Pointwise::binaryFocalCrossentropy ||
                       K == Pointwise::binaryFocalCrossentropyLogits) {
    FocalTerms f =
        focalTerms<K == Pointwise::binaryFocalCrossentropyLogits>(p, t);
    float u = 1.0f - (t * f.prob + (1.0f - t) * (1.0f - f.prob));
    float w = t * c.weightOne + (1.0f - t) * c.weightZero;
    return w * simdPow(u, c.gamma) * f.bce;
  } else {
    float m = simdMax(1.0f - t * p, 0.0f);
    return m * m;
  }
}

/// df/dp of kind K, TensorFlow's at the kinks and clips (see the
/// reference).
template <Pointwise K>
[[gnu::always_inline]] inline float pointwiseGrad(float p, float t,
                                                  const PointwiseParams &c) {
  const float e = p - t;
  if constexpr (K == Pointwise::meanSquaredError) {
    return 2.0f * e;
  } else if constexpr (K == Pointwise::meanAbsoluteError) {
    return simdSign(e);
  } else if constexpr (K == Pointwise::meanAbsolutePercentageError) {
    return 100.0f * simdSign(e) / simdMax(std::fabs(t), kEps);
  } else if constexpr (K == Pointwise::meanSquaredLogarithmicError) {
    float pm = simdMax(p, kEps) + 1.0f;
    float d = simdLog(pm) - simdLog(simdMax(t, kEps) + 1.0f);
    return simdSelect(p >= kEps, 2.0f * d / pm, 0.0f);
  } else if constexpr (K == Pointwise::huber) {
    return simdSelect(std::fabs(e) <= c.delta, e, c.delta * simdSign(e));
  } else if constexpr (K == Pointwise::logCosh) {
    return simdTanh(e);
  } else if constexpr (K == Pointwise::binaryCrossentropy) {
    float q = simdMin(simdMax(p, kEps), 1.0f - kEps);
    return simdSelect((p >= kEps) & (p <= 1.0f - kEps),
                      -t / q + (1.0f - t) / (1.0f - q), 0.0f);
  } else if constexpr (K == Pointwise::binaryCrossentropyLogits) {
    return simdSigmoid(p) - t;
  } else if constexpr (K == Pointwise::poisson) {
    return 1.0f - t / (p + kEps);
  } else if constexpr (K == Pointwise::klDivergence) {
    float tc = simdMin(simdMax(t, kEps), 1.0f);
    float pc = simdMin(simdMax(p, kEps), 1.0f);
    return simdSelect((p >= kEps) & (p <= 1.0f), -tc / pc, 0.0f);
  } else if constexpr (K == Pointwise::hinge) {
    return simdSelect(1.0f - t * p >= 0.0f, -t, 0.0f);
  } else if constexpr (K == Pointwise::binaryAccuracy) {
    return 0.0f; // a metric: its factory refuses a gradient
  } else if constexpr (K == Pointwise::binaryFocalCrossentropy ||
                       K == Pointwise::binaryFocalCrossentropyLogits) {
    FocalTerms f =
        focalTerms<K == Pointwise::binaryFocalCrossentropyLogits>(p, t);
    float u = 1.0f - (t * f.prob + (1.0f - t) * (1.0f - f.prob));
    float w = t * c.weightOne + (1.0f - t) * c.weightZero;
    // tf.pow's gradient: gamma u^(gamma - 1), through p_t's 1 - 2t.
    float dfocal =
        c.gamma * simdPow(u, c.gamma - 1.0f) * (1.0f - 2.0f * t) * f.dprob;
    return w * (dfocal * f.bce + simdPow(u, c.gamma) * f.dbce);
  } else {
    return -2.0f * t * simdMax(1.0f - t * p, 0.0f);
  }
}

/// Calls `f` with kind `k` as a compile-time constant.
template <typename F> void withPointwiseKind(Pointwise k, F &&f) {
  using P = Pointwise;
  switch (k) {
  case P::meanSquaredError:
    return f(std::integral_constant<P, P::meanSquaredError>{});
  case P::meanAbsoluteError:
    return f(std::integral_constant<P, P::meanAbsoluteError>{});
  case P::meanAbsolutePercentageError:
    return f(std::integral_constant<P, P::meanAbsolutePercentageError>{});
  case P::meanSquaredLogarithmicError:
    return f(std::integral_constant<P, P::meanSquaredLogarithmicError>{});
  case P::huber:
    return f(std::integral_constant<P, P::huber>{});
  case P::logCosh:
    return f(std::integral_constant<P, P::logCosh>{});
  case P::binaryCrossentropy:
    return f(std::integral_constant<P, P::binaryCrossentropy>{});
  case P::binaryCrossentropyLogits:
    return f(std::integral_constant<P, P::binaryCrossentropyLogits>{});
  case P::poisson:
    return f(std::integral_constant<P, P::poisson>{});
  case P::klDivergence:
    return f(std::integral_constant<P, P::klDivergence>{});
  case P::hinge:
    return f(std::integral_constant<P, P::hinge>{});
  case P::squaredHinge:
    return f(std::integral_constant<P, P::squaredHinge>{});
  case P::binaryAccuracy:
    return f(std::integral_constant<P, P::binaryAccuracy>{});
  case P::binaryFocalCrossentropy:
    return f(std::integral_constant<P, P::binaryFocalCrossentropy>{});
  case P::binaryFocalCrossentropyLogits:
    return f(std::integral_constant<P, P::binaryFocalCrossentropyLogits>{});
  }
}

/// Elements per chunk: 16 KiB of values in a thread's scratch.
constexpr int64_t kPointwiseChunk = 4096;

/// One launch site of pointwise_loss or pointwise_loss_grad, its geometry
/// fixed at instantiation.
class PointwiseLossKernel {
public:
  PointwiseLossKernel(Pointwise kind, PointwiseParams params, bool hingeLabels,
                      bool gradient, int64_t n, int64_t perRow, double divisor)
      : kind(kind), params(params), hingeLabels(hingeLabels),
        gradient(gradient), n(n), perRow(perRow), divisor(divisor),
        chunkSums(gradient ? 0 : (n + kPointwiseChunk - 1) / kPointwiseChunk) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *p = ins[0].f32(), *t = ins[1].f32();
    PointwiseParams c = params;
    if (hingeLabels && binaryTargets(t)) {
      c.targetScale = 2.0f; // keras convert_binary_labels_to_hinge
      c.targetShift = -1.0f;
    }
    const float *w = ins.size() > 2 ? ins[2].f32() : nullptr;
    if (gradient) {
      withPointwiseKind(kind, [&](auto k) {
        backward<decltype(k)::value>(p, t, w, c, outs[0].f32());
      });
      return Status::ok();
    }
    withPointwiseKind(kind,
                      [&](auto k) { forward<decltype(k)::value>(p, t, w, c); });
    double total = 0.0;
    for (double s : chunkSums)
      total += s;
    outs[0].f32()[0] = static_cast<float>(total / divisor);
    return Status::ok();
  }

private:
  /// Whether every target is 0 or 1 (decided over the whole launch).
  bool binaryTargets(const float *t) const {
    int64_t others = 0;
#pragma omp parallel for simd schedule(static) reduction(+ : others) if (n >= kParallelElements)
    for (int64_t i = 0; i < n; ++i)
      others += (t[i] != 0.0f) & (t[i] != 1.0f);
    return others == 0;
  }

  /// chunkSums[k] = sum over chunk k of w_b(i) f(p_i, t_i), in double.
  template <Pointwise K>
  void forward(const float *p, const float *t, const float *w,
               const PointwiseParams &c) {
    const int64_t chunks = static_cast<int64_t>(chunkSums.size());
#pragma omp parallel if (n >= kParallelElements)
    {
      float *f = threadScratch<float>(kPointwiseChunk);
#pragma omp for schedule(static)
      for (int64_t k = 0; k < chunks; ++k) {
        const int64_t begin = k * kPointwiseChunk,
                      end = std::min(n, begin + kPointwiseChunk);
        const int64_t len = end - begin;
        const float *pk = p + begin, *tk = t + begin;
#pragma omp simd
        for (int64_t i = 0; i < len; ++i)
          f[i] = pointwiseValue<K>(pk[i], tk[i] * c.targetScale + c.targetShift,
                                   c);
        double sum = 0.0;
        if (!w) {
#pragma omp simd reduction(+ : sum)
          for (int64_t i = 0; i < len; ++i)
            sum += f[i];
        } else {
          // The chunk's rows, each its sum times its weight.
          for (int64_t at = begin; at < end;) {
            const int64_t row = at / perRow;
            const int64_t stop = std::min(end, (row + 1) * perRow);
            double rowSum = 0.0;
#pragma omp simd reduction(+ : rowSum)
            for (int64_t i = at - begin; i < stop - begin; ++i)
              rowSum += f[i];
            sum += static_cast<double>(w[row]) * rowSum;
            at = stop;
          }
        }
        chunkSums[k] = sum;
      }
    }
  }

  /// dp = w_b(i) f'(p, t) / divisor.
  template <Pointwise K>
  void backward(const float *p, const float *t, const float *w,
                const PointwiseParams &c, float *dp) const {
    const float scale = static_cast<float>(1.0 / divisor);
    const int64_t chunks = (n + kPointwiseChunk - 1) / kPointwiseChunk;
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t k = 0; k < chunks; ++k) {
      const int64_t begin = k * kPointwiseChunk,
                    len = std::min(n, begin + kPointwiseChunk) - begin;
      const float *pk = p + begin, *tk = t + begin;
      float *dk = dp + begin;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i)
        dk[i] =
            pointwiseGrad<K>(pk[i], tk[i] * c.targetScale + c.targetShift, c) *
            scale;
      if (w)
        for (int64_t i = 0; i < len; ++i)
          dk[i] *= w[(begin + i) / perRow];
    }
  }

  Pointwise kind;
  PointwiseParams params;
  bool hingeLabels, gradient;
  int64_t n, perRow;
  double divisor;
  std::vector<double> chunkSums; // reused every step
};

//===----------------------------------------------------------------------===//
// The row kinds: categorical focal cross-entropy, cosine similarity,
// categorical hinge, one loss a row of the last axis.
//
// A row is computed in double, as the reference does: the focal loss's
// clip at epsilon and the cosine's bound on the norm decide which terms
// have a gradient, and a float value could land on the other side. Rows
// are shared among the threads and their losses summed in row order, so
// the loss does not depend on the thread count.
//===----------------------------------------------------------------------===//

class RowLossKernel {
public:
  RowLossKernel(PointwiseLossConfig loss, bool gradient, int64_t n, int64_t k,
                int64_t perRow, int64_t batch)
      : loss(loss), gradient(gradient), n(n), k(k), perRow(perRow),
        batch(batch), rowLosses(gradient ? 0 : n / k) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *p = ins[0].f32(), *t = ins[1].f32();
    const float *w = ins.size() > 2 ? ins[2].f32() : nullptr;
    const int64_t rows = n / k;
    float *dp = gradient ? outs[0].f32() : nullptr;
    const double scale = 1.0 / static_cast<double>(rows);
#pragma omp parallel if (n >= kParallelElements)
    {
      double *scratch = threadScratch<double>(static_cast<size_t>(4 * k));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        double value = row(p + r * k, t + r * k, scratch);
        if (dp) {
          const double *g = scratch + 3 * k;
          const double weighted =
              (w ? static_cast<double>(w[r * k / perRow]) : 1.0) * scale;
          for (int64_t j = 0; j < k; ++j)
            dp[r * k + j] = static_cast<float>(g[j] * weighted);
        } else {
          rowLosses[r] = value;
        }
      }
    }
    if (dp)
      return Status::ok();
    double total = 0.0;
    for (int64_t r = 0; r < rows; ++r)
      total +=
          (w ? static_cast<double>(w[r * k / perRow]) : 1.0) * rowLosses[r];
    outs[0].f32()[0] = static_cast<float>(total * scale);
    return Status::ok();
  }

private:
  /// The loss of one row; its gradient in scratch[3k, 4k) (scratch holds
  /// 4k doubles).
  double row(const float *pf, const float *tf, double *scratch) const {
    double *p = scratch, *t = scratch + k, *aux = scratch + 2 * k,
           *grad = scratch + 3 * k;
    for (int64_t j = 0; j < k; ++j) {
      p[j] = pf[j];
      t[j] = tf[j];
    }
    switch (loss.kind) {
    case PointwiseKind::categoricalFocalCrossentropy:
      return focalRow(p, t, aux, grad);
    case PointwiseKind::cosineSimilarity:
      return cosineRow(p, t, grad);
    default:
      return hingeRow(p, t, grad);
    }
  }

  /// keras categorical_focal_crossentropy; `prob` is scratch.
  double focalRow(const double *p, const double *t, double *prob,
                  double *grad) const {
    const double ls = loss.labelSmoothing, a = loss.alpha, g = loss.gamma;
    const double uniform = ls / static_cast<double>(k);
    if (loss.fromLogits) {
      double m = -std::numeric_limits<double>::infinity(), sum = 0.0;
      for (int64_t j = 0; j < k; ++j)
        m = std::max(m, p[j]);
      for (int64_t j = 0; j < k; ++j)
        sum += prob[j] = std::exp(p[j] - m);
      for (int64_t j = 0; j < k; ++j)
        prob[j] /= sum;
    } else {
      for (int64_t j = 0; j < k; ++j)
        prob[j] = p[j];
    }
    double total = 0.0;
    for (int64_t j = 0; j < k; ++j)
      total += prob[j];
    double value = 0.0, dot = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      double y = t[j] * (1.0 - ls) + uniform;
      double q = prob[j] / total;
      double o = clip(q);
      double focal = std::pow(1.0 - o, g), logO = std::log(o);
      value -= a * focal * y * logO;
      // d/do of alpha (1 - o)^g (-y log o), where the clip passes.
      grad[j] =
          q >= kClipLow && q <= kClipHigh
              ? a * y * (g * std::pow(1.0 - o, g - 1.0) * logO - focal / o)
              : 0.0;
      dot += grad[j] * q;
    }
    // Back through q = prob / sum(prob), then through the softmax.
    double back = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      grad[j] = (grad[j] - dot) / total;
      back += grad[j] * prob[j];
    }
    if (loss.fromLogits)
      for (int64_t j = 0; j < k; ++j)
        grad[j] = prob[j] * (grad[j] - back);
    return value;
  }

  /// keras cosine_similarity: -sum(normalize(t) normalize(p)), normalize(x)
  /// = x min(rsqrt(sum x^2), 1 / eps).
  double cosineRow(const double *p, const double *t, double *grad) const {
    double tt = 0.0, pp = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      tt += t[j] * t[j];
      pp += p[j] * p[j];
    }
    const double bound = 1.0 / kEpsilon;
    double ta = std::min(1.0 / std::sqrt(tt), bound);
    double pr = 1.0 / std::sqrt(pp), pa = std::min(pr, bound);
    double dot = 0.0;
    for (int64_t j = 0; j < k; ++j)
      dot += t[j] * ta * p[j] * pa;
    // tf.minimum passes the gradient through rsqrt where it is the smaller.
    bool through = pr <= bound;
    for (int64_t j = 0; j < k; ++j)
      grad[j] = pa * (-t[j] * ta + (through ? dot * p[j] * pa : 0.0));
    return -dot;
  }

  /// keras categorical_hinge: max(max_j (1 - t_j) p_j - sum_j t_j p_j + 1,
  /// 0); reduce_max's gradient is split among the maxima.
  double hingeRow(const double *p, const double *t, double *grad) const {
    double pos = 0.0, neg = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < k; ++j) {
      pos += t[j] * p[j];
      neg = std::max(neg, (1.0 - t[j]) * p[j]);
    }
    double margin = neg - pos + 1.0;
    double maxima = 0.0;
    for (int64_t j = 0; j < k; ++j)
      maxima += (1.0 - t[j]) * p[j] == neg ? 1.0 : 0.0;
    for (int64_t j = 0; j < k; ++j) {
      double share = (1.0 - t[j]) * p[j] == neg ? (1.0 - t[j]) / maxima : 0.0;
      grad[j] = margin >= 0.0 ? share - t[j] : 0.0;
    }
    return std::max(margin, 0.0);
  }

  PointwiseLossConfig loss;
  bool gradient;
  int64_t n, k, perRow, batch;
  std::vector<double> rowLosses; // reused every step
};

/// The compiled kind and parameters of a launch's element-wise
/// configuration `c` (read as every backend reads it,
/// runtime/core/PointwiseLoss.h).
void parsePointwiseLoss(const PointwiseLossConfig &c, Pointwise &kind,
                        PointwiseParams &params) {
  // The shared kinds in order, then the logits forms of the cross-entropies.
  kind = static_cast<Pointwise>(static_cast<int>(c.kind));
  if (c.kind == PointwiseKind::binaryCrossentropy && c.fromLogits)
    kind = Pointwise::binaryCrossentropyLogits;
  if (c.kind == PointwiseKind::binaryFocalCrossentropy && c.fromLogits)
    kind = Pointwise::binaryFocalCrossentropyLogits;
  if (c.binarySmoothing()) {
    params.targetScale = static_cast<float>(1.0 - c.labelSmoothing);
    params.targetShift = static_cast<float>(0.5 * c.labelSmoothing);
  }
  params.delta = static_cast<float>(c.delta);
  params.gamma = static_cast<float>(c.gamma);
  if (c.applyClassBalancing) {
    params.weightOne = static_cast<float>(c.alpha);
    params.weightZero = static_cast<float>(1.0 - c.alpha);
  }
}

KernelFactory pointwiseLossFactory(const char *kName, bool gradient) {
  return [=](const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
             const Tensors &outs, KernelFn &out) -> Status {
    if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
      return s;
    PointwiseLossConfig config;
    if (Status s = readPointwiseLossConfig(kName, cfg, gradient, config); !s)
      return s;
    const TensorRef &p = ins[0], &t = ins[1];
    if (p.shape.empty())
      return kernelError(kName, "needs predictions [B, ..., K], got a scalar");
    if (t.shape != p.shape)
      return kernelError(kName, "targets " + shapeText(t.shape) +
                                    " do not match predictions " +
                                    shapeText(p.shape));
    const int64_t n = p.elements(), rows = p.shape[0];
    if (n == 0)
      return kernelError(kName, "empty predictions " + shapeText(p.shape));
    if (Status s = checkRowWeights(kName, ins, 2, rows); !s)
      return s;
    if (gradient && outs[0].shape != p.shape)
      return kernelError(kName, "predictions_grad " + shapeText(outs[0].shape) +
                                    " does not match predictions " +
                                    shapeText(p.shape));
    if (!gradient && outs[0].elements() != 1)
      return kernelError(kName, "the loss must be a scalar, got " +
                                    shapeText(outs[0].shape));
    if (config.rowWise()) {
      auto kernel = std::make_shared<RowLossKernel>(
          config, gradient, n, p.shape.back(), n / rows, rows);
      out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
        return (*kernel)(ctx, cfg, ins, outs);
      };
      return Status::ok();
    }
    Pointwise kind = Pointwise::meanSquaredError;
    PointwiseParams params;
    parsePointwiseLoss(config, kind, params);
    double divisor = static_cast<double>(
        kind == Pointwise::klDivergence ? n / p.shape.back() : n);
    bool hingeLabels =
        kind == Pointwise::hinge || kind == Pointwise::squaredHinge;
    auto kernel = std::make_shared<PointwiseLossKernel>(
        kind, params, hingeLabels, gradient, n, n / rows, divisor);
    out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
      return (*kernel)(ctx, cfg, ins, outs);
    };
    return Status::ok();
  };
}

//===----------------------------------------------------------------------===//
// overlap_sums, overlap_loss, overlap_loss_grad: Keras' dice and tversky
// (axis=None), one ratio of sums over the whole batch. The sums are taken
// over fixed chunks of kPointwiseChunk elements, in double, and added in
// chunk order: they do not depend on the thread count.
//===----------------------------------------------------------------------===//

Status overlapSumsFactory(const KernelContext &, const KernelConfig &,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "overlap_sums";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  const TensorRef &p = ins[0], &t = ins[1];
  if (p.shape.empty() || p.shape[0] == 0)
    return kernelError(kName,
                       "needs predictions [B, ...], got " + shapeText(p.shape));
  if (t.shape != p.shape)
    return kernelError(kName, "targets " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  if (outs[0].elements() != OverlapLossConfig::kSums)
    return kernelError(kName,
                       "the sums must be [5], got " + shapeText(outs[0].shape));
  const int64_t n = p.elements(), rows = p.shape[0];
  if (Status s = checkRowWeights(kName, ins, 2, rows); !s)
    return s;
  struct Sums {
    double inter = 0, t = 0, p = 0;
  };
  auto chunks = std::make_shared<std::vector<Sums>>(
      (n + kPointwiseChunk - 1) / kPointwiseChunk); // reused every step
  const int64_t perRow = n / rows;
  out = [chunks, n, rows, perRow](const KernelContext &ctx,
                                  const KernelConfig &, const Tensors &ins,
                                  const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *p = ins[0].f32(), *t = ins[1].f32();
    const float *w = ins.size() > 2 ? ins[2].f32() : nullptr;
    const int64_t count = static_cast<int64_t>(chunks->size());
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t c = 0; c < count; ++c) {
      const int64_t begin = c * kPointwiseChunk,
                    end = std::min(n, begin + kPointwiseChunk);
      Sums sums;
      for (int64_t at = begin; at < end;) {
        // The chunk's part of one row, skipped where the row weighs 0.
        const int64_t row = at / perRow;
        const int64_t stop = std::min(end, (row + 1) * perRow);
        if (!w || w[row] != 0.0f) {
          double inter = 0, st = 0, sp = 0;
#pragma omp simd reduction(+ : inter, st, sp)
          for (int64_t i = at; i < stop; ++i) {
            inter += static_cast<double>(t[i]) * p[i];
            st += t[i];
            sp += p[i];
          }
          sums.inter += inter;
          sums.t += st;
          sums.p += sp;
        }
        at = stop;
      }
      (*chunks)[c] = sums;
    }
    Sums all;
    for (const Sums &c : *chunks) {
      all.inter += c.inter;
      all.t += c.t;
      all.p += c.p;
    }
    double weights = static_cast<double>(rows);
    if (w) {
      weights = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        weights += w[r];
    }
    float *sums = outs[0].f32();
    sums[0] = static_cast<float>(all.inter);
    sums[1] = static_cast<float>(all.t);
    sums[2] = static_cast<float>(all.p);
    sums[3] = static_cast<float>(weights);
    sums[4] = static_cast<float>(rows);
    return Status::ok();
  };
  return Status::ok();
}

/// overlap_sums' [5], as doubles.
void loadSums(const TensorRef &sums, double out[OverlapLossConfig::kSums]) {
  for (int64_t j = 0; j < OverlapLossConfig::kSums; ++j)
    out[j] = sums.f32()[j];
}

Status overlapLossFactory(const KernelContext &, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "overlap_loss";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  if (ins[0].elements() != OverlapLossConfig::kSums)
    return kernelError(kName, "needs overlap_sums' [5], got " +
                                  shapeText(ins[0].shape));
  if (outs[0].elements() != 1)
    return kernelError(kName, "the loss must be a scalar, got " +
                                  shapeText(outs[0].shape));
  out = [loss](const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
    double sums[OverlapLossConfig::kSums];
    loadSums(ins[0], sums);
    outs[0].f32()[0] = static_cast<float>(loss.value(sums));
    return Status::ok();
  };
  return Status::ok();
}

Status overlapLossGradFactory(const KernelContext &, const KernelConfig &cfg,
                              const Tensors &ins, const Tensors &outs,
                              KernelFn &out) {
  static constexpr const char *kName = "overlap_loss_grad";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  if (ins[1].elements() != OverlapLossConfig::kSums)
    return kernelError(kName, "needs overlap_sums' [5], got " +
                                  shapeText(ins[1].shape));
  if (outs[0].shape != ins[0].shape)
    return kernelError(kName, "predictions_grad " + shapeText(outs[0].shape) +
                                  " does not match targets " +
                                  shapeText(ins[0].shape));
  if (ins[0].shape.empty() || ins[0].shape[0] == 0)
    return kernelError(kName, "needs targets [B, ...], got " +
                                  shapeText(ins[0].shape));
  const int64_t n = ins[0].elements(), rows = ins[0].shape[0];
  if (Status s = checkRowWeights(kName, ins, 2, rows); !s)
    return s;
  out = [loss, n, rows](const KernelContext &ctx, const KernelConfig &,
                        const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    double sums[OverlapLossConfig::kSums], slope, offset;
    loadSums(ins[1], sums);
    loss.gradient(sums, slope, offset);
    const double replicas = static_cast<double>(loss.replicas);
    const float a = static_cast<float>(replicas * slope),
                b = static_cast<float>(replicas * offset);
    const float *t = ins[0].f32();
    const float *w = ins.size() > 2 ? ins[2].f32() : nullptr;
    float *dp = outs[0].f32();
    const int64_t perRow = n / rows;
    // The rows of weight 0 (padding) were left out of the sums: no gradient.
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      const float keep = !w || w[r] != 0.0f ? 1.0f : 0.0f;
#pragma omp simd
      for (int64_t i = r * perRow; i < (r + 1) * perRow; ++i)
        dp[i] = keep * (a * t[i] + b);
    }
    return Status::ok();
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

Status accuracyFactory(const KernelContext &, const KernelConfig &cfg,
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
  if (Status s = checkRowWeights(kName, ins, 2, labels.rows); !s)
    return s;
  const int64_t k = cfg.getInt("k", 1);
  if (k < 1)
    return kernelError(kName, "k must be at least 1, got " + std::to_string(k));
  out = [labels, k](const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *p = ins[0].f32();
    int64_t rows = labels.rows, c = labels.classes;
    // k > 1: Keras' in_top_k, fewer than k classes scoring more than the
    // label (a NaN score at the label is no hit).
    auto inTopK = [&](const float *v, int64_t label) {
      if (label < 0 || label >= c || std::isnan(v[label]))
        return false;
      int64_t above = 0;
      for (int64_t j = 0; j < c; ++j)
        above += v[j] > v[label];
      return above < k;
    };
    double hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits) if (rows * c >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r) {
      int64_t label = labels.oneHot ? argmax(ins[1].f32() + r * c, c)
                                    : Labels::indexAt(ins[1], r);
      if (k == 1 ? argmax(p + r * c, c) == label : inTopK(p + r * c, label))
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
  registry.addFactory("pointwise_loss", Backend::cpu,
                      pointwiseLossFactory("pointwise_loss", false));
  registry.addFactory("pointwise_loss_grad", Backend::cpu,
                      pointwiseLossFactory("pointwise_loss_grad", true));
  registry.addFactory("overlap_sums", Backend::cpu, overlapSumsFactory);
  registry.addFactory("overlap_loss", Backend::cpu, overlapLossFactory);
  registry.addFactory("overlap_loss_grad", Backend::cpu,
                      overlapLossGradFactory);
}

} // namespace graph::runtime::cpu
