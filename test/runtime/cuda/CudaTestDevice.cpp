//===- CudaTestDevice.cpp - a CUDA device for kernel tests ----------------===//

#include "CudaTestDevice.h"

#include "runtime/backends/cuda/CudaCheck.h"

#include <memory>

namespace graph::runtime::testing {

namespace {
size_t elementBytes(plan::DType dtype) {
  return dtype == plan::DType::f64 || dtype == plan::DType::i64 ? 8 : 4;
}

const void *hostData(const Tensor &t) {
  switch (t.dtype) {
  case plan::DType::f32:
    return t.f.data();
  case plan::DType::i32:
    return t.i.data();
  default:
    return t.d.data();
  }
}
} // namespace

void synchronize() {
  cudaError_t e = cudaDeviceSynchronize();
  EXPECT_EQ(e, cudaSuccess)
      << "cudaDeviceSynchronize: " << cudaGetErrorString(e);
}

CudaTestDevice *CudaTestDevice::get(std::string &whyNot) {
  static std::unique_ptr<CudaTestDevice> device;
  static std::string reason;
  static bool tried = false;
  if (!tried) {
    tried = true;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      reason = std::string("no CUDA GPU (cudaGetDeviceCount: ") +
               cudaGetErrorName(e) + ": " + cudaGetErrorString(e) + ")";
    } else if (count == 0) {
      reason = "no CUDA GPU (cudaGetDeviceCount: 0 devices)";
    } else {
      device.reset(new CudaTestDevice());
      if (Status s = device->open(); !s) {
        reason = "CUDA device 0 unusable: " + s.message();
        device.reset();
      }
    }
  }
  whyNot = reason;
  return device.get();
}

Status CudaTestDevice::open() {
  RETURN_IF_CUDA_ERROR(cudaSetDevice(0));
  RETURN_IF_CUDA_ERROR(
      cudaStreamCreateWithFlags(&state_.compute, cudaStreamNonBlocking));
  RETURN_IF_CUDA_ERROR(cudnnCreate(&state_.cudnn));
  RETURN_IF_CUDA_ERROR(cudnnSetStream(state_.cudnn, state_.compute));
  RETURN_IF_CUDA_ERROR(cublasLtCreate(&state_.cublasLt));
  RETURN_IF_CUDA_ERROR(cudaMalloc(&state_.workspace, cuda::kWorkspaceBytes));
  state_.workspaceBytes = cuda::kWorkspaceBytes;
  RETURN_IF_CUDA_ERROR(cudaMalloc(&step_, sizeof(int64_t)));
  state_.deviceStep = step_;
  setStep(1);
  return Status::ok();
}

void CudaTestDevice::setStep(int64_t step) {
  synchronize(); // a kernel in flight may still read the old step
  cudaError_t e =
      cudaMemcpy(step_, &step, sizeof(step), cudaMemcpyHostToDevice);
  EXPECT_EQ(e, cudaSuccess) << "cudaMemcpy: " << cudaGetErrorString(e);
  synchronize();
}

CudaTestDevice::~CudaTestDevice() {
  // Teardown at process exit: failures have no one left to report to.
  if (step_)
    (void)cudaFree(step_);
  if (state_.workspace)
    (void)cudaFree(state_.workspace);
  if (state_.cublasLt)
    (void)cublasLtDestroy(state_.cublasLt);
  if (state_.cudnn)
    (void)cudnnDestroy(state_.cudnn);
  if (state_.compute)
    (void)cudaStreamDestroy(state_.compute);
}

DeviceTensor::DeviceTensor(const Tensor &host)
    : bytes_(size_t(host.elements()) * elementBytes(host.dtype)),
      shape_(host.shape), dtype_(host.dtype) {
  cudaError_t e = cudaMalloc(&data_, std::max<size_t>(bytes_, 1));
  EXPECT_EQ(e, cudaSuccess) << "cudaMalloc: " << cudaGetErrorString(e);
  if (e != cudaSuccess) {
    data_ = nullptr;
    return;
  }
  e = cudaMemcpy(data_, hostData(host), bytes_, cudaMemcpyHostToDevice);
  EXPECT_EQ(e, cudaSuccess) << "cudaMemcpy: " << cudaGetErrorString(e);
  ok_ = e == cudaSuccess;
  synchronize();
}

DeviceTensor::~DeviceTensor() {
  if (data_) {
    EXPECT_EQ(cudaFree(data_), cudaSuccess);
  }
}

TensorRef DeviceTensor::ref() const {
  TensorRef r;
  r.data = data_;
  r.shape = shape_;
  r.dtype = dtype_;
  return r;
}

void DeviceTensor::poison() {
  cudaError_t e = cudaMemset(data_, 0xff, bytes_);
  EXPECT_EQ(e, cudaSuccess) << "cudaMemset: " << cudaGetErrorString(e);
  synchronize();
}

void DeviceTensor::read(Tensor &host) const {
  ASSERT_EQ(host.shape, shape_);
  ASSERT_EQ(host.dtype, dtype_);
  cudaError_t e = cudaMemcpy(const_cast<void *>(hostData(host)), data_, bytes_,
                             cudaMemcpyDeviceToHost);
  EXPECT_EQ(e, cudaSuccess) << "cudaMemcpy: " << cudaGetErrorString(e);
}

} // namespace graph::runtime::testing
