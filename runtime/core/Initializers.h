//===- Initializers.h - Keras initializers, counter-based -------*- C++ -*-===//
//
// Every InitKind of plan.fbs with Keras' semantics. Values come from
// Philox4x32-10 keyed by (hash of the variable's name, seed) and countered by
// the element's index, so an element's value depends on nothing but
// (name, seed, index): every replica count, backend and thread split gets the
// same initial weights.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_INITIALIZERS_H
#define RUNTIME_CORE_INITIALIZERS_H

#include "runtime/base/Status.h"
#include "runtime/plan/plan_generated.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime {

/// Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
/// 3", SC'11): four 32-bit outputs for a 128-bit counter under a 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

/// FNV-1a of a variable's name: the part of the key that tells variables
/// apart.
uint64_t hashName(const std::string &name);

/// An initializer as plan.fbs describes it, detached from the FlatBuffer.
struct InitSpec {
  plan::InitKind kind = plan::InitKind::zeros;
  double mean = 0.0;
  double stddev = 0.05;
  double minval = -0.05;
  double maxval = 0.05;
  double value = 0.0;
  int64_t seed = 0;
  bool hasSeed = false;

  static InitSpec fromPlan(const plan::Initializer &init);
};

/// Keras' fans: rank 0 -> (1, 1); rank 1 -> (n, n); rank 2 [in, out];
/// higher ranks (conv kernels, HWIO) multiply by the receptive field.
void computeFans(const std::vector<int64_t> &shape, double &fanIn,
                 double &fanOut);

/// Fills `out` (elementCount(shape) floats) with the initial value of the
/// variable `name`; an initializer's own seed, when it has one, replaces the
/// run's `seed` as Keras' seeded initializers do.
Status initializeVariable(const std::string &name,
                          const std::vector<int64_t> &shape,
                          const InitSpec &init, uint64_t seed, float *out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_INITIALIZERS_H
