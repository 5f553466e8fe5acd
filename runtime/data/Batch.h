//===- Batch.h - a batch and its split across replicas ----------*- C++ -*-===//
//
// The pipeline batches by the GLOBAL batch size: one batch feeds one training
// step of all the replicas in this process, and splitBatch hands replica r
// its contiguous rows, as in-graph replication splits dimension 0.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_BATCH_H
#define RUNTIME_DATA_BATCH_H

#include "runtime/core/Status.h"
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
  /// float32 [B, numClasses] when labelFormat is OneHot, else empty.
  std::vector<float> oneHotLabels;
  /// [B]: each row's position in the source dataset.
  std::vector<int64_t> sourceIndices;
};

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
  /// float32 [rows, numClasses], or null.
  const float *oneHotLabels = nullptr;
};

/// Splits `batch` across `replicas`: slice r holds rows
/// [r * B / N, (r + 1) * B / N). Fails when N is not positive or does not
/// divide B (replicas run one program, so they take equal shares). The
/// slices are valid while `batch` lives and is not modified.
Status splitBatch(const Batch &batch, int64_t replicas,
                  std::vector<BatchSlice> &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_BATCH_H
