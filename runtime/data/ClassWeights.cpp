//===- ClassWeights.cpp - Keras' class_weight, per example ----------------===//

#include "runtime/data/ClassWeights.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>

namespace graph::runtime::data {

namespace {

/// A whole integer of `text`, or an error.
bool parseInteger(const std::string &text, int64_t &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || *end != '\0')
    return false;
  out = v;
  return true;
}

/// A weight must stay finite as the float32 the examples are weighed in
/// (1e300 is a finite double but an infinite loss).
bool inFloatRange(double weight) {
  return std::isfinite(weight) &&
         std::fabs(weight) <= std::numeric_limits<float>::max();
}

bool parseWeight(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return errno == 0 && *end == '\0' && inFloatRange(out);
}

Status parseFile(const std::string &path, ClassWeights &out) {
  std::ifstream in(path);
  if (!in)
    return Status::invalidInput("--class-weight " + path +
                                ": cannot read it: " + std::strerror(errno));
  nlohmann::json json = nlohmann::json::parse(in, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    return Status::invalidInput(
        "--class-weight " + path +
        ": not a JSON object of class: weight, as {\"0\": 1.0, \"1\": 5.0}");
  for (const auto &[key, value] : json.items()) {
    int64_t cls = 0;
    if (!parseInteger(key, cls) || !value.is_number() ||
        !inFloatRange(value.get<double>()))
      return Status::invalidInput("--class-weight " + path + ": \"" + key +
                                  "\": " + value.dump() +
                                  " is not a class index and a finite weight");
    // JSON keeps "1" and "01" apart; both are class 1.
    if (!out.emplace(cls, value.get<double>()).second)
      return Status::invalidInput("--class-weight " + path + ": class " +
                                  std::to_string(cls) + " appears twice (\"" +
                                  key + "\" is one of its keys)");
  }
  return Status::ok();
}

} // namespace

Status parseClassWeights(const std::string &spec, ClassWeights &out) {
  out.clear();
  if (spec.ends_with(".json"))
    return parseFile(spec, out);
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string pair = spec.substr(
        start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t colon = pair.find(':');
    int64_t cls = 0;
    double weight = 0;
    if (colon == std::string::npos ||
        !parseInteger(pair.substr(0, colon), cls) ||
        !parseWeight(pair.substr(colon + 1), weight))
      return Status::invalidInput(
          "--class-weight " + spec + ": '" + pair +
          "' is not CLASS:WEIGHT (a class index and a finite weight, as "
          "0:1,1:5), nor is the value a .json file");
    if (out.count(cls))
      return Status::invalidInput("--class-weight " + spec + ": class " +
                                  std::to_string(cls) + " appears twice");
    out[cls] = weight;
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  return Status::ok();
}

Status classWeightsPerExample(const DataSource &source,
                              const ClassWeights &weights,
                              std::shared_ptr<const std::vector<float>> &out) {
  const std::vector<int32_t> *labels = nullptr;
  const std::vector<float> *targets = nullptr;
  int32_t width = source.numClasses();
  std::shared_ptr<const ExampleList> list;
  if (source.memory) {
    labels = &source.memory->labels;
    targets = &source.memory->targets;
  } else {
    list = source.images ? source.images->examples() : source.mapped->list;
    labels = &list->labels;
    targets = &list->targets;
  }
  const int64_t n = source.size();
  auto perExample = std::make_shared<std::vector<float>>(n, 1.0f);
  for (int64_t i = 0; i < n; ++i) {
    // keras class_weight_to_sample_weights: argmax of rows wider than
    // one, round of a single value.
    int64_t cls = (*labels)[static_cast<size_t>(i)];
    if (!targets->empty()) {
      const float *t = targets->data() + i * width;
      cls = width == 1 ? static_cast<int64_t>(std::nearbyint(t[0]))
                       : std::max_element(t, t + width) - t;
    }
    auto found = weights.find(cls);
    if (found != weights.end())
      (*perExample)[static_cast<size_t>(i)] = static_cast<float>(found->second);
  }
  out = std::move(perExample);
  return Status::ok();
}

} // namespace graph::runtime::data
