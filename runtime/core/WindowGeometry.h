//===- WindowGeometry.h - convolution and pooling windows -------*- C++ -*-===//
//
// The geometry of a window op (conv2d, pooling) over an NHWC input, from the
// op's `padding`, `strides` and `dilations`: one definition of Keras'
// (TensorFlow's) rule for every backend. `valid` takes only whole windows;
// `same` gives ceil(in / stride) outputs and pads the total needed with
// total / 2 before and the rest after.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_WINDOWGEOMETRY_H
#define RUNTIME_CORE_WINDOWGEOMETRY_H

#include "runtime/base/Status.h"
#include "runtime/core/Kernel.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace graph::runtime {

/// One spatial axis. `padAfter` is what the last window needs past the
/// input (never negative; what an input left unread by `valid` leaves is
/// not padding).
struct WindowAxis {
  int64_t in = 0, window = 1, stride = 1, dilation = 1;
  int64_t out = 0, padBefore = 0, padAfter = 0;
};

struct WindowGeometry {
  int64_t n = 0, c = 0;
  WindowAxis h, w;

  bool symmetric() const {
    return h.padBefore == h.padAfter && w.padBefore == w.padAfter;
  }
};

/// Resolves the window (kh, kw) of kernel `kernel` on NHWC `input` from
/// `config`'s padding, strides and (when `dilated`) dilations; an error
/// naming the kernel when the configuration is invalid or the window does
/// not fit.
Status resolveWindow(const char *kernel, const KernelConfig &config,
                     const std::vector<int64_t> &input, int64_t kh, int64_t kw,
                     bool dilated, WindowGeometry &g);

/// How a convolution's kernel is laid out in memory, the config's
/// `filter_layout` ("hwio" unless set):
///   - hwio: Keras' [kh, kw, C / groups, F], filter f in group
///     f / (F / groups); with groups = C > 1 also Keras' depthwise
///     [kh, kw, C, m], the same memory as [kh, kw, 1, C * m];
///   - ohwi: [F, kh, kw, C / groups] (cuDNN's KRSC, oneDNN's ohwi), which
///     graphc gives a kernel variable that only convolutions read
///     (compiler/AssignFilterLayoutPass.cpp), so no backend transposes it
///     per step. A depthwise kernel is then [C * m, kh, kw, 1].
enum class FilterLayout { hwio, ohwi };

/// A convolution kernel's layout, window and channels: `groups` (the
/// config's, 1 unless set) groups of `channelsPerGroup` input channels and
/// `filters` / groups filters each.
struct ConvChannels {
  int64_t groups = 1, channelsPerGroup = 0, filters = 0;
  FilterLayout layout = FilterLayout::hwio;
  int64_t kh = 1, kw = 1;

  int64_t filtersPerGroup() const { return filters / groups; }
  /// The kernel element of tap (i, j), channel c of its group and filter f.
  int64_t offset(int64_t i, int64_t j, int64_t c, int64_t f) const {
    return layout == FilterLayout::hwio
               ? ((i * kw + j) * channelsPerGroup + c) * filters + f
               : ((f * kh + i) * kw + j) * channelsPerGroup + c;
  }
};

/// Resolves `kernel`'s layout, window and channels against `inputChannels`
/// and the config's `filter_layout` and `groups`; an error naming the
/// kernel when they do not match.
Status resolveConvChannels(const char *kernel, const KernelConfig &config,
                           int64_t inputChannels,
                           const std::vector<int64_t> &kernelShape,
                           ConvChannels &channels);

/// A convolution's channels (resolveConvChannels) and window (resolveWindow,
/// dilated) over NHWC `input` with a kernel of shape `kernelShape`: the
/// channels first, so a bad filter_layout or kernel is named as such rather
/// than as a window that does not fit.
Status resolveConv(const char *kernel, const KernelConfig &config,
                   const std::vector<int64_t> &input,
                   const std::vector<int64_t> &kernelShape, WindowGeometry &g,
                   ConvChannels &channels);

/// fused_conv2d_pool's pool window as a max_pool2d's configuration: its
/// pool_size, pool_strides and pool_padding as pool_size, strides and
/// padding (the convolution's own keep those names in the fused config).
KernelConfig fusedPoolConfig(const KernelConfig &fused);

/// Output position `o`'s pooling window along `axis` (no dilation): its
/// first input position `origin` (negative where it starts in padding) and
/// its in-range input positions [begin, end).
struct WindowSpan {
  int64_t origin = 0, begin = 0, end = 0;
};
inline WindowSpan windowSpan(const WindowAxis &axis, int64_t o) {
  int64_t origin = o * axis.stride - axis.padBefore;
  return {origin, std::max<int64_t>(origin, 0),
          std::min(origin + axis.window, axis.in)};
}

/// What max_pool2d_argmax_grad's argmax holds for window (oh, ow): the
/// position (kh * window_w + kw) of the window's first maximum in
/// row-major order among its in-range positions. The position of input
/// (ih, iw) in the window whose spans are `h` and `w`:
inline int32_t windowPosition(const WindowGeometry &g, const WindowSpan &h,
                              const WindowSpan &w, int64_t ih, int64_t iw) {
  return static_cast<int32_t>((ih - h.origin) * g.w.window + iw - w.origin);
}
/// ... and the input position an argmax `at` of window (oh, ow) names:
inline int64_t argmaxRow(const WindowGeometry &g, int64_t oh, int32_t at) {
  return oh * g.h.stride - g.h.padBefore + at / g.w.window;
}
inline int64_t argmaxColumn(const WindowGeometry &g, int64_t ow, int32_t at) {
  return ow * g.w.stride - g.w.padBefore + at % g.w.window;
}

} // namespace graph::runtime

#endif // RUNTIME_CORE_WINDOWGEOMETRY_H
