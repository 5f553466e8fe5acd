//===- DataSource.h - the data a flag names, opened --------------*- C++
//-*-===//
//
// graphrun's --data, --eval-data and --predict name their data by a spec:
// `fashion_mnist` (the IDX files), `synthetic`, `images:DIR` (a folder of
// JPEG files per class), `arrays:FILE.npz`, `arrays:X.npy,Y.npy` or
// `csv:FILE` (ArraysDataset.h). openDataSource() turns a spec into a
// DataSource: examples in memory, or examples listed up front (an image
// folder, a memory-mapped array) whose features a map of the pipeline
// makes, ahead of the step.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_DATASOURCE_H
#define RUNTIME_DATA_DATASOURCE_H

#include "runtime/base/Status.h"
#include "runtime/data/ArraysDataset.h"
#include "runtime/data/Dataset.h"
#include "runtime/data/ImageFolder.h"
#include "runtime/data/Pipeline.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// What opening a spec takes from the job's flags.
struct DataSourceOptions {
  /// fashion_mnist: the folder of the IDX files (empty: Debian's).
  std::string dataDir;
  /// synthetic: the seed its examples are drawn from.
  uint64_t seed = 0;
  /// Image folders: unit ([0, 1]), caffe, tf ([-1, 1]), torch or raw
  /// ([0, 255]) pixels (ImagePreprocessing).
  std::string preprocess = "unit";
  /// Image folders: half-pixel or legacy bilinear resize.
  std::string resize = "half-pixel";
  bool skipBadImages = false;
  /// Image folders: DCT scaling where the input allows (ImageFolder.h),
  /// instead of a full decode as TensorFlow's: faster on large files, not
  /// TF's pixels.
  bool fastDecode = false;
  /// Image folders and mapped arrays: the map's threads (0: one per core).
  int decodeThreads = 0;
  /// arrays: and csv: (the model input's name, its labels, the columns,
  /// what is held in memory); its `shape` is openDataSource's.
  ArraysOptions arrays;
};

/// Whether `spec` names an image folder (images:DIR).
bool isImageFolder(const std::string &spec);

/// Training, test or prediction data: examples in memory (the IDX files,
/// synthetic data), or an image folder listed up front and decoded in the
/// pipeline, ahead of the step, on `decodeThreads` threads.
struct DataSource {
  std::string spec; // as the flag gave it: fashion_mnist, images:DIR, ...
  std::shared_ptr<const Dataset> memory;
  std::optional<ImageFolderSource> images;
  std::optional<MappedExamples> mapped;
  int decodeThreads = 1;
  /// One weight per example (Keras' sample_weight, or class_weight's per
  /// example), or null: every example weighs 1.
  std::shared_ptr<const std::vector<float>> weights;

  const std::string &name() const {
    return images ? images->root() : mapped ? mapped->list->name : memory->name;
  }
  int64_t size() const {
    return images   ? images->size()
           : mapped ? mapped->list->size()
                    : memory->size();
  }
  int32_t numClasses() const {
    return images   ? static_cast<int32_t>(images->classNames().size())
           : mapped ? mapped->list->numClasses
                    : memory->numClasses;
  }
  ExampleShape shape() const {
    return images ? images->shape() : mapped ? mapped->shape : memory->shape;
  }
  /// Whether the examples are in memory (not made by a map of the pipeline).
  bool inMemory() const { return memory != nullptr; }
  /// A pipeline over the examples: features for data in memory, labels
  /// only for a folder or a mapped array (decode() adds the stage that
  /// makes the features).
  Pipeline pipeline() const {
    Pipeline p = images   ? Pipeline(images->examples())
                 : mapped ? Pipeline(mapped->list)
                          : Pipeline(memory);
    if (weights)
      p.weigh(weights);
    return p;
  }
  /// Adds the decoding map of a folder or the loading map of a mapped
  /// array; nothing for data in memory. A bad file's error says how to
  /// skip it.
  void decode(Pipeline &p) const;
  /// Where example `index` came from, for --predict's list: the image's
  /// path, or the data set's name and the position in it.
  std::string source(int64_t index) const {
    if (images)
      return images->files()[static_cast<size_t>(index)].path;
    return name() + "#" + std::to_string(index);
  }
};

/// Keras' validation_split: moves the last `fraction` (0 < fraction < 1)
/// of `train`'s examples, floor(N * (1 - fraction)) onwards as Keras cuts
/// them, into `validation`. Arrays only (in memory or mapped), as Keras
/// splits only arrays; an error when either part would be empty.
Status splitValidation(DataSource &train, double fraction,
                       DataSource &validation);

/// The data `spec` names (--data, --eval-data or --predict): the training or
/// the test split (`test`) of the IDX files or of synthetic data, or an
/// image folder decoded to `shape` with classes `classNames` (empty: its
/// sub-folders, sorted). `classes` sizes synthetic labels.
Status openDataSource(const DataSourceOptions &options, const std::string &spec,
                      bool test, const ExampleShape &shape, int32_t classes,
                      const std::vector<std::string> &classNames,
                      DataSource &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_DATASOURCE_H
