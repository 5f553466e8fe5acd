//===- LossKernels.cu - softmax, cross-entropies, accuracy ----------------===//
//
// Row-wise kernels: one warp per row (or softmax line), its lanes striding
// over the classes, row sums in double through butterfly shuffles (a fixed
// order, so every run gives the same bits). The losses and accuracy reduce
// over the batch too: they run as one block of 32 warps whose per-warp
// totals are added in warp order, so the batch mean is deterministic
// without atomics. Row formulas are the reference's rowLoss, which follows
// Keras 3's TensorFlow backend (clipping to [1e-7, 1 - 1e-7] for
// probabilities).
//
// Labels are one-hot rows (f32, [B, C]) or class indices (f32, i32 or i64,
// [B]). The losses and accuracy take an optional sample_weight [B]: row r
// counts w[r] times, still divided by B (`weights` null: every w[r] is 1). An
// index outside [0, C), which the reference reports as an error, cannot stop a
// step already enqueued: the row's loss and gradient become NaN instead, so the
// failure shows in the loss.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include <cmath>

namespace graph::runtime::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarp = 32;
/// The single block of the batch-reducing kernels: 32 warps (declared as
/// their launch bounds, so the compiler keeps to 64 registers a thread).
constexpr int kBatchThreads = 1024;
constexpr double kEpsilon = 1e-7; // keras.config.epsilon()

__device__ double warpSum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset);
  return v;
}

__device__ double warpMax(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmax(v, __shfl_xor_sync(kFullMask, v, offset));
  return v;
}

/// The block's sum of `v` (one value per warp, taken from lane 0), in warp
/// order; valid in thread 0.
__device__ double blockSum(double v) {
  __shared__ double perWarp[kBatchThreads / kWarp];
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  if (lane == 0)
    perWarp[warp] = v;
  __syncthreads();
  double total = 0.0;
  if (threadIdx.x == 0)
    for (int w = 0; w < int(blockDim.x) / kWarp; ++w)
      total += perWarp[w];
  return total;
}

enum class LabelKind : int32_t { f32, i32, i64 };

/// The labels of a [rows, classes] batch.
struct Labels {
  const void *data = nullptr;
  LabelKind kind = LabelKind::f32;
  bool oneHot = false;
  int64_t classes = 0;

  __device__ double at(int64_t i) const {
    switch (kind) {
    case LabelKind::f32:
      return static_cast<const float *>(data)[i];
    case LabelKind::i32:
      return static_cast<const int32_t *>(data)[i];
    case LabelKind::i64:
      return static_cast<double>(static_cast<const int64_t *>(data)[i]);
    }
    return 0.0;
  }
  /// Index mode: the row's class (may be out of range).
  __device__ int64_t index(int64_t row) const { return llround(at(row)); }
  /// The target y[row, j]; `index` is index(row) in index mode.
  __device__ double target(int64_t row, int64_t j, int64_t index) const {
    return oneHot ? at(row * classes + j) : (j == index ? 1.0 : 0.0);
  }
  __device__ bool valid(int64_t index) const {
    return oneHot || (index >= 0 && index < classes);
  }
};

/// How the labels of a [rows, classes] operand read: one-hot when
/// `allowOneHot` and they have rows * classes elements, else indices.
Status labelsOf(const char *kName, const TensorRef &t, int64_t rows,
                int64_t classes, bool allowOneHot, Labels &out) {
  out.data = t.data;
  out.classes = classes;
  out.kind = t.dtype == plan::DType::i32   ? LabelKind::i32
             : t.dtype == plan::DType::i64 ? LabelKind::i64
                                           : LabelKind::f32;
  out.oneHot = allowOneHot && t.elements() == rows * classes;
  REQUIRE(out.oneHot || t.elements() == rows,
          "labels " + shapeText(t.shape) + " match neither [" +
              std::to_string(rows) + ", " + std::to_string(classes) +
              "] nor [" + std::to_string(rows) + "]");
  return Status::ok();
}

__device__ double clip(double p) {
  return fmin(fmax(p, kEpsilon), 1.0 - kEpsilon);
}
__device__ bool unclipped(double p) {
  return p > kEpsilon && p < 1.0 - kEpsilon;
}

enum class LossMode : int32_t { logits, sparseProbabilities, probabilities };

/// The reference's rowLoss for one row, computed by one warp: returns the
/// row's loss (in every lane) and, when `grad` is set, writes
/// d(row loss)/d(predictions) * gradScale.
__device__ double rowLoss(const float *z, const Labels &labels, int64_t row,
                          int64_t c, LossMode mode, float *grad,
                          double gradScale) {
  int lane = threadIdx.x % kWarp;
  int64_t k = labels.oneHot ? -1 : labels.index(row);
  if (!labels.valid(k)) {
    for (int64_t j = lane; grad && j < c; j += kWarp)
      grad[j] = NAN;
    return NAN;
  }
  auto y = [&](int64_t j) { return labels.target(row, j, k); };
  if (mode == LossMode::logits) {
    double m = -INFINITY;
    for (int64_t j = lane; j < c; j += kWarp)
      m = fmax(m, double(z[j]));
    m = warpMax(m);
    double sumExp = 0.0;
    for (int64_t j = lane; j < c; j += kWarp)
      sumExp += exp(double(z[j]) - m);
    double lse = m + log(warpSum(sumExp));
    double loss = 0.0, ySum = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      loss -= y(j) * (double(z[j]) - lse);
      ySum += y(j);
    }
    ySum = warpSum(ySum);
    for (int64_t j = lane; grad && j < c; j += kWarp)
      grad[j] = static_cast<float>((exp(double(z[j]) - lse) * ySum - y(j)) *
                                   gradScale);
    return warpSum(loss);
  }
  if (mode == LossMode::sparseProbabilities) {
    double s = 0.0, loss = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      s += clip(z[j]);
      loss -= y(j) * log(clip(z[j]));
    }
    s = warpSum(s);
    for (int64_t j = lane; grad && j < c; j += kWarp)
      grad[j] = static_cast<float>(
          (unclipped(z[j]) ? 1.0 / s - y(j) / clip(z[j]) : 0.0) * gradScale);
    return warpSum(loss) + log(s);
  }
  double s = 0.0;
  for (int64_t j = lane; j < c; j += kWarp)
    s += z[j];
  s = warpSum(s);
  double loss = 0.0, common = 0.0;
  for (int64_t j = lane; j < c; j += kWarp) {
    double q = z[j] / s;
    loss -= y(j) * log(clip(q));
    if (unclipped(q))
      common += y(j) * q / clip(q);
  }
  common = warpSum(common);
  for (int64_t j = lane; grad && j < c; j += kWarp) {
    double q = z[j] / s;
    grad[j] = static_cast<float>(
        ((unclipped(q) ? -y(j) / clip(q) : 0.0) + common) / s * gradScale);
  }
  return warpSum(loss);
}

__device__ double weightAt(const float *weights, int64_t r) {
  return weights ? double(weights[r]) : 1.0;
}

/// The batch-mean loss (`grad` null) or its gradient, in one block.
__global__ void __launch_bounds__(kBatchThreads)
    crossEntropyKernel(const float *p, Labels labels, const float *weights,
                       int64_t rows, int64_t c, LossMode mode, float *loss,
                       float *grad) {
  int warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  double total = 0.0;
  for (int64_t r = warp; r < rows; r += warps)
    total += weightAt(weights, r) * rowLoss(p + r * c, labels, r, c, mode,
                                            grad ? grad + r * c : nullptr,
                                            1.0 / double(rows));
  if (loss) {
    total = blockSum(total);
    if (threadIdx.x == 0)
      *loss = static_cast<float>(total / double(rows));
  }
}

/// softmax_cross_entropy: probabilities, mean loss, w (p - y) / rows.
__global__ void __launch_bounds__(kBatchThreads)
    softmaxCrossEntropyKernel(const float *z, Labels labels,
                              const float *weights, int64_t rows, int64_t c,
                              float *probabilities, float *loss, float *grad) {
  int warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  int lane = threadIdx.x % kWarp;
  double total = 0.0;
  for (int64_t r = warp; r < rows; r += warps) {
    const float *zr = z + r * c;
    int64_t k = labels.oneHot ? -1 : labels.index(r);
    bool valid = labels.valid(k);
    double m = -INFINITY;
    for (int64_t j = lane; j < c; j += kWarp)
      m = fmax(m, double(zr[j]));
    m = warpMax(m);
    double sumExp = 0.0;
    for (int64_t j = lane; j < c; j += kWarp)
      sumExp += exp(double(zr[j]) - m);
    double lse = m + log(warpSum(sumExp));
    double w = weightAt(weights, r);
    double rowLoss = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      double ls = double(zr[j]) - lse, pj = exp(ls);
      double y = valid ? labels.target(r, j, k) : NAN;
      probabilities[r * c + j] = static_cast<float>(pj);
      grad[r * c + j] = static_cast<float>(w * (pj - y) / double(rows));
      rowLoss -= y * ls;
    }
    total += w * warpSum(rowLoss);
  }
  total = blockSum(total);
  if (threadIdx.x == 0)
    *loss = static_cast<float>(total / double(rows));
}

/// The first maximum of a row: lanes scan their columns in order, then the
/// warp keeps the larger value, or on a tie the lower column.
template <typename Value>
__device__ int64_t warpArgmax(Value value, int64_t c) {
  int lane = threadIdx.x % kWarp;
  double best = -INFINITY;
  int64_t at = -1;
  for (int64_t j = lane; j < c; j += kWarp) {
    double v = value(j);
    if (at < 0 || v > best) {
      best = v;
      at = j;
    }
  }
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    double otherBest = __shfl_xor_sync(kFullMask, best, offset);
    int64_t otherAt = __shfl_xor_sync(kFullMask, at, offset);
    bool take = otherAt >= 0 && (at < 0 || otherBest > best ||
                                 (otherBest == best && otherAt < at));
    if (take) {
      best = otherBest;
      at = otherAt;
    }
  }
  return at;
}

__global__ void __launch_bounds__(kBatchThreads)
    accuracyKernel(const float *p, Labels labels, const float *weights,
                   int64_t rows, int64_t c, float *accuracy) {
  int warp = threadIdx.x / kWarp, warps = blockDim.x / kWarp;
  double hits = 0.0;
  for (int64_t r = warp; r < rows; r += warps) {
    const float *row = p + r * c;
    int64_t predicted =
        warpArgmax([&](int64_t j) { return double(row[j]); }, c);
    int64_t label =
        labels.oneHot
            ? warpArgmax([&](int64_t j) { return labels.at(r * c + j); }, c)
            : labels.index(r);
    hits += predicted == label ? weightAt(weights, r) : 0.0;
  }
  hits = blockSum(hits);
  if (threadIdx.x == 0)
    *accuracy = static_cast<float>(hits / double(rows));
}

/// [outer, size, inner] around the softmax axis: one warp per
/// (outer, inner) line.
struct SoftmaxLines {
  int64_t outer = 0, size = 0, inner = 0;
  __device__ int64_t at(int64_t line, int64_t a) const {
    return ((line / inner) * size + a) * inner + line % inner;
  }
};

__global__ void softmaxKernel(const float *x, float *y, SoftmaxLines l) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t line =
           blockIdx.x * int64_t(blockDim.x / kWarp) + threadIdx.x / kWarp;
       line < l.outer * l.inner; line += warps) {
    double m = -INFINITY;
    for (int64_t a = lane; a < l.size; a += kWarp)
      m = fmax(m, double(x[l.at(line, a)]));
    m = warpMax(m);
    double sum = 0.0;
    for (int64_t a = lane; a < l.size; a += kWarp)
      sum += exp(double(x[l.at(line, a)]) - m);
    sum = warpSum(sum);
    for (int64_t a = lane; a < l.size; a += kWarp)
      y[l.at(line, a)] =
          static_cast<float>(exp(double(x[l.at(line, a)]) - m) / sum);
  }
}

/// dx = y * (dy - sum(dy * y)) along the axis.
__global__ void softmaxGradKernel(const float *dy, const float *y, float *dx,
                                  SoftmaxLines l) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t line =
           blockIdx.x * int64_t(blockDim.x / kWarp) + threadIdx.x / kWarp;
       line < l.outer * l.inner; line += warps) {
    double dot = 0.0;
    for (int64_t a = lane; a < l.size; a += kWarp)
      dot += double(dy[l.at(line, a)]) * y[l.at(line, a)];
    dot = warpSum(dot);
    for (int64_t a = lane; a < l.size; a += kWarp) {
      int64_t i = l.at(line, a);
      dx[i] = static_cast<float>(y[i] * (double(dy[i]) - dot));
    }
  }
}

/// `shape` split around `axis` (negative counts from the end).
Status softmaxLinesOf(const char *kName, const std::vector<int64_t> &shape,
                      int64_t axis, SoftmaxLines &l) {
  int64_t rank = static_cast<int64_t>(shape.size());
  int64_t a = axis < 0 ? axis + rank : axis;
  REQUIRE(a >= 0 && a < rank, "axis " + std::to_string(axis) +
                                  " out of range for " + shapeText(shape));
  l.outer = l.inner = 1;
  for (int64_t d = 0; d < a; ++d)
    l.outer *= shape[d];
  for (int64_t d = a + 1; d < rank; ++d)
    l.inner *= shape[d];
  l.size = shape[a];
  return Status::ok();
}

/// Blocks of 8 warps for `lines` warp-sized jobs.
unsigned lineBlocks(int64_t lines) {
  constexpr int64_t warpsPerBlock = kThreads / kWarp;
  return static_cast<unsigned>(std::clamp<int64_t>(
      (lines + warpsPerBlock - 1) / warpsPerBlock, 1, 65536));
}

Status softmax(const KernelContext &ctx, const KernelConfig &cfg,
               const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "softmax";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  SoftmaxLines l;
  RETURN_IF_ERROR(
      softmaxLinesOf(kName, ins[0].shape, cfg.getInt("axis", -1), l));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32();
  float *y = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (l.outer * l.inner * l.size == 0)
      return Status::ok();
    softmaxKernel<<<lineBlocks(l.outer * l.inner), kThreads, 0,
                    state->compute>>>(x, y, l);
    RETURN_IF_LAUNCH_FAILED("softmaxKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// ins: dy, y.
Status softmaxGrad(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "softmax_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  SoftmaxLines l;
  RETURN_IF_ERROR(
      softmaxLinesOf(kName, ins[1].shape, cfg.getInt("axis", -1), l));
  REQUIRE(ins[0].elements() == ins[1].elements() &&
              outs[0].elements() == ins[0].elements(),
          "output_grad " + shapeText(ins[0].shape) + ", y " +
              shapeText(ins[1].shape) + " and input_grad " +
              shapeText(outs[0].shape) + " differ in size");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *dy = ins[0].f32(), *y = ins[1].f32();
  float *dx = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (l.outer * l.inner * l.size == 0)
      return Status::ok();
    softmaxGradKernel<<<lineBlocks(l.outer * l.inner), kThreads, 0,
                        state->compute>>>(dy, y, dx, l);
    RETURN_IF_LAUNCH_FAILED("softmaxGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// Rows and classes of [..., C] predictions.
Status batchOf(const char *kName, const TensorRef &p, int64_t &rows,
               int64_t &classes) {
  REQUIRE(!p.shape.empty() && p.shape.back() > 0,
          "needs [B, C] predictions, got " + shapeText(p.shape));
  classes = p.shape.back();
  rows = p.elements() / classes;
  REQUIRE(rows > 0, "empty batch");
  return Status::ok();
}

/// The optional sample_weight of a loss or metric (input 2): [rows] f32.
Status sampleWeightOf(const char *kName, const Tensors &ins, int64_t rows,
                      const float *&out) {
  out = nullptr;
  if (ins.size() < 3)
    return Status::ok();
  REQUIRE(ins[2].elements() == rows,
          "sample_weight " + shapeText(ins[2].shape) + " must be [" +
              std::to_string(rows) + "]");
  out = ins[2].f32();
  return Status::ok();
}

/// The four cross-entropy kernels: ins predictions, labels and, for a loss,
/// an optional sample_weight; out the mean loss (scalar) or its gradient.
KernelFactory crossEntropyFactory(const char *name, bool sparse,
                                  bool gradient) {
  return [name, sparse, gradient](const KernelContext &ctx,
                                  const KernelConfig &cfg, const Tensors &ins,
                                  const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, gradient ? 2 : 3, 1, 1));
    int64_t rows = 0, classes = 0;
    RETURN_IF_ERROR(batchOf(kName, ins[0], rows, classes));
    Labels labels;
    RETURN_IF_ERROR(labelsOf(kName, ins[1], rows, classes, !sparse, labels));
    const float *weights = nullptr;
    RETURN_IF_ERROR(sampleWeightOf(kName, ins, rows, weights));
    if (gradient)
      REQUIRE(outs[0].elements() == ins[0].elements(),
              "predictions_grad " + shapeText(outs[0].shape) +
                  " differs in size from " + shapeText(ins[0].shape));
    else
      REQUIRE(outs[0].elements() == 1,
              "loss must be a scalar, got " + shapeText(outs[0].shape));
    LossMode mode = cfg.getInt("from_logits", 0) != 0 ? LossMode::logits
                    : sparse ? LossMode::sparseProbabilities
                             : LossMode::probabilities;
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    const float *p = ins[0].f32();
    float *loss = gradient ? nullptr : outs[0].f32();
    float *grad = gradient ? outs[0].f32() : nullptr;
    out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
              const Tensors &) {
      crossEntropyKernel<<<1, kBatchThreads, 0, state->compute>>>(
          p, labels, weights, rows, classes, mode, loss, grad);
      RETURN_IF_LAUNCH_FAILED("crossEntropyKernel");
      return Status::ok();
    };
    return Status::ok();
  };
}

/// ins: logits [B, C], labels, [sample_weight]; outs: probabilities, loss,
/// w (p - y) / B.
Status softmaxCrossEntropy(const KernelContext &ctx, const KernelConfig &,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  static constexpr const char *kName = "softmax_cross_entropy";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 3, 1));
  int64_t rows = 0, classes = 0;
  RETURN_IF_ERROR(batchOf(kName, ins[0], rows, classes));
  Labels labels;
  RETURN_IF_ERROR(labelsOf(kName, ins[1], rows, classes, true, labels));
  const float *weights = nullptr;
  RETURN_IF_ERROR(sampleWeightOf(kName, ins, rows, weights));
  REQUIRE(
      outs[0].elements() == ins[0].elements() &&
          outs[2].elements() == ins[0].elements() && outs[1].elements() == 1,
      "outputs " + shapeText(outs[0].shape) + ", " + shapeText(outs[1].shape) +
          ", " + shapeText(outs[2].shape) + " are not [B, C], scalar, [B, C]");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *z = ins[0].f32();
  float *probabilities = outs[0].f32(), *loss = outs[1].f32(),
        *grad = outs[2].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    softmaxCrossEntropyKernel<<<1, kBatchThreads, 0, state->compute>>>(
        z, labels, weights, rows, classes, probabilities, loss, grad);
    RETURN_IF_LAUNCH_FAILED("softmaxCrossEntropyKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// The fraction of rows whose first arg-max is the label's.
Status accuracy(const KernelContext &ctx, const KernelConfig &,
                const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "accuracy";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1, 1));
  int64_t rows = 0, classes = 0;
  RETURN_IF_ERROR(batchOf(kName, ins[0], rows, classes));
  REQUIRE(outs[0].elements() == 1,
          "accuracy must be a scalar, got " + shapeText(outs[0].shape));
  const float *weights = nullptr;
  RETURN_IF_ERROR(sampleWeightOf(kName, ins, rows, weights));
  // As the reference: one-hot only with more than one class.
  Labels labels;
  RETURN_IF_ERROR(labelsOf(kName, ins[1], rows, classes, classes > 1, labels));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *p = ins[0].f32();
  float *result = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    accuracyKernel<<<1, kBatchThreads, 0, state->compute>>>(
        p, labels, weights, rows, classes, result);
    RETURN_IF_LAUNCH_FAILED("accuracyKernel");
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerLossKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("softmax", Backend::cuda, softmax);
  r.addFactory("softmax_grad", Backend::cuda, softmaxGrad);
  r.addFactory("categorical_crossentropy", Backend::cuda,
               crossEntropyFactory("categorical_crossentropy", false, false));
  r.addFactory(
      "sparse_categorical_crossentropy", Backend::cuda,
      crossEntropyFactory("sparse_categorical_crossentropy", true, false));
  r.addFactory(
      "categorical_crossentropy_grad", Backend::cuda,
      crossEntropyFactory("categorical_crossentropy_grad", false, true));
  r.addFactory(
      "sparse_categorical_crossentropy_grad", Backend::cuda,
      crossEntropyFactory("sparse_categorical_crossentropy_grad", true, true));
  r.addFactory("softmax_cross_entropy", Backend::cuda, softmaxCrossEntropy);
  r.addFactory("accuracy", Backend::cuda, accuracy);
}

} // namespace graph::runtime::cuda
