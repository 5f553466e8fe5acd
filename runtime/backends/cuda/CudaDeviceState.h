//===- CudaDeviceState.h - a CUDA kernel's device state -------*- C++ -*-===//
//
// KernelContext::deviceState on Backend::cuda points to one of these, owned
// by the executor's device (one per logical GPU; several logical GPUs may
// share one physical GPU). Kernels enqueue on `compute` only and never
// synchronise: the executor orders streams with the plan's events, and the
// whole step may be captured into a CUDA graph, so a kernel must not
// allocate, copy to the host, or call anything illegal during capture.
// A kernel factory (instantiated once per launch site, outside capture)
// may query the libraries and pick algorithms.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_CUDADEVICESTATE_H
#define RUNTIME_BACKENDS_CUDA_CUDADEVICESTATE_H

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace graph::runtime::cuda {

class ConvAlgoCache;

struct CudaDeviceState {
  /// The physical GPU (cudaSetDevice) and the logical device (the replica).
  int ordinal = 0;
  int logical = 0;
  /// Kernels run on `compute`; all-reduces on `comm`; input copies on `copy`.
  cudaStream_t compute = nullptr;
  cudaStream_t comm = nullptr;
  cudaStream_t copy = nullptr;
  /// Library handles of this device, bound to `compute`.
  cudnnHandle_t cudnn = nullptr;
  cublasLtHandle_t cublasLt = nullptr;
  /// Scratch for cuDNN and cuBLASLt, allocated once with the arena: a
  /// kernel picks algorithms whose workspace fits in `workspaceBytes`.
  /// Kernels on one stream run one at a time, so they share it.
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  /// Convolutions (cuDNN's CUDNN_DEFAULT_MATH instead of CUDNN_FMA_MATH)
  /// and matrix products (CUBLAS_COMPUTE_32F_FAST_TF32 instead of
  /// CUBLAS_COMPUTE_32F) may round their operands to TF32 on the tensor
  /// cores: ExecutorOptions::precision. Off, every kernel is exact fp32.
  bool tf32 = false;
  /// The plan's measured cuDNN algorithms (ConvAlgoCache.h), shared by the
  /// devices of a run; null: measured choices last this process only.
  ConvAlgoCache *convAlgos = nullptr;
  /// The global step (KernelContext::step) as an int64 in this device's
  /// memory, written by the executor before each step. A replayed CUDA graph
  /// keeps the kernel arguments it was captured with, so a kernel whose
  /// result depends on the step (Adam's bias correction, dropout masks)
  /// must read it from here on the device, not from KernelContext::step.
  const int64_t *deviceStep = nullptr;
};

/// The scratch every device allocates (kWorkspaceBytes) for its kernels.
inline constexpr size_t kWorkspaceBytes = size_t(256) << 20;

/// Registers every CUDA kernel under Backend::cuda. Idempotent. Registering
/// needs no GPU; instantiating a kernel does.
void registerCudaKernels();

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_CUDADEVICESTATE_H
