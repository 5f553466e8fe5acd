//===- DenseKernels.cpp - dense and its gradients through cuBLASLt --------===//
//
// dense, fused_dense, dense_grad_input and dense_grad_kernel as one
// cuBLASLt matmul each. The plan's matrices are row-major ([rows, in] x
// [in, out]); cuBLASLt's are column-major, where a row-major [r, c] matrix
// is its own transpose, so each product is computed transposed:
//
//   dense:             y^T  = k^T  x^T    (m = out, n = rows, k = in)
//   dense_grad_input:  dx^T = k    dy^T   (m = in,  n = rows, k = out)
//   dense_grad_kernel: dk^T = dy^T x      (m = out, n = in,   k = rows)
//
// The compute type is the device's precision (CudaDeviceState::tf32):
// CUBLAS_COMPUTE_32F (no TF32) or CUBLAS_COMPUTE_32F_FAST_TF32. fused_dense's
// bias and relu are cuBLASLt epilogues (the bias runs along m, the output
// features); sigmoid and tanh, which cuBLASLt has no epilogue for, are one
// own kernel over y afterwards.
//
// Gradients land in bucket views at any 4-byte offset, so the heuristics
// are told each pointer's real alignment rather than the default 256.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include <map>
#include <memory>
#include <mutex>
#include <tuple>

namespace graph::runtime::cuda {

namespace {

/// Owns one cuBLASLt object.
template <typename T, cublasStatus_t (*Destroy)(T)> class LtObject {
public:
  LtObject() = default;
  ~LtObject() {
    if (handle_)
      (void)Destroy(handle_); // nothing to report to in a destructor
  }
  LtObject(const LtObject &) = delete;
  LtObject &operator=(const LtObject &) = delete;
  /// Where the create call writes the handle.
  T *receive() { return &handle_; }
  T get() const { return handle_; }

private:
  T handle_ = nullptr;
};

using MatmulDesc = LtObject<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy>;
using MatrixLayout =
    LtObject<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;
using MatmulPreference =
    LtObject<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy>;

/// A column-major product D[m, n] = op(A)[m, k] * op(B)[k, n].
struct Gemm {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  const float *a = nullptr, *b = nullptr;
  float *d = nullptr;
  int64_t lda = 0, ldb = 0, ldd = 0;
  cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const float *bias = nullptr; // for the BIAS epilogues
};

struct MatmulSite {
  CudaDeviceState *state = nullptr;
  Gemm gemm;
  MatmulDesc desc;
  MatrixLayout aLayout, bLayout, dLayout;
  cublasLtMatmulAlgo_t algo{};
  // An own activation after the matmul (sigmoid, tanh), over [n, m].
  Activation activation = Activation::none;
};

/// The largest power of two (at most 256) dividing `p`'s address.
uint32_t alignmentOf(const void *p) {
  auto address = reinterpret_cast<uintptr_t>(p);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0)
    alignment /= 2;
  return alignment;
}

using AlgoKey =
    std::tuple<int, bool, bool, int64_t, int64_t, int64_t, int, uint32_t,
               uint32_t, uint32_t, uint32_t, size_t, bool>;

std::mutex algoCacheMutex;
std::map<AlgoKey, cublasLtMatmulAlgo_t> algoCache;

template <typename T>
Status setDescAttribute(cublasLtMatmulDesc_t desc,
                        cublasLtMatmulDescAttributes_t attribute,
                        const T &value) {
  RETURN_IF_CUDA_ERROR(
      cublasLtMatmulDescSetAttribute(desc, attribute, &value, sizeof(value)));
  return Status::ok();
}

template <typename T>
Status setPreference(cublasLtMatmulPreference_t preference,
                     cublasLtMatmulPreferenceAttributes_t attribute,
                     const T &value) {
  RETURN_IF_CUDA_ERROR(cublasLtMatmulPreferenceSetAttribute(
      preference, attribute, &value, sizeof(value)));
  return Status::ok();
}

Status prepareMatmul(const char *kName, const KernelContext &ctx,
                     MatmulSite &s) {
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, s.state));
  REQUIRE(s.state->cublasLt, "the device has no cuBLASLt handle");
  const Gemm &g = s.gemm;
  REQUIRE(g.m > 0 && g.n > 0 && g.k > 0,
          "empty product: m " + std::to_string(g.m) + ", n " +
              std::to_string(g.n) + ", k " + std::to_string(g.k));
  RETURN_IF_CUDA_ERROR(cublasLtMatmulDescCreate(
      s.desc.receive(),
      s.state->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
      CUDA_R_32F));
  cublasOperation_t opA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  RETURN_IF_ERROR(
      setDescAttribute(s.desc.get(), CUBLASLT_MATMUL_DESC_TRANSA, opA));
  RETURN_IF_ERROR(
      setDescAttribute(s.desc.get(), CUBLASLT_MATMUL_DESC_TRANSB, opB));
  RETURN_IF_ERROR(setDescAttribute(s.desc.get(), CUBLASLT_MATMUL_DESC_EPILOGUE,
                                   g.epilogue));
  if (g.bias) {
    const void *bias = g.bias;
    RETURN_IF_ERROR(setDescAttribute(s.desc.get(),
                                     CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias));
  }
  // Layouts of the matrices as stored (before op).
  auto rows = [](bool trans, int64_t r, int64_t c) { return trans ? c : r; };
  auto cols = [](bool trans, int64_t r, int64_t c) { return trans ? r : c; };
  RETURN_IF_CUDA_ERROR(cublasLtMatrixLayoutCreate(
      s.aLayout.receive(), CUDA_R_32F, rows(g.transA, g.m, g.k),
      cols(g.transA, g.m, g.k), g.lda));
  RETURN_IF_CUDA_ERROR(cublasLtMatrixLayoutCreate(
      s.bLayout.receive(), CUDA_R_32F, rows(g.transB, g.k, g.n),
      cols(g.transB, g.k, g.n), g.ldb));
  RETURN_IF_CUDA_ERROR(cublasLtMatrixLayoutCreate(s.dLayout.receive(),
                                                  CUDA_R_32F, g.m, g.n, g.ldd));

  uint32_t alignA = alignmentOf(g.a), alignB = alignmentOf(g.b),
           alignD = alignmentOf(g.d),
           alignBias = g.bias ? alignmentOf(g.bias) : 256;
  size_t workspace = s.state->workspace ? s.state->workspaceBytes : 0;
  AlgoKey key{s.state->ordinal,
              g.transA,
              g.transB,
              g.m,
              g.n,
              g.k,
              static_cast<int>(g.epilogue),
              alignA,
              alignB,
              alignD,
              alignBias,
              workspace,
              s.state->tf32};
  {
    std::lock_guard<std::mutex> lock(algoCacheMutex);
    auto it = algoCache.find(key);
    if (it != algoCache.end()) {
      s.algo = it->second;
      return Status::ok();
    }
  }
  MatmulPreference preference;
  RETURN_IF_CUDA_ERROR(cublasLtMatmulPreferenceCreate(preference.receive()));
  uint64_t maxWorkspace = workspace;
  RETURN_IF_ERROR(setPreference(preference.get(),
                                CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                maxWorkspace));
  RETURN_IF_ERROR(setPreference(
      preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, alignA));
  RETURN_IF_ERROR(setPreference(
      preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, alignB));
  RETURN_IF_ERROR(setPreference(
      preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, alignD));
  RETURN_IF_ERROR(setPreference(
      preference.get(), CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, alignD));
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int returned = 0;
  RETURN_IF_CUDA_ERROR(cublasLtMatmulAlgoGetHeuristic(
      s.state->cublasLt, s.desc.get(), s.aLayout.get(), s.bLayout.get(),
      s.dLayout.get(), s.dLayout.get(), preference.get(), 8, results,
      &returned));
  bool found = false;
  for (int i = 0; i < returned && !found; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS &&
        results[i].workspaceSize <= workspace) {
      s.algo = results[i].algo;
      found = true;
    }
  REQUIRE(found, "cuBLASLt offers no algorithm for m " + std::to_string(g.m) +
                     ", n " + std::to_string(g.n) + ", k " +
                     std::to_string(g.k) + " within " +
                     std::to_string(workspace) + " bytes of workspace");
  std::lock_guard<std::mutex> lock(algoCacheMutex);
  algoCache.emplace(key, s.algo);
  return Status::ok();
}

Status runMatmul(const MatmulSite &s) {
  const Gemm &g = s.gemm;
  const float one = 1.0f, zero = 0.0f;
  size_t workspace = s.state->workspace ? s.state->workspaceBytes : 0;
  // beta = 0: C (= D) is not read.
  RETURN_IF_CUDA_ERROR(cublasLtMatmul(
      s.state->cublasLt, s.desc.get(), &one, g.a, s.aLayout.get(), g.b,
      s.bLayout.get(), &zero, g.d, s.dLayout.get(), g.d, s.dLayout.get(),
      &s.algo, s.state->workspace, workspace, s.state->compute));
  if (s.activation != Activation::none)
    RETURN_IF_CUDA_ERROR(launchBiasActivation(g.d, nullptr, g.m * g.n, g.m,
                                              s.activation, s.state->compute));
  return Status::ok();
}

Status finish(const char *kName, const KernelContext &ctx,
              std::shared_ptr<MatmulSite> site, KernelFn &out) {
  RETURN_IF_ERROR(prepareMatmul(kName, ctx, *site));
  out = [site](const KernelContext &, const KernelConfig &, const Tensors &,
               const Tensors &) { return runMatmul(*site); };
  return Status::ok();
}

/// dense and fused_dense. ins: x [..., in], kernel [in, out] [, bias].
Status instantiateDense(const char *kName, bool fused, const KernelContext &ctx,
                        const KernelConfig &cfg, const Tensors &ins,
                        const Tensors &outs, KernelFn &out) {
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, fused ? 3 : 2, 1));
  const TensorRef &x = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 2 && !x.shape.empty() &&
              x.shape.back() == k.shape[0],
          "x " + shapeText(x.shape) + " and kernel " + shapeText(k.shape) +
              " do not chain");
  int64_t in = k.shape[0], features = k.shape[1];
  REQUIRE(in > 0, "kernel " + shapeText(k.shape) + " is empty");
  std::vector<int64_t> expected = x.shape;
  expected.back() = features;
  REQUIRE(outs[0].shape == expected, "output is " + shapeText(outs[0].shape) +
                                         ", expected " + shapeText(expected));
  auto site = std::make_shared<MatmulSite>();
  Gemm &g = site->gemm;
  g.m = features;
  g.n = x.elements() / in;
  g.k = in;
  g.a = k.f32();
  g.lda = features;
  g.b = x.f32();
  g.ldb = in;
  g.d = outs[0].f32();
  g.ldd = features;
  Activation activation = Activation::none;
  if (fused) {
    if (ins.size() == 3) {
      REQUIRE(ins[2].elements() == features,
              "bias " + shapeText(ins[2].shape) + " does not match " +
                  std::to_string(features) + " features");
      g.bias = ins[2].f32();
    }
    RETURN_IF_ERROR(parseActivation(kName, cfg.getString("activation", "none"),
                                    activation));
  }
  if (activation == Activation::relu) {
    g.epilogue = g.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
  } else {
    g.epilogue = g.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    site->activation = activation;
  }
  return finish(kName, ctx, std::move(site), out);
}

Status dense(const KernelContext &ctx, const KernelConfig &cfg,
             const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return instantiateDense("dense", false, ctx, cfg, ins, outs, out);
}

Status fusedDense(const KernelContext &ctx, const KernelConfig &cfg,
                  const Tensors &ins, const Tensors &outs, KernelFn &out) {
  return instantiateDense("fused_dense", true, ctx, cfg, ins, outs, out);
}

/// dx[r, i] = sum_j dy[r, j] * k[i, j]. ins: dy, kernel; out: dx.
Status denseGradInput(const KernelContext &ctx, const KernelConfig &,
                      const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "dense_grad_input";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &dy = ins[0], &k = ins[1];
  REQUIRE(k.shape.size() == 2 && !dy.shape.empty() &&
              dy.shape.back() == k.shape[1],
          "output_grad " + shapeText(dy.shape) + " and kernel " +
              shapeText(k.shape) + " do not chain");
  int64_t in = k.shape[0], features = k.shape[1];
  REQUIRE(features > 0, "kernel " + shapeText(k.shape) + " is empty");
  int64_t rows = dy.elements() / features;
  REQUIRE(outs[0].elements() == rows * in,
          "input_grad " + shapeText(outs[0].shape) + " is not " +
              std::to_string(rows) + " rows of " + std::to_string(in));
  auto site = std::make_shared<MatmulSite>();
  Gemm &g = site->gemm;
  g.transA = true;
  g.m = in;
  g.n = rows;
  g.k = features;
  g.a = k.f32();
  g.lda = features;
  g.b = dy.f32();
  g.ldb = features;
  g.d = outs[0].f32();
  g.ldd = in;
  return finish(kName, ctx, std::move(site), out);
}

/// dk[i, j] = sum_r x[r, i] * dy[r, j]. ins: x, dy; out: dk [in, out].
Status denseGradKernel(const KernelContext &ctx, const KernelConfig &,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "dense_grad_kernel";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  const TensorRef &x = ins[0], &dy = ins[1];
  REQUIRE(!x.shape.empty() && !dy.shape.empty(), "needs ranked operands");
  int64_t in = x.shape.back(), features = dy.shape.back();
  REQUIRE(in > 0 && features > 0, "x " + shapeText(x.shape) +
                                      " or output_grad " + shapeText(dy.shape) +
                                      " is empty");
  int64_t rows = x.elements() / in;
  REQUIRE(dy.elements() == rows * features,
          "x " + shapeText(x.shape) + " and output_grad " +
              shapeText(dy.shape) + " differ in rows");
  REQUIRE(outs[0].shape == (std::vector<int64_t>{in, features}),
          "kernel_grad is " + shapeText(outs[0].shape) + ", expected " +
              shapeText({in, features}));
  auto site = std::make_shared<MatmulSite>();
  Gemm &g = site->gemm;
  g.transB = true;
  g.m = features;
  g.n = in;
  g.k = rows;
  g.a = dy.f32();
  g.lda = features;
  g.b = x.f32();
  g.ldb = in;
  g.d = outs[0].f32();
  g.ldd = features;
  return finish(kName, ctx, std::move(site), out);
}

} // namespace

void registerDenseKernels() {
  KernelRegistry &r = KernelRegistry::global();
  r.addFactory("dense", Backend::cuda, dense);
  r.addFactory("fused_dense", Backend::cuda, fusedDense);
  r.addFactory("dense_grad_input", Backend::cuda, denseGradInput);
  r.addFactory("dense_grad_kernel", Backend::cuda, denseGradKernel);
}

} // namespace graph::runtime::cuda
