//===- ArraysDataset.h - a model's examples from NumPy or CSV ---*- C++ -*-===//
//
// Keras' `fit(x, y)` takes arrays; graphrun takes them from files:
//
//   arrays:FILE.npz        np.savez / np.savez_compressed, arrays named `x`
//                          and `y`, or x named after the model's input layer
//                          (Keras' dict form); y may also be the one array
//                          besides x
//   arrays:X.npy,Y.npy     the pair as two .npy files
//   csv:FILE               a header row and numeric columns; the labels are
//                          --label-columns, the features the rest (or
//                          --feature-columns)
//   memory:NAME            arrays already in this process's memory (the
//                          Python module's fit(x, y)), registered under
//                          NAME in ArraysOptions::inMemory, picked as an
//                          .npz's members are
//
// x holds one row per example of exactly the model input's shape, of any
// numeric type (converted to float32, values as they are: Keras does not
// rescale either); y holds class indices, [N] or [N, 1], or one-hot rows
// [N, C] (under categorical cross-entropy also rows of class probabilities,
// soft labels, kept as the Dataset's targets), or, for a loss that
// compares predictions with targets (binary
// cross-entropy, mean squared error, ...), targets of the model output's
// shape. An array named sample_weight, (N,) or (N, 1), weighs each
// example as Keras' sample_weight does. Everything is checked before the
// first step, with errors that name the file, the array and the expected
// shape.
//
// Arrays that fit in memory become a Dataset (converted once; --cache and
// --cache-on-device work as for the IDX files). A larger .npy stays
// memory-mapped: the pipeline then carries indices and labels, and a map
// stage converts each example's row from the mapping as the step needs it,
// so a file many times the memory trains with little resident memory.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_ARRAYSDATASET_H
#define RUNTIME_DATA_ARRAYSDATASET_H

#include "runtime/base/Status.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/NumpyArray.h"
#include "runtime/data/Pipeline.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime::data {

/// Examples left in a memory-mapped array: labels in memory, features
/// converted per example by loader().
struct MappedExamples {
  std::shared_ptr<const ExampleList> list;
  std::shared_ptr<const NumpyArray> features;
  ExampleShape shape;
  /// Example i is row firstRow + i of the array (a validation split's
  /// examples are the array's last rows).
  int64_t firstRow = 0;
  /// The map that fills an example's features from row Example::index.
  MapFn loader() const;
};

/// Arrays in memory by the name a memory:NAME spec gives: each set is
/// picked from as an .npz's members are (x, y, or x named after the input).
using InMemoryArrays = std::map<std::string, std::vector<NumpyArray>>;

struct ArraysOptions {
  /// The model's input: its name (an .npz array may carry it) and the shape
  /// of one example.
  std::string inputName;
  ExampleShape shape;
  /// The classes of one-hot labels (0: class indices; their count is the
  /// largest label + 1).
  int32_t classes = 0;
  /// With a loss that compares predictions with targets (binary
  /// cross-entropy, mean squared error, ...): the shape of one example's
  /// targets, the model output's. y is then taken as float targets of this
  /// shape ((N,) for (1,) too, as Keras expands it). Empty: class labels.
  ExampleShape targetShape;
  /// csv: the label columns, and the feature columns (empty: every other).
  std::vector<std::string> labelColumns;
  std::vector<std::string> featureColumns;
  /// Whether labels must be there (not for --predict).
  bool needsLabels = true;
  /// What memory:NAME specs name (null: none).
  std::shared_ptr<const InMemoryArrays> inMemory;
  /// A model of several inputs: each one's name and example shape, in the
  /// plan's order. Each is then an array named after it (an .npz member,
  /// or in memory), and an example's features are their rows one after
  /// another (`shape` is their elements, flat), in memory. Empty: one
  /// input, `inputName`.
  std::vector<std::pair<std::string, ExampleShape>> inputs;
  /// Features up to this many bytes (as float32) are converted into memory;
  /// above it a .npy stays mapped.
  int64_t inMemoryBytes = int64_t(1) << 30;
  /// SparseCategoricalCrossentropy's ignore_class: a label y may hold
  /// outside the classes.
  std::optional<int64_t> ignoreClass;
  /// The loss is categorical cross-entropy, which takes rows of class
  /// probabilities as Keras' does (soft labels: mixup, distillation, label
  /// distributions), not one-hot rows alone: y rows that are not one-hot
  /// become the Dataset's targets, their labels the arg-max.
  bool softLabels = false;

  /// One output of a model of several, and what its labels are.
  struct Output {
    std::string name;
    enum class Kind { indices, oneHot, targets } kind = Kind::targets;
    /// Targets: one example's (the output's shape). One-hot: [classes].
    /// Indices: [1].
    ExampleShape shape;
    /// Indices and one-hot rows: the classes the loss predicts.
    int32_t classes = 0;
    std::optional<int64_t> ignoreClass;
  };
  /// A model of several outputs: each one, in the plan's order. Each is
  /// then an array named after it (Keras' dict form of y, an .npz member or
  /// in memory), and an example's targets are their rows one after
  /// another (Dataset::targets; a class index is one float). Empty: one
  /// output, y.
  std::vector<Output> outputs;
};

/// Whether `spec` names arrays (arrays:..., memory:...) or a CSV file
/// (csv:...).
bool isArraysSpec(const std::string &spec);

/// Opens the arrays or the CSV file `spec` names. Sets `memory`, or for
/// features too large for memory `mapped`; and `weights` (one per example)
/// when the arrays hold one named sample_weight (Keras' fit(...,
/// sample_weight=...)).
Status openArrays(const std::string &spec, const ArraysOptions &options,
                  std::shared_ptr<const Dataset> &memory,
                  std::optional<MappedExamples> &mapped,
                  std::shared_ptr<const std::vector<float>> &weights);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_ARRAYSDATASET_H
