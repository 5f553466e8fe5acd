//===- Kernel.h - what a kernel is, and the registry of them ----*- C++ -*-===//
//
// A kernel runs one plan launch: it reads `ins`, writes `outs` (which may
// alias ins, as the optimizer's in-place update does) and takes the graph
// op's attributes as its configuration. Kernels are registered per
// (name, backend); the name is the graph op's ("fused_conv2d",
// "conv2d_grad_input", "optimizer_update", ...), so a kernel is specified by
// the op's documentation in dialects/graph/GraphOps.td.
//
// A kernel is instantiated once per launch site, when the executor prepares
// a program: its shapes, configuration and buffer addresses are fixed from
// then on (arenas never move), so that is where a backend builds its
// oneDNN primitives or picks its cuDNN algorithm. The instance then runs
// every step. Stateless kernels register a plain KernelFn, which is its own
// instance.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_KERNEL_H
#define RUNTIME_CORE_KERNEL_H

#include "runtime/base/Status.h"
#include "runtime/plan/plan_generated.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace graph::runtime {

/// "[2, 3, 4]": how every runtime message writes a shape.
std::string shapeText(const std::vector<int64_t> &shape);

/// A view of one buffer: no ownership.
struct TensorRef {
  void *data = nullptr;
  std::vector<int64_t> shape;
  plan::DType dtype = plan::DType::f32;

  int64_t elements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  float *f32() const { return static_cast<float *>(data); }
  int32_t *i32() const { return static_cast<int32_t *>(data); }
};

/// A kernel's configuration: the graph op's attributes by name. Integers
/// (also booleans and unit attributes, as 1), floats, strings, and integer
/// or float lists. The optimizer's configuration is `optimizer` (a string:
/// sgd, adam, rmsprop) plus one float per hyper-parameter.
class KernelConfig {
public:
  using Value = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                             std::vector<double>>;

  KernelConfig() = default;
  /// The configuration of a plan launch.
  static KernelConfig
  fromPlan(const flatbuffers::Vector<flatbuffers::Offset<plan::Attr>> *attrs);

  KernelConfig &set(const std::string &name, Value value) {
    entries[name] = std::move(value);
    return *this;
  }
  bool has(const std::string &name) const { return entries.count(name) != 0; }
  /// An integer entry (`fallback` when absent; a float entry is truncated).
  int64_t getInt(const std::string &name, int64_t fallback = 0) const;
  /// A float entry (`fallback` when absent; an integer entry converts).
  double getFloat(const std::string &name, double fallback = 0.0) const;
  std::string getString(const std::string &name,
                        const std::string &fallback = "") const;
  std::vector<int64_t> getInts(const std::string &name) const;
  /// A float list entry (integer lists convert; empty when absent).
  std::vector<double> getFloats(const std::string &name) const;
  /// A two-integer entry (strides, pool_size): one integer means both;
  /// `fallback` for both when absent.
  std::pair<int64_t, int64_t> getPair(const std::string &name,
                                      int64_t fallback) const;
  const std::map<std::string, Value> &all() const { return entries; }

private:
  std::map<std::string, Value> entries;
};

/// What a kernel may know about the step it runs in.
struct KernelContext {
  /// The global step, 1 on the first update (Adam's bias correction).
  int64_t step = 1;
  int replica = 0;
  int replicas = 1;
  /// The first row of the global batch this replica holds: dropout keys its
  /// mask by the global row, so N replicas drop what one replica would.
  int64_t globalRowOffset = 0;
  /// The run's seed (`graphrun --seed`), mixed into dropout masks.
  uint64_t seed = 0;
  /// A learning rate set while training (Keras' ReduceLROnPlateau assigns
  /// optimizer.learning_rate), which the optimizer update uses in place of
  /// the plan's constant rate; negative: the plan's rate or schedule.
  double learningRate = -1;
  /// The device's backend state, owned by the executor's device: null on
  /// the reference and cpu backends; the CUDA backend's per-device context
  /// (stream, library handles) on cuda.
  void *deviceState = nullptr;
  /// Float32 scratch for the widened copies of a kernel's bf16/f16
  /// operands (ReducedPrecision.h), shared by every launch of the device:
  /// a host device runs its ops one at a time on one thread. Sized by the
  /// executor for the device's largest launch; null: each launch owns its
  /// copies.
  float *widenScratch = nullptr;
  int64_t widenScratchElements = 0;
};

using KernelFn = std::function<Status(
    const KernelContext &, const KernelConfig &,
    const std::vector<TensorRef> &ins, const std::vector<TensorRef> &outs)>;

/// Instantiates a kernel for one launch site: checks `ins`/`outs` against
/// `config` (a mismatch is an error naming the kernel) and sets `out` to the
/// function the executor runs every step. `ctx` is the launch site's device
/// (step 0; `deviceState` set).
using KernelFactory =
    std::function<Status(const KernelContext &ctx, const KernelConfig &config,
                         const std::vector<TensorRef> &ins,
                         const std::vector<TensorRef> &outs, KernelFn &out)>;

/// Whether a kernel computes on a launch's bfloat16/float16 operands itself
/// (KernelRegistry::addFactory).
using TakesReduced = std::function<bool(const std::vector<TensorRef> &ins,
                                        const std::vector<TensorRef> &outs)>;

/// What a kernel's operands may be, for checkOperands: f32 (the cpu and
/// cuda backends), optionally with one input of integer class indices, or
/// any of f32, f64, i32 and i64 (the reference backend, which also takes
/// f64 for finite differences), or f32 and bf16 (a kernel that computes
/// on bfloat16 itself).
struct OperandRule {
  static OperandRule f32() { return {}; }
  static OperandRule f32OrBf16() {
    OperandRule r;
    r.bf16 = true;
    return r;
  }
  /// f32, bf16 or f16: a kernel that computes on reduced operands itself.
  static OperandRule anyFloat() {
    OperandRule r;
    r.bf16 = r.f16 = true;
    return r;
  }
  /// f32, and input `input` may also hold i32 or i64 labels.
  static OperandRule f32WithLabels(int input) {
    OperandRule r;
    r.labels = input;
    return r;
  }
  static OperandRule anyNumeric() {
    OperandRule r;
    r.numeric = true;
    return r;
  }
  /// The same rule, its wrong-type message ending with `reason`.
  OperandRule because(const char *reason) const {
    OperandRule r = *this;
    r.why = reason;
    return r;
  }

  bool numeric = false;
  bool bf16 = false;
  bool f16 = false;
  int labels = -1;
  const char *why = "";
};

/// The one check of a launch's operands every backend makes: between
/// `minIns` and `maxIns` inputs, `numOuts` outputs, every non-empty operand
/// with a buffer and of a type `rule` allows. The error names the kernel
/// and the operand: "relu: input 0 is f64, expected f32".
Status checkOperands(const char *kernel, const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs, size_t minIns,
                     size_t maxIns, size_t numOuts,
                     const OperandRule &rule = OperandRule::f32());

enum class Backend { reference, cpu, cuda };
const char *backendName(Backend backend);
/// The backend named `name` ("reference", "cpu", "cuda").
std::optional<Backend> parseBackend(const std::string &name);

/// Kernels by (name, backend). Backends register theirs through their
/// register*Kernels() function, which the tools call at start-up.
class KernelRegistry {
public:
  static KernelRegistry &global();
  /// A stateless kernel: every launch site shares `fn`.
  void add(const std::string &name, Backend backend, KernelFn fn);
  /// A kernel with per-launch-site state. Given bfloat16 or float16
  /// operands on a host backend it runs in float32 on widened copies
  /// (ReducedPrecision.h), unless `takesReduced` says the factory computes
  /// on those operands itself (the cpu backend's oneDNN bf16 primitives).
  void addFactory(const std::string &name, Backend backend,
                  KernelFactory factory, TakesReduced takesReduced = {});
  /// A kernel that takes bfloat16 and float16 operands itself. Any other
  /// kernel, given such operands on a host backend, runs in float32 on
  /// widened copies with its outputs rounded (ReducedPrecision.h).
  void addReducedPrecision(const std::string &name, Backend backend,
                           KernelFn fn);
  bool has(const std::string &name, Backend backend) const;
  /// Whether kernel `name` computes on these bfloat16/float16 operands
  /// itself rather than on widened float32 copies.
  bool takesReduced(const std::string &name, Backend backend,
                    const std::vector<TensorRef> &ins,
                    const std::vector<TensorRef> &outs) const;
  /// Whether a launch of `name` with these operands runs on widened
  /// float32 copies (ReducedPrecision.h), and how many float32 elements
  /// the copies take (each reduced buffer once); 0 when it does not.
  int64_t widenedElements(const std::string &name, Backend backend,
                          const std::vector<TensorRef> &ins,
                          const std::vector<TensorRef> &outs) const;
  /// Instantiates kernel `name` of `backend` for one launch site; an error
  /// when the backend has no such kernel or the factory refuses.
  Status instantiate(const std::string &name, Backend backend,
                     const KernelContext &ctx, const KernelConfig &config,
                     const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs, KernelFn &out) const;
  std::vector<std::string> names(Backend backend) const;

private:
  std::map<std::pair<std::string, Backend>, KernelFactory> kernels;
  std::map<std::pair<std::string, Backend>, TakesReduced> reducedPrecision;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_KERNEL_H
