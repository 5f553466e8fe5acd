//===- ReducedConvPoolCheck.h - fused conv + pool in bf16 and f16 -*- C++
//-*-===//
//
// graph-fuse joins a convolution and its max pool (fused_conv2d_pool, with
// max_pool2d_argmax_grad and fused_conv2d_pool_grad_kernel in the backward
// pass) in bfloat16 and float16 plans too, on the promise that the fused
// ops compute what the unfused ones do (GraphOps.td): the convolution
// rounded to the plan's type before it is pooled, so that a window's
// maximum and the position its gradient goes to are those among the
// rounded values. This runs both chains on one backend and requires them
// equal bit for bit.
//
// The operands are small integers, so every sum is exact in float32 in any
// order and each backend's results do not depend on how it sums; the
// convolution's outputs reach past 256 (bfloat16) or 2048 (float16), where
// those types round integers, so windows whose largest value is unique only
// before rounding occur (counted, so the check cannot pass vacuously): a
// kernel that pooled the unrounded convolution picks another argmax there.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_CPU_REDUCEDCONVPOOLCHECK_H
#define TEST_RUNTIME_CPU_REDUCEDCONVPOOLCHECK_H

#include "KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace graph::runtime::testing {

/// A conv (3x3, relu) of `channels` input channels over `side` x `side`
/// images and its max pool.
struct ConvPoolCase {
  int64_t side = 10, channels = 1;
  int64_t pool = 2, stride = 2;
  std::string padding = "valid";
  int64_t filters = 16;

  bool tiles() const { return stride >= pool; }
  bool plain2x2() const {
    return pool == 2 && stride == 2 && padding == "valid";
  }
  std::string text() const {
    return std::to_string(side) + "x" + std::to_string(side) + "x" +
           std::to_string(channels) + ", pool " + std::to_string(pool) + "/" +
           std::to_string(stride) + " " + padding + ", " +
           std::to_string(filters) + " filters";
  }
};

/// The unfused and the fused chain of `c` on `backend` in `type`, equal
/// bit for bit: the pooled output, the pool's input gradient and its
/// per-channel sum, and where the windows tile (graph-fuse forms the fused
/// ops' sums only there) bias_add_grad's sum of the stored gradient and
/// fused_conv2d_pool_grad_kernel's kernel and bias gradients, without and
/// with writes_workspace (its workspace then the pool's input gradient).
inline void expectFusedConvPoolAsUnfused(Backend backend, plan::DType type,
                                         const ConvPoolCase &c) {
  SCOPED_TRACE(std::string(backendName(backend)) + ", " +
               plan::EnumNameDType(type) + ", " + c.text());
  const int64_t n = 4, side = c.side, channels = c.channels,
                filters = c.filters, conv = side - 2;
  const int64_t pooledSide = c.padding == "same"
                                 ? (conv + c.stride - 1) / c.stride
                                 : (conv - c.pool) / c.stride + 1;
  const std::vector<int64_t> xShape = {n, side, side, channels},
                             kShape = {3, 3, channels, filters},
                             convShape = {n, conv, conv, filters},
                             pooled = {n, pooledSide, pooledSide, filters};
  // Sums in the thousands, past the types' exact integers (float16's are
  // exact to 2048, so larger), below float16's largest finite 65504.
  // One float16 channel: a centre tap of 1000 over small others, so that
  // neighbours under the same centre value differ by a few units at some
  // thousands, where float16's step is 4.
  const bool f16 = type == plan::DType::f16;
  const int hiX = f16 ? 15 : 7;
  const int hiK = channels == 1 ? (f16 ? 2 : 160) : (f16 ? 12 : 4);
  Tensor x = Tensor::make(xShape, type,
                          smallIntegers(n * side * side * channels, 0, hiX, 1));
  std::vector<double> taps =
      smallIntegers(9 * channels * filters, -hiK / 4, hiK, 2);
  if (f16 && channels == 1)
    for (int64_t f = 0; f < filters; ++f)
      taps[4 * filters + f] = 1000; // HWIO [1, 1, 0, f]
  Tensor k = Tensor::make(kShape, type, taps);
  Tensor b = Tensor::make({filters}, type, smallIntegers(filters, -4, 16, 3));
  // Some -0: the dense gradient keeps its sign, as the unfused op does.
  std::vector<double> dyValues =
      smallIntegers(n * pooledSide * pooledSide * filters, -4, 4, 4);
  for (size_t i = 0; i < dyValues.size(); i += 7)
    dyValues[i] = -0.0;
  Tensor dy = Tensor::make(pooled, type, dyValues);
  KernelConfig convCfg;
  convCfg.set("padding", std::string("valid"))
      .set("strides", std::vector<int64_t>{1, 1})
      .set("dilations", std::vector<int64_t>{1, 1});
  KernelConfig fusedConvCfg = convCfg;
  fusedConvCfg.set("activation", std::string("relu"));
  const std::vector<int64_t> window = {c.pool, c.pool},
                             strides = {c.stride, c.stride};
  KernelConfig poolCfg;
  poolCfg.set("pool_size", window)
      .set("strides", strides)
      .set("padding", c.padding);
  KernelConfig poolGradCfg = poolCfg;
  poolGradCfg.set("relu_grad", int64_t{1});
  KernelConfig fusedCfg = fusedConvCfg;
  fusedCfg.set("pool_size", window)
      .set("pool_strides", strides)
      .set("pool_padding", c.padding);
  KernelConfig fusedGradCfg = convCfg;
  fusedGradCfg.set("pool_size", window)
      .set("pool_strides", strides)
      .set("pool_padding", c.padding)
      .set("relu_grad", int64_t{1});

  // Unfused: fused_conv2d, max_pool2d, max_pool2d_grad, bias_add_grad,
  // conv2d_grad_kernel.
  Tensor out = Tensor::make(convShape, type), y = Tensor::make(pooled, type);
  Tensor dx = Tensor::make(convShape, type),
         dsum = Tensor::make({filters}, type);
  Tensor db = Tensor::make({filters}, type), dk = Tensor::make(kShape, type);
  RUN_OK("fused_conv2d", fusedConvCfg, {&x, &k, &b}, {&out}, {}, backend);
  RUN_OK("max_pool2d", poolCfg, {&out}, {&y}, {}, backend);
  RUN_OK("max_pool2d_grad", poolGradCfg, {&out, &y, &dy}, {&dx, &dsum}, {},
         backend);
  RUN_OK("bias_add_grad", KernelConfig{}, {&dx}, {&db}, {}, backend);
  RUN_OK("conv2d_grad_kernel", convCfg, {&x, &dx}, {&dk}, {}, backend);

  // Fused: fused_conv2d_pool, max_pool2d_argmax_grad (a layer below
  // another) and fused_conv2d_pool_grad_kernel (the first layer).
  Tensor y2 = Tensor::make(pooled, type);
  Tensor argmax = Tensor::make(pooled, plan::DType::i32);
  Tensor dx2 = Tensor::make(convShape, type),
         dsum2 = Tensor::make({filters}, type);
  Tensor dk2 = Tensor::make(kShape, type),
         workspace = Tensor::make(convShape, type),
         db2 = Tensor::make({filters}, type);
  RUN_OK("fused_conv2d_pool", fusedCfg, {&x, &k, &b}, {&y2, &argmax}, {},
         backend);
  RUN_OK("max_pool2d_argmax_grad", poolGradCfg, {&argmax, &y2, &dy},
         {&dx2, &dsum2}, {}, backend);
  // And with writes_workspace (a layer below another): the dense gradient in
  // the workspace, for conv2d_grad_input.
  KernelConfig writingCfg = fusedGradCfg;
  writingCfg.set("writes_workspace", int64_t{1});
  // The workspace starts as an arena's stale bytes would: the kernel must
  // write its zeros too.
  Tensor dk3 = Tensor::make(kShape, type),
         dense = Tensor::make(
             convShape, type,
             std::vector<double>(static_cast<size_t>(n * conv * conv * filters),
                                 3.0)),
         db3 = Tensor::make({filters}, type);
  if (c.tiles()) {
    RUN_OK("fused_conv2d_pool_grad_kernel", fusedGradCfg,
           {&x, &argmax, &y2, &dy}, {&dk2, &workspace, &db2}, {}, backend);
    RUN_OK("fused_conv2d_pool_grad_kernel", writingCfg, {&x, &argmax, &y2, &dy},
           {&dk3, &dense, &db3}, {}, backend);
  }

  if (c.plain2x2()) {
    // Windows whose maximum is unique before rounding and tied after.
    const std::vector<double> rounded = out.values();
    Tensor x32 = x.as(plan::DType::f32), k32 = k.as(plan::DType::f32),
           b32 = b.as(plan::DType::f32), unrounded = Tensor::f32(convShape);
    RUN_OK("fused_conv2d", fusedConvCfg, {&x32, &k32, &b32}, {&unrounded}, {},
           Backend::reference);
    int64_t tiesByRounding = 0;
    for (int64_t i = 0; i < n * pooledSide * pooledSide * filters; ++i) {
      const int64_t f = i % filters, p = i / filters;
      const int64_t pw = p % pooledSide, ph = p / pooledSide % pooledSide,
                    img = p / (pooledSide * pooledSide);
      double best = -INFINITY, bestRounded = -INFINITY;
      int atBest = 0, atRounded = 0;
      for (int w = 0; w < 4; ++w) {
        const int64_t at =
            ((img * conv + 2 * ph + w / 2) * conv + 2 * pw + w % 2) * filters +
            f;
        if (unrounded.f[at] > best) {
          best = unrounded.f[at];
          atBest = w;
        }
        if (rounded[at] > bestRounded) {
          bestRounded = rounded[at];
          atRounded = w;
        }
      }
      tiesByRounding += atBest != atRounded;
    }
    EXPECT_GT(tiesByRounding, 0)
        << "no window whose argmax rounding moves: the check proves nothing";
  }

  // Equal values; with `sign`, of equal signs too (a -0 is not a +0).
  auto expectEqual = [](const Tensor &want, const Tensor &got, const char *what,
                        bool sign = false) {
    const std::vector<double> w = want.values(), g = got.values();
    int64_t differ = 0;
    for (size_t i = 0; i < w.size(); ++i)
      differ += !((w[i] == g[i] &&
                   (!sign || std::signbit(w[i]) == std::signbit(g[i]))) ||
                  (std::isnan(w[i]) && std::isnan(g[i])));
    EXPECT_EQ(differ, 0) << what << ": " << differ << " of " << w.size()
                         << " elements differ";
  };
  expectEqual(y, y2, "pooled output");
  expectEqual(dx, dx2, "pool input gradient");
  expectEqual(dsum, dsum2, "pool input gradient summed");
  if (!c.tiles())
    return;
  expectEqual(db, dsum2, "bias_add_grad of the stored gradient");
  expectEqual(dk, dk2, "kernel gradient");
  expectEqual(db, db2, "bias gradient");
  expectEqual(dx, dense, "writes_workspace's workspace");
  // Bit for bit what this backend's max_pool2d_argmax_grad writes there.
  expectEqual(dx2, dense, "writes_workspace's workspace, signed", true);
  expectEqual(dk, dk3, "kernel gradient with writes_workspace");
  expectEqual(db, db3, "bias gradient with writes_workspace");
}

/// The geometries the fused kernels take apart: the seed CNN's 2x2/2 pool
/// over one input channel (the cpu backend's first-layer path; 11x11, whose
/// pool leaves a column out, copies the image row by row, and 24 filters
/// take a pair of registers and one more) and
/// over 32 (oneDNN's bf16 one where the cpu backend takes it; the kernel
/// gradient's channel path), images
/// large enough that fused_conv2d_pool convolves one a chunk (its chunk's
/// offsets), an odd "same" pool whose last windows reach past the image,
/// and overlapping windows (3x3 at stride 2).
inline const std::vector<ConvPoolCase> &convPoolCases() {
  static const std::vector<ConvPoolCase> cases = {
      {10, 1},
      {10, 32},
      {96, 1},
      {96, 32},
      {9, 1, 2, 2, "same"},
      {9, 32, 2, 2, "same"},
      {11, 1, 2, 2, "valid", 24},
      {10, 32, 3, 2, "valid"},
  };
  return cases;
}

} // namespace graph::runtime::testing

#endif // TEST_RUNTIME_CPU_REDUCEDCONVPOOLCHECK_H
