//===- InputGather.h - a batch gathered from a cached dataset --*- C++ -*-===//
//
// graphrun --cache-on-device keeps the training set in GPU memory; per step
// only the batch's source indices travel (a few KiB) and this kernel writes
// a replica's input buffers from them: the device form of
// data::gatherExamples, row for row.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_INPUTGATHER_H
#define RUNTIME_BACKENDS_CUDA_INPUTGATHER_H

#include <cuda_runtime.h>

#include <cstdint>

namespace graph::runtime::cuda {

/// The dataset as it lies on one GPU.
struct CachedExamples {
  const float *images = nullptr;   // [examples, elements]
  const int32_t *labels = nullptr; // [examples]
  int64_t examples = 0;
  int64_t elements = 0; // floats per image
  int32_t classes = 0;
};

/// Enqueues on `stream`: images[row] = data.images[indices[row]] for `rows`
/// rows, and the labels as int32 class indices (`oneHot` false) or as
/// float32 [rows, classes] one-hot rows; `labels` may be null. The indices
/// are device memory and must lie in [0, data.examples) (the host checks
/// them before they travel). Returns the launch's error.
cudaError_t enqueueGatherExamples(const CachedExamples &data,
                                  const int64_t *indices, int64_t rows,
                                  float *images, void *labels, bool oneHot,
                                  cudaStream_t stream);

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_INPUTGATHER_H
