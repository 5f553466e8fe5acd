//===- DnnlBf16Test.cpp - the cpu backend's oneDNN bf16 path -------------===//
//
// The convolutions and matmuls on oneDNN's bf16 primitives (DnnlContext.h:
// Bf16Path), against the reference backend's bf16 launches (float32 on
// widened copies, each output rounded to nearest even once). Both sum in
// float32, in different orders, so an element may round to the neighbouring
// bfloat16; the rule both follow is the same, so nearly every element is
// equal. A path that truncated instead of rounding, read a layout wrong or
// summed a gradient in bfloat16 fails one of the two bounds below.
//
// Its own executable: GRAPH_CPU_BF16=onednn must be set before the process'
// first bf16 launch chooses the path, so that the path runs here even on a
// CPU without AVX512-BF16 (oneDNN emulates it there, slowly).
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ReducedConvPoolCheck.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

constexpr auto kBf16 = graph::plan::DType::bf16;

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Tensor randomBf16(const std::vector<int64_t> &shape, unsigned seed) {
  return Tensor::make(shape, kBf16, uniform(elements(shape), -1, 1, seed));
}

/// randomBf16's values with all but about one in 8 zeroed.
Tensor sparseBf16(const std::vector<int64_t> &shape, unsigned seed) {
  std::vector<double> v = uniform(elements(shape), -1, 1, seed);
  std::mt19937 gen(seed);
  for (double &x : v)
    if (gen() % 8 != 0)
      x = 0;
  return Tensor::make(shape, kBf16, v);
}

/// Runs `kernel` on the reference and the cpu backend and compares: every
/// element within one bfloat16 step (2^-8 relative, its rounding) of the
/// reference's, scaled by the output's largest magnitude where the sum
/// cancels, and at least 99% of them equal (measured 99.96-100%).
void expectSameRounding(const std::string &kernel, const KernelConfig &cfg,
                        std::vector<Tensor *> ins,
                        const std::vector<int64_t> &outShape) {
  SCOPED_TRACE(kernel);
  Tensor expected = Tensor::make(outShape, kBf16);
  Tensor actual = Tensor::make(outShape, kBf16);
  RUN_OK(kernel, cfg, ins, {&expected}, {}, Backend::reference);
  RUN_OK(kernel, cfg, ins, {&actual}, {}, Backend::cpu);
  std::vector<double> e = expected.values(), a = actual.values();
  double largest = 0;
  for (double v : e)
    largest = std::max(largest, std::abs(v));
  ASSERT_GT(largest, 0.0) << "an all-zero output proves nothing";
  int64_t equal = 0, far = 0;
  for (size_t i = 0; i < e.size(); ++i) {
    equal += a[i] == e[i];
    far += std::abs(a[i] - e[i]) >
           std::ldexp(std::max(std::abs(e[i]), 1e-3 * largest), -7);
  }
  EXPECT_EQ(far, 0) << "elements more than a bfloat16 step off";
  EXPECT_GE(equal, static_cast<int64_t>(0.99 * e.size()))
      << equal << " of " << e.size() << " elements equal";
}

/// oneDNN refuses bf16 primitives on a CPU without AVX-512 (an AVX2
/// machine): the cpu backend says so when asked for them, and these tests
/// have nothing to run.
#define SKIP_WITHOUT_AVX512()                                                  \
  do {                                                                         \
    std::string path_;                                                         \
    if (Status s_ = cpu::describeBf16Path(path_); !s_) {                       \
      ASSERT_NE(s_.message().find("no AVX-512"), std::string::npos)            \
          << s_.message();                                                     \
      GTEST_SKIP() << s_.message();                                            \
    }                                                                          \
  } while (false)

TEST(CpuDnnlBf16, RunsOnOneDnnsBf16Primitives) {
  cpu::registerCpuKernels();
  SKIP_WITHOUT_AVX512();
  std::string path;
  Status s = cpu::describeBf16Path(path);
  ASSERT_TRUE(s.isOk()) << s.message();
  EXPECT_NE(path.find("oneDNN's bf16 primitives"), std::string::npos) << path;
  std::vector<TensorRef> bf16(1), mixed(1);
  bf16[0].dtype = kBf16;
  EXPECT_TRUE(KernelRegistry::global().takesReduced("conv2d", Backend::cpu,
                                                    bf16, bf16));
  // A launch of f32 and bf16 operands is not the bf16 path's: it widens.
  EXPECT_FALSE(KernelRegistry::global().takesReduced("conv2d", Backend::cpu,
                                                     bf16, mixed));
  // Nor is a kernel outside them and max pooling (below).
  EXPECT_FALSE(KernelRegistry::global().takesReduced("avg_pool2d", Backend::cpu,
                                                     bf16, bf16));
}

/// The seed CNN's three convolutions at a small batch: conv 3's 3x3 output
/// splits the batch among the threads (two partial weight gradients,
/// added in float32), conv 1's one input channel takes oneDNN's other
/// kernels; plus a grouped one and OHWI weights.
TEST(CpuDnnlBf16, ConvolutionsRoundAsTheReference) {
  cpu::registerCpuKernels();
  SKIP_WITHOUT_AVX512();
  struct C {
    std::vector<int64_t> x, k, y;
    int64_t groups;
    bool ohwi;
  };
  const C cases[] = {
      {{4, 28, 28, 1}, {3, 3, 1, 32}, {4, 26, 26, 32}, 1, false},
      {{4, 13, 13, 32}, {3, 3, 32, 64}, {4, 11, 11, 64}, 1, false},
      {{4, 5, 5, 64}, {3, 3, 64, 64}, {4, 3, 3, 64}, 1, false},
      {{4, 5, 5, 64}, {64, 3, 3, 64}, {4, 3, 3, 64}, 1, true},
      {{2, 9, 9, 32}, {3, 3, 8, 32}, {2, 7, 7, 32}, 4, false},
  };
  unsigned seed = 1;
  for (const C &c : cases) {
    SCOPED_TRACE("input " + shapeText(c.x) + ", kernel " + shapeText(c.k) +
                 (c.ohwi ? " ohwi" : ""));
    KernelConfig cfg;
    cfg.set("padding", std::string("valid"))
        .set("strides", std::vector<int64_t>{1, 1})
        .set("groups", c.groups);
    if (c.ohwi)
      cfg.set("filter_layout", std::string("ohwi"));
    KernelConfig fused = cfg;
    fused.set("activation", std::string("relu"));
    const int64_t filters = c.y[3];
    Tensor x = randomBf16(c.x, seed++), k = randomBf16(c.k, seed++);
    Tensor b = randomBf16({filters}, seed++), dy = randomBf16(c.y, seed++);
    expectSameRounding("conv2d", cfg, {&x, &k}, c.y);
    expectSameRounding("fused_conv2d", fused, {&x, &k, &b}, c.y);
    expectSameRounding("conv2d_grad_input", cfg, {&dy, &k}, c.x);
    expectSameRounding("conv2d_grad_kernel", cfg, {&x, &dy}, c.k);
    // One in 8 of the gradient not zero, as a max pool and a relu leave
    // it: the cpu kernel's sparse path where the shape takes it.
    Tensor sparseDy = sparseBf16(c.y, 1000 + seed);
    expectSameRounding("conv2d_grad_input", cfg, {&sparseDy, &k}, c.x);
  }
}

/// The seed CNN's dense layers (576 -> 64 -> 10) at batch 64, and a rank-3
/// input (rows of a sequence).
TEST(CpuDnnlBf16, MatmulsRoundAsTheReference) {
  cpu::registerCpuKernels();
  SKIP_WITHOUT_AVX512();
  KernelConfig none, relu;
  relu.set("activation", std::string("relu"));
  struct C {
    std::vector<int64_t> x;
    int64_t units;
  };
  unsigned seed = 100;
  for (const C &c : {C{{64, 576}, 64}, C{{64, 64}, 10}, C{{8, 5, 96}, 48}}) {
    SCOPED_TRACE("input " + shapeText(c.x) + ", " + std::to_string(c.units) +
                 " units");
    const int64_t in = c.x.back();
    std::vector<int64_t> y = c.x;
    y.back() = c.units;
    Tensor x = randomBf16(c.x, seed++), k = randomBf16({in, c.units}, seed++);
    Tensor b = randomBf16({c.units}, seed++), dy = randomBf16(y, seed++);
    expectSameRounding("dense", none, {&x, &k}, y);
    expectSameRounding("fused_dense", relu, {&x, &k, &b}, y);
    expectSameRounding("dense_grad_input", none, {&dy, &k}, c.x);
    expectSameRounding("dense_grad_kernel", none, {&x, &dy}, {in, c.units});
  }
}

/// max_pool2d and max_pool2d_grad take bf16 launches themselves
/// (DnnlPoolKernels.cpp), whatever GRAPH_CPU_BF16 says, and must equal the
/// reference's widened launch bit for bit: the maximum of bfloat16 values
/// is one of them, and the gradient runs the float32 loop on each image's
/// widened x and dy and rounds its dx once, as a widened launch does. x
/// takes 9 values, so windows hold ties (the first maximum wins) and
/// zeros and negatives (relu_grad). Cases: the seed CNN's 2x2/2 pool
/// (maxPoolGrad2x2's AVX2 loop), an odd size that leaves a row and a
/// column uncovered, and overlapping 3x3/2 windows with same padding and 5
/// channels (the general loop, which adds into dx).
TEST(CpuDnnlBf16, MaxPoolingEqualsTheReferenceBitForBit) {
  cpu::registerCpuKernels();
  SKIP_WITHOUT_AVX512();
  struct C {
    std::vector<int64_t> x, y;
    int64_t window, stride;
    const char *padding;
  };
  const C cases[] = {
      {{4, 26, 26, 32}, {4, 13, 13, 32}, 2, 2, "valid"},
      {{2, 7, 7, 8}, {2, 3, 3, 8}, 2, 2, "valid"},
      {{3, 9, 9, 5}, {3, 5, 5, 5}, 3, 2, "same"},
  };
  unsigned seed = 200;
  for (const C &c : cases) {
    SCOPED_TRACE("input " + shapeText(c.x) + ", window " +
                 std::to_string(c.window) + "/" + std::to_string(c.stride) +
                 " " + c.padding);
    KernelConfig cfg;
    cfg.set("pool_size", std::vector<int64_t>{c.window, c.window})
        .set("strides", std::vector<int64_t>{c.stride, c.stride})
        .set("padding", std::string(c.padding));
    KernelConfig fused = cfg;
    fused.set("relu_grad", int64_t(1));
    std::vector<double> levels = uniform(elements(c.x), -1, 1, seed++);
    for (double &v : levels)
      v = std::round(v * 4) / 4;
    Tensor x = Tensor::make(c.x, kBf16, levels);
    Tensor dy = randomBf16(c.y, seed++);
    std::vector<TensorRef> ins = {x.ref(), dy.ref(), dy.ref()};
    std::vector<TensorRef> outs = {x.ref()};
    ASSERT_TRUE(KernelRegistry::global().takesReduced("max_pool2d_grad",
                                                      Backend::cpu, ins, outs))
        << "the bf16 launch would widen";
    ASSERT_TRUE(KernelRegistry::global().takesReduced(
        "max_pool2d", Backend::cpu, {x.ref()}, {dy.ref()}));

    Tensor y = Tensor::make(c.y, kBf16), yCpu = Tensor::make(c.y, kBf16);
    RUN_OK("max_pool2d", cfg, {&x}, {&y}, {}, Backend::reference);
    RUN_OK("max_pool2d", cfg, {&x}, {&yCpu}, {}, Backend::cpu);
    EXPECT_EQ(yCpu.values(), y.values());

    for (const KernelConfig *config : {&cfg, &fused}) {
      SCOPED_TRACE(config == &fused ? "relu_grad, input_grad_sum" : "plain");
      Tensor dx = Tensor::make(c.x, kBf16), dxCpu = Tensor::make(c.x, kBf16);
      Tensor sum = Tensor::make({c.x[3]}, kBf16),
             sumCpu = Tensor::make({c.x[3]}, kBf16);
      std::vector<Tensor *> want = {&dx}, got = {&dxCpu};
      if (config == &fused)
        want.push_back(&sum), got.push_back(&sumCpu);
      RUN_OK("max_pool2d_grad", *config, {&x, &y, &dy}, want, {},
             Backend::reference);
      RUN_OK("max_pool2d_grad", *config, {&x, &y, &dy}, got, {}, Backend::cpu);
      std::vector<double> expected = dx.values();
      EXPECT_EQ(dxCpu.values(), expected);
      EXPECT_GT(std::count(expected.begin(), expected.end(), 0.0),
                int64_t(expected.size() / 2))
          << "most positions get no gradient";
      EXPECT_EQ(sumCpu.values(), sum.values());
    }
  }
}

/// fused_conv2d_pool and its gradients on oneDNN's bf16 path compute what
/// the unfused ops do there (ReducedConvPoolCheck.h): 32 input channels
/// take oneDNN's bf16 convolution into each chunk, one channel the cpu
/// backend's first-layer path (convPoolCases()).
TEST(CpuDnnlBf16, ConvPoolAsUnfused) {
  cpu::registerCpuKernels();
  SKIP_WITHOUT_AVX512();
  for (const ConvPoolCase &c : convPoolCases())
    expectFusedConvPoolAsUnfused(Backend::cpu, kBf16, c);
}

} // namespace

int main(int argc, char **argv) {
  setenv("GRAPH_CPU_BF16", "onednn", /*overwrite=*/1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
