//===- ClassWeights.h - Keras' class_weight, per example ---------*- C++
//-*-===//
//
// Keras' fit(class_weight={0: 1, 1: 5}) weighs each training example by its
// class's weight (1 for a class it does not name), as its own per-example
// sample_weight (data_adapter_utils.class_weight_to_sample_weights): the
// class of one-hot labels or of targets wider than one is their arg max, of
// one target its value rounded.
//
//   graphrun --class-weight 0:1,1:5      or      --class-weight weights.json
//
// where the JSON file holds one object, {"0": 1.0, "1": 5.0}.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_CLASSWEIGHTS_H
#define RUNTIME_DATA_CLASSWEIGHTS_H

#include "runtime/base/Status.h"
#include "runtime/data/DataSource.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::data {

using ClassWeights = std::map<int64_t, double>;

/// `spec`: CLASS:WEIGHT pairs, comma-separated, or the path of a JSON file
/// holding an object of them. Errors name the pair or the file.
Status parseClassWeights(const std::string &spec, ClassWeights &out);

/// Each example's weight in `source` under `weights`, in source order.
Status classWeightsPerExample(const DataSource &source,
                              const ClassWeights &weights,
                              std::shared_ptr<const std::vector<float>> &out);

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_CLASSWEIGHTS_H
