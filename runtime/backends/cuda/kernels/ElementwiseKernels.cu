//===- ElementwiseKernels.cu - pointwise ops, bias, dropout ---------------===//
//
// One interpreter kernel runs every pointwise op: a fused `elementwise`
// body, parsed once per launch site by the plan's parser (one
// grammar for every backend) and encoded as a fixed-size instruction array
// passed by value, and each activation, activation gradient and `add`,
// which are one-instruction programs. Per element the math is float, as
// stored; the reference computes in double, so results agree within a few
// float ulps.
//
// Also here: the elementwise ops outside the programs (clipped_relu, silu,
// hard_sigmoid, hard_silu and gradients, scale_shift, multiply, maximum,
// maximum_grad), bias_add, bias_add_grad (a column reduction), the conv and
// dense epilogue (bias and activation in place) and dropout, whose mask is
// runtime/core/DropoutMask.h's, shared with the other backends.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/ColumnReduction.cuh"
#include "runtime/backends/cuda/kernels/CudaKernels.h"

#include "runtime/core/DropoutMask.h"
#include "runtime/plan/ElementwiseBody.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::cuda {

namespace {

//===----------------------------------------------------------------------===//
// The pointwise program
//===----------------------------------------------------------------------===//

enum class Op : uint8_t {
  add,
  relu,
  sigmoid,
  tanh,
  elu,
  leakyRelu,
  gelu,
  reluGrad,
  sigmoidGrad,
  tanhGrad,
  eluGrad,
  leakyReluGrad,
  geluGrad,
};

/// Limits of the by-value encoding (a kernel argument, about 700 bytes).
constexpr int kMaxInstructions = 32;
constexpr int kMaxOperands = 64;
constexpr int kMaxInputs = 16;

struct Instruction {
  Op op = Op::add;
  bool approximate = false;
  uint8_t firstOperand = 0;
  uint8_t operandCount = 0;
  float alpha = 0.0f;
};

/// Operands and the result use ElementwiseBody's encoding: >= 0 is
/// launch input n, < 0 is the value of instruction -(v + 1).
struct Program {
  int32_t size = 0;
  int32_t result = 0;
  Instruction code[kMaxInstructions];
  int8_t operands[kMaxOperands] = {};
};

struct PointwiseArgs {
  const float *inputs[kMaxInputs] = {};
  float *out = nullptr;
  int64_t elements = 0;
};

bool opOf(const std::string &name, Op &op) {
  static const std::pair<const char *, Op> kOps[] = {
      {"add", Op::add},
      {"relu", Op::relu},
      {"sigmoid", Op::sigmoid},
      {"tanh", Op::tanh},
      {"elu", Op::elu},
      {"leaky_relu", Op::leakyRelu},
      {"gelu", Op::gelu},
      {"relu_grad", Op::reluGrad},
      {"sigmoid_grad", Op::sigmoidGrad},
      {"tanh_grad", Op::tanhGrad},
      {"elu_grad", Op::eluGrad},
      {"leaky_relu_grad", Op::leakyReluGrad},
      {"gelu_grad", Op::geluGrad},
  };
  for (const auto &[n, o] : kOps)
    if (name == n) {
      op = o;
      return true;
    }
  return false;
}

/// Appends one instruction; false when the encoding is full.
bool append(Program &p, Op op, const std::vector<int> &operands, double alpha,
            bool approximate) {
  int first = 0;
  for (int i = 0; i < p.size; ++i)
    first += p.code[i].operandCount;
  if (p.size >= kMaxInstructions ||
      first + static_cast<int>(operands.size()) > kMaxOperands)
    return false;
  Instruction &in = p.code[p.size++];
  in.op = op;
  in.approximate = approximate;
  in.alpha = static_cast<float>(alpha);
  in.firstOperand = static_cast<uint8_t>(first);
  in.operandCount = static_cast<uint8_t>(operands.size());
  for (size_t i = 0; i < operands.size(); ++i)
    p.operands[first + i] = static_cast<int8_t>(operands[i]);
  return true;
}

constexpr float kSqrtHalf = 0.70710678118654752440f;
constexpr float kSqrtTwoOverPi = 0.79788456080286535588f;
constexpr float kInvSqrtTwoPi = 0.39894228040143267794f;
constexpr float kGeluTanhCoefficient = 0.044715f;

__device__ float geluForward(float x, bool approximate) {
  if (approximate)
    return 0.5f * x *
           (1.0f +
            tanhf(kSqrtTwoOverPi * (x + kGeluTanhCoefficient * x * x * x)));
  return 0.5f * x * (1.0f + erff(x * kSqrtHalf));
}

__device__ float geluDerivative(float x, bool approximate) {
  if (approximate) {
    float t = tanhf(kSqrtTwoOverPi * (x + kGeluTanhCoefficient * x * x * x));
    return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrtTwoOverPi *
                                   (1.0f + 3.0f * kGeluTanhCoefficient * x * x);
  }
  float cdf = 0.5f * (1.0f + erff(x * kSqrtHalf));
  float pdf = expf(-0.5f * x * x) * kInvSqrtTwoPi;
  return cdf + x * pdf;
}

/// One op on its first two operand values (x, and s for the gradients:
/// dy and the saved forward value, as GraphOps.td orders them).
__device__ float applyOp(const Instruction &in, float x, float s) {
  switch (in.op) {
  case Op::add: // only reached for the sums, which evaluate() handles
    return x;
  case Op::relu:
    return x > 0.0f ? x : 0.0f;
  case Op::sigmoid:
    return 1.0f / (1.0f + expf(-x));
  case Op::tanh:
    return tanhf(x);
  case Op::elu:
    return x > 0.0f ? x : in.alpha * expm1f(x);
  case Op::leakyRelu:
    return x > 0.0f ? x : in.alpha * x;
  case Op::gelu:
    return geluForward(x, in.approximate);
  case Op::reluGrad:
    return s > 0.0f ? x : 0.0f;
  case Op::sigmoidGrad:
    return x * s * (1.0f - s);
  case Op::tanhGrad:
    return x * (1.0f - s * s);
  case Op::eluGrad:
    return s > 0.0f ? x : x * (s + in.alpha);
  case Op::leakyReluGrad:
    return s > 0.0f ? x : in.alpha * x;
  case Op::geluGrad:
    return x * geluDerivative(s, in.approximate);
  }
  return 0.0f;
}

/// Operand `v` of element `i`: a launch input, or an earlier instruction's
/// value in `t`.
__device__ float operand(const PointwiseArgs &a, const float *t, int v,
                         int64_t i) {
  return v >= 0 ? a.inputs[v][i] : t[-v - 1];
}

__global__ void pointwiseKernel(Program p, PointwiseArgs a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < a.elements; i += int64_t(gridDim.x) * blockDim.x) {
    // Instruction s writes t[s] and reads only t[0..s): the parser rejects
    // a value used before it is defined.
    float t[kMaxInstructions];
    for (int s = 0; s < p.size; ++s) {
      const Instruction &in = p.code[s];
      const int8_t *ops = p.operands + in.firstOperand;
      if (in.op == Op::add) {
        float sum = 0.0f;
        for (int k = 0; k < in.operandCount; ++k)
          sum += operand(a, t, ops[k], i);
        t[s] = sum;
      } else {
        t[s] = applyOp(in, operand(a, t, ops[0], i),
                       in.operandCount > 1 ? operand(a, t, ops[1], i) : 0.0f);
      }
    }
    a.out[i] = operand(a, t, p.result, i);
  }
}

/// A pointwise launch site: the program and its buffers.
struct PointwiseSite {
  CudaDeviceState *state = nullptr;
  Program program;
  PointwiseArgs args;
};

Status runPointwise(const PointwiseSite &s) {
  if (s.args.elements == 0)
    return Status::ok();
  pointwiseKernel<<<blocksFor(s.args.elements), kThreads, 0,
                    s.state->compute>>>(s.program, s.args);
  RETURN_IF_LAUNCH_FAILED("pointwiseKernel");
  return Status::ok();
}

/// Checks that every input matches the output's size and builds the site.
Status pointwiseSite(const char *kName, const KernelContext &ctx,
                     const Tensors &ins, const Tensors &outs,
                     std::shared_ptr<PointwiseSite> &site) {
  site = std::make_shared<PointwiseSite>();
  REQUIRE(ins.size() <= size_t(kMaxInputs),
          std::to_string(ins.size()) + " inputs, more than the CUDA kernel's " +
              std::to_string(kMaxInputs));
  int64_t elements = outs[0].elements();
  for (size_t i = 0; i < ins.size(); ++i) {
    REQUIRE(ins[i].elements() == elements,
            "input " + std::to_string(i) + " " + shapeText(ins[i].shape) +
                " differs in size from the output " + shapeText(outs[0].shape));
    site->args.inputs[i] = ins[i].f32();
  }
  site->args.out = outs[0].f32();
  site->args.elements = elements;
  return deviceStateOf(kName, ctx, site->state);
}

KernelFn pointwiseFn(std::shared_ptr<PointwiseSite> site) {
  return [site](const KernelContext &, const KernelConfig &, const Tensors &,
                const Tensors &) { return runPointwise(*site); };
}

/// An activation (1 input) or activation gradient (dy, saved) kernel: a
/// program of one instruction.
KernelFactory activationFactory(const char *name, Op op, int inputs,
                                double defaultAlpha) {
  return [name, op, inputs, defaultAlpha](
             const KernelContext &ctx, const KernelConfig &cfg,
             const Tensors &ins, const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, inputs, inputs, 1));
    std::shared_ptr<PointwiseSite> site;
    RETURN_IF_ERROR(pointwiseSite(kName, ctx, ins, outs, site));
    std::vector<int> operands = {0};
    if (inputs == 2)
      operands.push_back(1);
    append(site->program, op, operands, cfg.getFloat("alpha", defaultAlpha),
           cfg.getInt("approximate", 0) != 0);
    site->program.result = -1;
    out = pointwiseFn(std::move(site));
    return Status::ok();
  };
}

/// The sum of any number of inputs: passes of up to kMaxInputs operands,
/// each after the first adding to the output so far.
Status add(const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
           const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "add";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1 << 20, 1));
  std::vector<std::shared_ptr<PointwiseSite>> passes;
  for (size_t begin = 0; begin < ins.size();) {
    Tensors operands;
    if (begin > 0)
      operands.push_back(outs[0]);
    size_t end = std::min(ins.size(), begin + kMaxInputs - operands.size());
    operands.insert(operands.end(), ins.begin() + begin, ins.begin() + end);
    begin = end;
    std::shared_ptr<PointwiseSite> site;
    RETURN_IF_ERROR(pointwiseSite(kName, ctx, operands, outs, site));
    std::vector<int> indices(operands.size());
    for (size_t i = 0; i < indices.size(); ++i)
      indices[i] = static_cast<int>(i);
    append(site->program, Op::add, indices, 0.0, false);
    site->program.result = -1;
    passes.push_back(std::move(site));
  }
  out = [passes](const KernelContext &, const KernelConfig &, const Tensors &,
                 const Tensors &) {
    for (const auto &pass : passes)
      RETURN_IF_ERROR(runPointwise(*pass));
    return Status::ok();
  };
  return Status::ok();
}

/// A fused chain; its body is parsed here, once.
Status elementwise(const KernelContext &ctx, const KernelConfig &cfg,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "elementwise";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1 << 20, 1));
  ElementwiseBody parsed;
  std::string error;
  REQUIRE(parsed.parse(cfg.getString("body"), error), "body: " + error);
  REQUIRE(parsed.numInputs() <= static_cast<int>(ins.size()),
          "body reads a" + std::to_string(parsed.numInputs() - 1) +
              " but the launch has " + std::to_string(ins.size()) + " inputs");
  std::shared_ptr<PointwiseSite> site;
  RETURN_IF_ERROR(pointwiseSite(kName, ctx, ins, outs, site));
  for (const ElementwiseBody::Stmt &stmt : parsed.statements()) {
    Op op;
    REQUIRE(opOf(stmt.op, op), "op '" + stmt.op + "' has no CUDA form");
    REQUIRE(append(site->program, op, stmt.args, stmt.alpha, stmt.approximate),
            "body has more than " + std::to_string(kMaxInstructions) +
                " statements or " + std::to_string(kMaxOperands) +
                " operands, the CUDA kernel's limit");
  }
  site->program.result = parsed.resultValue();
  out = pointwiseFn(std::move(site));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Bias and the fused epilogue
//===----------------------------------------------------------------------===//

__device__ float activate(float v, Activation activation) {
  switch (activation) {
  case Activation::none:
    return v;
  case Activation::relu:
    return v > 0.0f ? v : 0.0f;
  case Activation::sigmoid:
    return 1.0f / (1.0f + expf(-v));
  case Activation::tanh:
    return tanhf(v);
  }
  return v;
}

/// y = act(x + bias[i % channels]); x and y may be one buffer.
__global__ void biasActivationKernel(const float *x, float *y,
                                     const float *__restrict__ bias,
                                     int64_t elements, int64_t channels,
                                     Activation activation) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = x[i];
    if (bias)
      v += bias[i % channels];
    y[i] = activate(v, activation);
  }
}

Status biasAdd(const KernelContext &ctx, const KernelConfig &,
               const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "bias_add";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 1));
  REQUIRE(!ins[0].shape.empty() && ins[0].shape.back() > 0 &&
              ins[1].elements() == ins[0].shape.back(),
          "bias " + shapeText(ins[1].shape) +
              " does not match the last axis "
              "of " +
              shapeText(ins[0].shape));
  REQUIRE(outs[0].elements() == ins[0].elements(),
          "output " + shapeText(outs[0].shape) + " differs in size from " +
              shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  const float *x = ins[0].f32(), *bias = ins[1].f32();
  float *y = outs[0].f32();
  int64_t elements = ins[0].elements(), channels = ins[0].shape.back();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    biasActivationKernel<<<blocksFor(elements), kThreads, 0, state->compute>>>(
        x, y, bias, elements, channels, Activation::none);
    RETURN_IF_LAUNCH_FAILED("biasActivationKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// d(bias)[c] = sum over rows of dy[row, c].
struct ColumnOf {
  const float *m;
  int64_t cols;
  __device__ void operator()(int64_t row, int64_t col, double *v) const {
    v[0] = m[row * cols + col];
  }
};

struct StoreFloat {
  float *out;
  __device__ void operator()(int64_t col, const double *sums) const {
    out[col] = static_cast<float>(sums[0]);
  }
};

Status biasAddGrad(const KernelContext &ctx, const KernelConfig &,
                   const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "bias_add_grad";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  REQUIRE(!ins[0].shape.empty() && ins[0].shape.back() > 0 &&
              outs[0].elements() == ins[0].shape.back(),
          "bias_grad " + shapeText(outs[0].shape) +
              " does not match the last axis of " + shapeText(ins[0].shape));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  int64_t cols = ins[0].shape.back();
  ColumnReduction r;
  RETURN_IF_ERROR(r.plan(kName, ins[0].elements() / cols, cols, 1,
                         state->workspace, state->workspaceBytes));
  ColumnOf value{ins[0].f32(), cols};
  StoreFloat finish{outs[0].f32()};
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    RETURN_IF_CUDA_ERROR(
        launchColumnReduction<1>(r, value, finish, state->compute));
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

struct DropoutArgs {
  const float *x = nullptr;
  float *y = nullptr;
  int64_t elements = 0;
  /// The global index of element 0: globalRowOffset * rowElements.
  int64_t firstIndex = 0;
  int64_t opSeed = 0;
  uint64_t runSeed = 0;
  /// dropout::keepThreshold(rate).
  uint64_t threshold = 0;
  double scale = 0.0;
  /// With a noise shape: the mask of element i is that of noise element
  /// (firstRow + i / rowElements) * noise.rowElements + its index in the
  /// noise row.
  bool hasNoise = false;
  dropout::NoiseMap noise;
  int64_t firstRow = 0;
  int64_t rowElements = 1;
};

__global__ void dropoutKernel(DropoutArgs a, const int64_t *deviceStep) {
  // Read on the device: a replayed CUDA graph keeps its kernel arguments.
  uint64_t key = dropout::stepKey(a.opSeed, a.runSeed, *deviceStep);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < a.elements; i += int64_t(gridDim.x) * blockDim.x) {
    // The product in double, as the reference rounds it.
    int64_t index =
        a.hasNoise ? (a.firstRow + i / a.rowElements) * a.noise.rowElements +
                         dropout::noiseIndexInRow(a.noise, i % a.rowElements)
                   : a.firstIndex + i;
    a.y[i] = dropout::keep(key, index, a.threshold)
                 ? static_cast<float>(static_cast<double>(a.x[i]) * a.scale)
                 : 0.0f;
  }
}

/// dropout and dropout_grad: the same mask (regenerated from seed, step and
/// global row) and scale.
KernelFactory dropoutFactory(const char *name) {
  return [name](const KernelContext &ctx, const KernelConfig &cfg,
                const Tensors &ins, const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
    REQUIRE(outs[0].elements() == ins[0].elements(),
            "output " + shapeText(outs[0].shape) + " differs in size from " +
                shapeText(ins[0].shape));
    double rate = cfg.getFloat("rate", 0.0);
    REQUIRE(rate >= 0.0 && rate <= 1.0,
            "rate " + std::to_string(rate) + " is not in [0, 1]");
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    REQUIRE(state->deviceStep, "the device keeps no step in device memory "
                               "(CudaDeviceState::deviceStep)");
    DropoutArgs a;
    a.x = ins[0].f32();
    a.y = outs[0].f32();
    a.elements = ins[0].elements();
    int64_t rows = ins[0].shape.empty() ? 1 : ins[0].shape[0];
    int64_t rowElements = rows ? a.elements / rows : 0;
    a.opSeed = cfg.getInt("seed", 0);
    a.threshold = dropout::keepThreshold(rate);
    a.scale = rate < 1.0 ? 1.0 / (1.0 - rate) : 0.0;
    a.rowElements = std::max<int64_t>(rowElements, 1);
    if (cfg.has("noise_shape")) {
      std::vector<int64_t> noise = cfg.getInts("noise_shape");
      REQUIRE(dropout::makeNoiseMap(ins[0].shape, noise, a.noise),
              "noise_shape " + shapeText(noise) + " does not broadcast to " +
                  shapeText(ins[0].shape));
      a.hasNoise = true;
    }
    out = [state, a, rowElements](const KernelContext &stepCtx,
                                  const KernelConfig &, const Tensors &,
                                  const Tensors &) {
      if (a.elements == 0)
        return Status::ok();
      // The replica's first global row and the run's seed come with the
      // step's context (a factory's context has no row offset); both are
      // fixed for a launch site, so a captured graph may keep them. The
      // step, which is not, is read on the device.
      DropoutArgs args = a;
      args.firstIndex = stepCtx.globalRowOffset * rowElements;
      args.firstRow = stepCtx.globalRowOffset;
      args.runSeed = stepCtx.seed;
      dropoutKernel<<<blocksFor(a.elements), kThreads, 0, state->compute>>>(
          args, state->deviceStep);
      RETURN_IF_LAUNCH_FAILED("dropoutKernel");
      return Status::ok();
    };
    return Status::ok();
  };
}

//===----------------------------------------------------------------------===//
// broadcast, sum_to (its adjoint) and normalize
//===----------------------------------------------------------------------===//

constexpr int kMaxBroadcastRank = 8;

/// The shapes of a broadcast or sum_to: `full` (the larger) and the unit
/// tensor's strides along full's axes (0 on the repeated ones).
struct BroadcastArgs {
  const float *x = nullptr;
  float *y = nullptr;
  int rank = 0;
  int64_t full[kMaxBroadcastRank] = {};
  int64_t unitStride[kMaxBroadcastRank] = {};
  /// sum_to: the summed axes' dims and full strides, and their product.
  int summedRank = 0;
  int64_t summedDims[kMaxBroadcastRank] = {};
  int64_t summedStrides[kMaxBroadcastRank] = {};
  int64_t count = 1;
  int64_t elements = 0; // of the output
};

__global__ void broadcastKernel(BroadcastArgs a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < a.elements; i += int64_t(gridDim.x) * blockDim.x) {
    int64_t source = 0, rest = i;
    for (int d = a.rank - 1; d >= 0; --d) {
      source += (rest % a.full[d]) * a.unitStride[d];
      rest /= a.full[d];
    }
    a.y[i] = a.x[source];
  }
}

/// One thread per output element; `full` here is the output (unit) shape
/// and unitStride the input's strides of its axes.
__global__ void sumToKernel(BroadcastArgs a) {
  for (int64_t o = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       o < a.elements; o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = 0, rest = o;
    for (int d = a.rank - 1; d >= 0; --d) {
      base += (rest % a.full[d]) * a.unitStride[d];
      rest /= a.full[d];
    }
    double sum = 0.0;
    for (int64_t k = 0; k < a.count; ++k) {
      int64_t at = base, left = k;
      for (int s = a.summedRank - 1; s >= 0; --s) {
        at += (left % a.summedDims[s]) * a.summedStrides[s];
        left /= a.summedDims[s];
      }
      sum += a.x[at];
    }
    a.y[o] = static_cast<float>(sum);
  }
}

/// Whether `unit` has full's rank (1..kMaxBroadcastRank) and each dimension
/// 1 or full's.
bool broadcasts(const std::vector<int64_t> &unit,
                const std::vector<int64_t> &full) {
  if (unit.empty() || unit.size() != full.size() ||
      unit.size() > static_cast<size_t>(kMaxBroadcastRank))
    return false;
  for (size_t d = 0; d < unit.size(); ++d)
    if (unit[d] != full[d] && unit[d] != 1)
      return false;
  return true;
}

Status broadcastFactory(const KernelContext &ctx, const KernelConfig &,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "broadcast";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  REQUIRE(broadcasts(in, res),
          shapeText(in) + " does not broadcast to " + shapeText(res));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  BroadcastArgs a;
  a.x = ins[0].f32();
  a.y = outs[0].f32();
  a.rank = static_cast<int>(res.size());
  int64_t stride = 1;
  for (int d = a.rank - 1; d >= 0; --d) {
    a.full[d] = res[d];
    a.unitStride[d] = in[d] == 1 ? 0 : stride;
    stride *= in[d];
  }
  a.elements = outs[0].elements();
  out = [state, a](const KernelContext &, const KernelConfig &, const Tensors &,
                   const Tensors &) {
    if (a.elements == 0)
      return Status::ok();
    broadcastKernel<<<blocksFor(a.elements), kThreads, 0, state->compute>>>(a);
    RETURN_IF_LAUNCH_FAILED("broadcastKernel");
    return Status::ok();
  };
  return Status::ok();
}

Status sumToFactory(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "sum_to";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  const std::vector<int64_t> &in = ins[0].shape, &res = outs[0].shape;
  REQUIRE(broadcasts(res, in),
          shapeText(res) + " does not broadcast to " + shapeText(in));
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  BroadcastArgs a;
  a.x = ins[0].f32();
  a.y = outs[0].f32();
  a.rank = static_cast<int>(in.size());
  int64_t inStride[kMaxBroadcastRank];
  int64_t stride = 1;
  for (int d = a.rank - 1; d >= 0; --d) {
    inStride[d] = stride;
    stride *= in[d];
  }
  for (int d = 0; d < a.rank; ++d) {
    a.full[d] = res[d];
    a.unitStride[d] = inStride[d];
    if (res[d] == 1 && in[d] != 1) {
      a.summedDims[a.summedRank] = in[d];
      a.summedStrides[a.summedRank++] = inStride[d];
      a.count *= in[d];
    }
  }
  a.elements = outs[0].elements();
  out = [state, a](const KernelContext &, const KernelConfig &, const Tensors &,
                   const Tensors &) {
    if (a.elements == 0)
      return Status::ok();
    sumToKernel<<<blocksFor(a.elements), kThreads, 0, state->compute>>>(a);
    RETURN_IF_LAUNCH_FAILED("sumToKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// (x - mean) / max(sqrt(variance), epsilon), per channel of the last axis;
/// mean null when absent.
__global__ void normalizeKernel(const float *x, const float *variance,
                                const float *mean, float *y, int64_t elements,
                                int64_t channels, double epsilon) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t k = i % channels;
    double d = fmax(sqrt(static_cast<double>(variance[k])), epsilon);
    double m = mean ? static_cast<double>(mean[k]) : 0.0;
    y[i] = static_cast<float>((static_cast<double>(x[i]) - m) / d);
  }
}

Status normalizeFactory(const KernelContext &ctx, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "normalize";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 3, 1));
  REQUIRE(!ins[0].shape.empty() && outs[0].elements() == ins[0].elements(),
          "input " + shapeText(ins[0].shape) + " and output " +
              shapeText(outs[0].shape) + " need one size and a channel axis");
  int64_t channels = ins[0].shape.back();
  for (size_t k = 1; k < ins.size(); ++k)
    REQUIRE(ins[k].elements() == channels,
            "mean and variance need one element per channel");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  double epsilon = cfg.getFloat("epsilon", 1e-7);
  const float *x = ins[0].f32(), *variance = ins[1].f32();
  const float *mean = ins.size() > 2 ? ins[2].f32() : nullptr;
  float *y = outs[0].f32();
  int64_t elements = outs[0].elements();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (elements == 0 || channels == 0)
      return Status::ok();
    normalizeKernel<<<blocksFor(elements), kThreads, 0, state->compute>>>(
        x, variance, mean, y, elements, channels, epsilon);
    RETURN_IF_LAUNCH_FAILED("normalizeKernel");
    return Status::ok();
  };
  return Status::ok();
}

/// x * scale[c] + offset[c]; scale and offset in device memory that the
/// launch site owns (2 * channels floats).
__global__ void channelScaleShiftKernel(const float *x, const float *params,
                                        float *y, int64_t elements,
                                        int64_t channels) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < elements;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t k = i % channels;
    y[i] = x[i] * params[k] + params[channels + k];
  }
}

Status channelScaleShiftFactory(const KernelContext &ctx,
                                const KernelConfig &cfg, const Tensors &ins,
                                const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "channel_scale_shift";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, 1, 1));
  REQUIRE(!ins[0].shape.empty() && outs[0].elements() == ins[0].elements(),
          "input " + shapeText(ins[0].shape) + " and output " +
              shapeText(outs[0].shape) + " need one size and a channel axis");
  int64_t channels = ins[0].shape.back();
  auto floats = [&](const char *name) {
    std::vector<double> v = cfg.getFloats(name);
    return std::vector<float>(v.begin(), v.end());
  };
  std::vector<float> params = floats("scale"), offset = floats("offset");
  REQUIRE(static_cast<int64_t>(params.size()) == channels &&
              static_cast<int64_t>(offset.size()) == channels,
          "scale and offset need one element per channel");
  params.insert(params.end(), offset.begin(), offset.end());
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  // The launch site's scale and offset on the device, freed with it.
  auto device = std::make_shared<DeviceBuffer>();
  size_t bytes = std::max<size_t>(params.size(), 1) * sizeof(float);
  RETURN_IF_ERROR(device->allocate(state->ordinal, bytes));
  if (!params.empty()) {
    ScopedDevice scoped;
    RETURN_IF_ERROR(scoped.enter(state->ordinal));
    // Synchronous, once: the factory runs before any step.
    RETURN_IF_CUDA_ERROR(cudaMemcpy(device->data(), params.data(),
                                    params.size() * sizeof(float),
                                    cudaMemcpyHostToDevice));
  }
  const float *x = ins[0].f32();
  float *y = outs[0].f32();
  int64_t elements = outs[0].elements();
  out = [=](const KernelContext &, const KernelConfig &, const Tensors &,
            const Tensors &) {
    if (elements == 0 || channels == 0)
      return Status::ok();
    channelScaleShiftKernel<<<blocksFor(elements), kThreads, 0,
                              state->compute>>>(
        x, static_cast<const float *>(device->data()), y, elements, channels);
    RETURN_IF_LAUNCH_FAILED("channelScaleShiftKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Elementwise ops outside the fusable programs: clipped_relu, silu,
// hard_sigmoid, hard_silu and their gradients (from the forward input),
// scale_shift, and the merges multiply, maximum and maximum_grad. Per
// element every input is read before the output is written, so an output
// may alias an input.
//===----------------------------------------------------------------------===//

enum class ExtraOp : int32_t {
  clippedRelu,
  clippedReluGrad,
  silu,
  siluGrad,
  hardSigmoid,
  hardSigmoidGrad,
  hardSilu,
  hardSiluGrad,
  scaleShift,
  multiply,
  maximum,
  maximumGrad,
};

constexpr int kMaxExtraInputs = 16;

struct ExtraArgs {
  ExtraOp op = ExtraOp::multiply;
  const float *in[kMaxExtraInputs] = {};
  int inputs = 0;
  float *out = nullptr;
  int64_t elements = 0;
  float threshold = 0, slope = 0, cap = 0, scale = 1, offset = 0;
  bool capped = false;
  int index = 0; // maximum_grad: which x (in[index + 1]) gets dy
};

__device__ inline float deviceRelu6(float x) {
  return fminf(fmaxf(x, 0.0f), 6.0f);
}

__global__ void extraKernel(ExtraArgs a) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
       i < a.elements; i += int64_t(gridDim.x) * blockDim.x) {
    float x = a.in[0][i], r = 0.0f;
    switch (a.op) {
    case ExtraOp::clippedRelu:
      r = x > a.threshold ? (a.capped ? fminf(x, a.cap) : x)
                          : a.slope * (x - a.threshold);
      break;
    case ExtraOp::clippedReluGrad: {
      float v = a.in[1][i];
      r = v > a.threshold ? (!a.capped || v < a.cap ? x : 0.0f) : a.slope * x;
      break;
    }
    case ExtraOp::silu:
      r = x / (1.0f + expf(-x));
      break;
    case ExtraOp::siluGrad: {
      float v = a.in[1][i];
      float sig = 1.0f / (1.0f + expf(-v));
      r = x * sig * (1.0f + v * (1.0f - sig));
      break;
    }
    case ExtraOp::hardSigmoid:
      r = deviceRelu6(x + 3.0f) / 6.0f;
      break;
    case ExtraOp::hardSigmoidGrad: {
      float v = a.in[1][i];
      r = v > -3.0f && v < 3.0f ? x / 6.0f : 0.0f;
      break;
    }
    case ExtraOp::hardSilu:
      r = x * deviceRelu6(x + 3.0f) / 6.0f;
      break;
    case ExtraOp::hardSiluGrad: {
      float v = a.in[1][i];
      r = x * (deviceRelu6(v + 3.0f) + (v > -3.0f && v < 3.0f ? v : 0.0f)) /
          6.0f;
      break;
    }
    case ExtraOp::scaleShift:
      r = x * a.scale + a.offset;
      break;
    case ExtraOp::multiply:
      r = x;
      for (int k = 1; k < a.inputs; ++k)
        r *= a.in[k][i];
      break;
    case ExtraOp::maximum:
      r = x;
      for (int k = 1; k < a.inputs; ++k)
        r = fmaxf(r, a.in[k][i]);
      break;
    case ExtraOp::maximumGrad: {
      // in = [dy, x0, ...]: dy where x[index] is the first largest.
      int first = 1;
      for (int k = 2; k < a.inputs; ++k)
        if (a.in[k][i] > a.in[first][i])
          first = k;
      r = first == a.index + 1 ? x : 0.0f;
      break;
    }
    }
    a.out[i] = r;
  }
}

KernelFactory extraFactory(const char *name, ExtraOp op, int minInputs,
                           int maxInputs) {
  return [name, op, minInputs,
          maxInputs](const KernelContext &ctx, const KernelConfig &cfg,
                     const Tensors &ins, const Tensors &outs, KernelFn &out) {
    const char *kName = name;
    RETURN_IF_ERROR(checkOperands(kName, ins, outs, size_t(minInputs),
                                  size_t(maxInputs), 1));
    for (const TensorRef &t : ins)
      REQUIRE(t.elements() == outs[0].elements(),
              "input " + shapeText(t.shape) + " differs in size from output " +
                  shapeText(outs[0].shape));
    ExtraArgs a;
    a.op = op;
    a.inputs = static_cast<int>(ins.size());
    a.elements = outs[0].elements();
    a.threshold = static_cast<float>(cfg.getFloat("threshold", 0.0));
    a.slope = static_cast<float>(cfg.getFloat("negative_slope", 0.0));
    a.capped = cfg.has("max_value");
    a.cap = static_cast<float>(cfg.getFloat("max_value", 0.0));
    a.scale = static_cast<float>(cfg.getFloat("scale", 1.0));
    a.offset = static_cast<float>(cfg.getFloat("offset", 0.0));
    int64_t index = cfg.getInt("index", 0);
    if (op == ExtraOp::maximumGrad)
      REQUIRE(index >= 0 && index < a.inputs - 1,
              "index " + std::to_string(index) + " is out of range for " +
                  std::to_string(a.inputs - 1) + " inputs");
    a.index = static_cast<int>(index);
    CudaDeviceState *state = nullptr;
    RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
    out = [state, a](const KernelContext &, const KernelConfig &,
                     const Tensors &ins, const Tensors &outs) {
      if (a.elements == 0)
        return Status::ok();
      ExtraArgs args = a;
      for (int k = 0; k < args.inputs; ++k)
        args.in[k] = ins[k].f32();
      args.out = outs[0].f32();
      extraKernel<<<blocksFor(args.elements), kThreads, 0, state->compute>>>(
          args);
      RETURN_IF_LAUNCH_FAILED("extraKernel");
      return Status::ok();
    };
    return Status::ok();
  };
}

} // namespace

cudaError_t launchBiasActivation(float *y, const float *bias, int64_t elements,
                                 int64_t channels, Activation activation,
                                 cudaStream_t stream) {
  if (elements <= 0 || channels <= 0)
    return cudaSuccess;
  biasActivationKernel<<<blocksFor(elements), kThreads, 0, stream>>>(
      y, y, bias, elements, channels, activation);
  return cudaGetLastError();
}

void registerElementwiseKernels() {
  KernelRegistry &r = KernelRegistry::global();
  struct Entry {
    const char *name;
    Op op;
    int inputs;
    double alpha;
  };
  // Default alphas as GraphOps.td: elu 1.0, leaky_relu 0.2.
  static const Entry kActivations[] = {
      {"relu", Op::relu, 1, 0.0},
      {"sigmoid", Op::sigmoid, 1, 0.0},
      {"tanh", Op::tanh, 1, 0.0},
      {"elu", Op::elu, 1, 1.0},
      {"leaky_relu", Op::leakyRelu, 1, 0.2},
      {"gelu", Op::gelu, 1, 0.0},
      {"relu_grad", Op::reluGrad, 2, 0.0},
      {"sigmoid_grad", Op::sigmoidGrad, 2, 0.0},
      {"tanh_grad", Op::tanhGrad, 2, 0.0},
      {"elu_grad", Op::eluGrad, 2, 1.0},
      {"leaky_relu_grad", Op::leakyReluGrad, 2, 0.2},
      {"gelu_grad", Op::geluGrad, 2, 0.0},
  };
  for (const Entry &a : kActivations)
    r.addFactory(a.name, Backend::cuda,
                 activationFactory(a.name, a.op, a.inputs, a.alpha));
  struct ExtraEntry {
    const char *name;
    ExtraOp op;
    int minInputs, maxInputs;
  };
  static const ExtraEntry kExtra[] = {
      {"clipped_relu", ExtraOp::clippedRelu, 1, 1},
      {"clipped_relu_grad", ExtraOp::clippedReluGrad, 2, 2},
      {"silu", ExtraOp::silu, 1, 1},
      {"silu_grad", ExtraOp::siluGrad, 2, 2},
      {"hard_sigmoid", ExtraOp::hardSigmoid, 1, 1},
      {"hard_sigmoid_grad", ExtraOp::hardSigmoidGrad, 2, 2},
      {"hard_silu", ExtraOp::hardSilu, 1, 1},
      {"hard_silu_grad", ExtraOp::hardSiluGrad, 2, 2},
      {"scale_shift", ExtraOp::scaleShift, 1, 1},
      {"multiply", ExtraOp::multiply, 1, kMaxExtraInputs},
      {"maximum", ExtraOp::maximum, 1, kMaxExtraInputs},
      {"maximum_grad", ExtraOp::maximumGrad, 3, kMaxExtraInputs},
  };
  for (const ExtraEntry &e : kExtra)
    r.addFactory(e.name, Backend::cuda,
                 extraFactory(e.name, e.op, e.minInputs, e.maxInputs));
  r.addFactory("add", Backend::cuda, add);
  r.addFactory("elementwise", Backend::cuda, elementwise);
  r.addFactory("bias_add", Backend::cuda, biasAdd);
  r.addFactory("bias_add_grad", Backend::cuda, biasAddGrad);
  r.addFactory("dropout", Backend::cuda, dropoutFactory("dropout"));
  r.addFactory("dropout_grad", Backend::cuda, dropoutFactory("dropout_grad"));
  r.addFactory("broadcast", Backend::cuda, broadcastFactory);
  r.addFactory("sum_to", Backend::cuda, sumToFactory);
  r.addFactory("normalize", Backend::cuda, normalizeFactory);
  r.addFactory("channel_scale_shift", Backend::cuda, channelScaleShiftFactory);
}

} // namespace graph::runtime::cuda
