//===- PreemptionTest.cpp - the preemption signals and their hook ---------===//

#include "runtime/job/Preemption.h"
#include "runtime/collectives/Workers.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>

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

TEST(PreemptionSignals, TheHandlerRecordsTheFirstSignalOnly) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({SIGUSR1, SIGUSR2}, handlers));
  EXPECT_EQ(PreemptionSignals::received(), 0);
  // One job at a time in a process.
  std::unique_ptr<PreemptionSignals> second;
  EXPECT_FALSE(PreemptionSignals::install({SIGUSR1}, second));
  std::raise(SIGUSR2);
  std::raise(SIGUSR1);
  EXPECT_EQ(PreemptionSignals::received(), SIGUSR2);
  EXPECT_EQ(PreemptionSignals::count(), 2);
  EXPECT_FALSE(PreemptionSignals::sentByParent());
  handlers->restore();
  struct sigaction now {};
  sigaction(SIGUSR1, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST(PreemptionHook, SeveralWorkersStopOnTheVotesAlone) {
  std::unique_ptr<PreemptionSignals> handlers;
  ASSERT_TRUE(PreemptionSignals::install({SIGUSR1}, handlers));
  std::raise(SIGUSR1);
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
  std::raise(SIGTERM);
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
