//===- Dataset.cpp - an in-memory dataset of labelled examples ------------===//

#include "runtime/data/Dataset.h"

namespace graph::runtime::data {
namespace {

Status validateLabels(const std::string &name,
                      const std::vector<int32_t> &labels, int32_t numClasses) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] < 0 || labels[i] >= numClasses)
      return Status::error(name + ": label " + std::to_string(labels[i]) +
                           " of example " + std::to_string(i) +
                           " is outside [0, " + std::to_string(numClasses) +
                           "); the labels do not match the class count");
  return Status::ok();
}

} // namespace

std::string ExampleShape::str() const {
  return std::to_string(height) + "x" + std::to_string(width) + "x" +
         std::to_string(channels);
}

Status Dataset::validate() const {
  if (shape.height <= 0 || shape.width <= 0 || shape.channels <= 0)
    return Status::error(name + ": example shape " + shape.str() +
                         " is not positive; give every dimension a size");
  if (numClasses <= 0)
    return Status::error(name + ": " + std::to_string(numClasses) +
                         " classes; a dataset needs at least one");
  if (static_cast<int64_t>(images.size()) != size() * shape.elements())
    return Status::error(
        name + ": " + std::to_string(images.size()) + " floats of images for " +
        std::to_string(size()) + " labels of shape " + shape.str() +
        " (expected " + std::to_string(size() * shape.elements()) +
        "); images and labels must describe the same examples");
  return validateLabels(name, labels, numClasses);
}

Status ExampleList::validate() const {
  if (numClasses <= 0)
    return Status::error(name + ": " + std::to_string(numClasses) +
                         " classes; a dataset needs at least one");
  return validateLabels(name, labels, numClasses);
}

} // namespace graph::runtime::data
