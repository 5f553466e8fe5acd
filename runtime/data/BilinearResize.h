//===- BilinearResize.h - tf.image.resize's bilinear, exactly ---*- C++ -*-===//
//
// Resizes 8-bit pixels to floats as TensorFlow's ResizeBilinear kernel does,
// step for step in float arithmetic, so that a model trained on our pipeline
// sees what a Keras user's tf.data pipeline would have given it:
//
//   halfPixel  TF 2's tf.image.resize(method="bilinear", antialias=False):
//              source x = (x + 0.5) * in / out - 0.5 (half-pixel centres)
//   legacy     TF 1's tf.compat.v1.image.resize_bilinear(align_corners=False):
//              source x = x * in / out
//
// The source coordinate's floor and ceiling (clamped to the image) are the
// two taps and its fraction the weight; rows then columns as TF computes
// them. Neither filters before downscaling (antialias=False), so a large
// reduction samples rather than averages: that is TF's default, and the
// reason DCT scaling (JpegDecoder.h) is a fair first step.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_BILINEARRESIZE_H
#define RUNTIME_DATA_BILINEARRESIZE_H

#include <cstdint>

namespace graph::runtime::data {

enum class ResizeConvention {
  /// TF 2's tf.image.resize: half-pixel centres.
  halfPixel,
  /// TF 1's resize_bilinear(align_corners=False, half_pixel_centers=False).
  legacy,
};

/// Resizes `src` (inHeight x inWidth x channels bytes, row-major) into `dst`
/// (outHeight x outWidth x channels floats, values in [0, 255]). Equal sizes
/// copy the pixels exactly, under both conventions.
void resizeBilinear(const uint8_t *src, int64_t inHeight, int64_t inWidth,
                    int64_t channels, float *dst, int64_t outHeight,
                    int64_t outWidth, ResizeConvention convention);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_BILINEARRESIZE_H
