//===- Bfloat16.h - bfloat16 <-> float32 on the host -------------*- C++
//-*-===//
//
// The two conversions every layer that touches bfloat16 shares: the
// runtime's reduced-precision kernels (runtime/core/ReducedPrecision.h) and
// the collectives' bf16 all-reduce across workers. A bfloat16 is the top
// half of a float32; narrowing rounds to nearest, ties to even. The bulk
// forms (Bfloat16.cpp) are compiled for AVX-512, AVX2 and the x86-64
// baseline, the CPU picking at load time.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_BFLOAT16_H
#define RUNTIME_BASE_BFLOAT16_H

#include <bit>
#include <cstdint>

namespace graph::runtime {

inline float bf16ToFloat(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// Round to nearest even; a NaN stays a (quiet) NaN, infinities stay.
inline uint16_t floatToBf16(float value) {
  uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

/// `n` floats at `src` rounded to bfloat16 at `dst`.
void floatsToBf16(const float *src, uint16_t *dst, int64_t n);
/// `n` bfloat16 values at `src` widened (exactly) to float32 at `dst`.
void bf16sToFloats(const uint16_t *src, float *dst, int64_t n);
/// sum[i] = bf16(float(addend[i]) + float(sum[i])) for `n` values: one step
/// of a bfloat16 all-reduce.
void addBf16(const uint16_t *addend, uint16_t *sum, int64_t n);

} // namespace graph::runtime

#endif // RUNTIME_BASE_BFLOAT16_H
