//===- ConformanceCases.h - kernel cases every backend passes ---*- C++ -*-===//
//
// One case (or more) per kernel: f32 inputs, a config, output shapes. Shared
// by the host-memory conformance test (reference, cpu) and the CUDA one,
// which copies the same cases to the device.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_REFERENCE_CONFORMANCECASES_H
#define TEST_RUNTIME_REFERENCE_CONFORMANCECASES_H

#include "KernelTestUtil.h"

#include "runtime/core/WindowGeometry.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace graph::runtime::testing {

struct Case {
  std::string kernel;
  std::string label;
  KernelConfig cfg;
  std::vector<Tensor> ins;
  std::vector<std::vector<int64_t>> outs;
  KernelContext ctx;
  /// The outputs' types where not all f32 (fused_conv2d_pool's argmax).
  std::vector<plan::DType> outTypes = {};
};

/// Whether output `o` of `c` is a workspace, whose contents the kernel does
/// not define (fused_conv2d_pool_grad_kernel's without writes_workspace: the
/// cuda backend computes the dense gradient there, the host backends leave it),
/// so no test compares it.
inline bool isWorkspaceOutput(const Case &c, size_t o) {
  return c.kernel == "fused_conv2d_pool_grad_kernel" && o == 1 &&
         c.cfg.getInt("writes_workspace", 0) == 0;
}

/// Zeroed output tensors of `c`'s shapes and types; a written workspace
/// starts as NaN, as a plan's arena holds what was there before, so a
/// kernel must write every element of it (zeros included).
inline std::vector<Tensor> outputsOf(const Case &c) {
  std::vector<Tensor> outs;
  for (size_t o = 0; o < c.outs.size(); ++o) {
    outs.push_back(Tensor::make(
        c.outs[o], o < c.outTypes.size() ? c.outTypes[o] : plan::DType::f32));
    if (c.kernel == "fused_conv2d_pool_grad_kernel" && o == 1 &&
        c.cfg.getInt("writes_workspace", 0) != 0)
      outs.back().set(
          std::vector<double>(static_cast<size_t>(outs.back().elements()),
                              std::numeric_limits<double>::quiet_NaN()));
  }
  return outs;
}

/// Launches case `c` on `backend` into `outs` (outputsOf(c)), filling in
/// max_pool2d_grad's pooled input first (the reference's max_pool2d of x,
/// kept in `c`).
inline Status launchCase(Case &c, Backend backend, std::vector<Tensor> &outs) {
  if (c.kernel == "max_pool2d_grad") {
    Tensor &y = c.ins[1];
    Status s = launch("max_pool2d", c.cfg, {&c.ins[0]}, {&y});
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  outs = outputsOf(c);
  std::vector<Tensor *> in, out;
  for (Tensor &t : c.ins)
    in.push_back(&t);
  for (Tensor &t : outs)
    out.push_back(&t);
  return launch(c.kernel, c.cfg, in, out, c.ctx, backend);
}

/// Case `c`'s outputs on `backend`, which must run it.
inline std::vector<Tensor> runCase(Case c, Backend backend) {
  std::vector<Tensor> outs;
  Status s = launchCase(c, backend, outs);
  EXPECT_TRUE(s.isOk()) << c.kernel << " (" << c.label << ") on "
                        << backendName(backend) << ": " << s.message();
  return outs;
}

/// A max pool of `x` ([N, H, W, C]) under `pool` (a max_pool2d config):
/// the pooled values and each window's argmax as fused_conv2d_pool records
/// it (runtime/core/WindowGeometry.h), computed here, independently of
/// every backend, for max_pool2d_argmax_grad's inputs.
inline std::pair<Tensor, Tensor> poolWithArgmax(const Tensor &x,
                                                const KernelConfig &pool) {
  auto [ph, pw] = pool.getPair("pool_size", 2);
  WindowGeometry g;
  Status s = resolveWindow("test", pool, x.shape, ph, pw, false, g);
  if (!s)
    throw std::runtime_error(s.message());
  std::vector<int64_t> shape = {g.n, g.h.out, g.w.out, g.c};
  std::vector<double> xs = x.values(), y, at;
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          double best = 0;
          int64_t where = -1;
          for (int64_t kh = 0; kh < g.h.window; ++kh)
            for (int64_t kw = 0; kw < g.w.window; ++kw) {
              int64_t ih = oh * g.h.stride - g.h.padBefore + kh;
              int64_t iw = ow * g.w.stride - g.w.padBefore + kw;
              if (ih < 0 || ih >= g.h.in || iw < 0 || iw >= g.w.in)
                continue;
              double v = xs[((n * g.h.in + ih) * g.w.in + iw) * g.c + c];
              if (where < 0 || v > best) {
                best = v;
                where = kh * g.w.window + kw;
              }
            }
          y.push_back(best);
          at.push_back(static_cast<double>(where));
        }
  return {Tensor::f32(shape, y), Tensor::make(shape, plan::DType::i32, at)};
}

inline int64_t count(const std::vector<int64_t> &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

inline Tensor rnd(std::vector<int64_t> s, unsigned seed, double lo = -1,
                  double hi = 1) {
  return Tensor::f32(s, uniform(count(s), lo, hi, seed));
}

/// rnd's values with all but about one in `keep` zeroed: an output
/// gradient as a 2x2 max pool and a relu leave it (the cpu
/// conv2d_grad_input's sparse path).
inline Tensor sparse(std::vector<int64_t> s, unsigned seed, int keep = 8) {
  std::vector<double> v = uniform(count(s), -1, 1, seed);
  std::mt19937 gen(seed + 1);
  for (double &x : v)
    if (gen() % keep != 0)
      x = 0;
  return Tensor::f32(s, v);
}

/// Distinct values (no ties for max pooling).
inline Tensor distinct(std::vector<int64_t> s, unsigned seed) {
  std::vector<double> v(count(s));
  std::iota(v.begin(), v.end(), 0.0);
  std::mt19937 gen(seed);
  std::shuffle(v.begin(), v.end(), gen);
  for (double &x : v)
    x = x / v.size() - 0.5;
  return Tensor::f32(s, v);
}

inline KernelConfig window(const std::string &padding,
                           std::vector<int64_t> strides,
                           std::vector<int64_t> dilations = {}) {
  KernelConfig cfg;
  cfg.set("padding", padding).set("strides", strides);
  if (!dilations.empty())
    cfg.set("dilations", dilations);
  return cfg;
}

/// The five kernels that read or write a convolution kernel.
inline bool isConvolution(const std::string &kernel) {
  return kernel == "conv2d" || kernel == "fused_conv2d" ||
         kernel == "fused_conv2d_pool" || kernel == "conv2d_grad_input" ||
         kernel == "conv2d_grad_kernel";
}

/// Convolution case `c` (an HWIO kernel) with filter_layout ohwi: the same
/// kernel values permuted to OHWI (hwioToOhwi), or, for
/// conv2d_grad_kernel, the kernel gradient asked for in OHWI. Its outputs
/// are `c`'s, the gradient permuted.
inline Case ohwiTwin(const Case &c) {
  Case t = c;
  t.label = c.label.empty() ? "ohwi" : c.label + ", ohwi";
  t.cfg.set("filter_layout", std::string("ohwi"));
  const int64_t groups = c.cfg.getInt("groups", 1);
  if (c.kernel == "conv2d_grad_kernel") {
    t.outs[0] = ohwiShapeOf(c.outs[0], c.ins[0].shape[3], groups);
  } else {
    const int64_t channels =
        c.kernel == "conv2d_grad_input" ? c.outs[0][3] : c.ins[0].shape[3];
    t.ins[1] = hwioToOhwi(c.ins[1], channels, groups);
  }
  return t;
}

inline std::vector<Case> allCases() {
  std::vector<Case> cases;
  auto add = [&](std::string kernel, std::string label, KernelConfig cfg,
                 std::vector<Tensor> ins,
                 std::vector<std::vector<int64_t>> outs, KernelContext ctx = {},
                 std::vector<plan::DType> outTypes = {}) {
    cases.push_back({std::move(kernel), std::move(label), std::move(cfg),
                     std::move(ins), std::move(outs), ctx,
                     std::move(outTypes)});
  };
  std::vector<int64_t> x4 = {2, 6, 5, 3};
  for (auto [padding, s, d] :
       {std::tuple{"valid", 1, 1}, std::tuple{"same", 2, 1},
        std::tuple{"same", 1, 2}}) {
    KernelConfig cfg = window(padding, {s, s}, {d, d});
    bool same = std::string(padding) == "same";
    int64_t eff = 2 * d + 1;
    int64_t oh = same ? (6 + s - 1) / s : (6 - eff) / s + 1;
    int64_t ow = same ? (5 + s - 1) / s : (5 - eff) / s + 1;
    std::string label = std::string(padding) + " s" + std::to_string(s) + " d" +
                        std::to_string(d);
    add("conv2d", label, cfg, {rnd(x4, 1), rnd({3, 3, 3, 4}, 2)},
        {{2, oh, ow, 4}});
    KernelConfig fused = cfg;
    fused.set("activation", std::string("relu"));
    add("fused_conv2d", label, fused,
        {rnd(x4, 1), rnd({3, 3, 3, 4}, 2), rnd({4}, 3)}, {{2, oh, ow, 4}});
    add("conv2d_grad_input", label, cfg,
        {rnd({2, oh, ow, 4}, 4), rnd({3, 3, 3, 4}, 2)}, {x4});
    add("conv2d_grad_kernel", label, cfg, {rnd(x4, 1), rnd({2, oh, ow, 4}, 4)},
        {{3, 3, 3, 4}});
  }
  // Grouped and depthwise convolutions: input, kernel (HWIO per group, or
  // Keras' depthwise [kh, kw, C, multiplier]), groups, filters.
  for (auto [padding, s, d] :
       {std::tuple{"valid", 1, 1}, std::tuple{"same", 2, 1},
        std::tuple{"same", 1, 2}})
    for (auto [label0, xs, ks, groups, f] :
         {std::tuple{"groups 2", std::vector<int64_t>{2, 6, 5, 4},
                     std::vector<int64_t>{3, 3, 2, 6}, 2, 6},
          std::tuple{"depthwise m2", x4, std::vector<int64_t>{3, 3, 3, 2}, 3,
                     6},
          std::tuple{"depthwise m1", x4, std::vector<int64_t>{3, 3, 3, 1}, 3,
                     3},
          std::tuple{"depthwise m2 grouped layout", x4,
                     std::vector<int64_t>{3, 3, 1, 6}, 3, 6}}) {
      KernelConfig cfg = window(padding, {s, s}, {d, d});
      cfg.set("groups", int64_t{groups});
      bool same = std::string(padding) == "same";
      int64_t eff = 2 * d + 1;
      int64_t oh = same ? (6 + s - 1) / s : (6 - eff) / s + 1;
      int64_t ow = same ? (5 + s - 1) / s : (5 - eff) / s + 1;
      std::string label = std::string(label0) + " " + padding + " s" +
                          std::to_string(s) + " d" + std::to_string(d);
      std::vector<int64_t> ys = {2, oh, ow, f};
      add("conv2d", label, cfg, {rnd(xs, 21), rnd(ks, 22)}, {ys});
      KernelConfig fused = cfg;
      fused.set("activation", std::string("relu"));
      add("fused_conv2d", label, fused,
          {rnd(xs, 21), rnd(ks, 22), rnd({f}, 23)}, {ys});
      add("conv2d_grad_input", label, cfg, {rnd(ys, 24), rnd(ks, 22)}, {xs});
      add("conv2d_grad_kernel", label, cfg, {rnd(xs, 21), rnd(ys, 24)}, {ks});
    }
  KernelConfig tanhAct;
  tanhAct.set("activation", std::string("tanh"));
  add("fused_conv2d", "no bias, tanh",
      [&] {
        KernelConfig c = window("valid", {1, 1}, {1, 1});
        c.set("activation", std::string("tanh"));
        return c;
      }(),
      {rnd(x4, 1), rnd({3, 3, 3, 4}, 2)}, {{2, 4, 3, 4}});
  for (auto [padding, k, s] :
       {std::tuple{"valid", 2, 2}, std::tuple{"same", 3, 2}}) {
    KernelConfig cfg = window(padding, {s, s});
    cfg.set("pool_size", std::vector<int64_t>{k, k});
    bool same = std::string(padding) == "same";
    int64_t oh = same ? (6 + s - 1) / s : (6 - k) / s + 1;
    int64_t ow = same ? (5 + s - 1) / s : (5 - k) / s + 1;
    std::string label = std::string(padding) + " k" + std::to_string(k);
    add("max_pool2d", label, cfg, {distinct(x4, 5)}, {{2, oh, ow, 3}});
    add("avg_pool2d", label, cfg, {rnd(x4, 6)}, {{2, oh, ow, 3}});
    // max_pool2d_grad's y operand: the max pool of x, computed below.
    add("max_pool2d_grad", label, cfg,
        {distinct(x4, 5), Tensor::f32({2, oh, ow, 3}), rnd({2, oh, ow, 3}, 7)},
        {x4});
    add("avg_pool2d_grad", label, cfg, {rnd({2, oh, ow, 3}, 7)}, {x4});
  }
  add("global_avg_pool2d", "", {}, {rnd(x4, 8)}, {{2, 3}});
  add("global_avg_pool2d_grad", "", {}, {rnd({2, 3}, 9)}, {x4});
  add("dense", "rank 3", {}, {rnd({2, 3, 4}, 10), rnd({4, 5}, 11)},
      {{2, 3, 5}});
  add("fused_dense", "tanh", tanhAct,
      {rnd({3, 4}, 10), rnd({4, 5}, 11), rnd({5}, 12)}, {{3, 5}});
  add("fused_dense", "no bias", tanhAct, {rnd({3, 4}, 10), rnd({4, 5}, 11)},
      {{3, 5}});
  add("dense_grad_input", "", {}, {rnd({3, 5}, 13), rnd({4, 5}, 11)}, {{3, 4}});
  add("dense_grad_kernel", "", {}, {rnd({3, 4}, 10), rnd({3, 5}, 13)},
      {{4, 5}});
  add("bias_add", "", {}, {rnd({3, 5}, 13), rnd({5}, 12)}, {{3, 5}});
  add("bias_add_grad", "", {}, {rnd({2, 3, 5}, 14)}, {{5}});
  KernelConfig alpha, approx;
  alpha.set("alpha", 0.3);
  approx.set("approximate", int64_t{1});
  for (std::string op :
       {"relu", "sigmoid", "tanh", "elu", "leaky_relu", "gelu"}) {
    add(op, "", {}, {rnd({4, 6}, 15, -3, 3)}, {{4, 6}});
    add(op + "_grad", "", {}, {rnd({4, 6}, 16), rnd({4, 6}, 15, -3, 3)},
        {{4, 6}});
  }
  add("elu", "alpha", alpha, {rnd({4, 6}, 15, -3, 3)}, {{4, 6}});
  add("leaky_relu_grad", "alpha", alpha, {rnd({4, 6}, 16), rnd({4, 6}, 15)},
      {{4, 6}});
  add("gelu", "approximate", approx, {rnd({4, 6}, 15, -3, 3)}, {{4, 6}});
  add("gelu_grad", "approximate", approx,
      {rnd({4, 6}, 16), rnd({4, 6}, 15, -3, 3)}, {{4, 6}});
  KernelConfig axis1;
  axis1.set("axis", int64_t{1});
  add("softmax", "", {}, {rnd({3, 7}, 17, -4, 4)}, {{3, 7}});
  add("softmax", "axis 1", axis1, {rnd({2, 3, 4}, 17, -4, 4)}, {{2, 3, 4}});
  add("softmax_grad", "", {}, {rnd({3, 7}, 18), rnd({3, 7}, 19, 0, 1)},
      {{3, 7}});
  KernelConfig drop;
  drop.set("rate", 0.4).set("seed", int64_t{3});
  KernelContext ctx;
  ctx.step = 5;
  ctx.seed = 99;
  ctx.globalRowOffset = 8;
  add("dropout", "", drop, {rnd({8, 9}, 20)}, {{8, 9}}, ctx);
  add("dropout_grad", "", drop, {rnd({8, 9}, 21)}, {{8, 9}}, ctx);
  // Random image layers: each kind, fill mode and interpolation, with the
  // step context's draws (replica offset included).
  auto image = [](std::string kind) {
    KernelConfig cfg;
    cfg.set("kind", kind).set("seed", int64_t{11});
    return cfg;
  };
  std::vector<int64_t> img = {3, 6, 7, 2};
  add("random_image_transform", "flip",
      image("flip").set("mode", std::string("horizontal_and_vertical")),
      {rnd(img, 60)}, {img}, ctx);
  for (std::string fill : {"reflect", "wrap", "constant", "nearest"})
    for (std::string interpolation : {"bilinear", "nearest"}) {
      KernelConfig rotation = image("rotation");
      rotation.set("factor", std::vector<double>{-0.3, 0.4})
          .set("fill_mode", fill)
          .set("interpolation", interpolation)
          .set("fill_value", 0.25);
      add("random_image_transform", "rotation " + fill + " " + interpolation,
          rotation, {rnd(img, 61)}, {img}, ctx);
      add("random_image_transform_grad",
          "rotation " + fill + " " + interpolation, rotation, {rnd(img, 62)},
          {img}, ctx);
    }
  KernelConfig zoom = image("zoom");
  zoom.set("height_factor", std::vector<double>{-0.5, 0.4})
      .set("width_factor", std::vector<double>{-0.3, 0.6});
  add("random_image_transform", "zoom", zoom, {rnd(img, 63)}, {img}, ctx);
  add("random_image_transform_grad", "zoom", zoom, {rnd(img, 64)}, {img}, ctx);
  KernelConfig shift = image("translation");
  shift.set("height_factor", std::vector<double>{-0.4, 0.4})
      .set("width_factor", std::vector<double>{-0.2, 0.5});
  add("random_image_transform", "translation", shift, {rnd(img, 65)}, {img},
      ctx);
  for (std::string kind : {"crop", "center_crop"}) {
    add("random_image_transform", kind, image(kind), {rnd(img, 66)},
        {{3, 4, 3, 2}}, ctx);
    add("random_image_transform_grad", kind, image(kind),
        {rnd({3, 4, 3, 2}, 67)}, {img}, ctx);
  }
  KernelConfig contrast;
  contrast.set("seed", int64_t{12})
      .set("contrast_range", std::vector<double>{0.5, 1.8})
      .set("value_range", std::vector<double>{-0.8, 0.9});
  add("random_contrast", "", contrast, {rnd(img, 68)}, {img}, ctx);
  add("random_contrast_grad", "", contrast, {rnd(img, 69), rnd(img, 70)}, {img},
      ctx);
  // Keras' noise_shape: per sample (EfficientNet), per channel
  // (SpatialDropout2D).
  for (auto [label, noise] :
       {std::pair<const char *, std::vector<int64_t>>{"per sample", {1, 1, 1}},
        {"per channel", {1, 1, 6}}}) {
    KernelConfig shared = drop;
    shared.set("noise_shape", noise);
    add("dropout", label, shared, {rnd({4, 3, 5, 6}, 20)}, {{4, 3, 5, 6}}, ctx);
    add("dropout_grad", label, shared, {rnd({4, 3, 5, 6}, 21)}, {{4, 3, 5, 6}},
        ctx);
  }
  // Broadcasting merges: squeeze-and-excite [N, 1, 1, C] to [N, H, W, C],
  // and a middle axis.
  add("broadcast", "squeeze-excite", {}, {rnd({2, 1, 1, 5}, 70)},
      {{2, 3, 4, 5}});
  add("broadcast", "middle axis", {}, {rnd({2, 1, 4}, 71)}, {{2, 3, 4}});
  add("sum_to", "squeeze-excite", {}, {rnd({2, 3, 4, 5}, 72)}, {{2, 1, 1, 5}});
  add("sum_to", "middle axis", {}, {rnd({2, 3, 4}, 73)}, {{2, 1, 4}});
  add("sum_to", "last axis", {}, {rnd({2, 3, 4}, 73)}, {{2, 3, 1}});
  // Per-channel Rescaling (EfficientNet's 1 / sqrt(stddev) per RGB channel).
  KernelConfig perChannel;
  perChannel.set("scale", std::vector<double>{1.5, -0.5, 2.0})
      .set("offset", std::vector<double>{0.1, 0.0, -0.3});
  add("channel_scale_shift", "", perChannel, {rnd({2, 4, 3}, 77)}, {{2, 4, 3}});
  // Keras' Normalization; one variance under epsilon.
  KernelConfig normEps;
  normEps.set("epsilon", 1e-3);
  Tensor variance = rnd({5}, 75, 0.5, 2);
  add("normalize", "mean", normEps,
      {rnd({2, 3, 5}, 74), variance, rnd({5}, 76)}, {{2, 3, 5}});
  add("normalize", "no mean", normEps,
      {rnd({2, 3, 5}, 74), Tensor::f32({5}, {0.5, 1e-8, 2, 1, 0.25})},
      {{2, 3, 5}});
  // Keras' use_ema: the first step (no momentum), a later step, and a step
  // that overwrites the variable with its average.
  // With gradient_accumulation_steps 2, Keras' iterations is 0 on steps 1
  // and 2 (no momentum) and 1 on steps 3 and 4 (both overwrite with
  // frequency 2).
  for (auto [label, step, frequency, accumulation] :
       {std::tuple{"first step", int64_t{1}, int64_t{0}, int64_t{1}},
        std::tuple{"step 3", int64_t{3}, int64_t{2}, int64_t{1}},
        std::tuple{"overwrite", int64_t{4}, int64_t{2}, int64_t{1}},
        std::tuple{"accumulation 2, step 2", int64_t{2}, int64_t{2},
                   int64_t{2}},
        std::tuple{"accumulation 2, step 3", int64_t{3}, int64_t{2},
                   int64_t{2}}}) {
    KernelConfig ema;
    ema.set("momentum", 0.9).set("overwrite_frequency", frequency);
    if (accumulation > 1)
      ema.set("accumulation", accumulation);
    KernelContext at;
    at.step = step;
    add("ema_update", label, ema, {rnd({5, 7}, 90), rnd({5, 7}, 91)},
        {{5, 7}, {5, 7}}, at);
  }
  add("flatten", "", {}, {rnd({2, 3, 4}, 22)}, {{2, 12}});
  add("reshape", "", {}, {rnd({2, 3, 4}, 22)}, {{2, 4, 3}});
  // Its bfloat16 and float16 forms: ReducedPrecisionTest (these cases hold
  // f32 and f64 only).
  add("cast", "f32 to f32", {}, {rnd({2, 3, 4}, 22)}, {{2, 3, 4}});
  add("add", "3 inputs", {}, {rnd({5}, 23), rnd({5}, 24), rnd({5}, 25)}, {{5}});
  add("concatenate", "axis -1", {}, {rnd({2, 3}, 26), rnd({2, 2}, 27)},
      {{2, 5}});
  add("concatenate", "axis 0",
      [] {
        KernelConfig c;
        c.set("axis", int64_t{0});
        return c;
      }(),
      {rnd({2, 3}, 26), rnd({1, 3}, 27)}, {{3, 3}});
  add("slice", "",
      [] {
        KernelConfig c;
        c.set("axis", int64_t{1}).set("offset", int64_t{2});
        return c;
      }(),
      {rnd({2, 5}, 28)}, {{2, 2}});
  // transpose: Keras Permute((2, 1, 3)), and a rank-3 one.
  auto permutation = [](std::vector<int64_t> p) {
    KernelConfig c;
    c.set("permutation", p);
    return c;
  };
  add("transpose", "swap H and W", permutation({0, 2, 1, 3}),
      {rnd({2, 3, 4, 5}, 69)}, {{2, 4, 3, 5}});
  add("transpose", "rotate", permutation({0, 3, 1, 2}), {rnd({2, 3, 4, 5}, 69)},
      {{2, 5, 3, 4}});
  add("transpose", "rank 3", permutation({0, 2, 1}), {rnd({2, 3, 4}, 69)},
      {{2, 4, 3}});
  // Keras' ReLU settings, relu6, and the MobileNet activations, with inputs
  // on both sides of every kink (-3, 0, the threshold, the cap).
  auto relu = [](std::vector<std::pair<std::string, double>> settings) {
    KernelConfig c;
    for (auto &[k, v] : settings)
      c.set(k, v);
    return c;
  };
  const std::pair<std::string, KernelConfig> relus[] = {
      {"relu6", relu({{"max_value", 6.0}})},
      {"cap, slope, threshold",
       relu({{"max_value", 2.5}, {"negative_slope", 0.1}, {"threshold", 0.5}})},
      {"threshold", relu({{"threshold", 1.0}})},
  };
  for (const auto &[label, cfg] : relus) {
    add("clipped_relu", label, cfg, {rnd({4, 6}, 60, -8, 8)}, {{4, 6}});
    add("clipped_relu_grad", label, cfg,
        {rnd({4, 6}, 61), rnd({4, 6}, 60, -8, 8)}, {{4, 6}});
  }
  for (std::string op : {"silu", "hard_sigmoid", "hard_silu"}) {
    add(op, "", {}, {rnd({4, 6}, 62, -5, 5)}, {{4, 6}});
    add(op + "_grad", "", {}, {rnd({4, 6}, 63), rnd({4, 6}, 62, -5, 5)},
        {{4, 6}});
  }
  add("scale_shift", "", relu({{"scale", 1.0 / 255}, {"offset", -0.5}}),
      {rnd({4, 6}, 64, 0, 255)}, {{4, 6}});
  add("multiply", "2 inputs", {}, {rnd({3, 5}, 65), rnd({3, 5}, 66)}, {{3, 5}});
  add("multiply", "3 inputs", {},
      {rnd({3, 5}, 65), rnd({3, 5}, 66), rnd({3, 5}, 67)}, {{3, 5}});
  add("maximum", "3 inputs", {},
      {rnd({3, 5}, 65), rnd({3, 5}, 66), rnd({3, 5}, 67)}, {{3, 5}});
  // Ties: x1 equals x0 in places; the gradient goes to the first.
  Tensor m0 = rnd({3, 5}, 65), m1 = rnd({3, 5}, 66);
  for (int i = 0; i < 15; i += 3)
    m1.f[i] = m0.f[i];
  for (int64_t index : {0, 1, 2}) {
    KernelConfig c;
    c.set("index", index);
    add("maximum_grad", "index " + std::to_string(index), c,
        {rnd({3, 5}, 68), m0, m1, rnd({3, 5}, 67)}, {{3, 5}});
  }
  // pad: ZeroPadding2D (positive), Cropping2D (negative), and both mixed,
  // which is also each one's gradient.
  auto padCfg = [](std::vector<int64_t> low, std::vector<int64_t> high) {
    KernelConfig c;
    c.set("low", low).set("high", high);
    return c;
  };
  add("pad", "zero padding", padCfg({0, 1, 2, 0}, {0, 2, 1, 0}),
      {rnd({2, 3, 4, 3}, 28)}, {{2, 6, 7, 3}});
  add("pad", "cropping", padCfg({0, -1, 0, 0}, {0, -2, -3, 0}),
      {rnd({2, 5, 6, 3}, 28)}, {{2, 2, 3, 3}});
  add("pad", "mixed", padCfg({0, 2, -1, 0}, {0, -1, 3, 0}),
      {rnd({2, 4, 5, 3}, 28)}, {{2, 5, 7, 3}});
  KernelConfig bn;
  bn.set("epsilon", 1e-3).set("momentum", 0.9);
  Tensor bx = rnd({4, 2, 3}, 29, -2, 2);
  add("batch_norm", "gamma beta", bn,
      {bx, rnd({3}, 30), rnd({3}, 31, 0.5, 2), rnd({3}, 32), rnd({3}, 33)},
      {{4, 2, 3}});
  add("batch_norm", "bare", bn, {bx, rnd({3}, 30), rnd({3}, 31, 0.5, 2)},
      {{4, 2, 3}});
  add("batch_norm_train", "gamma beta", bn,
      {bx, rnd({3}, 30), rnd({3}, 31, 0.5, 2), rnd({3}, 32), rnd({3}, 33)},
      {{4, 2, 3}, {3}, {3}, {3}, {3}});
  add("batch_norm_grad", "gamma", {},
      {rnd({4, 2, 3}, 34), bx, rnd({3}, 30), rnd({3}, 35, 0.5, 2),
       rnd({3}, 32)},
      {{4, 2, 3}, {3}, {3}});
  add("batch_norm_inference_grad", "gamma", bn,
      {rnd({4, 2, 3}, 34), rnd({3}, 35, 0.5, 2), rnd({3}, 32)}, {{4, 2, 3}});
  Tensor probs = rnd({4, 3}, 36, 0.05, 1);
  Tensor oneHot = Tensor::f32({4, 3}, {0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 1, 0});
  Tensor indices = Tensor::i32({4}, {1, 0, 2, 1});
  KernelConfig logits;
  logits.set("from_logits", int64_t{1});
  for (bool fromLogits : {false, true}) {
    KernelConfig c = fromLogits ? logits : KernelConfig();
    Tensor p = fromLogits ? rnd({4, 3}, 37, -3, 3) : probs;
    std::string label = fromLogits ? "logits" : "probabilities";
    add("categorical_crossentropy", label, c, {p, oneHot}, {{}});
    add("categorical_crossentropy_grad", label, c, {p, oneHot}, {{4, 3}});
    add("sparse_categorical_crossentropy", label, c, {p, indices}, {{}});
    add("sparse_categorical_crossentropy_grad", label, c, {p, indices},
        {{4, 3}});
    // The training step's weights: row r's gradient times w[r].
    Tensor w = Tensor::f32({4}, {0.5, 0.0, 2.0, 1.25});
    add("categorical_crossentropy_grad", label + " weighted", c, {p, oneHot, w},
        {{4, 3}});
    add("sparse_categorical_crossentropy_grad", label + " weighted", c,
        {p, indices, w}, {{4, 3}});
  }
  add("softmax_cross_entropy", "one-hot", {}, {rnd({4, 3}, 37, -3, 3), oneHot},
      {{4, 3}, {}, {4, 3}});
  add("softmax_cross_entropy", "indices", {}, {rnd({4, 3}, 37, -3, 3), indices},
      {{4, 3}, {}, {4, 3}});
  add("accuracy", "one-hot", {}, {probs, oneHot}, {{}});
  add("accuracy", "indices", {}, {probs, indices}, {{}});
  KernelConfig top2;
  top2.set("k", int64_t{2});
  add("accuracy", "top 2 indices", top2, {probs, indices}, {{}});
  add("accuracy", "top 2 one-hot", top2, {probs, oneHot}, {{}});
  // A batch of 300 rows: the GPU's batch sums span 38 blocks.
  {
    std::vector<double> hot(300 * 10, 0.0);
    std::vector<double> classes(300);
    for (int r = 0; r < 300; ++r) {
      classes[r] = (7 * r + 3) % 10;
      hot[r * 10 + (7 * r + 3) % 10] = 1.0;
    }
    Tensor hot300 = Tensor::f32({300, 10}, hot);
    Tensor classes300 = Tensor::i32({300}, classes);
    Tensor logits300 = rnd({300, 10}, 38, -3, 3);
    add("softmax_cross_entropy", "300 rows", {}, {logits300, hot300},
        {{300, 10}, {}, {300, 10}});
    add("categorical_crossentropy", "300 rows", logits, {logits300, hot300},
        {{}});
    add("sparse_categorical_crossentropy_grad", "300 rows", logits,
        {logits300, classes300}, {{300, 10}});
    add("accuracy", "300 rows", {}, {logits300, classes300}, {{}});
  }
  auto opt = [](std::string kind,
                std::vector<std::pair<std::string, double>> hyper) {
    KernelConfig c;
    c.set("optimizer", kind);
    for (auto &[k, v] : hyper)
      c.set(k, v);
    return c;
  };
  KernelContext step3;
  step3.step = 3;
  // Two variables, of sizes 3 and 2.
  auto optCase = [&](std::string label, KernelConfig cfg, int k,
                     std::vector<float> norms = {}) {
    std::vector<Tensor> ins = {rnd({3}, 40), rnd({2}, 41), rnd({3}, 42),
                               rnd({2}, 43)};
    std::vector<std::vector<int64_t>> outs = {{3}, {2}};
    for (int v = 0; v < 2; ++v)
      for (int s = 0; s < k; ++s) {
        // Second moments must be non-negative, and centered RMSprop's
        // rms - mg^2 positive: slots drawn in [0, 0.1] for mg, [0.5, 1]
        // otherwise.
        bool small = label.find("centered") != std::string::npos && s == k - 1;
        ins.push_back(rnd({v == 0 ? 3 : 2}, 44 + 10 * v + s, small ? 0 : 0.5,
                          small ? 0.1 : 1));
        outs.push_back({v == 0 ? 3 : 2});
      }
    // Clipping by norm: one norm per variable, after the slots.
    for (float norm : norms)
      ins.push_back(Tensor::f32({}, {norm}));
    add("optimizer_update", label, cfg, ins, outs, step3);
  };
  optCase("sgd", opt("sgd", {{"learning_rate", 0.1}}), 0);
  // Loss-scaled (scale 512 over 2 replicas, 4 updates applied): Adam's
  // step is 5 whatever the global step; an infinite norm skips it.
  for (bool finite : {true, false}) {
    KernelConfig scaled = opt("adam", {{"learning_rate", 0.01},
                                       {"beta_1", 0.9},
                                       {"beta_2", 0.999},
                                       {"epsilon", 1e-7}});
    scaled.set("loss_scaled", int64_t{1});
    scaled.set("replicas", int64_t{2});
    std::vector<Tensor> ins = {rnd({3}, 40), rnd({2}, 41),
                               rnd({3}, 42, -256, 256),
                               rnd({2}, 43, -256, 256)};
    std::vector<std::vector<int64_t>> outs = {{3}, {2}};
    for (int v = 0; v < 2; ++v)
      for (int s = 0; s < 2; ++s) {
        ins.push_back(rnd({v == 0 ? 3 : 2}, 44 + 10 * v + s, 0.5, 1));
        outs.push_back({v == 0 ? 3 : 2});
      }
    Tensor norm = Tensor::f32({}, {3.0});
    if (!finite)
      norm.f[0] = std::numeric_limits<float>::infinity();
    ins.push_back(Tensor::f32({1}, {512.0}));
    ins.push_back(norm);
    ins.push_back(Tensor::f32({1}, {4.0}));
    add("optimizer_update",
        finite ? "adam loss-scaled" : "adam loss-scaled, skipped", scaled, ins,
        outs, step3);
  }
  optCase(
      "sgd nesterov",
      opt("sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}, {"nesterov", 1}}),
      1);
  optCase("adam",
          opt("adam", {{"learning_rate", 0.01},
                       {"beta_1", 0.9},
                       {"beta_2", 0.999},
                       {"epsilon", 1e-7}}),
          2);
  optCase("adam amsgrad",
          opt("adam", {{"learning_rate", 0.01},
                       {"beta_1", 0.9},
                       {"beta_2", 0.999},
                       {"epsilon", 1e-7},
                       {"amsgrad", 1}}),
          3);
  optCase("rmsprop centered momentum",
          opt("rmsprop", {{"learning_rate", 0.01},
                          {"rho", 0.9},
                          {"momentum", 0.5},
                          {"epsilon", 1e-7},
                          {"centered", 1}}),
          3);
  // Keras' clipping and weight decay: per-variable norms on either side
  // of clipnorm, one global norm above global_clipnorm (the same for both
  // variables), and clipvalue, which some gradient elements exceed.
  optCase("sgd momentum clipnorm weight_decay",
          opt("sgd", {{"learning_rate", 0.1},
                      {"momentum", 0.9},
                      {"clipnorm", 0.5},
                      {"weight_decay", 0.01}}),
          1, {0.25f, 3.0f});
  optCase("adam global_clipnorm weight_decay",
          opt("adam", {{"learning_rate", 0.01},
                       {"beta_1", 0.9},
                       {"beta_2", 0.999},
                       {"epsilon", 1e-7},
                       {"global_clipnorm", 0.5},
                       {"weight_decay", 0.004}}),
          2, {2.0f, 2.0f});
  optCase("rmsprop clipvalue weight_decay",
          opt("rmsprop", {{"learning_rate", 0.01},
                          {"rho", 0.9},
                          {"epsilon", 1e-7},
                          {"clipvalue", 0.3},
                          {"weight_decay", 0.02}}),
          1);
  // Learning-rate schedules, evaluated at the step before this one (2):
  // cosine decay after a linear warm-up, and a staircase exponential decay
  // with weight decay (which uses the scheduled rate too).
  optCase("adam cosine_decay warm-up",
          opt("adam", {{"learning_rate", 0.001},
                       {"beta_1", 0.9},
                       {"beta_2", 0.999},
                       {"epsilon", 1e-7},
                       {"lr_schedule", 5},
                       {"lr_decay_steps", 4},
                       {"lr_alpha", 0.1},
                       {"lr_warmup_target", 0.01},
                       {"lr_warmup_steps", 1}}),
          2);
  optCase("sgd exponential_decay staircase weight_decay",
          opt("sgd", {{"learning_rate", 0.1},
                      {"momentum", 0.9},
                      {"weight_decay", 0.01},
                      {"lr_schedule", 1},
                      {"lr_decay_steps", 1},
                      {"lr_decay_rate", 0.5},
                      {"lr_staircase", 1}}),
          1);
  // Adagrad, Adamax and Nadam (Nadam's momentum-cache product is a
  // function of the step, 3 here), with an option of the base optimizer.
  optCase("adagrad weight_decay",
          opt("adagrad", {{"learning_rate", 0.05},
                          {"initial_accumulator_value", 0.1},
                          {"epsilon", 1e-6},
                          {"weight_decay", 0.02}}),
          1);
  optCase("adamax clipnorm",
          opt("adamax", {{"learning_rate", 0.02},
                         {"beta_1", 0.8},
                         {"beta_2", 0.99},
                         {"epsilon", 1e-7},
                         {"clipnorm", 0.5}}),
          2, {0.25f, 3.0f});
  optCase("nadam",
          opt("nadam", {{"learning_rate", 0.01},
                        {"beta_1", 0.9},
                        {"beta_2", 0.999},
                        {"epsilon", 1e-7}}),
          2);
  optCase("nadam exponential_decay clipvalue",
          opt("nadam", {{"learning_rate", 0.02},
                        {"beta_1", 0.85},
                        {"beta_2", 0.99},
                        {"epsilon", 1e-7},
                        {"clipvalue", 0.3},
                        {"lr_schedule", 1},
                        {"lr_decay_steps", 1},
                        {"lr_decay_rate", 0.5}}),
          2);
  // Gradient accumulation: one more slot (the sum) after the optimizer's.
  // At step 3 with N = 3 the mean of the sum and this gradient is applied
  // (at Keras' iteration 0); with N = 2 step 3 only adds to the sum.
  optCase("sgd momentum gradient_accumulation applies",
          opt("sgd", {{"learning_rate", 0.1},
                      {"momentum", 0.9},
                      {"clipvalue", 0.3},
                      {"weight_decay", 0.01},
                      {"gradient_accumulation_steps", 3}}),
          2);
  optCase("adam gradient_accumulation accumulates",
          opt("adam", {{"learning_rate", 0.01},
                       {"beta_1", 0.9},
                       {"beta_2", 0.999},
                       {"epsilon", 1e-7},
                       {"gradient_accumulation_steps", 2}}),
          3);
  // Geometry the seed-style cases above leave out: batch 1, non-square
  // windows and strides, valid padding whose last window leaves input
  // unread, and channel counts that take the blocked (8-channel) paths of
  // vectorised backends as well as their remainders.
  struct ConvGeometry {
    std::string label;
    std::vector<int64_t> x, k;
    KernelConfig cfg;
    std::vector<int64_t> y;
  };
  const ConvGeometry convs[] = {
      {"batch 1, 2x3 kernel, strides 2x1, valid",
       {1, 7, 6, 3},
       {2, 3, 3, 5},
       window("valid", {2, 1}, {1, 1}),
       {1, 3, 4, 5}},
      {"batch 1, 2x3 kernel, strides 2x1, same",
       {1, 7, 6, 3},
       {2, 3, 3, 5},
       window("same", {2, 1}, {1, 1}),
       {1, 4, 6, 5}},
      {"16 to 24 channels, same s2",
       {2, 7, 7, 16},
       {3, 3, 16, 24},
       window("same", {2, 2}, {1, 1}),
       {2, 4, 4, 24}},
      {"1 to 8 channels, valid",
       {3, 8, 8, 1},
       {3, 3, 1, 8},
       window("valid", {1, 1}, {1, 1}),
       {3, 6, 6, 8}},
      {"dilation 2x1, same",
       {2, 7, 6, 8},
       {3, 2, 8, 8},
       window("same", {1, 1}, {2, 1}),
       {2, 7, 6, 8}},
  };
  for (const ConvGeometry &g : convs) {
    int64_t f = g.k[3];
    add("conv2d", g.label, g.cfg, {rnd(g.x, 70), rnd(g.k, 71)}, {g.y});
    add("conv2d_grad_input", g.label, g.cfg, {rnd(g.y, 72), rnd(g.k, 71)},
        {g.x});
    add("conv2d_grad_kernel", g.label, g.cfg, {rnd(g.x, 70), rnd(g.y, 72)},
        {g.k});
    for (std::string act : {"none", "relu", "sigmoid", "tanh"}) {
      KernelConfig fused = g.cfg;
      fused.set("activation", act);
      add("fused_conv2d", g.label + ", bias, " + act, fused,
          {rnd(g.x, 70), rnd(g.k, 71), rnd({f}, 73)}, {g.y});
    }
  }
  // Pooling: overlapping windows (gradients accumulate), non-square
  // windows, 19 channels, and inputs with ties, where max_pool2d_grad must
  // route to the first maximum in row-major window order.
  auto ties = [](std::vector<int64_t> s, unsigned seed) {
    std::vector<double> v = uniform(count(s), -1, 1, seed);
    for (double &x : v)
      x = std::round(x * 2) / 2; // five levels: most windows tie
    return Tensor::f32(s, v);
  };
  struct PoolGeometry {
    std::string label;
    KernelConfig cfg;
    std::vector<int64_t> x, y;
  };
  auto pool = [](std::string padding, std::vector<int64_t> size,
                 std::vector<int64_t> strides) {
    KernelConfig cfg = window(padding, strides);
    cfg.set("pool_size", size);
    return cfg;
  };
  const PoolGeometry pools[] = {
      {"3x3 s1 valid, overlapping",
       pool("valid", {3, 3}, {1, 1}),
       {2, 6, 5, 19},
       {2, 4, 3, 19}},
      {"3x3 s1 same, overlapping",
       pool("same", {3, 3}, {1, 1}),
       {2, 6, 5, 19},
       {2, 6, 5, 19}},
      {"2x3 s1x2 same, batch 1",
       pool("same", {2, 3}, {1, 2}),
       {1, 5, 7, 8},
       {1, 5, 4, 8}},
      {"2x2 s2 valid, odd input",
       pool("valid", {2, 2}, {2, 2}),
       {3, 7, 5, 16},
       {3, 3, 2, 16}},
      {"2x2 s2 same, odd input (partial windows)",
       pool("same", {2, 2}, {2, 2}),
       {2, 5, 7, 8},
       {2, 3, 4, 8}},
      {"3x3 s3 same, padding before",
       pool("same", {3, 3}, {3, 3}),
       {2, 7, 7, 5},
       {2, 3, 3, 5}},
  };
  for (const PoolGeometry &g : pools) {
    add("max_pool2d", g.label, g.cfg, {distinct(g.x, 74)}, {g.y});
    add("max_pool2d", g.label + ", ties", g.cfg, {ties(g.x, 75)}, {g.y});
    add("max_pool2d_grad", g.label, g.cfg,
        {distinct(g.x, 74), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x});
    add("max_pool2d_grad", g.label + ", ties", g.cfg,
        {ties(g.x, 75), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x});
    // Fused with the gradient of the relu that produced x (graph-fuse):
    // half of x is negative, so the relu's zeros show.
    KernelConfig relu = g.cfg;
    relu.set("relu_grad", int64_t{1});
    add("max_pool2d_grad", g.label + ", relu_grad", relu,
        {distinct(g.x, 74), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x});
    add("max_pool2d_grad", g.label + ", ties, relu_grad", relu,
        {ties(g.x, 75), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x});
    // With the bias gradient of the layer below (graph-fuse's
    // input_grad_sum): dx summed per channel.
    std::vector<int64_t> channels = {g.x.back()};
    add("max_pool2d_grad", g.label + ", input_grad_sum", g.cfg,
        {distinct(g.x, 74), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x, channels});
    add("max_pool2d_grad", g.label + ", ties, relu_grad, input_grad_sum", relu,
        {ties(g.x, 75), Tensor::f32(g.y), rnd(g.y, 76)}, {g.x, channels});
    // From the forward pass's argmax (fused_conv2d_pool): x's ties decide
    // it, half of the maxima are <= 0 for relu_grad to drop.
    auto [y, argmax] = poolWithArgmax(ties(g.x, 75), g.cfg);
    add("max_pool2d_argmax_grad", g.label, g.cfg, {argmax, y, rnd(g.y, 76)},
        {g.x});
    add("max_pool2d_argmax_grad", g.label + ", relu_grad, input_grad_sum", relu,
        {argmax, y, rnd(g.y, 76)}, {g.x, channels});
    add("avg_pool2d", g.label, g.cfg, {rnd(g.x, 77)}, {g.y});
    add("avg_pool2d_grad", g.label, g.cfg, {rnd(g.y, 76)}, {g.x});
  }
  // A gradient large enough (4 MiB) for the cpu kernel's streamed stores.
  {
    KernelConfig cfg = pool("valid", {2, 2}, {2, 2});
    cfg.set("relu_grad", int64_t{1});
    std::vector<int64_t> xs = {2, 64, 64, 128}, ys = {2, 32, 32, 128};
    auto [y, argmax] = poolWithArgmax(ties(xs, 83), cfg);
    add("max_pool2d_argmax_grad", "2x2 s2 valid, 4 MiB, relu_grad", cfg,
        {argmax, y, rnd(ys, 84)}, {xs, {128}});
  }
  // fused_conv2d_pool: the convolution's geometry and activation, then a
  // pool of its output: tiling and overlapping windows, and a batch of 6
  // (the cpu kernel's chunks of images).
  for (auto [label, conv, act, poolCfg, xs, ks, ys] :
       {std::tuple{std::string("valid conv, 2x2 s2 pool, relu"),
                   window("valid", {1, 1}, {1, 1}), std::string("relu"),
                   pool("valid", {2, 2}, {2, 2}),
                   std::vector<int64_t>{6, 9, 8, 3},
                   std::vector<int64_t>{3, 3, 3, 16},
                   std::vector<int64_t>{6, 3, 3, 16}},
        std::tuple{
            std::string("same s2 conv, 3x3 s1 same pool, none"),
            window("same", {2, 2}, {1, 1}), std::string("none"),
            pool("same", {3, 3}, {1, 1}), std::vector<int64_t>{2, 7, 6, 4},
            std::vector<int64_t>{3, 3, 4, 5}, std::vector<int64_t>{2, 4, 3, 5}},
        // 2x2 s2 "same" of an odd size pads after the image: the last
        // windows hold one row or column (the cpu kernel's 2x2 path must
        // not take them). No activation: negative maxima, which whatever
        // lies past the image would beat.
        std::tuple{
            std::string("1x1 conv, 2x2 s2 same pool of 5x5, none"),
            window("valid", {1, 1}, {1, 1}), std::string("none"),
            pool("same", {2, 2}, {2, 2}), std::vector<int64_t>{6, 5, 5, 3},
            std::vector<int64_t>{1, 1, 3, 8}, std::vector<int64_t>{6, 3, 3, 8}},
        // One input channel under relu and a full 2x2 s2 pool: the cpu
        // kernel's first-layer path. An odd convolution output (the pool's
        // floor leaves its last row and column out), 24 filters (a pair of
        // registers and one more); a 2x3 "same" kernel (padded after only)
        // over a 10x9 image; a batch large enough for two threads (whose
        // windows' two largest values differ by 1e-5 or more: the argmax is
        // compared exactly, and every backend sums in its own order).
        std::tuple{std::string("1 channel, 2x2 s2 pool of 27x27, relu"),
                   window("valid", {1, 1}, {1, 1}), std::string("relu"),
                   pool("valid", {2, 2}, {2, 2}),
                   std::vector<int64_t>{5, 29, 29, 1},
                   std::vector<int64_t>{3, 3, 1, 24},
                   std::vector<int64_t>{5, 13, 13, 24}},
        std::tuple{std::string("1 channel, 2x3 same, 2x2 s2 pool, relu"),
                   window("same", {1, 1}, {1, 1}), std::string("relu"),
                   pool("valid", {2, 2}, {2, 2}),
                   std::vector<int64_t>{3, 10, 9, 1},
                   std::vector<int64_t>{2, 3, 1, 16},
                   std::vector<int64_t>{3, 5, 4, 16}},
        std::tuple{std::string("1 channel, batch 16, 2x2 s2 pool, relu"),
                   window("valid", {1, 1}, {1, 1}), std::string("relu"),
                   pool("valid", {2, 2}, {2, 2}),
                   std::vector<int64_t>{16, 28, 28, 1},
                   std::vector<int64_t>{3, 3, 1, 32},
                   std::vector<int64_t>{16, 13, 13, 32}}}) {
    KernelConfig cfg = conv;
    cfg.set("activation", act);
    cfg.set("pool_size", poolCfg.getInts("pool_size"));
    cfg.set("pool_strides", poolCfg.getInts("strides"));
    cfg.set("pool_padding", poolCfg.getString("padding"));
    int64_t f = ks[3];
    add("fused_conv2d_pool", label, cfg,
        {rnd(xs, 80), rnd(ks, 81), rnd({f}, 82)}, {ys, ys}, {},
        {plan::DType::f32, plan::DType::i32});
    add("fused_conv2d_pool", label + ", no bias", cfg,
        {rnd(xs, 80), rnd(ks, 81)}, {ys, ys}, {},
        {plan::DType::f32, plan::DType::i32});
  }
  // fused_conv2d_pool_grad_kernel: the kernel (and bias) gradient of a
  // fused_conv2d_pool from its pooled gradient, argmax from the pool of a
  // convolution output with ties. The seed CNN's first layer (one channel,
  // 3x3 valid, 2x2 s2 pool: the cpu kernel's vector path, an odd width the
  // pool leaves a column of), same padding (patches in the padding take
  // the general loop), a pool padded at the edge, and general shapes:
  // three channels at stride 2 under an overlapping pool, OHWI, depthwise.
  // With writes_workspace (the workspace is the dense gradient, compared too):
  // the cpu kernel's channel path (channels a multiple of 8; with same
  // padding on a zero-padded copy of the image), its first-layer path, and
  // a shape neither takes (run through the workspace).
  for (auto [label, conv, poolCfg, layout, groups, xs, ks, relu, bias, dense] :
       {std::tuple{std::string("seed CNN's first layer, relu_grad, bias"),
                   window("valid", {1, 1}, {1, 1}),
                   pool("valid", {2, 2}, {2, 2}), std::string("hwio"),
                   int64_t{1}, std::vector<int64_t>{3, 12, 11, 1},
                   std::vector<int64_t>{3, 3, 1, 16}, true, true, false},
        std::tuple{std::string("same conv, OHWI, relu_grad, bias"),
                   window("same", {1, 1}, {1, 1}),
                   pool("valid", {2, 2}, {2, 2}), std::string("ohwi"),
                   int64_t{1}, std::vector<int64_t>{2, 8, 9, 1},
                   std::vector<int64_t>{8, 3, 3, 1}, true, true, false},
        std::tuple{std::string("2x2 kernel, padded pool, no relu, no bias"),
                   window("valid", {1, 1}, {1, 1}),
                   pool("same", {2, 2}, {2, 2}), std::string("hwio"),
                   int64_t{1}, std::vector<int64_t>{2, 8, 8, 1},
                   std::vector<int64_t>{2, 2, 1, 24}, false, false, false},
        std::tuple{std::string("3 channels, s2 conv, 3x3 s1 pool, bias"),
                   window("same", {2, 2}, {1, 1}), pool("same", {3, 3}, {1, 1}),
                   std::string("hwio"), int64_t{1},
                   std::vector<int64_t>{2, 7, 6, 3},
                   std::vector<int64_t>{3, 3, 3, 5}, true, true, false},
        std::tuple{std::string("depthwise m2, relu_grad"),
                   window("valid", {1, 1}, {1, 1}),
                   pool("valid", {2, 2}, {2, 2}), std::string("hwio"),
                   int64_t{4}, std::vector<int64_t>{2, 8, 8, 4},
                   std::vector<int64_t>{3, 3, 4, 2}, true, false, false},
        std::tuple{
            std::string("16 channels, relu_grad, bias, writes_workspace"),
            window("valid", {1, 1}, {1, 1}), pool("valid", {2, 2}, {2, 2}),
            std::string("hwio"), int64_t{1},
            std::vector<int64_t>{3, 11, 12, 16},
            std::vector<int64_t>{3, 3, 16, 8}, true, true, true},
        std::tuple{std::string("8 channels, same conv, OHWI, writes_workspace"),
                   window("same", {1, 1}, {1, 1}),
                   pool("valid", {2, 2}, {2, 2}), std::string("ohwi"),
                   int64_t{1}, std::vector<int64_t>{2, 9, 8, 8},
                   std::vector<int64_t>{16, 3, 3, 8}, true, true, true},
        std::tuple{std::string("24 channels, 2x3 kernel, padded pool"),
                   window("valid", {1, 1}, {1, 1}),
                   pool("same", {2, 2}, {2, 2}), std::string("hwio"),
                   int64_t{1}, std::vector<int64_t>{2, 8, 9, 24},
                   std::vector<int64_t>{2, 3, 24, 8}, false, true, false},
        std::tuple{std::string("first layer, writes_workspace"),
                   window("valid", {1, 1}, {1, 1}),
                   pool("valid", {2, 2}, {2, 2}), std::string("hwio"),
                   int64_t{1}, std::vector<int64_t>{3, 12, 11, 1},
                   std::vector<int64_t>{3, 3, 1, 16}, true, true, true},
        std::tuple{std::string("3 channels, 3x3 s1 pool, writes_workspace"),
                   window("same", {2, 2}, {1, 1}), pool("same", {3, 3}, {1, 1}),
                   std::string("ohwi"), int64_t{1},
                   std::vector<int64_t>{2, 7, 6, 3},
                   std::vector<int64_t>{5, 3, 3, 3}, true, true, true}}) {
    KernelConfig cfg = conv;
    cfg.set("filter_layout", layout);
    if (groups > 1)
      cfg.set("groups", groups);
    cfg.set("pool_size", poolCfg.getInts("pool_size"));
    cfg.set("pool_strides", poolCfg.getInts("strides"));
    cfg.set("pool_padding", poolCfg.getString("padding"));
    if (relu)
      cfg.set("relu_grad", int64_t{1});
    if (dense)
      cfg.set("writes_workspace", int64_t{1});
    WindowGeometry g;
    ConvChannels cc;
    if (Status s = resolveConv("test", cfg, xs, ks, g, cc); !s)
      throw std::runtime_error(s.message());
    std::vector<int64_t> convShape = {g.n, g.h.out, g.w.out, cc.filters};
    auto [y, argmax] = poolWithArgmax(ties(convShape, 88), poolCfg);
    std::vector<std::vector<int64_t>> outs = {ks, convShape};
    if (bias)
      outs.push_back({cc.filters});
    add("fused_conv2d_pool_grad_kernel", label, cfg,
        {rnd(xs, 89), argmax, y, rnd(y.shape, 90)}, outs);
  }
  {
    // Depthwise (Keras' [kh, kw, C, multiplier] kernel, groups = C), tanh.
    // (The cpu kernel's chunks of images: CpuVectorKernels.ConvPoolChunks.)
    KernelConfig cfg = window("valid", {1, 1}, {1, 1});
    cfg.set("activation", std::string("tanh"));
    cfg.set("pool_size", std::vector<int64_t>{2, 2});
    cfg.set("pool_strides", std::vector<int64_t>{2, 2});
    cfg.set("pool_padding", std::string("valid"));
    KernelConfig depthwise = cfg;
    depthwise.set("groups", int64_t{4});
    add("fused_conv2d_pool", "depthwise m2, tanh", depthwise,
        {rnd({4, 8, 8, 4}, 85), rnd({3, 3, 4, 2}, 86), rnd({8}, 87)},
        {{4, 3, 3, 8}, {4, 3, 3, 8}}, {}, {plan::DType::f32, plan::DType::i32});
  }
  add("global_avg_pool2d", "batch 1, 19 channels", {}, {rnd({1, 4, 3, 19}, 78)},
      {{1, 19}});
  add("global_avg_pool2d_grad", "batch 1, 19 channels", {}, {rnd({1, 19}, 79)},
      {{1, 4, 3, 19}});
  // Dense: every epilogue, a reduction long enough for blocked kernels, and
  // rank-3 operands (rows are every leading axis).
  for (std::string act : {"none", "relu", "sigmoid", "tanh"}) {
    KernelConfig c;
    c.set("activation", act);
    add("fused_dense", "33 to 17, bias, " + act, c,
        {rnd({7, 33}, 80), rnd({33, 17}, 81), rnd({17}, 82)}, {{7, 17}});
  }
  add("fused_dense", "rank 3, no bias, relu",
      [] {
        KernelConfig c;
        c.set("activation", std::string("relu"));
        return c;
      }(),
      {rnd({2, 3, 33}, 80), rnd({33, 17}, 81)}, {{2, 3, 17}});
  add("dense", "batch 1", {}, {rnd({1, 33}, 80), rnd({33, 17}, 81)}, {{1, 17}});
  add("dense_grad_input", "rank 3", {},
      {rnd({2, 3, 17}, 83), rnd({33, 17}, 81)}, {{2, 3, 33}});
  add("dense_grad_kernel", "rank 3", {},
      {rnd({2, 3, 33}, 80), rnd({2, 3, 17}, 83)}, {{33, 17}});
  // Batch norm: NHWC input with 16 channels; without gamma and beta, and
  // with gamma only (4 operands).
  Tensor nx = rnd({2, 3, 4, 16}, 84, -2, 3);
  add("batch_norm", "NHWC, gamma only", bn,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 87)},
      {{2, 3, 4, 16}});
  add("batch_norm_train", "NHWC, bare", bn,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2)},
      {{2, 3, 4, 16}, {16}, {16}, {16}, {16}});
  add("batch_norm_train", "NHWC, gamma only", bn,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 87)},
      {{2, 3, 4, 16}, {16}, {16}, {16}, {16}});
  add("batch_norm_grad", "NHWC, no gamma", {},
      {rnd({2, 3, 4, 16}, 88), nx, rnd({16}, 85), rnd({16}, 89, 0.5, 2)},
      {{2, 3, 4, 16}, {16}, {16}});
  add("batch_norm_inference_grad", "NHWC, no gamma", bn,
      {rnd({2, 3, 4, 16}, 88), rnd({16}, 89, 0.5, 2)}, {{2, 3, 4, 16}});
  // Beta alone (Keras center without scale), as the compiler marks it, and
  // tf.keras 2's unbiased moving variance.
  KernelConfig shiftOnly = bn;
  shiftOnly.set("has_gamma", int64_t{0}).set("has_beta", int64_t{1});
  add("batch_norm", "NHWC, beta only", shiftOnly,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 90)},
      {{2, 3, 4, 16}});
  add("batch_norm_train", "NHWC, beta only", shiftOnly,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 90)},
      {{2, 3, 4, 16}, {16}, {16}, {16}, {16}});
  KernelConfig unbiased = bn;
  unbiased.set("unbiased_moving_variance", int64_t{1});
  add("batch_norm_train", "NHWC, unbiased moving variance", unbiased,
      {nx, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 87), rnd({16}, 90)},
      {{2, 3, 4, 16}, {16}, {16}, {16}, {16}});
  // Layer norm over the last axis: rows of 16 (NHWC) and of 37 (more
  // than a warp, not a multiple of it), gamma and beta, bare, beta only.
  KernelConfig ln;
  ln.set("epsilon", 1e-3)
      .set("has_gamma", int64_t{1})
      .set("has_beta", int64_t{1});
  KernelConfig lnBare;
  lnBare.set("epsilon", 1e-5)
      .set("has_gamma", int64_t{0})
      .set("has_beta", int64_t{0});
  KernelConfig lnShift;
  lnShift.set("epsilon", 1e-3)
      .set("has_gamma", int64_t{0})
      .set("has_beta", int64_t{1});
  Tensor lx = rnd({3, 5, 37}, 91, -2, 3);
  // conv2d_grad_input as Conv2DTranspose runs it: a kernel smaller than
  // the stride (output 2 * 3 + max(1 - 2, 0) = 6).
  add("conv2d_grad_input", "transpose k1 s2 valid", window("valid", {2, 2}),
      {rnd({2, 3, 3, 4}, 98), rnd({1, 1, 5, 4}, 99)}, {{2, 6, 6, 5}});
  // A sparse output gradient (one in 8 not zero, as under a 2x2 max pool
  // and a relu): the cpu kernel's sums of the non-zero values. 32 channels
  // (a block of 4 registers), 24 padded (3), 64 under a 2x3 kernel (two
  // blocks), 40 under 1x2 (blocks of 1); an image with no non-zero value
  // at all; and a dense gradient of a shape the sparse path would take,
  // which oneDNN's launch runs.
  for (auto [label, padding, ys, ks, xs, keep] :
       {std::tuple{std::string("sparse 3x3 valid, 32 channels"),
                   std::string("valid"), std::vector<int64_t>{3, 11, 11, 16},
                   std::vector<int64_t>{3, 3, 32, 16},
                   std::vector<int64_t>{3, 13, 13, 32}, 8},
        std::tuple{std::string("sparse 3x3 same, 24 channels"),
                   std::string("same"), std::vector<int64_t>{2, 7, 6, 16},
                   std::vector<int64_t>{3, 3, 24, 16},
                   std::vector<int64_t>{2, 7, 6, 24}, 8},
        std::tuple{std::string("sparse 2x3 same, 64 channels"),
                   std::string("same"), std::vector<int64_t>{2, 6, 5, 8},
                   std::vector<int64_t>{2, 3, 64, 8},
                   std::vector<int64_t>{2, 6, 5, 64}, 6},
        std::tuple{std::string("sparse 1x2 valid, 40 channels"),
                   std::string("valid"), std::vector<int64_t>{2, 5, 4, 24},
                   std::vector<int64_t>{1, 2, 40, 24},
                   std::vector<int64_t>{2, 5, 5, 40}, 5},
        std::tuple{std::string("dense 3x3 valid, 8 channels"),
                   std::string("valid"), std::vector<int64_t>{2, 4, 4, 8},
                   std::vector<int64_t>{3, 3, 8, 8},
                   std::vector<int64_t>{2, 6, 6, 8}, 1}})
    add("conv2d_grad_input", label, window(padding, {1, 1}),
        {sparse(ys, 100, keep), rnd(ks, 101)}, {xs});
  {
    // Image 1 of 3 all zeros: its input gradient is zeros.
    Tensor dy = sparse({3, 9, 9, 8}, 102);
    std::vector<double> v = dy.values();
    std::fill(v.begin() + 9 * 9 * 8, v.begin() + 2 * 9 * 9 * 8, 0.0);
    add("conv2d_grad_input", "sparse, a zero image", window("valid", {1, 1}),
        {Tensor::f32({3, 9, 9, 8}, v), rnd({3, 3, 16, 8}, 103)},
        {{3, 11, 11, 16}});
  }
  add("channel_scale", "NHWC", {}, {nx, rnd({16}, 96)}, {{2, 3, 4, 16}});
  add("channel_scale", "rows of 37", {}, {lx, rnd({37}, 97)}, {{3, 5, 37}});
  add("layer_norm", "NHWC, gamma beta", ln,
      {nx, rnd({16}, 92, 0.5, 2), rnd({16}, 93)}, {{2, 3, 4, 16}});
  add("layer_norm", "rows of 37, bare", lnBare, {lx}, {{3, 5, 37}});
  add("layer_norm", "rows of 37, beta only", lnShift, {lx, rnd({37}, 93)},
      {{3, 5, 37}});
  add("layer_norm_grad", "NHWC, gamma", ln,
      {rnd({2, 3, 4, 16}, 94), nx, rnd({16}, 92, 0.5, 2)},
      {{2, 3, 4, 16}, {16}, {16}});
  add("layer_norm_grad", "rows of 37, no gamma", lnBare,
      {rnd({3, 5, 37}, 95), lx}, {{3, 5, 37}, {37}, {37}});
  // Evaluation weighs rows (a padded last batch's padding weighs 0).
  Tensor weights = Tensor::f32({4}, {1, 0, 1, 0.5});
  add("categorical_crossentropy", "weighted", {}, {probs, oneHot, weights},
      {{}});
  add("sparse_categorical_crossentropy", "weighted, logits", logits,
      {rnd({4, 3}, 37, -3, 3), indices, weights}, {{}});
  add("softmax_cross_entropy", "weighted", {},
      {rnd({4, 3}, 37, -3, 3), oneHot, weights}, {{4, 3}, {}, {4, 3}});
  add("accuracy", "weighted", {}, {probs, indices, weights}, {{}});
  // The gradient norm: several tensors, one over a chunk boundary.
  add("global_norm", "three tensors", {},
      {rnd({3, 4}, 91), rnd({7}, 92), rnd({40000}, 93)}, {{}});
  // Dynamic loss scaling: the loss gradient times a replica's share of the
  // scale, and the scale's move after a finite step that doubles it and
  // after an overflow (LossScale.h).
  {
    KernelConfig two;
    two.set("replicas", int64_t{2});
    add("scale_by", "replicas 2", two,
        {rnd({4, 3}, 94), Tensor::f32({1}, {32768.0})}, {{4, 3}});
    KernelConfig growth;
    growth.set("growth_steps", int64_t{3});
    add("loss_scale_update", "finite, doubles", growth,
        {Tensor::f32({1}, {1024.0}), Tensor::f32({1}, {2.0}),
         Tensor::f32({1}, {7.0}), Tensor::f32({}, {5.0})},
        {{1}, {1}, {1}, {}});
    Tensor inf = Tensor::f32({}, {0.0});
    inf.f[0] = std::numeric_limits<float>::infinity();
    add("loss_scale_update", "overflow, halves", growth,
        {Tensor::f32({1}, {1024.0}), Tensor::f32({1}, {2.0}),
         Tensor::f32({1}, {7.0}), inf},
        {{1}, {1}, {1}, {}});
  }
  KernelConfig body;
  body.set("body", std::string("add(a0, a1) -> t0; elu(t0) {alpha=0.5} -> t1; "
                               "tanh_grad(a2, t1) -> t2; yield t2"));
  add("elementwise", "", body,
      {rnd({3, 4}, 60), rnd({3, 4}, 61), rnd({3, 4}, 62)}, {{3, 4}});
  // The element-wise losses, every kind on a rank-2 and a rank-3 shape,
  // with and without sample_weight: predictions in (0, 1) for the clipped
  // probabilities (binary_crossentropy, kl_divergence), positive for
  // poisson and msle; targets in [0, 1] there, {0, 1} for the hinges (which
  // convert them to -1/1) and {-1, 1} once more (which they do not).
  {
    struct Pointwise {
      std::string label;
      KernelConfig cfg;
      double pLo, pHi, tLo, tHi;
      bool binaryTargets = false;
    };
    auto kind = [](std::string name) {
      KernelConfig c;
      c.set("kind", name);
      return c;
    };
    KernelConfig huber = kind("huber"), bceLogits = kind("binary_crossentropy"),
                 bceSmooth = kind("binary_crossentropy");
    huber.set("delta", 0.5);
    bceLogits.set("from_logits", int64_t{1}).set("label_smoothing", 0.1);
    bceSmooth.set("label_smoothing", 0.2);
    // The focal cross-entropies with every option; Tversky's weights.
    KernelConfig focalOptions = kind("binary_focal_crossentropy"),
                 categoricalFocalOptions =
                     kind("categorical_focal_crossentropy");
    focalOptions.set("from_logits", int64_t{1})
        .set("label_smoothing", 0.1)
        .set("apply_class_balancing", int64_t{1})
        .set("alpha", 0.4)
        .set("gamma", 1.5);
    categoricalFocalOptions.set("from_logits", int64_t{1})
        .set("label_smoothing", 0.1)
        .set("alpha", 0.6)
        .set("gamma", 3.0);
    const Pointwise kinds[] = {
        {"mean_squared_error", kind("mean_squared_error"), -2, 2, -2, 2},
        {"mean_absolute_error", kind("mean_absolute_error"), -2, 2, -2, 2},
        {"mean_absolute_percentage_error",
         kind("mean_absolute_percentage_error"), -2, 2, -2, 2},
        {"mean_squared_logarithmic_error",
         kind("mean_squared_logarithmic_error"), 0.01, 3, 0, 3},
        {"huber delta 0.5", huber, -2, 2, -2, 2},
        {"huber", kind("huber"), -3, 3, -1, 1},
        {"log_cosh", kind("log_cosh"), -3, 3, -2, 2},
        {"binary_crossentropy", kind("binary_crossentropy"), 0.02, 0.98, 0, 1},
        {"binary_crossentropy label_smoothing", bceSmooth, 0.02, 0.98, 0, 1},
        {"binary_crossentropy from_logits label_smoothing", bceLogits, -6, 6, 0,
         1},
        {"poisson", kind("poisson"), 0.05, 3, 0, 1},
        {"kl_divergence", kind("kl_divergence"), 0.02, 0.98, 0, 1},
        {"hinge", kind("hinge"), -2, 2, 0, 1, true},
        {"squared_hinge", kind("squared_hinge"), -2, 2, 0, 1, true},
        {"hinge -1/1", kind("hinge"), -2, 2, -1, 1, true},
        {"binary_accuracy", kind("binary_accuracy"), 0, 1, 0, 1, true},
        {"binary_focal_crossentropy", kind("binary_focal_crossentropy"), 0.02,
         0.98, 0, 1, true},
        {"binary_focal_crossentropy options", focalOptions, -4, 4, 0, 1, true},
        {"categorical_focal_crossentropy",
         kind("categorical_focal_crossentropy"), 0.02, 0.98, 0, 1, true},
        {"categorical_focal_crossentropy options", categoricalFocalOptions, -4,
         4, 0, 1, true},
        {"cosine_similarity", kind("cosine_similarity"), -2, 2, -2, 2},
        {"categorical_hinge", kind("categorical_hinge"), -2, 2, 0, 1, true},
    };
    unsigned seed = 200;
    for (const Pointwise &k : kinds)
      for (std::vector<int64_t> shape :
           {std::vector<int64_t>{7, 5}, std::vector<int64_t>{3, 4, 2}}) {
        Tensor p = rnd(shape, seed++, k.pLo, k.pHi);
        Tensor t = rnd(shape, seed++, k.tLo, k.tHi);
        if (k.binaryTargets)
          for (float &v : t.f)
            v = v > 0.5f * (k.tLo + k.tHi) ? k.tHi : k.tLo;
        Tensor w = rnd({shape[0]}, seed++, 0, 2);
        std::string label = k.label + " " + shapeText(shape);
        add("pointwise_loss", label, k.cfg, {p, t}, {{}});
        add("pointwise_loss", label + " weighted", k.cfg, {p, t, w}, {{}});
        if (k.label != "binary_accuracy") { // a metric: no gradient
          add("pointwise_loss_grad", label, k.cfg, {p, t}, {shape});
          add("pointwise_loss_grad", label + " weighted", k.cfg, {p, t, w},
              {shape});
        }
      }
    // Dice and Tversky: the sums (weighted: rows of weight 0 left out), the
    // loss of given sums, its gradient.
    KernelConfig dice = kind("dice"), tversky = kind("tversky"),
                 tversky2 = kind("tversky");
    tversky.set("alpha", 0.3).set("beta", 0.7);
    tversky2.set("replicas", int64_t{2});
    Tensor op = rnd({6, 5}, 240, 0, 1), ot = rnd({6, 5}, 241, 0, 1);
    Tensor ow = Tensor::f32({6}, {1, 0, 1, 1, 0, 1});
    // sum t p, sum t, sum p, sum w, rows.
    Tensor sums = Tensor::f32({5}, {3.5, 7.25, 9.0, 4.0, 6.0});
    add("overlap_sums", "", {}, {op, ot}, {{5}});
    add("overlap_sums", "weighted", {}, {op, ot, ow}, {{5}});
    add("overlap_sums", "rows of 3000", {},
        {rnd({9, 3000}, 242, 0, 1), rnd({9, 3000}, 243, 0, 1)}, {{5}});
    for (const KernelConfig *cfg : {&dice, &tversky, &tversky2}) {
      add("overlap_loss", cfg->getString("kind"), *cfg, {sums}, {{}});
      add("overlap_loss_grad", cfg->getString("kind"), *cfg, {ot, sums},
          {{6, 5}});
      add("overlap_loss_grad", cfg->getString("kind") + " weighted", *cfg,
          {ot, sums, ow}, {{6, 5}});
    }
    // Dice and Tversky with an axis: one ratio per sample (axis [1, 2]) or
    // per sample and column (axis [1]), then their mean.
    Tensor sp = rnd({4, 3, 5}, 244, 0, 1), st = rnd({4, 3, 5}, 245, 0, 1);
    Tensor sw = Tensor::f32({4}, {1, 0, 2, 0.5});
    for (const KernelConfig *base : {&dice, &tversky})
      for (std::vector<int64_t> axis :
           {std::vector<int64_t>{1, 2}, std::vector<int64_t>{1}}) {
        KernelConfig cfg = *base;
        cfg.set("axis", axis);
        std::string label =
            cfg.getString("kind") + " axis " + std::to_string(axis.size());
        add("sample_overlap_loss", label, cfg, {sp, st}, {{}});
        add("sample_overlap_loss", label + " weighted", cfg, {sp, st, sw},
            {{}});
        add("sample_overlap_loss_grad", label, cfg, {sp, st}, {{4, 3, 5}});
        add("sample_overlap_loss_grad", label + " weighted", cfg, {sp, st, sw},
            {{4, 3, 5}});
      }
  }
  // SparseCategoricalCrossentropy's ignore_class: the rows that hold
  // examples and the kept ones (padding rows, metric weight 0, count in
  // neither), then the labels and weights the loss sees.
  {
    Tensor labels = Tensor::i32({6}, {2, -1, 0, 2, -1, 1});
    Tensor metricWeight = Tensor::f32({6}, {1, 1, 1, 1, 1, 0});
    Tensor weights = Tensor::f32({6}, {1, 0.5, 2, 1, 1, 0});
    for (int64_t ignored : {int64_t{-1}, int64_t{2}}) {
      KernelConfig cfg;
      cfg.set("ignore_class", ignored);
      std::string label = "ignore " + std::to_string(ignored);
      add("kept_rows", label, cfg, {labels, metricWeight}, {{2}});
      // kept_rows' [kept, rows] of these labels: 3 of the 5 real rows
      // either way.
      Tensor counts = Tensor::f32({2}, {3, 5});
      add("ignore_class", label, cfg, {labels, weights, counts}, {{6}, {6}}, {},
          {plan::DType::i32, plan::DType::f32});
      KernelConfig sum = cfg;
      sum.set("sum_reduction", int64_t{1});
      add("ignore_class", label + " sum", sum, {labels, weights, counts},
          {{6}, {6}}, {}, {plan::DType::i32, plan::DType::f32});
    }
  }
  // Precision's, Recall's and AUC's counts of a batch: [tp, fp, tn, fn] at
  // one threshold, with top_k or class_id, or at AUC's thresholds (from
  // logits too), weighted.
  {
    Tensor p = rnd({9, 4}, 250, 0, 1), logits = rnd({9, 4}, 251, -3, 3);
    Tensor t = rnd({9, 4}, 252, 0, 1);
    for (float &v : t.f)
      v = v > 0.5f ? 1.0f : 0.0f;
    Tensor w = rnd({9}, 253, 0, 2);
    KernelConfig one, top2, column, auc, aucLogits;
    one.set("threshold", 0.3);
    top2.set("k", int64_t{2});
    column.set("class_id", int64_t{1});
    auc.set("num_thresholds", int64_t{200});
    aucLogits.set("num_thresholds", int64_t{50}).set("from_logits", int64_t{1});
    add("confusion_counts", "threshold 0.3", one, {p, t}, {{4, 1}});
    add("confusion_counts", "top_k 2", top2, {p, t}, {{4, 1}});
    add("confusion_counts", "class_id 1 weighted", column, {p, t, w}, {{4, 1}});
    add("confusion_counts", "auc 200", auc, {p, t}, {{4, 200}});
    add("confusion_counts", "auc 50 from logits weighted", aucLogits,
        {logits, t, w}, {{4, 50}});
  }
  // Every convolution case again with its kernel in OHWI (filter_layout
  // ohwi, graphc's layout for a kernel variable only convolutions read):
  // grouped, depthwise, fused_conv2d_pool and the transposed form included.
  const size_t hwioCases = cases.size();
  for (size_t i = 0; i < hwioCases; ++i)
    if (isConvolution(cases[i].kernel))
      cases.push_back(ohwiTwin(cases[i]));
  return cases;
}

/// Runs `c` on `backend`; fills max_pool2d_grad's y from the reference.
} // namespace graph::runtime::testing

#endif // TEST_RUNTIME_REFERENCE_CONFORMANCECASES_H
