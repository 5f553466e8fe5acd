//===- LossKernels.cu - softmax, cross-entropies, accuracy ----------------===//
//
// Row-wise kernels: one warp per row (or softmax line), its lanes striding
// over the classes, row sums in double through butterfly shuffles (a fixed
// order, so every run gives the same bits). The losses and accuracy reduce
// over the batch too (batchSumKernel): blocks of 8 warps, a row each, add
// their rows in warp order into one partial per block, and the last block
// to finish adds the partials in block order, so the batch mean is
// deterministic without atomics on the values. (One block of 32 warps, 8
// rows each in turn, took 24-28 us a step at batch 256 on an H100.) Row
// formulas are the reference's rowLoss, which follows Keras 3's TensorFlow
// backend (clipping to float32's [1e-7, 1 - 1e-7] for probabilities).
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
#include "runtime/core/PointwiseLoss.h"

#include <cmath>
#include <memory>

namespace graph::runtime::cuda {

namespace {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarp = 32;
/// Rows (a warp each) per block of the batch-reducing kernels.
constexpr int kRowWarps = 8;
constexpr double kEpsilon = 1e-7; // keras.config.epsilon()
/// Keras' clip(p, epsilon, 1 - epsilon) bounds on a float32 tensor, as the
/// reference's (1 - 1e-7 rounds to 0.99999988).
constexpr double kClipLow = static_cast<float>(kEpsilon);
constexpr double kClipHigh = static_cast<float>(1.0 - kEpsilon);

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

/// A sum over the rows of a batch, one double per row: where the blocks of
/// batchSumKernel leave their partial sums, and the ticket that tells the
/// last of them (0 between launches: the last block's atomicInc wraps it).
struct BatchSum {
  int64_t rows = 0;
  double *partials = nullptr; // [blocks()]
  unsigned *ticket = nullptr;

  unsigned blocks() const {
    return static_cast<unsigned>((rows + kRowWarps - 1) / kRowWarps);
  }
};

/// A launch site's BatchSum over `rows` rows, in memory `buffer` owns,
/// zeroed on the compute stream before any launch of the site.
Status makeBatchSum(const char *kName, const CudaDeviceState &state,
                    int64_t rows, std::shared_ptr<DeviceBuffer> &buffer,
                    BatchSum &out) {
  REQUIRE((rows + kRowWarps - 1) / kRowWarps <= 0x7fffffff,
          std::to_string(rows) + " rows are too many blocks");
  out.rows = rows;
  size_t partialBytes = alignUp(size_t(out.blocks()) * sizeof(double));
  size_t bytes = partialBytes + sizeof(unsigned);
  buffer = std::make_shared<DeviceBuffer>();
  RETURN_IF_ERROR(buffer->allocate(state.ordinal, bytes));
  ScopedDevice device;
  RETURN_IF_ERROR(device.enter(state.ordinal));
  RETURN_IF_CUDA_ERROR(
      cudaMemsetAsync(buffer->data(), 0, bytes, state.compute));
  auto *base = static_cast<char *>(buffer->data());
  out.partials = reinterpret_cast<double *>(base);
  out.ticket = reinterpret_cast<unsigned *>(base + partialBytes);
  return Status::ok();
}

/// `finish(total)` with the sum over the rows of `row(r)`, which the whole
/// warp of row r computes (it may use the warp's shuffles; every lane
/// returns the row's value).
template <typename Row, typename Finish>
__global__ void __launch_bounds__(kRowWarps *kWarp)
    batchSumKernel(BatchSum sum, Row row, Finish finish) {
  __shared__ double perWarp[kRowWarps];
  __shared__ bool last;
  int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
  int64_t r = int64_t(blockIdx.x) * kRowWarps + warp;
  double value = r < sum.rows ? row(r) : 0.0;
  if (lane == 0)
    perWarp[warp] = value;
  __syncthreads();
  if (threadIdx.x == 0) {
    double total = 0.0;
    for (int w = 0; w < kRowWarps; ++w)
      total += perWarp[w];
    sum.partials[blockIdx.x] = total;
    // The partial is visible to every block before the ticket counts it.
    __threadfence();
    last = atomicInc(sum.ticket, gridDim.x - 1) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last || warp != 0)
    return;
  // Past L1, which may hold no other block's partial yet.
  const volatile double *partials = sum.partials;
  double total = 0.0;
  for (unsigned b = lane; b < gridDim.x; b += kWarp)
    total += partials[b];
  total = warpSum(total);
  if (lane == 0)
    finish(total);
}

/// Writes total / rows to `out` (nothing when null).
struct StoreMean {
  float *out = nullptr;
  double rows = 1;
  __device__ void operator()(double total) const {
    if (out)
      *out = static_cast<float>(total / rows);
  }
};

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

__device__ double clip(double p) { return fmin(fmax(p, kClipLow), kClipHigh); }
__device__ bool unclipped(double p) { return p > kClipLow && p < kClipHigh; }

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

/// A cross-entropy's weighted row loss; with `grad`, also the row's
/// gradient of the batch mean.
struct CrossEntropyRow {
  const float *p;
  Labels labels;
  const float *weights;
  int64_t rows, c;
  LossMode mode;
  float *grad;
  __device__ double operator()(int64_t r) const {
    // The gradient of the weighted loss: the row's times its weight.
    double w = weightAt(weights, r);
    return w * rowLoss(p + r * c, labels, r, c, mode,
                       grad ? grad + r * c : nullptr, w / double(rows));
  }
};

/// softmax_cross_entropy's row: its probabilities and w (p - y) / rows
/// written, its weighted loss returned.
struct SoftmaxCrossEntropyRow {
  const float *z;
  Labels labels;
  const float *weights;
  int64_t rows, c;
  float *probabilities, *grad;
  __device__ double operator()(int64_t r) const {
    int lane = threadIdx.x % kWarp;
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
    double loss = 0.0;
    for (int64_t j = lane; j < c; j += kWarp) {
      double ls = double(zr[j]) - lse, pj = exp(ls);
      double y = valid ? labels.target(r, j, k) : NAN;
      probabilities[r * c + j] = static_cast<float>(pj);
      grad[r * c + j] = static_cast<float>(w * (pj - y) / double(rows));
      loss -= y * ls;
    }
    return w * warpSum(loss);
  }
};

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

/// The row's weight when its first arg-max is its label's, else 0.
struct AccuracyRow {
  const float *p;
  Labels labels;
  const float *weights;
  int64_t c;
  __device__ double operator()(int64_t r) const {
    const float *row = p + r * c;
    int64_t predicted =
        warpArgmax([&](int64_t j) { return double(row[j]); }, c);
    int64_t label =
        labels.oneHot
            ? warpArgmax([&](int64_t j) { return labels.at(r * c + j); }, c)
            : labels.index(r);
    return predicted == label ? weightAt(weights, r) : 0.0;
  }
};

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

/// The four cross-entropy kernels: ins predictions, labels and an optional
/// sample_weight; out the weighted mean loss (scalar) or its gradient.
KernelFactory crossEntropyFactory(const char *name, bool sparse,
                                  bool gradient) {
  return [name, sparse, gradient](const KernelContext &ctx,
                                  const KernelConfig &cfg, const Tensors &ins,
                                  const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1,
                                  OperandRule::f32WithLabels(1)));
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
    std::shared_ptr<DeviceBuffer> buffer;
    BatchSum sum;
    RETURN_IF_ERROR(makeBatchSum(kName, *state, rows, buffer, sum));
    float *loss = gradient ? nullptr : outs[0].f32();
    float *grad = gradient ? outs[0].f32() : nullptr;
    CrossEntropyRow row{ins[0].f32(), labels, weights, rows,
                        classes,      mode,   grad};
    StoreMean finish{loss, double(rows)};
    out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
              const Tensors &) {
      (void)buffer; // kept alive with the launch site
      batchSumKernel<<<sum.blocks(), kRowWarps * kWarp, 0, state->compute>>>(
          sum, row, finish);
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
  RETURN_IF_ERROR(
      checkOperands(kName, ins, outs, 2, 3, 3, OperandRule::f32WithLabels(1)));
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
  std::shared_ptr<DeviceBuffer> buffer;
  BatchSum sum;
  RETURN_IF_ERROR(makeBatchSum(kName, *state, rows, buffer, sum));
  SoftmaxCrossEntropyRow row{ins[0].f32(), labels,        weights,      rows,
                             classes,      outs[0].f32(), outs[2].f32()};
  StoreMean finish{outs[1].f32(), double(rows)};
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    (void)buffer; // kept alive with the launch site
    batchSumKernel<<<sum.blocks(), kRowWarps * kWarp, 0, state->compute>>>(
        sum, row, finish);
    RETURN_IF_LAUNCH_FAILED("softmaxCrossEntropyKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// The fraction of rows whose first arg-max is the label's.
Status accuracy(const KernelContext &ctx, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "accuracy";
  RETURN_IF_ERROR(
      checkOperands(kName, ins, outs, 2, 3, 1, OperandRule::f32WithLabels(1)));
  // No GPU run has measured a top-k kernel yet: the host backends have it.
  REQUIRE(cfg.getInt("k", 1) == 1,
          "top-k accuracy (k > 1) is not on the cuda backend yet; train on "
          "--backend cpu, or drop the metric");
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
  std::shared_ptr<DeviceBuffer> buffer;
  BatchSum sum;
  RETURN_IF_ERROR(makeBatchSum(kName, *state, rows, buffer, sum));
  AccuracyRow row{ins[0].f32(), labels, weights, classes};
  StoreMean finish{outs[0].f32(), double(rows)};
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    (void)buffer; // kept alive with the launch site
    batchSumKernel<<<sum.blocks(), kRowWarps * kWarp, 0, state->compute>>>(
        sum, row, finish);
    RETURN_IF_LAUNCH_FAILED("accuracyKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// kept_rows, ignore_class: SparseCategoricalCrossentropy's ignore_class
//===----------------------------------------------------------------------===//

/// counts = [kept, rows]: the rows that hold examples (metric weight not 0)
/// and those of them whose label is not `ignored`. One block: a batch's
/// labels are few, and the two sums are added in double, as the reference.
__global__ void keptRowsKernel(Labels labels, const float *metricWeight,
                               int64_t rows, double ignored, float *counts) {
  __shared__ double kept[kThreads], real[kThreads];
  double k = 0.0, r = 0.0;
  for (int64_t i = threadIdx.x; i < rows; i += blockDim.x) {
    if (metricWeight[i] == 0.0f)
      continue;
    r += 1.0;
    k += labels.at(i) != ignored ? 1.0 : 0.0;
  }
  kept[threadIdx.x] = k;
  real[threadIdx.x] = r;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half) {
      kept[threadIdx.x] += kept[threadIdx.x + half];
      real[threadIdx.x] += real[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    counts[0] = static_cast<float>(kept[0]);
    counts[1] = static_cast<float>(real[0]);
  }
}

/// The labels with the ignored ones 0, and the weights with theirs 0 and
/// the others times R / K (kept_rows' counts, summed over the replicas),
/// unless the loss is a sum.
__global__ void ignoreClassKernel(const int32_t *labels, const float *weights,
                                  const float *counts, int64_t rows,
                                  int32_t ignored, bool sumReduction,
                                  int32_t *labelsOut, float *weightsOut) {
  const double scale = sumReduction        ? 1.0
                       : counts[0] == 0.0f ? 0.0
                                           : double(counts[1]) / counts[0];
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows;
       i += int64_t(gridDim.x) * blockDim.x) {
    const bool drop = labels[i] == ignored;
    labelsOut[i] = drop ? 0 : labels[i];
    weightsOut[i] = drop ? 0.0f : static_cast<float>(weights[i] * scale);
  }
}

Status keptRows(const KernelContext &ctx, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "kept_rows";
  RETURN_IF_ERROR(
      checkOperands(kName, ins, outs, 2, 2, 1, OperandRule::f32WithLabels(0)));
  const int64_t rows = ins[0].elements();
  REQUIRE(ins[1].elements() == rows,
          "metric_weight must be [B], one per label");
  REQUIRE(outs[0].elements() == 2,
          "the counts must be [2], got " + shapeText(outs[0].shape));
  Labels labels;
  RETURN_IF_ERROR(labelsOf(kName, ins[0], rows, 1, false, labels));
  const double ignored = static_cast<double>(cfg.getInt("ignore_class"));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *metricWeight = ins[1].f32();
  float *counts = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    keptRowsKernel<<<1, kThreads, 0, state->compute>>>(labels, metricWeight,
                                                       rows, ignored, counts);
    RETURN_IF_LAUNCH_FAILED("keptRowsKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status ignoreClass(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "ignore_class";
  REQUIRE(ins.size() == 3 && outs.size() == 2,
          "takes labels, sample_weight and kept_rows' counts; gives labels "
          "and weights");
  const int64_t rows = ins[0].elements();
  REQUIRE(ins[0].dtype == plan::DType::i32 &&
              outs[0].dtype == plan::DType::i32 && outs[0].elements() == rows,
          "labels in and out must be i32 [B]");
  REQUIRE(ins[1].dtype == plan::DType::f32 && ins[1].elements() == rows &&
              outs[1].dtype == plan::DType::f32 && outs[1].elements() == rows,
          "sample_weight and the weights out must be f32 [B]");
  REQUIRE(ins[2].dtype == plan::DType::f32 && ins[2].elements() == 2,
          "needs kept_rows' f32 [2]");
  const int64_t ignore = cfg.getInt("ignore_class");
  REQUIRE(ignore >= INT32_MIN && ignore <= INT32_MAX,
          "ignore_class " + std::to_string(ignore) + " is not an i32 label");
  const auto ignored = static_cast<int32_t>(ignore);
  const bool sum = cfg.getInt("sum_reduction", 0) != 0;
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const int32_t *labels = static_cast<const int32_t *>(ins[0].data);
  const float *weights = ins[1].f32(), *counts = ins[2].f32();
  int32_t *labelsOut = static_cast<int32_t *>(outs[0].data);
  float *weightsOut = outs[1].f32();
  const unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((rows + kThreads - 1) / kThreads, 1024));
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (rows == 0)
      return Status::ok();
    ignoreClassKernel<<<blocks, kThreads, 0, state->compute>>>(
        labels, weights, counts, rows, ignored, sum, labelsOut, weightsOut);
    RETURN_IF_LAUNCH_FAILED("ignoreClassKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// overlap_sums, overlap_loss(_grad): Keras' Dice and Tversky over the batch
//===----------------------------------------------------------------------===//

/// sums = [sum t p, sum t, sum p] over the rows of weight not 0, then
/// [sum w, rows]. One block, in double, as the reference.
__global__ void overlapSumsKernel(const float *p, const float *t,
                                  const float *w, int64_t n, int64_t rows,
                                  float *sums) {
  __shared__ double part[4][kThreads];
  const int64_t perRow = n / rows;
  double tp = 0.0, ts = 0.0, ps = 0.0, ws = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (w && w[i / perRow] == 0.0f)
      continue;
    tp += double(t[i]) * p[i];
    ts += t[i];
    ps += p[i];
  }
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x)
    ws += w ? double(w[r]) : 1.0;
  part[0][threadIdx.x] = tp;
  part[1][threadIdx.x] = ts;
  part[2][threadIdx.x] = ps;
  part[3][threadIdx.x] = ws;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      for (int k = 0; k < 4; ++k)
        part[k][threadIdx.x] += part[k][threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    for (int k = 0; k < 4; ++k)
      sums[k] = static_cast<float>(part[k][0]);
    sums[4] = static_cast<float>(rows);
  }
}

__device__ void loadSums(const float *in, double sums[5]) {
  for (int k = 0; k < OverlapLossConfig::kSums; ++k)
    sums[k] = in[k];
}

__global__ void overlapLossKernel(OverlapLossConfig loss, const float *in,
                                  float *out) {
  double sums[OverlapLossConfig::kSums];
  loadSums(in, sums);
  out[0] = static_cast<float>(loss.value(sums));
}

/// d loss / d p = replicas (slope t + offset), 0 in rows of weight 0.
__global__ void overlapLossGradKernel(OverlapLossConfig loss, const float *t,
                                      const float *in, const float *w,
                                      int64_t n, int64_t perRow, float *dp) {
  double sums[OverlapLossConfig::kSums];
  loadSums(in, sums);
  double slope = 0.0, offset = 0.0;
  loss.gradient(sums, slope, offset);
  const double replicas = static_cast<double>(loss.replicas);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    dp[i] = w && w[i / perRow] == 0.0f
                ? 0.0f
                : static_cast<float>(replicas * (slope * t[i] + offset));
}

Status overlapSums(const KernelContext &ctx, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "overlap_sums";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1));
  const TensorRef &p = ins[0], &t = ins[1];
  REQUIRE(!p.shape.empty() && p.shape[0] > 0,
          "needs predictions [B, ...], got " + shapeText(p.shape));
  REQUIRE(t.shape == p.shape, "targets " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  REQUIRE(outs[0].elements() == OverlapLossConfig::kSums,
          "the sums must be [5], got " + shapeText(outs[0].shape));
  const int64_t n = p.elements(), rows = p.shape[0];
  const float *w = nullptr;
  RETURN_IF_ERROR(sampleWeightOf(kName, ins, rows, w));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *pp = p.f32(), *tp = t.f32();
  float *sums = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    overlapSumsKernel<<<1, kThreads, 0, state->compute>>>(pp, tp, w, n, rows,
                                                          sums);
    RETURN_IF_LAUNCH_FAILED("overlapSumsKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status overlapLoss(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "overlap_loss";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  OverlapLossConfig loss;
  RETURN_IF_ERROR(readOverlapLossConfig(kName, cfg, loss));
  REQUIRE(ins[0].elements() == OverlapLossConfig::kSums,
          "needs overlap_sums' [5], got " + shapeText(ins[0].shape));
  REQUIRE(outs[0].elements() == 1,
          "the loss must be a scalar, got " + shapeText(outs[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *sums = ins[0].f32();
  float *value = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    overlapLossKernel<<<1, 1, 0, state->compute>>>(loss, sums, value);
    RETURN_IF_LAUNCH_FAILED("overlapLossKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status overlapLossGrad(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "overlap_loss_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1));
  OverlapLossConfig loss;
  RETURN_IF_ERROR(readOverlapLossConfig(kName, cfg, loss));
  const TensorRef &t = ins[0];
  REQUIRE(ins[1].elements() == OverlapLossConfig::kSums,
          "needs overlap_sums' [5], got " + shapeText(ins[1].shape));
  REQUIRE(outs[0].shape == t.shape,
          "predictions_grad " + shapeText(outs[0].shape) +
              " does not match targets " + shapeText(t.shape));
  REQUIRE(!t.shape.empty() && t.shape[0] > 0,
          "needs targets [B, ...], got " + shapeText(t.shape));
  const int64_t n = t.elements(), rows = t.shape[0];
  const float *w = nullptr;
  RETURN_IF_ERROR(sampleWeightOf(kName, ins, rows, w));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *tp = t.f32(), *sums = ins[1].f32();
  float *dp = outs[0].f32();
  const int64_t perRow = n / rows;
  const unsigned blocks = static_cast<unsigned>(
      std::min<int64_t>((n + kThreads - 1) / kThreads, 1024));
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    overlapLossGradKernel<<<blocks, kThreads, 0, state->compute>>>(
        loss, tp, sums, w, n, perRow, dp);
    RETURN_IF_LAUNCH_FAILED("overlapLossGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// sample_overlap_loss(_grad): Dice and Tversky with an axis, one ratio per
// sample and position left
//===----------------------------------------------------------------------===//

constexpr int kMaxGroupRank = 8;

/// OverlapGroups for the device: group g's elements are its kept
/// coordinates (g in row-major order over the kept axes, as
/// OverlapGroups::groupOf numbers them) with every reduced coordinate.
struct GroupGeometry {
  int rank = 0;
  int64_t shape[kMaxGroupRank] = {};
  bool reduced[kMaxGroupRank] = {};
  int64_t groups = 0, perGroup = 0, perSample = 0;

  /// The flat index of element `j` of group `g`.
  __device__ int64_t element(int64_t g, int64_t j) const {
    int64_t flat = 0, stride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      int64_t &from = reduced[d] ? j : g;
      flat += (from % shape[d]) * stride;
      from /= shape[d];
      stride *= shape[d];
    }
    return flat;
  }
  /// The group of flat index `i`.
  __device__ int64_t groupOf(int64_t i) const {
    int64_t group = 0, keptStride = 1;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t coordinate = i % shape[d];
      i /= shape[d];
      if (!reduced[d]) {
        group += coordinate * keptStride;
        keptStride *= shape[d];
      }
    }
    return group;
  }
};

/// One block a group: its [I, T, P] in double.
__global__ void groupSumsKernel(GroupGeometry geo, const float *p,
                                const float *t, double *sums) {
  __shared__ double part[3][kThreads];
  for (int64_t g = blockIdx.x; g < geo.groups; g += gridDim.x) {
    double tp = 0.0, ts = 0.0, ps = 0.0;
    for (int64_t j = threadIdx.x; j < geo.perGroup; j += blockDim.x) {
      const int64_t i = geo.element(g, j);
      tp += double(t[i]) * p[i];
      ts += t[i];
      ps += p[i];
    }
    part[0][threadIdx.x] = tp;
    part[1][threadIdx.x] = ts;
    part[2][threadIdx.x] = ps;
    __syncthreads();
    for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
      if (threadIdx.x < half)
        for (int k = 0; k < 3; ++k)
          part[k][threadIdx.x] += part[k][threadIdx.x + half];
      __syncthreads();
    }
    if (threadIdx.x == 0)
      for (int k = 0; k < 3; ++k)
        sums[3 * g + k] = part[k][0];
    __syncthreads();
  }
}

/// A group's sums as OverlapLossConfig takes them (weight mean 1: the
/// weights enter per group).
__device__ void groupSums(const double *sums, int64_t g, double out[5]) {
  out[0] = sums[3 * g];
  out[1] = sums[3 * g + 1];
  out[2] = sums[3 * g + 2];
  out[3] = out[4] = 1.0;
}

/// The mean over the groups of w_b times the group's loss; one block.
__global__ void sampleOverlapLossKernel(OverlapLossConfig loss,
                                        GroupGeometry geo, const double *sums,
                                        const float *w, float *out) {
  __shared__ double part[kThreads];
  double total = 0.0;
  for (int64_t g = threadIdx.x; g < geo.groups; g += blockDim.x) {
    double s[5];
    groupSums(sums, g, s);
    total += (w ? double(w[g / geo.perSample]) : 1.0) * loss.value(s);
  }
  part[threadIdx.x] = total;
  __syncthreads();
  for (unsigned half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      part[threadIdx.x] += part[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    out[0] = static_cast<float>(part[0] / double(geo.groups));
}

/// d loss / d p_i = (slope t_i + offset) of i's group, times w_b / groups.
__global__ void sampleOverlapLossGradKernel(OverlapLossConfig loss,
                                            GroupGeometry geo,
                                            const double *sums, const float *t,
                                            const float *w, int64_t n,
                                            float *dp) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t g = geo.groupOf(i);
    double s[5], slope = 0.0, offset = 0.0;
    groupSums(sums, g, s);
    loss.gradient(s, slope, offset);
    const double scale =
        (w ? double(w[g / geo.perSample]) : 1.0) / double(geo.groups);
    dp[i] = static_cast<float>((slope * t[i] + offset) * scale);
  }
}

Status sampleOverlapFactory(const char *kName, bool gradient,
                            const KernelContext &ctx, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs,
                            KernelFn &out) {
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1));
  OverlapLossConfig loss;
  RETURN_IF_ERROR(readOverlapLossConfig(kName, cfg, loss));
  const TensorRef &p = ins[0], &t = ins[1];
  REQUIRE(t.shape == p.shape, "targets " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  OverlapGroups groups;
  RETURN_IF_ERROR(
      makeOverlapGroups(kName, p.shape, cfg.getInts("axis"), groups));
  REQUIRE(p.shape.size() <= kMaxGroupRank,
          "predictions of rank " + std::to_string(p.shape.size()) +
              " (at most " + std::to_string(kMaxGroupRank) + ")");
  REQUIRE(gradient ? outs[0].shape == p.shape : outs[0].elements() == 1,
          "the output " + shapeText(outs[0].shape) +
              (gradient ? " must match the predictions" : " must be a scalar"));
  const int64_t n = p.elements();
  const float *w = nullptr;
  RETURN_IF_ERROR(sampleWeightOf(kName, ins, p.shape[0], w));
  GroupGeometry geo;
  geo.rank = static_cast<int>(p.shape.size());
  for (int d = 0; d < geo.rank; ++d) {
    geo.shape[d] = p.shape[d];
    geo.reduced[d] = groups.reduced[d];
  }
  geo.groups = groups.groups;
  geo.perSample = groups.perSample;
  geo.perGroup = n / groups.groups;
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  auto scratch = std::make_shared<DeviceBuffer>();
  RETURN_IF_ERROR(scratch->allocate(state->ordinal,
                                    size_t(3 * geo.groups) * sizeof(double)));
  double *sums = static_cast<double *>(scratch->data());
  const float *pp = p.f32(), *tp = t.f32();
  float *o = outs[0].f32();
  const unsigned sumBlocks =
      static_cast<unsigned>(std::min<int64_t>(geo.groups, 4096));
  const unsigned gradBlocks = static_cast<unsigned>(
      std::min<int64_t>((n + kThreads - 1) / kThreads, 1024));
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    (void)scratch; // kept alive with the launch site
    groupSumsKernel<<<sumBlocks, kThreads, 0, state->compute>>>(geo, pp, tp,
                                                                sums);
    RETURN_IF_LAUNCH_FAILED("groupSumsKernel");
    if (gradient)
      sampleOverlapLossGradKernel<<<gradBlocks, kThreads, 0, state->compute>>>(
          loss, geo, sums, tp, w, n, o);
    else
      sampleOverlapLossKernel<<<1, kThreads, 0, state->compute>>>(loss, geo,
                                                                  sums, w, o);
    RETURN_IF_LAUNCH_FAILED("sampleOverlapLossKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status sampleOverlapLoss(const KernelContext &ctx, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  return sampleOverlapFactory("sample_overlap_loss", false, ctx, cfg, ins, outs,
                              out);
}

Status sampleOverlapLossGrad(const KernelContext &ctx, const KernelConfig &cfg,
                             const Tensors &ins, const Tensors &outs,
                             KernelFn &out) {
  return sampleOverlapFactory("sample_overlap_loss_grad", true, ctx, cfg, ins,
                              outs, out);
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
  r.addFactory("kept_rows", Backend::cuda, keptRows);
  r.addFactory("ignore_class", Backend::cuda, ignoreClass);
  r.addFactory("overlap_sums", Backend::cuda, overlapSums);
  r.addFactory("overlap_loss", Backend::cuda, overlapLoss);
  r.addFactory("overlap_loss_grad", Backend::cuda, overlapLossGrad);
  r.addFactory("sample_overlap_loss", Backend::cuda, sampleOverlapLoss);
  r.addFactory("sample_overlap_loss_grad", Backend::cuda,
               sampleOverlapLossGrad);
}

} // namespace graph::runtime::cuda
