//===- PipelineTest.cpp - every stage of the input pipeline ---------------===//

#include "runtime/data/Pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <numeric>
#include <set>
#include <thread>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

/// n examples of shape 2x2x1 whose pixels encode their index (example i,
/// pixel j holds (4i + j) / 4n) and whose label is i mod numClasses.
std::shared_ptr<Dataset> makeDataset(int64_t n, int32_t numClasses = 10) {
  auto ds = std::make_shared<Dataset>();
  ds->name = "test-data";
  ds->shape = {2, 2, 1};
  ds->numClasses = numClasses;
  ds->images.resize(n * 4);
  for (int64_t k = 0; k < n * 4; ++k)
    ds->images[k] = static_cast<float>(k) / static_cast<float>(n * 4);
  ds->labels.resize(n);
  for (int64_t i = 0; i < n; ++i)
    ds->labels[i] = static_cast<int32_t>(i % numClasses);
  return ds;
}

/// Every batch of a pipeline, failing the test on an error.
std::vector<Batch> collect(const Pipeline &p, int64_t limit = 1 << 30) {
  std::vector<Batch> batches;
  std::unique_ptr<BatchIterator> it;
  Status s = p.open(it);
  EXPECT_TRUE(s) << s.message();
  if (!s)
    return batches;
  for (int64_t k = 0; k < limit; ++k) {
    Batch b;
    bool end = false;
    s = it->next(b, end);
    EXPECT_TRUE(s) << s.message();
    if (!s || end)
      break;
    batches.push_back(std::move(b));
  }
  return batches;
}

/// The source indices of every row, in order.
std::vector<int64_t> rowIndices(const std::vector<Batch> &batches) {
  std::vector<int64_t> out;
  for (const Batch &b : batches)
    out.insert(out.end(), b.sourceIndices.begin(), b.sourceIndices.end());
  return out;
}

std::vector<int64_t> iota(int64_t n) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

/// The error open() or the first next() returns.
Status firstError(const Pipeline &p) {
  std::unique_ptr<BatchIterator> it;
  if (Status s = p.open(it); !s)
    return s;
  Batch b;
  bool end = false;
  for (;;) {
    Status s = it->next(b, end);
    if (!s || end)
      return s;
  }
}

//===-- shuffle -----------------------------------------------------------===//

TEST(PipelineTest, ShuffleIsAPermutation) {
  Pipeline p(makeDataset(1000));
  p.shuffle(100, 7).batch(1, LabelFormat::Sparse);
  std::vector<int64_t> order = rowIndices(collect(p));
  EXPECT_EQ(sorted(order), iota(1000));
  EXPECT_NE(order, iota(1000));
}

TEST(PipelineTest, ShuffleIsDeterministicForASeed) {
  auto ds = makeDataset(500);
  Pipeline a(ds), b(ds), c(ds);
  a.shuffle(64, 1).batch(10, LabelFormat::Sparse);
  b.shuffle(64, 1).batch(10, LabelFormat::Sparse);
  c.shuffle(64, 2).batch(10, LabelFormat::Sparse);
  std::vector<int64_t> first = rowIndices(collect(a));
  EXPECT_EQ(first, rowIndices(collect(b)));
  EXPECT_EQ(first, rowIndices(collect(a))); // a second pass of the same one
  EXPECT_NE(first, rowIndices(collect(c)));
}

TEST(PipelineTest, ShuffleDiffersAcrossEpochs) {
  Pipeline p(makeDataset(300));
  p.shuffle(300, 5).repeat(3).batch(1, LabelFormat::Sparse);
  std::vector<int64_t> all = rowIndices(collect(p));
  ASSERT_EQ(all.size(), 900u);
  std::vector<std::vector<int64_t>> epochs;
  for (int e = 0; e < 3; ++e) {
    epochs.emplace_back(all.begin() + 300 * e, all.begin() + 300 * (e + 1));
    EXPECT_EQ(sorted(epochs.back()), iota(300)) << "epoch " << e;
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_NE(epochs[0], epochs[2]);
}

TEST(PipelineTest, ShuffleBufferOfOneKeepsTheOrder) {
  Pipeline p(makeDataset(50));
  p.shuffle(1, 9).batch(5, LabelFormat::Sparse);
  EXPECT_EQ(rowIndices(collect(p)), iota(50));
}

TEST(PipelineTest, ShuffleBufferBoundsHowFarAnExampleMoves) {
  // With a buffer of 10, the k-th example out is among the first k + 10 in.
  Pipeline p(makeDataset(400));
  p.shuffle(10, 3).batch(1, LabelFormat::Sparse);
  std::vector<int64_t> order = rowIndices(collect(p));
  for (size_t k = 0; k < order.size(); ++k)
    EXPECT_LT(order[k], static_cast<int64_t>(k) + 10);
}

TEST(PipelineTest, ShuffleOverPositionsOrdersAsTheBufferOfCopies) {
  // Over a source read at a position (here through weigh, shard and a
  // cache) the buffer holds positions; over a map it holds copies. Same draws,
  // same rows: the pixels, labels and weights, epoch after epoch.
  auto ds = makeDataset(301);
  auto weights = std::make_shared<std::vector<float>>();
  for (int64_t i = 0; i < 301; ++i)
    weights->push_back(static_cast<float>(i % 7) + 0.5f);
  auto identity = [](Example &) { return Status::ok(); };
  for (int64_t buffer : {1, 10, 64, 151, 301, 5000}) {
    Pipeline byPosition(ds), byCopy(ds);
    byPosition.weigh(weights).shard(2, 1).cache().shuffle(buffer, 11).repeat(3);
    byCopy.weigh(weights)
        .shard(2, 1)
        .map(identity, 1)
        .shuffle(buffer, 11)
        .repeat(3);
    for (Pipeline *p : {&byPosition, &byCopy})
      p->batch(5, LabelFormat::Sparse);
    std::vector<Batch> a = collect(byPosition), b = collect(byCopy);
    ASSERT_EQ(a.size(), b.size()) << "buffer " << buffer;
    ASSERT_EQ(a.size(), 3u * 150 / 5) << "buffer " << buffer;
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k].sourceIndices, b[k].sourceIndices)
          << "buffer " << buffer << ", batch " << k;
      EXPECT_EQ(a[k].images, b[k].images) << "buffer " << buffer;
      EXPECT_EQ(a[k].sparseLabels, b[k].sparseLabels) << "buffer " << buffer;
      EXPECT_EQ(a[k].sampleWeights, b[k].sampleWeights) << "buffer " << buffer;
      for (size_t r = 0; r < a[k].sourceIndices.size(); ++r)
        EXPECT_EQ(a[k].sampleWeights[r],
                  (*weights)[static_cast<size_t>(a[k].sourceIndices[r])]);
    }
    if (buffer > 1)
      EXPECT_NE(rowIndices(a), sorted(rowIndices(a))) << "buffer " << buffer;
  }
}

//===-- shard -------------------------------------------------------------===//

TEST(PipelineTest, ShardsPartitionTheData) {
  auto ds = makeDataset(103);
  std::set<int64_t> seen;
  for (int64_t worker = 0; worker < 4; ++worker) {
    Pipeline p(ds);
    p.shard(4, worker).batch(1, LabelFormat::Sparse);
    std::vector<int64_t> mine = rowIndices(collect(p));
    EXPECT_EQ(static_cast<int64_t>(mine.size()), p.cardinality());
    EXPECT_EQ(mine.size(), worker < 3 ? 26u : 25u);
    for (int64_t i : mine) {
      EXPECT_EQ(i % 4, worker);
      EXPECT_TRUE(seen.insert(i).second) << "example " << i << " twice";
    }
  }
  EXPECT_EQ(seen.size(), 103u);
}

TEST(PipelineTest, ShardBeforeShufflePartitionsEveryEpoch) {
  auto ds = makeDataset(60);
  std::vector<int64_t> all;
  for (int64_t worker = 0; worker < 3; ++worker) {
    Pipeline p(ds);
    p.shard(3, worker).shuffle(1000, 11).repeat(2).batch(1,
                                                         LabelFormat::Sparse);
    std::vector<int64_t> mine = rowIndices(collect(p));
    ASSERT_EQ(mine.size(), 40u);
    std::vector<int64_t> e0(mine.begin(), mine.begin() + 20),
        e1(mine.begin() + 20, mine.end());
    EXPECT_EQ(sorted(e0), sorted(e1));
    all.insert(all.end(), e0.begin(), e0.end());
  }
  EXPECT_EQ(sorted(all), iota(60));
}

TEST(PipelineTest, ShardRejectsAnIndexOutOfRange) {
  Pipeline p(makeDataset(10));
  p.shard(3, 3).batch(1, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("test-data: input pipeline: shard(3, 3): "
                                     "the worker index must lie in [0, 3)"));
}

//===-- shard batches -----------------------------------------------------===//

/// Worker w of n, batching g / n after shardBatches(g, n, w), gets step for
/// step the rows [w * g / n, (w + 1) * g / n) of the global batch one
/// worker batching g gets, through the same shuffle and across epochs: the
/// workers together read every example of an epoch once, and a partial
/// last global batch is dropped by all of them.
TEST(PipelineTest, ShardBatchesSlicesEveryGlobalBatch) {
  auto ds = makeDataset(50);
  Pipeline whole(ds);
  whole.shuffle(1000, 5).repeat(2).batch(6, LabelFormat::Sparse);
  std::vector<Batch> global = collect(whole);
  ASSERT_EQ(global.size(), 16u); // 100 examples: 16 batches of 6, 4 dropped
  for (int64_t worker = 0; worker < 3; ++worker) {
    Pipeline p(ds);
    p.shuffle(1000, 5)
        .repeat(2)
        .shardBatches(6, 3, worker)
        .batch(2, LabelFormat::Sparse);
    EXPECT_EQ(p.cardinality(), 16);
    std::vector<Batch> mine = collect(p);
    ASSERT_EQ(mine.size(), global.size()) << "worker " << worker;
    for (size_t k = 0; k < mine.size(); ++k) {
      std::vector<int64_t> rows(global[k].sourceIndices.begin() + 2 * worker,
                                global[k].sourceIndices.begin() + 2 * worker +
                                    2);
      EXPECT_EQ(mine[k].sourceIndices, rows)
          << "worker " << worker << ", batch " << k;
    }
  }
  // The first epoch's 8 global batches hold 48 distinct examples.
  std::vector<int64_t> epoch =
      rowIndices(std::vector<Batch>(global.begin(), global.begin() + 8));
  EXPECT_EQ(std::set<int64_t>(epoch.begin(), epoch.end()).size(), 48u);
}

/// A map after shardBatches (an image folder's decoder) sees the worker's
/// examples only.
TEST(PipelineTest, ShardBatchesMapsOnlyTheWorkersRows) {
  auto ds = makeDataset(40);
  auto mapped = std::make_shared<std::atomic<int>>(0);
  Pipeline p(ds);
  p.shuffle(40, 2)
      .shardBatches(8, 4, 3)
      .map(
          [mapped](Example &) {
            ++*mapped;
            return Status::ok();
          },
          2)
      .batch(2, LabelFormat::Sparse);
  EXPECT_EQ(collect(p).size(), 5u);
  EXPECT_EQ(mapped->load(), 10);
}

TEST(PipelineTest, ShardBatchesRefusesABatchTheWorkersCannotSplit) {
  Pipeline p(makeDataset(10));
  p.shardBatches(10, 3, 0).batch(1, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("shardBatches(10, 3, 0): the global batch must be a "
                        "positive multiple of the worker count"));
  Pipeline q(makeDataset(10));
  q.shardBatches(6, 3, 3).batch(1, LabelFormat::Sparse);
  EXPECT_THAT(firstError(q).message(),
              HasSubstr("the worker index must lie in [0, 3)"));
}

//===-- repeat ------------------------------------------------------------===//

TEST(PipelineTest, RepeatPassesOverTheDataEpochsTimes) {
  Pipeline p(makeDataset(7));
  p.repeat(3).batch(1, LabelFormat::Sparse);
  EXPECT_EQ(p.cardinality(), 21);
  std::vector<int64_t> expect;
  for (int e = 0; e < 3; ++e)
    for (int64_t i = 0; i < 7; ++i)
      expect.push_back(i);
  EXPECT_EQ(rowIndices(collect(p)), expect);
}

TEST(PipelineTest, RepeatForeverHasNoEnd) {
  Pipeline p(makeDataset(7));
  p.repeat().batch(3, LabelFormat::Sparse);
  EXPECT_EQ(p.cardinality(), Pipeline::kInfinite);
  EXPECT_EQ(collect(p, 50).size(), 50u);
}

TEST(PipelineTest, RepeatForeverOverNothingEnds) {
  // Worker 4 of 5 gets nothing from 3 examples; it must not spin.
  Pipeline p(makeDataset(3));
  p.shard(5, 4).repeat().batch(1, LabelFormat::Sparse);
  EXPECT_EQ(p.cardinality(), 0);
  EXPECT_TRUE(collect(p).empty());
}

//===-- batch -------------------------------------------------------------===//

TEST(PipelineTest, BatchDropsTheRemainder) {
  Pipeline p(makeDataset(10));
  p.batch(4, LabelFormat::Sparse);
  EXPECT_EQ(p.cardinality(), 2);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(rowIndices(batches), iota(8));
  for (const Batch &b : batches) {
    EXPECT_EQ(b.size, 4);
    EXPECT_EQ(b.images.size(), 16u);
  }
}

TEST(PipelineTest, BatchesRunAcrossEpochs) {
  // 3 epochs of 10 at batch 4: 7 batches, the last 2 examples dropped.
  Pipeline p(makeDataset(10));
  p.repeat(3).batch(4, LabelFormat::Sparse);
  EXPECT_EQ(p.cardinality(), 7);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 7u);
  EXPECT_EQ(batches[2].sourceIndices, (std::vector<int64_t>{8, 9, 0, 1}));
}

TEST(PipelineTest, SparseLabels) {
  auto ds = makeDataset(6, 4);
  Pipeline p(ds);
  p.batch(3, LabelFormat::Sparse);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 2u);
  const Batch &b = batches[1];
  EXPECT_EQ(b.labelFormat, LabelFormat::Sparse);
  EXPECT_EQ(b.sparseLabels, (std::vector<int32_t>{3, 0, 1}));
  EXPECT_TRUE(b.oneHotLabels.empty());
  EXPECT_EQ(b.shape, (ExampleShape{2, 2, 1}));
  // Rows are the dataset's images, in order: [B, H, W, C].
  EXPECT_EQ(b.images,
            std::vector<float>(ds->images.begin() + 12, ds->images.end()));
}

TEST(PipelineTest, OneHotLabels) {
  Pipeline p(makeDataset(6, 4));
  p.batch(3, LabelFormat::OneHot);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 2u);
  const Batch &b = batches[1];
  EXPECT_EQ(b.labelFormat, LabelFormat::OneHot);
  EXPECT_TRUE(b.sparseLabels.empty());
  EXPECT_EQ(b.oneHotLabels, (std::vector<float>{0, 0, 0, 1, //
                                                1, 0, 0, 0, //
                                                0, 1, 0, 0}));
}

//===-- map ---------------------------------------------------------------===//

TEST(PipelineTest, ParallelMapPreservesOrder) {
  const int64_t n = 400;
  Pipeline p(makeDataset(n));
  p.map(
       [](Example &e) {
         // Uneven work, so that workers finish out of order.
         std::this_thread::sleep_for(
             std::chrono::microseconds((e.index * 7919) % 5 == 0 ? 2000 : 50));
         for (float &x : e.image)
           x = 1.0f - x;
         return Status::ok();
       },
       4)
      .batch(8, LabelFormat::Sparse);
  std::vector<Batch> batches = collect(p);
  EXPECT_EQ(rowIndices(batches), iota(n));
  auto ds = makeDataset(n);
  for (const Batch &b : batches)
    for (int64_t r = 0; r < b.size; ++r)
      for (int j = 0; j < 4; ++j)
        EXPECT_EQ(b.images[r * 4 + j], 1.0f - ds->image(b.sourceIndices[r])[j]);
}

TEST(PipelineTest, MapMayChangeTheShape) {
  Pipeline p(makeDataset(8));
  p.map(
       [](Example &e) {
         float sum = 0;
         for (float x : e.image)
           sum += x;
         e.image.assign(1, sum / 4);
         return Status::ok();
       },
       2, ExampleShape{1, 1, 1})
      .batch(4, LabelFormat::Sparse);
  EXPECT_EQ(p.exampleShape(), (ExampleShape{1, 1, 1}));
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].images.size(), 4u);
  EXPECT_EQ(batches[0].shape, (ExampleShape{1, 1, 1}));
}

TEST(PipelineTest, MapThatChangesTheShapeUnannouncedFails) {
  Pipeline p(makeDataset(8));
  p.map([](Example &e) {
     e.image.resize(3);
     return Status::ok();
   }).batch(4, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("test-data: example 0 has 3 floats when "
                                     "it reaches batch(), a 2x2x1 example has "
                                     "4"));
}

TEST(PipelineTest, MapErrorReachesTheConsumerAndStays) {
  for (int threads : {1, 3}) {
    Pipeline p(makeDataset(100));
    p.map(
         [](Example &e) {
           if (e.index == 37)
             return Status::error("decode failed on example 37");
           return Status::ok();
         },
         threads)
        .batch(10, LabelFormat::Sparse)
        .prefetch(2);
    std::unique_ptr<BatchIterator> it;
    ASSERT_TRUE(p.open(it));
    Batch b;
    bool end = false;
    Status s;
    int good = 0;
    while ((s = it->next(b, end)) && !end)
      ++good;
    EXPECT_EQ(good, 3) << threads << " threads";
    ASSERT_FALSE(s);
    EXPECT_EQ(s.message(), "decode failed on example 37");
    Status again = it->next(b, end);
    EXPECT_EQ(again.message(), s.message());
  }
}

TEST(PipelineTest, MapExceptionBecomesAStatus) {
  Pipeline p(makeDataset(10));
  p.map([](Example &) -> Status { throw std::runtime_error("bad pixel"); }, 2)
      .batch(2, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("the map function threw: bad pixel"));
}

//===-- cache -------------------------------------------------------------===//

TEST(PipelineTest, CacheRunsAnExpensiveMapOnce) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Pipeline p(makeDataset(50));
  p.map(
       [calls](Example &e) {
         ++*calls;
         e.image[0] = 0.5f;
         return Status::ok();
       },
       2)
      .cache()
      .shuffle(50, 1)
      .repeat(3)
      .batch(5, LabelFormat::Sparse);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 30u);
  EXPECT_EQ(calls->load(), 50);
  for (const Batch &b : batches)
    for (int64_t r = 0; r < b.size; ++r)
      EXPECT_EQ(b.images[r * 4], 0.5f);
  std::vector<int64_t> all = rowIndices(batches);
  for (int e = 0; e < 3; ++e)
    EXPECT_EQ(sorted({all.begin() + 50 * e, all.begin() + 50 * (e + 1)}),
              iota(50));
  // The cache lives with the pipeline: opening it again maps nothing.
  collect(p);
  EXPECT_EQ(calls->load(), 50);
}

TEST(PipelineTest, CacheKeepsNothingFromAnAbandonedPass) {
  auto calls = std::make_shared<std::atomic<int>>(0);
  Pipeline p(makeDataset(40));
  p.map([calls](Example &) {
     ++*calls;
     return Status::ok();
   })
      .cache()
      .batch(10, LabelFormat::Sparse);
  EXPECT_EQ(collect(p, 1).size(), 1u); // destroyed mid-pass
  int partial = calls->load();
  EXPECT_LT(partial, 40);
  EXPECT_EQ(rowIndices(collect(p)), iota(40));
  EXPECT_EQ(calls->load(), partial + 40);
  EXPECT_EQ(rowIndices(collect(p)), iota(40));
  EXPECT_EQ(calls->load(), partial + 40);
}

TEST(PipelineTest, CacheAfterEndlessRepeatIsRejected) {
  Pipeline p(makeDataset(4));
  p.repeat().cache().batch(2, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("cache(): follows repeat() without end"));
}

//===-- prefetch and threads ----------------------------------------------===//

TEST(PipelineTest, PrefetchGivesTheSameBatchesInTheSameOrder) {
  auto ds = makeDataset(500);
  auto build = [&](int64_t prefetch) {
    Pipeline p(ds);
    p.shard(2, 1)
        .shuffle(64, 13)
        .repeat(3)
        .map(
            [](Example &e) {
              e.image[0] += 1.0f;
              return Status::ok();
            },
            3)
        .batch(16, LabelFormat::OneHot);
    if (prefetch)
      p.prefetch(prefetch);
    return collect(p);
  };
  std::vector<Batch> plain = build(0), prefetched = build(2);
  ASSERT_EQ(plain.size(), 750u / 16);
  ASSERT_EQ(prefetched.size(), plain.size());
  for (size_t k = 0; k < plain.size(); ++k) {
    EXPECT_EQ(prefetched[k].sourceIndices, plain[k].sourceIndices);
    EXPECT_EQ(prefetched[k].images, plain[k].images);
    EXPECT_EQ(prefetched[k].oneHotLabels, plain[k].oneHotLabels);
  }
}

/// Destroys `it` on another thread; false if that takes more than 10 s.
bool destroysPromptly(std::unique_ptr<BatchIterator> it) {
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  std::thread t([it = std::move(it), done]() mutable {
    it.reset();
    done->set_value();
  });
  if (finished.wait_for(10s) != std::future_status::ready) {
    t.detach(); // hung: leave it, the test fails
    return false;
  }
  t.join();
  return true;
}

TEST(PipelineTest, DestroyingWithAFullPrefetchQueueDoesNotHang) {
  Pipeline p(makeDataset(100));
  p.shuffle(50, 1).repeat().batch(10, LabelFormat::OneHot).prefetch(3);
  std::unique_ptr<BatchIterator> it;
  ASSERT_TRUE(p.open(it));
  Batch b;
  bool end = false;
  ASSERT_TRUE(it->next(b, end));
  std::this_thread::sleep_for(100ms); // the producer fills the queue, waits
  EXPECT_TRUE(destroysPromptly(std::move(it)));
}

TEST(PipelineTest, DestroyingMidEpochWithASlowParallelMapDoesNotHang) {
  Pipeline p(makeDataset(1000));
  p.map(
       [](Example &) {
         std::this_thread::sleep_for(1ms);
         return Status::ok();
       },
       4)
      .repeat()
      .batch(32, LabelFormat::Sparse)
      .prefetch(2);
  std::unique_ptr<BatchIterator> it;
  ASSERT_TRUE(p.open(it));
  Batch b;
  bool end = false;
  ASSERT_TRUE(it->next(b, end));
  EXPECT_TRUE(destroysPromptly(std::move(it)));
}

int threadsInProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto &entry :
       std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

TEST(PipelineTest, NoThreadOutlivesTheIterator) {
  if (!std::filesystem::exists("/proc/self/task"))
    GTEST_SKIP() << "no /proc/self/task to count threads with";
  int before = threadsInProcess();
  {
    Pipeline p(makeDataset(200));
    p.map([](Example &) { return Status::ok(); }, 4)
        .repeat()
        .batch(8, LabelFormat::Sparse)
        .prefetch(2);
    std::unique_ptr<BatchIterator> it;
    ASSERT_TRUE(p.open(it));
    Batch b;
    bool end = false;
    for (int k = 0; k < 5; ++k)
      ASSERT_TRUE(it->next(b, end));
    EXPECT_EQ(threadsInProcess(), before + 5); // 4 map workers, 1 prefetcher
  }
  EXPECT_EQ(threadsInProcess(), before);
}

//===-- description errors ------------------------------------------------===//

TEST(PipelineTest, DescriptionErrorsNameTheCallAndTheFault) {
  struct Case {
    std::function<void(Pipeline &)> build;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](Pipeline &p) { p.batch(0, LabelFormat::Sparse); },
       "batch(0): the batch size must be positive"},
      {[](Pipeline &p) { p.prefetch(2).batch(4, LabelFormat::Sparse); },
       "prefetch(2): comes before batch()"},
      {[](Pipeline &p) { p.batch(4, LabelFormat::Sparse).shuffle(10, 0); },
       "shuffle(10, 0): comes after batch()"},
      {[](Pipeline &p) { p.shuffle(0, 0).batch(4, LabelFormat::Sparse); },
       "shuffle(0, 0): the buffer size must be positive"},
      {[](Pipeline &p) { p.repeat(-2).batch(4, LabelFormat::Sparse); },
       "repeat(-2): the epoch count must be 0 or more"},
      {[](Pipeline &p) { p.shard(0, 0).batch(4, LabelFormat::Sparse); },
       "shard(0, 0): the worker count must be positive"},
      {[](Pipeline &p) { p.map(nullptr).batch(4, LabelFormat::Sparse); },
       "map(fn, 1): no function given"},
      {[](Pipeline &p) { p.shuffle(10, 0); }, "no batch()"},
  };
  for (const Case &c : cases) {
    Pipeline p(makeDataset(10));
    c.build(p);
    std::unique_ptr<BatchIterator> it;
    Status s = p.open(it);
    ASSERT_FALSE(s) << c.message;
    EXPECT_THAT(s.message(), HasSubstr("test-data: input pipeline: "));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
}

//===-- batchIndices ------------------------------------------------------===//

TEST(PipelineTest, BatchIndicesGivesBatchsOrderWithoutTheRows) {
  // Shuffled over several epochs: the positions are those batch() gives,
  // example for example, and no image or label is copied.
  auto ds = makeDataset(50);
  Pipeline full(ds), indices(ds);
  full.shuffle(7, 3).repeat(3).batch(8, LabelFormat::OneHot).prefetch(2);
  indices.shuffle(7, 3).repeat(3).batchIndices(8).prefetch(2);
  std::vector<Batch> a = collect(full), b = collect(indices);
  ASSERT_EQ(a.size(), 18u); // 150 examples, 6 dropped
  ASSERT_EQ(b.size(), a.size());
  EXPECT_EQ(rowIndices(b), rowIndices(a));
  for (const Batch &batch : b) {
    EXPECT_TRUE(batch.indicesOnly());
    EXPECT_EQ(batch.size, 8);
    EXPECT_TRUE(batch.images.empty());
    EXPECT_TRUE(batch.sparseLabels.empty());
    EXPECT_TRUE(batch.oneHotLabels.empty());
  }
  EXPECT_FALSE(a.front().indicesOnly());
}

TEST(PipelineTest, BatchIndicesAfterMapIsRefused) {
  Pipeline p(makeDataset(8));
  p.map([](Example &) { return Status::ok(); }).batchIndices(4);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("batchIndices(4): follows map()"));
}

TEST(PipelineTest, InvalidDatasetIsReported) {
  auto ds = makeDataset(5, 3);
  ds->labels[2] = 3;
  Pipeline p(ds);
  p.batch(1, LabelFormat::Sparse);
  Status s = firstError(p);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("test-data: label 3 of example 2 is outside [0, 3)"));

  Pipeline none(nullptr);
  none.batch(1, LabelFormat::Sparse);
  EXPECT_THAT(firstError(none).message(), HasSubstr("no dataset"));
}

//===-- a source without pixels -------------------------------------------===//

/// n examples without pixels, example i of label i mod numClasses.
std::shared_ptr<ExampleList> makeList(int64_t n, int32_t numClasses = 3) {
  auto list = std::make_shared<ExampleList>();
  list->name = "test-list";
  list->numClasses = numClasses;
  for (int64_t i = 0; i < n; ++i)
    list->labels.push_back(static_cast<int32_t>(i % numClasses));
  return list;
}

TEST(PipelineTest, AnExampleListHandsTheMapIndicesAndLabels) {
  Pipeline p(makeList(30));
  p.shuffle(30, 4)
      .repeat(2)
      .map(
          [](Example &e) {
            if (!e.image.empty())
              return Status::error("an example list's example has pixels");
            e.image.assign(2, static_cast<float>(e.index));
            return Status::ok();
          },
          3, ExampleShape{1, 2, 1})
      .batch(6, LabelFormat::Sparse)
      .prefetch(2);
  EXPECT_EQ(p.cardinality(), 10);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 10u);
  std::vector<int64_t> order = rowIndices(batches);
  EXPECT_EQ(sorted(std::vector<int64_t>(order.begin(), order.begin() + 30)),
            iota(30));
  for (const Batch &b : batches)
    for (int64_t r = 0; r < b.size; ++r) {
      EXPECT_EQ(b.images[2 * r], static_cast<float>(b.sourceIndices[r]));
      EXPECT_EQ(b.sparseLabels[r], b.sourceIndices[r] % 3);
    }
}

TEST(PipelineTest, AnExampleListNeedsAMapWithAShapeBeforeBatch) {
  auto identity = [](Example &) { return Status::ok(); };
  struct Case {
    std::function<void(Pipeline &)> build;
    std::string message;
  };
  std::vector<Case> cases = {
      {[](Pipeline &p) { p.shuffle(4, 0).batch(2, LabelFormat::Sparse); },
       "batch(2): the examples hold no pixels yet"},
      {[&](Pipeline &p) { p.map(identity, 2).batch(2, LabelFormat::Sparse); },
       "map(fn, 2): the examples hold no pixels yet"},
      {[](Pipeline &p) { p.batchIndices(2); },
       "batchIndices(2): the source is an example list"},
  };
  for (const Case &c : cases) {
    Pipeline p(makeList(8));
    c.build(p);
    Status s = firstError(p);
    ASSERT_FALSE(s) << c.message;
    EXPECT_THAT(s.message(), HasSubstr("test-list: input pipeline: "));
    EXPECT_THAT(s.message(), HasSubstr(c.message));
  }
  auto bad = makeList(4);
  bad->labels[1] = 5;
  Pipeline invalid(bad);
  EXPECT_THAT(firstError(invalid).message(),
              HasSubstr("test-list: label 5 of example 1 is outside [0, 3)"));
  Pipeline none{std::shared_ptr<const ExampleList>()};
  EXPECT_THAT(firstError(none).message(), HasSubstr("no example list"));
}

//===----------------------------------------------------------------------===//
// Padding the last batch (evaluation)
//===----------------------------------------------------------------------===//

TEST(PipelineTest, PadKeepsTheRemainderWithRowsThatWeighNothing) {
  Pipeline p(makeDataset(10));
  p.batch(4, LabelFormat::OneHot, Remainder::pad);
  EXPECT_EQ(p.cardinality(), 3);
  std::vector<Batch> batches = collect(p);
  ASSERT_EQ(batches.size(), 3u);
  for (size_t b = 0; b < 2; ++b) {
    EXPECT_EQ(batches[b].padding, 0);
    EXPECT_EQ(batches[b].sampleWeights, std::vector<float>(4, 1.0f));
  }
  const Batch &last = batches[2];
  EXPECT_EQ(last.size, 4);
  EXPECT_EQ(last.padding, 2);
  EXPECT_EQ(last.examples(), 2);
  EXPECT_EQ(last.sampleWeights, (std::vector<float>{1, 1, 0, 0}));
  EXPECT_EQ(last.sourceIndices, (std::vector<int64_t>{8, 9, -1, -1}));
  // The padding rows are zero images with all-zero one-hot labels.
  for (size_t k = 8; k < 16; ++k)
    EXPECT_EQ(last.images[k], 0.0f);
  for (size_t k = 20; k < 40; ++k)
    EXPECT_EQ(last.oneHotLabels[k], 0.0f);
  // A whole number of batches needs no padding batch.
  Pipeline whole(makeDataset(8));
  whole.batch(4, LabelFormat::Sparse, Remainder::pad);
  EXPECT_EQ(collect(whole).size(), 2u);
}

//===----------------------------------------------------------------------===//
// Opening at a batch (resume)
//===----------------------------------------------------------------------===//

/// A dataset that counts the examples its pipelines read.
struct CountingSource {
  std::shared_ptr<std::atomic<int64_t>> reads =
      std::make_shared<std::atomic<int64_t>>(0);
  MapFn counter() const {
    return [reads = reads](Example &) {
      ++*reads;
      return Status::ok();
    };
  }
};

/// The batches of `p` opened at `start`, `count` of them.
std::vector<std::vector<int64_t>> batchesFrom(const Pipeline &p, int64_t start,
                                              int64_t count) {
  std::vector<std::vector<int64_t>> out;
  std::unique_ptr<BatchIterator> it;
  Status s = p.open(it, start);
  EXPECT_TRUE(s) << s.message();
  if (!s)
    return out;
  for (int64_t k = 0; k < count; ++k) {
    Batch b;
    bool end = false;
    s = it->next(b, end);
    EXPECT_TRUE(s) << s.message();
    if (!s || end)
      break;
    out.push_back(b.sourceIndices);
  }
  return out;
}

/// Opening at batch k gives what a pass from the start gives after its
/// first k batches, for every composition a training run uses: across
/// epoch boundaries (50 examples, batches of 8), through shuffles that
/// have and have not filled their buffer, shards, a cache filled or not,
/// and a map.
TEST(PipelineTest, OpeningAtABatchContinuesTheOrderExactly) {
  auto ds = makeDataset(50);
  struct Case {
    const char *label;
    std::function<void(Pipeline &)> build;
  };
  const Case cases[] = {
      {"shuffle, repeat", [](Pipeline &p) { p.shuffle(16, 9).repeat(); }},
      {"shuffle buffer larger than the data",
       [](Pipeline &p) { p.shuffle(1000, 3).repeat(); }},
      {"shard, shuffle, repeat 4",
       [](Pipeline &p) { p.shard(3, 1).shuffle(7, 2).repeat(4); }},
      {"map, shuffle, repeat",
       [](Pipeline &p) {
         p.map([](Example &) { return Status::ok(); }, 2)
             .shuffle(5, 1)
             .repeat();
       }},
      {"cache, shuffle, repeat",
       [](Pipeline &p) { p.cache().shuffle(16, 4).repeat(); }},
      {"repeat, shuffle (across epochs)",
       [](Pipeline &p) { p.repeat(6).shuffle(20, 8); }},
      {"file order, repeat", [](Pipeline &p) { p.repeat(); }},
      {"shuffle, repeat 5, shardBatches (worker 1 of 3)",
       [](Pipeline &p) { p.shuffle(16, 9).repeat(5).shardBatches(24, 3, 1); }},
      {"shuffle, repeat, shardBatches (worker 0 of 2)",
       [](Pipeline &p) { p.shuffle(1000, 6).repeat().shardBatches(16, 2, 0); }},
  };
  for (const Case &c : cases) {
    Pipeline p(ds);
    c.build(p);
    p.batch(8, LabelFormat::Sparse).prefetch(2);
    std::vector<std::vector<int64_t>> whole = batchesFrom(p, 0, 30);
    for (int64_t k : {1, 5, 6, 7, 13, 20}) {
      std::vector<std::vector<int64_t>> resumed = batchesFrom(p, k, 30 - k);
      std::vector<std::vector<int64_t>> expected(
          whole.begin() + std::min<int64_t>(k, whole.size()), whole.end());
      EXPECT_EQ(resumed, expected) << c.label << ", from batch " << k;
    }
  }
}

/// Resuming reads no more examples late in a run than early: the shuffle
/// replays its draws on positions and reads only what its buffer holds
/// (here at most its 16 examples plus the batch), whatever the step.
TEST(PipelineTest, OpeningLateReadsNoMoreThanOpeningEarly) {
  CountingSource source;
  Pipeline p(makeDataset(1000));
  p.map(source.counter()).shuffle(16, 5).repeat().batch(8, LabelFormat::Sparse);
  // Batch 10 is 80 examples into the first epoch, batch 100003 is 24
  // examples into the 801st.
  for (int64_t start : {int64_t{10}, int64_t{100003}}) {
    *source.reads = 0;
    ASSERT_EQ(batchesFrom(p, start, 1).size(), 1u);
    EXPECT_LE(source.reads->load(), 16 + 8) << "opened at batch " << start;
  }
}

TEST(PipelineTest, OpeningPastTheEndEndsAtOnce) {
  Pipeline p(makeDataset(50));
  p.shuffle(16, 9).repeat(2).batch(8, LabelFormat::Sparse);
  EXPECT_TRUE(batchesFrom(p, 12, 5).empty());
  EXPECT_EQ(batchesFrom(p, 11, 5).size(), 1u); // 100 examples: 12 batches
}

} // namespace
} // namespace graph::runtime::data::test
