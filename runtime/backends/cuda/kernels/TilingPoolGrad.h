//===- TilingPoolGrad.h - gradients of tiling max pools ---------*- C++ -*-===//
//
// max_pool2d_argmax_grad as a scatter when the pool's windows tile its
// input (stride = window, nothing padded before: the 2x2 pools of image
// models). Each input position then lies in at most one window, so the
// thread of pooled output i writes its window's positions: dy[i] at the
// argmax (where the relu lets it through), 0 elsewhere; the last row and
// column of windows also write the input rows and columns past them, which
// no window covers. Every position is written once, nothing is gathered:
// the gather (one thread per input position, visiting the windows that
// cover it) took 115 us for the seed CNN's first pool gradient (22 MB of
// dx) at batch 256 on an H100.
//
// The per-thread function is the same on the host and the device, so
// test/runtime/cuda/TilingPoolGradTest.cpp checks it on the CPU against
// the reference backend. No CUDA header.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_KERNELS_TILINGPOOLGRAD_H
#define RUNTIME_BACKENDS_CUDA_KERNELS_TILINGPOOLGRAD_H

#include "runtime/backends/cuda/kernels/DirectConv.h" // GRAPH_HD, helpers
#include "runtime/core/WindowGeometry.h"

#include <cstdint>

namespace graph::runtime::cuda {

/// A max pool of an NHWC [n, inH, inW, c] input whose (kh, kw) windows
/// tile it from the top left, [n, outH, outW, c] out.
struct TilingPool {
  int32_t n = 0, c = 0, inH = 0, inW = 0, outH = 0, outW = 0;
  int32_t kh = 1, kw = 1;
};

/// Pool `g` as a TilingPool, when its windows tile its input and its
/// extents fit 32 bits.
inline bool tilingPoolOf(const WindowGeometry &g, TilingPool &out) {
  if (g.h.stride != g.h.window || g.w.stride != g.w.window ||
      g.h.padBefore != 0 || g.w.padBefore != 0 || g.h.out < 1 || g.w.out < 1 ||
      !fitsInt32({g.n, g.c, g.h.in, g.w.in, g.n * g.h.in * g.w.in}))
    return false;
  auto i = [](int64_t v) { return static_cast<int32_t>(v); };
  out.n = i(g.n);
  out.c = i(g.c);
  out.inH = i(g.h.in);
  out.inW = i(g.w.in);
  out.outH = i(g.h.out);
  out.outW = i(g.w.out);
  out.kh = i(g.h.window);
  out.kw = i(g.w.window);
  return true;
}

/// Pooled output `i`'s part of dx (flat NHWC `i` over the pooled shape).
GRAPH_HD inline void tilingArgmaxGradAt(const TilingPool &p,
                                        const int32_t *argmax, const float *y,
                                        const float *dy, bool reluGrad,
                                        int64_t i, float *dx) {
  int32_t ch, px, py, b;
  nhwcPosition(i, p.outH, p.outW, p.c, b, py, px, ch);
  const int32_t at = argmax[i];
  const float g = dy[i];
  const bool through = !reluGrad || y[i] > 0.0f;
  int32_t y0 = py * p.kh, x0 = px * p.kw;
  // The last windows also own the rows and columns past them, and a
  // window that reaches past the input (`same`) only the rows it has.
  int32_t y1 = py == p.outH - 1 || y0 + p.kh > p.inH ? p.inH : y0 + p.kh;
  int32_t x1 = px == p.outW - 1 || x0 + p.kw > p.inW ? p.inW : x0 + p.kw;
  for (int32_t iy = y0; iy < y1; ++iy)
    for (int32_t ix = x0; ix < x1; ++ix) {
      int32_t wy = iy - y0, wx = ix - x0;
      bool hit = through && wy < p.kh && wx < p.kw && wy * p.kw + wx == at;
      dx[((int64_t(b) * p.inH + iy) * p.inW + ix) * p.c + ch] = hit ? g : 0.0f;
    }
}

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_KERNELS_TILINGPOOLGRAD_H
