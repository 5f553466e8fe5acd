//===- DnnlConvKernels.cpp - convolutions on oneDNN -----------------------===//
//
// conv2d, fused_conv2d (bias as oneDNN's bias argument, the activation as an
// eltwise post-op), conv2d_grad_input (backward data) and conv2d_grad_kernel
// (backward weights; the bias gradient is a separate bias_add_grad).
//
// Layouts, measured on the seed model's three convolutions (AVX2, 2
// threads, batch 256; forward, backward data and backward weights each
// with its reorders): activations stay NHWC (format_tag::nhwc), which
// oneDNN's jit:avx2 convolutions take directly. Letting oneDNN pick blocked
// activations (nChw8c) plus reorders was slower on the first two layers
// (conv 2 forward 11.7 against 9.0 ms, conv 1 backward weights 16.9
// against 3.8 ms) and within 10% on the third. Weights take the layout the
// primitive picks and are reordered from (or to) HWIO on every run, since
// the optimizer updates them in place every step (the largest is 144 KiB);
// plain HWIO weights push oneDNN onto its gemm convolution (conv 2 forward
// 25.9 ms).
//
// Grouped convolutions (`groups` > 1, depthwise included) take oneDNN's
// 5-D grouped weights [G, F / G, C / G, kh, kw]; HWIO with filter f in
// group f / (F / G) is its hwigo layout, and so is Keras' depthwise kernel
// [kh, kw, C, m] (the same memory as [kh, kw, 1, C * m]).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

/// A convolution's geometry from NHWC `input`, HWIO `kernel` and NHWC
/// `output` shapes; an error naming `kName` when they do not match.
struct ConvShape {
  WindowGeometry g;
  ConvChannels channels;
  int64_t filters = 0;

  bool grouped() const { return channels.groups > 1; }
  memory::desc src() const { return nhwcDesc(g.n, g.h.in, g.w.in, g.c); }
  memory::desc dst() const { return nhwcDesc(g.n, g.h.out, g.w.out, filters); }
  memory::dims weightDims() const {
    if (grouped())
      return {channels.groups, channels.filtersPerGroup(),
              channels.channelsPerGroup, g.h.window, g.w.window};
    return {filters, g.c, g.h.window, g.w.window};
  }
  memory::desc weightsAny() const { return {weightDims(), kF32, Tag::any}; }
  memory::desc weightsHwio() const {
    return {weightDims(), kF32, grouped() ? Tag::hwigo : Tag::hwio};
  }
};

Status convShape(const char *kName, const KernelConfig &cfg,
                 const std::vector<int64_t> &input,
                 const std::vector<int64_t> &kernel,
                 const std::vector<int64_t> &output, ConvShape &s) {
  std::string name(kName);
  if (kernel.size() != 4)
    return Status::error(name + ": needs an HWIO kernel, got " +
                         shapeText(kernel));
  if (Status st =
          resolveWindow(kName, cfg, input, kernel[0], kernel[1], true, s.g);
      !st)
    return st;
  if (Status st = resolveConvChannels(kName, cfg, s.g.c, kernel, s.channels);
      !st)
    return st;
  s.filters = s.channels.filters;
  std::vector<int64_t> expected = {s.g.n, s.g.h.out, s.g.w.out, s.filters};
  if (output != expected)
    return Status::error(name + ": output (gradient) is " + shapeText(output) +
                         ", expected " + shapeText(expected));
  return Status::ok();
}

/// The forward descriptor every convolution kernel starts from: the
/// backward primitives take a forward primitive descriptor as their hint.
dnnl::convolution_forward::desc
forwardDesc(const ConvShape &s, const memory::desc *bias = nullptr) {
  const WindowGeometry &g = s.g;
  if (bias)
    return {dnnl::prop_kind::forward_training,
            dnnl::algorithm::convolution_direct,
            s.src(),
            s.weightsAny(),
            *bias,
            s.dst(),
            dnnlStrides(g),
            dnnlDilations(g),
            dnnlPadBefore(g),
            dnnlPadAfter(g)};
  return {dnnl::prop_kind::forward_training,
          dnnl::algorithm::convolution_direct,
          s.src(),
          s.weightsAny(),
          s.dst(),
          dnnlStrides(g),
          dnnlDilations(g),
          dnnlPadBefore(g),
          dnnlPadAfter(g)};
}

/// Into how many parts a convolution splits its batch: one per thread of
/// the replica's team, each part a single-threaded copy of the primitive
/// on its own images, when the output image is small (below
/// kSplitPositions positions) and the batch divides evenly; else 1, and
/// the team runs one primitive on the whole batch. oneDNN threads a
/// convolution over images, positions and channel blocks; on a small image
/// its split leaves threads waiting on each other. Measured on the seed
/// CNN (2 threads, batch 256, one launch at a time): conv 3 (5x5 -> 3x3,
/// 64 -> 64) took 0.92 / 0.84 / 2.72 ms forward / backward data / backward
/// weights on oneDNN's two threads, and 0.78 / 0.78 / 1.04-1.10 ms as two
/// one-thread copies on 128 images each; conv 2 (13x13 -> 11x11) and conv 1
/// (28x28 -> 26x26) were as fast or faster on oneDNN's threads (backward
/// weights 5.63 against 5.84 ms, 0.69 against 0.73 ms).
constexpr int64_t kSplitPositions = 64;

int splitsBatch(const KernelContext &ctx, const ConvShape &shape) {
  const int threads = threadsPerReplica(ctx.replicas);
  const WindowGeometry &g = shape.g;
  return threads > 1 && g.n % threads == 0 &&
                 g.h.out * g.w.out < kSplitPositions
             ? threads
             : 1;
}

/// Adds `primitive` of `pd` to `launch`, on the whole batch or split into
/// `parts` (splitsBatch): `args(p, parts)` gives part p's arguments, its
/// slice of every batch-carrying buffer.
template <typename Args>
void addParts(DnnlLaunch &launch, const dnnl::primitive &primitive,
              const dnnl::primitive_desc_base &pd, int parts, Args args) {
  if (parts == 1) {
    launch.add(primitive, pd, args(0, 1));
    return;
  }
  std::vector<std::unordered_map<int, memory>> split;
  for (int p = 0; p < parts; ++p)
    split.push_back(args(p, parts));
  launch.addSplit(primitive, pd, std::move(split));
}

/// `t`'s slice p of `parts` along the batch, as a buffer for `desc`.
memory slice(const memory::desc &desc, const TensorRef &t, int p, int parts) {
  return bind(desc, t.f32() + p * (t.elements() / parts));
}

Status makeForward(const char *kName, bool fused, const KernelContext &ctx,
                   const KernelConfig &cfg, const Tensors &ins,
                   const Tensors &outs, KernelFn &out) {
  if (Status s = checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, ins[0].shape, ins[1].shape,
                           outs[0].shape, shape);
      !s)
    return s;
  bool hasBias = ins.size() == 3;
  if (hasBias && ins[2].elements() != shape.filters)
    return Status::error(std::string(kName) + ": bias " +
                         shapeText(ins[2].shape) + " does not match " +
                         std::to_string(shape.filters) + " filters");
  dnnl::primitive_attr attr = userScratchpad();
  dnnl::post_ops ops;
  if (fused)
    if (Status s = appendEpilogue(kName, cfg, ops); !s)
      return s;
  attr.set_post_ops(ops);
  const int parts = splitsBatch(ctx, shape);
  ConvShape part = shape; // one part's slice of the batch
  part.g.n /= parts;
  ReplicaThreadsScope threads(ctx, parts > 1 ? 1 : 0);
  try {
    memory::desc biasDesc({shape.filters}, kF32, Tag::x);
    dnnl::convolution_forward::primitive_desc pd(
        forwardDesc(part, hasBias ? &biasDesc : nullptr), attr, dnnlEngine());
    DnnlLaunch launch(kName);
    memory weights =
        launch.input(pd.weights_desc(), bind(shape.weightsHwio(), ins[1].data));
    addParts(launch, dnnl::convolution_forward(pd), pd, parts,
             [&](int p, int parts) {
               std::unordered_map<int, memory> args = {
                   {DNNL_ARG_SRC, slice(part.src(), ins[0], p, parts)},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DST, slice(part.dst(), outs[0], p, parts)}};
               if (hasBias)
                 args.emplace(DNNL_ARG_BIAS, bind(biasDesc, ins[2].data));
               return args;
             });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kName) +
                         ": oneDNN refused the convolution: " + e.what());
  }
  return Status::ok();
}

Status makeConv2d(const KernelContext &ctx, const KernelConfig &cfg,
                  const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return makeForward("conv2d", false, ctx, cfg, ins, outs, out);
}

Status makeFusedConv2d(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return makeForward("fused_conv2d", true, ctx, cfg, ins, outs, out);
}

/// ins: output_grad, kernel; out: input_grad (the forward input's shape).
Status makeConv2dGradInput(const KernelContext &ctx, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_input";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, outs[0].shape, ins[1].shape,
                           ins[0].shape, shape);
      !s)
    return s;
  const int parts = splitsBatch(ctx, shape);
  ConvShape part = shape; // one part's slice of the batch
  part.g.n /= parts;
  ReplicaThreadsScope threads(ctx, parts > 1 ? 1 : 0);
  try {
    const WindowGeometry &g = part.g;
    dnnl::convolution_forward::primitive_desc hint(forwardDesc(part),
                                                   dnnlEngine());
    dnnl::convolution_backward_data::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, part.src(), part.weightsAny(),
         part.dst(), dnnlStrides(g), dnnlDilations(g), dnnlPadBefore(g),
         dnnlPadAfter(g)},
        userScratchpad(), dnnlEngine(), hint);
    DnnlLaunch launch(kName);
    memory weights =
        launch.input(pd.weights_desc(), bind(shape.weightsHwio(), ins[1].data));
    addParts(launch, dnnl::convolution_backward_data(pd), pd, parts,
             [&](int p, int parts) -> std::unordered_map<int, memory> {
               return {
                   {DNNL_ARG_DIFF_DST, slice(part.dst(), ins[0], p, parts)},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DIFF_SRC, slice(part.src(), outs[0], p, parts)}};
             });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kName) +
                         ": oneDNN refused the convolution: " + e.what());
  }
  return Status::ok();
}

/// ins: input, output_grad; out: kernel_grad (HWIO; its shape gives the
/// window).
Status makeConv2dGradKernel(const KernelContext &ctx, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs,
                            KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_kernel";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, ins[0].shape, outs[0].shape,
                           ins[1].shape, shape);
      !s)
    return s;
  const int parts = splitsBatch(ctx, shape);
  ConvShape part = shape; // one part's slice of the batch
  part.g.n /= parts;
  ReplicaThreadsScope threads(ctx, parts > 1 ? 1 : 0);
  try {
    const WindowGeometry &g = part.g;
    dnnl::convolution_forward::primitive_desc hint(forwardDesc(part),
                                                   dnnlEngine());
    dnnl::convolution_backward_weights::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, part.src(), part.weightsAny(),
         part.dst(), dnnlStrides(g), dnnlDilations(g), dnnlPadBefore(g),
         dnnlPadAfter(g)},
        userScratchpad(), dnnlEngine(), hint);
    DnnlLaunch launch(kName);
    // Part p's gradient of its images goes to its own buffer (part 0's is
    // the output); they are added up in part order afterwards, so the sum
    // does not depend on which thread finished first.
    std::vector<memory> partial{launch.output(
        pd.diff_weights_desc(), bind(shape.weightsHwio(), outs[0].data))};
    for (int p = 1; p < parts; ++p)
      partial.emplace_back(pd.diff_weights_desc(), dnnlEngine());
    addParts(launch, dnnl::convolution_backward_weights(pd), pd, parts,
             [&](int p, int parts) -> std::unordered_map<int, memory> {
               return {{DNNL_ARG_SRC, slice(part.src(), ins[0], p, parts)},
                       {DNNL_ARG_DIFF_DST, slice(part.dst(), ins[1], p, parts)},
                       {DNNL_ARG_DIFF_WEIGHTS, partial[p]}};
             });
    if (parts > 1)
      launch.addLoop([partial] {
        float *sum = static_cast<float *>(partial[0].get_data_handle());
        const size_t n = partial[0].get_desc().get_size() / sizeof(float);
        for (size_t p = 1; p < partial.size(); ++p) {
          const float *add =
              static_cast<const float *>(partial[p].get_data_handle());
#pragma omp simd
          for (size_t i = 0; i < n; ++i)
            sum[i] += add[i];
        }
      });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kName) +
                         ": oneDNN refused the convolution: " + e.what());
  }
  return Status::ok();
}

} // namespace

void registerDnnlConvKernels(KernelRegistry &registry) {
  registry.addFactory("conv2d", Backend::cpu, makeConv2d);
  registry.addFactory("fused_conv2d", Backend::cpu, makeFusedConv2d);
  registry.addFactory("conv2d_grad_input", Backend::cpu, makeConv2dGradInput);
  registry.addFactory("conv2d_grad_kernel", Backend::cpu, makeConv2dGradKernel);
}

} // namespace graph::runtime::cpu
