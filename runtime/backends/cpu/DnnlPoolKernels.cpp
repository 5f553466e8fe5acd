//===- DnnlPoolKernels.cpp - pooling on oneDNN, max-pool gradient own -----===//
//
// max_pool2d, avg_pool2d (padding excluded from the mean, as Keras does) and
// their global forms on oneDNN pooling, NHWC throughout. The global ones
// are pooling with the whole image as the window: [N, C] is NHWC [N, 1, 1,
// C].
//
// max_pool2d_grad is an own loop: oneDNN's max-pool backward wants the
// workspace of a forward_training pass, which the op does not carry (it
// takes x, y and dy), and regenerating it would cost a second forward pass.
// The loop finds each window's first maximum in row-major window order, the
// reference's tie rule, 8 channels at a time; the usual 2x2/2 valid pool has
// its own AVX2 loop (three compares and four masked stores a register).
// With relu_grad (graph-fuse) it also applies the gradient of the relu that
// produced x, in the same pass; with a second output (input_grad_sum) it
// sums dx per channel as it writes it: each image's sums go to their own
// row, and the rows are added in image order, so the result does not depend
// on the thread count. max_pool2d_argmax_grad routes dy by the argmax
// fused_conv2d_pool recorded instead of searching x, which it does not
// read.
//
// bf16 launches (a mixed_bfloat16 plan) of max_pool2d and max_pool2d_grad
// skip the widened copies (ReducedPrecision.h) every other kernel's bf16
// launch takes, bit for bit the same (and max_pool2d_argmax_grad's bf16
// and f16 ones, an image at a time too): the maximum of bfloat16 values is
// one of them, so oneDNN's bf16 pooling rounds nothing; the gradient widens
// one image of x and dy at a time into a thread's scratch, runs the float32
// loop there and rounds that image's dx to nearest even, as the widened
// launch rounds all of it. What they save is the whole-tensor passes: on the
// seed CNN at batch 256, converting conv 1's 11 MB activation to 22 MB of
// floats and its gradient back, every step.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/base/Bfloat16.h"
#include "runtime/core/ReducedPrecision.h"

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;

Status fail(const char *kName, const std::string &message) {
  return Status::error(std::string(kName) + ": " + message);
}

/// The geometry of pooling NHWC `input` to `pooled` with `cfg`'s window.
Status poolShape(const char *kName, const KernelConfig &cfg,
                 const std::vector<int64_t> &input,
                 const std::vector<int64_t> &pooled, WindowGeometry &g) {
  std::vector<int64_t> size = cfg.getInts("pool_size");
  if (size.size() == 1)
    size.push_back(size[0]);
  if (size.empty())
    size = {2, 2};
  if (size.size() != 2)
    return fail(kName, "pool_size must be a pair");
  if (Status s = resolveWindow(kName, cfg, input, size[0], size[1], false, g);
      !s)
    return s;
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, g.c};
  if (pooled != expected)
    return fail(kName, "pooled tensor is " + shapeText(pooled) + ", expected " +
                           shapeText(expected));
  return Status::ok();
}

constexpr auto kF32 = memory::data_type::f32;

memory::desc inputDesc(const WindowGeometry &g, memory::data_type type = kF32) {
  return nhwcDesc(g.n, g.h.in, g.w.in, g.c, type);
}
memory::desc pooledDesc(const WindowGeometry &g,
                        memory::data_type type = kF32) {
  return nhwcDesc(g.n, g.h.out, g.w.out, g.c, type);
}

dnnl::pooling_forward::desc forwardDesc(dnnl::prop_kind prop,
                                        dnnl::algorithm alg,
                                        const WindowGeometry &g,
                                        memory::data_type type = kF32) {
  return {
      prop,           alg,           inputDesc(g, type), pooledDesc(g, type),
      dnnlStrides(g), dnnlWindow(g), dnnlPadBefore(g),   dnnlPadAfter(g)};
}

/// A forward pooling launch: x (ins[0]) to y (outs[0]), both of `type`.
Status makeForward(const char *kName, dnnl::algorithm alg,
                   const KernelContext &ctx, const WindowGeometry &g,
                   memory::data_type type, const Tensors &ins,
                   const Tensors &outs, KernelFn &out) {
  ReplicaThreadsScope threads(ctx);
  try {
    // forward_inference: a max pool then keeps no workspace (see the file
    // comment).
    dnnl::pooling_forward::primitive_desc pd(
        forwardDesc(dnnl::prop_kind::forward_inference, alg, g, type),
        userScratchpad(), dnnlEngine());
    DnnlLaunch launch(kName);
    launch.add(dnnl::pooling_forward(pd), pd,
               {{DNNL_ARG_SRC, bind(inputDesc(g, type), ins[0].data)},
                {DNNL_ARG_DST, bind(pooledDesc(g, type), outs[0].data)}});
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName, std::string("oneDNN refused the pooling: ") + e.what());
  }
  return Status::ok();
}

/// A backward average-pooling launch: dy (ins[0]) to dx (outs[0]).
Status makeAvgBackward(const char *kName, const KernelContext &ctx,
                       const WindowGeometry &g, const Tensors &ins,
                       const Tensors &outs, KernelFn &out) {
  ReplicaThreadsScope threads(ctx);
  try {
    dnnl::algorithm alg = dnnl::algorithm::pooling_avg_exclude_padding;
    dnnl::pooling_forward::primitive_desc hint(
        forwardDesc(dnnl::prop_kind::forward_training, alg, g), dnnlEngine());
    dnnl::pooling_backward::primitive_desc pd(
        {alg, inputDesc(g), pooledDesc(g), dnnlStrides(g), dnnlWindow(g),
         dnnlPadBefore(g), dnnlPadAfter(g)},
        userScratchpad(), dnnlEngine(), hint);
    DnnlLaunch launch(kName);
    launch.add(dnnl::pooling_backward(pd), pd,
               {{DNNL_ARG_DIFF_DST, bind(pooledDesc(g), ins[0].data)},
                {DNNL_ARG_DIFF_SRC, bind(inputDesc(g), outs[0].data)}});
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return fail(kName, std::string("oneDNN refused the pooling: ") + e.what());
  }
  return Status::ok();
}

Status makeMaxPool2d(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "max_pool2d";
  // bf16 from a mixed_bfloat16 plan (poolingTakesBf16), else float32.
  memory::data_type type;
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kDnnlOperands); !s)
    return s;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  WindowGeometry g;
  if (Status s = poolShape(kName, cfg, ins[0].shape, outs[0].shape, g); !s)
    return s;
  return makeForward(kName, dnnl::algorithm::pooling_max, ctx, g, type, ins,
                     outs, out);
}

Status makeAvgPool2d(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "avg_pool2d";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  WindowGeometry g;
  if (Status s = poolShape(kName, cfg, ins[0].shape, outs[0].shape, g); !s)
    return s;
  return makeForward(kName, dnnl::algorithm::pooling_avg_exclude_padding, ctx,
                     g, kF32, ins, outs, out);
}

/// ins: output_grad; out: input_grad (the forward input's shape).
Status makeAvgPool2dGrad(const KernelContext &ctx, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "avg_pool2d_grad";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  WindowGeometry g;
  if (Status s = poolShape(kName, cfg, outs[0].shape, ins[0].shape, g); !s)
    return s;
  return makeAvgBackward(kName, ctx, g, ins, outs, out);
}

/// The window of a global pool: the whole image, one output per channel.
Status globalShape(const char *kName, const std::vector<int64_t> &image,
                   const std::vector<int64_t> &pooled, WindowGeometry &g) {
  if (image.size() != 4)
    return fail(kName, "needs an NHWC image, got " + shapeText(image));
  if (pooled != std::vector<int64_t>{image[0], image[3]})
    return fail(kName, "pooled tensor is " + shapeText(pooled) + ", expected " +
                           shapeText({image[0], image[3]}));
  KernelConfig whole;
  whole.set("padding", std::string("valid"));
  return resolveWindow(kName, whole, image, image[1], image[2], false, g);
}

Status makeGlobalAvgPool2d(const KernelContext &ctx, const KernelConfig &,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  static constexpr const char *kName = "global_avg_pool2d";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  WindowGeometry g;
  if (Status s = globalShape(kName, ins[0].shape, outs[0].shape, g); !s)
    return s;
  return makeForward(kName, dnnl::algorithm::pooling_avg_exclude_padding, ctx,
                     g, kF32, ins, outs, out);
}

Status makeGlobalAvgPool2dGrad(const KernelContext &ctx, const KernelConfig &,
                               const Tensors &ins, const Tensors &outs,
                               KernelFn &out) {
  static constexpr const char *kName = "global_avg_pool2d_grad";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  WindowGeometry g;
  if (Status s = globalShape(kName, outs[0].shape, ins[0].shape, g); !s)
    return s;
  return makeAvgBackward(kName, ctx, g, ins, outs, out);
}

/// Clears what no window of a tiling pool (stride == window) covers: the
/// right columns and bottom rows a valid pool leaves out.
void clearUncovered(const WindowGeometry &g, float *dxn) {
  const int64_t c = g.c, inW = g.w.in;
  const int64_t coverH =
      std::min(g.h.in, (g.h.out - 1) * g.h.stride - g.h.padBefore + g.h.window);
  const int64_t coverW =
      std::min(inW, (g.w.out - 1) * g.w.stride - g.w.padBefore + g.w.window);
  for (int64_t ih = 0; ih < coverH; ++ih)
    std::memset(dxn + (ih * inW + coverW) * c, 0,
                sizeof(float) * (inW - coverW) * c);
  std::memset(dxn + coverH * inW * c, 0,
              sizeof(float) * (g.h.in - coverH) * inW * c);
}

/// Whether the windows tile the input (stride == window): each input
/// position is in at most one window.
bool isTiling(const WindowGeometry &g) {
  return g.h.stride == g.h.window && g.w.stride == g.w.window;
}

/// Clears image dx before the windows write it: a tiling pool writes every
/// covered position once, so only what no window covers; overlapping
/// windows add, so all of it.
void clearBeforeWindows(const WindowGeometry &g, float *dxn) {
  if (isTiling(g))
    clearUncovered(g, dxn);
  else
    std::memset(dxn, 0, sizeof(float) * g.h.in * g.w.in * g.c);
}

/// Whether maxPoolGrad2x2 takes the pool: 2x2 windows, stride 2, every
/// window inside the input (valid padding), channels a multiple of 8.
bool isFull2x2(const WindowGeometry &g) {
  return g.h.window == 2 && g.w.window == 2 && g.h.stride == 2 &&
         g.w.stride == 2 && g.h.padBefore == 0 && g.w.padBefore == 0 &&
         2 * g.h.out <= g.h.in && 2 * g.w.out <= g.w.in && g.c % 8 == 0;
}

/// One image of the usual pool (isFull2x2), 8 channels to an AVX2 register.
/// The first maximum of a window's four positions in row-major order is
/// found with three strict comparisons, as the reference does (a NaN never
/// wins; ties go to the earlier position); each position gets dy or zero,
/// and with `relu` zero also where x <= 0. With `sums`, the image's dx summed
/// per channel goes there: a window gives at most one non-zero.
void maxPoolGrad2x2(const WindowGeometry &g, const float *xn, const float *dyn,
                    float *dxn, bool relu, float *sums) {
  const int64_t c = g.c, rowStep = g.w.in * c;
  const __m256 zero = _mm256_setzero_ps();
  const __m256 ones = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  clearUncovered(g, dxn);
  for (int64_t oh = 0; oh < g.h.out; ++oh)
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      const int64_t at = (2 * oh * g.w.in + 2 * ow) * c;
      const float *x0 = xn + at, *x2 = x0 + rowStep;
      float *d0 = dxn + at, *d2 = d0 + rowStep;
      const float *dyw = dyn + (oh * g.w.out + ow) * c;
      for (int64_t k = 0; k < c; k += 8) {
        __m256 a = _mm256_loadu_ps(x0 + k), b = _mm256_loadu_ps(x0 + c + k);
        __m256 e = _mm256_loadu_ps(x2 + k), f = _mm256_loadu_ps(x2 + c + k);
        __m256 best = a;
        __m256 sb = _mm256_cmp_ps(b, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, b, sb);
        __m256 se = _mm256_cmp_ps(e, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, e, se);
        __m256 sf = _mm256_cmp_ps(f, best, _CMP_GT_OQ);
        // The last strictly greater position wins.
        __m256 wf = sf;
        __m256 we = _mm256_andnot_ps(sf, se);
        __m256 later = _mm256_or_ps(se, sf);
        __m256 wb = _mm256_andnot_ps(later, sb);
        __m256 wa = _mm256_andnot_ps(_mm256_or_ps(later, sb), ones);
        __m256 d = _mm256_loadu_ps(dyw + k);
        if (relu) {
          wa = _mm256_and_ps(wa, _mm256_cmp_ps(a, zero, _CMP_GT_OQ));
          wb = _mm256_and_ps(wb, _mm256_cmp_ps(b, zero, _CMP_GT_OQ));
          we = _mm256_and_ps(we, _mm256_cmp_ps(e, zero, _CMP_GT_OQ));
          wf = _mm256_and_ps(wf, _mm256_cmp_ps(f, zero, _CMP_GT_OQ));
        }
        _mm256_storeu_ps(d0 + k, _mm256_and_ps(wa, d));
        _mm256_storeu_ps(d0 + c + k, _mm256_and_ps(wb, d));
        _mm256_storeu_ps(d2 + k, _mm256_and_ps(we, d));
        _mm256_storeu_ps(d2 + c + k, _mm256_and_ps(wf, d));
        if (sums) {
          __m256 won = _mm256_or_ps(_mm256_or_ps(wa, wb), _mm256_or_ps(we, wf));
          _mm256_storeu_ps(sums + k, _mm256_add_ps(_mm256_loadu_ps(sums + k),
                                                   _mm256_and_ps(won, d)));
        }
      }
    }
}

/// dx of one image of a max pool: each dy goes to the first maximum of x in
/// its window. An image's dx is written by one thread, so overlapping
/// windows may accumulate. When the windows tile the input (stride ==
/// window on both axes, the usual 2x2/2 pool) no position is in two windows:
/// each window's positions are written once (dy at the maximum, zero
/// elsewhere) and only what no window covers is cleared first, instead of
/// clearing all of dx and adding into it. With `relu` (max_pool2d_grad
/// {relu_grad}), dx is also zero where x <= 0: the gradient of the relu that
/// produced x. With `sums` ([C]), the image's dx summed per channel goes
/// there.
void maxPoolGradImage(const WindowGeometry &g, const float *xn,
                      const float *dyn, float *dxn, bool relu, float *sums) {
  constexpr int64_t kBlock = 8; // one AVX2 register of channels
  const int64_t c = g.c, inW = g.w.in;
  const int64_t inImage = g.h.in * inW * c;
  const bool tiled = isTiling(g);
  if (sums)
    std::fill(sums, sums + c, 0.0f);
  if (isFull2x2(g)) {
    maxPoolGrad2x2(g, xn, dyn, dxn, relu, sums);
    return;
  }
  clearBeforeWindows(g, dxn);
  for (int64_t oh = 0; oh < g.h.out; ++oh) {
    const WindowSpan h = windowSpan(g.h, oh);
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      const WindowSpan w = windowSpan(g.w, ow);
      const float *dyw = dyn + (oh * g.w.out + ow) * c;
      for (int64_t c0 = 0; c0 < c; c0 += kBlock) {
        int64_t width = std::min(kBlock, c - c0);
        float best[kBlock];
        int32_t at[kBlock];
        // The window's first in-range position starts as the maximum;
        // later ones replace it only when strictly greater.
        int32_t first = static_cast<int32_t>(h.begin * inW + w.begin);
        for (int64_t k = 0; k < width; ++k) {
          best[k] = xn[first * c + c0 + k];
          at[k] = first;
        }
        for (int64_t ih = h.begin; ih < h.end; ++ih)
          for (int64_t iw = ih == h.begin ? w.begin + 1 : w.begin; iw < w.end;
               ++iw) {
            int32_t pos = static_cast<int32_t>(ih * inW + iw);
            const float *xp = xn + pos * c + c0;
#pragma omp simd
            for (int64_t k = 0; k < width; ++k) {
              bool greater = xp[k] > best[k];
              best[k] = greater ? xp[k] : best[k];
              at[k] = greater ? pos : at[k];
            }
          }
        if (tiled) {
          for (int64_t ih = h.begin; ih < h.end; ++ih)
            for (int64_t iw = w.begin; iw < w.end; ++iw) {
              int32_t pos = static_cast<int32_t>(ih * inW + iw);
              float *dxp = dxn + pos * c + c0;
#pragma omp simd
              for (int64_t k = 0; k < width; ++k)
                dxp[k] = at[k] == pos ? dyw[c0 + k] : 0.0f;
            }
        } else {
          for (int64_t k = 0; k < width; ++k)
            dxn[at[k] * c + c0 + k] += dyw[c0 + k];
        }
      }
    }
  }
  if (relu)
#pragma omp simd
    for (int64_t i = 0; i < inImage; ++i)
      dxn[i] = xn[i] > 0.0f ? dxn[i] : 0.0f;
  if (sums)
    for (int64_t i = 0; i < inImage; i += c)
#pragma omp simd
      for (int64_t k = 0; k < c; ++k)
        sums[k] += dxn[i + k];
}

/// dx of a max pool, an image a thread at a time (maxPoolGradImage). With
/// `imageSums` ([N, C]), image n's dx summed per channel goes to row n.
void maxPoolGrad(const WindowGeometry &g, const float *x, const float *dy,
                 float *dx, bool relu, float *imageSums) {
  const int64_t inImage = g.h.in * g.w.in * g.c;
  const int64_t outImage = g.h.out * g.w.out * g.c;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < g.n; ++n)
    maxPoolGradImage(g, x + n * inImage, dy + n * outImage, dx + n * inImage,
                     relu, imageSums ? imageSums + n * g.c : nullptr);
}

/// A pool gradient of a bfloat16 or float16 launch (`type`), an image at a
/// time: image n's first input `a` (`aImage` elements an image: x, or the
/// pooled y) and dy widened into the thread's scratch (a few hundred KB: in
/// L2), `image(n, an, dyn, dxn)` computing its dx there with the float32
/// loop, rounded to nearest even into dx. The values are the widened
/// launch's; the whole-tensor conversions are gone.
template <typename ImageFn>
void widenedPoolGrad(const WindowGeometry &g, plan::DType type,
                     const uint16_t *a, int64_t aImage, const uint16_t *dy,
                     uint16_t *dx, ImageFn image) {
  const int64_t inImage = g.h.in * g.w.in * g.c;
  const int64_t outImage = g.h.out * g.w.out * g.c;
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < g.n; ++n) {
    float *an = vec::threadScratch<float>(aImage + outImage + inImage);
    float *dyn = an + aImage, *dxn = dyn + outImage;
    convertFloats(a + n * aImage, type, an, plan::DType::f32, aImage);
    convertFloats(dy + n * outImage, type, dyn, plan::DType::f32, outImage);
    image(n, an, dyn, dxn);
    convertFloats(dxn, plan::DType::f32, dx + n * inImage, type, inImage);
  }
}

/// maxPoolGrad on bfloat16 x, dy and dx (widenedPoolGrad).
void maxPoolGradBf16(const WindowGeometry &g, const uint16_t *x,
                     const uint16_t *dy, uint16_t *dx, bool relu,
                     float *imageSums) {
  widenedPoolGrad(
      g, plan::DType::bf16, x, g.h.in * g.w.in * g.c, dy, dx,
      [&](int64_t n, const float *xn, const float *dyn, float *dxn) {
        maxPoolGradImage(g, xn, dyn, dxn, relu,
                         imageSums ? imageSums + n * g.c : nullptr);
      });
}

/// A pool gradient's optional second output, input_grad_sum: the gradient
/// loop writes one row of per-channel sums an image (imageRows), and
/// finish() adds the rows in image order, in double, into the output: the
/// result does not depend on the thread count, and is the reference's
/// bias_add_grad to float rounding (a row sums at most one window's worth
/// of terms a position).
class ChannelSums {
public:
  /// For `outs` = {dx} (no sums) or {dx, sum}; an error naming `kName`
  /// when the sum is not one per channel.
  static Status make(const char *kName, const WindowGeometry &g,
                     const Tensors &outs, ChannelSums &sums) {
    if (outs.size() < 2)
      return Status::ok();
    if (outs[1].elements() != g.c)
      return fail(kName, "input_grad_sum " + shapeText(outs[1].shape) +
                             " does not match " + std::to_string(g.c) +
                             " channels");
    sums.images_ = g.n;
    sums.channels_ = g.c;
    sums.rows_ = std::make_shared<std::vector<float>>(g.n * g.c);
    sums.out_ = outs[1].data;
    sums.type_ = outs[1].dtype;
    return Status::ok();
  }
  /// [N, C] rows for the gradient loop; null without an input_grad_sum.
  float *imageRows() const { return out_ ? rows_->data() : nullptr; }
  void finish() const {
    if (!out_)
      return;
    for (int64_t k = 0; k < channels_; ++k) {
      double total = 0.0;
      for (int64_t n = 0; n < images_; ++n)
        total += (*rows_)[n * channels_ + k];
      // A bf16 or f16 sum is rounded from the float, as a widened launch
      // does.
      const float sum = static_cast<float>(total);
      convertFloats(&sum, plan::DType::f32,
                    static_cast<char *>(out_) +
                        k * (type_ == plan::DType::f32 ? 4 : 2),
                    type_, 1);
    }
  }

private:
  int64_t images_ = 0, channels_ = 0;
  std::shared_ptr<std::vector<float>> rows_; // kept across steps
  void *out_ = nullptr;                      // of type_
  plan::DType type_ = plan::DType::f32;
};

/// ins: x, y, dy; outs: dx and optionally its per-channel sum. y is not
/// needed (the maximum is found in x again, so a y from any backend gives
/// the reference's routing) and is only checked.
Status makeMaxPool2dGrad(const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "max_pool2d_grad";
  if (outs.size() != 1 && outs.size() != 2)
    return fail(kName, "writes input_grad and optionally input_grad_sum, got " +
                           std::to_string(outs.size()) + " outputs");
  if (Status s =
          checkOperands(kName, ins, outs, 3, 3, outs.size(), kDnnlOperands);
      !s)
    return s;
  // All bf16 (allBf16) or all float32.
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  WindowGeometry g;
  if (Status s = poolShape(kName, cfg, ins[0].shape, ins[2].shape, g); !s)
    return s;
  if (ins[1].shape != ins[2].shape)
    return fail(kName, "output " + shapeText(ins[1].shape) +
                           " and output_grad " + shapeText(ins[2].shape) +
                           " differ");
  if (outs[0].shape != ins[0].shape)
    return fail(kName, "input_grad " + shapeText(outs[0].shape) +
                           " does not have the input's shape " +
                           shapeText(ins[0].shape));
  const void *x = ins[0].data, *dy = ins[2].data;
  void *dx = outs[0].data;
  bool relu = cfg.getInt("relu_grad", 0) != 0;
  bool bf16 = type == memory::data_type::bf16;
  ChannelSums sums;
  if (Status s = ChannelSums::make(kName, g, outs, sums); !s)
    return s;
  out = [g, x, dy, dx, relu, bf16, sums](const KernelContext &ctx,
                                         const KernelConfig &, const Tensors &,
                                         const Tensors &) {
    useReplicaThreads(ctx);
    if (bf16)
      maxPoolGradBf16(g, static_cast<const uint16_t *>(x),
                      static_cast<const uint16_t *>(dy),
                      static_cast<uint16_t *>(dx), relu, sums.imageRows());
    else
      maxPoolGrad(g, static_cast<const float *>(x),
                  static_cast<const float *>(dy), static_cast<float *>(dx),
                  relu, sums.imageRows());
    sums.finish();
    return Status::ok();
  };
  return Status::ok();
}

/// Gradients at least this large are written around the caches (L2 is 1 MiB
/// a core on these machines, L3 32 MiB shared with everything else).
constexpr int64_t kStreamingBytes = int64_t(4) << 20;

/// Whether a dx of `g` is large enough to be written with non-temporal
/// stores: a plain store first reads the line it fills (the seed CNN's
/// conv 1: 22 MB read for nothing a step), and the convolution gradient
/// that reads dx next finds little of it in cache either way. Measured on
/// the seed CNN, median step 24.6-25.5 -> 24.0-24.5 ms. Rows of c floats
/// start 16-byte aligned when the buffer does and c is a multiple of 8.
bool streamsArgmaxGrad(const WindowGeometry &g, const void *dx) {
  return isTiling(g) && g.c % 8 == 0 &&
         reinterpret_cast<uintptr_t>(dx) % 16 == 0 &&
         g.n * g.h.in * g.w.in * g.c * int64_t(sizeof(float)) >=
             kStreamingBytes;
}

} // namespace

/// Documented in VectorKernels.h (fused_conv2d_pool_grad_kernel shares it).
void vec::maxPoolArgmaxGradImage(const WindowGeometry &g, const int32_t *an,
                                 const float *yn, const float *dyn, float *dxn,
                                 bool relu, float *sums, bool streaming) {
  const int64_t c = g.c, inW = g.w.in;
  const bool tiled = isTiling(g);
  if (sums)
    std::fill(sums, sums + c, 0.0f);
  clearBeforeWindows(g, dxn);
  for (int64_t oh = 0; oh < g.h.out; ++oh) {
    const WindowSpan h = windowSpan(g.h, oh);
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      const WindowSpan w = windowSpan(g.w, ow);
      const int64_t at = (oh * g.w.out + ow) * c;
      const int32_t *a = an + at;
      const float *yw = yn + at, *dyw = dyn + at;
      if (streaming) {
        for (int64_t ih = h.begin; ih < h.end; ++ih)
          for (int64_t iw = w.begin; iw < w.end; ++iw) {
            const __m256i pos =
                _mm256_set1_epi32(windowPosition(g, h, w, ih, iw));
            float *dxp = dxn + (ih * inW + iw) * c;
            for (int64_t k = 0; k < c; k += 8) {
              __m256 keep = _mm256_castsi256_ps(_mm256_cmpeq_epi32(
                  _mm256_loadu_si256(reinterpret_cast<const __m256i *>(a + k)),
                  pos));
              if (relu)
                keep = _mm256_and_ps(
                    keep, _mm256_cmp_ps(_mm256_loadu_ps(yw + k),
                                        _mm256_setzero_ps(), _CMP_GT_OQ));
              // Two 16-byte streamed stores: rows need only 16-byte
              // alignment (malloc's) for them.
              __m256 v = _mm256_and_ps(keep, _mm256_loadu_ps(dyw + k));
              _mm_stream_ps(dxp + k, _mm256_castps256_ps128(v));
              _mm_stream_ps(dxp + k + 4, _mm256_extractf128_ps(v, 1));
            }
          }
      } else if (tiled) {
        for (int64_t ih = h.begin; ih < h.end; ++ih)
          for (int64_t iw = w.begin; iw < w.end; ++iw) {
            const int32_t pos = windowPosition(g, h, w, ih, iw);
            float *dxp = dxn + (ih * inW + iw) * c;
#pragma omp simd
            for (int64_t k = 0; k < c; ++k)
              dxp[k] = a[k] == pos && (!relu || yw[k] > 0.0f) ? dyw[k] : 0.0f;
          }
      } else {
        for (int64_t k = 0; k < c; ++k)
          if (!relu || yw[k] > 0.0f)
            dxn[(argmaxRow(g, oh, a[k]) * inW + argmaxColumn(g, ow, a[k])) * c +
                k] += dyw[k];
      }
      if (sums)
#pragma omp simd
        for (int64_t k = 0; k < c; ++k)
          sums[k] += !relu || yw[k] > 0.0f ? dyw[k] : 0.0f;
    }
  }
  if (streaming)
    _mm_sfence(); // this thread's streamed stores, before the barrier
}

namespace {

/// maxPoolArgmaxGradImage over the batch, float32; `imageSums` as for
/// maxPoolGrad.
void maxPoolArgmaxGrad(const WindowGeometry &g, const int32_t *argmax,
                       const float *y, const float *dy, float *dx, bool relu,
                       float *imageSums) {
  const int64_t inImage = g.h.in * g.w.in * g.c;
  const int64_t outImage = g.h.out * g.w.out * g.c;
  const bool streaming = streamsArgmaxGrad(g, dx);
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < g.n; ++n)
    vec::maxPoolArgmaxGradImage(g, argmax + n * outImage, y + n * outImage,
                                dy + n * outImage, dx + n * inImage, relu,
                                imageSums ? imageSums + n * g.c : nullptr,
                                streaming);
}

/// maxPoolArgmaxGrad on a bfloat16 or float16 plan's y, dy and dx (`type`,
/// widenedPoolGrad): exact where the windows tile, each position of dx one
/// dy or zero.
void maxPoolArgmaxGradReduced(const WindowGeometry &g, plan::DType type,
                              const int32_t *argmax, const uint16_t *y,
                              const uint16_t *dy, uint16_t *dx, bool relu,
                              float *imageSums) {
  const int64_t outImage = g.h.out * g.w.out * g.c;
  widenedPoolGrad(
      g, type, y, outImage, dy, dx,
      [&](int64_t n, const float *yn, const float *dyn, float *dxn) {
        vec::maxPoolArgmaxGradImage(
            g, argmax + n * outImage, yn, dyn, dxn, relu,
            imageSums ? imageSums + n * g.c : nullptr, false);
      });
}

/// ins: argmax (i32), y, dy; outs: dx and optionally its per-channel sum.
Status makeMaxPool2dArgmaxGrad(const KernelContext &, const KernelConfig &cfg,
                               const Tensors &ins, const Tensors &outs,
                               KernelFn &out) {
  static constexpr const char *kName = "max_pool2d_argmax_grad";
  if (outs.size() != 1 && outs.size() != 2)
    return fail(kName, "writes input_grad and optionally input_grad_sum, got " +
                           std::to_string(outs.size()) + " outputs");
  if (ins.size() != 3 || ins[0].dtype != plan::DType::i32 || !ins[0].data)
    return fail(kName, "takes an i32 argmax, the output and output_grad");
  if (Status s = checkOperands(
          kName, {ins[1], ins[2]}, outs, 2, 2, outs.size(),
          OperandRule::anyFloat().because(
              " (the cpu backend computes in f32, rounding to bf16 or f16)"));
      !s)
    return s;
  const plan::DType type = ins[1].dtype;
  for (const TensorRef *t : {&ins[2], &outs[0]})
    if (t->dtype != type)
      return fail(kName, "output, output_grad and input_grad must have one "
                         "type");
  WindowGeometry g;
  if (Status s = poolShape(kName, cfg, outs[0].shape, ins[2].shape, g); !s)
    return s;
  if (ins[0].shape != ins[2].shape || ins[1].shape != ins[2].shape)
    return fail(kName, "argmax " + shapeText(ins[0].shape) + ", output " +
                           shapeText(ins[1].shape) + " and output_grad " +
                           shapeText(ins[2].shape) + " differ");
  const int32_t *argmax = ins[0].i32();
  const void *y = ins[1].data, *dy = ins[2].data;
  void *dx = outs[0].data;
  bool relu = cfg.getInt("relu_grad", 0) != 0;
  ChannelSums sums;
  if (Status s = ChannelSums::make(kName, g, outs, sums); !s)
    return s;
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &,
            const Tensors &) {
    useReplicaThreads(ctx);
    if (type == plan::DType::f32)
      maxPoolArgmaxGrad(g, argmax, static_cast<const float *>(y),
                        static_cast<const float *>(dy),
                        static_cast<float *>(dx), relu, sums.imageRows());
    else
      maxPoolArgmaxGradReduced(
          g, type, argmax, static_cast<const uint16_t *>(y),
          static_cast<const uint16_t *>(dy), static_cast<uint16_t *>(dx), relu,
          sums.imageRows());
    sums.finish();
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerDnnlPoolKernels(KernelRegistry &registry) {
  registry.addFactory("max_pool2d", Backend::cpu, makeMaxPool2d,
                      poolingTakesBf16);
  registry.addFactory("max_pool2d_grad", Backend::cpu, makeMaxPool2dGrad,
                      allBf16);
  // Takes bfloat16 and float16 itself, an image at a time.
  registry.addFactory("max_pool2d_argmax_grad", Backend::cpu,
                      makeMaxPool2dArgmaxGrad, hasReducedFloats);
  registry.addFactory("avg_pool2d", Backend::cpu, makeAvgPool2d);
  registry.addFactory("avg_pool2d_grad", Backend::cpu, makeAvgPool2dGrad);
  registry.addFactory("global_avg_pool2d", Backend::cpu, makeGlobalAvgPool2d);
  registry.addFactory("global_avg_pool2d_grad", Backend::cpu,
                      makeGlobalAvgPool2dGrad);
}

} // namespace graph::runtime::cpu
