//===- DnnlKernelsTest.cpp - cpu oneDNN kernels beyond conformance --------===//
//
// Paths of the oneDNN kernels the conformance cases' small shapes do not
// take, against the reference backend.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

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
/// reference's.
TEST(CpuDnnlKernels, ConvPoolInChunksOfImages) {
  cpu::registerCpuKernels();
  KernelConfig cfg;
  cfg.set("padding", std::string("valid"))
      .set("strides", std::vector<int64_t>{1, 1})
      .set("activation", std::string("relu"))
      .set("pool_size", std::vector<int64_t>{2, 2})
      .set("pool_strides", std::vector<int64_t>{2, 2})
      .set("pool_padding", std::string("valid"));
  for (auto [n, side, filters] :
       {std::tuple<int64_t, int64_t, int64_t>{3, 130, 8}, {5, 130, 4}}) {
    int64_t out = (side - 2) / 2;
    Tensor x =
        Tensor::f32({n, side, side, 1}, uniform(n * side * side, -1, 1, 1));
    Tensor k = Tensor::f32({3, 3, 1, filters}, uniform(9 * filters, -1, 1, 2));
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
          << "batch " << n << " element " << i;
      mismatches += aa[i] != ea[i];
    }
    EXPECT_EQ(mismatches, 0) << "batch " << n << ": argmax differs";
  }
}

} // namespace
