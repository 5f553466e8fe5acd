//===- DirectConvKernels.cu - the direct convolutions' kernels ------------===//
//
// DirectConv.h's per-thread functions as CUDA kernels: fused_conv2d_pool a
// pooled output per thread; conv2d_grad_kernel a (group of positions,
// filter) per thread, then ColumnReduction's second stage over the groups.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/ColumnReduction.cuh"
#include "runtime/backends/cuda/kernels/CudaKernels.h"
#include "runtime/backends/cuda/kernels/DirectConv.h"

namespace graph::runtime::cuda {

namespace {

__global__ void
fusedConvPoolKernel(DirectConv cv, DirectPool p, const float *__restrict__ x,
                    const float *__restrict__ w, const float *__restrict__ bias,
                    bool relu, float *__restrict__ y,
                    int32_t *__restrict__ argmax, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = 0.0f;
    int32_t at = -1;
    fusedConvPoolAt(cv, p, x, w, bias, relu, i, v, at);
    y[i] = v;
    argmax[i] = at;
  }
}

/// Thread (g, f): the taps' partial sums of filter f over group g's
/// positions, into the partials [group][tap * f + filter]. KH, KW, C as
/// kernelGradPartial's: with constants, acc is registers.
template <int32_t KH, int32_t KW, int32_t C>
__global__ void
kernelGradPartialsKernel(DirectConv cv, const float *__restrict__ x,
                         const float *__restrict__ dy, ColumnReduction r) {
  const int64_t positions = cv.positions(), threads = r.groups * cv.f;
  constexpr int32_t kTaps = KH && KW && C ? KH * KW * C : kDirectMaxTaps;
  const int32_t taps = KH && KW && C ? kTaps : cv.taps();
  for (int64_t t = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; t < threads;
       t += int64_t(gridDim.x) * blockDim.x) {
    auto filter = static_cast<int32_t>(t % cv.f);
    int64_t g = t / cv.f;
    double acc[kTaps];
    kernelGradPartial<KH, KW, C>(cv, x, dy, positions * g / r.groups,
                                 positions * (g + 1) / r.groups, filter, acc);
#pragma unroll
    for (int32_t tap = 0; tap < taps; ++tap)
      r.partials[g * r.cols + int64_t(tap) * cv.f + filter] = acc[tap];
  }
}

/// Column tap * f + filter of the partials into the gradient, in the
/// kernel's layout (DirectConv::weightIndex: HWIO's element `col`).
struct StoreKernelGrad {
  DirectConv cv;
  float *dw;
  __device__ void operator()(int64_t col, const double *sums) const {
    auto tap = static_cast<int32_t>(col / cv.f);
    auto filter = static_cast<int32_t>(col % cv.f);
    dw[cv.weightIndex(tap, filter)] = static_cast<float>(sums[0]);
  }
};

} // namespace

cudaError_t launchFusedConvPoolDirect(const DirectConv &cv,
                                      const DirectPool &pool, const float *x,
                                      const float *kernel, const float *bias,
                                      bool relu, float *y, int32_t *argmax,
                                      cudaStream_t stream) {
  int64_t total = int64_t(cv.n) * pool.outH * pool.outW * cv.f;
  if (total == 0)
    return cudaSuccess;
  fusedConvPoolKernel<<<blocksFor(total), kThreads, 0, stream>>>(
      cv, pool, x, kernel, bias, relu, y, argmax, total);
  return cudaGetLastError();
}

int64_t directKernelGradGroups(const DirectConv &cv, size_t workspaceBytes) {
  // About 64 positions a group (the seed CNN's conv 1 at batch 256: 2704
  // groups of 32 filters, 86k threads), at most 4096 groups, fewer when
  // the partials would not fit.
  int64_t groups = std::clamp<int64_t>((cv.positions() + 63) / 64, 1, 4096);
  auto bytes = [&](int64_t g) {
    return size_t(g) * size_t(cv.taps()) * size_t(cv.f) * sizeof(double);
  };
  while (groups > 1 && bytes(groups) > workspaceBytes)
    groups /= 2;
  return bytes(groups) <= workspaceBytes ? groups : 0;
}

cudaError_t launchKernelGradDirect(const DirectConv &cv, const float *x,
                                   const float *dy, float *kernelGrad,
                                   double *partials, int64_t groups,
                                   cudaStream_t stream) {
  ColumnReduction r;
  r.rows = cv.positions();
  r.cols = int64_t(cv.taps()) * cv.f;
  r.groups = groups;
  r.sums = 1;
  r.partials = partials;
  if (r.cols == 0)
    return cudaSuccess;
  unsigned blocks = blocksFor(groups * cv.f);
  withUnrolledShape(cv, [&](auto shape) {
    using S = decltype(shape);
    kernelGradPartialsKernel<S::kh, S::kw, S::c>
        <<<blocks, kThreads, 0, stream>>>(cv, x, dy, r);
  });
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return e;
  auto finishBlocks = static_cast<unsigned>(
      std::min<int64_t>((r.cols + kFinishWarps - 1) / kFinishWarps, 65535));
  columnFinishKernel<1><<<finishBlocks, kFinishWarps * 32, 0, stream>>>(
      r, StoreKernelGrad{cv, kernelGrad});
  return cudaGetLastError();
}

} // namespace graph::runtime::cuda
