//===- CudaTestDevice.h - a CUDA device for kernel tests --------*- C++ -*-===//
//
// What the executor's CUDA device gives kernels (a CudaDeviceState:
// stream, cuDNN and cuBLASLt handles bound to it, a workspace, the step in
// device memory), set up by
// the tests themselves on GPU 0, and device copies of the tests' host
// tensors. Without a GPU, CudaTestDevice::get() says why, for
// GTEST_SKIP().
//
//===----------------------------------------------------------------------===//

#ifndef TEST_RUNTIME_CUDA_CUDATESTDEVICE_H
#define TEST_RUNTIME_CUDA_CUDATESTDEVICE_H

#include "KernelTestUtil.h"

#include "runtime/backends/cuda/CudaDeviceState.h"

#include <string>

namespace graph::runtime::testing {

class CudaTestDevice {
public:
  /// The process's test device, created on first use; null when there is
  /// no usable GPU, with the reason in `whyNot`.
  static CudaTestDevice *get(std::string &whyNot);
  ~CudaTestDevice();
  CudaTestDevice(const CudaTestDevice &) = delete;
  CudaTestDevice &operator=(const CudaTestDevice &) = delete;

  cuda::CudaDeviceState &state() { return state_; }
  /// Writes the global step that kernels read from device memory
  /// (CudaDeviceState::deviceStep), after the work in flight.
  void setStep(int64_t step);
  /// A context for a kernel on this device (ctx's other fields kept).
  KernelContext context(KernelContext ctx = {}) {
    ctx.deviceState = &state_;
    return ctx;
  }

private:
  CudaTestDevice() = default;
  Status open();
  cuda::CudaDeviceState state_;
  int64_t *step_ = nullptr;
};

/// Skips the test when there is no GPU; else `device` is the test device.
#define REQUIRE_CUDA_DEVICE(device)                                            \
  std::string whyNot_;                                                         \
  ::graph::runtime::testing::CudaTestDevice *device =                          \
      ::graph::runtime::testing::CudaTestDevice::get(whyNot_);                 \
  if (!device)                                                                 \
  GTEST_SKIP() << whyNot_

/// Waits for all work on the device (the compute stream is non-blocking,
/// so the tests' synchronous copies and memsets do not order with it).
void synchronize();

/// A device copy of a host Tensor (f32, f64 or i32), freed with it.
class DeviceTensor {
public:
  explicit DeviceTensor(const Tensor &host);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;

  /// Whether the allocation and copy (complete on return) succeeded; else
  /// a test failure was recorded.
  bool ok() const { return ok_; }
  TensorRef ref() const;
  /// Fills the buffer with 0xff bytes (NaN for f32 and f64, so an element
  /// a kernel fails to write cannot pass a comparison) and waits for it.
  void poison();
  /// Copies the device data back into `host` (same shape and dtype).
  void read(Tensor &host) const;

private:
  void *data_ = nullptr;
  size_t bytes_ = 0;
  std::vector<int64_t> shape_;
  plan::DType dtype_;
  bool ok_ = false;
};

} // namespace graph::runtime::testing

#endif // TEST_RUNTIME_CUDA_CUDATESTDEVICE_H
