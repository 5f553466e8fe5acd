//===- ImageTransform.h - Keras' random image layers, for every backend ---===//
//
// RandomFlip, RandomRotation, RandomZoom, RandomTranslation and RandomCrop
// are one operation: each output pixel reads the input at an affine image of
// its coordinates, with TensorFlow's fill modes and interpolations
// (ImageProjectiveTransformV3, which Keras' layers call). What differs is
// how the per-image matrix is drawn. The draws are counter-based hashes of
// (op seed, run seed, step, global image index), as dropout's mask, so a
// gradient regenerates the forward's transform instead of storing it and N
// replicas transform each image as one replica would. RandomContrast's
// per-image factor is drawn the same way.
//
// This header is the one definition the reference, cpu and CUDA backends
// share (host and device code); the kernels are loops around taps().
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_IMAGETRANSFORM_H
#define RUNTIME_CORE_IMAGETRANSFORM_H

#include "runtime/core/DropoutMask.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime {
class KernelConfig;
} // namespace graph::runtime

namespace graph::runtime::image_transform {

enum class Kind : int { flip, rotation, zoom, translation, crop, center_crop };
enum class FillMode : int { reflect, wrap, constant, nearest };
enum class Interpolation : int { bilinear, nearest };

/// A launch's attributes and shapes, by value so device code can take it.
struct Spec {
  Kind kind = Kind::flip;
  FillMode fill = FillMode::reflect;
  Interpolation interpolation = Interpolation::bilinear;
  double fillValue = 0.0;
  int64_t seed = 0;
  int64_t inHeight = 0, inWidth = 0, outHeight = 0, outWidth = 0;
  /// flip: which axes a flipped image mirrors.
  bool flipHorizontal = false, flipVertical = false;
  /// rotation: the angle's range in turns; zoom and translation: the
  /// height factor's range (a fraction of the height).
  double lower = 0.0, upper = 0.0;
  /// zoom and translation: the width factor's range.
  double widthLower = 0.0, widthUpper = 0.0;
  /// zoom without a width factor: the width zooms as the height.
  bool sameZoom = false;
};

/// Reads a launch's config (graph.random_image_transform's attributes) for
/// input and output shapes NHWC. Returns an error message, empty if none.
std::string specFromConfig(const KernelConfig &config,
                           const std::vector<int64_t> &inShape,
                           const std::vector<int64_t> &outShape, Spec &out);

/// Output pixel (x, y) reads the window's point (a0 x + a1 y + a2,
/// b0 x + b1 y + b2); the window is the input rectangle at (y0, x0) of
/// height x width (the whole image but for crops).
struct Projection {
  double a0 = 1, a1 = 0, a2 = 0, b0 = 0, b1 = 1, b2 = 0;
  int64_t y0 = 0, x0 = 0, height = 0, width = 0;
};

/// At most four weighted input pixels (indices y * inWidth + x in the
/// image) plus the weight of the fill value.
struct Taps {
  int64_t index[4];
  double weight[4];
  int count = 0;
  double fillWeight = 0.0;
};

/// A uniform double in [0, 1) for draw `k` of image `image` (-1: one draw
/// for the whole batch) under the launch's step key.
GRAPH_HOST_DEVICE inline double uniform(uint64_t stepKey, int64_t image,
                                        int k) {
  uint64_t h = dropout::splitmix64(
      stepKey ^ dropout::splitmix64(static_cast<uint64_t>(image) * 8u +
                                    static_cast<uint64_t>(k)));
  return static_cast<double>(h >> 11) * 0x1.0p-53;
}

/// RandomContrast's factor for one image: uniform in [lower, upper].
GRAPH_HOST_DEVICE inline double contrastFactor(uint64_t stepKey, int64_t image,
                                               double lower, double upper) {
  return lower + (upper - lower) * uniform(stepKey, image, 0);
}

/// The centred window of the output's aspect ratio and the half-pixel
/// scaling onto it (Keras' crop_to_aspect_ratio resize, tf.image.resize's
/// bilinear with half-pixel centres).
GRAPH_HOST_DEVICE inline Projection centerCrop(const Spec &s) {
  Projection p;
  int64_t h = s.inWidth * s.outHeight / s.outWidth;
  h = h < s.inHeight ? h : s.inHeight;
  p.height = h > 1 ? h : 1;
  int64_t w = s.inHeight * s.outWidth / s.outHeight;
  w = w < s.inWidth ? w : s.inWidth;
  p.width = w > 1 ? w : 1;
  p.y0 = (s.inHeight - p.height) / 2;
  p.x0 = (s.inWidth - p.width) / 2;
  double sx = static_cast<double>(p.width) / static_cast<double>(s.outWidth);
  double sy = static_cast<double>(p.height) / static_cast<double>(s.outHeight);
  p.a0 = sx;
  p.a2 = 0.5 * sx - 0.5;
  p.b1 = sy;
  p.b2 = 0.5 * sy - 0.5;
  return p;
}

/// Image `image`'s projection (Keras' matrices: RandomRotation's
/// _compute_affine_matrix, RandomZoom's _get_zoom_matrix,
/// RandomTranslation's _get_translation_matrix).
GRAPH_HOST_DEVICE inline Projection projection(const Spec &s, uint64_t stepKey,
                                               int64_t image) {
  Projection p;
  p.height = s.inHeight;
  p.width = s.inWidth;
  double w = static_cast<double>(s.inWidth),
         h = static_cast<double>(s.inHeight);
  switch (s.kind) {
  case Kind::flip:
    // Keras flips when uniform <= 0.5, both axes at once in
    // horizontal_and_vertical mode.
    if (uniform(stepKey, image, 0) <= 0.5) {
      if (s.flipHorizontal) {
        p.a0 = -1;
        p.a2 = w - 1;
      }
      if (s.flipVertical) {
        p.b1 = -1;
        p.b2 = h - 1;
      }
    }
    break;
  case Kind::rotation: {
    double angle =
        (s.lower + (s.upper - s.lower) * uniform(stepKey, image, 0)) *
        6.283185307179586;
    double c = cos(angle), sn = sin(angle);
    double cx = 0.5 * (w - 1), cy = 0.5 * (h - 1);
    p.a0 = c;
    p.a1 = -sn;
    p.a2 = cx - cx * p.a0 - cy * p.a1;
    p.b0 = sn;
    p.b1 = c;
    p.b2 = cy - cx * p.b0 - cy * p.b1;
    break;
  }
  case Kind::zoom: {
    double zh = 1 + s.lower + (s.upper - s.lower) * uniform(stepKey, image, 0);
    double zw = s.sameZoom ? zh
                           : 1 + s.widthLower +
                                 (s.widthUpper - s.widthLower) *
                                     uniform(stepKey, image, 1);
    p.a0 = zw;
    p.a2 = (w - 1) / 2 * (1 - zw);
    p.b1 = zh;
    p.b2 = (h - 1) / 2 * (1 - zh);
    break;
  }
  case Kind::translation:
    p.b2 = -(s.lower + (s.upper - s.lower) * uniform(stepKey, image, 0)) * h;
    p.a2 = -(s.widthLower +
             (s.widthUpper - s.widthLower) * uniform(stepKey, image, 1)) *
           w;
    break;
  case Kind::crop:
    // One window for the whole batch, as Keras draws it; inputs not larger
    // than the crop are centre-cropped and resized, as Keras does.
    if (s.inHeight > s.outHeight && s.inWidth > s.outWidth) {
      int64_t ySpan = s.inHeight - s.outHeight + 1;
      int64_t xSpan = s.inWidth - s.outWidth + 1;
      p.y0 = static_cast<int64_t>(uniform(stepKey, -1, 0) * ySpan);
      p.x0 = static_cast<int64_t>(uniform(stepKey, -1, 1) * xSpan);
      p.height = s.outHeight;
      p.width = s.outWidth;
    } else {
      p = centerCrop(s);
    }
    break;
  case Kind::center_crop:
    p = centerCrop(s);
    break;
  }
  return p;
}

/// TensorFlow's map of a coordinate outside [0, len - 1] into it
/// (ImageProjectiveTransformV3's fill modes; constant leaves it outside).
GRAPH_HOST_DEVICE inline double mapCoordinate(double c, int64_t len,
                                              FillMode fill) {
  double n = static_cast<double>(len);
  switch (fill) {
  case FillMode::constant:
    return c;
  case FillMode::nearest:
    break;
  case FillMode::reflect:
    if (c < 0) {
      if (len <= 1) {
        c = 0;
      } else {
        double twice = 2 * n;
        if (c < -twice)
          c = twice * static_cast<double>(static_cast<int64_t>(-c / twice)) + c;
        c = c < -n ? c + twice : -c - 1;
      }
    } else if (c > n - 1) {
      if (len <= 1) {
        c = 0;
      } else {
        double twice = 2 * n;
        c -= twice * static_cast<double>(static_cast<int64_t>(c / twice));
        if (c >= n)
          c = twice - c - 1;
      }
    }
    break;
  case FillMode::wrap:
    if (c < 0) {
      if (len <= 1)
        c = 0;
      else
        c += n * static_cast<double>(static_cast<int64_t>(-c / (n - 1)) + 1);
    } else if (c > n - 1) {
      if (len <= 1)
        c = 0;
      else
        c -= n * static_cast<double>(static_cast<int64_t>(c / (n - 1)));
    }
    break;
  }
  return c < 0 ? 0 : (c > n - 1 ? n - 1 : c);
}

/// The input pixels output pixel (oy, ox) reads, and their weights.
GRAPH_HOST_DEVICE inline Taps taps(const Spec &s, const Projection &p,
                                   int64_t oy, int64_t ox) {
  Taps t;
  double xo = static_cast<double>(ox), yo = static_cast<double>(oy);
  double x = mapCoordinate(p.a0 * xo + p.a1 * yo + p.a2, p.width, s.fill);
  double y = mapCoordinate(p.b0 * xo + p.b1 * yo + p.b2, p.height, s.fill);
  auto read = [&](double yy, double xx, double weight) {
    if (weight == 0.0)
      return;
    if (yy < 0 || xx < 0 || yy >= static_cast<double>(p.height) ||
        xx >= static_cast<double>(p.width)) {
      t.fillWeight += weight;
      return;
    }
    t.index[t.count] = (p.y0 + static_cast<int64_t>(yy)) * s.inWidth + p.x0 +
                       static_cast<int64_t>(xx);
    t.weight[t.count] = weight;
    ++t.count;
  };
  if (s.interpolation == Interpolation::nearest) {
    read(round(y), round(x), 1.0);
    return t;
  }
  double yf = floor(y), xf = floor(x);
  double wy = y - yf, wx = x - xf;
  read(yf, xf, (1 - wy) * (1 - wx));
  read(yf, xf + 1, (1 - wy) * wx);
  read(yf + 1, xf, wy * (1 - wx));
  read(yf + 1, xf + 1, wy * wx);
  return t;
}

} // namespace graph::runtime::image_transform

#endif // RUNTIME_CORE_IMAGETRANSFORM_H
