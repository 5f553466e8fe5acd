//===- VectorOptimizerKernels.cpp - the multi-tensor optimizer update -----===//
//
// global_norm over the gradients (the training step's finite check) and
// optimizer_update for every variable of the model in one launch: SGD
// (momentum, nesterov), Adam (amsgrad), RMSprop (momentum, centered),
// Adagrad, Adamax and Nadam,
// with the reference's formulas (Keras 3, see ReferenceKernels.cpp). The
// factory cuts all variables into chunks of at most kChunk elements once; a
// step runs the chunks across the replica's threads, and each chunk makes
// one fused pass: read value, gradient and slots, write new value and slots
// (usually the same buffers: the plan updates variables in place).
// Clipping (clipnorm, global_clipnorm: a norm input per variable; clipvalue)
// and weight decay rewrite the tile's gradient and value into stack buffers
// before the update reads them.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/VectorKernels.h"
#include "runtime/core/EmaSchedule.h"
#include "runtime/core/LearningRateSchedule.h"
#include "runtime/core/LossScale.h"

#include <algorithm>
#include <cmath>
#include <memory>

namespace graph::runtime::cpu {

namespace {

using namespace vec;
using Tensors = std::vector<TensorRef>;

/// Elements per parallel work item: 64 KiB of each array.
constexpr int64_t kChunk = 16384;
/// Floats per pass inside a chunk: the square roots go through a buffer of
/// this size on the stack (see sqrtInPlace).
constexpr int64_t kTile = 512;
/// An update streams about seven arrays per element, so it pays for the
/// team at a quarter of the elements a one-input kernel needs.
constexpr int64_t kParallelUpdateElements = kParallelElements / 4;

enum class Kind { sgd, adam, rmsprop, adagrad, adamax, nadam };

/// The launch's hyper-parameters, as floats for the loops.
struct Hyper {
  Kind kind = Kind::sgd;
  int64_t slots = 0; // per variable, the optimizer's own
  // gradient_accumulation_steps (0: off); its accumulator is one more slot,
  // after the optimizer's: allSlots in all.
  int64_t accumulation = 0, allSlots = 0;
  double learningRate = 0.01, beta1 = 0.9, beta2 = 0.999;
  float lr = 0.01f, momentum = 0.0f, epsilon = 1e-7f;
  float oneMinusBeta1 = 0.1f, oneMinusBeta2 = 0.001f;
  float rho = 0.9f, oneMinusRho = 0.1f;
  bool nesterov = false, amsgrad = false, centered = false;
  int momentumSlot = -1, meanGradSlot = -1; // rmsprop
  // Keras' options before the update (0: off); at most one clipping.
  double clipnorm = 0, globalClipnorm = 0;
  float clipvalue = 0, weightDecayTimesLr = 0;
  bool byNorm() const { return clipnorm > 0 || globalClipnorm > 0; }
  // Dynamic loss scaling: the ins end with scale, norm and iterations; the
  // replicas' averaged gradients carry scale / replicas.
  bool lossScaled = false;
  int64_t replicas = 1;
  double weightDecay = 0;
  LearningRateSchedule schedule; // kind constant: learningRate throughout
};

/// One variable's buffers for a step.
struct Variable {
  const float *w, *g;
  float *wOut;
  const float *slotIn[4];
  float *slotOut[4];
  const float *norm;  // the clipping norm (a scalar), when clipping by norm
  float scale = 1.0f; // this step's gradient scale from it
};

void sgdTile(const Hyper &h, const Variable &v, const float *w, const float *g,
             int64_t b, int64_t n) {
  float *wo = v.wOut + b;
  float lr = h.lr, mu = h.momentum;
  if (h.slots == 0) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      wo[i] = w[i] - lr * g[i];
    return;
  }
  const float *m = v.slotIn[0] + b;
  float *mo = v.slotOut[0] + b;
  if (h.nesterov) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float velocity = mu * m[i] - lr * g[i];
      mo[i] = velocity;
      wo[i] = w[i] + (mu * velocity - lr * g[i]);
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float velocity = mu * m[i] - lr * g[i];
      mo[i] = velocity;
      wo[i] = w[i] + velocity;
    }
  }
}

void adamTile(const Hyper &h, float alpha, const Variable &v, const float *w,
              const float *g, int64_t b, int64_t n) {
  const float *m = v.slotIn[0] + b, *s = v.slotIn[1] + b;
  float *wo = v.wOut + b, *mo = v.slotOut[0] + b, *so = v.slotOut[1] + b;
  float c1 = h.oneMinusBeta1, c2 = h.oneMinusBeta2, eps = h.epsilon;
  alignas(32) float root[kTile];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float mi = m[i] + (gi - m[i]) * c1;
    float si = s[i] + (gi * gi - s[i]) * c2;
    mo[i] = mi;
    so[i] = si;
    root[i] = si;
  }
  if (h.amsgrad) {
    const float *vhat = v.slotIn[2] + b;
    float *vhatOut = v.slotOut[2] + b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float best = simdSelect(vhat[i] < root[i], root[i], vhat[i]);
      vhatOut[i] = best;
      root[i] = best;
    }
  }
  sqrtInPlace(root, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    wo[i] = w[i] - alpha * mo[i] / (root[i] + eps);
}

void adagradTile(const Hyper &h, const Variable &v, const float *w,
                 const float *g, int64_t b, int64_t n) {
  const float *acc = v.slotIn[0] + b;
  float *wo = v.wOut + b, *accOut = v.slotOut[0] + b;
  float eps = h.epsilon, lr = h.lr;
  alignas(32) float root[kTile];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float a = acc[i] + g[i] * g[i];
    accOut[i] = a;
    root[i] = a + eps;
  }
  sqrtInPlace(root, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    wo[i] = w[i] - lr * g[i] / root[i];
}

/// `alpha`: this step's lr / (1 - beta_1^t).
void adamaxTile(const Hyper &h, float alpha, const Variable &v, const float *w,
                const float *g, int64_t b, int64_t n) {
  const float *m = v.slotIn[0] + b, *u = v.slotIn[1] + b;
  float *wo = v.wOut + b, *mo = v.slotOut[0] + b, *uo = v.slotOut[1] + b;
  float c1 = h.oneMinusBeta1, b2 = static_cast<float>(h.beta2), eps = h.epsilon;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float mi = m[i] + (gi - m[i]) * c1;
    float decayed = b2 * u[i];
    float magnitude = simdSelect(gi < 0.0f, -gi, gi);
    float ui = simdSelect(decayed < magnitude, magnitude, decayed);
    mo[i] = mi;
    uo[i] = ui;
    wo[i] = w[i] - alpha * mi / (ui + eps);
  }
}

/// Nadam's per-step coefficients (see the reference): m_hat = mCoef * m +
/// gCoef * g, v_hat = v * vCoef.
struct NadamStep {
  float mCoef = 0, gCoef = 0, vCoef = 0;
};

void nadamTile(const Hyper &h, const NadamStep &step, const Variable &v,
               const float *w, const float *g, int64_t b, int64_t n) {
  const float *m = v.slotIn[0] + b, *s = v.slotIn[1] + b;
  float *wo = v.wOut + b, *mo = v.slotOut[0] + b, *so = v.slotOut[1] + b;
  float c1 = h.oneMinusBeta1, c2 = h.oneMinusBeta2, eps = h.epsilon, lr = h.lr;
  alignas(32) float root[kTile];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i];
    float mi = m[i] + (gi - m[i]) * c1;
    float si = s[i] + (gi * gi - s[i]) * c2;
    mo[i] = mi;
    so[i] = si;
    root[i] = si * step.vCoef;
  }
  sqrtInPlace(root, n);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i)
    wo[i] =
        w[i] - (step.mCoef * mo[i] + step.gCoef * g[i]) * lr / (root[i] + eps);
}

void rmspropTile(const Hyper &h, const Variable &v, const float *w,
                 const float *g, int64_t b, int64_t n) {
  const float *rms = v.slotIn[0] + b;
  float *wo = v.wOut + b, *rmsOut = v.slotOut[0] + b;
  float rho = h.rho, c = h.oneMinusRho, eps = h.epsilon, lr = h.lr;
  alignas(32) float root[kTile];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    float r = rho * rms[i] + c * g[i] * g[i];
    rmsOut[i] = r;
    root[i] = r + eps;
  }
  if (h.meanGradSlot >= 0) {
    const float *mg = v.slotIn[h.meanGradSlot] + b;
    float *mgOut = v.slotOut[h.meanGradSlot] + b;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float mean = rho * mg[i] + c * g[i];
      mgOut[i] = mean;
      root[i] = rmsOut[i] - mean * mean + eps;
    }
  }
  sqrtInPlace(root, n);
  if (h.momentumSlot >= 0) {
    const float *mom = v.slotIn[h.momentumSlot] + b;
    float *momOut = v.slotOut[h.momentumSlot] + b;
    float mu = h.momentum;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      float next = mu * mom[i] + lr * g[i] / root[i];
      momOut[i] = next;
      wo[i] = w[i] - next;
    }
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i)
      wo[i] = w[i] - lr * g[i] / root[i];
  }
}

class OptimizerUpdate {
public:
  struct Chunk {
    int64_t variable, begin, end;
  };

  OptimizerUpdate(Hyper hyper, std::vector<Chunk> chunks, size_t variables,
                  int64_t elements)
      : h(hyper), chunks(std::move(chunks)), vars(variables),
        elements(elements) {}

  Status operator()(const KernelContext &ctx, const KernelConfig &,
                    const Tensors &ins, const Tensors &outs) {
    useReplicaThreads(ctx);
    // This step's learning rate (a schedule's value at Keras' iterations,
    // the step before this update) in a per-step copy of the parameters.
    Hyper h = this->h;
    // With gradient accumulation, only every N-th step updates, and Keras'
    // iterations (the bias corrections') count updates; the schedule reads
    // the raw step count (Keras' _iterations).
    bool applies = h.accumulation == 0 || ctx.step % h.accumulation == 0;
    int64_t step = h.accumulation ? ctx.step / h.accumulation : ctx.step;
    int64_t scheduleStep = ctx.step - 1;
    // Loss scaling (see the reference): skip a step of non-finite
    // gradients, else unscale them and count the updates applied.
    float lossScale = 1.0f;
    if (h.lossScaled) {
      size_t at = ins.size() - 3;
      lossScale = ins[at].f32()[0] / static_cast<float>(h.replicas);
      if (!std::isfinite(ins[at + 1].f32()[0]))
        return copyThrough(ins, outs);
      step = static_cast<int64_t>(ins[at + 2].f32()[0]) + 1;
      scheduleStep = step - 1;
    }
    if (ctx.learningRate >= 0 ||
        h.schedule.kind != LearningRateSchedule::constant) {
      h.learningRate = ctx.learningRate >= 0
                           ? ctx.learningRate
                           : learningRateAt(h.schedule, scheduleStep);
      h.lr = static_cast<float>(h.learningRate);
      h.weightDecayTimesLr = static_cast<float>(h.weightDecay * h.learningRate);
    }
    size_t n = vars.size();
    for (size_t v = 0; v < n; ++v) {
      Variable &var = vars[v];
      var.w = ins[v].f32();
      var.g = ins[n + v].f32();
      var.wOut = outs[v].f32();
      for (int64_t s = 0; s < h.allSlots; ++s) {
        var.slotIn[s] = ins[2 * n + v * h.allSlots + s].f32();
        var.slotOut[s] = outs[n + v * h.allSlots + s].f32();
      }
      // Keras' scale, from the norm in double (see the reference).
      if (h.byNorm()) {
        double norm = ins[(2 + h.allSlots) * n + v].f32()[0] /
                      static_cast<double>(lossScale);
        double scale =
            h.clipnorm > 0
                ? h.clipnorm / std::max(norm, h.clipnorm)
                : h.globalClipnorm *
                          std::min(1.0 / norm, 1.0 / h.globalClipnorm) +
                      (norm - norm);
        var.scale = static_cast<float>(scale);
      }
    }
    // Adam's bias correction in double: beta_2^t for t in the thousands
    // is where float would lose digits.
    float alpha = 0.0f;
    NadamStep nadam;
    double t = static_cast<double>(step);
    if (h.kind == Kind::adam) {
      alpha = static_cast<float>(h.learningRate *
                                 std::sqrt(1.0 - std::pow(h.beta2, t)) /
                                 (1.0 - std::pow(h.beta1, t)));
    } else if (h.kind == Kind::adamax) {
      alpha = static_cast<float>(h.learningRate / (1.0 - std::pow(h.beta1, t)));
    } else if (h.kind == Kind::nadam) {
      double ut = nadamMomentumCache(h.beta1, step),
             ut1 = nadamMomentumCache(h.beta1, step + 1);
      double product = nadamUProduct(h.beta1, step);
      nadam.mCoef = static_cast<float>(ut1 / (1.0 - product * ut1));
      nadam.gCoef = static_cast<float>((1.0 - ut) / (1.0 - product));
      nadam.vCoef = static_cast<float>(1.0 / (1.0 - std::pow(h.beta2, t)));
    }
    int64_t count = static_cast<int64_t>(chunks.size());
#pragma omp parallel for schedule(static) if (elements >=                      \
                                              kParallelUpdateElements)
    for (int64_t c = 0; c < count; ++c) {
      const Chunk &chunk = chunks[c];
      const Variable &var = vars[chunk.variable];
      for (int64_t b = chunk.begin; b < chunk.end; b += kTile) {
        int64_t len = std::min(kTile, chunk.end - b);
        const float *w = var.w + b, *g = var.g + b;
        alignas(32) float gTile[kTile], wTile[kTile];
        if (h.accumulation) {
          // Keras' accumulation: add to the sum, or apply the mean of the
          // N gradients and reset the sum.
          const float *sum = var.slotIn[h.slots] + b;
          float *sumOut = var.slotOut[h.slots] + b;
          if (!applies) {
#pragma omp simd
            for (int64_t i = 0; i < len; ++i)
              sumOut[i] = sum[i] + g[i];
            // The plan updates in place; copy only into other buffers.
            if (var.wOut != var.w)
              std::copy(w, w + len, var.wOut + b);
            for (int64_t s = 0; s < h.slots; ++s)
              if (var.slotOut[s] != var.slotIn[s])
                std::copy(var.slotIn[s] + b, var.slotIn[s] + b + len,
                          var.slotOut[s] + b);
            continue;
          }
          float inverse = 1.0f / static_cast<float>(h.accumulation);
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) {
            gTile[i] = (g[i] + sum[i]) * inverse;
            sumOut[i] = 0.0f;
          }
          g = gTile;
        }
        if (h.lossScaled) {
          // Keras divides (ops.divide(g, scale)): exact for a power of two,
          // and the same rounding as Keras' for any other scale.
#pragma omp simd
          for (int64_t i = 0; i < len; ++i)
            gTile[i] = g[i] / lossScale;
          g = gTile;
        }
        if (h.byNorm()) {
          float scale = var.scale;
#pragma omp simd
          for (int64_t i = 0; i < len; ++i)
            gTile[i] = g[i] * scale;
          g = gTile;
        } else if (h.clipvalue > 0) {
          float c = h.clipvalue;
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) {
            float lo = simdSelect(g[i] < -c, -c, g[i]);
            gTile[i] = simdSelect(lo > c, c, lo);
          }
          g = gTile;
        }
        if (h.weightDecayTimesLr > 0) {
          float d = h.weightDecayTimesLr;
#pragma omp simd
          for (int64_t i = 0; i < len; ++i)
            wTile[i] = w[i] - w[i] * d;
          w = wTile;
        }
        switch (h.kind) {
        case Kind::sgd:
          sgdTile(h, var, w, g, b, len);
          break;
        case Kind::adam:
          adamTile(h, alpha, var, w, g, b, len);
          break;
        case Kind::rmsprop:
          rmspropTile(h, var, w, g, b, len);
          break;
        case Kind::adagrad:
          adagradTile(h, var, w, g, b, len);
          break;
        case Kind::adamax:
          adamaxTile(h, alpha, var, w, g, b, len);
          break;
        case Kind::nadam:
          nadamTile(h, nadam, var, w, g, b, len);
          break;
        }
      }
    }
    return Status::ok();
  }

private:
  /// A skipped step: every result is its operand (usually the same buffer).
  Status copyThrough(const Tensors &ins, const Tensors &outs) const {
    size_t n = vars.size();
    auto copy = [](const TensorRef &from, const TensorRef &to) {
      if (from.f32() != to.f32())
        std::copy(from.f32(), from.f32() + from.elements(), to.f32());
    };
    for (size_t v = 0; v < n; ++v) {
      copy(ins[v], outs[v]);
      for (int64_t s = 0; s < h.allSlots; ++s)
        copy(ins[2 * n + v * h.allSlots + s], outs[n + v * h.allSlots + s]);
    }
    return Status::ok();
  }

  Hyper h;
  std::vector<Chunk> chunks;
  std::vector<Variable> vars; // this step's pointers
  int64_t elements;
};

Status optimizerUpdateFactory(const KernelContext &, const KernelConfig &cfg,
                              const Tensors &ins, const Tensors &outs,
                              KernelFn &out) {
  static constexpr const char *kName = "optimizer_update";
  Hyper h;
  std::string kind = cfg.getString("optimizer");
  h.learningRate = cfg.getFloat("learning_rate", 0.01);
  h.lr = static_cast<float>(h.learningRate);
  double momentum = cfg.getFloat("momentum", 0.0);
  h.momentum = static_cast<float>(momentum);
  h.epsilon = static_cast<float>(cfg.getFloat("epsilon", 1e-7));
  if (kind == "sgd") {
    h.kind = Kind::sgd;
    h.nesterov = cfg.getFloat("nesterov", 0.0) != 0.0;
    h.slots = momentum > 0 ? 1 : 0;
  } else if (kind == "adam") {
    h.kind = Kind::adam;
    h.beta1 = cfg.getFloat("beta_1", 0.9);
    h.beta2 = cfg.getFloat("beta_2", 0.999);
    h.oneMinusBeta1 = static_cast<float>(1.0 - h.beta1);
    h.oneMinusBeta2 = static_cast<float>(1.0 - h.beta2);
    h.amsgrad = cfg.getFloat("amsgrad", 0.0) != 0.0;
    h.slots = h.amsgrad ? 3 : 2;
  } else if (kind == "rmsprop") {
    h.kind = Kind::rmsprop;
    double rho = cfg.getFloat("rho", 0.9);
    h.rho = static_cast<float>(rho);
    h.oneMinusRho = static_cast<float>(1.0 - rho);
    h.centered = cfg.getFloat("centered", 0.0) != 0.0;
    h.momentumSlot = momentum > 0 ? 1 : -1;
    h.meanGradSlot = h.centered ? (momentum > 0 ? 2 : 1) : -1;
    h.slots = 1 + (momentum > 0 ? 1 : 0) + (h.centered ? 1 : 0);
  } else if (kind == "adagrad") {
    h.kind = Kind::adagrad;
    h.slots = 1;
  } else if (kind == "adamax" || kind == "nadam") {
    h.kind = kind == "adamax" ? Kind::adamax : Kind::nadam;
    h.beta1 = cfg.getFloat("beta_1", 0.9);
    h.beta2 = cfg.getFloat("beta_2", 0.999);
    h.oneMinusBeta1 = static_cast<float>(1.0 - h.beta1);
    h.oneMinusBeta2 = static_cast<float>(1.0 - h.beta2);
    h.slots = 2;
  } else {
    return kernelError(kName, "unknown optimizer '" + kind +
                                  "' (expected sgd, adam, rmsprop, adagrad, "
                                  "adamax or nadam)");
  }
  h.clipnorm = cfg.getFloat("clipnorm", 0.0);
  h.globalClipnorm = cfg.getFloat("global_clipnorm", 0.0);
  h.clipvalue = static_cast<float>(cfg.getFloat("clipvalue", 0.0));
  h.accumulation = cfg.getInt("gradient_accumulation_steps", 0);
  if (h.accumulation != 0 && (h.accumulation < 2 || h.byNorm()))
    return kernelError(kName, "gradient_accumulation_steps must be 0 or >= 2, "
                              "without clipping by a norm");
  h.allSlots = h.slots + (h.accumulation ? 1 : 0);
  h.lossScaled = cfg.getInt("loss_scaled", 0) != 0;
  h.replicas = cfg.getInt("replicas", 1);
  if (h.replicas < 1)
    return kernelError(kName, "replicas must be >= 1");
  if (h.lossScaled && h.accumulation)
    return kernelError(kName, "loss scaling with gradient accumulation is "
                              "not supported");
  h.weightDecay = cfg.getFloat("weight_decay", 0.0);
  h.weightDecayTimesLr = static_cast<float>(h.weightDecay * h.learningRate);
  std::string scheduleError;
  if (!scheduleFromConfig(cfg, h.schedule, scheduleError))
    return kernelError(kName, scheduleError);
  size_t perVariable = 2 + h.allSlots + (h.byNorm() ? 1 : 0);
  size_t scaled = h.lossScaled ? 3 : 0;
  if (ins.size() < scaled)
    return kernelError(kName, "loss_scaled takes scale, norm and iterations");
  for (size_t i = ins.size() - scaled; i < ins.size(); ++i)
    if (ins[i].elements() != 1)
      return kernelError(kName, "loss_scaled: scale, norm and iterations "
                                "hold one element each");
  size_t listed = ins.size() - scaled;
  if (listed == 0 || listed % perVariable != 0)
    return kernelError(kName, std::to_string(ins.size()) +
                                  " inputs do not split into params, grads" +
                                  (h.byNorm() ? ", " : " and ") +
                                  std::to_string(h.allSlots) + " slot(s)" +
                                  (h.byNorm() ? " and a norm" : "") +
                                  " per variable for " + kind);
  size_t n = listed / perVariable;
  if (Status s = checkOperands(kName, ins, outs, ins.size(), ins.size(),
                               n * (1 + h.allSlots), kCpuOperands);
      !s)
    return s;
  std::vector<OptimizerUpdate::Chunk> chunks;
  int64_t elements = 0;
  for (size_t v = 0; v < n; ++v) {
    int64_t size = ins[v].elements();
    auto mismatch = [&](const TensorRef &t, const std::string &what) {
      return kernelError(kName, "variable " + std::to_string(v) + " " +
                                    shapeText(ins[v].shape) + ": " + what +
                                    " " + shapeText(t.shape) +
                                    " differs in size");
    };
    if (ins[n + v].elements() != size)
      return mismatch(ins[n + v], "gradient");
    if (outs[v].elements() != size)
      return mismatch(outs[v], "new value");
    for (int64_t s = 0; s < h.allSlots; ++s) {
      if (ins[2 * n + v * h.allSlots + s].elements() != size)
        return mismatch(ins[2 * n + v * h.allSlots + s],
                        "slot " + std::to_string(s));
      if (outs[n + v * h.allSlots + s].elements() != size)
        return mismatch(outs[n + v * h.allSlots + s],
                        "new slot " + std::to_string(s));
    }
    if (h.byNorm() && ins[(2 + h.allSlots) * n + v].elements() != 1)
      return mismatch(ins[(2 + h.allSlots) * n + v], "norm");
    for (int64_t b = 0; b < size; b += kChunk)
      chunks.push_back(
          {static_cast<int64_t>(v), b, std::min(size, b + kChunk)});
    elements += size;
  }
  auto kernel =
      std::make_shared<OptimizerUpdate>(h, std::move(chunks), n, elements);
  out = [kernel](const KernelContext &ctx, const KernelConfig &cfg,
                 const Tensors &ins, const Tensors &outs) {
    return (*kernel)(ctx, cfg, ins, outs);
  };
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// global_norm: sqrt(sum of squares) over every gradient
//===----------------------------------------------------------------------===//

/// The same chunks as the update: each chunk's sum of squares in double,
/// added in chunk order afterwards, so the norm does not depend on the
/// thread count.
class GlobalNorm {
public:
  GlobalNorm(std::vector<OptimizerUpdate::Chunk> chunks)
      : chunks_(std::move(chunks)), partial_(chunks_.size()) {}

  Status operator()(const KernelContext &ctx, const Tensors &ins,
                    const Tensors &outs) {
    useReplicaThreads(ctx);
    int64_t count = static_cast<int64_t>(chunks_.size());
#pragma omp parallel for schedule(static) if (count > 1)
    for (int64_t i = 0; i < count; ++i) {
      const OptimizerUpdate::Chunk &c = chunks_[i];
      const float *x = ins[c.variable].f32();
      double sum = 0.0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = c.begin; j < c.end; ++j)
        sum += static_cast<double>(x[j]) * x[j];
      partial_[i] = sum;
    }
    double total = 0.0;
    for (double p : partial_)
      total += p;
    outs[0].f32()[0] = static_cast<float>(std::sqrt(total));
    return Status::ok();
  }

private:
  std::vector<OptimizerUpdate::Chunk> chunks_;
  std::vector<double> partial_; // reused every step
};

Status globalNormFactory(const KernelContext &, const KernelConfig &,
                         const Tensors &ins, const Tensors &outs,
                         KernelFn &out) {
  static constexpr const char *kName = "global_norm";
  if (Status s =
          checkOperands(kName, ins, outs, 1, ins.size(), 1, kCpuOperands);
      !s)
    return s;
  if (ins.empty() || outs[0].elements() != 1)
    return kernelError(kName, "takes tensors and writes one scalar");
  std::vector<OptimizerUpdate::Chunk> chunks;
  for (size_t v = 0; v < ins.size(); ++v) {
    int64_t size = ins[v].elements();
    for (int64_t b = 0; b < size; b += kChunk)
      chunks.push_back(
          {static_cast<int64_t>(v), b, std::min(size, b + kChunk)});
  }
  auto kernel = std::make_shared<GlobalNorm>(std::move(chunks));
  out = [kernel](const KernelContext &ctx, const KernelConfig &,
                 const Tensors &ins,
                 const Tensors &outs) { return (*kernel)(ctx, ins, outs); };
  return Status::ok();
}

/// ema_update (inputs value, average; outputs new_average, new_value):
/// Keras' use_ema. The reference rounds m * a + (1 - m) * v from doubles;
/// so does this loop.
Status emaUpdateFactory(const KernelContext &, const KernelConfig &cfg,
                        const Tensors &ins, const Tensors &outs,
                        KernelFn &out) {
  static constexpr const char *kName = "ema_update";
  if (Status s = checkOperands(kName, ins, outs, 2, 2, 2, kCpuOperands); !s)
    return s;
  int64_t n = ins[0].elements();
  if (ins[1].elements() != n || outs[0].elements() != n ||
      outs[1].elements() != n)
    return kernelError(kName, "operands differ in size");
  const EmaSchedule schedule = EmaSchedule::of(cfg);
  out = [=](const KernelContext &ctx, const KernelConfig &, const Tensors &ins,
            const Tensors &outs) {
    useReplicaThreads(ctx);
    double m = schedule.momentumAt(ctx.step);
    bool overwrite = schedule.overwritesAt(ctx.step);
    const float *value = ins[0].f32(), *average = ins[1].f32();
    float *newAverage = outs[0].f32(), *newValue = outs[1].f32();
#pragma omp parallel for simd schedule(static) if (n >= kParallelElements)
    for (int64_t i = 0; i < n; ++i) {
      float v = value[i];
      float a = static_cast<float>(m * average[i] + (1 - m) * v);
      newAverage[i] = a;
      newValue[i] = overwrite ? a : v;
    }
    return Status::ok();
  };
  return Status::ok();
}

} // namespace

void registerVectorOptimizerKernels(KernelRegistry &registry) {
  registry.addFactory("optimizer_update", Backend::cpu, optimizerUpdateFactory);
  registry.addFactory("ema_update", Backend::cpu, emaUpdateFactory);
  registry.addFactory("global_norm", Backend::cpu, globalNormFactory);
  // A step's two small pieces of loss scaling: the reference's loops.
  registry.addFactory("scale_by", Backend::cpu, scaleByFactory);
  registry.addFactory("loss_scale_update", Backend::cpu,
                      lossScaleUpdateFactory);
}

} // namespace graph::runtime::cpu
