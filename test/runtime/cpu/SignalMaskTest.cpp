//===- SignalMaskTest.cpp - the OpenMP team takes its master's signal mask ===//
//
// A job that handles preemption signals blocks them on every thread that
// computes (runtime/job/Preemption.h: oneDNN 2.6's JIT GEMM kernels point
// rsp into the heap, and a signal frame written there corrupts it). The
// device thread's OpenMP team may predate the job, started unblocked by an
// earlier one in the same process (a Python session's second fit):
// cpu::shareSignalMask hands the master's mask to each of its threads.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <csignal>
#include <pthread.h>
#include <set>
#include <vector>

using namespace graph::runtime;

namespace {

bool blocks(int signal) {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, signal) == 1;
}

/// For each thread of a region of `threads`: whether it blocks `signal`,
/// and how many distinct threads ran.
std::vector<int> teamBlocks(int threads, int signal, size_t &distinct) {
  std::vector<int> seen(threads, -1);
  std::vector<pthread_t> who(threads);
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    seen[t] = blocks(signal) ? 1 : 0;
    who[t] = pthread_self();
  }
  std::set<pthread_t> ids(who.begin(), who.end());
  distinct = ids.size();
  return seen;
}

TEST(ShareSignalMask, ATeamStartedBeforeTheJobBlocksWhatItsMasterBlocks) {
  const int threads = cpu::threadsPerReplica(1);
  if (threads < 2)
    GTEST_SKIP() << "one OpenMP thread in this process (OMP_NUM_THREADS=1 "
                    "or one core): no team to share a mask with";
  size_t distinct = 0;
  // The team exists, unblocked, before anything is blocked.
  std::vector<int> before = teamBlocks(threads, SIGUSR2, distinct);
  ASSERT_EQ(distinct, static_cast<size_t>(threads));
  for (int b : before)
    ASSERT_EQ(b, 0);

  sigset_t usr2;
  sigemptyset(&usr2);
  sigaddset(&usr2, SIGUSR2);
  pthread_sigmask(SIG_BLOCK, &usr2, nullptr);
  // Without sharing, the old team's threads still take the signal.
  std::vector<int> unshared = teamBlocks(threads, SIGUSR2, distinct);
  EXPECT_EQ(unshared[0], 1);
  for (int t = 1; t < threads; ++t)
    EXPECT_EQ(unshared[t], 0) << "thread " << t;

  cpu::shareSignalMask();
  std::vector<int> shared = teamBlocks(threads, SIGUSR2, distinct);
  EXPECT_EQ(distinct, static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(shared[t], 1) << "thread " << t;

  // And back: the team follows the master's mask either way.
  pthread_sigmask(SIG_UNBLOCK, &usr2, nullptr);
  cpu::shareSignalMask();
  std::vector<int> after = teamBlocks(threads, SIGUSR2, distinct);
  for (int t = 0; t < threads; ++t)
    EXPECT_EQ(after[t], 0) << "thread " << t;
}

} // namespace
