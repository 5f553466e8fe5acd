//===- SyntheticDataset.cpp - random examples for benchmarks --------------===//

#include "runtime/data/SyntheticDataset.h"

#include "runtime/data/SplitMix64.h"

namespace graph::runtime::data {

Status makeSyntheticDataset(const SyntheticDatasetOptions &options,
                            Dataset &out) {
  const ExampleShape &shape = options.shape;
  if (options.numExamples <= 0)
    return Status::error(
        "synthetic data: " + std::to_string(options.numExamples) +
        " examples; ask for at least one");
  if (!shape.positive())
    return Status::error("synthetic data: example shape " + shape.str() +
                         " is not positive; give every dimension a size");
  if (options.numClasses <= 0)
    return Status::error(
        "synthetic data: " + std::to_string(options.numClasses) +
        " classes; ask for at least one");
  Dataset ds;
  ds.name = "synthetic data (seed " + std::to_string(options.seed) + ")";
  ds.shape = shape;
  ds.numClasses = options.numClasses;
  const int64_t elements = shape.elements();
  ds.images.resize(options.numExamples * elements);
  ds.labels.resize(options.numExamples);
  for (int64_t i = 0; i < options.numExamples; ++i) {
    // One generator per example: example i does not depend on how many
    // came before it, so a shard could make its own examples alone.
    SplitMix64 rng(mixSeed(options.seed, static_cast<uint64_t>(i)));
    ds.labels[i] = static_cast<int32_t>(rng.below(options.numClasses));
    float *image = ds.images.data() + i * elements;
    for (int64_t j = 0; j < elements; ++j)
      image[j] = rng.unitFloat();
  }
  out = std::move(ds);
  return Status::ok();
}

} // namespace graph::runtime::data
