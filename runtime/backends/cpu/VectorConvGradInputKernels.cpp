//===- VectorConvGradInputKernels.cpp - a sparse gradient's input gradient ===//
//
// conv2d_grad_input where the output gradient is mostly zeros: under a 2x2
// max pool each window's gradient reaches its argmax alone, so at most a
// quarter of a pooled convolution's output gradient is not zero, and the
// gradient of the relu before the pool zeroes about half of that again.
// oneDNN's backward convolution multiplies every zero; this sums the products
// of the non-zero gradients only.
//
// Per image, the output gradient's non-zero values are first listed per
// output position (filter and value, 8 filters at a time: a compare, a
// mask and a left-pack). Then for each output position and kernel row,
// its listed gradients times the row's weights for their filters
// ([kh, kw, f, c], float32, rebuilt every step) are summed in registers,
// kw taps by up to 32 channels at a time, and added into a float32 copy of
// the image's input gradient with the convolution's padding around it. The
// work is the non-zero count times taps times channels, where oneDNN's is
// every output position's; summing a position's few gradients (a pooled
// layer's: about 8 of 64 filters) before adding them keeps the additions
// to memory at one a position and tap.
//
// The launch takes this path when the first image's gradient is sparse
// enough (kSparseShareDenominator), and only for weights that fit L2;
// otherwise the oneDNN launch made beside it runs. Bfloat16 operands are
// widened as they are read and the sums rounded once, as oneDNN's bf16
// primitive does. A zero gradient is skipped, not multiplied: where a
// weight is infinite or NaN, oneDNN's 0 x w would give NaN, this path
// nothing (the forward pass's loss is NaN then all the same).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ReducedPrecision.h"

#include <immintrin.h>
#include <omp.h>

#include <array>
#include <memory>

namespace graph::runtime::cpu::vec {

namespace {

/// At most 1 / this of the first image's output gradient may be non-zero
/// for the launch to take the sparse path: a pooled layer's is at most a
/// quarter (13% on the seed CNN's conv 2), the gradient of an unpooled
/// relu layer about half, which stays on oneDNN (the seed CNN's conv 3).
constexpr int64_t kSparseShareDenominator = 4;

/// The most bytes the float32 weights may take (L2, as the channel path's
/// in VectorConvPoolGradKernels.cpp).
constexpr int64_t kSparseWeightBytes = 256 << 10;

struct Sparse {
  WindowGeometry g; // over the input: in, window, out, padding
  ConvChannels channels;
  plan::DType type = plan::DType::f32;
  int64_t filters() const { return channels.filters; }
};

/// Left-pack tables: for each 8-bit mask, the lanes set in it, in order.
struct PackTable {
  std::array<std::array<int32_t, 8>, 256> lanes{};
  PackTable() {
    for (int m = 0; m < 256; ++m) {
      int k = 0;
      for (int b = 0; b < 8; ++b)
        if (m >> b & 1)
          lanes[m][k++] = b;
    }
  }
};
const PackTable &packTable() {
  static const PackTable table;
  return table;
}

/// 8 gradients from `p` (the plan's type) as float32.
inline __m256 load8(const void *p, int64_t i, plan::DType type) {
  if (type == plan::DType::bf16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(
            static_cast<const uint16_t *>(p) + i))),
        16));
  return _mm256_loadu_ps(static_cast<const float *>(p) + i);
}

/// Image n's non-zero output gradients, per output position q: `count[q]`
/// of them, filter offsets into the repacked weights (f * channels) in
/// `at` and values in `value`, from q * filters.
void listNonZeros(const Sparse &s, const void *dy, int64_t n, int32_t *count,
                  int32_t *at, float *value) {
  const int64_t f = s.filters(), c = s.channels.channelsPerGroup;
  const int64_t positions = s.g.h.out * s.g.w.out;
  const PackTable &table = packTable();
  const __m256i step = _mm256_set1_epi32(static_cast<int32_t>(8 * c));
  const __m256 zero = _mm256_setzero_ps();
  for (int64_t q = 0; q < positions; ++q) {
    const int64_t first = (n * positions + q) * f;
    int32_t *a = at + q * f;
    float *v = value + q * f;
    int32_t k = 0;
    __m256i offsets =
        _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                           _mm256_set1_epi32(static_cast<int32_t>(c)));
    for (int64_t o = 0; o < f; o += 8) {
      const __m256 g = load8(dy, first + o, s.type);
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(g, zero, _CMP_NEQ_UQ));
      const __m256i lanes = _mm256_loadu_si256(
          reinterpret_cast<const __m256i *>(table.lanes[mask].data()));
      // Whole registers stored, the next group's overwriting past k.
      _mm256_storeu_ps(v + k, _mm256_permutevar8x32_ps(g, lanes));
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(a + k),
                          _mm256_permutevar8x32_epi32(offsets, lanes));
      k += __builtin_popcount(static_cast<unsigned>(mask));
      offsets = _mm256_add_epi32(offsets, step);
    }
    count[q] = k;
  }
}

/// Image n's input gradient from its lists, into `padded` (the input's
/// rows and columns with the convolution's padding around them, float32):
/// for each output position, kernel row and block of up to 4 registers of
/// channels, its listed gradients times the row's `kw` taps' weights are
/// summed in registers (kw x 4 of them at most), then added to the row's
/// input positions. A position's gradients are few (a pooled layer's:
/// about 8 of 64 filters); summing them before they are added keeps the
/// additions into `padded` to one per position and tap.
template <int kw, int kc>
void sumImage(const Sparse &s, const int32_t *count, const int32_t *at,
              const float *value, const float *weights, float *padded) {
  const WindowGeometry &g = s.g;
  const int64_t f = s.filters(), c = s.channels.channelsPerGroup;
  const int64_t kh = g.h.window, columns = g.w.out + kw - 1;
  for (int64_t oh = 0; oh < g.h.out; ++oh)
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      const int64_t q = oh * g.w.out + ow;
      const int32_t listed = count[q];
      if (listed == 0)
        continue;
      const int32_t *a = at + q * f;
      const float *v = value + q * f;
      for (int64_t i = 0; i < kh; ++i) {
        const float *row = weights + i * kw * f * c;
        float *into = padded + ((oh + i) * columns + ow) * c;
        for (int64_t cb = 0; cb < c; cb += 8 * kc) {
          __m256 acc[kw][kc];
          for (auto &tap : acc)
            for (__m256 &r : tap)
              r = _mm256_setzero_ps();
          for (int32_t k = 0; k < listed; ++k) {
            const __m256 gv = _mm256_broadcast_ss(v + k);
            const float *w = row + a[k] + cb;
            for (int j = 0; j < kw; ++j)
              for (int r = 0; r < kc; ++r)
                acc[j][r] = _mm256_fmadd_ps(
                    gv, _mm256_loadu_ps(w + j * f * c + 8 * r), acc[j][r]);
          }
          for (int j = 0; j < kw; ++j)
            for (int r = 0; r < kc; ++r) {
              float *d = into + j * c + cb + 8 * r;
              _mm256_storeu_ps(d, _mm256_add_ps(_mm256_loadu_ps(d), acc[j][r]));
            }
        }
      }
    }
}

using SumFn = void (*)(const Sparse &, const int32_t *, const int32_t *,
                       const float *, const float *, float *);

/// sumImage for a row of `kw` taps (1..3) and `c` channels (a multiple of
/// 8): blocks of 4 registers, or of the registers there are.
SumFn sumFn(int64_t kw, int64_t c) {
  static constexpr SumFn fns[3][4] = {
      {sumImage<1, 1>, sumImage<1, 2>, sumImage<1, 3>, sumImage<1, 4>},
      {sumImage<2, 1>, sumImage<2, 2>, sumImage<2, 3>, sumImage<2, 4>},
      {sumImage<3, 1>, sumImage<3, 2>, sumImage<3, 3>, sumImage<3, 4>}};
  const int64_t registers = c / 8;
  const int64_t block = registers % 4 == 0   ? 4
                        : registers % 3 == 0 ? 3
                        : registers % 2 == 0 ? 2
                                             : 1;
  return fns[kw - 1][std::min<int64_t>(block, registers) - 1];
}

} // namespace

bool sparseGradInputShape(const WindowGeometry &g,
                          const ConvChannels &channels) {
  // Each listed gradient reads its filter's weights for a kernel row: from
  // L2 where they fit, from memory for every gradient where they do not
  // (VGG16's block5, 9.4 MB as float32, would read more than the dense
  // convolution computes).
  const int64_t weightBytes = g.h.window * g.w.window *
                              channels.channelsPerGroup * channels.filters *
                              int64_t(sizeof(float));
  return weightBytes <= kSparseWeightBytes && channels.groups == 1 &&
         channels.channelsPerGroup % 8 == 0 && channels.filters % 8 == 0 &&
         g.w.window <= 3 && g.h.stride == 1 && g.w.stride == 1 &&
         g.h.dilation == 1 && g.w.dilation == 1;
}

Status makeSparseConv2dGradInput(const KernelContext &ctx,
                                 const WindowGeometry &g,
                                 const ConvChannels &channels,
                                 const std::vector<TensorRef> &ins,
                                 const std::vector<TensorRef> &outs,
                                 KernelFn dense, KernelFn &out) {
  auto s = std::make_shared<Sparse>();
  s->g = g;
  s->channels = channels;
  s->type = ins[0].dtype;
  const int64_t f = channels.filters, c = channels.channelsPerGroup;
  const int64_t taps = g.h.window * g.w.window;
  const int64_t positions = g.h.out * g.w.out;
  const int64_t outImage = positions * f, inImage = g.h.in * g.w.in * c;
  auto weights =
      std::make_shared<std::vector<float>>(static_cast<size_t>(taps * f * c));
  const SumFn sum = sumFn(g.w.window, c);
  // The padded input gradient: the rows and columns every tap reaches.
  const int64_t paddedRows = g.h.out + g.h.window - 1,
                paddedColumns = g.w.out + g.w.window - 1;
  const int64_t paddedImage = paddedRows * paddedColumns * c;
  const TensorRef dy = ins[0], kernel = ins[1], dx = outs[0];
  const int threads = threadsPerReplica(ctx.replicas);
  // A DnnlLoop, as it may run oneDNN's launch (whose primitives allocate
  // inside execute(): SteadyStateTest leaves such kernels out).
  const std::vector<TensorRef> denseIns = ins, denseOuts = outs;
  out = DnnlLoop{[=](const KernelContext &ctx) -> Status {
    const Sparse &sh = *s;
    // The first image decides: a pooled layer's gradient is as sparse in
    // every image.
    {
      int32_t *count = threadScratch<int32_t>(static_cast<size_t>(positions));
      int32_t *at =
          threadScratch<int32_t, 1>(static_cast<size_t>(outImage + 8));
      float *value = threadScratch<float>(static_cast<size_t>(outImage + 8));
      listNonZeros(sh, dy.data, 0, count, at, value);
      int64_t nonZero = 0;
      for (int64_t q = 0; q < positions; ++q)
        nonZero += count[q];
      if (nonZero * kSparseShareDenominator > outImage)
        return dense(ctx, KernelConfig{}, denseIns, denseOuts);
    }
    useReplicaThreads(ctx);
    float *w = weights->data();
    float *wide = threadScratch<float, 2>(static_cast<size_t>(taps * f * c));
    convertFloats(kernel.data, kernel.dtype, wide, plan::DType::f32,
                  taps * f * c);
    for (int64_t i = 0; i < sh.g.h.window; ++i)
      for (int64_t j = 0; j < sh.g.w.window; ++j)
        for (int64_t o = 0; o < f; ++o)
          for (int64_t ci = 0; ci < c; ++ci)
            w[((i * sh.g.w.window + j) * f + o) * c + ci] =
                wide[sh.channels.offset(i, j, ci, o)];
#pragma omp parallel num_threads(threads)
    {
      // Images handed out a few at a time (see VectorConvPoolKernels.cpp),
      // each thread's scratch taken first.
      int32_t *count = threadScratch<int32_t>(static_cast<size_t>(positions));
      int32_t *at =
          threadScratch<int32_t, 1>(static_cast<size_t>(outImage + 8));
      float *value = threadScratch<float>(static_cast<size_t>(outImage + 8));
      float *padded = threadScratch<float, 1>(static_cast<size_t>(paddedImage));
#pragma omp for schedule(dynamic, 4)
      for (int64_t n = 0; n < sh.g.n; ++n) {
        std::fill(padded, padded + paddedImage, 0.0f);
        listNonZeros(sh, dy.data, n, count, at, value);
        sum(sh, count, at, value, w, padded);
        // The input's rows, from inside the padding.
        const int64_t rowElements = sh.g.w.in * c;
        for (int64_t ih = 0; ih < sh.g.h.in; ++ih) {
          const float *from =
              padded +
              ((ih + sh.g.h.padBefore) * paddedColumns + sh.g.w.padBefore) * c;
          const int64_t to = n * inImage + ih * rowElements;
          if (sh.type == plan::DType::f32)
            std::copy_n(from, rowElements, static_cast<float *>(dx.data) + to);
          else
            convertFloats(from, plan::DType::f32,
                          static_cast<uint16_t *>(dx.data) + to, sh.type,
                          rowElements);
        }
      }
    }
    return Status::ok();
  }};
  return Status::ok();
}

} // namespace graph::runtime::cpu::vec
