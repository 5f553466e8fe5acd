//===- ReferenceKernelsTest.cpp - known values for the reference kernels --===//
//
// Forward kernels against hand-computed values or an independently written
// formula; optimizer steps against hand-computed values; dropout masks; and
// the list of registered kernels against the ops the compiler can launch.
//
//===----------------------------------------------------------------------===//

#include "ConformanceCases.h"
#include "KernelTestUtil.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <tuple>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

KernelConfig convConfig(const std::string &padding, int64_t stride,
                        int64_t dilation) {
  KernelConfig cfg;
  cfg.set("padding", padding)
      .set("strides", std::vector<int64_t>{stride, stride})
      .set("dilations", std::vector<int64_t>{dilation, dilation});
  return cfg;
}

/// Convolution written differently from the kernel: pad the input
/// explicitly, then loop filter-major over a valid correlation.
std::vector<double> paddedConv(const Tensor &x, const Tensor &k, bool same,
                               int64_t s, int64_t d,
                               std::vector<int64_t> &out) {
  int64_t n = x.shape[0], h = x.shape[1], w = x.shape[2], c = x.shape[3];
  int64_t kh = k.shape[0], kw = k.shape[1], f = k.shape[3];
  int64_t ekh = (kh - 1) * d + 1, ekw = (kw - 1) * d + 1;
  int64_t oh, ow, pt = 0, pl = 0, ph = 0, pw = 0;
  if (same) {
    oh = (h + s - 1) / s;
    ow = (w + s - 1) / s;
    ph = std::max<int64_t>((oh - 1) * s + ekh - h, 0);
    pw = std::max<int64_t>((ow - 1) * s + ekw - w, 0);
    pt = ph / 2;
    pl = pw / 2;
  } else {
    oh = (h - ekh) / s + 1;
    ow = (w - ekw) / s + 1;
  }
  int64_t H = h + ph, W = w + pw;
  std::vector<double> padded(n * H * W * c, 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t xx = 0; xx < w; ++xx)
        for (int64_t ch = 0; ch < c; ++ch)
          padded[((b * H + y + pt) * W + xx + pl) * c + ch] =
              x.get(((b * h + y) * w + xx) * c + ch);
  out = {n, oh, ow, f};
  std::vector<double> y(n * oh * ow * f, 0.0);
  for (int64_t o = 0; o < f; ++o)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t a = 0; a < kh; ++a)
        for (int64_t b2 = 0; b2 < kw; ++b2)
          for (int64_t b = 0; b < n; ++b)
            for (int64_t i = 0; i < oh; ++i)
              for (int64_t j = 0; j < ow; ++j)
                y[((b * oh + i) * ow + j) * f + o] +=
                    padded[((b * H + i * s + a * d) * W + j * s + b2 * d) * c +
                           ch] *
                    k.get(((a * kw + b2) * c + ch) * f + o);
  return y;
}

TEST(ReferenceKernels, Conv2DHandValues) {
  Tensor x = Tensor::f32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor k = Tensor::f32({2, 2, 1, 1}, {1, 1, 1, 1});
  Tensor y = Tensor::f32({1, 2, 2, 1});
  RUN_OK("conv2d", convConfig("valid", 1, 1), {&x, &k}, {&y});
  expectAllNear(y.values(), {12, 16, 24, 28}, 1e-6);
  // same, 3x3 ones kernel: sums of the in-range neighbourhood.
  Tensor k3 = Tensor::f32({3, 3, 1, 1}, std::vector<double>(9, 1.0));
  Tensor ys = Tensor::f32({1, 3, 3, 1});
  RUN_OK("conv2d", convConfig("same", 1, 1), {&x, &k3}, {&ys});
  expectAllNear(ys.values(), {12, 21, 16, 27, 45, 33, 24, 39, 28}, 1e-6);
}

TEST(ReferenceKernels, Conv2DMatchesPaddedFormula) {
  struct C {
    std::string padding;
    int64_t stride, dilation;
  };
  for (C c :
       {C{"valid", 1, 1}, C{"same", 1, 1}, C{"same", 2, 1}, C{"valid", 2, 1},
        C{"same", 1, 2}, C{"valid", 1, 2}, C{"same", 2, 2}}) {
    Tensor x = Tensor::f64({2, 7, 6, 3}, uniform(2 * 7 * 6 * 3, -1, 1, 1));
    Tensor k = Tensor::f64({3, 2, 3, 4}, uniform(3 * 2 * 3 * 4, -1, 1, 2));
    std::vector<int64_t> shape;
    std::vector<double> expected =
        paddedConv(x, k, c.padding == "same", c.stride, c.dilation, shape);
    Tensor y = Tensor::f64(shape);
    RUN_OK("conv2d", convConfig(c.padding, c.stride, c.dilation), {&x, &k},
           {&y});
    expectAllNear(y.values(), expected, 1e-12, c.padding);
  }
}

/// A grouped convolution is the ungrouped one with a block-diagonal kernel:
/// filter o sees only its group's channels. Checks Keras' depthwise kernel
/// [kh, kw, C, m] (output channel c * m + j) and the grouped HWIO form.
TEST(ReferenceKernels, GroupedConv2DIsBlockDiagonalConv2D) {
  struct C {
    std::string label;
    int64_t channels, groups;
    std::vector<int64_t> ks;
    int64_t filters;
  };
  for (C c : {C{"groups 2", 4, 2, {3, 2, 2, 6}, 6},
              C{"depthwise m2", 3, 3, {3, 2, 3, 2}, 6},
              C{"depthwise m1", 3, 3, {2, 2, 3, 1}, 3},
              C{"depthwise grouped layout", 3, 3, {3, 2, 1, 6}, 6}})
    for (std::string padding : {"valid", "same"}) {
      int64_t kh = c.ks[0], kw = c.ks[1], cg = c.channels / c.groups,
              fg = c.filters / c.groups;
      Tensor x = Tensor::f64({2, 6, 5, c.channels},
                             uniform(2 * 6 * 5 * c.channels, -1, 1, 51));
      Tensor k = Tensor::f64(
          c.ks, uniform(c.ks[0] * c.ks[1] * c.ks[2] * c.ks[3], -1, 1, 52));
      std::vector<double> full(kh * kw * c.channels * c.filters, 0.0);
      for (int64_t a = 0; a < kh * kw; ++a)
        for (int64_t ch = 0; ch < c.channels; ++ch)
          for (int64_t o = 0; o < c.filters; ++o)
            if (ch / cg == o / fg)
              full[(a * c.channels + ch) * c.filters + o] =
                  k.get((a * cg + ch % cg) * c.filters + o);
      Tensor dense = Tensor::f64({kh, kw, c.channels, c.filters}, full);
      int64_t oh = padding == "same" ? 3 : 6 - kh + 1;
      int64_t ow = padding == "same" ? 3 : 5 - kw + 1;
      KernelConfig grouped = convConfig(padding, padding == "same" ? 2 : 1, 1);
      KernelConfig plain = grouped;
      grouped.set("groups", c.groups);
      Tensor y = Tensor::f64({2, oh, ow, c.filters}),
             expected = Tensor::f64({2, oh, ow, c.filters});
      RUN_OK("conv2d", grouped, {&x, &k}, {&y});
      RUN_OK("conv2d", plain, {&x, &dense}, {&expected});
      expectAllNear(y.values(), expected.values(), 1e-12,
                    c.label + " " + padding);
    }
}

/// filter_layout ohwi: every convolution case of ConformanceCases.h (all
/// five kernels; plain, grouped, depthwise, fused_conv2d_pool) run with its
/// HWIO kernel and again with the same values permuted to OHWI here
/// (hwioToOhwi: [kh, kw, C / g, F] to [F, kh, kw, C / g], Keras' depthwise
/// [kh, kw, C, m] to [C * m, kh, kw, 1]) computes the same bits: the taps
/// are summed in the same order whatever the layout. conv2d_grad_kernel's
/// OHWI gradient, permuted back to HWIO, is the HWIO gradient.
TEST(ReferenceKernels, OhwiKernelsComputeWhatHwioKernelsDo) {
  std::map<std::string, int> compared;
  int grouped = 0, depthwise = 0;
  for (const Case &c : allCases()) {
    if (!isConvolution(c.kernel) || c.cfg.has("filter_layout"))
      continue;
    SCOPED_TRACE(c.kernel + " (" + c.label + ")");
    Case twin = ohwiTwin(c);
    const std::vector<int64_t> &hwio =
        c.kernel == "conv2d_grad_kernel" ? c.outs[0] : c.ins[1].shape;
    const std::vector<int64_t> &ohwi =
        c.kernel == "conv2d_grad_kernel" ? twin.outs[0] : twin.ins[1].shape;
    // The OHWI shape names the window in axes 1, 2 and the filters first.
    EXPECT_EQ(ohwi[1], hwio[0]);
    EXPECT_EQ(ohwi[2], hwio[1]);
    std::vector<Tensor> expected = runCase(c, Backend::reference);
    std::vector<Tensor> actual = runCase(twin, Backend::reference);
    ASSERT_EQ(actual.size(), expected.size());
    if (c.kernel == "conv2d_grad_kernel") {
      EXPECT_EQ(actual[0].shape, ohwi);
      actual[0] = ohwiToHwio(actual[0], hwio);
    }
    for (size_t o = 0; o < expected.size(); ++o)
      EXPECT_EQ(actual[o].values(), expected[o].values()) << "output " << o;
    ++compared[c.kernel];
    int64_t groups = c.cfg.getInt("groups", 1);
    grouped += groups > 1;
    // Keras' depthwise form [kh, kw, C, m]: C input channels per kernel
    // slice where a grouped kernel has C / groups.
    int64_t channels =
        c.kernel == "conv2d_grad_input" ? c.outs[0][3] : c.ins[0].shape[3];
    depthwise += groups > 1 && groups == channels && hwio[2] == channels;
  }
  for (const char *kernel : {"conv2d", "fused_conv2d", "fused_conv2d_pool",
                             "conv2d_grad_input", "conv2d_grad_kernel"})
    EXPECT_GE(compared[kernel], 3) << kernel;
  EXPECT_GE(grouped, 20);
  EXPECT_GE(depthwise, 15);
}

/// An OHWI kernel by hand: conv2d of a 1x3x3x2 input with two filters
/// [F = 2, kh = 2, kw = 1, C = 2], valid: y[0, i, j, f] =
/// sum_{a, c} x[0, i + a, j, c] * k[f, a, 0, c].
TEST(ReferenceKernels, OhwiConv2DHandValues) {
  std::vector<double> xs(18);
  for (int64_t i = 0; i < 18; ++i)
    xs[i] = double(i + 1);
  Tensor x = Tensor::f64({1, 3, 3, 2}, xs);
  // Filter 0 takes channel 0 of the upper tap, filter 1 channel 1 of the
  // lower tap minus channel 0 of the upper.
  Tensor k = Tensor::f64({2, 2, 1, 2}, {1, 0, 0, 0, /**/ -1, 0, 0, 1});
  KernelConfig cfg = convConfig("valid", 1, 1);
  cfg.set("filter_layout", std::string("ohwi"));
  Tensor y = Tensor::f64({1, 2, 3, 2});
  RUN_OK("conv2d", cfg, {&x, &k}, {&y});
  std::vector<double> want;
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j) {
      double up0 = xs[(i * 3 + j) * 2], down1 = xs[((i + 1) * 3 + j) * 2 + 1];
      want.push_back(up0);
      want.push_back(down1 - up0);
    }
  EXPECT_EQ(y.values(), want);
  // The same memory read as HWIO is a 2x2 window over one input channel,
  // which the two-channel input refuses: the layout is the config's.
  Tensor h = Tensor::f64({1, 2, 3, 2});
  cfg.set("filter_layout", std::string("hwio"));
  EXPECT_FALSE(launch("conv2d", cfg, {&x, &k}, {&h}).isOk());
}

/// filter_layout takes hwio or ohwi only; anything else is refused by each
/// of the five kernels, naming it and the value, even where the kernel
/// read as HWIO would not fit the input.
TEST(ReferenceKernels, RefusesAnUnknownFilterLayout) {
  KernelConfig cfg = convConfig("valid", 1, 1);
  cfg.set("filter_layout", std::string("OHWI"));
  KernelConfig pool = cfg;
  pool.set("pool_size", std::vector<int64_t>{2, 2})
      .set("pool_strides", std::vector<int64_t>{2, 2})
      .set("pool_padding", std::string("valid"));
  // An OHWI kernel [8, 3, 3, 3] over 4x4: read as HWIO its window is 8x3.
  Tensor x = Tensor::f32({1, 4, 4, 3}), k = Tensor::f32({8, 3, 3, 3});
  Tensor y = Tensor::f32({1, 2, 2, 8}), dx = Tensor::f32({1, 4, 4, 3});
  Tensor dk = Tensor::f32({8, 3, 3, 3});
  Tensor py = Tensor::f32({1, 1, 1, 8}), at = Tensor::i32({1, 1, 1, 8});
  const std::string why = ": unknown filter_layout 'OHWI' (hwio or ohwi)";
  RUN_FAILS("conv2d" + why, "conv2d", cfg, {&x, &k}, {&y});
  RUN_FAILS("fused_conv2d" + why, "fused_conv2d", cfg, {&x, &k}, {&y});
  RUN_FAILS("fused_conv2d_pool" + why, "fused_conv2d_pool", pool, {&x, &k},
            {&py, &at});
  RUN_FAILS("conv2d_grad_input" + why, "conv2d_grad_input", cfg, {&y, &k},
            {&dx});
  RUN_FAILS("conv2d_grad_kernel" + why, "conv2d_grad_kernel", cfg, {&x, &y},
            {&dk});
  // The same operands with ohwi are accepted.
  cfg.set("filter_layout", std::string("ohwi"));
  RUN_OK("conv2d", cfg, {&x, &k}, {&y});
  RUN_OK("conv2d_grad_kernel", cfg, {&x, &y}, {&dk});
}

TEST(ReferenceKernels, FusedConv2DIsConvBiasActivation) {
  Tensor x = Tensor::f32({1, 4, 4, 2}, uniform(32, -1, 1, 3));
  Tensor k = Tensor::f32({3, 3, 2, 3}, uniform(54, -1, 1, 4));
  Tensor b = Tensor::f32({3}, {0.1, -0.2, 0.3});
  for (std::string act : {"none", "relu", "sigmoid", "tanh"}) {
    KernelConfig cfg = convConfig("same", 1, 1);
    cfg.set("activation", act);
    Tensor fused = Tensor::f32({1, 4, 4, 3}), conv = Tensor::f32({1, 4, 4, 3}),
           biased = Tensor::f32({1, 4, 4, 3}), ref = Tensor::f32({1, 4, 4, 3});
    RUN_OK("fused_conv2d", cfg, {&x, &k, &b}, {&fused});
    RUN_OK("conv2d", cfg, {&x, &k}, {&conv});
    RUN_OK("bias_add", {}, {&conv, &b}, {&biased});
    if (act == "none")
      ref = biased;
    else
      RUN_OK(act, {}, {&biased}, {&ref});
    expectAllNear(fused.values(), ref.values(), 1e-6, act);
  }
  // Without bias: two inputs.
  KernelConfig cfg = convConfig("valid", 1, 1);
  cfg.set("activation", std::string("none"));
  Tensor fused = Tensor::f32({1, 2, 2, 3}), conv = Tensor::f32({1, 2, 2, 3});
  RUN_OK("fused_conv2d", cfg, {&x, &k}, {&fused});
  RUN_OK("conv2d", cfg, {&x, &k}, {&conv});
  expectAllNear(fused.values(), conv.values(), 1e-6);
}

TEST(ReferenceKernels, DenseAndFusedDense) {
  Tensor x = Tensor::f32({2, 2}, {1, 2, 3, 4});
  Tensor k = Tensor::f32({2, 3}, {1, 0, 1, 0, 1, 1});
  Tensor y = Tensor::f32({2, 3});
  RUN_OK("dense", {}, {&x, &k}, {&y});
  expectAllNear(y.values(), {1, 2, 3, 3, 4, 7}, 1e-6);
  Tensor b = Tensor::f32({3}, {-2, -3, 0});
  KernelConfig cfg;
  cfg.set("activation", std::string("relu"));
  RUN_OK("fused_dense", cfg, {&x, &k, &b}, {&y});
  expectAllNear(y.values(), {0, 0, 3, 1, 1, 7}, 1e-6);
}

TEST(ReferenceKernels, BiasAddAndAdd) {
  Tensor x = Tensor::f32({2, 2}, {1, 2, 3, 4}), b = Tensor::f32({2}, {10, 20});
  Tensor y = Tensor::f32({2, 2});
  RUN_OK("bias_add", {}, {&x, &b}, {&y});
  expectAllNear(y.values(), {11, 22, 13, 24}, 1e-6);
  Tensor z = Tensor::f32({2, 2});
  RUN_OK("add", {}, {&x, &y, &x}, {&z});
  expectAllNear(z.values(), {13, 26, 19, 32}, 1e-6);
}

TEST(ReferenceKernels, Pooling) {
  std::vector<double> v16;
  for (int i = 1; i <= 16; ++i)
    v16.push_back(i);
  Tensor x = Tensor::f32({1, 4, 4, 1}, v16), y = Tensor::f32({1, 2, 2, 1});
  RUN_OK("max_pool2d", poolConfig("valid", 2, 2), {&x}, {&y});
  expectAllNear(y.values(), {6, 8, 14, 16}, 1e-6);
  RUN_OK("avg_pool2d", poolConfig("valid", 2, 2), {&x}, {&y});
  expectAllNear(y.values(), {3.5, 5.5, 11.5, 13.5}, 1e-6);
  // same on 3x3, pool 2 stride 2: pad one row and column after; padded
  // positions are excluded from the average.
  Tensor x3 = Tensor::f32({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  RUN_OK("avg_pool2d", poolConfig("same", 2, 2), {&x3}, {&y});
  expectAllNear(y.values(), {3, 4.5, 7.5, 9}, 1e-6);
  RUN_OK("max_pool2d", poolConfig("same", 2, 2), {&x3}, {&y});
  expectAllNear(y.values(), {5, 6, 8, 9}, 1e-6);
  Tensor g = Tensor::f32({1, 1});
  RUN_OK("global_avg_pool2d", {}, {&x3}, {&g});
  expectAllNear(g.values(), {5}, 1e-6);
}

TEST(ReferenceKernels, MaxPoolGradGoesToFirstMaximum) {
  Tensor x = Tensor::f32({1, 2, 2, 1}, {3, 3, 1, 3});
  Tensor y = Tensor::f32({1, 1, 1, 1}, {3}),
         dy = Tensor::f32({1, 1, 1, 1}, {1});
  Tensor dx = Tensor::f32({1, 2, 2, 1});
  RUN_OK("max_pool2d_grad", poolConfig("valid", 2, 2), {&x, &y, &dy}, {&dx});
  expectAllNear(dx.values(), {1, 0, 0, 0}, 0);
}

/// graph-fuse's fused_conv2d_pool + max_pool2d_argmax_grad {relu_grad}
/// compute what they replace, fused_conv2d (relu) + max_pool2d +
/// max_pool2d_grad {relu_grad}: a conv whose relu zeroes many positions
/// (whole windows among them, where the argmax form must drop the
/// gradient by y <= 0) and windows that overlap (3x3 stride 2) or tile.
TEST(ReferenceKernels, ConvPoolWithArgmaxIsConvThenPool) {
  for (auto [size, stride, padding] :
       {std::tuple{2, 2, "valid"}, std::tuple{3, 2, "same"}}) {
    KernelConfig conv = poolConfig("valid", 1, 1); // strides 1, valid
    conv.set("activation", std::string("relu"));
    KernelConfig pool = poolConfig(padding, size, stride);
    KernelConfig fused = conv;
    fused.set("pool_size", pool.getInts("pool_size"))
        .set("pool_strides", pool.getInts("strides"))
        .set("pool_padding", std::string(padding));
    Tensor x = Tensor::f32({2, 7, 7, 2}, uniform(2 * 7 * 7 * 2, -1, 1, 1));
    Tensor k = Tensor::f32({3, 3, 2, 3}, uniform(3 * 3 * 2 * 3, -1, 1, 2));
    Tensor b = Tensor::f32({3}, {-0.5, 0.0, 0.3});
    Tensor c = Tensor::f32({2, 5, 5, 3});
    RUN_OK("fused_conv2d", conv, {&x, &k, &b}, {&c});
    int64_t out = std::string(padding) == "same" ? 3 : 2;
    std::vector<int64_t> pooled = {2, out, out, 3};
    Tensor y = Tensor::f32(pooled), dx = Tensor::f32({2, 5, 5, 3});
    Tensor dy = Tensor::f32(pooled, uniform(2 * out * out * 3, -1, 1, 3));
    RUN_OK("max_pool2d", pool, {&c}, {&y});
    KernelConfig reluGrad = pool;
    reluGrad.set("relu_grad", int64_t{1});
    RUN_OK("max_pool2d_grad", reluGrad, {&c, &y, &dy}, {&dx});

    Tensor fy = Tensor::f32(pooled),
           at = Tensor::make(pooled, graph::plan::DType::i32);
    Tensor fdx = Tensor::f32({2, 5, 5, 3}), sum = Tensor::f32({3});
    RUN_OK("fused_conv2d_pool", fused, {&x, &k, &b}, {&fy, &at});
    RUN_OK("max_pool2d_argmax_grad", reluGrad, {&at, &fy, &dy}, {&fdx, &sum});
    expectAllNear(fy.values(), y.values(), 0);
    expectAllNear(fdx.values(), dx.values(), 0);
    std::vector<double> channelSums(3, 0.0), d = dx.values();
    for (size_t i = 0; i < d.size(); ++i)
      channelSums[i % 3] += d[i];
    expectAllNear(sum.values(), channelSums, 1e-6);
    // The relu left windows whose maximum is 0: the case y <= 0 decides.
    std::vector<double> ys = y.values();
    EXPECT_GT(std::count(ys.begin(), ys.end(), 0.0), 0) << padding;
  }
}

/// graph-fuse's fused_conv2d_pool_grad_kernel computes what it replaces,
/// conv2d_grad_kernel(x, max_pool2d_argmax_grad {relu_grad}), and with
/// writes_workspace that dense gradient in its workspace: the seed
/// CNN's first layer (one channel, 2x2 stride 2 pool) and a general one
/// (two channels, padded stride-2 convolution, overlapping 3x3 windows),
/// each with the relu's zeros deciding some windows.
TEST(ReferenceKernels, ConvPoolGradKernelIsArgmaxGradThenKernelGrad) {
  struct Layer {
    const char *convPadding;
    int64_t convStride;
    const char *poolPadding;
    int64_t poolSize, poolStride;
    std::vector<int64_t> x, k;
  };
  for (const Layer &l :
       {Layer{"valid", 1, "valid", 2, 2, {3, 9, 8, 1}, {3, 3, 1, 4}},
        Layer{"same", 2, "same", 3, 2, {2, 9, 7, 2}, {3, 3, 2, 3}}}) {
    KernelConfig conv = poolConfig(l.convPadding, 1, l.convStride);
    conv.set("dilations", std::vector<int64_t>{1, 1});
    KernelConfig forward = conv;
    forward.set("activation", std::string("relu"));
    KernelConfig pool = poolConfig(l.poolPadding, l.poolSize, l.poolStride);
    forward.set("pool_size", pool.getInts("pool_size"))
        .set("pool_strides", pool.getInts("strides"))
        .set("pool_padding", std::string(l.poolPadding));
    Tensor x = Tensor::f32(l.x, uniform(count(l.x), -1, 1, 4));
    Tensor k = Tensor::f32(l.k, uniform(count(l.k), -1, 1, 5));
    int64_t f = l.k[3];
    int64_t oh = (l.x[1] + l.convStride - 1) / l.convStride;
    int64_t ow = (l.x[2] + l.convStride - 1) / l.convStride;
    if (std::string(l.convPadding) == "valid")
      oh = l.x[1] - 2, ow = l.x[2] - 2;
    std::vector<int64_t> convShape = {l.x[0], oh, ow, f};
    int64_t ph = std::string(l.poolPadding) == "same"
                     ? (oh + l.poolStride - 1) / l.poolStride
                     : (oh - l.poolSize) / l.poolStride + 1;
    int64_t pw = std::string(l.poolPadding) == "same"
                     ? (ow + l.poolStride - 1) / l.poolStride
                     : (ow - l.poolSize) / l.poolStride + 1;
    std::vector<int64_t> pooled = {l.x[0], ph, pw, f};
    Tensor y = Tensor::f32(pooled),
           at = Tensor::make(pooled, graph::plan::DType::i32);
    RUN_OK("fused_conv2d_pool", forward, {&x, &k}, {&y, &at});
    Tensor dy = Tensor::f32(pooled, uniform(count(pooled), -1, 1, 6));

    KernelConfig route = pool;
    route.set("relu_grad", int64_t{1});
    Tensor dense = Tensor::f32(convShape), sum = Tensor::f32({f});
    Tensor dk = Tensor::f32(l.k);
    RUN_OK("max_pool2d_argmax_grad", route, {&at, &y, &dy}, {&dense, &sum});
    RUN_OK("conv2d_grad_kernel", conv, {&x, &dense}, {&dk});

    KernelConfig fused = forward;
    fused.set("relu_grad", int64_t{1});
    Tensor fdk = Tensor::f32(l.k), workspace = Tensor::f32(convShape),
           fsum = Tensor::f32({f});
    RUN_OK("fused_conv2d_pool_grad_kernel", fused, {&x, &at, &y, &dy},
           {&fdk, &workspace, &fsum});
    expectAllNear(fdk.values(), dk.values(), 1e-6);
    expectAllNear(fsum.values(), sum.values(), 1e-6);
    // With writes_workspace the workspace is the dense gradient too.
    KernelConfig writing = fused;
    writing.set("writes_workspace", int64_t{1});
    Tensor wdk = Tensor::f32(l.k),
           written = Tensor::f32(convShape,
                                 std::vector<double>(count(convShape), 5.0)),
           wsum = Tensor::f32({f});
    RUN_OK("fused_conv2d_pool_grad_kernel", writing, {&x, &at, &y, &dy},
           {&wdk, &written, &wsum});
    expectAllNear(written.values(), dense.values(), 0);
    expectAllNear(wdk.values(), dk.values(), 1e-6);
    std::vector<double> ys = y.values();
    EXPECT_GT(std::count(ys.begin(), ys.end(), 0.0), 0) << l.convPadding;
  }
}

/// Keras' confusion counts by hand: a prediction is positive above the
/// threshold (Keras' `>`); rows tp, fp, tn, fn.
TEST(ReferenceKernels, ConfusionCountsByHand) {
  Tensor p = Tensor::f32({2, 2}, {0.9f, 0.2f, 0.6f, 0.7f});
  Tensor t = Tensor::f32({2, 2}, {1, 0, 0, 1});
  Tensor counts = Tensor::f32({4, 1});
  RUN_OK("confusion_counts", {}, {&p, &t}, {&counts});
  expectAllNear(counts.values(), {2, 1, 1, 0}, 0);
  // Row weights 3 and 0.5; at 0.65 the 0.6 is no longer a false positive.
  Tensor w = Tensor::f32({2}, {3, 0.5});
  KernelConfig at;
  at.set("threshold", 0.65);
  RUN_OK("confusion_counts", at, {&p, &t, &w}, {&counts});
  expectAllNear(counts.values(), {3.5, 0, 3.5, 0}, 1e-6);
}

/// Dice with axis [1]: one ratio a sample, 1 - 2 I / (T + P), then the
/// mean; the ignored class' rows weigh nothing and the others R / K.
TEST(ReferenceKernels, SampleDiceAndIgnoreClassByHand) {
  Tensor p = Tensor::f32({2, 2}, {1, 0, 0.5f, 0.5f});
  Tensor t = Tensor::f32({2, 2}, {1, 0, 1, 0});
  Tensor loss = Tensor::f32({});
  KernelConfig dice;
  dice.set("kind", std::string("dice")).set("axis", std::vector<int64_t>{1});
  RUN_OK("sample_overlap_loss", dice, {&p, &t}, {&loss});
  // Sample 0: 1 - 2/2 = 0; sample 1: 1 - 1/2 = 0.5 (Keras' epsilon aside).
  EXPECT_NEAR(loss.values()[0], 0.25, 1e-6);
  Tensor labels = Tensor::i32({4}, {1, -1, 0, -1});
  Tensor ones = Tensor::f32({4}, {1, 1, 1, 1});
  Tensor kept = Tensor::f32({2});
  KernelConfig ignore;
  ignore.set("ignore_class", int64_t{-1});
  RUN_OK("kept_rows", ignore, {&labels, &ones}, {&kept});
  expectAllNear(kept.values(), {2, 4}, 0);
  Tensor labelsOut = Tensor::i32({4});
  Tensor weights = Tensor::f32({4});
  RUN_OK("ignore_class", ignore, {&labels, &ones, &kept},
         {&labelsOut, &weights});
  expectAllNear(labelsOut.values(), {1, 0, 0, 0}, 0);
  expectAllNear(weights.values(), {2, 0, 2, 0}, 0);
}

TEST(ReferenceKernels, Activations) {
  Tensor x = Tensor::f64({4}, {-1, 0.5, 1, 2});
  Tensor y = Tensor::f64({4});
  RUN_OK("relu", {}, {&x}, {&y});
  expectAllNear(y.values(), {0, 0.5, 1, 2}, 1e-15);
  RUN_OK("sigmoid", {}, {&x}, {&y});
  expectAllNear(y.values(),
                {0.2689414213699951, 0.6224593312018546, 0.7310585786300049,
                 0.8807970779778823},
                1e-12);
  RUN_OK("tanh", {}, {&x}, {&y});
  EXPECT_NEAR(y.values()[0], -0.7615941559557649, 1e-12);
  RUN_OK("elu", {}, {&x}, {&y}); // alpha defaults to 1
  EXPECT_NEAR(y.values()[0], std::exp(-1.0) - 1.0, 1e-12);
  KernelConfig alpha;
  alpha.set("alpha", 0.5);
  RUN_OK("elu", alpha, {&x}, {&y});
  EXPECT_NEAR(y.values()[0], 0.5 * (std::exp(-1.0) - 1.0), 1e-12);
  RUN_OK("leaky_relu", {}, {&x}, {&y}); // alpha defaults to 0.2
  expectAllNear(y.values(), {-0.2, 0.5, 1, 2}, 1e-15);
  RUN_OK("gelu", {}, {&x}, {&y});
  EXPECT_NEAR(y.values()[2], 0.8413447460685429, 1e-12);   // Phi(1)
  EXPECT_NEAR(y.values()[0], -0.15865525393145707, 1e-12); // -Phi(-1)
  KernelConfig approx;
  approx.set("approximate", int64_t{1});
  RUN_OK("gelu", approx, {&x}, {&y});
  EXPECT_NEAR(y.values()[2], 0.8411919906082768, 1e-12);
}

TEST(ReferenceKernels, Softmax) {
  Tensor x = Tensor::f64({2, 3}, {1, 2, 3, 0, 0, 0});
  Tensor y = Tensor::f64({2, 3});
  RUN_OK("softmax", {}, {&x}, {&y});
  expectAllNear(y.values(),
                {0.09003057317038046, 0.24472847105479767, 0.6652409557748219,
                 1.0 / 3, 1.0 / 3, 1.0 / 3},
                1e-12);
  // axis 1 of a rank-3 tensor sums to one over that axis.
  Tensor z = Tensor::f64({2, 3, 2}, uniform(12, -3, 3, 5)), p = z;
  KernelConfig axis;
  axis.set("axis", int64_t{1});
  RUN_OK("softmax", axis, {&z}, {&p});
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 2; ++i) {
      double sum = 0;
      for (int a = 0; a < 3; ++a)
        sum += p.get((b * 3 + a) * 2 + i);
      EXPECT_NEAR(sum, 1.0, 1e-12);
    }
}

TEST(ReferenceKernels, ShapeOps) {
  Tensor a = Tensor::f32({2, 2}, {1, 2, 3, 4}), b = Tensor::f32({2, 1}, {5, 6});
  Tensor c = Tensor::f32({2, 3});
  KernelConfig last;
  last.set("axis", int64_t{-1});
  RUN_OK("concatenate", last, {&a, &b}, {&c});
  expectAllNear(c.values(), {1, 2, 5, 3, 4, 6}, 0);
  Tensor c0 = Tensor::f32({3, 2});
  Tensor b0 = Tensor::f32({1, 2}, {5, 6});
  KernelConfig first;
  first.set("axis", int64_t{0});
  RUN_OK("concatenate", first, {&a, &b0}, {&c0});
  expectAllNear(c0.values(), {1, 2, 3, 4, 5, 6}, 0);
  Tensor s = Tensor::f32({2, 1});
  KernelConfig sl;
  sl.set("axis", int64_t{1}).set("offset", int64_t{2});
  RUN_OK("slice", sl, {&c}, {&s});
  expectAllNear(s.values(), {5, 6}, 0);
  Tensor f = Tensor::f32({1, 6});
  RUN_OK("flatten", {}, {&c}, {&f});
  expectAllNear(f.values(), c.values(), 0);
  Tensor r = Tensor::f32({3, 2});
  RUN_OK("reshape", {}, {&c}, {&r});
  expectAllNear(r.values(), c.values(), 0);
}

TEST(ReferenceKernels, BatchNorm) {
  Tensor x = Tensor::f64({2, 2}, {1, 2, 3, 6});
  Tensor mean = Tensor::f64({2}, {1, 2}), var = Tensor::f64({2}, {4, 16});
  Tensor gamma = Tensor::f64({2}, {2, 3}), beta = Tensor::f64({2}, {1, -1});
  KernelConfig cfg;
  cfg.set("epsilon", 0.0).set("momentum", 0.9);
  Tensor y = Tensor::f64({2, 2});
  RUN_OK("batch_norm", cfg, {&x, &mean, &var, &gamma, &beta}, {&y});
  expectAllNear(y.values(), {1, -1, 3, 2}, 1e-12);
  RUN_OK("batch_norm", cfg, {&x, &mean, &var}, {&y});
  expectAllNear(y.values(), {0, 0, 1, 1}, 1e-12);
  // Beta alone (Keras center=True, scale=False): the fourth input is beta,
  // as has_gamma/has_beta say, not gamma.
  KernelConfig shiftOnly = cfg;
  shiftOnly.set("has_gamma", int64_t{0}).set("has_beta", int64_t{1});
  RUN_OK("batch_norm", shiftOnly, {&x, &mean, &var, &beta}, {&y});
  expectAllNear(y.values(), {1, -1, 2, 0}, 1e-12);
  // Training: batch mean (2, 4), biased variance (1, 4), unbiased (2, 8).
  // Keras 3 moves the moving variance toward the biased one (ops.moments).
  Tensor bm = Tensor::f64({2}), bis = Tensor::f64({2}), nm = Tensor::f64({2}),
         nv = Tensor::f64({2});
  RUN_OK("batch_norm_train", cfg, {&x, &mean, &var, &gamma, &beta},
         {&y, &bm, &bis, &nm, &nv});
  expectAllNear(y.values(), {-1, -4, 3, 2}, 1e-12);
  expectAllNear(bm.values(), {2, 4}, 1e-12);
  expectAllNear(bis.values(), {1, 0.5}, 1e-12);
  expectAllNear(nm.values(), {0.9 * 1 + 0.1 * 2, 0.9 * 2 + 0.1 * 4}, 1e-12);
  expectAllNear(nv.values(), {0.9 * 4 + 0.1 * 1, 0.9 * 16 + 0.1 * 4}, 1e-12);
  // tf.keras 2's fused kernel toward the unbiased one.
  KernelConfig unbiased = cfg;
  unbiased.set("unbiased_moving_variance", int64_t{1});
  RUN_OK("batch_norm_train", unbiased, {&x, &mean, &var, &gamma, &beta},
         {&y, &bm, &bis, &nm, &nv});
  expectAllNear(nv.values(), {0.9 * 4 + 0.1 * 2, 0.9 * 16 + 0.1 * 8}, 1e-12);
  // Beta alone in training: y = xhat + beta.
  RUN_OK("batch_norm_train", shiftOnly, {&x, &mean, &var, &beta},
         {&y, &bm, &bis, &nm, &nv});
  expectAllNear(y.values(), {0, -2, 2, 0}, 1e-12);
  // Inputs that has_gamma/has_beta do not account for are refused.
  RUN_FAILS("has_gamma and has_beta do not match the inputs", "batch_norm",
            shiftOnly, {&x, &mean, &var, &gamma, &beta}, {&y});
  // In place: the new moving statistics overwrite the old buffers.
  RUN_OK("batch_norm_train", unbiased, {&x, &mean, &var},
         {&y, &bm, &bis, &mean, &var});
  expectAllNear(mean.values(), {1.1, 2.2}, 1e-12);
  expectAllNear(var.values(), {3.8, 15.2}, 1e-12);
}

/// batch_norm_train and batch_norm_grad with a row mask (a short batch's
/// metric weights: B/n on its n examples, 0 on the padding) equal the
/// unmasked kernels on the kept rows alone, which is what Keras computes
/// on a batch of n; the left-out rows get no input gradient.
TEST(ReferenceKernels, BatchNormRowMaskIsTheKeptRowsBatch) {
  // [4, 2, 3]: rows 0 and 2 are examples, 1 and 3 padding (weight 4 / 2).
  std::vector<double> all = {1, 2,  3, 4, 5,  7, -1, 0, 2, 9,  8, 7,
                             3, -2, 5, 0, 11, 4, 6,  1, 0, -3, 2, 2};
  std::vector<double> keptValues(all.begin(), all.begin() + 6);
  keptValues.insert(keptValues.end(), all.begin() + 12, all.begin() + 18);
  Tensor x = Tensor::f64({4, 2, 3}, all),
         kept = Tensor::f64({2, 2, 3}, keptValues);
  Tensor mask = Tensor::f64({4}, {2, 0, 2, 0});
  Tensor mean = Tensor::f64({3}, {0.5, -1, 2}),
         var = Tensor::f64({3}, {1, 2, 3});
  Tensor gamma = Tensor::f64({3}, {1.5, 0.5, -2});
  KernelConfig cfg;
  cfg.set("epsilon", 1e-3).set("momentum", 0.9);
  cfg.set("unbiased_moving_variance", int64_t{1});
  KernelConfig masked = cfg;
  masked.set("has_gamma", int64_t{1}).set("has_beta", int64_t{0});
  masked.set("has_row_mask", int64_t{1});
  auto stats = [] {
    return std::vector<Tensor>{Tensor::f64({3}), Tensor::f64({3}),
                               Tensor::f64({3}), Tensor::f64({3})};
  };
  Tensor y = Tensor::f64({4, 2, 3}), yKept = Tensor::f64({2, 2, 3});
  std::vector<Tensor> s = stats(), sKept = stats();
  RUN_OK("batch_norm_train", masked, {&x, &mean, &var, &gamma, &mask},
         {&y, &s[0], &s[1], &s[2], &s[3]});
  RUN_OK("batch_norm_train", cfg, {&kept, &mean, &var, &gamma},
         {&yKept, &sKept[0], &sKept[1], &sKept[2], &sKept[3]});
  for (int i = 0; i < 4; ++i)
    expectAllNear(s[i].values(), sKept[i].values(), 1e-12);
  std::vector<double> yv = y.values(), ykv = yKept.values();
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(yv[i], ykv[i], 1e-12);
    EXPECT_NEAR(yv[12 + i], ykv[6 + i], 1e-12);
    // The left-out rows are beta (absent: 0), whatever their inputs.
    EXPECT_EQ(yv[6 + i], 0.0);
    EXPECT_EQ(yv[18 + i], 0.0);
  }

  // The gradient: dy is 0 on the padding rows (their loss weighs 0).
  std::vector<double> dyAll(24, 0.0);
  for (int i = 0; i < 6; ++i) {
    dyAll[i] = 0.3 * i - 0.7;
    dyAll[12 + i] = 1.1 - 0.2 * i;
  }
  std::vector<double> dyKept(dyAll.begin(), dyAll.begin() + 6);
  dyKept.insert(dyKept.end(), dyAll.begin() + 12, dyAll.begin() + 18);
  Tensor dy = Tensor::f64({4, 2, 3}, dyAll),
         dyK = Tensor::f64({2, 2, 3}, dyKept);
  for (bool withGamma : {true, false}) {
    KernelConfig gradCfg;
    gradCfg.set("has_gamma", int64_t{withGamma})
        .set("has_row_mask", int64_t{1});
    Tensor dx = Tensor::f64({4, 2, 3}), dxK = Tensor::f64({2, 2, 3});
    Tensor dg = Tensor::f64({3}), db = Tensor::f64({3});
    Tensor dgK = Tensor::f64({3}), dbK = Tensor::f64({3});
    std::vector<Tensor *> ins = {&dy, &x, &s[0], &s[1]};
    std::vector<Tensor *> insK = {&dyK, &kept, &s[0], &s[1]};
    if (withGamma) {
      ins.push_back(&gamma);
      insK.push_back(&gamma);
    }
    ins.push_back(&mask);
    RUN_OK("batch_norm_grad", gradCfg, ins, {&dx, &dg, &db});
    RUN_OK("batch_norm_grad", {}, insK, {&dxK, &dgK, &dbK});
    expectAllNear(dg.values(), dgK.values(), 1e-12);
    expectAllNear(db.values(), dbK.values(), 1e-12);
    std::vector<double> dxv = dx.values(), dxkv = dxK.values();
    for (int i = 0; i < 6; ++i) {
      EXPECT_NEAR(dxv[i], dxkv[i], 1e-12);
      EXPECT_NEAR(dxv[12 + i], dxkv[6 + i], 1e-12);
      EXPECT_EQ(dxv[6 + i], 0.0);
      EXPECT_EQ(dxv[18 + i], 0.0);
    }
  }
}

/// On R replicas the moving statistics the replicas average are each one's
/// times the mean of its mask (its share of the examples times R): the
/// average is one device's update over all the examples' mean. A short
/// batch of 3 at a global batch of 8 on 2 replicas: replica 0 holds its 3
/// examples (weight 8 / 3), replica 1 only padding.
TEST(ReferenceKernels, BatchNormRowMaskWeighsReplicasByExamples) {
  Tensor x0 = Tensor::f64({4, 2}, {1, 2, 3, 5, -1, 4, 0, 0});
  Tensor x1 = Tensor::f64({4, 2}, {7, 7, 7, 7, 7, 7, 7, 7});
  Tensor examples = Tensor::f64({3, 2}, {1, 2, 3, 5, -1, 4});
  double w = 8.0 / 3.0;
  Tensor m0 = Tensor::f64({4}, {w, w, w, 0}),
         m1 = Tensor::f64({4}, {0, 0, 0, 0});
  Tensor mean = Tensor::f64({2}, {0.5, -1}), var = Tensor::f64({2}, {1, 2});
  KernelConfig cfg;
  cfg.set("epsilon", 1e-3).set("momentum", 0.9);
  KernelConfig masked = cfg;
  masked.set("has_row_mask", int64_t{1});
  std::vector<Tensor> r0, r1, one;
  for (auto *outs : {&r0, &r1, &one}) {
    outs->push_back(Tensor::f64({outs == &one ? 3 : 4, 2}));
    for (int i = 0; i < 4; ++i)
      outs->push_back(Tensor::f64({2}));
  }
  auto run = [&](const KernelConfig &c, std::vector<Tensor *> ins,
                 std::vector<Tensor> &o) {
    RUN_OK("batch_norm_train", c, ins, {&o[0], &o[1], &o[2], &o[3], &o[4]});
  };
  run(masked, {&x0, &mean, &var, &m0}, r0);
  run(masked, {&x1, &mean, &var, &m1}, r1);
  run(cfg, {&examples, &mean, &var}, one);
  for (int stat : {3, 4}) {
    std::vector<double> a = r0[stat].values(), b = r1[stat].values();
    std::vector<double> averaged = {(a[0] + b[0]) / 2, (a[1] + b[1]) / 2};
    expectAllNear(averaged, one[stat].values(), 1e-12);
  }
  // The replica without examples: statistics 0, finite outputs.
  expectAllNear(r1[1].values(), {0, 0}, 0);
  for (double v : r1[0].values())
    EXPECT_TRUE(std::isfinite(v));
}

/// With sample_weight, a loss or the accuracy is sum_i w_i v_i / B: rows
/// weighing 0 (an evaluation batch's padding) change nothing but the
/// divisor, which the runtime undoes.
TEST(ReferenceKernels, SampleWeightsWeighRows) {
  Tensor p = Tensor::f32({3, 2}, {0.9, 0.1, 0.2, 0.8, 0.6, 0.4});
  Tensor y = Tensor::f32({3, 2}, {1, 0, 1, 0, 0, 1});
  Tensor idx = Tensor::i32({3}, {0, 0, 1});
  Tensor w = Tensor::f32({3}, {1, 0, 0.5});
  double l0 = -std::log(0.9), l1 = -std::log(0.2), l2 = -std::log(0.4);
  Tensor loss = Tensor::f64({});
  RUN_OK("categorical_crossentropy", {}, {&p, &y, &w}, {&loss});
  EXPECT_NEAR(loss.get(0), (l0 + 0.5 * l2) / 3, 1e-6);
  RUN_OK("sparse_categorical_crossentropy", {}, {&p, &idx, &w}, {&loss});
  EXPECT_NEAR(loss.get(0), (l0 + 0.5 * l2) / 3, 1e-6);
  RUN_OK("categorical_crossentropy", {}, {&p, &y}, {&loss});
  EXPECT_NEAR(loss.get(0), (l0 + l1 + l2) / 3, 1e-6);
  // Row 0 is right, rows 1 and 2 are wrong: weighted, 1 / 3.
  Tensor acc = Tensor::f64({});
  RUN_OK("accuracy", {}, {&p, &y, &w}, {&acc});
  EXPECT_NEAR(acc.get(0), 1.0 / 3, 1e-12);
  // softmax_cross_entropy: loss and gradient rows scale by w.
  Tensor z = Tensor::f64({2, 2}, {0, std::log(3.0), 1, 1});
  Tensor zy = Tensor::f64({2, 2}, {0, 1, 1, 0});
  Tensor zw = Tensor::f64({2}, {2, 0});
  Tensor prob = Tensor::f64({2, 2}), zl = Tensor::f64({}),
         grad = Tensor::f64({2, 2});
  RUN_OK("softmax_cross_entropy", {}, {&z, &zy, &zw}, {&prob, &zl, &grad});
  expectAllNear(prob.values(), {0.25, 0.75, 0.5, 0.5}, 1e-12);
  EXPECT_NEAR(zl.get(0), 2 * -std::log(0.75) / 2, 1e-12);
  expectAllNear(grad.values(), {2 * 0.25 / 2, 2 * -0.25 / 2, 0, 0}, 1e-12);
  Tensor short2 = Tensor::f32({2}, {1, 1});
  RUN_FAILS("sample_weight must be [B]", "categorical_crossentropy", {},
            {&p, &y, &short2}, {&loss});
}

TEST(ReferenceKernels, GlobalNormOverEveryTensor) {
  Tensor a = Tensor::f32({2}, {3, 0}), b = Tensor::f32({2, 2}, {0, 4, 0, 12});
  Tensor norm = Tensor::f64({});
  RUN_OK("global_norm", {}, {&a, &b}, {&norm});
  EXPECT_NEAR(norm.get(0), 13.0, 1e-12);
  Tensor nan = Tensor::f32({1}, {std::nanf("")});
  RUN_OK("global_norm", {}, {&a, &nan}, {&norm});
  EXPECT_TRUE(std::isnan(norm.get(0)));
}

TEST(ReferenceKernels, LossesMatchKerasDocumentation) {
  // keras.losses.CategoricalCrossentropy docstring: 1.177.
  Tensor p = Tensor::f32({2, 3}, {0.05, 0.95, 0, 0.1, 0.8, 0.1});
  Tensor y = Tensor::f32({2, 3}, {0, 1, 0, 0, 0, 1});
  Tensor idx = Tensor::i32({2}, {1, 2});
  Tensor loss = Tensor::f32({});
  RUN_OK("categorical_crossentropy", {}, {&p, &y}, {&loss});
  EXPECT_NEAR(loss.get(0), 1.1769392, 1e-6);
  RUN_OK("sparse_categorical_crossentropy", {}, {&p, &idx}, {&loss});
  EXPECT_NEAR(loss.get(0), 1.1769392, 1e-6);
  // From logits: equal logits give log(C).
  Tensor z = Tensor::f32({1, 4}, {2, 2, 2, 2}), l1 = Tensor::i32({1}, {3});
  KernelConfig logits;
  logits.set("from_logits", int64_t{1});
  RUN_OK("sparse_categorical_crossentropy", logits, {&z, &l1}, {&loss});
  EXPECT_NEAR(loss.get(0), std::log(4.0), 1e-6);
  // Probabilities that do not sum to one are normalised first.
  Tensor q = Tensor::f64({1, 2}, {1, 3}), y1 = Tensor::f64({1, 2}, {0, 1});
  Tensor l64 = Tensor::f64({});
  RUN_OK("categorical_crossentropy", {}, {&q, &y1}, {&l64});
  EXPECT_NEAR(l64.get(0), -std::log(0.75), 1e-12);
}

//===----------------------------------------------------------------------===//
// pointwise_loss: Keras 3's element-wise losses
//===----------------------------------------------------------------------===//

KernelConfig lossKind(const std::string &kind) {
  KernelConfig cfg;
  cfg.set("kind", kind);
  return cfg;
}

/// pointwise_loss of f64 predictions and targets of `shape`, weighted
/// when `w` is given.
double pointwiseLossOf(const KernelConfig &cfg, std::vector<int64_t> shape,
                       const std::vector<double> &p,
                       const std::vector<double> &t,
                       const std::vector<double> &w = {}) {
  Tensor pt = Tensor::f64(shape, p), tt = Tensor::f64(shape, t);
  Tensor wt = Tensor::f64({shape[0]},
                          w.empty() ? std::vector<double>(shape[0], 1.0) : w);
  Tensor loss = Tensor::f64({});
  std::vector<Tensor *> ins = {&pt, &tt};
  if (!w.empty())
    ins.push_back(&wt);
  Status s = launch("pointwise_loss", cfg, ins, {&loss});
  EXPECT_TRUE(s.isOk()) << s.message();
  return loss.get(0);
}

std::vector<double> pointwiseGradOf(const KernelConfig &cfg,
                                    std::vector<int64_t> shape,
                                    const std::vector<double> &p,
                                    const std::vector<double> &t) {
  Tensor pt = Tensor::f64(shape, p), tt = Tensor::f64(shape, t);
  Tensor dp = Tensor::f64(shape);
  Status s = launch("pointwise_loss_grad", cfg, {&pt, &tt}, {&dp});
  EXPECT_TRUE(s.isOk()) << s.message();
  return dp.values();
}

/// Keras 3.15 on TensorFlow 2.21 in float64: the loss object's value on
/// [2, 3] tensors, with sample_weight [0.5, 2], and tf.GradientTape's
/// d loss / d predictions without, e.g.
///   keras.losses.Huber(delta=1.5, dtype="float64")(t, p, sample_weight=w)
struct KerasLoss {
  std::string label;
  KernelConfig cfg;
  std::vector<double> p, t;
  double loss, weighted;
  std::vector<double> grad;
  double tol = 1e-12;
};

TEST(ReferenceKernels, PointwiseLossesMatchKeras) {
  const std::vector<double> p = {0.9, 0.2, 0.6, 0.3, 0.8, 0.1};
  const std::vector<double> t = {1.0, 0.0, 0.5, 0.2, 1.0, 0.0};
  KernelConfig huber = lossKind("huber");
  huber.set("delta", 1.5);
  KernelConfig smooth = lossKind("binary_crossentropy");
  smooth.set("label_smoothing", 0.2);
  KernelConfig logits = lossKind("binary_crossentropy");
  logits.set("from_logits", int64_t{1});
  KernelConfig logitsSmooth = logits;
  logitsSmooth.set("label_smoothing", 0.1);
  const std::vector<double> z = {40.0, -35.0, 2.0, -60.0, 0.5, 100.0};
  const std::vector<double> zt = {1.0, 0.0, 0.3, 1.0, 0.0, 0.0};
  const std::vector<double> hp = {0.3, -0.8, 1.5, -0.2, 0.4, 2.5};
  const std::vector<double> binary = {1.0, 0.0, 1.0, 0.0, 0.0, 1.0};
  const std::vector<double> signs = {1.0, -1.0, 1.0, -1.0, 1.0, 0.5};
  const double s6 = 1.0 / 6;
  const KerasLoss cases[] = {
      {"mean_squared_error",
       lossKind("mean_squared_error"),
       p,
       t,
       0.019999999999999997,
       0.024999999999999994,
       {-0.033333333333333326, 0.066666666666666666, 0.033333333333333326,
        0.033333333333333326, -0.066666666666666652, 0.033333333333333333}},
      {"mean_absolute_error",
       lossKind("mean_absolute_error"),
       p,
       t,
       0.1333333333333333,
       0.16666666666666663,
       {-s6, s6, s6, s6, -s6, s6}},
      {"mean_absolute_percentage_error",
       lossKind("mean_absolute_percentage_error"),
       p,
       t,
       50000016.666666672,
       50000025.833333343,
       {-16.666666666666668, 166666666.66666669, 33.333333333333336,
        83.333333333333329, -16.666666666666668, 166666666.66666669}},
      {"mean_squared_logarithmic_error",
       lossKind("mean_squared_logarithmic_error"),
       p,
       t,
       0.011104836831820945,
       0.012200339571835916,
       {-0.00899882357676326, 0.050644849109432899, 0.013445525236993997,
        0.020523771198342682, -0.019511206603301155, 0.028881842364948104}},
      {"huber",
       lossKind("huber"),
       p,
       t,
       0.0099999999999999985,
       0.012499999999999997,
       {-0.016666666666666663, 0.033333333333333333, 0.016666666666666663,
        0.016666666666666663, -0.033333333333333326, 0.016666666666666666}},
      {"huber delta 1.5, both sides",
       huber,
       {0.5, 3.0, -2.0, 1.0, 0.0, 1.4},
       {0.0, 0.0, 0.0, 1.0, 2.0, 0.0},
       1.3716666666666666,
       1.3995833333333334,
       {0.083333333333333329, 0.25, -0.25, 0, -0.25, 0.23333333333333331}},
      {"log_cosh",
       lossKind("log_cosh"),
       p,
       t,
       0.00995048125644582,
       0.012438101570557247,
       {-0.01661133243749266, 0.032895886704150668, 0.016611332437492632,
        0.016611332437492632, -0.03289588670415064, 0.016611332437492632},
       // Keras' log 2 is float32's even in float64 (ops.log(2.0), then the
       // cast): 1.9e-9 above log 2.
       3e-9},
      {"binary_crossentropy",
       lossKind("binary_crossentropy"),
       p,
       t,
       0.31611680463005304,
       0.37171804806207887,
       {-0.18518518518518517, 0.20833333333333331, 0.06944444444444442,
        0.079365079365079347, -0.20833333333333331, 0.18518518518518517}},
      {"binary_crossentropy label_smoothing 0.2",
       smooth,
       p,
       t,
       0.44404041451579535,
       0.5379772943721608,
       {0, 0.10416666666666667, 0.06944444444444442, 0.031746031746031717,
        -0.10416666666666667, 0}},
      {"binary_crossentropy from_logits, large |z|",
       logits,
       z,
       zt,
       27.08350083253718,
       53.785269662313617,
       {-7.0805904254859815e-19, 1.0508527933578308e-16, 0.096799512996313744,
        -0.16666666666666666, 0.10374322186697575, 0.16666666666666666}},
      {"binary_crossentropy from_logits label_smoothing 0.1",
       logitsSmooth,
       z,
       zt,
       26.364334165870517,
       51.419436328980289,
       {0.0083333333333333315, -0.0083333333333332274, 0.093466179662980403,
        -0.15833333333333333, 0.09540988853364242, 0.15833333333333333}},
      {"poisson",
       lossKind("poisson"),
       p,
       t,
       0.62078517560152335,
       0.72637706792894907,
       {-0.018518497942389134, 0.16666666666666666, 0.027777800925922053,
        0.055555592592580236, -0.041666640625003248, 0.16666666666666666}},
      {"kl_divergence",
       lossKind("kl_divergence"),
       p,
       t,
       0.078123717268298157,
       0.14559871974028993,
       {-0.55555555555555547, -2.4999999999999994e-07, -0.41666666666666669,
        -0.33333333333333343, -0.625, -4.9999999999999987e-07}},
      {"hinge, 0/1 targets",
       lossKind("hinge"),
       hp,
       binary,
       0.51666666666666672,
       0.80833333333333335,
       {-s6, s6, 0, s6, s6, 0}},
      {"hinge, other targets",
       lossKind("hinge"),
       hp,
       signs,
       0.3833333333333333,
       0.54166666666666663,
       {-s6, s6, 0, s6, -s6, 0}},
      {"squared_hinge, 0/1 targets",
       lossKind("squared_hinge"),
       hp,
       binary,
       0.52166666666666661,
       0.91083333333333327,
       {-0.23333333333333331, 0.066666666666666652, 0, 0.26666666666666666,
        0.46666666666666662, 0}},
      {"squared_hinge, other targets",
       lossKind("squared_hinge"),
       hp,
       signs,
       0.255,
       0.37749999999999995,
       {-0.23333333333333331, 0.066666666666666652, 0, 0.26666666666666666,
        -0.19999999999999998, 0}},
  };
  for (const KerasLoss &c : cases) {
    EXPECT_NEAR(pointwiseLossOf(c.cfg, {2, 3}, c.p, c.t), c.loss,
                c.tol * std::max(1.0, std::abs(c.loss)))
        << c.label;
    EXPECT_NEAR(pointwiseLossOf(c.cfg, {2, 3}, c.p, c.t, {0.5, 2.0}),
                c.weighted, c.tol * std::max(1.0, std::abs(c.weighted)))
        << c.label << ", weighted";
    expectAllNear(pointwiseGradOf(c.cfg, {2, 3}, c.p, c.t), c.grad, 1e-12,
                  c.label + " grad");
  }
}

/// The same losses written out from Keras' formulas, on the cases that
/// each decide something: hinge's label conversion over the whole launch,
/// huber's two sides, label smoothing, logits far from zero,
/// kl_divergence's sum over the last axis and the weights of a rank-3
/// batch.
TEST(ReferenceKernels, BinaryAccuracyIsKerasThreshold) {
  // keras.metrics.binary_accuracy: equal(t, p > 0.5), the mean over every
  // element (0.5 itself is not above the threshold); a metric, so it has
  // no gradient.
  const std::vector<int64_t> shape = {2, 3};
  EXPECT_NEAR(pointwiseLossOf(lossKind("binary_accuracy"), shape,
                              {0.9, 0.5, 0.2, 0.51, -3.0, 7.0},
                              {1, 1, 0, 0, 0, 1}),
              4.0 / 6, 1e-12);
  Tensor p = Tensor::f32({2, 3}), t = Tensor::f32({2, 3}),
         g = Tensor::f32({2, 3});
  Status s = launch("pointwise_loss_grad", lossKind("binary_accuracy"),
                    {&p, &t}, {&g});
  EXPECT_FALSE(s);
  EXPECT_EQ(s.message(), "pointwise_loss_grad: binary_accuracy is a metric: it "
                         "has no gradient");
}

TEST(ReferenceKernels, PointwiseLossesFollowKerasFormulas) {
  const std::vector<int64_t> shape = {2, 3};
  // hinge: all-0/1 targets become -1/1 ...
  const std::vector<double> hp = {0.3, -0.8, 1.5, -0.2, 0.4, 2.5};
  EXPECT_NEAR(pointwiseLossOf(lossKind("hinge"), shape, hp, {1, 0, 1, 0, 0, 1}),
              (0.7 + 0.2 + 0 + 0.8 + 1.4 + 0) / 6, 1e-12);
  EXPECT_NEAR(
      pointwiseLossOf(lossKind("squared_hinge"), shape, hp, {1, 0, 1, 0, 0, 1}),
      (0.49 + 0.04 + 0 + 0.64 + 1.96 + 0) / 6, 1e-12);
  // ... but one 0.5 among them keeps every target as it is.
  EXPECT_NEAR(
      pointwiseLossOf(lossKind("hinge"), shape, hp, {1, 0, 1, 0, 0, 0.5}),
      (0.7 + 1 + 0 + 1 + 1 + 0) / 6, 1e-12);
  expectAllNear(
      pointwiseGradOf(lossKind("hinge"), shape, hp, {1, 0, 1, 0, 0, 0.5}),
      {-1.0 / 6, 0, 0, 0, 0, 0}, 1e-12, "hinge grad, 0.5 target");
  // huber, delta 0.5: 0.5 e^2 up to |e| = delta, delta |e| - delta^2 / 2
  // beyond; the gradient e, then delta sign(e).
  KernelConfig huber = lossKind("huber");
  huber.set("delta", 0.5);
  const std::vector<double> hz(6, 0.0), he = {0.2, -0.4, 0.5, 0.9, -1.5, 3.0};
  EXPECT_NEAR(
      pointwiseLossOf(huber, shape, he, hz),
      (0.02 + 0.08 + 0.125 + (0.45 - 0.125) + (0.75 - 0.125) + (1.5 - 0.125)) /
          6,
      1e-12);
  expectAllNear(pointwiseGradOf(huber, shape, he, hz),
                {0.2 / 6, -0.4 / 6, 0.5 / 6, 0.5 / 6, -0.5 / 6, 0.5 / 6}, 1e-12,
                "huber grad");
  // binary_crossentropy with label_smoothing 0.3: t * 0.7 + 0.15.
  KernelConfig smooth = lossKind("binary_crossentropy");
  smooth.set("label_smoothing", 0.3);
  const std::vector<double> bp = {0.9, 0.2, 0.6, 0.3, 0.8, 0.1},
                            bt = {1, 0, 1, 0, 1, 0};
  double bce = 0.0;
  std::vector<double> bceGrad;
  for (int i = 0; i < 6; ++i) {
    double ts = bt[i] * 0.7 + 0.15;
    bce -= ts * std::log(bp[i]) + (1 - ts) * std::log(1 - bp[i]);
    bceGrad.push_back((-ts / bp[i] + (1 - ts) / (1 - bp[i])) / 6);
  }
  EXPECT_NEAR(pointwiseLossOf(smooth, shape, bp, bt), bce / 6, 1e-12);
  expectAllNear(pointwiseGradOf(smooth, shape, bp, bt), bceGrad, 1e-12,
                "bce grad, label smoothing");
  // From logits far from zero: max(z, 0) - z t + log1p(exp(-|z|)), finite.
  KernelConfig logits = lossKind("binary_crossentropy");
  logits.set("from_logits", int64_t{1});
  const std::vector<double> z = {800, -800, 800, -800, 50, -50},
                            zt = {1, 0, 0, 1, 0.5, 0.5};
  EXPECT_NEAR(pointwiseLossOf(logits, shape, z, zt),
              (0 + 0 + 800 + 800 + 25 + 25) / 6, 1e-12);
  expectAllNear(pointwiseGradOf(logits, shape, z, zt),
                {0, 0, 1.0 / 6, -1.0 / 6, 0.5 / 6, -0.5 / 6}, 1e-12,
                "bce from logits grad");
  // kl_divergence sums over the last axis: the mean over the B * ... rows.
  const std::vector<double> kp = {0.2, 0.3, 0.5, 0.6, 0.3, 0.1},
                            kt = {0.1, 0.6, 0.3, 0.5, 0.5, 0.0};
  double kl = 0.0;
  for (int i = 0; i < 6; ++i) {
    double tc = std::max(kt[i], 1e-7);
    kl += tc * std::log(tc / kp[i]);
  }
  EXPECT_NEAR(pointwiseLossOf(lossKind("kl_divergence"), shape, kp, kt), kl / 2,
              1e-12);
  EXPECT_NEAR(pointwiseGradOf(lossKind("kl_divergence"), shape, kp, kt)[1],
              -0.6 / 0.3 / 2, 1e-12);
  // Rank 3, [2, 2, 3]: each weight weighs its batch row's 6 elements, and
  // the sum is divided by all 12 (Keras: per-sample losses [2, 2], their
  // sum over the 4). Keras gives 0.084791666666666682 unweighted. Called
  // with sample_weight [2] it multiplies the [2, 2] losses by it
  // numpy-style, along their last axis (only because 2 == 2; any other
  // middle size is a broadcast error), so its 0.0908333 there is not a
  // per-row weighting and is not this kernel's.
  const std::vector<double> p3 = {0.9, 0.2, 0.6, 0.3,  0.8,  0.1,
                                  0.5, 0.4, 0.7, 0.25, 0.65, 0.15},
                            t3 = {1,   0,   0.5, 0.2, 1,   0,
                                  0.1, 0.9, 0.3, 0.6, 0.2, 0.2};
  double first = 0.0, second = 0.0;
  for (int i = 0; i < 12; ++i)
    (i < 6 ? first : second) += (p3[i] - t3[i]) * (p3[i] - t3[i]);
  KernelConfig mse = lossKind("mean_squared_error");
  EXPECT_NEAR(pointwiseLossOf(mse, {2, 2, 3}, p3, t3), (first + second) / 12,
              1e-12);
  EXPECT_NEAR(pointwiseLossOf(mse, {2, 2, 3}, p3, t3, {0.5, 2.0}),
              (0.5 * first + 2.0 * second) / 12, 1e-12);
  EXPECT_NEAR(pointwiseLossOf(mse, {2, 2, 3}, p3, t3), 0.084791666666666682,
              1e-12);
  // kl_divergence of rank 3 divides by the 4 rows of 3: Keras 0.204509534...
  EXPECT_NEAR(pointwiseLossOf(lossKind("kl_divergence"), {2, 2, 3}, p3, t3),
              0.204509534351522, 1e-12);
  // f32 operands: the same loss, rounded once.
  Tensor pf = Tensor::f32({2, 2, 3}, p3), tf = Tensor::f32({2, 2, 3}, t3);
  Tensor lf = Tensor::f32({});
  RUN_OK("pointwise_loss", mse, {&pf, &tf}, {&lf});
  EXPECT_NEAR(lf.get(0), 0.084791666666666682, 1e-7);
}

TEST(ReferenceKernels, SoftmaxCrossEntropy) {
  Tensor z = Tensor::f64({2, 2}, {0, 0, 1, 3});
  Tensor idx = Tensor::i32({2}, {0, 1});
  Tensor oh = Tensor::f64({2, 2}, {1, 0, 0, 1});
  for (Tensor *labels : {&idx, &oh}) {
    Tensor p = Tensor::f64({2, 2}), loss = Tensor::f64({}),
           g = Tensor::f64({2, 2});
    RUN_OK("softmax_cross_entropy", {}, {&z, labels}, {&p, &loss, &g});
    double p1 = 1.0 / (1.0 + std::exp(-2.0));
    expectAllNear(p.values(), {0.5, 0.5, 1 - p1, p1}, 1e-12);
    EXPECT_NEAR(loss.get(0), (std::log(2.0) - std::log(p1)) / 2, 1e-12);
    expectAllNear(g.values(), {-0.25, 0.25, (1 - p1) / 2, (p1 - 1) / 2}, 1e-12);
  }
}

TEST(ReferenceKernels, AccuracyFirstMaximumWins) {
  Tensor p = Tensor::f32(
      {4, 3}, {0.2, 0.5, 0.3, 0.4, 0.4, 0.2, 0.1, 0.1, 0.8, 0.3, 0.3, 0.3});
  Tensor idx = Tensor::i32({4}, {1, 1, 2, 0});
  Tensor acc = Tensor::f32({});
  RUN_OK("accuracy", {}, {&p, &idx}, {&acc});
  EXPECT_NEAR(acc.get(0), 0.75, 1e-7); // row 1's first max is class 0
  Tensor oh = Tensor::f32({4, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});
  RUN_OK("accuracy", {}, {&p, &oh}, {&acc});
  EXPECT_NEAR(acc.get(0), 0.75, 1e-7);
}

TEST(ReferenceKernels, TopKAccuracyIsKerasInTopK) {
  // Keras' ops.in_top_k: a hit when fewer than k classes score more than
  // the label, so ties at the k-th score are hits (row 3, k = 1 aside:
  // k = 1 is the first arg-max, categorical accuracy).
  Tensor p = Tensor::f32({4, 4}, {0.1, 0.5, 0.5, 0.2,   // label 2: 0 above
                                  0.4, 0.3, 0.2, 0.1,   // label 3: 3 above
                                  0.1, 0.6, 0.2, 0.1,   // label 2: 1 above
                                  0.3, 0.3, 0.3, 0.1}); // label 2: 0 above
  Tensor idx = Tensor::i32({4}, {2, 3, 2, 2});
  Tensor acc = Tensor::f32({});
  KernelConfig k2;
  k2.set("k", int64_t{2});
  RUN_OK("accuracy", k2, {&p, &idx}, {&acc});
  EXPECT_NEAR(acc.get(0), 0.75, 1e-7);
  KernelConfig k4;
  k4.set("k", int64_t{4});
  RUN_OK("accuracy", k4, {&p, &idx}, {&acc});
  EXPECT_NEAR(acc.get(0), 1.0, 1e-7);
  RUN_OK("accuracy", {}, {&p, &idx}, {&acc}); // k = 1: first maxima
  EXPECT_NEAR(acc.get(0), 0.0, 1e-7);
  // One-hot labels: their (first) arg-max is the label.
  Tensor oh =
      Tensor::f32({4, 4}, {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0});
  RUN_OK("accuracy", k2, {&p, &oh}, {&acc});
  EXPECT_NEAR(acc.get(0), 0.75, 1e-7);
}

TEST(ReferenceKernels, ElementwiseBody) {
  Tensor a = Tensor::f64({5}, {-2, -0.5, 0.1, 1, 3});
  Tensor b = Tensor::f64({5}, {0.3, 0.2, -1, 1, -5});
  KernelConfig cfg;
  cfg.set("body", std::string("add(a0, a1) -> t0; leaky_relu(t0) {alpha=0.1} "
                              "-> t1; gelu(t1) {approximate=true} -> t2; "
                              "yield t2"));
  Tensor y = Tensor::f64({5});
  RUN_OK("elementwise", cfg, {&a, &b}, {&y});
  Tensor t0 = Tensor::f64({5}), t1 = t0, t2 = t0;
  KernelConfig alpha, approx;
  alpha.set("alpha", 0.1);
  approx.set("approximate", int64_t{1});
  RUN_OK("add", {}, {&a, &b}, {&t0});
  RUN_OK("leaky_relu", alpha, {&t0}, {&t1});
  RUN_OK("gelu", approx, {&t1}, {&t2});
  expectAllNear(y.values(), t2.values(), 1e-15);
  // Gradients in a body, operands in dy, saved order.
  cfg.set("body", std::string("relu_grad(a0, a1) -> t0; sigmoid_grad(t0, a2) "
                              "-> t1; yield t1"));
  Tensor s = Tensor::f64({5}, {0.5, 0.5, 0.5, 0.25, 0.25});
  RUN_OK("elementwise", cfg, {&a, &b, &s}, {&y});
  expectAllNear(y.values(), {-2 * 0.25, -0.5 * 0.25, 0, 1 * 0.1875, 0}, 1e-15);
  cfg.set("body", std::string("frobnicate(a0) -> t0; yield t0"));
  EXPECT_FALSE(launch("elementwise", cfg, {&a}, {&y}).isOk());
  cfg.set("body", std::string("relu(t3) -> t0; yield t0"));
  EXPECT_FALSE(launch("elementwise", cfg, {&a}, {&y}).isOk());
}

TEST(ReferenceKernels, RejectsBadLaunches) {
  Tensor x = Tensor::f32({1, 3, 3, 1}), k = Tensor::f32({2, 2, 1, 1});
  Tensor wrong = Tensor::f32({1, 3, 3, 1});
  Status s = launch("conv2d", convConfig("valid", 1, 1), {&x, &k}, {&wrong});
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("conv2d: output is [1, 3, 3, 1], expected "
                             "[1, 2, 2, 1]"),
            std::string::npos)
      << s.message();
  EXPECT_FALSE(
      launch("conv2d", convConfig("causal", 1, 1), {&x, &k}, {&wrong}).isOk());
  EXPECT_FALSE(launch("conv2d", convConfig("valid", 1, 1), {&x}, {&wrong})
                   .isOk()); // one input
  Tensor p = Tensor::f32({2, 3}), bad = Tensor::i32({2}, {0, 3});
  Tensor loss = Tensor::f32({});
  s = launch("sparse_categorical_crossentropy", {}, {&p, &bad}, {&loss});
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("label 3 out of range"), std::string::npos);
  KernelConfig axis;
  axis.set("axis", int64_t{2});
  Tensor y = Tensor::f32({2, 3});
  EXPECT_FALSE(launch("softmax", axis, {&p}, {&y}).isOk());
}

//===----------------------------------------------------------------------===//
// Optimizers: hand-computed Keras 3 steps
//===----------------------------------------------------------------------===//

KernelConfig optimizer(const std::string &kind,
                       std::vector<std::pair<std::string, double>> hyper) {
  KernelConfig cfg;
  cfg.set("optimizer", kind);
  for (auto &[k, v] : hyper)
    cfg.set(k, v);
  return cfg;
}

TEST(ReferenceOptimizer, SGDPlainMomentumNesterov) {
  Tensor w = Tensor::f64({1}, {1.0}), g = Tensor::f64({1}, {0.5});
  RUN_OK(
      "optimizer_update",
      optimizer("sgd",
                {{"learning_rate", 0.1}, {"momentum", 0.0}, {"nesterov", 0.0}}),
      {&w, &g}, {&w});
  EXPECT_NEAR(w.get(0), 0.95, 1e-15);

  KernelConfig mom = optimizer(
      "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"nesterov", 0.0}});
  Tensor w2 = Tensor::f64({1}, {1.0}), v = Tensor::f64({1}, {0.0});
  RUN_OK("optimizer_update", mom, {&w2, &g, &v}, {&w2, &v});
  EXPECT_NEAR(v.get(0), -0.05, 1e-15);
  EXPECT_NEAR(w2.get(0), 0.95, 1e-15);
  RUN_OK("optimizer_update", mom, {&w2, &g, &v}, {&w2, &v});
  EXPECT_NEAR(v.get(0), -0.095, 1e-15); // 0.9 * -0.05 - 0.05
  EXPECT_NEAR(w2.get(0), 0.855, 1e-15);

  KernelConfig nest = optimizer(
      "sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"nesterov", 1.0}});
  Tensor w3 = Tensor::f64({1}, {1.0}), v3 = Tensor::f64({1}, {0.0});
  RUN_OK("optimizer_update", nest, {&w3, &g, &v3}, {&w3, &v3});
  EXPECT_NEAR(v3.get(0), -0.05, 1e-15);
  EXPECT_NEAR(w3.get(0), 1.0 + 0.9 * -0.05 - 0.05, 1e-15); // 0.905
}

TEST(ReferenceOptimizer, AdamTwoStepsAndAmsgrad) {
  KernelConfig cfg = optimizer("adam", {{"learning_rate", 0.1},
                                        {"beta_1", 0.9},
                                        {"beta_2", 0.999},
                                        {"epsilon", 1e-7},
                                        {"amsgrad", 0.0}});
  // Two variables in one launch: slots grouped per variable.
  Tensor w = Tensor::f64({1}, {1.0}), u = Tensor::f64({2}, {1.0, 1.0});
  Tensor gw = Tensor::f64({1}, {0.5}), gu = Tensor::f64({2}, {0.5, 0.5});
  Tensor mw = Tensor::f64({1}), vw = Tensor::f64({1}), mu = Tensor::f64({2}),
         vu = Tensor::f64({2});
  KernelContext ctx;
  ctx.step = 1;
  RUN_OK("optimizer_update", cfg, {&w, &u, &gw, &gu, &mw, &vw, &mu, &vu},
         {&w, &u, &mw, &vw, &mu, &vu}, ctx);
  EXPECT_NEAR(w.get(0), 0.9000006324515321, 1e-13);
  EXPECT_NEAR(u.get(1), 0.9000006324515321, 1e-13);
  EXPECT_NEAR(mw.get(0), 0.05, 1e-15);
  EXPECT_NEAR(vw.get(0), 0.00025, 1e-15);
  ctx.step = 2;
  gw.set({0.25});
  RUN_OK("optimizer_update", cfg, {&w, &u, &gw, &gu, &mw, &vw, &mu, &vu},
         {&w, &u, &mw, &vw, &mu, &vu}, ctx);
  EXPECT_NEAR(w.get(0), 0.8067831960988964, 1e-13);
  EXPECT_NEAR(mw.get(0), 0.07, 1e-15);
  EXPECT_NEAR(vw.get(0), 0.00031225, 1e-15);

  KernelConfig ams = optimizer("adam", {{"learning_rate", 0.1},
                                        {"beta_1", 0.9},
                                        {"beta_2", 0.999},
                                        {"epsilon", 1e-7},
                                        {"amsgrad", 1.0}});
  Tensor a = Tensor::f64({1}, {1.0}), ga = Tensor::f64({1}, {0.5});
  Tensor m = Tensor::f64({1}), v = Tensor::f64({1}), vhat = Tensor::f64({1});
  ctx.step = 1;
  RUN_OK("optimizer_update", ams, {&a, &ga, &m, &v, &vhat}, {&a, &m, &v, &vhat},
         ctx);
  ctx.step = 2;
  ga.set({0.0});
  RUN_OK("optimizer_update", ams, {&a, &ga, &m, &v, &vhat}, {&a, &m, &v, &vhat},
         ctx);
  EXPECT_NEAR(a.get(0), 0.8330287418979304, 1e-13);
  EXPECT_NEAR(v.get(0), 0.00024975, 1e-15);
  EXPECT_NEAR(vhat.get(0), 0.00025, 1e-15);
}

TEST(ReferenceOptimizer, RMSpropPlainAndCenteredMomentum) {
  KernelConfig plain = optimizer("rmsprop", {{"learning_rate", 0.01},
                                             {"rho", 0.9},
                                             {"momentum", 0.0},
                                             {"epsilon", 1e-7},
                                             {"centered", 0.0}});
  Tensor w = Tensor::f64({1}, {1.0}), g = Tensor::f64({1}, {0.5}),
         rms = Tensor::f64({1});
  RUN_OK("optimizer_update", plain, {&w, &g, &rms}, {&w, &rms});
  EXPECT_NEAR(w.get(0), 0.9683772866436797, 1e-13);
  g.set({0.25});
  RUN_OK("optimizer_update", plain, {&w, &g, &rms}, {&w, &rms});
  EXPECT_NEAR(w.get(0), 0.9536331166702025, 1e-13);
  EXPECT_NEAR(rms.get(0), 0.02875, 1e-15);

  KernelConfig full = optimizer("rmsprop", {{"learning_rate", 0.01},
                                            {"rho", 0.9},
                                            {"momentum", 0.5},
                                            {"epsilon", 1e-7},
                                            {"centered", 1.0}});
  // Slots: rms, momentum, mg.
  Tensor w2 = Tensor::f64({1}, {1.0}), g2 = Tensor::f64({1}, {0.5});
  Tensor r = Tensor::f64({1}), mom = Tensor::f64({1}), mg = Tensor::f64({1});
  RUN_OK("optimizer_update", full, {&w2, &g2, &r, &mom, &mg},
         {&w2, &r, &mom, &mg});
  EXPECT_NEAR(w2.get(0), 0.9666667407404939, 1e-13);
  g2.set({0.25});
  RUN_OK("optimizer_update", full, {&w2, &g2, &r, &mom, &mg},
         {&w2, &r, &mom, &mg});
  EXPECT_NEAR(w2.get(0), 0.9338120473419914, 1e-13);
  EXPECT_NEAR(r.get(0), 0.02875, 1e-15);
  EXPECT_NEAR(mom.get(0), 0.03285469339850246, 1e-13);
  EXPECT_NEAR(mg.get(0), 0.07, 1e-15);
}

TEST(ReferenceOptimizer, RejectsWrongSlotCount) {
  KernelConfig cfg = optimizer("adam", {{"learning_rate", 0.1}});
  Tensor w = Tensor::f32({1}), g = Tensor::f32({1}), m = Tensor::f32({1});
  EXPECT_FALSE(launch("optimizer_update", cfg, {&w, &g, &m}, {&w, &m}).isOk());
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

KernelConfig dropoutConfig(double rate, int64_t seed) {
  KernelConfig cfg;
  cfg.set("rate", rate).set("seed", seed);
  return cfg;
}

TEST(ReferenceDropout, ForwardAndGradientShareTheMask) {
  KernelContext ctx;
  ctx.step = 7;
  ctx.seed = 42;
  Tensor ones = Tensor::f32({16, 64}, std::vector<double>(1024, 1.0));
  Tensor y = Tensor::f32({16, 64}), dx = Tensor::f32({16, 64});
  RUN_OK("dropout", dropoutConfig(0.25, 3), {&ones}, {&y}, ctx);
  RUN_OK("dropout_grad", dropoutConfig(0.25, 3), {&ones}, {&dx}, ctx);
  expectAllNear(y.values(), dx.values(), 0);
  for (double v : y.values())
    EXPECT_TRUE(v == 0.0 || std::abs(v - 1.0 / 0.75) < 1e-6);
  // Another step or another op seed gives another mask.
  Tensor other = Tensor::f32({16, 64});
  ctx.step = 8;
  RUN_OK("dropout", dropoutConfig(0.25, 3), {&ones}, {&other}, ctx);
  EXPECT_NE(y.values(), other.values());
}

TEST(ReferenceDropout, KeepRate) {
  KernelContext ctx;
  const int64_t n = 200000;
  Tensor ones = Tensor::f32({1000, 200}, std::vector<double>(n, 1.0));
  Tensor y = Tensor::f32({1000, 200});
  for (double rate : {0.1, 0.5, 0.8}) {
    RUN_OK("dropout", dropoutConfig(rate, 11), {&ones}, {&y}, ctx);
    int64_t kept = 0;
    for (double v : y.values())
      kept += v != 0.0;
    double sigma = std::sqrt(n * rate * (1 - rate));
    EXPECT_NEAR(static_cast<double>(kept), n * (1 - rate), 5 * sigma) << rate;
  }
}

TEST(ReferenceDropout, ReplicasDropWhatOneReplicaWould) {
  KernelContext whole;
  whole.step = 3;
  whole.seed = 9;
  std::vector<double> v = uniform(8 * 5 * 3, -1, 1, 13);
  Tensor x = Tensor::f32({8, 5, 3}, v), y = Tensor::f32({8, 5, 3});
  RUN_OK("dropout", dropoutConfig(0.5, 1), {&x}, {&y}, whole);
  std::vector<double> joined;
  for (int r = 0; r < 2; ++r) {
    KernelContext part = whole;
    part.replica = r;
    part.replicas = 2;
    part.globalRowOffset = 4 * r;
    Tensor xr =
        Tensor::f32({4, 5, 3}, std::vector<double>(v.begin() + 60 * r,
                                                   v.begin() + 60 * (r + 1)));
    Tensor yr = Tensor::f32({4, 5, 3});
    RUN_OK("dropout", dropoutConfig(0.5, 1), {&xr}, {&yr}, part);
    std::vector<double> part_values = yr.values();
    joined.insert(joined.end(), part_values.begin(), part_values.end());
  }
  expectAllNear(joined, y.values(), 0);
}

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

/// Every op the compiler can launch (graph ops other than the structural
/// ones), written out so that a new op shows up as a failure here.
const std::vector<std::string> kLaunchable = {
    "accuracy",
    "add",
    "avg_pool2d",
    "avg_pool2d_grad",
    "batch_norm",
    "batch_norm_grad",
    "batch_norm_inference_grad",
    "batch_norm_train",
    "bias_add",
    "bias_add_grad",
    "broadcast",
    "categorical_crossentropy",
    "categorical_crossentropy_grad",
    "channel_scale",
    "channel_scale_shift",
    "clipped_relu",
    "clipped_relu_grad",
    "concatenate",
    "confusion_counts",
    "conv2d",
    "conv2d_grad_input",
    "conv2d_grad_kernel",
    "dense",
    "dense_grad_input",
    "dense_grad_kernel",
    "dropout",
    "dropout_grad",
    "elementwise",
    "ema_update",
    "elu",
    "elu_grad",
    "flatten",
    "fused_conv2d",
    "fused_conv2d_pool",
    "fused_conv2d_pool_grad_kernel",
    "fused_dense",
    "gelu",
    "gelu_grad",
    "global_avg_pool2d",
    "global_avg_pool2d_grad",
    "global_norm",
    "loss_scale_update",
    "hard_sigmoid",
    "hard_sigmoid_grad",
    "hard_silu",
    "hard_silu_grad",
    "ignore_class",
    "kept_rows",
    "layer_norm",
    "layer_norm_grad",
    "leaky_relu",
    "leaky_relu_grad",
    "max_pool2d",
    "max_pool2d_argmax_grad",
    "max_pool2d_grad",
    "maximum",
    "maximum_grad",
    "multiply",
    "normalize",
    "optimizer_update",
    "overlap_loss",
    "overlap_loss_grad",
    "overlap_sums",
    "pad",
    "pointwise_loss",
    "pointwise_loss_grad",
    "random_contrast",
    "random_contrast_grad",
    "random_image_transform",
    "random_image_transform_grad",
    "relu",
    "relu_grad",
    "reshape",
    "sample_overlap_loss",
    "sample_overlap_loss_grad",
    "scale_by",
    "scale_shift",
    "sigmoid",
    "sigmoid_grad",
    "silu",
    "silu_grad",
    "slice",
    "softmax",
    "softmax_cross_entropy",
    "softmax_grad",
    "sparse_categorical_crossentropy",
    "sparse_categorical_crossentropy_grad",
    "sum_to",
    "tanh",
    "tanh_grad",
    "transpose",
    "cast",
};

TEST(ReferenceRegistry, RegistersEveryLaunchableOp) {
  reference::registerReferenceKernels();
  // Graph op names only: tests elsewhere register `test.*` kernels.
  std::vector<std::string> names;
  for (const std::string &name :
       KernelRegistry::global().names(Backend::reference))
    if (name.find('.') == std::string::npos)
      names.push_back(name);
  std::vector<std::string> expected = kLaunchable;
  std::sort(names.begin(), names.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(names, expected);
  std::vector<std::string> listed = reference::referenceKernelNames();
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, expected);
}

/// The same list read from GraphOps.td, so an op added there without a
/// kernel fails here (graph-lower-to-exec launches every graph op but
/// these structural ones).
TEST(ReferenceRegistry, CoversEveryOpInGraphOpsTd) {
  std::ifstream td(GRAPH_SOURCE_DIR "/dialects/graph/GraphOps.td");
  ASSERT_TRUE(td.good()) << "cannot read GraphOps.td";
  std::stringstream text;
  text << td.rdbuf();
  std::string source = text.str();
  std::regex def(R"re(def\s+\w+\s*:\s*Graph_\w+<\s*"(\w+)")re");
  const std::set<std::string> structural = {
      "variable", "read_variable", "model",           "input",
      "output",   "training",      "assign_variable", "yield"};
  std::set<std::string> ops;
  for (auto it = std::sregex_iterator(source.begin(), source.end(), def);
       it != std::sregex_iterator(); ++it)
    if (!structural.count((*it)[1]))
      ops.insert((*it)[1]);
  EXPECT_EQ(ops, std::set<std::string>(kLaunchable.begin(), kLaunchable.end()));
  reference::registerReferenceKernels();
  for (const std::string &op : ops)
    EXPECT_TRUE(KernelRegistry::global().has(op, Backend::reference)) << op;
}

} // namespace
