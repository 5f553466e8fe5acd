//===- KerasLayers.h - Keras layer configs to builder layers ----*- C++ -*-===//
//
// One entry of a Keras model's `layers` list, and how its config becomes a
// graph::builder layer: each field maps onto the builder's option structs,
// and any field that would change the layer's meaning but has no graph
// dialect equivalent is an error.
//
//===----------------------------------------------------------------------===//

#ifndef FRONTENDS_KERAS_KERASLAYERS_H
#define FRONTENDS_KERAS_KERASLAYERS_H

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasConfigReader.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace graph::keras {

/// A reference to a tensor: output `tensor` of call `node` of `layer`.
struct TensorRef {
  std::string layer;
  int64_t node = 0;
  int64_t tensor = 0;
  /// Where the reference is written (diagnostics point there).
  const llvm::json::Value *at = nullptr;
};

/// A batch size the model fixes: a number, not null, as dimension 0 of a
/// batch shape (`batch_shape: [8, 28, 28, 1]`).
struct FixedBatch {
  int64_t size = 0;
  /// The field that says so ("field 'batch_shape'"), and where its number
  /// is written.
  std::string field;
  const llvm::json::Value *at = nullptr;
  /// Reports errors about it, naming its layer or the model.
  ErrorSink sink;
};

/// One entry of the model's `layers`.
struct LayerEntry {
  const llvm::json::Value *value = nullptr;
  std::string name;
  std::string className;
  mlir::Location loc;
  /// For an InputLayer: its shape without the batch dimension, and the
  /// batch size it fixes, if it does.
  std::optional<std::vector<int64_t>> inputShape;
  std::optional<FixedBatch> fixedBatch;
  /// For other layers: the builder's layer object, called once per node.
  std::optional<builder::Layer> layer;
  /// Checks the inputs of a call before the builder sees them, for config
  /// fields whose validity depends on the input (an axis).
  std::function<mlir::LogicalResult(llvm::ArrayRef<builder::Tensor>)>
      checkInputs;
  /// Functional models: the inputs of each call.
  std::vector<std::vector<TensorRef>> nodes;
  /// The output of each call; an InputLayer's tensor is its call 0.
  std::vector<builder::Tensor> outputs;
};

/// What the whole model says about how to read its layers.
struct ModelTraits {
  /// The model's own `trainable`: false freezes every layer.
  bool trainable = true;
  /// Written by tf.keras 2 (its JSON has `keras_version` 2.x): some layers
  /// compute differently there than in Keras 3 (BatchNormalization).
  bool tfKeras2 = false;
};

/// Reads the config of `entry` (through `config`) and sets its builder layer
/// or, for an InputLayer, its input shape.
mlir::LogicalResult createLayer(builder::ModelBuilder &model, LayerEntry &entry,
                                ConfigReader &config,
                                const ModelTraits &traits);

/// An input shape from the batch shape in field `key` ([batch, dims...]);
/// `shape` stays empty if the field is unset. `batch` is set if the batch
/// dimension is a number rather than null.
mlir::LogicalResult readBatchShape(ConfigReader &config, llvm::StringRef key,
                                   std::optional<std::vector<int64_t>> &shape,
                                   std::optional<FixedBatch> &batch);

/// The input shape a layer config carries: Keras 3's `batch_shape` or
/// tf.keras' `batch_input_shape`.
mlir::LogicalResult readInputShape(ConfigReader &config,
                                   std::optional<std::vector<int64_t>> &shape,
                                   std::optional<FixedBatch> &batch);

/// The dtype policy in field `dtype` (a layer's, or a Sequential model's
/// own): a name or a policy object; float32 when unset.
mlir::LogicalResult readDtypePolicy(ConfigReader &config,
                                    builder::DTypePolicy &policy);

} // namespace graph::keras

#endif // FRONTENDS_KERAS_KERASLAYERS_H
