//===- ReducedPrecision.cpp - bfloat16 and float16 on the host ------------===//

#include "runtime/core/ReducedPrecision.h"

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace graph::runtime {

namespace {

#if defined(__x86_64__)
// float16 through F16C's VCVTPS2PH / VCVTPH2PS, 8 at a time: without
// AVX512-FP16, GCC converts a _Float16 by a library call per element, which
// made a mixed_float16 step 12x slower than float32 (bench/cpu-mixed-
// precision.sh). Round to nearest even, infinity past 65504, subnormal
// halves both ways, as the scalar conversion (ReducedPrecisionTest checks
// every half and a sweep of floats against it).
__attribute__((target("avx,f16c"))) void
floatsToF16C(const float *src, uint16_t *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(dst + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i)
    dst[i] = floatToF16(src[i]);
}

__attribute__((target("avx,f16c"))) void
f16ToFloatsF16C(const uint16_t *src, float *dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(
                                  reinterpret_cast<const __m128i *>(src + i))));
  for (; i < n; ++i)
    dst[i] = f16ToFloat(src[i]);
}

bool hasF16C() {
  static const bool has = __builtin_cpu_supports("f16c");
  return has;
}
#endif

float loadFloat(const void *src, plan::DType type, int64_t i) {
  const auto *half = static_cast<const uint16_t *>(src);
  switch (type) {
  case plan::DType::bf16:
    return bf16ToFloat(half[i]);
  case plan::DType::f16:
    return f16ToFloat(half[i]);
  default:
    return static_cast<const float *>(src)[i];
  }
}

bool isFloat(plan::DType type) {
  return type == plan::DType::f32 || isReducedFloat(type);
}

} // namespace

void convertFloats(const void *src, plan::DType from, void *dst, plan::DType to,
                   int64_t n) {
  auto *half = static_cast<uint16_t *>(dst);
  auto *single = static_cast<float *>(dst);
  // The common cases in bulk, vectorized for the CPU (Bfloat16.h, F16C).
  if (from == plan::DType::f32 && to == plan::DType::bf16)
    return floatsToBf16(static_cast<const float *>(src), half, n);
  if (from == plan::DType::bf16 && to == plan::DType::f32)
    return bf16sToFloats(static_cast<const uint16_t *>(src), single, n);
#if defined(__x86_64__)
  if (hasF16C() && from == plan::DType::f32 && to == plan::DType::f16)
    return floatsToF16C(static_cast<const float *>(src), half, n);
  if (hasF16C() && from == plan::DType::f16 && to == plan::DType::f32)
    return f16ToFloatsF16C(static_cast<const uint16_t *>(src), single, n);
#endif
  for (int64_t i = 0; i < n; ++i) {
    float v = loadFloat(src, from, i);
    switch (to) {
    case plan::DType::bf16:
      half[i] = floatToBf16(v);
      break;
    case plan::DType::f16:
      half[i] = floatToF16(v);
      break;
    default:
      single[i] = v;
    }
  }
}

Status castKernel(const KernelContext &, const KernelConfig &,
                  const std::vector<TensorRef> &ins,
                  const std::vector<TensorRef> &outs) {
  if (ins.size() != 1 || outs.size() != 1)
    return Status::error("cast: takes 1 input and 1 output");
  const TensorRef &in = ins[0], &out = outs[0];
  if (!isFloat(in.dtype) || !isFloat(out.dtype))
    return Status::error("cast: converts between f32, bf16 and f16 only");
  if (in.elements() != out.elements())
    return Status::error("cast: input " + shapeText(in.shape) + " and output " +
                         shapeText(out.shape) + " differ in size");
  convertFloats(in.data, in.dtype, out.data, out.dtype, in.elements());
  return Status::ok();
}

namespace {

/// The reduced buffers of a launch by address, each with the most
/// elements any operand at that address has (a view may be smaller).
std::map<void *, int64_t> reducedBuffers(const std::vector<TensorRef> &ins,
                                         const std::vector<TensorRef> &outs) {
  std::map<void *, int64_t> buffers;
  for (const auto *list : {&ins, &outs})
    for (const TensorRef &t : *list)
      if (isReducedFloat(t.dtype)) {
        int64_t &elements = buffers[t.data];
        elements = std::max(elements, t.elements());
      }
  return buffers;
}

} // namespace

int64_t widenedCopyElements(const std::vector<TensorRef> &ins,
                            const std::vector<TensorRef> &outs) {
  int64_t total = 0;
  for (auto [data, elements] : reducedBuffers(ins, outs))
    total += elements;
  return total;
}

Status instantiateWidened(const KernelFactory &factory,
                          const KernelContext &ctx, const KernelConfig &config,
                          const std::vector<TensorRef> &ins,
                          const std::vector<TensorRef> &outs, KernelFn &out) {
  // One float32 copy per reduced buffer (an output that aliases an input,
  // an in-place kernel, shares its copy), carved from the device's scratch
  // or from storage of the launch's own.
  int64_t needed = widenedCopyElements(ins, outs);
  std::shared_ptr<float[]> owned;
  float *next = ctx.widenScratch;
  if (!next || ctx.widenScratchElements < needed) {
    owned.reset(new float[needed]());
    next = owned.get();
  }
  struct Copy {
    TensorRef reduced;
    float *wide;
  };
  // Operands at one address share a copy of the largest of them; two
  // reduced buffers that overlap otherwise would not see each other's
  // writes through their copies.
  std::map<void *, int64_t> buffers = reducedBuffers(ins, outs);
  const std::byte *end = nullptr;
  for (auto [data, elements] : buffers) {
    if (static_cast<const std::byte *>(data) < end)
      return Status::error("bfloat16/float16 operands that partly overlap "
                           "cannot run on widened copies");
    end = static_cast<const std::byte *>(data) + elements * 2;
  }
  std::vector<Copy> copies;
  std::map<void *, size_t> byAddress;
  auto widen = [&](const TensorRef &t) {
    if (!isReducedFloat(t.dtype))
      return t;
    auto [it, fresh] = byAddress.try_emplace(t.data, copies.size());
    if (fresh) {
      TensorRef whole = t;
      whole.shape = {buffers[t.data]};
      copies.push_back({whole, next});
      next += buffers[t.data];
    }
    TensorRef wide = t;
    wide.data = copies[it->second].wide;
    wide.dtype = plan::DType::f32;
    return wide;
  };
  std::vector<TensorRef> wideIns, wideOuts;
  for (const TensorRef &t : ins)
    wideIns.push_back(widen(t));
  for (const TensorRef &t : outs)
    wideOuts.push_back(widen(t));
  std::vector<Copy> reducedIns, reducedOuts;
  for (const TensorRef &t : ins)
    if (isReducedFloat(t.dtype))
      reducedIns.push_back(copies[byAddress[t.data]]);
  for (const TensorRef &t : outs)
    if (isReducedFloat(t.dtype))
      reducedOuts.push_back(copies[byAddress[t.data]]);

  KernelFn inner;
  if (Status s = factory(ctx, config, wideIns, wideOuts, inner); !s)
    return s;
  out = [owned, inner = std::move(inner), wideIns = std::move(wideIns),
         wideOuts = std::move(wideOuts), reducedIns = std::move(reducedIns),
         reducedOuts = std::move(reducedOuts)](
            const KernelContext &c, const KernelConfig &cfg,
            const std::vector<TensorRef> &,
            const std::vector<TensorRef> &) -> Status {
    for (const Copy &copy : reducedIns)
      convertFloats(copy.reduced.data, copy.reduced.dtype, copy.wide,
                    plan::DType::f32, copy.reduced.elements());
    // Arenas never move, so the launch's buffers are the ones seen at
    // instantiation: the kernel runs on their copies.
    if (Status s = inner(c, cfg, wideIns, wideOuts); !s)
      return s;
    for (const Copy &copy : reducedOuts)
      convertFloats(copy.wide, plan::DType::f32, copy.reduced.data,
                    copy.reduced.dtype, copy.reduced.elements());
    return Status::ok();
  };
  return Status::ok();
}

} // namespace graph::runtime
