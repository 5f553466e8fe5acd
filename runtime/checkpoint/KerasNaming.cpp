//===- KerasNaming.cpp - how Keras names and orders a model's weights -----===//

#include "runtime/checkpoint/KerasNaming.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>

namespace graph::runtime::checkpoint {

/// Keras' naming.to_snake_case, which names a layer's group after its
/// class: "Conv2D" -> "conv2d", "BatchNormalization" ->
/// "batch_normalization".
std::string kerasSnakeCase(const std::string &className) {
  std::string s =
      std::regex_replace(className, std::regex("[^A-Za-z0-9_]+"), "");
  s = std::regex_replace(s, std::regex("(.)([A-Z][a-z]+)"), "$1_$2");
  s = std::regex_replace(s, std::regex("([a-z])([A-Z])"), "$1_$2");
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return s;
}

/// A weight's position in Keras' Layer.weights (trainable variables, then
/// non-trainable, each in creation order) for the weights Keras' layers
/// create; -1 for a name not listed.
int kerasPosition(std::string_view weight) {
  static constexpr std::pair<std::string_view, int> kOrder[] = {
      {"kernel", 0},
      {"depthwise_kernel", 0},
      {"embeddings", 0},
      {"pointwise_kernel", 1},
      {"bias", 2},
      {"gamma", 3},
      {"beta", 4},
      {"moving_mean", 5},
      {"moving_variance", 6},
  };
  for (const auto &[name, position] : kOrder)
    if (weight == name)
      return position;
  return -1;
}

/// The model's layers, in the order of their first variable; each layer's
/// weights in Keras' order (the plan's order when a name is not in
/// kerasPosition's table: the importer creates them in Keras' order).
std::vector<ModelLayer> modelLayers(const MirroredVariables &variables,
                                    const std::vector<int> &which) {
  std::vector<ModelLayer> layers;
  std::map<std::string, size_t> index;
  auto weightOf = [&](int v) {
    const std::string &name = variables.name(v);
    return std::string_view(name).substr(name.rfind('/') + 1);
  };
  for (int v : which) {
    const std::string &name = variables.name(v);
    size_t slash = name.rfind('/');
    std::string layer =
        slash == std::string::npos ? name : name.substr(0, slash);
    auto [it, fresh] = index.emplace(layer, layers.size());
    if (fresh)
      layers.push_back({layer, {}});
    layers[it->second].weights.push_back(v);
  }
  for (ModelLayer &layer : layers)
    if (std::all_of(layer.weights.begin(), layer.weights.end(),
                    [&](int v) { return kerasPosition(weightOf(v)) >= 0; }))
      std::stable_sort(
          layer.weights.begin(), layer.weights.end(), [&](int a, int b) {
            return kerasPosition(weightOf(a)) < kerasPosition(weightOf(b));
          });
  return layers;
}

namespace {

bool isModelClass(const std::string &className) {
  return className == "Sequential" || className == "Functional" ||
         className == "Model";
}

Status walkModel(const nlohmann::json &model, const std::string &where,
                 std::vector<ConfigLayer> &out) {
  auto bad = [&](const std::string &what) {
    return Status::error("the model's Keras config: " + where + ": " + what);
  };
  if (!model.is_object() || !model.contains("class_name") ||
      !model["class_name"].is_string())
    return bad("no class_name");
  const std::string className = model["class_name"].get<std::string>();
  if (!model.contains("config") || !model["config"].is_object() ||
      !model["config"].contains("layers") ||
      !model["config"]["layers"].is_array())
    return bad("no config.layers list");
  std::map<std::string, int> used;
  bool first = true;
  for (const nlohmann::json &layer : model["config"]["layers"]) {
    if (!layer.is_object() || !layer.contains("class_name") ||
        !layer["class_name"].is_string() || !layer.contains("config") ||
        !layer["config"].is_object() || !layer["config"].contains("name") ||
        !layer["config"]["name"].is_string())
      return bad("a layer without class_name or config.name");
    ConfigLayer entry;
    entry.className = layer["class_name"].get<std::string>();
    entry.name = layer["config"]["name"].get<std::string>();
    // Sequential.layers leaves out the InputLayer its config lists first.
    bool skip =
        first && className == "Sequential" && entry.className == "InputLayer";
    first = false;
    if (skip)
      continue;
    entry.group = kerasSnakeCase(entry.className);
    auto [it, fresh] = used.emplace(entry.group, 0);
    if (!fresh)
      entry.group += "_" + std::to_string(++it->second);
    if (isModelClass(entry.className)) {
      entry.isModel = true;
      if (Status s = walkModel(layer, where + "/" + entry.name, entry.layers);
          !s)
        return s;
    }
    out.push_back(std::move(entry));
  }
  return Status::ok();
}

} // namespace

Status configLayers(const std::string &configJson,
                    std::vector<ConfigLayer> &layers, std::string &modelName) {
  layers.clear();
  nlohmann::json config = nlohmann::json::parse(configJson, nullptr, false);
  if (config.is_discarded())
    return Status::error("the model's Keras config is not valid JSON");
  if (Status s = walkModel(config, "model", layers); !s)
    return s;
  modelName =
      config["config"].contains("name") && config["config"]["name"].is_string()
          ? config["config"]["name"].get<std::string>()
          : kerasSnakeCase(config["class_name"].get<std::string>());
  return Status::ok();
}

} // namespace graph::runtime::checkpoint
