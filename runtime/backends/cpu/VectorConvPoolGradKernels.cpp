//===- VectorConvPoolGradKernels.cpp - a pooled conv's kernel gradient ----===//
//
// fused_conv2d_pool_grad_kernel: the kernel (and bias) gradient of a
// fused_conv2d_pool from the gradient of its pooled output, without the
// dense gradient of the convolution's output that max_pool2d_argmax_grad
// would write and conv2d_grad_kernel read back (for the seed CNN's first
// layer 11 MB a replica each way, for a 148 KB result). Each pooled
// gradient goes to the one conv output its argmax names, and from there
// into every tap: dk[kh, kw, c, f] += dy * x[n, oh + kh, ow + kw, c].
//
// The batch is split into one slice per thread; each slice sums into its
// own float32 buffer, and the slices are added up in order, so the result
// does not depend on which thread finished first.
//
// A bfloat16 or float16 plan's launch widens each image's input, output
// and output gradient into the thread's scratch and runs the same loops on
// it; the sums stay float32 and are rounded once, into the plan's type. The
// workspace (the dense gradient's size) is written only with
// writes_workspace and never read, where the registry's widened copies
// would have converted it twice a step.
//
// The common first layer -- one input channel, a 3x3 (or smaller) window
// at stride 1, a 2x2 pool at stride 2, filters a multiple of 8 -- takes a
// vector path: a window's 2x4 input rows under tap row kh sit in one
// register, and each filter's input value for tap (kh, kw) is the lane its
// argmax names in it (one permute), so each tap is one permute and one FMA
// for 8 filters, where the dense gradient costs four FMAs.
//
// A small layer of more channels (a multiple of 8; its kernel gradient's
// sums and an image in L2) under the same windows takes the channel path
// at every position (the image copied with zeros around
// it where the convolution pads): per image, each pooled gradient's routed
// value and the offset of the input patch under its argmax are gathered
// first and regrouped by filter, the zeros (a relu's) left out; then
// every filter's taps sum 8 channels at a time in registers, one FMA a tap
// for each non-zero pooled gradient -- a quarter of the dense gradient's
// products, less the relu's share.
// Such a layer's input usually needs its gradient too: with `writes_workspace`
// the kernel also writes the dense gradient (max_pool2d_argmax_grad's
// result) into the workspace, for conv2d_grad_input. A `writes_workspace`
// launch whose windows take neither vector path runs the two ops it replaces,
// through the workspace, as the cuda backend does.
//
// Other shapes, and the first-layer path's positions where the window or
// the patch reaches into padding, take the general loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/FusedOpParts.h"
#include "runtime/core/ReducedPrecision.h"
#include "runtime/core/WindowGeometry.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

constexpr const char *kName = "fused_conv2d_pool_grad_kernel";

struct Shape {
  WindowGeometry conv; // the convolution over the input
  WindowGeometry pool; // the pool over the convolution's output
  ConvChannels channels;
  bool relu = false;
  int64_t filters() const { return channels.filters; }
  /// Kernel gradient elements (the general loop's sums are [kh, kw, c, f],
  /// the channel path's [f, kh, kw, c]).
  int64_t kernelElements() const {
    return conv.h.window * conv.w.window * channels.channelsPerGroup *
           channels.filters;
  }
};

/// The gradient the convolution's output gets at pooled element `i`.
inline float routed(const Shape &s, const float *y, const float *dy,
                    int64_t i) {
  return !s.relu || y[i] > 0.0f ? dy[i] : 0.0f;
}

/// Pooled position (ph, pw) of image n, any geometry: window position p by
/// window position, the filters whose argmax is p multiplied into the taps
/// of the conv output p names. `routedScratch`: filters() floats.
void accumulatePosition(const Shape &s, int64_t n, int64_t ph, int64_t pw,
                        const float *x, const int32_t *argmax, const float *y,
                        const float *dy, float *dk, float *bias,
                        float *routedScratch) {
  const WindowGeometry &g = s.pool, &c = s.conv;
  const int64_t f = s.filters(), cg = s.channels.channelsPerGroup,
                fg = s.channels.filtersPerGroup();
  const int64_t at = ((n * g.h.out + ph) * g.w.out + pw) * f;
  const int32_t *a = argmax + at;
  for (int64_t o = 0; o < f; ++o)
    bias[o] += routed(s, y, dy, at + o);
  const int32_t positions = static_cast<int32_t>(g.h.window * g.w.window);
  for (int32_t p = 0; p < positions; ++p) {
    const int64_t oh = argmaxRow(g, ph, p), ow = argmaxColumn(g, pw, p);
    if (oh < 0 || oh >= g.h.in || ow < 0 || ow >= g.w.in)
      continue;
    float *gp = routedScratch;
    bool any = false;
    for (int64_t o = 0; o < f; ++o) {
      gp[o] = a[o] == p ? routed(s, y, dy, at + o) : 0.0f;
      any |= gp[o] != 0.0f;
    }
    if (!any)
      continue;
    for (int64_t kh = 0; kh < c.h.window; ++kh) {
      const int64_t ih = oh * c.h.stride - c.h.padBefore + kh * c.h.dilation;
      if (ih < 0 || ih >= c.h.in)
        continue;
      for (int64_t kw = 0; kw < c.w.window; ++kw) {
        const int64_t iw = ow * c.w.stride - c.w.padBefore + kw * c.w.dilation;
        if (iw < 0 || iw >= c.w.in)
          continue;
        const float *xp = x + ((n * c.h.in + ih) * c.w.in + iw) * c.c;
        float *dkt = dk + (kh * c.w.window + kw) * cg * f;
        if (s.channels.groups == 1) {
          for (int64_t ci = 0; ci < cg; ++ci) {
            const float xv = xp[ci];
            float *row = dkt + ci * f;
#pragma omp simd
            for (int64_t o = 0; o < f; ++o)
              row[o] += xv * gp[o];
          }
        } else {
          for (int64_t o = 0; o < f; ++o)
            for (int64_t ci = 0; ci < cg; ++ci)
              dkt[ci * f + o] += xp[o / fg * cg + ci] * gp[o];
        }
      }
    }
  }
}

/// Whether the vector path takes this layer, and at which pooled positions:
/// those whose four window positions and (kh + 1) x 4 input patch are all
/// in range.
bool vectorShape(const Shape &s) {
  const WindowGeometry &g = s.pool, &c = s.conv;
  return s.channels.groups == 1 && c.c == 1 && c.h.stride == 1 &&
         c.w.stride == 1 && c.h.dilation == 1 && c.w.dilation == 1 &&
         c.h.window <= 3 && c.w.window <= 3 && g.h.window == 2 &&
         g.w.window == 2 && g.h.stride == 2 && g.w.stride == 2 &&
         s.filters() % 8 == 0;
}
bool vectorPosition(const Shape &s, int64_t ph, int64_t pw) {
  const WindowGeometry &g = s.pool, &c = s.conv;
  const int64_t oh = ph * 2 - g.h.padBefore, ow = pw * 2 - g.w.padBefore;
  const int64_t ih = oh - c.h.padBefore, iw = ow - c.w.padBefore;
  return oh >= 0 && oh + 1 < g.h.in && ow >= 0 && ow + 1 < g.w.in && ih >= 0 &&
         ih + c.h.window + 1 <= c.h.in && iw >= 0 && iw + 4 <= c.w.in;
}

/// The vector path over image n's vector positions (`fast`, row-major over
/// the pooled grid), 8 filters at a time, the taps' sums in registers (the
/// window a template parameter, so they stay there).
template <int kh, int kw>
void accumulateImageVector(const Shape &s, int64_t n, const uint8_t *fast,
                           const float *x, const int32_t *argmax,
                           const float *y, const float *dy, float *dk,
                           float *bias) {
  const WindowGeometry &g = s.pool, &c = s.conv;
  const int64_t f = s.filters();
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t o0 = 0; o0 < f; o0 += 8) {
    __m256 acc[kh * kw], sum = zero;
    for (__m256 &v : acc)
      v = zero;
    for (int64_t ph = 0; ph < g.h.out; ++ph)
      for (int64_t pw = 0; pw < g.w.out; ++pw) {
        if (!fast[ph * g.w.out + pw])
          continue;
        const int64_t at = ((n * g.h.out + ph) * g.w.out + pw) * f + o0;
        __m256 grad = _mm256_loadu_ps(dy + at);
        if (s.relu)
          grad = _mm256_and_ps(
              grad, _mm256_cmp_ps(_mm256_loadu_ps(y + at), zero, _CMP_GT_OQ));
        sum = _mm256_add_ps(sum, grad);
        // Argmax a = 2 * row + column; its lane in [row 0 | row 1] of the
        // patch rows is 4 * row + column = a + (a & 2).
        const __m256i a =
            _mm256_loadu_si256(reinterpret_cast<const __m256i *>(argmax + at));
        const __m256i lane =
            _mm256_add_epi32(a, _mm256_and_si256(a, _mm256_set1_epi32(2)));
        const int64_t ih = ph * 2 - g.h.padBefore - c.h.padBefore,
                      iw = pw * 2 - g.w.padBefore - c.w.padBefore;
        const float *xp = x + (n * c.h.in + ih) * c.w.in + iw;
        for (int i = 0; i < kh; ++i) {
          const __m256 rows =
              _mm256_set_m128(_mm_loadu_ps(xp + c.w.in), _mm_loadu_ps(xp));
          xp += c.w.in;
          for (int j = 0; j < kw; ++j) {
            const __m256 v = _mm256_permutevar8x32_ps(
                rows, _mm256_add_epi32(lane, _mm256_set1_epi32(j)));
            acc[i * kw + j] = _mm256_fmadd_ps(grad, v, acc[i * kw + j]);
          }
        }
      }
    for (int t = 0; t < kh * kw; ++t) {
      float *row = dk + t * f + o0;
      _mm256_storeu_ps(row, _mm256_add_ps(_mm256_loadu_ps(row), acc[t]));
    }
    _mm256_storeu_ps(bias + o0, _mm256_add_ps(_mm256_loadu_ps(bias + o0), sum));
  }
}

using ImageVectorFn = void (*)(const Shape &, int64_t, const uint8_t *,
                               const float *, const int32_t *, const float *,
                               const float *, float *, float *);

/// accumulateImageVector for vectorShape's windows (1..3 x 1..3).
ImageVectorFn imageVectorFn(int64_t kh, int64_t kw) {
  static constexpr ImageVectorFn fns[3][3] = {
      {accumulateImageVector<1, 1>, accumulateImageVector<1, 2>,
       accumulateImageVector<1, 3>},
      {accumulateImageVector<2, 1>, accumulateImageVector<2, 2>,
       accumulateImageVector<2, 3>},
      {accumulateImageVector<3, 1>, accumulateImageVector<3, 2>,
       accumulateImageVector<3, 3>}};
  return fns[kh - 1][kw - 1];
}

/// The most bytes the channel path's float32 kernel-gradient sums, and an
/// image of its input, may take: each image sweeps all of the sums and
/// reads its patches many times over, so both must stay in L2. Measured
/// (AVX-512 Zen 4, 2 threads, bf16): the seed CNN's conv 2 (sums 72 KiB,
/// image 21 KiB) 2.5-3.2 against 4.1-4.6 ms for the argmax gradient and
/// oneDNN's weight gradient; VGG16's block5_conv3 (sums 9 MiB, image
/// 392 KiB) took 409 against 68 ms.
constexpr int64_t kChannelPathBytes = 256 << 10;

/// Whether the channel path takes this layer: vectorShape's windows on
/// input channels a multiple of 8 (a register of them), sums and image
/// within kChannelPathBytes. It takes every pooled position: patches
/// reaching into the convolution's padding read a zero-padded copy of the
/// image (PaddedImage).
bool channelShape(const Shape &s) {
  const WindowGeometry &g = s.pool, &c = s.conv;
  const int64_t imageBytes =
      (c.h.in + 2 * c.h.window) * (c.w.in + 2 * c.w.window) * c.c * 4;
  return s.channels.groups == 1 && c.c % 8 == 0 && c.h.stride == 1 &&
         c.w.stride == 1 && c.h.dilation == 1 && c.w.dilation == 1 &&
         c.h.window <= 3 && c.w.window <= 3 && g.h.window == 2 &&
         g.w.window == 2 && g.h.stride == 2 && g.w.stride == 2 &&
         g.h.padBefore == 0 && g.w.padBefore == 0 &&
         s.kernelElements() * 4 <= kChannelPathBytes &&
         imageBytes <= kChannelPathBytes;
}

/// The image the channel path reads its patches from: the input, or where
/// the convolution pads (or the pool's last windows reach past its output,
/// so that a patch could) a copy with zeros around it. Conv output position
/// (oh, ow)'s patch starts at row oh, column ow of it.
struct PaddedImage {
  int64_t rows = 0, columns = 0, channels = 0;
  int64_t top = 0, left = 0; // where the input's first element sits
  bool copies = false;

  static PaddedImage of(const Shape &s) {
    const WindowGeometry &c = s.conv, &g = s.pool;
    PaddedImage p;
    p.channels = c.c;
    p.top = c.h.padBefore;
    p.left = c.w.padBefore;
    // Pool windows cover conv rows up to 2 * h.out - padBefore; each
    // patch reaches window - 1 rows further.
    const int64_t coveredRows = std::max(c.h.out, 2 * g.h.out - g.h.padBefore);
    const int64_t coveredColumns =
        std::max(c.w.out, 2 * g.w.out - g.w.padBefore);
    p.rows = std::max(c.h.in + p.top, coveredRows + c.h.window - 1);
    p.columns = std::max(c.w.in + p.left, coveredColumns + c.w.window - 1);
    p.copies = p.top > 0 || p.left > 0 || p.rows > c.h.in || p.columns > c.w.in;
    return p;
  }
  int64_t elements() const { return rows * columns * channels; }
  /// `image` (the input's [h, w, c]) placed in `out`, zeros around it.
  void fill(const WindowGeometry &c, const float *image, float *out) const {
    std::fill(out, out + elements(), 0.0f);
    for (int64_t ih = 0; ih < c.h.in; ++ih)
      std::memcpy(out + ((ih + top) * columns + left) * channels,
                  image + ih * c.w.in * channels,
                  static_cast<size_t>(c.w.in * channels) * sizeof(float));
  }
};

/// One image's pooled gradients gathered for the channel path's filter
/// loop: per pooled position (row-major) and filter, the routed gradient
/// and the offset in the padded image of the patch under its argmax.
/// Filters are innermost, as they are in the operands, so the gathering
/// runs in vectors.
void gatherRouted(const Shape &s, const PaddedImage &image, const int32_t *an,
                  const float *yn, const float *dyn, float *routedOut,
                  int32_t *offsets) {
  const WindowGeometry &g = s.pool;
  const int64_t f = s.filters();
  const int32_t rowStep = static_cast<int32_t>(image.columns * image.channels);
  const int32_t columnStep = static_cast<int32_t>(image.channels);
  for (int64_t ph = 0; ph < g.h.out; ++ph)
    for (int64_t pw = 0; pw < g.w.out; ++pw) {
      // The patch under the window's first position; the argmax's row and
      // column (a = 2 * row + column, in 0..3) step from there.
      const int32_t base =
          static_cast<int32_t>((ph * 2 - g.h.padBefore) * rowStep +
                               (pw * 2 - g.w.padBefore) * columnStep);
      const int64_t at = (ph * g.w.out + pw) * f;
      float *__restrict r = routedOut + at;
      int32_t *__restrict o = offsets + at;
#pragma omp simd
      for (int64_t k = 0; k < f; ++k) {
        const int32_t a = an[at + k] & 3;
        r[k] = s.relu && !(yn[at + k] > 0.0f) ? 0.0f : dyn[at + k];
        o[k] = base + (a >> 1) * rowStep + (a & 1) * columnStep;
      }
    }
}

/// gatherRouted's gradients and offsets regrouped by filter, the zeros
/// (a relu's, about a third of the seed CNN's conv 2) left out: filter o's
/// `counts[o]` of them from o * positions. Branch-free: each is stored,
/// and the count moves past it only where it is not zero.
void listByFilter(const Shape &s, const float *routedIn, const int32_t *offsets,
                  float *values, int32_t *listed, int32_t *counts) {
  const int64_t f = s.filters(), positions = s.pool.h.out * s.pool.w.out;
  for (int64_t o = 0; o < f; ++o) {
    float *v = values + o * positions;
    int32_t *at = listed + o * positions;
    int32_t n = 0;
    for (int64_t p = 0; p < positions; ++p) {
      const float g = routedIn[p * f + o];
      v[n] = g;
      at[n] = offsets[p * f + o];
      n += g != 0.0f;
    }
    counts[o] = n;
  }
}

/// The channel path's sums for one image (`xn`, laid out as `image`): for
/// each filter and register of 8 input channels, the kh x kw taps in
/// registers over the image's gathered pooled gradients. `dkF` is
/// [f, kh, kw, c] (OHWI).
template <int kh, int kw>
void accumulateChannels(const Shape &s, const PaddedImage &image,
                        const float *xn, const float *values,
                        const int32_t *listed, const int32_t *counts,
                        float *dkF) {
  const int64_t f = s.filters(), channels = image.channels;
  const int64_t rowStep = image.columns * channels;
  const int64_t positions = s.pool.h.out * s.pool.w.out;
  for (int64_t o = 0; o < f; ++o) {
    const float *v = values + o * positions;
    const int32_t *at = listed + o * positions;
    const int32_t count = counts[o];
    for (int64_t cb = 0; cb < channels; cb += 8) {
      float *sums = dkF + o * kh * kw * channels + cb;
      __m256 acc[kh * kw];
      for (int t = 0; t < kh * kw; ++t)
        acc[t] = _mm256_loadu_ps(sums + t * channels);
      for (int32_t k = 0; k < count; ++k) {
        const float *patch = xn + at[k] + cb;
        const __m256 grad = _mm256_broadcast_ss(v + k);
        for (int i = 0; i < kh; ++i)
          for (int j = 0; j < kw; ++j)
            acc[i * kw + j] = _mm256_fmadd_ps(
                grad, _mm256_loadu_ps(patch + i * rowStep + j * channels),
                acc[i * kw + j]);
      }
      for (int t = 0; t < kh * kw; ++t)
        _mm256_storeu_ps(sums + t * channels, acc[t]);
    }
  }
}

using ChannelsFn = void (*)(const Shape &, const PaddedImage &, const float *,
                            const float *, const int32_t *, const int32_t *,
                            float *);

/// accumulateChannels for channelShape's windows (1..3 x 1..3).
ChannelsFn channelsFn(int64_t kh, int64_t kw) {
  static constexpr ChannelsFn fns[3][3] = {
      {accumulateChannels<1, 1>, accumulateChannels<1, 2>,
       accumulateChannels<1, 3>},
      {accumulateChannels<2, 1>, accumulateChannels<2, 2>,
       accumulateChannels<2, 3>},
      {accumulateChannels<3, 1>, accumulateChannels<3, 2>,
       accumulateChannels<3, 3>}};
  return fns[kh - 1][kw - 1];
}

/// A `writes_workspace` launch no vector path takes: the cpu kernels of
/// the ops graph-fuse joined, through the workspace (FusedOpParts.h), as a
/// DnnlLoop: it executes oneDNN's primitive (SteadyStateTest).
Status makeThroughWorkspace(const KernelContext &ctx, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs,
                            KernelFn &out) {
  std::function<Status(const KernelContext &)> run;
  if (Status s =
          convPoolGradThroughWorkspace(Backend::cpu, ctx, cfg, ins, outs, run);
      !s)
    return s;
  out = DnnlLoop{std::move(run)};
  return Status::ok();
}

/// ins: input, argmax, output, output_grad; outs: kernel_grad (the
/// config's filter_layout), workspace (with `writes_workspace` the dense
/// gradient, else untouched), optionally bias_grad.
Status makeFusedConv2dPoolGradKernel(const KernelContext &ctx,
                                     const KernelConfig &cfg,
                                     const Tensors &ins, const Tensors &outs,
                                     KernelFn &out) {
  if (outs.size() != 2 && outs.size() != 3)
    return kernelError(kName, "writes kernel_grad, the workspace and "
                              "optionally the bias gradient, got " +
                                  std::to_string(outs.size()) + " outputs");
  if (ins.size() != 4 || ins[1].dtype != plan::DType::i32 || !ins[1].data)
    return kernelError(kName, "takes the input, an i32 argmax, the output "
                              "and output_grad");
  if (Status st = checkOperands(
          kName, {ins[0], ins[2], ins[3]}, outs, 3, 3, outs.size(),
          OperandRule::anyFloat().because(
              " (the cpu backend sums in f32, rounding to bf16 or f16)"));
      !st)
    return st;
  const plan::DType type = ins[0].dtype;
  for (const TensorRef *t : {&ins[2], &ins[3], &outs[0], &outs[1]})
    if (t->dtype != type)
      return kernelError(kName, "every float operand must have the input's "
                                "type, " +
                                    std::string(plan::EnumNameDType(type)));
  if (outs.size() == 3 && outs[2].dtype != type)
    return kernelError(kName, "the bias gradient must have the input's type");
  const bool reduced = type != plan::DType::f32;
  auto s = std::make_shared<Shape>();
  if (Status st = resolveConv(kName, cfg, ins[0].shape, outs[0].shape, s->conv,
                              s->channels);
      !st)
    return st;
  const int64_t f = s->filters();
  const std::vector<int64_t> convShape = {s->conv.n, s->conv.h.out,
                                          s->conv.w.out, f};
  if (outs[1].shape != convShape)
    return kernelError(kName, "workspace " + shapeText(outs[1].shape) +
                                  " is not the convolution's output " +
                                  shapeText(convShape));
  const KernelConfig poolCfg = fusedPoolConfig(cfg);
  const auto [windowH, windowW] = poolCfg.getPair("pool_size", 2);
  if (Status st = resolveWindow(kName, poolCfg, convShape, windowH, windowW,
                                false, s->pool);
      !st)
    return st;
  const std::vector<int64_t> pooled = {s->pool.n, s->pool.h.out, s->pool.w.out,
                                       f};
  for (int i : {1, 2, 3})
    if (ins[i].shape != pooled)
      return kernelError(kName, "argmax, output and output_grad must be the "
                                "pooled " +
                                    shapeText(pooled) + ", got " +
                                    shapeText(ins[i].shape));
  if (outs.size() == 3 && outs[2].elements() != f)
    return kernelError(kName, "bias gradient " + shapeText(outs[2].shape) +
                                  " does not match the filters");
  s->relu = cfg.getInt("relu_grad", 0) != 0;

  const ImageVectorFn vector =
      vectorShape(*s) ? imageVectorFn(s->conv.h.window, s->conv.w.window)
                      : nullptr;
  const ChannelsFn channels =
      !vector && channelShape(*s)
          ? channelsFn(s->conv.h.window, s->conv.w.window)
          : nullptr;
  const bool writesWorkspace = cfg.getInt("writes_workspace", 0) != 0;
  if (writesWorkspace && !vector && !channels)
    return makeThroughWorkspace(ctx, cfg, ins, outs, out);
  // The positions a vector path takes (the channel path takes all).
  std::vector<uint8_t> fast(static_cast<size_t>(s->pool.h.out * s->pool.w.out),
                            channels ? 1 : 0);
  if (vector)
    for (int64_t ph = 0; ph < s->pool.h.out; ++ph)
      for (int64_t pw = 0; pw < s->pool.w.out; ++pw)
        fast[ph * s->pool.w.out + pw] = vectorPosition(*s, ph, pw);
  const PaddedImage padded = PaddedImage::of(*s);

  // One slice of the batch per thread, each with its own sums: the general
  // loop's [kh, kw, c, f], the bias's, and the channel path's [f, kh, kw, c].
  const int parts = static_cast<int>(
      std::min<int64_t>(threadsPerReplica(ctx.replicas), s->conv.n));
  const int64_t kernelElements = s->kernelElements();
  const int64_t stride = (channels ? 2 : 1) * kernelElements + f;
  auto partial =
      std::make_shared<std::vector<float>>(static_cast<size_t>(parts * stride));
  // The result in the plan's kernel order, as float32 (`reduced`: rounded
  // from here).
  auto result = std::make_shared<std::vector<float>>(
      static_cast<size_t>(reduced ? kernelElements : 0));
  const void *x = ins[0].data, *y = ins[2].data, *dy = ins[3].data;
  const int32_t *argmax = ins[1].i32();
  void *kernelGrad = outs[0].data;
  void *workspace = writesWorkspace ? outs[1].data : nullptr;
  void *biasGrad = outs.size() == 3 ? outs[2].data : nullptr;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &,
            const Tensors &) {
    useReplicaThreads(ctx);
    const Shape &sh = *s;
    float *sums = partial->data();
    const int64_t inImage = sh.conv.h.in * sh.conv.w.in * sh.conv.c;
    const int64_t pooledImage = sh.pool.h.out * sh.pool.w.out * f;
    const int64_t denseImageElements = sh.pool.h.in * sh.pool.w.in * f;
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int part = 0; part < parts; ++part) {
      float *dk = sums + part * stride, *bias = dk + kernelElements,
            *dkF = bias + f;
      std::fill(dk, dk + stride, 0.0f);
      float *scratch = threadScratch<float>(static_cast<size_t>(f));
      // A reduced launch's image n, widened: x, y and dy.
      float *wide = reduced ? threadScratch<float, 1>(static_cast<size_t>(
                                  inImage + 2 * pooledImage))
                            : nullptr;
      // The channel path's gathered gradients and offsets, and a reduced
      // launch's dense gradient before it is rounded.
      float *routedBuf = threadScratch<float, 2>(
          static_cast<size_t>(channels ? pooledImage : 0));
      int32_t *offsetBuf = threadScratch<int32_t, 3>(
          static_cast<size_t>(channels ? pooledImage : 0));
      // The same by filter, the zeros left out (listByFilter).
      float *valueBuf = threadScratch<float, 6>(
          static_cast<size_t>(channels ? pooledImage : 0));
      int32_t *listedBuf = threadScratch<int32_t, 4>(
          static_cast<size_t>(channels ? pooledImage : 0));
      int32_t *countBuf =
          threadScratch<int32_t, 5>(static_cast<size_t>(channels ? f : 0));
      float *denseBuf = threadScratch<float, 4>(static_cast<size_t>(
          writesWorkspace && reduced ? denseImageElements : 0));
      float *paddedBuf = threadScratch<float, 5>(static_cast<size_t>(
          channels && padded.copies ? padded.elements() : 0));
      const int64_t first = sh.conv.n * part / parts,
                    last = sh.conv.n * (part + 1) / parts;
      for (int64_t n = first; n < last; ++n) {
        // Image n's operands, and the image index the whole-batch loops
        // read them at.
        const float *xn = static_cast<const float *>(x),
                    *yn = static_cast<const float *>(y),
                    *dyn = static_cast<const float *>(dy);
        const int32_t *an = argmax;
        int64_t at = n;
        if (reduced) {
          const auto half = [](const void *p, int64_t offset) {
            return static_cast<const uint16_t *>(p) + offset;
          };
          float *wy = wide + inImage, *wdy = wy + pooledImage;
          convertFloats(half(x, n * inImage), type, wide, plan::DType::f32,
                        inImage);
          convertFloats(half(y, n * pooledImage), type, wy, plan::DType::f32,
                        pooledImage);
          convertFloats(half(dy, n * pooledImage), type, wdy, plan::DType::f32,
                        pooledImage);
          xn = wide;
          yn = wy;
          dyn = wdy;
          an = argmax + n * pooledImage;
          at = 0;
        }
        // The same, from image n's first element.
        const float *xImage = xn + at * inImage,
                    *yImage = yn + at * pooledImage,
                    *dyImage = dyn + at * pooledImage;
        const int32_t *aImage = an + at * pooledImage;
        if (writesWorkspace) {
          if (reduced) {
            maxPoolArgmaxGradImage(sh.pool, aImage, yImage, dyImage, denseBuf,
                                   sh.relu, nullptr, false);
            convertFloats(denseBuf, plan::DType::f32,
                          static_cast<uint16_t *>(workspace) +
                              n * denseImageElements,
                          type, denseImageElements);
          } else {
            maxPoolArgmaxGradImage(sh.pool, aImage, yImage, dyImage,
                                   static_cast<float *>(workspace) +
                                       n * denseImageElements,
                                   sh.relu, nullptr, false);
          }
        }
        if (vector)
          vector(sh, at, fast.data(), xn, an, yn, dyn, dk, bias);
        if (channels && n + 1 < last) {
          // The next image's operands, fetched while this one is summed.
          const size_t typeBytes = reduced ? 2 : 4;
          const auto fetch = [](const void *p, size_t bytes) {
            for (size_t i = 0; i < bytes; i += 64)
              _mm_prefetch(static_cast<const char *>(p) + i, _MM_HINT_T1);
          };
          fetch(static_cast<const char *>(x) + (n + 1) * inImage * typeBytes,
                inImage * typeBytes);
          fetch(static_cast<const char *>(y) +
                    (n + 1) * pooledImage * typeBytes,
                pooledImage * typeBytes);
          fetch(static_cast<const char *>(dy) +
                    (n + 1) * pooledImage * typeBytes,
                pooledImage * typeBytes);
          fetch(argmax + (n + 1) * pooledImage, pooledImage * 4);
        }
        if (channels) {
          const float *patches = xImage;
          if (padded.copies) {
            padded.fill(sh.conv, xImage, paddedBuf);
            patches = paddedBuf;
          }
          gatherRouted(sh, padded, aImage, yImage, dyImage, routedBuf,
                       offsetBuf);
          listByFilter(sh, routedBuf, offsetBuf, valueBuf, listedBuf, countBuf);
          channels(sh, padded, patches, valueBuf, listedBuf, countBuf, dkF);
          for (int64_t i = 0; i < pooledImage; i += f) {
            const float *r = routedBuf + i;
#pragma omp simd
            for (int64_t k = 0; k < f; ++k)
              bias[k] += r[k];
          }
        }
        for (int64_t ph = 0; ph < sh.pool.h.out; ++ph)
          for (int64_t pw = 0; pw < sh.pool.w.out; ++pw)
            if (!fast[ph * sh.pool.w.out + pw])
              accumulatePosition(sh, at, ph, pw, xn, an, yn, dyn, dk, bias,
                                 scratch);
      }
    }
    for (int part = 1; part < parts; ++part) {
      const float *add = sums + part * stride;
#pragma omp simd
      for (int64_t i = 0; i < stride; ++i)
        sums[i] += add[i];
    }
    float *kernelOut =
        reduced ? result->data() : static_cast<float *>(kernelGrad);
    const ConvChannels &cc = sh.channels;
    const int64_t cg = cc.channelsPerGroup;
    const int64_t kh = sh.conv.h.window, kw = sh.conv.w.window;
    const float *channelSums = channels ? sums + kernelElements + f : nullptr;
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t o = 0; o < f; ++o)
            kernelOut[cc.offset(i, j, c, o)] =
                sums[((i * kw + j) * cg + c) * f + o] +
                (channels ? channelSums[((o * kh + i) * kw + j) * cg + c]
                          : 0.0f);
    const float *biasSums = sums + kernelElements;
    if (reduced) {
      convertFloats(kernelOut, plan::DType::f32, kernelGrad, type,
                    kernelElements);
      if (biasGrad)
        convertFloats(biasSums, plan::DType::f32, biasGrad, type, f);
    } else if (biasGrad) {
      std::memcpy(biasGrad, biasSums, static_cast<size_t>(f) * sizeof(float));
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorConvPoolGradKernels(KernelRegistry &registry) {
  // Takes bfloat16 and float16 itself, on every path.
  registry.addFactory(kName, Backend::cpu, makeFusedConv2dPoolGradKernel,
                      hasReducedFloats);
}

} // namespace graph::runtime::cpu
