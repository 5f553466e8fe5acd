//===- ReducedPrecision.h - bfloat16 and float16 on the host ----*- C++ -*-===//
//
// The conversions a mixed-precision plan needs on the host backends, and
// the rule by which they run a float32 kernel on bfloat16 or float16
// operands: widen the inputs exactly, compute in float32, round each output
// to the nearest representable value, ties to even (TensorFlow's Cast, and
// what its CPU kernels do after computing a bf16 op in float32). That is the
// reference rounding graph-assign-precision's casts are specified by, so
// the reference backend stays the oracle of a mixed-precision step.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_REDUCEDPRECISION_H
#define RUNTIME_CORE_REDUCEDPRECISION_H

#include "runtime/base/Bfloat16.h" // bf16ToFloat, floatToBf16
#include "runtime/core/Kernel.h"

#include <bit>
#include <cstdint>

namespace graph::runtime {

inline float f16ToFloat(uint16_t bits) {
  return static_cast<float>(std::bit_cast<_Float16>(bits));
}

/// Round to nearest even; past 65504 (after rounding) is infinity.
inline uint16_t floatToF16(float value) {
  return std::bit_cast<uint16_t>(static_cast<_Float16>(value));
}

inline bool isReducedFloat(plan::DType dtype) {
  return dtype == plan::DType::bf16 || dtype == plan::DType::f16;
}

/// `n` values of `from` (f32, bf16 or f16) at `src` converted to `to` at
/// `dst`, rounding to nearest even where `to` is narrower.
void convertFloats(const void *src, plan::DType from, void *dst, plan::DType to,
                   int64_t n);

/// The float32 elements the widened copies of a launch's bf16/f16 operands
/// take: each reduced buffer once (an in-place output shares its input's).
int64_t widenedCopyElements(const std::vector<TensorRef> &ins,
                            const std::vector<TensorRef> &outs);

/// Whether any operand of a launch is bf16 or f16: the TakesReduced of a
/// kernel that computes on either itself (KernelRegistry::addFactory).
inline bool hasReducedFloats(const std::vector<TensorRef> &ins,
                             const std::vector<TensorRef> &outs) {
  return widenedCopyElements(ins, outs) > 0;
}

/// `factory` (a float32 kernel) for a launch with bf16/f16 operands: the
/// kernel gets float32 copies of them, its reduced inputs widened before
/// each run and its reduced outputs rounded after it. The copies live in
/// ctx.widenScratch when the executor gives one (it must hold
/// widenedCopyElements), else the launch owns them.
Status instantiateWidened(const KernelFactory &factory,
                          const KernelContext &ctx, const KernelConfig &config,
                          const std::vector<TensorRef> &ins,
                          const std::vector<TensorRef> &outs, KernelFn &out);

/// graph.cast: one float tensor to another float type (KernelFn).
Status castKernel(const KernelContext &ctx, const KernelConfig &config,
                  const std::vector<TensorRef> &ins,
                  const std::vector<TensorRef> &outs);

} // namespace graph::runtime

#endif // RUNTIME_CORE_REDUCEDPRECISION_H
