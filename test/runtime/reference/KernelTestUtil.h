//===- KernelTestUtil.h - tensors and launches for kernel tests -*- C++ -*-===//

#ifndef TEST_RUNTIME_REFERENCE_KERNELTESTUTIL_H
#define TEST_RUNTIME_REFERENCE_KERNELTESTUTIL_H

#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/core/Kernel.h"
#include "runtime/core/ReducedPrecision.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace graph::runtime::testing {

/// An owned tensor of f32, f64, i32, bf16 or f16 elements (a bf16 or f16
/// element set from a double is rounded to nearest even).
struct Tensor {
  std::vector<int64_t> shape;
  plan::DType dtype = plan::DType::f64;
  std::vector<double> d;
  std::vector<float> f;
  std::vector<int32_t> i;
  std::vector<uint16_t> h;

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
    case plan::DType::bf16:
    case plan::DType::f16:
      t.h.assign(n, 0);
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
    else if (dtype == plan::DType::bf16)
      h[k] = floatToBf16(static_cast<float>(v));
    else if (dtype == plan::DType::f16)
      h[k] = floatToF16(static_cast<float>(v));
    else
      d[k] = v;
  }
  double get(int64_t k) const {
    if (dtype == plan::DType::f32)
      return f[k];
    if (dtype == plan::DType::i32)
      return i[k];
    if (dtype == plan::DType::bf16)
      return bf16ToFloat(h[k]);
    if (dtype == plan::DType::f16)
      return f16ToFloat(h[k]);
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
    else if (dtype == plan::DType::bf16 || dtype == plan::DType::f16)
      r.data = h.data();
    else
      r.data = d.data();
    return r;
  }
  Tensor as(plan::DType to) const { return make(shape, to, values()); }
};

/// `n` draws of `dist` from a Mersenne twister seeded with `seed`.
template <typename Distribution>
std::vector<double> draws(int64_t n, Distribution dist, unsigned seed) {
  std::mt19937 gen(seed);
  std::vector<double> v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

inline std::vector<double> uniform(int64_t n, double lo, double hi,
                                   unsigned seed) {
  return draws(n, std::uniform_real_distribution<double>(lo, hi), seed);
}

/// `n` integers drawn uniformly from [lo, hi]: for small bounds, values
/// bfloat16 and float16 hold exactly and whose sums of products float32
/// holds exactly, in any order.
inline std::vector<double> smallIntegers(int64_t n, int lo, int hi,
                                         unsigned seed) {
  return draws(n, std::uniform_int_distribution<int>(lo, hi), seed);
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

// Convolution kernels in both filter layouts (the config's filter_layout,
// runtime/core/WindowGeometry.h), permuted here element by element,
// independently of the runtime's indexing. An HWIO kernel
// [kh, kw, C / groups, F] is the OHWI kernel [F, kh, kw, C / groups];
// Keras' depthwise [kh, kw, C, m] (groups == C > 1) is the memory of
// [kh, kw, 1, C * m], so its OHWI form is [C * m, kh, kw, 1].

/// The HWIO kernel `hwio` as [kh, kw, C / groups, F], its depthwise form
/// unfolded (`inputChannels` C, `groups` the config's).
inline std::vector<int64_t> hwioGroupedShape(const std::vector<int64_t> &hwio,
                                             int64_t inputChannels,
                                             int64_t groups) {
  EXPECT_EQ(hwio.size(), 4u);
  if (groups > 1 && groups == inputChannels && hwio[2] == inputChannels)
    return {hwio[0], hwio[1], 1, hwio[2] * hwio[3]};
  return hwio;
}

/// The OHWI shape of HWIO kernel shape `hwio`.
inline std::vector<int64_t> ohwiShapeOf(const std::vector<int64_t> &hwio,
                                        int64_t inputChannels, int64_t groups) {
  std::vector<int64_t> k = hwioGroupedShape(hwio, inputChannels, groups);
  return {k[3], k[0], k[1], k[2]};
}

/// HWIO kernel `hwio` as the same kernel in OHWI: out[f, i, j, c] =
/// hwio[i, j, c, f].
inline Tensor hwioToOhwi(const Tensor &hwio, int64_t inputChannels,
                         int64_t groups) {
  std::vector<int64_t> k = hwioGroupedShape(hwio.shape, inputChannels, groups);
  const int64_t kh = k[0], kw = k[1], cg = k[2], f = k[3];
  Tensor out = Tensor::make({f, kh, kw, cg}, hwio.dtype);
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t o = 0; o < f; ++o)
          out.at(((o * kh + i) * kw + j) * cg + c,
                 hwio.get(((i * kw + j) * cg + c) * f + o));
  return out;
}

/// OHWI kernel `ohwi` ([F, kh, kw, C / groups]) as the same kernel in
/// HWIO of shape `hwioShape` (Keras' depthwise form too): out[i, j, c, f] =
/// ohwi[f, i, j, c].
inline Tensor ohwiToHwio(const Tensor &ohwi,
                         const std::vector<int64_t> &hwioShape) {
  EXPECT_EQ(ohwi.shape.size(), 4u);
  const int64_t f = ohwi.shape[0], kh = ohwi.shape[1], kw = ohwi.shape[2],
                cg = ohwi.shape[3];
  Tensor out = Tensor::make(hwioShape, ohwi.dtype);
  EXPECT_EQ(out.elements(), ohwi.elements());
  for (int64_t i = 0; i < kh; ++i)
    for (int64_t j = 0; j < kw; ++j)
      for (int64_t c = 0; c < cg; ++c)
        for (int64_t o = 0; o < f; ++o)
          out.at(((i * kw + j) * cg + c) * f + o,
                 ohwi.get(((o * kh + i) * kw + j) * cg + c));
  return out;
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
