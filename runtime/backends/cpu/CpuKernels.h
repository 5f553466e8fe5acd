//===- CpuKernels.h - the cpu backend ---------------------------*- C++ -*-===//
//
// Kernels for Backend::cpu: oneDNN 2.6 primitives where oneDNN has them
// (Dnnl*Kernels.cpp), own vectorised loops elsewhere (Vector*Kernels.cpp).
// Layouts are the plan's: NHWC activations, HWIO or OHWI conv kernels (the
// config's filter_layout), [in, out] dense kernels. Every kernel is checked
// against the reference backend by test/runtime/reference/ConformanceTest.cpp.
//
// Mixed precision: the convolutions and matmuls take bfloat16 launches on
// oneDNN's bf16 primitives where the CPU computes bfloat16 natively
// (DnnlContext.h: Bf16Path); every other launch with bf16 or f16 operands
// runs its float32 kernel on widened copies (runtime/core/ReducedPrecision.h).
//
// Threads: one OpenMP pool. N replicas in one process run on N device
// threads; each takes an equal share of the process' threads
// (threadsPerReplica), so two replicas on two cores use one core each
// instead of oversubscribing them. Every thread of a step, the device
// threads and their OpenMP teams, flushes subnormal floats to zero unless
// the run keeps them (ExecutorOptions::flushDenormals).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CPU_CPUKERNELS_H
#define RUNTIME_BACKENDS_CPU_CPUKERNELS_H

#include "runtime/core/Kernel.h"

namespace graph::runtime::cpu {

/// The cpu kernels' operands: f32 only (checkOperands' rule).
inline const OperandRule kCpuOperands =
    OperandRule::f32().because(" (the cpu backend computes in f32 only)");

/// How this process runs a bfloat16 plan's convolutions and matmuls, for
/// graphrun's start-up line: "oneDNN bf16 primitives (avx512_core_bf16)",
/// or the widened float32 kernels; an error when GRAPH_CPU_BF16 is wrong.
Status describeBf16Path(std::string &description);

/// Registers every cpu kernel in KernelRegistry::global() under
/// Backend::cpu. Idempotent.
void registerCpuKernels();

/// The OpenMP threads each of `replicas` device threads may use: the
/// process' threads (OMP_NUM_THREADS, else the cores) divided evenly, at
/// least one.
int threadsPerReplica(int replicas);

/// With `processes` workers of a job on this host, this process takes an
/// equal share of the cores, unless OMP_NUM_THREADS says otherwise (or a
/// launcher bound it to fewer). Call before registerCpuKernels().
void shareCoresWith(int processes);

/// Sets the calling thread's OpenMP team size for a kernel of `ctx`'s
/// replica, and gives the team the calling thread's denormal mode
/// (shareDenormalMode). Cheap; every cpu kernel calls it first.
void useReplicaThreads(const KernelContext &ctx);

/// Makes the threads of the calling thread's OpenMP team, up to `threads`
/// of them, flush subnormals to zero exactly when the calling thread does
/// (runtime/core/DenormalMode.h: the executor sets a cpu device thread's
/// mode for its step). Runs one parallel region when the mode or the team
/// grew since the last call on this thread; otherwise reads MXCSR only.
void shareDenormalMode(int threads);

/// Gives the calling thread's OpenMP team, as many threads as this process
/// uses, the calling thread's signal mask. Threads libgomp starts later
/// inherit it; those it started before (an earlier job in this process)
/// would not. A job that blocks its preemption signals calls it, so that no
/// signal lands on a thread running oneDNN (runtime/job/Preemption.h says
/// why). One parallel region.
void shareSignalMask();

// Per-file registration, called by registerCpuKernels().
void registerDnnlConvKernels(KernelRegistry &registry);
void registerDnnlDenseKernels(KernelRegistry &registry);
void registerDnnlPoolKernels(KernelRegistry &registry);
void registerDnnlNormKernels(KernelRegistry &registry);
void registerVectorElementwiseKernels(KernelRegistry &registry);
void registerVectorLossKernels(KernelRegistry &registry);
void registerVectorMetricKernels(KernelRegistry &registry);
void registerVectorOptimizerKernels(KernelRegistry &registry);
void registerVectorShapeKernels(KernelRegistry &registry);
void registerVectorImageKernels(KernelRegistry &registry);
void registerVectorConvPoolGradKernels(KernelRegistry &registry);

} // namespace graph::runtime::cpu

#endif // RUNTIME_BACKENDS_CPU_CPUKERNELS_H
