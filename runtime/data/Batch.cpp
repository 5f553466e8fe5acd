//===- Batch.cpp - a batch of examples and its split across replicas ------===//

#include "runtime/data/Batch.h"

#include <algorithm>
#include <cstring>

namespace graph::runtime::data {

Status splitBatch(const Batch &batch, int64_t replicas,
                  std::vector<BatchSlice> &out) {
  if (replicas <= 0)
    return Status::error("splitting a batch across " +
                         std::to_string(replicas) +
                         " replicas: the replica count must be positive");
  if (batch.size % replicas != 0)
    return Status::error(
        "splitting a batch of " + std::to_string(batch.size) + " across " +
        std::to_string(replicas) + " replicas: " + std::to_string(replicas) +
        " does not divide " + std::to_string(batch.size) +
        "; choose a global batch size that is a multiple of the replica "
        "count");
  const int64_t rows = batch.size / replicas;
  const int64_t elements = batch.shape.elements();
  std::vector<BatchSlice> slices(replicas);
  for (int64_t r = 0; r < replicas; ++r) {
    BatchSlice &s = slices[r];
    s.firstRow = r * rows;
    s.rows = rows;
    if (!batch.sourceIndices.empty())
      s.sourceIndices = batch.sourceIndices.data() + s.firstRow;
    // The weights come from the host even when a device gathers the rows.
    if (!batch.sampleWeights.empty())
      s.sampleWeights = batch.sampleWeights.data() + s.firstRow;
    if (!batch.metricWeights.empty())
      s.metricWeights = batch.metricWeights.data() + s.firstRow;
    if (batch.indicesOnly())
      continue;
    s.images = batch.images.data() + s.firstRow * elements;
    if (batch.labelFormat == LabelFormat::Sparse)
      s.sparseLabels = batch.sparseLabels.data() + s.firstRow;
    else
      s.oneHotLabels =
          batch.oneHotLabels.data() + s.firstRow * batch.numClasses;
  }
  out = std::move(slices);
  return Status::ok();
}

Status checkSourceIndices(const Batch &batch, int64_t examples) {
  if (static_cast<int64_t>(batch.sourceIndices.size()) != batch.size)
    return Status::error(
        "a batch of " + std::to_string(batch.size) + " rows has " +
        std::to_string(batch.sourceIndices.size()) + " source indices");
  for (int64_t row = 0; row < batch.size; ++row) {
    int64_t i = batch.sourceIndices[row];
    if (i < 0 || i >= examples)
      return Status::error("row " + std::to_string(row) +
                           " of the batch names example " + std::to_string(i) +
                           ", outside the cached dataset's [0, " +
                           std::to_string(examples) + ")");
  }
  return Status::ok();
}

void gatherExamples(const Dataset &dataset, const int64_t *indices,
                    int64_t rows, LabelFormat labels, float *images,
                    void *labelsOut) {
  const int64_t elements = dataset.shape.elements();
  for (int64_t row = 0; row < rows; ++row)
    std::memcpy(images + row * elements, dataset.image(indices[row]),
                static_cast<size_t>(elements) * sizeof(float));
  if (!labelsOut)
    return;
  if (labels == LabelFormat::Sparse) {
    auto *out = static_cast<int32_t *>(labelsOut);
    for (int64_t row = 0; row < rows; ++row)
      out[row] = dataset.labels[indices[row]];
    return;
  }
  auto *out = static_cast<float *>(labelsOut);
  const int64_t classes = dataset.numClasses;
  if (labels == LabelFormat::Dense) {
    for (int64_t row = 0; row < rows; ++row)
      std::memcpy(out + row * classes, dataset.target(indices[row]),
                  static_cast<size_t>(classes) * sizeof(float));
    return;
  }
  std::fill(out, out + rows * classes, 0.0f);
  for (int64_t row = 0; row < rows; ++row)
    out[row * classes + dataset.labels[indices[row]]] = 1.0f;
}

} // namespace graph::runtime::data
