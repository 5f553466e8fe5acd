//===- EmaSchedule.h - when Keras' use_ema averages and overwrites --------===//
//
// graph.ema_update's schedule, shared by every backend (the cuda kernel
// reads the step on the device): Keras' _update_model_variables_moving_average
// runs every step, with no momentum while the optimizer's `iterations` (the
// updates applied: the steps over gradient_accumulation_steps) is 0, and
// overwrites the variables when (iterations + 1) is a multiple of
// ema_overwrite_frequency (base_optimizer.py, _backend_apply_gradients).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_EMASCHEDULE_H
#define RUNTIME_CORE_EMASCHEDULE_H

#include "runtime/core/Kernel.h"

#include <cstdint>

#if defined(__CUDACC__)
#define GRAPH_EMA_HOST_DEVICE __host__ __device__
#else
#define GRAPH_EMA_HOST_DEVICE
#endif

namespace graph::runtime {

struct EmaSchedule {
  double momentum = 0.99;
  /// ema_overwrite_frequency (0: never).
  int64_t overwriteFrequency = 0;
  /// gradient_accumulation_steps (1: every step updates).
  int64_t accumulation = 1;

  /// Keras' iterations during step `step` (1 for the first step).
  GRAPH_EMA_HOST_DEVICE int64_t iterations(int64_t step) const {
    return (step - 1) / (accumulation > 0 ? accumulation : 1);
  }
  GRAPH_EMA_HOST_DEVICE double momentumAt(int64_t step) const {
    return iterations(step) != 0 ? momentum : 0.0;
  }
  GRAPH_EMA_HOST_DEVICE bool overwritesAt(int64_t step) const {
    return overwriteFrequency > 0 &&
           (iterations(step) + 1) % overwriteFrequency == 0;
  }

  /// graph.ema_update's attributes, as every backend reads them.
  static EmaSchedule of(const KernelConfig &cfg) {
    return {cfg.getFloat("momentum", 0.99),
            cfg.getInt("overwrite_frequency", 0),
            cfg.getInt("accumulation", 1)};
  }
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_EMASCHEDULE_H
