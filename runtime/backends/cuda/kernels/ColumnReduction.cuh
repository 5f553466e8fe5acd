//===- ColumnReduction.cuh - sums over the rows of a [rows, cols] matrix --===//
//
// bias_add_grad and batch norm's statistics sum a row-major [rows, cols]
// matrix over its rows (cols: the channels). Two launches, no atomics, so
// the sums are the same every run:
//   1. a grid of (ceil(cols / 32), groups) blocks of 32 x 8 threads: a warp
//      reads 32 neighbouring columns of one row (coalesced), the block's 8
//      warps walk the group's rows, and the block writes one double partial
//      sum per column and group to the workspace;
//   2. one warp per column adds its `groups` partials: lane l those of
//      groups l, l + 32, ... in order, then the lanes in a fixed tree (a
//      thread per column took ~50 us for 32 columns of 512 partials on an
//      H100: one dependent load after another).
// Sums are kept in double, as the reference does: a column of a conv
// output at batch 256 holds ~10^5 values.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_KERNELS_COLUMNREDUCTION_CUH
#define RUNTIME_BACKENDS_CUDA_KERNELS_COLUMNREDUCTION_CUH

#include "runtime/backends/cuda/kernels/CudaKernels.h"

namespace graph::runtime::cuda {

/// The shape of a column reduction and its partial sums in the workspace:
/// `sums` quantities per element (1 or 2), [sums][groups][cols] doubles.
struct ColumnReduction {
  int64_t rows = 0, cols = 0, groups = 1;
  int sums = 1;
  double *partials = nullptr;

  size_t partialBytes() const {
    return size_t(sums) * size_t(groups) * size_t(cols) * sizeof(double);
  }

  /// Sizes `groups` (enough blocks to fill a GPU, rows permitting) so that
  /// the partials fit in `bytes` of workspace at `workspace`.
  Status plan(const char *kName, int64_t numRows, int64_t numCols, int numSums,
              void *workspace, size_t bytes) {
    rows = numRows;
    cols = numCols;
    sums = numSums;
    groups = std::clamp<int64_t>((rows + 255) / 256, 1, 512);
    while (groups > 1 && partialBytes() > bytes)
      groups /= 2;
    REQUIRE(workspace && partialBytes() <= bytes,
            "the partial sums of " + std::to_string(cols) + " columns need " +
                std::to_string(partialBytes()) +
                " bytes of workspace, the device has " + std::to_string(bytes));
    partials = static_cast<double *>(workspace);
    return Status::ok();
  }
};

inline constexpr int kReduceColumns = 32;
inline constexpr int kReduceRowLanes = 8;

/// Stage 1. `value(row, col, out)` writes the S quantities of one element.
template <int S, typename Value>
__global__ void columnPartialsKernel(ColumnReduction r, Value value) {
  __shared__ double shared[S][kReduceRowLanes][kReduceColumns];
  int64_t col = int64_t(blockIdx.x) * kReduceColumns + threadIdx.x;
  double sum[S] = {};
  if (col < r.cols)
    for (int64_t row = int64_t(blockIdx.y) * kReduceRowLanes + threadIdx.y;
         row < r.rows; row += int64_t(r.groups) * kReduceRowLanes) {
      double v[S];
      value(row, col, v);
#pragma unroll
      for (int s = 0; s < S; ++s)
        sum[s] += v[s];
    }
#pragma unroll
  for (int s = 0; s < S; ++s)
    shared[s][threadIdx.y][threadIdx.x] = sum[s];
  __syncthreads();
  if (threadIdx.y == 0 && col < r.cols)
#pragma unroll
    for (int s = 0; s < S; ++s) {
      double total = 0.0;
      for (int lane = 0; lane < kReduceRowLanes; ++lane)
        total += shared[s][lane][threadIdx.x];
      r.partials[(int64_t(s) * r.groups + blockIdx.y) * r.cols + col] = total;
    }
}

inline constexpr int kFinishWarps = 8;

/// Stage 2. `finish(col, sums)` receives the S column sums, in lane 0.
template <int S, typename Finish>
__global__ void columnFinishKernel(ColumnReduction r, Finish finish) {
  constexpr int kWarpSize = 32;
  int lane = threadIdx.x % kWarpSize;
  int64_t warps = int64_t(gridDim.x) * kFinishWarps;
  for (int64_t col =
           int64_t(blockIdx.x) * kFinishWarps + threadIdx.x / kWarpSize;
       col < r.cols; col += warps) {
    double sums[S];
#pragma unroll
    for (int s = 0; s < S; ++s) {
      double total = 0.0;
      for (int64_t g = lane; g < r.groups; g += kWarpSize)
        total += r.partials[(int64_t(s) * r.groups + g) * r.cols + col];
      for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
        total += __shfl_down_sync(0xffffffffu, total, offset);
      sums[s] = total;
    }
    if (lane == 0)
      finish(col, sums);
  }
}

/// Enqueues both stages on `stream`.
template <int S, typename Value, typename Finish>
cudaError_t launchColumnReduction(const ColumnReduction &r, Value value,
                                  Finish finish, cudaStream_t stream) {
  if (r.cols <= 0)
    return cudaSuccess;
  dim3 grid(
      static_cast<unsigned>((r.cols + kReduceColumns - 1) / kReduceColumns),
      static_cast<unsigned>(r.groups));
  columnPartialsKernel<S>
      <<<grid, dim3(kReduceColumns, kReduceRowLanes), 0, stream>>>(r, value);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return e;
  auto finishBlocks = static_cast<unsigned>(
      std::min<int64_t>((r.cols + kFinishWarps - 1) / kFinishWarps, 65535));
  columnFinishKernel<S>
      <<<finishBlocks, kFinishWarps * 32, 0, stream>>>(r, finish);
  return cudaGetLastError();
}

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_KERNELS_COLUMNREDUCTION_CUH
