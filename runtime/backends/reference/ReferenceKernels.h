//===- ReferenceKernels.h - the reference backend ---------------*- C++ -*-===//
//
// Naive kernels for every graph op the compiler launches, written for
// obvious correctness rather than speed: NHWC activations, conv kernels
// HWIO or OHWI (the config's filter_layout, runtime/core/WindowGeometry.h),
// [in, out] dense kernels, every sum accumulated in double. They
// take f32 tensors (i32 or i64 class-index labels) and also f64 tensors, so
// the tests can check gradients by finite differences in double precision.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_REFERENCE_REFERENCEKERNELS_H
#define RUNTIME_BACKENDS_REFERENCE_REFERENCEKERNELS_H

#include "runtime/core/Kernel.h"
#include "runtime/plan/ElementwiseBody.h"

#include <cstdint>
#include <string>
#include <vector>

namespace graph::runtime::reference {

/// Registers every reference kernel in KernelRegistry::global() under
/// Backend::reference. Idempotent.
void registerReferenceKernels();

/// The names registerReferenceKernels() registers.
std::vector<std::string> referenceKernelNames();

/// Whether dropout keeps the element with global index `index` (row-major
/// over the global batch: (globalRowOffset + row) * rowElements + i). A
/// counter-based hash (splitmix64) of (op seed, run seed, step, index), so
/// dropout_grad regenerates the forward's mask and a batch split across
/// replicas drops what one replica would. Kept with probability 1 - rate.
bool dropoutKeep(int64_t opSeed, uint64_t runSeed, int64_t step, int64_t index,
                 double rate);

/// The value of `body` on one element of each launch input (in double).
double evaluateElementwise(const ElementwiseBody &body, const double *inputs,
                           std::vector<double> &scratch);

/// Scalar forms shared by the kernels and the elementwise interpreter.
double geluForward(double x, bool approximate);
double geluDerivative(double x, bool approximate);

} // namespace graph::runtime::reference

#endif // RUNTIME_BACKENDS_REFERENCE_REFERENCEKERNELS_H
