//===- LayoutKernels.cu - transposes and padding
//---------------------------===//
//
// The plan keeps Keras' layouts (HWIO conv kernels, unless graphc gave a
// kernel filter_layout ohwi, which cuDNN reads as it is) and TensorFlow's
// padding (an odd `same` total puts the extra row after); cuDNN wants OHWI
// filters next to NHWC tensors and pads symmetrically. These kernels bridge
// the two in the convolution's scratch space. graph.pad and
// graph.transpose use the padding and the permute kernels too.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

namespace graph::runtime::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kTileRows = 8;

/// dst[c, r] = src[r, c], a 32x32 tile at a time through shared memory so
/// that both the reads and the writes are coalesced; the padding column
/// keeps the column reads free of bank conflicts.
__global__ void transposeKernel(const float *__restrict__ src,
                                float *__restrict__ dst, int64_t rows,
                                int64_t cols) {
  __shared__ float tile[kTile][kTile + 1];
  // Block-uniform loops: every thread reaches the same barriers.
  for (int64_t r0 = int64_t(blockIdx.y) * kTile; r0 < rows;
       r0 += int64_t(gridDim.y) * kTile)
    for (int64_t c0 = int64_t(blockIdx.x) * kTile; c0 < cols;
         c0 += int64_t(gridDim.x) * kTile) {
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        int64_t r = r0 + j, c = c0 + threadIdx.x;
        if (r < rows && c < cols)
          tile[j][threadIdx.x] = src[r * cols + c];
      }
      __syncthreads();
      for (int j = threadIdx.y; j < kTile; j += kTileRows) {
        int64_t c = c0 + j, r = r0 + threadIdx.x;
        if (r < rows && c < cols)
          dst[c * rows + r] = tile[threadIdx.x][j];
      }
      __syncthreads();
    }
}

__global__ void padKernel(const float *__restrict__ x,
                          float *__restrict__ padded, NhwcPadding g) {
  // NhwcPadding's helpers are host code: spelled out here.
  int64_t ph = g.h + g.top + g.bottom, pw = g.w + g.left + g.right;
  int64_t total = g.n * ph * pw * g.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % g.c, rest = i / g.c;
    int64_t px = rest % pw;
    rest /= pw;
    int64_t py = rest % ph, n = rest / ph;
    int64_t y = py - g.top, xx = px - g.left;
    padded[i] = y >= 0 && y < g.h && xx >= 0 && xx < g.w
                    ? x[((n * g.h + y) * g.w + xx) * g.c + c]
                    : 0.0f;
  }
}

__global__ void cropKernel(const float *__restrict__ padded,
                           float *__restrict__ x, NhwcPadding g) {
  int64_t ph = g.h + g.top + g.bottom, pw = g.w + g.left + g.right;
  int64_t total = g.n * g.h * g.w * g.c;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t c = i % g.c, rest = i / g.c;
    int64_t xx = rest % g.w;
    rest /= g.w;
    int64_t y = rest % g.h, n = rest / g.h;
    x[i] = padded[((n * ph + y + g.top) * pw + xx + g.left) * g.c + c];
  }
}

__global__ void permuteKernel(const float *__restrict__ x,
                              float *__restrict__ y, PermuteGeometry g,
                              int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t source = 0, rest = i;
    for (int d = g.rank - 1; d >= 0; --d) {
      source += (rest % g.outDims[d]) * g.from[d];
      rest /= g.outDims[d];
    }
    y[i] = x[source];
  }
}

} // namespace

cudaError_t launchPermute(const float *x, float *y,
                          const PermuteGeometry &geometry,
                          cudaStream_t stream) {
  int64_t total = geometry.elements();
  if (total <= 0)
    return cudaSuccess;
  permuteKernel<<<blocksFor(total), kThreads, 0, stream>>>(x, y, geometry,
                                                           total);
  return cudaGetLastError();
}

cudaError_t launchTranspose(const float *src, float *dst, int64_t rows,
                            int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0)
    return cudaSuccess;
  dim3 grid(static_cast<unsigned>(
                std::min<int64_t>((cols + kTile - 1) / kTile, 65535)),
            static_cast<unsigned>(
                std::min<int64_t>((rows + kTile - 1) / kTile, 65535)));
  transposeKernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(src, dst, rows,
                                                               cols);
  return cudaGetLastError();
}

cudaError_t launchPadNhwc(const float *x, float *padded,
                          const NhwcPadding &geometry, cudaStream_t stream) {
  int64_t total = geometry.paddedElements();
  if (total <= 0)
    return cudaSuccess;
  padKernel<<<blocksFor(total), kThreads, 0, stream>>>(x, padded, geometry);
  return cudaGetLastError();
}

cudaError_t launchCropNhwc(const float *padded, float *x,
                           const NhwcPadding &geometry, cudaStream_t stream) {
  int64_t total = geometry.n * geometry.h * geometry.w * geometry.c;
  if (total <= 0)
    return cudaSuccess;
  cropKernel<<<blocksFor(total), kThreads, 0, stream>>>(padded, x, geometry);
  return cudaGetLastError();
}

} // namespace graph::runtime::cuda
