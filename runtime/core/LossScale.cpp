//===- LossScale.cpp - Keras' dynamic loss scaling on the host ------------===//
//
// Each kernel checks its launch once (a factory, for the cpu backend, whose
// steady state allocates nothing) or on every run (a plain kernel, for the
// reference backend), then runs the same loop.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/LossScale.h"

#include <cmath>

namespace graph::runtime {

namespace {

Status kernelError(const char *kernel, const std::string &message) {
  return Status::error(std::string(kernel) + ": " + message);
}

constexpr const char *kScaleBy = "scale_by";
constexpr const char *kUpdate = "loss_scale_update";

Status checkScaleBy(const KernelConfig &cfg, const std::vector<TensorRef> &ins,
                    const std::vector<TensorRef> &outs, int64_t &replicas) {
  if (Status s = checkOperands(kScaleBy, ins, outs, 2, 2, 1); !s)
    return s;
  if (ins[1].elements() != 1 || outs[0].elements() != ins[0].elements())
    return kernelError(kScaleBy, "takes a tensor and a scale of one element, "
                                 "and writes the tensor's size");
  replicas = cfg.getInt("replicas", 1);
  if (replicas < 1)
    return kernelError(kScaleBy, "replicas must be >= 1");
  return Status::ok();
}

void runScaleBy(int64_t replicas, const std::vector<TensorRef> &ins,
                const std::vector<TensorRef> &outs) {
  int64_t n = ins[0].elements();
  const float *x = ins[0].f32();
  float s = ins[1].f32()[0] / static_cast<float>(replicas);
  float *y = outs[0].f32();
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * s;
}

Status checkUpdate(const KernelConfig &cfg, const std::vector<TensorRef> &ins,
                   const std::vector<TensorRef> &outs, int64_t &growth,
                   int64_t &replicas) {
  if (Status s = checkOperands(kUpdate, ins, outs, 4, 4, 4); !s)
    return s;
  for (const std::vector<TensorRef> *list : {&ins, &outs})
    for (const TensorRef &t : *list)
      if (t.elements() != 1)
        return kernelError(kUpdate, "every operand holds one element");
  growth = cfg.getInt("growth_steps", 2000);
  replicas = cfg.getInt("replicas", 1);
  if (growth < 1 || replicas < 1)
    return kernelError(kUpdate, "growth_steps and replicas must be >= 1");
  return Status::ok();
}

Status runUpdate(int64_t growth, int64_t replicas,
                 const std::vector<TensorRef> &ins,
                 const std::vector<TensorRef> &outs) {
  // Read everything before writing: a result may share its operand's buffer.
  float scale = ins[0].f32()[0], counter = ins[1].f32()[0],
        iterations = ins[2].f32()[0], norm = ins[3].f32()[0];
  constexpr float kExact = 16777216.0f; // 2^24
  float newScale = scale, newCounter = 0.0f, newIterations = iterations;
  if (std::isfinite(norm)) {
    if (iterations + 1.0f >= kExact)
      return kernelError(kUpdate, "the optimizer's iterations reached 2^24, "
                                  "past what its float32 count holds exactly");
    newIterations = iterations + 1.0f;
    if (counter == static_cast<float>(growth - 1))
      newScale = scale * 2.0f;
    else
      newCounter = counter + 1.0f;
  } else {
    newScale = scale * 0.5f;
  }
  outs[0].f32()[0] = newScale;
  outs[1].f32()[0] = newCounter;
  outs[2].f32()[0] = newIterations;
  outs[3].f32()[0] = norm / (scale / static_cast<float>(replicas));
  return Status::ok();
}

} // namespace

Status scaleByKernel(const KernelContext &, const KernelConfig &cfg,
                     const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs) {
  int64_t replicas = 1;
  if (Status s = checkScaleBy(cfg, ins, outs, replicas); !s)
    return s;
  runScaleBy(replicas, ins, outs);
  return Status::ok();
}

Status scaleByFactory(const KernelContext &, const KernelConfig &cfg,
                      const std::vector<TensorRef> &ins,
                      const std::vector<TensorRef> &outs, KernelFn &out) {
  int64_t replicas = 1;
  if (Status s = checkScaleBy(cfg, ins, outs, replicas); !s)
    return s;
  out = [replicas](const KernelContext &, const KernelConfig &,
                   const std::vector<TensorRef> &ins,
                   const std::vector<TensorRef> &outs) {
    runScaleBy(replicas, ins, outs);
    return Status::ok();
  };
  return Status::ok();
}

Status lossScaleUpdateKernel(const KernelContext &, const KernelConfig &cfg,
                             const std::vector<TensorRef> &ins,
                             const std::vector<TensorRef> &outs) {
  int64_t growth = 0, replicas = 1;
  if (Status s = checkUpdate(cfg, ins, outs, growth, replicas); !s)
    return s;
  return runUpdate(growth, replicas, ins, outs);
}

Status lossScaleUpdateFactory(const KernelContext &, const KernelConfig &cfg,
                              const std::vector<TensorRef> &ins,
                              const std::vector<TensorRef> &outs,
                              KernelFn &out) {
  int64_t growth = 0, replicas = 1;
  if (Status s = checkUpdate(cfg, ins, outs, growth, replicas); !s)
    return s;
  out = [growth, replicas](const KernelContext &, const KernelConfig &,
                           const std::vector<TensorRef> &ins,
                           const std::vector<TensorRef> &outs) {
    return runUpdate(growth, replicas, ins, outs);
  };
  return Status::ok();
}

} // namespace graph::runtime
