//===- LossScale.h - Keras' dynamic loss scaling on the host ----*- C++ -*-===//
//
// The two small kernels of a loss-scaled training step (Keras'
// LossScaleOptimizer), the same on the reference and cpu backends: the loss
// gradient times the scale, and the scale's move after the step. The skip
// itself is the optimizer update's (see optimizer_update's loss_scaled).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_LOSSSCALE_H
#define RUNTIME_CORE_LOSSSCALE_H

#include "runtime/core/Kernel.h"

namespace graph::runtime {

/// scale_by: ins x, s (one element); outs x * (s / replicas), in float32
/// (config replicas, default 1: a replica's share of the global batch).
Status scaleByKernel(const KernelContext &ctx, const KernelConfig &config,
                     const std::vector<TensorRef> &ins,
                     const std::vector<TensorRef> &outs);

/// loss_scale_update: ins scale, counter, iterations, norm; outs the new
/// scale, counter and iterations, and norm / (scale / replicas) (config
/// growth_steps, replicas).
/// Keras (loss_scale_optimizer.py, the TensorFlow path): a finite norm
/// counts the step (at growth_steps - 1 the counter restarts and the scale
/// doubles) and the update; a non-finite one halves the scale and restarts
/// the counter. The counts are float32, exact to 2^24: past that the
/// kernel fails rather than stop counting.
Status lossScaleUpdateKernel(const KernelContext &ctx,
                             const KernelConfig &config,
                             const std::vector<TensorRef> &ins,
                             const std::vector<TensorRef> &outs);

/// The same two, checked once at instantiation (the cpu backend's: a step
/// allocates nothing).
Status scaleByFactory(const KernelContext &ctx, const KernelConfig &config,
                      const std::vector<TensorRef> &ins,
                      const std::vector<TensorRef> &outs, KernelFn &out);
Status lossScaleUpdateFactory(const KernelContext &ctx,
                              const KernelConfig &config,
                              const std::vector<TensorRef> &ins,
                              const std::vector<TensorRef> &outs,
                              KernelFn &out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_LOSSSCALE_H
