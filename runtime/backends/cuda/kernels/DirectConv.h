//===- DirectConv.h - convolutions over few input channels ------*- C++ -*-===//
//
// A first convolution reads an image of 1 or 3 channels: each output takes
// only C * kh * kw products, and cuDNN's engines, tiled for many channels,
// spend most of their time on it. On an H100 at batch 256 the seed CNN's
// conv 1 (C = 1, 32 filters 3x3 over 28x28, then relu and a 2x2 max pool)
// took 174 us forward and 110 us for its weight gradient, of a 1 ms step.
// The direct forms here compute an output from the input where it lies
// (a warp's lanes are 32 filters of one position: the input reads are one
// broadcast, the weights stay in L1), in double, rounded once:
//   - fused_conv2d_pool: one pooled output per thread, its window's
//     convolutions, bias and relu computed and never stored;
//   - conv2d_grad_kernel: per group of output positions and filter, the
//     C * kh * kw products summed over the group (a partial per tap), then
//     the groups' partials in group order (ColumnReduction's second stage),
//     so every run gives the same bits.
// They take groups == 1, at most kDirectMaxChannels input channels and
// kDirectMaxTaps taps (C * kh * kw); anything else stays on cuDNN
// (directConvOf).
//
// Each function computes one thread's element and is the same code on the
// host and the device: DirectConvKernels.cu calls it per thread, and
// test/runtime/cuda/DirectConvTest.cpp runs it on the CPU against the
// reference backend, so the indexing is checked on machines without a GPU.
// No CUDA header, for that test.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_KERNELS_DIRECTCONV_H
#define RUNTIME_BACKENDS_CUDA_KERNELS_DIRECTCONV_H

#include "runtime/core/WindowGeometry.h"

#include <cstdint>
#include <initializer_list>
#include <limits>

#if defined(__CUDACC__)
#define GRAPH_HD __host__ __device__
#else
#define GRAPH_HD
#endif

namespace graph::runtime::cuda {

/// Products per output the direct forms take (registers: the weight
/// gradient keeps one double per tap), and input channels: a first
/// layer's image (grey, RGB, RGBA), not a 1x1 convolution over a few
/// dozen channels, which is a matrix product cuDNN does well.
inline constexpr int32_t kDirectMaxTaps = 32;
inline constexpr int32_t kDirectMaxChannels = 4;

/// Whether every extent in `extents` fits the 32-bit indices of the direct
/// kernels.
inline bool fitsInt32(std::initializer_list<int64_t> extents) {
  for (int64_t v : extents)
    if (v > std::numeric_limits<int32_t>::max())
      return false;
  return true;
}

/// A convolution's shapes: NHWC input [n, inH, inW, c], kernel HWIO
/// [kh, kw, c, f] or, with `ohwi` (the config's filter_layout), OHWI
/// [f, kh, kw, c], NHWC output [n, outH, outW, f]; input row
/// oy * sh - padTop + ky * dh feeds output row oy through kernel row ky
/// (columns alike). Every extent fits 32 bits (directConvOf).
struct DirectConv {
  int32_t n = 0, inH = 0, inW = 0, c = 0;
  int32_t outH = 0, outW = 0, f = 0;
  int32_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1;
  int32_t padTop = 0, padLeft = 0;
  bool ohwi = false;

  GRAPH_HD int32_t taps() const { return kh * kw * c; }
  GRAPH_HD int64_t positions() const { return int64_t(n) * outH * outW; }
  /// The kernel element of tap (ky * kw + kx) * c + ch and `filter`: HWIO's
  /// row `tap`, column `filter`; OHWI's row `filter`, column `tap`.
  GRAPH_HD int64_t weightIndex(int32_t tap, int32_t filter) const {
    return ohwi ? int64_t(filter) * taps() + tap : int64_t(tap) * f + filter;
  }

  /// Output (b, oy, ox, filter): `start` (the bias) plus the taps in
  /// (ky, kx, c) order, in double, as the reference sums them.
  GRAPH_HD double at(const float *x, const float *w, int32_t b, int32_t oy,
                     int32_t ox, int32_t filter, double start) const {
    double sum = start;
    for (int32_t ky = 0; ky < kh; ++ky) {
      int32_t iy = oy * sh - padTop + ky * dh;
      if (iy < 0 || iy >= inH)
        continue;
      for (int32_t kx = 0; kx < kw; ++kx) {
        int32_t ix = ox * sw - padLeft + kx * dw;
        if (ix < 0 || ix >= inW)
          continue;
        const float *xs = x + ((int64_t(b) * inH + iy) * inW + ix) * c;
        const float *ws = w + weightIndex((ky * kw + kx) * c, filter);
        const int64_t step = ohwi ? 1 : f; // from one channel to the next
        for (int32_t ch = 0; ch < c; ++ch)
          sum += double(xs[ch]) * double(ws[ch * step]);
      }
    }
    return sum;
  }
};

/// The (b, y, x, c) of flat NHWC index `i` over [.., h, w, c]; in 32-bit
/// arithmetic where `i` fits (64-bit divisions cost a pooling gradient on
/// an H100 most of its time).
GRAPH_HD inline void nhwcPosition(int64_t i, int32_t h, int32_t w, int32_t c,
                                  int32_t &b, int32_t &y, int32_t &x,
                                  int32_t &ch) {
  if (i <= INT32_MAX) {
    auto rest = static_cast<uint32_t>(i);
    ch = static_cast<int32_t>(rest % uint32_t(c));
    rest /= uint32_t(c);
    x = static_cast<int32_t>(rest % uint32_t(w));
    rest /= uint32_t(w);
    y = static_cast<int32_t>(rest % uint32_t(h));
    b = static_cast<int32_t>(rest / uint32_t(h));
    return;
  }
  ch = static_cast<int32_t>(i % c);
  int64_t rest = i / c;
  x = static_cast<int32_t>(rest % w);
  rest /= w;
  y = static_cast<int32_t>(rest % h);
  b = static_cast<int32_t>(rest / h);
}

/// A max pool over a DirectConv's output: window (kh, kw), strides and the
/// padding before (TensorFlow's `same` may put one more after); windows
/// are clipped to the output, as max_pool2d's.
struct DirectPool {
  int32_t outH = 0, outW = 0, kh = 1, kw = 1, sh = 1, sw = 1;
  int32_t top = 0, left = 0;
};

/// fused_conv2d_pool's pooled output `i` (flat NHWC over [n, pool.outH,
/// pool.outW, f]): the window's first maximum (row-major) of
/// act(conv + bias), and its position in the window (row * kw + column,
/// runtime/core/WindowGeometry.h), -1 for a window without outputs.
GRAPH_HD inline void fusedConvPoolAt(const DirectConv &cv, const DirectPool &p,
                                     const float *x, const float *w,
                                     const float *bias, bool relu, int64_t i,
                                     float &y, int32_t &argmax) {
  int32_t filter, px, py, b;
  nhwcPosition(i, p.outH, p.outW, cv.f, b, py, px, filter);
  int32_t ys = py * p.sh - p.top, xs = px * p.sw - p.left;
  int32_t y0 = ys < 0 ? 0 : ys, x0 = xs < 0 ? 0 : xs;
  int32_t y1 = ys + p.kh < cv.outH ? ys + p.kh : cv.outH;
  int32_t x1 = xs + p.kw < cv.outW ? xs + p.kw : cv.outW;
  const double start = bias ? double(bias[filter]) : 0.0;
  float best = 0.0f;
  int32_t at = -1;
  for (int32_t oy = y0; oy < y1; ++oy)
    for (int32_t ox = x0; ox < x1; ++ox) {
      // Rounded once, after the activation, as the reference stores the
      // convolution it pools: its argmax is then the reference's.
      double sum = cv.at(x, w, b, oy, ox, filter, start);
      auto v = static_cast<float>(relu && !(sum > 0.0) ? 0.0 : sum);
      if (at < 0 || v > best) {
        best = v;
        at = (oy - ys) * p.kw + (ox - xs);
      }
    }
  y = best;
  argmax = at;
}

/// conv2d_grad_kernel's partial sums over output positions [first, last)
/// (flat over [n, outH, outW]) for one filter: acc[tap] (tap = (ky * kw +
/// kx) * c + ch; the gradient's element weightIndex(tap, filter)) +=
/// dy * x, in position order. KH,
/// KW and C, when not 0, are the window and channels as constants: the
/// loops unroll and acc stays in registers (withUnrolledShape picks).
template <int32_t KH = 0, int32_t KW = 0, int32_t C = 0>
GRAPH_HD inline void
kernelGradPartial(const DirectConv &cv, const float *x, const float *dy,
                  int64_t first, int64_t last, int32_t filter, double *acc) {
  const int32_t kh = KH ? KH : cv.kh, kw = KW ? KW : cv.kw, c = C ? C : cv.c;
  for (int32_t t = 0; t < kh * kw * c; ++t)
    acc[t] = 0.0;
  if (first >= last)
    return;
  auto ox = static_cast<int32_t>(first % cv.outW);
  int64_t rest = first / cv.outW;
  auto oy = static_cast<int32_t>(rest % cv.outH);
  auto b = static_cast<int32_t>(rest / cv.outH);
  for (int64_t pos = first; pos < last; ++pos) {
    double d = dy[pos * cv.f + filter];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
    for (int32_t ky = 0; ky < kh; ++ky) {
      int32_t iy = oy * cv.sh - cv.padTop + ky * cv.dh;
      if (iy < 0 || iy >= cv.inH)
        continue;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
      for (int32_t kx = 0; kx < kw; ++kx) {
        int32_t ix = ox * cv.sw - cv.padLeft + kx * cv.dw;
        if (ix < 0 || ix >= cv.inW)
          continue;
        const float *xs = x + ((int64_t(b) * cv.inH + iy) * cv.inW + ix) * c;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
        for (int32_t ch = 0; ch < c; ++ch)
          acc[(ky * kw + kx) * c + ch] += d * double(xs[ch]);
      }
    }
    // The next position, without a division.
    if (++ox == cv.outW) {
      ox = 0;
      if (++oy == cv.outH) {
        oy = 0;
        ++b;
      }
    }
  }
}

/// A window and channel count as constants (0: read at run time).
template <int32_t KH, int32_t KW, int32_t C> struct UnrolledShape {
  static constexpr int32_t kh = KH, kw = KW, c = C;
};

/// Calls `f(UnrolledShape<...>())` with `cv`'s shape where the weight
/// gradient unrolls it (3x3 over 1 or 3 channels, 5x5 over 1), else with
/// UnrolledShape<0, 0, 0>: the one list of those shapes, for the kernel's
/// launch and its CPU test alike.
template <typename F>
inline void withUnrolledShape(const DirectConv &cv, F &&f) {
  if (cv.kh == 3 && cv.kw == 3 && cv.c == 1)
    f(UnrolledShape<3, 3, 1>());
  else if (cv.kh == 3 && cv.kw == 3 && cv.c == 3)
    f(UnrolledShape<3, 3, 3>());
  else if (cv.kh == 5 && cv.kw == 5 && cv.c == 1)
    f(UnrolledShape<5, 5, 1>());
  else
    f(UnrolledShape<0, 0, 0>());
}

/// kernelGradPartial as the GPU runs it for `cv` (the CPU test's entry).
inline void kernelGradPartialFor(const DirectConv &cv, const float *x,
                                 const float *dy, int64_t first, int64_t last,
                                 int32_t filter, double *acc) {
  withUnrolledShape(cv, [&](auto shape) {
    using S = decltype(shape);
    kernelGradPartial<S::kh, S::kw, S::c>(cv, x, dy, first, last, filter, acc);
  });
}

/// The direct form of convolution `g` with channels `cc`, when it takes it:
/// one group, at most kDirectMaxTaps taps, extents that fit 32 bits.
inline bool directConvOf(const WindowGeometry &g, const ConvChannels &cc,
                         DirectConv &out) {
  if (cc.groups != 1 || g.c > kDirectMaxChannels ||
      g.c * g.h.window * g.w.window > kDirectMaxTaps ||
      !fitsInt32({g.n, g.h.in, g.w.in, g.h.out, g.w.out, cc.filters,
                  g.n * g.h.in * g.w.in}))
    return false;
  auto i = [](int64_t v) { return static_cast<int32_t>(v); };
  out.n = i(g.n);
  out.inH = i(g.h.in);
  out.inW = i(g.w.in);
  out.c = i(g.c);
  out.outH = i(g.h.out);
  out.outW = i(g.w.out);
  out.f = i(cc.filters);
  out.kh = i(g.h.window);
  out.kw = i(g.w.window);
  out.sh = i(g.h.stride);
  out.sw = i(g.w.stride);
  out.dh = i(g.h.dilation);
  out.dw = i(g.w.dilation);
  out.padTop = i(g.h.padBefore);
  out.padLeft = i(g.w.padBefore);
  out.ohwi = cc.layout == FilterLayout::ohwi;
  return true;
}

/// The DirectPool of pool `pool` (over the convolution's output).
inline DirectPool directPoolOf(const WindowGeometry &pool) {
  auto i = [](int64_t v) { return static_cast<int32_t>(v); };
  DirectPool p;
  p.outH = i(pool.h.out);
  p.outW = i(pool.w.out);
  p.kh = i(pool.h.window);
  p.kw = i(pool.w.window);
  p.sh = i(pool.h.stride);
  p.sw = i(pool.w.stride);
  p.top = i(pool.h.padBefore);
  p.left = i(pool.w.padBefore);
  return p;
}

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_KERNELS_DIRECTCONV_H
