//===- CudaKernelRegistrationTest.cpp - what needs no GPU -----------------===//
//
// Registration and operand checking touch no device, so these run on every
// machine that builds the CUDA backend: every kernel the reference backend
// has (the compiler's whole vocabulary) has a CUDA kernel, and factories
// reject bad operands, naming the kernel and the fault, before they look
// for a device.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"
#include "KernelsNotOnCudaYet.h"

#include "runtime/backends/cuda/CudaDeviceState.h"

#include <algorithm>
#include <set>

using namespace graph::runtime;
namespace plan = graph::plan;

namespace {

TEST(CudaKernelRegistration, EveryReferenceKernelHasACudaKernel) {
  cuda::registerCudaKernels();
  for (const std::string &name : reference::referenceKernelNames())
    if (!graph::runtime::testing::kKernelsNotOnCudaYet.count(name))
      EXPECT_TRUE(KernelRegistry::global().has(name, Backend::cuda))
          << "no CUDA kernel for " << name;
}

TEST(CudaKernelRegistration, TheKernelsNotOnCudaYetAreExactlyThose) {
  cuda::registerCudaKernels();
  std::vector<std::string> reference = reference::referenceKernelNames();
  for (const std::string &name :
       graph::runtime::testing::kKernelsNotOnCudaYet) {
    EXPECT_TRUE(std::count(reference.begin(), reference.end(), name))
        << name << " is no reference kernel";
    EXPECT_FALSE(KernelRegistry::global().has(name, Backend::cuda))
        << name
        << " has a CUDA kernel now: take it off "
           "KernelsNotOnCudaYet.h";
  }
}

TEST(CudaKernelRegistration, EveryCudaKernelIsAGraphOp) {
  cuda::registerCudaKernels();
  std::vector<std::string> reference = reference::referenceKernelNames();
  std::set<std::string> known(reference.begin(), reference.end());
  std::vector<std::string> names =
      KernelRegistry::global().names(Backend::cuda);
  EXPECT_EQ(names.size(),
            known.size() -
                graph::runtime::testing::kKernelsNotOnCudaYet.size());
  for (const std::string &name : names)
    EXPECT_TRUE(known.count(name)) << name << " is not a graph op";
}

TEST(CudaKernelRegistration, RegisteringTwiceIsHarmless) {
  cuda::registerCudaKernels();
  size_t before = KernelRegistry::global().names(Backend::cuda).size();
  cuda::registerCudaKernels();
  EXPECT_EQ(KernelRegistry::global().names(Backend::cuda).size(), before);
}

/// An operand for a factory that must fail before reading it: a host
/// address that is never dereferenced.
TensorRef operand(std::vector<int64_t> shape,
                  plan::DType dtype = plan::DType::f32) {
  static float unread[1];
  TensorRef t;
  t.data = unread;
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

struct BadLaunch {
  std::string kernel;
  KernelConfig cfg;
  std::vector<TensorRef> ins, outs;
  std::string message; // a part of the expected error
};

KernelConfig
config(std::vector<std::pair<std::string, KernelConfig::Value>> entries) {
  KernelConfig cfg;
  for (auto &[name, value] : entries)
    cfg.set(name, value);
  return cfg;
}

TEST(CudaKernelRegistration, FactoriesRejectBadOperandsWithoutADevice) {
  cuda::registerCudaKernels();
  KernelConfig valid = config({{"padding", std::string("valid")},
                               {"strides", std::vector<int64_t>{1, 1}}});
  KernelConfig ohwi = valid;
  ohwi.set("filter_layout", std::string("ohwi"));
  std::vector<BadLaunch> cases = {
      {"conv2d",
       valid,
       {operand({2, 6, 5, 3}), operand({3, 3, 2, 4})},
       {operand({2, 4, 3, 4})},
       "conv2d: hwio kernel [3, 3, 2, 4] takes 2 input channels, the input "
       "has 3"},
      {"conv2d_grad_input",
       config({{"padding", std::string("valid")},
               {"strides", std::vector<int64_t>{1, 1}},
               {"groups", int64_t{2}}}),
       {operand({2, 4, 3, 4}), operand({3, 3, 3, 4})},
       {operand({2, 6, 5, 4})},
       "conv2d_grad_input: hwio kernel [3, 3, 3, 4] takes 3 input channels "
       "per group (2 groups), the input has 4"},
      {"conv2d_grad_kernel",
       valid,
       {operand({2, 6, 5, 3}), operand({2, 4, 4, 4})},
       {operand({3, 3, 3, 4})},
       "conv2d_grad_kernel: output_grad [2, 4, 4, 4]"},
      // filter_layout ohwi: [F, kh, kw, C / groups]; the window is axes 1
      // and 2 ([4, 3, 3, 3] over 6x5 valid: 4x3 outputs, 4 filters).
      {"conv2d",
       ohwi,
       {operand({2, 6, 5, 3}), operand({4, 3, 3, 2})},
       {operand({2, 4, 3, 4})},
       "conv2d: ohwi kernel [4, 3, 3, 2] takes 2 input channels, the input "
       "has 3"},
      {"conv2d_grad_kernel",
       ohwi,
       {operand({2, 6, 5, 3}), operand({2, 4, 3, 4})},
       {operand({3, 3, 3, 4})},
       "conv2d_grad_kernel: ohwi kernel [3, 3, 3, 4] takes 4 input channels, "
       "the input has 3"},
      {"conv2d_grad_kernel",
       ohwi,
       {operand({2, 6, 5, 3}), operand({2, 4, 4, 4})},
       {operand({4, 3, 3, 3})},
       "conv2d_grad_kernel: output_grad [2, 4, 4, 4] and input [2, 6, 5, 3] "
       "do not match kernel_grad [4, 3, 3, 3]"},
      {"fused_dense",
       {},
       {operand({3, 4}), operand({4, 5}), operand({5})},
       {operand({3, 4})},
       "fused_dense: output is [3, 4], expected [3, 5]"},
      {"fused_conv2d",
       config({{"activation", std::string("swish")}}),
       {operand({2, 6, 5, 3}), operand({3, 3, 3, 4})},
       {operand({2, 4, 3, 4})},
       "fused_conv2d: unknown activation 'swish'"},
      {"max_pool2d",
       config({{"pool_size", std::vector<int64_t>{7, 7}}}),
       {operand({2, 6, 5, 3})},
       {operand({2, 1, 1, 3})},
       "max_pool2d: window 7x7 does not fit input [2, 6, 5, 3]"},
      {"optimizer_update",
       config({{"optimizer", std::string("adam")}}),
       {operand({3}), operand({3}), operand({3}), operand({3}), operand({3})},
       {operand({3})},
       "optimizer_update: 5 inputs do not split"},
      {"elementwise",
       config({{"body", std::string("relu(a0) -> t1; yield t1")}}),
       {operand({4})},
       {operand({4})},
       "elementwise: body: statement 0 defines 't1'"},
      {"accuracy",
       {},
       {operand({4, 3}), operand({5}, plan::DType::i32)},
       {operand({})},
       "accuracy: labels [5] match neither [4, 3] nor [4]"},
      {"softmax_cross_entropy",
       {},
       {operand({4, 3}), operand({4}, plan::DType::f64)},
       {operand({4, 3}), operand({}), operand({4, 3})},
       "softmax_cross_entropy: input 1 is f64, expected f32, i32 or i64"},
      {"slice",
       config({{"axis", int64_t{1}}, {"offset", int64_t{4}}}),
       {operand({2, 5})},
       {operand({2, 2})},
       "slice: slice [4, 6) out of range [0, 5)"},
      {"dropout",
       config({{"rate", 1.5}}),
       {operand({2, 3})},
       {operand({2, 3})},
       "dropout: rate 1.500000 is not in [0, 1]"},
      {"batch_norm_train",
       {},
       {operand({4, 3}), operand({3}), operand({2})},
       {operand({4, 3}), operand({3}), operand({3}), operand({3}),
        operand({3})},
       "batch_norm_train: operand 2 [2] does not match the 3 channels"},
      // Valid operands: the factory gets as far as the missing device.
      {"relu",
       {},
       {operand({4})},
       {operand({4})},
       "relu: no CUDA device state"},
      {"conv2d",
       ohwi,
       {operand({2, 6, 5, 3}), operand({4, 3, 3, 3})},
       {operand({2, 4, 3, 4})},
       "conv2d: no CUDA device state"},
  };
  // filter_layout is hwio or ohwi: the five convolution kernels refuse
  // anything else, even where the kernel would fit read as HWIO.
  KernelConfig oihw = config({{"padding", std::string("valid")},
                              {"strides", std::vector<int64_t>{1, 1}},
                              {"filter_layout", std::string("oihw")},
                              {"pool_size", std::vector<int64_t>{2, 2}},
                              {"pool_strides", std::vector<int64_t>{2, 2}}});
  const std::string why = ": unknown filter_layout 'oihw' (hwio or ohwi)";
  for (const char *kernel : {"conv2d", "fused_conv2d"})
    cases.push_back({kernel,
                     oihw,
                     {operand({2, 6, 5, 3}), operand({3, 3, 3, 4})},
                     {operand({2, 4, 3, 4})},
                     kernel + why});
  cases.push_back(
      {"fused_conv2d_pool",
       oihw,
       {operand({2, 6, 5, 3}), operand({3, 3, 3, 4})},
       {operand({2, 2, 1, 4}), operand({2, 2, 1, 4}, plan::DType::i32)},
       "fused_conv2d_pool" + why});
  cases.push_back({"conv2d_grad_input",
                   oihw,
                   {operand({2, 4, 3, 4}), operand({3, 3, 3, 4})},
                   {operand({2, 6, 5, 3})},
                   "conv2d_grad_input" + why});
  cases.push_back({"conv2d_grad_kernel",
                   oihw,
                   {operand({2, 6, 5, 3}), operand({2, 4, 3, 4})},
                   {operand({3, 3, 3, 4})},
                   "conv2d_grad_kernel" + why});
  for (const BadLaunch &c : cases) {
    KernelFn fn;
    Status s = KernelRegistry::global().instantiate(
        c.kernel, Backend::cuda, KernelContext{}, c.cfg, c.ins, c.outs, fn);
    EXPECT_FALSE(s.isOk()) << c.kernel << " accepted bad operands";
    EXPECT_NE(s.message().find(c.message), std::string::npos)
        << c.kernel << ": '" << s.message() << "' lacks '" << c.message << "'";
    EXPECT_FALSE(fn) << c.kernel << " returned a kernel with its error";
  }
}

} // namespace
