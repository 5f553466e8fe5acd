//===- FiniteDifferenceTest.cpp - gradient kernels vs finite differences --===//
//
// Every gradient kernel against central differences of its forward kernel,
// both run in double precision (the reference kernels take f64 tensors).
// The scalar checked is sum(w * forward(inputs)) for fixed random weights w,
// whose gradient is the gradient kernel applied to dy = w.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

struct Forward {
  std::string kernel;
  KernelConfig cfg;
  std::vector<Tensor> ins;
  std::vector<std::vector<int64_t>> outShapes;
  int outIndex = 0;
  KernelContext ctx;

  /// Runs the forward kernel; returns all outputs.
  std::vector<Tensor> run(std::vector<Tensor> inputs) const {
    std::vector<Tensor> outs;
    for (const auto &s : outShapes)
      outs.push_back(Tensor::f64(s));
    std::vector<Tensor *> in, out;
    for (Tensor &t : inputs)
      in.push_back(&t);
    for (Tensor &t : outs)
      out.push_back(&t);
    Status s = launch(kernel, cfg, in, out, ctx);
    EXPECT_TRUE(s.isOk()) << s.message();
    return outs;
  }
  double objective(const std::vector<Tensor> &inputs,
                   const std::vector<double> &w) const {
    std::vector<double> y = run(inputs)[outIndex].values();
    double sum = 0.0;
    for (size_t k = 0; k < y.size(); ++k)
      sum += w[k] * y[k];
    return sum;
  }
  /// d objective / d ins[wrt], by central differences.
  std::vector<double> numeric(size_t wrt, const std::vector<double> &w,
                              double h = 1e-6) const {
    std::vector<double> g(ins[wrt].elements());
    for (int64_t k = 0; k < ins[wrt].elements(); ++k) {
      std::vector<Tensor> plus = ins, minus = ins;
      plus[wrt].at(k, ins[wrt].get(k) + h);
      minus[wrt].at(k, ins[wrt].get(k) - h);
      g[k] = (objective(plus, w) - objective(minus, w)) / (2 * h);
    }
    return g;
  }
  std::vector<double> weights(unsigned seed) const {
    int64_t n = 1;
    for (int64_t s : outShapes[outIndex])
      n *= s;
    return uniform(n, -1, 1, seed);
  }
};

/// Runs gradient kernel `kernel` and returns output `index`.
std::vector<double> analytic(const std::string &kernel, const KernelConfig &cfg,
                             std::vector<Tensor> ins,
                             std::vector<std::vector<int64_t>> outShapes,
                             int index = 0, const KernelContext &ctx = {}) {
  std::vector<Tensor> outs;
  for (const auto &s : outShapes)
    outs.push_back(Tensor::f64(s));
  std::vector<Tensor *> in, out;
  for (Tensor &t : ins)
    in.push_back(&t);
  for (Tensor &t : outs)
    out.push_back(&t);
  Status s = launch(kernel, cfg, in, out, ctx);
  EXPECT_TRUE(s.isOk()) << kernel << ": " << s.message();
  return outs[index].values();
}

void expectGradient(const std::vector<double> &analytic,
                    const std::vector<double> &numeric, const std::string &what,
                    double tol = 1e-6) {
  ASSERT_EQ(analytic.size(), numeric.size()) << what;
  double scale = 0.0;
  for (double v : numeric)
    scale = std::max(scale, std::abs(v));
  ASSERT_GT(scale, 0.0) << what << ": the gradient is all zero, a weak check";
  for (size_t k = 0; k < analytic.size(); ++k)
    EXPECT_NEAR(analytic[k], numeric[k], tol * std::max(1.0, scale))
        << what << " at element " << k;
}

Tensor dyOf(const Forward &f, const std::vector<double> &w) {
  return Tensor::f64(f.outShapes[f.outIndex], w);
}

//===----------------------------------------------------------------------===//

KernelConfig convConfig(const std::string &padding, int64_t stride,
                        int64_t dilation) {
  KernelConfig cfg;
  cfg.set("padding", padding)
      .set("strides", std::vector<int64_t>{stride, stride})
      .set("dilations", std::vector<int64_t>{dilation, dilation});
  return cfg;
}

int64_t outSize(int64_t in, int64_t k, int64_t s, int64_t d, bool same) {
  return same ? (in + s - 1) / s : (in - ((k - 1) * d + 1)) / s + 1;
}

/// conv2d's input and kernel gradients under `cfg` against finite
/// differences of its forward: input `xs`, kernel `ks`, output `ys`; x, the
/// kernel and the loss weights drawn with seeds `seed`, `seed` + 1 and
/// `seed` + 2.
void expectConvGradients(const KernelConfig &cfg,
                         const std::vector<int64_t> &xs,
                         const std::vector<int64_t> &ks,
                         const std::vector<int64_t> &ys, unsigned seed,
                         const std::string &what) {
  auto elements = [](const std::vector<int64_t> &shape) {
    return std::accumulate(shape.begin(), shape.end(), int64_t{1},
                           std::multiplies<int64_t>());
  };
  Forward f;
  f.kernel = "conv2d";
  f.cfg = cfg;
  f.ins = {Tensor::f64(xs, uniform(elements(xs), -1, 1, seed)),
           Tensor::f64(ks, uniform(elements(ks), -1, 1, seed + 1))};
  f.outShapes = {ys};
  std::vector<double> w = f.weights(seed + 2);
  Tensor dy = dyOf(f, w);
  expectGradient(analytic("conv2d_grad_input", f.cfg, {dy, f.ins[1]}, {xs}),
                 f.numeric(0, w), "conv2d_grad_input " + what);
  expectGradient(analytic("conv2d_grad_kernel", f.cfg, {f.ins[0], dy}, {ks}),
                 f.numeric(1, w), "conv2d_grad_kernel " + what);
}

TEST(FiniteDifference, Conv2DInputAndKernel) {
  struct C {
    std::string padding;
    int64_t stride, dilation;
  };
  for (C c :
       {C{"valid", 1, 1}, C{"same", 1, 1}, C{"valid", 2, 1}, C{"same", 2, 1},
        C{"valid", 1, 2}, C{"same", 1, 2}, C{"same", 2, 2}}) {
    std::string what = c.padding + " s" + std::to_string(c.stride) + " d" +
                       std::to_string(c.dilation);
    bool same = c.padding == "same";
    expectConvGradients(convConfig(c.padding, c.stride, c.dilation),
                        {2, 6, 7, 2}, {3, 2, 2, 3},
                        {2, outSize(6, 3, c.stride, c.dilation, same),
                         outSize(7, 2, c.stride, c.dilation, same), 3},
                        21, what);
  }
}

TEST(FiniteDifference, GroupedAndDepthwiseConv2DInputAndKernel) {
  struct C {
    std::string padding;
    int64_t stride, dilation, groups;
    std::vector<int64_t> xs, ks;
    int64_t filters;
  };
  for (C c : {C{"valid", 1, 1, 2, {2, 5, 6, 4}, {3, 2, 2, 4}, 4},
              C{"same", 2, 1, 3, {2, 5, 6, 3}, {3, 3, 3, 2}, 6},
              C{"same", 1, 2, 3, {2, 5, 6, 3}, {2, 3, 3, 1}, 3},
              C{"same", 2, 1, 3, {2, 5, 6, 3}, {3, 2, 1, 6}, 6}}) {
    std::string what = c.padding + " s" + std::to_string(c.stride) + " d" +
                       std::to_string(c.dilation) + " groups " +
                       std::to_string(c.groups) + " kernel " +
                       std::to_string(c.ks[2]) + "x" + std::to_string(c.ks[3]);
    KernelConfig cfg = convConfig(c.padding, c.stride, c.dilation);
    cfg.set("groups", c.groups);
    bool same = c.padding == "same";
    expectConvGradients(cfg, c.xs, c.ks,
                        {2, outSize(5, c.ks[0], c.stride, c.dilation, same),
                         outSize(6, c.ks[1], c.stride, c.dilation, same),
                         c.filters},
                        41, what);
  }
}

/// filter_layout ohwi: the gradients of conv2d with an OHWI kernel
/// [F, kh, kw, C / groups] (a depthwise one [C * m, kh, kw, 1]), checked
/// in that layout against the OHWI forward, on non-square windows.
TEST(FiniteDifference, OhwiConv2DInputAndKernel) {
  struct C {
    std::string padding;
    int64_t stride, dilation, groups;
    std::vector<int64_t> xs, ks; // ks: OHWI
  };
  for (C c : {C{"valid", 1, 1, 1, {2, 5, 6, 2}, {3, 3, 2, 2}},
              C{"same", 2, 2, 1, {2, 5, 6, 2}, {3, 2, 3, 2}},
              C{"same", 2, 1, 2, {2, 5, 6, 4}, {4, 3, 2, 2}},
              C{"valid", 1, 1, 3, {2, 5, 6, 3}, {6, 2, 3, 1}},
              C{"same", 1, 2, 3, {2, 5, 6, 3}, {3, 3, 2, 1}}}) {
    std::string what = c.padding + " s" + std::to_string(c.stride) + " d" +
                       std::to_string(c.dilation) + " groups " +
                       std::to_string(c.groups);
    KernelConfig cfg = convConfig(c.padding, c.stride, c.dilation);
    cfg.set("groups", c.groups);
    cfg.set("filter_layout", std::string("ohwi"));
    bool same = c.padding == "same";
    expectConvGradients(cfg, c.xs, c.ks,
                        {2, outSize(5, c.ks[1], c.stride, c.dilation, same),
                         outSize(6, c.ks[2], c.stride, c.dilation, same),
                         c.ks[0]},
                        44, what);
  }
}

TEST(FiniteDifference, DenseInputAndKernel) {
  for (std::vector<int64_t> xs :
       {std::vector<int64_t>{3, 4}, std::vector<int64_t>{2, 3, 4}}) {
    Forward f;
    f.kernel = "dense";
    int64_t rows = xs.size() == 2 ? 3 : 6;
    f.ins = {Tensor::f64(xs, uniform(rows * 4, -1, 1, 31)),
             Tensor::f64({4, 5}, uniform(20, -1, 1, 32))};
    std::vector<int64_t> ys = xs;
    ys.back() = 5;
    f.outShapes = {ys};
    std::vector<double> w = f.weights(33);
    Tensor dy = dyOf(f, w);
    expectGradient(analytic("dense_grad_input", {}, {dy, f.ins[1]}, {xs}),
                   f.numeric(0, w), "dense_grad_input");
    expectGradient(analytic("dense_grad_kernel", {}, {f.ins[0], dy}, {{4, 5}}),
                   f.numeric(1, w), "dense_grad_kernel");
  }
}

TEST(FiniteDifference, BiasAddAndAdd) {
  Forward f;
  f.kernel = "bias_add";
  f.ins = {Tensor::f64({2, 3, 4}, uniform(24, -1, 1, 41)),
           Tensor::f64({4}, uniform(4, -1, 1, 42))};
  f.outShapes = {{2, 3, 4}};
  std::vector<double> w = f.weights(43);
  expectGradient(w, f.numeric(0, w), "bias_add input");
  expectGradient(analytic("bias_add_grad", {}, {dyOf(f, w)}, {{4}}),
                 f.numeric(1, w), "bias_add_grad");
  Forward a;
  a.kernel = "add";
  a.ins = {Tensor::f64({5}, uniform(5, -1, 1, 44)),
           Tensor::f64({5}, uniform(5, -1, 1, 45)),
           Tensor::f64({5}, uniform(5, -1, 1, 46))};
  a.outShapes = {{5}};
  std::vector<double> wa = a.weights(47);
  for (size_t i = 0; i < 3; ++i)
    expectGradient(wa, a.numeric(i, wa), "add");
}

TEST(FiniteDifference, MaxPool) {
  // Distinct values 0.1 apart: no ties, and the step cannot reorder them.
  std::vector<double> v(2 * 5 * 5 * 2);
  std::iota(v.begin(), v.end(), 0.0);
  std::mt19937 gen(51);
  std::shuffle(v.begin(), v.end(), gen);
  for (double &x : v)
    x *= 0.1;
  struct C {
    std::string padding;
    int64_t size, stride;
  };
  for (C c :
       {C{"valid", 2, 2}, C{"same", 2, 2}, C{"valid", 3, 1}, C{"same", 3, 2}}) {
    Forward f;
    f.kernel = "max_pool2d";
    f.cfg = poolConfig(c.padding, c.size, c.stride);
    f.ins = {Tensor::f64({2, 5, 5, 2}, v)};
    int64_t o = outSize(5, c.size, c.stride, 1, c.padding == "same");
    f.outShapes = {{2, o, o, 2}};
    std::vector<double> w = f.weights(52);
    Tensor y = f.run(f.ins)[0];
    expectGradient(analytic("max_pool2d_grad", f.cfg, {f.ins[0], y, dyOf(f, w)},
                            {{2, 5, 5, 2}}),
                   f.numeric(0, w), "max_pool2d_grad " + c.padding);
  }
}

TEST(FiniteDifference, AvgPoolAndGlobalAvgPool) {
  struct C {
    std::string padding;
    int64_t size, stride;
  };
  for (C c : {C{"valid", 2, 2}, C{"same", 2, 2}, C{"valid", 3, 1},
              C{"same", 3, 2}, C{"same", 3, 1}}) {
    Forward f;
    f.kernel = "avg_pool2d";
    f.cfg = poolConfig(c.padding, c.size, c.stride);
    f.ins = {Tensor::f64({2, 5, 5, 2}, uniform(100, -1, 1, 61))};
    int64_t o = outSize(5, c.size, c.stride, 1, c.padding == "same");
    f.outShapes = {{2, o, o, 2}};
    std::vector<double> w = f.weights(62);
    expectGradient(
        analytic("avg_pool2d_grad", f.cfg, {dyOf(f, w)}, {{2, 5, 5, 2}}),
        f.numeric(0, w), "avg_pool2d_grad " + c.padding);
  }
  Forward g;
  g.kernel = "global_avg_pool2d";
  g.ins = {Tensor::f64({2, 3, 4, 5}, uniform(120, -1, 1, 63))};
  g.outShapes = {{2, 5}};
  std::vector<double> w = g.weights(64);
  expectGradient(
      analytic("global_avg_pool2d_grad", {}, {dyOf(g, w)}, {{2, 3, 4, 5}}),
      g.numeric(0, w), "global_avg_pool2d_grad");
}

TEST(FiniteDifference, Activations) {
  // Away from relu's and leaky_relu's kink at 0.
  std::vector<double> x = uniform(24, -2, 2, 71);
  for (double &v : x)
    if (std::abs(v) < 0.05)
      v = 0.3;
  KernelConfig none, elu, leaky, approx;
  elu.set("alpha", 0.7);
  leaky.set("alpha", 0.1);
  approx.set("approximate", int64_t{1});
  struct C {
    std::string op;
    KernelConfig cfg;
    bool fromOutput; // the gradient takes y (else x)
  };
  for (const C &c :
       {C{"relu", none, true}, C{"sigmoid", none, true}, C{"tanh", none, true},
        C{"elu", elu, true}, C{"elu", none, true},
        C{"leaky_relu", leaky, false}, C{"leaky_relu", none, false},
        C{"gelu", none, false}, C{"gelu", approx, false}}) {
    Forward f;
    f.kernel = c.op;
    f.cfg = c.cfg;
    f.ins = {Tensor::f64({4, 6}, x)};
    f.outShapes = {{4, 6}};
    std::vector<double> w = f.weights(72);
    Tensor saved = c.fromOutput ? f.run(f.ins)[0] : f.ins[0];
    expectGradient(
        analytic(c.op + "_grad", c.cfg, {dyOf(f, w), saved}, {{4, 6}}),
        f.numeric(0, w), c.op + "_grad");
  }
}

TEST(FiniteDifference, KerasReluAndMobileNetActivations) {
  // Away from the kinks: 0, the threshold 0.5, the caps 6 and 2.5, and
  // hard_sigmoid's -3 and 3.
  std::vector<double> x = uniform(24, -8, 8, 73);
  for (double &v : x)
    for (double kink : {0.0, 0.5, 2.5, 6.0, -3.0, 3.0})
      if (std::abs(v - kink) < 0.05)
        v = kink + 0.2;
  KernelConfig relu6, full, threshold, none;
  relu6.set("max_value", 6.0);
  full.set("max_value", 2.5).set("negative_slope", 0.1).set("threshold", 0.5);
  threshold.set("threshold", 0.5);
  for (const auto &[op, cfg] :
       {std::pair{std::string("clipped_relu"), relu6},
        std::pair{std::string("clipped_relu"), full},
        std::pair{std::string("clipped_relu"), threshold},
        std::pair{std::string("silu"), none},
        std::pair{std::string("hard_sigmoid"), none},
        std::pair{std::string("hard_silu"), none}}) {
    Forward f;
    f.kernel = op;
    f.cfg = cfg;
    f.ins = {Tensor::f64({4, 6}, x)};
    f.outShapes = {{4, 6}};
    std::vector<double> w = f.weights(74);
    expectGradient(
        analytic(op + "_grad", cfg, {dyOf(f, w), f.ins[0]}, {{4, 6}}),
        f.numeric(0, w), op + "_grad");
  }
  // scale_shift is its own gradient, without the offset.
  Forward f;
  f.kernel = "scale_shift";
  f.cfg.set("scale", -0.75).set("offset", 2.0);
  f.ins = {Tensor::f64({4, 6}, x)};
  f.outShapes = {{4, 6}};
  std::vector<double> w = f.weights(75);
  KernelConfig scale;
  scale.set("scale", -0.75);
  expectGradient(analytic("scale_shift", scale, {dyOf(f, w)}, {{4, 6}}),
                 f.numeric(0, w), "scale_shift");
}

TEST(FiniteDifference, MultiplyAndMaximum) {
  std::vector<Tensor> ins = {Tensor::f64({3, 4}, uniform(12, -1, 1, 76)),
                             Tensor::f64({3, 4}, uniform(12, -1, 1, 77)),
                             Tensor::f64({3, 4}, uniform(12, -1, 1, 78))};
  Forward m;
  m.kernel = "multiply";
  m.ins = ins;
  m.outShapes = {{3, 4}};
  std::vector<double> w = m.weights(79);
  for (size_t i = 0; i < 3; ++i) {
    std::vector<Tensor> operands = {dyOf(m, w)};
    for (size_t j = 0; j < 3; ++j)
      if (j != i)
        operands.push_back(ins[j]);
    expectGradient(analytic("multiply", {}, operands, {{3, 4}}),
                   m.numeric(i, w), "multiply input " + std::to_string(i));
  }
  Forward x;
  x.kernel = "maximum";
  x.ins = ins;
  x.outShapes = {{3, 4}};
  w = x.weights(80);
  for (int64_t i = 0; i < 3; ++i) {
    KernelConfig c;
    c.set("index", i);
    expectGradient(analytic("maximum_grad", c,
                            {dyOf(x, w), ins[0], ins[1], ins[2]}, {{3, 4}}),
                   x.numeric(i, w), "maximum_grad " + std::to_string(i));
  }
}

TEST(FiniteDifference, PadAndTranspose) {
  Forward p;
  p.kernel = "pad";
  p.cfg.set("low", std::vector<int64_t>{0, 2, -1, 0})
      .set("high", std::vector<int64_t>{0, -1, 1, 0});
  p.ins = {Tensor::f64({2, 4, 3, 2}, uniform(48, -1, 1, 84))};
  p.outShapes = {{2, 5, 3, 2}};
  std::vector<double> w = p.weights(85);
  KernelConfig back;
  back.set("low", std::vector<int64_t>{0, -2, 1, 0})
      .set("high", std::vector<int64_t>{0, 1, -1, 0});
  expectGradient(analytic("pad", back, {dyOf(p, w)}, {{2, 4, 3, 2}}),
                 p.numeric(0, w), "pad");
  Forward t;
  t.kernel = "transpose";
  t.cfg.set("permutation", std::vector<int64_t>{0, 3, 1, 2});
  t.ins = {Tensor::f64({2, 4, 3, 2}, uniform(48, -1, 1, 86))};
  t.outShapes = {{2, 2, 4, 3}};
  w = t.weights(87);
  KernelConfig inverse;
  inverse.set("permutation", std::vector<int64_t>{0, 2, 3, 1});
  expectGradient(analytic("transpose", inverse, {dyOf(t, w)}, {{2, 4, 3, 2}}),
                 t.numeric(0, w), "transpose");
}

TEST(FiniteDifference, Softmax) {
  for (int64_t axis : {-1, 1, 0}) {
    Forward f;
    f.kernel = "softmax";
    f.cfg.set("axis", axis);
    f.ins = {Tensor::f64({3, 4, 2}, uniform(24, -2, 2, 81))};
    f.outShapes = {{3, 4, 2}};
    std::vector<double> w = f.weights(82);
    Tensor y = f.run(f.ins)[0];
    expectGradient(
        analytic("softmax_grad", f.cfg, {dyOf(f, w), y}, {{3, 4, 2}}),
        f.numeric(0, w), "softmax_grad axis " + std::to_string(axis));
  }
}

TEST(FiniteDifference, BatchNormTrain) {
  for (bool affine : {true, false}) {
    Forward f;
    f.kernel = "batch_norm_train";
    f.cfg.set("epsilon", 1e-3).set("momentum", 0.99);
    f.ins = {Tensor::f64({4, 2, 3}, uniform(24, -2, 2, 91)),
             Tensor::f64({3}, {0, 0, 0}), Tensor::f64({3}, {1, 1, 1})};
    if (affine) {
      f.ins.push_back(Tensor::f64({3}, uniform(3, 0.5, 1.5, 92)));
      f.ins.push_back(Tensor::f64({3}, uniform(3, -1, 1, 93)));
    }
    f.outShapes = {{4, 2, 3}, {3}, {3}, {3}, {3}};
    std::vector<double> w = f.weights(94);
    std::vector<Tensor> outs = f.run(f.ins);
    std::vector<Tensor> gradIns = {dyOf(f, w), f.ins[0], outs[1], outs[2]};
    if (affine)
      gradIns.push_back(f.ins[3]);
    std::vector<std::vector<int64_t>> gradOuts = {{4, 2, 3}, {3}, {3}};
    std::string what = affine ? " (gamma, beta)" : " (no gamma, beta)";
    expectGradient(analytic("batch_norm_grad", {}, gradIns, gradOuts, 0),
                   f.numeric(0, w), "batch_norm_grad dx" + what, 1e-5);
    if (affine) {
      expectGradient(analytic("batch_norm_grad", {}, gradIns, gradOuts, 1),
                     f.numeric(3, w), "batch_norm_grad dgamma");
      expectGradient(analytic("batch_norm_grad", {}, gradIns, gradOuts, 2),
                     f.numeric(4, w), "batch_norm_grad dbeta");
    }
  }
}

/// With a row mask: the rows it keeps (a short batch's examples) are the
/// batch. The rows it leaves out take no gradient: their loss weighs 0, so
/// the numeric gradient is taken with their dy 0.
TEST(FiniteDifference, BatchNormTrainWithARowMask) {
  Forward f;
  f.kernel = "batch_norm_train";
  f.cfg.set("epsilon", 1e-3).set("momentum", 0.99);
  f.cfg.set("has_gamma", int64_t{1}).set("has_beta", int64_t{1});
  f.cfg.set("has_row_mask", int64_t{1});
  Tensor mask = Tensor::f64({5}, {1.25, 0, 1.25, 1.25, 1.25});
  f.ins = {Tensor::f64({5, 2, 3}, uniform(30, -2, 2, 95)),
           Tensor::f64({3}, {0, 0, 0}),
           Tensor::f64({3}, {1, 1, 1}),
           Tensor::f64({3}, uniform(3, 0.5, 1.5, 96)),
           Tensor::f64({3}, uniform(3, -1, 1, 97)),
           mask};
  f.outShapes = {{5, 2, 3}, {3}, {3}, {3}, {3}};
  std::vector<double> w = f.weights(98);
  for (size_t i = 6; i < 12; ++i) // row 1, left out
    w[i] = 0.0;
  std::vector<Tensor> outs = f.run(f.ins);
  std::vector<Tensor> gradIns = {dyOf(f, w), f.ins[0], outs[1],
                                 outs[2],    f.ins[3], mask};
  KernelConfig gradCfg;
  gradCfg.set("has_gamma", int64_t{1}).set("has_row_mask", int64_t{1});
  std::vector<std::vector<int64_t>> gradOuts = {{5, 2, 3}, {3}, {3}};
  expectGradient(analytic("batch_norm_grad", gradCfg, gradIns, gradOuts, 0),
                 f.numeric(0, w), "masked batch_norm_grad dx", 1e-5);
  expectGradient(analytic("batch_norm_grad", gradCfg, gradIns, gradOuts, 1),
                 f.numeric(3, w), "masked batch_norm_grad dgamma");
  expectGradient(analytic("batch_norm_grad", gradCfg, gradIns, gradOuts, 2),
                 f.numeric(4, w), "masked batch_norm_grad dbeta");
}

/// conv2d_grad_input as a forward op (Conv2DTranspose): its gradients are
/// conv2d of dy (for its input) and conv2d_grad_kernel with dy as the
/// convolution's input (for the kernel); BuildTrainingStepPass.
TEST(FiniteDifference, Conv2DTranspose) {
  for (auto [padding, k, s] :
       {std::tuple{"valid", 3, 2}, std::tuple{"same", 3, 2},
        std::tuple{"same", 2, 1}, std::tuple{"valid", 1, 2}}) {
    KernelConfig cfg = convConfig(padding, s, 1);
    bool same = std::string(padding) == "same";
    int64_t h = 3, w = 2;
    int64_t oh = same ? h * s : h * s + std::max(k - s, 0);
    int64_t ow = same ? w * s : w * s + std::max(k - s, 0);
    Forward f;
    f.kernel = "conv2d_grad_input";
    f.cfg = cfg;
    f.ins = {Tensor::f64({2, h, w, 3}, uniform(2 * h * w * 3, -1, 1, 171)),
             Tensor::f64({k, k, 2, 3}, uniform(k * k * 6, -1, 1, 172))};
    f.outShapes = {{2, oh, ow, 2}};
    std::vector<double> wts = f.weights(173);
    std::string what = std::string(" ") + padding + " k" + std::to_string(k) +
                       " s" + std::to_string(s);
    expectGradient(
        analytic("conv2d", cfg, {dyOf(f, wts), f.ins[1]}, {{2, h, w, 3}}),
        f.numeric(0, wts), "conv2d_transpose dx" + what);
    expectGradient(analytic("conv2d_grad_kernel", cfg, {dyOf(f, wts), f.ins[0]},
                            {{k, k, 2, 3}}),
                   f.numeric(1, wts), "conv2d_transpose dkernel" + what);
  }
}

/// channel_scale's gradients are compositions (BuildTrainingStepPass):
/// dx = channel_scale(dy, scale), dscale = bias_add_grad(multiply(dy, x)).
TEST(FiniteDifference, ChannelScale) {
  Forward f;
  f.kernel = "channel_scale";
  f.ins = {Tensor::f64({2, 3, 5}, uniform(30, -2, 2, 181)),
           Tensor::f64({5}, uniform(5, -1.5, 1.5, 182))};
  f.outShapes = {{2, 3, 5}};
  std::vector<double> w = f.weights(183);
  expectGradient(
      analytic("channel_scale", {}, {dyOf(f, w), f.ins[1]}, {{2, 3, 5}}),
      f.numeric(0, w), "channel_scale dx");
  std::vector<double> product =
      analytic("multiply", {}, {dyOf(f, w), f.ins[0]}, {{2, 3, 5}});
  expectGradient(
      analytic("bias_add_grad", {}, {Tensor::f64({2, 3, 5}, product)}, {{5}}),
      f.numeric(1, w), "channel_scale dscale");
}

TEST(FiniteDifference, LayerNorm) {
  for (int variant : {0, 1, 2}) { // gamma and beta; none; beta only
    Forward f;
    f.kernel = "layer_norm";
    bool gamma = variant == 0, beta = variant != 1;
    f.cfg.set("epsilon", 1e-3)
        .set("has_gamma", int64_t{gamma})
        .set("has_beta", int64_t{beta});
    f.ins = {Tensor::f64({2, 3, 5}, uniform(30, -2, 2, 191))};
    if (gamma)
      f.ins.push_back(Tensor::f64({5}, uniform(5, 0.5, 1.5, 192)));
    if (beta)
      f.ins.push_back(Tensor::f64({5}, uniform(5, -1, 1, 193)));
    f.outShapes = {{2, 3, 5}};
    std::vector<double> w = f.weights(194);
    std::vector<Tensor> gradIns = {dyOf(f, w), f.ins[0]};
    if (gamma)
      gradIns.push_back(f.ins[1]);
    std::vector<std::vector<int64_t>> gradOuts = {{2, 3, 5}, {5}, {5}};
    std::string what = " (variant " + std::to_string(variant) + ")";
    expectGradient(analytic("layer_norm_grad", f.cfg, gradIns, gradOuts, 0),
                   f.numeric(0, w), "layer_norm_grad dx" + what, 1e-5);
    if (gamma)
      expectGradient(analytic("layer_norm_grad", f.cfg, gradIns, gradOuts, 1),
                     f.numeric(1, w), "layer_norm_grad dgamma" + what);
    if (beta)
      expectGradient(analytic("layer_norm_grad", f.cfg, gradIns, gradOuts, 2),
                     f.numeric(gamma ? 2 : 1, w),
                     "layer_norm_grad dbeta" + what);
  }
}

TEST(FiniteDifference, Losses) {
  // Probabilities well inside (eps, 1 - eps), rows not summing to one (the
  // categorical loss normalises), and logits.
  std::vector<double> probs = uniform(12, 0.05, 0.9, 101);
  std::vector<double> logits = uniform(12, -2, 2, 102);
  Tensor oneHot = Tensor::f64({3, 4}, {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1});
  Tensor indices = Tensor::i32({3}, {1, 0, 3});
  // Soft labels too, for the categorical loss.
  Tensor soft =
      Tensor::f64({3, 4}, {0.1, 0.6, 0.2, 0.1, 0.5, 0.5, 0, 0, 0, 0, 0.3, 0.7});
  struct C {
    std::string loss;
    Tensor *labels;
    bool fromLogits;
  };
  for (const C &c : {C{"categorical_crossentropy", &oneHot, false},
                     C{"categorical_crossentropy", &soft, false},
                     C{"categorical_crossentropy", &oneHot, true},
                     C{"categorical_crossentropy", &soft, true},
                     C{"sparse_categorical_crossentropy", &indices, false},
                     C{"sparse_categorical_crossentropy", &indices, true}}) {
    Forward f;
    f.kernel = c.loss;
    if (c.fromLogits)
      f.cfg.set("from_logits", int64_t{1});
    f.ins = {Tensor::f64({3, 4}, c.fromLogits ? logits : probs), *c.labels};
    f.outShapes = {{}};
    std::vector<double> w = {1.0};
    std::string what = c.loss + (c.fromLogits ? " from logits" : "") +
                       (c.labels == &soft ? " soft labels" : "");
    expectGradient(
        analytic(c.loss + "_grad", f.cfg, {f.ins[0], *c.labels}, {{3, 4}}),
        f.numeric(0, w), what + "_grad");
  }
}

TEST(FiniteDifference, LossGradientIsZeroWhereClipped) {
  // A probability of 0 is clipped to eps: no gradient flows through it.
  Tensor p = Tensor::f64({1, 3}, {0.0, 0.3, 0.7});
  Tensor idx = Tensor::i32({1}, {1});
  std::vector<double> g =
      analytic("sparse_categorical_crossentropy_grad", {}, {p, idx}, {{1, 3}});
  EXPECT_EQ(g[0], 0.0);
  Tensor y = Tensor::f64({1, 3}, {0, 1, 0});
  Forward f;
  f.kernel = "categorical_crossentropy";
  f.ins = {Tensor::f64({1, 3}, {1e-9, 0.3, 0.7}), y};
  f.outShapes = {{}};
  // Away from the clipped element the gradient still matches.
  std::vector<double> num = f.numeric(0, {1.0}, 1e-11);
  std::vector<double> an =
      analytic("categorical_crossentropy_grad", {}, {f.ins[0], y}, {{1, 3}});
  EXPECT_NEAR(an[1], num[1], 1e-4);
  EXPECT_NEAR(an[2], num[2], 1e-4);
}

/// Every pointwise_loss kind, its gradient kernel against central
/// differences of the loss, at points away from kinks and clips: |p - t|
/// at least 0.05 (mae, mape, huber's delta 0.075 among them), probabilities
/// in (0.1, 0.9), hinge margins 1 - t p at least 0.1 from zero.
TEST(FiniteDifference, PointwiseLosses) {
  const std::vector<int64_t> shape = {3, 4};
  std::vector<double> p = uniform(12, 0.15, 0.85, 121);
  std::vector<double> gap = uniform(12, 0.05, 0.1, 122);
  std::vector<double> t(12);
  for (int i = 0; i < 12; ++i)
    t[i] = p[i] + (i % 2 ? gap[i] : -gap[i]);
  std::vector<double> z = uniform(12, -3, 3, 123);
  const std::vector<double> hp = {-1.8, -0.5, 0.3, 1.6,  0.7,  -1.3,
                                  2.2,  -0.2, 0.9, 1.25, -0.7, 0.45};
  const std::vector<double> binary = {1, 0, 0, 1, 1, 0, 1, 0, 1, 0, 1, 0};
  std::vector<double> signs(12);
  for (int i = 0; i < 12; ++i)
    signs[i] = i % 2 ? -1.0 : 1.0;
  struct C {
    std::string label;
    KernelConfig cfg;
    std::vector<double> p, t;
  };
  auto kind = [](const std::string &name) {
    KernelConfig cfg;
    cfg.set("kind", name);
    return cfg;
  };
  KernelConfig huber = kind("huber"), smooth = kind("binary_crossentropy"),
               logits = kind("binary_crossentropy");
  huber.set("delta", 0.075);
  smooth.set("label_smoothing", 0.1);
  logits.set("from_logits", int64_t{1}).set("label_smoothing", 0.2);
  // The focal cross-entropies with their options, Tversky's weights; the
  // categorical kinds on one-hot rows of 4.
  KernelConfig focal = kind("binary_focal_crossentropy"),
               focalHalf = kind("binary_focal_crossentropy"),
               categoricalFocal = kind("categorical_focal_crossentropy");
  focal.set("from_logits", int64_t{1})
      .set("label_smoothing", 0.1)
      .set("apply_class_balancing", int64_t{1})
      .set("alpha", 0.4)
      .set("gamma", 1.5);
  focalHalf.set("gamma", 0.5);
  categoricalFocal.set("from_logits", int64_t{1})
      .set("label_smoothing", 0.1)
      .set("alpha", 0.6)
      .set("gamma", 3.0);
  const std::vector<double> oneHot = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};
  const C cases[] = {
      {"mean_squared_error", kind("mean_squared_error"), p, t},
      {"mean_absolute_error", kind("mean_absolute_error"), p, t},
      {"mean_absolute_percentage_error", kind("mean_absolute_percentage_error"),
       p, t},
      {"mean_squared_logarithmic_error", kind("mean_squared_logarithmic_error"),
       p, t},
      {"huber", kind("huber"), p, t},
      {"huber delta 0.075", huber, p, t},
      {"log_cosh", kind("log_cosh"), z, t},
      {"binary_crossentropy", kind("binary_crossentropy"), p, t},
      {"binary_crossentropy label_smoothing", smooth, p, binary},
      {"binary_crossentropy from_logits", logits, z, t},
      {"poisson", kind("poisson"), p, t},
      {"kl_divergence", kind("kl_divergence"), p, t},
      {"hinge", kind("hinge"), hp, binary},
      {"hinge, -1/1 targets", kind("hinge"), hp, signs},
      {"squared_hinge, -1/1 targets", kind("squared_hinge"), hp, signs},
      {"squared_hinge", kind("squared_hinge"), hp, binary},
      {"binary_focal_crossentropy", kind("binary_focal_crossentropy"), p,
       binary},
      {"binary_focal_crossentropy options", focal, z, binary},
      {"binary_focal_crossentropy gamma 0.5", focalHalf, p, t},
      {"categorical_focal_crossentropy", kind("categorical_focal_crossentropy"),
       p, oneHot},
      {"categorical_focal_crossentropy options", categoricalFocal, z, oneHot},
      {"cosine_similarity", kind("cosine_similarity"), z, hp},
      {"categorical_hinge", kind("categorical_hinge"), hp, oneHot},
  };
  for (const C &c : cases) {
    Forward f;
    f.kernel = "pointwise_loss";
    f.cfg = c.cfg;
    f.ins = {Tensor::f64(shape, c.p), Tensor::f64(shape, c.t)};
    f.outShapes = {{}};
    expectGradient(analytic("pointwise_loss_grad", c.cfg, f.ins, {shape}),
                   f.numeric(0, {1.0}), "pointwise_loss_grad " + c.label);
  }
}

/// Dice and Tversky: overlap_loss_grad against central differences of
/// overlap_loss(overlap_sums(p, t)), with soft and binary targets; with
/// `replicas` the gradient is N times as large.
TEST(FiniteDifference, OverlapLosses) {
  const std::vector<int64_t> shape = {3, 2, 2};
  const std::vector<double> p = uniform(12, 0.05, 0.95, 131);
  const std::vector<double> soft = uniform(12, 0, 1, 132);
  const std::vector<double> binary = {1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0};
  KernelConfig dice, tversky;
  dice.set("kind", std::string("dice"));
  tversky.set("kind", std::string("tversky"))
      .set("alpha", 0.3)
      .set("beta", 0.7);
  auto loss = [&](const KernelConfig &cfg, const std::vector<double> &pv,
                  const std::vector<double> &tv) {
    Tensor pt = Tensor::f64(shape, pv), tt = Tensor::f64(shape, tv);
    Tensor sums = Tensor::f64({5}), value = Tensor::f64({});
    EXPECT_TRUE(launch("overlap_sums", {}, {&pt, &tt}, {&sums}).isOk());
    EXPECT_TRUE(launch("overlap_loss", cfg, {&sums}, {&value}).isOk());
    return value.get(0);
  };
  for (const KernelConfig &cfg : {dice, tversky})
    for (const std::vector<double> &t : {soft, binary}) {
      std::vector<double> numeric(12);
      for (int k = 0; k < 12; ++k) {
        std::vector<double> plus = p, minus = p;
        plus[k] += 1e-6;
        minus[k] -= 1e-6;
        numeric[k] = (loss(cfg, plus, t) - loss(cfg, minus, t)) / 2e-6;
      }
      Tensor pt = Tensor::f64(shape, p), tt = Tensor::f64(shape, t);
      Tensor sums = Tensor::f64({5});
      ASSERT_TRUE(launch("overlap_sums", {}, {&pt, &tt}, {&sums}).isOk());
      std::string what = cfg.getString("kind");
      expectGradient(analytic("overlap_loss_grad", cfg, {tt, sums}, {shape}),
                     numeric, "overlap_loss_grad " + what);
      KernelConfig twice = cfg;
      twice.set("replicas", int64_t{2});
      std::vector<double> doubled = numeric;
      for (double &v : doubled)
        v *= 2;
      expectGradient(analytic("overlap_loss_grad", twice, {tt, sums}, {shape}),
                     doubled, "overlap_loss_grad replicas 2 " + what);
    }
}

/// Where Keras' formula has a kink or a clip, the gradient is
/// TensorFlow's: clip_by_value passes it for eps <= p <= max only, the
/// maximum's goes to its first operand where it is >= the second, and abs'
/// is 0 at 0 (each checked against TensorFlow 2.21).
TEST(FiniteDifference, PointwiseLossGradientsAtKinksAndClips) {
  auto gradOf = [](const std::string &kind, std::vector<double> p,
                   std::vector<double> t) {
    KernelConfig cfg;
    cfg.set("kind", kind);
    std::vector<int64_t> shape = {1, static_cast<int64_t>(p.size())};
    return analytic("pointwise_loss_grad", cfg,
                    {Tensor::f64(shape, p), Tensor::f64(shape, t)}, {shape});
  };
  // Clipped predictions have no gradient; the bound itself, float32's
  // 1e-7 (Keras clips a float32 tensor), is inside.
  const double eps = static_cast<float>(1e-7);
  std::vector<double> bce =
      gradOf("binary_crossentropy", {0.0, 1.0, eps, 0.5}, {0.5, 0.5, 0.5, 0.5});
  EXPECT_EQ(bce[0], 0.0);
  EXPECT_EQ(bce[1], 0.0);
  EXPECT_NEAR(bce[2], (-0.5 / eps + 0.5 / (1 - eps)) / 4, 1e-3);
  std::vector<double> kl =
      gradOf("kl_divergence", {1.5, 1.0, 1e-7, 0.0}, {0.5, 0.5, 0.5, 0.5});
  expectAllNear(kl, {0.0, -0.5, -5e6, 0.0}, 1e-9, "kl_divergence");
  std::vector<double> msle =
      gradOf("mean_squared_logarithmic_error", {-1.0, 0.0}, {0.5, 0.5});
  expectAllNear(msle, {0.0, 0.0}, 0, "msle below eps");
  // abs and sign: 0 at p == t.
  expectAllNear(gradOf("mean_absolute_error", {0.5, 0.7}, {0.5, 0.2}),
                {0.0, 0.5}, 1e-12, "mae at 0");
  expectAllNear(
      gradOf("mean_absolute_percentage_error", {1.0, 0.5}, {1.0, 0.0}),
      {0.0, 100 / 1e-7 / 2}, 1e-12, "mape at 0 and t = 0");
  // hinge at its kink, 1 - t p == 0: -t (targets -1/1 here).
  expectAllNear(gradOf("hinge", {1.0, -1.0, 0.5}, {1.0, -1.0, -1.0}),
                {-1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-12, "hinge at the kink");
  expectAllNear(gradOf("squared_hinge", {1.0, 0.5}, {1.0, 1.0}), {0.0, -0.5},
                1e-12, "squared_hinge at the kink");
  // log_cosh far out: tanh saturates, nothing overflows.
  expectAllNear(gradOf("log_cosh", {1000.0, -800.0, 0.0}, {0.0, 0.0, 0.0}),
                {1.0 / 3, -1.0 / 3, 0.0}, 1e-12, "log_cosh");
}

TEST(FiniteDifference, SoftmaxCrossEntropy) {
  Tensor oneHot = Tensor::f64({3, 4}, {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1});
  Tensor indices = Tensor::i32({3}, {1, 0, 3});
  for (Tensor *labels : {&oneHot, &indices}) {
    Forward f;
    f.kernel = "softmax_cross_entropy";
    f.ins = {Tensor::f64({3, 4}, uniform(12, -2, 2, 111)), *labels};
    f.outShapes = {{3, 4}, {}, {3, 4}};
    f.outIndex = 1;
    std::vector<Tensor> outs = f.run(f.ins);
    expectGradient(outs[2].values(), f.numeric(0, {1.0}),
                   "softmax_cross_entropy logits_grad");
    // Its loss is the from-logits loss.
    KernelConfig logits;
    logits.set("from_logits", int64_t{1});
    Tensor loss = Tensor::f64({});
    Tensor z = f.ins[0];
    RUN_OK(labels == &oneHot ? "categorical_crossentropy"
                             : "sparse_categorical_crossentropy",
           logits, {&z, labels}, {&loss});
    EXPECT_NEAR(outs[1].get(0), loss.get(0), 1e-12);
  }
}

TEST(FiniteDifference, ConcatenateAndSlice) {
  for (int64_t axis : {-1, 1, 0}) {
    Forward f;
    f.kernel = "concatenate";
    f.cfg.set("axis", axis);
    int64_t a = axis < 0 ? 2 : axis;
    std::vector<int64_t> s0 = {2, 3, 2}, s1 = {2, 3, 2};
    s1[a] = 1;
    std::vector<int64_t> out = s0;
    out[a] = s0[a] + 1;
    f.ins = {Tensor::f64(s0, uniform(12, -1, 1, 121)),
             Tensor::f64(s1, uniform(12 / s0[a], -1, 1, 122))};
    f.outShapes = {out};
    std::vector<double> w = f.weights(123);
    KernelConfig s;
    s.set("axis", axis).set("offset", int64_t{0});
    expectGradient(analytic("slice", s, {dyOf(f, w)}, {s0}), f.numeric(0, w),
                   "slice 0");
    s.set("offset", s0[a]);
    expectGradient(analytic("slice", s, {dyOf(f, w)}, {s1}), f.numeric(1, w),
                   "slice 1");
  }
}

TEST(FiniteDifference, FlattenAndReshape) {
  for (std::string op : {"flatten", "reshape"}) {
    Forward f;
    f.kernel = op;
    f.ins = {Tensor::f64({2, 3, 2}, uniform(12, -1, 1, 131))};
    f.outShapes = {op == "flatten" ? std::vector<int64_t>{2, 6}
                                   : std::vector<int64_t>{2, 2, 3}};
    std::vector<double> w = f.weights(132);
    expectGradient(analytic("reshape", {}, {dyOf(f, w)}, {{2, 3, 2}}),
                   f.numeric(0, w), op);
  }
}

TEST(FiniteDifference, Dropout) {
  Forward f;
  f.kernel = "dropout";
  f.cfg.set("rate", 0.3).set("seed", int64_t{5});
  f.ctx.step = 4;
  f.ctx.seed = 77;
  f.ctx.globalRowOffset = 6;
  f.ins = {Tensor::f64({4, 10}, uniform(40, -1, 1, 141))};
  f.outShapes = {{4, 10}};
  std::vector<double> w = f.weights(142);
  expectGradient(
      analytic("dropout_grad", f.cfg, {dyOf(f, w)}, {{4, 10}}, 0, f.ctx),
      f.numeric(0, w), "dropout_grad");
}

TEST(FiniteDifference, RandomImageTransform) {
  // The resampling is linear in the image, so its gradient is the
  // transpose; the draws come from the context, which both share.
  struct Kind {
    std::string name;
    KernelConfig cfg;
    std::vector<int64_t> out;
  };
  std::vector<Kind> kinds;
  auto base = [](std::string kind) {
    KernelConfig cfg;
    cfg.set("kind", kind).set("seed", int64_t{9});
    return cfg;
  };
  kinds.push_back({"flip",
                   base("flip").set("mode", std::string("horizontal")),
                   {3, 5, 4, 2}});
  kinds.push_back({"rotation constant",
                   base("rotation")
                       .set("factor", std::vector<double>{-0.4, 0.4})
                       .set("fill_mode", std::string("constant"))
                       .set("fill_value", 0.5),
                   {3, 5, 4, 2}});
  kinds.push_back(
      {"zoom reflect",
       base("zoom").set("height_factor", std::vector<double>{-0.6, 0.7}),
       {3, 5, 4, 2}});
  kinds.push_back({"translation wrap nearest",
                   base("translation")
                       .set("height_factor", std::vector<double>{-0.5, 0.5})
                       .set("width_factor", std::vector<double>{-0.5, 0.5})
                       .set("fill_mode", std::string("wrap"))
                       .set("interpolation", std::string("nearest")),
                   {3, 5, 4, 2}});
  kinds.push_back({"crop", base("crop"), {3, 3, 2, 2}});
  kinds.push_back({"center_crop", base("center_crop"), {3, 4, 2, 2}});
  for (const Kind &k : kinds) {
    Forward f;
    f.kernel = "random_image_transform";
    f.cfg = k.cfg;
    f.ctx.step = 3;
    f.ctx.seed = 21;
    f.ctx.globalRowOffset = 5;
    f.ins = {Tensor::f64({3, 5, 4, 2}, uniform(120, -1, 1, 161))};
    f.outShapes = {k.out};
    std::vector<double> w = f.weights(162);
    expectGradient(analytic("random_image_transform_grad", f.cfg, {dyOf(f, w)},
                            {{3, 5, 4, 2}}, 0, f.ctx),
                   f.numeric(0, w), k.name);
  }
}

TEST(FiniteDifference, RandomContrast) {
  Forward f;
  f.kernel = "random_contrast";
  // A value range no output reaches: the clip is inactive, the function
  // smooth (RandomContrastClipsAndMasks checks the clipped case).
  f.cfg.set("seed", int64_t{4})
      .set("contrast_range", std::vector<double>{0.3, 1.9})
      .set("value_range", std::vector<double>{-100.0, 100.0});
  f.ctx.step = 2;
  f.ctx.seed = 5;
  f.ctx.globalRowOffset = 1;
  f.ins = {Tensor::f64({2, 3, 4, 2}, uniform(48, -1, 1, 171))};
  f.outShapes = {{2, 3, 4, 2}};
  std::vector<double> w = f.weights(172);
  expectGradient(analytic("random_contrast_grad", f.cfg, {dyOf(f, w), f.ins[0]},
                          {{2, 3, 4, 2}}, 0, f.ctx),
                 f.numeric(0, w), "random_contrast_grad");
}

TEST(FiniteDifference, DropoutWithNoiseShape) {
  // EfficientNet's per-sample drop and SpatialDropout2D's per channel.
  for (std::vector<int64_t> noise :
       {std::vector<int64_t>{1, 1, 1}, std::vector<int64_t>{1, 1, 4}}) {
    Forward f;
    f.kernel = "dropout";
    f.cfg.set("rate", 0.4).set("seed", int64_t{5}).set("noise_shape", noise);
    f.ctx.step = 4;
    f.ctx.seed = 77;
    f.ctx.globalRowOffset = 6;
    f.ins = {Tensor::f64({3, 2, 3, 4}, uniform(72, -1, 1, 143))};
    f.outShapes = {{3, 2, 3, 4}};
    std::vector<double> w = f.weights(144);
    expectGradient(
        analytic("dropout_grad", f.cfg, {dyOf(f, w)}, {{3, 2, 3, 4}}, 0, f.ctx),
        f.numeric(0, w), "dropout_grad with a noise shape");
  }
}

TEST(FiniteDifference, BroadcastAndSumTo) {
  // The gradient of broadcast is sum_to (and, linear, the other way round).
  Forward b;
  b.kernel = "broadcast";
  b.ins = {Tensor::f64({2, 1, 1, 3}, uniform(6, -1, 1, 145))};
  b.outShapes = {{2, 4, 5, 3}};
  std::vector<double> w = b.weights(146);
  expectGradient(analytic("sum_to", {}, {dyOf(b, w)}, {{2, 1, 1, 3}}),
                 b.numeric(0, w), "broadcast");
  Forward s;
  s.kernel = "sum_to";
  s.ins = {Tensor::f64({2, 3, 4}, uniform(24, -1, 1, 147))};
  s.outShapes = {{2, 1, 4}};
  w = s.weights(148);
  expectGradient(analytic("broadcast", {}, {dyOf(s, w)}, {{2, 3, 4}}),
                 s.numeric(0, w), "sum_to");
}

TEST(FiniteDifference, ChannelScaleShift) {
  // Its own gradient, with the scale and no offset.
  Forward f;
  f.kernel = "channel_scale_shift";
  f.cfg.set("scale", std::vector<double>{1.5, -0.5, 2.0})
      .set("offset", std::vector<double>{0.1, 0.0, -0.3});
  f.ins = {Tensor::f64({2, 4, 3}, uniform(24, -1, 1, 152))};
  f.outShapes = {{2, 4, 3}};
  std::vector<double> w = f.weights(153);
  KernelConfig back;
  back.set("scale", std::vector<double>{1.5, -0.5, 2.0})
      .set("offset", std::vector<double>{0.0, 0.0, 0.0});
  expectGradient(
      analytic("channel_scale_shift", back, {dyOf(f, w)}, {{2, 4, 3}}),
      f.numeric(0, w), "channel_scale_shift");
}

TEST(FiniteDifference, Normalize) {
  // dx = normalize(dy) with the variance and no mean; one variance under
  // epsilon, where the divisor is epsilon.
  Forward f;
  f.kernel = "normalize";
  f.cfg.set("epsilon", 1e-3);
  Tensor variance = Tensor::f64({4}, {0.5, 1e-8, 2.0, 1.0});
  f.ins = {Tensor::f64({2, 3, 4}, uniform(24, -1, 1, 149)), variance,
           Tensor::f64({4}, uniform(4, -1, 1, 150))};
  f.outShapes = {{2, 3, 4}};
  std::vector<double> w = f.weights(151);
  expectGradient(
      analytic("normalize", f.cfg, {dyOf(f, w), variance}, {{2, 3, 4}}),
      f.numeric(0, w), "normalize");
}

TEST(FiniteDifference, FusedFormsMatchTheirParts) {
  // fused_dense and fused_conv2d have no gradient kernels of their own; the
  // training graph differentiates their parts. Check the fused forward's
  // gradient equals the composed gradient kernels' (relu epilogue).
  Forward f;
  f.kernel = "fused_dense";
  f.cfg.set("activation", std::string("tanh"));
  f.ins = {Tensor::f64({3, 4}, uniform(12, -1, 1, 151)),
           Tensor::f64({4, 2}, uniform(8, -1, 1, 152)),
           Tensor::f64({2}, uniform(2, -1, 1, 153))};
  f.outShapes = {{3, 2}};
  std::vector<double> w = f.weights(154);
  Tensor y = f.run(f.ins)[0];
  Tensor dz =
      Tensor::f64({3, 2}, analytic("tanh_grad", {}, {dyOf(f, w), y}, {{3, 2}}));
  expectGradient(analytic("dense_grad_input", {}, {dz, f.ins[1]}, {{3, 4}}),
                 f.numeric(0, w), "fused_dense input");
  expectGradient(analytic("dense_grad_kernel", {}, {f.ins[0], dz}, {{4, 2}}),
                 f.numeric(1, w), "fused_dense kernel");
  expectGradient(analytic("bias_add_grad", {}, {dz}, {{2}}), f.numeric(2, w),
                 "fused_dense bias");
}

} // namespace
