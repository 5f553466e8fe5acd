//===- ImageTransform.cpp - reading a random image transform's config -----===//

#include "runtime/core/ImageTransform.h"

#include "runtime/core/Kernel.h"

namespace graph::runtime::image_transform {

namespace {

/// Reads a [lower, upper] range; `name` must hold two floats.
bool readRange(const KernelConfig &config, const std::string &name,
               double &lower, double &upper) {
  std::vector<double> range = config.getFloats(name);
  if (range.size() != 2)
    return false;
  lower = range[0];
  upper = range[1];
  return true;
}

} // namespace

std::string specFromConfig(const KernelConfig &config,
                           const std::vector<int64_t> &inShape,
                           const std::vector<int64_t> &outShape, Spec &out) {
  if (inShape.size() != 4 || outShape.size() != 4)
    return "expects NHWC input and output";
  if (inShape[0] != outShape[0] || inShape[3] != outShape[3])
    return "input and output differ in batch or channels";
  Spec s;
  s.inHeight = inShape[1];
  s.inWidth = inShape[2];
  s.outHeight = outShape[1];
  s.outWidth = outShape[2];
  if (s.outHeight <= 0 || s.outWidth <= 0)
    return "empty output image";
  s.seed = config.getInt("seed", 0);
  s.fillValue = config.getFloat("fill_value", 0.0);

  std::string fill = config.getString("fill_mode", "reflect");
  if (fill == "reflect")
    s.fill = FillMode::reflect;
  else if (fill == "wrap")
    s.fill = FillMode::wrap;
  else if (fill == "constant")
    s.fill = FillMode::constant;
  else if (fill == "nearest")
    s.fill = FillMode::nearest;
  else
    return "unknown fill_mode '" + fill + "'";
  std::string interpolation = config.getString("interpolation", "bilinear");
  if (interpolation == "bilinear")
    s.interpolation = Interpolation::bilinear;
  else if (interpolation == "nearest")
    s.interpolation = Interpolation::nearest;
  else
    return "unknown interpolation '" + interpolation + "'";

  std::string kind = config.getString("kind");
  bool sameShape = s.inHeight == s.outHeight && s.inWidth == s.outWidth;
  if (kind == "flip") {
    s.kind = Kind::flip;
    std::string mode = config.getString("mode", "horizontal_and_vertical");
    s.flipHorizontal =
        mode == "horizontal" || mode == "horizontal_and_vertical";
    s.flipVertical = mode == "vertical" || mode == "horizontal_and_vertical";
    if (!s.flipHorizontal && !s.flipVertical)
      return "unknown flip mode '" + mode + "'";
  } else if (kind == "rotation") {
    s.kind = Kind::rotation;
    if (!readRange(config, "factor", s.lower, s.upper))
      return "rotation needs factor = [lower, upper]";
  } else if (kind == "zoom" || kind == "translation") {
    s.kind = kind == "zoom" ? Kind::zoom : Kind::translation;
    if (!readRange(config, "height_factor", s.lower, s.upper))
      return kind + " needs height_factor = [lower, upper]";
    if (!readRange(config, "width_factor", s.widthLower, s.widthUpper)) {
      if (kind == "translation")
        return "translation needs width_factor = [lower, upper]";
      s.sameZoom = true;
    }
  } else if (kind == "crop" || kind == "center_crop") {
    s.kind = kind == "crop" ? Kind::crop : Kind::center_crop;
    // Crops resample within the window, edge pixels repeated.
    s.fill = FillMode::nearest;
    s.interpolation = Interpolation::bilinear;
    sameShape = true;
  } else {
    return "unknown kind '" + kind + "'";
  }
  if (!sameShape)
    return "only crops change the image size";
  out = s;
  return "";
}

} // namespace graph::runtime::image_transform
