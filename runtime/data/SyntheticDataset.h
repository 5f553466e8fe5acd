//===- SyntheticDataset.h - random examples for benchmarks ------*- C++ -*-===//
//
// Benchmarks and tests that must not depend on files on disk train on
// synthetic examples: pixels uniform in [0, 1) and labels uniform over the
// classes, each a pure function of (seed, example index), so every run,
// every worker and every machine sees the same data for a seed.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_SYNTHETICDATASET_H
#define RUNTIME_DATA_SYNTHETICDATASET_H

#include "runtime/base/Status.h"
#include "runtime/data/Dataset.h"

#include <cstdint>

namespace graph::runtime::data {

struct SyntheticDatasetOptions {
  int64_t numExamples = 60000;
  ExampleShape shape = {28, 28, 1};
  int32_t numClasses = 10;
  uint64_t seed = 0;
};

/// Fills `out` with options.numExamples deterministic random examples; fails
/// on a non-positive count, shape or class count.
Status makeSyntheticDataset(const SyntheticDatasetOptions &options,
                            Dataset &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_SYNTHETICDATASET_H
