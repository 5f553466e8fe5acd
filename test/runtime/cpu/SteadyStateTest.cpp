//===- SteadyStateTest.cpp - cpu kernels allocate nothing per step --------===//
//
// Issue 15: no allocation in the steady-state step. Every cpu kernel of the
// conformance cases is instantiated (its factory may allocate: that is
// load time), run once (it may size scratch it keeps), then run again
// while this binary's operator new counts: the second run must allocate
// nothing. Launches that are oneDNN primitives (DnnlLaunch) are left out of
// the count: dnnl_primitive_execute builds an execution context per call,
// which no caller can avoid; what DnnlLaunch itself does per run (the
// arguments in the C API's form, made once) allocates nothing. Nor are
// launches whose own loop executes primitives (DnnlLoop: fused_conv2d_pool,
// a chunk of images at a time; its pool loop writes into scratch sized on
// the first run).
//
// Its own executable: the counting operator new replaces the global one.
//
//===----------------------------------------------------------------------===//

#include "ConformanceCases.h"

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<long> allocations{0};
} // namespace

// GCC pairs the std:: code's inlined `new` with these `free` calls and
// warns of a mismatch; both sides are this file's malloc and free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void *operator new(size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }

using namespace graph::runtime;
using namespace graph::runtime::testing;

namespace {

TEST(SteadyState, CpuKernelsAllocateNothingAfterTheirFirstRun) {
  cpu::registerCpuKernels();
  int counted = 0;
  for (const Case &c : allCases()) {
    if (!KernelRegistry::global().has(c.kernel, Backend::cpu))
      continue;
    std::vector<Tensor> ins = c.ins, outs = outputsOf(c);
    std::vector<TensorRef> inRefs, outRefs;
    for (Tensor &t : ins)
      inRefs.push_back(t.ref());
    for (Tensor &t : outs)
      outRefs.push_back(t.ref());
    KernelFn fn;
    Status made = KernelRegistry::global().instantiate(
        c.kernel, Backend::cpu, c.ctx, c.cfg, inRefs, outRefs, fn);
    ASSERT_TRUE(made.isOk()) << c.kernel << ": " << made.message();
    if (fn.target<cpu::DnnlLaunch>() || fn.target<cpu::DnnlLoop>())
      continue;
    ASSERT_TRUE(fn(c.ctx, c.cfg, inRefs, outRefs).isOk()) << c.kernel;
    long before = allocations.load();
    Status second = fn(c.ctx, c.cfg, inRefs, outRefs);
    long during = allocations.load() - before;
    ASSERT_TRUE(second.isOk()) << c.kernel;
    EXPECT_EQ(during, 0) << c.kernel << " (" << c.label
                         << ") allocates on every run";
    ++counted;
  }
  // Most cpu kernels are own loops; make sure the loop saw them.
  EXPECT_GT(counted, 40);
}

} // namespace
