//===- ReducedPrecisionTest.cpp - bf16/f16 conversions and widened kernels ===//
//
// The oracle is IEEE 754's round-to-nearest-even, written out as bit
// patterns: bfloat16 keeps float32's exponent and 7 fraction bits, float16
// has 5 exponent bits (bias 15) and 10 fraction bits.

#include "runtime/core/ReducedPrecision.h"
#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/core/DenormalMode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

using namespace graph::runtime;
using graph::plan::DType;

namespace {

float bits(uint32_t u) { return std::bit_cast<float>(u); }

TEST(ReducedPrecision, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(floatToBf16(bits(0x3f808000)), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: the latter.
  EXPECT_EQ(floatToBf16(bits(0x3f818000)), 0x3f82);
  // Just above the halfway point rounds up, just below rounds down.
  EXPECT_EQ(floatToBf16(bits(0x3f808001)), 0x3f81);
  EXPECT_EQ(floatToBf16(bits(0x3f807fff)), 0x3f80);
  // The largest float rounds up to infinity; infinities and subnormals
  // keep their form.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_EQ(floatToBf16(bits(0x00010000)), 0x0001);
  // A NaN whose payload sits in the low half stays a NaN.
  uint16_t nan = floatToBf16(bits(0x7f800001));
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_EQ(bf16ToFloat(0x3f82), 1.015625f);
}

TEST(ReducedPrecision, Float16RoundsToNearestEven) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: to 1.
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff);
  // Halfway between 65504 and the next step (65536) rounds to even: inf.
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  // The smallest subnormal, 2^-24, and half of it (a tie, to zero).
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f16ToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(floatToF16(1.0f / 3.0f), 0x3555);
}

// The bulk float16 conversions (F16C where the CPU has it) agree with the
// scalar ones bit for bit: every half to float, and floats across the
// half range (subnormal halves, the rounding boundaries, overflow past
// 65504, infinities, NaN) to half, with subnormal floats flushed on the
// thread (the cpu backend's compute threads) and without.
TEST(ReducedPrecision, BulkFloat16MatchesTheScalarConversion) {
  std::vector<uint16_t> halves(65536);
  for (uint32_t h = 0; h < 65536; ++h)
    halves[h] = static_cast<uint16_t>(h);
  std::vector<float> floats;
  for (uint32_t u = 0; u < 0xffffffffu - 4093; u += 4093)
    floats.push_back(bits(u)); // every exponent, signs, NaNs
  for (float f : {65504.0f, 65519.99f, 65520.0f, 5.96e-8f, 2.98e-8f, 2.99e-8f,
                  6.1e-5f, 1e-40f, -1e-40f})
    floats.push_back(f);
  for (bool flush : {false, true}) {
    ScopedDenormalMode mode(flush);
    std::vector<float> wide(halves.size());
    convertFloats(halves.data(), DType::f16, wide.data(), DType::f32,
                  static_cast<int64_t>(halves.size()));
    for (size_t h = 0; h < halves.size(); ++h) {
      float want = f16ToFloat(halves[h]);
      if (std::isnan(want))
        EXPECT_TRUE(std::isnan(wide[h])) << "half 0x" << std::hex << h;
      else
        EXPECT_EQ(std::bit_cast<uint32_t>(wide[h]),
                  std::bit_cast<uint32_t>(want))
            << "half 0x" << std::hex << h << (flush ? " (flushing)" : "");
    }
    std::vector<uint16_t> narrow(floats.size());
    convertFloats(floats.data(), DType::f32, narrow.data(), DType::f16,
                  static_cast<int64_t>(floats.size()));
    for (size_t i = 0; i < floats.size(); ++i) {
      uint16_t want = floatToF16(floats[i]);
      if (std::isnan(floats[i]))
        EXPECT_TRUE(std::isnan(f16ToFloat(narrow[i])));
      else if (std::fpclassify(floats[i]) == FP_SUBNORMAL)
        // A subnormal float is far below the smallest half: zero, the
        // sign kept or not as the flushing CPU leaves it.
        EXPECT_EQ(narrow[i] & 0x7fff, 0) << floats[i];
      else
        EXPECT_EQ(narrow[i], want) << floats[i] << (flush ? " (flushing)" : "");
    }
  }
}

TEST(ReducedPrecision, CastKernelConvertsBetweenTypes) {
  std::vector<float> in = {1.0f, bits(0x3f808000), bits(0x3f818000), -3.0f};
  std::vector<uint16_t> half(4);
  std::vector<float> back(4);
  TensorRef src{in.data(), {4}, DType::f32};
  TensorRef mid{half.data(), {4}, DType::bf16};
  TensorRef dst{back.data(), {4}, DType::f32};
  ASSERT_TRUE(castKernel({}, {}, {src}, {mid}));
  EXPECT_EQ(half, (std::vector<uint16_t>{0x3f80, 0x3f80, 0x3f82, 0xc040}));
  ASSERT_TRUE(castKernel({}, {}, {mid}, {dst}));
  EXPECT_EQ(back, (std::vector<float>{1.0f, 1.0f, 1.015625f, -3.0f}));
  // bf16 to f16: exact here.
  std::vector<uint16_t> f16(4);
  TensorRef h{f16.data(), {4}, DType::f16};
  ASSERT_TRUE(castKernel({}, {}, {mid}, {h}));
  EXPECT_EQ(f16, (std::vector<uint16_t>{0x3c00, 0x3c00, 0x3c10, 0xc200}));
  TensorRef wrong{back.data(), {2}, DType::f32};
  EXPECT_FALSE(castKernel({}, {}, {src}, {wrong}));
}

/// out[i] = in[i] + 1/3, in float32.
Status addThird(const KernelContext &, const KernelConfig &,
                const std::vector<TensorRef> &ins,
                const std::vector<TensorRef> &outs) {
  if (ins[0].dtype != DType::f32 || outs[0].dtype != DType::f32)
    return Status::error("expects f32");
  for (int64_t i = 0; i < ins[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] + 1.0f / 3.0f;
  return Status::ok();
}

TEST(ReducedPrecision, Float32KernelRunsOnWidenedCopies) {
  KernelRegistry &registry = KernelRegistry::global();
  registry.add("test.add_third", Backend::reference, addThird);
  std::vector<uint16_t> x = {floatToBf16(1.0f), floatToBf16(-2.0f)};
  std::vector<uint16_t> y(2);
  TensorRef in{x.data(), {2}, DType::bf16};
  TensorRef out{y.data(), {2}, DType::bf16};
  KernelFn fn;
  ASSERT_TRUE(registry.instantiate("test.add_third", Backend::reference, {}, {},
                                   {in}, {out}, fn));
  ASSERT_TRUE(fn({}, {}, {in}, {out}));
  // 4/3 and -5/3 in float32, then rounded once to bfloat16.
  EXPECT_EQ(y[0], floatToBf16(1.0f + 1.0f / 3.0f));
  EXPECT_EQ(y[1], floatToBf16(-2.0f + 1.0f / 3.0f));
  // The inputs are read again on every run.
  x[0] = floatToBf16(4.0f);
  ASSERT_TRUE(fn({}, {}, {in}, {out}));
  EXPECT_EQ(y[0], floatToBf16(4.0f + 1.0f / 3.0f));

  // In place: the output is the input's buffer, and one copy serves both.
  KernelFn inPlace;
  ASSERT_TRUE(registry.instantiate("test.add_third", Backend::reference, {}, {},
                                   {in}, {in}, inPlace));
  x[0] = floatToBf16(1.0f);
  ASSERT_TRUE(inPlace({}, {}, {in}, {in}));
  ASSERT_TRUE(inPlace({}, {}, {in}, {in}));
  float once = bf16ToFloat(floatToBf16(1.0f + 1.0f / 3.0f));
  EXPECT_EQ(x[0], floatToBf16(once + 1.0f / 3.0f));
}

TEST(ReducedPrecision, LaunchesShareTheDeviceScratch) {
  // Two launches of one device, each run in turn as a host device's thread
  // runs them, their copies in one scratch sized for the larger.
  KernelRegistry &registry = KernelRegistry::global();
  registry.add("test.add_third", Backend::reference, addThird);
  std::vector<uint16_t> a = {floatToBf16(1.0f), floatToBf16(2.0f)}, b(2);
  std::vector<uint16_t> c = {floatToBf16(-1.0f)}, d(1);
  TensorRef ta{a.data(), {2}, DType::bf16}, tb{b.data(), {2}, DType::bf16};
  TensorRef tc{c.data(), {1}, DType::bf16}, td{d.data(), {1}, DType::bf16};
  EXPECT_EQ(registry.widenedElements("test.add_third", Backend::reference, {ta},
                                     {tb}),
            4);
  EXPECT_EQ(registry.widenedElements("test.add_third", Backend::reference, {ta},
                                     {ta}),
            2);
  // cast reads and writes bf16 itself.
  reference::registerReferenceKernels();
  EXPECT_EQ(registry.widenedElements("cast", Backend::reference, {ta}, {tb}),
            0);
  std::vector<float> scratch(4, -7.0f);
  KernelContext ctx;
  ctx.widenScratch = scratch.data();
  ctx.widenScratchElements = 4;
  KernelFn first, second;
  ASSERT_TRUE(registry.instantiate("test.add_third", Backend::reference, ctx,
                                   {}, {ta}, {tb}, first));
  ASSERT_TRUE(registry.instantiate("test.add_third", Backend::reference, ctx,
                                   {}, {tc}, {td}, second));
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(first({}, {}, {ta}, {tb}));
    ASSERT_TRUE(second({}, {}, {tc}, {td}));
    EXPECT_EQ(b[0], floatToBf16(1.0f + 1.0f / 3.0f));
    EXPECT_EQ(b[1], floatToBf16(2.0f + 1.0f / 3.0f));
    EXPECT_EQ(d[0], floatToBf16(-1.0f + 1.0f / 3.0f));
  }
  // The copies were the scratch's: the last run left its float32 there.
  EXPECT_EQ(scratch[1], -1.0f + 1.0f / 3.0f);
}

TEST(ReducedPrecision, OverlappingOperandsAreRefused) {
  KernelRegistry &registry = KernelRegistry::global();
  registry.add("test.add_third", Backend::reference, addThird);
  std::vector<uint16_t> x(4);
  TensorRef whole{x.data(), {4}, DType::bf16};
  TensorRef inner{x.data() + 1, {2}, DType::bf16};
  KernelFn fn;
  Status s = registry.instantiate("test.add_third", Backend::reference, {}, {},
                                  {whole}, {inner}, fn);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("partly overlap"), std::string::npos)
      << s.message();
  // A smaller view at the same address shares the larger one's copy.
  TensorRef head{x.data(), {2}, DType::bf16};
  EXPECT_EQ(registry.widenedElements("test.add_third", Backend::reference,
                                     {whole}, {head}),
            4);
}

TEST(ReducedPrecision, CudaRefusesRatherThanWidens) {
  KernelRegistry &registry = KernelRegistry::global();
  registry.add("test.add_third", Backend::cuda, addThird);
  std::vector<uint16_t> x(2), y(2);
  TensorRef in{x.data(), {2}, DType::bf16};
  TensorRef out{y.data(), {2}, DType::bf16};
  KernelFn fn;
  Status s = registry.instantiate("test.add_third", Backend::cuda, {}, {}, {in},
                                  {out}, fn);
  ASSERT_FALSE(s);
  EXPECT_NE(s.message().find("no reduced-precision kernels"), std::string::npos)
      << s.message();
}

} // namespace
