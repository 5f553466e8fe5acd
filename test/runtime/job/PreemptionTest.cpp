//===- PreemptionTest.cpp - the preemption signals and their hook ---------===//

#include "runtime/job/Preemption.h"
#include "runtime/collectives/Workers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <pthread.h>
#include <sstream>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

namespace graph::runtime::job {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(PreemptSignals, NamesAsKillListsThem) {
  std::vector<int> signals;
  ASSERT_TRUE(parsePreemptSignals("TERM,USR1", signals));
  EXPECT_THAT(signals, ElementsAre(SIGTERM, SIGUSR1));
  ASSERT_TRUE(parsePreemptSignals("sigusr2,Term,TERM", signals));
  EXPECT_THAT(signals, ElementsAre(SIGUSR2, SIGTERM));
  ASSERT_TRUE(parsePreemptSignals("none", signals));
  EXPECT_TRUE(signals.empty());
  EXPECT_EQ(signalName(SIGTERM), "SIGTERM");
}

TEST(PreemptSignals, WhatCannotBeCaughtOrIsNoRequestIsRefused) {
  std::vector<int> signals;
  for (const char *bad : {"TERM,KILL", "STOP", "SEGV", "15", ""})
    EXPECT_FALSE(parsePreemptSignals(bad, signals)) << bad;
  EXPECT_THAT(parsePreemptSignals("TERM,KILL", signals).message(),
              HasSubstr("'KILL' is not a signal graphrun can stop on"));
}

/// Sends `signal` to the process, as a cluster or a shell does (not to
/// this thread: it blocks the signals while they are installed), and waits
/// until the handler has counted it.
bool sendToProcess(int signal) {
  int before = PreemptionSignals::count();
  if (::kill(::getpid(), signal) != 0)
    return false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (PreemptionSignals::count() == before) {
    if (std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool blocks(int signal) {
  sigset_t mask;
  pthread_sigmask(SIG_SETMASK, nullptr, &mask);
  return sigismember(&mask, signal) == 1;
}

TEST(PreemptionSignals, TheHandlerRecordsTheFirstSignalOnly) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({SIGUSR1, SIGUSR2}, handlers));
  EXPECT_EQ(PreemptionSignals::received(), 0);
  // One job at a time in a process.
  std::unique_ptr<PreemptionSignals> second;
  EXPECT_FALSE(PreemptionSignals::install({SIGUSR1}, second));
  ASSERT_TRUE(sendToProcess(SIGUSR2));
  ASSERT_TRUE(sendToProcess(SIGUSR1));
  EXPECT_EQ(PreemptionSignals::received(), SIGUSR2);
  EXPECT_EQ(PreemptionSignals::count(), 2);
  EXPECT_FALSE(PreemptionSignals::sentByParent());
  handlers->restore();
  struct sigaction now {};
  sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

// oneDNN 2.6's JIT GEMM kernels point rsp into the heap while they run: a
// signal frame written on a computing thread corrupts the heap. So the
// installing thread, and every thread it starts while the signals are
// installed, blocks them; one thread of the handlers' own takes them.
TEST(PreemptionSignals, NoSignalLandsOnTheInstallingThreadOrItsChildren) {
  ASSERT_FALSE(blocks(SIGUSR1));
  {
    std::unique_ptr<PreemptionSignals> handlers;
    ASSERT_TRUE(PreemptionSignals::install({SIGUSR1, SIGUSR2}, handlers));
    EXPECT_TRUE(blocks(SIGUSR1));
    EXPECT_TRUE(blocks(SIGUSR2));
    EXPECT_FALSE(blocks(SIGTERM));
    bool childBlocks = false;
    std::thread([&] { childBlocks = blocks(SIGUSR1); }).join();
    EXPECT_TRUE(childBlocks);
    // Delivered all the same, on the delivery thread: a process-directed
    // signal goes to a thread that does not block it.
    ASSERT_TRUE(sendToProcess(SIGUSR1));
    EXPECT_EQ(PreemptionSignals::received(), SIGUSR1);
    // After restore(), the previous action (here: none, the default ends
    // the process) but still off this thread until the handlers go.
    handlers->restore();
    EXPECT_TRUE(blocks(SIGUSR1));
  }
  EXPECT_FALSE(blocks(SIGUSR1));
  EXPECT_FALSE(blocks(SIGUSR2));
}

std::atomic<pid_t> gHostHandlerThread{0};
extern "C" void hostHandler(int) {
  gHostHandlerThread.store(static_cast<pid_t>(::syscall(SYS_gettid)));
}

// Python's SIGINT handler, say, while a Trainer evaluates with no
// preemption signals of its own: it runs, but off the computing thread.
TEST(PreemptionSignals, AHandlerTheHostInstalledRunsOffTheInstallingThread) {
  struct sigaction host {
  }, previous{};
  host.sa_handler = hostHandler;
  sigemptyset(&host.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR2, &host, &previous), 0);
  {
    std::unique_ptr<PreemptionSignals> handlers;
    ASSERT_TRUE(PreemptionSignals::install({}, handlers));
    EXPECT_TRUE(blocks(SIGUSR2));
    EXPECT_FALSE(blocks(SIGUSR1)); // no handler: nothing to route
    gHostHandlerThread.store(0);
    ASSERT_EQ(::kill(::getpid(), SIGUSR2), 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (gHostHandlerThread.load() == 0 &&
           std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_NE(gHostHandlerThread.load(), 0);
    EXPECT_NE(gHostHandlerThread.load(),
              static_cast<pid_t>(::syscall(SYS_gettid)));
    EXPECT_EQ(PreemptionSignals::received(), 0); // not a preemption
  }
  EXPECT_FALSE(blocks(SIGUSR2));
  sigaction(SIGUSR2, &previous, nullptr);
}

TEST(PreemptionSignals, NoneInstalledChangesNoMask) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({}, handlers));
  EXPECT_FALSE(blocks(SIGTERM));
  EXPECT_FALSE(blocks(SIGINT));
}

TEST(PreemptionHook, SeveralWorkersStopOnTheVotesAlone) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({SIGUSR1}, handlers));
  ASSERT_TRUE(sendToProcess(SIGUSR1));
  std::ostringstream out;
  PreemptionHook hook(2, true, "ckpt", out);
  EXPECT_TRUE(hook.votesToStop());
  StepContext ctx;
  ctx.step = 7;
  ctx.stopVotes = 0; // the signal came after the step's sum
  ASSERT_TRUE(hook.afterStep(ctx));
  EXPECT_FALSE(hook.stopRequested());
  ctx.step = 8;
  ctx.stopVotes = 1;
  ASSERT_TRUE(hook.afterStep(ctx));
  EXPECT_TRUE(hook.stopRequested());
  EXPECT_EQ(hook.stopStep(), 8);
  EXPECT_EQ(out.str(), "graphrun: SIGUSR1 received (by 1 of 2 workers) at "
                       "step 8: no worker starts another step; the "
                       "checkpoint of the last step is written next\n");
}

TEST(PreemptionHook, ALoneWorkerStopsOnASignalDuringTheStepsHooks) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({SIGTERM}, handlers));
  std::ostringstream out;
  PreemptionHook hook(1, true, "", out);
  StepContext ctx;
  ctx.step = 3;
  ASSERT_TRUE(hook.afterStep(ctx));
  EXPECT_FALSE(hook.stopRequested());
  ASSERT_TRUE(sendToProcess(SIGTERM));
  ctx.step = 4;
  ASSERT_TRUE(hook.afterStep(ctx));
  EXPECT_TRUE(hook.stopRequested());
  EXPECT_THAT(out.str(), HasSubstr("nothing can be saved (no "
                                   "--checkpoint-dir)"));
  std::unique_ptr<Workers> one = singleWorker();
  Status s = hook.finish(*one, 4, "");
  EXPECT_EQ(s.code(), StatusCode::cancelled);
  EXPECT_THAT(s.message(), HasSubstr("preempted by SIGTERM: stopped after "
                                     "step 4, "));
  EXPECT_THAT(s.message(), HasSubstr("with nothing saved (no "
                                     "--checkpoint-dir): a rerun starts over "
                                     "(exit status 143)"));
}

} // namespace
} // namespace graph::runtime::job
