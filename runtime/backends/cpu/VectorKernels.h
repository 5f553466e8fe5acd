//===- VectorKernels.h - what the cpu vector kernels share ------*- C++ -*-===//
//
// The own-loop half of the cpu backend (Vector*Kernels.cpp): checks every
// factory makes, the size below which a kernel stays on its calling thread,
// and float math written so that a `#pragma omp simd` loop vectorises it.
// glibc's vector expf/tanhf are declared only under -ffast-math, which would
// also license reassociating the sums the kernels keep exact; these
// polynomial forms (Cephes' coefficients, oneDNN's erf) are accurate to a
// few float ulps and inline into any loop.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CPU_VECTORKERNELS_H
#define RUNTIME_BACKENDS_CPU_VECTORKERNELS_H

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/core/Kernel.h"
#include "runtime/core/WindowGeometry.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#ifdef __AVX__
#include <immintrin.h>
#endif

namespace graph::runtime::cpu::vec {

/// Below this many elements a kernel runs on its calling thread: waking the
/// OpenMP team (a few microseconds) costs more than streaming 128 KiB.
constexpr int64_t kParallelElements = int64_t{1} << 15;

/// `count` elements of per-thread scratch that only grows, kept across
/// steps, so that the steady-state step allocates nothing
/// (SteadyStateTest checks). `Slot` tells apart buffers of one type a
/// kernel holds at once; kernels never nest, so they may share slots.
template <typename T, int Slot = 0> T *threadScratch(size_t count) {
  thread_local std::vector<T> buffer;
  if (buffer.size() < count)
    buffer.resize(count);
  return buffer.data();
}

/// `kernel: message`, the form of every factory error.
inline Status kernelError(const char *kernel, const std::string &message) {
  return Status::error(std::string(kernel) + ": " + message);
}

/// An optional per-row input (`what`: sample_weight, metric_weight) at
/// `index`: f32 [rows] when present.
inline Status checkRowWeights(const char *kernel,
                              const std::vector<TensorRef> &ins, size_t index,
                              int64_t rows,
                              const char *what = "sample_weight") {
  if (ins.size() <= index)
    return Status::ok();
  if (ins[index].dtype != plan::DType::f32 || ins[index].elements() != rows)
    return kernelError(kernel,
                       std::string(what) + " " + shapeText(ins[index].shape) +
                           " must be f32 [" + std::to_string(rows) + "]");
  return Status::ok();
}

/// outer x size x inner around `axis` (negative counts from the end); false
/// when the axis is out of range.
inline bool splitAxis(const std::vector<int64_t> &shape, int64_t axis,
                      int64_t &outer, int64_t &size, int64_t &inner,
                      int64_t &normalized) {
  int64_t rank = static_cast<int64_t>(shape.size());
  normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    return false;
  outer = inner = 1;
  for (int64_t d = 0; d < normalized; ++d)
    outer *= shape[d];
  for (int64_t d = normalized + 1; d < rank; ++d)
    inner *= shape[d];
  size = shape[normalized];
  return true;
}

//===----------------------------------------------------------------------===//
// Float math for simd loops
//===----------------------------------------------------------------------===//

/// `condition ? a : b` for simd loops, as a bitwise blend. GCC 12 sinks a
/// float operation that only one arm of a ?: uses into a branch of its own,
/// and without -fno-trapping-math it will not if-convert that branch back:
/// the whole loop would stay scalar. Both arms here are computed, always.
[[gnu::always_inline]] inline float simdSelect(bool condition, float a,
                                               float b) {
  uint32_t mask = 0u - static_cast<uint32_t>(condition);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & mask) |
                              (std::bit_cast<uint32_t>(b) & ~mask));
}

/// e^x to about 2 ulp. Arguments are clamped to [-87, 88], where 2^n stays a
/// normal float: e^-87 (1.6e-38) stands for every smaller result and e^88
/// (1.7e38) for every larger one, which no caller tells apart from 0 or
/// infinity; NaN stays NaN.
[[gnu::always_inline]] inline float simdExp(float x) {
  // The clamp is integer min on the bits (see simdSelect for why not a
  // float ?:). As unsigned integers, negative floats order by magnitude
  // above every positive one; as signed, positive floats order above every
  // negative one.
  constexpr uint32_t kMinus87 = 0xC2AE0000u, kPlus88 = 0x42B00000u;
  uint32_t u = std::bit_cast<uint32_t>(x);
  u = u < kMinus87 ? u : kMinus87;
  int32_t i = static_cast<int32_t>(u);
  i = i < static_cast<int32_t>(kPlus88) ? i : static_cast<int32_t>(kPlus88);
  float c = std::bit_cast<float>(i);
  // Adding and subtracting 1.5 * 2^23 rounds to the nearest integer.
  constexpr float kRound = 12582912.0f;
  float n = (c * 1.44269504088896341f + kRound) - kRound;
  // ln 2 in two parts, so c - n ln 2 is exact for |n| <= 128.
  float r = c - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float e = p * std::bit_cast<float>(bits);
  return simdSelect(x == x, e, x);
}

/// tanh(x): an odd polynomial near zero, where 1 - 2 / (e^2x + 1) would
/// cancel, and that form elsewhere.
[[gnu::always_inline]] inline float simdTanh(float x) {
  float z = x * x;
  float small =
      ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) *
            z +
        1.33314422036e-1f) *
           z -
       3.33332819422e-1f) *
          z * x +
      x;
  float a = std::fabs(x);
  // tanh(9) rounds to 1 in float; the clamp keeps e^2a finite.
  float e = simdExp(2.0f * simdSelect(a > 9.0f, 9.0f, a)); // NaN stays
  float large = std::copysign(1.0f - 2.0f / (e + 1.0f), x);
  return simdSelect(a < 0.625f, small, large);
}

[[gnu::always_inline]] inline float simdSigmoid(float x) {
  return 1.0f / (1.0f + simdExp(-x));
}

/// The standard normal CDF Phi(x) (Abramowitz & Stegun 7.1.26 for erfc,
/// absolute error below 1.5e-7, as oneDNN's gelu_erf uses). Computed from
/// erfc on both sides, so Phi(-10) is tiny rather than 1 - 1 rounded.
[[gnu::always_inline]] inline float normalCdf(float x) {
  float a = std::fabs(x) * 0.70710678118654752f;
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly = ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t -
                 0.284496736f) *
                    t +
                0.254829592f) *
               t;
  float halfErfc = 0.5f * poly * simdExp(-a * a);
  return simdSelect(x >= 0.0f, 1.0f - halfErfc, halfErfc);
}

constexpr float kGeluTanhScale = 0.79788456080286536f; // sqrt(2 / pi)
constexpr float kGeluTanhCoefficient = 0.044715f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

/// The tanh form's 0.5 (1 + tanh(u)) as sigmoid(2u) = 1 / (1 + E), with
/// E = e^-2u: the same value without the cancellation of 1 + tanh(u) near
/// -1 (which would leave 0.5 x * 6e-8 for large negative x where the
/// reference has 0), and 1 - tanh^2(u) as 4 E / (1 + E)^2 likewise.
[[gnu::always_inline]] inline float geluTanhArgument(float x) {
  return kGeluTanhScale * (x + kGeluTanhCoefficient * x * x * x);
}

[[gnu::always_inline]] inline float gelu(float x, bool approximate) {
  if (approximate)
    return x / (1.0f + simdExp(-2.0f * geluTanhArgument(x)));
  return x * normalCdf(x);
}

[[gnu::always_inline]] inline float geluDerivative(float x, bool approximate) {
  if (approximate) {
    float e = simdExp(-2.0f * geluTanhArgument(x));
    float sigma = 1.0f / (1.0f + e); // 0.5 (1 + tanh(u))
    // 0.5 x (1 - tanh^2(u)) = 2 x sigma (1 - sigma) = 2 x sigma^2 e.
    return sigma + 2.0f * x * sigma * sigma * e * kGeluTanhScale *
                       (1.0f + 3.0f * kGeluTanhCoefficient * x * x);
  }
  return normalCdf(x) + x * kInvSqrt2Pi * simdExp(-0.5f * x * x);
}

/// x[i] = sqrt(x[i]) for a block. Its own loop, because GCC keeps std::sqrt
/// scalar under -fmath-errno (the default): it branches to sqrtf for
/// negative arguments to set errno.
inline void sqrtInPlace(float *x, int64_t n) {
  int64_t i = 0;
#ifdef __AVX__
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
#endif
  for (; i < n; ++i)
    x[i] = std::sqrt(x[i]);
}

/// dx of one image of a max pool from the forward pass's argmax
/// (WindowGeometry.h): each dy goes to the position its window's argmax
/// names, with `relu` only where y > 0. Tiling windows (stride == window)
/// write each covered position once, dy or zero, and clear only what no
/// window covers; overlapping ones clear and add. `sums`, when given: the
/// image's dx summed per channel. `streaming`: non-temporal stores (tiling
/// windows, channels a multiple of 8, dx 16-byte aligned). The cpu
/// max_pool2d_argmax_grad's loop (DnnlPoolKernels.cpp), which
/// fused_conv2d_pool_grad_kernel's writes_workspace shares.
void maxPoolArgmaxGradImage(const WindowGeometry &g, const int32_t *an,
                            const float *yn, const float *dyn, float *dxn,
                            bool relu, float *sums, bool streaming);

/// Whether fused_conv2d_pool's first-layer path (VectorConvPoolKernels.cpp)
/// takes this layer: one input channel, a window up to 3x3 at stride 1, a
/// full 2x2/2 pool (every window inside the convolution's output), filters
/// a multiple of 8, relu.
bool firstLayerConvPoolShape(const WindowGeometry &conv,
                             const ConvChannels &channels,
                             const WindowGeometry &pool,
                             const std::string &activation);

/// fused_conv2d_pool on that path, for operands its oneDNN factory
/// (DnnlConvKernels.cpp) has checked: input, kernel and optional bias in
/// one float type, the pooled output in it and the i32 argmax.
Status
makeFirstLayerConvPool(const KernelContext &ctx, const WindowGeometry &conv,
                       const ConvChannels &channels, const WindowGeometry &pool,
                       const std::vector<TensorRef> &ins,
                       const std::vector<TensorRef> &outs, KernelFn &out);

/// Whether conv2d_grad_input's sparse path (VectorConvGradInputKernels.cpp)
/// takes this convolution: stride and dilation 1, ungrouped, channels and
/// filters multiples of 8, rows of up to 3 taps, float32 weights within
/// L2 (256 KiB).
bool sparseGradInputShape(const WindowGeometry &g,
                          const ConvChannels &channels);

/// conv2d_grad_input on that path where the output gradient is sparse,
/// else `dense` (oneDNN's launch of it), for operands that launch's
/// factory has checked: f32 or bf16 throughout.
Status makeSparseConv2dGradInput(const KernelContext &ctx,
                                 const WindowGeometry &g,
                                 const ConvChannels &channels,
                                 const std::vector<TensorRef> &ins,
                                 const std::vector<TensorRef> &outs,
                                 KernelFn dense, KernelFn &out);

} // namespace graph::runtime::cpu::vec

#endif // RUNTIME_BACKENDS_CPU_VECTORKERNELS_H
