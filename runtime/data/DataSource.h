//===- DataSource.h - the data a flag names, opened --------------*- C++
//-*-===//
//
// graphrun's --data, --eval-data and --predict name their data by a spec:
// `fashion_mnist` (the IDX files), `synthetic`, or `images:DIR` (a folder of
// JPEG files per class). openDataSource() turns a spec into a DataSource:
// examples in memory, or an image folder listed up front and decoded in the
// pipeline, ahead of the step.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_DATASOURCE_H
#define RUNTIME_DATA_DATASOURCE_H

#include "runtime/base/Status.h"
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
  /// Image folders: unit ([0, 1]), caffe or raw ([0, 255]) pixels.
  std::string preprocess = "unit";
  /// Image folders: half-pixel or legacy bilinear resize.
  std::string resize = "half-pixel";
  bool skipBadImages = false;
  /// Image folders: decode as TensorFlow does (no DCT scaling).
  bool tfDecode = false;
  /// Image folders: decoding threads (0: one per core).
  int decodeThreads = 0;
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
  int decodeThreads = 1;

  const std::string &name() const {
    return images ? images->root() : memory->name;
  }
  int64_t size() const { return images ? images->size() : memory->size(); }
  int32_t numClasses() const {
    return images ? static_cast<int32_t>(images->classNames().size())
                  : memory->numClasses;
  }
  ExampleShape shape() const {
    return images ? images->shape() : memory->shape;
  }
  /// A pipeline over the examples: pixels for data in memory, labels only
  /// for a folder (decode() adds the stage that makes the pixels).
  Pipeline pipeline() const {
    return images ? Pipeline(images->examples()) : Pipeline(memory);
  }
  /// Adds the decoding map of a folder; nothing for data in memory. A bad
  /// file's error says how to skip it.
  void decode(Pipeline &p) const {
    if (!images)
      return;
    MapFn decoder = images->decoder();
    bool skipping = images->options().skipBadImages;
    p.map(
        [decoder, skipping](Example &e) -> Status {
          Status s = decoder(e);
          if (!s && !skipping)
            return Status::error(s.message() +
                                 " (or pass --skip-bad-images to skip and "
                                 "count the files that cannot be decoded)");
          return s;
        },
        decodeThreads, images->shape());
  }
  /// Where example `index` came from, for --predict's list: the image's
  /// path, or the data set's name and the position in it.
  std::string source(int64_t index) const {
    if (images)
      return images->files()[static_cast<size_t>(index)].path;
    return memory->name + "#" + std::to_string(index);
  }
};

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
