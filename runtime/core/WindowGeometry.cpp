//===- WindowGeometry.cpp - convolution and pooling windows ---------------===//

#include "runtime/core/WindowGeometry.h"

#include <algorithm>
#include <string>

namespace graph::runtime {

namespace {
bool resolveAxis(WindowAxis &a, bool same) {
  if (a.stride < 1 || a.dilation < 1 || a.window < 1 || a.in < 1)
    return false;
  int64_t effective = (a.window - 1) * a.dilation + 1;
  if (same) {
    a.out = (a.in + a.stride - 1) / a.stride;
    int64_t total =
        std::max<int64_t>((a.out - 1) * a.stride + effective - a.in, 0);
    a.padBefore = total / 2;
    a.padAfter = total - a.padBefore;
  } else {
    if (a.in < effective)
      return false;
    a.out = (a.in - effective) / a.stride + 1;
    a.padBefore = a.padAfter = 0;
  }
  return true;
}
} // namespace

Status resolveWindow(const char *kernel, const KernelConfig &config,
                     const std::vector<int64_t> &input, int64_t kh, int64_t kw,
                     bool dilated, WindowGeometry &g) {
  std::string name(kernel);
  if (input.size() != 4)
    return Status::error(name + ": needs an NHWC input, got " +
                         shapeText(input));
  std::string padding = config.getString("padding", "valid");
  if (padding != "valid" && padding != "same")
    return Status::error(name + ": unknown padding '" + padding + "'");
  auto [sh, sw] = config.getPair("strides", 1);
  auto [dh, dw] = dilated ? config.getPair("dilations", 1)
                          : std::pair<int64_t, int64_t>{1, 1};
  g.n = input[0];
  g.c = input[3];
  g.h = {input[1], kh, sh, dh};
  g.w = {input[2], kw, sw, dw};
  if (!resolveAxis(g.h, padding == "same") ||
      !resolveAxis(g.w, padding == "same"))
    return Status::error(name + ": window " + std::to_string(kh) + "x" +
                         std::to_string(kw) + " does not fit input " +
                         shapeText(input) + " (strides " + std::to_string(sh) +
                         "x" + std::to_string(sw) + ", dilations " +
                         std::to_string(dh) + "x" + std::to_string(dw) +
                         ", padding " + padding + ")");
  return Status::ok();
}

Status resolveConvChannels(const char *kernel, const KernelConfig &config,
                           int64_t inputChannels,
                           const std::vector<int64_t> &kernelShape,
                           ConvChannels &channels) {
  std::string name(kernel);
  std::string layout = config.getString("filter_layout", "hwio");
  if (layout != "hwio" && layout != "ohwi")
    return Status::error(name + ": unknown filter_layout '" + layout +
                         "' (hwio or ohwi)");
  bool ohwi = layout == "ohwi";
  if (kernelShape.size() != 4)
    return Status::error(name + ": needs an " + layout + " kernel, got " +
                         shapeText(kernelShape));
  int64_t groups = config.getInt("groups", 1);
  if (groups < 1)
    return Status::error(name + ": groups must be >= 1, got " +
                         std::to_string(groups));
  int64_t kernelInputs = ohwi ? kernelShape[3] : kernelShape[2];
  int64_t kernelFilters = ohwi ? kernelShape[0] : kernelShape[3];
  // Keras' depthwise [kh, kw, C, m] exists in hwio only; ohwi stores it as
  // the grouped form [C * m, kh, kw, 1].
  bool depthwiseForm = !ohwi && groups > 1 && groups == inputChannels &&
                       kernelInputs == inputChannels;
  if (!depthwiseForm && kernelInputs * groups != inputChannels)
    return Status::error(
        name + ": " + layout + " kernel " + shapeText(kernelShape) + " takes " +
        std::to_string(kernelInputs) + " input channels" +
        (groups > 1 ? " per group (" + std::to_string(groups) + " groups)"
                    : std::string()) +
        ", the input has " + std::to_string(inputChannels));
  channels.groups = groups;
  channels.channelsPerGroup = inputChannels / groups;
  channels.filters =
      depthwiseForm ? inputChannels * kernelFilters : kernelFilters;
  channels.layout = ohwi ? FilterLayout::ohwi : FilterLayout::hwio;
  channels.kh = ohwi ? kernelShape[1] : kernelShape[0];
  channels.kw = ohwi ? kernelShape[2] : kernelShape[1];
  if (channels.filters < 1 || channels.filters % groups != 0)
    return Status::error(name + ": kernel " + shapeText(kernelShape) + " has " +
                         std::to_string(channels.filters) +
                         " filters, not a positive multiple of " +
                         std::to_string(groups) + " groups");
  return Status::ok();
}

Status resolveConv(const char *kernel, const KernelConfig &config,
                   const std::vector<int64_t> &input,
                   const std::vector<int64_t> &kernelShape, WindowGeometry &g,
                   ConvChannels &channels) {
  if (input.size() == 4)
    if (Status s = resolveConvChannels(kernel, config, input[3], kernelShape,
                                       channels);
        !s)
      return s;
  return resolveWindow(kernel, config, input, channels.kh, channels.kw, true,
                       g);
}

KernelConfig fusedPoolConfig(const KernelConfig &fused) {
  KernelConfig pool;
  auto [ph, pw] = fused.getPair("pool_size", 2);
  auto [sh, sw] = fused.getPair("pool_strides", 2);
  pool.set("pool_size", std::vector<int64_t>{ph, pw});
  pool.set("strides", std::vector<int64_t>{sh, sw});
  pool.set("padding", fused.getString("pool_padding", "valid"));
  return pool;
}

} // namespace graph::runtime
