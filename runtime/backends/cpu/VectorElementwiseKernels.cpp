//===- VectorElementwiseKernels.cpp - activations, add, bias, dropout -----===//
//
// Every per-element kernel (the activations, their gradients, add, and the
// fused `elementwise` chain) is one small program: a list of instructions
// over launch inputs and temporaries. The factory builds it once, the
// fused chain's from its body through the plan's parser (one
// grammar). A step runs it over tiles of kTile floats, one instruction at a
// time across the whole tile, so each instruction is a `#pragma omp simd`
// loop the compiler vectorises and the temporaries stay in L1; tiles are
// split across the replica's OpenMP threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/DropoutMask.h"
#include "runtime/plan/ElementwiseBody.h"

#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

/// Floats per tile: 2 KiB per temporary, so a chain of a dozen statements
/// still runs out of L1.
constexpr int64_t kTile = 512;

enum class OpCode : uint8_t {
  add,
  relu,
  sigmoid,
  tanh,
  elu,
  leakyRelu,
  gelu,
  geluTanh,
  reluGrad,
  sigmoidGrad,
  tanhGrad,
  eluGrad,
  leakyReluGrad,
  geluGrad,
  geluTanhGrad,
};

/// Operands as in ElementwiseBody::Stmt: >= 0 is a launch
/// input, -(s + 1) is the result of instruction s.
struct Instruction {
  OpCode op{};
  std::vector<int> args;
  float alpha = 0.0f;
};

struct Program {
  std::vector<Instruction> code;
  int result = 0; // same encoding as Instruction::args
};

bool opCodeOf(const std::string &name, bool approximate, OpCode &op) {
  static const std::pair<const char *, OpCode> kOps[] = {
      {"add", OpCode::add},
      {"relu", OpCode::relu},
      {"sigmoid", OpCode::sigmoid},
      {"tanh", OpCode::tanh},
      {"elu", OpCode::elu},
      {"leaky_relu", OpCode::leakyRelu},
      {"gelu", OpCode::gelu},
      {"relu_grad", OpCode::reluGrad},
      {"sigmoid_grad", OpCode::sigmoidGrad},
      {"tanh_grad", OpCode::tanhGrad},
      {"elu_grad", OpCode::eluGrad},
      {"leaky_relu_grad", OpCode::leakyReluGrad},
      {"gelu_grad", OpCode::geluGrad},
  };
  for (const auto &[n, code] : kOps)
    if (name == n) {
      op = code;
      if (approximate && op == OpCode::gelu)
        op = OpCode::geluTanh;
      if (approximate && op == OpCode::geluGrad)
        op = OpCode::geluTanhGrad;
      return true;
    }
  return false;
}

template <typename F>
[[gnu::always_inline]] inline void map1(const float *a, float *d, int64_t n,
                                        F f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    d[i] = f(a[i]);
}

/// d = f(dy, saved), the gradient form.
template <typename F>
[[gnu::always_inline]] inline void map2(const float *a, const float *b,
                                        float *d, int64_t n, F f) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    d[i] = f(a[i], b[i]);
}

/// Runs `program` on elements [base, base + n) (n <= kTile); `scratch` holds
/// kTile floats per instruction.
void runTile(const Program &program, const float *const *ins, float *out,
             int64_t base, int64_t n, float *scratch) {
  auto operand = [&](int v) -> const float * {
    return v >= 0 ? ins[v] + base : scratch + (-v - 1) * kTile;
  };
  int last = static_cast<int>(program.code.size()) - 1;
  bool wroteOutput = false;
  for (int s = 0; s <= last; ++s) {
    const Instruction &in = program.code[s];
    // The final instruction, when it is the result, writes the output
    // directly: nothing reads after it, so even an output that aliases an
    // input is read before it is written, element by element. Not a sum of
    // three or more, which rereads its destination.
    bool direct = s == last && program.result == -s - 1 && in.args.size() <= 2;
    float *d = direct ? out + base : scratch + s * kTile;
    wroteOutput = direct;
    const float *a = operand(in.args[0]);
    const float *b = in.args.size() > 1 ? operand(in.args[1]) : nullptr;
    float alpha = in.alpha;
    switch (in.op) {
    case OpCode::add:
      map2(a, b, d, n, [](float x, float y) { return x + y; });
      for (size_t k = 2; k < in.args.size(); ++k)
        map2(d, operand(in.args[k]), d, n,
             [](float x, float y) { return x + y; });
      break;
    case OpCode::relu:
      map1(a, d, n, [](float x) { return simdSelect(x > 0.0f, x, 0.0f); });
      break;
    case OpCode::sigmoid:
      map1(a, d, n, [](float x) { return simdSigmoid(x); });
      break;
    case OpCode::tanh:
      map1(a, d, n, [](float x) { return simdTanh(x); });
      break;
    case OpCode::elu:
      map1(a, d, n, [alpha](float x) {
        return simdSelect(x > 0.0f, x, alpha * (simdExp(x) - 1.0f));
      });
      break;
    case OpCode::leakyRelu:
      map1(a, d, n,
           [alpha](float x) { return simdSelect(x > 0.0f, x, alpha * x); });
      break;
    case OpCode::gelu:
      map1(a, d, n, [](float x) { return vec::gelu(x, false); });
      break;
    case OpCode::geluTanh:
      map1(a, d, n, [](float x) { return vec::gelu(x, true); });
      break;
    case OpCode::reluGrad:
      map2(a, b, d, n,
           [](float dy, float y) { return simdSelect(y > 0.0f, dy, 0.0f); });
      break;
    case OpCode::sigmoidGrad:
      map2(a, b, d, n, [](float dy, float y) { return dy * y * (1.0f - y); });
      break;
    case OpCode::tanhGrad:
      map2(a, b, d, n, [](float dy, float y) { return dy * (1.0f - y * y); });
      break;
    case OpCode::eluGrad:
      map2(a, b, d, n, [alpha](float dy, float y) {
        return simdSelect(y > 0.0f, dy, dy * (y + alpha));
      });
      break;
    case OpCode::leakyReluGrad:
      map2(a, b, d, n, [alpha](float dy, float x) {
        return simdSelect(x > 0.0f, dy, alpha * dy);
      });
      break;
    case OpCode::geluGrad:
      map2(a, b, d, n, [](float dy, float x) {
        return dy * vec::geluDerivative(x, false);
      });
      break;
    case OpCode::geluTanhGrad:
      map2(a, b, d, n,
           [](float dy, float x) { return dy * vec::geluDerivative(x, true); });
      break;
    }
  }
  if (!wroteOutput)
    std::memmove(out + base, operand(program.result), n * sizeof(float));
}

/// Runs `program` over `size` elements, in parallel when it pays.
void runProgram(const Program &program, const Tensors &ins, float *out,
                int64_t size) {
  // Operand pointers and tile scratch live per thread and only grow: the
  // steady-state step allocates nothing.
  const float **in = threadScratch<const float *>(ins.size());
  for (size_t k = 0; k < ins.size(); ++k)
    in[k] = ins[k].f32();
  const float *const *inputs = in;
  int64_t tiles = (size + kTile - 1) / kTile;
  size_t scratchFloats = std::max<size_t>(1, program.code.size()) * kTile;
#pragma omp parallel if (size >= kParallelElements)
  {
    float *scratch = threadScratch<float>(scratchFloats);
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tiles; ++t) {
      int64_t base = t * kTile;
      runTile(program, inputs, out, base, std::min(kTile, size - base),
              scratch);
    }
  }
}

/// Every operand has the output's element count.
Status checkSameSize(const char *kernel, const Tensors &ins,
                     const Tensors &outs) {
  for (size_t k = 0; k < ins.size(); ++k)
    if (ins[k].elements() != outs[0].elements())
      return kernelError(kernel, "input " + std::to_string(k) + " " +
                                     shapeText(ins[k].shape) +
                                     " differs in size from the output " +
                                     shapeText(outs[0].shape));
  return Status::ok();
}

KernelFn programKernel(Program program) {
  return [program = std::move(program)](
             const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
             const Tensors &outs) {
    useReplicaThreads(ctx);
    runProgram(program, ins, outs[0].f32(), outs[0].elements());
    return Status::ok();
  };
}

/// A factory for the graph op `name` (an activation, its gradient, or add)
/// as a one-instruction program.
KernelFactory singleOpFactory(const char *name) {
  return
      [name](const KernelContext &, const KernelConfig &cfg, const Tensors &ins,
             const Tensors &outs, KernelFn &out) -> Status {
        bool isAdd = std::string(name) == "add";
        bool isGrad = std::string(name).ends_with("_grad");
        size_t arity = isGrad ? 2 : 1;
        if (Status s =
                checkOperands(name, ins, outs, arity,
                              isAdd ? size_t{1} << 20 : arity, 1, kCpuOperands);
            !s)
          return s;
        if (Status s = checkSameSize(name, ins, outs); !s)
          return s;
        Program program;
        Instruction in;
        opCodeOf(name, cfg.getInt("approximate", 0) != 0, in.op); // known
        bool isElu = std::string(name).starts_with("elu");
        in.alpha = static_cast<float>(cfg.getFloat("alpha", isElu ? 1.0 : 0.2));
        for (size_t k = 0; k < ins.size(); ++k)
          in.args.push_back(static_cast<int>(k));
        if (isAdd && ins.size() == 1) {
          program.result = 0; // a one-operand sum is a copy
        } else {
          program.code.push_back(std::move(in));
          program.result = -1;
        }
        out = programKernel(std::move(program));
        return Status::ok();
      };
}

Status elementwiseFactory(const KernelContext &, const KernelConfig &cfg,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "elementwise";
  if (Status s =
          checkOperands(kName, ins, outs, 1, size_t{1} << 20, 1, kCpuOperands);
      !s)
    return s;
  if (Status s = checkSameSize(kName, ins, outs); !s)
    return s;
  ElementwiseBody parsed;
  std::string error;
  if (!parsed.parse(cfg.getString("body"), error))
    return kernelError(kName, "body: " + error);
  if (parsed.numInputs() > static_cast<int>(ins.size()))
    return kernelError(kName, "body reads a" +
                                  std::to_string(parsed.numInputs() - 1) +
                                  " but the launch has " +
                                  std::to_string(ins.size()) + " inputs");
  Program program;
  for (const ElementwiseBody::Stmt &stmt : parsed.statements()) {
    Instruction in;
    if (!opCodeOf(stmt.op, stmt.approximate, in.op))
      return kernelError(kName, "no cpu instruction for '" + stmt.op + "'");
    in.args = stmt.args;
    in.alpha = static_cast<float>(stmt.alpha);
    program.code.push_back(std::move(in));
  }
  program.result = parsed.resultValue();
  out = programKernel(std::move(program));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// bias_add and bias_add_grad
//
// Both see the data as rows of C channels. A row of 10 or 32 floats is too
// short a simd loop, so both work on super-rows of k rows (k * C >= 64
// floats), where channel c sits at lanes c, c + C, c + 2C, ...
//===----------------------------------------------------------------------===//

constexpr int64_t kMinSuperRow = 64;

int64_t rowsPerSuperRow(int64_t channels) {
  return channels >= kMinSuperRow ? 1
                                  : (kMinSuperRow + channels - 1) / channels;
}

/// `data`'s last axis has `channels` (> 0) elements.
Status checkChannels(const char *kName, const TensorRef &data,
                     int64_t channels) {
  if (data.shape.empty())
    return kernelError(kName, "needs a ranked tensor, got a scalar");
  if (channels != data.shape.back())
    return kernelError(kName, "bias has " + std::to_string(channels) +
                                  " elements but the last axis of " +
                                  shapeText(data.shape) + " has " +
                                  std::to_string(data.shape.back()));
  if (channels == 0)
    return kernelError(kName, "has no channels");
  return Status::ok();
}

Status biasAddFactory(const KernelContext &, const KernelConfig &,
                      const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "bias_add";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 1, kCpuOperands); !s)
    return s;
  if (Status s = checkChannels(kName, ins[0], ins[1].elements()); !s)
    return s;
  if (outs[0].elements() != ins[0].elements())
    return kernelError(kName, "output " + shapeText(outs[0].shape) +
                                  " differs in size from the input " +
                                  shapeText(ins[0].shape));
  int64_t c = ins[1].elements();
  int64_t k = rowsPerSuperRow(c);
  out = [c, k](const KernelContext &ctx, const KernelConfig &,
               const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *x = ins[0].f32(), *bias = ins[1].f32();
    float *y = outs[0].f32();
    int64_t n = ins[0].elements(), width = k * c;
    // The bias changes every step: tile it across a super-row here.
    float *tiled = threadScratch<float>(static_cast<size_t>(width));
    for (int64_t j = 0; j < width; ++j)
      tiled[j] = bias[j % c];
    const float *tb = tiled;
    int64_t superRows = n / width;
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
    for (int64_t r = 0; r < superRows; ++r) {
      const float *xr = x + r * width;
      float *yr = y + r * width;
#pragma omp simd
      for (int64_t j = 0; j < width; ++j)
        yr[j] = xr[j] + tb[j];
    }
    for (int64_t i = superRows * width; i < n; ++i)
      y[i] = x[i] + tb[i - superRows * width];
    return Status::ok();
  };
  return Status::ok();
}

/// Column sums of a [rows, C] gradient. Super-rows are summed in float in
/// blocks of kBlock, block sums in double, and the blocks are grouped in
/// fixed groups whose partial sums add up in group order: the result does
/// not depend on the thread count, and the float error is that of a
/// kBlock-term sum.
class BiasAddGrad {
public:
  static constexpr int64_t kBlock = 64;
  static constexpr int64_t kGroup = 16 * kBlock; // super-rows per group

  BiasAddGrad(int64_t channels)
      : c(channels), k(rowsPerSuperRow(channels)), width(k * channels) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *dy = ins[0].f32();
    int64_t n = ins[0].elements();
    int64_t superRows = n / width;
    int64_t groups = (superRows + kGroup - 1) / kGroup;
    partials.assign(std::max<int64_t>(groups, 1) * width, 0.0);
    double *part = partials.data();
    // Per-thread accumulators and the totals, kept across steps: the
    // steady-state step allocates nothing.
    size_t threads = static_cast<size_t>(std::max(omp_get_max_threads(), 1));
    if (scratch.size() < threads * width)
      scratch.resize(threads * width);
    total.assign(c, 0.0);
#pragma omp parallel if (n >= kParallelElements)
    {
      std::span<float> acc(scratch.data() + omp_get_thread_num() * width,
                           static_cast<size_t>(width));
#pragma omp for schedule(static)
      for (int64_t g = 0; g < groups; ++g) {
        double *pg = part + g * width;
        int64_t end = std::min(superRows, (g + 1) * kGroup);
        for (int64_t b = g * kGroup; b < end; b += kBlock) {
          std::fill(acc.begin(), acc.end(), 0.0f);
          float *a = acc.data();
          for (int64_t r = b; r < std::min(end, b + kBlock); ++r) {
            const float *row = dy + r * width;
#pragma omp simd
            for (int64_t j = 0; j < width; ++j)
              a[j] += row[j];
          }
#pragma omp simd
          for (int64_t j = 0; j < width; ++j)
            pg[j] += a[j];
        }
      }
    }
    for (int64_t g = 0; g < groups; ++g)
      for (int64_t j = 0; j < width; ++j)
        total[j % c] += part[g * width + j];
    for (int64_t i = superRows * width; i < n; ++i)
      total[i % c] += dy[i];
    float *db = outs[0].f32();
    for (int64_t j = 0; j < c; ++j)
      db[j] = static_cast<float>(total[j]);
    return Status::ok();
  }

private:
  int64_t c, k, width;
  std::vector<double> partials; // per group, reused across steps
  std::vector<float> scratch;   // width floats per thread
  std::vector<double> total;    // per channel
};

Status biasAddGradFactory(const KernelContext &, const KernelConfig &,
                          const Tensors &ins, const Tensors &outs,
                          KernelFn &out) {
  static constexpr const char *kName = "bias_add_grad";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  if (Status s = checkChannels(kName, ins[0], outs[0].elements()); !s)
    return s;
  // The executor runs one launch site on one thread, so the instance's
  // scratch is never shared.
  auto kernel = std::make_shared<BiasAddGrad>(outs[0].elements());
  out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
    return (*kernel)(ctx, cfg, ins, outs);
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// dropout and dropout_grad
//===----------------------------------------------------------------------===//

/// The mask is runtime/core/DropoutMask.h's: the element-independent part
/// of the hash once per step, then one inlined splitmix64 round and an
/// integer comparison per element, which a simd loop can run.
/// DropoutMaskIsTheReferences checks it bit for bit against
/// reference::dropoutKeep.
KernelFactory dropoutFactory(const char *kName) {
  return [kName](const KernelContext &, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs,
                 KernelFn &out) -> Status {
    if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
      return s;
    if (outs[0].elements() != ins[0].elements())
      return kernelError(kName, "output " + shapeText(outs[0].shape) +
                                    " differs in size from the input " +
                                    shapeText(ins[0].shape));
    double rate = cfg.getFloat("rate", 0.0);
    if (!(rate >= 0.0 && rate <= 1.0))
      return kernelError(kName,
                         "rate " + std::to_string(rate) + " is not in [0, 1]");
    int64_t opSeed = cfg.getInt("seed", 0);
    uint64_t threshold = dropout::keepThreshold(rate);
    int64_t rows = ins[0].shape.empty() ? 1 : ins[0].shape[0];
    int64_t rowElements = rows ? ins[0].elements() / rows : 0;
    float scale = rate < 1.0 ? static_cast<float>(1.0 / (1.0 - rate)) : 0.0f;
    if (cfg.has("noise_shape")) {
      // A mask shared along the noise's unit axes: each element takes the
      // mask of its index within the noise shape (NoiseMap).
      dropout::NoiseMap map;
      std::vector<int64_t> noise = cfg.getInts("noise_shape");
      if (!dropout::makeNoiseMap(ins[0].shape, noise, map))
        return kernelError(kName, "noise_shape " + shapeText(noise) +
                                      " does not broadcast to " +
                                      shapeText(ins[0].shape));
      out = [=](const KernelContext &ctx, const KernelConfig &,
                const Tensors &ins, const Tensors &outs) {
        useReplicaThreads(ctx);
        const float *x = ins[0].f32();
        float *y = outs[0].f32();
        uint64_t key = dropout::stepKey(opSeed, ctx.seed, ctx.step);
        int64_t n = rows * rowElements;
#pragma omp parallel for schedule(static) if (n >= kParallelElements)
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t i = 0; i < rowElements; ++i) {
            int64_t global = (ctx.globalRowOffset + r) * map.rowElements +
                             dropout::noiseIndexInRow(map, i);
            int64_t at = r * rowElements + i;
            y[at] =
                dropout::keep(key, global, threshold) ? x[at] * scale : 0.0f;
          }
        return Status::ok();
      };
      return Status::ok();
    }
    out = [=](const KernelContext &ctx, const KernelConfig &,
              const Tensors &ins, const Tensors &outs) {
      useReplicaThreads(ctx);
      const float *x = ins[0].f32();
      float *y = outs[0].f32();
      int64_t n = rows * rowElements;
      uint64_t key = dropout::stepKey(opSeed, ctx.seed, ctx.step);
      // Rows are contiguous: local element i is global element first + i.
      uint64_t first = static_cast<uint64_t>(ctx.globalRowOffset * rowElements);
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
      for (int64_t i = 0; i < n; ++i) {
        uint32_t keep =
            0u - static_cast<uint32_t>(dropout::keep(
                     key, static_cast<int64_t>(first) + i, threshold));
        y[i] =
            std::bit_cast<float>(std::bit_cast<uint32_t>(x[i] * scale) & keep);
      }
      return Status::ok();
    };
    return Status::ok();
  };
}

/// Elementwise kernels outside the fusable programs: per element, every
/// input is read before the output is written, so an output may alias an
/// input. `f(x, k)` is output element k given the launch's inputs x.
template <typename F> KernelFn elementKernel(F f) {
  return [f](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
             const Tensors &outs) {
    useReplicaThreads(ctx);
    int64_t n = outs[0].elements();
    size_t arity = ins.size();
    const float **x = threadScratch<const float *>(arity);
    for (size_t k = 0; k < arity; ++k)
      x[k] = ins[k].f32();
    float *y = outs[0].f32();
    const float *const *xs = x;
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
    for (int64_t i = 0; i < n; ++i)
      y[i] = f(xs, arity, i);
    return Status::ok();
  };
}

inline float relu6(float x) { return std::min(std::max(x, 0.0f), 6.0f); }

/// clipped_relu, silu, hard_sigmoid, hard_silu, scale_shift and their
/// gradients (from the forward input), multiply, maximum and maximum_grad.
KernelFactory extraElementwiseFactory(const char *name) {
  return [name](const KernelContext &, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs,
                KernelFn &out) -> Status {
    std::string op = name;
    bool nary = op == "multiply" || op == "maximum";
    size_t minIns = op == "maximum_grad"    ? 3
                    : nary                  ? 1
                    : op.ends_with("_grad") ? 2
                                            : 1;
    size_t maxIns = nary || op == "maximum_grad" ? size_t{1} << 20 : minIns;
    if (Status s =
            checkOperands(name, ins, outs, minIns, maxIns, 1, kCpuOperands);
        !s)
      return s;
    if (Status s = checkSameSize(name, ins, outs); !s)
      return s;
    float threshold = static_cast<float>(cfg.getFloat("threshold", 0.0));
    float slope = static_cast<float>(cfg.getFloat("negative_slope", 0.0));
    float cap = cfg.has("max_value")
                    ? static_cast<float>(cfg.getFloat("max_value"))
                    : std::numeric_limits<float>::infinity();
    float scale = static_cast<float>(cfg.getFloat("scale", 1.0));
    float offset = static_cast<float>(cfg.getFloat("offset", 0.0));
    using X = const float *const *;
    if (op == "clipped_relu")
      out = elementKernel([=](X x, size_t, int64_t i) {
        float v = x[0][i];
        return v > threshold ? std::min(v, cap) : slope * (v - threshold);
      });
    else if (op == "clipped_relu_grad")
      out = elementKernel([=](X x, size_t, int64_t i) {
        float dy = x[0][i], v = x[1][i];
        return v > threshold ? (v < cap ? dy : 0.0f) : slope * dy;
      });
    else if (op == "silu")
      out = elementKernel([](X x, size_t, int64_t i) {
        float v = x[0][i];
        return v / (1.0f + std::exp(-v));
      });
    else if (op == "silu_grad")
      out = elementKernel([](X x, size_t, int64_t i) {
        float dy = x[0][i], v = x[1][i];
        float sig = 1.0f / (1.0f + std::exp(-v));
        return dy * sig * (1.0f + v * (1.0f - sig));
      });
    else if (op == "hard_sigmoid")
      out = elementKernel(
          [](X x, size_t, int64_t i) { return relu6(x[0][i] + 3.0f) / 6.0f; });
    else if (op == "hard_sigmoid_grad")
      out = elementKernel([](X x, size_t, int64_t i) {
        float v = x[1][i];
        return v > -3.0f && v < 3.0f ? x[0][i] / 6.0f : 0.0f;
      });
    else if (op == "hard_silu")
      out = elementKernel([](X x, size_t, int64_t i) {
        float v = x[0][i];
        return v * relu6(v + 3.0f) / 6.0f;
      });
    else if (op == "hard_silu_grad")
      out = elementKernel([](X x, size_t, int64_t i) {
        float dy = x[0][i], v = x[1][i];
        float inner = v > -3.0f && v < 3.0f ? v : 0.0f;
        return dy * (relu6(v + 3.0f) + inner) / 6.0f;
      });
    else if (op == "scale_shift")
      out = elementKernel(
          [=](X x, size_t, int64_t i) { return x[0][i] * scale + offset; });
    else if (op == "multiply")
      out = elementKernel([](X x, size_t n, int64_t i) {
        float p = x[0][i];
        for (size_t k = 1; k < n; ++k)
          p *= x[k][i];
        return p;
      });
    else if (op == "maximum")
      out = elementKernel([](X x, size_t n, int64_t i) {
        float m = x[0][i];
        for (size_t k = 1; k < n; ++k)
          m = std::max(m, x[k][i]);
        return m;
      });
    else if (op == "maximum_grad") {
      int64_t index = cfg.getInt("index", -1);
      if (index < 0 || index >= static_cast<int64_t>(ins.size()) - 1)
        return kernelError(
            name, "index " + std::to_string(index) + " is out of range for " +
                      std::to_string(ins.size() - 1) + " inputs");
      // x = [dy, x0, ..., xn-1]: dy where x[index] is the first largest.
      size_t at = static_cast<size_t>(index) + 1;
      out = elementKernel([at](X x, size_t n, int64_t i) {
        size_t first = 1;
        for (size_t k = 2; k < n; ++k)
          if (x[k][i] > x[first][i])
            first = k;
        return first == at ? x[0][i] : 0.0f;
      });
    } else
      return kernelError(name, "unknown kernel");
    return Status::ok();
  };
}

/// Keras' Normalization, (x - mean) * (1 / max(sqrt(variance), epsilon))
/// per channel of the last axis; inputs x, variance and, optionally, mean.
Status normalizeFactory(const KernelContext &, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "normalize";
  if (Status s = checkOperands(kName, ins, outs, 2, 3, 1, kCpuOperands); !s)
    return s;
  if (ins[0].shape.empty() || outs[0].elements() != ins[0].elements())
    return kernelError(kName, "input " + shapeText(ins[0].shape) +
                                  " and output " + shapeText(outs[0].shape) +
                                  " need one size and a channel axis");
  int64_t c = ins[0].shape.back();
  for (size_t k = 1; k < ins.size(); ++k)
    if (ins[k].elements() != c)
      return kernelError(kName, "mean and variance need " + std::to_string(c) +
                                    " elements, got " +
                                    shapeText(ins[k].shape));
  double epsilon = cfg.getFloat("epsilon", 1e-7);
  // The executor runs one launch site on one thread: the scratch is its own.
  auto scratch = std::make_shared<std::vector<float>>(2 * c);
  out = [scratch, c, epsilon](const KernelContext &ctx, const KernelConfig &,
                              const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    float *inv = scratch->data(), *mean = inv + c;
    const float *variance = ins[1].f32();
    for (int64_t k = 0; k < c; ++k) {
      inv[k] = static_cast<float>(
          1.0 / std::max(std::sqrt(static_cast<double>(variance[k])), epsilon));
      mean[k] = ins.size() > 2 ? ins[2].f32()[k] : 0.0f;
    }
    const float *x = ins[0].f32();
    float *y = outs[0].f32();
    int64_t rows = ins[0].elements() / std::max<int64_t>(c, 1);
#pragma omp parallel for schedule(static) if (rows * c >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r)
#pragma omp simd
      for (int64_t k = 0; k < c; ++k)
        y[r * c + k] = (x[r * c + k] - mean[k]) * inv[k];
    return Status::ok();
  };
  return Status::ok();
}

/// x * scale[c] + offset[c] per channel c of the last axis (constants of
/// the config).
Status channelScaleShiftFactory(const KernelContext &, const KernelConfig &cfg,
                                const Tensors &ins, const Tensors &outs,
                                KernelFn &out) {
  static constexpr const char *kName = "channel_scale_shift";
  if (Status s = checkOperands(kName, ins, outs, 1, 1, 1, kCpuOperands); !s)
    return s;
  if (ins[0].shape.empty() || outs[0].elements() != ins[0].elements())
    return kernelError(kName, "input " + shapeText(ins[0].shape) +
                                  " and output " + shapeText(outs[0].shape) +
                                  " need one size and a channel axis");
  int64_t c = ins[0].shape.back();
  auto floats = [&](const char *name) {
    std::vector<double> v = cfg.getFloats(name);
    return std::vector<float>(v.begin(), v.end());
  };
  std::vector<float> scale = floats("scale"), offset = floats("offset");
  if (static_cast<int64_t>(scale.size()) != c ||
      static_cast<int64_t>(offset.size()) != c)
    return kernelError(kName, "scale and offset need " + std::to_string(c) +
                                  " elements, one per channel");
  int64_t rows = ins[0].elements() / std::max<int64_t>(c, 1);
  out = [scale, offset, c, rows](const KernelContext &ctx, const KernelConfig &,
                                 const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    const float *x = ins[0].f32(), *s = scale.data(), *o = offset.data();
    float *y = outs[0].f32();
#pragma omp parallel for schedule(static) if (rows * c >= kParallelElements)
    for (int64_t r = 0; r < rows; ++r)
#pragma omp simd
      for (int64_t k = 0; k < c; ++k)
        y[r * c + k] = x[r * c + k] * s[k] + o[k];
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorElementwiseKernels(KernelRegistry &registry) {
  registry.addFactory("channel_scale_shift", Backend::cpu,
                      channelScaleShiftFactory);
  registry.addFactory("normalize", Backend::cpu, normalizeFactory);
  for (const char *name : {"relu", "sigmoid", "tanh", "elu", "leaky_relu",
                           "gelu", "relu_grad", "sigmoid_grad", "tanh_grad",
                           "elu_grad", "leaky_relu_grad", "gelu_grad", "add"})
    registry.addFactory(name, Backend::cpu, singleOpFactory(name));
  for (const char *name :
       {"clipped_relu", "clipped_relu_grad", "silu", "silu_grad",
        "hard_sigmoid", "hard_sigmoid_grad", "hard_silu", "hard_silu_grad",
        "scale_shift", "multiply", "maximum", "maximum_grad"})
    registry.addFactory(name, Backend::cpu, extraElementwiseFactory(name));
  registry.addFactory("elementwise", Backend::cpu, elementwiseFactory);
  registry.addFactory("bias_add", Backend::cpu, biasAddFactory);
  registry.addFactory("bias_add_grad", Backend::cpu, biasAddGradFactory);
  registry.addFactory("dropout", Backend::cpu, dropoutFactory("dropout"));
  registry.addFactory("dropout_grad", Backend::cpu,
                      dropoutFactory("dropout_grad"));
}

} // namespace graph::runtime::cpu
