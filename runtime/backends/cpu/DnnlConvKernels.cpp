//===- DnnlConvKernels.cpp - convolutions on oneDNN -----------------------===//
//
// conv2d, fused_conv2d (bias as oneDNN's bias argument, the activation as an
// eltwise post-op), conv2d_grad_input (backward data) and conv2d_grad_kernel
// (backward weights; the bias gradient is a separate bias_add_grad), and
// fused_conv2d_pool (a chunk of images at a time, each chunk max-pooled
// while it is in cache).
//
// Layouts, measured on the seed model's three convolutions (AVX2, 2
// threads, batch 256; forward, backward data and backward weights each
// with its reorders): activations stay NHWC (format_tag::nhwc), which
// oneDNN's jit:avx2 convolutions take directly. Letting oneDNN pick blocked
// activations (nChw8c) plus reorders was slower on the first two layers
// (conv 2 forward 11.7 against 9.0 ms, conv 1 backward weights 16.9
// against 3.8 ms) and within 10% on the third. Weights take the layout the
// primitive picks and are reordered from (or to) the plan's kernel on every
// run, since the optimizer updates them in place every step (the largest is
// 144 KiB); plain HWIO weights push oneDNN onto its gemm convolution (conv 2
// forward 25.9 ms).
//
// The plan's kernel is HWIO [kh, kw, C, F] or, with the config's
// filter_layout = ohwi, OHWI [F, kh, kw, C] (runtime/core/WindowGeometry.h):
// oneDNN's hwio and ohwi format tags describe either memory as it lies, so
// the reorder oneDNN does anyway reads it; nothing is transposed by hand.
// Grouped convolutions (`groups` > 1, depthwise included) take oneDNN's
// 5-D grouped weights [G, F / G, C / G, kh, kw]; HWIO with filter f in
// group f / (F / G) is its hwigo layout, and so is Keras' depthwise kernel
// [kh, kw, C, m] (the same memory as [kh, kw, 1, C * m]); OHWI
// [F, kh, kw, C / G] is its gohwi layout (a depthwise kernel
// [C * m, kh, kw, 1] included).
//
// On the bf16 path (DnnlContext.h: takesBf16) conv2d, fused_conv2d and
// their gradients run oneDNN's bf16 primitives on the plan's bf16 buffers.
// fused_conv2d_pool takes bfloat16 and float16 itself, on every path: it
// must round each chunk of the convolution before it pools it (GraphOps.td).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/ReducedPrecision.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace graph::runtime::cpu {

namespace {

using dnnl::memory;
using Tensors = std::vector<TensorRef>;
using Tag = memory::format_tag;
constexpr auto kF32 = memory::data_type::f32;

/// A convolution's geometry from NHWC `input`, `kernel` (HWIO or OHWI, the
/// config's filter_layout) and NHWC `output` shapes; an error naming
/// `kName` when they do not match.
struct ConvShape {
  WindowGeometry g;
  ConvChannels channels;
  int64_t filters = 0;
  memory::data_type type = kF32; // of every operand (dnnlOperandType)
  /// The output's, where it differs (fused_conv2d_pool's float32 chunks).
  std::optional<memory::data_type> dstType;

  bool grouped() const { return channels.groups > 1; }
  memory::desc src() const { return nhwcDesc(g.n, g.h.in, g.w.in, g.c, type); }
  memory::desc dst() const {
    return nhwcDesc(g.n, g.h.out, g.w.out, filters, dstType.value_or(type));
  }
  memory::dims weightDims() const {
    if (grouped())
      return {channels.groups, channels.filtersPerGroup(),
              channels.channelsPerGroup, g.h.window, g.w.window};
    return {filters, g.c, g.h.window, g.w.window};
  }
  /// The primitive's choice of layout, of the operands' type or `as`.
  memory::desc weightsAny() const { return weightsAny(type); }
  memory::desc weightsAny(memory::data_type as) const {
    return {weightDims(), as, Tag::any};
  }
  /// The plan's kernel as it lies in memory.
  memory::desc weightsPlan() const {
    const bool ohwi = channels.layout == FilterLayout::ohwi;
    if (grouped())
      return {weightDims(), type, ohwi ? Tag::gohwi : Tag::hwigo};
    return {weightDims(), type, ohwi ? Tag::ohwi : Tag::hwio};
  }
};

Status convShape(const char *kName, const KernelConfig &cfg,
                 const std::vector<int64_t> &input,
                 const std::vector<int64_t> &kernel,
                 const std::vector<int64_t> &output, ConvShape &s,
                 memory::data_type type = kF32) {
  std::string name(kName);
  s.type = type;
  if (Status st = resolveConv(kName, cfg, input, kernel, s.g, s.channels); !st)
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

/// Below this many input channels a float32 forward convolution runs
/// oneDNN's direct jit kernel: oneDNN 2.6 lists brgconv first for every NHWC
/// float32 convolution, and on an image's first layers (1 to 8 channels)
/// brgconv is the slower one. Measured on one thread (AVX-512, oneDNN
/// 2.6.3, each implementation oneDNN lists timed on its own, best of 5 x
/// 10 runs): 3x3 32 filters on 4 images 28x28 of 1 channel 0.021 against
/// 0.011 ms (the seed CNN's conv 1 in fused_conv2d_pool; in the step,
/// bench/cpu-kernels: 1.21-1.48 -> 1.10-1.15 ms with its pool), of 3
/// channels 0.056 against 0.032 ms, of 8 channels
/// 0.110 against 0.090 ms; at 16 channels brgconv is ahead (0.198 against
/// 0.224 ms). Two threads on 32 RGB images, 32 filters at 224x224: 12.4
/// against 10.6 ms; 64 filters at 112x112: 7.0 ms both.
constexpr int64_t kDirectJitChannels = 16;

/// The primitive descriptor of a forward convolution of `s` under `attr`:
/// oneDNN's first choice, or its direct jit kernel below
/// kDirectJitChannels (float32, ungrouped) when the CPU has it.
dnnl::convolution_forward::primitive_desc
forwardPrimitive(const ConvShape &s, const memory::desc *bias,
                 const dnnl::primitive_attr &attr) {
  // Held while the descriptor walks oneDNN's list: its iterator reads it.
  const dnnl::convolution_forward::desc desc = forwardDesc(s, bias);
  dnnl::convolution_forward::primitive_desc pd(desc, attr, dnnlEngine());
  if (s.type != kF32 || s.grouped() || s.g.c >= kDirectJitChannels)
    return pd;
  do {
    if (std::string(pd.impl_info_str()) == "jit:avx512_core")
      return pd;
  } while (pd.next_impl());
  // Not listed (a CPU without AVX-512): oneDNN's first choice again.
  return {desc, attr, dnnlEngine()};
}

/// oneDNN 2.6's 1x1 backward-weights kernels (`jit_1x1:avx2`, and the
/// AVX-512 one) write past their reduce-to-unit-stride workspace when the
/// stride is over 1 and the NHWC source has fewer channels than their block
/// (8, 16): oneDNN issue #6035, unfixed in Debian 12's 2.6.3. Here one step
/// of a Conv2D(1, strides=2) on 3 channels corrupted the heap ("double free
/// or corruption", a crash at exit, a hang). Below this many channels such a
/// convolution's weight gradient takes the next implementation oneDNN
/// lists.
constexpr int64_t kUnitStrideBlock = 16;

bool reducesToUnitStrideUnsafely(const ConvShape &s) {
  const WindowGeometry &g = s.g;
  return g.h.window == 1 && g.w.window == 1 &&
         (g.h.stride > 1 || g.w.stride > 1) &&
         s.channels.channelsPerGroup < kUnitStrideBlock;
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

Status makeForward(const char *kName, bool fused, const KernelContext &ctx,
                   const KernelConfig &cfg, const Tensors &ins,
                   const Tensors &outs, KernelFn &out) {
  if (Status s =
          checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1, kDnnlOperands);
      !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, ins[0].shape, ins[1].shape,
                           outs[0].shape, shape, type);
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
    memory::desc biasDesc({shape.filters}, type, Tag::x);
    dnnl::convolution_forward::primitive_desc pd =
        forwardPrimitive(part, hasBias ? &biasDesc : nullptr, attr);
    DnnlLaunch launch(kName);
    memory weights =
        launch.input(pd.weights_desc(), bind(shape.weightsPlan(), ins[1].data));
    addParts(launch, dnnl::convolution_forward(pd), pd, parts,
             [&](int p, int parts) {
               std::unordered_map<int, memory> args = {
                   {DNNL_ARG_SRC, sliceOf(part.src(), ins[0], p, parts)},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DST, sliceOf(part.dst(), outs[0], p, parts)}};
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

/// The usual 2x2/2 pool with every window inside the image: four rows a
/// window, straight-line. "same" padding of an odd size pads after the
/// image (padBefore 0): its last windows reach past it, which the general
/// loop clips.
bool isFull2x2(const WindowGeometry &g) {
  return g.h.window == 2 && g.w.window == 2 && g.h.stride == 2 &&
         g.w.stride == 2 && g.h.padBefore == 0 && g.w.padBefore == 0 &&
         2 * g.h.out <= g.h.in && 2 * g.w.out <= g.w.in;
}

/// `v` rounded to bfloat16 (nearest, ties to even; a NaN stays a quiet NaN:
/// Bfloat16.h's floatToBf16), as a float: branch-free, so that the pool's
/// loop stays vectorized.
inline float roundedToBf16(float v) {
  const uint32_t u = std::bit_cast<uint32_t>(v);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t nan = (u | 0x00400000u) & 0xffff0000u;
  return std::bit_cast<float>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

/// One image of a full 2x2/2 pool (isFull2x2) from the convolution's
/// output `x` into `y` and `argmax`: each window's first maximum in
/// row-major order. Float32 throughout, or for a bfloat16 plan (`Out`
/// uint16_t) from oneDNN's bfloat16 output (`In` uint16_t) or from a
/// float32 one, rounded to bfloat16 as it is loaded (GraphOps.td: the pool
/// compares the rounded convolution). A bfloat16 maximum is stored as its
/// upper half: exact.
template <typename In, typename Out>
void pool2x2Image(const WindowGeometry &g, const In *x, Out *y,
                  int32_t *argmax) {
  constexpr bool kBf16 = std::is_same_v<Out, uint16_t>;
  const int64_t c = g.c, inW = g.w.in;
  const auto load = [](In v) {
    if constexpr (std::is_same_v<In, uint16_t>)
      return std::bit_cast<float>(static_cast<uint32_t>(v) << 16);
    else
      return kBf16 ? roundedToBf16(v) : v;
  };
  for (int64_t oh = 0; oh < g.h.out; ++oh)
    for (int64_t ow = 0; ow < g.w.out; ++ow) {
      const In *__restrict x0 = x + (2 * oh * inW + 2 * ow) * c;
      const In *__restrict x1 = x0 + c;
      const In *__restrict x2 = x0 + inW * c;
      const In *__restrict x3 = x2 + c;
      Out *__restrict yw = y + (oh * g.w.out + ow) * c;
      int32_t *__restrict a = argmax + (oh * g.w.out + ow) * c;
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) {
        float best = load(x0[k]);
        int32_t at = 0;
        const float v1 = load(x1[k]), v2 = load(x2[k]), v3 = load(x3[k]);
        if (v1 > best) {
          best = v1;
          at = 1;
        }
        if (v2 > best) {
          best = v2;
          at = 2;
        }
        if (v3 > best) {
          best = v3;
          at = 3;
        }
        if constexpr (kBf16)
          yw[k] = static_cast<Out>(std::bit_cast<uint32_t>(best) >> 16);
        else
          yw[k] = best;
        a[k] = at;
      }
    }
}

/// fused_conv2d_pool: the convolution of a chunk of images into a buffer of
/// the thread's (kChunkBytes: it stays in L2), pooled from there into the
/// output and argmax, chunks shared out among the replica's threads, each
/// chunk one single-threaded primitive. The convolution's output is never
/// stored whole: on the seed CNN's conv 1 that is 22 MB a step not written
/// and read back by the pool, and not read again by the pool's gradient
/// (max_pool2d_argmax_grad reads the argmax). The chunk is the largest
/// divisor of the batch whose output fits kChunkBytes, one image at least.
///
/// A bfloat16 or float16 plan's launch: the chunk is computed in float32
/// and rounded to the plan's type before it is pooled, so the maximum and
/// its argmax are the rounded values' (GraphOps.td), as the unfused
/// fused_conv2d's stored output gives them to max_pool2d. The convolution
/// runs on oneDNN's bf16 primitive where the plan's other convolutions do
/// (takesBf16) and the input has channels enough for it to pay
/// (kDirectJitChannels); else on the float32 one, the chunk's input and
/// the weights widened (exactly) first. Either sums in float32 and rounds
/// once, as the unfused fused_conv2d does on either path.
class ConvPool {
public:
  static constexpr int64_t kChunkBytes = 512 << 10;

  static Status make(const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out);

  /// One step: the weights' reorder, then every chunk.
  Status run(const KernelContext &ctx);

private:
  /// One thread's chunk: its primitive arguments, src and dst re-pointed
  /// for every chunk.
  struct Lane {
    memory src, dst, scratchpad;
    std::vector<dnnl_exec_arg_t> args;
  };
  void runChunk(Lane &lane, int64_t c, dnnl_status_t &status);
  void poolChunk(const float *conv, float *pooled, int32_t *argmax);

  ConvShape shape_;     // the whole batch
  WindowGeometry pool_; // over the convolution's output, per image
  int64_t chunk_ = 1;   // images a chunk
  plan::DType type_ = plan::DType::f32; // the plan's, of every float operand
  bool widens_ = false; // a reduced plan's launch on the float32 primitive
  const void *input_ = nullptr;
  void *output_ = nullptr;
  int32_t *argmax_ = nullptr;
  // widens_: the plan's kernel and bias, widened into these every step.
  const void *planKernel_ = nullptr, *planBias_ = nullptr;
  std::vector<float> kernel32_, bias32_;
  DnnlLaunch reorder_{"fused_conv2d_pool"}; // of the weights, if needed
  memory weights_, bias_; // what the lanes' arguments point at
  dnnl::convolution_forward primitive_;
  std::vector<Lane> lanes_; // one a thread of the replica's team
};

Status ConvPool::make(const KernelContext &ctx, const KernelConfig &cfg,
                      const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "fused_conv2d_pool";
  if (outs.size() != 2 || outs[1].dtype != plan::DType::i32 || !outs[1].data)
    return Status::error(std::string(kName) +
                         ": writes the pooled output and an i32 argmax");
  if (Status s = checkOperands(
          kName, ins, {outs[0]}, 2, 3, 1,
          OperandRule::anyFloat().because(
              " (the cpu backend computes it in f32, rounding to bf16 or "
              "f16 before the pool)"));
      !s)
    return s;
  auto self = std::make_shared<ConvPool>();
  const plan::DType type = outs[0].dtype;
  for (size_t i = 0; i < ins.size(); ++i)
    if (ins[i].dtype != type)
      return Status::error(std::string(kName) + ": input " + std::to_string(i) +
                           " is " + plan::EnumNameDType(ins[i].dtype) +
                           ", the output " + plan::EnumNameDType(type) +
                           ": every float operand must have one type");
  self->type_ = type;
  const std::vector<int64_t> &k = ins[1].shape;
  WindowGeometry cg;
  ConvChannels cc;
  if (Status s = resolveConv(kName, cfg, ins[0].shape, k, cg, cc); !s)
    return s;
  std::vector<int64_t> convOut = {cg.n, cg.h.out, cg.w.out, cc.filters};
  // oneDNN's bf16 primitive, as the plan's other convolutions take it (a
  // wrong GRAPH_CPU_BF16 is their error too).
  Bf16Path path;
  if (Status s = bf16Path(path); type == plan::DType::bf16 && !s)
    return s;
  const bool onednnBf16 = type == plan::DType::bf16 &&
                          path == Bf16Path::onednn && cc.groups == 1 &&
                          cg.c >= kDirectJitChannels;
  self->widens_ = type != plan::DType::f32 && !onednnBf16;
  if (Status s = convShape(kName, cfg, ins[0].shape, k, convOut, self->shape_,
                           onednnBf16 ? memory::data_type::bf16 : kF32);
      !s)
    return s;
  // The chunk: oneDNN's bf16 output, or float32 rounded as it is pooled.
  self->shape_.dstType = onednnBf16 ? memory::data_type::bf16 : kF32;
  KernelConfig poolCfg = fusedPoolConfig(cfg);
  auto [ph, pw] = poolCfg.getPair("pool_size", 2);
  WindowGeometry &g = self->pool_;
  if (Status s = resolveWindow(kName, poolCfg, convOut, ph, pw, false, g); !s)
    return s;
  std::vector<int64_t> pooled = {g.n, g.h.out, g.w.out, g.c};
  if (outs[0].shape != pooled || outs[1].shape != pooled)
    return Status::error(std::string(kName) + ": output and argmax must be " +
                         shapeText(pooled) + ", got " +
                         shapeText(outs[0].shape) + " and " +
                         shapeText(outs[1].shape));
  bool hasBias = ins.size() == 3;
  if (hasBias && ins[2].elements() != cc.filters)
    return Status::error(std::string(kName) + ": bias " +
                         shapeText(ins[2].shape) + " does not match " +
                         std::to_string(cc.filters) + " filters");
  // One input channel: the vector kernel's first-layer path, where the
  // chunk's buffer would cost as much as the convolution.
  const std::string activation = cfg.getString("activation", "none");
  if (vec::firstLayerConvPoolShape(cg, cc, g, activation))
    return vec::makeFirstLayerConvPool(ctx, cg, cc, g, ins, outs, out);
  const int64_t imageBytes = g.h.in * g.w.in * g.c * int64_t(sizeof(float));
  int64_t &chunk = self->chunk_;
  chunk = std::max<int64_t>(1, std::min(g.n, kChunkBytes / imageBytes));
  while (g.n % chunk != 0)
    --chunk;
  ConvShape part = self->shape_;
  part.g.n = chunk;
  dnnl::primitive_attr attr = userScratchpad();
  dnnl::post_ops ops;
  if (Status s = appendEpilogue(kName, cfg, ops); !s)
    return s;
  attr.set_post_ops(ops);
  const int threads = threadsPerReplica(ctx.replicas);
  const void *kernel = ins[1].data, *bias = hasBias ? ins[2].data : nullptr;
  if (self->widens_) {
    self->planKernel_ = kernel;
    self->planBias_ = bias;
    self->kernel32_.resize(static_cast<size_t>(ins[1].elements()));
    self->bias32_.resize(static_cast<size_t>(hasBias ? cc.filters : 0));
    kernel = self->kernel32_.data();
    bias = self->bias32_.data();
  }
  try {
    memory::desc biasDesc({cc.filters}, part.type, Tag::x);
    dnnl::convolution_forward::primitive_desc pd;
    {
      // Each chunk runs on one thread: oneDNN sizes the primitive (and
      // generates its code) for the team it is created under.
      ReplicaThreadsScope one(ctx, 1);
      pd = forwardPrimitive(part, hasBias ? &biasDesc : nullptr, attr);
      self->primitive_ = dnnl::convolution_forward(pd);
    }
    self->weights_ = self->reorder_.input(
        pd.weights_desc(),
        bind(self->shape_.weightsPlan(), const_cast<void *>(kernel)));
    if (hasBias)
      self->bias_ = bind(biasDesc, const_cast<void *>(bias));
    for (int t = 0; t < threads; ++t) {
      Lane lane{bind(part.src(), nullptr),
                bind(part.dst(), nullptr),
                memory(pd.scratchpad_desc(), dnnlEngine()),
                {}};
      lane.args = {{DNNL_ARG_SRC, lane.src.get()},
                   {DNNL_ARG_WEIGHTS, self->weights_.get()},
                   {DNNL_ARG_DST, lane.dst.get()},
                   {DNNL_ARG_SCRATCHPAD, lane.scratchpad.get()}};
      if (hasBias)
        lane.args.push_back({DNNL_ARG_BIAS, self->bias_.get()});
      self->lanes_.push_back(std::move(lane));
    }
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kName) +
                         ": oneDNN refused the convolution: " + e.what());
  }
  self->input_ = ins[0].data;
  self->output_ = outs[0].data;
  self->argmax_ = outs[1].i32();
  out = DnnlLoop{[self](const KernelContext &ctx) { return self->run(ctx); }};
  return Status::ok();
}

Status ConvPool::run(const KernelContext &ctx) {
  if (widens_) {
    convertFloats(planKernel_, type_, kernel32_.data(), plan::DType::f32,
                  static_cast<int64_t>(kernel32_.size()));
    convertFloats(planBias_, type_, bias32_.data(), plan::DType::f32,
                  static_cast<int64_t>(bias32_.size()));
  }
  // The reorder's buffers are bound at instantiation: it takes no operands.
  if (Status s = reorder_(ctx, {}, {}, {}); !s)
    return s;
  const int64_t chunks = pool_.n / chunk_;
  dnnl_status_t status = dnnl_success;
  const int threads = static_cast<int>(lanes_.size());
  // Chunks are independent and write disjoint outputs: handed out one at a
  // time, so a thread another process displaces takes fewer of them
  // instead of holding the others at the barrier.
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int64_t c = 0; c < chunks; ++c)
    runChunk(lanes_[omp_get_thread_num()], c, status);
  if (status != dnnl_success)
    return Status::error(std::string("fused_conv2d_pool: oneDNN failed: ") +
                         dnnl::error(status, "could not execute").what());
  return Status::ok();
}

/// Chunk c on the calling thread: its convolution into the thread's
/// scratch, rounded in a reduced plan, then pooled into the output.
void ConvPool::runChunk(Lane &lane, int64_t c, dnnl_status_t &status) {
  const int64_t inChunk = chunk_ * shape_.g.h.in * shape_.g.w.in * shape_.g.c;
  const int64_t inImage = pool_.h.in * pool_.w.in * pool_.c;
  const int64_t outImage = pool_.h.out * pool_.w.out * pool_.c;
  const int64_t convChunk = chunk_ * inImage, outChunk = chunk_ * outImage;
  const bool reduced = type_ != plan::DType::f32;
  const bool bf16Conv = reduced && !widens_; // oneDNN's bf16 output
  const size_t typeBytes = reduced ? sizeof(uint16_t) : sizeof(float);
  const void *src = static_cast<const char *>(input_) + c * inChunk * typeBytes;
  if (widens_) {
    float *wide = vec::threadScratch<float, 1>(inChunk);
    convertFloats(src, type_, wide, plan::DType::f32, inChunk);
    src = wide;
  }
  float *conv = vec::threadScratch<float>(convChunk);
  uint16_t *narrow = vec::threadScratch<uint16_t>(bf16Conv ? convChunk : 0);
  dnnl::stream &stream = dnnlStream();
  lane.src.set_data_handle(const_cast<void *>(src));
  lane.dst.set_data_handle(bf16Conv ? static_cast<void *>(narrow) : conv);
  dnnl_status_t s = dnnl_primitive_execute(primitive_.get(), stream.get(),
                                           static_cast<int>(lane.args.size()),
                                           lane.args.data());
  if (s == dnnl_success)
    s = dnnl_stream_wait(stream.get());
  if (s != dnnl_success) {
#pragma omp critical(conv_pool_status)
    status = s;
    return;
  }
  int32_t *argmax = argmax_ + c * outChunk;
  if (!reduced) {
    poolChunk(conv, static_cast<float *>(output_) + c * outChunk, argmax);
    return;
  }
  auto *out = static_cast<uint16_t *>(output_) + c * outChunk;
  if (type_ == plan::DType::bf16 && isFull2x2(pool_)) {
    // Rounded as the pool loads it: a pass over the chunk to round it first
    // cost more than the pool (seed CNN conv 1, 0.8 against 0.3 ms a step).
    for (int64_t n = 0; n < chunk_; ++n) {
      if (bf16Conv)
        pool2x2Image(pool_, narrow + n * inImage, out + n * outImage,
                     argmax + n * outImage);
      else
        pool2x2Image(pool_, conv + n * inImage, out + n * outImage,
                     argmax + n * outImage);
    }
    return;
  }
  // Any other pool, or float16: the chunk rounded to the plan's type (or
  // widened from oneDNN's bf16), pooled in float32, and stored in the
  // plan's type: exact.
  if (!bf16Conv) {
    narrow = vec::threadScratch<uint16_t>(convChunk);
    convertFloats(conv, plan::DType::f32, narrow, type_, convChunk);
  }
  convertFloats(narrow, type_, conv, plan::DType::f32, convChunk);
  float *pooled = vec::threadScratch<float, 2>(outChunk);
  poolChunk(conv, pooled, argmax);
  convertFloats(pooled, plan::DType::f32, out, type_, outChunk);
}

/// Max-pools `chunk_` images of the convolution's output from `conv` into
/// `pooled` and `argmax` (the chunk's images, from its first): each
/// window's first maximum in row-major order. The window's rows of
/// channels are compared in place in the output row (hot in L1), whole
/// rows at a time.
void ConvPool::poolChunk(const float *conv, float *pooled, int32_t *argmax) {
  const WindowGeometry &g = pool_;
  const int64_t c = g.c, inW = g.w.in;
  const int64_t inImage = g.h.in * inW * c, outImage = g.h.out * g.w.out * c;
  const bool full2x2 = isFull2x2(g);
  for (int64_t n = 0; n < chunk_; ++n) {
    const float *xn = conv + n * inImage;
    float *yn = pooled + n * outImage;
    int32_t *an = argmax + n * outImage;
    if (full2x2) {
      pool2x2Image<float, float>(g, xn, yn, an);
      continue;
    }
    for (int64_t oh = 0; oh < g.h.out; ++oh) {
      const WindowSpan h = windowSpan(g.h, oh);
      for (int64_t ow = 0; ow < g.w.out; ++ow) {
        const WindowSpan w = windowSpan(g.w, ow);
        float *__restrict y = yn + (oh * g.w.out + ow) * c;
        int32_t *__restrict a = an + (oh * g.w.out + ow) * c;
        const float *__restrict first = xn + (h.begin * inW + w.begin) * c;
        const int32_t firstAt = windowPosition(g, h, w, h.begin, w.begin);
#pragma omp simd
        for (int64_t k = 0; k < c; ++k) {
          y[k] = first[k];
          a[k] = firstAt;
        }
        for (int64_t ih = h.begin; ih < h.end; ++ih)
          for (int64_t iw = ih == h.begin ? w.begin + 1 : w.begin; iw < w.end;
               ++iw) {
            const float *__restrict xp = xn + (ih * inW + iw) * c;
            const int32_t pos = windowPosition(g, h, w, ih, iw);
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) {
              const bool greater = xp[k] > y[k];
              y[k] = greater ? xp[k] : y[k];
              a[k] = greater ? pos : a[k];
            }
          }
      }
    }
  }
}

/// ins: output_grad, kernel; out: input_grad (the forward input's shape).
Status makeConv2dGradInput(const KernelContext &ctx, const KernelConfig &cfg,
                           const Tensors &ins, const Tensors &outs,
                           KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_input";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kDnnlOperands); !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, outs[0].shape, ins[1].shape,
                           ins[0].shape, shape, type);
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
        launch.input(pd.weights_desc(), bind(shape.weightsPlan(), ins[1].data));
    addParts(launch, dnnl::convolution_backward_data(pd), pd, parts,
             [&](int p, int parts) -> std::unordered_map<int, memory> {
               return {
                   {DNNL_ARG_DIFF_DST, sliceOf(part.dst(), ins[0], p, parts)},
                   {DNNL_ARG_WEIGHTS, weights},
                   {DNNL_ARG_DIFF_SRC, sliceOf(part.src(), outs[0], p, parts)}};
             });
    out = std::move(launch);
  } catch (const dnnl::error &e) {
    return Status::error(std::string(kName) +
                         ": oneDNN refused the convolution: " + e.what());
  }
  // A pooled layer's output gradient is mostly zeros: the vector kernel
  // sums its non-zero values only, with this launch for a dense one.
  WindowGeometry g;
  ConvChannels channels;
  if (resolveConv(kName, cfg, outs[0].shape, ins[1].shape, g, channels) &&
      vec::sparseGradInputShape(g, channels)) {
    KernelFn dense = std::move(out);
    return vec::makeSparseConv2dGradInput(ctx, g, channels, ins, outs,
                                          std::move(dense), out);
  }
  return Status::ok();
}

/// ins: input, output_grad; out: kernel_grad (in the config's
/// filter_layout; its shape gives the window).
Status makeConv2dGradKernel(const KernelContext &ctx, const KernelConfig &cfg,
                            const Tensors &ins, const Tensors &outs,
                            KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_kernel";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kDnnlOperands); !s)
    return s;
  memory::data_type type;
  if (Status s = dnnlOperandType(kName, ins, outs, type); !s)
    return s;
  ConvShape shape;
  if (Status s = convShape(kName, cfg, ins[0].shape, outs[0].shape,
                           ins[1].shape, shape, type);
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
    // The weights' gradient is summed in float32 (and its parts added up
    // in float32) and rounded to the plan's type once, by the reorder into
    // the output.
    // Held while the descriptor walks oneDNN's list: its iterator reads it.
    const dnnl::convolution_backward_weights::desc desc(
        dnnl::algorithm::convolution_direct, part.src(), part.weightsAny(kF32),
        part.dst(), dnnlStrides(g), dnnlDilations(g), dnnlPadBefore(g),
        dnnlPadAfter(g));
    dnnl::convolution_backward_weights::primitive_desc pd(
        desc, userScratchpad(), dnnlEngine(), hint);
    if (reducesToUnitStrideUnsafely(part))
      while (std::string_view(pd.impl_info_str()).starts_with("jit_1x1"))
        if (!pd.next_impl())
          return Status::error(
              std::string(kName) +
              ": oneDNN lists no implementation of this 1x1 strided "
              "convolution's weight gradient but its 1x1 kernel, which "
              "writes past its workspace on so few channels (oneDNN issue "
              "#6035)");
    DnnlLaunch launch(kName);
    // Part p's gradient of its images goes to its own buffer (part 0's is
    // the output); they are added up in part order afterwards, so the sum
    // does not depend on which thread finished first.
    std::vector<memory> partial{launch.output(
        pd.diff_weights_desc(), bind(shape.weightsPlan(), outs[0].data))};
    for (int p = 1; p < parts; ++p)
      partial.emplace_back(pd.diff_weights_desc(), dnnlEngine());
    addParts(launch, dnnl::convolution_backward_weights(pd), pd, parts,
             [&](int p, int parts) -> std::unordered_map<int, memory> {
               return {
                   {DNNL_ARG_SRC, sliceOf(part.src(), ins[0], p, parts)},
                   {DNNL_ARG_DIFF_DST, sliceOf(part.dst(), ins[1], p, parts)},
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
  registry.addFactory("conv2d", Backend::cpu, makeConv2d, takesBf16);
  registry.addFactory("fused_conv2d", Backend::cpu, makeFusedConv2d, takesBf16);
  // Takes bfloat16 and float16 itself on every path (ConvPool).
  registry.addFactory("fused_conv2d_pool", Backend::cpu, ConvPool::make,
                      hasReducedFloats);
  registry.addFactory("conv2d_grad_input", Backend::cpu, makeConv2dGradInput,
                      takesBf16);
  registry.addFactory("conv2d_grad_kernel", Backend::cpu, makeConv2dGradKernel,
                      takesBf16);
}

} // namespace graph::runtime::cpu
