//===- DnnlKernelsTest.cpp - cpu oneDNN kernels beyond conformance --------===//
//
// Paths of the oneDNN kernels the conformance cases' small shapes do not
// take, against the reference backend.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "ReducedConvPoolCheck.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

/// fused_conv2d_pool convolves a chunk of images at a time (a chunk's
/// output within 512 KiB); here each image's output is 512 KiB, so every
/// chunk is one image, three of them shared among the threads, and five
/// images of half that size make chunks of one as well (5 has no other
/// divisor that fits). The pooled values and every argmax must be the
/// reference's, with the kernel in HWIO and in OHWI (filter_layout).
TEST(CpuDnnlKernels, ConvPoolInChunksOfImages) {
  cpu::registerCpuKernels();
  KernelConfig hwio;
  // tanh: the one-channel path of relu layers (VectorConvPoolKernels.cpp)
  // stays out, so oneDNN's chunks run.
  hwio.set("padding", std::string("valid"))
      .set("strides", std::vector<int64_t>{1, 1})
      .set("activation", std::string("tanh"))
      .set("pool_size", std::vector<int64_t>{2, 2})
      .set("pool_strides", std::vector<int64_t>{2, 2})
      .set("pool_padding", std::string("valid"));
  KernelConfig ohwi = hwio;
  ohwi.set("filter_layout", std::string("ohwi"));
  for (auto [n, side, filters, layout] :
       {std::tuple<int64_t, int64_t, int64_t, bool>{3, 130, 8, false},
        {5, 130, 4, false},
        {3, 130, 8, true},
        {5, 130, 4, true}}) {
    const KernelConfig &cfg = layout ? ohwi : hwio;
    int64_t out = (side - 2) / 2;
    Tensor x =
        Tensor::f32({n, side, side, 1}, uniform(n * side * side, -1, 1, 1));
    Tensor k = Tensor::f32({3, 3, 1, filters}, uniform(9 * filters, -1, 1, 2));
    if (layout)
      k = hwioToOhwi(k, 1, 1); // [filters, 3, 3, 1]
    Tensor b = Tensor::f32({filters}, uniform(filters, -0.5, 0.5, 3));
    std::vector<int64_t> pooled = {n, out, out, filters};
    std::vector<Tensor> y, at;
    for (Backend backend : {Backend::reference, Backend::cpu}) {
      y.push_back(Tensor::f32(pooled));
      at.push_back(Tensor::make(pooled, graph::plan::DType::i32));
      Status s = launch("fused_conv2d_pool", cfg, {&x, &k, &b},
                        {&y.back(), &at.back()}, {}, backend);
      ASSERT_TRUE(s.isOk()) << backendName(backend) << ": " << s.message();
    }
    std::vector<double> ey = y[0].values(), ay = y[1].values();
    std::vector<double> ea = at[0].values(), aa = at[1].values();
    int64_t mismatches = 0;
    for (size_t i = 0; i < ey.size(); ++i) {
      EXPECT_NEAR(ay[i], ey[i], 1e-5 * std::max(1.0, std::abs(ey[i])))
          << "batch " << n << (layout ? " ohwi" : " hwio") << " element " << i;
      mismatches += aa[i] != ea[i];
    }
    EXPECT_EQ(mismatches, 0)
        << "batch " << n << (layout ? " ohwi" : " hwio") << ": argmax differs";
  }
}

/// Convolutions large enough for oneDNN's blocked (jit) weights, plain and
/// grouped, with the kernel in OHWI (oneDNN's ohwi and gohwi tags on the
/// plan's memory): forward, backward data and backward weights, over a
/// batch split among the threads (a small output image) and over a whole
/// one. Each matches the reference in OHWI, and is bit for bit what the cpu
/// backend computes from the same kernel in HWIO (oneDNN reorders either
/// into the same blocked weights; the gradient permuted back to HWIO).
TEST(CpuDnnlKernels, OhwiKernelsOnBlockedWeights) {
  cpu::registerCpuKernels();
  struct C {
    std::string label;
    std::vector<int64_t> x, k; // k: OHWI
    int64_t groups;
    std::vector<int64_t> y;
  };
  const C cases[] = {
      {"32 to 48, 7x7 out", {4, 9, 9, 32}, {48, 3, 3, 32}, 1, {4, 7, 7, 48}},
      {"32 to 64, 18x18 out",
       {2, 20, 20, 32},
       {64, 3, 3, 32},
       1,
       {2, 18, 18, 64}},
      {"groups 4, 32 to 32", {4, 9, 9, 32}, {32, 3, 3, 8}, 4, {4, 7, 7, 32}},
      {"depthwise 16, m2", {2, 12, 12, 16}, {32, 3, 3, 1}, 16, {2, 10, 10, 32}},
  };
  auto elements = [](const std::vector<int64_t> &s) {
    int64_t n = 1;
    for (int64_t d : s)
      n *= d;
    return n;
  };
  for (const C &c : cases) {
    KernelConfig ohwi;
    ohwi.set("padding", std::string("valid"))
        .set("strides", std::vector<int64_t>{1, 1})
        .set("groups", c.groups);
    KernelConfig hwio = ohwi;
    ohwi.set("filter_layout", std::string("ohwi"));
    // [F, kh, kw, C / groups] as [kh, kw, C / groups, F].
    const std::vector<int64_t> hwioShape = {c.k[1], c.k[2], c.k[3], c.k[0]};
    Tensor x = Tensor::f32(c.x, uniform(elements(c.x), -1, 1, 11));
    Tensor k = Tensor::f32(c.k, uniform(elements(c.k), -1, 1, 12));
    Tensor kHwio = ohwiToHwio(k, hwioShape);
    Tensor dy = Tensor::f32(c.y, uniform(elements(c.y), -1, 1, 13));
    struct Launch {
      std::string kernel;
      std::vector<Tensor *> ins, hwioIns;
      std::vector<int64_t> out, hwioOut;
    };
    const Launch launches[] = {
        {"conv2d", {&x, &k}, {&x, &kHwio}, c.y, c.y},
        {"conv2d_grad_input", {&dy, &k}, {&dy, &kHwio}, c.x, c.x},
        {"conv2d_grad_kernel", {&x, &dy}, {&x, &dy}, c.k, hwioShape}};
    for (const Launch &l : launches) {
      SCOPED_TRACE(l.kernel + " (" + c.label + ")");
      Tensor expected = Tensor::f32(l.out), actual = Tensor::f32(l.out);
      Tensor fromHwio = Tensor::f32(l.hwioOut);
      RUN_OK(l.kernel, ohwi, l.ins, {&expected}, {}, Backend::reference);
      RUN_OK(l.kernel, ohwi, l.ins, {&actual}, {}, Backend::cpu);
      RUN_OK(l.kernel, hwio, l.hwioIns, {&fromHwio}, {}, Backend::cpu);
      if (l.kernel == "conv2d_grad_kernel")
        fromHwio = hwioToOhwi(fromHwio, c.x[3], c.groups);
      std::vector<double> e = expected.values(), a = actual.values();
      int64_t far = 0;
      for (size_t i = 0; i < e.size(); ++i)
        far += std::abs(a[i] - e[i]) > 1e-4 * std::max(1.0, std::abs(e[i]));
      EXPECT_EQ(far, 0) << "elements off the reference";
      EXPECT_EQ(a, fromHwio.values()) << "differs from the HWIO kernel's";
    }
  }
}

/// fused_conv2d_pool and its gradients in a bfloat16 or float16 plan
/// compute what the unfused ops do (ReducedConvPoolCheck.h): on the
/// reference, and on the cpu backend's path for this CPU (GRAPH_CPU_BF16's
/// default; cpu-bf16-tests forces oneDNN's), over convPoolCases().
TEST(CpuDnnlKernels, ReducedConvPoolAsUnfused) {
  cpu::registerCpuKernels();
  for (Backend backend : {Backend::reference, Backend::cpu})
    for (auto type : {graph::plan::DType::bf16, graph::plan::DType::f16})
      for (const ConvPoolCase &c : convPoolCases())
        expectFusedConvPoolAsUnfused(backend, type, c);
}

} // namespace
