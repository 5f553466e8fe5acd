//===- Dataset.h - an in-memory dataset of labelled examples ----*- C++ -*-===//
//
// Every source of the input pipeline (IDX files, NumPy arrays, synthetic
// data) decodes into a Dataset: N examples of one fixed shape of any rank
// (an image [H, W, C], NHWC as Keras' channels_last; a vector [F]; a
// sequence [T, F]), float32, and one int32 class label each. Holding
// decoded examples means an in-memory source is cached already.
//
// A source too large to hold decoded (a folder of 84,000 JPEGs) is an
// ExampleList instead: a label per example and nothing else, whose pixels a
// map of the pipeline produces from the example's index, on the pipeline's
// threads, as the examples are needed (ImageFolder.h).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_DATASET_H
#define RUNTIME_DATA_DATASET_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime::data {

/// The shape of one example, without the batch: the model input's shape
/// ([H, W, C] for an image, [F] for a vector, [T, F] for a sequence).
struct ExampleShape {
  std::vector<int64_t> dims;

  ExampleShape() = default;
  ExampleShape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit ExampleShape(std::vector<int64_t> d) : dims(std::move(d)) {}

  int64_t rank() const { return static_cast<int64_t>(dims.size()); }
  /// An image's sizes (rank 3, NHWC without the N).
  bool isImage() const { return rank() == 3; }
  int64_t height() const { return dims.at(0); }
  int64_t width() const { return dims.at(1); }
  int64_t channels() const { return dims.at(2); }
  /// The product of the dimensions (0 for no dimension).
  int64_t elements() const;
  /// Every dimension positive, and at least one.
  bool positive() const;
  /// "28x28x1", "784", for messages.
  std::string str() const;
  bool operator==(const ExampleShape &) const = default;
};

/// One example on its way through a pipeline.
struct Example {
  /// The example's floats, row-major (for an image NHWC without the N).
  std::vector<float> image;
  int32_t label = 0;
  /// Its targets, for the element-wise losses (empty for class labels).
  std::vector<float> target;
  /// The example's position in its source dataset; shuffles and shards move
  /// it along, so a test or a trace can tell which example this is. -1: a
  /// row that pads an epoch's short last batch (Pipeline::padToBatches),
  /// with no features, label 0 and weight 0.
  int64_t index = -1;
  /// Its weight in the loss and the metrics: Keras' sample_weight or its
  /// class_weight (Pipeline::weigh), 1 without them, 0 for padding.
  float weight = 1.0f;
  /// What the training step's weights carry besides `weight`: the global
  /// batch over the examples in it, for the rows of an epoch's short last
  /// batch (Pipeline::padToBatches), so that the step's mean over its
  /// static rows is the mean over the batch's examples; 1 elsewhere.
  float scale = 1.0f;
  /// The scale the loss's weights carry: `scale`, or 1 for a loss summed
  /// over the batch (Keras' reduction="sum", which a short batch sums over
  /// its examples as it is).
  float lossScale = 1.0f;

  bool padding() const { return index < 0; }
};

struct Dataset {
  /// Where it came from, for messages: "/usr/share/.../train-images-...".
  std::string name;
  ExampleShape shape;
  /// Labels lie in [0, numClasses); with targets, numClasses floats each.
  int32_t numClasses = 0;
  /// size() * shape.elements() floats.
  std::vector<float> images;
  std::vector<int32_t> labels;
  /// Empty, or size() * numClasses floats: each example's targets, for the
  /// element-wise losses (then every label is 0).
  std::vector<float> targets;
  /// A label allowed outside [0, numClasses): SparseCategoricalCrossentropy's
  /// ignore_class, whose examples the loss leaves out.
  std::optional<int32_t> ignoredLabel;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const float *image(int64_t i) const {
    return images.data() + i * shape.elements();
  }
  const float *target(int64_t i) const {
    return targets.data() + i * numClasses;
  }

  /// Checks that the parts agree: a positive shape, as many images as
  /// labels, labels in [0, numClasses). A source that builds a Dataset by
  /// hand should call it; the pipeline does.
  Status validate() const;
};

/// Examples that are, until a map fills their pixels, a label each: the
/// source of a pipeline whose decoding is one of its stages. An example's
/// index (Example::index) names it to that map; its image is empty. A whole
/// list costs 4 bytes an example, so shuffling it, even with a buffer of
/// the whole data set, holds no pixels.
struct ExampleList {
  /// Where it came from, for messages: "/data/OCT2017/train".
  std::string name;
  /// Labels lie in [0, numClasses); with targets, numClasses floats each.
  int32_t numClasses = 0;
  std::vector<int32_t> labels;
  /// As Dataset::targets.
  std::vector<float> targets;
  /// As Dataset::ignoredLabel.
  std::optional<int32_t> ignoredLabel;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }

  /// Checks what Dataset::validate checks of the labels.
  Status validate() const;
};

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_DATASET_H
