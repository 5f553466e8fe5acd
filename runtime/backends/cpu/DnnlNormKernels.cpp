//===- DnnlNormKernels.cpp - batch normalisation on oneDNN ----------------===//
//
// batch_norm (moving statistics), batch_norm_train (batch statistics, plus
// the moving-statistics update and 1/sqrt(var + epsilon) in own loops over
// the channels), batch_norm_grad and batch_norm_inference_grad (an own
// loop: a per-channel scale); with a row mask (a short batch's padding),
// batch_norm_train's statistics and batch_norm_grad over the kept rows in
// own loops; layer_norm and layer_norm_grad (own loops over the rows, then
// the channels). A [..., C] tensor is oneDNN's 2-D [rows, C] (format nc),
// which is what NHWC is to a channel-last op.
//
// Optional gamma and beta follow the reference: the launch's `has_gamma`
// and `has_beta` say which of inputs 3 and 4 are there (without them, 4
// inputs mean gamma only).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"

#include "runtime/backends/cpu/VectorKernels.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;
using Flags = dnnl::normalization_flags;
constexpr auto kF32 = memory::data_type::f32;

Status fail(const char *kName, const std::string &message) {
  return Status::error(std::string(kName) + ": " + message);
}

/// Where a batch norm's gamma and beta are among its inputs (-1: absent).
struct ScaleShift {
  int gamma = -1, beta = -1;
};

/// Whether a batch_norm_train or batch_norm_grad launch ends with a row
/// mask (GraphOps.td, batch_norm_train's `row_mask`).
bool hasRowMask(const KernelConfig &cfg) {
  return cfg.getInt("has_row_mask", 0) != 0;
}

Status scaleShift(const char *kName, const KernelConfig &cfg,
                  const Tensors &ins, ScaleShift &out) {
  size_t optional = ins.size() - 3 - hasRowMask(cfg);
  bool gamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool beta = cfg.getInt("has_beta", optional >= 2) != 0;
  if (static_cast<size_t>(gamma + beta) != optional)
    return fail(kName, "has_gamma and has_beta do not match its " +
                           std::to_string(ins.size()) + " inputs");
  out.gamma = gamma ? 3 : -1;
  out.beta = beta ? (gamma ? 4 : 3) : -1;
  return Status::ok();
}

/// [rows, C] of a [..., C] tensor, and one [C] vector.
struct NormShape {
  int64_t rows = 0, channels = 0;
  memory::desc data() const {
    // NHWC with every row an image of 1x1: the same bytes as [rows, C]
    // (format nc), but oneDNN 2.6 runs nc batch norm on its plain
    // reference-like loop (ncsp_bnorm: 0.5 s for [64, 32, 32, 32] on one
    // thread) and nhwc on its JIT (jit:avx2/avx512 nspc).
    return {{rows, channels, 1, 1}, kF32, memory::format_tag::nhwc};
  }
  memory::desc vector() const {
    return {{channels}, kF32, memory::format_tag::x};
  }
};

/// Checks that `x` is [..., C], that `sameAsX` have its size and
/// `perChannel` are [C].
Status normShape(const char *kName, const TensorRef &x,
                 std::vector<const TensorRef *> sameAsX,
                 std::vector<const TensorRef *> perChannel, NormShape &s) {
  if (x.shape.empty() || x.shape.back() == 0)
    return fail(kName, "needs a [..., C] input, got " + shapeText(x.shape));
  s.channels = x.shape.back();
  s.rows = x.elements() / s.channels;
  for (const TensorRef *t : sameAsX)
    if (t->elements() != x.elements())
      return fail(kName, shapeText(t->shape) + " does not match the input " +
                             shapeText(x.shape));
  for (const TensorRef *t : perChannel)
    if (t->elements() != s.channels)
      return fail(kName, "statistic " + shapeText(t->shape) + " must be [" +
                             std::to_string(s.channels) + "], one per channel");
  return Status::ok();
}

std::vector<const TensorRef *> refs(const Tensors &ts, size_t from, size_t to) {
  std::vector<const TensorRef *> r;
  for (size_t i = from; i < to && i < ts.size(); ++i)
    r.push_back(&ts[i]);
  return r;
}

dnnl::batch_normalization_forward::desc forwardDesc(dnnl::prop_kind prop,
                                                    const NormShape &s,
                                                    double epsilon,
                                                    Flags flags) {
  return {prop, s.data(), static_cast<float>(epsilon), flags};
}

Status makeBatchNorm(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "batch_norm";
  if (Status s = checkOperands(kName, ins, outs, 3, 5, 1, kCpuOperands); !s)
    return s;
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, refs(ins, 1, 5), shape);
      !s)
    return s;
  ScaleShift params;
  if (Status s = scaleShift(kName, cfg, ins, params); !s)
    return s;
  Flags flags = Flags::use_global_stats;
  if (params.gamma >= 0)
    flags |= Flags::use_scale;
  if (params.beta >= 0)
    flags |= Flags::use_shift;
  ReplicaThreadsScope threads(ctx);
  try {
    dnnl::batch_normalization_forward::primitive_desc pd(
        forwardDesc(dnnl::prop_kind::forward_inference, shape,
                    cfg.getFloat("epsilon", 1e-3), flags),
        userScratchpad(), dnnlEngine());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, bind(shape.data(), ins[0].data)},
        {DNNL_ARG_MEAN, bind(shape.vector(), ins[1].data)},
        {DNNL_ARG_VARIANCE, bind(shape.vector(), ins[2].data)},
        {DNNL_ARG_DST, bind(shape.data(), outs[0].data)}};
    if (params.gamma >= 0)
      args.emplace(DNNL_ARG_SCALE,
                   bind(shape.vector(), ins[params.gamma].data));
    if (params.beta >= 0)
      args.emplace(DNNL_ARG_SHIFT, bind(shape.vector(), ins[params.beta].data));
    DnnlLaunch launch(kName);
    launch.add(dnnl::batch_normalization_forward(pd), pd, std::move(args));
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

/// A batch norm's row mask read at run time: which of the [rows, C] rows
/// (positions: each example spans `perExample` of them) count in the
/// statistics, and the moving statistics' weight, the mask's mean
/// (GraphOps.td, batch_norm_train).
struct RowMask {
  const float *mask = nullptr;
  int64_t examples = 0, perExample = 1;
  /// Set by read():
  bool all = true;
  int64_t positions = 0;
  double weight = 1.0;

  RowMask(const float *mask, int64_t examples, int64_t rows)
      : mask(mask), examples(examples),
        perExample(examples ? std::max<int64_t>(1, rows / examples) : 1) {}
  void read() {
    double sum = 0.0;
    int64_t kept = 0;
    for (int64_t e = 0; e < examples; ++e) {
      sum += mask[e];
      kept += mask[e] != 0.0f;
    }
    all = kept == examples;
    positions = kept * perExample;
    weight = examples ? sum / static_cast<double>(examples) : 1.0;
  }
  bool keeps(int64_t row) const { return mask[row / perExample] != 0.0f; }
};

/// The batch statistics of [rows, C] in double, two passes (the mean, then
/// the squared deviations), as the reference computes them: oneDNN's
/// training-mode statistics are float sums, off by up to ~4e-4 of the
/// variance on a conv activation at batch 256, which moves gradients
/// wherever a max pool's two largest values are that close. Rows are cut
/// into fixed blocks whose partial sums are added in block order, so the
/// statistics do not depend on the thread count.
class BatchStatistics {
public:
  BatchStatistics(int64_t rows, int64_t channels)
      : rows_(rows), channels_(channels),
        blocks_(std::max<int64_t>(1, (rows + kBlockRows - 1) / kBlockRows)),
        partial_(static_cast<size_t>(blocks_ * channels)),
        mean_(static_cast<size_t>(channels)),
        variance_(static_cast<size_t>(channels)) {}

  /// Computes the statistics of `x`; writes the mean to `meanOut`. With
  /// `kept` (a RowMask read this step), over the rows it keeps only; 0
  /// when it keeps none.
  void run(const float *x, float *meanOut, const RowMask *kept = nullptr) {
    kept_ = kept && !kept->all ? kept : nullptr;
    int64_t n = kept_ ? kept_->positions : rows_;
    double scale = n ? 1.0 / static_cast<double>(n) : 0.0;
    sumBlocks(x, /*squares=*/false);
    reduce(mean_, scale);
    sumBlocks(x, /*squares=*/true);
    reduce(variance_, scale);
    for (int64_t c = 0; c < channels_; ++c)
      meanOut[c] = static_cast<float>(mean_[c]);
  }
  /// The positions the statistics were over.
  int64_t count() const { return kept_ ? kept_->positions : rows_; }
  /// The batch mean and the biased batch variance, per channel.
  const std::vector<double> &mean() const { return mean_; }
  const std::vector<double> &variance() const { return variance_; }

private:
  static constexpr int64_t kBlockRows = 64;

  void sumBlocks(const float *x, bool squares) {
    int64_t blocks = blocks_, channels = channels_, rows = rows_;
    const double *mean = mean_.data();
    double *partial = partial_.data();
    const RowMask *kept = kept_;
#pragma omp parallel for schedule(static) if (rows * channels >=               \
                                              vec::kParallelElements)
    for (int64_t b = 0; b < blocks; ++b) {
      double *sum = partial + b * channels;
      std::fill(sum, sum + channels, 0.0);
      int64_t end = std::min(rows, (b + 1) * kBlockRows);
      for (int64_t r = b * kBlockRows; r < end; ++r) {
        if (kept && !kept->keeps(r))
          continue;
        const float *row = x + r * channels;
        if (squares) {
#pragma omp simd
          for (int64_t c = 0; c < channels; ++c) {
            double d = row[c] - mean[c];
            sum[c] += d * d;
          }
        } else {
#pragma omp simd
          for (int64_t c = 0; c < channels; ++c)
            sum[c] += row[c];
        }
      }
    }
  }

  void reduce(std::vector<double> &out, double scale) {
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t b = 0; b < blocks_; ++b)
      for (int64_t c = 0; c < channels_; ++c)
        out[c] += partial_[b * channels_ + c];
    for (double &v : out)
      v *= scale;
  }

  int64_t rows_, channels_, blocks_;
  std::vector<double> partial_, mean_, variance_;
  const RowMask *kept_ = nullptr;
};

/// batch_norm_train's output on the rows `kept` leaves out: beta (0
/// without it), the normalised value 0. Normalised with statistics they
/// are not in, they could be anything (1/sqrt(epsilon) times their offset
/// when no row is kept), and through a deep stack of batch norms they grew
/// past float's range, their zero gradient times an infinite activation
/// then a NaN weight gradient.
void zeroLeftOutRows(const RowMask &kept, const float *beta, float *y,
                     int64_t rows, int64_t channels) {
  for (int64_t r = 0; r < rows; ++r) {
    if (kept.keeps(r))
      continue;
    float *yr = y + r * channels;
    if (beta)
      std::copy(beta, beta + channels, yr);
    else
      std::fill(yr, yr + channels, 0.0f);
  }
}

/// outs: y, batch_mean, batch_inv_std, new_moving_mean, new_moving_variance
/// (the last two may alias the moving inputs: an in-place update). The
/// statistics are BatchStatistics'; oneDNN normalises with them
/// (use_global_stats).
Status makeBatchNormTrain(const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "batch_norm_train";
  if (Status s = checkOperands(kName, ins, outs, 3, 6, 5, kCpuOperands); !s)
    return s;
  bool masked = hasRowMask(cfg);
  if (masked && (ins.size() < 4 || ins[0].shape.empty() ||
                 ins.back().elements() != ins[0].shape[0]))
    return fail(kName, "row_mask must be [N], one per row of the input");
  std::vector<const TensorRef *> perChannel = refs(ins, 1, ins.size() - masked);
  for (const TensorRef *t : refs(outs, 1, 5))
    perChannel.push_back(t);
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, perChannel, shape); !s)
    return s;
  ScaleShift params;
  if (Status s = scaleShift(kName, cfg, ins, params); !s)
    return s;
  Flags flags = Flags::use_global_stats;
  if (params.gamma >= 0)
    flags |= Flags::use_scale;
  if (params.beta >= 0)
    flags |= Flags::use_shift;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  double momentum = cfg.getFloat("momentum", 0.99);
  ReplicaThreadsScope threads(ctx);
  try {
    dnnl::batch_normalization_forward::primitive_desc pd(
        forwardDesc(dnnl::prop_kind::forward_inference, shape, epsilon, flags),
        userScratchpad(), dnnlEngine());
    // The variance oneDNN normalises with; the op returns 1/sqrt(var +
    // epsilon) instead, so it lives in scratch.
    memory variance(shape.vector(), dnnlEngine());
    std::unordered_map<int, memory> args = {
        {DNNL_ARG_SRC, bind(shape.data(), ins[0].data)},
        {DNNL_ARG_MEAN, bind(shape.vector(), outs[1].data)},
        {DNNL_ARG_VARIANCE, variance},
        {DNNL_ARG_DST, bind(shape.data(), outs[0].data)}};
    if (params.gamma >= 0)
      args.emplace(DNNL_ARG_SCALE,
                   bind(shape.vector(), ins[params.gamma].data));
    if (params.beta >= 0)
      args.emplace(DNNL_ARG_SHIFT, bind(shape.vector(), ins[params.beta].data));
    auto stats = std::make_shared<BatchStatistics>(shape.rows, shape.channels);
    std::shared_ptr<RowMask> mask;
    if (masked)
      mask = std::make_shared<RowMask>(ins.back().f32(), ins[0].shape[0],
                                       shape.rows);
    const float *x = ins[0].f32();
    float *var = static_cast<float *>(variance.get_data_handle());
    float *mean = outs[1].f32();
    const float *movingMean = ins[1].f32(), *movingVar = ins[2].f32();
    float *invStd = outs[2].f32(), *newMean = outs[3].f32(),
          *newVar = outs[4].f32();
    int64_t channels = shape.channels;
    bool unbiased = cfg.getInt("unbiased_moving_variance", 0) != 0;
    DnnlLaunch launch(kName);
    // A short batch's padding rows (the row mask's zeros) are left out of
    // the statistics; oneDNN normalises every row with them.
    launch.addLoop([=] {
      if (mask)
        mask->read();
      stats->run(x, mean, mask.get());
      for (int64_t c = 0; c < channels; ++c)
        var[c] = static_cast<float>(stats->variance()[c]);
    });
    launch.add(dnnl::batch_normalization_forward(pd), pd, std::move(args));
    const float *beta = params.beta >= 0 ? ins[params.beta].f32() : nullptr;
    float *y = outs[0].f32();
    int64_t rows = shape.rows;
    launch.addLoop([=] {
      if (mask && !mask->all)
        zeroLeftOutRows(*mask, beta, y, rows, channels);
      const std::vector<double> &mu = stats->mean(), &v = stats->variance();
      // Keras 3's moving variance takes the biased batch variance; tf.keras
      // 2's fused kernel the unbiased one (GraphOps.td, batch_norm).
      int64_t n = stats->count();
      double bessel = unbiased && n > 1 ? double(n) / double(n - 1) : 1.0;
      double w = mask ? mask->weight : 1.0;
      for (int64_t c = 0; c < channels; ++c) {
        invStd[c] = static_cast<float>(1.0 / std::sqrt(v[c] + epsilon));
        // Read both moving statistics before writing: they may alias.
        double m = movingMean[c], mv = movingVar[c];
        newMean[c] =
            static_cast<float>(m * momentum + w * mu[c] * (1 - momentum));
        newVar[c] = static_cast<float>(mv * momentum +
                                       w * v[c] * bessel * (1 - momentum));
      }
    });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

/// batch_norm_grad over the rows `kept` keeps (GraphOps.td): the sums and
/// their count over those, dx 0 in the others. Own loops in double: it
/// runs on an epoch's short last batch only.
void maskedBatchNormGrad(const RowMask &kept, const float *dy, const float *x,
                         const float *mean, const float *invStd,
                         const float *gamma, float *dx, float *dgamma,
                         float *dbeta, int64_t rows, int64_t channels) {
  double n = static_cast<double>(kept.positions);
  std::vector<double> sumDy(channels), sumDyXhat(channels);
  bool parallel = rows * channels >= vec::kParallelElements;
#pragma omp parallel for schedule(static) if (parallel && channels >= 16)
  for (int64_t k = 0; k < channels; ++k) {
    double sDy = 0.0, sDyXhat = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      if (!kept.keeps(r))
        continue;
      int64_t i = r * channels + k;
      sDy += dy[i];
      sDyXhat += double(dy[i]) * (double(x[i]) - mean[k]) * invStd[k];
    }
    sumDy[k] = sDy;
    sumDyXhat[k] = sDyXhat;
    dgamma[k] = static_cast<float>(sDyXhat);
    dbeta[k] = static_cast<float>(sDy);
  }
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < rows; ++r) {
    float *dxr = dx + r * channels;
    if (!kept.keeps(r)) {
      std::fill(dxr, dxr + channels, 0.0f);
      continue;
    }
    for (int64_t k = 0; k < channels; ++k) {
      int64_t i = r * channels + k;
      double xhat = (double(x[i]) - mean[k]) * invStd[k];
      double g = gamma ? gamma[k] : 1.0;
      dxr[k] = static_cast<float>(g * invStd[k] / n *
                                  (n * dy[i] - sumDy[k] - xhat * sumDyXhat[k]));
    }
  }
}

/// ins: dy, x, batch_mean, batch_inv_std, [gamma], [row_mask]; outs: dx,
/// gamma_grad, beta_grad (both always written: sum dy * xhat and sum dy).
Status makeBatchNormGrad(const KernelContext &ctx, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "batch_norm_grad";
  if (Status s = checkOperands(kName, ins, outs, 4, 6, 3, kCpuOperands); !s)
    return s;
  bool masked = hasRowMask(cfg);
  bool hasGamma = cfg.getInt("has_gamma", ins.size() - masked == 5) != 0;
  if (ins.size() != 4 + size_t(hasGamma) + size_t(masked))
    return fail(kName, "has_gamma and has_row_mask do not match its " +
                           std::to_string(ins.size()) + " inputs");
  if (masked &&
      (ins[1].shape.empty() || ins.back().elements() != ins[1].shape[0]))
    return fail(kName, "row_mask must be [N], one per row of the input");
  std::vector<const TensorRef *> perChannel =
      refs(ins, 2, 4 + size_t(hasGamma));
  perChannel.push_back(&outs[1]);
  perChannel.push_back(&outs[2]);
  NormShape shape;
  if (Status s =
          normShape(kName, ins[1], {&ins[0], &outs[0]}, perChannel, shape);
      !s)
    return s;
  Flags flags = Flags::use_scale | Flags::use_shift;
  ReplicaThreadsScope threads(ctx);
  try {
    // The op carries 1/sqrt(var + epsilon), not epsilon: oneDNN gets
    // var' = 1/inv_std^2 with epsilon 0, the same normaliser.
    dnnl::batch_normalization_forward::primitive_desc hint(
        forwardDesc(dnnl::prop_kind::forward_training, shape, 0.0, flags),
        dnnlEngine());
    dnnl::batch_normalization_backward::primitive_desc pd(
        {dnnl::prop_kind::backward, shape.data(), shape.data(), 0.0f, flags},
        userScratchpad(), dnnlEngine(), hint);
    memory variance(shape.vector(), dnnlEngine());
    memory scale = hasGamma ? bind(shape.vector(), ins[4].data)
                            : memory(shape.vector(), dnnlEngine());
    if (!hasGamma) {
      float *ones = static_cast<float *>(scale.get_data_handle());
      std::fill(ones, ones + shape.channels, 1.0f);
    }
    // Read by oneDNN's backward pass under use_shift although dx does not
    // depend on it.
    memory shift(shape.vector(), dnnlEngine());
    float *zeros = static_cast<float *>(shift.get_data_handle());
    std::fill(zeros, zeros + shape.channels, 0.0f);
    DnnlLaunch launch(kName);
    float *var = static_cast<float *>(variance.get_data_handle());
    const float *invStd = ins[3].f32();
    int64_t channels = shape.channels;
    launch.addLoop([=] {
      for (int64_t c = 0; c < channels; ++c)
        var[c] = static_cast<float>(1.0 / (double(invStd[c]) * invStd[c]));
    });
    launch.add(dnnl::batch_normalization_backward(pd), pd,
               {{DNNL_ARG_DIFF_DST, bind(shape.data(), ins[0].data)},
                {DNNL_ARG_SRC, bind(shape.data(), ins[1].data)},
                {DNNL_ARG_MEAN, bind(shape.vector(), ins[2].data)},
                {DNNL_ARG_VARIANCE, variance},
                {DNNL_ARG_SCALE, scale},
                {DNNL_ARG_SHIFT, shift},
                {DNNL_ARG_DIFF_SRC, bind(shape.data(), outs[0].data)},
                {DNNL_ARG_DIFF_SCALE, bind(shape.vector(), outs[1].data)},
                {DNNL_ARG_DIFF_SHIFT, bind(shape.vector(), outs[2].data)}});
    if (masked) {
      // A short batch (a row the mask leaves out): the gradient again, over
      // the kept rows. Full batches keep oneDNN's.
      auto mask = std::make_shared<RowMask>(ins.back().f32(), ins[1].shape[0],
                                            shape.rows);
      const float *dy = ins[0].f32(), *x = ins[1].f32(), *mean = ins[2].f32();
      const float *gamma = hasGamma ? ins[4].f32() : nullptr;
      float *dx = outs[0].f32(), *dgamma = outs[1].f32(),
            *dbeta = outs[2].f32();
      int64_t rows = shape.rows;
      launch.addLoop([=] {
        mask->read();
        if (!mask->all)
          maskedBatchNormGrad(*mask, dy, x, mean, invStd, gamma, dx, dgamma,
                              dbeta, rows, channels);
      });
    }
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName,
                std::string("oneDNN refused the batch norm: ") + e.what());
  }
  return Status::ok();
}

/// y = x * scale per channel, over `rows` rows of `channels`: rows in
/// parallel when there are enough elements.
void scaleRows(const float *x, const float *scale, float *y, int64_t rows,
               int64_t channels) {
  bool parallel = rows * channels >= vec::kParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t r = 0; r < rows; ++r) {
    const float *xr = x + r * channels;
    float *yr = y + r * channels;
#pragma omp simd
    for (int64_t c = 0; c < channels; ++c)
      yr[c] = xr[c] * scale[c];
  }
}

/// ins: dy, moving_variance, [gamma]; outs: dx. Inference-mode batch_norm's
/// input gradient, dx = dy * gamma / sqrt(moving_variance + epsilon): a
/// per-channel scale, so an own loop rather than a oneDNN primitive.
Status makeBatchNormInferenceGrad(const KernelContext &,
                                  const KernelConfig &cfg, const Tensors &ins,
                                  const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "batch_norm_inference_grad";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, refs(ins, 1, 3), shape);
      !s)
    return s;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  int64_t rows = shape.rows, channels = shape.channels;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    // The statistics are variables: the scale is computed every step, in
    // double like the reference, then rounded once.
    float *scale = vec::threadScratch<float>(channels);
    const float *var = ins[1].f32();
    const float *gamma = ins.size() == 3 ? ins[2].f32() : nullptr;
    for (int64_t c = 0; c < channels; ++c)
      scale[c] = static_cast<float>((gamma ? double(gamma[c]) : 1.0) /
                                    std::sqrt(double(var[c]) + epsilon));
    scaleRows(ins[0].f32(), scale, outs[0].f32(), rows, channels);
    return Status::ok();
  };
  return Status::ok();
}

/// mean and 1/sqrt(var + eps) of one row of `c` values, in double as the
/// reference.
inline void layerNormRow(const float *x, int64_t c, double epsilon,
                         double &mean, double &invStd) {
  double sum = 0.0;
  for (int64_t k = 0; k < c; ++k)
    sum += x[k];
  mean = sum / c;
  double sq = 0.0;
  for (int64_t k = 0; k < c; ++k) {
    double d = x[k] - mean;
    sq += d * d;
  }
  invStd = 1.0 / std::sqrt(sq / c + epsilon);
}

/// ins: x, scale; outs: y = x * scale per channel (Keras' LayerScale).
Status makeChannelScale(const KernelContext &, const KernelConfig &,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "channel_scale";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kCpuOperands); !s)
    return s;
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, {&ins[1]}, shape); !s)
    return s;
  int64_t rows = shape.rows, channels = shape.channels;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    scaleRows(ins[0].f32(), ins[1].f32(), outs[0].f32(), rows, channels);
    return Status::ok();
  };
  return Status::ok();
}

/// ins: x, [gamma], [beta]; outs: y. Layer normalisation over the last
/// axis: own loops, one row (C values) at a time, rows in parallel.
Status makeLayerNorm(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "layer_norm";
  if (Status s = checkOperands(kName, ins, outs, 1, 3, 1, kCpuOperands); !s)
    return s;
  NormShape shape;
  if (Status s = normShape(kName, ins[0], {&outs[0]}, refs(ins, 1, 3), shape);
      !s)
    return s;
  size_t optional = ins.size() - 1;
  bool hasGamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool hasBeta = cfg.getInt("has_beta", optional >= 2) != 0;
  if (static_cast<size_t>(hasGamma + hasBeta) != optional)
    return fail(kName, "has_gamma and has_beta do not match its " +
                           std::to_string(ins.size()) + " inputs");
  int gammaAt = hasGamma ? 1 : -1;
  int betaAt = hasBeta ? (hasGamma ? 2 : 1) : -1;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  int64_t rows = shape.rows, channels = shape.channels;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *x = ins[0].f32();
    const float *gamma = gammaAt >= 0 ? ins[gammaAt].f32() : nullptr;
    const float *beta = betaAt >= 0 ? ins[betaAt].f32() : nullptr;
    float *y = outs[0].f32();
    bool parallel = rows * channels >= vec::kParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * channels;
      float *yr = y + r * channels;
      double mean, invStd;
      layerNormRow(xr, channels, epsilon, mean, invStd);
      for (int64_t k = 0; k < channels; ++k) {
        double v = (xr[k] - mean) * invStd;
        if (gamma)
          v *= gamma[k];
        if (beta)
          v += beta[k];
        yr[k] = static_cast<float>(v);
      }
    }
    return Status::ok();
  };
  return Status::ok();
}

/// ins: dy, x, [gamma]; outs: dx, dgamma, dbeta (see the reference). The
/// row pass gives dx; dgamma and dbeta are column sums over the rows, in
/// a second pass over the channels, so every run gives the same bits.
Status makeLayerNormGrad(const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "layer_norm_grad";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 3, kCpuOperands); !s)
    return s;
  NormShape shape;
  std::vector<const TensorRef *> perChannel = refs(ins, 2, 3);
  perChannel.push_back(&outs[1]);
  perChannel.push_back(&outs[2]);
  if (Status s =
          normShape(kName, ins[1], {&ins[0], &outs[0]}, perChannel, shape);
      !s)
    return s;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  int64_t rows = shape.rows, channels = shape.channels;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *dy = ins[0].f32(), *x = ins[1].f32();
    const float *gamma = ins.size() == 3 ? ins[2].f32() : nullptr;
    float *dx = outs[0].f32(), *dgamma = outs[1].f32(), *dbeta = outs[2].f32();
    // Each row's statistics, kept for the column pass.
    double *means = vec::threadScratch<double, 0>(rows);
    double *invStds = vec::threadScratch<double, 1>(rows);
    bool parallel = rows * channels >= vec::kParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
    for (int64_t r = 0; r < rows; ++r) {
      const float *xr = x + r * channels, *dyr = dy + r * channels;
      float *dxr = dx + r * channels;
      double mean, invStd;
      layerNormRow(xr, channels, epsilon, mean, invStd);
      means[r] = mean;
      invStds[r] = invStd;
      double sumG = 0.0, sumGXhat = 0.0;
      for (int64_t k = 0; k < channels; ++k) {
        double g = gamma ? double(dyr[k]) * gamma[k] : double(dyr[k]);
        sumG += g;
        sumGXhat += g * (xr[k] - mean) * invStd;
      }
      double n = static_cast<double>(channels);
      for (int64_t k = 0; k < channels; ++k) {
        double g = gamma ? double(dyr[k]) * gamma[k] : double(dyr[k]);
        double xhat = (xr[k] - mean) * invStd;
        dxr[k] =
            static_cast<float>(invStd / n * (n * g - sumG - xhat * sumGXhat));
      }
    }
    bool columnsParallel =
        rows * channels >= vec::kParallelElements && channels >= 16;
#pragma omp parallel for schedule(static) if (columnsParallel)
    for (int64_t k = 0; k < channels; ++k) {
      double sumDy = 0.0, sumDyXhat = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        int64_t i = r * channels + k;
        sumDy += dy[i];
        sumDyXhat += double(dy[i]) * (x[i] - means[r]) * invStds[r];
      }
      dgamma[k] = static_cast<float>(sumDyXhat);
      dbeta[k] = static_cast<float>(sumDy);
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerDnnlNormKernels(KernelRegistry &registry) {
  registry.addFactory("batch_norm", Backend::cpu, makeBatchNorm);
  registry.addFactory("batch_norm_train", Backend::cpu, makeBatchNormTrain);
  registry.addFactory("batch_norm_grad", Backend::cpu, makeBatchNormGrad);
  registry.addFactory("batch_norm_inference_grad", Backend::cpu,
                      makeBatchNormInferenceGrad);
  registry.addFactory("channel_scale", Backend::cpu, makeChannelScale);
  registry.addFactory("layer_norm", Backend::cpu, makeLayerNorm);
  registry.addFactory("layer_norm_grad", Backend::cpu, makeLayerNormGrad);
}

} // namespace graph::runtime::cpu
