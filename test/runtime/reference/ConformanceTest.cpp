//===- ConformanceTest.cpp - every backend against the reference ----------===//
//
// The cases of ConformanceCases.h on every host-memory backend: a backend
// passes when each kernel it registers writes what the reference writes on
// the same case, within a float tolerance. The CUDA backend runs the same
// cases from test/runtime/cuda.
//
//===----------------------------------------------------------------------===//

#include "ConformanceCases.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

std::vector<Tensor> runCase(Case c, Backend backend) {
  if (c.kernel == "max_pool2d_grad") {
    Tensor &y = c.ins[1];
    Status s = launch("max_pool2d", c.cfg, {&c.ins[0]}, {&y});
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  std::vector<Tensor> outs;
  for (const auto &shape : c.outs)
    outs.push_back(Tensor::f32(shape));
  std::vector<Tensor *> in, out;
  for (Tensor &t : c.ins)
    in.push_back(&t);
  for (Tensor &t : outs)
    out.push_back(&t);
  Status s = launch(c.kernel, c.cfg, in, out, c.ctx, backend);
  EXPECT_TRUE(s.isOk()) << c.kernel << " (" << c.label << ") on "
                        << backendName(backend) << ": " << s.message();
  return outs;
}

class Conformance : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    reference::registerReferenceKernels();
    cpu::registerCpuKernels();
  }
};

TEST_P(Conformance, EveryKernelHasACase) {
  std::map<std::string, int> covered;
  for (const Case &c : allCases())
    ++covered[c.kernel];
  // Graph op names only: tests elsewhere register `test.*` kernels.
  for (const std::string &name : KernelRegistry::global().names(GetParam()))
    if (name.find('.') == std::string::npos) {
      EXPECT_TRUE(covered.count(name)) << "no conformance case for " << name;
    }
  for (const std::string &name : reference::referenceKernelNames())
    EXPECT_TRUE(covered.count(name)) << "no conformance case for " << name;
}

TEST_P(Conformance, MatchesReference) {
  Backend backend = GetParam();
  int compared = 0;
  for (const Case &c : allCases()) {
    if (!KernelRegistry::global().has(c.kernel, backend))
      continue; // a backend may not have every kernel yet
    std::vector<Tensor> expected = runCase(c, Backend::reference);
    std::vector<Tensor> actual = runCase(c, backend);
    for (size_t o = 0; o < expected.size(); ++o) {
      std::vector<double> e = expected[o].values(), a = actual[o].values();
      for (size_t k = 0; k < e.size(); ++k)
        EXPECT_NEAR(a[k], e[k], 1e-5 * std::max(1.0, std::abs(e[k])))
            << c.kernel << " (" << c.label << ") output " << o << " element "
            << k;
    }
    ++compared;
  }
  EXPECT_GT(compared, 0);
}

INSTANTIATE_TEST_SUITE_P(Backends, Conformance,
                         ::testing::Values(Backend::reference, Backend::cpu),
                         [](const ::testing::TestParamInfo<Backend> &info) {
                           return std::string(backendName(info.param));
                         });

} // namespace
