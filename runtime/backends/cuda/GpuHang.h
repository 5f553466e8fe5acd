//===- GpuHang.h - the process-wide "a GPU is hung" flag --------*- C++ -*-===//
//
// Set once, by the step watchdog (CudaDevice.cpp's waitForStep), when a
// step did not finish within the timeout: some kernel may never finish.
// From then on every call into the CUDA runtime that may wait for the GPU
// (a stream or event synchronisation, cudaFree, cudaFreeHost, module
// unloading at exit) would block forever and the error would never reach
// the user. So after it is set, nothing in this backend calls into the CUDA
// runtime again: destructors leak, device operations fail at once, and
// graphrun ends with std::_Exit (runtime/core/Device.h's deviceLost()).
// The one call made after the declaration is NCCL's ncclCommAbort, which
// NCCL documents for exactly this: unblocking communicators that hang.
//
// Header-only, so the kernels, the collectives and the device runtime
// share one flag (an inline function's static is one object per program).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_GPUHANG_H
#define RUNTIME_BACKENDS_CUDA_GPUHANG_H

#include <atomic>

namespace graph::runtime::cuda {

inline std::atomic<bool> &gpuHungFlag() {
  static std::atomic<bool> flag{false};
  return flag;
}
/// Whether the watchdog declared a GPU hung in this process.
inline bool gpuHung() { return gpuHungFlag().load(std::memory_order_acquire); }
/// Declares a GPU hung; never undone.
inline void markGpuHung() {
  gpuHungFlag().store(true, std::memory_order_release);
}

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_GPUHANG_H
