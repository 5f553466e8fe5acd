//===- TilingPoolGradTest.cpp - the tiling pool gradient, on the CPU ------===//
//
// The CUDA backend's scatter form of max_pool2d_argmax_grad for pools whose
// windows tile their input (TilingPoolGrad.h) is a per-thread function
// shared by the host and the device. Here it runs on the CPU, every thread
// in turn, over the conformance cases it takes, against the reference
// backend; dx starts as NaN, so a position no thread writes fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/TilingPoolGrad.h"

#include "../reference/ConformanceCases.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace graph::runtime;
using namespace graph::runtime::testing;

TEST(TilingPoolGrad, TakesOnlyWindowsThatTileTheInput) {
  WindowGeometry g;
  g.n = 2;
  g.c = 8;
  g.h = {26, 2, 2, 1, 13, 0, 0};
  g.w = g.h;
  cuda::TilingPool p;
  EXPECT_TRUE(cuda::tilingPoolOf(g, p));
  g.h.stride = 1; // overlapping
  EXPECT_FALSE(cuda::tilingPoolOf(g, p));
  g.h.stride = 2;
  g.w.padBefore = 1; // `same` padding before the first window
  EXPECT_FALSE(cuda::tilingPoolOf(g, p));
}

TEST(TilingPoolGrad, MatchesTheReferenceOnTheConformanceCases) {
  reference::registerReferenceKernels();
  int checked = 0;
  for (const Case &c : allCases()) {
    if (c.kernel != "max_pool2d_argmax_grad")
      continue;
    auto [kh, kw] = c.cfg.getPair("pool_size", 2);
    WindowGeometry g;
    ASSERT_TRUE(
        resolveWindow("pool", c.cfg, c.outs[0], kh, kw, false, g).isOk());
    cuda::TilingPool p;
    if (!cuda::tilingPoolOf(g, p))
      continue;
    SCOPED_TRACE(c.label);
    std::vector<Tensor> expected = runCase(c, Backend::reference);
    std::vector<float> dx(expected[0].f.size(),
                          std::numeric_limits<float>::quiet_NaN());
    bool reluGrad = c.cfg.getInt("relu_grad", 0) != 0;
    for (int64_t i = 0; i < c.ins[2].elements(); ++i)
      cuda::tilingArgmaxGradAt(p, c.ins[0].i.data(), c.ins[1].f.data(),
                               c.ins[2].f.data(), reluGrad, i, dx.data());
    for (size_t k = 0; k < dx.size(); ++k)
      EXPECT_EQ(dx[k], expected[0].f[k]) << "element " << k;
    ++checked;
  }
  // 2x2 s2 valid over an odd input (rows and columns past the last
  // window), 2x2 s2 same (windows past the input), with and without
  // relu_grad, and the 4 MiB one.
  EXPECT_GE(checked, 5);
}
