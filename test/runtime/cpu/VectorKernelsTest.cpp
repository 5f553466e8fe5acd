//===- VectorKernelsTest.cpp - cpu vector kernels against the reference ---===//
//
// What the conformance cases (small tensors, one launch each) leave out:
// sizes that cross the tile and vector-width boundaries and take the OpenMP
// path, every form an elementwise body takes, extreme and NaN arguments,
// dropout masks bit for bit, fifty optimizer steps run through one kernel
// instance, in-place launches, and the factories' errors. Every expected
// value comes from the reference backend on the same inputs.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

int64_t count(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Element counts around the vector width (8), the tile (512) and the
/// parallel threshold (32768).
const int64_t kSizes[] = {1, 7, 8, 9, 511, 512, 513, 40003};

class CpuVectorKernels : public ::testing::Test {
protected:
  void SetUp() override {
    reference::registerReferenceKernels();
    cpu::registerCpuKernels();
  }
};

/// One kernel instance, as the executor makes it: instantiated once for its
/// buffers, then run any number of times.
class Instance {
public:
  Status make(const std::string &kernel, Backend backend,
              const KernelConfig &config, std::vector<Tensor *> in,
              std::vector<Tensor *> out, const KernelContext &ctx = {}) {
    cfg = config;
    for (Tensor *t : in)
      ins.push_back(t->ref());
    for (Tensor *t : out)
      outs.push_back(t->ref());
    return KernelRegistry::global().instantiate(kernel, backend, ctx, cfg, ins,
                                                outs, fn);
  }
  Status run(const KernelContext &ctx = {}) { return fn(ctx, cfg, ins, outs); }

private:
  KernelFn fn;
  KernelConfig cfg;
  std::vector<TensorRef> ins, outs;
};

/// The error `kernel` gives at instantiation ("" when it accepts).
std::string factoryError(const std::string &kernel, const KernelConfig &cfg,
                         std::vector<Tensor *> ins,
                         std::vector<Tensor *> outs) {
  Instance instance;
  Status s = instance.make(kernel, Backend::cpu, cfg, ins, outs);
  return s.isOk() ? "" : s.message();
}

struct Outputs {
  std::vector<Tensor> expected, actual;
};

/// Runs `kernel` on the reference and on cpu, each on its own copy of
/// `ins`, into f32 outputs of `outShapes`.
Outputs runBoth(const std::string &kernel, const KernelConfig &cfg,
                const std::vector<Tensor> &ins,
                const std::vector<std::vector<int64_t>> &outShapes,
                const KernelContext &ctx = {}) {
  Outputs result;
  for (Backend backend : {Backend::reference, Backend::cpu}) {
    std::vector<Tensor> in = ins, out;
    for (const auto &shape : outShapes)
      out.push_back(Tensor::f32(shape));
    std::vector<Tensor *> inPtrs, outPtrs;
    for (Tensor &t : in)
      inPtrs.push_back(&t);
    for (Tensor &t : out)
      outPtrs.push_back(&t);
    Status s = launch(kernel, cfg, inPtrs, outPtrs, ctx, backend);
    EXPECT_TRUE(s.isOk()) << kernel << " on " << backendName(backend) << ": "
                          << s.message();
    (backend == Backend::cpu ? result.actual : result.expected) =
        std::move(out);
  }
  return result;
}

/// |actual - expected| <= tol * max(1, |expected|) everywhere, NaN where
/// the reference has NaN; reports the first mismatch and how many there are.
void expectMatches(const Tensor &actual, const Tensor &expected, double tol,
                   const std::string &what) {
  std::vector<double> a = actual.values(), e = expected.values();
  ASSERT_EQ(a.size(), e.size()) << what;
  int64_t bad = 0, first = -1;
  for (size_t k = 0; k < a.size(); ++k) {
    bool ok = std::isnan(e[k]) ? std::isnan(a[k])
                               : a[k] == e[k] || // infinities
                                     std::abs(a[k] - e[k]) <=
                                         tol * std::max(1.0, std::abs(e[k]));
    if (!ok && bad++ == 0)
      first = static_cast<int64_t>(k);
  }
  if (bad)
    ADD_FAILURE() << what << ": " << bad << " of " << a.size()
                  << " elements differ; first at " << first << ": cpu "
                  << a[first] << ", reference " << e[first];
}

void expectAllMatch(const Outputs &o, double tol, const std::string &what) {
  ASSERT_EQ(o.actual.size(), o.expected.size());
  for (size_t k = 0; k < o.actual.size(); ++k)
    expectMatches(o.actual[k], o.expected[k], tol,
                  what + " output " + std::to_string(k));
}

KernelConfig withFloat(const std::string &name, double value) {
  KernelConfig cfg;
  cfg.set(name, value);
  return cfg;
}

KernelConfig approximate() {
  KernelConfig cfg;
  cfg.set("approximate", int64_t{1});
  return cfg;
}

// The polynomial exp, tanh and erf are accurate to a few float ulps
// (erf: 1.5e-7 absolute), so one activation is held to 1e-6 of
// max(1, |reference|), about three times the worst error measured (gelu's
// gradient, 3.6e-7) and ten times tighter than the conformance suite. A
// body rounds to float after every statement where the reference does not:
// the nine-statement gradient chain measured 8e-7, so bodies get 2e-6.
constexpr double kActivationTol = 1e-6;
constexpr double kBodyTol = 2e-6;

//===----------------------------------------------------------------------===//
// Activations, add, elementwise bodies
//===----------------------------------------------------------------------===//

struct Activation {
  std::string op;
  KernelConfig cfg;
};

std::vector<Activation> activations() {
  return {{"relu", {}},
          {"sigmoid", {}},
          {"tanh", {}},
          {"elu", {}},
          {"elu", withFloat("alpha", 0.3)},
          {"leaky_relu", {}},
          {"leaky_relu", withFloat("alpha", 0.05)},
          {"gelu", {}},
          {"gelu", approximate()}};
}

TEST_F(CpuVectorKernels, ActivationsMatchTheReferenceAtEverySize) {
  for (const Activation &a : activations())
    for (int64_t n : kSizes) {
      std::string what = a.op + " n=" + std::to_string(n);
      Tensor x = Tensor::f32({n}, uniform(n, -8, 8, 1));
      expectAllMatch(runBoth(a.op, a.cfg, {x}, {{n}}), kActivationTol, what);
      Tensor dy = Tensor::f32({n}, uniform(n, -2, 2, 2));
      expectAllMatch(runBoth(a.op + "_grad", a.cfg, {dy, x}, {{n}}),
                     kActivationTol, what + " grad");
    }
}

TEST_F(CpuVectorKernels, ActivationsAtExtremeAndNaNArguments) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> x = {-inf, -1e4,    -100,    -88.5, -87.2,  -30, -9.5,
                           -1,   -0.6251, -0.6249, -1e-3, -1e-30, 0,   1e-30,
                           1e-3, 0.6249,  0.6251,  1,     9.5,    30,  87.5,
                           88.5, 100,     1e4,     inf,   nan};
  int64_t n = static_cast<int64_t>(x.size());
  for (const Activation &a : activations()) {
    // The reference's gelu(-inf) is -inf * 0, NaN: a value no one relies
    // on, where the float forms give -inf or NaN.
    std::vector<double> finite = x;
    if (a.op == "gelu")
      finite.front() = 0.0;
    Tensor in = Tensor::f32({n}, a.op == "gelu" ? finite : x);
    expectAllMatch(runBoth(a.op, a.cfg, {in}, {{n}}), kActivationTol,
                   a.op + " at extremes");
  }
  // Gradients from the forward's saved value, at finite extremes (the
  // reference's inf * 0 forms are NaN where a float kernel may not be).
  std::vector<double> saved = {-100, -88.5, -30, -1,   -1e-3, 0,
                               1e-3, 1,     30,  88.5, 100,   nan};
  int64_t m = static_cast<int64_t>(saved.size());
  for (const Activation &a : activations()) {
    Tensor s = Tensor::f32({m}, saved);
    Tensor dy = Tensor::f32({m}, uniform(m, -2, 2, 3));
    expectAllMatch(runBoth(a.op + "_grad", a.cfg, {dy, s}, {{m}}),
                   kActivationTol, a.op + "_grad at extremes");
  }
}

TEST_F(CpuVectorKernels, AddSumsAnyNumberOfInputs) {
  for (int64_t n : kSizes)
    for (int inputs : {1, 2, 3, 5}) {
      std::vector<Tensor> ins;
      for (int k = 0; k < inputs; ++k)
        ins.push_back(Tensor::f32({n}, uniform(n, -4, 4, 10 + k)));
      expectAllMatch(runBoth("add", {}, ins, {{n}}), 1e-6,
                     "add of " + std::to_string(inputs) +
                         " n=" + std::to_string(n));
    }
}

struct Body {
  std::string text;
  int inputs;
};

std::vector<Body> bodies() {
  return {
      {"relu(a0) -> t0; yield t0", 1},
      // Every forward op, with and without attributes.
      {"sigmoid(a0) -> t0; tanh(t0) -> t1; elu(a0) {alpha=0.5} -> t2; "
       "leaky_relu(t2) {alpha=0.1} -> t3; gelu(t3) -> t4; "
       "gelu(a0) {approximate=true} -> t5; elu(t5) -> t6; "
       "leaky_relu(t6) -> t7; add(t1, t4, t7) -> t8; yield t8",
       1},
      // Every gradient op, reading inputs and temporaries.
      {"relu_grad(a0, a1) -> t0; sigmoid_grad(t0, a2) -> t1; "
       "tanh_grad(t1, a2) -> t2; elu_grad(t2, a1) {alpha=2.0} -> t3; "
       "elu_grad(t3, a2) -> t4; leaky_relu_grad(t4, a1) {alpha=0.3} -> t5; "
       "leaky_relu_grad(t5, a2) -> t6; gelu_grad(t6, a1) -> t7; "
       "gelu_grad(t7, a2) {approximate=1} -> t8; yield t8",
       3},
      {"add(a0, a1, a2, a3) -> t0; yield t0", 4},
      {"add(a0, a1) -> t0; add(t0, a0, t0) -> t1; relu(t1) -> t2; yield t2", 2},
      // The result is not the last statement.
      {"tanh(a0) -> t0; relu(t0) -> t1; yield t0", 1},
      // The result is an input; a launch input the body never reads.
      {"relu(a0) -> t0; yield a1", 3},
      // The reference's worked example (docs/compiler-ir.md).
      {"add(a0, a1) -> t0; leaky_relu(t0) {alpha=0.2} -> t1; yield t1", 2},
  };
}

TEST_F(CpuVectorKernels, ElementwiseBodiesMatchTheReference) {
  for (const Body &body : bodies())
    for (int64_t n : {int64_t{1}, int64_t{513}, int64_t{40003}}) {
      KernelConfig cfg;
      cfg.set("body", body.text);
      std::vector<Tensor> ins;
      for (int k = 0; k < body.inputs; ++k)
        ins.push_back(Tensor::f32({n}, uniform(n, -3, 3, 20 + k)));
      expectAllMatch(runBoth("elementwise", cfg, ins, {{n}}), kBodyTol,
                     "'" + body.text + "' n=" + std::to_string(n));
    }
}

/// The output may be an input's buffer: each element is read before it is
/// written, also by a sum whose first operand is not the aliased one.
TEST_F(CpuVectorKernels, ElementwiseInPlace) {
  for (const std::string text :
       {"tanh(a0) -> t0; relu_grad(a1, t0) -> t1; yield t1",
        "add(a1, a2, a0) -> t0; yield t0",
        "relu(a1) -> t0; add(t0, a2, a0) -> t1; yield t1",
        "relu(a0) -> t0; yield a1"}) {
    int64_t n = 40003;
    KernelConfig cfg;
    cfg.set("body", text);
    std::vector<Tensor> ins;
    for (int k = 0; k < 3; ++k)
      ins.push_back(Tensor::f32({n}, uniform(n, -3, 3, 30 + k)));
    Outputs separate = runBoth("elementwise", cfg, ins, {{n}});
    Tensor a0 = ins[0], a1 = ins[1], a2 = ins[2];
    RUN_OK("elementwise", cfg, {&a0, &a1, &a2}, {&a0}, {}, Backend::cpu);
    expectMatches(a0, separate.expected[0], kBodyTol, "in place: " + text);
  }
}

TEST_F(CpuVectorKernels, ElementwiseRejectsBadBodiesAtInstantiation) {
  Tensor x = Tensor::f32({4}), y = Tensor::f32({4});
  KernelConfig bogus;
  bogus.set("body", std::string("softplus(a0) -> t0; yield t0"));
  EXPECT_EQ(factoryError("elementwise", bogus, {&x}, {&y}),
            "elementwise: body: op 'softplus' cannot appear in an "
            "elementwise body");
  KernelConfig missing;
  missing.set("body", std::string("add(a0, a2) -> t0; yield t0"));
  EXPECT_EQ(factoryError("elementwise", missing, {&x}, {&y}),
            "elementwise: body reads a2 but the launch has 1 inputs");
  KernelConfig relu;
  relu.set("body", std::string("relu(a0) -> t0; yield t0"));
  Tensor shorter = Tensor::f32({3});
  EXPECT_EQ(factoryError("elementwise", relu, {&x}, {&shorter}),
            "elementwise: input 0 [4] differs in size from the output [3]");
  Tensor doubles = Tensor::f64({4});
  EXPECT_EQ(factoryError("relu", {}, {&doubles}, {&y}),
            "relu: input 0 is f64, expected f32 (the cpu backend computes "
            "in f32 only)");
}

//===----------------------------------------------------------------------===//
// bias_add, bias_add_grad
//===----------------------------------------------------------------------===//

/// Row counts and channel counts of the seed model and around the kernels'
/// 64-float super-rows (C = 10 takes 7 rows per super-row, C = 100 one).
const std::vector<std::vector<int64_t>> kBiasShapes = {
    {256, 26, 26, 32}, {256, 11, 11, 64}, {256, 64}, {256, 10}, {7, 3}, {5, 1},
    {33, 100},         {3001, 10}};

TEST_F(CpuVectorKernels, BiasAddMatchesTheReference) {
  for (const auto &shape : kBiasShapes) {
    int64_t n = count(shape), c = shape.back();
    Tensor x = Tensor::f32(shape, uniform(n, -1, 1, 40));
    Tensor b = Tensor::f32({c}, uniform(c, -1, 1, 41));
    expectAllMatch(runBoth("bias_add", {}, {x, b}, {shape}), 1e-6,
                   "bias_add " + std::to_string(n));
  }
}

TEST_F(CpuVectorKernels, BiasAddGradMatchesTheReference) {
  for (const auto &shape : kBiasShapes) {
    int64_t n = count(shape), c = shape.back();
    Tensor dy = Tensor::f32(shape, uniform(n, -1, 1, 42));
    Outputs o = runBoth("bias_add_grad", {}, {dy}, {{c}});
    // The kernel sums 64-row blocks in float and the blocks in double: its
    // error is a 64-term float sum's, a few 1e-7 of the column's absolute
    // sum at worst, far below this bound.
    std::vector<double> absSum(c, 0.0);
    for (int64_t i = 0; i < n; ++i)
      absSum[i % c] += std::abs(dy.f[i]);
    for (int64_t j = 0; j < c; ++j)
      EXPECT_NEAR(o.actual[0].f[j], o.expected[0].f[j], 1e-6 * absSum[j])
          << "bias_add_grad of " << n << " elements, channel " << j;
  }
}

TEST_F(CpuVectorKernels, BiasAddGradIsTheSameOnEveryThreadCount) {
  std::vector<int64_t> shape = {256, 26, 26, 32};
  Tensor dy = Tensor::f32(shape, uniform(count(shape), -1, 1, 43));
  Tensor once = Tensor::f32({32}), again = Tensor::f32({32}),
         oneThread = Tensor::f32({32});
  Instance all, single;
  ASSERT_TRUE(
      all.make("bias_add_grad", Backend::cpu, {}, {&dy}, {&once}).isOk());
  ASSERT_TRUE(all.run().isOk());
  again.f = once.f;
  std::fill(once.f.begin(), once.f.end(), 0.0f);
  ASSERT_TRUE(all.run().isOk()); // the instance's scratch, reused
  KernelContext half;            // two replicas: half the threads each
  half.replicas = 2;
  ASSERT_TRUE(
      single.make("bias_add_grad", Backend::cpu, {}, {&dy}, {&oneThread}, half)
          .isOk());
  ASSERT_TRUE(single.run(half).isOk());
  EXPECT_EQ(once.f, again.f);
  EXPECT_EQ(once.f, oneThread.f);
}

TEST_F(CpuVectorKernels, BiasKernelsRejectMismatchedShapes) {
  Tensor x = Tensor::f32({4, 5}), b = Tensor::f32({3}), y = Tensor::f32({4, 5});
  EXPECT_EQ(factoryError("bias_add", {}, {&x, &b}, {&y}),
            "bias_add: bias has 3 elements but the last axis of [4, 5] has 5");
  EXPECT_EQ(factoryError("bias_add_grad", {}, {&x}, {&b}),
            "bias_add_grad: bias has 3 elements but the last axis of [4, 5] "
            "has 5");
}

//===----------------------------------------------------------------------===//
// dropout, dropout_grad
//===----------------------------------------------------------------------===//

KernelConfig dropoutConfig(double rate) {
  KernelConfig cfg;
  cfg.set("rate", rate).set("seed", int64_t{7});
  return cfg;
}

TEST_F(CpuVectorKernels, DropoutMaskIsTheReferences) {
  KernelContext ctx;
  ctx.seed = 11;
  ctx.step = 5;
  ctx.globalRowOffset = 1024;
  std::vector<int64_t> shape = {512, 300};
  int64_t n = count(shape);
  // No zeros in the input, so a zero output is a dropped element.
  Tensor x = Tensor::f32(shape, uniform(n, 0.5, 2, 50));
  for (const std::string kernel : {"dropout", "dropout_grad"}) {
    Outputs o = runBoth(kernel, dropoutConfig(0.3), {x}, {shape}, ctx);
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(o.actual[0].f[i] == 0.0f, o.expected[0].f[i] == 0.0f)
          << kernel << " element " << i;
      dropped += o.actual[0].f[i] == 0.0f;
    }
    EXPECT_NEAR(static_cast<double>(dropped) / n, 0.3, 0.01) << kernel;
    expectAllMatch(o, 1e-6, kernel);
  }
}

/// The cpu kernel restates reference::dropoutKeep to vectorise it; this
/// holds the two to the same bits over rates down to the hash's resolution,
/// run seeds and steps with high bits set, and global indices past 2^32.
TEST_F(CpuVectorKernels, DropoutKeepsExactlyWhatDropoutKeepKeeps) {
  struct Draw {
    double rate;
    int64_t opSeed;
    uint64_t runSeed;
    int64_t step, rowOffset;
  };
  std::vector<int64_t> shape = {64, 1031};
  int64_t n = count(shape);
  Tensor ones = Tensor::f32(shape, std::vector<double>(n, 1.0));
  for (const Draw &d :
       {Draw{0.5, 0, 0, 1, 0}, Draw{0.1, 7, 11, 5, 1024},
        Draw{0.999, -3, ~uint64_t{0}, 123456789, 1},
        Draw{1e-3, int64_t{1} << 40, 42, 1, int64_t{1} << 23},
        Draw{0x1.0p-53, 1, 2, 3, 4}, Draw{1.0 - 0x1.0p-53, 1, 2, 3, 4}}) {
    KernelConfig cfg;
    cfg.set("rate", d.rate).set("seed", d.opSeed);
    KernelContext ctx;
    ctx.seed = d.runSeed;
    ctx.step = d.step;
    ctx.globalRowOffset = d.rowOffset;
    Tensor y = Tensor::f32(shape);
    RUN_OK("dropout", cfg, {&ones}, {&y}, ctx, Backend::cpu);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; ++i)
      differ += (y.f[i] != 0.0f) !=
                reference::dropoutKeep(d.opSeed, d.runSeed, d.step,
                                       d.rowOffset * shape[1] + i, d.rate);
    EXPECT_EQ(differ, 0) << "rate " << d.rate << " seed " << d.opSeed;
  }
}

TEST_F(CpuVectorKernels, DropoutSplitAcrossReplicasDropsWhatOneReplicaDrops) {
  std::vector<int64_t> shape = {256, 200}, half = {128, 200};
  Tensor x = Tensor::f32(shape, uniform(count(shape), 0.5, 2, 51));
  KernelContext ctx;
  ctx.seed = 3;
  ctx.step = 9;
  Tensor whole = Tensor::f32(shape);
  RUN_OK("dropout", dropoutConfig(0.5), {&x}, {&whole}, ctx, Backend::cpu);
  for (int r = 0; r < 2; ++r) {
    Tensor part = Tensor::f32(half), out = Tensor::f32(half);
    int64_t offset = r * count(half);
    std::copy(x.f.begin() + offset, x.f.begin() + offset + count(half),
              part.f.begin());
    KernelContext replica = ctx;
    replica.replica = r;
    replica.replicas = 2;
    replica.globalRowOffset = r * half[0];
    RUN_OK("dropout", dropoutConfig(0.5), {&part}, {&out}, replica,
           Backend::cpu);
    EXPECT_TRUE(
        std::equal(out.f.begin(), out.f.end(), whole.f.begin() + offset))
        << "replica " << r;
  }
}

TEST_F(CpuVectorKernels, DropoutRatesZeroAndOne) {
  std::vector<int64_t> shape = {64, 1000};
  Tensor x = Tensor::f32(shape, uniform(count(shape), -2, 2, 52));
  Tensor kept = Tensor::f32(shape),
         gone = Tensor::f32(shape, uniform(count(shape), 1, 2, 53));
  RUN_OK("dropout", dropoutConfig(0.0), {&x}, {&kept}, {}, Backend::cpu);
  EXPECT_EQ(kept.f, x.f);
  RUN_OK("dropout", dropoutConfig(1.0), {&x}, {&gone}, {}, Backend::cpu);
  EXPECT_TRUE(std::all_of(gone.f.begin(), gone.f.end(),
                          [](float v) { return v == 0.0f; }));
  EXPECT_EQ(factoryError("dropout", dropoutConfig(1.5), {&x}, {&kept}),
            "dropout: rate 1.500000 is not in [0, 1]");
}

//===----------------------------------------------------------------------===//
// softmax, losses, accuracy
//===----------------------------------------------------------------------===//

TEST_F(CpuVectorKernels, SoftmaxAndItsGradientOnLargeAndStridedAxes) {
  struct Shape {
    std::vector<int64_t> dims;
    int64_t axis;
  };
  for (const Shape &s :
       {Shape{{300, 1000}, -1}, Shape{{4, 50, 300}, 1}, Shape{{4, 50, 300}, 0},
        Shape{{256, 10}, 1}, Shape{{3, 1}, -1}}) {
    int64_t n = count(s.dims);
    KernelConfig cfg;
    cfg.set("axis", s.axis);
    std::string what = "softmax over axis " + std::to_string(s.axis) + " of " +
                       std::to_string(n);
    Tensor x = Tensor::f32(s.dims, uniform(n, -50, 50, 60));
    Outputs forward = runBoth("softmax", cfg, {x}, {s.dims});
    expectAllMatch(forward, 1e-6, what);
    Tensor dy = Tensor::f32(s.dims, uniform(n, -1, 1, 61));
    expectAllMatch(
        runBoth("softmax_grad", cfg, {dy, forward.expected[0]}, {s.dims}), 1e-6,
        what + " grad");
  }
}

/// [B, C] labels: one-hot f32, or class indices as i32 or f32.
std::vector<std::pair<std::string, Tensor>>
labelForms(int64_t rows, int64_t classes, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> pick(0, classes - 1);
  std::vector<double> index(rows), oneHot(rows * classes, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    index[r] = static_cast<double>(pick(gen));
    oneHot[r * classes + static_cast<int64_t>(index[r])] = 1.0;
  }
  return {{"one-hot", Tensor::f32({rows, classes}, oneHot)},
          {"i32 indices", Tensor::i32({rows}, index)},
          {"f32 indices", Tensor::f32({rows}, index)}};
}

/// Probabilities with some entries at and beyond the clip boundaries.
Tensor probabilities(int64_t rows, int64_t classes, unsigned seed) {
  std::vector<double> p = uniform(rows * classes, 0.0, 1.0, seed);
  for (size_t i = 0; i < p.size(); i += 97)
    p[i] = i % 2 ? 1e-9 : 1.0;
  return Tensor::f32({rows, classes}, p);
}

TEST_F(CpuVectorKernels, CrossEntropyLossesMatchTheReference) {
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{4096, 37},
                               std::pair<int64_t, int64_t>{256, 10}}) {
    Tensor logits =
        Tensor::f32({rows, classes}, uniform(rows * classes, -8, 8, 70));
    Tensor probs = probabilities(rows, classes, 71);
    for (auto &[form, labels] : labelForms(rows, classes, 72))
      for (bool fromLogits : {true, false})
        for (std::string kernel :
             {"categorical_crossentropy", "sparse_categorical_crossentropy"}) {
          if (kernel.starts_with("sparse") && form == "one-hot")
            continue;
          KernelConfig cfg;
          cfg.set("from_logits", int64_t{fromLogits});
          const Tensor &p = fromLogits ? logits : probs;
          std::string what =
              kernel + " " + form + (fromLogits ? " from logits " : " ") +
              std::to_string(rows) + "x" + std::to_string(classes);
          // The mean of B row losses, each float-accurate: 1e-6 relative.
          expectAllMatch(runBoth(kernel, cfg, {p, labels}, {{}}), 1e-6, what);
          expectAllMatch(
              runBoth(kernel + "_grad", cfg, {p, labels}, {{rows, classes}}),
              1e-6, what + " grad");
        }
  }
}

TEST_F(CpuVectorKernels, SoftmaxCrossEntropyMatchesTheReference) {
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{4096, 10},
                               std::pair<int64_t, int64_t>{256, 10},
                               std::pair<int64_t, int64_t>{3, 1000}}) {
    Tensor logits =
        Tensor::f32({rows, classes}, uniform(rows * classes, -30, 30, 73));
    for (auto &[form, labels] : labelForms(rows, classes, 74))
      expectAllMatch(
          runBoth("softmax_cross_entropy", {}, {logits, labels},
                  {{rows, classes}, {}, {rows, classes}}),
          1e-6, "softmax_cross_entropy " + form + " " + std::to_string(rows));
  }
}

TEST_F(CpuVectorKernels, AccuracyMatchesTheReferenceWithTies) {
  int64_t rows = 5000, classes = 10;
  // Three levels per entry: most rows have tied maxima, which the first
  // index wins.
  std::vector<double> p = uniform(rows * classes, 0, 1, 75);
  for (double &v : p)
    v = std::round(v * 2) / 2;
  Tensor predictions = Tensor::f32({rows, classes}, p);
  for (auto &[form, labels] : labelForms(rows, classes, 76)) {
    Outputs o = runBoth("accuracy", {}, {predictions, labels}, {{}});
    EXPECT_EQ(o.actual[0].f[0], o.expected[0].f[0]) << form;
    EXPECT_GT(o.actual[0].f[0], 0.0f) << form;
  }
}

TEST_F(CpuVectorKernels, LossesRejectOutOfRangeLabelsEveryStep) {
  Tensor logits = Tensor::f32({4, 3}, uniform(12, -1, 1, 77));
  Tensor labels = Tensor::i32({4}, {0, 1, 2, 1});
  Tensor loss = Tensor::f32({});
  Instance instance;
  ASSERT_TRUE(instance
                  .make("sparse_categorical_crossentropy", Backend::cpu, {},
                        {&logits, &labels}, {&loss})
                  .isOk());
  ASSERT_TRUE(instance.run().isOk());
  labels.i[2] = 3; // the next batch's labels, same buffer
  Status s = instance.run();
  EXPECT_EQ(s.message(), "sparse_categorical_crossentropy: label 3 of row 2 "
                         "is out of range [0, 3)");
  Tensor wrong = Tensor::i32({5});
  EXPECT_EQ(
      factoryError("categorical_crossentropy", {}, {&logits, &wrong}, {&loss}),
      "categorical_crossentropy: labels [5] match neither [B, C] nor "
      "[B] for predictions [4, 3]");
}

//===----------------------------------------------------------------------===//
// pointwise_loss, pointwise_loss_grad
//===----------------------------------------------------------------------===//

struct PointwiseKind {
  std::string label;
  KernelConfig cfg;
  double pLo, pHi, tLo, tHi;
  bool binaryTargets = false;
};

std::vector<PointwiseKind> pointwiseKinds() {
  auto kind = [](const std::string &name) {
    KernelConfig cfg;
    cfg.set("kind", name);
    return cfg;
  };
  KernelConfig huber = kind("huber"), smooth = kind("binary_crossentropy"),
               logits = kind("binary_crossentropy");
  huber.set("delta", 0.3);
  smooth.set("label_smoothing", 0.1);
  logits.set("from_logits", int64_t{1});
  KernelConfig focal = kind("binary_focal_crossentropy"),
               categoricalFocal = kind("categorical_focal_crossentropy");
  focal.set("from_logits", int64_t{1})
      .set("label_smoothing", 0.1)
      .set("apply_class_balancing", int64_t{1})
      .set("alpha", 0.4)
      .set("gamma", 1.5);
  categoricalFocal.set("from_logits", int64_t{1})
      .set("label_smoothing", 0.1)
      .set("alpha", 0.6)
      .set("gamma", 3.0);
  // mape's targets stay away from 0, where its 100 / eps gradients would
  // swamp the comparison's scale.
  return {
      {"mean_squared_error", kind("mean_squared_error"), -3, 3, -3, 3},
      {"mean_absolute_error", kind("mean_absolute_error"), -3, 3, -3, 3},
      {"mean_absolute_percentage_error", kind("mean_absolute_percentage_error"),
       -3, 3, 0.5, 3},
      {"mean_squared_logarithmic_error", kind("mean_squared_logarithmic_error"),
       0, 5, 0, 5},
      {"huber", kind("huber"), -3, 3, -1, 1},
      {"huber delta 0.3", huber, -1, 1, -1, 1},
      {"log_cosh", kind("log_cosh"), -4, 4, -1, 1},
      // Both sides of the series' 0.5, where the closed form cancels.
      {"log_cosh near 0", kind("log_cosh"), -0.6, 0.6, -0.05, 0.05},
      {"binary_crossentropy", kind("binary_crossentropy"), 0, 1, 0, 1},
      {"binary_crossentropy label_smoothing", smooth, 0, 1, 0, 1, true},
      {"binary_crossentropy from_logits", logits, -30, 30, 0, 1},
      {"poisson", kind("poisson"), 0, 4, 0, 3},
      {"kl_divergence", kind("kl_divergence"), 0, 1, 0, 1},
      {"hinge", kind("hinge"), -2, 2, 0, 1, true},
      {"hinge -1/1", kind("hinge"), -2, 2, -1, 1, true},
      {"squared_hinge", kind("squared_hinge"), -2, 2, 0, 1, true},
      {"binary_focal_crossentropy", kind("binary_focal_crossentropy"), 0, 1, 0,
       1, true},
      {"binary_focal_crossentropy options", focal, -8, 8, 0, 1, true},
      {"categorical_focal_crossentropy", kind("categorical_focal_crossentropy"),
       0, 1, 0, 1, true},
      {"categorical_focal_crossentropy options", categoricalFocal, -8, 8, 0, 1,
       true},
      {"cosine_similarity", kind("cosine_similarity"), -3, 3, -3, 3},
      {"categorical_hinge", kind("categorical_hinge"), -2, 2, 0, 1, true},
  };
}

/// The operands of kind `k` over `shape`: predictions, targets, weights.
std::vector<Tensor> pointwiseOperands(const PointwiseKind &k,
                                      const std::vector<int64_t> &shape,
                                      unsigned seed) {
  int64_t n = count(shape);
  std::vector<double> t = uniform(n, k.tLo, k.tHi, seed + 1);
  if (k.binaryTargets)
    for (double &v : t)
      v = v > 0.5 * (k.tLo + k.tHi) ? k.tHi : k.tLo;
  return {Tensor::f32(shape, uniform(n, k.pLo, k.pHi, seed)),
          Tensor::f32(shape, t),
          Tensor::f32({shape[0]}, uniform(shape[0], 0, 2, seed + 2))};
}

/// Each element within tol of the reference's, relative to
/// max(|reference|, the mean |reference|) (for a loss: to the loss): the
/// float forms of log and of differences such as msle's log(p + 1) -
/// log(t + 1) are accurate to the terms' size, not to their difference's.
void expectRelativeMatch(const Tensor &actual, const Tensor &expected,
                         double tol, const std::string &what) {
  std::vector<double> a = actual.values(), e = expected.values();
  ASSERT_EQ(a.size(), e.size()) << what;
  double mean = 0.0;
  for (double v : e)
    mean += std::abs(v) / static_cast<double>(e.size());
  int64_t bad = 0, first = -1;
  for (size_t k = 0; k < a.size(); ++k)
    if (!(std::abs(a[k] - e[k]) <= tol * std::max(std::abs(e[k]), mean)) &&
        bad++ == 0)
      first = static_cast<int64_t>(k);
  if (bad)
    ADD_FAILURE() << what << ": " << bad << " of " << a.size()
                  << " elements differ; first at " << first << ": cpu "
                  << a[first] << ", reference " << e[first];
}

TEST_F(CpuVectorKernels, PointwiseLossesMatchTheReferenceAtEverySize) {
  // The OpenMP path (40960 elements, 40003 in one row and in 40003 rows of
  // one), a chunk boundary inside a row ([9, 1000, 3]) and a short tail.
  const std::vector<std::vector<int64_t>> shapes = {
      {8192, 5}, {1, 40003}, {40003, 1}, {9, 1000, 3}, {3, 7}};
  unsigned seed = 80;
  for (const PointwiseKind &k : pointwiseKinds())
    for (const auto &shape : shapes) {
      std::vector<Tensor> in = pointwiseOperands(k, shape, seed += 3);
      std::string what = k.label + " " + shapeText(shape);
      // A mean of float-accurate terms, summed in double: 1e-6 relative.
      Outputs loss = runBoth("pointwise_loss", k.cfg, {in[0], in[1]}, {{}});
      expectRelativeMatch(loss.actual[0], loss.expected[0], 1e-6, what);
      Outputs weighted = runBoth("pointwise_loss", k.cfg, in, {{}});
      expectRelativeMatch(weighted.actual[0], weighted.expected[0], 1e-6,
                          what + " weighted");
      Outputs grad =
          runBoth("pointwise_loss_grad", k.cfg, {in[0], in[1]}, {shape});
      // A row of one has a cosine of +-1 and no gradient, which both
      // backends compute as 0 up to rounding (contracted or not).
      if (k.label == "cosine_similarity" && shape.back() == 1)
        expectAllMatch(grad, 1e-12, what + " grad");
      else
        expectRelativeMatch(grad.actual[0], grad.expected[0], 1e-5,
                            what + " grad");
    }
}

TEST_F(CpuVectorKernels, PointwiseLossIsTheSameOnEveryThreadCount) {
  std::vector<int64_t> shape = {4096, 37};
  for (const PointwiseKind &k : pointwiseKinds()) {
    std::vector<Tensor> in = pointwiseOperands(k, shape, 90);
    Tensor once = Tensor::f32({}), again = Tensor::f32({}),
           oneThread = Tensor::f32({});
    Instance all, single;
    ASSERT_TRUE(all.make("pointwise_loss", Backend::cpu, k.cfg,
                         {&in[0], &in[1], &in[2]}, {&once})
                    .isOk());
    ASSERT_TRUE(all.run().isOk());
    again.f = once.f;
    ASSERT_TRUE(all.run().isOk()); // the instance's chunk sums, reused
    KernelContext half;            // two replicas: half the threads each
    half.replicas = 2;
    ASSERT_TRUE(single
                    .make("pointwise_loss", Backend::cpu, k.cfg,
                          {&in[0], &in[1], &in[2]}, {&oneThread}, half)
                    .isOk());
    ASSERT_TRUE(single.run(half).isOk());
    EXPECT_EQ(once.f, again.f) << k.label;
    EXPECT_EQ(once.f, oneThread.f) << k.label;
  }
}

TEST_F(CpuVectorKernels, PointwiseLossesAtExtremeArguments) {
  auto kind = [](const std::string &name) {
    KernelConfig cfg;
    cfg.set("kind", name);
    return cfg;
  };
  KernelConfig logits = kind("binary_crossentropy");
  logits.set("from_logits", int64_t{1});
  struct Extreme {
    std::string label;
    KernelConfig cfg;
    std::vector<double> p, t;
  };
  const Extreme cases[] = {
      // Saturated and clipped probabilities, 1e-7 itself included.
      {"binary_crossentropy",
       kind("binary_crossentropy"),
       {0, 1, 1e-7, 1 - 1e-7, 1e-9, 0.99999994, 1, 0},
       {0.5, 0.5, 1, 0, 0.3, 0.2, 0, 1}},
      {"binary_crossentropy from_logits",
       logits,
       {1e4, -1e4, 100, -100, 88.5, -88.5, 17, -17},
       {1, 1, 0, 0, 0.5, 0.5, 1, 0}},
      {"log_cosh",
       kind("log_cosh"),
       {1000, -800, 0.39, -0.41, 1e-4, 0, 20, -9},
       {0, 0, 0, 0, 0, 0, 0, 0}},
      {"log_cosh near 0",
       kind("log_cosh"),
       {0.5, 0.50001, -0.3, 1e-3, -1e-2, 0.2, 1e-20, -0.45},
       {0, 0, 0, 0, 0, 0, 0, 0}},
      {"kl_divergence",
       kind("kl_divergence"),
       {0, 1.5, 1, 1e-7, 1e-12, 0.5, 0.25, 2},
       {0.5, 0.5, 0, 1, 0.5, 0, 1.5, 1}},
      {"poisson",
       kind("poisson"),
       {0, 0, 1e-9, 50, 0.5, 3, 1e-7, 7},
       {0, 1, 1, 0, 0, 2, 0.5, 7}},
      {"mean_squared_logarithmic_error",
       kind("mean_squared_logarithmic_error"),
       {-1, 0, 1e-7, 1e6, 3, 0.5, 1e-12, 2},
       {0.5, 0, 0, 1e6, -1, 0.5, 1, 2}},
      {"mean_absolute_percentage_error",
       kind("mean_absolute_percentage_error"),
       {1, 0.5, -2, 0, 1e-9, 3, 1, 1},
       {1, 0, -2, 1e-9, 0, -3, 1e-8, 5}},
  };
  for (const Extreme &c : cases) {
    int64_t n = static_cast<int64_t>(c.p.size());
    Tensor p = Tensor::f32({2, n / 2}, c.p), t = Tensor::f32({2, n / 2}, c.t);
    Outputs loss = runBoth("pointwise_loss", c.cfg, {p, t}, {{}});
    expectRelativeMatch(loss.actual[0], loss.expected[0], 1e-6,
                        c.label + " at extremes");
    Outputs grad = runBoth("pointwise_loss_grad", c.cfg, {p, t}, {{2, n / 2}});
    expectAllMatch(grad, 1e-6, c.label + "_grad at extremes");
    expectRelativeMatch(grad.actual[0], grad.expected[0], 1e-5,
                        c.label + "_grad at extremes, relative");
  }
}

TEST_F(CpuVectorKernels, PointwiseLossRejectsBadLaunchesAtInstantiation) {
  Tensor p = Tensor::f32({2, 3}), t = Tensor::f32({2, 3}),
         wide = Tensor::f32({2, 4}), w = Tensor::f32({3}),
         loss = Tensor::f32({});
  KernelConfig mse, unknown, huberDelta;
  mse.set("kind", std::string("mean_squared_error"));
  unknown.set("kind", std::string("focal"));
  EXPECT_EQ(factoryError("pointwise_loss", unknown, {&p, &t}, {&loss})
                .rfind("pointwise_loss: kind 'focal' is not an element-wise "
                       "loss (mean_squared_error, ",
                       0),
            0u);
  EXPECT_EQ(factoryError("pointwise_loss", mse, {&p, &wide}, {&loss}),
            "pointwise_loss: targets [2, 4] do not match predictions [2, 3]");
  huberDelta = mse;
  huberDelta.set("delta", 2.0);
  EXPECT_EQ(factoryError("pointwise_loss_grad", huberDelta, {&p, &t}, {&p}),
            "pointwise_loss_grad: delta is huber's option, not "
            "mean_squared_error's");
  EXPECT_EQ(factoryError("pointwise_loss", mse, {&p, &t, &w}, {&loss}),
            "pointwise_loss: sample_weight [3] must be f32 [2]");
  Tensor p64 = Tensor::f64({2, 3});
  EXPECT_EQ(factoryError("pointwise_loss", mse, {&p64, &t}, {&loss}),
            "pointwise_loss: input 0 is f64, expected f32 (the cpu backend "
            "computes in f32 only)");
}

//===----------------------------------------------------------------------===//
// optimizer_update
//===----------------------------------------------------------------------===//

KernelConfig optimizer(const std::string &kind,
                       std::vector<std::pair<std::string, double>> params) {
  KernelConfig cfg;
  cfg.set("optimizer", kind);
  for (auto &[name, value] : params)
    cfg.set(name, value);
  return cfg;
}

int64_t optimizerSlotsOf(const KernelConfig &cfg) {
  std::string kind = cfg.getString("optimizer");
  bool momentum = cfg.getFloat("momentum", 0.0) > 0;
  if (kind == "sgd")
    return momentum ? 1 : 0;
  if (kind == "adam")
    return cfg.getFloat("amsgrad", 0.0) != 0.0 ? 3 : 2;
  if (kind == "adagrad")
    return 1;
  if (kind == "adamax" || kind == "nadam")
    return 2;
  return 1 + momentum + (cfg.getFloat("centered", 0.0) != 0.0);
}

/// With gradient accumulation, the sum is one more slot.
int64_t slotsOf(const KernelConfig &cfg) {
  return optimizerSlotsOf(cfg) +
         (cfg.getInt("gradient_accumulation_steps", 0) > 0 ? 1 : 0);
}

/// Variables, gradients and slots of one optimizer launch.
struct OptimizerState {
  std::vector<Tensor> params, grads, slots;

  OptimizerState(const std::vector<int64_t> &sizes, int64_t k) {
    unsigned seed = 80;
    for (int64_t n : sizes) {
      params.push_back(Tensor::f32({n}, uniform(n, -1, 1, seed++)));
      grads.push_back(Tensor::f32({n}));
      for (int64_t s = 0; s < k; ++s)
        slots.push_back(Tensor::f32({n}));
    }
  }
  void gradientsOfStep(int64_t step) {
    for (size_t v = 0; v < grads.size(); ++v)
      grads[v].set(uniform(grads[v].elements(), -1, 1,
                           static_cast<unsigned>(1000 * step + v)));
  }
  std::vector<Tensor *> ins() {
    std::vector<Tensor *> in;
    for (auto *group : {&params, &grads, &slots})
      for (Tensor &t : *group)
        in.push_back(&t);
    return in;
  }
  /// In place, as the plan launches it.
  std::vector<Tensor *> outs() {
    std::vector<Tensor *> out;
    for (auto *group : {&params, &slots})
      for (Tensor &t : *group)
        out.push_back(&t);
    return out;
  }
};

std::vector<std::pair<std::string, KernelConfig>> optimizers() {
  return {
      {"sgd", optimizer("sgd", {{"learning_rate", 0.05}})},
      {"sgd momentum",
       optimizer("sgd", {{"learning_rate", 0.05}, {"momentum", 0.9}})},
      {"sgd nesterov", optimizer("sgd", {{"learning_rate", 0.05},
                                         {"momentum", 0.9},
                                         {"nesterov", 1}})},
      {"adam", optimizer("adam", {{"learning_rate", 0.001},
                                  {"beta_1", 0.9},
                                  {"beta_2", 0.999},
                                  {"epsilon", 1e-7}})},
      {"adam amsgrad", optimizer("adam", {{"learning_rate", 0.01},
                                          {"beta_1", 0.8},
                                          {"beta_2", 0.99},
                                          {"epsilon", 1e-6},
                                          {"amsgrad", 1}})},
      {"rmsprop",
       optimizer("rmsprop",
                 {{"learning_rate", 0.001}, {"rho", 0.9}, {"epsilon", 1e-7}})},
      {"rmsprop momentum", optimizer("rmsprop", {{"learning_rate", 0.001},
                                                 {"rho", 0.95},
                                                 {"momentum", 0.5},
                                                 {"epsilon", 1e-7}})},
      {"rmsprop centered", optimizer("rmsprop", {{"learning_rate", 0.001},
                                                 {"rho", 0.9},
                                                 {"epsilon", 1e-7},
                                                 {"centered", 1}})},
      {"rmsprop centered momentum",
       optimizer("rmsprop", {{"learning_rate", 0.001},
                             {"rho", 0.9},
                             {"momentum", 0.9},
                             {"epsilon", 1e-7},
                             {"centered", 1}})},
      {"adagrad", optimizer("adagrad", {{"learning_rate", 0.01},
                                        {"initial_accumulator_value", 0.1},
                                        {"epsilon", 1e-7}})},
      {"adamax", optimizer("adamax", {{"learning_rate", 0.002},
                                      {"beta_1", 0.9},
                                      {"beta_2", 0.999},
                                      {"epsilon", 1e-7}})},
      {"nadam", optimizer("nadam", {{"learning_rate", 0.002},
                                    {"beta_1", 0.9},
                                    {"beta_2", 0.999},
                                    {"epsilon", 1e-7}})},
      {"nadam gradient_accumulation",
       optimizer("nadam", {{"learning_rate", 0.002},
                           {"beta_1", 0.9},
                           {"beta_2", 0.999},
                           {"epsilon", 1e-7},
                           {"gradient_accumulation_steps", 3}})},
      {"sgd momentum gradient_accumulation clipvalue",
       optimizer("sgd", {{"learning_rate", 0.05},
                         {"momentum", 0.9},
                         {"clipvalue", 0.5},
                         {"gradient_accumulation_steps", 2}})},
  };
}

TEST_F(CpuVectorKernels, OptimizersOverFiftyStepsMatchTheReference) {
  // Sizes around the 16384-element chunks, 56k elements in all: the
  // parallel path.
  const std::vector<int64_t> sizes = {1, 7, 16387, 40000};
  for (auto &[label, cfg] : optimizers()) {
    int64_t k = slotsOf(cfg);
    OptimizerState expected(sizes, k), actual(sizes, k);
    Instance instance; // one instance for all steps, as the executor runs it
    ASSERT_TRUE(instance
                    .make("optimizer_update", Backend::cpu, cfg, actual.ins(),
                          actual.outs())
                    .isOk())
        << label;
    for (int64_t step = 1; step <= 50; ++step) {
      KernelContext ctx;
      ctx.step = step;
      expected.gradientsOfStep(step);
      actual.gradientsOfStep(step);
      RUN_OK("optimizer_update", cfg, expected.ins(), expected.outs(), ctx);
      Status s = instance.run(ctx);
      ASSERT_TRUE(s.isOk()) << label << ": " << s.message();
    }
    // Fifty float updates drift from fifty double ones by float roundings
    // that add up: the worst measured is SGD momentum's, 1.4e-6 of the
    // values (its velocity sums every past step); Adam and RMSprop stay
    // below 4e-7. 5e-6 leaves room for another compiler's rounding.
    for (size_t v = 0; v < sizes.size(); ++v)
      expectMatches(actual.params[v], expected.params[v], 5e-6,
                    label + " variable " + std::to_string(v));
    for (size_t s = 0; s < actual.slots.size(); ++s)
      expectMatches(actual.slots[s], expected.slots[s], 5e-6,
                    label + " slot " + std::to_string(s));
  }
}

TEST_F(CpuVectorKernels, OptimizerWritesSeparateOutputsAndKeepsItsInputs) {
  KernelConfig cfg = optimizers()[4].second; // adam amsgrad
  const std::vector<int64_t> sizes = {100, 20000};
  OptimizerState expected(sizes, 3), actual(sizes, 3);
  for (OptimizerState *state : {&expected, &actual}) {
    state->gradientsOfStep(1);
    for (Tensor &s : state->slots)
      s.set(uniform(s.elements(), 0, 1, 90));
  }
  std::vector<Tensor> before;
  for (Tensor *t : actual.ins())
    before.push_back(*t);
  std::vector<Tensor> out;
  for (Tensor *t : actual.outs())
    out.push_back(Tensor::f32(t->shape));
  std::vector<Tensor *> outPtrs;
  for (Tensor &t : out)
    outPtrs.push_back(&t);
  KernelContext ctx;
  ctx.step = 7;
  RUN_OK("optimizer_update", cfg, actual.ins(), outPtrs, ctx, Backend::cpu);
  RUN_OK("optimizer_update", cfg, expected.ins(), expected.outs(), ctx);
  std::vector<Tensor *> in = actual.ins(), want = expected.outs();
  for (size_t k = 0; k < in.size(); ++k)
    EXPECT_EQ(in[k]->f, before[k].f) << "input " << k << " changed";
  for (size_t k = 0; k < out.size(); ++k)
    expectMatches(out[k], *want[k], 1e-6, "output " + std::to_string(k));
}

// Dynamic loss scaling (Keras' LossScaleOptimizer, _stateful_handle_*):
// an update of gradients scaled by S (here by S / 2, two replicas' averaged
// share) after k applied updates is the plain update of the unscaled
// gradients at step k + 1, whatever the global step; a step of non-finite
// gradients changes nothing. The oracle is the reference's plain update.
TEST_F(CpuVectorKernels, LossScaledUpdateIsThePlainUpdateOfTheUnscaledOne) {
  const std::vector<int64_t> sizes = {7, 20000};
  const double scale = 1024.0;
  for (auto &[label, plainCfg] : optimizers()) {
    if (plainCfg.getInt("gradient_accumulation_steps", 0) > 0)
      continue; // refused with loss scaling (see below)
    int64_t k = slotsOf(plainCfg);
    // Plain updates 1..last on the reference.
    auto plainSteps = [&](OptimizerState &state, int64_t last) {
      for (int64_t step = 1; step <= last; ++step) {
        KernelContext ctx;
        ctx.step = step;
        state.gradientsOfStep(step);
        RUN_OK("optimizer_update", plainCfg, state.ins(), state.outs(), ctx);
      }
    };
    // The oracle: 4 plain updates, then the fifth.
    OptimizerState plain(sizes, k);
    plainSteps(plain, 5);
    KernelConfig cfg = plainCfg;
    cfg.set("loss_scaled", int64_t{1});
    cfg.set("replicas", int64_t{2});
    for (Backend backend : {Backend::reference, Backend::cpu}) {
      std::string what = label + " on " + backendName(backend);
      OptimizerState scaled(sizes, k);
      plainSteps(scaled, 4);
      scaled.gradientsOfStep(5);
      for (Tensor &g : scaled.grads)
        for (float &x : g.f)
          x *= static_cast<float>(scale / 2); // exact: a power of two
      Tensor s = Tensor::f32({1}, {scale}), iterations = Tensor::f32({1}, {4});
      Tensor finite = Tensor::f32({}, {123.0}), inf = Tensor::f32({}, {0});
      inf.f[0] = std::numeric_limits<float>::infinity();
      // Not finite: every value and slot stays, bit for bit.
      std::vector<Tensor> before;
      for (Tensor *t : scaled.outs())
        before.push_back(*t);
      std::vector<Tensor *> ins = scaled.ins();
      ins.insert(ins.end(), {&s, &inf, &iterations});
      KernelContext ctx;
      ctx.step = 37; // the global step: loss scaling counts its own
      RUN_OK("optimizer_update", cfg, ins, scaled.outs(), ctx, backend);
      std::vector<Tensor *> after = scaled.outs();
      for (size_t t = 0; t < after.size(); ++t)
        EXPECT_EQ(after[t]->f, before[t].f)
            << what << ": output " << t << " moved on a skipped step";
      // Finite: the fifth plain update.
      ins.back() = &iterations;
      ins[ins.size() - 2] = &finite;
      RUN_OK("optimizer_update", cfg, ins, scaled.outs(), ctx, backend);
      // The reference's unscaled gradients are exact; the cpu's float
      // update differs from the double one by its roundings.
      double tol = backend == Backend::reference ? 1e-12 : 1e-6;
      for (size_t v = 0; v < sizes.size(); ++v)
        expectMatches(scaled.params[v], plain.params[v], tol,
                      what + " variable " + std::to_string(v));
      for (size_t t = 0; t < scaled.slots.size(); ++t)
        expectMatches(scaled.slots[t], plain.slots[t], tol,
                      what + " slot " + std::to_string(t));
    }
  }
}

TEST_F(CpuVectorKernels, LossScalingRefusesGradientAccumulation) {
  Tensor w = Tensor::f32({3}), g = Tensor::f32({3}), m = Tensor::f32({3}),
         acc = Tensor::f32({3}), one = Tensor::f32({1}, {1.0}),
         norm = Tensor::f32({}, {1.0});
  KernelConfig cfg = optimizer("sgd", {{"learning_rate", 0.1},
                                       {"momentum", 0.9},
                                       {"gradient_accumulation_steps", 2}});
  cfg.set("loss_scaled", int64_t{1});
  EXPECT_EQ(factoryError("optimizer_update", cfg,
                         {&w, &g, &m, &acc, &one, &norm, &one}, {&w, &m, &acc}),
            "optimizer_update: loss scaling with gradient accumulation is not "
            "supported");
  RUN_FAILS("loss scaling with gradient accumulation is not supported",
            "optimizer_update", cfg, {&w, &g, &m, &acc, &one, &norm, &one},
            {&w, &m, &acc});
}

TEST_F(CpuVectorKernels, OptimizerRejectsBadLaunches) {
  Tensor w = Tensor::f32({3}), g = Tensor::f32({3}), m = Tensor::f32({3}),
         shortSlot = Tensor::f32({2});
  EXPECT_EQ(factoryError("optimizer_update", optimizer("adadelta", {}),
                         {&w, &g}, {&w}),
            "optimizer_update: unknown optimizer 'adadelta' (expected sgd, "
            "adam, rmsprop, adagrad, adamax or nadam)");
  EXPECT_EQ(factoryError("optimizer_update", optimizer("adam", {}),
                         {&w, &g, &m}, {&w, &m}),
            "optimizer_update: 3 inputs do not split into params, grads and "
            "2 slot(s) per variable for adam");
  EXPECT_EQ(factoryError("optimizer_update",
                         optimizer("sgd", {{"momentum", 0.9}}),
                         {&w, &g, &shortSlot}, {&w, &shortSlot}),
            "optimizer_update: variable 0 [3]: slot 0 [2] differs in size");
}

//===----------------------------------------------------------------------===//
// Shape kernels
//===----------------------------------------------------------------------===//

TEST_F(CpuVectorKernels, ConcatenateAndSliceInvertEachOther) {
  struct Split {
    std::vector<std::vector<int64_t>> parts;
    int64_t axis;
  };
  for (const Split &split : {Split{{{64, 20, 30}, {64, 5, 30}, {64, 1, 30}}, 1},
                             Split{{{512, 100}, {512, 28}}, -1},
                             Split{{{300, 7}, {2, 7}, {1, 7}}, 0}}) {
    std::vector<Tensor> parts;
    for (size_t k = 0; k < split.parts.size(); ++k)
      parts.push_back(
          Tensor::f32(split.parts[k], uniform(count(split.parts[k]), -1, 1,
                                              100 + static_cast<unsigned>(k))));
    std::vector<int64_t> joined = split.parts[0];
    size_t axis = split.axis < 0 ? joined.size() + split.axis : split.axis;
    joined[axis] = 0;
    for (const auto &p : split.parts)
      joined[axis] += p[axis];
    KernelConfig cfg;
    cfg.set("axis", split.axis);
    Outputs o = runBoth("concatenate", cfg, parts, {joined});
    std::string what = "concatenate along " + std::to_string(split.axis);
    EXPECT_EQ(o.actual[0].f, o.expected[0].f) << what;
    int64_t offset = 0;
    for (Tensor &part : parts) {
      KernelConfig at = cfg;
      at.set("offset", offset);
      Tensor back = Tensor::f32(part.shape);
      RUN_OK("slice", at, {&o.actual[0]}, {&back}, {}, Backend::cpu);
      EXPECT_EQ(back.f, part.f) << what << " slice at " << offset;
      offset += part.shape[axis];
    }
  }
}

TEST_F(CpuVectorKernels, FlattenAndReshapeCopyOrAliasTheirInput) {
  std::vector<int64_t> shape = {256, 5, 5, 64};
  Tensor x = Tensor::f32(shape, uniform(count(shape), -1, 1, 110));
  Tensor flat = Tensor::f32({256, 1600});
  RUN_OK("flatten", {}, {&x}, {&flat}, {}, Backend::cpu);
  EXPECT_EQ(flat.f, x.f);
  Tensor same = x;
  RUN_OK("reshape", {}, {&same}, {&same}, {}, Backend::cpu);
  EXPECT_EQ(same.f, x.f);
  Tensor wrong = Tensor::f32({256, 1599});
  EXPECT_EQ(factoryError("reshape", {}, {&x}, {&wrong}),
            "reshape: changes the element count: [256, 5, 5, 64] to [256, "
            "1599]");
}

TEST_F(CpuVectorKernels, SliceAndConcatenateRejectBadGeometry) {
  Tensor x = Tensor::f32({4, 6}), y = Tensor::f32({4, 3}),
         z = Tensor::f32({3, 3});
  KernelConfig at;
  at.set("axis", int64_t{1}).set("offset", int64_t{4});
  EXPECT_EQ(factoryError("slice", at, {&x}, {&y}),
            "slice: [4, 7) is out of range for axis 1 of [4, 6]");
  KernelConfig axis1;
  axis1.set("axis", int64_t{1});
  EXPECT_EQ(factoryError("concatenate", axis1, {&y, &z}, {&x}),
            "concatenate: input 1 [3, 3] differs from the output [4, 6] off "
            "axis 1");
}

} // namespace
