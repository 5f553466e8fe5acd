//===- BilinearResize.cpp - tf.image.resize's bilinear, exactly -----------===//
//
// Follows tensorflow/core/kernels/image/resize_bilinear_op.cc:
// CalculateResizeScale, HalfPixelScaler / LegacyScaler,
// compute_interpolation_weights and compute_lerp, in the same float
// operations, so the results agree to float rounding.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/BilinearResize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace graph::runtime::data {
namespace {

struct Taps {
  int64_t lower = 0;
  int64_t upper = 0;
  float lerp = 0;
};

std::vector<Taps> taps(int64_t inSize, int64_t outSize,
                       ResizeConvention convention) {
  const float scale = static_cast<float>(inSize) / static_cast<float>(outSize);
  std::vector<Taps> out(static_cast<size_t>(outSize));
  for (int64_t i = 0; i < outSize; ++i) {
    const float in = convention == ResizeConvention::halfPixel
                         ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                         : static_cast<float>(i) * scale;
    const float inFloor = std::floor(in);
    out[i].lower = std::max(static_cast<int64_t>(inFloor), int64_t(0));
    out[i].upper = std::min(static_cast<int64_t>(std::ceil(in)), inSize - 1);
    out[i].lerp = in - inFloor;
  }
  return out;
}

} // namespace

void resizeBilinear(const uint8_t *src, int64_t inHeight, int64_t inWidth,
                    int64_t channels, float *dst, int64_t outHeight,
                    int64_t outWidth, ResizeConvention convention) {
  if (inHeight == outHeight && inWidth == outWidth) {
    for (int64_t i = 0, n = inHeight * inWidth * channels; i < n; ++i)
      dst[i] = static_cast<float>(src[i]);
    return;
  }
  const std::vector<Taps> ys = taps(inHeight, outHeight, convention);
  std::vector<Taps> xs = taps(inWidth, outWidth, convention);
  // Column taps as byte offsets into a row, computed once.
  for (Taps &x : xs) {
    x.lower *= channels;
    x.upper *= channels;
  }
  const int64_t inRow = inWidth * channels;
  for (int64_t y = 0; y < outHeight; ++y) {
    const uint8_t *top = src + ys[y].lower * inRow;
    const uint8_t *bottom = src + ys[y].upper * inRow;
    const float yLerp = ys[y].lerp;
    float *out = dst + y * outWidth * channels;
    for (int64_t x = 0; x < outWidth; ++x) {
      const Taps &t = xs[x];
      for (int64_t c = 0; c < channels; ++c) {
        const float topLeft = top[t.lower + c];
        const float topRight = top[t.upper + c];
        const float bottomLeft = bottom[t.lower + c];
        const float bottomRight = bottom[t.upper + c];
        const float topValue = topLeft + (topRight - topLeft) * t.lerp;
        const float bottomValue =
            bottomLeft + (bottomRight - bottomLeft) * t.lerp;
        out[x * channels + c] = topValue + (bottomValue - topValue) * yLerp;
      }
    }
  }
}

} // namespace graph::runtime::data
