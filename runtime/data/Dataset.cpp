//===- Dataset.cpp - an in-memory dataset of labelled examples ------------===//

#include "runtime/data/Dataset.h"

namespace graph::runtime::data {
namespace {

Status validateLabels(const std::string &name,
                      const std::vector<int32_t> &labels, int32_t numClasses,
                      std::optional<int32_t> ignored) {
  for (size_t i = 0; i < labels.size(); ++i)
    if ((labels[i] < 0 || labels[i] >= numClasses) && labels[i] != ignored)
      return Status::error(name + ": label " + std::to_string(labels[i]) +
                           " of example " + std::to_string(i) +
                           " is outside [0, " + std::to_string(numClasses) +
                           "); the labels do not match the class count");
  return Status::ok();
}

/// Targets, when there are any, are `width` floats for each example.
Status validateTargets(const std::string &name,
                       const std::vector<float> &targets, int64_t examples,
                       int32_t width) {
  if (targets.empty() ||
      static_cast<int64_t>(targets.size()) == examples * width)
    return Status::ok();
  return Status::error(name + ": " + std::to_string(targets.size()) +
                       " targets for " + std::to_string(examples) +
                       " examples of " + std::to_string(width) +
                       "; every example needs its targets");
}

} // namespace

int64_t ExampleShape::elements() const {
  if (dims.empty())
    return 0;
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

bool ExampleShape::positive() const {
  if (dims.empty())
    return false;
  for (int64_t d : dims)
    if (d <= 0)
      return false;
  return true;
}

std::string ExampleShape::str() const {
  std::string text;
  for (int64_t d : dims)
    text += (text.empty() ? "" : "x") + std::to_string(d);
  return text.empty() ? "()" : text;
}

Status Dataset::validate() const {
  if (!shape.positive())
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
  if (Status s = validateTargets(name, targets, size(), numClasses); !s)
    return s;
  return validateLabels(name, labels, numClasses, ignoredLabel);
}

Status ExampleList::validate() const {
  if (numClasses <= 0)
    return Status::error(name + ": " + std::to_string(numClasses) +
                         " classes; a dataset needs at least one");
  if (Status s = validateTargets(name, targets, size(), numClasses); !s)
    return s;
  return validateLabels(name, labels, numClasses, ignoredLabel);
}

} // namespace graph::runtime::data
