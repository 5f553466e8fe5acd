//===- KerasImporter.cpp - Keras models to the graph dialect --------------===//
//
// Two dialects of the same JSON are read:
//  - Keras 3: inbound nodes are {"args": [...], "kwargs": {...}} holding
//    `__keras_tensor__` objects with a `keras_history`; inputs carry
//    `batch_shape`; optimizers and losses sit in `compile_config`.
//  - tf.keras 2: inbound nodes are [[layer, node, tensor, kwargs], ...];
//    inputs carry `batch_input_shape`; there is no compile_config.
//
// This file walks the model: its layers list, the calls (inbound nodes) that
// connect them, its inputs and outputs. KerasLayers reads each layer's
// config, KerasTraining the compile_config.
//
// A layer entry whose class is a model ('Functional', 'Model',
// 'Sequential') is a nested model: its config holds layers of its own, read
// by a ModelImporter of its own that adds its ops to the same ModelBuilder
// when the entry is called. Its layers keep their Keras names, so that their
// variables are named as Keras names them (`block1_conv1/kernel`).
//
//===----------------------------------------------------------------------===//

#include "frontends/keras/KerasImporter.h"

#include "frontends/builder/ModelBuilder.h"
#include "frontends/keras/KerasArchive.h"
#include "frontends/keras/KerasConfigReader.h"
#include "frontends/keras/KerasLayers.h"
#include "frontends/keras/KerasTraining.h"

#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>
#include <optional>
#include <queue>

namespace json = llvm::json;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace graph::keras {
namespace {

using builder::ModelBuilder;
using builder::Tensor;

/// Keras fit's default batch size.
constexpr int64_t kDefaultBatchSize = 32;

/// Whether a layer entry of class `className` is a model used as a layer.
bool isModelClass(llvm::StringRef className) {
  return className == "Functional" || className == "Model" ||
         className == "Sequential";
}

/// Reads one model, the root or a nested one: its layers and their calls.
class ModelImporter {
public:
  /// The root model.
  ModelImporter(const ConfigDocument &doc, mlir::MLIRContext &ctx,
                const ImportOptions &options)
      : doc(doc), ctx(ctx), options(options),
        layerOwners(std::make_shared<llvm::StringMap<std::string>>()) {}

  /// A model nested in `parent`, at its layer `entry`.
  ModelImporter(const ModelImporter &parent, const LayerEntry &entry,
                const ModelTraits &traits)
      : doc(parent.doc), ctx(parent.ctx), options(parent.options),
        model(parent.model), traits(traits), layerOwners(parent.layerOwners),
        modelName(entry.name), depth(parent.depth + 1), callerLoc(entry.loc),
        callerClass(entry.className) {}

  mlir::OwningOpRef<mlir::ModuleOp> import();

private:
  LogicalResult fileError(const json::Value *at, const llvm::Twine &message) {
    mlir::emitError(doc.locate(at)) << message;
    return failure();
  }
  ErrorSink fileSink() {
    return [](mlir::Location loc, const llvm::Twine &message) {
      mlir::emitError(loc) << message;
    };
  }
  ErrorSink layerSink(const LayerEntry &entry) {
    return [this, name = entry.name, className = entry.className](
               mlir::Location loc, const llvm::Twine &message) {
      model->emitLayerError(loc, name, className, message);
    };
  }
  LogicalResult layerError(const LayerEntry &entry,
                           const llvm::Twine &message) {
    model->emitLayerError(entry.loc, entry.name, entry.className, message);
    return failure();
  }
  /// A reader for the fields of `entry` itself (inbound_nodes), beside its
  /// config.
  ConfigReader entryReader(const LayerEntry &entry) {
    return ConfigReader(doc, *entry.value, *entry.value->getAsObject(), "",
                        layerSink(entry));
  }

  LogicalResult readLayer(const json::Value &value, size_t index,
                          bool functional);
  LogicalResult readLayerList(ConfigReader &modelConfig, bool functional,
                              const json::Value *&layersValue);
  LogicalResult claimLayerName(const LayerEntry &entry);
  LogicalResult readNestedModel(LayerEntry &entry, ConfigReader &config);
  LogicalResult checkFunctional(ConfigReader &modelConfig);
  Tensor callNested(llvm::ArrayRef<Tensor> inputs);
  LogicalResult nestedError(const llvm::Twine &message) {
    model->emitLayerError(callerLoc, modelName, callerClass, message);
    return failure();
  }
  LogicalResult runCalls();
  LogicalResult readNodes(LayerEntry &entry, ConfigReader &reader);
  LogicalResult readOpLayer(LayerEntry &entry, ConfigReader &reader,
                            ConfigReader &config);
  LogicalResult readTensorRef(ConfigReader &reader, const json::Value &value,
                              TensorRef &out);
  /// `key`'s references: one, or a list; with `keys`, also a dict
  /// (keras.Model's dict of outputs), read in its keys' sorted order,
  /// Keras' flattening order, and `keys` gets them.
  LogicalResult readLayerRefs(ConfigReader &modelConfig, llvm::StringRef key,
                              std::vector<TensorRef> &out,
                              std::vector<std::string> *keys = nullptr);
  LogicalResult checkRef(ConfigReader &reader, llvm::StringRef key,
                         const TensorRef &ref);

  Tensor call(LayerEntry &entry, llvm::ArrayRef<Tensor> inputs);
  LogicalResult buildFunctional(ConfigReader &modelConfig,
                                std::vector<Tensor> &outputs);
  LogicalResult reportCycle(const std::vector<size_t> &done);
  LogicalResult applyFixedBatch(llvm::ArrayRef<FixedBatch> fixed);
  LogicalResult buildSequential(ConfigReader &modelConfig,
                                const json::Value &layersValue,
                                std::vector<Tensor> &outputs);

  const ConfigDocument &doc;
  mlir::MLIRContext &ctx;
  const ImportOptions &options;
  /// Shared by the root model and the models nested in it.
  std::shared_ptr<ModelBuilder> model;
  /// The layer the loss takes its input from: errors about the loss and the
  /// model's output point there.
  std::optional<mlir::Location> outputLoc;
  std::vector<LayerEntry> layers;
  llvm::StringMap<size_t> layerIndex;
  ModelTraits traits;
  /// Functional models: input_layers and output_layers.
  std::vector<TensorRef> inputRefs, outputRefs;
  /// The model's outputs' names, Keras' output_names: the layers they come
  /// from, or the keys of a dict of outputs (what Keras' logs, losses and
  /// y then name them by).
  std::vector<std::string> outputNames;
  /// The keys of a dict of outputs (output_layers), in their sorted order.
  std::vector<std::string> outputKeys;
  /// The model that holds each layer that names variables or an input, over
  /// the root and every nested model: the names must be unique across them.
  std::shared_ptr<llvm::StringMap<std::string>> layerOwners;
  /// Nested models: the model's layer name (empty for the root), how many
  /// models enclose it, and its entry's location and class in the parent.
  std::string modelName;
  unsigned depth = 0;
  std::optional<mlir::Location> callerLoc;
  std::string callerClass;
  bool functional = false;
};

//===----------------------------------------------------------------------===//
// Layers and their calls
//===----------------------------------------------------------------------===//

LogicalResult ModelImporter::readLayer(const json::Value &value, size_t index,
                                       bool functional) {
  std::string where = "config.layers[" + std::to_string(index) + "]";
  const json::Object *object = value.getAsObject();
  if (!object)
    return fileError(&value, "field '" + where +
                                 "': expected a layer object, got " +
                                 describe(value));
  ConfigReader entryReader(doc, value, *object, where + ".", fileSink());
  std::string className;
  if (failed(entryReader.readString("class_name", className, true)))
    return failure();
  const json::Value *configValue = entryReader.get("config");
  const json::Object *config =
      configValue ? configValue->getAsObject() : nullptr;
  if (!config)
    return configValue
               ? entryReader.error("config", "expected an object, got " +
                                                 describe(*configValue))
               : entryReader.missing("config");

  LayerEntry entry{.value = &value, .loc = doc.locate(&value)};
  entry.className = className;
  if (std::optional<llvm::StringRef> name = object->getString("name"))
    entry.name = name->str();
  else if (std::optional<llvm::StringRef> name = config->getString("name"))
    entry.name = name->str();
  else
    entry.name = where;
  if (!layerIndex.try_emplace(entry.name, layers.size()).second)
    return fileError(&value, "duplicate layer name '" + entry.name + "'");
  if (failed(claimLayerName(entry)))
    return failure();

  // Fields of the entry, beside its config, are named as they are; fields of
  // the config are named without the `config.` prefix, as Keras names the
  // layer's arguments.
  ConfigReader reader(doc, value, *object, "", layerSink(entry));
  ConfigReader configReader(doc, *configValue, *config, "", layerSink(entry));
  // Keras 3 writes `x + 3.0`, `x * y` on tensors as operation layers.
  if (std::optional<llvm::StringRef> module = object->getString("module");
      functional && module && module->starts_with("keras.src.ops")) {
    if (failed(readOpLayer(entry, reader, configReader)))
      return failure();
    layers.push_back(std::move(entry));
    return success();
  }
  if (isModelClass(className)
          ? failed(readNestedModel(entry, configReader))
          : failed(createLayer(*model, entry, configReader, traits)))
    return failure();
  if (functional && failed(readNodes(entry, reader)))
    return failure();
  layers.push_back(std::move(entry));
  return success();
}

/// Variables are named by their layer alone, as Keras names them, so a
/// layer of a nested model may not take the name of a layer elsewhere.
/// Inputs of nested models name nothing: their calls' inputs replace them.
LogicalResult ModelImporter::claimLayerName(const LayerEntry &entry) {
  if (isModelClass(entry.className) ||
      (depth > 0 && entry.className == "InputLayer"))
    return success();
  auto [it, inserted] = layerOwners->try_emplace(entry.name, modelName);
  if (inserted)
    return success();
  auto modelText = [](llvm::StringRef name) {
    return name.empty() ? std::string("the outer model")
                        : "nested model '" + name.str() + "'";
  };
  return fileError(entry.value,
                   "layer name '" + entry.name + "' is used in " +
                       modelText(it->second) + " and in " +
                       modelText(modelName) +
                       ": variables are named by their layer ('" + entry.name +
                       "/kernel'), so layer names must be unique across "
                       "nested models; rename one of them");
}

//===----------------------------------------------------------------------===//
// Nested models
//===----------------------------------------------------------------------===//

LogicalResult ModelImporter::readNestedModel(LayerEntry &entry,
                                             ConfigReader &config) {
  // The nested model's trainable=False freezes every layer in it, at any
  // depth, as base.trainable = False does in Keras.
  ModelTraits nestedTraits = traits;
  bool trainable = true;
  if (failed(config.readBool("trainable", trainable)))
    return failure();
  nestedTraits.trainable = traits.trainable && trainable;
  auto nested = std::make_shared<ModelImporter>(*this, entry, nestedTraits);
  nested->functional = entry.className != "Sequential";
  const json::Value *layersValue = nullptr;
  if (failed(nested->readLayerList(config, nested->functional, layersValue)))
    return failure();
  if (nested->functional && failed(nested->checkFunctional(config)))
    return failure();
  // Its input is its call's; its batch is the outer model's.
  config.ignore("build_input_shape");
  entry.layer = builder::Layer([nested](llvm::ArrayRef<Tensor> inputs) {
    return nested->callNested(inputs);
  });
  return success();
}

/// Adds the nested model's ops on `inputs`, one tensor per model input.
/// Each call adds them anew, on the same variables: a nested model called
/// twice shares its weights, as in Keras.
Tensor ModelImporter::callNested(llvm::ArrayRef<Tensor> inputs) {
  // The inputs of this call stand for the model's InputLayers: their shapes
  // must agree, but for the batch.
  auto checkInput = [&](const LayerEntry &input, Tensor given) {
    llvm::ArrayRef<int64_t> shape = given.shape().drop_front();
    if (!input.inputShape || shape == llvm::ArrayRef(*input.inputShape))
      return success();
    auto text = [](llvm::ArrayRef<int64_t> dims) {
      std::string out;
      llvm::raw_string_ostream os(out);
      llvm::interleaveComma(dims, os);
      return out;
    };
    return nestedError("input '" + input.name +
                       "' of the nested model has "
                       "shape (" +
                       text(*input.inputShape) +
                       ") without the batch, and the call gives (" +
                       text(shape) + ")");
  };
  for (LayerEntry &entry : layers)
    entry.outputs.clear();
  if (!functional) {
    if (inputs.size() != 1) {
      (void)nestedError("a Sequential model takes one input, got " +
                        llvm::Twine(inputs.size()));
      return Tensor();
    }
    Tensor x = inputs[0];
    size_t first = 0;
    if (layers[0].inputShape) {
      if (failed(checkInput(layers[0], x)))
        return Tensor();
      first = 1;
    }
    for (size_t i = first; i < layers.size(); ++i) {
      LayerEntry &entry = layers[i];
      if (entry.inputShape) {
        (void)layerError(entry, "an InputLayer may only come first in a "
                                "Sequential model");
        return Tensor();
      }
      x = call(entry, {x});
      if (!x)
        return Tensor();
    }
    return x;
  }
  if (inputs.size() != inputRefs.size()) {
    (void)nestedError("the nested model takes " +
                      llvm::Twine(inputRefs.size()) + " input(s), got " +
                      llvm::Twine(inputs.size()));
    return Tensor();
  }
  for (auto [ref, given] : llvm::zip_equal(inputRefs, inputs)) {
    LayerEntry &entry = layers[layerIndex.lookup(ref.layer)];
    if (failed(checkInput(entry, given)))
      return Tensor();
    entry.outputs.push_back(given);
  }
  if (failed(runCalls()))
    return Tensor();
  const TensorRef &out = outputRefs.front();
  return layers[layerIndex.lookup(out.layer)].outputs[out.node];
}

//===----------------------------------------------------------------------===//
// Functional models: inbound nodes
//===----------------------------------------------------------------------===//

LogicalResult ModelImporter::readTensorRef(ConfigReader &reader,
                                           const json::Value &value,
                                           TensorRef &out) {
  const json::Array *history = nullptr;
  if (const json::Object *tensor = value.getAsObject()) {
    // Keras 3: {"class_name": "__keras_tensor__", "config": {...,
    // "keras_history": [layer, node, tensor]}}.
    if (const json::Object *config = tensor->getObject("config"))
      history = config->getArray("keras_history");
    if (tensor->getString("class_name") != "__keras_tensor__")
      history = nullptr;
  } else {
    // tf.keras: [layer, node, tensor, kwargs].
    history = value.getAsArray();
  }
  std::optional<llvm::StringRef> layer;
  std::optional<int64_t> node, tensor;
  if (history && history->size() >= 3) {
    layer = (*history)[0].getAsString();
    node = (*history)[1].getAsInteger();
    tensor = (*history)[2].getAsInteger();
  }
  if (!layer || !node || !tensor)
    return reader.errorAt(&value, "inbound_nodes",
                          "expected a tensor reference, got " +
                              describe(value));
  // Errors point at the layer name: the part of the reference that says
  // what it refers to.
  out = {layer->str(), *node, *tensor, &(*history)[0]};
  return success();
}

/// Call arguments beside the inputs. `training` is left out: Keras 3 records
/// training=False for a Dropout called while building the model, and fit()
/// overrides it in every call; a null mask is no mask.
static bool isIgnoredCallArgument(llvm::StringRef key,
                                  const json::Value &value) {
  if (key == "training" || value.kind() == json::Value::Null)
    return true;
  // A call of several inputs records one mask a tensor: all null is none.
  const json::Array *list = value.getAsArray();
  return key == "mask" && list &&
         llvm::all_of(*list, [](const json::Value &each) {
           return each.kind() == json::Value::Null;
         });
}

LogicalResult ModelImporter::readNodes(LayerEntry &entry,
                                       ConfigReader &reader) {
  const json::Value *field = reader.getSet("inbound_nodes");
  if (!field)
    return success();
  const json::Array *nodes = field->getAsArray();
  if (!nodes)
    return reader.error("inbound_nodes",
                        "expected a list, got " + describe(*field));
  auto checkKwargs = [&](const json::Value *kwargs) {
    if (!kwargs)
      return success();
    const json::Object *object = kwargs->getAsObject();
    if (!object)
      return reader.errorAt(kwargs, "inbound_nodes",
                            "expected call keyword arguments, got " +
                                describe(*kwargs));
    for (const auto &[key, value] : *object)
      if (!isIgnoredCallArgument(key, value))
        return reader.errorAt(&value, "inbound_nodes",
                              "unsupported call argument '" + key.str() +
                                  "' = " + describe(value));
    return success();
  };
  for (const json::Value &node : *nodes) {
    std::vector<TensorRef> inputs;
    if (const json::Object *call = node.getAsObject()) {
      // Keras 3: {"args": [x] or [[x, y]], "kwargs": {...}}.
      const json::Array *args = call->getArray("args");
      // An operator between Keras tensors (`a + b` in ConvNeXt) records a
      // keras.src.ops.numpy op (class Add) with one positional argument
      // per tensor.
      auto isTensor = [](const json::Value &value) {
        const json::Object *object = value.getAsObject();
        return object && object->getString("class_name") == "__keras_tensor__";
      };
      bool tensorArgs =
          args && args->size() > 1 && llvm::all_of(*args, isTensor);
      if (!args || (args->size() != 1 && !tensorArgs))
        return reader.errorAt(&node, "inbound_nodes",
                              "expected one positional argument (a tensor or "
                              "a list of tensors), got " +
                                  describe(node));
      const json::Value &arg = (*args)[0];
      auto addTensor = [&](const json::Value &value) {
        TensorRef ref;
        if (failed(readTensorRef(reader, value, ref)))
          return failure();
        inputs.push_back(std::move(ref));
        return success();
      };
      if (tensorArgs) {
        for (const json::Value &tensor : *args)
          if (failed(addTensor(tensor)))
            return failure();
      } else if (const json::Array *list = arg.getAsArray()) {
        for (const json::Value &tensor : *list)
          if (failed(addTensor(tensor)))
            return failure();
      } else if (failed(addTensor(arg))) {
        return failure();
      }
      if (failed(checkKwargs(call->get("kwargs"))))
        return failure();
    } else if (const json::Array *list = node.getAsArray()) {
      // tf.keras: [[layer, node, tensor, kwargs], ...].
      for (const json::Value &tensor : *list) {
        TensorRef ref;
        if (failed(readTensorRef(reader, tensor, ref)))
          return failure();
        const json::Array *parts = tensor.getAsArray();
        if (failed(checkKwargs(parts && parts->size() > 3 ? &(*parts)[3]
                                                          : nullptr)))
          return failure();
        inputs.push_back(std::move(ref));
      }
    } else {
      return reader.errorAt(&node, "inbound_nodes",
                            "expected a node, got " + describe(node));
    }
    if (inputs.empty())
      return reader.errorAt(&node, "inbound_nodes", "a call without inputs");
    entry.nodes.push_back(std::move(inputs));
  }
  return success();
}

/// A Keras 3 operation layer (module keras.src.ops.numpy): Add, Subtract,
/// Multiply of two tensors (broadcasting, as the merge layers) or of a
/// tensor and a number (graph.scale_shift), TrueDivide by a number. Each
/// call is {"args": [a, b], "kwargs": {}}.
LogicalResult ModelImporter::readOpLayer(LayerEntry &entry,
                                         ConfigReader &reader,
                                         ConfigReader &config) {
  using Kind = builder::ScalarOpOptions::Kind;
  llvm::StringRef cls = entry.className;
  std::optional<Kind> kind = llvm::StringSwitch<std::optional<Kind>>(cls)
                                 .Case("Add", Kind::add)
                                 .Case("Subtract", Kind::subtract)
                                 .Case("Multiply", Kind::multiply)
                                 .Cases({"TrueDivide", "Divide"}, Kind::divide)
                                 .Default(std::nullopt);
  auto fail = [&](const llvm::Twine &message) {
    model->emitLayerError(entry.loc, entry.name, entry.className, message);
    return failure();
  };
  if (!kind)
    return fail("unsupported operation layer '" + cls +
                "' (supported: Add, Subtract, Multiply, TrueDivide)");
  config.ignore("name");
  if (failed(config.checkNoOtherFields()))
    return failure();
  const json::Value *field = reader.getSet("inbound_nodes");
  const json::Array *nodes = field ? field->getAsArray() : nullptr;
  if (!nodes || nodes->empty())
    return reader.error("inbound_nodes", "expected a list of calls");
  // Every call has the same form: two tensors, or a tensor and the same
  // number on the same side.
  std::optional<builder::ScalarOpOptions> scalarForm;
  bool tensorForm = false;
  for (const json::Value &node : *nodes) {
    const json::Object *call = node.getAsObject();
    const json::Array *args = call ? call->getArray("args") : nullptr;
    if (!args || args->size() != 2)
      return reader.errorAt(&node, "inbound_nodes",
                            "expected two positional arguments, got " +
                                describe(node));
    const json::Value *kwargs = call->get("kwargs");
    if (kwargs && (!kwargs->getAsObject() || !kwargs->getAsObject()->empty()))
      return reader.errorAt(kwargs, "inbound_nodes",
                            "unsupported call arguments " + describe(*kwargs));
    std::vector<TensorRef> inputs;
    std::optional<double> scalar;
    bool scalarFirst = false;
    for (auto [i, arg] : llvm::enumerate(*args)) {
      if (std::optional<double> number = arg.getAsNumber()) {
        if (scalar)
          return reader.errorAt(&arg, "inbound_nodes",
                                "expected at least one tensor argument");
        scalar = *number;
        scalarFirst = i == 0;
        continue;
      }
      TensorRef ref;
      if (failed(readTensorRef(reader, arg, ref)))
        return failure();
      inputs.push_back(std::move(ref));
    }
    if (scalar) {
      builder::ScalarOpOptions o;
      o.name = entry.name;
      o.loc = entry.loc;
      o.kind = *kind;
      o.scalar = *scalar;
      o.scalarFirst = scalarFirst;
      if (tensorForm ||
          (scalarForm && (scalarForm->scalar != o.scalar ||
                          scalarForm->scalarFirst != scalarFirst)))
        return reader.errorAt(&node, "inbound_nodes",
                              "calls of one operation layer with different "
                              "arguments are not supported");
      scalarForm = o;
    } else {
      if (scalarForm)
        return reader.errorAt(&node, "inbound_nodes",
                              "calls of one operation layer with different "
                              "arguments are not supported");
      tensorForm = true;
    }
    entry.nodes.push_back(std::move(inputs));
  }
  if (scalarForm) {
    entry.layer = model->ScalarOp(cls, *scalarForm);
    return success();
  }
  builder::LayerOptions o;
  o.name = entry.name;
  o.loc = entry.loc;
  switch (*kind) {
  case Kind::add:
    entry.layer = model->Add(o);
    break;
  case Kind::subtract:
    entry.layer = model->Subtract(o);
    break;
  case Kind::multiply:
    entry.layer = model->Multiply(o);
    break;
  case Kind::divide:
    return fail("dividing a tensor by a tensor is not supported");
  }
  return success();
}

LogicalResult ModelImporter::checkRef(ConfigReader &reader, llvm::StringRef key,
                                      const TensorRef &ref) {
  auto it = layerIndex.find(ref.layer);
  if (it == layerIndex.end())
    return reader.errorAt(ref.at, key, "unknown layer '" + ref.layer + "'");
  const LayerEntry &source = layers[it->second];
  int64_t calls = source.inputShape ? 1 : source.nodes.size();
  if (ref.node < 0 || ref.node >= calls)
    return reader.errorAt(ref.at, key,
                          "refers to call " + llvm::Twine(ref.node) +
                              " of layer '" + ref.layer + "', which has " +
                              llvm::Twine(calls) + " call(s)");
  if (ref.tensor != 0)
    return reader.errorAt(ref.at, key,
                          "refers to output " + llvm::Twine(ref.tensor) +
                              " of layer '" + ref.layer +
                              "', which has one output");
  return success();
}

LogicalResult ModelImporter::readLayerRefs(ConfigReader &modelConfig,
                                           llvm::StringRef key,
                                           std::vector<TensorRef> &out,
                                           std::vector<std::string> *keys) {
  const json::Value *field = modelConfig.getSet(key);
  if (!field)
    return modelConfig.missing(key);
  // One [layer, node, tensor]; `label` names a dict's entry in errors.
  auto read = [&](const json::Value &value, const std::string &label) {
    const json::Array *triple = value.getAsArray();
    std::optional<llvm::StringRef> layer;
    std::optional<int64_t> node, tensor;
    if (triple && triple->size() == 3) {
      layer = (*triple)[0].getAsString();
      node = (*triple)[1].getAsInteger();
      tensor = (*triple)[2].getAsInteger();
    }
    if (!layer || !node || !tensor)
      return modelConfig.error(key, label +
                                        "expected [layer, node, tensor], got " +
                                        describe(value));
    // Keras 3 numbers a nested Functional's calls in output_layers from 1
    // (its node 0 is the one it was built with; functional.py's
    // functional_from_config subtracts it), in inbound_nodes from 0.
    int64_t call = *node;
    if (key == "output_layers" && !traits.tfKeras2)
      if (auto it = layerIndex.find(*layer);
          it != layerIndex.end() &&
          layers[it->second].className == "Functional")
        --call;
    out.push_back({layer->str(), call, *tensor, &(*triple)[0]});
    return checkRef(modelConfig, key, out.back());
  };
  if (const json::Object *dict = field->getAsObject(); dict && keys) {
    // keras.Model(inputs, {"score": a, "prob": b}): Keras flattens a dict
    // in its keys' sorted order.
    std::vector<std::pair<std::string, const json::Value *>> entries;
    for (const auto &[name, value] : *dict)
      entries.emplace_back(name.str(), &value);
    llvm::sort(entries, llvm::less_first());
    if (entries.empty())
      return modelConfig.error(key, "expected [layer, node, tensor] or a "
                                    "list or dict of them, got {}");
    for (const auto &[name, value] : entries) {
      if (failed(read(*value, "'" + name + "': ")))
        return failure();
      keys->push_back(name);
    }
    return success();
  }
  const json::Array *list = field->getAsArray();
  if (!list || list->empty())
    return modelConfig.error(key, "expected [layer, node, tensor] or a list "
                                  "of them, got " +
                                      describe(*field));
  // Keras 3 writes a single reference flat: ["input_layer", 0, 0].
  if ((*list)[0].getAsString().has_value())
    return read(*field, "");
  for (const json::Value &value : *list)
    if (failed(read(value, "")))
      return failure();
  return success();
}

Tensor ModelImporter::call(LayerEntry &entry, llvm::ArrayRef<Tensor> inputs) {
  if (model->hasFailed() || llvm::any_of(inputs, [](Tensor t) { return !t; }))
    return Tensor();
  if (entry.checkInputs && failed(entry.checkInputs(inputs)))
    return Tensor();
  Tensor result = (*entry.layer)(inputs);
  return model->hasFailed() ? Tensor() : result;
}

LogicalResult ModelImporter::reportCycle(const std::vector<size_t> &done) {
  // Every unfinished call waits for an unfinished call; following the first
  // such dependency from the first stuck layer must come back to a layer.
  size_t start = 0;
  while (done[start] == layers[start].nodes.size())
    ++start;
  std::vector<size_t> path;
  std::vector<int> seenAt(layers.size(), -1);
  size_t current = start;
  while (seenAt[current] < 0) {
    seenAt[current] = static_cast<int>(path.size());
    path.push_back(current);
    for (const TensorRef &ref : layers[current].nodes[done[current]]) {
      size_t source = layerIndex.lookup(ref.layer);
      if (!layers[source].inputShape &&
          static_cast<size_t>(ref.node) >= done[source]) {
        current = source;
        break;
      }
    }
  }
  // `path` runs against the data flow from its first appearance of
  // `current`; print it along the data flow.
  std::string cycle = "'" + layers[current].name + "'";
  for (size_t i = path.size(); i-- > static_cast<size_t>(seenAt[current]);)
    cycle += " -> '" + layers[path[i]].name + "'";
  return entryReader(layers[current])
      .error("inbound_nodes", "the layers form a cycle: " + cycle);
}

/// Checks the calls, input_layers and output_layers of a Functional model
/// before any is made.
LogicalResult ModelImporter::checkFunctional(ConfigReader &modelConfig) {
  for (LayerEntry &entry : layers) {
    ConfigReader reader = entryReader(entry);
    if (entry.inputShape && !entry.nodes.empty())
      return reader.error("inbound_nodes", "an InputLayer takes no inputs");
    for (const std::vector<TensorRef> &node : entry.nodes)
      for (const TensorRef &ref : node)
        if (failed(checkRef(reader, "inbound_nodes", ref)))
          return failure();
  }

  // Inputs in the order input_layers lists them: the order data is fed in.
  // keras.Model({"a": a, "b": b}, ...) saves a dict, flattened (as the
  // outputs') in its keys' sorted order, which model.inputs follows.
  std::vector<std::string> inputKeys;
  if (failed(readLayerRefs(modelConfig, "input_layers", inputRefs,
                           depth == 0 ? &inputKeys : nullptr)) ||
      failed(readLayerRefs(modelConfig, "output_layers", outputRefs,
                           depth == 0 ? &outputKeys : nullptr)))
    return failure();
  llvm::StringSet<> listed;
  for (const TensorRef &ref : inputRefs) {
    if (!layers[layerIndex.lookup(ref.layer)].inputShape)
      return modelConfig.error("input_layers", "layer '" + ref.layer +
                                                   "' is not an InputLayer");
    if (!listed.insert(ref.layer).second)
      return modelConfig.error("input_layers",
                               "layer '" + ref.layer + "' is listed twice");
  }
  for (LayerEntry &entry : layers)
    if (entry.inputShape && !listed.contains(entry.name))
      return layerError(entry, "this InputLayer is not in the model's "
                               "input_layers");
  // A layer call has one output.
  if (depth > 0 && outputRefs.size() != 1)
    return modelConfig.error("output_layers",
                             "a nested model with " +
                                 llvm::Twine(outputRefs.size()) +
                                 " outputs is not supported (only one)");
  return success();
}

LogicalResult ModelImporter::buildFunctional(ConfigReader &modelConfig,
                                             std::vector<Tensor> &outputs) {
  if (failed(checkFunctional(modelConfig)))
    return failure();
  std::vector<FixedBatch> fixed;
  for (const TensorRef &ref : inputRefs) {
    const LayerEntry &entry = layers[layerIndex.lookup(ref.layer)];
    if (entry.fixedBatch)
      fixed.push_back(*entry.fixedBatch);
  }
  if (failed(applyFixedBatch(fixed)))
    return failure();
  for (const TensorRef &ref : inputRefs) {
    LayerEntry &entry = layers[layerIndex.lookup(ref.layer)];
    entry.outputs.push_back(model->Input(
        *entry.inputShape, {.name = entry.name, .loc = entry.loc}));
    if (model->hasFailed())
      return failure();
  }
  if (failed(runCalls()))
    return failure();
  for (auto [i, ref] : llvm::enumerate(outputRefs)) {
    outputs.push_back(layers[layerIndex.lookup(ref.layer)].outputs[ref.node]);
    outputNames.push_back(outputKeys.empty() ? ref.layer : outputKeys[i]);
  }
  outputLoc = layers[layerIndex.lookup(outputRefs.front().layer)].loc;
  return success();
}

/// Makes every call of every layer, once the InputLayers have their tensor.
LogicalResult ModelImporter::runCalls() {
  // Calls run in sweeps over the layers in file order, each layer making as
  // many of its calls, in order, as have their inputs: a topological order
  // that stays close to the file's. The sweeps are simulated: a layer is
  // visited only when its next call became ready, so that a long chain
  // listed backwards costs no sweep over every layer per link.
  std::vector<size_t> done(layers.size(), 0);
  size_t pending = 0;
  for (const LayerEntry &entry : layers)
    pending += entry.nodes.size();
  // The layers waiting for output `node` of a layer, and how many inputs the
  // next call of each layer still waits for.
  llvm::DenseMap<std::pair<size_t, size_t>, llvm::SmallVector<size_t, 1>>
      waiters;
  std::vector<size_t> missing(layers.size(), 0);
  // Layers whose next call is ready, visited in this sweep (at an index past
  // the one being visited) or the next.
  using IndexQueue =
      std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>>;
  IndexQueue thisSweep, nextSweep;
  auto waitForNextCall = [&](size_t index) {
    const LayerEntry &entry = layers[index];
    if (done[index] == entry.nodes.size())
      return false;
    for (const TensorRef &ref : entry.nodes[done[index]]) {
      size_t source = layerIndex.lookup(ref.layer);
      size_t node = static_cast<size_t>(ref.node);
      if (node < layers[source].outputs.size())
        continue;
      waiters[{source, node}].push_back(index);
      ++missing[index];
    }
    return missing[index] == 0;
  };
  for (size_t index = 0; index < layers.size(); ++index)
    if (waitForNextCall(index))
      thisSweep.push(index);
  while (pending > 0) {
    if (thisSweep.empty())
      std::swap(thisSweep, nextSweep);
    if (thisSweep.empty())
      return reportCycle(done);
    size_t index = thisSweep.top();
    thisSweep.pop();
    LayerEntry &entry = layers[index];
    do {
      std::vector<Tensor> inputs;
      for (const TensorRef &ref : entry.nodes[done[index]])
        inputs.push_back(
            layers[layerIndex.lookup(ref.layer)].outputs[ref.node]);
      Tensor output = call(entry, inputs);
      if (!output)
        return failure();
      entry.outputs.push_back(output);
      ++done[index];
      --pending;
      auto woken = waiters.find({index, entry.outputs.size() - 1});
      if (woken != waiters.end()) {
        for (size_t waiter : woken->second)
          if (--missing[waiter] == 0 && waiter != index)
            (waiter > index ? thisSweep : nextSweep).push(waiter);
        waiters.erase(woken);
      }
    } while (waitForNextCall(index));
  }
  return success();
}

/// The global batch: --batch-size when given, else the batch the model's
/// inputs fix, else Keras fit's default. A fixed batch that --batch-size
/// contradicts, or two inputs fixing different batches, is an error: a
/// replaced batch would silently train on another shape than the model's.
LogicalResult ModelImporter::applyFixedBatch(llvm::ArrayRef<FixedBatch> fixed) {
  for (const FixedBatch &batch : fixed) {
    auto error = [&](const llvm::Twine &message) {
      batch.sink(doc.locate(batch.at), batch.field + ": " + message);
      return failure();
    };
    if (options.batchSize && *options.batchSize != batch.size)
      return error("the model fixes the batch size at " +
                   llvm::Twine(batch.size) + ", and --batch-size asks for " +
                   llvm::Twine(*options.batchSize) +
                   ": leave --batch-size out, or make the batch dimension "
                   "null");
    if (batch.size != fixed.front().size)
      return error("the model fixes the batch size at " +
                   llvm::Twine(batch.size) + " here and at " +
                   llvm::Twine(fixed.front().size) + " in another input");
  }
  if (!fixed.empty() && !options.batchSize)
    model->setBatchSize(fixed.front().size);
  return success();
}

//===----------------------------------------------------------------------===//
// Sequential models
//===----------------------------------------------------------------------===//

/// Reads the model's `layers`, each a layer or a nested model.
LogicalResult ModelImporter::readLayerList(ConfigReader &modelConfig,
                                           bool functional,
                                           const json::Value *&layersValue) {
  layersValue = modelConfig.getSet("layers");
  if (!layersValue)
    return modelConfig.missing("layers");
  const json::Array *layerList = layersValue->getAsArray();
  if (!layerList)
    return modelConfig.error("layers",
                             "expected a list, got " + describe(*layersValue));
  if (layerList->empty())
    return modelConfig.error("layers", "the model has no layers");
  for (auto [index, value] : llvm::enumerate(*layerList))
    if (failed(readLayer(value, index, functional)))
      return failure();
  return success();
}

LogicalResult ModelImporter::buildSequential(ConfigReader &modelConfig,
                                             const json::Value &layersValue,
                                             std::vector<Tensor> &outputs) {
  // The input: a leading InputLayer, else the model's build_input_shape,
  // else a batch shape on the first layer.
  Tensor x;
  size_t first = 0;
  if (layers[0].inputShape) {
    if (layers[0].fixedBatch && failed(applyFixedBatch(*layers[0].fixedBatch)))
      return failure();
    x = model->Input(*layers[0].inputShape,
                     {.name = layers[0].name, .loc = layers[0].loc});
    first = 1;
  } else {
    std::optional<std::vector<int64_t>> shape;
    std::optional<FixedBatch> batch;
    if (modelConfig.getSet("build_input_shape")) {
      if (failed(
              readBatchShape(modelConfig, "build_input_shape", shape, batch)))
        return failure();
    } else {
      const LayerEntry &entry = layers[0];
      const json::Value *config = entry.value->getAsObject()->get("config");
      ConfigReader reader(doc, *config, *config->getAsObject(), "",
                          layerSink(entry));
      if (failed(readInputShape(reader, shape, batch)))
        return failure();
    }
    if (batch && failed(applyFixedBatch(*batch)))
      return failure();
    // The input is the model's, made from that field: errors about it (its
    // size) point there.
    const json::Value *field = modelConfig.getSet("build_input_shape");
    if (!shape)
      return fileError(&layersValue,
                       "Sequential model: missing input shape: expected an "
                       "InputLayer first, a 'build_input_shape' in the "
                       "model config, or a 'batch_shape' or "
                       "'batch_input_shape' on the first layer");
    x = model->Input(*shape,
                     {.loc = field ? doc.locate(field) : layers[0].loc});
  }
  if (model->hasFailed())
    return failure();
  for (size_t i = first; i < layers.size(); ++i) {
    LayerEntry &entry = layers[i];
    if (entry.inputShape)
      return layerError(entry, "an InputLayer may only come first in a "
                               "Sequential model");
    x = call(entry, {x});
    if (!x)
      return failure();
  }
  outputs.push_back(x);
  outputNames.push_back(layers.back().name);
  outputLoc = layers.back().loc;
  return success();
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

mlir::OwningOpRef<mlir::ModuleOp> ModelImporter::import() {
  const json::Value &root = doc.root();
  const json::Object *rootObject = root.getAsObject();
  if (!rootObject) {
    (void)fileError(&root, "expected a JSON object (a Keras model config as "
                           "model.to_json() writes it), got " +
                               kindName(root));
    return nullptr;
  }
  ConfigReader rootReader(doc, root, *rootObject, "", fileSink());
  std::string className;
  if (!rootReader.getSet("class_name")) {
    (void)fileError(&root, "missing field 'class_name': not a Keras model "
                           "config (as model.to_json() writes it)");
    return nullptr;
  }
  if (failed(rootReader.readString("class_name", className)))
    return nullptr;
  bool functional = className == "Functional" || className == "Model";
  if (!isModelClass(className)) {
    (void)rootReader.unsupportedValue(
        "class_name", "expected a model: 'Functional', 'Model' or "
                      "'Sequential'");
    return nullptr;
  }
  std::unique_ptr<ConfigReader> modelConfig = rootReader.child("config");
  if (!modelConfig || failed(checkImportOptions(options, doc.fileLoc())))
    return nullptr;
  std::string name = functional ? "functional" : "sequential";
  if (failed(modelConfig->readString("name", name)) ||
      failed(modelConfig->readBool("trainable", traits.trainable)))
    return nullptr;
  // tf.keras 2's to_json writes its version; Keras 3's writes none.
  if (const json::Value *version = rootObject->get("keras_version"))
    if (std::optional<llvm::StringRef> text = version->getAsString())
      traits.tfKeras2 = text->starts_with("2.");
  if (!modelConfig->getSet("layers")) {
    (void)modelConfig->missing("layers");
    return nullptr;
  }

  model = std::make_shared<ModelBuilder>(
      &ctx, name, options.batchSize.value_or(kDefaultBatchSize),
      doc.locate(&root));
  this->functional = functional;
  const json::Value *layersValue = nullptr;
  if (failed(readLayerList(*modelConfig, functional, layersValue)))
    return nullptr;
  std::vector<Tensor> outputs;
  if (functional ? failed(buildFunctional(*modelConfig, outputs))
                 : failed(buildSequential(*modelConfig, *layersValue, outputs)))
    return nullptr;
  // The compile_config, read now that the outputs it names are known.
  std::optional<builder::Training> training;
  if (failed(readTraining(rootReader, options, outputNames, training)))
    return nullptr;
  if (training) {
    for (auto [i, name] : llvm::enumerate(outputNames))
      if (llvm::is_contained(llvm::ArrayRef(outputNames).drop_front(i + 1),
                             name)) {
        (void)modelConfig->error("output_layers",
                                 "two outputs come from layer '" + name +
                                     "': the logs and the data name each "
                                     "output by its layer");
        return nullptr;
      }
    training->loc = outputLoc;
    // Keras' compile wraps the optimizer in a LossScaleOptimizer only when
    // the model's own policy is mixed_float16. A Sequential saves that
    // policy (a Functional does not: graphc's Python trainer adds it), so
    // layers of dtype mixed_float16 in a float32 model train unscaled.
    if (modelConfig->getSet("dtype")) {
      builder::DTypePolicy policy;
      if (failed(readDtypePolicy(*modelConfig, policy)))
        return nullptr;
      training->no_auto_loss_scale =
          policy != builder::DTypePolicy::mixed_float16;
    }
  }
  // One output needs no name: its loss, data and logs are the model's.
  return model->finish(outputs, training,
                       outputs.size() > 1 ? llvm::ArrayRef(outputNames)
                                          : llvm::ArrayRef<std::string>());
}

/// The byte offset and message of a llvm::json parse error, which logs as
/// "[line:column, byte=N]: message".
std::pair<size_t, std::string> parseErrorPosition(llvm::Error error) {
  std::string text = llvm::toString(std::move(error));
  llvm::StringRef rest(text);
  size_t offset = 0;
  if (rest.consume_front("[")) {
    size_t byte = rest.find("byte=");
    size_t close = rest.find("]: ");
    if (byte != llvm::StringRef::npos && close != llvm::StringRef::npos &&
        byte < close && !rest.slice(byte + 5, close).getAsInteger(10, offset))
      return {offset, rest.drop_front(close + 3).str()};
  }
  return {0, text};
}

// Limits on a JSON text, checked before llvm::json::parse sees it. Each
// refuses only hostile or broken files: the largest real configs are some
// hundred KiB.

/// llvm::json::parse recurses once per level of nesting, and so do the
/// parsed value's destructor and JsonSourceMap: a file nested 50,000 deep
/// overflows the stack. A Keras config nests less than 30 deep.
constexpr unsigned kMaxJsonNesting = 1000;

/// llvm::json keeps an object in a hash map of at least 64 entries, some
/// 4 KiB: 8 MB of `{"a":1},` took 4 GiB; 250,000 objects take about 1 GiB.
/// A Keras-written config has about 11 objects a layer (some 22,000
/// layers); a minimal one 2, the layer and its config, so that a chain of
/// 100,000 such layers (bench/import-scale.sh) fits.
constexpr size_t kMaxJsonObjects = 250000;

/// Bounds what a parsed value takes where objects do not: 16 MiB of numbers
/// parse into some 800 MiB.
constexpr size_t kMaxJsonBytes = size_t(16) << 20;

/// A limit `text` exceeds: where (no offset: the whole text) and how.
struct JsonLimitFault {
  std::optional<size_t> offset;
  std::string message;
};

/// The first limit `text` exceeds. Depth only grows at an opening bracket
/// outside string literals, where the parser would also descend, so text
/// that passes cannot take the parser deeper than kMaxJsonNesting.
std::optional<JsonLimitFault> checkJsonLimits(llvm::StringRef text) {
  if (text.size() > kMaxJsonBytes)
    return JsonLimitFault{std::nullopt,
                          ("JSON of " + llvm::Twine(text.size()) +
                           " bytes; the importer reads at most " +
                           llvm::Twine(kMaxJsonBytes >> 20) +
                           " MiB (a Keras model config is some hundred KiB)")
                              .str()};
  unsigned depth = 0;
  size_t objects = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '"') {
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i; // The escaped character, a quote perhaps.
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonNesting)
        return JsonLimitFault{
            i, ("JSON nested deeper than " + llvm::Twine(kMaxJsonNesting) +
                " levels (a Keras model config nests less than 30 deep)")
                   .str()};
      if (c == '{' && ++objects > kMaxJsonObjects)
        return JsonLimitFault{
            i, ("more than " + llvm::Twine(kMaxJsonObjects) +
                " JSON objects (a Keras model config has about 11 a layer)")
                   .str()};
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

} // namespace

mlir::OwningOpRef<mlir::ModuleOp>
importKerasJson(llvm::StringRef text, llvm::StringRef bufferName,
                mlir::MLIRContext &ctx, const ImportOptions &options) {
  if (std::optional<JsonLimitFault> fault = checkJsonLimits(text)) {
    // Line 0 names the whole file.
    LineColumn at =
        fault->offset ? lineColumnOf(text, *fault->offset) : LineColumn{0, 0};
    mlir::emitError(
        mlir::FileLineColLoc::get(&ctx, bufferName, at.line, at.column))
        << fault->message;
    return nullptr;
  }
  llvm::Expected<json::Value> parsed = json::parse(text);
  if (!parsed) {
    auto [offset, message] = parseErrorPosition(parsed.takeError());
    // At the end of the text the file was cut short: point just past its
    // last character rather than at the trailing newline.
    bool truncated = llvm::StringRef(text).drop_front(offset).trim().empty();
    if (truncated)
      offset = llvm::StringRef(text).rtrim().size();
    LineColumn at = lineColumnOf(text, offset);
    mlir::emitError(
        mlir::FileLineColLoc::get(&ctx, bufferName, at.line, at.column))
        << "invalid JSON: "
        << (truncated ? "the text ends early (truncated?): " : "") << message;
    return nullptr;
  }
  ConfigDocument doc(bufferName, text, std::move(*parsed), ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      ModelImporter(doc, ctx, options).import();
  // The config travels to the plan, so that graphrun writes the user's own
  // model back into Keras' files (config.json of a .keras): as it came, or
  // with the options that changed its training laid over compile_config.
  if (module) {
    std::string config = text.str();
    if (options.loss || options.fromLogits || options.optimizer ||
        options.learningRate || options.clipnorm || options.globalClipnorm ||
        options.clipvalue || options.weightDecay) {
      llvm::Expected<llvm::json::Value> value = llvm::json::parse(text);
      if (value && value->getAsObject()) {
        applyOptionsToCompileConfig(*value->getAsObject(), options);
        config = llvm::formatv("{0}", *value).str();
      } else if (!value) {
        llvm::consumeError(value.takeError());
      }
    }
    (*module)->setAttr(mlir::graph::kKerasConfigAttr,
                       mlir::StringAttr::get(&ctx, config));
  }
  return module;
}

mlir::OwningOpRef<mlir::ModuleOp>
importKerasFile(llvm::StringRef path, mlir::MLIRContext &ctx,
                const ImportOptions &options) {
  llvm::StringRef name = path == "-" ? "<stdin>" : path;
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false);
  if (!buffer) {
    mlir::emitError(mlir::FileLineColLoc::get(&ctx, name, 0, 0))
        << "cannot read the file: " << buffer.getError().message();
    return nullptr;
  }
  return importKerasBuffer((*buffer)->getBuffer(), name, ctx, options);
}

mlir::OwningOpRef<mlir::ModuleOp>
importKerasBuffer(llvm::StringRef bytes, llvm::StringRef bufferName,
                  mlir::MLIRContext &ctx, const ImportOptions &options) {
  // HDF5's signature: Keras' legacy model.save("m.h5"), whose config is an
  // HDF5 attribute, or a weights file.
  if (bytes.starts_with(llvm::StringRef("\x89HDF\r\n\x1a\n", 8))) {
    mlir::emitError(mlir::FileLineColLoc::get(&ctx, bufferName, 0, 0))
        << "an HDF5 file (Keras' legacy model.save(\"m.h5\"), or weights "
           "alone): graph-import reads a .keras archive or a model's JSON; "
           "open it in Keras and model.save(\"m.keras\") (Python's "
           "graphc.compile(\"m.h5\") does that itself)";
    return nullptr;
  }
  if (!bufferName.ends_with(".keras") && !looksLikeZip(bytes))
    return importKerasJson(bytes, bufferName, ctx, options);

  llvm::Expected<std::string> config = readKerasArchiveConfig(bytes);
  if (!config) {
    mlir::emitError(mlir::FileLineColLoc::get(&ctx, bufferName, 0, 0))
        << llvm::toString(config.takeError());
    return nullptr;
  }
  // Positions are in the archive's config.json, named like a path into it.
  return importKerasJson(*config, (bufferName + "/" + kKerasConfigMember).str(),
                         ctx, options);
}

} // namespace graph::keras
