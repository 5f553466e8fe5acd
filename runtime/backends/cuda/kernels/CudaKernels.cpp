//===- CudaKernels.cpp - registration and what the factories share --------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include <algorithm>
#include <mutex>

namespace graph::runtime::cuda {

void registerCudaKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerConvKernels();
    registerDenseKernels();
    registerElementwiseKernels();
    registerLossKernels();
    registerOptimizerKernels();
    registerPoolNormKernels();
    registerShapeKernels();
    registerImageKernels();
  });
}

Status deviceStateOf(const char *kName, const KernelContext &ctx,
                     CudaDeviceState *&out) {
  out = static_cast<CudaDeviceState *>(ctx.deviceState);
  REQUIRE(out, "no CUDA device state in the kernel context (instantiated "
               "outside a CUDA device?)");
  return Status::ok();
}

Status resolveNonEmptyWindow(const char *kName, const KernelConfig &config,
                             const std::vector<int64_t> &input, int64_t kh,
                             int64_t kw, bool dilated, WindowGeometry &g) {
  RETURN_IF_ERROR(resolveWindow(kName, config, input, kh, kw, dilated, g));
  REQUIRE(g.n > 0 && g.c > 0, "empty input " + shapeText(input));
  return Status::ok();
}

Status resolveConvWindow(const char *kName, const KernelConfig &config,
                         const std::vector<int64_t> &input,
                         const std::vector<int64_t> &kernelShape,
                         WindowGeometry &g, ConvChannels &cc) {
  RETURN_IF_ERROR(resolveConv(kName, config, input, kernelShape, g, cc));
  REQUIRE(g.n > 0 && g.c > 0, "empty input " + shapeText(input));
  return Status::ok();
}

Status parseActivation(const char *kName, const std::string &name,
                       Activation &out) {
  if (name.empty() || name == "none" || name == "linear")
    out = Activation::none;
  else if (name == "relu")
    out = Activation::relu;
  else if (name == "sigmoid")
    out = Activation::sigmoid;
  else if (name == "tanh")
    out = Activation::tanh;
  else
    REQUIRE(false, "unknown activation '" + name + "'");
  return Status::ok();
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0)
    (void)cudaSetDevice(previous_); // nothing to report to in a destructor
}

Status ScopedDevice::enter(int ordinal) {
  int current = 0;
  RETURN_IF_CUDA_ERROR(cudaGetDevice(&current));
  if (current != ordinal) {
    RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal));
    previous_ = current;
  }
  return Status::ok();
}

DeviceBuffer::~DeviceBuffer() {
  // cudaFree waits for the GPU: after a hang it would never return
  // (GpuHang.h), so the memory is left to the process's end.
  if (!data_ || gpuHung())
    return;
  // At process exit the runtime may be gone already; the memory goes with
  // it, so a failure here has nothing left to leak.
  ScopedDevice device;
  if (device.enter(ordinal_))
    (void)cudaFree(data_);
}

Status DeviceBuffer::allocate(int ordinal, size_t bytes) {
  if (data_)
    return Status::error("DeviceBuffer::allocate: already allocated");
  ScopedDevice device;
  RETURN_IF_ERROR(device.enter(ordinal));
  RETURN_IF_CUDA_ERROR(cudaMalloc(&data_, std::max<size_t>(bytes, 1)));
  ordinal_ = ordinal;
  return Status::ok();
}

} // namespace graph::runtime::cuda
