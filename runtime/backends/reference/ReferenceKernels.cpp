//===- ReferenceKernels.cpp - naive kernels for every graph op -----------===//
//
// Every kernel loads its inputs into double vectors, computes in double with
// plain loops, and stores its outputs in the outputs' element type (f32 or
// f64). Loading everything first makes in-place launches (the optimizer
// update, batch_norm_train's moving statistics) trivially safe.
//
// Each kernel's specification is its op's documentation in
// dialects/graph/GraphOps.td; Keras behaviour that the documentation leaves
// open is noted at the kernel.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/reference/ReferenceKernels.h"

#include "runtime/core/ConfusionMetrics.h"
#include "runtime/core/DropoutMask.h"
#include "runtime/core/EmaSchedule.h"
#include "runtime/core/ImageTransform.h"
#include "runtime/core/LearningRateSchedule.h"
#include "runtime/core/LossScale.h"
#include "runtime/core/PointwiseLoss.h"
#include "runtime/core/ReducedPrecision.h"
#include "runtime/core/WindowGeometry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <mutex>

namespace graph::runtime::reference {

namespace {

using Vec = std::vector<double>;
using Tensors = std::vector<TensorRef>;

#define REQUIRE(cond, message)                                                 \
  do {                                                                         \
    if (!(cond))                                                               \
      return Status::error(std::string(kName) + ": " + (message));             \
  } while (false)

double readAt(const TensorRef &t, int64_t i) {
  switch (t.dtype) {
  case plan::DType::f32:
    return static_cast<const float *>(t.data)[i];
  case plan::DType::f64:
    return static_cast<const double *>(t.data)[i];
  case plan::DType::i32:
    return static_cast<const int32_t *>(t.data)[i];
  case plan::DType::i64:
    return static_cast<double>(static_cast<const int64_t *>(t.data)[i]);
  default:
    return std::numeric_limits<double>::quiet_NaN();
  }
}

Vec load(const TensorRef &t) {
  Vec v(t.elements());
  for (int64_t i = 0; i < t.elements(); ++i)
    v[i] = readAt(t, i);
  return v;
}

void store(const TensorRef &t, const Vec &v) {
  for (int64_t i = 0; i < t.elements(); ++i) {
    switch (t.dtype) {
    case plan::DType::f32:
      static_cast<float *>(t.data)[i] = static_cast<float>(v[i]);
      break;
    case plan::DType::f64:
      static_cast<double *>(t.data)[i] = v[i];
      break;
    case plan::DType::i32:
      static_cast<int32_t *>(t.data)[i] = static_cast<int32_t>(v[i]);
      break;
    case plan::DType::i64:
      static_cast<int64_t *>(t.data)[i] = static_cast<int64_t>(v[i]);
      break;
    default:
      break;
    }
  }
}

#define CHECK_ARITY(minIns, maxIns, numOuts)                                   \
  do {                                                                         \
    Status s_ = checkOperands(kName, ins, outs, minIns, maxIns, numOuts,       \
                              OperandRule::anyNumeric());                      \
    if (!s_)                                                                   \
      return s_;                                                               \
  } while (false)

bool truthy(const KernelConfig &cfg, const std::string &name) {
  return cfg.getInt(name, 0) != 0; // unit attributes arrive as 1, i1 as +-1
}

//===----------------------------------------------------------------------===//
// Windows: conv and pooling geometry is runtime/core/WindowGeometry.h's
//===----------------------------------------------------------------------===//

#define RESOLVE_WINDOW(shape, kh, kw, dilated, g)                              \
  do {                                                                         \
    Status s_ = resolveWindow(kName, cfg, shape, kh, kw, dilated, g);          \
    if (!s_)                                                                   \
      return s_;                                                               \
  } while (false)

/// The offset of (n, y, x, c) in an NHWC tensor of the given extents.
int64_t nhwc(int64_t n, int64_t y, int64_t x, int64_t c, int64_t height,
             int64_t width, int64_t channels) {
  return ((n * height + y) * width + x) * channels + c;
}

//===----------------------------------------------------------------------===//
// Epilogue activations
//===----------------------------------------------------------------------===//

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

Status applyActivation(const char *kName, const std::string &activation,
                       Vec &v) {
  if (activation.empty() || activation == "none" || activation == "linear")
    return Status::ok();
  for (double &x : v) {
    if (activation == "relu")
      x = x > 0 ? x : 0.0;
    else if (activation == "sigmoid")
      x = sigmoid(x);
    else if (activation == "tanh")
      x = std::tanh(x);
    else
      REQUIRE(false, "unknown activation '" + activation + "'");
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Convolution
//===----------------------------------------------------------------------===//

#define RESOLVE_CONV(input, kernelShape, g, cc)                                \
  do {                                                                         \
    Status s_ = resolveConv(kName, cfg, input, kernelShape, g, cc);            \
    if (!s_)                                                                   \
      return s_;                                                               \
  } while (false)

/// y[n, oh, ow, f] = sum_{kh, kw, c} x[n, oh*sh - pt + kh*dh,
/// ow*sw - pl + kw*dw, group(f) * cg + c] * k[kh, kw, c, f], out-of-range
/// taps read zero; cg = C / groups input channels per group, group(f) =
/// f / (F / groups); k[kh, kw, c, f] is at ConvChannels::offset in the
/// config's filter_layout (hwio or ohwi).
Status convForward(const char *kName, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, bool fused) {
  const TensorRef &x = ins[0], &k = ins[1];
  WindowGeometry g;
  ConvChannels cc;
  RESOLVE_CONV(x.shape, k.shape, g, cc);
  int64_t f = cc.filters, cg = cc.channelsPerGroup, fg = cc.filtersPerGroup();
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, f};
  REQUIRE(outs[0].shape == expected, "output is " + shapeText(outs[0].shape) +
                                         ", expected " + shapeText(expected));
  Vec xv = load(x), kv = load(k), y(outs[0].elements(), 0.0);
  Vec bias;
  if (fused && ins.size() == 3) {
    REQUIRE(ins[2].elements() == f, "bias has the wrong size");
    bias = load(ins[2]);
  }
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t o = 0; o < f; ++o) {
          double sum = bias.empty() ? 0.0 : bias[o];
          for (int64_t kh = 0; kh < g.h.window; ++kh) {
            int64_t ih = oh * g.h.stride - g.h.padBefore + kh * g.h.dilation;
            if (ih < 0 || ih >= g.h.in)
              continue;
            for (int64_t kw = 0; kw < g.w.window; ++kw) {
              int64_t iw = ow * g.w.stride - g.w.padBefore + kw * g.w.dilation;
              if (iw < 0 || iw >= g.w.in)
                continue;
              for (int64_t c = 0; c < cg; ++c)
                sum +=
                    xv[nhwc(n, ih, iw, o / fg * cg + c, g.h.in, g.w.in, g.c)] *
                    kv[cc.offset(kh, kw, c, o)];
            }
          }
          y[nhwc(n, oh, ow, o, g.h.out, g.w.out, f)] = sum;
        }
  if (fused) {
    Status s = applyActivation(kName, cfg.getString("activation", "none"), y);
    if (!s)
      return s;
  }
  store(outs[0], y);
  return Status::ok();
}

Status conv2d(const KernelContext &, const KernelConfig &cfg,
              const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "conv2d";
  CHECK_ARITY(2, 2, 1);
  return convForward(kName, cfg, ins, outs, false);
}

Status fusedConv2d(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "fused_conv2d";
  CHECK_ARITY(2, 3, 1);
  return convForward(kName, cfg, ins, outs, true);
}

/// ins: dy, kernel; out: dx (its shape is the forward input's).
Status conv2dGradInput(const KernelContext &, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "conv2d_grad_input";
  CHECK_ARITY(2, 2, 1);
  const TensorRef &dy = ins[0], &k = ins[1];
  WindowGeometry g;
  ConvChannels cc;
  RESOLVE_CONV(outs[0].shape, k.shape, g, cc);
  int64_t f = cc.filters, cg = cc.channelsPerGroup, fg = cc.filtersPerGroup();
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, f};
  REQUIRE(dy.shape == expected,
          "output_grad " + shapeText(dy.shape) + " does not match");
  Vec dyv = load(dy), kv = load(k), dx(outs[0].elements(), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t o = 0; o < f; ++o) {
          double d = dyv[nhwc(n, oh, ow, o, g.h.out, g.w.out, f)];
          for (int64_t kh = 0; kh < g.h.window; ++kh) {
            int64_t ih = oh * g.h.stride - g.h.padBefore + kh * g.h.dilation;
            if (ih < 0 || ih >= g.h.in)
              continue;
            for (int64_t kw = 0; kw < g.w.window; ++kw) {
              int64_t iw = ow * g.w.stride - g.w.padBefore + kw * g.w.dilation;
              if (iw < 0 || iw >= g.w.in)
                continue;
              for (int64_t c = 0; c < cg; ++c)
                dx[nhwc(n, ih, iw, o / fg * cg + c, g.h.in, g.w.in, g.c)] +=
                    d * kv[cc.offset(kh, kw, c, o)];
            }
          }
        }
  store(outs[0], dx);
  return Status::ok();
}

/// ins: x, dy; out: dk in the config's filter_layout (its shape gives the
/// window).
Status conv2dGradKernel(const KernelContext &, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "conv2d_grad_kernel";
  CHECK_ARITY(2, 2, 1);
  const TensorRef &x = ins[0], &dy = ins[1];
  const std::vector<int64_t> &ks = outs[0].shape;
  WindowGeometry g;
  ConvChannels cc;
  RESOLVE_CONV(x.shape, ks, g, cc);
  int64_t f = cc.filters, cg = cc.channelsPerGroup, fg = cc.filtersPerGroup();
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, f};
  REQUIRE(dy.shape == expected,
          "output_grad " + shapeText(dy.shape) + " does not match");
  Vec xv = load(x), dyv = load(dy), dk(outs[0].elements(), 0.0);
  for (int64_t kh = 0; kh < g.h.window; ++kh)
    for (int64_t kw = 0; kw < g.w.window; ++kw)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t o = 0; o < f; ++o) {
          double sum = 0.0;
          for (int64_t n = 0; n < g.n; ++n)
            for (int64_t oh = 0; oh < g.h.out; ++oh) {
              int64_t ih = oh * g.h.stride - g.h.padBefore + kh * g.h.dilation;
              if (ih < 0 || ih >= g.h.in)
                continue;
              for (int64_t ow = 0; ow < g.w.out; ++ow) {
                int64_t iw =
                    ow * g.w.stride - g.w.padBefore + kw * g.w.dilation;
                if (iw < 0 || iw >= g.w.in)
                  continue;
                sum +=
                    xv[nhwc(n, ih, iw, o / fg * cg + c, g.h.in, g.w.in, g.c)] *
                    dyv[nhwc(n, oh, ow, o, g.h.out, g.w.out, f)];
              }
            }
          dk[cc.offset(kh, kw, c, o)] = sum;
        }
  store(outs[0], dk);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

/// Visits the in-range input positions of pooling window (oh, ow) in
/// row-major window order.
template <typename F>
void forWindow(const WindowGeometry &g, int64_t oh, int64_t ow, F visit) {
  for (int64_t kh = 0; kh < g.h.window; ++kh) {
    int64_t ih = oh * g.h.stride - g.h.padBefore + kh;
    if (ih < 0 || ih >= g.h.in)
      continue;
    for (int64_t kw = 0; kw < g.w.window; ++kw) {
      int64_t iw = ow * g.w.stride - g.w.padBefore + kw;
      if (iw < 0 || iw >= g.w.in)
        continue;
      visit(ih, iw);
    }
  }
}

Status poolGeometry(const char *kName, const KernelConfig &cfg,
                    const std::vector<int64_t> &input,
                    const std::vector<int64_t> &output, WindowGeometry &g) {
  auto [ph, pw] = cfg.getPair("pool_size", 2);
  Status s = resolveWindow(kName, cfg, input, ph, pw, false, g);
  if (!s)
    return s;
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, g.c};
  REQUIRE(output == expected, "pooled tensor is " + shapeText(output) +
                                  ", expected " + shapeText(expected));
  return Status::ok();
}

#define POOL_GEOMETRY(in, out, g)                                              \
  do {                                                                         \
    Status s_ = poolGeometry(kName, cfg, in, out, g);                          \
    if (!s_)                                                                   \
      return s_;                                                               \
  } while (false)

/// Padded positions never win (as if -infinity).
Status maxPool2d(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "max_pool2d";
  CHECK_ARITY(1, 1, 1);
  WindowGeometry g;
  POOL_GEOMETRY(ins[0].shape, outs[0].shape, g);
  Vec x = load(ins[0]), y(outs[0].elements());
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          double best = -std::numeric_limits<double>::infinity();
          forWindow(g, oh, ow, [&](int64_t ih, int64_t iw) {
            best = std::max(best, x[nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c)]);
          });
          y[nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c)] = best;
        }
  store(outs[0], y);
  return Status::ok();
}

/// A pool gradient's optional second output, input_grad_sum: `dx` (its
/// first output, as stored: rounded to float) summed over every axis but
/// the last, as bias_add_grad would sum the stored dx.
Status storeInputGradSum(const char *kName, const Vec &dx, int64_t channels,
                         const Tensors &outs) {
  if (outs.size() < 2)
    return Status::ok();
  REQUIRE(outs[1].elements() == channels, "input_grad_sum " +
                                              shapeText(outs[1].shape) +
                                              " does not match the channels");
  Vec sum(channels, 0.0);
  for (size_t i = 0; i < dx.size(); ++i)
    sum[i % channels] += static_cast<float>(dx[i]);
  store(outs[1], sum);
  return Status::ok();
}

/// ins: x, y, dy. Each dy goes to the first maximum of x in its window
/// (row-major window order); y is not needed for that and only checked.
/// With config relu_grad, dx is then zeroed where x <= 0. A second output
/// (graph-fuse's input_grad_sum) gets dx summed per channel, as
/// bias_add_grad would sum the stored dx.
Status maxPool2dGrad(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "max_pool2d_grad";
  REQUIRE(outs.size() == 1 || outs.size() == 2,
          "writes input_grad and optionally input_grad_sum, got " +
              std::to_string(outs.size()) + " outputs");
  CHECK_ARITY(3, 3, outs.size());
  WindowGeometry g;
  POOL_GEOMETRY(ins[0].shape, ins[2].shape, g);
  REQUIRE(outs[0].shape == ins[0].shape, "input_grad must have x's shape");
  Vec x = load(ins[0]), dy = load(ins[2]), dx(outs[0].elements(), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          double best = -std::numeric_limits<double>::infinity();
          int64_t at = -1;
          forWindow(g, oh, ow, [&](int64_t ih, int64_t iw) {
            int64_t i = nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c);
            if (at < 0 || x[i] > best) {
              best = x[i];
              at = i;
            }
          });
          if (at >= 0)
            dx[at] += dy[nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c)];
        }
  // Fused with the gradient of the relu that produced x (graph-fuse).
  if (cfg.getInt("relu_grad", 0))
    for (size_t i = 0; i < dx.size(); ++i)
      dx[i] = x[i] > 0 ? dx[i] : 0.0;
  store(outs[0], dx);
  return storeInputGradSum(kName, dx, g.c, outs);
}

/// ins: x, kernel [, bias]; outs: y, argmax. The fused convolution into a
/// temporary, then max_pool2d's loop recording each window's first maximum
/// (WindowGeometry.h's argmax). `rounding`, the plan's type of y: the
/// convolution is rounded to it (through float, as a widened fused_conv2d
/// stores it) before it is pooled.
Status fusedConv2dPoolRounded(const KernelConfig &cfg, const Tensors &ins,
                              const Tensors &outs, plan::DType rounding) {
  static constexpr const char *kName = "fused_conv2d_pool";
  CHECK_ARITY(2, 3, 2);
  const TensorRef &k = ins[1];
  REQUIRE(outs[1].dtype == plan::DType::i32, "argmax must be i32");
  WindowGeometry cg;
  ConvChannels cc;
  RESOLVE_CONV(ins[0].shape, k.shape, cg, cc);
  std::vector<float> convOut(cg.n * cg.h.out * cg.w.out * cc.filters);
  TensorRef conv{convOut.data(), {cg.n, cg.h.out, cg.w.out, cc.filters}};
  if (Status s = convForward(kName, cfg, ins, {conv}, true); !s)
    return s;
  if (isReducedFloat(rounding)) {
    std::vector<uint16_t> rounded(convOut.size());
    const auto count = static_cast<int64_t>(convOut.size());
    convertFloats(convOut.data(), plan::DType::f32, rounded.data(), rounding,
                  count);
    convertFloats(rounded.data(), rounding, convOut.data(), plan::DType::f32,
                  count);
  }
  KernelConfig poolCfg = fusedPoolConfig(cfg);
  WindowGeometry g;
  if (Status s = poolGeometry(kName, poolCfg, conv.shape, outs[0].shape, g); !s)
    return s;
  REQUIRE(outs[1].shape == outs[0].shape,
          "argmax must have the output's shape");
  Vec y(outs[0].elements());
  int32_t *argmax = outs[1].i32();
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          double best = 0.0;
          int32_t at = -1;
          const WindowSpan hs = windowSpan(g.h, oh), ws = windowSpan(g.w, ow);
          forWindow(g, oh, ow, [&](int64_t ih, int64_t iw) {
            double v = convOut[nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c)];
            if (at < 0 || v > best) {
              best = v;
              at = windowPosition(g, hs, ws, ih, iw);
            }
          });
          int64_t i = nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c);
          y[i] = best;
          argmax[i] = at;
        }
  store(outs[0], y);
  return Status::ok();
}

Status fusedConv2dPool(const KernelContext &, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs) {
  return fusedConv2dPoolRounded(cfg, ins, outs, plan::DType::f32);
}

/// fused_conv2d_pool's factory. Given bfloat16 or float16 operands it runs
/// on widened copies as every other kernel, but rounds the convolution to
/// the output's type before pooling (GraphOps.td), which a float32 kernel
/// on widened copies would not know to do.
Status makeFusedConv2dPool(const KernelContext &ctx, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  if (!hasReducedFloats(ins, outs)) {
    out = fusedConv2dPool;
    return Status::ok();
  }
  const plan::DType rounding = outs.empty() ? plan::DType::f32 : outs[0].dtype;
  KernelFactory rounded = [rounding](const KernelContext &,
                                     const KernelConfig &, const Tensors &,
                                     const Tensors &, KernelFn &fn) {
    fn = [rounding](const KernelContext &, const KernelConfig &cfg,
                    const Tensors &ins, const Tensors &outs) {
      return fusedConv2dPoolRounded(cfg, ins, outs, rounding);
    };
    return Status::ok();
  };
  return instantiateWidened(rounded, ctx, cfg, ins, outs, out);
}

/// ins: argmax, y, dy; outs: dx [, dx summed per channel]. Each dy goes to
/// its window's argmax; with relu_grad only where y > 0.
Status maxPool2dArgmaxGrad(const KernelContext &, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "max_pool2d_argmax_grad";
  REQUIRE(outs.size() == 1 || outs.size() == 2,
          "writes input_grad and optionally input_grad_sum, got " +
              std::to_string(outs.size()) + " outputs");
  CHECK_ARITY(3, 3, outs.size());
  WindowGeometry g;
  POOL_GEOMETRY(outs[0].shape, ins[2].shape, g);
  REQUIRE(ins[0].dtype == plan::DType::i32 && ins[0].shape == ins[2].shape &&
              ins[1].shape == ins[2].shape,
          "argmax (i32), output and output_grad must have one shape");
  const int32_t *argmax = ins[0].i32();
  Vec y = load(ins[1]), dy = load(ins[2]), dx(outs[0].elements(), 0.0);
  bool relu = truthy(cfg, "relu_grad");
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          int64_t i = nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c);
          int32_t at = argmax[i];
          REQUIRE(at >= 0 && at < g.h.window * g.w.window,
                  "argmax " + std::to_string(at) + " is outside the window");
          int64_t ih = argmaxRow(g, oh, at), iw = argmaxColumn(g, ow, at);
          REQUIRE(ih >= 0 && ih < g.h.in && iw >= 0 && iw < g.w.in,
                  "argmax " + std::to_string(at) + " is a padded position");
          if (!relu || y[i] > 0)
            dx[nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c)] += dy[i];
        }
  store(outs[0], dx);
  return storeInputGradSum(kName, dx, g.c, outs);
}

/// ins: x, argmax, y, dy; outs: dk, workspace [, bias gradient]. From the
/// definitions, not through the dense gradient: each dy (with relu_grad only
/// where y > 0) is the convolution's output gradient at its window's argmax,
/// (oh, ow), and adds dy * x[n, oh*sh - pt + kh*dh, ow*sw - pl + kw*dw, c]
/// to dk[kh, kw, c, f] for every tap. With writes_workspace the workspace gets
/// the dense gradient, each dy added at its argmax (max_pool2d_argmax_grad's
/// result); else it is left as it is.
Status fusedConv2dPoolGradKernel(const KernelContext &, const KernelConfig &cfg,
                                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "fused_conv2d_pool_grad_kernel";
  REQUIRE(outs.size() == 2 || outs.size() == 3,
          "writes kernel_grad, the workspace and optionally the bias "
          "gradient, got " +
              std::to_string(outs.size()) + " outputs");
  CHECK_ARITY(4, 4, outs.size());
  const TensorRef &x = ins[0];
  WindowGeometry cg;
  ConvChannels cc;
  RESOLVE_CONV(x.shape, outs[0].shape, cg, cc);
  const int64_t f = cc.filters, groupChannels = cc.channelsPerGroup,
                fg = cc.filtersPerGroup();
  std::vector<int64_t> convShape = {cg.n, cg.h.out, cg.w.out, f};
  REQUIRE(outs[1].shape == convShape, "workspace " + shapeText(outs[1].shape) +
                                          " is not the "
                                          "convolution's output " +
                                          shapeText(convShape));
  WindowGeometry g;
  if (Status s =
          poolGeometry(kName, fusedPoolConfig(cfg), convShape, ins[3].shape, g);
      !s)
    return s;
  REQUIRE(ins[1].dtype == plan::DType::i32 && ins[1].shape == ins[3].shape &&
              ins[2].shape == ins[3].shape,
          "argmax (i32), output and output_grad must have one shape");
  const int32_t *argmax = ins[1].i32();
  Vec xv = load(x), y = load(ins[2]), dy = load(ins[3]);
  Vec dk(outs[0].elements(), 0.0), bias(f, 0.0);
  bool relu = truthy(cfg, "relu_grad");
  const bool writesWorkspace = truthy(cfg, "writes_workspace");
  Vec dense(writesWorkspace ? outs[1].elements() : 0, 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t ph = 0; ph < g.h.out; ++ph)
      for (int64_t pw = 0; pw < g.w.out; ++pw)
        for (int64_t o = 0; o < f; ++o) {
          int64_t i = nhwc(n, ph, pw, o, g.h.out, g.w.out, f);
          int32_t at = argmax[i];
          REQUIRE(at >= 0 && at < g.h.window * g.w.window,
                  "argmax " + std::to_string(at) + " is outside the window");
          int64_t oh = argmaxRow(g, ph, at), ow = argmaxColumn(g, pw, at);
          REQUIRE(oh >= 0 && oh < g.h.in && ow >= 0 && ow < g.w.in,
                  "argmax " + std::to_string(at) + " is a padded position");
          if (relu && !(y[i] > 0))
            continue;
          bias[o] += dy[i];
          if (writesWorkspace)
            dense[nhwc(n, oh, ow, o, g.h.in, g.w.in, f)] += dy[i];
          for (int64_t kh = 0; kh < cg.h.window; ++kh) {
            int64_t ih = oh * cg.h.stride - cg.h.padBefore + kh * cg.h.dilation;
            if (ih < 0 || ih >= cg.h.in)
              continue;
            for (int64_t kw = 0; kw < cg.w.window; ++kw) {
              int64_t iw =
                  ow * cg.w.stride - cg.w.padBefore + kw * cg.w.dilation;
              if (iw < 0 || iw >= cg.w.in)
                continue;
              for (int64_t c = 0; c < groupChannels; ++c)
                dk[cc.offset(kh, kw, c, o)] +=
                    dy[i] * xv[nhwc(n, ih, iw, o / fg * groupChannels + c,
                                    cg.h.in, cg.w.in, cg.c)];
            }
          }
        }
  store(outs[0], dk);
  if (writesWorkspace)
    store(outs[1], dense);
  if (outs.size() == 3) {
    REQUIRE(outs[2].elements() == f, "bias gradient " +
                                         shapeText(outs[2].shape) +
                                         " does not match the filters");
    store(outs[2], bias);
  }
  return Status::ok();
}

/// The mean over the window's in-range positions (Keras excludes padding).
Status avgPool2d(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "avg_pool2d";
  CHECK_ARITY(1, 1, 1);
  WindowGeometry g;
  POOL_GEOMETRY(ins[0].shape, outs[0].shape, g);
  Vec x = load(ins[0]), y(outs[0].elements());
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          double sum = 0.0;
          int64_t count = 0;
          forWindow(g, oh, ow, [&](int64_t ih, int64_t iw) {
            sum += x[nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c)];
            ++count;
          });
          y[nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c)] =
              count ? sum / count : 0.0;
        }
  store(outs[0], y);
  return Status::ok();
}

/// ins: dy; out: dx, whose shape is the forward input's.
Status avgPool2dGrad(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "avg_pool2d_grad";
  CHECK_ARITY(1, 1, 1);
  WindowGeometry g;
  POOL_GEOMETRY(outs[0].shape, ins[0].shape, g);
  Vec dy = load(ins[0]), dx(outs[0].elements(), 0.0);
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oh = 0; oh < g.h.out; ++oh)
      for (int64_t ow = 0; ow < g.w.out; ++ow)
        for (int64_t c = 0; c < g.c; ++c) {
          int64_t count = 0;
          forWindow(g, oh, ow, [&](int64_t, int64_t) { ++count; });
          double share =
              count ? dy[nhwc(n, oh, ow, c, g.h.out, g.w.out, g.c)] / count
                    : 0.0;
          forWindow(g, oh, ow, [&](int64_t ih, int64_t iw) {
            dx[nhwc(n, ih, iw, c, g.h.in, g.w.in, g.c)] += share;
          });
        }
  store(outs[0], dx);
  return Status::ok();
}

Status globalAvgPool2d(const KernelContext &, const KernelConfig &,
                       const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "global_avg_pool2d";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &s = ins[0].shape;
  REQUIRE(s.size() == 4, "needs an NHWC input");
  REQUIRE(outs[0].shape == (std::vector<int64_t>{s[0], s[3]}),
          "output must be [N, C]");
  Vec x = load(ins[0]), y(s[0] * s[3], 0.0);
  int64_t hw = s[1] * s[2];
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t c = 0; c < s[3]; ++c)
        y[n * s[3] + c] += x[(n * hw + p) * s[3] + c];
  for (double &v : y)
    v /= static_cast<double>(hw);
  store(outs[0], y);
  return Status::ok();
}

Status globalAvgPool2dGrad(const KernelContext &, const KernelConfig &,
                           const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "global_avg_pool2d_grad";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &s = outs[0].shape;
  REQUIRE(s.size() == 4, "needs an NHWC input_grad");
  REQUIRE(ins[0].shape == (std::vector<int64_t>{s[0], s[3]}),
          "output_grad must be [N, C]");
  Vec dy = load(ins[0]), dx(outs[0].elements());
  int64_t hw = s[1] * s[2];
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t c = 0; c < s[3]; ++c)
        dx[(n * hw + p) * s[3] + c] = dy[n * s[3] + c] / hw;
  store(outs[0], dx);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Dense, bias
//===----------------------------------------------------------------------===//

Status denseForward(const char *kName, const KernelConfig &cfg,
                    const Tensors &ins, const Tensors &outs, bool fused) {
  const TensorRef &x = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 2 && !x.shape.empty() &&
              x.shape.back() == k.shape[0],
          "x " + shapeText(x.shape) + " and kernel " + shapeText(k.shape) +
              " do not chain");
  int64_t kk = k.shape[0], nn = k.shape[1], rows = x.elements() / kk;
  std::vector<int64_t> expected = x.shape;
  expected.back() = nn;
  REQUIRE(outs[0].shape == expected, "output is " + shapeText(outs[0].shape) +
                                         ", expected " + shapeText(expected));
  Vec xv = load(x), kv = load(k), y(rows * nn);
  Vec bias;
  if (fused && ins.size() == 3) {
    REQUIRE(ins[2].elements() == nn, "bias has the wrong size");
    bias = load(ins[2]);
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < nn; ++j) {
      double sum = bias.empty() ? 0.0 : bias[j];
      for (int64_t i = 0; i < kk; ++i)
        sum += xv[r * kk + i] * kv[i * nn + j];
      y[r * nn + j] = sum;
    }
  if (fused) {
    Status s = applyActivation(kName, cfg.getString("activation", "none"), y);
    if (!s)
      return s;
  }
  store(outs[0], y);
  return Status::ok();
}

Status dense(const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
             const Tensors &outs) {
  static constexpr const char *kName = "dense";
  CHECK_ARITY(2, 2, 1);
  return denseForward(kName, cfg, ins, outs, false);
}

Status fusedDense(const KernelContext &, const KernelConfig &cfg,
                  const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "fused_dense";
  CHECK_ARITY(2, 3, 1);
  return denseForward(kName, cfg, ins, outs, true);
}

/// dx[r, i] = sum_j dy[r, j] * k[i, j].
Status denseGradInput(const KernelContext &, const KernelConfig &,
                      const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "dense_grad_input";
  CHECK_ARITY(2, 2, 1);
  const TensorRef &dy = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 2 && !dy.shape.empty() &&
              dy.shape.back() == k.shape[1],
          "output_grad and kernel do not chain");
  int64_t kk = k.shape[0], nn = k.shape[1], rows = dy.elements() / nn;
  REQUIRE(outs[0].elements() == rows * kk, "input_grad has the wrong size");
  Vec dyv = load(dy), kv = load(k), dx(rows * kk);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < kk; ++i) {
      double sum = 0.0;
      for (int64_t j = 0; j < nn; ++j)
        sum += dyv[r * nn + j] * kv[i * nn + j];
      dx[r * kk + i] = sum;
    }
  store(outs[0], dx);
  return Status::ok();
}

/// dk[i, j] = sum_r x[r, i] * dy[r, j].
Status denseGradKernel(const KernelContext &, const KernelConfig &,
                       const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "dense_grad_kernel";
  CHECK_ARITY(2, 2, 1);
  const TensorRef &x = ins[0], &dy = ins[1];
  REQUIRE(!x.shape.empty() && !dy.shape.empty(), "needs ranked operands");
  int64_t kk = x.shape.back(), nn = dy.shape.back(), rows = x.elements() / kk;
  REQUIRE(dy.elements() == rows * nn, "x and output_grad rows differ");
  REQUIRE(outs[0].shape == (std::vector<int64_t>{kk, nn}),
          "kernel_grad must be [K, N]");
  Vec xv = load(x), dyv = load(dy), dk(kk * nn, 0.0);
  for (int64_t i = 0; i < kk; ++i)
    for (int64_t j = 0; j < nn; ++j) {
      double sum = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        sum += xv[r * kk + i] * dyv[r * nn + j];
      dk[i * nn + j] = sum;
    }
  store(outs[0], dk);
  return Status::ok();
}

Status biasAdd(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  static constexpr const char *kName = "bias_add";
  CHECK_ARITY(2, 2, 1);
  REQUIRE(!ins[0].shape.empty() && ins[1].elements() == ins[0].shape.back(),
          "bias must match the last axis");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  Vec x = load(ins[0]), b = load(ins[1]);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] += b[i % b.size()];
  store(outs[0], x);
  return Status::ok();
}

Status biasAddGrad(const KernelContext &, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "bias_add_grad";
  CHECK_ARITY(1, 1, 1);
  REQUIRE(!ins[0].shape.empty() && outs[0].elements() == ins[0].shape.back(),
          "bias_grad must match the last axis");
  Vec dy = load(ins[0]), db(outs[0].elements(), 0.0);
  for (size_t i = 0; i < dy.size(); ++i)
    db[i % db.size()] += dy[i];
  store(outs[0], db);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Activations and their gradients
//===----------------------------------------------------------------------===//

template <typename F>
Status unary(const char *kName, const Tensors &ins, const Tensors &outs, F f) {
  CHECK_ARITY(1, 1, 1);
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  Vec x = load(ins[0]);
  for (double &v : x)
    v = f(v);
  store(outs[0], x);
  return Status::ok();
}

/// f(dy, saved) elementwise.
template <typename F>
Status binary(const char *kName, const Tensors &ins, const Tensors &outs, F f) {
  CHECK_ARITY(2, 2, 1);
  REQUIRE(ins[1].elements() == ins[0].elements() &&
              outs[0].elements() == ins[0].elements(),
          "operands differ in size");
  Vec dy = load(ins[0]), s = load(ins[1]);
  for (size_t i = 0; i < dy.size(); ++i)
    dy[i] = f(dy[i], s[i]);
  store(outs[0], dy);
  return Status::ok();
}

#define UNARY_KERNEL(fn, name, expr)                                           \
  Status fn(const KernelContext &, const KernelConfig &cfg,                    \
            const Tensors &ins, const Tensors &outs) {                         \
    (void)cfg;                                                                 \
    return unary(name, ins, outs, [&](double x) { return (expr); });           \
  }
#define BINARY_KERNEL(fn, name, expr)                                          \
  Status fn(const KernelContext &, const KernelConfig &cfg,                    \
            const Tensors &ins, const Tensors &outs) {                         \
    (void)cfg;                                                                 \
    return binary(name, ins, outs,                                             \
                  [&](double dy, double s) { return (expr); });                \
  }

UNARY_KERNEL(relu, "relu", x > 0 ? x : 0.0)
UNARY_KERNEL(sigmoidKernel, "sigmoid", sigmoid(x))
UNARY_KERNEL(tanhKernel, "tanh", std::tanh(x))
UNARY_KERNEL(elu, "elu",
             x > 0 ? x : cfg.getFloat("alpha", 1.0) * (std::exp(x) - 1.0))
UNARY_KERNEL(leakyRelu, "leaky_relu",
             x > 0 ? x : cfg.getFloat("alpha", 0.2) * x)
UNARY_KERNEL(gelu, "gelu", geluForward(x, truthy(cfg, "approximate")))

// Gradients, from the forward output y (relu, sigmoid, tanh, elu) or input x
// (leaky_relu, gelu), as GraphOps.td specifies.
BINARY_KERNEL(reluGrad, "relu_grad", s > 0 ? dy : 0.0)
BINARY_KERNEL(sigmoidGrad, "sigmoid_grad", (dy * s * (1.0 - s)))
BINARY_KERNEL(tanhGrad, "tanh_grad", (dy * (1.0 - s * s)))
BINARY_KERNEL(eluGrad, "elu_grad",
              s > 0 ? dy : dy * (s + cfg.getFloat("alpha", 1.0)))
BINARY_KERNEL(leakyReluGrad, "leaky_relu_grad",
              s > 0 ? dy : cfg.getFloat("alpha", 0.2) * dy)
BINARY_KERNEL(geluGrad, "gelu_grad",
              (dy * geluDerivative(s, truthy(cfg, "approximate"))))

/// Keras' ReLU layer: min(x, max_value) above the threshold,
/// negative_slope * (x - threshold) below; no cap without max_value.
double clippedRelu(const KernelConfig &cfg, double x) {
  double threshold = cfg.getFloat("threshold", 0.0);
  if (x > threshold)
    return cfg.has("max_value") ? std::min(x, cfg.getFloat("max_value")) : x;
  return cfg.getFloat("negative_slope", 0.0) * (x - threshold);
}
double clippedReluDerivative(const KernelConfig &cfg, double x) {
  if (x > cfg.getFloat("threshold", 0.0))
    return !cfg.has("max_value") || x < cfg.getFloat("max_value") ? 1.0 : 0.0;
  return cfg.getFloat("negative_slope", 0.0);
}
double relu6(double x) { return std::min(std::max(x, 0.0), 6.0); }

UNARY_KERNEL(clippedReluKernel, "clipped_relu", clippedRelu(cfg, x))
UNARY_KERNEL(silu, "silu", x *sigmoid(x))
UNARY_KERNEL(hardSigmoid, "hard_sigmoid", relu6(x + 3.0) / 6.0)
UNARY_KERNEL(hardSilu, "hard_silu", x *relu6(x + 3.0) / 6.0)
UNARY_KERNEL(scaleShift, "scale_shift",
             x *cfg.getFloat("scale", 1.0) + cfg.getFloat("offset", 0.0))
BINARY_KERNEL(clippedReluGrad, "clipped_relu_grad",
              dy *clippedReluDerivative(cfg, s))
BINARY_KERNEL(siluGrad, "silu_grad",
              dy *sigmoid(s) * (1.0 + s * (1.0 - sigmoid(s))))
BINARY_KERNEL(hardSigmoidGrad, "hard_sigmoid_grad",
              s > -3.0 && s < 3.0 ? dy / 6.0 : 0.0)
BINARY_KERNEL(hardSiluGrad, "hard_silu_grad",
              dy *(relu6(s + 3.0) + (s > -3.0 && s < 3.0 ? s : 0.0)) / 6.0)

/// outer x axis x inner decomposition of `shape` around `axis` (negative
/// counts from the end); false when out of range.
bool splitAxis(const std::vector<int64_t> &shape, int64_t axis, int64_t &outer,
               int64_t &size, int64_t &inner, int64_t &norm) {
  int64_t rank = shape.size();
  norm = axis < 0 ? axis + rank : axis;
  if (norm < 0 || norm >= rank)
    return false;
  outer = inner = 1;
  for (int64_t d = 0; d < norm; ++d)
    outer *= shape[d];
  for (int64_t d = norm + 1; d < rank; ++d)
    inner *= shape[d];
  size = shape[norm];
  return true;
}

/// y = exp(x - max) / sum(exp(x - max)) along `axis`.
Status softmax(const KernelContext &, const KernelConfig &cfg,
               const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "softmax";
  CHECK_ARITY(1, 1, 1);
  int64_t outer, size, inner, axis;
  REQUIRE(
      splitAxis(ins[0].shape, cfg.getInt("axis", -1), outer, size, inner, axis),
      "axis out of range");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  Vec x = load(ins[0]), y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + i; };
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t a = 0; a < size; ++a)
        m = std::max(m, x[at(a)]);
      double sum = 0.0;
      for (int64_t a = 0; a < size; ++a)
        sum += y[at(a)] = std::exp(x[at(a)] - m);
      for (int64_t a = 0; a < size; ++a)
        y[at(a)] /= sum;
    }
  store(outs[0], y);
  return Status::ok();
}

/// ins dy, y: dx = y * (dy - sum(dy * y, axis)).
Status softmaxGrad(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "softmax_grad";
  CHECK_ARITY(2, 2, 1);
  int64_t outer, size, inner, axis;
  REQUIRE(
      splitAxis(ins[1].shape, cfg.getInt("axis", -1), outer, size, inner, axis),
      "axis out of range");
  REQUIRE(ins[0].elements() == ins[1].elements() &&
              outs[0].elements() == ins[0].elements(),
          "operands differ in size");
  Vec dy = load(ins[0]), y = load(ins[1]), dx(y.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto at = [&](int64_t a) { return (o * size + a) * inner + i; };
      double dot = 0.0;
      for (int64_t a = 0; a < size; ++a)
        dot += dy[at(a)] * y[at(a)];
      for (int64_t a = 0; a < size; ++a)
        dx[at(a)] = y[at(a)] * (dy[at(a)] - dot);
    }
  store(outs[0], dx);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

// The hash is runtime/core/DropoutMask.h's, shared by every backend; the
// comparison is written here the obvious way (u >= rate in double), so the
// backends' integer form (dropout::keep) is checked against it.
using dropout::splitmix64;

/// Shared by dropout and dropout_grad: the mask times 1 / (1 - rate).
Status applyDropout(const char *kName, const KernelContext &ctx,
                    const KernelConfig &cfg, const Tensors &ins,
                    const Tensors &outs) {
  CHECK_ARITY(1, 1, 1);
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  double rate = cfg.getFloat("rate", 0.0);
  REQUIRE(rate >= 0.0 && rate <= 1.0, "rate must be in [0, 1]");
  int64_t seed = cfg.getInt("seed", 0);
  Vec x = load(ins[0]);
  const std::vector<int64_t> &shape = ins[0].shape;
  int64_t rows = shape.empty() ? 1 : shape[0];
  int64_t rowElements = rows ? static_cast<int64_t>(x.size()) / rows : 0;
  // With a noise shape (of the axes after the batch axis), an element's
  // mask is that of its coordinates with the noise's unit axes set to 0,
  // indexed within [batch] + noise shape.
  std::vector<int64_t> noise(shape);
  if (cfg.has("noise_shape")) {
    std::vector<int64_t> after = cfg.getInts("noise_shape");
    REQUIRE(!shape.empty() && after.size() + 1 == shape.size(),
            "noise_shape has the wrong rank");
    std::copy(after.begin(), after.end(), noise.begin() + 1);
  }
  int64_t noiseRow = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    REQUIRE(noise[d] == shape[d] || (noise[d] == 1 && d > 0),
            "noise_shape does not broadcast to the input");
    if (d > 0)
      noiseRow *= noise[d];
  }
  double scale = rate < 1.0 ? 1.0 / (1.0 - rate) : 0.0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < rowElements; ++i) {
      int64_t inRow = 0, rest = i, stride = 1;
      for (size_t d = shape.size(); d-- > 1;) {
        int64_t coordinate = rest % shape[d];
        rest /= shape[d];
        inRow += (noise[d] == 1 ? 0 : coordinate) * stride;
        stride *= noise[d];
      }
      int64_t global = (ctx.globalRowOffset + r) * noiseRow + inRow;
      double &v = x[r * rowElements + i];
      v = dropoutKeep(seed, ctx.seed, ctx.step, global, rate) ? v * scale : 0.0;
    }
  store(outs[0], x);
  return Status::ok();
}

Status dropout(const KernelContext &ctx, const KernelConfig &cfg,
               const Tensors &ins, const Tensors &outs) {
  return applyDropout("dropout", ctx, cfg, ins, outs);
}

Status dropoutGrad(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  return applyDropout("dropout_grad", ctx, cfg, ins, outs);
}

//===----------------------------------------------------------------------===//
// Random image layers: the per-image draws and sampling taps are
// runtime/core/ImageTransform.h's, shared by every backend
//===----------------------------------------------------------------------===//

/// random_image_transform (out = the taps of x) and its gradient (the
/// transpose: each tap's pixel gains weight * dy), from the same per-image
/// projection.
Status applyImageTransform(const char *kName, bool gradient,
                           const KernelContext &ctx, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs) {
  CHECK_ARITY(1, 1, 1);
  const TensorRef &image = gradient ? outs[0] : ins[0];
  const TensorRef &transformed = gradient ? ins[0] : outs[0];
  image_transform::Spec spec;
  std::string error = image_transform::specFromConfig(cfg, image.shape,
                                                      transformed.shape, spec);
  REQUIRE(error.empty(), error);
  Vec src = load(ins[0]);
  Vec dst(outs[0].elements(), 0.0);
  int64_t channels = image.shape[3];
  int64_t inPixels = spec.inHeight * spec.inWidth;
  int64_t outPixels = spec.outHeight * spec.outWidth;
  uint64_t key = dropout::stepKey(spec.seed, ctx.seed, ctx.step);
  for (int64_t n = 0; n < image.shape[0]; ++n) {
    image_transform::Projection p =
        image_transform::projection(spec, key, ctx.globalRowOffset + n);
    for (int64_t oy = 0; oy < spec.outHeight; ++oy)
      for (int64_t ox = 0; ox < spec.outWidth; ++ox) {
        image_transform::Taps t = image_transform::taps(spec, p, oy, ox);
        int64_t o = (n * outPixels + oy * spec.outWidth + ox) * channels;
        for (int64_t c = 0; c < channels; ++c)
          for (int i = 0; i < t.count; ++i) {
            int64_t in = (n * inPixels + t.index[i]) * channels + c;
            if (gradient)
              dst[in] += t.weight[i] * src[o + c];
            else
              dst[o + c] += t.weight[i] * src[in];
          }
        if (!gradient)
          for (int64_t c = 0; c < channels; ++c)
            dst[o + c] += t.fillWeight * spec.fillValue;
      }
  }
  store(outs[0], dst);
  return Status::ok();
}

Status randomImageTransform(const KernelContext &ctx, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs) {
  return applyImageTransform("random_image_transform", false, ctx, cfg, ins,
                             outs);
}

Status randomImageTransformGrad(const KernelContext &ctx,
                                const KernelConfig &cfg, const Tensors &ins,
                                const Tensors &outs) {
  return applyImageTransform("random_image_transform_grad", true, ctx, cfg, ins,
                             outs);
}

/// random_contrast: per image and channel, clip((x - mean) * f + mean) to
/// value_range, f drawn per image from contrast_range. Its gradient
/// (inputs dy, x): with g = dy where the clip passed,
/// dx = f * g + (1 - f) * mean(g) over the image's pixels.
Status applyContrast(const char *kName, bool gradient, const KernelContext &ctx,
                     const KernelConfig &cfg, const Tensors &ins,
                     const Tensors &outs) {
  CHECK_ARITY(gradient ? 2 : 1, gradient ? 2 : 1, 1);
  const TensorRef &image = ins[gradient ? 1 : 0];
  REQUIRE(image.shape.size() == 4, "expects an NHWC input");
  REQUIRE(outs[0].elements() == image.elements(), "output has the wrong size");
  std::vector<double> range = cfg.getFloats("contrast_range");
  std::vector<double> values = cfg.getFloats("value_range");
  REQUIRE(range.size() == 2 && values.size() == 2,
          "needs contrast_range and value_range");
  Vec x = load(image);
  Vec dy = gradient ? load(ins[0]) : Vec();
  Vec out(x.size());
  int64_t pixels = image.shape[1] * image.shape[2], channels = image.shape[3];
  uint64_t key = dropout::stepKey(cfg.getInt("seed", 0), ctx.seed, ctx.step);
  for (int64_t n = 0; n < image.shape[0]; ++n) {
    double f = image_transform::contrastFactor(key, ctx.globalRowOffset + n,
                                               range[0], range[1]);
    for (int64_t c = 0; c < channels; ++c) {
      auto at = [&](int64_t p) { return (n * pixels + p) * channels + c; };
      double mean = 0.0;
      for (int64_t p = 0; p < pixels; ++p)
        mean += x[at(p)];
      mean /= static_cast<double>(pixels);
      double gMean = 0.0;
      for (int64_t p = 0; p < pixels; ++p) {
        double u = (x[at(p)] - mean) * f + mean;
        if (!gradient) {
          out[at(p)] = std::min(std::max(u, values[0]), values[1]);
          continue;
        }
        out[at(p)] = u >= values[0] && u <= values[1] ? dy[at(p)] : 0.0;
        gMean += out[at(p)];
      }
      gMean /= static_cast<double>(pixels);
      if (gradient)
        for (int64_t p = 0; p < pixels; ++p)
          out[at(p)] = f * out[at(p)] + (1 - f) * gMean;
    }
  }
  store(outs[0], out);
  return Status::ok();
}

Status randomContrast(const KernelContext &ctx, const KernelConfig &cfg,
                      const Tensors &ins, const Tensors &outs) {
  return applyContrast("random_contrast", false, ctx, cfg, ins, outs);
}

Status randomContrastGrad(const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs) {
  return applyContrast("random_contrast_grad", true, ctx, cfg, ins, outs);
}

/// ema_update (inputs value, average; outputs new_average, new_value): Keras'
/// use_ema, base_optimizer.py's moving average and overwrite.
Status emaUpdate(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "ema_update";
  CHECK_ARITY(2, 2, 2);
  int64_t n = ins[0].elements();
  REQUIRE(ins[1].elements() == n && outs[0].elements() == n &&
              outs[1].elements() == n,
          "operands differ in size");
  const EmaSchedule schedule = EmaSchedule::of(cfg);
  double momentum = schedule.momentumAt(ctx.step);
  bool overwrite = schedule.overwritesAt(ctx.step);
  Vec value = load(ins[0]), average = load(ins[1]);
  for (int64_t i = 0; i < n; ++i)
    average[i] = momentum * average[i] + (1 - momentum) * value[i];
  store(outs[0], average);
  store(outs[1], overwrite ? average : value);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Shape ops
//===----------------------------------------------------------------------===//

Status copyKernel(const char *kName, const Tensors &ins, const Tensors &outs) {
  CHECK_ARITY(1, 1, 1);
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "changes the element count: " + shapeText(ins[0].shape) + " to " +
              shapeText(outs[0].shape));
  store(outs[0], load(ins[0]));
  return Status::ok();
}

Status flatten(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  return copyKernel("flatten", ins, outs);
}

Status reshape(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  return copyKernel("reshape", ins, outs);
}

Status add(const KernelContext &, const KernelConfig &, const Tensors &ins,
           const Tensors &outs) {
  static constexpr const char *kName = "add";
  CHECK_ARITY(1, 1 << 20, 1);
  for (const TensorRef &t : ins)
    REQUIRE(t.elements() == outs[0].elements(), "operands differ in size");
  Vec sum(outs[0].elements(), 0.0);
  for (const TensorRef &t : ins) {
    Vec v = load(t);
    for (size_t i = 0; i < sum.size(); ++i)
      sum[i] += v[i];
  }
  store(outs[0], sum);
  return Status::ok();
}

/// The elementwise product of the inputs (Keras Multiply).
Status multiply(const KernelContext &, const KernelConfig &, const Tensors &ins,
                const Tensors &outs) {
  static constexpr const char *kName = "multiply";
  CHECK_ARITY(1, 1 << 20, 1);
  for (const TensorRef &t : ins)
    REQUIRE(t.elements() == outs[0].elements(), "operands differ in size");
  Vec product(outs[0].elements(), 1.0);
  for (const TensorRef &t : ins) {
    Vec v = load(t);
    for (size_t i = 0; i < product.size(); ++i)
      product[i] *= v[i];
  }
  store(outs[0], product);
  return Status::ok();
}

/// The elementwise maximum of the inputs (Keras Maximum).
Status maximum(const KernelContext &, const KernelConfig &, const Tensors &ins,
               const Tensors &outs) {
  static constexpr const char *kName = "maximum";
  CHECK_ARITY(1, 1 << 20, 1);
  for (const TensorRef &t : ins)
    REQUIRE(t.elements() == outs[0].elements(), "operands differ in size");
  Vec y = load(ins[0]);
  for (size_t k = 1; k < ins.size(); ++k) {
    Vec v = load(ins[k]);
    for (size_t i = 0; i < y.size(); ++i)
      y[i] = std::max(y[i], v[i]);
  }
  store(outs[0], y);
  return Status::ok();
}

/// ins = [dy, x0, ..., xn-1]: dy where x[index] is the first of the
/// largest x (TensorFlow's pairwise maximum gives ties to the first).
Status maximumGrad(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "maximum_grad";
  CHECK_ARITY(3, 1 << 20, 1);
  for (const TensorRef &t : ins)
    REQUIRE(t.elements() == outs[0].elements(), "operands differ in size");
  int64_t n = static_cast<int64_t>(ins.size()) - 1;
  int64_t index = cfg.getInt("index", -1);
  REQUIRE(index >= 0 && index < n, "index out of range");
  Vec dy = load(ins[0]);
  std::vector<Vec> x;
  for (int64_t k = 0; k < n; ++k)
    x.push_back(load(ins[k + 1]));
  for (size_t i = 0; i < dy.size(); ++i) {
    int64_t first = 0;
    for (int64_t k = 1; k < n; ++k)
      if (x[k][i] > x[first][i])
        first = k;
    if (first != index)
      dy[i] = 0.0;
  }
  store(outs[0], dy);
  return Status::ok();
}

Status concatenate(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "concatenate";
  CHECK_ARITY(1, 1 << 20, 1);
  int64_t outer, size, inner, axis;
  REQUIRE(splitAxis(outs[0].shape, cfg.getInt("axis", -1), outer, size, inner,
                    axis),
          "axis out of range");
  int64_t total = 0;
  for (const TensorRef &t : ins) {
    REQUIRE(t.shape.size() == outs[0].shape.size(), "ranks differ");
    for (size_t d = 0; d < t.shape.size(); ++d)
      REQUIRE(static_cast<int64_t>(d) == axis || t.shape[d] == outs[0].shape[d],
              "shapes differ off the axis");
    total += t.shape[axis];
  }
  REQUIRE(total == size, "input sizes along the axis do not add up");
  Vec y(outs[0].elements());
  int64_t offset = 0;
  for (const TensorRef &t : ins) {
    Vec v = load(t);
    int64_t d = t.shape[axis];
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t a = 0; a < d; ++a)
        for (int64_t i = 0; i < inner; ++i)
          y[(o * size + offset + a) * inner + i] = v[(o * d + a) * inner + i];
    offset += d;
  }
  store(outs[0], y);
  return Status::ok();
}

/// The output's extent along `axis`, starting at `offset`.
Status slice(const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
             const Tensors &outs) {
  static constexpr const char *kName = "slice";
  CHECK_ARITY(1, 1, 1);
  int64_t outer, size, inner, axis;
  REQUIRE(
      splitAxis(ins[0].shape, cfg.getInt("axis", -1), outer, size, inner, axis),
      "axis out of range");
  REQUIRE(outs[0].shape.size() == ins[0].shape.size(), "ranks differ");
  int64_t d = outs[0].shape[axis], offset = cfg.getInt("offset", 0);
  REQUIRE(offset >= 0 && offset + d <= size, "slice out of range");
  Vec x = load(ins[0]), y(outs[0].elements());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t a = 0; a < d; ++a)
      for (int64_t i = 0; i < inner; ++i)
        y[(o * d + a) * inner + i] = x[(o * size + offset + a) * inner + i];
  store(outs[0], y);
  return Status::ok();
}

/// Each output element is the input element at its coordinates, with the
/// input's unit axes at 0.
Status broadcast(const KernelContext &, const KernelConfig &,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "broadcast";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &in = ins[0].shape, &out = outs[0].shape;
  REQUIRE(in.size() == out.size(), "ranks differ");
  for (size_t d = 0; d < in.size(); ++d)
    REQUIRE(in[d] == out[d] || in[d] == 1, "input does not broadcast");
  Vec x = load(ins[0]), y(outs[0].elements());
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    int64_t source = 0, rest = i, stride = 1;
    for (size_t d = out.size(); d-- > 0;) {
      int64_t coordinate = rest % out[d];
      rest /= out[d];
      source += (in[d] == 1 ? 0 : coordinate) * stride;
      stride *= in[d];
    }
    y[i] = x[source];
  }
  store(outs[0], y);
  return Status::ok();
}

/// The adjoint of broadcast: each output element sums the input elements
/// that broadcast would fill from it.
Status sumTo(const KernelContext &, const KernelConfig &, const Tensors &ins,
             const Tensors &outs) {
  static constexpr const char *kName = "sum_to";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &in = ins[0].shape, &out = outs[0].shape;
  REQUIRE(in.size() == out.size(), "ranks differ");
  for (size_t d = 0; d < in.size(); ++d)
    REQUIRE(out[d] == in[d] || out[d] == 1, "output does not broadcast");
  Vec x = load(ins[0]), y(outs[0].elements(), 0.0);
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i) {
    int64_t target = 0, rest = i, stride = 1;
    for (size_t d = in.size(); d-- > 0;) {
      int64_t coordinate = rest % in[d];
      rest /= in[d];
      target += (out[d] == 1 ? 0 : coordinate) * stride;
      stride *= out[d];
    }
    y[target] += x[i];
  }
  store(outs[0], y);
  return Status::ok();
}

/// x * scale[c] + offset[c] per channel c of the last axis.
Status channelScaleShift(const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "channel_scale_shift";
  CHECK_ARITY(1, 1, 1);
  REQUIRE(!ins[0].shape.empty(), "input has rank 0");
  size_t c = static_cast<size_t>(ins[0].shape.back());
  std::vector<double> scale = cfg.getFloats("scale"),
                      offset = cfg.getFloats("offset");
  REQUIRE(scale.size() == c && offset.size() == c,
          "scale and offset need one element per channel");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  Vec x = load(ins[0]);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = x[i] * scale[i % c] + offset[i % c];
  store(outs[0], x);
  return Status::ok();
}

/// Keras' Normalization: (x - mean) / max(sqrt(variance), epsilon) per
/// channel of the last axis; inputs x, variance and, optionally, mean.
Status normalize(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "normalize";
  CHECK_ARITY(2, 3, 1);
  REQUIRE(!ins[0].shape.empty(), "input has rank 0");
  int64_t c = ins[0].shape.back();
  REQUIRE(ins[1].elements() == c && (ins.size() < 3 || ins[2].elements() == c),
          "mean and variance need one element per channel");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  double epsilon = cfg.getFloat("epsilon", 1e-7);
  Vec x = load(ins[0]), variance = load(ins[1]);
  Vec mean = ins.size() > 2 ? load(ins[2]) : Vec(c, 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    size_t k = i % static_cast<size_t>(c);
    x[i] = (x[i] - mean[k]) / std::max(std::sqrt(variance[k]), epsilon);
  }
  store(outs[0], x);
  return Status::ok();
}

/// Output axis d is input axis permutation[d].
Status transpose(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "transpose";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &in = ins[0].shape, &out = outs[0].shape;
  std::vector<int64_t> perm = cfg.getInts("permutation");
  size_t rank = in.size();
  REQUIRE(out.size() == rank && perm.size() == rank, "ranks differ");
  std::vector<bool> seen(rank, false);
  for (size_t d = 0; d < rank; ++d) {
    REQUIRE(perm[d] >= 0 && perm[d] < static_cast<int64_t>(rank) &&
                !seen[perm[d]],
            "not a permutation");
    seen[perm[d]] = true;
    REQUIRE(out[d] == in[perm[d]], "output shape is not the permuted input");
  }
  std::vector<int64_t> stride(rank, 1); // of the input
  for (size_t d = rank; d-- > 1;)
    stride[d - 1] = stride[d] * in[d];
  Vec x = load(ins[0]), y(outs[0].elements());
  std::vector<int64_t> index(rank, 0); // output coordinates
  for (size_t i = 0; i < y.size(); ++i) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += index[d] * stride[perm[d]];
    y[i] = x[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d])
        break;
      index[d] = 0;
    }
  }
  store(outs[0], y);
  return Status::ok();
}

/// Zero-pads (positive `low`/`high` amounts) or crops (negative) each axis:
/// output[i] = input[i - low] where that is inside the input, else 0.
Status pad(const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
           const Tensors &outs) {
  static constexpr const char *kName = "pad";
  CHECK_ARITY(1, 1, 1);
  const std::vector<int64_t> &in = ins[0].shape, &out = outs[0].shape;
  std::vector<int64_t> low = cfg.getInts("low"), high = cfg.getInts("high");
  size_t rank = in.size();
  REQUIRE(out.size() == rank && low.size() == rank && high.size() == rank,
          "low, high, input and output ranks differ");
  for (size_t d = 0; d < rank; ++d)
    REQUIRE(in[d] + low[d] + high[d] == out[d],
            "axis " + std::to_string(d) + ": " + std::to_string(low[d]) +
                " + " + std::to_string(in[d]) + " + " +
                std::to_string(high[d]) + " != " + std::to_string(out[d]));
  Vec x = load(ins[0]), y(outs[0].elements(), 0.0);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < static_cast<int64_t>(y.size()); ++i) {
    // index: the output coordinates of element i (row-major).
    int64_t source = 0;
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      int64_t at = index[d] - low[d];
      inside = inside && at >= 0 && at < in[d];
      source = source * in[d] + at;
    }
    if (inside)
      y[i] = x[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < out[d])
        break;
      index[d] = 0;
    }
  }
  store(outs[0], y);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Batch normalisation
//
// Optional gamma and beta: the compiler says which are present
// (`has_gamma`, `has_beta`), since with 4 inputs the fourth could be either
// (Keras scale=False, center=True gives beta alone). A launch without them
// (older plans) reads 4 inputs as gamma. batch_norm_grad has only gamma
// optional, so it has no such ambiguity.
//===----------------------------------------------------------------------===//

/// Whether a batch_norm_train or batch_norm_grad launch ends with a row
/// mask (batch_norm_train's `row_mask`: the step's metric weights).
bool hasRowMask(const KernelConfig &cfg) {
  return cfg.getInt("has_row_mask", 0) != 0;
}

/// The rows of a batch norm's [N, ..., C] input its statistics are over:
/// those its row mask keeps (not 0), or all of them without a mask.
struct KeptRows {
  std::vector<bool> kept; // one per row of the leading axis
  int64_t perRow = 1;     // the elements each row spans
  int64_t n = 0;          // the kept positions of each channel
  double weight = 1.0;    // the mask's mean: the moving update's weight
  bool counts(size_t element) const { return kept[element / perRow]; }
};

KeptRows keptRows(const TensorRef &x, int64_t channels, const TensorRef *mask) {
  KeptRows k;
  int64_t rows = x.shape[0];
  k.perRow = std::max<int64_t>(1, rows ? x.elements() / rows : 1);
  k.kept.assign(rows, true);
  if (mask) {
    Vec m = load(*mask);
    k.weight = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      k.kept[r] = m[r] != 0.0;
      k.weight += m[r];
    }
    k.weight /= static_cast<double>(std::max<int64_t>(1, rows));
  }
  for (bool kept : k.kept)
    k.n += kept ? k.perRow / channels : 0;
  return k;
}

/// gamma and beta of a batch_norm(_train) launch: from their inputs, or 1
/// and 0 when absent.
void batchNormScaleShift(const KernelConfig &cfg, const Tensors &ins, int64_t c,
                         Vec &gamma, Vec &beta) {
  size_t optional = ins.size() - 3 - hasRowMask(cfg);
  bool hasGamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool hasBeta = cfg.getInt("has_beta", optional >= 2) != 0;
  gamma = hasGamma ? load(ins[3]) : Vec(c, 1.0);
  beta = hasBeta ? load(ins[hasGamma ? 4 : 3]) : Vec(c, 0.0);
}

/// Whether a batch_norm(_train) launch names as many optional inputs as it
/// has.
bool batchNormArityMatches(const KernelConfig &cfg, const Tensors &ins) {
  size_t optional = ins.size() - 3 - hasRowMask(cfg);
  if (!cfg.has("has_gamma") && !cfg.has("has_beta"))
    return true;
  return static_cast<size_t>((cfg.getInt("has_gamma", 0) != 0) +
                             (cfg.getInt("has_beta", 0) != 0)) == optional;
}

Status batchNorm(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "batch_norm";
  CHECK_ARITY(3, 5, 1);
  REQUIRE(!ins[0].shape.empty(), "needs a ranked input");
  int64_t c = ins[0].shape.back();
  for (size_t i = 1; i < ins.size(); ++i)
    REQUIRE(ins[i].elements() == c, "statistics must match the last axis");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  REQUIRE(batchNormArityMatches(cfg, ins),
          "has_gamma and has_beta do not match the inputs");
  double eps = cfg.getFloat("epsilon", 1e-3);
  Vec x = load(ins[0]), mean = load(ins[1]), var = load(ins[2]);
  Vec gamma, beta;
  batchNormScaleShift(cfg, ins, c, gamma, beta);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t ch = i % c;
    x[i] = (x[i] - mean[ch]) / std::sqrt(var[ch] + eps) * gamma[ch] + beta[ch];
  }
  store(outs[0], x);
  return Status::ok();
}

/// outs: y, batch_mean, batch_inv_std, new_moving_mean, new_moving_variance.
/// y uses the biased batch variance; so does the moving variance (Keras 3,
/// keras/src/layers/normalization/batch_normalization.py: ops.moments),
/// unless `unbiased_moving_variance` asks for n / (n - 1) times it
/// (tf.keras 2's fused kernel, Bessel's correction).
Status batchNormTrain(const KernelContext &, const KernelConfig &cfg,
                      const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "batch_norm_train";
  CHECK_ARITY(3, 6, 5);
  REQUIRE(!ins[0].shape.empty(), "needs a ranked input");
  int64_t c = ins[0].shape.back();
  bool masked = hasRowMask(cfg);
  REQUIRE(!masked || ins.size() >= 4, "has_row_mask without a row mask");
  for (size_t i = 1; i < ins.size() - masked; ++i)
    REQUIRE(ins[i].elements() == c, "statistics must match the last axis");
  REQUIRE(!masked || ins.back().elements() == ins[0].shape[0],
          "row_mask must be [N], one per row of the input");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  for (int i = 1; i < 5; ++i)
    REQUIRE(outs[i].elements() == c, "statistics must match the last axis");
  REQUIRE(batchNormArityMatches(cfg, ins),
          "has_gamma and has_beta do not match the inputs");
  double eps = cfg.getFloat("epsilon", 1e-3);
  double momentum = cfg.getFloat("momentum", 0.99);
  bool unbiasedUpdate = truthy(cfg, "unbiased_moving_variance");
  Vec x = load(ins[0]), movingMean = load(ins[1]), movingVar = load(ins[2]);
  Vec gamma, beta;
  batchNormScaleShift(cfg, ins, c, gamma, beta);
  // The statistics are over the kept rows' n positions; the moving update
  // weighs the mask's mean (GraphOps.td).
  KeptRows rows = keptRows(ins[0], c, masked ? &ins.back() : nullptr);
  int64_t n = rows.n;
  double w = rows.weight;
  Vec mean(c, 0.0), var(c, 0.0), invStd(c);
  for (size_t i = 0; i < x.size(); ++i)
    if (rows.counts(i))
      mean[i % c] += x[i];
  for (double &m : mean)
    m = n ? m / n : 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    double d = x[i] - mean[i % c];
    if (rows.counts(i))
      var[i % c] += d * d;
  }
  for (int64_t ch = 0; ch < c; ++ch) {
    var[ch] = n ? var[ch] / n : 0.0;
    invStd[ch] = 1.0 / std::sqrt(var[ch] + eps);
  }
  // A row the mask leaves out is beta (its normalised value 0): with
  // statistics it is not in, its own could be anything (GraphOps.td).
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t ch = i % c;
    double xhat = rows.counts(i) ? (x[i] - mean[ch]) * invStd[ch] : 0.0;
    y[i] = xhat * gamma[ch] + beta[ch];
  }
  Vec newMean(c), newVar(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    double batchVar = unbiasedUpdate && n > 1 ? var[ch] * n / (n - 1) : var[ch];
    newMean[ch] = movingMean[ch] * momentum + w * mean[ch] * (1.0 - momentum);
    newVar[ch] = movingVar[ch] * momentum + w * batchVar * (1.0 - momentum);
  }
  store(outs[0], y);
  store(outs[1], mean);
  store(outs[2], invStd);
  store(outs[3], newMean);
  store(outs[4], newVar);
  return Status::ok();
}

/// ins: dy, x, batch_mean, batch_inv_std, [gamma], [row_mask]; outs: dx,
/// dgamma, dbeta. With xhat = (x - mean) * inv_std, over the n rows of each
/// channel (those the row mask keeps):
///   dbeta = sum dy, dgamma = sum dy * xhat,
///   dx = gamma * inv_std / n * (n dy - sum dy - xhat sum(dy xhat)),
/// and dx = 0 in the rows the mask leaves out.
Status batchNormGrad(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "batch_norm_grad";
  CHECK_ARITY(4, 6, 3);
  REQUIRE(!ins[1].shape.empty(), "needs a ranked input");
  int64_t c = ins[1].shape.back();
  bool masked = hasRowMask(cfg);
  bool hasGamma = cfg.getInt("has_gamma", ins.size() - masked == 5) != 0;
  REQUIRE(ins.size() == 4 + size_t(hasGamma) + size_t(masked),
          "has_gamma and has_row_mask do not match its inputs");
  REQUIRE(ins[0].elements() == ins[1].elements() &&
              outs[0].elements() == ins[1].elements(),
          "dy, x and dx differ in size");
  for (size_t i = 2; i < ins.size() - masked; ++i)
    REQUIRE(ins[i].elements() == c, "statistics must match the last axis");
  REQUIRE(outs[1].elements() == c && outs[2].elements() == c,
          "gamma_grad and beta_grad must match the last axis");
  REQUIRE(!masked || ins.back().elements() == ins[1].shape[0],
          "row_mask must be [N], one per row of the input");
  Vec dy = load(ins[0]), x = load(ins[1]), mean = load(ins[2]),
      invStd = load(ins[3]);
  Vec gamma = hasGamma ? load(ins[4]) : Vec(c, 1.0);
  KeptRows rows = keptRows(ins[1], c, masked ? &ins.back() : nullptr);
  int64_t n = rows.n;
  Vec sumDy(c, 0.0), sumDyXhat(c, 0.0), dx(x.size(), 0.0);
  for (size_t i = 0; i < x.size(); ++i) {
    if (!rows.counts(i))
      continue;
    int64_t ch = i % c;
    double xhat = (x[i] - mean[ch]) * invStd[ch];
    sumDy[ch] += dy[i];
    sumDyXhat[ch] += dy[i] * xhat;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!rows.counts(i))
      continue;
    int64_t ch = i % c;
    double xhat = (x[i] - mean[ch]) * invStd[ch];
    dx[i] = gamma[ch] * invStd[ch] / n *
            (n * dy[i] - sumDy[ch] - xhat * sumDyXhat[ch]);
  }
  store(outs[0], dx);
  store(outs[1], sumDyXhat);
  store(outs[2], sumDy);
  return Status::ok();
}

/// ins: dy, moving_variance, [gamma]; outs: dx. The input gradient of
/// inference-mode batch_norm (a frozen Keras BatchNormalization), whose
/// statistics are constants: dx = dy * gamma / sqrt(moving_variance + eps).
Status batchNormInferenceGrad(const KernelContext &, const KernelConfig &cfg,
                              const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "batch_norm_inference_grad";
  CHECK_ARITY(2, 3, 1);
  REQUIRE(!ins[0].shape.empty(), "needs a ranked input");
  int64_t c = ins[0].shape.back();
  REQUIRE(outs[0].elements() == ins[0].elements(), "dy and dx differ in size");
  for (size_t i = 1; i < ins.size(); ++i)
    REQUIRE(ins[i].elements() == c, "statistics must match the last axis");
  double eps = cfg.getFloat("epsilon", 1e-3);
  Vec dy = load(ins[0]), var = load(ins[1]);
  Vec gamma = ins.size() == 3 ? load(ins[2]) : Vec(c, 1.0);
  Vec scale(c);
  for (int64_t ch = 0; ch < c; ++ch)
    scale[ch] = gamma[ch] / std::sqrt(var[ch] + eps);
  for (size_t i = 0; i < dy.size(); ++i)
    dy[i] *= scale[i % c];
  store(outs[0], dy);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Layer normalisation (the last axis)
//
// Each row of the last axis (C values) is normalised with its own mean and
// biased variance. Optional gamma and beta as batch_norm's: `has_gamma` and
// `has_beta` say which of inputs 1 and 2 are there (without them, 2 inputs
// mean gamma only).
//===----------------------------------------------------------------------===//

/// mean and 1/sqrt(var + eps) of each row of [rows, c] `x`.
void layerNormRowStatistics(const Vec &x, int64_t c, double eps, Vec &mean,
                            Vec &invStd) {
  int64_t rows = c ? static_cast<int64_t>(x.size()) / c : 0;
  mean.assign(rows, 0.0);
  invStd.assign(rows, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0.0, sq = 0.0;
    for (int64_t k = 0; k < c; ++k)
      sum += x[r * c + k];
    double m = sum / c;
    for (int64_t k = 0; k < c; ++k) {
      double d = x[r * c + k] - m;
      sq += d * d;
    }
    mean[r] = m;
    invStd[r] = 1.0 / std::sqrt(sq / c + eps);
  }
}

/// ins: x, scale; outs: y = x * scale per channel of the last axis (Keras'
/// LayerScale).
Status channelScale(const KernelContext &, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "channel_scale";
  CHECK_ARITY(2, 2, 1);
  REQUIRE(!ins[0].shape.empty() && ins[0].shape.back() > 0,
          "needs a ranked, non-empty input");
  int64_t c = ins[0].shape.back();
  REQUIRE(ins[1].elements() == c, "scale must match the last axis");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  Vec x = load(ins[0]), scale = load(ins[1]);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] *= scale[i % c];
  store(outs[0], x);
  return Status::ok();
}

/// ins: x, [gamma], [beta]; outs: y.
Status layerNorm(const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "layer_norm";
  CHECK_ARITY(1, 3, 1);
  REQUIRE(!ins[0].shape.empty() && ins[0].shape.back() > 0,
          "needs a ranked, non-empty input");
  int64_t c = ins[0].shape.back();
  for (size_t i = 1; i < ins.size(); ++i)
    REQUIRE(ins[i].elements() == c, "gamma and beta must match the last axis");
  REQUIRE(outs[0].elements() == ins[0].elements(), "output has the wrong size");
  size_t optional = ins.size() - 1;
  bool hasGamma = cfg.getInt("has_gamma", optional >= 1) != 0;
  bool hasBeta = cfg.getInt("has_beta", optional >= 2) != 0;
  REQUIRE(static_cast<size_t>(hasGamma + hasBeta) == optional,
          "has_gamma and has_beta do not match the inputs");
  double eps = cfg.getFloat("epsilon", 1e-3);
  Vec x = load(ins[0]);
  Vec gamma = hasGamma ? load(ins[1]) : Vec(c, 1.0);
  Vec beta = hasBeta ? load(ins[hasGamma ? 2 : 1]) : Vec(c, 0.0);
  Vec mean, invStd;
  layerNormRowStatistics(x, c, eps, mean, invStd);
  for (size_t i = 0; i < x.size(); ++i) {
    int64_t r = static_cast<int64_t>(i) / c, k = static_cast<int64_t>(i) % c;
    x[i] = (x[i] - mean[r]) * invStd[r] * gamma[k] + beta[k];
  }
  store(outs[0], x);
  return Status::ok();
}

/// ins: dy, x, [gamma]; outs: dx, dgamma, dbeta. With xhat the normalised
/// x and g = dy * gamma, over the C values of each row:
///   dx = inv_std / C * (C g - sum g - xhat sum(g xhat));
/// dgamma = sum dy * xhat and dbeta = sum dy over the rows.
Status layerNormGrad(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "layer_norm_grad";
  CHECK_ARITY(2, 3, 3);
  REQUIRE(!ins[1].shape.empty() && ins[1].shape.back() > 0,
          "needs a ranked, non-empty input");
  int64_t c = ins[1].shape.back();
  REQUIRE(ins[0].elements() == ins[1].elements() &&
              outs[0].elements() == ins[1].elements(),
          "dy, x and dx differ in size");
  REQUIRE(ins.size() < 3 || ins[2].elements() == c,
          "gamma must match the last axis");
  REQUIRE(outs[1].elements() == c && outs[2].elements() == c,
          "gamma_grad and beta_grad must match the last axis");
  double eps = cfg.getFloat("epsilon", 1e-3);
  Vec dy = load(ins[0]), x = load(ins[1]);
  Vec gamma = ins.size() == 3 ? load(ins[2]) : Vec(c, 1.0);
  Vec mean, invStd;
  layerNormRowStatistics(x, c, eps, mean, invStd);
  int64_t rows = static_cast<int64_t>(x.size()) / c;
  Vec dx(x.size()), dgamma(c, 0.0), dbeta(c, 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double sumG = 0.0, sumGXhat = 0.0;
    for (int64_t k = 0; k < c; ++k) {
      int64_t i = r * c + k;
      double xhat = (x[i] - mean[r]) * invStd[r];
      double g = dy[i] * gamma[k];
      sumG += g;
      sumGXhat += g * xhat;
      dgamma[k] += dy[i] * xhat;
      dbeta[k] += dy[i];
    }
    for (int64_t k = 0; k < c; ++k) {
      int64_t i = r * c + k;
      double xhat = (x[i] - mean[r]) * invStd[r];
      dx[i] = invStd[r] / c * (c * dy[i] * gamma[k] - sumG - xhat * sumGXhat);
    }
  }
  store(outs[0], dx);
  store(outs[1], dgamma);
  store(outs[2], dbeta);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Losses and metrics
//
// Predictions are [..., C]: B = elements / C rows. Labels are one-hot
// ([..., C], float) or class indices (B elements, integer).
//===----------------------------------------------------------------------===//

constexpr double kEpsilon = 1e-7; // keras.config.epsilon()
/// The bounds Keras clips probabilities to, clip(p, epsilon, 1 - epsilon)
/// of a float32 tensor (tf.clip_by_value, np.clip): 1 - 1e-7 rounds to
/// 0.99999988, whose complement is 1.19e-7, not 1e-7 (a saturated wrong
/// prediction costs -log(1.19e-7) = 15.94, not 16.12).
constexpr double kClipLow = static_cast<float>(kEpsilon);
constexpr double kClipHigh = static_cast<float>(1.0 - kEpsilon);

/// Labels as a one-hot [B, C] matrix.
Status oneHot(const char *kName, const TensorRef &labels, int64_t rows,
              int64_t classes, bool sparse, Vec &y) {
  y.assign(rows * classes, 0.0);
  if (!sparse && labels.elements() == rows * classes) {
    y = load(labels);
    return Status::ok();
  }
  REQUIRE(labels.elements() == rows, "labels " + shapeText(labels.shape) +
                                         " match neither [B, C] nor [B]");
  Vec idx = load(labels);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t k = static_cast<int64_t>(std::llround(idx[r]));
    REQUIRE(k >= 0 && k < classes, "label " + std::to_string(k) +
                                       " out of range [0, " +
                                       std::to_string(classes) + ")");
    y[r * classes + k] = 1.0;
  }
  return Status::ok();
}

void logSoftmaxRow(const double *z, int64_t c, double *out) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < c; ++j)
    m = std::max(m, z[j]);
  double sum = 0.0;
  for (int64_t j = 0; j < c; ++j)
    sum += std::exp(z[j] - m);
  double lse = m + std::log(sum);
  for (int64_t j = 0; j < c; ++j)
    out[j] = z[j] - lse;
}

double clip(double p) { return std::min(std::max(p, kClipLow), kClipHigh); }
bool unclipped(double p) { return p > kClipLow && p < kClipHigh; }

/// Per-row loss and d(row loss)/d(predictions), following Keras 3's
/// TensorFlow backend (keras/src/backend/tensorflow/nn.py):
///  - from logits: -sum y log_softmax(z); gradient softmax(z) * sum(y) - y.
///  - categorical from probabilities: q = p / sum(p), c = clip(q, eps,
///    1 - eps), loss = -sum y log c. With s = sum p the gradient is
///    dL/dp_k = (-y_k / c_k [q_k unclipped] + sum_j y_j q_j / c_j
///    [q_j unclipped]) / s.
///  - sparse from probabilities: c = clip(p, eps, 1 - eps), then softmax
///    cross-entropy of log c: loss = -log c_y + log sum_j c_j; gradient
///    dL/dp_k = [p_k unclipped] (1 / S - [k = y] / c_k), S = sum c.
void rowLoss(const double *p, const double *y, int64_t c, bool fromLogits,
             bool sparse, double &loss, double *grad) {
  loss = 0.0;
  if (fromLogits) {
    std::vector<double> ls(c);
    logSoftmaxRow(p, c, ls.data());
    double ysum = 0.0;
    for (int64_t j = 0; j < c; ++j) {
      loss -= y[j] * ls[j];
      ysum += y[j];
    }
    for (int64_t j = 0; j < c; ++j)
      grad[j] = std::exp(ls[j]) * ysum - y[j];
    return;
  }
  if (sparse) {
    double s = 0.0;
    for (int64_t j = 0; j < c; ++j)
      s += clip(p[j]);
    for (int64_t j = 0; j < c; ++j) {
      loss -= y[j] * std::log(clip(p[j]));
      grad[j] = unclipped(p[j]) ? 1.0 / s - y[j] / clip(p[j]) : 0.0;
    }
    loss += std::log(s);
    return;
  }
  double s = 0.0;
  for (int64_t j = 0; j < c; ++j)
    s += p[j];
  double common = 0.0;
  for (int64_t j = 0; j < c; ++j) {
    double q = p[j] / s;
    loss -= y[j] * std::log(clip(q));
    if (unclipped(q))
      common += y[j] * q / clip(q);
  }
  for (int64_t j = 0; j < c; ++j) {
    double q = p[j] / s;
    grad[j] = ((unclipped(q) ? -y[j] / clip(q) : 0.0) + common) / s;
  }
}

/// The per-row weights of a loss or metric: its third input, or all 1.
Status sampleWeights(const char *kName, const Tensors &ins, size_t index,
                     int64_t rows, Vec &out) {
  if (ins.size() <= index) {
    out.assign(static_cast<size_t>(rows), 1.0);
    return Status::ok();
  }
  REQUIRE(ins[index].elements() == rows, "sample_weight must be [B]");
  out = load(ins[index]);
  return Status::ok();
}

/// ins: predictions [B, C], labels, [sample_weight [B]]; out: the loss
/// sum_i w_i l_i / B (or, for a gradient, its gradient: row i's times w_i).
Status lossKernel(const char *kName, const KernelConfig &cfg,
                  const Tensors &ins, const Tensors &outs, bool sparse,
                  bool gradient) {
  CHECK_ARITY(2, 3, 1);
  REQUIRE(!ins[0].shape.empty(), "needs [B, C] predictions");
  int64_t c = ins[0].shape.back(), rows = ins[0].elements() / c;
  REQUIRE(rows > 0, "empty batch");
  Vec y, w;
  Status s = oneHot(kName, ins[1], rows, c, sparse, y);
  if (!s)
    return s;
  if (s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  if (gradient)
    REQUIRE(outs[0].elements() == ins[0].elements(),
            "predictions_grad has the wrong size");
  else
    REQUIRE(outs[0].elements() == 1, "loss must be a scalar");
  Vec p = load(ins[0]), grad(p.size());
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double l;
    rowLoss(&p[r * c], &y[r * c], c, truthy(cfg, "from_logits"), sparse, l,
            &grad[r * c]);
    total += w[r] * l;
  }
  if (gradient) {
    for (int64_t i = 0; i < static_cast<int64_t>(grad.size()); ++i)
      grad[i] *= w[i / c] / rows;
    store(outs[0], grad);
  } else {
    store(outs[0], Vec{total / rows});
  }
  return Status::ok();
}

Status categoricalCrossentropy(const KernelContext &, const KernelConfig &cfg,
                               const Tensors &ins, const Tensors &outs) {
  return lossKernel("categorical_crossentropy", cfg, ins, outs, false, false);
}
Status sparseCategoricalCrossentropy(const KernelContext &,
                                     const KernelConfig &cfg,
                                     const Tensors &ins, const Tensors &outs) {
  return lossKernel("sparse_categorical_crossentropy", cfg, ins, outs, true,
                    false);
}
Status categoricalCrossentropyGrad(const KernelContext &,
                                   const KernelConfig &cfg, const Tensors &ins,
                                   const Tensors &outs) {
  return lossKernel("categorical_crossentropy_grad", cfg, ins, outs, false,
                    true);
}
Status sparseCategoricalCrossentropyGrad(const KernelContext &,
                                         const KernelConfig &cfg,
                                         const Tensors &ins,
                                         const Tensors &outs) {
  return lossKernel("sparse_categorical_crossentropy_grad", cfg, ins, outs,
                    true, true);
}

/// ins: logits [B, C], labels, [sample_weight [B]]; outs: probabilities,
/// the loss sum_i w_i l_i / B, and w_i (p - y) / B.
Status softmaxCrossEntropy(const KernelContext &, const KernelConfig &,
                           const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "softmax_cross_entropy";
  CHECK_ARITY(2, 3, 3);
  REQUIRE(!ins[0].shape.empty(), "needs [B, C] logits");
  int64_t c = ins[0].shape.back(), rows = ins[0].elements() / c;
  REQUIRE(rows > 0, "empty batch");
  Vec y, w;
  Status s = oneHot(kName, ins[1], rows, c, false, y);
  if (!s)
    return s;
  if (s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  REQUIRE(outs[0].elements() == ins[0].elements() &&
              outs[2].elements() == ins[0].elements() &&
              outs[1].elements() == 1,
          "outputs have the wrong sizes");
  Vec z = load(ins[0]), p(z.size()), grad(z.size());
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<double> ls(c);
    logSoftmaxRow(&z[r * c], c, ls.data());
    for (int64_t j = 0; j < c; ++j) {
      p[r * c + j] = std::exp(ls[j]);
      total -= w[r] * y[r * c + j] * ls[j];
      grad[r * c + j] = w[r] * (p[r * c + j] - y[r * c + j]) / rows;
    }
  }
  store(outs[0], p);
  store(outs[1], Vec{total / rows});
  store(outs[2], grad);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// pointwise_loss and pointwise_loss_grad: Keras 3's element-wise losses
//
// keras/src/losses/losses.py, with binary_crossentropy from
// keras/src/backend/tensorflow/nn.py. Each kind is f(p, t) on one element;
// the per-sample loss is its mean over the last axis (kl_divergence: the
// sum), and the launch's loss their mean over the batch
// (sum_over_batch_size): sum_i w_b(i) f_i / N, or / (N / K) for
// kl_divergence, with N elements, K the last axis and b(i) the element's
// batch row. Gradients are TensorFlow's: tf.abs and tf.sign give 0 at 0;
// tf.maximum's goes to its first operand where it is >= the second;
// tf.clip_by_value's passes where eps <= x <= max.
//===----------------------------------------------------------------------===//

/// sign(x), 0 at 0 and NaN at NaN, as tf.sign.
double signOf(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

/// f(p, t) of `loss`, and df/dp into `grad`; `t` is already mapped (label
/// smoothing, hinge's -1/1 labels).
double pointwiseValue(const PointwiseLossConfig &loss, double p, double t,
                      double &grad) {
  const double e = p - t;
  switch (loss.kind) {
  case PointwiseKind::meanSquaredError:
    grad = 2.0 * e;
    return e * e;
  case PointwiseKind::meanAbsoluteError:
    grad = signOf(e);
    return std::abs(e);
  case PointwiseKind::meanAbsolutePercentageError: {
    double m = std::max(std::abs(t), kEpsilon);
    grad = 100.0 * signOf(e) / m;
    return 100.0 * std::abs(t - p) / m;
  }
  case PointwiseKind::meanSquaredLogarithmicError: {
    double pm = std::max(p, kEpsilon);
    double d = std::log(pm + 1.0) - std::log(std::max(t, kEpsilon) + 1.0);
    grad = p >= kEpsilon ? 2.0 * d / (pm + 1.0) : 0.0;
    return d * d;
  }
  case PointwiseKind::huber: {
    double a = std::abs(e), delta = loss.delta;
    bool quadratic = a <= delta;
    grad = quadratic ? e : delta * signOf(e);
    return quadratic ? 0.5 * e * e : delta * a - 0.5 * delta * delta;
  }
  case PointwiseKind::logCosh: {
    // e + softplus(-2e) - log 2, which log cosh's evenness makes
    // |e| + log1p(exp(-2|e|)) - log 2: no overflow for any e.
    double a = std::abs(e);
    grad = std::tanh(e);
    return a + std::log1p(std::exp(-2.0 * a)) - std::log(2.0);
  }
  case PointwiseKind::binaryCrossentropy: {
    if (loss.fromLogits) {
      // tf.nn.sigmoid_cross_entropy_with_logits.
      grad = sigmoid(p) - t;
      return std::max(p, 0.0) - p * t + std::log1p(std::exp(-std::abs(p)));
    }
    double c = clip(p);
    grad =
        p >= kClipLow && p <= kClipHigh ? -t / c + (1.0 - t) / (1.0 - c) : 0.0;
    return -(t * std::log(c) + (1.0 - t) * std::log(1.0 - c));
  }
  case PointwiseKind::poisson:
    grad = 1.0 - t / (p + kEpsilon);
    return p - t * std::log(p + kEpsilon);
  case PointwiseKind::klDivergence: {
    double tc = std::min(std::max(t, kEpsilon), 1.0);
    double pc = std::min(std::max(p, kEpsilon), 1.0);
    grad = p >= kEpsilon && p <= 1.0 ? -tc / pc : 0.0;
    return tc * std::log(tc / pc);
  }
  case PointwiseKind::hinge: {
    double m = 1.0 - t * p;
    grad = m >= 0 ? -t : 0.0;
    return std::max(m, 0.0);
  }
  case PointwiseKind::squaredHinge: {
    double m = std::max(1.0 - t * p, 0.0);
    grad = -2.0 * t * m;
    return m * m;
  }
  case PointwiseKind::binaryAccuracy:
    // keras.metrics.binary_accuracy: equal(t, cast(p > 0.5)).
    grad = 0.0;
    return (p > 0.5 ? 1.0 : 0.0) == t ? 1.0 : 0.0;
  case PointwiseKind::binaryFocalCrossentropy: {
    // keras binary_focal_crossentropy: bce (from the logits when
    // from_logits: TensorFlow's nn.binary_crossentropy finds them behind
    // the sigmoid) times (1 - p_t)^gamma, p_t = t p + (1 - t)(1 - p),
    // times alpha t + (1 - alpha)(1 - t) with apply_class_balancing.
    double prob, bce, dbce, dprob;
    if (loss.fromLogits) {
      prob = sigmoid(p);
      bce = std::max(p, 0.0) - p * t + std::log1p(std::exp(-std::abs(p)));
      dbce = prob - t;
      dprob = prob * (1.0 - prob);
    } else {
      double c = clip(p);
      prob = p;
      bce = -(t * std::log(c) + (1.0 - t) * std::log(1.0 - c));
      dbce = p >= kClipLow && p <= kClipHigh ? -t / c + (1.0 - t) / (1.0 - c)
                                             : 0.0;
      dprob = 1.0;
    }
    double u = 1.0 - (t * prob + (1.0 - t) * (1.0 - prob));
    double focal = std::pow(u, loss.gamma);
    // tf.pow's gradient: gamma u^(gamma - 1).
    double dfocal =
        loss.gamma * std::pow(u, loss.gamma - 1.0) * (1.0 - 2.0 * t) * dprob;
    double w = loss.applyClassBalancing
                   ? t * loss.alpha + (1.0 - t) * (1.0 - loss.alpha)
                   : 1.0;
    grad = w * (dfocal * bce + focal * dbce);
    return w * focal * bce;
  }
  case PointwiseKind::categoricalFocalCrossentropy:
  case PointwiseKind::cosineSimilarity:
  case PointwiseKind::categoricalHinge:
    break; // not element-wise: rowValue
  }
  grad = std::numeric_limits<double>::quiet_NaN();
  return std::numeric_limits<double>::quiet_NaN();
}

/// The loss of one row `p`, `t` of `k` elements of a row-wise kind, and
/// d loss / dp into `grad` (TensorFlow's gradients of Keras' formulas).
double rowValue(const PointwiseLossConfig &loss, const double *p,
                const double *t, int64_t k, double *grad) {
  switch (loss.kind) {
  case PointwiseKind::categoricalFocalCrossentropy: {
    // keras categorical_focal_crossentropy: t smoothed towards 1 / k;
    // softmax when from_logits; q = p / sum p, o = clip(q, eps, 1 - eps);
    // the loss sum_j alpha (1 - o_j)^gamma (-t_j log o_j).
    const double ls = loss.labelSmoothing, a = loss.alpha, g = loss.gamma;
    Vec y(t, t + k), prob(p, p + k);
    for (double &v : y)
      v = v * (1.0 - ls) + ls / static_cast<double>(k);
    if (loss.fromLogits) {
      logSoftmaxRow(p, k, prob.data());
      for (double &v : prob)
        v = std::exp(v);
    }
    double sum = 0.0;
    for (double v : prob)
      sum += v;
    double value = 0.0, dot = 0.0;
    Vec dq(k);
    for (int64_t j = 0; j < k; ++j) {
      double q = prob[j] / sum, o = clip(q);
      value += a * std::pow(1.0 - o, g) * -y[j] * std::log(o);
      dq[j] = q >= kClipLow && q <= kClipHigh
                  ? a * y[j] *
                        (g * std::pow(1.0 - o, g - 1.0) * std::log(o) -
                         std::pow(1.0 - o, g) / o)
                  : 0.0;
      dot += dq[j] * q;
    }
    // Through q = prob / sum prob, then the softmax.
    double back = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      grad[j] = (dq[j] - dot) / sum;
      back += grad[j] * prob[j];
    }
    if (loss.fromLogits)
      for (int64_t j = 0; j < k; ++j)
        grad[j] = prob[j] * (grad[j] - back);
    return value;
  }
  case PointwiseKind::cosineSimilarity: {
    // keras cosine_similarity: -sum(normalize(t) * normalize(p)), with
    // normalize(x) = x * min(rsqrt(sum x^2), 1 / eps).
    double tt = 0.0, pp = 0.0;
    for (int64_t j = 0; j < k; ++j) {
      tt += t[j] * t[j];
      pp += p[j] * p[j];
    }
    double at = std::min(1.0 / std::sqrt(tt), 1.0 / kEpsilon);
    double rp = 1.0 / std::sqrt(pp), ap = std::min(rp, 1.0 / kEpsilon);
    double dot = 0.0;
    for (int64_t j = 0; j < k; ++j)
      dot += t[j] * at * p[j] * ap;
    // tf.minimum passes the gradient to rsqrt where it is the smaller.
    bool throughNorm = rp <= 1.0 / kEpsilon;
    for (int64_t j = 0; j < k; ++j)
      grad[j] = ap * (-t[j] * at + (throughNorm ? dot * p[j] * ap : 0.0));
    return -dot;
  }
  case PointwiseKind::categoricalHinge: {
    // keras categorical_hinge: max(max_j (1 - t_j) p_j - sum t p + 1, 0);
    // reduce_max's gradient is shared among the maxima.
    double pos = 0.0, neg = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < k; ++j) {
      pos += t[j] * p[j];
      neg = std::max(neg, (1.0 - t[j]) * p[j]);
    }
    double m = neg - pos + 1.0;
    int64_t ties = 0;
    for (int64_t j = 0; j < k; ++j)
      ties += (1.0 - t[j]) * p[j] == neg;
    for (int64_t j = 0; j < k; ++j)
      grad[j] = m >= 0 ? -t[j] + ((1.0 - t[j]) * p[j] == neg
                                      ? (1.0 - t[j]) / static_cast<double>(ties)
                                      : 0.0)
                       : 0.0;
    return std::max(m, 0.0);
  }
  default:
    break;
  }
  std::fill(grad, grad + k, std::numeric_limits<double>::quiet_NaN());
  return std::numeric_limits<double>::quiet_NaN();
}

/// ins: predictions [B, ..., K], targets (the same shape) and an optional
/// sample_weight [B]; out: the weighted loss (a scalar) or its gradient by
/// the predictions (the predictions' shape).
Status pointwiseLossKernel(const char *kName, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           bool gradient) {
  CHECK_ARITY(2, 3, 1);
  PointwiseLossConfig loss;
  if (Status s = readPointwiseLossConfig(kName, cfg, gradient, loss); !s)
    return s;
  const TensorRef &pt = ins[0], &tt = ins[1];
  REQUIRE(!pt.shape.empty(), "needs predictions [B, ..., K], got a scalar");
  REQUIRE(tt.shape == pt.shape, "targets " + shapeText(tt.shape) +
                                    " do not match predictions " +
                                    shapeText(pt.shape));
  const int64_t n = pt.elements(), rows = pt.shape[0];
  REQUIRE(n > 0, "empty predictions " + shapeText(pt.shape));
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  if (gradient)
    REQUIRE(outs[0].shape == pt.shape,
            "predictions_grad " + shapeText(outs[0].shape) +
                " does not match predictions " + shapeText(pt.shape));
  else
    REQUIRE(outs[0].elements() == 1,
            "the loss must be a scalar, got " + shapeText(outs[0].shape));
  Vec p = load(pt), t = load(tt);
  if (loss.binarySmoothing())
    for (double &v : t)
      v = v * (1.0 - loss.labelSmoothing) + 0.5 * loss.labelSmoothing;
  // keras convert_binary_labels_to_hinge: 0/1 targets become -1/1 when
  // every target of the launch is 0 or 1.
  if (loss.hingeLabels()) {
    bool binary = std::all_of(t.begin(), t.end(),
                              [](double v) { return v == 0.0 || v == 1.0; });
    if (binary)
      for (double &v : t)
        v = 2.0 * v - 1.0;
  }
  const int64_t perRow = n / rows;
  if (loss.rowWise()) {
    // One loss a row of the last axis, their mean over the rows.
    const int64_t k = pt.shape.back(), lossRows = n / k;
    Vec grad(n);
    double total = 0.0;
    for (int64_t r = 0; r < lossRows; ++r)
      total += w[r * k / perRow] *
               rowValue(loss, &p[r * k], &t[r * k], k, &grad[r * k]);
    if (gradient) {
      for (int64_t i = 0; i < n; ++i)
        grad[i] *= w[i / perRow] / static_cast<double>(lossRows);
      store(outs[0], grad);
    } else {
      store(outs[0], Vec{total / static_cast<double>(lossRows)});
    }
    return Status::ok();
  }
  const double divisor =
      static_cast<double>(loss.sumsLastAxis() ? n / pt.shape.back() : n);
  Vec grad(gradient ? n : 0);
  double total = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double g;
    double f = pointwiseValue(loss, p[i], t[i], g);
    if (gradient)
      grad[i] = w[i / perRow] * g / divisor;
    else
      total += w[i / perRow] * f;
  }
  if (gradient)
    store(outs[0], grad);
  else
    store(outs[0], Vec{total / divisor});
  return Status::ok();
}

Status pointwiseLoss(const KernelContext &, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs) {
  return pointwiseLossKernel("pointwise_loss", cfg, ins, outs, false);
}
Status pointwiseLossGrad(const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs) {
  return pointwiseLossKernel("pointwise_loss_grad", cfg, ins, outs, true);
}

//===----------------------------------------------------------------------===//
// overlap_sums, overlap_loss, overlap_loss_grad: Keras' dice and tversky
// (axis=None), one ratio of sums over the whole batch
//===----------------------------------------------------------------------===//

/// ins: predictions [B, ...], targets (the same shape), an optional
/// sample_weight [B]; out: [sum t p, sum t, sum p] over the rows whose
/// weight is not 0, sum w, B.
Status overlapSums(const KernelContext &, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "overlap_sums";
  CHECK_ARITY(2, 3, 1);
  const TensorRef &pt = ins[0], &tt = ins[1];
  REQUIRE(!pt.shape.empty(), "needs predictions [B, ...], got a scalar");
  REQUIRE(tt.shape == pt.shape, "targets " + shapeText(tt.shape) +
                                    " do not match predictions " +
                                    shapeText(pt.shape));
  REQUIRE(outs[0].elements() == OverlapLossConfig::kSums,
          "the sums must be [5], got " + shapeText(outs[0].shape));
  const int64_t n = pt.elements(), rows = pt.shape[0];
  REQUIRE(rows > 0, "empty predictions " + shapeText(pt.shape));
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  Vec p = load(pt), t = load(tt), sums(OverlapLossConfig::kSums, 0.0);
  const int64_t perRow = n / rows;
  for (int64_t i = 0; i < n; ++i) {
    if (w[i / perRow] == 0.0)
      continue;
    sums[0] += t[i] * p[i];
    sums[1] += t[i];
    sums[2] += p[i];
  }
  for (double v : w)
    sums[3] += v;
  sums[4] = static_cast<double>(rows);
  store(outs[0], sums);
  return Status::ok();
}

/// ins: the sums; out: the loss, times the weights' mean (keras
/// reduce_weighted_values of a scalar loss).
Status overlapLoss(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "overlap_loss";
  CHECK_ARITY(1, 1, 1);
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  REQUIRE(ins[0].elements() == OverlapLossConfig::kSums,
          "needs overlap_sums' [5], got " + shapeText(ins[0].shape));
  REQUIRE(outs[0].elements() == 1,
          "the loss must be a scalar, got " + shapeText(outs[0].shape));
  Vec sums = load(ins[0]);
  store(outs[0], Vec{loss.value(sums.data())});
  return Status::ok();
}

/// ins: targets, the sums, an optional sample_weight [B]; out: d loss / d
/// predictions (the targets' shape; 0 in the rows of weight 0), times
/// `replicas`.
Status overlapLossGrad(const KernelContext &, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "overlap_loss_grad";
  CHECK_ARITY(2, 3, 1);
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  REQUIRE(ins[1].elements() == OverlapLossConfig::kSums,
          "needs overlap_sums' [5], got " + shapeText(ins[1].shape));
  REQUIRE(outs[0].shape == ins[0].shape,
          "predictions_grad " + shapeText(outs[0].shape) +
              " does not match targets " + shapeText(ins[0].shape));
  REQUIRE(!ins[0].shape.empty() && ins[0].shape[0] > 0,
          "needs targets [B, ...], got " + shapeText(ins[0].shape));
  const int64_t rows = ins[0].shape[0];
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  Vec t = load(ins[0]), sums = load(ins[1]);
  double slope, offset;
  loss.gradient(sums.data(), slope, offset);
  const double n = static_cast<double>(loss.replicas);
  const int64_t perRow = static_cast<int64_t>(t.size()) / rows;
  for (int64_t i = 0; i < static_cast<int64_t>(t.size()); ++i)
    t[i] = w[i / perRow] == 0.0 ? 0.0 : n * (slope * t[i] + offset);
  store(outs[0], t);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// sample_overlap_loss, sample_overlap_loss_grad: Keras' dice and tversky
// with an axis, one ratio per sample and position left
//===----------------------------------------------------------------------===//

/// Each group's sums [I, T, P, 1, 1] (weightMean 1: the weights enter
/// per group), and the groups.
Status overlapGroupSums(const char *kName, const KernelConfig &cfg,
                        const Tensors &ins, OverlapGroups &groups,
                        std::vector<std::array<double, 5>> &sums) {
  const TensorRef &pt = ins[0], &tt = ins[1];
  REQUIRE(tt.shape == pt.shape, "targets " + shapeText(tt.shape) +
                                    " do not match predictions " +
                                    shapeText(pt.shape));
  if (Status s =
          makeOverlapGroups(kName, pt.shape, cfg.getInts("axis"), groups);
      !s)
    return s;
  Vec p = load(pt), t = load(tt);
  sums.assign(static_cast<size_t>(groups.groups), {0, 0, 0, 1, 1});
  for (int64_t i = 0; i < pt.elements(); ++i) {
    std::array<double, 5> &g = sums[static_cast<size_t>(groups.groupOf(i))];
    g[0] += t[i] * p[i];
    g[1] += t[i];
    g[2] += p[i];
  }
  return Status::ok();
}

/// ins: predictions [B, ...], targets, [sample_weight [B]]; out: the mean
/// over the groups of w_b times the group's loss.
Status sampleOverlapLoss(const KernelContext &, const KernelConfig &cfg,
                         const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "sample_overlap_loss";
  CHECK_ARITY(2, 3, 1);
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  REQUIRE(outs[0].elements() == 1,
          "the loss must be a scalar, got " + shapeText(outs[0].shape));
  OverlapGroups groups;
  std::vector<std::array<double, 5>> sums;
  if (Status s = overlapGroupSums(kName, cfg, ins, groups, sums); !s)
    return s;
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, ins[0].shape[0], w); !s)
    return s;
  double total = 0;
  for (int64_t g = 0; g < groups.groups; ++g)
    total += w[g / groups.perSample] * loss.value(sums[g].data());
  store(outs[0], Vec{total / static_cast<double>(groups.groups)});
  return Status::ok();
}

/// ins: predictions, targets, [sample_weight [B]]; out: d loss / d
/// predictions, a t + b of each element's group, times w_b / groups.
Status sampleOverlapLossGrad(const KernelContext &, const KernelConfig &cfg,
                             const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "sample_overlap_loss_grad";
  CHECK_ARITY(2, 3, 1);
  OverlapLossConfig loss;
  if (Status s = readOverlapLossConfig(kName, cfg, loss); !s)
    return s;
  REQUIRE(outs[0].shape == ins[0].shape,
          "predictions_grad " + shapeText(outs[0].shape) +
              " does not match predictions " + shapeText(ins[0].shape));
  OverlapGroups groups;
  std::vector<std::array<double, 5>> sums;
  if (Status s = overlapGroupSums(kName, cfg, ins, groups, sums); !s)
    return s;
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, ins[0].shape[0], w); !s)
    return s;
  Vec t = load(ins[1]), dp(t.size());
  std::vector<double> slope(static_cast<size_t>(groups.groups)),
      offset(static_cast<size_t>(groups.groups));
  for (int64_t g = 0; g < groups.groups; ++g) {
    loss.gradient(sums[g].data(), slope[g], offset[g]);
    double scale = w[g / groups.perSample] / static_cast<double>(groups.groups);
    slope[g] *= scale;
    offset[g] *= scale;
  }
  for (int64_t i = 0; i < static_cast<int64_t>(t.size()); ++i) {
    int64_t g = groups.groupOf(i);
    dp[i] = slope[g] * t[i] + offset[g];
  }
  store(outs[0], dp);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// kept_rows, ignore_class: Keras' SparseCategoricalCrossentropy(ignore_class)
//===----------------------------------------------------------------------===//

/// ins: labels [B], metric_weight [B]; out: [K, R], the rows that hold
/// examples (metric weight not 0) and those of them whose label is kept.
Status keptRows(const KernelContext &, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "kept_rows";
  CHECK_ARITY(2, 2, 1);
  REQUIRE(ins[1].elements() == ins[0].elements(),
          "metric_weight must be [B], one per label");
  REQUIRE(outs[0].elements() == 2,
          "the counts must be [2], got " + shapeText(outs[0].shape));
  const double ignored = static_cast<double>(cfg.getInt("ignore_class"));
  Vec labels = load(ins[0]), w = load(ins[1]);
  double kept = 0, rows = 0;
  for (size_t r = 0; r < labels.size(); ++r) {
    if (w[r] == 0.0)
      continue;
    rows += 1;
    kept += labels[r] != ignored;
  }
  store(outs[0], Vec{kept, rows});
  return Status::ok();
}

/// ins: labels [B], sample_weight [B], kept_rows' [K, R]; outs: the labels
/// with the ignored ones 0, and the weights with theirs 0 and the others
/// times R / K (not scaled with sum_reduction).
Status ignoreClass(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "ignore_class";
  CHECK_ARITY(3, 3, 2);
  const int64_t rows = ins[0].elements();
  REQUIRE(ins[1].elements() == rows && outs[0].elements() == rows &&
              outs[1].elements() == rows,
          "labels, sample_weight and the outputs must be [B]");
  REQUIRE(ins[2].elements() == 2, "needs kept_rows' [2]");
  const double ignored = static_cast<double>(cfg.getInt("ignore_class"));
  Vec labels = load(ins[0]), w = load(ins[1]), counts = load(ins[2]);
  const double scale = truthy(cfg, "sum_reduction") ? 1.0
                       : counts[0] == 0.0           ? 0.0
                                                    : counts[1] / counts[0];
  for (int64_t r = 0; r < rows; ++r) {
    bool drop = labels[r] == ignored;
    labels[r] = drop ? 0.0 : labels[r];
    w[r] = drop ? 0.0 : w[r] * scale;
  }
  store(outs[0], labels);
  store(outs[1], w);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// confusion_counts: Keras' Precision, Recall and AUC state of a batch
//===----------------------------------------------------------------------===//

Status confusionCountsKernel(const KernelContext &, const KernelConfig &cfg,
                             const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "confusion_counts";
  CHECK_ARITY(2, 3, 1);
  ConfusionCountsConfig config;
  if (Status s = readConfusionCountsConfig(kName, cfg, config); !s)
    return s;
  const TensorRef &p = ins[0], &t = ins[1];
  REQUIRE(!p.shape.empty() && p.shape[0] > 0,
          "needs predictions [B, ...], got " + shapeText(p.shape));
  REQUIRE(t.shape == p.shape, "labels " + shapeText(t.shape) +
                                  " do not match predictions " +
                                  shapeText(p.shape));
  REQUIRE(outs[0].elements() == 4 * config.columns(),
          "the counts must be [4, " + std::to_string(config.columns()) +
              "], got " + shapeText(outs[0].shape));
  // Rows along the last axis (Keras' top_k and class_id take it), each
  // example's weight over its rows; predictions [B] are B rows of one.
  const int64_t examples = p.shape[0],
                width = p.shape.size() > 1 ? p.shape.back() : 1;
  const int64_t rows = p.elements() / width, rowsPerWeight = rows / examples;
  REQUIRE(config.classId < width, "class_id " + std::to_string(config.classId) +
                                      " is past the " + std::to_string(width) +
                                      " columns");
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, examples, w); !s)
    return s;
  auto floats = [](const Vec &v) {
    return std::vector<float>(v.begin(), v.end());
  };
  std::vector<float> pf = floats(load(p)), tf = floats(load(t)), wf = floats(w),
                     counts(4 * config.columns());
  confusionCounts(config, pf.data(), tf.data(), wf.data(), rows, rowsPerWeight,
                  width, counts.data());
  store(outs[0], Vec(counts.begin(), counts.end()));
  return Status::ok();
}

/// The fraction of rows whose arg-max (first maximum) is the label's; with
/// sample_weight, sum_i w_i hit_i / B.
Status accuracy(const KernelContext &, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "accuracy";
  CHECK_ARITY(2, 3, 1);
  REQUIRE(!ins[0].shape.empty(), "needs [B, C] predictions");
  REQUIRE(outs[0].elements() == 1, "accuracy must be a scalar");
  int64_t c = ins[0].shape.back(), rows = ins[0].elements() / c;
  REQUIRE(rows > 0, "empty batch");
  Vec p = load(ins[0]), labels = load(ins[1]);
  bool oneHotLabels = labels.size() == p.size() && c > 1;
  REQUIRE(oneHotLabels || static_cast<int64_t>(labels.size()) == rows,
          "labels match neither [B, C] nor [B]");
  auto argmax = [&](const double *v) {
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j)
      if (v[j] > v[best])
        best = j;
    return best;
  };
  Vec w;
  if (Status s = sampleWeights(kName, ins, 2, rows, w); !s)
    return s;
  const int64_t k = cfg.getInt("k", 1);
  REQUIRE(k >= 1, "k must be at least 1");
  // k > 1: Keras' in_top_k, fewer than k classes scoring more than the
  // label (a NaN score at the label is no hit).
  auto inTopK = [&](const double *v, int64_t label) {
    if (label < 0 || label >= c || std::isnan(v[label]))
      return false;
    int64_t above = 0;
    for (int64_t j = 0; j < c; ++j)
      above += v[j] > v[label];
    return above < k;
  };
  double hits = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label =
        oneHotLabels ? argmax(&labels[r * c]) : std::llround(labels[r]);
    if (k == 1 ? argmax(&p[r * c]) == label : inTopK(&p[r * c], label))
      hits += w[r];
  }
  store(outs[0], Vec{hits / rows});
  return Status::ok();
}

/// sqrt of the sum of squares over every element of every input.
Status globalNorm(const KernelContext &, const KernelConfig &,
                  const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "global_norm";
  REQUIRE(!ins.empty() && outs.size() == 1, "needs inputs and one output");
  REQUIRE(outs[0].elements() == 1, "the norm must be a scalar");
  double sum = 0.0;
  for (const TensorRef &t : ins)
    for (double v : load(t))
      sum += v * v;
  store(outs[0], Vec{std::sqrt(sum)});
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Optimizer update (Keras 3, keras/src/optimizers/{sgd,adam,rmsprop}.py)
//
// ins: N params, N grads, N*k slots (grouped per variable); outs: N params,
// N*k slots, usually the same buffers.
//
// SGD (k = 1 when momentum > 0, else 0):
//   momentum:  v = momentum * v - lr * g
//              w += v                               (nesterov: w += momentum
//              * v - lr * g, with the new v)
//   none:      w -= lr * g
// Adam (slots m, v [, vhat]; t = ctx.step, 1 on the first update):
//   m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
//   amsgrad: vhat = max(vhat, v), used in place of v
//   alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)
//   w -= alpha * m / (sqrt(v) + epsilon)
// RMSprop (slots rms [, momentum if momentum > 0] [, mg if centered]):
//   rms = rho * rms + (1 - rho) * g^2
//   centered: mg = rho * mg + (1 - rho) * g; denom = rms - mg^2 + epsilon
//   else:     denom = rms + epsilon
//   increment = lr * g / sqrt(denom)
//   momentum > 0: mom = momentum * mom + increment; w -= mom
//   else:         w -= increment
// Adagrad (slot accumulator, starting at initial_accumulator_value):
//   acc += g^2;  w -= lr * g / sqrt(acc + epsilon)
// Adamax (slots m, u):
//   m += (g - m) * (1 - beta_1);  u = max(beta_2 * u, |g|)
//   w -= lr * m / ((1 - beta_1^t) * (u + epsilon))
// Nadam (slots m, v; keras/src/optimizers/nadam.py):
//   u_t = beta_1 * (1 - 0.5 * 0.96^t), u_t1 the same at t + 1,
//   P = u_1 * ... * u_t (Keras' u_product), P1 = P * u_t1
//   m += (g - m) * (1 - beta_1);  v += (g^2 - v) * (1 - beta_2)
//   m_hat = u_t1 * m / (1 - P1) + (1 - u_t) * g / (1 - P)
//   v_hat = v / (1 - beta_2^t);  w -= lr * m_hat / (sqrt(v_hat) + epsilon)
// Before any of them (keras/src/optimizers/base_optimizer.py, apply):
//   clipnorm c:        g = g * c / max(norm, c), norm = the variable's
//                      gradient norm (ins: one norm per variable at the end)
//   global_clipnorm c: g = g * (c * min(1/norm, 1/c) + (norm - norm)), norm
//                      the global norm (the same input for every variable)
//   clipvalue c:       g = clip(g, -c, c)
//   weight_decay wd:   w = w - w * wd * lr
// lr is the schedule's value at the step before this one (Keras'
// iterations), when the optimizer has a schedule (LearningRateSchedule.h).
// gradient_accumulation_steps N (one more slot, the accumulator, after the
// optimizer's): steps that are not a multiple of N add g to it and change
// nothing else; every N-th step applies the mean (g + acc) / N (clipped by
// value, with weight decay) and resets it, with t = step / N (Keras'
// iterations count updates) but lr still at step - 1 (the schedule reads
// Keras' raw _iterations).
// loss_scaled (Keras' LossScaleOptimizer; ins end with scale, norm,
// iterations, one element each): a step whose norm is not finite changes
// nothing; otherwise g = g / (scale / replicas) (a clipping norm likewise;
// replicas 1 unless dist-replicate set it) and t =
// iterations + 1, lr at iterations (the updates the inner optimizer has
// applied, which skipped steps do not count).
//===----------------------------------------------------------------------===//

Status optimizerUpdate(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &all, const Tensors &outs) {
  static constexpr const char *kName = "optimizer_update";
  std::string kind = cfg.getString("optimizer");
  // The learning rate of this step: a schedule's value at Keras'
  // iterations (the step before this update), or the constant rate.
  LearningRateSchedule schedule;
  std::string scheduleError;
  REQUIRE(scheduleFromConfig(cfg, schedule, scheduleError), scheduleError);
  // Gradient accumulation (N >= 2): only every N-th step updates, and the
  // bias corrections count updates (Keras' iterations are the steps
  // floor-divided by N); the schedule still reads the raw step count
  // (Keras' _get_current_learning_rate reads _iterations).
  int64_t accumulation = cfg.getInt("gradient_accumulation_steps", 0);
  REQUIRE(accumulation == 0 || accumulation >= 2,
          "gradient_accumulation_steps must be 0 or >= 2, got " +
              std::to_string(accumulation));
  bool applies = accumulation == 0 || ctx.step % accumulation == 0;
  int64_t step = accumulation ? ctx.step / accumulation : ctx.step;
  int64_t scheduleStep = ctx.step - 1;
  // Dynamic loss scaling: the trailing (scale, norm, iterations).
  bool lossScaled = cfg.getInt("loss_scaled", 0) != 0;
  REQUIRE(!(lossScaled && accumulation),
          "loss scaling with gradient accumulation is not supported");
  Tensors ins = all;
  double lossScale = 1.0;
  if (lossScaled) {
    REQUIRE(ins.size() >= 3, "loss_scaled takes scale, norm and iterations");
    for (size_t i = ins.size() - 3; i < ins.size(); ++i)
      REQUIRE(ins[i].elements() == 1,
              "loss_scaled: scale, norm and iterations hold one element each");
    // The replicas' averaged gradients carry scale / replicas.
    int64_t replicas = cfg.getInt("replicas", 1);
    REQUIRE(replicas >= 1, "replicas must be >= 1");
    lossScale = static_cast<double>(static_cast<float>(
        load(ins[ins.size() - 3])[0] / static_cast<double>(replicas)));
    double norm = load(ins[ins.size() - 2])[0];
    auto iterations = static_cast<int64_t>(load(ins[ins.size() - 1])[0]);
    ins.resize(ins.size() - 3);
    applies = std::isfinite(norm);
    step = iterations + 1;
    scheduleStep = iterations;
  }
  double lr = ctx.learningRate >= 0 ? ctx.learningRate
                                    : learningRateAt(schedule, scheduleStep);
  double momentum = cfg.getFloat("momentum", 0.0);
  int64_t k = 0;
  bool amsgrad = false, centered = false;
  if (kind == "sgd") {
    k = momentum > 0 ? 1 : 0;
  } else if (kind == "adam") {
    amsgrad = cfg.getFloat("amsgrad", 0.0) != 0.0;
    k = amsgrad ? 3 : 2;
  } else if (kind == "rmsprop") {
    centered = cfg.getFloat("centered", 0.0) != 0.0;
    k = 1 + (momentum > 0 ? 1 : 0) + (centered ? 1 : 0);
  } else if (kind == "adagrad") {
    k = 1;
  } else if (kind == "adamax" || kind == "nadam") {
    k = 2;
  } else {
    REQUIRE(false, "unknown optimizer '" + kind + "'");
  }
  double clipnorm = cfg.getFloat("clipnorm", 0.0),
         globalClipnorm = cfg.getFloat("global_clipnorm", 0.0),
         clipvalue = cfg.getFloat("clipvalue", 0.0),
         weightDecay = cfg.getFloat("weight_decay", 0.0);
  // Clipping by a norm adds one norm input per variable.
  bool byNorm = clipnorm > 0 || globalClipnorm > 0;
  REQUIRE(!(byNorm && accumulation), "gradient accumulation clips by "
                                     "clipvalue only, not by a norm");
  // The optimizer's k slots, then the gradient accumulator: kAll in all.
  int64_t kAll = k + (accumulation ? 1 : 0);
  int64_t perVariable = 2 + kAll + (byNorm ? 1 : 0);
  REQUIRE(!ins.empty() && ins.size() % perVariable == 0,
          std::to_string(ins.size()) +
              " inputs do not split into params, grads" +
              (byNorm ? ", " : " and ") + std::to_string(kAll) + " slot(s)" +
              (byNorm ? " and a norm" : "") + " per variable");
  size_t n = ins.size() / perVariable;
  CHECK_ARITY(ins.size(), ins.size(), n * (1 + kAll));
  for (size_t v = 0; byNorm && v < n; ++v)
    REQUIRE(ins[(2 + kAll) * n + v].elements() == 1,
            "variable " + std::to_string(v) + ": the norm is not a scalar");
  for (size_t v = 0; v < n; ++v) {
    int64_t size = ins[v].elements();
    REQUIRE(ins[n + v].elements() == size && outs[v].elements() == size,
            "variable " + std::to_string(v) + ": gradient size differs");
    for (int64_t s = 0; s < kAll; ++s)
      REQUIRE(ins[2 * n + v * kAll + s].elements() == size &&
                  outs[n + v * kAll + s].elements() == size,
              "variable " + std::to_string(v) + ": slot size differs");
  }
  double t = static_cast<double>(step);
  for (size_t v = 0; v < n; ++v) {
    Vec w = load(ins[v]), g = load(ins[n + v]);
    std::vector<Vec> slots;
    for (int64_t s = 0; s < kAll; ++s)
      slots.push_back(load(ins[2 * n + v * kAll + s]));
    if (accumulation) {
      // Keras (base_optimizer.py, _backend_apply_gradients): add to the
      // accumulator, or apply the mean of the N gradients and reset it.
      Vec &sum = slots[k];
      if (!applies) {
        for (size_t i = 0; i < g.size(); ++i)
          sum[i] += g[i];
        store(outs[v], w);
        for (int64_t s = 0; s < kAll; ++s)
          store(outs[n + v * kAll + s], slots[s]);
        continue;
      }
      for (size_t i = 0; i < g.size(); ++i) {
        g[i] = (g[i] + sum[i]) / static_cast<double>(accumulation);
        sum[i] = 0.0;
      }
    }
    if (lossScaled) {
      // Keras' _stateful_handle_non_finite_grads: nothing moves.
      if (!applies) {
        store(outs[v], w);
        for (int64_t s = 0; s < kAll; ++s)
          store(outs[n + v * kAll + s], slots[s]);
        continue;
      }
      for (double &gi : g)
        gi /= lossScale;
    }
    if (byNorm) {
      // The norm of the unscaled gradients under loss scaling.
      double norm = load(ins[(2 + kAll) * n + v])[0] / lossScale;
      if (clipnorm > 0) {
        for (double &gi : g)
          gi = gi * clipnorm / std::max(norm, clipnorm);
      } else {
        double scale =
            globalClipnorm * std::min(1.0 / norm, 1.0 / globalClipnorm) +
            (norm - norm);
        for (double &gi : g)
          gi *= scale;
      }
    } else if (clipvalue > 0) {
      for (double &gi : g)
        gi = std::clamp(gi, -clipvalue, clipvalue);
    }
    if (weightDecay > 0)
      for (double &wi : w)
        wi -= wi * weightDecay * lr;
    if (kind == "sgd") {
      bool nesterov = cfg.getFloat("nesterov", 0.0) != 0.0;
      for (size_t i = 0; i < w.size(); ++i) {
        if (k == 0) {
          w[i] -= lr * g[i];
          continue;
        }
        double &m = slots[0][i];
        m = momentum * m - lr * g[i];
        w[i] += nesterov ? momentum * m - lr * g[i] : m;
      }
    } else if (kind == "adam") {
      double b1 = cfg.getFloat("beta_1", 0.9),
             b2 = cfg.getFloat("beta_2", 0.999);
      double eps = cfg.getFloat("epsilon", 1e-7);
      double alpha =
          lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
      for (size_t i = 0; i < w.size(); ++i) {
        double &m = slots[0][i], &vv = slots[1][i];
        m += (g[i] - m) * (1.0 - b1);
        vv += (g[i] * g[i] - vv) * (1.0 - b2);
        double second = vv;
        if (amsgrad) {
          slots[2][i] = std::max(slots[2][i], vv);
          second = slots[2][i];
        }
        w[i] -= alpha * m / (std::sqrt(second) + eps);
      }
    } else if (kind == "adagrad") {
      double eps = cfg.getFloat("epsilon", 1e-7);
      for (size_t i = 0; i < w.size(); ++i) {
        double &acc = slots[0][i];
        acc += g[i] * g[i];
        w[i] -= lr * g[i] / std::sqrt(acc + eps);
      }
    } else if (kind == "adamax") {
      double b1 = cfg.getFloat("beta_1", 0.9),
             b2 = cfg.getFloat("beta_2", 0.999),
             eps = cfg.getFloat("epsilon", 1e-7);
      double correction = 1.0 - std::pow(b1, t);
      for (size_t i = 0; i < w.size(); ++i) {
        double &m = slots[0][i], &u = slots[1][i];
        m += (g[i] - m) * (1.0 - b1);
        u = std::max(b2 * u, std::abs(g[i]));
        w[i] -= lr * m / (correction * (u + eps));
      }
    } else if (kind == "nadam") {
      double b1 = cfg.getFloat("beta_1", 0.9),
             b2 = cfg.getFloat("beta_2", 0.999),
             eps = cfg.getFloat("epsilon", 1e-7);
      double ut = nadamMomentumCache(b1, step),
             ut1 = nadamMomentumCache(b1, step + 1);
      double product = nadamUProduct(b1, step), product1 = product * ut1;
      double vCorrection = 1.0 - std::pow(b2, t);
      for (size_t i = 0; i < w.size(); ++i) {
        double &m = slots[0][i], &vv = slots[1][i];
        m += (g[i] - m) * (1.0 - b1);
        vv += (g[i] * g[i] - vv) * (1.0 - b2);
        double mHat =
            ut1 * m / (1.0 - product1) + (1.0 - ut) * g[i] / (1.0 - product);
        double vHat = vv / vCorrection;
        w[i] -= lr * mHat / (std::sqrt(vHat) + eps);
      }
    } else {
      double rho = cfg.getFloat("rho", 0.9),
             eps = cfg.getFloat("epsilon", 1e-7);
      int momSlot = momentum > 0 ? 1 : -1;
      int mgSlot = centered ? (momentum > 0 ? 2 : 1) : -1;
      for (size_t i = 0; i < w.size(); ++i) {
        double &rms = slots[0][i];
        rms = rho * rms + (1.0 - rho) * g[i] * g[i];
        double denom = rms + eps;
        if (mgSlot >= 0) {
          double &mg = slots[mgSlot][i];
          mg = rho * mg + (1.0 - rho) * g[i];
          denom = rms - mg * mg + eps;
        }
        double increment = lr * g[i] / std::sqrt(denom);
        if (momSlot >= 0) {
          double &mom = slots[momSlot][i];
          mom = momentum * mom + increment;
          w[i] -= mom;
        } else {
          w[i] -= increment;
        }
      }
    }
    store(outs[v], w);
    for (int64_t s = 0; s < kAll; ++s)
      store(outs[n + v * kAll + s], slots[s]);
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Fused elementwise chains
//===----------------------------------------------------------------------===//

Status elementwise(const KernelContext &, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs) {
  static constexpr const char *kName = "elementwise";
  CHECK_ARITY(1, 1 << 20, 1);
  ElementwiseBody program;
  std::string error;
  REQUIRE(program.parse(cfg.getString("body"), error), "body: " + error);
  REQUIRE(program.numInputs() <= static_cast<int>(ins.size()),
          "body reads a" + std::to_string(program.numInputs() - 1) +
              " but the launch has " + std::to_string(ins.size()) + " inputs");
  int64_t size = outs[0].elements();
  std::vector<Vec> in;
  for (const TensorRef &t : ins) {
    REQUIRE(t.elements() == size, "operands differ in size");
    in.push_back(load(t));
  }
  Vec y(size), args(ins.size()), scratch;
  for (int64_t i = 0; i < size; ++i) {
    for (size_t a = 0; a < ins.size(); ++a)
      args[a] = in[a][i];
    y[i] = evaluateElementwise(program, args.data(), scratch);
  }
  store(outs[0], y);
  return Status::ok();
}

struct Entry {
  const char *name;
  Status (*fn)(const KernelContext &, const KernelConfig &, const Tensors &,
               const Tensors &);
};

const Entry kKernels[] = {
    {"conv2d", conv2d},
    {"fused_conv2d", fusedConv2d},
    {"fused_conv2d_pool", fusedConv2dPool},
    {"max_pool2d_argmax_grad", maxPool2dArgmaxGrad},
    {"fused_conv2d_pool_grad_kernel", fusedConv2dPoolGradKernel},
    {"conv2d_grad_input", conv2dGradInput},
    {"conv2d_grad_kernel", conv2dGradKernel},
    {"max_pool2d", maxPool2d},
    {"max_pool2d_grad", maxPool2dGrad},
    {"avg_pool2d", avgPool2d},
    {"avg_pool2d_grad", avgPool2dGrad},
    {"global_avg_pool2d", globalAvgPool2d},
    {"global_avg_pool2d_grad", globalAvgPool2dGrad},
    {"dense", dense},
    {"fused_dense", fusedDense},
    {"dense_grad_input", denseGradInput},
    {"dense_grad_kernel", denseGradKernel},
    {"bias_add", biasAdd},
    {"bias_add_grad", biasAddGrad},
    {"relu", relu},
    {"sigmoid", sigmoidKernel},
    {"tanh", tanhKernel},
    {"elu", elu},
    {"leaky_relu", leakyRelu},
    {"gelu", gelu},
    {"relu_grad", reluGrad},
    {"sigmoid_grad", sigmoidGrad},
    {"tanh_grad", tanhGrad},
    {"elu_grad", eluGrad},
    {"leaky_relu_grad", leakyReluGrad},
    {"gelu_grad", geluGrad},
    {"clipped_relu", clippedReluKernel},
    {"silu", silu},
    {"hard_sigmoid", hardSigmoid},
    {"hard_silu", hardSilu},
    {"scale_shift", scaleShift},
    {"clipped_relu_grad", clippedReluGrad},
    {"silu_grad", siluGrad},
    {"hard_sigmoid_grad", hardSigmoidGrad},
    {"hard_silu_grad", hardSiluGrad},
    {"softmax", softmax},
    {"softmax_grad", softmaxGrad},
    {"dropout", dropout},
    {"dropout_grad", dropoutGrad},
    {"random_image_transform", randomImageTransform},
    {"random_image_transform_grad", randomImageTransformGrad},
    {"random_contrast", randomContrast},
    {"random_contrast_grad", randomContrastGrad},
    {"broadcast", broadcast},
    {"sum_to", sumTo},
    {"normalize", normalize},
    {"channel_scale_shift", channelScaleShift},
    {"flatten", flatten},
    {"reshape", reshape},
    {"cast", castKernel},
    {"add", add},
    {"multiply", multiply},
    {"maximum", maximum},
    {"maximum_grad", maximumGrad},
    {"concatenate", concatenate},
    {"slice", slice},
    {"pad", pad},
    {"transpose", transpose},
    {"batch_norm", batchNorm},
    {"batch_norm_train", batchNormTrain},
    {"batch_norm_grad", batchNormGrad},
    {"batch_norm_inference_grad", batchNormInferenceGrad},
    {"channel_scale", channelScale},
    {"layer_norm", layerNorm},
    {"layer_norm_grad", layerNormGrad},
    {"categorical_crossentropy", categoricalCrossentropy},
    {"sparse_categorical_crossentropy", sparseCategoricalCrossentropy},
    {"categorical_crossentropy_grad", categoricalCrossentropyGrad},
    {"sparse_categorical_crossentropy_grad", sparseCategoricalCrossentropyGrad},
    {"softmax_cross_entropy", softmaxCrossEntropy},
    {"pointwise_loss", pointwiseLoss},
    {"pointwise_loss_grad", pointwiseLossGrad},
    {"overlap_sums", overlapSums},
    {"overlap_loss", overlapLoss},
    {"overlap_loss_grad", overlapLossGrad},
    {"sample_overlap_loss", sampleOverlapLoss},
    {"sample_overlap_loss_grad", sampleOverlapLossGrad},
    {"kept_rows", keptRows},
    {"ignore_class", ignoreClass},
    {"confusion_counts", confusionCountsKernel},
    {"accuracy", accuracy},
    {"global_norm", globalNorm},
    {"optimizer_update", optimizerUpdate},
    {"scale_by", scaleByKernel},
    {"loss_scale_update", lossScaleUpdateKernel},
    {"ema_update", emaUpdate},
    {"elementwise", elementwise},
};

} // namespace

bool dropoutKeep(int64_t opSeed, uint64_t runSeed, int64_t step, int64_t index,
                 double rate) {
  uint64_t h = splitmix64(static_cast<uint64_t>(opSeed));
  h = splitmix64(h ^ runSeed);
  h = splitmix64(h ^ static_cast<uint64_t>(step));
  h = splitmix64(h ^ static_cast<uint64_t>(index));
  double u = static_cast<double>(h >> 11) * 0x1.0p-53; // [0, 1)
  return u >= rate;
}

std::vector<std::string> referenceKernelNames() {
  std::vector<std::string> names;
  for (const Entry &e : kKernels)
    names.push_back(e.name);
  return names;
}

void registerReferenceKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (const Entry &e : kKernels)
      KernelRegistry::global().add(e.name, Backend::reference, e.fn);
    // The others compute in float32 on widened copies (ReducedPrecision.h):
    // cast reads and writes bfloat16 and float16 itself, and
    // fused_conv2d_pool widens its own operands, to round the convolution
    // before it pools it.
    KernelRegistry &registry = KernelRegistry::global();
    registry.addReducedPrecision("cast", Backend::reference, castKernel);
    registry.addFactory("fused_conv2d_pool", Backend::reference,
                        makeFusedConv2dPool, hasReducedFloats);
  });
}

} // namespace graph::runtime::reference
