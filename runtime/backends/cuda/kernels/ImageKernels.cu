//===- ImageKernels.cu - Keras' random image layers -----------------------===//
//
// random_image_transform: one thread per output pixel, taps from the
// shared header (runtime/core/ImageTransform.h) as on every backend; its
// gradient clears dx and scatters dy through the same taps with atomicAdd.
// random_contrast and its gradient: one block per image and channel, the
// means reduced in double. The step is read on the device, so a replayed
// CUDA graph draws the next step's transforms.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include "runtime/core/ImageTransform.h"

#include <string>

namespace graph::runtime::cuda {

namespace {

namespace it = image_transform;

struct TransformArgs {
  it::Spec spec;
  const float *src = nullptr;
  float *dst = nullptr;
  int64_t batch = 0, channels = 0;
  int64_t firstImage = 0;
  uint64_t runSeed = 0;
};

__global__ void imageTransformKernel(TransformArgs a, bool gradient,
                                     const int64_t *deviceStep) {
  const it::Spec &s = a.spec;
  uint64_t key = dropout::stepKey(s.seed, a.runSeed, *deviceStep);
  int64_t outPixels = s.outHeight * s.outWidth;
  int64_t inPixels = s.inHeight * s.inWidth;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < a.batch * outPixels; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t n = i / outPixels, pixel = i % outPixels;
    it::Projection p = it::projection(s, key, a.firstImage + n);
    it::Taps t = it::taps(s, p, pixel / s.outWidth, pixel % s.outWidth);
    int64_t o = (n * outPixels + pixel) * a.channels;
    for (int64_t c = 0; c < a.channels; ++c) {
      if (gradient) {
        for (int k = 0; k < t.count; ++k)
          atomicAdd(a.dst + (n * inPixels + t.index[k]) * a.channels + c,
                    static_cast<float>(t.weight[k]) * a.src[o + c]);
        continue;
      }
      double v = t.fillWeight * s.fillValue;
      for (int k = 0; k < t.count; ++k)
        v += t.weight[k] * a.src[(n * inPixels + t.index[k]) * a.channels + c];
      a.dst[o + c] = static_cast<float>(v);
    }
  }
}

KernelFactory imageTransformFactory(const char *name, bool gradient) {
  return [name, gradient](const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
    const TensorRef &image = gradient ? outs[0] : ins[0];
    const TensorRef &transformed = gradient ? ins[0] : outs[0];
    TransformArgs a;
    std::string error =
        it::specFromConfig(cfg, image.shape, transformed.shape, a.spec);
    REQUIRE(error.empty(), error);
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    REQUIRE(state->deviceStep, "the device keeps no step in device memory "
                               "(CudaDeviceState::deviceStep)");
    a.src = ins[0].f32();
    a.dst = outs[0].f32();
    a.batch = image.shape[0];
    a.channels = image.shape[3];
    int64_t pixels = a.batch * a.spec.outHeight * a.spec.outWidth;
    size_t dxBytes = static_cast<size_t>(outs[0].elements()) * sizeof(float);
    out = [state, a, gradient, pixels,
           dxBytes](const KernelContext &stepCtx, const KernelConfig &,
                    const Tensors &, const Tensors &) {
      if (pixels == 0)
        return Status::ok();
      TransformArgs args = a;
      args.firstImage = stepCtx.globalRowOffset;
      args.runSeed = stepCtx.seed;
      if (gradient)
        RETURN_IF_CUDA_ERROR(
            cudaMemsetAsync(args.dst, 0, dxBytes, state->compute));
      imageTransformKernel<<<blocksFor(pixels), kThreads, 0, state->compute>>>(
          args, gradient, state->deviceStep);
      RETURN_IF_LAUNCH_FAILED("imageTransformKernel");
      return Status::ok();
    };
    return Status::ok();
  };
}

struct ContrastArgs {
  const float *x = nullptr;
  const float *dy = nullptr; // the gradient's; null in the forward
  float *y = nullptr;
  int64_t pixels = 0, channels = 0;
  int64_t seed = 0, firstImage = 0;
  uint64_t runSeed = 0;
  double lower = 0, upper = 0;
  float low = 0, high = 0;
};

/// Sums `v` over the block (kThreads threads) into every thread's result.
__device__ double blockSum(double v, double *shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  double sum = shared[0];
  __syncthreads();
  return sum;
}

/// Block (c, n): channel c of image n.
__global__ void contrastKernel(ContrastArgs a, const int64_t *deviceStep) {
  __shared__ double shared[kThreads];
  int64_t n = blockIdx.y, c = blockIdx.x;
  uint64_t key = dropout::stepKey(a.seed, a.runSeed, *deviceStep);
  float f = static_cast<float>(
      it::contrastFactor(key, a.firstImage + n, a.lower, a.upper));
  int64_t base = n * a.pixels * a.channels + c;
  double sum = 0.0;
  for (int64_t p = threadIdx.x; p < a.pixels; p += kThreads)
    sum += a.x[base + p * a.channels];
  float mean = static_cast<float>(blockSum(sum, shared) / a.pixels);
  auto passed = [&](int64_t k) {
    float u = (a.x[k] - mean) * f + mean;
    return u >= a.low && u <= a.high;
  };
  if (!a.dy) {
    for (int64_t p = threadIdx.x; p < a.pixels; p += kThreads) {
      int64_t k = base + p * a.channels;
      float u = (a.x[k] - mean) * f + mean;
      a.y[k] = fminf(fmaxf(u, a.low), a.high);
    }
    return;
  }
  double gSum = 0.0;
  for (int64_t p = threadIdx.x; p < a.pixels; p += kThreads) {
    int64_t k = base + p * a.channels;
    gSum += passed(k) ? a.dy[k] : 0.0f;
  }
  float gMean = static_cast<float>(blockSum(gSum, shared) / a.pixels);
  for (int64_t p = threadIdx.x; p < a.pixels; p += kThreads) {
    int64_t k = base + p * a.channels;
    a.y[k] = f * (passed(k) ? a.dy[k] : 0.0f) + (1 - f) * gMean;
  }
}

KernelFactory contrastFactory(const char *name, bool gradient) {
  return [name, gradient](const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
    const char *kName = name;
    size_t arity = gradient ? 2 : 1;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, arity, arity, 1));
    const TensorRef &image = ins[arity - 1];
    REQUIRE(image.shape.size() == 4 && outs[0].shape == image.shape &&
                (!gradient || ins[0].shape == image.shape),
            "expects NHWC operands of one shape, got " +
                shapeText(image.shape));
    std::vector<double> range = cfg.getFloats("contrast_range");
    std::vector<double> values = cfg.getFloats("value_range");
    REQUIRE(range.size() == 2 && values.size() == 2,
            "needs contrast_range and value_range");
    REQUIRE(image.shape[0] <= 65535 && image.shape[3] <= INT32_MAX,
            "more images than a grid's y dimension takes");
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    REQUIRE(state->deviceStep, "the device keeps no step in device memory "
                               "(CudaDeviceState::deviceStep)");
    ContrastArgs a;
    a.x = ins[arity - 1].f32();
    a.dy = gradient ? ins[0].f32() : nullptr;
    a.y = outs[0].f32();
    a.pixels = image.shape[1] * image.shape[2];
    a.channels = image.shape[3];
    a.seed = cfg.getInt("seed", 0);
    a.lower = range[0];
    a.upper = range[1];
    a.low = static_cast<float>(values[0]);
    a.high = static_cast<float>(values[1]);
    dim3 grid(static_cast<unsigned>(image.shape[3]),
              static_cast<unsigned>(image.shape[0]));
    out = [state, a, grid](const KernelContext &stepCtx, const KernelConfig &,
                           const Tensors &, const Tensors &) {
      if (grid.x == 0 || grid.y == 0 || a.pixels == 0)
        return Status::ok();
      ContrastArgs args = a;
      args.firstImage = stepCtx.globalRowOffset;
      args.runSeed = stepCtx.seed;
      contrastKernel<<<grid, kThreads, 0, state->compute>>>(args,
                                                            state->deviceStep);
      RETURN_IF_LAUNCH_FAILED("contrastKernel");
      return Status::ok();
    };
    return Status::ok();
  };
}

} // namespace

void registerImageKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("random_image_transform", Backend::cuda,
               imageTransformFactory("random_image_transform", false));
  r.addFactory("random_image_transform_grad", Backend::cuda,
               imageTransformFactory("random_image_transform_grad", true));
  r.addFactory("random_contrast", Backend::cuda,
               contrastFactory("random_contrast", false));
  r.addFactory("random_contrast_grad", Backend::cuda,
               contrastFactory("random_contrast_grad", true));
}

} // namespace graph::runtime::cuda
