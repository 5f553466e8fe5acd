//===- PoolNormKernels.cu - pooling, batch and layer normalisation --------===//
//
// Own NHWC kernels rather than cuDNN's, because the reference's semantics
// are not cuDNN's:
//   - pooling pads the TensorFlow way (an odd `same` total puts the extra
//     row after), where cuDNN pads symmetrically;
//   - max_pool2d_grad routes each gradient to the window's FIRST maximum in
//     row-major window order; cuDNN does not promise a tie rule;
//   - batch_norm_train updates the moving variance with the biased batch
//     variance, or the unbiased one under `unbiased_moving_variance`, and
//     takes gamma and beta as optional operands (`has_gamma`, `has_beta`).
// The gradients are gathers (one thread per input element visits the
// windows that cover it), or for max_pool2d_argmax_grad over windows that
// tile the input a scatter that writes each element once
// (TilingPoolGrad.h), so nothing is accumulated with atomics and every run
// gives the same bits. Batch statistics are column reductions in
// double.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/ColumnReduction.cuh"
#include "runtime/backends/cuda/kernels/CudaKernels.h"
#include "runtime/backends/cuda/kernels/TilingPoolGrad.h"

#include <cmath>
#include <cstdint>

namespace graph::runtime::cuda {

namespace {

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

struct Pool {
  int64_t n = 0, c = 0, inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, top = 0, left = 0;

  __device__ int64_t inAt(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return ((b * inH + y) * inW + x) * c + ch;
  }
  __device__ int64_t outAt(int64_t b, int64_t y, int64_t x, int64_t ch) const {
    return ((b * outH + y) * outW + x) * c + ch;
  }
  /// The position of flat NHWC index `i` in the output (outPosition) or
  /// the input (inPosition): the inverses of outAt and inAt.
  __device__ void outPosition(int64_t i, int64_t &b, int64_t &y, int64_t &x,
                              int64_t &ch) const {
    position(i, outH, outW, b, y, x, ch);
  }
  __device__ void inPosition(int64_t i, int64_t &b, int64_t &y, int64_t &x,
                             int64_t &ch) const {
    position(i, inH, inW, b, y, x, ch);
  }
  /// Input (y, x)'s position in window (oy, ox), row * kw + column: what
  /// fused_conv2d_pool's argmax holds (runtime/core/WindowGeometry.h).
  __device__ int32_t windowPosition(int64_t oy, int64_t ox, int64_t y,
                                    int64_t x) const {
    return static_cast<int32_t>((y - (oy * sh - top)) * kw + x -
                                (ox * sw - left));
  }
  /// Window (oy, ox)'s in-range input rows [y0, y1) and columns [x0, x1).
  __device__ void window(int64_t oy, int64_t ox, int64_t &y0, int64_t &y1,
                         int64_t &x0, int64_t &x1) const {
    int64_t ys = oy * sh - top, xs = ox * sw - left;
    y0 = ys < 0 ? 0 : ys;
    y1 = ys + kh < inH ? ys + kh : inH;
    x0 = xs < 0 ? 0 : xs;
    x1 = xs + kw < inW ? xs + kw : inW;
  }
  /// The output rows (or columns) whose windows cover input row `i`:
  /// [first, last], empty when first > last.
  /// (Rows, paddings, windows and strides of an image fit 32 bits: its
  /// divisions are 32-bit ones, several times cheaper than 64-bit.)
  __device__ static void covering(int64_t i, int64_t pad, int64_t window,
                                  int64_t stride, int64_t outs, int64_t &first,
                                  int64_t &last) {
    int64_t lowest = i + pad - window + 1; // o * stride >= lowest
    auto s = static_cast<uint32_t>(stride);
    first = lowest <= 0 ? 0 : (static_cast<uint32_t>(lowest) + s - 1) / s;
    last = static_cast<uint32_t>(i + pad) / s;
    if (last > outs - 1)
      last = outs - 1;
  }

private:
  /// The NHWC decomposition of `i`; in 32-bit arithmetic where the index
  /// fits (seen on an H100: the 64-bit divisions made the seed CNN's first
  /// pool gradient take 130 us).
  __device__ void position(int64_t i, int64_t h, int64_t w, int64_t &b,
                           int64_t &y, int64_t &x, int64_t &ch) const {
    if (i <= INT32_MAX && c <= INT32_MAX && w <= INT32_MAX && h <= INT32_MAX) {
      auto rest = static_cast<uint32_t>(i);
      auto uc = static_cast<uint32_t>(c), uw = static_cast<uint32_t>(w),
           uh = static_cast<uint32_t>(h);
      ch = rest % uc;
      rest /= uc;
      x = rest % uw;
      rest /= uw;
      y = rest % uh;
      b = rest / uh;
      return;
    }
    ch = i % c;
    int64_t rest = i / c;
    x = rest % w;
    rest /= w;
    y = rest % h;
    b = rest / h;
  }
};

/// The flat input index of window (b, oy, ox, ch)'s first maximum, as the
/// reference scans it; -1 for a window without in-range positions.
__device__ int64_t firstMaximum(const float *x, const Pool &p, int64_t b,
                                int64_t oy, int64_t ox, int64_t ch) {
  int64_t y0, y1, x0, x1;
  p.window(oy, ox, y0, y1, x0, x1);
  int64_t at = -1;
  float best = 0.0f;
  for (int64_t y = y0; y < y1; ++y)
    for (int64_t xx = x0; xx < x1; ++xx) {
      int64_t i = p.inAt(b, y, xx, ch);
      if (at < 0 || x[i] > best) {
        best = x[i];
        at = i;
      }
    }
  return at;
}

__global__ void maxPoolKernel(const float *__restrict__ x,
                              float *__restrict__ y, Pool p) {
  int64_t total = p.n * p.outH * p.outW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, oy, ox, ch;
    p.outPosition(i, b, oy, ox, ch);
    int64_t y0, y1, x0, x1;
    p.window(oy, ox, y0, y1, x0, x1);
    // std::max(best, v) from -infinity, as the reference.
    float best = -INFINITY;
    for (int64_t yy = y0; yy < y1; ++yy)
      for (int64_t xx = x0; xx < x1; ++xx) {
        float v = x[p.inAt(b, yy, xx, ch)];
        best = best < v ? v : best;
      }
    y[i] = best;
  }
}

/// With `reluGrad`, also the gradient of the relu that produced x: zero
/// where x <= 0 (graph-fuse's max_pool2d_grad {relu_grad}).
__global__ void maxPoolGradKernel(const float *__restrict__ x,
                                  const float *__restrict__ dy,
                                  float *__restrict__ dx, Pool p,
                                  bool reluGrad) {
  int64_t total = p.n * p.inH * p.inW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, iy, ix, ch;
    p.inPosition(i, b, iy, ix, ch);
    int64_t oy0, oy1, ox0, ox1;
    Pool::covering(iy, p.top, p.kh, p.sh, p.outH, oy0, oy1);
    Pool::covering(ix, p.left, p.kw, p.sw, p.outW, ox0, ox1);
    float sum = 0.0f;
    for (int64_t oy = oy0; oy <= oy1; ++oy)
      for (int64_t ox = ox0; ox <= ox1; ++ox)
        if (firstMaximum(x, p, b, oy, ox, ch) == i)
          sum += dy[p.outAt(b, oy, ox, ch)];
    dx[i] = reluGrad && !(x[i] > 0.0f) ? 0.0f : sum;
  }
}

/// max_pool2d that also records each window's argmax (WindowGeometry.h:
/// kh * window_w + kw of the first maximum in row-major order), for
/// fused_conv2d_pool.
__global__ void maxPoolArgmaxKernel(const float *__restrict__ x,
                                    float *__restrict__ y,
                                    int32_t *__restrict__ argmax, Pool p) {
  int64_t total = p.n * p.outH * p.outW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, oy, ox, ch;
    p.outPosition(i, b, oy, ox, ch);
    int64_t y0, y1, x0, x1;
    p.window(oy, ox, y0, y1, x0, x1);
    float best = 0.0f;
    int32_t at = -1;
    for (int64_t yy = y0; yy < y1; ++yy)
      for (int64_t xx = x0; xx < x1; ++xx) {
        float v = x[p.inAt(b, yy, xx, ch)];
        if (at < 0 || v > best) {
          best = v;
          at = p.windowPosition(oy, ox, yy, xx);
        }
      }
    y[i] = best;
    argmax[i] = at;
  }
}

/// max_pool2d_argmax_grad: input position i gathers dy of the windows that
/// cover it and whose argmax names it (with `reluGrad`, where y > 0).
__global__ void maxPoolArgmaxGradKernel(const int32_t *__restrict__ argmax,
                                        const float *__restrict__ y,
                                        const float *__restrict__ dy,
                                        float *__restrict__ dx, Pool p,
                                        bool reluGrad) {
  int64_t total = p.n * p.inH * p.inW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, iy, ix, ch;
    p.inPosition(i, b, iy, ix, ch);
    int64_t oy0, oy1, ox0, ox1;
    Pool::covering(iy, p.top, p.kh, p.sh, p.outH, oy0, oy1);
    Pool::covering(ix, p.left, p.kw, p.sw, p.outW, ox0, ox1);
    float sum = 0.0f;
    for (int64_t oy = oy0; oy <= oy1; ++oy)
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        int64_t o = p.outAt(b, oy, ox, ch);
        if (argmax[o] == p.windowPosition(oy, ox, iy, ix) &&
            (!reluGrad || y[o] > 0.0f))
          sum += dy[o];
      }
    dx[i] = sum;
  }
}

/// max_pool2d_argmax_grad over windows that tile the input: a pooled
/// output's thread writes its window (TilingPoolGrad.h).
__global__ void tilingArgmaxGradKernel(TilingPool p,
                                       const int32_t *__restrict__ argmax,
                                       const float *__restrict__ y,
                                       const float *__restrict__ dy,
                                       float *__restrict__ dx, bool reluGrad,
                                       int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x)
    tilingArgmaxGradAt(p, argmax, y, dy, reluGrad, i, dx);
}

__global__ void avgPoolKernel(const float *__restrict__ x,
                              float *__restrict__ y, Pool p) {
  int64_t total = p.n * p.outH * p.outW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, oy, ox, ch;
    p.outPosition(i, b, oy, ox, ch);
    int64_t y0, y1, x0, x1;
    p.window(oy, ox, y0, y1, x0, x1);
    double sum = 0.0;
    for (int64_t yy = y0; yy < y1; ++yy)
      for (int64_t xx = x0; xx < x1; ++xx)
        sum += x[p.inAt(b, yy, xx, ch)];
    int64_t count = (y1 - y0) * (x1 - x0);
    // Keras excludes the padding from the count.
    y[i] = count > 0 ? static_cast<float>(sum / double(count)) : 0.0f;
  }
}

__global__ void avgPoolGradKernel(const float *__restrict__ dy,
                                  float *__restrict__ dx, Pool p) {
  int64_t total = p.n * p.inH * p.inW * p.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b, iy, ix, ch;
    p.inPosition(i, b, iy, ix, ch);
    int64_t oy0, oy1, ox0, ox1;
    Pool::covering(iy, p.top, p.kh, p.sh, p.outH, oy0, oy1);
    Pool::covering(ix, p.left, p.kw, p.sw, p.outW, ox0, ox1);
    double sum = 0.0;
    for (int64_t oy = oy0; oy <= oy1; ++oy)
      for (int64_t ox = ox0; ox <= ox1; ++ox) {
        int64_t y0, y1, x0, x1;
        p.window(oy, ox, y0, y1, x0, x1);
        sum +=
            double(dy[p.outAt(b, oy, ox, ch)]) / double((y1 - y0) * (x1 - x0));
      }
    dx[i] = static_cast<float>(sum);
  }
}

/// The pooling geometry of NHWC `input` pooled to `output`.
Status poolOf(const char *kName, const KernelConfig &cfg,
              const std::vector<int64_t> &input,
              const std::vector<int64_t> &output, Pool &p) {
  auto [kh, kw] = cfg.getPair("pool_size", 2);
  WindowGeometry g;
  RETURN_IF_ERROR(resolveNonEmptyWindow(kName, cfg, input, kh, kw, false, g));
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, g.c};
  REQUIRE(output == expected, "pooled tensor is " + shapeText(output) +
                                  ", expected " + shapeText(expected));
  p = {g.n,        g.c,        g.h.in,        g.w.in,
       g.h.out,    g.w.out,    g.h.window,    g.w.window,
       g.h.stride, g.w.stride, g.h.padBefore, g.w.padBefore};
  return Status::ok();
}

/// `p` as a WindowGeometry (no dilation), for the forms that take one.
WindowGeometry geometryOf(const Pool &p) {
  WindowGeometry g;
  g.n = p.n;
  g.c = p.c;
  g.h = {p.inH, p.kh, p.sh, 1, p.outH, p.top, 0};
  g.w = {p.inW, p.kw, p.sw, 1, p.outW, p.left, 0};
  return g;
}

enum class PoolKind { max, average };

/// max_pool2d and avg_pool2d. ins: x; out: y.
template <PoolKind Kind>
Status poolForward(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  const char *kName = Kind == PoolKind::max ? "max_pool2d" : "avg_pool2d";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  Pool p;
  RETURN_IF_ERROR(poolOf(kName, cfg, ins[0].shape, outs[0].shape, p));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32();
  float *y = outs[0].f32();
  int64_t total = outs[0].elements();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (Kind == PoolKind::max) {
      maxPoolKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(x, y, p);
      RETURN_IF_LAUNCH_FAILED("maxPoolKernel");
    } else {
      avgPoolKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(x, y, p);
      RETURN_IF_LAUNCH_FAILED("avgPoolKernel");
    }
    return Status::ok();
  };
  return Status::ok();
}

/// A pool gradient's optional second output, input_grad_sum: this backend's
/// bias_add_grad of dx (a deterministic column reduction), launched after
/// the gradient on the same stream. Empty for a gradient without one.
class ChannelSum {
public:
  /// For the gradient's `outs`: {dx} or {dx, sum}.
  Status make(const KernelContext &ctx, const Tensors &outs) {
    if (outs.size() < 2)
      return Status::ok();
    ins_ = {outs[0]};
    outs_ = {outs[1]};
    return KernelRegistry::global().instantiate(
        "bias_add_grad", Backend::cuda, ctx, config_, ins_, outs_, sum_);
  }
  Status operator()(const KernelContext &ctx) const {
    return sum_ ? sum_(ctx, config_, ins_, outs_) : Status::ok();
  }

private:
  KernelFn sum_;
  Tensors ins_, outs_;
  KernelConfig config_;
};

/// ins: x, y, dy (y only checked: the first maximum is found in x). outs:
/// dx and, when fused (graph-fuse's input_grad_sum), dx summed per channel:
/// this backend's bias_add_grad of dx, launched after it on the stream.
Status maxPoolGrad(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "max_pool2d_grad";
  REQUIRE(outs.size() == 1 || outs.size() == 2,
          "writes input_grad and optionally input_grad_sum, got " +
              std::to_string(outs.size()) + " outputs");
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 3, 3, outs.size()));
  Pool p;
  RETURN_IF_ERROR(poolOf(kName, cfg, ins[0].shape, ins[2].shape, p));
  REQUIRE(ins[1].shape == ins[2].shape,
          "output " + shapeText(ins[1].shape) + " and output_grad " +
              shapeText(ins[2].shape) + " differ");
  REQUIRE(outs[0].shape == ins[0].shape,
          "input_grad " + shapeText(outs[0].shape) + " is not x's shape " +
              shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32(), *dy = ins[2].f32();
  float *dx = outs[0].f32();
  int64_t total = outs[0].elements();
  bool reluGrad = cfg.getInt("relu_grad", 0) != 0;
  ChannelSum channelSum;
  RETURN_IF_ERROR(channelSum.make(ctx, outs));
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &,
            const Tensors &) {
    maxPoolGradKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(
        x, dy, dx, p, reluGrad);
    RETURN_IF_LAUNCH_FAILED("maxPoolGradKernel");
    return channelSum(ctx);
  };
  return Status::ok();
}

/// fused_conv2d_pool. ins: x, kernel (HWIO or OHWI, the config's
/// filter_layout) [, bias]; outs: y, argmax. With
/// few input channels the direct form (DirectConv.h), a pooled output per
/// thread; otherwise this backend's fused_conv2d into a buffer of the
/// launch site's, then one pooling kernel that records the argmax: the
/// convolution's output is stored then (the chunked form is the cpu
/// backend's), but the pool's gradient still reads the argmax instead of
/// searching it.
Status fusedConv2dPool(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "fused_conv2d_pool";
  REQUIRE(outs.size() == 2 && outs[1].dtype == plan::DType::i32 && outs[1].data,
          "writes the pooled output and an i32 argmax");
  RETURN_IF_ERROR(checkOperands(kName, ins, {outs[0]}, 2, 3, 1));
  WindowGeometry cg;
  ConvChannels cc;
  RETURN_IF_ERROR(
      resolveConvWindow(kName, cfg, ins[0].shape, ins[1].shape, cg, cc));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  TensorRef conv{nullptr, {cg.n, cg.h.out, cg.w.out, cc.filters}};
  Pool p;
  RETURN_IF_ERROR(
      poolOf(kName, fusedPoolConfig(cfg), conv.shape, outs[0].shape, p));
  REQUIRE(outs[1].shape == outs[0].shape, "argmax " + shapeText(outs[1].shape) +
                                              " differs from the output " +
                                              shapeText(outs[0].shape));
  // Few input channels: the direct form, whose convolution is never stored
  // (DirectConv.h).
  std::string activation = cfg.getString("activation", "none");
  const bool identity =
      activation.empty() || activation == "none" || activation == "linear";
  DirectConv direct;
  if ((activation == "relu" || identity) && directConvOf(cg, cc, direct)) {
    REQUIRE(ins.size() < 3 || ins[2].elements() == cc.filters,
            "bias " + shapeText(ins[2].shape) + " does not match " +
                std::to_string(cc.filters) + " filters");
    DirectPool pool = directPoolOf(geometryOf(p));
    const float *x = ins[0].f32(), *kernel = ins[1].f32();
    const float *bias = ins.size() > 2 ? ins[2].f32() : nullptr;
    bool relu = activation == "relu";
    float *y = outs[0].f32();
    int32_t *argmax = outs[1].i32();
    out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
              const Tensors &) {
      RETURN_IF_CUDA_ERROR(launchFusedConvPoolDirect(
          direct, pool, x, kernel, bias, relu, y, argmax, state->compute));
      return Status::ok();
    };
    return Status::ok();
  }
  auto buffer = std::make_shared<DeviceBuffer>();
  RETURN_IF_ERROR(buffer->allocate(
      state->ordinal, static_cast<size_t>(conv.elements()) * sizeof(float)));
  conv.data = buffer->data();
  KernelFn convolve;
  Tensors convOuts = {conv};
  RETURN_IF_ERROR(KernelRegistry::global().instantiate(
      "fused_conv2d", Backend::cuda, ctx, cfg, ins, convOuts, convolve));
  const float *x = conv.f32();
  float *y = outs[0].f32();
  int32_t *argmax = outs[1].i32();
  int64_t total = outs[0].elements();
  out = [=](const KernelContext &ctx, const KernelConfig &cfg,
            const Tensors &ins, const Tensors &) {
    RETURN_IF_ERROR(convolve(ctx, cfg, ins, convOuts));
    (void)buffer; // owned by the launch site
    maxPoolArgmaxKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(
        x, y, argmax, p);
    RETURN_IF_LAUNCH_FAILED("maxPoolArgmaxKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// max_pool2d_argmax_grad. ins: argmax, y, dy; outs: dx [, dx summed per
/// channel: this backend's bias_add_grad of dx, after it on the stream].
Status maxPoolArgmaxGrad(const KernelContext &ctx, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "max_pool2d_argmax_grad";
  REQUIRE(outs.size() == 1 || outs.size() == 2,
          "writes input_grad and optionally input_grad_sum, got " +
              std::to_string(outs.size()) + " outputs");
  REQUIRE(ins.size() == 3 && ins[0].dtype == plan::DType::i32 && ins[0].data,
          "takes an i32 argmax, the output and output_grad");
  RETURN_IF_ERROR(
      checkOperands(kName, {ins[1], ins[2]}, outs, 2, 2, outs.size()));
  Pool p;
  RETURN_IF_ERROR(poolOf(kName, cfg, outs[0].shape, ins[2].shape, p));
  REQUIRE(ins[0].shape == ins[2].shape && ins[1].shape == ins[2].shape,
          "argmax " + shapeText(ins[0].shape) + ", output " +
              shapeText(ins[1].shape) + " and output_grad " +
              shapeText(ins[2].shape) + " differ");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const int32_t *argmax = ins[0].i32();
  const float *y = ins[1].f32(), *dy = ins[2].f32();
  float *dx = outs[0].f32();
  int64_t total = outs[0].elements();
  bool reluGrad = cfg.getInt("relu_grad", 0) != 0;
  ChannelSum channelSum;
  RETURN_IF_ERROR(channelSum.make(ctx, outs));
  TilingPool tiles;
  if (tilingPoolOf(geometryOf(p), tiles)) {
    int64_t pooled = ins[2].elements();
    out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &,
              const Tensors &) {
      tilingArgmaxGradKernel<<<blocksFor(pooled), kThreads, 0,
                               state->compute>>>(tiles, argmax, y, dy, dx,
                                                 reluGrad, pooled);
      RETURN_IF_LAUNCH_FAILED("tilingArgmaxGradKernel");
      return channelSum(ctx);
    };
    return Status::ok();
  }
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &,
            const Tensors &) {
    maxPoolArgmaxGradKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(
        argmax, y, dy, dx, p, reluGrad);
    RETURN_IF_LAUNCH_FAILED("maxPoolArgmaxGradKernel");
    return channelSum(ctx);
  };
  return Status::ok();
}

/// ins: dy; out: dx, whose shape is the forward input's.
Status avgPoolGrad(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "avg_pool2d_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  Pool p;
  RETURN_IF_ERROR(poolOf(kName, cfg, outs[0].shape, ins[0].shape, p));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *dy = ins[0].f32();
  float *dx = outs[0].f32();
  int64_t total = outs[0].elements();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    avgPoolGradKernel<<<blocksFor(total), kThreads, 0, state->compute>>>(dy, dx,
                                                                         p);
    RETURN_IF_LAUNCH_FAILED("avgPoolGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// y[b, c] = mean over H x W of x[b, :, :, c]: one thread per (b, c).
__global__ void globalAvgPoolKernel(const float *__restrict__ x,
                                    float *__restrict__ y, int64_t n,
                                    int64_t hw, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n * c;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t b = i / c, ch = i % c;
    double sum = 0.0;
    for (int64_t q = 0; q < hw; ++q)
      sum += x[(b * hw + q) * c + ch];
    y[i] = static_cast<float>(sum / double(hw));
  }
}

__global__ void globalAvgPoolGradKernel(const float *__restrict__ dy,
                                        float *__restrict__ dx, int64_t n,
                                        int64_t hw, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < n * hw * c; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c, b = i / (hw * c);
    dx[i] = static_cast<float>(double(dy[b * c + ch]) / double(hw));
  }
}

Status globalAvgPool(const KernelContext &ctx, const KernelConfig &,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "global_avg_pool2d";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &s = ins[0].shape;
  REQUIRE(s.size() == 4 && s[1] * s[2] > 0,
          "needs a non-empty NHWC input, got " + shapeText(s));
  REQUIRE(outs[0].shape == (std::vector<int64_t>{s[0], s[3]}),
          "output " + shapeText(outs[0].shape) + " is not [N, C] of " +
              shapeText(s));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32();
  float *y = outs[0].f32();
  int64_t n = s[0], hw = s[1] * s[2], c = s[3];
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    globalAvgPoolKernel<<<blocksFor(n * c), kThreads, 0, state->compute>>>(
        x, y, n, hw, c);
    RETURN_IF_LAUNCH_FAILED("globalAvgPoolKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status globalAvgPoolGrad(const KernelContext &ctx, const KernelConfig &,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "global_avg_pool2d_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &s = outs[0].shape;
  REQUIRE(s.size() == 4 && s[1] * s[2] > 0,
          "needs a non-empty NHWC input_grad, got " + shapeText(s));
  REQUIRE(ins[0].shape == (std::vector<int64_t>{s[0], s[3]}),
          "output_grad " + shapeText(ins[0].shape) + " is not [N, C] of " +
              shapeText(s));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *dy = ins[0].f32();
  float *dx = outs[0].f32();
  int64_t n = s[0], hw = s[1] * s[2], c = s[3];
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    globalAvgPoolGradKernel<<<blocksFor(n * hw * c), kThreads, 0,
                              state->compute>>>(dy, dx, n, hw, c);
    RETURN_IF_LAUNCH_FAILED("globalAvgPoolGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Batch normalisation
//
// Operands as the reference takes them: `has_gamma` and `has_beta` say
// which of inputs 3 and 4 are there (without them, 4 inputs mean gamma).
//===----------------------------------------------------------------------===//

/// A batch norm's gamma and beta among its inputs (null: absent).
Status scaleShiftOf(const char *kName, const KernelConfig &cfg,
                    const Tensors &ins, const float *&gamma,
                    const float *&beta) {
  size_t optional = ins.size() - 3;
  bool hasGamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool hasBeta = cfg.getInt("has_beta", optional >= 2) != 0;
  REQUIRE(size_t(hasGamma) + size_t(hasBeta) == optional,
          "has_gamma and has_beta do not match its " +
              std::to_string(ins.size()) + " inputs");
  gamma = hasGamma ? ins[3].f32() : nullptr;
  beta = hasBeta ? ins[hasGamma ? 4 : 3].f32() : nullptr;
  return Status::ok();
}

/// Per-channel operands, any of which may be absent (null).
struct Channels {
  const float *mean = nullptr, *variance = nullptr, *gamma = nullptr,
              *beta = nullptr;
};

/// Inference: y = (x - mean) / sqrt(var + eps) * gamma + beta.
__global__ void batchNormKernel(const float *__restrict__ x,
                                float *__restrict__ y, Channels s,
                                int64_t elements, int64_t c, double epsilon) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    double v = (double(x[i]) - s.mean[ch]) / sqrt(s.variance[ch] + epsilon);
    v = v * (s.gamma ? s.gamma[ch] : 1.0f) + (s.beta ? s.beta[ch] : 0.0f);
    y[i] = static_cast<float>(v);
  }
}

/// Column values for the reductions: x, (x - mean)^2, and batch_norm_grad's
/// pair (dy, dy * xhat).
struct ColumnValue {
  const float *x = nullptr;
  int64_t cols = 0;
  __device__ void operator()(int64_t row, int64_t col, double *v) const {
    v[0] = x[row * cols + col];
  }
};

struct SquaredDeviation {
  const float *x = nullptr;
  const double *mean = nullptr;
  int64_t cols = 0;
  __device__ void operator()(int64_t row, int64_t col, double *v) const {
    double d = x[row * cols + col] - mean[col];
    v[0] = d * d;
  }
};

struct GradientSums {
  const float *dy = nullptr, *x = nullptr, *mean = nullptr, *invStd = nullptr;
  int64_t cols = 0;
  __device__ void operator()(int64_t row, int64_t col, double *v) const {
    int64_t i = row * cols + col;
    double xhat = (double(x[i]) - mean[col]) * invStd[col];
    v[0] = dy[i];
    v[1] = dy[i] * xhat;
  }
};

/// The batch mean per channel, kept in double for the second pass.
struct StoreMean {
  double *mean = nullptr;
  int64_t rows = 0;
  __device__ void operator()(int64_t col, const double *sums) const {
    mean[col] = sums[0] / double(rows);
  }
};

/// Finishes batch_norm_train's statistics: inv_std, the batch outputs and
/// the new moving statistics (which may overwrite the old in place).
struct StoreStatistics {
  double *mean = nullptr, *invStd = nullptr;
  int64_t rows = 0;
  double epsilon = 0.0, momentum = 0.0;
  bool unbiasedUpdate = false;
  const float *movingMean = nullptr, *movingVariance = nullptr;
  float *batchMean = nullptr, *batchInvStd = nullptr, *newMovingMean = nullptr,
        *newMovingVariance = nullptr;
  __device__ void operator()(int64_t col, const double *sums) const {
    double variance = sums[0] / double(rows);
    double inv = 1.0 / sqrt(variance + epsilon);
    invStd[col] = inv;
    double update = unbiasedUpdate && rows > 1
                        ? variance * double(rows) / double(rows - 1)
                        : variance;
    double oldMean = movingMean[col], oldVariance = movingVariance[col];
    batchMean[col] = static_cast<float>(mean[col]);
    batchInvStd[col] = static_cast<float>(inv);
    newMovingMean[col] =
        static_cast<float>(oldMean * momentum + mean[col] * (1.0 - momentum));
    newMovingVariance[col] =
        static_cast<float>(oldVariance * momentum + update * (1.0 - momentum));
  }
};

__global__ void normalizeKernel(const float *__restrict__ x,
                                float *__restrict__ y,
                                const double *__restrict__ mean,
                                const double *__restrict__ invStd,
                                const float *gamma, const float *beta,
                                int64_t elements, int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    double v = (double(x[i]) - mean[ch]) * invStd[ch];
    v = v * (gamma ? gamma[ch] : 1.0f) + (beta ? beta[ch] : 0.0f);
    y[i] = static_cast<float>(v);
  }
}

/// Stores dgamma, dbeta and keeps the sums for dx.
struct StoreGradientSums {
  double *sumDy = nullptr, *sumDyXhat = nullptr;
  float *gammaGrad = nullptr, *betaGrad = nullptr;
  __device__ void operator()(int64_t col, const double *sums) const {
    sumDy[col] = sums[0];
    sumDyXhat[col] = sums[1];
    betaGrad[col] = static_cast<float>(sums[0]);
    gammaGrad[col] = static_cast<float>(sums[1]);
  }
};

/// dx = gamma * inv_std / n * (n dy - sum dy - xhat sum(dy xhat)).
__global__ void
batchNormGradKernel(const float *__restrict__ dy, const float *__restrict__ x,
                    const float *__restrict__ mean,
                    const float *__restrict__ invStd, const float *gamma,
                    const double *__restrict__ sumDy,
                    const double *__restrict__ sumDyXhat,
                    float *__restrict__ dx, int64_t elements, int64_t c) {
  double n = double(elements / c);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    double xhat = (double(x[i]) - mean[ch]) * invStd[ch];
    double g = gamma ? gamma[ch] : 1.0f;
    dx[i] = static_cast<float>(g * invStd[ch] / n *
                               (n * dy[i] - sumDy[ch] - xhat * sumDyXhat[ch]));
  }
}

/// Inference-mode batch_norm's input gradient, the statistics constant:
/// dx = dy * gamma / sqrt(var + eps).
__global__ void batchNormInferenceGradKernel(const float *__restrict__ dy,
                                             const float *__restrict__ variance,
                                             const float *gamma,
                                             float *__restrict__ dx,
                                             int64_t elements, int64_t c,
                                             double epsilon) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t ch = i % c;
    double g = gamma ? gamma[ch] : 1.0f;
    dx[i] = static_cast<float>(double(dy[i]) * g /
                               sqrt(double(variance[ch]) + epsilon));
  }
}

//===----------------------------------------------------------------------===//
// Layer normalisation (the last axis): one warp per row of C values, the
// row's sums in double and reduced with shuffles; gamma_grad and beta_grad
// are column sums, one thread per channel, over the rows' statistics that
// the dx kernel left in the workspace.
//===----------------------------------------------------------------------===//

constexpr int kWarp = 32;

__device__ double warpSum(double v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// mean and 1/sqrt(var + eps) of row `xr`, in every lane of the warp.
__device__ void rowStatistics(const float *__restrict__ xr, int64_t c, int lane,
                              double epsilon, double &mean, double &invStd) {
  double sum = 0.0;
  for (int64_t k = lane; k < c; k += kWarp)
    sum += xr[k];
  mean = warpSum(sum) / c;
  double sq = 0.0;
  for (int64_t k = lane; k < c; k += kWarp) {
    double d = xr[k] - mean;
    sq += d * d;
  }
  invStd = 1.0 / sqrt(warpSum(sq) / c + epsilon);
}

__global__ void layerNormKernel(const float *__restrict__ x, const float *gamma,
                                const float *beta, float *__restrict__ y,
                                int64_t rows, int64_t c, double epsilon) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
       r < rows; r += warps) {
    const float *xr = x + r * c;
    float *yr = y + r * c;
    double mean, invStd;
    rowStatistics(xr, c, lane, epsilon, mean, invStd);
    for (int64_t k = lane; k < c; k += kWarp) {
      double v = (xr[k] - mean) * invStd;
      if (gamma)
        v *= gamma[k];
      if (beta)
        v += beta[k];
      yr[k] = static_cast<float>(v);
    }
  }
}

/// dx of each row (see the reference), and the row's statistics.
__global__ void layerNormGradInputKernel(
    const float *__restrict__ dy, const float *__restrict__ x,
    const float *gamma, float *__restrict__ dx, double *__restrict__ means,
    double *__restrict__ invStds, int64_t rows, int64_t c, double epsilon) {
  int lane = threadIdx.x % kWarp;
  int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t r = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarp;
       r < rows; r += warps) {
    const float *xr = x + r * c, *dyr = dy + r * c;
    float *dxr = dx + r * c;
    double mean, invStd;
    rowStatistics(xr, c, lane, epsilon, mean, invStd);
    double sumG = 0.0, sumGXhat = 0.0;
    for (int64_t k = lane; k < c; k += kWarp) {
      double g = gamma ? double(dyr[k]) * gamma[k] : double(dyr[k]);
      sumG += g;
      sumGXhat += g * (xr[k] - mean) * invStd;
    }
    sumG = warpSum(sumG);
    sumGXhat = warpSum(sumGXhat);
    double n = double(c);
    for (int64_t k = lane; k < c; k += kWarp) {
      double g = gamma ? double(dyr[k]) * gamma[k] : double(dyr[k]);
      double xhat = (xr[k] - mean) * invStd;
      dxr[k] =
          static_cast<float>(invStd / n * (n * g - sumG - xhat * sumGXhat));
    }
    if (lane == 0) {
      means[r] = mean;
      invStds[r] = invStd;
    }
  }
}

/// gamma_grad = sum dy * xhat and beta_grad = sum dy over the rows.
__global__ void layerNormGradScaleShiftKernel(
    const float *__restrict__ dy, const float *__restrict__ x,
    const double *__restrict__ means, const double *__restrict__ invStds,
    float *__restrict__ dgamma, float *__restrict__ dbeta, int64_t rows,
    int64_t c) {
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < c;
       k += int64_t(gridDim.x) * blockDim.x) {
    double sumDy = 0.0, sumDyXhat = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t i = r * c + k;
      sumDy += dy[i];
      sumDyXhat += double(dy[i]) * (x[i] - means[r]) * invStds[r];
    }
    dgamma[k] = static_cast<float>(sumDyXhat);
    dbeta[k] = static_cast<float>(sumDy);
  }
}

/// y = x * scale per channel of the last axis (Keras' LayerScale).
__global__ void channelScaleKernel(const float *__restrict__ x,
                                   const float *__restrict__ scale,
                                   float *__restrict__ y, int64_t elements,
                                   int64_t c) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x)
    y[i] = x[i] * scale[i % c];
}

/// Blocks for one warp per row.
unsigned warpBlocksFor(int64_t rows) { return blocksFor(rows * kWarp); }

/// Checks [..., C] `x` against per-channel operands; returns C.
Status channelsOf(const char *kName, const Tensors &ins, size_t first,
                  int64_t &c) {
  REQUIRE(!ins[0].shape.empty() && ins[0].shape.back() > 0,
          "needs a ranked, non-empty input, got " + shapeText(ins[0].shape));
  c = ins[0].shape.back();
  for (size_t i = first; i < ins.size(); ++i)
    REQUIRE(ins[i].elements() == c,
            "operand " + std::to_string(i) + " " + shapeText(ins[i].shape) +
                " does not match the " + std::to_string(c) + " channels");
  return Status::ok();
}

Status batchNorm(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "batch_norm";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 3, 5, 1));
  int64_t c = 0;
  RETURN_IF_ERROR(channelsOf(kName, ins, 1, c));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  Channels s{ins[1].f32(), ins[2].f32()};
  RETURN_IF_ERROR(scaleShiftOf(kName, cfg, ins, s.gamma, s.beta));
  const float *x = ins[0].f32();
  float *y = outs[0].f32();
  int64_t elements = ins[0].elements();
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    batchNormKernel<<<blocksFor(elements), kThreads, 0, state->compute>>>(
        x, y, s, elements, c, epsilon);
    RETURN_IF_LAUNCH_FAILED("batchNormKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// The inputs of a batch norm launch without its row mask (`has_row_mask`,
/// the last). The cuda kernels do not mask yet: a short batch's statistics
/// take its padding rows in, as before the mask (docs/keras.md); masking
/// them is owed to a GPU session, where it can be run.
Tensors withoutRowMask(const KernelConfig &cfg, const Tensors &ins) {
  bool masked = cfg.getInt("has_row_mask", 0) != 0 && !ins.empty();
  return Tensors(ins.begin(), ins.end() - (masked ? 1 : 0));
}

/// outs: y, batch_mean, batch_inv_std, new_moving_mean,
/// new_moving_variance. Workspace: [mean, inv_std] doubles, then partials.
Status batchNormTrain(const KernelContext &ctx, const KernelConfig &cfg,
                      const Tensors &allIns, const Tensors &outs,
                      KernelFn &out) {
  static constexpr const char *kName = "batch_norm_train";
  Tensors ins = withoutRowMask(cfg, allIns);
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 3, 5, 5));
  int64_t c = 0;
  RETURN_IF_ERROR(channelsOf(kName, ins, 1, c));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  for (int i = 1; i < 5; ++i)
    REQUIRE(outs[i].elements() == c,
            "output " + std::to_string(i) + " " + shapeText(outs[i].shape) +
                " does not match the " + std::to_string(c) + " channels");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  int64_t elements = ins[0].elements(), rows = elements / c;
  size_t statsBytes = alignUp(2 * size_t(c) * sizeof(double));
  REQUIRE(state->workspace && statsBytes <= state->workspaceBytes,
          "the statistics of " + std::to_string(c) +
              " channels do not fit in the device workspace");
  double *mean = static_cast<double *>(state->workspace);
  double *invStd = mean + c;
  ColumnReduction r;
  RETURN_IF_ERROR(r.plan(kName, rows, c, 1,
                         static_cast<char *>(state->workspace) + statsBytes,
                         state->workspaceBytes - statsBytes));
  const float *x = ins[0].f32();
  const float *gamma = nullptr, *beta = nullptr;
  RETURN_IF_ERROR(scaleShiftOf(kName, cfg, ins, gamma, beta));
  float *y = outs[0].f32();
  ColumnValue sumX{x, c};
  StoreMean storeMean{mean, rows};
  SquaredDeviation sumSquares{x, mean, c};
  StoreStatistics finish;
  finish.mean = mean;
  finish.invStd = invStd;
  finish.rows = rows;
  finish.epsilon = cfg.getFloat("epsilon", 1e-3);
  finish.momentum = cfg.getFloat("momentum", 0.99);
  finish.unbiasedUpdate = cfg.getInt("unbiased_moving_variance", 0) != 0;
  finish.movingMean = ins[1].f32();
  finish.movingVariance = ins[2].f32();
  finish.batchMean = outs[1].f32();
  finish.batchInvStd = outs[2].f32();
  finish.newMovingMean = outs[3].f32();
  finish.newMovingVariance = outs[4].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    cudaStream_t stream = state->compute;
    // Two passes, as the reference: the mean, then the squared deviations.
    RETURN_IF_CUDA_ERROR(launchColumnReduction<1>(r, sumX, storeMean, stream));
    RETURN_IF_CUDA_ERROR(
        launchColumnReduction<1>(r, sumSquares, finish, stream));
    normalizeKernel<<<blocksFor(elements), kThreads, 0, stream>>>(
        x, y, mean, invStd, gamma, beta, elements, c);
    RETURN_IF_LAUNCH_FAILED("normalizeKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// A normalisation gradient's operands (ins: dy, x, then per-channel
/// inputs; outs: dx, dgamma, dbeta): sets `c`, x's channels.
Status checkNormGradOperands(const char *kName, const Tensors &ins,
                             const Tensors &outs, int64_t &c) {
  Tensors shifted(ins.begin() + 1, ins.end()); // x first, for channelsOf
  RETURN_IF_ERROR(channelsOf(kName, shifted, 1, c));
  REQUIRE(ins[0].elements() == ins[1].elements() &&
              outs[0].elements() == ins[1].elements(),
          "output_grad " + shapeText(ins[0].shape) + ", x " +
              shapeText(ins[1].shape) + " and input_grad " +
              shapeText(outs[0].shape) + " differ in size");
  REQUIRE(outs[1].elements() == c && outs[2].elements() == c,
          "gamma_grad " + shapeText(outs[1].shape) + " and beta_grad " +
              shapeText(outs[2].shape) + " do not match the " +
              std::to_string(c) + " channels");
  return Status::ok();
}

/// ins: dy, x, batch_mean, batch_inv_std [, gamma]; outs: dx, dgamma,
/// dbeta. Workspace: [sum dy, sum dy * xhat] doubles, then partials.
Status batchNormGrad(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &allIns, const Tensors &outs,
                     KernelFn &out) {
  static constexpr const char *kName = "batch_norm_grad";
  Tensors ins = withoutRowMask(cfg, allIns);
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 4, 5, 3));
  int64_t c = 0;
  RETURN_IF_ERROR(checkNormGradOperands(kName, ins, outs, c));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  int64_t elements = ins[1].elements(), rows = elements / c;
  size_t sumsBytes = alignUp(2 * size_t(c) * sizeof(double));
  REQUIRE(state->workspace && sumsBytes <= state->workspaceBytes,
          "the sums of " + std::to_string(c) +
              " channels do not fit in the device workspace");
  double *sumDy = static_cast<double *>(state->workspace);
  double *sumDyXhat = sumDy + c;
  ColumnReduction r;
  RETURN_IF_ERROR(r.plan(kName, rows, c, 2,
                         static_cast<char *>(state->workspace) + sumsBytes,
                         state->workspaceBytes - sumsBytes));
  GradientSums value{ins[0].f32(), ins[1].f32(), ins[2].f32(), ins[3].f32(), c};
  StoreGradientSums finish{sumDy, sumDyXhat, outs[1].f32(), outs[2].f32()};
  const float *dy = ins[0].f32(), *x = ins[1].f32(), *mean = ins[2].f32(),
              *invStd = ins[3].f32();
  const float *gamma = ins.size() == 5 ? ins[4].f32() : nullptr;
  float *dx = outs[0].f32();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    cudaStream_t stream = state->compute;
    RETURN_IF_CUDA_ERROR(launchColumnReduction<2>(r, value, finish, stream));
    batchNormGradKernel<<<blocksFor(elements), kThreads, 0, stream>>>(
        dy, x, mean, invStd, gamma, sumDy, sumDyXhat, dx, elements, c);
    RETURN_IF_LAUNCH_FAILED("batchNormGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// ins: dy, moving_variance [, gamma]; outs: dx.
Status batchNormInferenceGrad(const KernelContext &ctx, const KernelConfig &cfg,
                              const Tensors &ins, const Tensors &outs,
                              KernelFn &out) {
  static constexpr const char *kName = "batch_norm_inference_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1));
  int64_t c = 0;
  RETURN_IF_ERROR(channelsOf(kName, ins, 1, c));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "input_grad " + shapeText(outs[0].shape) + " differs in size from " +
              "output_grad " + shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *dy = ins[0].f32(), *variance = ins[1].f32();
  const float *gamma = ins.size() == 3 ? ins[2].f32() : nullptr;
  float *dx = outs[0].f32();
  int64_t elements = ins[0].elements();
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    batchNormInferenceGradKernel<<<blocksFor(elements), kThreads, 0,
                                   state->compute>>>(dy, variance, gamma, dx,
                                                     elements, c, epsilon);
    RETURN_IF_LAUNCH_FAILED("batchNormInferenceGradKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// ins: x, scale; outs: y.
Status channelScale(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "channel_scale";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  int64_t c = 0;
  RETURN_IF_ERROR(channelsOf(kName, ins, 1, c));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32(), *scale = ins[1].f32();
  float *y = outs[0].f32();
  int64_t elements = ins[0].elements();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    channelScaleKernel<<<blocksFor(elements), kThreads, 0, state->compute>>>(
        x, scale, y, elements, c);
    RETURN_IF_LAUNCH_FAILED("channelScaleKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// ins: x, [gamma], [beta]; outs: y.
Status layerNorm(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "layer_norm";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 3, 1));
  int64_t c = 0;
  RETURN_IF_ERROR(channelsOf(kName, ins, 1, c));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  size_t optional = ins.size() - 1;
  bool hasGamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool hasBeta = cfg.getInt("has_beta", optional >= 2) != 0;
  REQUIRE(size_t(hasGamma) + size_t(hasBeta) == optional,
          "has_gamma and has_beta do not match its " +
              std::to_string(ins.size()) + " inputs");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32();
  const float *gamma = hasGamma ? ins[1].f32() : nullptr;
  const float *beta = hasBeta ? ins[hasGamma ? 2 : 1].f32() : nullptr;
  float *y = outs[0].f32();
  int64_t rows = ins[0].elements() / c;
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    layerNormKernel<<<warpBlocksFor(rows), kThreads, 0, state->compute>>>(
        x, gamma, beta, y, rows, c, epsilon);
    RETURN_IF_LAUNCH_FAILED("layerNormKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// ins: dy, x, [gamma]; outs: dx, dgamma, dbeta. Workspace: each row's
/// mean and inv_std (doubles).
Status layerNormGrad(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "layer_norm_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 3));
  int64_t c = 0;
  RETURN_IF_ERROR(checkNormGradOperands(kName, ins, outs, c));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  int64_t rows = ins[1].elements() / c;
  REQUIRE(state->workspace &&
              2 * size_t(rows) * sizeof(double) <= state->workspaceBytes,
          "the statistics of " + std::to_string(rows) +
              " rows do not fit in the device workspace");
  double *means = static_cast<double *>(state->workspace);
  double *invStds = means + rows;
  const float *dy = ins[0].f32(), *x = ins[1].f32();
  const float *gamma = ins.size() == 3 ? ins[2].f32() : nullptr;
  float *dx = outs[0].f32(), *dgamma = outs[1].f32(), *dbeta = outs[2].f32();
  double epsilon = cfg.getFloat("epsilon", 1e-3);
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    cudaStream_t stream = state->compute;
    layerNormGradInputKernel<<<warpBlocksFor(rows), kThreads, 0, stream>>>(
        dy, x, gamma, dx, means, invStds, rows, c, epsilon);
    RETURN_IF_LAUNCH_FAILED("layerNormGradInputKernel");
    layerNormGradScaleShiftKernel<<<blocksFor(c), kThreads, 0, stream>>>(
        dy, x, means, invStds, dgamma, dbeta, rows, c);
    RETURN_IF_LAUNCH_FAILED("layerNormGradScaleShiftKernel");
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerPoolNormKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("max_pool2d", Backend::cuda, poolForward<PoolKind::max>);
  r.addFactory("max_pool2d_grad", Backend::cuda, maxPoolGrad);
  r.addFactory("max_pool2d_argmax_grad", Backend::cuda, maxPoolArgmaxGrad);
  r.addFactory("fused_conv2d_pool", Backend::cuda, fusedConv2dPool);
  r.addFactory("avg_pool2d", Backend::cuda, poolForward<PoolKind::average>);
  r.addFactory("avg_pool2d_grad", Backend::cuda, avgPoolGrad);
  r.addFactory("global_avg_pool2d", Backend::cuda, globalAvgPool);
  r.addFactory("global_avg_pool2d_grad", Backend::cuda, globalAvgPoolGrad);
  r.addFactory("batch_norm", Backend::cuda, batchNorm);
  r.addFactory("batch_norm_train", Backend::cuda, batchNormTrain);
  r.addFactory("batch_norm_grad", Backend::cuda, batchNormGrad);
  r.addFactory("batch_norm_inference_grad", Backend::cuda,
               batchNormInferenceGrad);
  r.addFactory("channel_scale", Backend::cuda, channelScale);
  r.addFactory("layer_norm", Backend::cuda, layerNorm);
  r.addFactory("layer_norm_grad", Backend::cuda, layerNormGrad);
}

} // namespace graph::runtime::cuda
