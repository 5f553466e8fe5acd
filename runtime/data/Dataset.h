//===- Dataset.h - an in-memory dataset of labelled examples ----*- C++ -*-===//
//
// Every source of the input pipeline (IDX files, synthetic data) decodes into
// a Dataset: N examples of one fixed shape, float32 [N, H, W, C] scaled to
// [0, 1] (NHWC, as Keras' channels_last), and one int32 class label each.
// Holding decoded examples means an in-memory source is cached already.
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
#include <string>
#include <vector>

namespace graph::runtime::data {

/// The shape of one example: height x width x channels.
struct ExampleShape {
  int64_t height = 0;
  int64_t width = 0;
  int64_t channels = 0;

  int64_t elements() const { return height * width * channels; }
  /// "28x28x1", for messages.
  std::string str() const;
  bool operator==(const ExampleShape &) const = default;
};

/// One example on its way through a pipeline.
struct Example {
  /// H * W * C floats, row-major (NHWC without the N).
  std::vector<float> image;
  int32_t label = 0;
  /// The example's position in its source dataset; shuffles and shards move
  /// it along, so a test or a trace can tell which example this is.
  int64_t index = -1;
};

struct Dataset {
  /// Where it came from, for messages: "/usr/share/.../train-images-...".
  std::string name;
  ExampleShape shape;
  /// Labels lie in [0, numClasses).
  int32_t numClasses = 0;
  /// size() * shape.elements() floats in [0, 1].
  std::vector<float> images;
  std::vector<int32_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }
  const float *image(int64_t i) const {
    return images.data() + i * shape.elements();
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
  /// Labels lie in [0, numClasses).
  int32_t numClasses = 0;
  std::vector<int32_t> labels;

  int64_t size() const { return static_cast<int64_t>(labels.size()); }

  /// Checks what Dataset::validate checks of the labels.
  Status validate() const;
};

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_DATASET_H
