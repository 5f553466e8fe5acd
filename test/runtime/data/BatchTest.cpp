//===- BatchTest.cpp - splitting a global batch across replicas -----------===//

#include "runtime/data/Batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace graph::runtime::data::test {
namespace {

using ::testing::HasSubstr;

/// B rows of shape 1x1x2 whose pixels are (10 r, 10 r + 1), labels r mod 3.
Batch makeBatch(int64_t rows, LabelFormat format) {
  Batch b;
  b.size = rows;
  b.shape = {1, 1, 2};
  b.numClasses = 3;
  b.labelFormat = format;
  for (int64_t r = 0; r < rows; ++r) {
    b.images.push_back(10.0f * r);
    b.images.push_back(10.0f * r + 1);
    b.sourceIndices.push_back(r);
    int32_t label = static_cast<int32_t>(r % 3);
    if (format == LabelFormat::Sparse) {
      b.sparseLabels.push_back(label);
    } else {
      for (int c = 0; c < 3; ++c)
        b.oneHotLabels.push_back(c == label ? 1.0f : 0.0f);
    }
  }
  return b;
}

TEST(SplitBatchTest, ReplicaRGetsItsContiguousRows) {
  Batch b = makeBatch(8, LabelFormat::Sparse);
  std::vector<BatchSlice> slices;
  Status s = splitBatch(b, 4, slices);
  ASSERT_TRUE(s) << s.message();
  ASSERT_EQ(slices.size(), 4u);
  for (int64_t r = 0; r < 4; ++r) {
    const BatchSlice &sl = slices[r];
    EXPECT_EQ(sl.firstRow, 2 * r);
    EXPECT_EQ(sl.rows, 2);
    // Rows [2r, 2r + 2): first pixel of each row is 10 * row.
    EXPECT_EQ(sl.images[0], 10.0f * (2 * r));
    EXPECT_EQ(sl.images[2], 10.0f * (2 * r + 1));
    EXPECT_EQ(sl.sparseLabels[0], (2 * r) % 3);
    EXPECT_EQ(sl.sparseLabels[1], (2 * r + 1) % 3);
    EXPECT_EQ(sl.oneHotLabels, nullptr);
  }
}

TEST(SplitBatchTest, OneHotLabelsFollowTheRows) {
  Batch b = makeBatch(6, LabelFormat::OneHot);
  std::vector<BatchSlice> slices;
  ASSERT_TRUE(splitBatch(b, 2, slices));
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[1].firstRow, 3);
  EXPECT_EQ(slices[1].sparseLabels, nullptr);
  // Row 3 has label 0, row 4 label 1.
  EXPECT_EQ(slices[1].oneHotLabels[0], 1.0f);
  EXPECT_EQ(slices[1].oneHotLabels[3 + 1], 1.0f);
  EXPECT_EQ(slices[1].images, b.images.data() + 3 * 2);
}

TEST(SplitBatchTest, OneReplicaTakesTheWholeBatch) {
  Batch b = makeBatch(5, LabelFormat::Sparse);
  std::vector<BatchSlice> slices;
  ASSERT_TRUE(splitBatch(b, 1, slices));
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0].rows, 5);
  EXPECT_EQ(slices[0].images, b.images.data());
}

TEST(SplitBatchTest, ReplicasMustDivideTheBatch) {
  Batch b = makeBatch(256, LabelFormat::Sparse);
  std::vector<BatchSlice> slices;
  Status s = splitBatch(b, 3, slices);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("splitting a batch of 256 across 3 replicas: 3 does "
                        "not divide 256"));
  s = splitBatch(b, 0, slices);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(), HasSubstr("must be positive"));
}

TEST(SplitBatchTest, ABatchOfIndicesSplitsItsIndicesOnly) {
  Batch b;
  b.size = 6;
  b.sourceIndices = {5, 4, 3, 2, 1, 0};
  ASSERT_TRUE(b.indicesOnly());
  std::vector<BatchSlice> slices;
  ASSERT_TRUE(splitBatch(b, 2, slices));
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[1].sourceIndices, b.sourceIndices.data() + 3);
  EXPECT_EQ(slices[1].rows, 3);
  EXPECT_EQ(slices[1].images, nullptr);
  EXPECT_EQ(slices[1].sparseLabels, nullptr);
  EXPECT_EQ(slices[1].oneHotLabels, nullptr);
}

/// 4 examples of shape 1x1x2: example i is (i, -i), label 2 - i mod 3.
Dataset makeDataset() {
  Dataset ds;
  ds.name = "four";
  ds.shape = {1, 1, 2};
  ds.numClasses = 3;
  for (int i = 0; i < 4; ++i) {
    ds.images.push_back(static_cast<float>(i));
    ds.images.push_back(-static_cast<float>(i));
    ds.labels.push_back((2 - i % 3 + 3) % 3);
  }
  return ds;
}

TEST(GatherExamplesTest, WritesTheNamedRowsInBothLabelFormats) {
  Dataset ds = makeDataset();
  const int64_t indices[] = {3, 0, 3};
  std::vector<float> images(6, -99.0f);
  std::vector<int32_t> sparse(3, -1);
  gatherExamples(ds, indices, 3, LabelFormat::Sparse, images.data(),
                 sparse.data());
  EXPECT_EQ(images, (std::vector<float>{3, -3, 0, 0, 3, -3}));
  EXPECT_EQ(sparse, (std::vector<int32_t>{2, 2, 2}));

  // One-hot rows are written whole: stale values are cleared.
  std::vector<float> oneHot(9, 7.0f);
  const int64_t others[] = {1, 2, 0};
  gatherExamples(ds, others, 3, LabelFormat::OneHot, images.data(),
                 oneHot.data());
  EXPECT_EQ(images, (std::vector<float>{1, -1, 2, -2, 0, 0}));
  EXPECT_EQ(oneHot, (std::vector<float>{0, 1, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(GatherExamplesTest, IndicesOutsideTheDatasetAreNamed) {
  Batch b;
  b.size = 3;
  b.sourceIndices = {0, 4, 1};
  ASSERT_TRUE(checkSourceIndices(b, 5));
  Status s = checkSourceIndices(b, 4);
  ASSERT_FALSE(s);
  EXPECT_THAT(s.message(),
              HasSubstr("row 1 of the batch names example 4, outside the "
                        "cached dataset's [0, 4)"));
  b.sourceIndices = {-1, 0, 0};
  EXPECT_FALSE(checkSourceIndices(b, 4));
  b.sourceIndices = {0, 0};
  EXPECT_THAT(checkSourceIndices(b, 4).message(),
              HasSubstr("3 rows has 2 source indices"));
}

} // namespace
} // namespace graph::runtime::data::test
