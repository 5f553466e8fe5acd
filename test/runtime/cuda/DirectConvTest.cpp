//===- DirectConvTest.cpp - the direct convolutions, checked on the CPU ---===//
//
// The CUDA backend's direct forms of fused_conv2d_pool and
// conv2d_grad_kernel for few input channels (DirectConv.h) are per-thread
// functions shared by the host and the device. Here they run on the CPU,
// every thread in turn, over the conformance cases they take and over the
// seed CNN's first convolution, against the reference backend, with HWIO
// and OHWI kernels (filter_layout): the indexing of the GPU kernels is
// checked on a machine without a GPU (the GPU itself runs them in
// cuda-kernel-tests' conformance suite).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/DirectConv.h"

#include "../reference/ConformanceCases.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace graph::runtime;
using namespace graph::runtime::testing;
using graph::runtime::cuda::DirectConv;
using graph::runtime::cuda::DirectPool;

namespace {

/// The direct form of case `c` (fused_conv2d_pool: x, kernel; or
/// conv2d_grad_kernel: x, kernel_grad's shape; either in the config's
/// filter_layout), or false.
bool directOf(const Case &c, DirectConv &cv) {
  const std::vector<int64_t> &x = c.ins[0].shape;
  const std::vector<int64_t> &k =
      c.kernel == "conv2d_grad_kernel" ? c.outs[0] : c.ins[1].shape;
  WindowGeometry g;
  ConvChannels cc;
  Status s = resolveConv(c.kernel.c_str(), c.cfg, x, k, g, cc);
  EXPECT_TRUE(s.isOk()) << s.message();
  return s.isOk() && cuda::directConvOf(g, cc, cv);
}

void checkFusedConvPool(const Case &c, const DirectConv &cv) {
  std::vector<Tensor> expected = runCase(c, Backend::reference);
  WindowGeometry pool;
  KernelConfig pc = fusedPoolConfig(c.cfg);
  auto [ph, pw] = pc.getPair("pool_size", 2);
  ASSERT_TRUE(resolveWindow("pool", pc, {cv.n, cv.outH, cv.outW, cv.f}, ph, pw,
                            false, pool)
                  .isOk());
  DirectPool p = cuda::directPoolOf(pool);
  std::string act = c.cfg.getString("activation", "none");
  ASSERT_TRUE(act == "relu" || act == "none") << act;
  const float *bias = c.ins.size() > 2 ? c.ins[2].f.data() : nullptr;
  const int64_t total = expected[0].elements();
  ASSERT_EQ(total, int64_t(cv.n) * p.outH * p.outW * cv.f);
  int64_t argmaxDiffer = 0;
  for (int64_t i = 0; i < total; ++i) {
    float y = 0;
    int32_t at = -2;
    cuda::fusedConvPoolAt(cv, p, c.ins[0].f.data(), c.ins[1].f.data(), bias,
                          act == "relu", i, y, at);
    double want = expected[0].f[i];
    EXPECT_NEAR(y, want, 1e-5 * std::max(1.0, std::fabs(want)))
        << c.label << ", element " << i;
    argmaxDiffer += at != expected[1].i[i];
  }
  EXPECT_EQ(argmaxDiffer, 0) << c.label;
}

void checkKernelGrad(const Case &c, const DirectConv &cv) {
  std::vector<Tensor> expected = runCase(c, Backend::reference);
  // Threads of 3 groups of positions (an uneven split, as the GPU's), each
  // filter's partials then added in group order and stored where the GPU's
  // last stage stores them (DirectConv::weightIndex: the kernel's layout).
  const int64_t positions = cv.positions(), groups = 3;
  std::vector<double> sum(size_t(cv.taps()) * cv.f, 0.0);
  double acc[cuda::kDirectMaxTaps];
  for (int64_t g = 0; g < groups; ++g)
    for (int32_t f = 0; f < cv.f; ++f) {
      int64_t first = positions * g / groups,
              last = positions * (g + 1) / groups;
      cuda::kernelGradPartialFor(cv, c.ins[0].f.data(), c.ins[1].f.data(),
                                 first, last, f, acc);
      for (int32_t t = 0; t < cv.taps(); ++t)
        sum[size_t(cv.weightIndex(t, f))] += acc[t];
    }
  ASSERT_EQ(int64_t(sum.size()), expected[0].elements());
  for (size_t i = 0; i < sum.size(); ++i) {
    double want = expected[0].f[i];
    EXPECT_NEAR(sum[i], want, 1e-5 * std::max(1.0, std::fabs(want)))
        << c.label << ", element " << i;
  }
}

} // namespace

TEST(DirectConv, TakesOneGroupAndFewTaps) {
  WindowGeometry g;
  g.n = 256;
  g.c = 1;
  g.h = {28, 3, 1, 1, 26, 0, 0};
  g.w = g.h;
  ConvChannels cc{1, 1, 32};
  DirectConv cv;
  ASSERT_TRUE(cuda::directConvOf(g, cc, cv));
  EXPECT_EQ(cv.taps(), 9);
  EXPECT_EQ(cv.positions(), 256 * 26 * 26);
  g.c = 4; // 36 taps
  EXPECT_FALSE(cuda::directConvOf(g, cc, cv));
  g.c = 3;
  EXPECT_TRUE(cuda::directConvOf(g, cc, cv));
  EXPECT_FALSE(cv.ohwi);
  EXPECT_EQ(cv.weightIndex(5, 7), 5 * 32 + 7); // HWIO [3, 3, 3, 32]
  cc.layout = FilterLayout::ohwi;
  ASSERT_TRUE(cuda::directConvOf(g, cc, cv));
  EXPECT_TRUE(cv.ohwi);
  EXPECT_EQ(cv.weightIndex(5, 7), 7 * 27 + 5); // OHWI [32, 3, 3, 3]
  cc.groups = 3;                               // grouped: cuDNN's
  EXPECT_FALSE(cuda::directConvOf(g, cc, cv));
}

TEST(DirectConv, MatchesTheReferenceOnTheConformanceCases) {
  reference::registerReferenceKernels();
  // Per layout (0: hwio, 1: ohwi).
  int fused[2] = {0, 0}, grads[2] = {0, 0};
  for (const Case &c : allCases()) {
    if (c.kernel != "fused_conv2d_pool" && c.kernel != "conv2d_grad_kernel")
      continue;
    DirectConv cv;
    if (!directOf(c, cv))
      continue;
    SCOPED_TRACE(c.kernel + " (" + c.label + ")");
    const bool ohwi = c.cfg.getString("filter_layout", "hwio") == "ohwi";
    EXPECT_EQ(cv.ohwi, ohwi);
    if (c.kernel == "fused_conv2d_pool") {
      checkFusedConvPool(c, cv);
      ++fused[ohwi];
    } else {
      checkKernelGrad(c, cv);
      ++grads[ohwi];
    }
  }
  // Cases the direct forms take, in either layout: strides, dilations,
  // `same` padding (odd totals too), overlapping and tiling pools, with and
  // without bias.
  for (int ohwi : {0, 1}) {
    EXPECT_GE(fused[ohwi], 2) << (ohwi ? "ohwi" : "hwio");
    EXPECT_GE(grads[ohwi], 4) << (ohwi ? "ohwi" : "hwio");
  }
}

TEST(DirectConv, TheSeedCnnsFirstConvolution) {
  // Conv 1 of the seed CNN at batch 8: 28x28x1, 32 filters 3x3 valid, relu,
  // 2x2 s2 pool; and its weight gradient.
  reference::registerReferenceKernels();
  KernelConfig cfg = window("valid", {1, 1}, {1, 1});
  cfg.set("activation", std::string("relu"));
  cfg.set("pool_size", std::vector<int64_t>{2, 2});
  cfg.set("pool_strides", std::vector<int64_t>{2, 2});
  cfg.set("pool_padding", std::string("valid"));
  Case fused{"fused_conv2d_pool",
             "seed conv 1",
             cfg,
             {rnd({8, 28, 28, 1}, 90), rnd({3, 3, 1, 32}, 91, -0.5, 0.5),
              rnd({32}, 92, -0.1, 0.1)},
             {{8, 13, 13, 32}, {8, 13, 13, 32}},
             {},
             {graph::plan::DType::f32, graph::plan::DType::i32}};
  Case grad{"conv2d_grad_kernel",
            "seed conv 1",
            window("valid", {1, 1}, {1, 1}),
            {rnd({8, 28, 28, 1}, 90), rnd({8, 26, 26, 32}, 93)},
            {{3, 3, 1, 32}}};
  // As Keras stores the kernel (HWIO) and as graphc stores a kernel
  // variable only convolutions read (OHWI [32, 3, 3, 1]).
  for (bool ohwi : {false, true}) {
    SCOPED_TRACE(ohwi ? "ohwi" : "hwio");
    Case f = ohwi ? ohwiTwin(fused) : fused;
    Case k = ohwi ? ohwiTwin(grad) : grad;
    DirectConv cv;
    ASSERT_TRUE(directOf(f, cv));
    EXPECT_EQ(cv.ohwi, ohwi);
    checkFusedConvPool(f, cv);
    ASSERT_TRUE(directOf(k, cv));
    EXPECT_EQ(cv.ohwi, ohwi);
    checkKernelGrad(k, cv);
  }
}
