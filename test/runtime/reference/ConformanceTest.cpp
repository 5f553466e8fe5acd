//===- ConformanceTest.cpp - every backend against the reference ----------===//
//
// The cases of ConformanceCases.h on every host-memory backend: a backend
// passes when each kernel it registers writes what the reference writes on
// the same case, within a float tolerance. The CUDA backend runs the same
// cases from test/runtime/cuda.
//
//===----------------------------------------------------------------------===//

#include "ConformanceCases.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

class Conformance : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    reference::registerReferenceKernels();
    cpu::registerCpuKernels();
  }
};

TEST_P(Conformance, EveryKernelHasACase) {
  std::map<std::string, int> covered;
  for (const Case &c : allCases())
    ++covered[c.kernel];
  // Graph op names only: tests elsewhere register `test.*` kernels.
  for (const std::string &name : KernelRegistry::global().names(GetParam()))
    if (name.find('.') == std::string::npos) {
      EXPECT_TRUE(covered.count(name)) << "no conformance case for " << name;
    }
  for (const std::string &name : reference::referenceKernelNames())
    EXPECT_TRUE(covered.count(name)) << "no conformance case for " << name;
}

/// The reference is the oracle: it is checked against formulas and finite
/// differences (ReferenceKernelsTest, FiniteDifferenceTest), not against
/// itself, so this suite runs on the other backends only.
class MatchesReference : public Conformance {};

TEST_P(MatchesReference, OnEveryCase) {
  Backend backend = GetParam();
  int compared = 0;
  for (const Case &c : allCases()) {
    if (!KernelRegistry::global().has(c.kernel, backend))
      continue; // a backend may not have every kernel yet
    std::vector<Tensor> expected = runCase(c, Backend::reference);
    std::vector<Tensor> actual = runCase(c, backend);
    for (size_t o = 0; o < expected.size(); ++o) {
      if (isWorkspaceOutput(c, o))
        continue;
      std::vector<double> e = expected[o].values(), a = actual[o].values();
      // The reference accumulates in double and rounds once; a backend
      // accumulating in f32 is off by about sqrt(L) * 2^-24 times the terms'
      // magnitude over a reduction of length L. The longest here are a few
      // hundred terms (3x3x24 conv taps) below 1 in magnitude: ~1e-6, so
      // one bound of 1e-5 serves every host backend.
      // An infinity (a loss-scaled step's norm) must be the same one.
      for (size_t k = 0; k < e.size(); ++k)
        if (std::isinf(e[k]))
          EXPECT_EQ(a[k], e[k]) << c.kernel << " (" << c.label << ") output "
                                << o << " element " << k;
        else
          EXPECT_NEAR(a[k], e[k], 1e-5 * std::max(1.0, std::abs(e[k])))
              << c.kernel << " (" << c.label << ") output " << o << " element "
              << k;
    }
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

/// batch_norm_train and batch_norm_grad with a row mask (a short batch's
/// metric weights). Not in allCases(): the cuda kernels do not mask yet
/// (PoolNormKernels.cu; owed to a GPU session).
TEST_P(MatchesReference, BatchNormWithARowMask) {
  Backend backend = GetParam();
  KernelConfig bn;
  bn.set("epsilon", 1e-3).set("momentum", 0.9).set("has_row_mask", int64_t{1});
  KernelConfig affine = bn, bare = bn;
  affine.set("has_gamma", int64_t{1}).set("has_beta", int64_t{1});
  bare.set("has_gamma", int64_t{0}).set("has_beta", int64_t{0});
  KernelConfig unbiased = affine;
  unbiased.set("unbiased_moving_variance", int64_t{1});
  KernelConfig gradGamma, gradBare;
  gradGamma.set("has_gamma", int64_t{1}).set("has_row_mask", int64_t{1});
  gradBare.set("has_gamma", int64_t{0}).set("has_row_mask", int64_t{1});
  Tensor x = rnd({4, 3, 4, 16}, 84, -2, 3), dy = rnd({4, 3, 4, 16}, 88);
  std::vector<std::vector<int64_t>> trainOuts = {
      {4, 3, 4, 16}, {16}, {16}, {16}, {16}};
  std::vector<std::vector<int64_t>> gradOuts = {{4, 3, 4, 16}, {16}, {16}};
  std::vector<Case> cases;
  // A short batch of 3 of 4 (weights 4/3), a mask that is not a prefix,
  // every row kept at twice the weight (replica 0 of 2 holding a short
  // batch), and no row kept (replica 1).
  double third = 4.0 / 3.0;
  std::vector<std::pair<std::string, std::vector<double>>> masks = {
      {"short batch", {third, third, third, 0}},
      {"scattered", {0, 2, 0, 2}},
      {"every row, weight 2", {2, 2, 2, 2}},
      {"no row", {0, 0, 0, 0}}};
  for (const auto &[label, values] : masks) {
    Tensor mask = Tensor::f32({4}, values);
    cases.push_back({"batch_norm_train",
                     label + ", gamma beta",
                     affine,
                     {x, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 87),
                      rnd({16}, 90), mask},
                     trainOuts});
    cases.push_back({"batch_norm_train",
                     label + ", bare, unbiased",
                     unbiased,
                     {x, rnd({16}, 85), rnd({16}, 86, 0.5, 2), rnd({16}, 87),
                      rnd({16}, 90), mask},
                     trainOuts});
    cases.push_back({"batch_norm_train",
                     label + ", bare",
                     bare,
                     {x, rnd({16}, 85), rnd({16}, 86, 0.5, 2), mask},
                     trainOuts});
    cases.push_back(
        {"batch_norm_grad",
         label + ", gamma",
         gradGamma,
         {dy, x, rnd({16}, 85), rnd({16}, 89, 0.5, 2), rnd({16}, 87), mask},
         gradOuts});
    cases.push_back({"batch_norm_grad",
                     label + ", no gamma",
                     gradBare,
                     {dy, x, rnd({16}, 85), rnd({16}, 89, 0.5, 2), mask},
                     gradOuts});
  }
  for (const Case &c : cases) {
    std::vector<Tensor> expected = runCase(c, Backend::reference);
    std::vector<Tensor> actual = runCase(c, backend);
    for (size_t o = 0; o < expected.size(); ++o) {
      std::vector<double> e = expected[o].values(), a = actual[o].values();
      for (size_t k = 0; k < e.size(); ++k)
        EXPECT_NEAR(a[k], e[k], 1e-5 * std::max(1.0, std::abs(e[k])))
            << c.kernel << " (" << c.label << ") output " << o << " element "
            << k;
    }
  }
}

/// A deep stack of masked batch norms (ResNet's epsilon) over a batch that
/// keeps one row or none: the left-out rows stay beta, bounded, where
/// normalising them with statistics they are not in multiplied them by
/// up to 1/sqrt(epsilon) a layer, past float's range by layer 20.
TEST_P(Conformance, MaskedBatchNormsKeepTheLeftOutRowsBounded) {
  Backend backend = GetParam();
  KernelConfig cfg;
  cfg.set("epsilon", 1e-5).set("momentum", 0.9).set("has_row_mask", int64_t{1});
  cfg.set("has_gamma", int64_t{1}).set("has_beta", int64_t{1});
  for (const std::vector<double> &mask :
       {std::vector<double>{8, 0, 0, 0, 0, 0, 0, 0},
        std::vector<double>{0, 0, 0, 0, 0, 0, 0, 0}}) {
    Tensor x = rnd({8, 16}, 91, -2, 3);
    Tensor m = Tensor::f32({8}, mask);
    Tensor mean = rnd({16}, 92), var = rnd({16}, 93, 0.5, 2);
    Tensor gamma = rnd({16}, 94, 0.5, 1.5), beta = rnd({16}, 95);
    for (int layer = 0; layer < 40; ++layer) {
      Tensor y = Tensor::f32({8, 16}), bm = Tensor::f32({16}),
             bis = Tensor::f32({16}), nm = Tensor::f32({16}),
             nv = Tensor::f32({16});
      Status s =
          launch("batch_norm_train", cfg, {&x, &mean, &var, &gamma, &beta, &m},
                 {&y, &bm, &bis, &nm, &nv}, {}, backend);
      ASSERT_TRUE(s.isOk()) << s.message();
      x = y;
    }
    std::vector<double> out = x.values(), b = beta.values();
    for (size_t i = 16; i < out.size(); ++i)
      EXPECT_EQ(out[i], b[i % 16]) << "element " << i;
    for (double v : out)
      EXPECT_TRUE(std::isfinite(v));
  }
}

TEST_P(Conformance, RefusesMismatchedOperandsNamingTheKernel) {
  Backend backend = GetParam();
  KernelConfig conv = window("valid", {1, 1}, {1, 1});
  KernelConfig swish = conv;
  swish.set("activation", std::string("swish"));
  KernelConfig pool = poolConfig("valid", 2, 2);
  KernelConfig relu;
  relu.set("activation", std::string("relu"));
  const Case bad[] = {
      {"conv2d",
       "kernel takes 2 channels, input has 3",
       conv,
       {rnd({1, 5, 5, 3}, 1), rnd({3, 3, 2, 4}, 2)},
       {{1, 3, 3, 4}},
       {}},
      {"conv2d_grad_kernel",
       "output_grad of the wrong size",
       conv,
       {rnd({1, 5, 5, 3}, 1), rnd({1, 2, 3, 4}, 2)},
       {{3, 3, 3, 4}},
       {}},
      {"fused_conv2d",
       "unknown activation",
       swish,
       {rnd({1, 5, 5, 3}, 1), rnd({3, 3, 3, 4}, 2)},
       {{1, 3, 3, 4}},
       {}},
      {"fused_dense",
       "bias of 4 for 5 units",
       relu,
       {rnd({3, 4}, 1), rnd({4, 5}, 2), rnd({4}, 3)},
       {{3, 5}},
       {}},
      {"max_pool2d",
       "pooled shape",
       pool,
       {rnd({1, 6, 6, 2}, 1)},
       {{1, 2, 3, 2}},
       {}},
      {"batch_norm_train",
       "statistics of 2 for 3 channels",
       {},
       {rnd({4, 3}, 1), rnd({2}, 2), rnd({2}, 3)},
       {{4, 3}, {3}, {3}, {3}, {3}},
       {}},
  };
  for (Case c : bad) {
    if (!KernelRegistry::global().has(c.kernel, backend))
      continue;
    std::vector<Tensor> outs;
    for (const auto &shape : c.outs)
      outs.push_back(Tensor::f32(shape));
    std::vector<Tensor *> in, out;
    for (Tensor &t : c.ins)
      in.push_back(&t);
    for (Tensor &t : outs)
      out.push_back(&t);
    Status s = launch(c.kernel, c.cfg, in, out, c.ctx, backend);
    EXPECT_FALSE(s.isOk()) << c.kernel << " (" << c.label << ")";
    EXPECT_EQ(s.message().rfind(c.kernel + ": ", 0), 0u)
        << c.kernel << " (" << c.label << "): " << s.message();
  }
}

/// pointwise_loss refuses a kind it does not know, an option of another
/// kind and operands that do not fit, with the same words on every
/// backend (the reference when it runs, the others when they
/// instantiate).
TEST_P(Conformance, PointwiseLossRefusesBadLaunches) {
  Backend backend = GetParam();
  const std::string kinds =
      " (mean_squared_error, mean_absolute_error, "
      "mean_absolute_percentage_error, mean_squared_logarithmic_error, huber, "
      "log_cosh, binary_crossentropy, poisson, kl_divergence, hinge, "
      "squared_hinge, binary_accuracy, binary_focal_crossentropy, "
      "categorical_focal_crossentropy, cosine_similarity, categorical_hinge)";
  auto kind = [](std::string name) {
    KernelConfig c;
    c.set("kind", name);
    return c;
  };
  KernelConfig mseDelta = kind("mean_squared_error");
  mseDelta.set("delta", 1.5);
  KernelConfig huberLogits = kind("huber");
  huberLogits.set("from_logits", int64_t{1});
  KernelConfig hingeSmooth = kind("hinge");
  hingeSmooth.set("label_smoothing", 0.1);
  KernelConfig hingeGamma = kind("categorical_hinge");
  hingeGamma.set("gamma", 2.0);
  KernelConfig diceBeta = kind("dice");
  diceBeta.set("beta", 0.5);
  struct Bad {
    std::string kernel;
    KernelConfig cfg;
    std::vector<std::vector<int64_t>> ins, outs;
    std::string message; // the whole message; "" for the kernel's name only
  };
  const Bad bad[] = {
      {"pointwise_loss",
       kind("cross_entropy"),
       {{2, 3}, {2, 3}},
       {{}},
       "pointwise_loss: kind 'cross_entropy' is not an element-wise loss" +
           kinds},
      {"pointwise_loss_grad",
       {},
       {{2, 3}, {2, 3}},
       {{2, 3}},
       "pointwise_loss_grad: needs a kind" + kinds},
      {"pointwise_loss",
       kind("mean_squared_error"),
       {{2, 3}, {2, 4}},
       {{}},
       "pointwise_loss: targets [2, 4] do not match predictions [2, 3]"},
      {"pointwise_loss_grad",
       kind("poisson"),
       {{2, 3}, {3, 2}},
       {{2, 3}},
       "pointwise_loss_grad: targets [3, 2] do not match predictions [2, 3]"},
      {"pointwise_loss",
       mseDelta,
       {{2, 3}, {2, 3}},
       {{}},
       "pointwise_loss: delta is huber's option, not mean_squared_error's"},
      {"pointwise_loss_grad",
       huberLogits,
       {{2, 3}, {2, 3}},
       {{2, 3}},
       "pointwise_loss_grad: from_logits is binary_crossentropy's and the "
       "focal cross-entropies' option, not huber's"},
      {"pointwise_loss",
       hingeSmooth,
       {{2, 3}, {2, 3}},
       {{}},
       "pointwise_loss: label_smoothing is binary_crossentropy's and the "
       "focal cross-entropies' option, not hinge's"},
      {"pointwise_loss",
       hingeGamma,
       {{2, 3}, {2, 3}},
       {{}},
       "pointwise_loss: gamma is the focal cross-entropies' option, not "
       "categorical_hinge's"},
      {"overlap_loss",
       kind("huber"),
       {{3}},
       {{}},
       "overlap_loss: needs kind dice or tversky, got 'huber'"},
      {"overlap_loss_grad",
       diceBeta,
       {{2, 3}, {3}},
       {{2, 3}},
       "overlap_loss_grad: alpha and beta are tversky's options, not dice's"},
      {"overlap_sums",
       {},
       {{2, 3}, {3, 2}},
       {{3}},
       "overlap_sums: targets [3, 2] do not match predictions [2, 3]"},
      {"pointwise_loss_grad",
       kind("huber"),
       {{2, 3}, {2, 3}},
       {{3, 2}},
       "pointwise_loss_grad: predictions_grad [3, 2] does not match "
       "predictions [2, 3]"},
      {"pointwise_loss",
       kind("huber"),
       {{2, 3}, {2, 3}},
       {{2}},
       "pointwise_loss: the loss must be a scalar, got [2]"},
      {"pointwise_loss",
       kind("huber"),
       {{}, {}},
       {{}},
       "pointwise_loss: needs predictions [B, ..., K], got a scalar"},
      {"pointwise_loss", kind("hinge"), {{2, 3}, {2, 3}, {3}}, {{}}, ""},
      {"pointwise_loss_grad",
       kind("hinge"),
       {{2, 3}, {2, 3}, {3}},
       {{2, 3}},
       ""},
  };
  for (const Bad &c : bad) {
    std::vector<Tensor> ins, outs;
    unsigned seed = 1;
    for (const auto &shape : c.ins)
      ins.push_back(rnd(shape, seed++));
    for (const auto &shape : c.outs)
      outs.push_back(Tensor::f32(shape));
    std::vector<Tensor *> in, out;
    for (Tensor &t : ins)
      in.push_back(&t);
    for (Tensor &t : outs)
      out.push_back(&t);
    Status s = launch(c.kernel, c.cfg, in, out, {}, backend);
    ASSERT_FALSE(s.isOk()) << c.kernel << " accepted: " << c.message;
    if (c.message.empty())
      EXPECT_EQ(s.message().rfind(c.kernel + ": ", 0), 0u) << s.message();
    else
      EXPECT_EQ(s.message(), c.message);
  }
}

/// filter_layout is hwio or ohwi: any other value is refused by the five
/// convolution kernels, naming the kernel and the value.
TEST_P(Conformance, RefusesAnUnknownFilterLayout) {
  Backend backend = GetParam();
  KernelConfig conv = window("valid", {1, 1}, {1, 1});
  conv.set("filter_layout", std::string("oihw"));
  KernelConfig pool = conv;
  pool.set("pool_size", std::vector<int64_t>{2, 2})
      .set("pool_strides", std::vector<int64_t>{2, 2})
      .set("pool_padding", std::string("valid"));
  // A kernel that fits read as HWIO or OHWI: only the layout is wrong.
  std::vector<int64_t> x = {1, 5, 5, 3}, k = {3, 3, 3, 3}, y = {1, 3, 3, 3};
  const Case bad[] = {
      {"conv2d", "", conv, {rnd(x, 1), rnd(k, 2)}, {y}, {}},
      {"fused_conv2d", "", conv, {rnd(x, 1), rnd(k, 2), rnd({3}, 3)}, {y}, {}},
      {"fused_conv2d_pool",
       "",
       pool,
       {rnd(x, 1), rnd(k, 2)},
       {{1, 1, 1, 3}, {1, 1, 1, 3}},
       {},
       {graph::plan::DType::f32, graph::plan::DType::i32}},
      {"conv2d_grad_input", "", conv, {rnd(y, 4), rnd(k, 2)}, {x}, {}},
      {"conv2d_grad_kernel", "", conv, {rnd(x, 1), rnd(y, 4)}, {k}, {}},
  };
  int refused = 0;
  for (Case c : bad) {
    if (!KernelRegistry::global().has(c.kernel, backend))
      continue;
    std::vector<Tensor> outs;
    Status s = launchCase(c, backend, outs);
    EXPECT_FALSE(s.isOk()) << c.kernel;
    EXPECT_EQ(s.message(),
              c.kernel + ": unknown filter_layout 'oihw' (hwio or ohwi)");
    ++refused;
  }
  EXPECT_EQ(refused, 5);
}

/// Inference-mode batch_norm's input gradient (a frozen Keras
/// BatchNormalization) against its formula, dx = dy * gamma / sqrt(var +
/// eps) per channel of the last axis, written out here rather than taken
/// from the reference.
TEST_P(Conformance, BatchNormInferenceGradMatchesItsFormula) {
  Backend backend = GetParam();
  const double eps = 1e-3;
  KernelConfig cfg;
  cfg.set("epsilon", eps);
  for (bool withGamma : {true, false}) {
    Tensor dy = rnd({3, 2, 5, 7}, 11, -2, 2);
    Tensor var = rnd({7}, 12, 0.01, 3), gamma = rnd({7}, 13, -2, 2);
    Tensor dx = Tensor::f32({3, 2, 5, 7});
    std::vector<Tensor *> ins = {&dy, &var};
    if (withGamma)
      ins.push_back(&gamma);
    Status s =
        launch("batch_norm_inference_grad", cfg, ins, {&dx}, {}, backend);
    ASSERT_TRUE(s.isOk()) << s.message();
    std::vector<double> d = dy.values(), v = var.values(), g = gamma.values(),
                        got = dx.values();
    for (size_t i = 0; i < d.size(); ++i) {
      size_t ch = i % 7;
      double want = d[i] * (withGamma ? g[ch] : 1.0) / std::sqrt(v[ch] + eps);
      EXPECT_NEAR(got[i], want, 1e-6 * std::max(1.0, std::abs(want)))
          << (withGamma ? "gamma" : "no gamma") << " element " << i;
    }
  }
}

std::string backendLabel(const ::testing::TestParamInfo<Backend> &info) {
  return backendName(info.param);
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values(Backend::reference, Backend::cpu),
                         backendLabel);
INSTANTIATE_TEST_SUITE_P(Backends, MatchesReference,
                         ::testing::Values(Backend::cpu), backendLabel);

} // namespace
