//===- Bfloat16.cpp - bfloat16 <-> float32, many at a time ----------------===//

#include "runtime/base/Bfloat16.h"

namespace graph::runtime {

// The build targets the x86-64 baseline (SSE2), where these loops ran 3-4x
// slower than on AVX-512 (93,322 values: rounding 46 against 14 us,
// widening 21 against 10, a sum 67 against 18): each is compiled for
// x86-64-v4 (AVX-512), v3 (AVX2) and the baseline, and the loader picks
// the CPU's (GCC's target_clones, an ifunc).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define GRAPH_BF16_CLONES                                                      \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define GRAPH_BF16_CLONES
#endif

GRAPH_BF16_CLONES
void floatsToBf16(const float *src, uint16_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = floatToBf16(src[i]);
}

GRAPH_BF16_CLONES
void bf16sToFloats(const uint16_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    dst[i] = bf16ToFloat(src[i]);
}

GRAPH_BF16_CLONES
void addBf16(const uint16_t *addend, uint16_t *sum, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    sum[i] = floatToBf16(bf16ToFloat(addend[i]) + bf16ToFloat(sum[i]));
}

} // namespace graph::runtime
