//===- KernelTestUtil.h - tensors and launches for kernel tests -*- C++ -*-===//

#ifndef TEST_RUNTIME_REFERENCE_KERNELTESTUTIL_H
#define TEST_RUNTIME_REFERENCE_KERNELTESTUTIL_H

#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/core/Kernel.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace graph::runtime::testing {

/// An owned tensor of f32, f64 or i32 elements.
struct Tensor {
  std::vector<int64_t> shape;
  plan::DType dtype = plan::DType::f64;
  std::vector<double> d;
  std::vector<float> f;
  std::vector<int32_t> i;

  static Tensor make(std::vector<int64_t> shape, plan::DType dtype,
                     const std::vector<double> &values = {}) {
    Tensor t;
    t.shape = std::move(shape);
    t.dtype = dtype;
    int64_t n = t.elements();
    switch (dtype) {
    case plan::DType::f32:
      t.f.assign(n, 0.0f);
      break;
    case plan::DType::i32:
      t.i.assign(n, 0);
      break;
    default:
      t.d.assign(n, 0.0);
      break;
    }
    if (!values.empty())
      t.set(values);
    return t;
  }
  static Tensor f64(std::vector<int64_t> shape,
                    const std::vector<double> &v = {}) {
    return make(std::move(shape), plan::DType::f64, v);
  }
  static Tensor f32(std::vector<int64_t> shape,
                    const std::vector<double> &v = {}) {
    return make(std::move(shape), plan::DType::f32, v);
  }
  static Tensor i32(std::vector<int64_t> shape,
                    const std::vector<double> &v = {}) {
    return make(std::move(shape), plan::DType::i32, v);
  }

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  void set(const std::vector<double> &v) {
    EXPECT_EQ(static_cast<int64_t>(v.size()), elements());
    for (int64_t k = 0; k < elements() && k < (int64_t)v.size(); ++k)
      at(k, v[k]);
  }
  void at(int64_t k, double v) {
    if (dtype == plan::DType::f32)
      f[k] = static_cast<float>(v);
    else if (dtype == plan::DType::i32)
      i[k] = static_cast<int32_t>(v);
    else
      d[k] = v;
  }
  double get(int64_t k) const {
    if (dtype == plan::DType::f32)
      return f[k];
    if (dtype == plan::DType::i32)
      return i[k];
    return d[k];
  }
  std::vector<double> values() const {
    std::vector<double> v(elements());
    for (int64_t k = 0; k < elements(); ++k)
      v[k] = get(k);
    return v;
  }
  TensorRef ref() {
    TensorRef r;
    r.shape = shape;
    r.dtype = dtype;
    if (dtype == plan::DType::f32)
      r.data = f.data();
    else if (dtype == plan::DType::i32)
      r.data = i.data();
    else
      r.data = d.data();
    return r;
  }
  Tensor as(plan::DType to) const { return make(shape, to, values()); }
};

inline std::vector<double> uniform(int64_t n, double lo, double hi,
                                   unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

/// Runs `kernel` of `backend` (the reference by default); fails the test
/// when it is missing or returns an error.
inline Status launch(const std::string &kernel, const KernelConfig &cfg,
                     std::vector<Tensor *> ins, std::vector<Tensor *> outs,
                     const KernelContext &ctx = {},
                     Backend backend = Backend::reference) {
  reference::registerReferenceKernels();
  std::vector<TensorRef> inRefs, outRefs;
  for (Tensor *t : ins)
    inRefs.push_back(t->ref());
  for (Tensor *t : outs)
    outRefs.push_back(t->ref());
  KernelFn fn;
  if (Status s = KernelRegistry::global().instantiate(kernel, backend, ctx, cfg,
                                                      inRefs, outRefs, fn);
      !s)
    return s;
  return fn(ctx, cfg, inRefs, outRefs);
}

#define RUN_OK(...)                                                            \
  do {                                                                         \
    Status s_ = ::graph::runtime::testing::launch(__VA_ARGS__);                \
    ASSERT_TRUE(s_.isOk()) << s_.message();                                    \
  } while (false)

/// The kernel refuses its operands (launch's arguments), with `needle` in
/// its error.
#define RUN_FAILS(needle, ...)                                                 \
  do {                                                                         \
    Status s_ = ::graph::runtime::testing::launch(__VA_ARGS__);                \
    ASSERT_FALSE(s_.isOk()) << "the kernel accepted the operands";             \
    EXPECT_NE(s_.message().find(needle), std::string::npos) << s_.message();   \
  } while (false)

inline void expectAllNear(const std::vector<double> &actual,
                          const std::vector<double> &expected, double tol,
                          const std::string &what = "") {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t k = 0; k < actual.size(); ++k)
    EXPECT_NEAR(actual[k], expected[k],
                tol * std::max(1.0, std::abs(expected[k])))
        << what << " at element " << k;
}

/// The configuration of a square pooling window.
inline KernelConfig poolConfig(const std::string &padding, int64_t size,
                               int64_t stride) {
  KernelConfig cfg;
  cfg.set("padding", padding)
      .set("pool_size", std::vector<int64_t>{size, size})
      .set("strides", std::vector<int64_t>{stride, stride});
  return cfg;
}

} // namespace graph::runtime::testing

#endif // TEST_RUNTIME_REFERENCE_KERNELTESTUTIL_H
