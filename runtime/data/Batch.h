//===- Batch.h - a batch and its split across replicas ----------*- C++ -*-===//
//
// The pipeline batches by the GLOBAL batch size: one batch feeds one training
// step of all the replicas in this process, and splitBatch hands replica r
// its contiguous rows, as in-graph replication splits dimension 0.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_BATCH_H
#define RUNTIME_DATA_BATCH_H

#include "runtime/base/Status.h"
#include "runtime/data/Dataset.h"

#include <cstdint>
#include <vector>

namespace graph::runtime::data {

/// How a batch holds its labels: what the loss of the model wants.
enum class LabelFormat {
  /// int32 [B]: class indices (sparse_categorical_crossentropy).
  Sparse,
  /// float32 [B, C]: one 1 per row (categorical_crossentropy).
  OneHot,
  /// float32 [B, W]: each example's targets as they are (the element-wise
  /// losses: binary cross-entropy, mean squared error, ...); W is the
  /// dataset's target width, numClasses.
  Dense,
};

struct Batch {
  /// Rows: B.
  int64_t size = 0;
  ExampleShape shape;
  int32_t numClasses = 0;
  LabelFormat labelFormat = LabelFormat::Sparse;
  /// float32 [B, H, W, C] in [0, 1] (after any map, whatever it produced).
  std::vector<float> images;
  /// int32 [B] when labelFormat is Sparse, else empty.
  std::vector<int32_t> sparseLabels;
  /// float32 [B, numClasses] when labelFormat is OneHot (one 1 a row) or
  /// Dense (the targets), else empty.
  std::vector<float> oneHotLabels;
  /// [B]: each row's position in the source dataset (-1 for padding).
  std::vector<int64_t> sourceIndices;
  /// Rows at the end that pad a last, partial batch (zero images, label 0)
  /// to the plan's static shape (Pipeline::batch with Remainder::pad); the
  /// first size - padding rows hold examples.
  int64_t padding = 0;
  /// float32 [B]: each row's Example::weight times its Example::scale (0 for
  /// padding). The steps weight each row's loss and its gradient by it.
  /// Empty: every row weighs 1.
  std::vector<float> sampleWeights;
  /// float32 [B]: each row's weight in the metrics, which Keras' compiled
  /// `metrics` (not `weighted_metrics`) take without the sample weights:
  /// the row's Example::scale for an example, 0 for padding. Empty: every
  /// row weighs 1.
  std::vector<float> metricWeights;
  /// The rows' Example::scale (one global batch's, the same for all).
  double weightScale = 1;

  /// A batch of positions only (Pipeline::batchIndices): no images or
  /// labels; whoever holds the dataset gathers the rows (--cache-on-device).
  bool indicesOnly() const { return images.empty() && !sourceIndices.empty(); }
  /// The rows that hold examples.
  int64_t examples() const { return size - padding; }
};

/// The parts of a batch a program takes as inputs.
enum class BatchPart { images, labels, sampleWeights, metricWeights };

/// Whether `part` is one of the per-row weights (from the host even when a
/// device gathers the rows of a cached dataset).
inline bool isWeights(BatchPart part) {
  return part == BatchPart::sampleWeights || part == BatchPart::metricWeights;
}

/// Rows [firstRow, firstRow + rows) of a batch, pointing into it: a replica
/// copies them to its device straight from the batch. Label pointers follow
/// the batch's label format; the other is null.
struct BatchSlice {
  int64_t firstRow = 0;
  int64_t rows = 0;
  /// float32 [rows, H, W, C].
  const float *images = nullptr;
  /// int32 [rows], or null.
  const int32_t *sparseLabels = nullptr;
  /// float32 [rows, numClasses] (one-hot or Dense targets), or null.
  const float *oneHotLabels = nullptr;
  /// [rows]: the rows' positions in the source dataset. For a batch of
  /// indices only, the other pointers are null.
  const int64_t *sourceIndices = nullptr;
  /// float32 [rows], or null when the batch has none (every row weighs 1).
  const float *sampleWeights = nullptr;
  /// float32 [rows], or null (every row weighs 1).
  const float *metricWeights = nullptr;

  /// The labels, whichever format they are in.
  const void *labels() const {
    return sparseLabels ? static_cast<const void *>(sparseLabels)
                        : static_cast<const void *>(oneHotLabels);
  }
  /// The data of `part`.
  const void *data(BatchPart part) const {
    switch (part) {
    case BatchPart::images:
      return images;
    case BatchPart::labels:
      return labels();
    case BatchPart::sampleWeights:
      return sampleWeights;
    case BatchPart::metricWeights:
      return metricWeights;
    }
    return nullptr;
  }
};

/// Splits `batch` across `replicas`: slice r holds rows
/// [r * B / N, (r + 1) * B / N). Fails when N is not positive or does not
/// divide B (replicas run one program, so they take equal shares). The
/// slices are valid while `batch` lives and is not modified.
Status splitBatch(const Batch &batch, int64_t replicas,
                  std::vector<BatchSlice> &out);

/// Checks that every index of a batch of indices lies in [0, `examples`):
/// a gather on a device must never read outside the dataset it holds.
Status checkSourceIndices(const Batch &batch, int64_t examples);

/// Writes the examples at `indices[0..rows)` of `dataset` as a batch's
/// rows: images float32 [rows, H, W, C]; labels int32 [rows] (Sparse) or
/// float32 [rows, numClasses] (OneHot). The host form of what a device
/// holding the dataset does; the indices must be in range. A null
/// `labelsOut` skips the labels.
void gatherExamples(const Dataset &dataset, const int64_t *indices,
                    int64_t rows, LabelFormat labels, float *images,
                    void *labelsOut);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_BATCH_H
