//===- CudaCheck.h - CUDA, NCCL and library results as Status --*- C++ -*-===//
//
// Every call into the CUDA runtime, NCCL, cuDNN or cuBLASLt, in the device
// runtime and in the kernels, goes through RETURN_IF_CUDA_ERROR (or
// CUDA_CALL_STATUS where a cleanup path must go on), which turns a failure
// into a Status naming the call, the library's message and the source line;
// every kernel launch is followed by RETURN_IF_LAUNCH_FAILED: a bad launch
// configuration surfaces only through cudaGetLastError, and on a machine
// where nobody watches the GPU the message is all a failed run leaves.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_CUDACHECK_H
#define RUNTIME_BACKENDS_CUDA_CUDACHECK_H

#include "runtime/base/Status.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

namespace graph::runtime::cuda {

inline bool succeeded(cudaError_t result) { return result == cudaSuccess; }
inline bool succeeded(cudnnStatus_t result) {
  return result == CUDNN_STATUS_SUCCESS;
}
inline bool succeeded(cublasStatus_t result) {
  return result == CUBLAS_STATUS_SUCCESS;
}
inline bool succeeded(ncclResult_t result) { return result == ncclSuccess; }

inline std::string resultText(cudaError_t result) {
  return std::string(cudaGetErrorName(result)) + ": " +
         cudaGetErrorString(result);
}
inline std::string resultText(cudnnStatus_t result) {
  return cudnnGetErrorString(result);
}
inline std::string resultText(ncclResult_t result) {
  return std::string("NCCL: ") + ncclGetErrorString(result);
}
// cublasGetStatusString lives in libcublas, which nothing else here needs.
inline std::string resultText(cublasStatus_t result) {
  switch (result) {
  case CUBLAS_STATUS_SUCCESS:
    return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "cublasStatus_t " + std::to_string(static_cast<int>(result));
}

/// Ok when `result` is its library's success, else an error naming `call`.
template <typename Result>
Status callStatus(Result result, const char *call, const char *file, int line) {
  if (succeeded(result))
    return Status::ok();
  return Status::error(std::string(call) + " failed: " + resultText(result) +
                       " (" + file + ":" + std::to_string(line) + ")");
}

} // namespace graph::runtime::cuda

/// Returns the Status of a failed CUDA runtime, cuDNN or cuBLASLt call.
#define RETURN_IF_CUDA_ERROR(call)                                             \
  do {                                                                         \
    if (::graph::runtime::Status s_ = ::graph::runtime::cuda::callStatus(      \
            (call), #call, __FILE__, __LINE__);                                \
        !s_)                                                                   \
      return s_;                                                               \
  } while (false)

/// The Status of `call`, as an expression (for cleanup paths that go on).
#define CUDA_CALL_STATUS(call)                                                 \
  ::graph::runtime::cuda::callStatus((call), #call, __FILE__, __LINE__)

/// Checks the launch just made of `kernel` (a string naming it).
#define RETURN_IF_LAUNCH_FAILED(kernel)                                        \
  do {                                                                         \
    if (::graph::runtime::Status s_ = ::graph::runtime::cuda::callStatus(      \
            cudaGetLastError(), "launch of " kernel, __FILE__, __LINE__);      \
        !s_)                                                                   \
      return s_;                                                               \
  } while (false)

#endif // RUNTIME_BACKENDS_CUDA_CUDACHECK_H
