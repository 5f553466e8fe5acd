//===- VectorConvPoolKernels.cpp - a first layer's conv and pool ----------===//
//
// fused_conv2d_pool's first-layer path: one input channel, a window up to
// 3x3 at stride 1, a full 2x2/2 pool after it, filters a multiple of 8 (the
// seed CNN's conv 1, and the first layer of most grey-image models). Each
// pooled position's four convolution outputs are summed in registers, 8 or
// 16 filters at a time, then biased, activated, rounded to the plan's type
// and pooled there: the convolution's output is never stored.
//
// oneDNN's path (DnnlConvKernels.cpp: ConvPool) convolves a chunk of
// images into an L2 buffer and pools it from there. With one input channel
// the convolution is 9 products an output; the buffer's store and reload
// and the widening of the chunk's input cost as much as they do. On the
// seed CNN's conv 1 (bench/cpu-kernels, 2 threads, batch 256) that path
// takes 1.1-1.5 ms a step.
//
// Each image is copied first into a float32 scratch image with the
// convolution's zero padding around it (and widened there from bfloat16 or
// float16), so every tap of every position is a plain load. The sums are
// float32 from the bias, taps in row-major order; the maximum and its
// argmax are those of the rounded values, the first maximum in row-major
// order, as GraphOps.td has it.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ReducedPrecision.h"

#include <immintrin.h>
#include <omp.h>

#include <memory>

namespace graph::runtime::cpu::vec {

namespace {

/// What one launch needs, resolved at instantiation.
struct FirstLayer {
  WindowGeometry conv, pool;
  ConvChannels channels;
  plan::DType type = plan::DType::f32;
  int64_t paddedRows = 0, paddedColumns = 0; // the scratch image
  int64_t filters() const { return channels.filters; }
};

/// Stores 8 pooled values (exact in the plan's type) at `out`.
template <plan::DType kType> inline void storeAs(void *out, __m256 v) {
  if constexpr (kType == plan::DType::f32) {
    _mm256_storeu_ps(static_cast<float *>(out), v);
  } else if constexpr (kType == plan::DType::f16) {
    _mm_storeu_si128(static_cast<__m128i *>(out),
                     _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  } else {
    // The upper halves of the (already rounded) floats, packed in order.
    const __m256i u = _mm256_srli_epi32(_mm256_castps_si256(v), 16);
    const __m128i packed = _mm_packus_epi32(_mm256_castsi256_si128(u),
                                            _mm256_extracti128_si256(u, 1));
    _mm_storeu_si128(static_cast<__m128i *>(out), packed);
  }
}

/// One pooled position, `kBlocks` registers of 8 filters from `o0`: the
/// four convolution outputs of its window summed from `patch` (the padded
/// image at the window's first output; `rowStep` its row), then the
/// epilogue and the pool.
template <int kh, int kw, int kBlocks, plan::DType kType>
inline void pooledBlocks(const FirstLayer &s, const float *patch,
                         int64_t rowStep, const float *weights,
                         const float *bias, int64_t o0, void *out,
                         int32_t *argmax) {
  const int64_t f = s.filters();
  __m256 acc[4][kBlocks];
  for (int b = 0; b < kBlocks; ++b) {
    const __m256 start = _mm256_loadu_ps(bias + o0 + 8 * b);
    for (int q = 0; q < 4; ++q)
      acc[q][b] = start;
  }
  for (int i = 0; i < kh; ++i)
    for (int j = 0; j < kw; ++j) {
      const float *w = weights + (i * kw + j) * f + o0;
      __m256 wv[kBlocks];
      for (int b = 0; b < kBlocks; ++b)
        wv[b] = _mm256_loadu_ps(w + 8 * b);
      for (int q = 0; q < 4; ++q) {
        const __m256 xv =
            _mm256_broadcast_ss(patch + ((q >> 1) + i) * rowStep + (q & 1) + j);
        for (int b = 0; b < kBlocks; ++b)
          acc[q][b] = _mm256_fmadd_ps(xv, wv[b], acc[q][b]);
      }
    }
  const __m256 zero = _mm256_setzero_ps();
  for (int b = 0; b < kBlocks; ++b) {
    // The relu'd sums are +0 or more (a NaN becomes 0, as the reference's
    // relu has it): as integers they order as the floats do, and rounding
    // keeps that order. The window's rounded maximum is the rounded
    // maximum; its argmax is the first position whose value rounds to it.
    __m256i u[4];
    for (int q = 0; q < 4; ++q)
      u[q] = _mm256_castps_si256(_mm256_max_ps(acc[q][b], zero));
    const __m256i most = _mm256_max_epi32(_mm256_max_epi32(u[0], u[1]),
                                          _mm256_max_epi32(u[2], u[3]));
    __m256i best, same[3];
    if constexpr (kType == plan::DType::bf16) {
      // Nearest, ties to even (no NaN here). The values that round to
      // `best` are those from best - 0x8000 (a tie, when best is even) or
      // best - 0x7fff (when it is odd) up: each position's value is at
      // most `most`, so it rounds to `best` exactly when it is that large.
      const __m256i odd =
          _mm256_and_si256(_mm256_srli_epi32(most, 16), _mm256_set1_epi32(1));
      best = _mm256_and_si256(
          _mm256_add_epi32(_mm256_add_epi32(most, _mm256_set1_epi32(0x7fff)),
                           odd),
          _mm256_set1_epi32(static_cast<int>(0xffff0000u)));
      const __m256i below = _mm256_add_epi32(
          _mm256_add_epi32(best, _mm256_and_si256(_mm256_srli_epi32(best, 16),
                                                  _mm256_set1_epi32(1))),
          _mm256_set1_epi32(-0x8001));
      for (int q = 0; q < 3; ++q)
        same[q] = _mm256_cmpgt_epi32(u[q], below);
    } else if constexpr (kType == plan::DType::f16) {
      const auto rounded = [](__m256i v) {
        return _mm256_castps_si256(_mm256_cvtph_ps(_mm256_cvtps_ph(
            _mm256_castsi256_ps(v), _MM_FROUND_TO_NEAREST_INT)));
      };
      best = rounded(most);
      for (int q = 0; q < 3; ++q)
        same[q] = _mm256_cmpeq_epi32(rounded(u[q]), best);
    } else {
      best = most;
      for (int q = 0; q < 3; ++q)
        same[q] = _mm256_cmpeq_epi32(u[q], best);
    }
    // The first position that holds the maximum: 3 unless an earlier one.
    __m256i at = _mm256_set1_epi32(3);
    for (int q = 2; q >= 0; --q)
      at = _mm256_blendv_epi8(at, _mm256_set1_epi32(q), same[q]);
    const size_t typeBytes = kType == plan::DType::f32 ? 4 : 2;
    storeAs<kType>(static_cast<char *>(out) + (o0 + 8 * b) * typeBytes,
                   _mm256_castsi256_ps(best));
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(argmax + o0 + 8 * b), at);
  }
}

/// Image n: its padded copy in `padded`, then every pooled position.
template <int kh, int kw, plan::DType kType>
void poolImage(const FirstLayer &s, const void *x, int64_t n,
               const float *weights, const float *bias, float *padded, void *y,
               int32_t *argmax) {
  const WindowGeometry &c = s.conv, &g = s.pool;
  const int64_t rows = s.paddedRows, columns = s.paddedColumns;
  const int64_t inImage = c.h.in * c.w.in;
  const auto copyRows = [&](int64_t ih, int64_t count, float *to) {
    if constexpr (kType == plan::DType::f32)
      std::copy_n(static_cast<const float *>(x) + n * inImage + ih * c.w.in,
                  count, to);
    else
      convertFloats(static_cast<const uint16_t *>(x) + n * inImage +
                        ih * c.w.in,
                    kType, to, plan::DType::f32, count);
  };
  if (c.h.padBefore == 0 && c.w.padBefore == 0 && columns == c.w.in) {
    // No padding before and the rows whole (valid, the seed CNN's): the
    // image's first rows in one piece, zeros after them where it pads.
    const int64_t copied = std::min(rows, c.h.in);
    copyRows(0, copied * columns, padded);
    std::fill(padded + copied * columns, padded + rows * columns, 0.0f);
  } else {
    std::fill(padded, padded + rows * columns, 0.0f);
    const int64_t count =
        std::max<int64_t>(0, std::min(c.w.in, columns - c.w.padBefore));
    for (int64_t ih = 0; ih < c.h.in && ih + c.h.padBefore < rows; ++ih)
      copyRows(ih, count,
               padded + (ih + c.h.padBefore) * columns + c.w.padBefore);
  }
  const int64_t f = s.filters(), pooledImage = g.h.out * g.w.out * f;
  const size_t typeBytes = kType == plan::DType::f32 ? 4 : 2;
  for (int64_t ph = 0; ph < g.h.out; ++ph)
    for (int64_t pw = 0; pw < g.w.out; ++pw) {
      const float *patch = padded + 2 * ph * columns + 2 * pw;
      const int64_t at = n * pooledImage + (ph * g.w.out + pw) * f;
      void *out = static_cast<char *>(y) + at * typeBytes;
      int64_t o0 = 0;
      for (; o0 + 16 <= f; o0 += 16)
        pooledBlocks<kh, kw, 2, kType>(s, patch, columns, weights, bias, o0,
                                       out, argmax + at);
      if (o0 < f)
        pooledBlocks<kh, kw, 1, kType>(s, patch, columns, weights, bias, o0,
                                       out, argmax + at);
    }
}

using ImageFn = void (*)(const FirstLayer &, const void *, int64_t,
                         const float *, const float *, float *, void *,
                         int32_t *);

template <plan::DType kType> ImageFn imageFn(int64_t kh, int64_t kw) {
  static constexpr ImageFn fns[3][3] = {
      {poolImage<1, 1, kType>, poolImage<1, 2, kType>, poolImage<1, 3, kType>},
      {poolImage<2, 1, kType>, poolImage<2, 2, kType>, poolImage<2, 3, kType>},
      {poolImage<3, 1, kType>, poolImage<3, 2, kType>, poolImage<3, 3, kType>}};
  return fns[kh - 1][kw - 1];
}

} // namespace

bool firstLayerConvPoolShape(const WindowGeometry &conv,
                             const ConvChannels &channels,
                             const WindowGeometry &pool,
                             const std::string &activation) {
  const WindowGeometry &c = conv, &g = pool;
  return channels.groups == 1 && c.c == 1 && c.h.stride == 1 &&
         c.w.stride == 1 && c.h.dilation == 1 && c.w.dilation == 1 &&
         c.h.window <= 3 && c.w.window <= 3 && channels.filters % 8 == 0 &&
         g.h.window == 2 && g.w.window == 2 && g.h.stride == 2 &&
         g.w.stride == 2 && g.h.padBefore == 0 && g.w.padBefore == 0 &&
         2 * g.h.out <= g.h.in && 2 * g.w.out <= g.w.in && activation == "relu";
}

Status
makeFirstLayerConvPool(const KernelContext &ctx, const WindowGeometry &conv,
                       const ConvChannels &channels, const WindowGeometry &pool,
                       const std::vector<TensorRef> &ins,
                       const std::vector<TensorRef> &outs, KernelFn &out) {
  auto s = std::make_shared<FirstLayer>();
  s->conv = conv;
  s->pool = pool;
  s->channels = channels;
  s->type = outs[0].dtype;
  // The rows and columns the pooled windows' taps reach: the whole padded
  // image but what the floor of the pool leaves out.
  s->paddedRows = 2 * pool.h.out + conv.h.window - 1;
  s->paddedColumns = 2 * pool.w.out + conv.w.window - 1;
  ImageFn image = s->type == plan::DType::bf16
                      ? imageFn<plan::DType::bf16>(conv.h.window, conv.w.window)
                  : s->type == plan::DType::f16
                      ? imageFn<plan::DType::f16>(conv.h.window, conv.w.window)
                      : imageFn<plan::DType::f32>(conv.h.window, conv.w.window);
  const int64_t f = channels.filters;
  const int64_t taps = conv.h.window * conv.w.window;
  // The weights as float32 [tap, filter], and the bias (zeros without one),
  // rebuilt every step: the kernel is a variable.
  auto weights = std::make_shared<std::vector<float>>(
      static_cast<size_t>(taps * f + f), 0.0f);
  const TensorRef kernel = ins[1];
  const TensorRef bias = ins.size() == 3 ? ins[2] : TensorRef{};
  const void *x = ins[0].data;
  void *y = outs[0].data;
  int32_t *argmax = outs[1].i32();
  // Each image is independent; a few microseconds of work.
  const int threads = static_cast<int>(
      std::min<int64_t>(threadsPerReplica(ctx.replicas),
                        std::max<int64_t>(1, conv.n * pool.h.out * pool.w.out *
                                                 f / kParallelElements)));
  out = [=](const KernelContext &ctx, const KernelConfig &,
            const std::vector<TensorRef> &, const std::vector<TensorRef> &) {
    useReplicaThreads(ctx);
    const FirstLayer &sh = *s;
    float *w = weights->data(), *b = w + taps * f;
    const int64_t kernelElements = taps * f;
    float *wide = threadScratch<float>(static_cast<size_t>(kernelElements));
    convertFloats(kernel.data, kernel.dtype, wide, plan::DType::f32,
                  kernelElements);
    for (int64_t i = 0; i < sh.conv.h.window; ++i)
      for (int64_t j = 0; j < sh.conv.w.window; ++j)
        for (int64_t o = 0; o < f; ++o)
          w[(i * sh.conv.w.window + j) * f + o] =
              wide[sh.channels.offset(i, j, 0, o)];
    if (bias.data)
      convertFloats(bias.data, bias.dtype, b, plan::DType::f32, f);
#pragma omp parallel num_threads(threads)
    {
      // Images handed out a few at a time, so that a thread another
      // process displaces takes fewer; each thread's scratch taken first,
      // so that one that gets no image in the first step does not allocate
      // in a later one.
      float *padded = threadScratch<float, 1>(
          static_cast<size_t>(sh.paddedRows * sh.paddedColumns));
#pragma omp for schedule(dynamic, 8)
      for (int64_t n = 0; n < sh.conv.n; ++n)
        image(sh, x, n, w, b, padded, y, argmax);
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace graph::runtime::cpu::vec
