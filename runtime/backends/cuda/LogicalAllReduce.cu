//===- LogicalAllReduce.cu - all-reduce among buffers of one GPU ----------===//

#include "runtime/backends/cuda/LogicalAllReduce.h"

#include <algorithm>

namespace graph::runtime::cuda {
namespace {

struct Buffers {
  const float *in[kMaxLogicalPerGpu];
  float *out[kMaxLogicalPerGpu];
};

// A grid-stride loop: gradient buckets are a few MiB at most, so the launch
// is memory bound and needs no tiling; the element index is 64-bit.
__global__ void scaledSumKernel(Buffers buffers, int numIns, int numOuts,
                                int64_t count, float scale) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < count; i += stride) {
    float sum = 0.0f;
    for (int k = 0; k < numIns; ++k)
      sum += buffers.in[k][i];
    sum *= scale;
    for (int k = 0; k < numOuts; ++k)
      buffers.out[k][i] = sum;
  }
}

} // namespace

cudaError_t enqueueScaledSum(const float *const *ins, int numIns,
                             float *const *outs, int numOuts, int64_t count,
                             float scale, cudaStream_t stream) {
  if (numIns < 1 || numIns > kMaxLogicalPerGpu || numOuts < 1 ||
      numOuts > kMaxLogicalPerGpu || count < 0)
    return cudaErrorInvalidValue;
  if (count == 0)
    return cudaSuccess;
  Buffers buffers{};
  for (int k = 0; k < numIns; ++k)
    buffers.in[k] = ins[k];
  for (int k = 0; k < numOuts; ++k)
    buffers.out[k] = outs[k];
  constexpr int kThreads = 256;
  int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  scaledSumKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(
      buffers, numIns, numOuts, count, scale);
  return cudaGetLastError();
}

} // namespace graph::runtime::cuda
