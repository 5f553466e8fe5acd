//===- InputGather.cu - a batch gathered from a cached dataset ------------===//

#include "runtime/backends/cuda/InputGather.h"

#include <algorithm>
#include <cstdint>

namespace graph::runtime::cuda {
namespace {

// One block row per batch row (gridDim.y), threads striding over the row's
// vectors: a copy, memory bound. V is float4 when a row is a whole number
// of 16-byte vectors and both bases are 16-byte aligned (then every row is),
// float otherwise.
template <typename V>
__global__ void gatherImagesKernel(const V *__restrict__ src,
                                   const int64_t *__restrict__ indices,
                                   int64_t vectorsPerRow, V *__restrict__ dst) {
  const int64_t row = blockIdx.y;
  const V *from = src + indices[row] * vectorsPerRow;
  V *to = dst + row * vectorsPerRow;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       v < vectorsPerRow; v += static_cast<int64_t>(gridDim.x) * blockDim.x)
    to[v] = from[v];
}

__global__ void gatherSparseLabelsKernel(const int32_t *__restrict__ labels,
                                         const int64_t *__restrict__ indices,
                                         int64_t rows,
                                         int32_t *__restrict__ out) {
  int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row < rows)
    out[row] = labels[indices[row]];
}

__global__ void gatherOneHotLabelsKernel(const int32_t *__restrict__ labels,
                                         const int64_t *__restrict__ indices,
                                         int64_t rows, int32_t classes,
                                         float *__restrict__ out) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= rows * classes)
    return;
  int64_t row = i / classes;
  out[i] =
      labels[indices[row]] == static_cast<int32_t>(i % classes) ? 1.0f : 0.0f;
}

} // namespace

cudaError_t enqueueGatherExamples(const CachedExamples &data,
                                  const int64_t *indices, int64_t rows,
                                  float *images, void *labels, bool oneHot,
                                  cudaStream_t stream) {
  if (rows < 0 || rows > 65535 || data.elements <= 0 || !data.images ||
      (labels && (!data.labels || (oneHot && data.classes <= 0))))
    return cudaErrorInvalidValue;
  if (rows == 0)
    return cudaSuccess;
  constexpr int kThreads = 256;
  const bool vec4 = data.elements % 4 == 0 &&
                    reinterpret_cast<uintptr_t>(data.images) % 16 == 0 &&
                    reinterpret_cast<uintptr_t>(images) % 16 == 0;
  const int64_t vectors = vec4 ? data.elements / 4 : data.elements;
  dim3 grid(static_cast<unsigned>(
                std::min<int64_t>((vectors + kThreads - 1) / kThreads, 64)),
            static_cast<unsigned>(rows));
  if (vec4)
    gatherImagesKernel<float4><<<grid, kThreads, 0, stream>>>(
        reinterpret_cast<const float4 *>(data.images), indices, vectors,
        reinterpret_cast<float4 *>(images));
  else
    gatherImagesKernel<float>
        <<<grid, kThreads, 0, stream>>>(data.images, indices, vectors, images);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess || !labels)
    return e;
  int64_t count = oneHot ? rows * data.classes : rows;
  unsigned blocks = static_cast<unsigned>((count + kThreads - 1) / kThreads);
  if (oneHot)
    gatherOneHotLabelsKernel<<<blocks, kThreads, 0, stream>>>(
        data.labels, indices, rows, data.classes, static_cast<float *>(labels));
  else
    gatherSparseLabelsKernel<<<blocks, kThreads, 0, stream>>>(
        data.labels, indices, rows, static_cast<int32_t *>(labels));
  return cudaGetLastError();
}

} // namespace graph::runtime::cuda
