//===- VectorImageKernels.cpp - Keras' random image layers ----------------===//
//
// random_image_transform resamples each image at taps the shared header
// (runtime/core/ImageTransform.h) gives, in float with the taps' weights;
// its gradient scatters dy back through the same taps, one image per
// thread so no two threads add to one pixel. random_contrast and its
// gradient take one image per thread too.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ImageTransform.h"

#include <algorithm>
#include <cstring>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;
namespace it = image_transform;

KernelFactory imageTransformFactory(const char *kName, bool gradient) {
  return [kName, gradient](const KernelContext &, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) -> Status {
    if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
      return s;
    const TensorRef &image = gradient ? outs[0] : ins[0];
    const TensorRef &transformed = gradient ? ins[0] : outs[0];
    it::Spec spec;
    std::string error =
        it::specFromConfig(cfg, image.shape, transformed.shape, spec);
    if (!error.empty())
      return kernelError(kName, error);
    int64_t batch = image.shape[0], channels = image.shape[3];
    out = [=](const KernelContext &ctx, const KernelConfig &,
              const Tensors &ins, const Tensors &outs) {
      useReplicaThreads(ctx);
      const float *src = ins[0].f32();
      float *dst = outs[0].f32();
      int64_t inImage = spec.inHeight * spec.inWidth * channels;
      int64_t outImage = spec.outHeight * spec.outWidth * channels;
      uint64_t key = dropout::stepKey(spec.seed, ctx.seed, ctx.step);
      bool parallel = batch * outImage >= kParallelElements;
#pragma omp parallel for schedule(static) if (parallel)
      for (int64_t n = 0; n < batch; ++n) {
        it::Projection p = it::projection(spec, key, ctx.globalRowOffset + n);
        const float *from = src + n * (gradient ? outImage : inImage);
        float *to = dst + n * (gradient ? inImage : outImage);
        if (gradient)
          std::fill(to, to + inImage, 0.0f);
        for (int64_t oy = 0; oy < spec.outHeight; ++oy)
          for (int64_t ox = 0; ox < spec.outWidth; ++ox) {
            it::Taps t = it::taps(spec, p, oy, ox);
            int64_t o = (oy * spec.outWidth + ox) * channels;
            if (gradient) {
              for (int i = 0; i < t.count; ++i) {
                float w = static_cast<float>(t.weight[i]);
                float *pixel = to + t.index[i] * channels;
#pragma omp simd
                for (int64_t c = 0; c < channels; ++c)
                  pixel[c] += w * from[o + c];
              }
              continue;
            }
            float fill = static_cast<float>(t.fillWeight * spec.fillValue);
            for (int64_t c = 0; c < channels; ++c)
              to[o + c] = fill;
            for (int i = 0; i < t.count; ++i) {
              float w = static_cast<float>(t.weight[i]);
              const float *pixel = from + t.index[i] * channels;
#pragma omp simd
              for (int64_t c = 0; c < channels; ++c)
                to[o + c] += w * pixel[c];
            }
          }
      }
      return Status::ok();
    };
    return Status::ok();
  };
}

/// random_contrast (input x) and random_contrast_grad (inputs dy, x).
KernelFactory contrastFactory(const char *kName, bool gradient) {
  return [kName, gradient](const KernelContext &, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) -> Status {
    size_t arity = gradient ? 2 : 1;
    if (Status s =
            checkOperands(kName, ins, outs, arity, arity, 1, kCpuOperands);
        !s)
      return s;
    const TensorRef &image = ins[arity - 1];
    if (image.shape.size() != 4 || outs[0].shape != image.shape ||
        (gradient && ins[0].shape != image.shape))
      return kernelError(kName, "expects NHWC operands of one shape, got " +
                                    shapeText(image.shape));
    std::vector<double> range = cfg.getFloats("contrast_range");
    std::vector<double> values = cfg.getFloats("value_range");
    if (range.size() != 2 || values.size() != 2)
      return kernelError(kName, "needs contrast_range and value_range");
    int64_t seed = cfg.getInt("seed", 0);
    int64_t batch = image.shape[0], channels = image.shape[3];
    int64_t pixels = image.shape[1] * image.shape[2];
    float low = static_cast<float>(values[0]);
    float high = static_cast<float>(values[1]);
    out = [=](const KernelContext &ctx, const KernelConfig &,
              const Tensors &ins, const Tensors &outs) {
      useReplicaThreads(ctx);
      const float *x = ins[arity - 1].f32();
      const float *dy = gradient ? ins[0].f32() : nullptr;
      float *y = outs[0].f32();
      uint64_t key = dropout::stepKey(seed, ctx.seed, ctx.step);
      int64_t imageSize = pixels * channels;
#pragma omp parallel for schedule(static) if (batch * imageSize >=             \
                                              kParallelElements)
      for (int64_t n = 0; n < batch; ++n) {
        float f = static_cast<float>(it::contrastFactor(
            key, ctx.globalRowOffset + n, range[0], range[1]));
        const float *xi = x + n * imageSize;
        float *yi = y + n * imageSize;
        double *mean = threadScratch<double, 0>(channels);
        double *gMean = threadScratch<double, 1>(channels);
        std::fill(mean, mean + channels, 0.0);
        std::fill(gMean, gMean + channels, 0.0);
        for (int64_t p = 0; p < pixels; ++p)
          for (int64_t c = 0; c < channels; ++c)
            mean[c] += xi[p * channels + c];
        for (int64_t c = 0; c < channels; ++c)
          mean[c] /= static_cast<double>(pixels);
        for (int64_t p = 0; p < pixels; ++p)
          for (int64_t c = 0; c < channels; ++c) {
            int64_t k = p * channels + c;
            float m = static_cast<float>(mean[c]);
            float u = (xi[k] - m) * f + m;
            if (!gradient) {
              yi[k] = std::min(std::max(u, low), high);
              continue;
            }
            yi[k] = u >= low && u <= high ? dy[n * imageSize + k] : 0.0f;
            gMean[c] += yi[k];
          }
        if (!gradient)
          continue;
        for (int64_t p = 0; p < pixels; ++p)
          for (int64_t c = 0; c < channels; ++c) {
            int64_t k = p * channels + c;
            yi[k] = f * yi[k] +
                    (1 - f) * static_cast<float>(gMean[c] /
                                                 static_cast<double>(pixels));
          }
      }
      return Status::ok();
    };
    return Status::ok();
  };
}

} // namespace

void registerVectorImageKernels(KernelRegistry &registry) {
  registry.addFactory("random_image_transform", Backend::cpu,
                      imageTransformFactory("random_image_transform", false));
  registry.addFactory(
      "random_image_transform_grad", Backend::cpu,
      imageTransformFactory("random_image_transform_grad", true));
  registry.addFactory("random_contrast", Backend::cpu,
                      contrastFactory("random_contrast", false));
  registry.addFactory("random_contrast_grad", Backend::cpu,
                      contrastFactory("random_contrast_grad", true));
}

} // namespace graph::runtime::cpu
