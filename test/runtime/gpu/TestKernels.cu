//===- TestKernels.cu - kernels of the GPU runtime tests ------------------===//

#include "test/runtime/gpu/TestKernels.h"

#include "runtime/backends/cuda/CudaDeviceState.h"
#include "runtime/core/Kernel.h"

#include <string>
#include <vector>

namespace graph::runtime::gputest {
namespace {

using Tensors = std::vector<TensorRef>;

// Single-thread kernels: the tiny plan has a handful of elements, and one
// thread sums in the host kernels' order, so both backends round alike.
__global__ void mulKernel(const float *x, const float *w, float *out, int64_t n,
                          int64_t cols) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = x[i] * w[i % cols];
}
__global__ void sumKernel(const float *x, float *out, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    s += x[i];
  out[0] = s;
}
__global__ void colSumKernel(const float *x, float *out, int64_t n,
                             int64_t cols) {
  for (int64_t j = 0; j < cols; ++j)
    out[j] = 0.0f;
  for (int64_t i = 0; i < n; ++i)
    out[i % cols] += x[i];
}
// The step comes from device memory: a replayed graph must see each step's.
__global__ void sgdStepKernel(float *w, const float *g, int64_t n, float lr,
                              const int64_t *step) {
  float scale = lr * static_cast<float>(*step);
  for (int64_t i = 0; i < n; ++i)
    w[i] = w[i] - scale * g[i];
}
__global__ void delayedWriteKernel(float *dst, float value, long long cycles) {
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
  *dst = value;
}
__global__ void copyOneKernel(float *dst, const float *src) { *dst = *src; }

Status launched(const char *name) {
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    return Status::error(std::string(name) + ": " + cudaGetErrorString(e));
  return Status::ok();
}

const cuda::CudaDeviceState &state(const KernelContext &ctx) {
  return *static_cast<const cuda::CudaDeviceState *>(ctx.deviceState);
}

Status hostMul(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  int64_t cols = ins[1].elements();
  for (int64_t i = 0; i < outs[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] * ins[1].f32()[i % cols];
  return Status::ok();
}
Status hostSum(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  float s = 0.0f;
  for (int64_t i = 0; i < ins[0].elements(); ++i)
    s += ins[0].f32()[i];
  outs[0].f32()[0] = s;
  return Status::ok();
}
Status hostColSum(const KernelContext &, const KernelConfig &,
                  const Tensors &ins, const Tensors &outs) {
  int64_t cols = outs[0].elements();
  for (int64_t j = 0; j < cols; ++j)
    outs[0].f32()[j] = 0.0f;
  for (int64_t i = 0; i < ins[0].elements(); ++i)
    outs[0].f32()[i % cols] += ins[0].f32()[i];
  return Status::ok();
}
Status hostSgdStep(const KernelContext &ctx, const KernelConfig &config,
                   const Tensors &ins, const Tensors &outs) {
  float scale = static_cast<float>(config.getFloat("learning_rate")) *
                static_cast<float>(ctx.step);
  for (int64_t i = 0; i < outs[0].elements(); ++i)
    outs[0].f32()[i] = ins[0].f32()[i] - scale * ins[1].f32()[i];
  return Status::ok();
}

Status cudaMul(const KernelContext &ctx, const KernelConfig &,
               const Tensors &ins, const Tensors &outs) {
  mulKernel<<<1, 1, 0, state(ctx).compute>>>(ins[0].f32(), ins[1].f32(),
                                             outs[0].f32(), outs[0].elements(),
                                             ins[1].elements());
  return launched("test.mul");
}
Status cudaSum(const KernelContext &ctx, const KernelConfig &,
               const Tensors &ins, const Tensors &outs) {
  sumKernel<<<1, 1, 0, state(ctx).compute>>>(ins[0].f32(), outs[0].f32(),
                                             ins[0].elements());
  return launched("test.sum");
}
Status cudaColSum(const KernelContext &ctx, const KernelConfig &,
                  const Tensors &ins, const Tensors &outs) {
  colSumKernel<<<1, 1, 0, state(ctx).compute>>>(
      ins[0].f32(), outs[0].f32(), ins[0].elements(), outs[0].elements());
  return launched("test.colsum");
}
Status cudaSgdStep(const KernelContext &ctx, const KernelConfig &config,
                   const Tensors &ins, const Tensors &outs) {
  if (!state(ctx).deviceStep)
    return Status::error("test.sgd_step: the device has no step scalar");
  sgdStepKernel<<<1, 1, 0, state(ctx).compute>>>(
      outs[0].f32(), ins[1].f32(), outs[0].elements(),
      static_cast<float>(config.getFloat("learning_rate")),
      state(ctx).deviceStep);
  return launched("test.sgd_step");
}

} // namespace

void registerGpuTestKernels() {
  static bool done = false;
  if (done)
    return;
  done = true;
  KernelRegistry &r = KernelRegistry::global();
  r.add("test.mul", Backend::reference, hostMul);
  r.add("test.sum", Backend::reference, hostSum);
  r.add("test.colsum", Backend::reference, hostColSum);
  r.add("test.sgd_step", Backend::reference, hostSgdStep);
  r.add("test.mul", Backend::cuda, cudaMul);
  r.add("test.sum", Backend::cuda, cudaSum);
  r.add("test.colsum", Backend::cuda, cudaColSum);
  r.add("test.sgd_step", Backend::cuda, cudaSgdStep);
}

cudaError_t enqueueDelayedWrite(float *dst, float value, long long cycles,
                                cudaStream_t stream) {
  delayedWriteKernel<<<1, 1, 0, stream>>>(dst, value, cycles);
  return cudaGetLastError();
}

cudaError_t enqueueCopyOne(float *dst, const float *src, cudaStream_t stream) {
  copyOneKernel<<<1, 1, 0, stream>>>(dst, src);
  return cudaGetLastError();
}

} // namespace graph::runtime::gputest
