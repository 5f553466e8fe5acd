//===- cpu-kernels.cpp - a plan's training step, kernel by kernel ---------===//
//
// Times every launch of a plan's training step on the cpu backend, one
// replica's share (device 0), each instantiated through the kernel registry
// exactly as the executor does, and prints milliseconds per launch and their
// sum: where a step's time goes.
//
// With --floor it also prints the step's compute floor: every convolution
// and dense launch of the step (forward, backward data, backward weights)
// as one bare oneDNN primitive at the step's shapes, every memory in the
// layout the primitive picks (format `any`: blocked activations and
// weights, no reorder timed), back to back. A launch on bf16 buffers (a
// mixed_bfloat16 plan) is timed as oneDNN's bf16 primitive, as the cpu
// backend's bf16 path runs it: bf16 operands, float32 weight gradients;
// the floor of such a plan is its bf16 floor, whether or not the backend
// takes that path on this CPU. A primitive is timed both ways
// the cpu backend can run a step on this machine's threads -- the whole
// batch on all threads, and half the batch on half the threads (one of two
// replicas) -- and the faster counts. The sum is what a step of these
// layers cannot go below without a faster convolution; bench scripts divide
// it by the measured step time (the efficiency).
//
//   cpu-kernels PLAN [--replicas 1] [--reps 20] [--floor] [--cold]
//
// Each launch is timed `reps` times in a row, so its operands are warm in
// the core's L2 after the first; in a step they come from L3. --cold
// evicts them before every call, which puts the sum nearer the step.
// (The floor is timed warm either way: it is what the primitives cost.)
//
// Buffers are filled with uniform [0, 1) values (integers with 0), so the
// timings do not depend on the data, as for these kernels they should not.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/DnnlContext.h"
#include "runtime/base/Bfloat16.h"
#include "runtime/core/DenormalMode.h"
#include "runtime/core/WindowGeometry.h"
#include "runtime/plan/PlanLoader.h"

#include <CLI/CLI.hpp>
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace graph::runtime;
using dnnl::memory;

namespace {

using Shape = std::vector<int64_t>;
using Clock = std::chrono::steady_clock;

int64_t elements(const Shape &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// Milliseconds per call of `fn` over `reps` calls, after 3 warm-up calls
/// (first touch, JIT, caches); `beforeEach`, if set, runs untimed before
/// every timed call.
template <typename Fn>
double timeIt(int reps, Fn &&fn,
              const std::function<void()> &beforeEach = nullptr) {
  for (int i = 0; i < 3; ++i)
    fn();
  double ms = 0;
  for (int i = 0; i < reps; ++i) {
    if (beforeEach)
      beforeEach();
    auto start = Clock::now();
    fn();
    ms +=
        std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  }
  return ms / reps;
}

/// Bytes each thread writes to push a launch's operands out of its core's
/// private caches (--cold): four times the 2 MiB L2 of these machines.
constexpr size_t kEvictBytes = size_t(8) << 20;

/// --cold's step before every timed call: each of the `threads` threads
/// that run a launch writes its own kEvictBytes, so the launch's operands
/// leave those cores' private caches (they stay in the shared L3), as in a
/// step, where a launch reads what was written several launches before.
std::function<void()> evictPrivateCaches(int threads) {
  auto scratch = std::make_shared<std::vector<std::vector<char>>>(
      threads, std::vector<char>(kEvictBytes));
  return [scratch, threads] {
#pragma omp parallel num_threads(threads)
    {
      std::vector<char> &mine = (*scratch)[omp_get_thread_num()];
      for (size_t i = 0; i < mine.size(); i += 64)
        mine[i] = static_cast<char>(mine[i] + 1);
    }
  };
}

void fillUniform(float *data, int64_t n, std::mt19937 &gen) {
  std::uniform_real_distribution<float> dist(0, 1);
  for (int64_t i = 0; i < n; ++i)
    data[i] = dist(gen);
}

void fillUniformBf16(uint16_t *data, int64_t n, std::mt19937 &gen) {
  std::vector<float> values(n);
  fillUniform(values.data(), n, gen);
  floatsToBf16(values.data(), data, n);
}

//===----------------------------------------------------------------------===//
// The floor: bare oneDNN primitives in the layouts they pick
//===----------------------------------------------------------------------===//

constexpr auto kF32 = memory::data_type::f32;
constexpr auto kBf16 = memory::data_type::bf16;
constexpr auto kAny = memory::format_tag::any;

/// A primitive with every memory allocated in its primitive descriptor's
/// layout.
struct BarePrimitive {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
};

memory filled(const memory::desc &desc, std::mt19937 &gen) {
  memory m(desc, cpu::dnnlEngine());
  if (desc.data_type() == kBf16)
    fillUniformBf16(static_cast<uint16_t *>(m.get_data_handle()),
                    static_cast<int64_t>(desc.get_size() / 2), gen);
  else
    fillUniform(static_cast<float *>(m.get_data_handle()),
                static_cast<int64_t>(desc.get_size() / sizeof(float)), gen);
  return m;
}

template <typename Primitive, typename PrimitiveDesc>
BarePrimitive bare(const PrimitiveDesc &pd, std::vector<int> argKinds,
                   std::mt19937 &gen) {
  BarePrimitive b{Primitive(pd), {}};
  for (int arg : argKinds)
    b.args.emplace(arg,
                   filled(pd.query_md(dnnl::query::exec_arg_md, arg), gen));
  b.args.emplace(DNNL_ARG_SCRATCHPAD,
                 memory(pd.scratchpad_desc(), cpu::dnnlEngine()));
  return b;
}

memory::desc anyDesc(const memory::dims &dims, memory::data_type type = kF32) {
  return {dims, type, kAny};
}

/// The convolution of a conv launch at batch `n` on operands of `type`
/// (f32, or bf16 with float32 weight gradients), or an error.
Status convPrimitive(const std::string &kernel, const KernelConfig &cfg,
                     const std::vector<Shape> &ins,
                     const std::vector<Shape> &outs, int64_t n,
                     memory::data_type type, std::mt19937 &gen,
                     BarePrimitive &out) {
  // NHWC input and output of the forward convolution; its kernel HWIO or
  // OHWI (the config's filter_layout: graphc stores a kernel that only
  // convolutions read as OHWI), resolved as the cpu backend resolves it.
  Shape input, kernelShape;
  if (kernel == "conv2d_grad_input")
    input = outs[0], kernelShape = ins[1];
  else if (kernel == "conv2d_grad_kernel" ||
           kernel == "fused_conv2d_pool_grad_kernel")
    input = ins[0], kernelShape = outs[0];
  else
    input = ins[0], kernelShape = ins[1];
  input[0] = n;
  WindowGeometry g;
  ConvChannels ch;
  if (Status s = resolveConv(kernel.c_str(), cfg, input, kernelShape, g, ch);
      !s)
    return s;
  // A grouped (depthwise) convolution: oneDNN's 5-D grouped weights.
  memory::dims weightDims =
      ch.groups > 1 ? memory::dims{ch.groups, ch.filtersPerGroup(),
                                   ch.channelsPerGroup, g.h.window, g.w.window}
                    : memory::dims{ch.filters, g.c, g.h.window, g.w.window};
  memory::desc src = anyDesc({n, g.c, g.h.in, g.w.in}, type);
  memory::desc weights = anyDesc(weightDims, type);
  memory::desc dst = anyDesc({n, ch.filters, g.h.out, g.w.out}, type);
  memory::dims strides = cpu::dnnlStrides(g), dilations = cpu::dnnlDilations(g),
               padL = cpu::dnnlPadBefore(g), padR = cpu::dnnlPadAfter(g);
  // fused_conv2d_pool's floor is its convolution's: the pool is extra.
  bool fused = kernel == "fused_conv2d" || kernel == "fused_conv2d_pool";
  memory::desc bias({ch.filters}, type, memory::format_tag::x);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops ops;
  if (fused)
    if (Status s = cpu::appendEpilogue(kernel.c_str(), cfg, ops); !s)
      return s;
  attr.set_post_ops(ops);
  auto forward = [&](const dnnl::primitive_attr &a) {
    return fused ? dnnl::convolution_forward::primitive_desc(
                       {dnnl::prop_kind::forward_training,
                        dnnl::algorithm::convolution_direct, src, weights, bias,
                        dst, strides, dilations, padL, padR},
                       a, cpu::dnnlEngine())
                 : dnnl::convolution_forward::primitive_desc(
                       {dnnl::prop_kind::forward_training,
                        dnnl::algorithm::convolution_direct, src, weights, dst,
                        strides, dilations, padL, padR},
                       a, cpu::dnnlEngine());
  };
  dnnl::convolution_forward::primitive_desc hint = forward(attr);
  if (kernel == "conv2d" || fused) {
    std::vector<int> args = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
    if (fused)
      args.push_back(DNNL_ARG_BIAS);
    out = bare<dnnl::convolution_forward>(hint, args, gen);
  } else if (kernel == "conv2d_grad_input") {
    dnnl::convolution_backward_data::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, src, weights, dst, strides,
         dilations, padL, padR},
        attr, cpu::dnnlEngine(), hint);
    out = bare<dnnl::convolution_backward_data>(
        pd, {DNNL_ARG_DIFF_DST, DNNL_ARG_WEIGHTS, DNNL_ARG_DIFF_SRC}, gen);
  } else {
    dnnl::convolution_backward_weights::primitive_desc pd(
        {dnnl::algorithm::convolution_direct, src, anyDesc(weightDims), dst,
         strides, dilations, padL, padR},
        attr, cpu::dnnlEngine(), hint);
    out = bare<dnnl::convolution_backward_weights>(
        pd, {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS}, gen);
  }
  return Status::ok();
}

/// The matmul of a dense launch with `rows` rows (the batch times the
/// leading axes) on operands of `type` (f32, or bf16 with a float32 weight
/// gradient).
Status densePrimitive(const std::string &kernel, const KernelConfig &cfg,
                      const std::vector<Shape> &ins,
                      const std::vector<Shape> &outs, double batchScale,
                      memory::data_type type, std::mt19937 &gen,
                      BarePrimitive &out) {
  // [rows, k] input, [k, units] kernel of the forward dense.
  const Shape &x = kernel == "dense_grad_input" ? outs[0] : ins[0];
  const Shape &w = kernel == "dense_grad_kernel" ? outs[0] : ins[1];
  int64_t k = w[0], units = w[1];
  int64_t rows = static_cast<int64_t>(elements(x) / k * batchScale);
  memory::dims a, b, c;
  if (kernel == "dense" || kernel == "fused_dense")
    a = {rows, k}, b = {k, units}, c = {rows, units};
  else if (kernel == "dense_grad_input")
    a = {rows, units}, b = {units, k}, c = {rows, k};
  else
    a = {k, rows}, b = {rows, units}, c = {k, units};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  dnnl::post_ops ops;
  bool fused = kernel == "fused_dense";
  if (fused)
    if (Status s = cpu::appendEpilogue(kernel.c_str(), cfg, ops); !s)
      return s;
  attr.set_post_ops(ops);
  memory::desc bias({1, c[1]}, type, memory::format_tag::ab);
  memory::data_type result = kernel == "dense_grad_kernel" ? kF32 : type;
  dnnl::matmul::primitive_desc pd(
      fused ? dnnl::matmul::desc(anyDesc(a, type), anyDesc(b, type), bias,
                                 anyDesc(c, result))
            : dnnl::matmul::desc(anyDesc(a, type), anyDesc(b, type),
                                 anyDesc(c, result)),
      attr, cpu::dnnlEngine());
  std::vector<int> args = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST};
  if (fused)
    args.push_back(DNNL_ARG_BIAS);
  out = bare<dnnl::matmul>(pd, args, gen);
  return Status::ok();
}

bool isConv(const std::string &k) {
  // fused_conv2d_pool_grad_kernel's floor is its convolution's weight
  // gradient as oneDNN computes it, from the dense gradient (which the cpu
  // kernel does not write, or with writes_workspace writes without multiplying
  // it out). The cpu kernel's sums skip the dense gradient's zeros, a
  // quarter of the products under a 2x2 pool, so it can come in under this.
  return k == "conv2d" || k == "fused_conv2d" || k == "fused_conv2d_pool" ||
         k == "conv2d_grad_input" || k == "conv2d_grad_kernel" ||
         k == "fused_conv2d_pool_grad_kernel";
}
bool isDense(const std::string &k) {
  return k == "dense" || k == "fused_dense" || k == "dense_grad_input" ||
         k == "dense_grad_kernel";
}

/// Milliseconds of the bare primitive of a conv or dense launch on
/// `threads` threads with its batch scaled by `batchScale`, on operands of
/// `type`.
Status timeFloor(const std::string &kernel, const KernelConfig &cfg,
                 const std::vector<Shape> &ins, const std::vector<Shape> &outs,
                 memory::data_type type, double batchScale, int threads,
                 int reps, double &ms) {
  std::mt19937 gen(1);
  int saved = omp_get_max_threads();
  omp_set_num_threads(threads);
  BarePrimitive p;
  Status s = Status::ok();
  try {
    if (isConv(kernel)) {
      const Shape &input = kernel == "conv2d_grad_input" ? outs[0] : ins[0];
      s = convPrimitive(kernel, cfg, ins, outs,
                        static_cast<int64_t>(input[0] * batchScale), type, gen,
                        p);
    } else {
      s = densePrimitive(kernel, cfg, ins, outs, batchScale, type, gen, p);
    }
    if (s) {
      dnnl::stream stream(cpu::dnnlEngine());
      ms = timeIt(reps, [&] {
        p.primitive.execute(stream, p.args);
        stream.wait();
      });
    }
  } catch (const dnnl::error &e) {
    s = Status::error(kernel + ": oneDNN: " + e.what());
  }
  omp_set_num_threads(saved);
  return s;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Times a plan's training step on the cpu backend, kernel by "
               "kernel, and (--floor) its conv/dense compute floor"};
  std::string planPath;
  int replicas = 1, reps = 20;
  bool floor = false, cold = false;
  app.add_option("plan", planPath, "plan file (graphc's output)")->required();
  app.add_option("--replicas", replicas,
                 "the training program for this many replicas")
      ->check(CLI::PositiveNumber);
  app.add_option("--reps", reps, "timed runs per launch")
      ->check(CLI::PositiveNumber);
  app.add_flag("--cold", cold,
               "time each launch with its operands out of the private "
               "caches (in L3), as a step runs it, instead of warm from "
               "the run before");
  app.add_flag("--floor", floor,
               "also time each conv/dense launch as a bare oneDNN primitive "
               "in its best layout");
  CLI11_PARSE(app, argc, argv);

  LoadedPlan loaded;
  if (Status s = loadPlan(planPath, loaded); !s) {
    std::fprintf(stderr, "cpu-kernels: %s\n", s.message().c_str());
    return 1;
  }
  const graph::plan::Program *program = nullptr;
  for (const graph::plan::Program *p : *loaded.plan->programs())
    if (p->kind() == graph::plan::ProgramKind::train &&
        p->replicas() == replicas)
      program = p;
  if (!program) {
    std::fprintf(stderr,
                 "cpu-kernels: %s has no training program for %d replicas "
                 "(graphc --replicas)\n",
                 planPath.c_str(), replicas);
    return 1;
  }

  cpu::registerCpuKernels();
  KernelContext ctx;
  ctx.replicas = replicas;
  int threads = cpu::threadsPerReplica(replicas);
  int allThreads = cpu::threadsPerReplica(1);
  // Subnormals flushed to zero on every thread, as in a cpu step
  // (Executor::runDevice; the floor's primitives run on all the threads).
  ScopedDenormalMode flush(true);
  cpu::shareDenormalMode(allThreads);
  std::printf("plan %s, %d replica(s), device 0: %d thread(s), launches "
              "timed %s\n",
              planPath.c_str(), replicas, threads,
              cold ? "cold (operands out of L1/L2)" : "warm");
  std::printf("%-4s %-29s %-28s %9s%s\n", "op", "kernel", "output", "ms",
              floor ? "   floor ms" : "");
  const std::function<void()> evict =
      cold ? evictPrivateCaches(threads) : nullptr;
  std::mt19937 gen(1);
  double total = 0, floorTotal = 0;
  bool anyBf16 = false;
  std::map<std::string, double> byKernel;
  const auto &buffers = *program->buffers();
  for (uint32_t i = 0; i < program->ops()->size(); ++i) {
    const graph::plan::Op *op = program->ops()->Get(i);
    if (op->kind() != graph::plan::OpKind::launch || op->device() != 0)
      continue;
    std::string name = op->kernel()->str();
    KernelConfig cfg = KernelConfig::fromPlan(op->config());
    std::vector<std::vector<float>> storage;
    std::vector<TensorRef> ins, outs;
    std::vector<Shape> inShapes, outShapes;
    auto make = [&](int32_t index, std::vector<TensorRef> &to,
                    std::vector<Shape> &shapes) {
      const graph::plan::Buffer *b = buffers[index];
      Shape shape(b->shape()->begin(), b->shape()->end());
      int64_t bytes = elements(shape) * dtypeBytes(b->dtype());
      storage.emplace_back((bytes + 3) / 4 + 1);
      if (b->dtype() == graph::plan::DType::f32)
        fillUniform(storage.back().data(), elements(shape), gen);
      else if (b->dtype() == graph::plan::DType::bf16)
        fillUniformBf16(reinterpret_cast<uint16_t *>(storage.back().data()),
                        elements(shape), gen);
      else
        std::fill(storage.back().begin(), storage.back().end(), 0.0f);
      to.push_back({storage.back().data(), shape, b->dtype()});
      shapes.push_back(shape);
    };
    size_t count = (op->ins() ? op->ins()->size() : 0) +
                   (op->outs() ? op->outs()->size() : 0);
    storage.reserve(count); // TensorRefs point into it
    if (op->ins())
      for (int32_t b : *op->ins())
        make(b, ins, inShapes);
    if (op->outs())
      for (int32_t b : *op->outs())
        make(b, outs, outShapes);
    KernelFn fn;
    if (Status s = KernelRegistry::global().instantiate(name, Backend::cpu, ctx,
                                                        cfg, ins, outs, fn);
        !s) {
      std::fprintf(stderr, "cpu-kernels: op %u: %s\n", i, s.message().c_str());
      return 1;
    }
    Status failed = Status::ok();
    auto launch = [&] {
      if (Status s = fn(ctx, cfg, ins, outs); !s)
        failed = s;
    };
    double ms = timeIt(reps, launch, evict);
    if (!failed) {
      std::fprintf(stderr, "cpu-kernels: op %u: %s\n", i,
                   failed.message().c_str());
      return 1;
    }
    total += ms;
    byKernel[name] += ms;
    std::string output = outShapes.empty() ? "" : shapeText(outShapes[0]);
    std::printf("%-4u %-29s %-28s %9.3f", i, name.c_str(), output.c_str(), ms);
    if (floor && (isConv(name) || isDense(name))) {
      // The step's shapes are device 0's share of the batch: the whole
      // batch is `replicas` times that.
      // A launch on bf16 activations is timed as the bf16 primitive.
      memory::data_type type =
          ins[0].dtype == graph::plan::DType::bf16 ? kBf16 : kF32;
      anyBf16 |= type == kBf16;
      double whole = 0, half = 0;
      if (Status s = timeFloor(name, cfg, inShapes, outShapes, type, replicas,
                               allThreads, reps, whole);
          !s) {
        std::fprintf(stderr, "\ncpu-kernels: op %u: %s\n", i,
                     s.message().c_str());
        return 1;
      }
      double best = whole;
      if (allThreads > 1) {
        if (Status s = timeFloor(name, cfg, inShapes, outShapes, type,
                                 replicas / 2.0, allThreads / 2, reps, half);
            !s) {
          std::fprintf(stderr, "\ncpu-kernels: op %u: %s\n", i,
                       s.message().c_str());
          return 1;
        }
        best = std::min(whole, half);
      }
      floorTotal += best;
      std::printf(" %10.3f", best);
    }
    std::printf("\n");
  }
  std::printf("\nby kernel (ms per step on device 0):\n");
  for (const auto &[name, ms] : byKernel)
    std::printf("  %-31s %9.3f\n", name.c_str(), ms);
  std::printf("total %.3f ms\n", total);
  if (floor)
    std::printf("floor %.3f ms (conv/dense primitives%s, best layout, the "
                "faster of %d thread(s) x whole batch and %d x half)\n",
                floorTotal, anyBf16 ? " in bf16 where the plan is" : "",
                allThreads, std::max(1, allThreads / 2));
  return 0;
}
