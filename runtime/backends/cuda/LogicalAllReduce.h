//===- LogicalAllReduce.h - all-reduce among buffers of one GPU -*- C++ -*-===//
//
// NCCL refuses two ranks on one GPU, so the logical GPUs that share a
// physical one reduce with a kernel of their own: out_j = scale * sum_i
// in_i for every output buffer, elementwise. Each element is read from every
// input and written to every output by one thread, so an output may alias an
// input (the in-place all-reduce).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_COLLECTIVES_LOGICALALLREDUCE_H
#define RUNTIME_COLLECTIVES_LOGICALALLREDUCE_H

#include <cuda_runtime.h>

#include <cstdint>

namespace graph::runtime::cuda {

/// The most logical GPUs one physical GPU may carry (the buffers travel in
/// the kernel's parameters, so a captured graph holds them by value).
inline constexpr int kMaxLogicalPerGpu = 16;

/// Enqueues the reduction on `stream` (all buffers on its device); returns
/// the launch's error. Sums in input order, so results are deterministic.
cudaError_t enqueueScaledSum(const float *const *ins, int numIns,
                             float *const *outs, int numOuts, int64_t count,
                             float scale, cudaStream_t stream);

} // namespace graph::runtime::cuda

#endif // RUNTIME_COLLECTIVES_LOGICALALLREDUCE_H
