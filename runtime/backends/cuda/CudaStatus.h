//===- CudaStatus.h - CUDA, NCCL and library errors as Status ---*- C++ -*-===//
//
// Every CUDA runtime, NCCL, cuDNN and cuBLASLt call of the device runtime
// goes through one of these macros: a failure becomes a Status naming the
// call, the file and line, and the library's own message, so an error on a
// GPU machine nobody is watching says what failed where.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
#define RUNTIME_BACKENDS_CUDA_CUDASTATUS_H

#include "runtime/core/Status.h"

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <nccl.h>

#include <string>

// In their own namespace: the kernels' CudaCheck.h has helpers of the same
// purpose in graph::runtime::cuda, and the two must not collide.
namespace graph::runtime::cuda::device_status {

inline Status callError(const char *call, const char *file, int line,
                        const std::string &what) {
  return Status::error(std::string(call) + " failed (" + file + ":" +
                       std::to_string(line) + "): " + what);
}

inline std::string describe(cudaError_t e) {
  return std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
}
inline std::string describe(ncclResult_t r) {
  return std::string("NCCL: ") + ncclGetErrorString(r);
}
inline std::string describe(cudnnStatus_t s) {
  return std::string("cuDNN: ") + cudnnGetErrorString(s);
}
inline std::string describe(cublasStatus_t s) {
  return "cuBLASLt status " + std::to_string(static_cast<int>(s));
}

inline bool succeeded(cudaError_t e) { return e == cudaSuccess; }
inline bool succeeded(ncclResult_t r) { return r == ncclSuccess; }
inline bool succeeded(cudnnStatus_t s) { return s == CUDNN_STATUS_SUCCESS; }
inline bool succeeded(cublasStatus_t s) { return s == CUBLAS_STATUS_SUCCESS; }

} // namespace graph::runtime::cuda::device_status

/// Evaluates `call` (a CUDA, NCCL, cuDNN or cuBLAS call) and returns a
/// Status naming it, the file and the line when it fails.
#define GRAPH_CUDA_TRY(call)                                                   \
  do {                                                                         \
    auto graphCudaResult_ = (call);                                            \
    if (!::graph::runtime::cuda::device_status::succeeded(graphCudaResult_))   \
      return ::graph::runtime::cuda::device_status::callError(                 \
          #call, __FILE__, __LINE__,                                           \
          ::graph::runtime::cuda::device_status::describe(graphCudaResult_));  \
  } while (0)

/// The same, as a Status expression (for cleanup paths that must go on).
#define GRAPH_CUDA_STATUS(call)                                                \
  [&]() -> ::graph::runtime::Status {                                          \
    GRAPH_CUDA_TRY(call);                                                      \
    return ::graph::runtime::Status::ok();                                     \
  }()

#endif // RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
