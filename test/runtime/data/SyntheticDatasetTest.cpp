//===- SyntheticDatasetTest.cpp - deterministic random examples -----------===//

#include "runtime/data/SyntheticDataset.h"

#include "runtime/data/Pipeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

TEST(SyntheticDatasetTest, DeterministicForASeed) {
  SyntheticDatasetOptions options{
      .numExamples = 1000, .shape = {8, 8, 3}, .numClasses = 5, .seed = 17};
  Dataset a, b, c;
  ASSERT_TRUE(makeSyntheticDataset(options, a));
  ASSERT_TRUE(makeSyntheticDataset(options, b));
  options.seed = 18;
  ASSERT_TRUE(makeSyntheticDataset(options, c));
  EXPECT_EQ(a.images, b.images);
  EXPECT_EQ(a.labels, b.labels);
  EXPECT_NE(a.images, c.images);
  EXPECT_NE(a.labels, c.labels);
  EXPECT_TRUE(a.validate());
}

TEST(SyntheticDatasetTest, ShapeRangeAndClassBalance) {
  Dataset ds;
  ASSERT_TRUE(makeSyntheticDataset({}, ds)); // Fashion-MNIST's shape
  EXPECT_EQ(ds.size(), 60000);
  EXPECT_EQ(ds.shape, (ExampleShape{28, 28, 1}));
  auto [lo, hi] = std::minmax_element(ds.images.begin(), ds.images.end());
  EXPECT_GE(*lo, 0.0f);
  EXPECT_LT(*hi, 1.0f);
  std::vector<int> perClass(10, 0);
  for (int32_t label : ds.labels)
    ++perClass[label];
  for (int count : perClass) // 6000 expected, sd ~ 73
    EXPECT_NEAR(count, 6000, 400);
}

TEST(SyntheticDatasetTest, FeedsAPipeline) {
  auto ds = std::make_shared<Dataset>();
  ASSERT_TRUE(makeSyntheticDataset({.numExamples = 512}, *ds));
  Pipeline p(ds);
  p.shuffle(128, 0).batch(256, LabelFormat::OneHot).prefetch(1);
  std::unique_ptr<BatchIterator> it;
  ASSERT_TRUE(p.open(it));
  Batch b;
  bool end = false;
  int batches = 0;
  while (it->next(b, end) && !end)
    ++batches;
  EXPECT_EQ(batches, 2);
}

TEST(SyntheticDatasetTest, RejectsBadOptions) {
  Dataset ds;
  Status s = makeSyntheticDataset({.numExamples = 0}, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("synthetic data: 0 examples"));
  s = makeSyntheticDataset({.shape = {28, 0, 1}}, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("example shape 28x0x1 is not positive"));
  s = makeSyntheticDataset({.numClasses = 0}, ds);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("0 classes"));
}

} // namespace
} // namespace graph::runtime::data::test
