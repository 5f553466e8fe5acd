//===- OptimizerKernels.cu - one launch updates every variable ------------===//
//
// global_norm over the gradients (the training step's finite check, at the
// end of this file) and optimizer_update (SGD with momentum and Nesterov, Adam
// with amsgrad, RMSprop with momentum and centering, Adagrad, Adamax, Nadam;
// Keras 3's formulas, as the
// reference writes them) as a single multi-tensor launch: the factory lays
// out a table of every variable's buffers and a list of fixed-size chunks
// in device memory of its own (allocated and filled once, outside any
// step), and each block walks chunks of that list. Reads and writes of an
// element happen in one thread, so the plan's in-place update (outs = ins)
// is safe. The arithmetic is double, as the reference's: the kernel is
// bound by memory, not by the few flops per element.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/CudaKernels.h"
#include "runtime/core/EmaSchedule.h"
#include "runtime/core/LearningRateSchedule.h"

#include <memory>

namespace graph::runtime::cuda {

namespace {

/// Adam with amsgrad's three, and gradient accumulation's sum.
constexpr int kMaxSlots = 4;
/// Elements per chunk: 2 per thread of a block. (16 gave the seed CNN's
/// 93k parameters 30 blocks on an H100's 132 multiprocessors: 43 us.)
constexpr int64_t kChunkElements = 2 * kThreads;

struct UpdateTensor {
  const float *param = nullptr;
  const float *grad = nullptr;
  float *newParam = nullptr;
  const float *slot[kMaxSlots] = {};
  float *newSlot[kMaxSlots] = {};
  // The clipping norm (a scalar in device memory) when clipping by norm.
  const float *norm = nullptr;
  int64_t size = 0;
};

struct Chunk {
  int64_t tensor = 0;
  int64_t begin = 0, end = 0;
};

enum class Kind : int32_t { sgd, adam, rmsprop, adagrad, adamax, nadam };

struct Hyper {
  Kind kind = Kind::sgd;
  int32_t slots = 0;
  double learningRate = 0.01, momentum = 0.0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-7, rho = 0.9;
  bool nesterov = false, amsgrad = false;
  // RMSprop's optional slots (-1: absent).
  int32_t momentumSlot = -1, meanGradSlot = -1;
  // Keras' options before the update (0: off); at most one clipping.
  double clipnorm = 0, globalClipnorm = 0, clipvalue = 0, weightDecay = 0;
  // learningRate's schedule (kind constant: learningRate throughout).
  LearningRateSchedule schedule;
  // gradient_accumulation_steps (0: off); the sum is slot `slots`, after
  // the optimizer's own.
  int64_t accumulation = 0;
};

/// The factor Keras scales a gradient by when clipping it by `norm`.
__device__ double clipScale(const Hyper &h, double norm) {
  if (h.clipnorm > 0)
    return h.clipnorm / fmax(norm, h.clipnorm) + (norm - norm);
  return h.globalClipnorm * fmin(1.0 / norm, 1.0 / h.globalClipnorm) +
         (norm - norm);
}

/// Per-step factors of the step counter, computed once per block: Adam's
/// bias-corrected rate; Adamax's lr / (1 - beta_1^t); Nadam's
/// m_hat = mCoef * m + gCoef * g and v_hat = v * vCoef (see the reference).
/// Trivial (no member initializers): it lives in __shared__ memory.
struct StepFactors {
  double alpha, mCoef, gCoef, vCoef;
};

/// `lr`: this step's learning rate (h.learningRate or its schedule's value).
/// `applies`: false on a step that only accumulates the gradient.
__device__ void updateElement(const UpdateTensor &t, int64_t i, const Hyper &h,
                              double lr, const StepFactors &f, double clip,
                              bool applies) {
  double w = t.param[i], g = t.grad[i];
  if (h.accumulation) {
    // Keras' accumulation: add to the sum, or apply the mean of the N
    // gradients and reset the sum.
    double sum = t.slot[h.slots][i];
    if (!applies) {
      t.newSlot[h.slots][i] = static_cast<float>(sum + g);
      t.newParam[i] = t.param[i];
      for (int k = 0; k < h.slots; ++k)
        t.newSlot[k][i] = t.slot[k][i];
      return;
    }
    g = (g + sum) / static_cast<double>(h.accumulation);
    t.newSlot[h.slots][i] = 0.0f;
  }
  if (t.norm)
    g *= clip;
  else if (h.clipvalue > 0)
    g = g < -h.clipvalue ? -h.clipvalue : (g > h.clipvalue ? h.clipvalue : g);
  if (h.weightDecay > 0)
    w -= w * h.weightDecay * lr;
  double s[kMaxSlots] = {};
  for (int k = 0; k < h.slots; ++k)
    s[k] = t.slot[k][i];
  switch (h.kind) {
  case Kind::sgd:
    if (h.slots == 0) {
      w -= lr * g;
    } else {
      s[0] = h.momentum * s[0] - lr * g;
      w += h.nesterov ? h.momentum * s[0] - lr * g : s[0];
    }
    break;
  case Kind::adam: {
    s[0] += (g - s[0]) * (1.0 - h.beta1);
    s[1] += (g * g - s[1]) * (1.0 - h.beta2);
    double second = s[1];
    if (h.amsgrad) {
      s[2] = fmax(s[2], s[1]);
      second = s[2];
    }
    w -= f.alpha * s[0] / (sqrt(second) + h.epsilon);
    break;
  }
  case Kind::adagrad:
    s[0] += g * g;
    w -= lr * g / sqrt(s[0] + h.epsilon);
    break;
  case Kind::adamax:
    s[0] += (g - s[0]) * (1.0 - h.beta1);
    s[1] = fmax(h.beta2 * s[1], fabs(g));
    w -= f.alpha * s[0] / (s[1] + h.epsilon);
    break;
  case Kind::nadam:
    s[0] += (g - s[0]) * (1.0 - h.beta1);
    s[1] += (g * g - s[1]) * (1.0 - h.beta2);
    w -= lr * (f.mCoef * s[0] + f.gCoef * g) /
         (sqrt(s[1] * f.vCoef) + h.epsilon);
    break;
  case Kind::rmsprop: {
    s[0] = h.rho * s[0] + (1.0 - h.rho) * g * g;
    double denom = s[0] + h.epsilon;
    if (h.meanGradSlot >= 0) {
      double &mg = s[h.meanGradSlot];
      mg = h.rho * mg + (1.0 - h.rho) * g;
      denom = s[0] - mg * mg + h.epsilon;
    }
    double increment = lr * g / sqrt(denom);
    if (h.momentumSlot >= 0) {
      double &mom = s[h.momentumSlot];
      mom = h.momentum * mom + increment;
      w -= mom;
    } else {
      w -= increment;
    }
    break;
  }
  }
  t.newParam[i] = static_cast<float>(w);
  for (int k = 0; k < h.slots; ++k)
    t.newSlot[k][i] = static_cast<float>(s[k]);
}

__global__ void updateKernel(const UpdateTensor *__restrict__ tensors,
                             const Chunk *__restrict__ chunks,
                             int64_t numChunks, Hyper h,
                             const int64_t *deviceStep) {
  // Adam's bias correction, once per block, from the step in device memory
  // (a replayed CUDA graph keeps its kernel arguments).
  // The learning rate too: a schedule's value at Keras' iterations, the
  // step before this update.
  // With gradient accumulation only every N-th step updates, and Keras'
  // iterations count updates.
  __shared__ double lr;
  __shared__ StepFactors factors;
  __shared__ int applies;
  if (threadIdx.x == 0) {
    int64_t step = *deviceStep;
    applies = h.accumulation == 0 || step % h.accumulation == 0;
    // The schedule reads the raw step count (Keras' _iterations), the bias
    // corrections the updates (its iterations).
    lr = h.schedule.kind == LearningRateSchedule::constant
             ? h.learningRate
             : learningRateAt(h.schedule, step - 1);
    if (h.accumulation)
      step /= h.accumulation;
    double t = static_cast<double>(step);
    StepFactors f = {0.0, 0.0, 0.0, 0.0};
    if (h.kind == Kind::adam) {
      f.alpha = lr * sqrt(1.0 - pow(h.beta2, t)) / (1.0 - pow(h.beta1, t));
    } else if (h.kind == Kind::adamax) {
      f.alpha = lr / (1.0 - pow(h.beta1, t));
    } else if (h.kind == Kind::nadam) {
      double ut = nadamMomentumCache(h.beta1, step),
             ut1 = nadamMomentumCache(h.beta1, step + 1);
      double product = nadamUProduct(h.beta1, step);
      f.mCoef = ut1 / (1.0 - product * ut1);
      f.gCoef = (1.0 - ut) / (1.0 - product);
      f.vCoef = 1.0 / (1.0 - pow(h.beta2, t));
    }
    factors = f;
  }
  __syncthreads();
  for (int64_t c = blockIdx.x; c < numChunks; c += gridDim.x) {
    Chunk chunk = chunks[c];
    const UpdateTensor &t = tensors[chunk.tensor];
    double clip = t.norm ? clipScale(h, *t.norm) : 1.0;
    for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x)
      updateElement(t, i, h, lr, factors, clip, applies != 0);
  }
}

struct UpdateSite {
  CudaDeviceState *state = nullptr;
  DeviceBuffer table; // [tensors][chunks]
  const UpdateTensor *tensors = nullptr;
  const Chunk *chunks = nullptr;
  int64_t numChunks = 0;
  Hyper hyper;
};

/// ins: N params, N grads, N*k slots (grouped per variable); outs: N new
/// params, N*k new slots.
Status optimizerUpdate(const KernelContext &ctx, const KernelConfig &cfg,
                       const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "optimizer_update";
  auto site = std::make_shared<UpdateSite>();
  Hyper &h = site->hyper;
  std::string kind = cfg.getString("optimizer");
  h.learningRate = cfg.getFloat("learning_rate", 0.01);
  h.momentum = cfg.getFloat("momentum", 0.0);
  if (kind == "sgd") {
    h.kind = Kind::sgd;
    h.slots = h.momentum > 0 ? 1 : 0;
    h.nesterov = cfg.getFloat("nesterov", 0.0) != 0.0;
  } else if (kind == "adam") {
    h.kind = Kind::adam;
    h.amsgrad = cfg.getFloat("amsgrad", 0.0) != 0.0;
    h.slots = h.amsgrad ? 3 : 2;
    h.beta1 = cfg.getFloat("beta_1", 0.9);
    h.beta2 = cfg.getFloat("beta_2", 0.999);
    h.epsilon = cfg.getFloat("epsilon", 1e-7);
  } else if (kind == "rmsprop") {
    h.kind = Kind::rmsprop;
    bool centered = cfg.getFloat("centered", 0.0) != 0.0;
    h.slots = 1;
    if (h.momentum > 0)
      h.momentumSlot = h.slots++;
    if (centered)
      h.meanGradSlot = h.slots++;
    h.rho = cfg.getFloat("rho", 0.9);
    h.epsilon = cfg.getFloat("epsilon", 1e-7);
  } else if (kind == "adagrad") {
    h.kind = Kind::adagrad;
    h.slots = 1;
    h.epsilon = cfg.getFloat("epsilon", 1e-7);
  } else if (kind == "adamax" || kind == "nadam") {
    h.kind = kind == "adamax" ? Kind::adamax : Kind::nadam;
    h.slots = 2;
    h.beta1 = cfg.getFloat("beta_1", 0.9);
    h.beta2 = cfg.getFloat("beta_2", 0.999);
    h.epsilon = cfg.getFloat("epsilon", 1e-7);
  } else {
    REQUIRE(false, "unknown optimizer '" + kind + "'");
  }
  h.clipnorm = cfg.getFloat("clipnorm", 0.0);
  h.globalClipnorm = cfg.getFloat("global_clipnorm", 0.0);
  h.clipvalue = cfg.getFloat("clipvalue", 0.0);
  h.weightDecay = cfg.getFloat("weight_decay", 0.0);
  std::string scheduleError;
  REQUIRE(scheduleFromConfig(cfg, h.schedule, scheduleError), scheduleError);
  bool byNorm = h.clipnorm > 0 || h.globalClipnorm > 0;
  // Written when a GPU is lent: the host backends have it (LossScale.h).
  REQUIRE(cfg.getInt("loss_scaled", 0) == 0,
          "dynamic loss scaling (mixed_float16, Keras' LossScaleOptimizer) is "
          "not on the cuda backend yet: use --backend cpu, or train under "
          "mixed_bfloat16");
  h.accumulation = cfg.getInt("gradient_accumulation_steps", 0);
  REQUIRE(h.accumulation == 0 || (h.accumulation >= 2 && !byNorm),
          "gradient_accumulation_steps must be 0 or >= 2, without clipping "
          "by a norm");
  // The optimizer's slots, then the accumulator's.
  size_t k = static_cast<size_t>(h.slots) + (h.accumulation ? 1 : 0);
  size_t perVariable = 2 + k + (byNorm ? 1 : 0);
  REQUIRE(!ins.empty() && ins.size() % perVariable == 0,
          std::to_string(ins.size()) +
              " inputs do not split into params, grads" +
              (byNorm ? ", " : " and ") + std::to_string(k) + " slot(s)" +
              (byNorm ? " and a norm" : "") + " per variable");
  size_t n = ins.size() / perVariable;
  RETURN_IF_ERROR(
      checkOperands(kName, ins, outs, ins.size(), ins.size(), n * (1 + k)));

  std::vector<UpdateTensor> tensors(n);
  std::vector<Chunk> chunks;
  for (size_t v = 0; v < n; ++v) {
    int64_t size = ins[v].elements();
    REQUIRE(ins[n + v].elements() == size && outs[v].elements() == size,
            "variable " + std::to_string(v) + " " + shapeText(ins[v].shape) +
                ": gradient " + shapeText(ins[n + v].shape) + " or new value " +
                shapeText(outs[v].shape) + " differs in size");
    UpdateTensor &t = tensors[v];
    t.param = ins[v].f32();
    t.grad = ins[n + v].f32();
    t.newParam = outs[v].f32();
    t.size = size;
    for (size_t s = 0; s < k; ++s) {
      const TensorRef &slot = ins[2 * n + v * k + s];
      const TensorRef &newSlot = outs[n + v * k + s];
      REQUIRE(slot.elements() == size && newSlot.elements() == size,
              "variable " + std::to_string(v) + ": slot " + std::to_string(s) +
                  " differs in size");
      t.slot[s] = slot.f32();
      t.newSlot[s] = newSlot.f32();
    }
    if (byNorm) {
      const TensorRef &norm = ins[(2 + k) * n + v];
      REQUIRE(norm.elements() == 1, "variable " + std::to_string(v) +
                                        ": the norm " + shapeText(norm.shape) +
                                        " is not a scalar");
      t.norm = norm.f32();
    }
    for (int64_t begin = 0; begin < size; begin += kChunkElements)
      chunks.push_back({static_cast<int64_t>(v), begin,
                        std::min(size, begin + kChunkElements)});
  }
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  REQUIRE(site->state->deviceStep, "the device keeps no step in device memory "
                                   "(CudaDeviceState::deviceStep)");

  size_t tensorBytes = alignUp(tensors.size() * sizeof(UpdateTensor));
  size_t chunkBytes = chunks.size() * sizeof(Chunk);
  RETURN_IF_ERROR(
      site->table.allocate(site->state->ordinal, tensorBytes + chunkBytes));
  char *table = static_cast<char *>(site->table.data());
  {
    ScopedDevice device;
    RETURN_IF_ERROR(device.enter(site->state->ordinal));
    // Synchronous, once: the factory runs before any step.
    RETURN_IF_CUDA_ERROR(cudaMemcpy(table, tensors.data(),
                                    tensors.size() * sizeof(UpdateTensor),
                                    cudaMemcpyHostToDevice));
    if (chunkBytes)
      RETURN_IF_CUDA_ERROR(cudaMemcpy(table + tensorBytes, chunks.data(),
                                      chunkBytes, cudaMemcpyHostToDevice));
  }
  site->tensors = reinterpret_cast<const UpdateTensor *>(table);
  site->chunks = reinterpret_cast<const Chunk *>(table + tensorBytes);
  site->numChunks = static_cast<int64_t>(chunks.size());

  out = [site](const KernelContext &, const KernelConfig &, const Tensors &,
               const Tensors &) {
    const UpdateSite &s = *site;
    if (s.numChunks == 0)
      return Status::ok();
    unsigned blocks =
        static_cast<unsigned>(std::min<int64_t>(s.numChunks, 65536));
    updateKernel<<<blocks, kThreads, 0, s.state->compute>>>(
        s.tensors, s.chunks, s.numChunks, s.hyper, s.state->deviceStep);
    RETURN_IF_LAUNCH_FAILED("updateKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// global_norm: sqrt of the sum of squares of every gradient
//
// Two launches and no atomics, so the norm has the same bits every run:
// each block writes the sums of squares of its chunks (in double) to the
// site's partials, then one block adds the partials in a fixed order.
//===----------------------------------------------------------------------===//

struct NormChunk {
  const float *data = nullptr;
  int64_t begin = 0, end = 0;
};

/// The block's sum of `v` in a fixed tree order; valid in thread 0.
template <int Threads> __device__ double blockTreeSum(double v) {
  __shared__ double sums[Threads];
  sums[threadIdx.x] = v;
  __syncthreads();
  for (int stride = Threads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      sums[threadIdx.x] += sums[threadIdx.x + stride];
    __syncthreads();
  }
  return sums[0];
}

__global__ void __launch_bounds__(kThreads)
    sumSquaresKernel(const NormChunk *__restrict__ chunks, int64_t numChunks,
                     double *__restrict__ partials) {
  for (int64_t c = blockIdx.x; c < numChunks; c += gridDim.x) {
    NormChunk chunk = chunks[c];
    double sum = 0.0;
    for (int64_t i = chunk.begin + threadIdx.x; i < chunk.end; i += blockDim.x)
      sum += double(chunk.data[i]) * chunk.data[i];
    sum = blockTreeSum<kThreads>(sum);
    if (threadIdx.x == 0)
      partials[c] = sum;
    __syncthreads(); // the shared sums are reused by the next chunk
  }
}

__global__ void __launch_bounds__(kThreads)
    finishNormKernel(const double *__restrict__ partials, int64_t numChunks,
                     float *norm) {
  double sum = 0.0;
  for (int64_t c = threadIdx.x; c < numChunks; c += blockDim.x)
    sum += partials[c];
  sum = blockTreeSum<kThreads>(sum);
  if (threadIdx.x == 0)
    *norm = static_cast<float>(sqrt(sum));
}

struct NormSite {
  CudaDeviceState *state = nullptr;
  DeviceBuffer table; // [chunks][partials]
  const NormChunk *chunks = nullptr;
  double *partials = nullptr;
  int64_t numChunks = 0;
  float *norm = nullptr;
};

/// ins: the tensors; outs: their global norm, a scalar.
Status globalNorm(const KernelContext &ctx, const KernelConfig &,
                  const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "global_norm";
  REQUIRE(!ins.empty(), "takes at least one tensor");
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 1, ins.size(), 1));
  REQUIRE(outs[0].elements() == 1,
          "the norm must be a scalar, got " + shapeText(outs[0].shape));
  auto site = std::make_shared<NormSite>();
  std::vector<NormChunk> chunks;
  for (const TensorRef &t : ins)
    for (int64_t begin = 0; begin < t.elements(); begin += kChunkElements)
      chunks.push_back(
          {t.f32(), begin, std::min(t.elements(), begin + kChunkElements)});
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, site->state));
  size_t chunkBytes = alignUp(chunks.size() * sizeof(NormChunk));
  size_t partialBytes = std::max<size_t>(1, chunks.size()) * sizeof(double);
  RETURN_IF_ERROR(
      site->table.allocate(site->state->ordinal, chunkBytes + partialBytes));
  char *table = static_cast<char *>(site->table.data());
  if (!chunks.empty()) {
    ScopedDevice device;
    RETURN_IF_ERROR(device.enter(site->state->ordinal));
    // Synchronous, once: the factory runs before any step.
    RETURN_IF_CUDA_ERROR(cudaMemcpy(table, chunks.data(),
                                    chunks.size() * sizeof(NormChunk),
                                    cudaMemcpyHostToDevice));
  }
  site->chunks = reinterpret_cast<const NormChunk *>(table);
  site->partials = reinterpret_cast<double *>(table + chunkBytes);
  site->numChunks = static_cast<int64_t>(chunks.size());
  site->norm = outs[0].f32();

  out = [site](const KernelContext &, const KernelConfig &, const Tensors &,
               const Tensors &) {
    const NormSite &s = *site;
    unsigned blocks =
        static_cast<unsigned>(std::clamp<int64_t>(s.numChunks, 1, 65536));
    sumSquaresKernel<<<blocks, kThreads, 0, s.state->compute>>>(
        s.chunks, s.numChunks, s.partials);
    RETURN_IF_LAUNCH_FAILED("sumSquaresKernel");
    finishNormKernel<<<1, kThreads, 0, s.state->compute>>>(s.partials,
                                                           s.numChunks, s.norm);
    RETURN_IF_LAUNCH_FAILED("finishNormKernel");
    return Status::ok();
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ema_update: Keras' use_ema
//===----------------------------------------------------------------------===//

struct EmaArgs {
  const float *value = nullptr, *average = nullptr;
  float *newAverage = nullptr, *newValue = nullptr;
  int64_t n = 0;
  EmaSchedule schedule;
};

__global__ void emaUpdateKernel(EmaArgs a, const int64_t *deviceStep) {
  // The step is read on the device: a replayed CUDA graph keeps its
  // arguments (EmaSchedule: Keras' schedule, shared with the host
  // backends).
  int64_t step = *deviceStep;
  double m = a.schedule.momentumAt(step);
  bool overwrite = a.schedule.overwritesAt(step);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < a.n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float v = a.value[i];
    float avg = static_cast<float>(m * a.average[i] + (1 - m) * v);
    a.newAverage[i] = avg;
    a.newValue[i] = overwrite ? avg : v;
  }
}

Status emaUpdate(const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs, KernelFn &out) {
  static constexpr const char *kName = "ema_update";
  RETURN_IF_ERROR(checkOperands(kName, ins, outs, 2, 2, 2));
  EmaArgs a;
  a.n = ins[0].elements();
  REQUIRE(ins[1].elements() == a.n && outs[0].elements() == a.n &&
              outs[1].elements() == a.n,
          "operands differ in size");
  CudaDeviceState *state = nullptr;
  RETURN_IF_ERROR(deviceStateOf(kName, ctx, state));
  REQUIRE(state->deviceStep, "the device keeps no step in device memory "
                             "(CudaDeviceState::deviceStep)");
  a.value = ins[0].f32();
  a.average = ins[1].f32();
  a.newAverage = outs[0].f32();
  a.newValue = outs[1].f32();
  a.schedule = EmaSchedule::of(cfg);
  out = [state, a](const KernelContext &, const KernelConfig &, const Tensors &,
                   const Tensors &) {
    if (a.n == 0)
      return Status::ok();
    emaUpdateKernel<<<blocksFor(a.n), kThreads, 0, state->compute>>>(
        a, state->deviceStep);
    RETURN_IF_LAUNCH_FAILED("emaUpdateKernel");
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerOptimizerKernels() {
  KernelRegistry::global().addFactory("optimizer_update", Backend::cuda,
                                      optimizerUpdate);
  KernelRegistry::global().addFactory("global_norm", Backend::cuda, globalNorm);
  KernelRegistry::global().addFactory("ema_update", Backend::cuda, emaUpdate);
}

} // namespace graph::runtime::cuda
