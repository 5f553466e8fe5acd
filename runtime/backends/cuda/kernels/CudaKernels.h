//===- CudaKernels.h - what the CUDA kernel files share ---------*- C++ -*-===//
//
// The internal header of GraphCudaKernels: one registration function per
// kernel family, and what every factory needs: operand and shape checks
// with messages naming the kernel, the launch site's device state, the
// window geometry of the reference backend (Keras / TensorFlow padding),
// and device memory a launch site owns.
//
// A factory validates everything once, so a KernelFn only enqueues work on
// the compute stream: no allocation, no synchronisation, no host reads of
// device memory, which is what lets the executor capture a whole step into
// a CUDA graph.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_KERNELS_CUDAKERNELS_H
#define RUNTIME_BACKENDS_CUDA_KERNELS_CUDAKERNELS_H

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/CudaDeviceState.h"
#include "runtime/backends/cuda/GpuHang.h"
#include "runtime/backends/cuda/kernels/Launchers.h"
#include "runtime/core/Kernel.h"
#include "runtime/core/WindowGeometry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::cuda {

// One per file; registerCudaKernels() calls them all.
void registerConvKernels();
void registerDenseKernels();
void registerElementwiseKernels();
void registerLossKernels();
void registerOptimizerKernels();
void registerPoolNormKernels();
void registerShapeKernels();
void registerImageKernels();

using Tensors = std::vector<TensorRef>;

/// In a factory with `static constexpr const char *kName`: fails with a
/// message that names the kernel.
#define REQUIRE(cond, message)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      return ::graph::runtime::Status::error(std::string(kName) + ": " +       \
                                             (message));                       \
  } while (false)

#define RETURN_IF_ERROR(expr)                                                  \
  do {                                                                         \
    if (::graph::runtime::Status s_ = (expr); !s_)                             \
      return s_;                                                               \
  } while (false)

/// The launch site's device, or an error naming the kernel when the
/// context carries none (a kernel instantiated outside a CUDA device).
Status deviceStateOf(const char *kName, const KernelContext &ctx,
                     CudaDeviceState *&out);

/// runtime/core/WindowGeometry.h's resolveWindow, and an error for an
/// empty batch or channel count, which cuDNN descriptors reject.
Status resolveNonEmptyWindow(const char *kName, const KernelConfig &config,
                             const std::vector<int64_t> &input, int64_t kh,
                             int64_t kw, bool dilated, WindowGeometry &g);

/// resolveConv (runtime/core/WindowGeometry.h), refusing an empty input
/// as resolveNonEmptyWindow does.
Status resolveConvWindow(const char *kName, const KernelConfig &config,
                         const std::vector<int64_t> &input,
                         const std::vector<int64_t> &kernelShape,
                         WindowGeometry &g, ConvChannels &cc);

/// The fused epilogue activation named `name` ("none", "linear" or empty:
/// none).
Status parseActivation(const char *kName, const std::string &name,
                       Activation &out);

/// Whether `n` fits a 32-bit int, which cuDNN's descriptors take.
inline bool fitsInt(int64_t n) { return n >= 0 && n <= INT32_MAX; }

/// Threads per block of the own kernels' grid-stride loops.
inline constexpr int kThreads = 256;

/// Blocks for a grid-stride loop over `n` items, `kThreads` per block:
/// enough to fill any GPU, few enough that each thread does some work.
inline unsigned blocksFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(blocks, 1, 65536));
}

/// `bytes` rounded up to `alignment`.
inline size_t alignUp(size_t bytes, size_t alignment = 256) {
  return (bytes + alignment - 1) / alignment * alignment;
}

/// Makes `ordinal` the calling thread's device until destroyed, so a
/// factory allocating for one device leaves the thread as it found it.
class ScopedDevice {
public:
  ScopedDevice() = default;
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice &) = delete;
  ScopedDevice &operator=(const ScopedDevice &) = delete;
  Status enter(int ordinal);

private:
  int previous_ = -1;
};

/// Device memory a launch site owns: allocated by its factory (outside any
/// step), freed when the last copy of its KernelFn goes.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  Status allocate(int ordinal, size_t bytes);
  void *data() const { return data_; }

private:
  void *data_ = nullptr;
  int ordinal_ = 0;
};

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_KERNELS_CUDAKERNELS_H
