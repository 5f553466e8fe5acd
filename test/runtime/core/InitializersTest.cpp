//===- InitializersTest.cpp - Keras initializers from Philox --------------===//

#include "runtime/core/Initializers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

using namespace graph::runtime;
namespace plan = graph::plan;

namespace {

std::vector<float> init(const std::string &name, std::vector<int64_t> shape,
                        plan::InitKind kind, uint64_t seed = 7) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  InitSpec spec;
  spec.kind = kind;
  EXPECT_TRUE(initializeVariable(name, shape, spec, seed, out.data()));
  return out;
}

void stats(const std::vector<float> &v, double &mean, double &stddev,
           double &maxAbs) {
  double s = 0, s2 = 0;
  maxAbs = 0;
  for (float x : v) {
    s += x;
    s2 += static_cast<double>(x) * x;
    maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(x)));
  }
  mean = s / v.size();
  stddev = std::sqrt(s2 / v.size() - mean * mean);
}

} // namespace

TEST(Philox, KnownAnswers) {
  // Random123's kat_vectors for philox4x32-10.
  auto a = philox4x32({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(a[0], 0x6627e8d5u);
  EXPECT_EQ(a[1], 0xe169c58du);
  EXPECT_EQ(a[2], 0xbc57ac4cu);
  EXPECT_EQ(a[3], 0x9b00dbd8u);
  auto b = philox4x32({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
                      {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(b[0], 0x408f276du);
  EXPECT_EQ(b[1], 0x41c83b0eu);
  EXPECT_EQ(b[2], 0xa20bc7c6u);
  EXPECT_EQ(b[3], 0x6d5451fdu);
}

TEST(Initializers, Fans) {
  double in = 0, out = 0;
  computeFans({3, 3, 1, 32}, in, out); // HWIO
  EXPECT_EQ(in, 9);
  EXPECT_EQ(out, 288);
  computeFans({576, 64}, in, out);
  EXPECT_EQ(in, 576);
  EXPECT_EQ(out, 64);
  computeFans({10}, in, out);
  EXPECT_EQ(in, 10);
  EXPECT_EQ(out, 10);
  computeFans({}, in, out);
  EXPECT_EQ(in, 1);
  EXPECT_EQ(out, 1);
}

TEST(Initializers, SameNameAndSeedSameValues) {
  auto a = init("dense/kernel", {576, 64}, plan::InitKind::glorot_uniform);
  auto b = init("dense/kernel", {576, 64}, plan::InitKind::glorot_uniform);
  EXPECT_EQ(a, b);
}

TEST(Initializers, DifferentNamesOrSeedsDiffer) {
  auto a = init("dense/kernel", {64, 10}, plan::InitKind::glorot_uniform);
  auto b = init("dense_1/kernel", {64, 10}, plan::InitKind::glorot_uniform);
  auto c = init("dense/kernel", {64, 10}, plan::InitKind::glorot_uniform, 8);
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  int equal = 0;
  for (size_t i = 0; i < a.size(); ++i)
    equal += a[i] == b[i];
  EXPECT_LT(equal, 3);
}

TEST(Initializers, ElementDependsOnlyOnItsIndex) {
  // A longer tensor of the same name starts with the same values when the
  // fans agree: no element depends on how many were drawn before it.
  InitSpec spec;
  spec.kind = plan::InitKind::random_normal;
  std::vector<float> a(100), b(1000);
  ASSERT_TRUE(initializeVariable("v", {100}, spec, 3, a.data()));
  ASSERT_TRUE(initializeVariable("v", {1000}, spec, 3, b.data()));
  EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin()));
}

TEST(Initializers, GlorotUniformLimits) {
  auto v = init("dense/kernel", {576, 64}, plan::InitKind::glorot_uniform);
  double limit = std::sqrt(6.0 / (576 + 64));
  double mean, stddev, maxAbs;
  stats(v, mean, stddev, maxAbs);
  EXPECT_LE(maxAbs, limit);
  EXPECT_GT(maxAbs, 0.99 * limit);
  EXPECT_NEAR(mean, 0.0, 0.01 * limit);
  EXPECT_NEAR(stddev, limit / std::sqrt(3.0), 0.01 * limit);
}

TEST(Initializers, HeNormalStddev) {
  // Keras: a normal truncated at 2 stddev, scaled by 1/0.8796 so that the
  // truncated distribution has stddev sqrt(2 / fan_in).
  auto v = init("conv2d_2/kernel", {3, 3, 64, 64}, plan::InitKind::he_normal);
  double target = std::sqrt(2.0 / (3 * 3 * 64));
  double mean, stddev, maxAbs;
  stats(v, mean, stddev, maxAbs);
  EXPECT_NEAR(stddev, target, 0.02 * target);
  EXPECT_NEAR(mean, 0.0, 0.02 * target);
  EXPECT_LE(maxAbs, 2.0 * target / 0.87962566103423978 + 1e-6);
}

TEST(Initializers, OtherKinds) {
  auto z = init("b", {5}, plan::InitKind::zeros);
  auto o = init("b", {5}, plan::InitKind::ones);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(z[i], 0.0f);
    EXPECT_EQ(o[i], 1.0f);
  }
  InitSpec spec;
  spec.kind = plan::InitKind::constant;
  spec.value = 0.25;
  std::vector<float> c(3);
  ASSERT_TRUE(initializeVariable("c", {3}, spec, 0, c.data()));
  EXPECT_EQ(c[2], 0.25f);

  spec = InitSpec();
  spec.kind = plan::InitKind::random_uniform;
  spec.minval = 2;
  spec.maxval = 3;
  std::vector<float> u(100000);
  ASSERT_TRUE(initializeVariable("u", {100000}, spec, 0, u.data()));
  double mean, stddev, maxAbs;
  stats(u, mean, stddev, maxAbs);
  EXPECT_GE(*std::min_element(u.begin(), u.end()), 2.0f);
  EXPECT_LE(maxAbs, 3.0);
  EXPECT_NEAR(mean, 2.5, 0.01);

  spec = InitSpec();
  spec.kind = plan::InitKind::random_normal;
  spec.mean = 1;
  spec.stddev = 0.5;
  ASSERT_TRUE(initializeVariable("n", {100000}, spec, 0, u.data()));
  stats(u, mean, stddev, maxAbs);
  EXPECT_NEAR(mean, 1.0, 0.01);
  EXPECT_NEAR(stddev, 0.5, 0.01);

  spec.kind = plan::InitKind::truncated_normal;
  spec.mean = 0;
  ASSERT_TRUE(initializeVariable("t", {100000}, spec, 0, u.data()));
  stats(u, mean, stddev, maxAbs);
  EXPECT_LE(maxAbs, 1.0 + 1e-6);
  EXPECT_NEAR(stddev, 0.5 * 0.87962566103423978, 0.01);

  for (auto kind :
       {plan::InitKind::glorot_normal, plan::InitKind::he_uniform,
        plan::InitKind::lecun_normal, plan::InitKind::lecun_uniform}) {
    auto v = init("k", {300, 200}, kind);
    stats(v, mean, stddev, maxAbs);
    double fanIn = 300, fanAvg = 250;
    double expected =
        kind == plan::InitKind::glorot_normal ? std::sqrt(1 / fanAvg)
        : kind == plan::InitKind::he_uniform  ? std::sqrt(2 / fanIn)
                                              : std::sqrt(1 / fanIn);
    EXPECT_NEAR(stddev, expected, 0.03 * expected)
        << plan::EnumNameInitKind(kind);
  }
}

TEST(Initializers, OwnSeedOverridesRunSeed) {
  InitSpec spec;
  spec.kind = plan::InitKind::glorot_uniform;
  spec.hasSeed = true;
  spec.seed = 42;
  std::vector<float> a(64), b(64);
  ASSERT_TRUE(initializeVariable("k", {8, 8}, spec, 1, a.data()));
  ASSERT_TRUE(initializeVariable("k", {8, 8}, spec, 2, b.data()));
  EXPECT_EQ(a, b);
}
