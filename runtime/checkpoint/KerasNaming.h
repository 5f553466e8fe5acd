//===- KerasNaming.h - how Keras names and orders a model's weights -*- C++
//-*-===//
//
// What the reader (KerasWeights.h) and the writer (KerasWeightsWriter.h) of
// Keras' weights files agree on with Keras itself:
//
// - a Keras 3 file names each layer's group after its class
//   (naming.to_snake_case, made unique over the container: "dense",
//   "dense_1"), walking model.layers, which a model's config lists in order
//   (a Sequential's model.layers leaves out its InputLayer; a Functional's
//   keeps it); a nested model's layers are under its own group's "layers";
// - a layer's weights are in Layer.weights order: trainable variables, then
//   non-trainable, each in creation order (kernel, bias; gamma, beta,
//   moving_mean, moving_variance).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_KERASNAMING_H
#define RUNTIME_CHECKPOINT_KERASNAMING_H

#include "runtime/base/Status.h"
#include "runtime/core/MirroredVariables.h"

#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime::checkpoint {

/// Keras' naming.to_snake_case: "Conv2D" -> "conv2d",
/// "BatchNormalization" -> "batch_normalization".
std::string kerasSnakeCase(const std::string &className);

/// A weight's position in Keras' Layer.weights for the weights Keras'
/// layers create; -1 for a name not listed.
int kerasPosition(std::string_view weight);

struct ModelLayer {
  std::string name;
  /// Its variables, in Keras' order.
  std::vector<int> weights;
};

/// The model's layers among variables `which` (named "<layer>/<weight>"), in
/// the order of their first variable; each layer's weights in Keras' order
/// (the plan's order when a name is not in kerasPosition's table: the
/// importer creates them in Keras' order).
std::vector<ModelLayer> modelLayers(const MirroredVariables &variables,
                                    const std::vector<int> &which);

/// One entry of model.layers, from a Keras model config.
struct ConfigLayer {
  std::string name;      // the layer's own name ("block1_conv1")
  std::string className; // "Conv2D"
  /// Its group under its container's "layers": "conv2d", "conv2d_1".
  std::string group;
  /// A nested model's layers (Sequential, Functional, Model), in order.
  std::vector<ConfigLayer> layers;
  bool isModel = false;
};

/// The layers of the model `configJson` (a model config as to_json or a
/// .keras archive's config.json hold it), as Keras' saving walks them;
/// `modelName` receives the model's name. An error names what the config
/// lacks.
Status configLayers(const std::string &configJson,
                    std::vector<ConfigLayer> &layers, std::string &modelName);

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_KERASNAMING_H
