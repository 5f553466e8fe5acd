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

/// A parsed `graph.elementwise` body (see docs/compiler-ir.md, section 5).
class ElementwiseProgram {
public:
  struct Stmt {
    std::string op;
    std::vector<int> args; // >= 0: launch input; < 0: -(statement + 1)
    double alpha = 0.0;
    bool hasAlpha = false;
    bool approximate = false;
  };
  /// Parses `body`; on failure returns false and sets `error`.
  bool parse(const std::string &body, std::string &error);
  /// Evaluates the body on one element of each launch input.
  double evaluate(const double *inputs, std::vector<double> &scratch) const;
  int numInputs() const { return maxInput + 1; }
  /// The parsed statements and the result (same encoding as Stmt::args),
  /// for backends that compile the body into their own form.
  const std::vector<Stmt> &statements() const { return stmts; }
  int resultValue() const { return result; }

private:
  std::vector<Stmt> stmts;
  int result = 0; // same encoding as Stmt::args
  int maxInput = -1;
};

/// Scalar forms shared by the kernels and the elementwise interpreter.
double geluForward(double x, bool approximate);
double geluDerivative(double x, bool approximate);

} // namespace graph::runtime::reference

#endif // RUNTIME_BACKENDS_REFERENCE_REFERENCEKERNELS_H
