//===- CpuKernels.cpp - cpu backend registration and threads --------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include "runtime/core/DenormalMode.h"

#include <omp.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <mutex>
#include <pthread.h>

namespace graph::runtime::cpu {

namespace {
/// The process' OpenMP threads, read once on the registering thread (the
/// main thread, whose ICVs reflect OMP_NUM_THREADS).
int processThreads() {
  static const int threads = std::max(1, omp_get_max_threads());
  return threads;
}
} // namespace

void shareCoresWith(int processes) {
  if (processes > 1 && !std::getenv("OMP_NUM_THREADS"))
    omp_set_num_threads(std::max(1, omp_get_max_threads() / processes));
}

int threadsPerReplica(int replicas) {
  return std::max(1, processThreads() / std::max(1, replicas));
}

void useReplicaThreads(const KernelContext &ctx) {
  // omp_set_num_threads sets the calling thread's ICV only: each device
  // thread keeps its own team size.
  thread_local int current = 0;
  int want = threadsPerReplica(ctx.replicas);
  if (current != want) {
    omp_set_num_threads(want);
    current = want;
  }
  shareDenormalMode(want);
}

void shareDenormalMode(int threads) {
  // libgomp keeps a team's threads from one parallel region to the next,
  // neither copies the master's MXCSR into them when a region starts (LLVM's
  // libomp does) nor runs anything at their start, so one region sets it on
  // each whenever the master's mode, or a larger team, differs from what
  // the team last got. Threads that libgomp adds later are started by the
  // master and inherit its MXCSR (Linux copies it into a new thread).
  thread_local int teamMode = -1; // 0 exact, 1 flushing, -1 never set
  thread_local int teamThreads = 0;
  const int mode = flushesDenormals() ? 1 : 0;
  if ((mode == teamMode && threads <= teamThreads) || omp_in_parallel())
    return;
  if (threads > 1) {
    const bool flush = mode == 1;
#pragma omp parallel num_threads(threads)
    setFlushDenormals(flush);
  }
  teamMode = mode;
  teamThreads = std::max(threads, 1);
}

void shareSignalMask() {
  const int threads = processThreads();
  if (threads <= 1 || omp_in_parallel())
    return;
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
#pragma omp parallel num_threads(threads)
  pthread_sigmask(SIG_SETMASK, &mask, nullptr);
}

void registerCpuKernels() {
  static std::once_flag once;
  std::call_once(once, [] {
    processThreads();
    KernelRegistry &registry = KernelRegistry::global();
    registerDnnlConvKernels(registry);
    registerDnnlDenseKernels(registry);
    registerDnnlPoolKernels(registry);
    registerDnnlNormKernels(registry);
    registerVectorElementwiseKernels(registry);
    registerVectorLossKernels(registry);
    registerVectorMetricKernels(registry);
    registerVectorOptimizerKernels(registry);
    registerVectorShapeKernels(registry);
    registerVectorImageKernels(registry);
    registerVectorConvPoolGradKernels(registry);
  });
}

} // namespace graph::runtime::cpu
