//===- LocalCollectiveTest.cpp - all-reduce among threads -----------------===//

#include "runtime/collectives/Collective.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

using namespace graph::runtime;

TEST(LocalCollective, MeanAndSumOfFourThreads) {
  const int n = 4;
  const int64_t count = 1001; // not a multiple of the ranks
  auto c = makeLocalCollective(n, std::chrono::milliseconds(10000));
  std::vector<std::vector<float>> bufs(n);
  std::vector<Status> statuses(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    bufs[r].resize(count);
    for (int64_t i = 0; i < count; ++i)
      bufs[r][i] = static_cast<float>(r + 1) * static_cast<float>(i % 7);
    threads.emplace_back([&, r] {
      statuses[r] = c->allReduce(r, bufs[r].data(), count, ReduceOp::mean);
      if (statuses[r])
        statuses[r] = c->allReduce(r, bufs[r].data(), count, ReduceOp::sum);
    });
  }
  for (auto &t : threads)
    t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(statuses[r]) << statuses[r].message();
    for (int64_t i = 0; i < count; ++i)
      // mean of (1+2+3+4) * k is 2.5k; the sum of four of those is 10k.
      ASSERT_FLOAT_EQ(bufs[r][i], 10.0f * static_cast<float>(i % 7));
  }
}

TEST(LocalCollective, TimeoutNamesTheLateReplica) {
  auto c = makeLocalCollective(3, std::chrono::milliseconds(100));
  std::vector<float> a(8, 1), b(8, 2);
  Status sa, sb;
  std::thread t0([&] { sa = c->allReduce(0, a.data(), 8, ReduceOp::mean); });
  std::thread t1([&] { sb = c->allReduce(1, b.data(), 8, ReduceOp::mean); });
  t0.join();
  t1.join();
  ASSERT_FALSE(sa);
  ASSERT_FALSE(sb);
  EXPECT_NE(sa.message().find("replica(s) 2 "), std::string::npos)
      << sa.message();
  EXPECT_NE(sa.message().find("timed out"), std::string::npos);
  // A late call after the failure fails at once.
  EXPECT_FALSE(c->allReduce(2, a.data(), 8, ReduceOp::mean));
}

TEST(LocalCollective, AbortReleasesWaiters) {
  auto c = makeLocalCollective(2, std::chrono::milliseconds(60000));
  std::vector<float> a(4, 1);
  Status s;
  std::thread t([&] { s = c->allReduce(0, a.data(), 4, ReduceOp::sum); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  c->abort("replica 1 failed: kernel error");
  t.join();
  ASSERT_FALSE(s);
  EXPECT_EQ(s.message(), "replica 1 failed: kernel error");
}

TEST(LocalCollective, MismatchedCountsFail) {
  auto c = makeLocalCollective(2, std::chrono::milliseconds(10000));
  std::vector<float> a(4, 1), b(5, 1);
  Status sa, sb;
  std::thread t0([&] { sa = c->allReduce(0, a.data(), 4, ReduceOp::sum); });
  std::thread t1([&] { sb = c->allReduce(1, b.data(), 5, ReduceOp::sum); });
  t0.join();
  t1.join();
  EXPECT_FALSE(sa);
  EXPECT_FALSE(sb);
}
