//===- ConvKernels.cpp - conv2d and its gradients through cuDNN -----------===//
//
// conv2d, fused_conv2d, conv2d_grad_input and conv2d_grad_kernel on cuDNN's
// convolution API: NHWC tensors and an OHWI filter (cuDNN's KRSC, format
// CUDNN_TENSOR_NHWC). The math is the device's precision
// (CudaDeviceState::tf32): FMA math in fp32, so no TF32 rounding and results
// match the reference within float tolerance; in tf32 cuDNN's default math,
// which lets it pick tensor-op algorithms (PyTorch's
// allow_tf32 for cuDNN does the same).
//
// Per step, in the launch site's scratch (the front of the device
// workspace, or memory of its own when that is too small):
//   - the HWIO kernel transposed to OHWI (forward, backward data), or the
//     OHWI filter gradient transposed back to HWIO (backward filter);
//   - for a `same` padding with an odd total, which cuDNN cannot express
//     (it pads symmetrically), a zero-padded copy of the input (forward,
//     backward filter) or of the input gradient (backward data, cropped
//     afterwards); the convolution itself then pads nothing.
// fused_conv2d is cudnnConvolutionForward plus an own bias-and-activation
// epilogue kernel: cudnnConvolutionBiasActivationForward covers relu and
// identity only, and which of its algorithms take NHWC float with FMA math
// cannot be checked without a GPU; the epilogue costs one pass over y.
//
// The algorithm is chosen once per launch site from cuDNN's heuristics
// (cudnnGet*_v7, which need no scratch memory and run nothing), preferring
// deterministic ones, and cached per shape.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace graph::runtime::cuda {

namespace {

/// Owns one cuDNN descriptor.
template <typename T, cudnnStatus_t (*Create)(T *), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
public:
  Descriptor() = default;
  ~Descriptor() {
    if (handle_)
      (void)Destroy(handle_); // nothing to report to in a destructor
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;
  Status create() {
    RETURN_IF_CUDA_ERROR(Create(&handle_));
    return Status::ok();
  }
  T get() const { return handle_; }

private:
  T handle_ = nullptr;
};

using TensorDescriptor =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
               cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
               cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor>;

enum class Pass { forward, backwardData, backwardFilter };

/// What a convolution launch site keeps: geometry, descriptors, algorithm,
/// buffers and scratch.
struct ConvSite {
  Pass pass = Pass::forward;
  CudaDeviceState *state = nullptr;
  WindowGeometry g;
  int64_t filters = 0;
  // The launch's buffers. forward: x, kernel -> y (plus bias);
  // backwardData: dy, kernel -> dx; backwardFilter: x, dy -> kernel grad.
  const float *x = nullptr;
  const float *kernel = nullptr;
  const float *dy = nullptr;
  const float *bias = nullptr;
  float *out = nullptr;
  Activation activation = Activation::none;
  bool epilogue = false;

  // x (or its padded copy, or dx), y (or dy), the OHWI filter.
  TensorDescriptor xDesc, yDesc;
  FilterDescriptor wDesc;
  ConvolutionDescriptor convDesc;
  int algo = 0;
  cudnnMathType_t math = CUDNN_FMA_MATH; // the chosen algorithm's

  bool padded = false;
  NhwcPadding padding;
  DeviceBuffer ownScratch;
  float *filterScratch = nullptr;
  float *paddedScratch = nullptr;
  void *cudnnWorkspace = nullptr;
  size_t cudnnWorkspaceBytes = 0;

  int64_t filterRows() const { return g.h.window * g.w.window * g.c; }
  int64_t yElements() const { return g.n * g.h.out * g.w.out * filters; }
};

/// The chosen algorithm and its workspace, per convolution shape and
/// device: launch sites of one shape (replicas, repeated layers) ask
/// cuDNN's heuristics once.
using AlgoKey = std::tuple<int, int, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
                           int64_t, int64_t, int64_t, bool, size_t, bool>;

std::mutex algoCacheMutex;
std::map<AlgoKey, std::pair<int, cudnnMathType_t>> algoCache;

AlgoKey algoKeyOf(const ConvSite &s) {
  return {static_cast<int>(s.pass),
          s.state->ordinal,
          s.g.n,
          s.g.c,
          s.g.h.in,
          s.g.w.in,
          s.filters,
          s.g.h.window,
          s.g.w.window,
          s.g.h.stride,
          s.g.w.stride,
          s.g.h.dilation,
          s.g.w.dilation,
          s.g.h.padBefore,
          s.g.w.padBefore,
          s.padded,
          s.cudnnWorkspaceBytes,
          s.state->tf32};
}

bool isTensorOpMath(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH ||
         math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/// The first of cuDNN's ranked `perf` results that is usable: it succeeded,
/// runs without tensor-op (TF32) math unless `tf32`, is supported by the
/// descriptors (`workspaceOf` returns false otherwise) and needs at most
/// `limit` bytes; deterministic algorithms first, then any. `fallbacks` (in
/// order, FMA math) when the heuristics offer nothing usable.
template <typename Perf, typename Algo, typename WorkspaceOf>
bool pickAlgorithm(const std::vector<Perf> &perf, int returned,
                   std::initializer_list<Algo> fallbacks, size_t limit,
                   bool tf32, WorkspaceOf workspaceOf, Algo &chosen,
                   cudnnMathType_t &math) {
  auto usable = [&](Algo algo) {
    size_t bytes = 0;
    return workspaceOf(algo, bytes) && bytes <= limit;
  };
  for (bool deterministicOnly : {true, false})
    for (int i = 0; i < returned; ++i) {
      const Perf &p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS ||
          (!tf32 && isTensorOpMath(p.mathType)))
        continue;
      if (deterministicOnly && p.determinism != CUDNN_DETERMINISTIC)
        continue;
      if (usable(p.algo)) {
        chosen = p.algo;
        math = p.mathType;
        return true;
      }
    }
  for (Algo algo : fallbacks)
    if (usable(algo)) {
      chosen = algo;
      math = CUDNN_FMA_MATH;
      return true;
    }
  return false;
}

/// The descriptor runs the chosen algorithm with the math it was ranked
/// with (a tensor-op algorithm under CUDNN_DEFAULT_MATH needs its own).
Status setMath(ConvSite &s) {
  RETURN_IF_CUDA_ERROR(cudnnSetConvolutionMathType(s.convDesc.get(), s.math));
  return Status::ok();
}

Status chooseAlgorithm(const char *kName, ConvSite &s) {
  AlgoKey key = algoKeyOf(s);
  {
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    auto it = algoCache.find(key);
    if (it != algoCache.end()) {
      s.algo = it->second.first;
      s.math = it->second.second;
      return setMath(s);
    }
  }
  cudnnHandle_t h = s.state->cudnn;
  int count = 0;
  bool found = false;
  if (s.pass == Pass::forward) {
    RETURN_IF_CUDA_ERROR(
        cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    RETURN_IF_CUDA_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
        h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(), s.yDesc.get(), count,
        &returned, perf.data()));
    cudnnConvolutionFwdAlgo_t algo{};
    found = pickAlgorithm(
        perf, returned,
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
        s.cudnnWorkspaceBytes, s.state->tf32,
        [&](cudnnConvolutionFwdAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(
                     h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(),
                     s.yDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        algo, s.math);
    s.algo = algo;
  } else if (s.pass == Pass::backwardData) {
    RETURN_IF_CUDA_ERROR(
        cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    RETURN_IF_CUDA_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
        h, s.wDesc.get(), s.yDesc.get(), s.convDesc.get(), s.xDesc.get(), count,
        &returned, perf.data()));
    cudnnConvolutionBwdDataAlgo_t algo{};
    found = pickAlgorithm(
        perf, returned,
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0},
        s.cudnnWorkspaceBytes, s.state->tf32,
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
                     h, s.wDesc.get(), s.yDesc.get(), s.convDesc.get(),
                     s.xDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        algo, s.math);
    s.algo = algo;
  } else {
    RETURN_IF_CUDA_ERROR(
        cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> perf(std::max(count, 1));
    int returned = 0;
    RETURN_IF_CUDA_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
        h, s.xDesc.get(), s.yDesc.get(), s.convDesc.get(), s.wDesc.get(), count,
        &returned, perf.data()));
    cudnnConvolutionBwdFilterAlgo_t algo{};
    found = pickAlgorithm(
        perf, returned,
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0},
        s.cudnnWorkspaceBytes, s.state->tf32,
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     h, s.xDesc.get(), s.yDesc.get(), s.convDesc.get(),
                     s.wDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        algo, s.math);
    s.algo = algo;
  }
  REQUIRE(found,
          "cuDNN offers no algorithm for input " +
              shapeText({s.g.n, s.g.h.in, s.g.w.in, s.g.c}) + " and " +
              std::to_string(s.filters) + " filters that needs at most " +
              std::to_string(s.cudnnWorkspaceBytes) + " bytes of workspace");
  {
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    algoCache.emplace(key, std::make_pair(s.algo, s.math));
  }
  return setMath(s);
}

/// Descriptors, scratch and algorithm of a site whose geometry and buffers
/// are set.
Status prepare(const char *kName, ConvSite &s) {
  REQUIRE(s.state->cudnn, "the device has no cuDNN handle");
  cudaStream_t bound = nullptr;
  RETURN_IF_CUDA_ERROR(cudnnGetStream(s.state->cudnn, &bound));
  REQUIRE(bound == s.state->compute,
          "the device's cuDNN handle is not bound to its compute stream");
  const WindowGeometry &g = s.g;
  s.padded = !g.symmetric();
  s.padding = {g.n,           g.h.in,       g.w.in,        g.c,
               g.h.padBefore, g.h.padAfter, g.w.padBefore, g.w.padAfter};
  int64_t inH = s.padded ? s.padding.paddedH() : g.h.in;
  int64_t inW = s.padded ? s.padding.paddedW() : g.w.in;
  for (int64_t n :
       {g.n * inH * inW * g.c, s.yElements(), s.filterRows() * s.filters})
    REQUIRE(fitsInt(n), "a tensor of " + std::to_string(n) +
                            " elements is too large for cuDNN's 32-bit "
                            "descriptors");

  RETURN_IF_ERROR(s.xDesc.create());
  RETURN_IF_ERROR(s.yDesc.create());
  RETURN_IF_ERROR(s.wDesc.create());
  RETURN_IF_ERROR(s.convDesc.create());
  auto i = [](int64_t v) { return static_cast<int>(v); };
  RETURN_IF_CUDA_ERROR(cudnnSetTensor4dDescriptor(
      s.xDesc.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(g.n), i(g.c),
      i(inH), i(inW)));
  RETURN_IF_CUDA_ERROR(cudnnSetTensor4dDescriptor(
      s.yDesc.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, i(g.n), i(s.filters),
      i(g.h.out), i(g.w.out)));
  RETURN_IF_CUDA_ERROR(cudnnSetFilter4dDescriptor(
      s.wDesc.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i(s.filters), i(g.c),
      i(g.h.window), i(g.w.window)));
  RETURN_IF_CUDA_ERROR(cudnnSetConvolution2dDescriptor(
      s.convDesc.get(), s.padded ? 0 : i(g.h.padBefore),
      s.padded ? 0 : i(g.w.padBefore), i(g.h.stride), i(g.w.stride),
      i(g.h.dilation), i(g.w.dilation), CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  // fp32: FMA math, no TF32 whatever the GPU allows by default; tf32:
  // cuDNN's default math, under which its heuristics rank tensor-op
  // algorithms too.
  RETURN_IF_CUDA_ERROR(cudnnSetConvolutionMathType(
      s.convDesc.get(), s.state->tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH));
  // cuDNN's own idea of the output must be the reference's.
  int on = 0, oc = 0, oh = 0, ow = 0;
  RETURN_IF_CUDA_ERROR(cudnnGetConvolution2dForwardOutputDim(
      s.convDesc.get(), s.xDesc.get(), s.wDesc.get(), &on, &oc, &oh, &ow));
  REQUIRE(on == g.n && oc == s.filters && oh == g.h.out && ow == g.w.out,
          "cuDNN computes output " + shapeText({on, oh, ow, oc}) +
              " where the op has " +
              shapeText({g.n, g.h.out, g.w.out, s.filters}));

  // Scratch: the transposed filter, then the padded copy.
  size_t filterBytes =
      alignUp(size_t(s.filterRows() * s.filters) * sizeof(float));
  size_t paddedBytes =
      s.padded ? alignUp(size_t(s.padding.paddedElements()) * sizeof(float))
               : 0;
  size_t scratchBytes = filterBytes + paddedBytes;
  char *scratch = nullptr;
  if (s.state->workspace && scratchBytes <= s.state->workspaceBytes) {
    scratch = static_cast<char *>(s.state->workspace);
    s.cudnnWorkspace = scratch + scratchBytes;
    s.cudnnWorkspaceBytes = s.state->workspaceBytes - scratchBytes;
  } else {
    RETURN_IF_ERROR(s.ownScratch.allocate(s.state->ordinal, scratchBytes));
    scratch = static_cast<char *>(s.ownScratch.data());
    s.cudnnWorkspace = s.state->workspace;
    s.cudnnWorkspaceBytes = s.state->workspace ? s.state->workspaceBytes : 0;
  }
  s.filterScratch = reinterpret_cast<float *>(scratch);
  if (s.padded)
    s.paddedScratch = reinterpret_cast<float *>(scratch + filterBytes);
  if (s.cudnnWorkspaceBytes == 0)
    s.cudnnWorkspace = nullptr;
  return chooseAlgorithm(kName, s);
}

Status runConv(const ConvSite &s) {
  cudaStream_t stream = s.state->compute;
  cudnnHandle_t h = s.state->cudnn;
  const float one = 1.0f, zero = 0.0f;
  switch (s.pass) {
  case Pass::forward: {
    RETURN_IF_CUDA_ERROR(launchTranspose(s.kernel, s.filterScratch,
                                         s.filterRows(), s.filters, stream));
    const float *x = s.x;
    if (s.padded) {
      RETURN_IF_CUDA_ERROR(
          launchPadNhwc(s.x, s.paddedScratch, s.padding, stream));
      x = s.paddedScratch;
    }
    RETURN_IF_CUDA_ERROR(cudnnConvolutionForward(
        h, &one, s.xDesc.get(), x, s.wDesc.get(), s.filterScratch,
        s.convDesc.get(), static_cast<cudnnConvolutionFwdAlgo_t>(s.algo),
        s.cudnnWorkspace, s.cudnnWorkspaceBytes, &zero, s.yDesc.get(), s.out));
    if (s.epilogue)
      RETURN_IF_CUDA_ERROR(launchBiasActivation(
          s.out, s.bias, s.yElements(), s.filters, s.activation, stream));
    return Status::ok();
  }
  case Pass::backwardData: {
    RETURN_IF_CUDA_ERROR(launchTranspose(s.kernel, s.filterScratch,
                                         s.filterRows(), s.filters, stream));
    float *dx = s.padded ? s.paddedScratch : s.out;
    RETURN_IF_CUDA_ERROR(cudnnConvolutionBackwardData(
        h, &one, s.wDesc.get(), s.filterScratch, s.yDesc.get(), s.dy,
        s.convDesc.get(), static_cast<cudnnConvolutionBwdDataAlgo_t>(s.algo),
        s.cudnnWorkspace, s.cudnnWorkspaceBytes, &zero, s.xDesc.get(), dx));
    if (s.padded)
      RETURN_IF_CUDA_ERROR(
          launchCropNhwc(s.paddedScratch, s.out, s.padding, stream));
    return Status::ok();
  }
  case Pass::backwardFilter: {
    const float *x = s.x;
    if (s.padded) {
      RETURN_IF_CUDA_ERROR(
          launchPadNhwc(s.x, s.paddedScratch, s.padding, stream));
      x = s.paddedScratch;
    }
    RETURN_IF_CUDA_ERROR(cudnnConvolutionBackwardFilter(
        h, &one, s.xDesc.get(), x, s.yDesc.get(), s.dy, s.convDesc.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.algo), s.cudnnWorkspace,
        s.cudnnWorkspaceBytes, &zero, s.wDesc.get(), s.filterScratch));
    RETURN_IF_CUDA_ERROR(launchTranspose(s.filterScratch, s.out, s.filters,
                                         s.filterRows(), stream));
    return Status::ok();
  }
  }
  return Status::error("conv: unknown pass");
}

KernelFn kernelFnOf(std::shared_ptr<ConvSite> site) {
  return [site](const KernelContext &, const KernelConfig &, const Tensors &,
                const Tensors &) { return runConv(*site); };
}

/// conv2d and fused_conv2d. ins: x, HWIO kernel [, bias]; out: y.
Status instantiateForward(const char *kName, bool fused,
                          const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1));
  const TensorRef &x = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 4,
          "needs an HWIO kernel, got " + shapeText(k.shape));
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::forward;
  WindowGeometry &g = site->g;
  RETURN_IF_ERROR(resolveNonEmptyWindow(kName, cfg, x.shape, k.shape[0],
                                        k.shape[1], true, g));
  REQUIRE(k.shape[2] == g.c, "kernel input channels " +
                                 std::to_string(k.shape[2]) + " != input's " +
                                 std::to_string(g.c));
  site->filters = k.shape[3];
  REQUIRE(site->filters > 0, "kernel " + shapeText(k.shape) + " is empty");
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, site->filters};
  REQUIRE(outs[0].shape == expected, "output is " + shapeText(outs[0].shape) +
                                         ", expected " + shapeText(expected));
  if (fused) {
    if (ins.size() == 3) {
      REQUIRE(ins[2].elements() == site->filters,
              "bias " + shapeText(ins[2].shape) + " does not match " +
                  std::to_string(site->filters) + " filters");
      site->bias = ins[2].f32();
    }
    RETURN_IF_ERROR(parseActivation(kName, cfg.getString("activation", "none"),
                                    site->activation));
    site->epilogue = site->bias || site->activation != Activation::none;
  }
  site->x = x.f32();
  site->kernel = k.f32();
  site->out = outs[0].f32();
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  RETURN_IF_ERROR(prepare(kName, *site));
  out = kernelFnOf(std::move(site));
  return Status::ok();
}

Status conv2d(const KernelContext &ctx, const KernelConfig &cfg,
              const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return instantiateForward("conv2d", false, ctx, cfg, ins, outs, out);
}

Status fusedConv2d(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return instantiateForward("fused_conv2d", true, ctx, cfg, ins, outs, out);
}

/// ins: dy, HWIO kernel; out: dx (the forward input's shape).
Status conv2dGradInput(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_input";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &dy = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 4,
          "needs an HWIO kernel, got " + shapeText(k.shape));
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::backwardData;
  WindowGeometry &g = site->g;
  RETURN_IF_ERROR(resolveNonEmptyWindow(kName, cfg, outs[0].shape, k.shape[0],
                                        k.shape[1], true, g));
  site->filters = k.shape[3];
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, site->filters};
  REQUIRE(dy.shape == expected && k.shape[2] == g.c && site->filters > 0,
          "output_grad " + shapeText(dy.shape) + " and kernel " +
              shapeText(k.shape) + " do not match input_grad " +
              shapeText(outs[0].shape));
  site->dy = dy.f32();
  site->kernel = k.f32();
  site->out = outs[0].f32();
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  RETURN_IF_ERROR(prepare(kName, *site));
  out = kernelFnOf(std::move(site));
  return Status::ok();
}

/// ins: x, dy; out: the HWIO kernel gradient (its shape gives the window).
Status conv2dGradKernel(const KernelContext &ctx, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_kernel";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &x = ins[0], &dy = ins[1];
  const std::vector<int64_t> &ks = outs[0].shape;
  REQUIRE(ks.size() == 4, "needs an HWIO kernel_grad, got " + shapeText(ks));
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::backwardFilter;
  WindowGeometry &g = site->g;
  RETURN_IF_ERROR(
      resolveNonEmptyWindow(kName, cfg, x.shape, ks[0], ks[1], true, g));
  site->filters = ks[3];
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, site->filters};
  REQUIRE(dy.shape == expected && ks[2] == g.c && site->filters > 0,
          "output_grad " + shapeText(dy.shape) + " and input " +
              shapeText(x.shape) + " do not match kernel_grad " +
              shapeText(ks));
  site->x = x.f32();
  site->dy = dy.f32();
  site->out = outs[0].f32();
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  RETURN_IF_ERROR(prepare(kName, *site));
  out = kernelFnOf(std::move(site));
  return Status::ok();
}

} // namespace

void registerConvKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("conv2d", Backend::cuda, conv2d);
  r.addFactory("fused_conv2d", Backend::cuda, fusedConv2d);
  r.addFactory("conv2d_grad_input", Backend::cuda, conv2dGradInput);
  r.addFactory("conv2d_grad_kernel", Backend::cuda, conv2dGradKernel);
}

} // namespace graph::runtime::cuda
