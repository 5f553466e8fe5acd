//===- FashionMnistTest.cpp - the real dataset, and a fake directory ------===//

#include "runtime/data/FashionMnist.h"

#include "runtime/data/Pipeline.h"

#include "IdxFileWriter.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

bool haveFashionMnist() {
  return std::filesystem::is_directory(kFashionMnistDefaultDir);
}

#define SKIP_WITHOUT_FASHION_MNIST()                                           \
  if (!haveFashionMnist())                                                     \
  GTEST_SKIP() << kFashionMnistDefaultDir                                      \
               << " is absent: install Debian's dataset-fashion-mnist to run " \
                  "this test"

void expectFashionMnistSplit(const Dataset &ds, int64_t examples) {
  EXPECT_EQ(ds.size(), examples);
  EXPECT_EQ(ds.shape, (ExampleShape{28, 28, 1}));
  EXPECT_EQ(ds.numClasses, 10);
  ASSERT_EQ(static_cast<int64_t>(ds.images.size()), examples * 28 * 28);
  auto [lo, hi] = std::minmax_element(ds.images.begin(), ds.images.end());
  EXPECT_EQ(*lo, 0.0f);
  EXPECT_EQ(*hi, 1.0f);
  // Fashion-MNIST is balanced: every class has a tenth of each split.
  std::vector<int64_t> perClass(10, 0);
  for (int32_t label : ds.labels) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 10);
    ++perClass[label];
  }
  for (int c = 0; c < 10; ++c)
    EXPECT_EQ(perClass[c], examples / 10) << "class " << c;
}

TEST(FashionMnistTest, LoadsTrainSet) {
  SKIP_WITHOUT_FASHION_MNIST();
  Dataset ds;
  Status s =
      loadFashionMnist(kFashionMnistDefaultDir, FashionMnistSplit::Train, ds);
  ASSERT_TRUE(s) << s.message();
  expectFashionMnistSplit(ds, 60000);
  // The first training image is an ankle boot, as every Keras tutorial shows.
  EXPECT_EQ(ds.labels[0], 9);
  EXPECT_STREQ(fashionMnistClassNames()[ds.labels[0]], "Ankle boot");
}

TEST(FashionMnistTest, LoadsTestSet) {
  SKIP_WITHOUT_FASHION_MNIST();
  Dataset ds;
  Status s =
      loadFashionMnist(kFashionMnistDefaultDir, FashionMnistSplit::Test, ds);
  ASSERT_TRUE(s) << s.message();
  expectFashionMnistSplit(ds, 10000);
  EXPECT_EQ(ds.labels[0], 9);
}

/// The seed's input pipeline, timed: load the train set, then one epoch of
/// dataset.shuffle(5000).batch(256).prefetch(2) (Keras' fit pulls 234 full
/// batches an epoch). Prints the time it takes.
TEST(FashionMnistTest, OneTrainEpochAtBatch256) {
  SKIP_WITHOUT_FASHION_MNIST();
  using Clock = std::chrono::steady_clock;
  auto t0 = Clock::now();
  auto train = std::make_shared<Dataset>();
  Status s = loadFashionMnist(kFashionMnistDefaultDir, FashionMnistSplit::Train,
                              *train);
  ASSERT_TRUE(s) << s.message();
  auto t1 = Clock::now();

  Pipeline p(train);
  p.shuffle(5000, 42).repeat(1).batch(256, LabelFormat::OneHot).prefetch(2);
  EXPECT_EQ(p.cardinality(), 234);
  std::unique_ptr<BatchIterator> it;
  s = p.open(it);
  ASSERT_TRUE(s) << s.message();
  int64_t batches = 0;
  double checksum = 0;
  for (;;) {
    Batch b;
    bool end = false;
    s = it->next(b, end);
    ASSERT_TRUE(s) << s.message();
    if (end)
      break;
    ASSERT_EQ(b.images.size(), 256u * 28 * 28);
    checksum += b.images[0] + b.oneHotLabels[0];
    ++batches;
  }
  it.reset();
  auto t2 = Clock::now();
  EXPECT_EQ(batches, 234);
  auto ms = [](auto d) {
    return std::chrono::duration<double, std::milli>(d).count();
  };
  std::printf("[ timing   ] Fashion-MNIST train: load %.0f ms, one epoch "
              "(shuffle 5000, batch 256, prefetch 2, %lld batches) %.0f ms, "
              "total %.0f ms (checksum %.3f)\n",
              ms(t1 - t0), static_cast<long long>(batches), ms(t2 - t1),
              ms(t2 - t0), checksum);
  RecordProperty("load_ms", static_cast<int>(ms(t1 - t0)));
  RecordProperty("epoch_ms", static_cast<int>(ms(t2 - t1)));
}

class FashionMnistDirectoryTest : public TempDirTest {};

TEST_F(FashionMnistDirectoryTest, LoadsUncompressedFiles) {
  std::vector<uint8_t> pixels(2 * 28 * 28, 255);
  writeRaw(path("t10k-images-idx3-ubyte"), idxBytes({2, 28, 28}, pixels));
  writeRaw(path("t10k-labels-idx1-ubyte"), idxBytes({2}, {3, 4}));
  Dataset ds;
  Status s = loadFashionMnist(dir_.string(), FashionMnistSplit::Test, ds);
  ASSERT_TRUE(s) << s.message();
  EXPECT_EQ(ds.size(), 2);
  EXPECT_EQ(ds.labels, (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(ds.name, path("t10k-images-idx3-ubyte"));
}

TEST_F(FashionMnistDirectoryTest, MissingFileNamesBothCandidates) {
  writeRaw(path("train-images-idx3-ubyte"),
           idxBytes({1, 28, 28}, std::vector<uint8_t>(28 * 28)));
  Dataset ds;
  Status s = loadFashionMnist(dir_.string(), FashionMnistSplit::Train, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr(dir_.string() +
                                     ": neither train-labels-idx1-ubyte.gz nor "
                                     "train-labels-idx1-ubyte is there"));
  EXPECT_THAT(s.message(), HasSubstr("dataset-fashion-mnist"));
}

TEST(FashionMnistErrorTest, MissingDirectory) {
  Dataset ds;
  Status s = loadFashionMnist("/nonexistent/fashion-mnist",
                              FashionMnistSplit::Train, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("/nonexistent/fashion-mnist: no such directory"));
  EXPECT_THAT(s.message(), HasSubstr("--data-dir"));
}

} // namespace
} // namespace graph::runtime::data::test
