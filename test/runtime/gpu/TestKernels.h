//===- TestKernels.h - kernels of the GPU runtime tests ---------*- C++ -*-===//
//
// The tiny plan's kernels (TinyPlan.h) under names no backend uses
// ("test.*"), for Backend::reference (host) and Backend::cuda, with the
// same float arithmetic in the same order, and two raw kernels for the
// stream-ordering test.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_GPU_TESTKERNELS_H
#define TEST_RUNTIME_GPU_TESTKERNELS_H

#include <cuda_runtime.h>

namespace graph::runtime::gputest {

/// Registers test.mul, test.sum, test.colsum and test.sgd_step for the
/// reference and the cuda backend. Idempotent.
void registerGpuTestKernels();

/// One thread spins for about `cycles` clock cycles, then writes `value`.
cudaError_t enqueueDelayedWrite(float *dst, float value, long long cycles,
                                cudaStream_t stream);
/// *dst = *src, one thread.
cudaError_t enqueueCopyOne(float *dst, const float *src, cudaStream_t stream);

} // namespace graph::runtime::gputest

#endif // TEST_RUNTIME_GPU_TESTKERNELS_H
