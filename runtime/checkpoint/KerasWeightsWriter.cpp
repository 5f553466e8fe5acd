//===- KerasWeightsWriter.cpp - Keras' own weights files, written ---------===//

#include "runtime/checkpoint/KerasWeightsWriter.h"

#include "runtime/base/AtomicFile.h"
#include "runtime/base/ZipArchive.h"
#include "runtime/checkpoint/Hdf5.h"
#include "runtime/checkpoint/KerasNaming.h"
#include "runtime/checkpoint/KerasWeights.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/core/LearningRateSchedule.h"
#include "runtime/plan/PlanLoader.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <ctime>
#include <map>
#include <set>
#include <unistd.h>

namespace graph::runtime::checkpoint {

namespace {

bool endsWith(const std::string &s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// ---------------------------------------------------------------------------
// An HDF5 file in memory
// ---------------------------------------------------------------------------

/// An HDF5 file built in memory (the core driver without a backing store),
/// whose bytes image() returns; errors say which object failed.
class MemoryH5 {
public:
  Status create() {
    static std::atomic<int> serial{0};
    // The core driver keys open files by name: one of our own.
    std::string name = "graphrun-" + std::to_string(::getpid()) + "-" +
                       std::to_string(serial++) + ".h5";
    Hid fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    if (!fapl || H5Pset_fapl_core(fapl.get(), size_t(1) << 20, false) < 0)
      return fail("/", "cannot set up an in-memory file");
    file_ = Hid(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()),
                H5Fclose);
    if (!file_)
      return fail("/", "cannot create the file");
    // No modification times in object headers (h5py's track_times=False):
    // the same weights give the same bytes.
    gcpl_ = Hid(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
    dcpl_ = Hid(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    if (!gcpl_ || !dcpl_ || H5Pset_obj_track_times(gcpl_.get(), false) < 0 ||
        H5Pset_obj_track_times(dcpl_.get(), false) < 0)
      return fail("/", "cannot set up object creation");
    return Status::ok();
  }

  /// The group at `path` ("a/b/c"), made with its parents if need be.
  Status group(const std::string &path, Hid &out) {
    Hid at(H5Gopen2(file_.get(), "/", H5P_DEFAULT), H5Gclose);
    std::string sofar;
    size_t begin = 0;
    while (begin <= path.size()) {
      size_t end = path.find('/', begin);
      if (end == std::string::npos)
        end = path.size();
      std::string part = path.substr(begin, end - begin);
      begin = end + 1;
      if (part.empty())
        continue;
      sofar += "/" + part;
      Hid next;
      if (H5Lexists(at.get(), part.c_str(), H5P_DEFAULT) > 0)
        next = Hid(H5Gopen2(at.get(), part.c_str(), H5P_DEFAULT), H5Gclose);
      else
        next = Hid(H5Gcreate2(at.get(), part.c_str(), H5P_DEFAULT, gcpl_.get(),
                              H5P_DEFAULT),
                   H5Gclose);
      if (!next)
        return fail(sofar, "cannot create the group");
      at = std::move(next);
    }
    out = std::move(at);
    return Status::ok();
  }

  /// A dataset `name` under `parent` of `type` and `shape` (empty: a
  /// scalar) holding `data`; `name` may hold '/' (parents are made).
  Status dataset(hid_t parent, const std::string &where,
                 const std::string &name, hid_t type,
                 const std::vector<int64_t> &shape, const void *data) {
    std::vector<hsize_t> dims(shape.begin(), shape.end());
    Hid space(shape.empty() ? H5Screate(H5S_SCALAR)
                            : H5Screate_simple(static_cast<int>(dims.size()),
                                               dims.data(), nullptr),
              H5Sclose);
    Hid lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    if (!space || !lcpl || H5Pset_create_intermediate_group(lcpl.get(), 1) < 0)
      return fail(where + "/" + name, "cannot describe the dataset");
    Hid set(H5Dcreate2(parent, name.c_str(), type, space.get(), lcpl.get(),
                       dcpl_.get(), H5P_DEFAULT),
            H5Dclose);
    if (!set ||
        H5Dwrite(set.get(), type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
      return fail(where + "/" + name, "cannot write the dataset");
    return Status::ok();
  }

  /// A scalar variable-length UTF-8 string attribute, as h5py writes a str.
  Status stringAttribute(hid_t object, const std::string &where,
                         const char *name, const std::string &value) {
    Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
    Hid space(H5Screate(H5S_SCALAR), H5Sclose);
    if (!type || !space || H5Tset_size(type.get(), H5T_VARIABLE) < 0 ||
        H5Tset_cset(type.get(), H5T_CSET_UTF8) < 0)
      return fail(where, "cannot describe attribute " + std::string(name));
    Hid attr(H5Acreate2(object, name, type.get(), space.get(), H5P_DEFAULT,
                        H5P_DEFAULT),
             H5Aclose);
    const char *text = value.c_str();
    if (!attr || H5Awrite(attr.get(), type.get(), &text) < 0)
      return fail(where, "cannot write attribute " + std::string(name));
    return Status::ok();
  }

  /// A 1-D attribute of fixed-length byte strings, as h5py writes a list of
  /// bytes (numpy 'S'); an empty list is float64 [0], as Keras' legacy
  /// writer leaves np.asarray([]).
  Status bytesListAttribute(hid_t object, const std::string &where,
                            const std::string &name,
                            const std::vector<std::string> &values) {
    hsize_t n = values.size();
    Hid space(H5Screate_simple(1, &n, nullptr), H5Sclose);
    if (!space)
      return fail(where, "cannot describe attribute " + name);
    if (values.empty()) {
      Hid attr(H5Acreate2(object, name.c_str(), H5T_IEEE_F64LE, space.get(),
                          H5P_DEFAULT, H5P_DEFAULT),
               H5Aclose);
      if (!attr)
        return fail(where, "cannot write attribute " + name);
      return Status::ok();
    }
    size_t width = 1;
    for (const std::string &v : values)
      width = std::max(width, v.size());
    std::string packed(values.size() * width, '\0');
    for (size_t i = 0; i < values.size(); ++i)
      std::copy(values[i].begin(), values[i].end(),
                packed.begin() + static_cast<std::ptrdiff_t>(i * width));
    Hid type(H5Tcopy(H5T_C_S1), H5Tclose);
    if (!type || H5Tset_size(type.get(), width) < 0 ||
        H5Tset_strpad(type.get(), H5T_STR_NULLPAD) < 0)
      return fail(where, "cannot describe attribute " + name);
    Hid attr(H5Acreate2(object, name.c_str(), type.get(), space.get(),
                        H5P_DEFAULT, H5P_DEFAULT),
             H5Aclose);
    if (!attr || H5Awrite(attr.get(), type.get(), packed.data()) < 0)
      return fail(where, "cannot write attribute " + name);
    return Status::ok();
  }

  /// Keras' save_attributes_to_hdf5_group: a list whose bytes exceed an
  /// object header's room is split, as np.array_split splits it, into
  /// `name`0, `name`1, ... (each chunk under 64512 bytes).
  Status kerasListAttribute(hid_t object, const std::string &where,
                            const std::string &name,
                            const std::vector<std::string> &values) {
    constexpr size_t kHeaderLimit = 64512;
    size_t width = 1;
    for (const std::string &v : values) {
      if (v.size() > kHeaderLimit)
        return Status::error(where + ": attribute " + name + ": '" +
                             v.substr(0, 40) + "...' is longer than HDF5 " +
                             "can hold in an attribute");
      width = std::max(width, v.size());
    }
    size_t chunks = 1;
    auto largestChunk = [&](size_t k) {
      return (values.size() / k + (values.size() % k ? 1 : 0)) * width;
    };
    while (largestChunk(chunks) > kHeaderLimit)
      ++chunks;
    if (chunks == 1)
      return bytesListAttribute(object, where, name, values);
    size_t at = 0;
    for (size_t k = 0; k < chunks; ++k) {
      size_t count = values.size() / chunks + (k < values.size() % chunks);
      std::vector<std::string> part(
          values.begin() + static_cast<std::ptrdiff_t>(at),
          values.begin() + static_cast<std::ptrdiff_t>(at + count));
      at += count;
      if (Status s =
              bytesListAttribute(object, where, name + std::to_string(k), part);
          !s)
        return s;
    }
    return Status::ok();
  }

  /// The file's bytes, complete.
  Status image(std::string &out) {
    if (H5Fflush(file_.get(), H5F_SCOPE_GLOBAL) < 0)
      return fail("/", "cannot flush the file");
    ssize_t size = H5Fget_file_image(file_.get(), nullptr, 0);
    if (size < 0)
      return fail("/", "cannot take the file's image");
    out.assign(static_cast<size_t>(size), '\0');
    if (H5Fget_file_image(file_.get(), out.data(), out.size()) != size)
      return fail("/", "cannot take the file's image");
    return Status::ok();
  }

private:
  Status fail(const std::string &object, const std::string &what) {
    std::string detail = hdf5Detail();
    return Status::error(object + ": " + what +
                         (detail.empty() ? "" : " (HDF5: " + detail + ")"));
  }

  Hid file_, gcpl_, dcpl_;
};

// ---------------------------------------------------------------------------
// The model as Keras sees it
// ---------------------------------------------------------------------------

/// The plan's variables by name: trainable or not.
std::map<std::string, bool> trainability(const plan::Plan &plan) {
  std::map<std::string, bool> out;
  if (plan.variables())
    for (const plan::Variable *v : *plan.variables())
      out[v->name()->str()] = v->trainable();
  return out;
}

/// The model's layers, found in its Keras config, with their variables.
struct KerasModel {
  std::string name;
  std::vector<ConfigLayer> layers;
  /// Each layer's variables (by the layer's name), in Keras' order.
  std::map<std::string, std::vector<int>> weights;
  /// model.trainable_variables, in order: what the optimizer's slots follow.
  std::vector<int> trainable;
  /// Each variable of the plan, by name: trainable or not.
  std::map<std::string, bool> trainability;
};

void collectTrainable(const std::vector<ConfigLayer> &layers,
                      const KerasModel &model,
                      const std::map<std::string, bool> &trainable,
                      const MirroredVariables &variables,
                      std::vector<int> &out) {
  for (const ConfigLayer &layer : layers) {
    if (layer.isModel) {
      collectTrainable(layer.layers, model, trainable, variables, out);
      continue;
    }
    auto it = model.weights.find(layer.name);
    if (it == model.weights.end())
      continue;
    for (int v : it->second) {
      auto t = trainable.find(variables.name(v));
      if (t != trainable.end() && t->second)
        out.push_back(v);
    }
  }
}

void collectNames(const std::vector<ConfigLayer> &layers,
                  std::set<std::string> &out) {
  for (const ConfigLayer &layer : layers) {
    out.insert(layer.name);
    collectNames(layer.layers, out);
  }
}

Status describeModel(const MirroredVariables &variables, const plan::Plan &plan,
                     KerasModel &model) {
  if (!plan.keras_config() || plan.keras_config()->size() == 0)
    return Status::error(
        "the plan holds no Keras config (the model was not imported from "
        "Keras JSON or a .keras file, or graphc is older than this graphrun): "
        "Keras' files name their groups after it; write .safetensors "
        "instead, or compile the plan again");
  if (Status s =
          configLayers(plan.keras_config()->str(), model.layers, model.name);
      !s)
    return s;
  std::set<std::string> names;
  collectNames(model.layers, names);
  for (const ModelLayer &layer :
       modelLayers(variables, modelWeights(variables))) {
    if (!names.count(layer.name))
      return Status::error("variable '" + variables.name(layer.weights[0]) +
                           "' belongs to no layer of the model's Keras "
                           "config: Keras' files could not place it");
    model.weights[layer.name] = layer.weights;
  }
  model.trainability = trainability(plan);
  collectTrainable(model.layers, model, model.trainability, variables,
                   model.trainable);
  return Status::ok();
}

/// Whether `layer`'s weights are an adaptable Normalization's mean and
/// variance: Keras keeps a third, an int32 `count` (0: Keras 3's adapt
/// never sets it, it is there for old saved models), and refuses a file
/// without it. The plan keeps no such variable; the writers add it.
bool hasNormalizationCount(const ConfigLayer &layer,
                           const std::vector<int> &weights,
                           const MirroredVariables &variables) {
  auto named = [&](int v, std::string_view weight) {
    std::string_view name = variables.name(v);
    return name.size() > weight.size() && name.ends_with(weight) &&
           name[name.size() - weight.size() - 1] == '/';
  };
  return layer.className == "Normalization" && weights.size() == 2 &&
         named(weights[0], "mean") && named(weights[1], "variance");
}

Status readFloats(const MirroredVariables &variables, int v,
                  std::vector<float> &out) {
  out.resize(static_cast<size_t>(variables.bytes(v) / sizeof(float)));
  return variables.read(v, out.data());
}

// ---------------------------------------------------------------------------
// Keras 3: .weights.h5
// ---------------------------------------------------------------------------

Status writeLayers(MemoryH5 &h5, const std::vector<ConfigLayer> &layers,
                   const std::string &prefix, const KerasModel &model,
                   const MirroredVariables &variables) {
  std::vector<float> values;
  for (const ConfigLayer &layer : layers) {
    const std::string path = prefix + "/" + layer.group;
    Hid vars;
    if (Status s = h5.group(path + "/vars", vars); !s)
      return s;
    if (Status s =
            h5.stringAttribute(vars.get(), path + "/vars", "name", layer.name);
        !s)
      return s;
    if (layer.isModel) {
      if (Status s =
              writeLayers(h5, layer.layers, path + "/layers", model, variables);
          !s)
        return s;
      continue;
    }
    auto it = model.weights.find(layer.name);
    if (it == model.weights.end())
      continue;
    for (size_t i = 0; i < it->second.size(); ++i) {
      int v = it->second[i];
      if (Status s = readFloats(variables, v, values); !s)
        return s;
      if (Status s =
              h5.dataset(vars.get(), path + "/vars", std::to_string(i),
                         H5T_IEEE_F32LE, variables.shape(v), values.data());
          !s)
        return s;
    }
    if (hasNormalizationCount(layer, it->second, variables)) {
      int32_t count = 0;
      if (Status s = h5.dataset(vars.get(), path + "/vars", "2", H5T_STD_I32LE,
                                {}, &count);
          !s)
        return s;
    }
  }
  return Status::ok();
}

/// Keras' optimizer class names, snake-cased as its default name.
const char *optimizerName(plan::OptimizerKind kind, bool decoupledDecay) {
  switch (kind) {
  case plan::OptimizerKind::sgd:
    return "sgd";
  case plan::OptimizerKind::adam:
    return decoupledDecay ? "adam_w" : "adam";
  case plan::OptimizerKind::adagrad:
    return "adagrad";
  case plan::OptimizerKind::adamax:
    return "adamax";
  case plan::OptimizerKind::nadam:
    return "nadam";
  case plan::OptimizerKind::rmsprop:
    return "rm_sprop";
  }
  return "optimizer";
}

/// The optimizer's variables in the order Keras' build() creates them: per
/// group, our slot name for every trained variable in turn. A group of
/// several slots interleaves them per variable (Keras'
/// add_optimizer_variables with a list of names).
std::vector<std::vector<std::string>> slotGroups(const plan::Plan &plan) {
  std::vector<std::vector<std::string>> groups;
  if (trainingHyperParameter(plan, "use_ema", 0) != 0)
    groups.push_back({"average"});
  if (trainingHyperParameter(plan, "gradient_accumulation_steps", 0) > 0)
    groups.push_back({"grad_accum"});
  switch (plan.training()->optimizer()) {
  case plan::OptimizerKind::sgd:
    if (trainingHyperParameter(plan, "momentum", 0) != 0)
      groups.push_back({"momentum"});
    break;
  case plan::OptimizerKind::adam:
    groups.push_back({"m", "v"});
    if (trainingHyperParameter(plan, "amsgrad", 0) != 0)
      groups.push_back({"vhat"});
    break;
  case plan::OptimizerKind::adagrad:
    groups.push_back({"accumulator"});
    break;
  case plan::OptimizerKind::adamax:
    groups.push_back({"m", "u"});
    break;
  case plan::OptimizerKind::nadam:
    groups.push_back({"m", "v"});
    break;
  case plan::OptimizerKind::rmsprop:
    groups.push_back({"rms"});
    if (trainingHyperParameter(plan, "momentum", 0) != 0)
      groups.push_back({"momentum"});
    if (trainingHyperParameter(plan, "centered", 0) != 0)
      groups.push_back({"mg"});
    break;
  }
  return groups;
}

/// The plan's optimizer slots in the order Keras' build() creates them
/// (slotGroups over model.trainable_variables).
Status kerasSlots(const MirroredVariables &variables, const plan::Plan &plan,
                  const KerasModel &model, std::vector<int> &out) {
  out.clear();
  for (const std::vector<std::string> &group : slotGroups(plan))
    for (int v : model.trainable)
      for (const std::string &slot : group) {
        std::string name = variables.name(v) + "/" + slot;
        int s = variables.find(name);
        if (s < 0)
          return Status::error("the plan has no optimizer slot '" + name +
                               "', which Keras' optimizer keeps");
        out.push_back(s);
      }
  return Status::ok();
}

} // namespace

const std::vector<std::string> &kerasOptimizerDefaultNames() {
  static const std::vector<std::string> names = {
      "adadelta", "adafactor", "adagrad",  "adam", "adam_w",
      "adamax",   "ftrl",      "lamb",     "lion", "loss_scale_optimizer",
      "muon",     "nadam",     "rm_sprop", "sgd"};
  return names;
}

Status kerasOptimizerLayout(const MirroredVariables &variables,
                            const plan::Plan &plan, KerasOptimizerLayout &out) {
  if (trainingHyperParameter(plan, "use_ema", 0) != 0 ||
      trainingHyperParameter(plan, "gradient_accumulation_steps", 0) > 0 ||
      trainingHyperParameter(plan, "loss_scale", 0) > 0 ||
      variables.find("optimizer/dynamic_scale") >= 0)
    return Status::error("the optimizer keeps state besides its slots "
                         "(use_ema, gradient accumulation or loss scaling)");
  KerasModel model;
  if (Status s = describeModel(variables, plan, model); !s)
    return s;
  const plan::OptimizerKind kind = plan.training()->optimizer();
  out = {};
  // Keras' Adam and AdamW are one kind here (the plan's weight_decay says
  // which decay), and either may have saved it.
  switch (kind) {
  case plan::OptimizerKind::adam:
    out.classes = {"Adam", "AdamW"};
    out.names = {"adam", "adam_w"};
    break;
  case plan::OptimizerKind::sgd:
    out.classes = {"SGD"};
    break;
  case plan::OptimizerKind::adagrad:
    out.classes = {"Adagrad"};
    break;
  case plan::OptimizerKind::adamax:
    out.classes = {"Adamax"};
    break;
  case plan::OptimizerKind::nadam:
    out.classes = {"Nadam"};
    break;
  case plan::OptimizerKind::rmsprop:
    out.classes = {"RMSprop"};
    break;
  }
  if (out.names.empty())
    out.names = {optimizerName(kind, false)};
  out.rateVariable = trainingHyperParameter(plan, "lr_schedule", 0) == 0;
  if (Status s = kerasSlots(variables, plan, model, out.slots); !s)
    return s;
  out.trailing = kind == plan::OptimizerKind::nadam ? 1 : 0;
  return Status::ok();
}

namespace {

/// A one-element variable of the plan as a number (0 when it has none).
double scalarVariable(const MirroredVariables &variables,
                      const std::string &name, Status &status) {
  int v = variables.find(name);
  if (v < 0)
    return 0;
  std::vector<float> values;
  status = readFloats(variables, v, values);
  return status && !values.empty() ? values[0] : 0;
}

/// Keras' optimizer variables in `vars` (at `path`), counted on from
/// `index`: iterations, the learning rate unless a schedule sets it, the
/// slots, Nadam's u_product.
Status writeOptimizerVariables(MemoryH5 &h5, Hid &vars, const std::string &path,
                               int &index, const KerasModel &model,
                               const MirroredVariables &variables,
                               const KerasModelState &state,
                               int64_t iterations) {
  const plan::Plan &plan = *state.plan;
  auto next = [&]() { return std::to_string(index++); };
  if (Status s =
          h5.dataset(vars.get(), path, next(), H5T_STD_I64LE, {}, &iterations);
      !s)
    return s;
  // A schedule is not a variable: Keras saves the rate only when it is one.
  if (trainingHyperParameter(plan, "lr_schedule", 0) == 0) {
    float rate = static_cast<float>(state.learningRate);
    if (Status s =
            h5.dataset(vars.get(), path, next(), H5T_IEEE_F32LE, {}, &rate);
        !s)
      return s;
  }
  std::vector<int> slots;
  if (Status s = kerasSlots(variables, plan, model, slots); !s)
    return s;
  std::vector<float> values;
  for (int s : slots) {
    if (Status st = readFloats(variables, s, values); !st)
      return st;
    if (Status st = h5.dataset(vars.get(), path, next(), H5T_IEEE_F32LE,
                               variables.shape(s), values.data());
        !st)
      return st;
  }
  // Nadam's u_product, a function of the step (LearningRateSchedule.h).
  if (plan.training()->optimizer() == plan::OptimizerKind::nadam) {
    float product = static_cast<float>(
        nadamUProduct(trainingHyperParameter(plan, "beta_1", 0.9), iterations));
    if (Status s =
            h5.dataset(vars.get(), path, next(), H5T_IEEE_F32LE, {}, &product);
        !s)
      return s;
  }
  return Status::ok();
}

/// The optimizer as Keras' saving_lib writes it. Under dynamic loss scaling
/// Keras' iterations are the updates applied (optimizer/iterations), not
/// the steps run. A model compiled with a LossScaleOptimizer (the plan's
/// `loss_scale`) is written in its layout: optimizer/vars holds its own
/// iterations and learning rate (both unused, 0), step_counter and
/// dynamic_scale, then the inner optimizer's variables, which
/// optimizer/inner_optimizer/vars holds again. So is a mixed_float16 model
/// whose compile_config names the plain optimizer: compile's
/// auto_scale_loss wrapped it, Keras saves the wrapper, and load_model's
/// compile wraps it again where the model's policy is mixed_float16 (a
/// Sequential's saved one, else the global policy at load).
Status writeOptimizer(MemoryH5 &h5, const KerasModel &model,
                      const MirroredVariables &variables,
                      const KerasModelState &state) {
  const plan::Plan &plan = *state.plan;
  const plan::OptimizerKind kind = plan.training()->optimizer();
  const std::string innerName = optimizerName(
      kind, trainingHyperParameter(plan, "weight_decay", 0) != 0 &&
                kind == plan::OptimizerKind::adam);
  Status status = Status::ok();
  int64_t iterations = state.iterations;
  if (variables.find("optimizer/iterations") >= 0)
    iterations = static_cast<int64_t>(
        scalarVariable(variables, "optimizer/iterations", status));
  if (!status)
    return status;
  const bool wrapped = trainingHyperParameter(plan, "loss_scale", 0) > 0 ||
                       variables.find("optimizer/dynamic_scale") >= 0;
  std::string path = "optimizer/vars";
  Hid vars;
  if (Status s = h5.group(path, vars); !s)
    return s;
  if (Status s = h5.stringAttribute(
          vars.get(), path, "name",
          wrapped ? std::string("loss_scale_optimizer") : innerName);
      !s)
    return s;
  int index = 0;
  if (wrapped) {
    auto next = [&]() { return std::to_string(index++); };
    int64_t zero = 0;
    float rate = 0.0f;
    auto counter = static_cast<int64_t>(
        scalarVariable(variables, "optimizer/step_counter", status));
    auto scale = static_cast<float>(
        scalarVariable(variables, "optimizer/dynamic_scale", status));
    if (!status)
      return status;
    for (Status s :
         {h5.dataset(vars.get(), path, next(), H5T_STD_I64LE, {}, &zero),
          h5.dataset(vars.get(), path, next(), H5T_IEEE_F32LE, {}, &rate),
          h5.dataset(vars.get(), path, next(), H5T_STD_I64LE, {}, &counter),
          h5.dataset(vars.get(), path, next(), H5T_IEEE_F32LE, {}, &scale)})
      if (!s)
        return s;
  }
  if (Status s = writeOptimizerVariables(h5, vars, path, index, model,
                                         variables, state, iterations);
      !s || !wrapped)
    return s;
  path = "optimizer/inner_optimizer/vars";
  Hid inner;
  if (Status s = h5.group(path, inner); !s)
    return s;
  if (Status s = h5.stringAttribute(inner.get(), path, "name", innerName); !s)
    return s;
  index = 0;
  return writeOptimizerVariables(h5, inner, path, index, model, variables,
                                 state, iterations);
}

Status kerasWeightsImage(const MirroredVariables &variables,
                         const KerasModelState &state, std::string &out) {
  KerasModel model;
  if (Status s = describeModel(variables, *state.plan, model); !s)
    return s;
  Hdf5Quiet quiet;
  MemoryH5 h5;
  if (Status s = h5.create(); !s)
    return s;
  // As saving_lib walks a model: its own variables (none), its layers,
  // then its other attributes (the optimizer).
  Hid vars;
  if (Status s = h5.group("vars", vars); !s)
    return s;
  if (Status s = h5.stringAttribute(vars.get(), "vars", "name", model.name); !s)
    return s;
  if (Status s = writeLayers(h5, model.layers, "layers", model, variables); !s)
    return s;
  if (Status s = writeOptimizer(h5, model, variables, state); !s)
    return s;
  return h5.image(out);
}

// ---------------------------------------------------------------------------
// Legacy HDF5: .h5
// ---------------------------------------------------------------------------

/// _legacy_weights(layer): trainable weights, then non-trainable; a nested
/// model's over all its layers.
void legacyWeights(const ConfigLayer &layer, const KerasModel &model,
                   const std::map<std::string, bool> &trainable,
                   const MirroredVariables &variables, bool wantTrainable,
                   std::vector<int> &out) {
  if (layer.isModel) {
    for (const ConfigLayer &inner : layer.layers)
      legacyWeights(inner, model, trainable, variables, wantTrainable, out);
    return;
  }
  auto it = model.weights.find(layer.name);
  if (it == model.weights.end())
    return;
  for (int v : it->second) {
    auto t = trainable.find(variables.name(v));
    if ((t != trainable.end() && t->second) == wantTrainable)
      out.push_back(v);
  }
}

Status legacyImage(const MirroredVariables &variables,
                   const KerasModelState &state, std::string &out) {
  KerasModel model;
  if (Status s = describeModel(variables, *state.plan, model); !s)
    return s;
  const std::map<std::string, bool> &trainable = model.trainability;
  Hdf5Quiet quiet;
  MemoryH5 h5;
  if (Status s = h5.create(); !s)
    return s;
  Hid root;
  if (Status s = h5.group("", root); !s)
    return s;
  // model.save("m.h5")'s root: the model's config, so that load_model
  // works too; load_weights reads /model_weights.
  nlohmann::json config =
      nlohmann::json::parse(state.plan->keras_config()->str(), nullptr, false);
  nlohmann::json modelConfig = {{"class_name", config["class_name"]},
                                {"config", config["config"]}};
  for (auto [name, value] : {std::pair<const char *, std::string>{
                                 "model_config", modelConfig.dump()},
                             {"backend", "tensorflow"},
                             {"keras_version", "3.15.1"}})
    if (Status s = h5.stringAttribute(root.get(), "/", name, value); !s)
      return s;
  // compile()'s arguments, so that load_model gives a compiled model, in
  // the form keras/src/legacy/saving/saving_utils.py's model_metadata
  // writes them: compile_config without its optimizer, which is
  // optimizer_config ({"class_name", "config"}).
  if (config.is_object() && config.contains("compile_config") &&
      config["compile_config"].is_object()) {
    nlohmann::json training = config["compile_config"];
    nlohmann::json optimizer = training.value("optimizer", nlohmann::json());
    training.erase("optimizer");
    if (optimizer.is_string())
      optimizer = {{"class_name", optimizer},
                   {"config", nlohmann::json::object()}};
    if (optimizer.is_object())
      training["optimizer_config"] = {
          {"class_name", optimizer.value("class_name", nlohmann::json())},
          {"config", optimizer.value("config", nlohmann::json::object())}};
    if (Status s = h5.stringAttribute(root.get(), "/", "training_config",
                                      training.dump());
        !s)
      return s;
  }
  Hid weights;
  if (Status s = h5.group("model_weights", weights); !s)
    return s;
  std::vector<std::string> layerNames;
  for (const ConfigLayer &layer : model.layers)
    layerNames.push_back(layer.name);
  if (Status s = h5.kerasListAttribute(weights.get(), "/model_weights",
                                       "layer_names", layerNames);
      !s)
    return s;
  for (auto [name, value] :
       {std::pair<const char *, std::string>{"backend", "tensorflow"},
        {"keras_version", "3.15.1"}})
    if (Status s = h5.bytesListAttribute(weights.get(), "/model_weights", name,
                                         {value});
        !s)
      return s;
  // Sorted by name, as Keras creates them.
  std::vector<const ConfigLayer *> sorted;
  for (const ConfigLayer &layer : model.layers)
    sorted.push_back(&layer);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const ConfigLayer *a, const ConfigLayer *b) {
                     return a->name < b->name;
                   });
  std::vector<float> values;
  for (const ConfigLayer *layer : sorted) {
    const std::string path = "model_weights/" + layer->name;
    Hid group;
    if (Status s = h5.group(path, group); !s)
      return s;
    std::vector<int> which;
    legacyWeights(*layer, model, trainable, variables, true, which);
    legacyWeights(*layer, model, trainable, variables, false, which);
    // tf.keras 2's names ("<layer>/<weight>:0"); readers match by position.
    std::vector<std::string> names;
    for (int v : which)
      names.push_back(variables.name(v) + ":0");
    const bool count =
        !layer->isModel && hasNormalizationCount(*layer, which, variables);
    if (count)
      names.push_back(layer->name + "/count:0");
    if (Status s = h5.kerasListAttribute(group.get(), "/" + path,
                                         "weight_names", names);
        !s)
      return s;
    for (size_t i = 0; i < which.size(); ++i) {
      if (Status s = readFloats(variables, which[i], values); !s)
        return s;
      if (Status s =
              h5.dataset(group.get(), "/" + path, names[i], H5T_IEEE_F32LE,
                         variables.shape(which[i]), values.data());
          !s)
        return s;
    }
    if (count) {
      int32_t zero = 0;
      if (Status s = h5.dataset(group.get(), "/" + path, names.back(),
                                H5T_STD_I32LE, {}, &zero);
          !s)
        return s;
    }
  }
  Hid top;
  if (Status s = h5.group("model_weights/top_level_model_weights", top); !s)
    return s;
  if (Status s = h5.bytesListAttribute(top.get(),
                                       "/model_weights/top_level_model_weights",
                                       "weight_names", {});
      !s)
    return s;
  return h5.image(out);
}

// ---------------------------------------------------------------------------
// .keras
// ---------------------------------------------------------------------------

Status kerasArchive(const MirroredVariables &variables,
                    const KerasModelState &state, std::string &out) {
  std::string weights;
  if (Status s = kerasWeightsImage(variables, state, weights); !s)
    return s;
  char date[32];
  std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  std::strftime(date, sizeof date, "%Y-%m-%d@%H:%M:%S", &local);
  // The Keras version whose format this is (saving_lib's metadata).
  nlohmann::json metadata = {{"keras_version", "3.15.1"}, {"date_saved", date}};
  std::string metadataText = metadata.dump();
  const std::string &config = state.plan->keras_config()->str();
  return storedZipArchive({{"metadata.json", metadataText},
                           {"config.json", config},
                           {kKerasWeightsMember, weights}},
                          out);
}

} // namespace

Status weightsFileFormat(const std::string &path, WeightsFileFormat &out) {
  std::string lower = path;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (endsWith(lower, ".safetensors"))
    out = WeightsFileFormat::safetensors;
  else if (endsWith(lower, ".weights.h5"))
    out = WeightsFileFormat::kerasWeights;
  else if (endsWith(lower, ".h5") || endsWith(lower, ".hdf5"))
    out = WeightsFileFormat::legacyH5;
  else if (endsWith(lower, ".keras"))
    out = WeightsFileFormat::kerasModel;
  else
    return Status::error(StatusCode::invalidInput,
                         path + ": unknown weights format; the name must end "
                                "in .weights.h5 (Keras 3's save_weights), .h5 "
                                "(tf.keras 2's layout), .keras (a whole Keras "
                                "model) or .safetensors");
  return Status::ok();
}

Status saveKerasFile(const std::string &path, WeightsFileFormat format,
                     const MirroredVariables &variables,
                     const KerasModelState &state) {
  if (!state.plan || !state.plan->training())
    return Status::error(path + ": the plan has no training configuration");
  std::string bytes;
  Status s;
  switch (format) {
  case WeightsFileFormat::kerasWeights:
    s = kerasWeightsImage(variables, state, bytes);
    break;
  case WeightsFileFormat::legacyH5:
    s = legacyImage(variables, state, bytes);
    break;
  case WeightsFileFormat::kerasModel:
    s = kerasArchive(variables, state, bytes);
    break;
  case WeightsFileFormat::safetensors:
    return Status::error(path + ": safetensors is written by saveWeights");
  }
  if (!s)
    return s.withContext(path);
  return writeFileAtomically(path, bytes);
}

Status saveWeightsFile(const std::string &path,
                       const MirroredVariables &variables,
                       const KerasModelState &state,
                       const std::map<std::string, std::string> &metadata) {
  WeightsFileFormat format;
  if (Status s = weightsFileFormat(path, format); !s)
    return s;
  if (format == WeightsFileFormat::safetensors)
    return saveWeights(path, variables, metadata);
  return saveKerasFile(path, format, variables, state);
}

} // namespace graph::runtime::checkpoint
