//===- ConvKernels.cpp - conv2d and its gradients through cuDNN -----------===//
//
// conv2d, fused_conv2d, conv2d_grad_input and conv2d_grad_kernel on cuDNN's
// convolution API: NHWC tensors and an OHWI filter (cuDNN's KRSC, format
// CUDNN_TENSOR_NHWC). The plan's kernel is that filter when the config's
// filter_layout is ohwi ([F, kh, kw, C / groups], graphc's layout for a
// kernel variable only convolutions read): cuDNN reads it, and the
// backward-filter pass writes the gradient, where they lie. The math is the
// device's precision (CudaDeviceState::tf32): FMA math in fp32, so no TF32
// rounding and results match the reference within float tolerance; in tf32
// cuDNN's default math, which lets it pick tensor-op algorithms (PyTorch's
// allow_tf32 for cuDNN does the same).
//
// Per step, in the launch site's scratch (the front of the device
// workspace, or memory of its own when that is too small):
//   - for an HWIO kernel only (filter_layout hwio, the default): the kernel
//     transposed to OHWI (forward, backward data), or the OHWI filter
//     gradient transposed back to HWIO (backward filter); an OHWI kernel
//     takes no transpose and no filter scratch. Grouped convolutions
//     (`groups` > 1, depthwise included) are one cuDNN convolution with
//     cudnnSetConvolutionGroupCount: their HWIO kernel is
//     [kh, kw, C / groups, F] with filter f in group f / (F / groups) (or
//     Keras' depthwise [kh, kw, C, m], the same memory as [kh, kw, 1, C * m]),
//     so the same transpose gives cuDNN's grouped KRSC filter [F, kh, kw,
//     C / groups], which is also the OHWI kernel (a depthwise one
//     [C * m, kh, kw, 1]);
//   - for a `same` padding with an odd total, which cuDNN cannot express
//     (it pads symmetrically), a zero-padded copy of the input (forward,
//     backward filter) or of the input gradient (backward data, cropped
//     afterwards); the convolution itself then pads nothing.
// fused_conv2d with a bias and relu or no activation is one
// cudnnConvolutionBiasActivationForward when cuDNN runs that combination
// (tried once at instantiation: prepareFusedBiasActivation); otherwise, and
// for sigmoid and tanh, cudnnConvolutionForward plus an own
// bias-and-activation epilogue kernel (one more pass over y).
//
// With few input channels (a first layer), fused_conv2d_pool
// (PoolNormKernels.cu) and conv2d_grad_kernel take the direct forms of
// DirectConv.h instead of cuDNN.
//
// The algorithm is chosen once per shape at start-up, like PyTorch's
// cudnn.benchmark: measured by cudnnFind*Algorithm (fastest deterministic
// algorithm that fits the workspace first) and kept in the plan's
// algorithm file (CudaDeviceState::convAlgos, ConvAlgoCache.h), so a later
// run reads it instead of measuring; cuDNN's heuristics (cudnnGet*_v7)
// when measuring fails.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/ConvAlgoCache.h"
#include "runtime/backends/cuda/kernels/CudaKernels.h"
#include "runtime/core/FusedOpParts.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
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
using ActivationDescriptor =
    Descriptor<cudnnActivationDescriptor_t, cudnnCreateActivationDescriptor,
               cudnnDestroyActivationDescriptor>;

enum class Pass { forward, backwardData, backwardFilter };

/// What a convolution launch site keeps: geometry, descriptors, algorithm,
/// buffers and scratch.
struct ConvSite {
  Pass pass = Pass::forward;
  CudaDeviceState *state = nullptr;
  WindowGeometry g;
  int64_t filters = 0;
  // Grouped convolution: `groups` groups of C / groups input channels.
  int64_t groups = 1;
  int64_t channelsPerGroup = 0;
  // The plan's kernel layout: HWIO is transposed every step, OHWI is
  // cuDNN's filter as it lies.
  FilterLayout layout = FilterLayout::hwio;
  // The launch's buffers. forward: x, kernel -> y (plus bias);
  // backwardData: dy, kernel -> dx; backwardFilter: x, dy -> kernel grad.
  const float *x = nullptr;
  const float *kernel = nullptr;
  const float *dy = nullptr;
  const float *bias = nullptr;
  float *out = nullptr;
  Activation activation = Activation::none;
  bool epilogue = false;
  // fused_conv2d with a bias and relu or no activation: one
  // cudnnConvolutionBiasActivationForward (its algorithm may differ from
  // the plain forward's: identity runs only with IMPLICIT_PRECOMP_GEMM).
  bool fusedBiasAct = false;
  int fusedAlgo = 0;
  TensorDescriptor biasDesc;
  ActivationDescriptor actDesc;

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

  int64_t filterRows() const {
    return g.h.window * g.w.window * channelsPerGroup;
  }
  bool transposesFilter() const { return layout == FilterLayout::hwio; }
  /// The OHWI filter cuDNN reads (forward, backward data): the plan's
  /// kernel, or its transpose in the scratch.
  const float *filter() const {
    return transposesFilter() ? filterScratch : kernel;
  }
  int64_t yElements() const { return g.n * g.h.out * g.w.out * filters; }
};

/// The chosen algorithm and its workspace, per convolution shape and
/// device: launch sites of one shape (replicas, repeated layers) ask
/// cuDNN's heuristics once.
using AlgoKey =
    std::tuple<int, int, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t,
               bool, size_t, bool, int64_t>;

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
          s.state->tf32,
          s.groups};
}

bool isTensorOpMath(cudnnMathType_t math) {
  return math == CUDNN_TENSOR_OP_MATH ||
         math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

/// The first of cuDNN's ranked `perf` results that is usable: it succeeded,
/// runs without tensor-op (TF32) math unless `tf32`, is supported by the
/// descriptors (`workspaceOf` returns false otherwise) and needs at most
/// `limit` bytes; deterministic algorithms first, then any. `fallbacks` (in
/// order, FMA math) when the results offer nothing usable. Measured results
/// (cudnnFind*) come fastest first, so this is the fastest deterministic
/// algorithm that fits; deterministic first keeps a run reproducible.
template <typename Perf, typename Algo, typename WorkspaceOf>
bool pickAlgorithm(const std::vector<Perf> &perf, int returned,
                   std::initializer_list<Algo> fallbacks, size_t limit,
                   bool tf32, WorkspaceOf workspaceOf, Algo &chosen,
                   cudnnMathType_t &math, float &milliseconds) {
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
        milliseconds = p.time;
        return true;
      }
    }
  for (Algo algo : fallbacks)
    if (usable(algo)) {
      chosen = algo;
      math = CUDNN_FMA_MATH;
      milliseconds = 0;
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

/// The GPU's name, for the algorithm file's key (asked once per GPU).
std::string deviceNameOf(int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::string> names;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = names.find(ordinal);
  if (it != names.end())
    return it->second;
  cudaDeviceProp prop{};
  std::string name = cudaGetDeviceProperties(&prop, ordinal) == cudaSuccess
                         ? std::string(prop.name)
                         : "GPU " + std::to_string(ordinal);
  names.emplace(ordinal, name);
  return name;
}

/// The site's key in the algorithm file (ConvAlgoCache.h).
ConvAlgoKey fileKeyOf(const ConvSite &s) {
  ConvAlgoKey k;
  k.pass = s.pass == Pass::forward        ? "fwd"
           : s.pass == Pass::backwardData ? "bwd_data"
                                          : "bwd_filter";
  const WindowGeometry &g = s.g;
  k.n = g.n;
  k.h = s.padded ? s.padding.paddedH() : g.h.in;
  k.w = s.padded ? s.padding.paddedW() : g.w.in;
  k.c = g.c;
  k.filters = s.filters;
  k.groups = s.groups;
  k.kh = g.h.window;
  k.kw = g.w.window;
  k.strideH = g.h.stride;
  k.strideW = g.w.stride;
  k.dilationH = g.h.dilation;
  k.dilationW = g.w.dilation;
  k.padH = s.padded ? 0 : g.h.padBefore;
  k.padW = s.padded ? 0 : g.w.padBefore;
  k.workspaceLimit = s.cudnnWorkspaceBytes;
  k.device = deviceNameOf(s.state->ordinal);
  k.cudnnVersion = static_cast<int64_t>(cudnnGetVersion());
  k.precision = s.state->tf32 ? "tf32" : "fp32";
  return k;
}

/// One pass's algorithm: from the plan's algorithm file when it has a
/// usable entry, else measured (`find`, cudnnFind*Algorithm: each candidate
/// run once on buffers cuDNN allocates, so the arena is untouched) and
/// written to the file, else ranked by the heuristics (`heuristics`,
/// cudnnGet*_v7, which run nothing) when measuring fails.
template <typename Perf, typename Algo, typename Rank, typename WorkspaceOf>
Status choosePass(ConvSite &s, Rank find, Rank heuristics,
                  std::initializer_list<Algo> fallbacks,
                  WorkspaceOf workspaceOf, bool &found) {
  const bool tf32 = s.state->tf32;
  const size_t limit = s.cudnnWorkspaceBytes;
  ConvAlgoCache *file = s.state->convAlgos;
  ConvAlgoKey key = fileKeyOf(s);
  if (file)
    if (std::optional<ConvAlgoChoice> c = file->find(key)) {
      // An entry that no longer fits (another limit, a hand edit) is
      // measured again.
      auto math = static_cast<cudnnMathType_t>(c->math);
      size_t bytes = 0;
      if ((tf32 || !isTensorOpMath(math)) &&
          workspaceOf(static_cast<Algo>(c->algo), bytes) && bytes <= limit) {
        s.algo = c->algo;
        s.math = math;
        found = true;
        return Status::ok();
      }
    }
  std::vector<Perf> perf;
  int returned = 0;
  Algo algo{};
  float ms = 0;
  bool measured = false;
  if (Status m = find(perf, returned); m) {
    measured = true;
    found = pickAlgorithm(perf, returned, fallbacks, limit, tf32, workspaceOf,
                          algo, s.math, ms);
  } else {
    (void)cudaGetLastError(); // measuring is an optimisation
  }
  if (!found) {
    measured = false;
    RETURN_IF_ERROR(heuristics(perf, returned));
    found = pickAlgorithm(perf, returned, fallbacks, limit, tf32, workspaceOf,
                          algo, s.math, ms);
  }
  if (!found)
    return Status::ok();
  s.algo = algo;
  if (file && measured) {
    size_t bytes = 0;
    (void)workspaceOf(algo, bytes);
    file->insert(key, {static_cast<int>(algo), static_cast<int>(s.math),
                       static_cast<uint64_t>(bytes), ms});
  }
  return Status::ok();
}

Status chooseAlgorithm(const char *kName, ConvSite &s) {
  AlgoKey key = algoKeyOf(s);
  // With a plan's algorithm file, the file is the cache (read into memory);
  // without one, choices are kept per process here.
  const bool perProcess = s.state->convAlgos == nullptr;
  if (perProcess) {
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    auto it = algoCache.find(key);
    if (it != algoCache.end()) {
      s.algo = it->second.first;
      s.math = it->second.second;
      return setMath(s);
    }
  }
  cudnnHandle_t h = s.state->cudnn;
  bool found = false;
  if (s.pass == Pass::forward) {
    using Perf = cudnnConvolutionFwdAlgoPerf_t;
    auto rank = [&](bool measure) {
      return [&, measure](std::vector<Perf> &perf, int &returned) -> Status {
        int count = 0;
        RETURN_IF_CUDA_ERROR(
            cudnnGetConvolutionForwardAlgorithmMaxCount(h, &count));
        perf.assign(std::max(count, 1), Perf{});
        if (measure)
          RETURN_IF_CUDA_ERROR(cudnnFindConvolutionForwardAlgorithm(
              h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(), s.yDesc.get(),
              count, &returned, perf.data()));
        else
          RETURN_IF_CUDA_ERROR(cudnnGetConvolutionForwardAlgorithm_v7(
              h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(), s.yDesc.get(),
              count, &returned, perf.data()));
        return Status::ok();
      };
    };
    RETURN_IF_ERROR(choosePass<Perf>(
        s, rank(true), rank(false),
        {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
         CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM},
        [&](cudnnConvolutionFwdAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionForwardWorkspaceSize(
                     h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(),
                     s.yDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        found));
  } else if (s.pass == Pass::backwardData) {
    using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
    auto rank = [&](bool measure) {
      return [&, measure](std::vector<Perf> &perf, int &returned) -> Status {
        int count = 0;
        RETURN_IF_CUDA_ERROR(
            cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, &count));
        perf.assign(std::max(count, 1), Perf{});
        if (measure)
          RETURN_IF_CUDA_ERROR(cudnnFindConvolutionBackwardDataAlgorithm(
              h, s.wDesc.get(), s.yDesc.get(), s.convDesc.get(), s.xDesc.get(),
              count, &returned, perf.data()));
        else
          RETURN_IF_CUDA_ERROR(cudnnGetConvolutionBackwardDataAlgorithm_v7(
              h, s.wDesc.get(), s.yDesc.get(), s.convDesc.get(), s.xDesc.get(),
              count, &returned, perf.data()));
        return Status::ok();
      };
    };
    RETURN_IF_ERROR(choosePass<Perf>(
        s, rank(true), rank(false),
        {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0},
        [&](cudnnConvolutionBwdDataAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionBackwardDataWorkspaceSize(
                     h, s.wDesc.get(), s.yDesc.get(), s.convDesc.get(),
                     s.xDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        found));
  } else {
    using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
    auto rank = [&](bool measure) {
      return [&, measure](std::vector<Perf> &perf, int &returned) -> Status {
        int count = 0;
        RETURN_IF_CUDA_ERROR(
            cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, &count));
        perf.assign(std::max(count, 1), Perf{});
        if (measure)
          RETURN_IF_CUDA_ERROR(cudnnFindConvolutionBackwardFilterAlgorithm(
              h, s.xDesc.get(), s.yDesc.get(), s.convDesc.get(), s.wDesc.get(),
              count, &returned, perf.data()));
        else
          RETURN_IF_CUDA_ERROR(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
              h, s.xDesc.get(), s.yDesc.get(), s.convDesc.get(), s.wDesc.get(),
              count, &returned, perf.data()));
        return Status::ok();
      };
    };
    RETURN_IF_ERROR(choosePass<Perf>(
        s, rank(true), rank(false),
        {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
         CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0},
        [&](cudnnConvolutionBwdFilterAlgo_t a, size_t &bytes) {
          return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                     h, s.xDesc.get(), s.yDesc.get(), s.convDesc.get(),
                     s.wDesc.get(), a, &bytes) == CUDNN_STATUS_SUCCESS;
        },
        found));
  }
  REQUIRE(found,
          "cuDNN offers no algorithm for input " +
              shapeText({s.g.n, s.g.h.in, s.g.w.in, s.g.c}) + " and " +
              std::to_string(s.filters) + " filters that needs at most " +
              std::to_string(s.cudnnWorkspaceBytes) + " bytes of workspace");
  if (perProcess) {
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
      s.wDesc.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, i(s.filters),
      i(s.channelsPerGroup), i(g.h.window), i(g.w.window)));
  RETURN_IF_CUDA_ERROR(cudnnSetConvolution2dDescriptor(
      s.convDesc.get(), s.padded ? 0 : i(g.h.padBefore),
      s.padded ? 0 : i(g.w.padBefore), i(g.h.stride), i(g.w.stride),
      i(g.h.dilation), i(g.w.dilation), CUDNN_CROSS_CORRELATION,
      CUDNN_DATA_FLOAT));
  if (s.groups > 1)
    RETURN_IF_CUDA_ERROR(
        cudnnSetConvolutionGroupCount(s.convDesc.get(), i(s.groups)));
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

  // Scratch: the transposed filter (an HWIO kernel only), then the padded
  // copy; none for an OHWI kernel without odd padding.
  size_t filterBytes =
      s.transposesFilter()
          ? alignUp(size_t(s.filterRows() * s.filters) * sizeof(float))
          : 0;
  size_t paddedBytes =
      s.padded ? alignUp(size_t(s.padding.paddedElements()) * sizeof(float))
               : 0;
  size_t scratchBytes = filterBytes + paddedBytes;
  char *scratch = nullptr;
  if (scratchBytes == 0) {
    s.cudnnWorkspace = s.state->workspace;
    s.cudnnWorkspaceBytes = s.state->workspace ? s.state->workspaceBytes : 0;
  } else if (s.state->workspace && scratchBytes <= s.state->workspaceBytes) {
    scratch = static_cast<char *>(s.state->workspace);
    s.cudnnWorkspace = scratch + scratchBytes;
    s.cudnnWorkspaceBytes = s.state->workspaceBytes - scratchBytes;
  } else {
    RETURN_IF_ERROR(s.ownScratch.allocate(s.state->ordinal, scratchBytes));
    scratch = static_cast<char *>(s.ownScratch.data());
    s.cudnnWorkspace = s.state->workspace;
    s.cudnnWorkspaceBytes = s.state->workspace ? s.state->workspaceBytes : 0;
  }
  if (s.transposesFilter())
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
    if (s.transposesFilter())
      RETURN_IF_CUDA_ERROR(launchTranspose(s.kernel, s.filterScratch,
                                           s.filterRows(), s.filters, stream));
    const float *x = s.x;
    if (s.padded) {
      RETURN_IF_CUDA_ERROR(
          launchPadNhwc(s.x, s.paddedScratch, s.padding, stream));
      x = s.paddedScratch;
    }
    if (s.fusedBiasAct) {
      // y = act(conv(x) + 0 * y + bias): z is y, weighted 0.
      RETURN_IF_CUDA_ERROR(cudnnConvolutionBiasActivationForward(
          h, &one, s.xDesc.get(), x, s.wDesc.get(), s.filter(),
          s.convDesc.get(), static_cast<cudnnConvolutionFwdAlgo_t>(s.fusedAlgo),
          s.cudnnWorkspace, s.cudnnWorkspaceBytes, &zero, s.yDesc.get(), s.out,
          s.biasDesc.get(), s.bias, s.actDesc.get(), s.yDesc.get(), s.out));
      return Status::ok();
    }
    RETURN_IF_CUDA_ERROR(cudnnConvolutionForward(
        h, &one, s.xDesc.get(), x, s.wDesc.get(), s.filter(), s.convDesc.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(s.algo), s.cudnnWorkspace,
        s.cudnnWorkspaceBytes, &zero, s.yDesc.get(), s.out));
    if (s.epilogue)
      RETURN_IF_CUDA_ERROR(launchBiasActivation(
          s.out, s.bias, s.yElements(), s.filters, s.activation, stream));
    return Status::ok();
  }
  case Pass::backwardData: {
    if (s.transposesFilter())
      RETURN_IF_CUDA_ERROR(launchTranspose(s.kernel, s.filterScratch,
                                           s.filterRows(), s.filters, stream));
    float *dx = s.padded ? s.paddedScratch : s.out;
    RETURN_IF_CUDA_ERROR(cudnnConvolutionBackwardData(
        h, &one, s.wDesc.get(), s.filter(), s.yDesc.get(), s.dy,
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
    // An OHWI gradient is cuDNN's: written where it lies.
    float *dw = s.transposesFilter() ? s.filterScratch : s.out;
    RETURN_IF_CUDA_ERROR(cudnnConvolutionBackwardFilter(
        h, &one, s.xDesc.get(), x, s.yDesc.get(), s.dy, s.convDesc.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(s.algo), s.cudnnWorkspace,
        s.cudnnWorkspaceBytes, &zero, s.wDesc.get(), dw));
    if (s.transposesFilter())
      RETURN_IF_CUDA_ERROR(launchTranspose(s.filterScratch, s.out, s.filters,
                                           s.filterRows(), stream));
    return Status::ok();
  }
  }
  return Status::error("conv: unknown pass");
}

/// Moves a fused_conv2d's bias and activation into cuDNN's fused call when
/// it offers them (a bias with relu or with no activation), so y is written
/// once. Whether cuDNN runs the combination (NHWC float, this math, this
/// algorithm) is known only by trying: one call at instantiation, outside
/// any step, on the site's own buffers (y is rewritten by every step);
/// CUDNN_STATUS_NOT_SUPPORTED keeps the epilogue kernel.
Status prepareFusedBiasActivation(ConvSite &s) {
  if (!s.bias ||
      (s.activation != Activation::relu && s.activation != Activation::none))
    return Status::ok();
  cudnnHandle_t h = s.state->cudnn;
  auto algo = static_cast<cudnnConvolutionFwdAlgo_t>(s.algo);
  if (s.activation == Activation::none) {
    // cuDNN runs CUDNN_ACTIVATION_IDENTITY with this algorithm only.
    algo = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    size_t bytes = 0;
    if (cudnnGetConvolutionForwardWorkspaceSize(
            h, s.xDesc.get(), s.wDesc.get(), s.convDesc.get(), s.yDesc.get(),
            algo, &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > s.cudnnWorkspaceBytes)
      return Status::ok();
  }
  RETURN_IF_ERROR(s.biasDesc.create());
  RETURN_IF_ERROR(s.actDesc.create());
  RETURN_IF_CUDA_ERROR(cudnnSetTensor4dDescriptor(
      s.biasDesc.get(), CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1,
      static_cast<int>(s.filters), 1, 1));
  RETURN_IF_CUDA_ERROR(cudnnSetActivationDescriptor(
      s.actDesc.get(),
      s.activation == Activation::relu ? CUDNN_ACTIVATION_RELU
                                       : CUDNN_ACTIVATION_IDENTITY,
      CUDNN_PROPAGATE_NAN, 0.0));
  const float one = 1.0f, zero = 0.0f;
  const float *x = s.padded ? s.paddedScratch : s.x;
  cudnnStatus_t tried = cudnnConvolutionBiasActivationForward(
      h, &one, s.xDesc.get(), x, s.wDesc.get(), s.filter(), s.convDesc.get(),
      algo, s.cudnnWorkspace, s.cudnnWorkspaceBytes, &zero, s.yDesc.get(),
      s.out, s.biasDesc.get(), s.bias, s.actDesc.get(), s.yDesc.get(), s.out);
  if (tried != CUDNN_STATUS_SUCCESS)
    return Status::ok(); // not offered for this combination: the epilogue
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(s.state->compute));
  s.fusedBiasAct = true;
  s.fusedAlgo = algo;
  s.epilogue = false;
  return Status::ok();
}

/// The site's geometry, filters, groups and kernel layout from NHWC
/// `input`, the kernel's shape `kernelShape` and the config's
/// `filter_layout` and `groups` (resolveConvWindow); `cc` gets the
/// channels.
Status setGeometry(const char *kName, const KernelConfig &cfg,
                   const std::vector<int64_t> &input,
                   const std::vector<int64_t> &kernelShape, ConvSite &site,
                   ConvChannels &cc) {
  RETURN_IF_ERROR(
      resolveConvWindow(kName, cfg, input, kernelShape, site.g, cc));
  site.filters = cc.filters;
  site.groups = cc.groups;
  site.channelsPerGroup = cc.channelsPerGroup;
  site.layout = cc.layout;
  return Status::ok();
}

KernelFn kernelFnOf(std::shared_ptr<ConvSite> site) {
  return [site](const KernelContext &, const KernelConfig &, const Tensors &,
                const Tensors &) { return runConv(*site); };
}

/// conv2d and fused_conv2d. ins: x, kernel (HWIO or OHWI) [, bias]; out: y.
Status instantiateForward(const char *kName, bool fused,
                          const KernelContext &ctx, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1));
  const TensorRef &x = ins[0], &k = ins[1];
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::forward;
  WindowGeometry &g = site->g;
  ConvChannels cc;
  RETURN_IF_ERROR(setGeometry(kName, cfg, x.shape, k.shape, *site, cc));
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
  if (fused)
    RETURN_IF_ERROR(prepareFusedBiasActivation(*site));
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

/// ins: dy, kernel (HWIO or OHWI); out: dx (the forward input's shape).
Status conv2dGradInput(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_input";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &dy = ins[0], &k = ins[1];
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::backwardData;
  WindowGeometry &g = site->g;
  ConvChannels cc;
  RETURN_IF_ERROR(setGeometry(kName, cfg, outs[0].shape, k.shape, *site, cc));
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, site->filters};
  REQUIRE(dy.shape == expected, "output_grad " + shapeText(dy.shape) +
                                    " and kernel " + shapeText(k.shape) +
                                    " do not match input_grad " +
                                    shapeText(outs[0].shape));
  site->dy = dy.f32();
  site->kernel = k.f32();
  site->out = outs[0].f32();
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  RETURN_IF_ERROR(prepare(kName, *site));
  out = kernelFnOf(std::move(site));
  return Status::ok();
}

/// ins: x, dy; out: the kernel gradient in the config's filter_layout (its
/// shape gives the window).
Status conv2dGradKernel(const KernelContext &ctx, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "conv2d_grad_kernel";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &x = ins[0], &dy = ins[1];
  const std::vector<int64_t> &ks = outs[0].shape;
  auto site = std::make_shared<ConvSite>();
  site->pass = Pass::backwardFilter;
  WindowGeometry &g = site->g;
  ConvChannels cc;
  RETURN_IF_ERROR(setGeometry(kName, cfg, x.shape, ks, *site, cc));
  std::vector<int64_t> expected = {g.n, g.h.out, g.w.out, site->filters};
  REQUIRE(dy.shape == expected, "output_grad " + shapeText(dy.shape) +
                                    " and input " + shapeText(x.shape) +
                                    " do not match kernel_grad " +
                                    shapeText(ks));
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  // Few input channels: the direct form, its partial sums in the device
  // workspace (DirectConv.h), written in the kernel's layout.
  DirectConv direct;
  if (directConvOf(g, cc, direct)) {
    const CudaDeviceState *state = site->state;
    int64_t groups = directKernelGradGroups(direct, state->workspaceBytes);
    if (groups > 0 && state->workspace) {
      const float *xs = x.f32(), *dys = dy.f32();
      float *grad = outs[0].f32();
      auto *partials = static_cast<double *>(state->workspace);
      out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
                const Tensors &) {
        RETURN_IF_CUDA_ERROR(launchKernelGradDirect(
            direct, xs, dys, grad, partials, groups, state->compute));
        return Status::ok();
      };
      return Status::ok();
    }
  }
  site->x = x.f32();
  site->dy = dy.f32();
  site->out = outs[0].f32();
  RETURN_IF_ERROR(prepare(kName, *site));
  out = kernelFnOf(std::move(site));
  return Status::ok();
}

/// fused_conv2d_pool_grad_kernel as the two ops graph-fuse joined, through
/// its workspace: this backend's max_pool2d_argmax_grad writes the dense
/// gradient there and its conv2d_grad_kernel reads it back, the launches
/// the unfused plan made (FusedOpParts.h). The workspace so holds the dense
/// gradient with or without `writes_workspace` (which asks for it). (The cpu
/// backend's kernel writes it only when asked.)
Status fusedConv2dPoolGradKernel(const KernelContext &ctx,
                                 const KernelConfig &cfg, const Tensors &ins,
                                 const Tensors &outs, KernelFn &out) {
  std::function<Status(const KernelContext &)> run;
  RETURN_IF_ERROR(
      convPoolGradThroughWorkspace(Backend::cuda, ctx, cfg, ins, outs, run));
  out = [run](const KernelContext &ctx, const KernelConfig &, const Tensors &,
              const Tensors &) { return run(ctx); };
  return Status::ok();
}

} // namespace

void registerConvKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("conv2d", Backend::cuda, conv2d);
  r.addFactory("fused_conv2d", Backend::cuda, fusedConv2d);
  r.addFactory("conv2d_grad_input", Backend::cuda, conv2dGradInput);
  r.addFactory("conv2d_grad_kernel", Backend::cuda, conv2dGradKernel);
  r.addFactory("fused_conv2d_pool_grad_kernel", Backend::cuda,
               fusedConv2dPoolGradKernel);
}

} // namespace graph::runtime::cuda
