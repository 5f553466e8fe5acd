//===- DnnlContext.h - what the oneDNN kernels share ------------*- C++ -*-===//
//
// The engine, a stream per device thread, and DnnlLaunch: the primitives one
// launch site runs, built once by its factory with their arguments bound to
// the site's buffers (arenas never move), executed every step. Also the
// window geometry of conv and pooling, resolved exactly as the reference
// backend resolves it.
//
// Every primitive uses a user scratchpad owned by its launch: with
// oneDNN's default (library) scratchpad, primitives on two device threads
// would share one buffer unless oneDNN was built with concurrent execution,
// which Debian's is not.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CPU_DNNLCONTEXT_H
#define RUNTIME_BACKENDS_CPU_DNNLCONTEXT_H

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/core/Kernel.h"
#include "runtime/core/WindowGeometry.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace graph::runtime::cpu {

/// The process' oneDNN CPU engine.
const dnnl::engine &dnnlEngine();

/// The calling thread's in-order stream on dnnlEngine().
dnnl::stream &dnnlStream();

/// Sets the calling thread's OpenMP team to the share of `ctx`'s replica
/// for its lifetime. Factories create primitives under it: oneDNN fixes a
/// primitive's thread count (and sizes its per-thread scratch) when it is
/// created, on the thread preparing the program rather than the device
/// thread that will run it.
class ReplicaThreadsScope {
public:
  /// `threads` > 0 asks for that many instead of the replica's share (a
  /// launch too small to be worth a parallel region: see kSerialMacs).
  explicit ReplicaThreadsScope(const KernelContext &ctx, int threads = 0);
  ~ReplicaThreadsScope();
  ReplicaThreadsScope(const ReplicaThreadsScope &) = delete;
  ReplicaThreadsScope &operator=(const ReplicaThreadsScope &) = delete;

private:
  int saved_;
};

/// Launches smaller than these run on one thread. Each OpenMP parallel
/// region ends in a barrier: a few microseconds on an idle machine, but with
/// another busy process on the cores it waits until a descheduled thread
/// runs again (milliseconds), so a step of many small parallel regions falls
/// apart under contention. A weight reorder under 1 MiB or a matrix product
/// under 2^21 multiply-adds takes tens of microseconds on one thread.
constexpr int64_t kSerialReorderBytes = int64_t(1) << 20;
constexpr int64_t kSerialMacs = int64_t(1) << 21;

/// An attribute asking for a user-provided scratchpad (see the file
/// comment).
dnnl::primitive_attr userScratchpad();

/// A plain memory over a launch buffer, or over scratch the launch owns.
dnnl::memory bind(const dnnl::memory::desc &desc, void *data);

/// The primitives of one launch site, in order: reorders of inputs into the
/// layouts the primitives chose, the primitives, reorders of outputs back to
/// the plan's layouts. Copyable (oneDNN objects are shared handles), so it is
/// the KernelFn itself.
class DnnlLaunch {
public:
  explicit DnnlLaunch(const char *kernel) : kernel_(kernel) {}

  /// `user` in layout `want`: `user` itself when the layouts agree, else
  /// scratch that a reorder fills from `user` at the start of every run
  /// (weights change every step, so their reorder cannot be cached).
  dnnl::memory input(const dnnl::memory::desc &want, const dnnl::memory &user);
  /// The memory a primitive writes `user` through: `user` itself, or
  /// scratch that a reorder copies into `user` at the end of every run.
  dnnl::memory output(const dnnl::memory::desc &want, const dnnl::memory &user);
  /// Appends `primitive` of `pd` with `args`, plus its scratchpad. It runs
  /// on `threads` threads when > 0 (create it under a ReplicaThreadsScope
  /// of as many), else on the replica's share.
  void add(const dnnl::primitive &primitive,
           const dnnl::primitive_desc_base &pd,
           std::unordered_map<int, dnnl::memory> args, int threads = 0);
  /// Appends `primitive` of `pd` run once per element of `args`, all at
  /// once, each copy on one thread of the replica's team with its own
  /// arguments (a slice of the batch) and scratchpad: create it under a
  /// ReplicaThreadsScope of 1. See splitsBatch().
  void addSplit(const dnnl::primitive &primitive,
                const dnnl::primitive_desc_base &pd,
                std::vector<std::unordered_map<int, dnnl::memory>> args);
  /// An own step between the primitives (a loop oneDNN has no primitive
  /// for), run in order with them.
  void addLoop(std::function<void()> loop);

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const std::vector<TensorRef> &,
                    const std::vector<TensorRef> &) const;

private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    /// `args` in the C API's form, made once: dnnl::primitive::execute
    /// builds this vector on every call.
    std::vector<dnnl_exec_arg_t> cArgs;
    std::function<void()> loop; // set instead of primitive for own steps
    int threads = 0;            // > 0: runs on this many, not the replica's
    /// Set instead of primitive for addSplit: the copies, one a thread.
    std::vector<Step> split = {};
  };
  static dnnl_status_t execute(const Step &step, dnnl::stream &stream);
  void addReorder(std::vector<Step> &to, const dnnl::memory &from,
                  const dnnl::memory &dst);
  /// Appends `step`, its C arguments made from its (final) `args`.
  static void push(std::vector<Step> &to, Step step);

  const char *kernel_;
  std::vector<Step> before_, steps_, after_;
};

/// A launch site whose own loop executes oneDNN primitives (fused_conv2d_pool
/// runs one a chunk of images) rather than a DnnlLaunch's fixed list: the
/// KernelFn type says so, as DnnlLaunch's does, for whoever must tell such
/// launches apart (SteadyStateTest: oneDNN's execute allocates its context).
struct DnnlLoop {
  std::function<Status(const KernelContext &)> run;

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const std::vector<TensorRef> &,
                    const std::vector<TensorRef> &) const {
    return run(ctx);
  }
};

/// oneDNN's parameters for a window (runtime/core/WindowGeometry.h).
inline dnnl::memory::dims dnnlStrides(const WindowGeometry &g) {
  return {g.h.stride, g.w.stride};
}
inline dnnl::memory::dims dnnlWindow(const WindowGeometry &g) {
  return {g.h.window, g.w.window};
}
/// oneDNN counts dilation from 0 (Keras' dilation 1 is its 0).
inline dnnl::memory::dims dnnlDilations(const WindowGeometry &g) {
  return {g.h.dilation - 1, g.w.dilation - 1};
}
inline dnnl::memory::dims dnnlPadBefore(const WindowGeometry &g) {
  return {g.h.padBefore, g.w.padBefore};
}
inline dnnl::memory::dims dnnlPadAfter(const WindowGeometry &g) {
  return {g.h.padAfter, g.w.padAfter};
}

/// Appends the eltwise post-op of a fused op's `activation` (relu, sigmoid,
/// tanh; none or linear append nothing) to `ops`; an error naming the
/// kernel for any other activation.
Status appendEpilogue(const char *kernel, const KernelConfig &config,
                      dnnl::post_ops &ops);

/// An NHWC activation as oneDNN's logical NCHW dims in layout nhwc.
dnnl::memory::desc
nhwcDesc(int64_t n, int64_t h, int64_t w, int64_t c,
         dnnl::memory::data_type type = dnnl::memory::data_type::f32);

/// How the convolution and matmul kernels take a launch whose operands are
/// bfloat16: with oneDNN's bf16 primitives (bf16 operands, float32
/// accumulation, each output rounded to nearest even once: the reference
/// rounding, up to the order of the sums), or as every other kernel does,
/// in float32 on widened copies (ReducedPrecision.h). GRAPH_CPU_BF16 says
/// which: `auto` (the default) takes oneDNN's primitives where the CPU has
/// AVX512-BF16 or AMX, which compute on bfloat16 natively; without them
/// oneDNN emulates bfloat16, and on an AVX-512 Xeon that was 5x slower
/// than its float32 convolutions (seed CNN conv 2 forward: 18.7 against
/// 3.7 ms). `onednn` takes them anyway (the tests' way to run them on such
/// a CPU), `widened` never.
enum class Bf16Path { widened, onednn };

/// The path GRAPH_CPU_BF16 and the CPU choose; an error naming the
/// variable when it holds anything else.
Status bf16Path(Bf16Path &path);

/// Whether every floating-point operand of a launch is bf16 (integer
/// operands aside), and there is one.
bool allBf16(const std::vector<TensorRef> &ins,
             const std::vector<TensorRef> &outs);

/// KernelRegistry::TakesReduced of the oneDNN convolution and matmul
/// kernels: allBf16 and bf16Path() is onednn (or GRAPH_CPU_BF16 is wrong,
/// which the factory then reports).
bool takesBf16(const std::vector<TensorRef> &ins,
               const std::vector<TensorRef> &outs);

/// KernelRegistry::TakesReduced of max_pool2d, whose bf16 launches run
/// oneDNN's bf16 pooling, bit for bit what a widened launch computes
/// (DnnlPoolKernels.cpp): allBf16 and a CPU with AVX-512, where oneDNN has
/// bf16 at all. Not GRAPH_CPU_BF16's choice: nothing rounds differently.
/// (max_pool2d_grad's own loop takes any allBf16 launch.)
bool poolingTakesBf16(const std::vector<TensorRef> &ins,
                      const std::vector<TensorRef> &outs);

/// The operands of a kernel with a bf16 path (takesBf16).
inline const OperandRule kDnnlOperands = OperandRule::f32OrBf16().because(
    " (the cpu backend computes in f32, or in bf16 on oneDNN's bf16 path)");

/// The oneDNN type of the launch's floating-point operands, which must all
/// be f32, or all bf16 (takesBf16); an error naming the kernel and the
/// operand otherwise.
Status dnnlOperandType(const char *kernel, const std::vector<TensorRef> &ins,
                       const std::vector<TensorRef> &outs,
                       dnnl::memory::data_type &type);

/// `t`'s slice `part` of `parts` along its first axis, as a buffer for
/// `desc`.
dnnl::memory sliceOf(const dnnl::memory::desc &desc, const TensorRef &t,
                     int part, int parts);

} // namespace graph::runtime::cpu

#endif // RUNTIME_BACKENDS_CPU_DNNLCONTEXT_H
