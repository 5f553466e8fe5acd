//===- Batch.cpp - a batch of examples and its split across replicas ------===//

#include "runtime/data/Batch.h"

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

} // namespace graph::runtime::data
