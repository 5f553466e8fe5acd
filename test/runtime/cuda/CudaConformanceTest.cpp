//===- CudaConformanceTest.cpp - the CUDA kernels against the reference ---===//
//
// Every case of ConformanceCases.h (the cases the host backends pass), and
// the seed model's shapes at batch 32, run on the GPU and compared with the
// reference backend on the host. Each case runs twice: eagerly, and
// replayed from a CUDA graph captured in global mode (which fails on any
// allocation or synchronisation, as the executor's whole-step capture
// would). Outputs are filled with NaN before each run, so an element a
// kernel does not write fails the comparison.
//
// Tolerance, per element: |gpu - ref| <= tol * max(1, |ref|). The reference
// computes in double; the GPU stores f32 inputs and computes pointwise math
// in f32 (a few ulps, ~1e-7 relative) or double (reductions, losses,
// optimizer), so tol = 1e-5, the bar the cpu backend meets. Convolutions
// and matrix products accumulate K products in f32 inside cuDNN and
// cuBLASLt (TF32 off), in an order of the library's choosing and, for
// Winograd or FFT algorithms, through transforms that grow the rounding
// error; random-sign sums of K terms err by about sqrt(K) * 2^-24 * |ref|,
// 3e-6 relative at the seed model's largest K (3872): tol = 1e-4 leaves a
// margin for the transforms and still fails any indexing mistake by orders
// of magnitude.
//
// Every convolution case runs with its kernel in HWIO and in OHWI
// (filter_layout; ConformanceCases.h's ohwiTwin), the layout cuDNN reads
// without a transpose.
//
// The dropout test checks the device mask bit for bit against
// reference::dropoutKeep; the optimizer test runs an in-place Adam update
// over several steps, as the plan launches it.
//
//===----------------------------------------------------------------------===//

#include "CudaTestDevice.h"
#include "runtime/backends/cuda/ConvAlgoCache.h"

#include "ConformanceCases.h"
#include "KernelsNotOnCudaYet.h"

#include <cctype>
#include <cmath>
#include <memory>
#include <set>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

bool isContraction(const std::string &kernel) {
  static const std::set<std::string> contractions = {"conv2d",
                                                     "fused_conv2d",
                                                     "fused_conv2d_pool",
                                                     "conv2d_grad_input",
                                                     "conv2d_grad_kernel",
                                                     "dense",
                                                     "fused_dense",
                                                     "dense_grad_input",
                                                     "dense_grad_kernel"};
  return contractions.count(kernel) != 0;
}

double toleranceFor(const std::string &kernel) {
  return isContraction(kernel) ? 1e-4 : 1e-5;
}

/// The reference's outputs for `c` (whose max_pool2d_grad y it fills in).
std::vector<Tensor> runReference(Case &c) {
  std::vector<Tensor> outs;
  Status s = launchCase(c, Backend::reference, outs);
  EXPECT_TRUE(s.isOk()) << c.kernel << " (" << c.label
                        << ") on the reference: " << s.message();
  return outs;
}

void expectNear(const Case &c, const std::vector<Tensor> &actual,
                const std::vector<Tensor> &expected, double tol,
                const std::string &what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t o = 0; o < expected.size(); ++o) {
    if (isWorkspaceOutput(c, o))
      continue;
    std::vector<double> a = actual[o].values(), e = expected[o].values();
    ASSERT_EQ(a.size(), e.size()) << what << " output " << o;
    int failures = 0;
    for (size_t k = 0; k < e.size() && failures < 10; ++k)
      if (!(std::abs(a[k] - e[k]) <= tol * std::max(1.0, std::abs(e[k])))) {
        ADD_FAILURE() << what << " output " << o << " element " << k << ": gpu "
                      << a[k] << ", reference " << e[k] << " (tolerance " << tol
                      << ")";
        ++failures;
      }
  }
}

/// The case's buffers on the device and its instantiated kernel.
struct DeviceCase {
  std::vector<std::unique_ptr<DeviceTensor>> ins, outs;
  std::vector<TensorRef> inRefs, outRefs;
  KernelContext ctx;
  KernelFn fn;

  std::vector<Tensor> read(const Case &c) const {
    std::vector<Tensor> result = outputsOf(c); // f32, or the case's types
    for (size_t o = 0; o < outs.size(); ++o)
      outs[o]->read(result[o]);
    return result;
  }
  void poison() {
    for (auto &t : outs)
      t->poison();
  }
};

/// Copies `c`'s inputs to the device and instantiates its kernel.
void prepare(CudaTestDevice &device, const Case &c, DeviceCase &d) {
  for (const Tensor &t : c.ins) {
    d.ins.push_back(std::make_unique<DeviceTensor>(t));
    ASSERT_TRUE(d.ins.back()->ok());
    d.inRefs.push_back(d.ins.back()->ref());
  }
  for (const Tensor &t : outputsOf(c)) {
    d.outs.push_back(std::make_unique<DeviceTensor>(t));
    ASSERT_TRUE(d.outs.back()->ok());
    d.outRefs.push_back(d.outs.back()->ref());
  }
  d.ctx = device.context(c.ctx);
  device.setStep(c.ctx.step);
  Status s = KernelRegistry::global().instantiate(
      c.kernel, Backend::cuda, d.ctx, c.cfg, d.inRefs, d.outRefs, d.fn);
  ASSERT_TRUE(s.isOk()) << s.message();
}

/// One eager run; outputs poisoned first.
void runEager(CudaTestDevice &device, const Case &c, DeviceCase &d) {
  d.poison();
  Status s = d.fn(d.ctx, c.cfg, d.inRefs, d.outRefs);
  ASSERT_TRUE(s.isOk()) << s.message();
  cudaError_t e = cudaStreamSynchronize(device.state().compute);
  ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
}

/// One run captured into a CUDA graph and replayed; outputs poisoned first.
void runCaptured(CudaTestDevice &device, const Case &c, DeviceCase &d) {
  d.poison();
  cudaStream_t stream = device.state().compute;
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  Status s = d.fn(d.ctx, c.cfg, d.inRefs, d.outRefs);
  cudaGraph_t graph = nullptr;
  cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  ASSERT_TRUE(s.isOk()) << "during capture: " << s.message();
  ASSERT_EQ(ended, cudaSuccess) << cudaGetErrorString(ended);
  cudaGraphExec_t exec = nullptr;
  cudaError_t e = cudaGraphInstantiate(&exec, graph, 0);
  EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
  if (e == cudaSuccess) {
    e = cudaGraphLaunch(exec, stream);
    EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
    e = cudaStreamSynchronize(stream);
    EXPECT_EQ(e, cudaSuccess) << cudaGetErrorString(e);
    EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  }
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

void checkCase(Case c) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  std::vector<Tensor> expected = runReference(c);
  std::string what = c.kernel + " (" + c.label + ")";
  double tol = toleranceFor(c.kernel);
  DeviceCase d;
  ASSERT_NO_FATAL_FAILURE(prepare(*device, c, d));
  ASSERT_NO_FATAL_FAILURE(runEager(*device, c, d));
  expectNear(c, d.read(c), expected, tol, what + ", eager");
  ASSERT_NO_FATAL_FAILURE(runCaptured(*device, c, d));
  expectNear(c, d.read(c), expected, tol, what + ", CUDA graph");
}

std::string nameOf(const Case &c, size_t index) {
  std::string name = c.kernel + (c.label.empty() ? "" : "_" + c.label);
  for (char &ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return std::to_string(index) + "_" + name;
}

/// The conformance cases, built once per process (test names need them
/// too).
/// (Less those of the kernels the cuda backend does not have yet.)
const std::vector<Case> &conformanceCases() {
  static const std::vector<Case> cases = [] {
    std::vector<Case> all = allCases();
    std::erase_if(all, [](const Case &c) {
      return graph::runtime::testing::kKernelsNotOnCudaYet.count(c.kernel) !=
                 0 ||
             graph::runtime::testing::formNotOnCudaYet(c.kernel, c.cfg);
    });
    return all;
  }();
  return cases;
}

class CudaConformance : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaConformance, MatchesReference) {
  ASSERT_LT(GetParam(), conformanceCases().size());
  checkCase(conformanceCases()[GetParam()]);
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaConformance,
                         ::testing::Range<size_t>(0, conformanceCases().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           return nameOf(conformanceCases()[info.param],
                                         info.param);
                         });

/// graphrun's default precision: with CudaDeviceState::tf32 every
/// contraction case stays within TF32's rounding of the reference, by
/// ||gpu - reference|| / ||reference|| (about 3e-4 for TF32; the bar is
/// 2e-3), eager and captured.
TEST(CudaConformanceTf32, ContractionsStayWithinTf32Rounding) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  struct Restore {
    cuda::CudaDeviceState &state;
    ~Restore() { state.tf32 = false; }
  } restore{device->state()};
  device->state().tf32 = true;
  int checked = 0;
  for (Case c : conformanceCases()) {
    // fused_conv2d_pool's argmax is discrete: TF32's rounding flips it
    // between nearly equal maxima, so only fp32 checks it (above).
    if (!isContraction(c.kernel) || !c.outTypes.empty())
      continue;
    std::vector<Tensor> expected = runReference(c);
    DeviceCase d;
    ASSERT_NO_FATAL_FAILURE(prepare(*device, c, d));
    for (bool captured : {false, true}) {
      if (captured)
        ASSERT_NO_FATAL_FAILURE(runCaptured(*device, c, d));
      else
        ASSERT_NO_FATAL_FAILURE(runEager(*device, c, d));
      std::vector<Tensor> actual = d.read(c);
      ASSERT_EQ(actual.size(), expected.size());
      for (size_t o = 0; o < expected.size(); ++o) {
        std::vector<double> a = actual[o].values(), e = expected[o].values();
        ASSERT_EQ(a.size(), e.size());
        double diff = 0, norm = 0;
        for (size_t k = 0; k < e.size(); ++k) {
          diff += (a[k] - e[k]) * (a[k] - e[k]);
          norm += e[k] * e[k];
        }
        double relative = std::sqrt(diff) / std::max(std::sqrt(norm), 1e-30);
        EXPECT_LE(relative, 2e-3)
            << c.kernel << " (" << c.label << ") output " << o
            << (captured ? ", CUDA graph" : ", eager");
        EXPECT_TRUE(std::isfinite(relative))
            << c.kernel << " (" << c.label << ")";
      }
    }
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

/// With a plan's algorithm file (CudaDeviceState::convAlgos), every
/// convolution shape is measured once and written to it; a run that reads
/// the file back measures nothing (the cache stays clean) and computes the
/// same results.
TEST(CudaConvAlgoCache, MeasuredChoicesAreKeptAndReadBack) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  struct Restore {
    cuda::CudaDeviceState &state;
    ~Restore() { state.convAlgos = nullptr; }
  } restore{device->state()};
  // Every convolution case against the reference; returns how many ran.
  auto runConvolutions = [&](const std::string &how) {
    int convs = 0;
    for (Case c : conformanceCases()) {
      if (c.kernel.rfind("conv2d", 0) != 0 && c.kernel != "fused_conv2d")
        continue;
      std::vector<Tensor> expected = runReference(c);
      DeviceCase d;
      EXPECT_NO_FATAL_FAILURE(prepare(*device, c, d));
      EXPECT_NO_FATAL_FAILURE(runEager(*device, c, d));
      if (::testing::Test::HasFatalFailure())
        return convs;
      expectNear(c, d.read(c), expected, toleranceFor(c.kernel),
                 c.kernel + " (" + c.label + "), " + how);
      ++convs;
    }
    return convs;
  };
  cuda::ConvAlgoCache measured;
  device->state().convAlgos = &measured;
  int convs = runConvolutions("measured");
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_GT(convs, 0);
  EXPECT_GT(measured.size(), 0u);
  EXPECT_TRUE(measured.dirty());

  cuda::ConvAlgoCache reread;
  std::string why;
  int stale = 0;
  ASSERT_TRUE(reread.parse(measured.serialize(), cudnnGetVersion(), why, stale))
      << why;
  EXPECT_EQ(stale, 0);
  EXPECT_FALSE(reread.dirty());
  device->state().convAlgos = &reread;
  runConvolutions("from the file");
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_FALSE(reread.dirty()) << "a shape was measured again";
  EXPECT_EQ(reread.size(), measured.size());
}

/// The seed model's launches (examples/fashion_mnist_cnn.json) at batch 32:
/// sizes where cuDNN and cuBLASLt pick real algorithms, reductions span
/// many row groups and the optimizer many chunks.
std::vector<Case> seedCases() {
  std::vector<Case> cases;
  auto add = [&](std::string kernel, std::string label, KernelConfig cfg,
                 std::vector<Tensor> ins,
                 std::vector<std::vector<int64_t>> outs,
                 KernelContext ctx = {}) {
    cases.push_back({std::move(kernel), std::move(label), std::move(cfg),
                     std::move(ins), std::move(outs), ctx});
  };
  const int64_t b = 32;
  KernelConfig conv = window("valid", {1, 1}, {1, 1});
  KernelConfig convRelu = conv;
  convRelu.set("activation", std::string("relu"));
  add("fused_conv2d", "conv1", convRelu,
      {rnd({b, 28, 28, 1}, 101, 0, 1), rnd({3, 3, 1, 32}, 102), rnd({32}, 103)},
      {{b, 26, 26, 32}});
  // Conv 1 as the plan runs it: fused with its pool, the direct forms
  // (DirectConv.h, TilingPoolGrad.h) forward and backward.
  {
    KernelConfig fusedPool = convRelu;
    fusedPool.set("pool_size", std::vector<int64_t>{2, 2});
    fusedPool.set("pool_strides", std::vector<int64_t>{2, 2});
    fusedPool.set("pool_padding", std::string("valid"));
    cases.push_back({"fused_conv2d_pool",
                     "conv1",
                     fusedPool,
                     {rnd({b, 28, 28, 1}, 101, 0, 1), rnd({3, 3, 1, 32}, 102),
                      rnd({32}, 103)},
                     {{b, 13, 13, 32}, {b, 13, 13, 32}},
                     {},
                     {graph::plan::DType::f32, graph::plan::DType::i32}});
    add("conv2d_grad_kernel", "conv1", conv,
        {rnd({b, 28, 28, 1}, 101, 0, 1), rnd({b, 26, 26, 32}, 130)},
        {{3, 3, 1, 32}});
    KernelConfig reluPool = poolConfig("valid", 2, 2);
    reluPool.set("relu_grad", int64_t{1});
    auto [y, argmax] = poolWithArgmax(rnd({b, 26, 26, 32}, 131), reluPool);
    add("max_pool2d_argmax_grad", "pool1, relu_grad, input_grad_sum", reluPool,
        {argmax, y, rnd({b, 13, 13, 32}, 132)}, {{b, 26, 26, 32}, {32}});
  }
  add("fused_conv2d", "conv2", convRelu,
      {rnd({b, 13, 13, 32}, 104), rnd({3, 3, 32, 64}, 105), rnd({64}, 106)},
      {{b, 11, 11, 64}});
  add("conv2d_grad_input", "conv2", conv,
      {rnd({b, 11, 11, 64}, 107), rnd({3, 3, 32, 64}, 105)}, {{b, 13, 13, 32}});
  add("conv2d_grad_kernel", "conv2", conv,
      {rnd({b, 13, 13, 32}, 104), rnd({b, 11, 11, 64}, 107)}, {{3, 3, 32, 64}});
  KernelConfig pool = poolConfig("valid", 2, 2);
  add("max_pool2d", "pool2", pool, {distinct({b, 11, 11, 64}, 108)},
      {{b, 5, 5, 64}});
  add("max_pool2d_grad", "pool2", pool,
      {distinct({b, 11, 11, 64}, 108), Tensor::f32({b, 5, 5, 64}),
       rnd({b, 5, 5, 64}, 109)},
      {{b, 11, 11, 64}});
  add("bias_add_grad", "conv1", {}, {rnd({b, 26, 26, 32}, 110)}, {{32}});
  add("relu_grad", "conv2", {},
      {rnd({b, 11, 11, 64}, 111), rnd({b, 11, 11, 64}, 112)},
      {{b, 11, 11, 64}});
  add("flatten", "conv3", {}, {rnd({b, 3, 3, 64}, 113)}, {{b, 576}});
  KernelConfig denseRelu;
  denseRelu.set("activation", std::string("relu"));
  add("fused_dense", "dense1", denseRelu,
      {rnd({b, 576}, 114), rnd({576, 64}, 115), rnd({64}, 116)}, {{b, 64}});
  add("dense_grad_input", "dense1", {},
      {rnd({b, 64}, 117), rnd({576, 64}, 115)}, {{b, 576}});
  add("dense_grad_kernel", "dense1", {},
      {rnd({b, 576}, 114), rnd({b, 64}, 117)}, {{576, 64}});
  std::vector<double> oneHot(b * 10, 0.0);
  for (int64_t r = 0; r < b; ++r)
    oneHot[r * 10 + (r * 7) % 10] = 1.0;
  add("softmax_cross_entropy", "output", {},
      {rnd({b, 10}, 118, -4, 4), Tensor::f32({b, 10}, oneHot)},
      {{b, 10}, {}, {b, 10}});
  add("accuracy", "output", {},
      {rnd({b, 10}, 119), Tensor::f32({b, 10}, oneHot)}, {{}});
  KernelConfig adam;
  adam.set("optimizer", std::string("adam"))
      .set("learning_rate", 0.001)
      .set("beta_1", 0.9)
      .set("beta_2", 0.999)
      .set("epsilon", 1e-7);
  KernelContext step7;
  step7.step = 7;
  // Two variables ([3, 3, 32, 64]: several chunks; [64]: one): params,
  // grads, then slots grouped per variable (m0, v0, m1, v1; v >= 0).
  add("optimizer_update", "adam", adam,
      {rnd({3, 3, 32, 64}, 120), rnd({64}, 121), rnd({3, 3, 32, 64}, 122),
       rnd({64}, 123), rnd({3, 3, 32, 64}, 124, -0.1, 0.1),
       rnd({3, 3, 32, 64}, 125, 0, 0.1), rnd({64}, 126, -0.1, 0.1),
       rnd({64}, 127, 0, 0.1)},
      {{3, 3, 32, 64}, {64}, {3, 3, 32, 64}, {3, 3, 32, 64}, {64}, {64}},
      step7);
  // The convolutions again with their kernels in OHWI (filter_layout ohwi,
  // as graphc stores a kernel variable only convolutions read): cuDNN
  // reads the kernel and writes its gradient without a transpose, and the
  // direct forms (conv 1) index it by layout.
  const size_t hwioCases = cases.size();
  for (size_t i = 0; i < hwioCases; ++i)
    if (isConvolution(cases[i].kernel))
      cases.push_back(ohwiTwin(cases[i]));
  return cases;
}

const std::vector<Case> &seedShapeCases() {
  static const std::vector<Case> cases = seedCases();
  return cases;
}

class CudaSeedShapes : public ::testing::TestWithParam<size_t> {};

TEST_P(CudaSeedShapes, MatchReference) {
  ASSERT_LT(GetParam(), seedShapeCases().size());
  checkCase(seedShapeCases()[GetParam()]);
}

INSTANTIATE_TEST_SUITE_P(Seed, CudaSeedShapes,
                         ::testing::Range<size_t>(0, seedShapeCases().size()),
                         [](const ::testing::TestParamInfo<size_t> &info) {
                           return nameOf(seedShapeCases()[info.param],
                                         info.param);
                         });

/// The device mask against reference::dropoutKeep, element by element, for
/// several seeds, steps, rates and replica row offsets: a bit-identical
/// mask is what lets N replicas drop what one would, and dropout_grad
/// regenerate the forward's mask.
TEST(CudaDropout, MaskIsTheReferenceMaskBitForBit) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  const int64_t rows = 64, rowElements = 1000;
  Tensor ones = Tensor::f32({rows, rowElements},
                            std::vector<double>(rows * rowElements, 1.0));
  DeviceTensor x(ones);
  DeviceTensor y(Tensor::f32({rows, rowElements}));
  ASSERT_TRUE(x.ok() && y.ok());
  struct Draw {
    int64_t opSeed;
    uint64_t runSeed;
    int64_t step;
    int64_t rowOffset;
    double rate;
  };
  for (Draw draw :
       {Draw{3, 99, 5, 0, 0.4}, Draw{3, 99, 6, 0, 0.4}, Draw{-7, 0, 1, 64, 0.5},
        Draw{123456789, ~uint64_t{0}, 1000000, 192, 0.1},
        Draw{0, 42, 2, 0, 0.9}}) {
    KernelConfig cfg;
    cfg.set("rate", draw.rate).set("seed", draw.opSeed);
    KernelContext ctx = device->context();
    ctx.seed = draw.runSeed;
    ctx.step = draw.step;
    ctx.globalRowOffset = draw.rowOffset;
    device->setStep(draw.step);
    for (std::string kernel : {"dropout", "dropout_grad"}) {
      KernelFn fn;
      Status s = KernelRegistry::global().instantiate(
          kernel, Backend::cuda, ctx, cfg, {x.ref()}, {y.ref()}, fn);
      ASSERT_TRUE(s.isOk()) << s.message();
      y.poison();
      s = fn(ctx, cfg, {x.ref()}, {y.ref()});
      ASSERT_TRUE(s.isOk()) << s.message();
      ASSERT_EQ(cudaStreamSynchronize(device->state().compute), cudaSuccess);
      Tensor out = Tensor::f32({rows, rowElements});
      y.read(out);
      float scale = static_cast<float>(1.0 / (1.0 - draw.rate));
      int64_t kept = 0, mismatches = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t i = 0; i < rowElements; ++i) {
          bool keep = reference::dropoutKeep(
              draw.opSeed, draw.runSeed, draw.step,
              (draw.rowOffset + r) * rowElements + i, draw.rate);
          float v = out.f[r * rowElements + i];
          kept += keep;
          if (v != (keep ? scale : 0.0f) && ++mismatches <= 5)
            ADD_FAILURE() << kernel << " seed " << draw.opSeed << " step "
                          << draw.step << ": element (" << r << ", " << i
                          << ") is " << v << ", the reference mask says "
                          << (keep ? "keep" : "drop");
        }
      EXPECT_EQ(mismatches, 0);
      // The mask is not degenerate: the kept share is near 1 - rate.
      double share = double(kept) / double(rows * rowElements);
      EXPECT_NEAR(share, 1.0 - draw.rate, 0.01) << kernel;
    }
  }
}

/// A CUDA graph replays its kernels' arguments; the step must still be the
/// one the executor wrote last, or every replayed step would drop the same
/// elements.
TEST(CudaDropout, ReplayedGraphReadsTheCurrentStep) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  const int64_t rows = 16, rowElements = 256;
  DeviceTensor x(Tensor::f32({rows, rowElements},
                             std::vector<double>(rows * rowElements, 1.0)));
  DeviceTensor y(Tensor::f32({rows, rowElements}));
  ASSERT_TRUE(x.ok() && y.ok());
  KernelConfig cfg;
  cfg.set("rate", 0.5).set("seed", int64_t{11});
  KernelContext ctx = device->context();
  ctx.seed = 5;
  KernelFn fn;
  Status s = KernelRegistry::global().instantiate(
      "dropout", Backend::cuda, ctx, cfg, {x.ref()}, {y.ref()}, fn);
  ASSERT_TRUE(s.isOk()) << s.message();
  cudaStream_t stream = device->state().compute;
  device->setStep(1);
  ASSERT_EQ(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
            cudaSuccess);
  s = fn(ctx, cfg, {x.ref()}, {y.ref()});
  cudaGraph_t graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(stream, &graph), cudaSuccess);
  ASSERT_TRUE(s.isOk()) << s.message();
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (int64_t step : {2, 3}) {
    device->setStep(step);
    y.poison();
    ASSERT_EQ(cudaGraphLaunch(exec, stream), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    Tensor out = Tensor::f32({rows, rowElements});
    y.read(out);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < rows * rowElements; ++i)
      mismatches +=
          (out.f[i] != 0.0f) != reference::dropoutKeep(11, 5, step, i, 0.5);
    EXPECT_EQ(mismatches, 0) << "step " << step;
  }
  EXPECT_EQ(cudaGraphExecDestroy(exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(graph), cudaSuccess);
}

/// optimizer_update in place (outs are the ins' buffers, as the plan
/// launches it), five steps, each reading the step from device memory.
TEST(CudaOptimizer, AdamInPlaceOverStepsMatchesReference) {
  REQUIRE_CUDA_DEVICE(device);
  cuda::registerCudaKernels();
  KernelConfig cfg;
  cfg.set("optimizer", std::string("adam"))
      .set("learning_rate", 0.01)
      .set("beta_1", 0.9)
      .set("beta_2", 0.999)
      .set("epsilon", 1e-7)
      .set("amsgrad", 1.0);
  // Variables of 5000 and 7 elements; slots m, v, vhat each.
  std::vector<Tensor> host = {rnd({5000}, 140), rnd({7}, 141), rnd({5000}, 142),
                              rnd({7}, 143)};
  for (unsigned v = 0; v < 2; ++v)
    for (unsigned s = 0; s < 3; ++s)
      host.push_back(
          rnd({v == 0 ? 5000 : 7}, 150 + 3 * v + s, s == 0 ? -0.1 : 0, 0.1));
  std::vector<std::unique_ptr<DeviceTensor>> buffers;
  std::vector<TensorRef> ins, outs;
  for (const Tensor &t : host) {
    buffers.push_back(std::make_unique<DeviceTensor>(t));
    ASSERT_TRUE(buffers.back()->ok());
    ins.push_back(buffers.back()->ref());
  }
  // outs: params, then slots: the same buffers.
  outs = {ins[0], ins[1]};
  outs.insert(outs.end(), ins.begin() + 4, ins.end());
  KernelFn fn;
  Status s = KernelRegistry::global().instantiate(
      "optimizer_update", Backend::cuda, device->context(), cfg, ins, outs, fn);
  ASSERT_TRUE(s.isOk()) << s.message();
  std::vector<Tensor *> refIns, refOuts;
  for (Tensor &t : host)
    refIns.push_back(&t);
  refOuts = {refIns[0], refIns[1]};
  refOuts.insert(refOuts.end(), refIns.begin() + 4, refIns.end());
  for (int64_t step = 1; step <= 5; ++step) {
    KernelContext ctx = device->context();
    ctx.step = step;
    device->setStep(step);
    s = fn(ctx, cfg, ins, outs);
    ASSERT_TRUE(s.isOk()) << s.message();
    KernelContext refCtx;
    refCtx.step = step;
    RUN_OK("optimizer_update", cfg, refIns, refOuts, refCtx);
  }
  ASSERT_EQ(cudaStreamSynchronize(device->state().compute), cudaSuccess);
  for (size_t i = 0; i < host.size(); ++i) {
    if (i == 2 || i == 3)
      continue; // gradients: inputs only
    Tensor actual = Tensor::f32(host[i].shape);
    buffers[i]->read(actual);
    expectAllNear(actual.values(), host[i].values(), 1e-5,
                  "buffer " + std::to_string(i));
  }
}

} // namespace
