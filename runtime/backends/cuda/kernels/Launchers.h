//===- Launchers.h - own kernels the library calls from C++ -----*- C++ -*-===//
//
// Host functions, compiled by nvcc, that enqueue this library's own kernels
// on a stream; the cuDNN and cuBLASLt factories (plain C++) use them for the
// layouts and epilogues the libraries do not provide. Each returns the
// launch's cudaGetLastError(), so a caller wraps it in
// RETURN_IF_CUDA_ERROR.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_KERNELS_LAUNCHERS_H
#define RUNTIME_BACKENDS_CUDA_KERNELS_LAUNCHERS_H

#include "runtime/backends/cuda/kernels/DirectConv.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace graph::runtime::cuda {

/// The activation of a fused conv or dense epilogue (GraphOps.td's
/// EpilogueActivation).
enum class Activation : int32_t { none, relu, sigmoid, tanh };

/// y[i] = act(y[i] + bias[i % channels]) in place; `bias` may be null.
cudaError_t launchBiasActivation(float *y, const float *bias, int64_t elements,
                                 int64_t channels, Activation activation,
                                 cudaStream_t stream);

/// dst = transpose(src) for a row-major `rows` x `cols` src: an HWIO conv
/// kernel ([H*W*I, O]) to cuDNN's OHWI ([O, H*W*I]) and back (a kernel of
/// filter_layout ohwi is cuDNN's already and is not transposed).
cudaError_t launchTranspose(const float *src, float *dst, int64_t rows,
                            int64_t cols, cudaStream_t stream);

/// An NHWC tensor [n, h, w, c] inside a zero-padded one
/// [n, h + top + bottom, w + left + right, c].
struct NhwcPadding {
  int64_t n = 0, h = 0, w = 0, c = 0;
  int64_t top = 0, bottom = 0, left = 0, right = 0;
  int64_t paddedH() const { return h + top + bottom; }
  int64_t paddedW() const { return w + left + right; }
  int64_t paddedElements() const { return n * paddedH() * paddedW() * c; }
};

/// Writes all of `padded`: `x` inside, zeros around (negative amounts crop
/// `x`: graph.pad uses it both ways). cuDNN pads
/// symmetrically only; TensorFlow's `same` padding of an odd total puts the
/// extra row and column after.
cudaError_t launchPadNhwc(const float *x, float *padded,
                          const NhwcPadding &geometry, cudaStream_t stream);

/// x = the inside of `padded` (the gradient of launchPadNhwc).
cudaError_t launchCropNhwc(const float *padded, float *x,
                           const NhwcPadding &geometry, cudaStream_t stream);

/// A transpose of up to kMaxPermuteRank axes: output axis d has outDims[d]
/// entries and steps through the input by from[d] elements.
struct PermuteGeometry {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t outDims[kMaxRank] = {};
  int64_t from[kMaxRank] = {};
  int64_t elements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d)
      n *= outDims[d];
    return n;
  }
};

/// y = x with its axes permuted (graph.transpose).
cudaError_t launchPermute(const float *x, float *y,
                          const PermuteGeometry &geometry, cudaStream_t stream);

/// fused_conv2d_pool in its direct form (DirectConv.h): y and argmax, each
/// [n, pool.outH, pool.outW, f]; `bias` may be null; relu or no activation.
cudaError_t launchFusedConvPoolDirect(const DirectConv &cv,
                                      const DirectPool &pool, const float *x,
                                      const float *kernel, const float *bias,
                                      bool relu, float *y, int32_t *argmax,
                                      cudaStream_t stream);

/// How many groups of positions conv2d_grad_kernel's direct form splits
/// `cv` into, their partials fitting `workspaceBytes` (0: they do not).
int64_t directKernelGradGroups(const DirectConv &cv, size_t workspaceBytes);

/// conv2d_grad_kernel in its direct form: the kernel gradient (HWIO, or
/// OHWI with `cv.ohwi`) from x and dy, through `groups` partial sums per tap
/// and filter at `partials` (groups * taps * f doubles, e.g. the device
/// workspace).
cudaError_t launchKernelGradDirect(const DirectConv &cv, const float *x,
                                   const float *dy, float *kernelGrad,
                                   double *partials, int64_t groups,
                                   cudaStream_t stream);

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_KERNELS_LAUNCHERS_H
