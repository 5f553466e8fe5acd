//===- KerasLayers.cpp - Keras layer configs to builder layers ------------===//

#include "frontends/keras/KerasLayers.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <algorithm>
#include <cmath>

namespace json = llvm::json;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace graph::keras {
namespace {

using builder::DTypePolicy;
using builder::Initializer;
using builder::InitKind;
using builder::Padding;
using builder::Tensor;

LogicalResult layerError(builder::ModelBuilder &model, const LayerEntry &entry,
                         const llvm::Twine &message) {
  model.emitLayerError(entry.loc, entry.name, entry.className, message);
  return failure();
}

/// Keras initializer names, as classes and as the snake-case strings Keras
/// also accepts.
std::optional<InitKind> parseInitializerName(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<InitKind>>(name)
      .Cases({"Zeros", "zeros"}, InitKind::zeros)
      .Cases({"Ones", "ones"}, InitKind::ones)
      .Cases({"Constant", "constant"}, InitKind::constant)
      .Cases({"RandomNormal", "random_normal"}, InitKind::random_normal)
      .Cases({"RandomUniform", "random_uniform"}, InitKind::random_uniform)
      .Cases({"TruncatedNormal", "truncated_normal"},
             InitKind::truncated_normal)
      .Cases({"GlorotUniform", "glorot_uniform"}, InitKind::glorot_uniform)
      .Cases({"GlorotNormal", "glorot_normal"}, InitKind::glorot_normal)
      .Cases({"HeNormal", "he_normal"}, InitKind::he_normal)
      .Cases({"HeUniform", "he_uniform"}, InitKind::he_uniform)
      .Cases({"LecunNormal", "lecun_normal"}, InitKind::lecun_normal)
      .Cases({"LecunUniform", "lecun_uniform"}, InitKind::lecun_uniform)
      .Default(std::nullopt);
}

/// The named variance-scaling initializer equal to a VarianceScaling config.
std::optional<InitKind> varianceScalingKind(double scale, llvm::StringRef mode,
                                            llvm::StringRef distribution) {
  // Keras reads "normal" as "truncated_normal".
  bool uniform = distribution == "uniform";
  bool normal = distribution == "truncated_normal" || distribution == "normal";
  if (scale == 1.0 && mode == "fan_avg")
    return uniform  ? std::optional(InitKind::glorot_uniform)
           : normal ? std::optional(InitKind::glorot_normal)
                    : std::nullopt;
  if (scale == 2.0 && mode == "fan_in")
    return uniform  ? std::optional(InitKind::he_uniform)
           : normal ? std::optional(InitKind::he_normal)
                    : std::nullopt;
  if (scale == 1.0 && mode == "fan_in")
    return uniform  ? std::optional(InitKind::lecun_uniform)
           : normal ? std::optional(InitKind::lecun_normal)
                    : std::nullopt;
  return std::nullopt;
}

constexpr llvm::StringLiteral kSupportedActivations =
    "linear, relu, sigmoid, tanh, softmax, elu, leaky_relu, gelu, relu6, "
    "silu, swish, hard_sigmoid, hard_silu, hard_swish";

constexpr llvm::StringLiteral kSupportedLayers =
    "InputLayer, Conv2D, Conv2DTranspose, DepthwiseConv2D, SeparableConv2D, "
    "Dense, "
    "MaxPooling2D, AveragePooling2D, "
    "GlobalAveragePooling2D, GlobalMaxPooling2D, UpSampling2D, "
    "ZeroPadding2D, Cropping2D, Permute, Flatten, Reshape, "
    "Activation, ReLU, Softmax, "
    "ELU, LeakyReLU, Dropout, SpatialDropout2D, BatchNormalization, "
    "LayerNormalization, Normalization, Add, Concatenate, Multiply, "
    "Subtract, Average, Maximum, Rescaling, LayerScale, StochasticDepth, "
    "CustomScaleLayer, RandomFlip, RandomRotation, RandomZoom, "
    "RandomTranslation, RandomCrop, RandomContrast";

/// A random layer's factor: a number f for [-f, f], or [lower, upper]
/// (RandomContrast writes its own pair, which is taken as written).
LogicalResult readFactor(ConfigReader &r, llvm::StringRef key,
                         std::array<double, 2> &out, bool required) {
  const json::Value *field = r.getSet(key);
  if (!field)
    return required ? r.missing(key) : success();
  if (std::optional<double> f = field->getAsNumber()) {
    out = {-std::abs(*f), std::abs(*f)};
    return success();
  }
  const json::Array *pair = field->getAsArray();
  std::optional<double> lower, upper;
  if (pair && pair->size() == 2) {
    lower = (*pair)[0].getAsNumber();
    upper = (*pair)[1].getAsNumber();
  }
  if (!lower || !upper)
    return r.unsupportedValue(key, "expected a number or [lower, upper]");
  out = {std::min(*lower, *upper), std::max(*lower, *upper)};
  return success();
}

/// Reads the activation in field `key` (a name, or Keras 3's object form
/// whose config is the name).
LogicalResult readActivation(ConfigReader &r, llvm::StringRef key,
                             builder::Activation &out, bool tfKeras2) {
  const json::Value *field = r.getSet(key);
  if (!field)
    return success();
  std::optional<llvm::StringRef> name = field->getAsString();
  if (const json::Object *object = field->getAsObject())
    if (const json::Value *config = object->get("config"))
      name = config->getAsString();
  if (!name)
    return r.error(key, "unsupported activation " + describe(*field) +
                            " (supported: " + kSupportedActivations + ")");
  std::optional<builder::Activation> activation =
      builder::parseActivation(*name);
  if (!activation)
    return r.error(key, "unsupported activation '" + *name +
                            "' (supported: " + kSupportedActivations + ")");
  // tf.keras 2's hard_sigmoid is another function (0.2 * x + 0.5, clipped).
  if (tfKeras2 && *activation == builder::Activation::hard_sigmoid)
    return r.error(key, "tf.keras 2's hard_sigmoid (clip(0.2 * x + 0.5, 0, "
                        "1)) is not supported, only Keras 3's (relu6(x + 3) "
                        "/ 6)");
  out = *activation;
  return success();
}

/// A non-empty list of numbers in field `key`.
LogicalResult readNumberList(ConfigReader &r, llvm::StringRef key,
                             std::vector<double> &out) {
  const json::Value *field = r.getSet(key);
  const json::Array *list = field ? field->getAsArray() : nullptr;
  if (!list || list->empty())
    return r.unsupportedValue(key, "expected a number or a non-empty list of "
                                   "numbers");
  for (const json::Value &v : *list) {
    std::optional<double> number = v.getAsNumber();
    if (!number)
      return r.unsupportedValue(key, "expected a number or a non-empty list "
                                     "of numbers");
    out.push_back(*number);
  }
  return success();
}

LogicalResult readPadding(ConfigReader &r, Padding &out) {
  std::string padding;
  if (failed(r.readString("padding", padding)))
    return failure();
  if (padding.empty())
    return success();
  std::string lower = llvm::StringRef(padding).lower();
  if (lower == "valid")
    out = Padding::valid;
  else if (lower == "same")
    out = Padding::same;
  else
    return r.unsupportedValue("padding", "expected 'valid' or 'same'");
  return success();
}

/// ZeroPadding2D's `padding` and Cropping2D's `cropping`: an int (all four
/// sides), a pair (symmetric height, width) or a pair of pairs ((top,
/// bottom), (left, right)).
LogicalResult readAmounts2D(ConfigReader &r, llvm::StringRef key,
                            builder::Padding2DOptions &out) {
  const json::Value *field = r.getSet(key);
  if (!field)
    return success();
  auto bad = [&] {
    return r.error(key, "expected an int, a pair (height, width) or a pair "
                        "of pairs ((top, bottom), (left, right)), got " +
                            describe(*field));
  };
  if (std::optional<int64_t> all = field->getAsInteger()) {
    out.top = out.bottom = out.left = out.right = *all;
    return success();
  }
  const json::Array *pair = field->getAsArray();
  if (!pair || pair->size() != 2)
    return bad();
  int64_t amounts[2][2];
  for (size_t axis = 0; axis < 2; ++axis) {
    const json::Value &e = (*pair)[axis];
    if (std::optional<int64_t> both = e.getAsInteger()) {
      amounts[axis][0] = amounts[axis][1] = *both;
      continue;
    }
    const json::Array *sides = e.getAsArray();
    if (!sides || sides->size() != 2)
      return bad();
    for (size_t side = 0; side < 2; ++side) {
      std::optional<int64_t> v = (*sides)[side].getAsInteger();
      if (!v)
        return bad();
      amounts[axis][side] = *v;
    }
  }
  for (auto &axis : amounts)
    for (int64_t v : axis)
      if (v < 0 || v > (int64_t(1) << 31))
        return r.unsupportedValue(key, "amounts must be in [0, 2^31]");
  out.top = amounts[0][0];
  out.bottom = amounts[0][1];
  out.left = amounts[1][0];
  out.right = amounts[1][1];
  return success();
}

/// Reads the initializer in field `key`: a name, or an object with a
/// class_name and a config of parameters.
LogicalResult readInitializer(ConfigReader &r, llvm::StringRef key,
                              Initializer &out) {
  const json::Value *field = r.getSet(key);
  if (!field)
    return success();
  std::string className;
  std::unique_ptr<ConfigReader> object;
  if (std::optional<llvm::StringRef> name = field->getAsString()) {
    className = name->str();
  } else if (field->getAsObject()) {
    object = r.child(key);
    if (failed(object->readString("class_name", className, true)))
      return failure();
    for (llvm::StringRef ignored : {"module", "registered_name"})
      object->ignore(ignored);
  } else {
    return r.error(key, "expected an initializer, got " + describe(*field));
  }

  std::unique_ptr<ConfigReader> config;
  if (object && object->getSet("config")) {
    config = object->child("config");
    if (!config)
      return failure();
  }

  std::optional<InitKind> kind = parseInitializerName(className);
  std::optional<Initializer::VarianceScaling> varianceScaling;
  if (!kind &&
      (className == "VarianceScaling" || className == "variance_scaling")) {
    double scale = 1.0;
    std::string mode = "fan_in", distribution = "truncated_normal";
    if (config && (failed(config->readDouble("scale", scale)) ||
                   failed(config->readString("mode", mode)) ||
                   failed(config->readString("distribution", distribution))))
      return failure();
    kind = varianceScalingKind(scale, mode, distribution);
    if (!kind) {
      // Any other form: the builder takes its fans from the variable.
      using VS = Initializer::VarianceScaling;
      std::optional<VS::Mode> m =
          llvm::StringSwitch<std::optional<VS::Mode>>(mode)
              .Case("fan_in", VS::Mode::fan_in)
              .Case("fan_out", VS::Mode::fan_out)
              .Case("fan_avg", VS::Mode::fan_avg)
              .Default(std::nullopt);
      std::optional<VS::Distribution> d =
          llvm::StringSwitch<std::optional<VS::Distribution>>(distribution)
              .Cases({"truncated_normal", "normal"},
                     VS::Distribution::truncated_normal)
              .Case("untruncated_normal", VS::Distribution::untruncated_normal)
              .Case("uniform", VS::Distribution::uniform)
              .Default(std::nullopt);
      if (!m || !d || !(scale > 0.0))
        return r.error(
            key, "unsupported VarianceScaling(scale=" + formatNumber(scale) +
                     ", mode='" + mode + "', distribution='" + distribution +
                     "'): expected a positive scale, mode fan_in, fan_out or "
                     "fan_avg and distribution truncated_normal, normal, "
                     "untruncated_normal or uniform");
      varianceScaling = VS{scale, *m, *d};
      kind = *d == VS::Distribution::uniform ? InitKind::random_uniform
                                             : InitKind::truncated_normal;
    }
  }
  if (!kind)
    return r.error(key, "unsupported initializer '" + className +
                            "' (supported: GlorotUniform, GlorotNormal, "
                            "HeNormal, HeUniform, LecunNormal, LecunUniform, "
                            "Zeros, Ones, Constant, RandomNormal, "
                            "RandomUniform, TruncatedNormal)");

  Initializer init = Initializer::of(*kind);
  init.variance_scaling = varianceScaling;
  if (config) {
    bool random = *kind != InitKind::zeros && *kind != InitKind::ones &&
                  *kind != InitKind::constant;
    if ((random && failed(config->readSeed("seed", init.seed))) ||
        ((*kind == InitKind::random_normal ||
          *kind == InitKind::truncated_normal) &&
         (failed(config->readDouble("mean", init.mean)) ||
          failed(config->readDouble("stddev", init.stddev)))) ||
        (*kind == InitKind::random_uniform &&
         (failed(config->readDouble("minval", init.minval)) ||
          failed(config->readDouble("maxval", init.maxval)))) ||
        (*kind == InitKind::constant &&
         failed(config->readDouble("value", init.value))))
      return failure();
    if (failed(config->checkNoOtherFields()))
      return failure();
  }
  if (object && failed(object->checkNoOtherFields()))
    return failure();
  out = init;
  return success();
}

} // namespace

/// A layer's `dtype` (or a Sequential model's own): a policy name (tf.keras
/// 2 and Keras 3 write "float32"), or a policy object, Keras 3's
/// {"module": "keras", "class_name": "DTypePolicy", "config": {"name": ...}}
/// or tf.keras 2's {"class_name": "Policy", "config": {"name": ...}}.
/// Unset is float32, Keras' default.
LogicalResult readDtypePolicy(ConfigReader &config, DTypePolicy &policy) {
  policy = DTypePolicy::float32;
  const json::Value *dtype = config.getSet("dtype");
  if (!dtype)
    return success();
  std::optional<llvm::StringRef> name = dtype->getAsString();
  if (const json::Object *object = dtype->getAsObject()) {
    std::optional<llvm::StringRef> className = object->getString("class_name");
    if (className != "DTypePolicy" && className != "Policy" &&
        className != "FloatDTypePolicy")
      return config.error("dtype", "a dtype policy object of class '" +
                                       className.value_or("") +
                                       "' (expected DTypePolicy or Policy)");
    if (const json::Object *policyConfig = object->getObject("config"))
      name = policyConfig->getString("name");
  }
  if (!name)
    return config.unsupportedValue(
        "dtype", "expected a policy name or a DTypePolicy object");
  if (*name == "float32")
    policy = DTypePolicy::float32;
  else if (*name == "mixed_bfloat16")
    policy = DTypePolicy::mixed_bfloat16;
  else if (*name == "mixed_float16")
    policy = DTypePolicy::mixed_float16;
  else if (*name == "bfloat16" || *name == "float16")
    return config.error(
        "dtype", "dtype policy '" + *name +
                     "' keeps the layer's variables in " + *name +
                     "; graph keeps every weight in float32 and computes in "
                     "reduced precision under 'mixed_" +
                     *name + "' (Keras' mixed precision), use that");
  else
    return config.error("dtype", "unsupported dtype policy '" + *name +
                                     "' (supported: float32, mixed_bfloat16, "
                                     "mixed_float16)");
  return success();
}

namespace {

/// The fields every layer has.
template <typename Options>
LogicalResult readCommon(const LayerEntry &entry, ConfigReader &config,
                         bool modelTrainable, Options &options) {
  options.name = entry.name;
  options.loc = entry.loc;
  bool trainable = true;
  if (failed(config.readBool("trainable", trainable)))
    return failure();
  options.trainable = trainable && modelTrainable;
  config.ignore("name");
  // A Sequential's first layer may carry the model's input shape; the
  // Sequential reads it from there, elsewhere Keras ignores it.
  config.ignore("batch_input_shape");
  config.ignore("batch_shape");
  config.ignore("input_shape");
  config.ignore("autocast");
  return readDtypePolicy(config, options.dtype_policy);
}

} // namespace

LogicalResult readBatchShape(ConfigReader &config, llvm::StringRef key,
                             std::optional<std::vector<int64_t>> &shape,
                             std::optional<FixedBatch> &batch) {
  const json::Value *field = config.getSet(key);
  if (!field)
    return success();
  const json::Array *dims = field->getAsArray();
  if (!dims || dims->empty())
    return config.error(key, "expected a list [batch, dims...], got " +
                                 describe(*field));
  // The batch dimension is usually null: the global batch size comes from
  // the options. A number fixes it (the importer checks it against them).
  const json::Value &first = (*dims)[0];
  if (first.kind() != json::Value::Null) {
    std::optional<int64_t> size = first.getAsInteger();
    if (!size || *size <= 0)
      return config.errorAt(&first, key,
                            "batch dimension is " + describe(first) +
                                ": expected null or a positive batch size");
    batch =
        FixedBatch{*size, config.fieldName(key), &first, config.errorSink()};
  }
  std::vector<int64_t> result;
  for (size_t i = 1; i < dims->size(); ++i) {
    std::optional<int64_t> dim = (*dims)[i].getAsInteger();
    if (!dim || *dim <= 0)
      return config.error(key, "dimension " + llvm::Twine(i) + " is " +
                                   describe((*dims)[i]) +
                                   ": the importer needs static, positive "
                                   "dimensions");
    result.push_back(*dim);
  }
  shape = std::move(result);
  return success();
}

LogicalResult readInputShape(ConfigReader &config,
                             std::optional<std::vector<int64_t>> &shape,
                             std::optional<FixedBatch> &batch) {
  for (llvm::StringRef key : {"batch_shape", "batch_input_shape"})
    if (failed(readBatchShape(config, key, shape, batch)) || shape)
      return failure(!shape);
  return success();
}

LogicalResult createLayer(builder::ModelBuilder &model, LayerEntry &entry,
                          ConfigReader &c, const ModelTraits &traits) {
  bool modelTrainable = traits.trainable;
  llvm::StringRef cls = entry.className;
  auto regularizersAndConstraints =
      [&](llvm::ArrayRef<llvm::StringRef> prefixes) {
        for (llvm::StringRef prefix : prefixes) {
          if (failed(c.expectUnset((prefix + "_regularizer").str(),
                                   "regularizers are not supported")) ||
              failed(c.expectUnset((prefix + "_constraint").str(),
                                   "constraints are not supported")))
            return failure();
        }
        return c.expectUnset("activity_regularizer",
                             "regularizers are not supported");
      };
  // Where an axis error points: whether an axis is valid depends on the
  // input, so it is checked when the layer is called.
  auto axisLoc = [&] {
    const json::Value *field = c.get("axis");
    return field ? c.document().locate(field) : entry.loc;
  };
  // The normalisations' `axis`: one axis, a number or, as Keras writes it
  // once built (and tf.keras always), a one-element list; left as it is
  // when unset.
  auto readOneAxis = [&](int64_t &axis) -> LogicalResult {
    const json::Value *field = c.getSet("axis");
    if (!field)
      return success();
    const json::Array *list = field->getAsArray();
    // Normalization(axis=None), one statistic over every axis, is saved as
    // an empty list.
    if (list && list->empty())
      return c.error("axis", "axis None (statistics over every axis, the "
                             "batch's included) is not supported; expected "
                             "one axis, the last");
    std::optional<int64_t> value =
        list ? (list->size() == 1 ? (*list)[0].getAsInteger() : std::nullopt)
             : field->getAsInteger();
    if (!value)
      return c.unsupportedValue("axis", "expected one axis, the last");
    axis = *value;
    return success();
  };
  // Only the last axis is supported, which the input's rank decides.
  auto requireLastAxis = [&](int64_t axis) {
    entry.checkInputs = [axis, loc = axisLoc(),
                         sink = c.errorSink()](llvm::ArrayRef<Tensor> in) {
      int64_t rank = static_cast<int64_t>(in[0].shape().size());
      if (axis == -1 || axis == rank - 1)
        return success();
      sink(loc, "field 'axis': unsupported value " + llvm::Twine(axis) +
                    " (only the last axis, " + llvm::Twine(rank - 1) +
                    " or -1, is supported for an input of rank " +
                    llvm::Twine(rank) + ")");
      return failure();
    };
  };
  auto channelsLast = [&] {
    return c.expectString("data_format", "channels_last");
  };
  auto stridesWithDilation = [&](std::array<int64_t, 2> strides,
                                 std::array<int64_t, 2> dilations) {
    if (dilations == std::array<int64_t, 2>{1, 1} ||
        strides == std::array<int64_t, 2>{1, 1})
      return success();
    return c.error("dilation_rate",
                   "dilation_rate [" + llvm::Twine(dilations[0]) + ", " +
                       llvm::Twine(dilations[1]) + "] together with strides [" +
                       llvm::Twine(strides[0]) + ", " +
                       llvm::Twine(strides[1]) +
                       "] is not supported (nor is it by Keras)");
  };

  if (cls == "InputLayer") {
    c.ignore("name");
    c.ignore("trainable");
    // An input is fed float32 whatever the policy: the first layer casts
    // it to its compute type, as Keras' autocast does. An InputLayer's
    // dtype is its tensor's, and may name an integer or bool type
    // (keras.Input(..., dtype="uint8") before a Rescaling): the arrays are
    // converted to float32 on the way in, as a float32 layer reads them.
    static constexpr llvm::StringLiteral kTensorDtypes[] = {
        "bool",   "int8",   "int16",  "int32",   "int64",   "uint8",
        "uint16", "uint32", "uint64", "float16", "float64", "bfloat16"};
    std::optional<llvm::StringRef> tensorDtype;
    if (const json::Value *dtype = c.getSet("dtype"))
      tensorDtype = dtype->getAsString();
    DTypePolicy inputPolicy;
    if (tensorDtype && llvm::is_contained(kTensorDtypes, *tensorDtype))
      c.ignore("dtype");
    else if (failed(readDtypePolicy(c, inputPolicy)))
      return failure();
    if (failed(readInputShape(c, entry.inputShape, entry.fixedBatch)) ||
        failed(c.expectBool("sparse", false)) ||
        failed(c.expectBool("ragged", false)) ||
        failed(c.expectBool("optional", false)))
      return failure();
    if (!entry.inputShape)
      return layerError(model, entry,
                        "missing input shape: expected field "
                        "'batch_shape' (Keras 3) or "
                        "'batch_input_shape' (tf.keras)");
    return c.checkNoOtherFields();
  }

  if (cls == "Conv2D" || cls == "Convolution2D") {
    builder::Conv2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInt("filters", o.filters, true)) ||
        failed(c.readPair("kernel_size", o.kernel_size, true)) ||
        failed(c.readPair("strides", o.strides)) ||
        failed(readPadding(c, o.padding)) || failed(channelsLast()) ||
        failed(c.readPair("dilation_rate", o.dilation_rate)) ||
        failed(c.readInt("groups", o.groups)) ||
        failed(
            readActivation(c, "activation", o.activation, traits.tfKeras2)) ||
        failed(c.readBool("use_bias", o.use_bias)) ||
        failed(
            readInitializer(c, "kernel_initializer", o.kernel_initializer)) ||
        failed(readInitializer(c, "bias_initializer", o.bias_initializer)) ||
        failed(regularizersAndConstraints({"kernel", "bias"})))
      return failure();
    if (failed(stridesWithDilation(o.strides, o.dilation_rate)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Conv2D(o);
    return success();
  }

  if (cls == "Conv2DTranspose" || cls == "Convolution2DTranspose") {
    builder::Conv2DTransposeOptions o;
    std::array<int64_t, 2> dilations = {1, 1};
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInt("filters", o.filters, true)) ||
        failed(c.readPair("kernel_size", o.kernel_size, true)) ||
        failed(c.readPair("strides", o.strides)) ||
        failed(readPadding(c, o.padding)) || failed(channelsLast()) ||
        failed(c.expectUnset("output_padding",
                             "output_padding is not supported")) ||
        failed(c.readPair("dilation_rate", dilations)))
      return failure();
    if (dilations != std::array<int64_t, 2>{1, 1})
      return c.unsupportedValue("dilation_rate",
                                "a dilated Conv2DTranspose is not supported");
    if (failed(c.expectNumber("groups", 1)) ||
        failed(
            readActivation(c, "activation", o.activation, traits.tfKeras2)) ||
        failed(c.readBool("use_bias", o.use_bias)) ||
        failed(
            readInitializer(c, "kernel_initializer", o.kernel_initializer)) ||
        failed(readInitializer(c, "bias_initializer", o.bias_initializer)) ||
        failed(regularizersAndConstraints({"kernel", "bias"})) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Conv2DTranspose(o);
    return success();
  }

  if (cls == "DepthwiseConv2D") {
    builder::DepthwiseConv2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readPair("kernel_size", o.kernel_size, true)) ||
        failed(c.readPair("strides", o.strides)) ||
        failed(readPadding(c, o.padding)) || failed(channelsLast()) ||
        failed(c.readInt("depth_multiplier", o.depth_multiplier)) ||
        failed(c.readPair("dilation_rate", o.dilation_rate)) ||
        // tf.keras 2 writes its Conv base class's groups (always 1).
        failed(c.expectNumber("groups", 1)) ||
        failed(
            readActivation(c, "activation", o.activation, traits.tfKeras2)) ||
        failed(c.readBool("use_bias", o.use_bias)) ||
        failed(readInitializer(c, "depthwise_initializer",
                               o.depthwise_initializer)) ||
        failed(readInitializer(c, "bias_initializer", o.bias_initializer)) ||
        failed(regularizersAndConstraints({"depthwise", "bias"})) ||
        failed(stridesWithDilation(o.strides, o.dilation_rate)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.DepthwiseConv2D(o);
    return success();
  }

  if (cls == "SeparableConv2D" || cls == "SeparableConvolution2D") {
    builder::SeparableConv2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInt("filters", o.filters, true)) ||
        failed(c.readPair("kernel_size", o.kernel_size, true)) ||
        failed(c.readPair("strides", o.strides)) ||
        failed(readPadding(c, o.padding)) || failed(channelsLast()) ||
        failed(c.readInt("depth_multiplier", o.depth_multiplier)) ||
        failed(c.readPair("dilation_rate", o.dilation_rate)) ||
        // tf.keras 2 writes its Conv base class's groups (always 1).
        failed(c.expectNumber("groups", 1)) ||
        failed(
            readActivation(c, "activation", o.activation, traits.tfKeras2)) ||
        failed(c.readBool("use_bias", o.use_bias)) ||
        failed(readInitializer(c, "depthwise_initializer",
                               o.depthwise_initializer)) ||
        failed(readInitializer(c, "pointwise_initializer",
                               o.pointwise_initializer)) ||
        failed(readInitializer(c, "bias_initializer", o.bias_initializer)) ||
        failed(
            regularizersAndConstraints({"depthwise", "pointwise", "bias"})) ||
        failed(stridesWithDilation(o.strides, o.dilation_rate)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.SeparableConv2D(o);
    return success();
  }

  if (cls == "Dense") {
    builder::DenseOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInt("units", o.units, true)) ||
        failed(
            readActivation(c, "activation", o.activation, traits.tfKeras2)) ||
        failed(c.readBool("use_bias", o.use_bias)) ||
        failed(
            readInitializer(c, "kernel_initializer", o.kernel_initializer)) ||
        failed(readInitializer(c, "bias_initializer", o.bias_initializer)) ||
        failed(regularizersAndConstraints({"kernel", "bias"})) ||
        failed(c.expectUnset("quantization_config",
                             "quantization is not supported")) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Dense(o);
    return success();
  }

  bool maxPool = cls == "MaxPooling2D" || cls == "MaxPool2D";
  if (maxPool || cls == "AveragePooling2D" || cls == "AvgPool2D") {
    builder::Pool2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readPair("pool_size", o.pool_size)) ||
        failed(readPadding(c, o.padding)) || failed(channelsLast()))
      return failure();
    if (c.getSet("strides")) {
      std::array<int64_t, 2> strides;
      if (failed(c.readPair("strides", strides)))
        return failure();
      o.strides = strides;
    }
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = maxPool ? model.MaxPooling2D(o) : model.AveragePooling2D(o);
    return success();
  }

  if (cls == "GlobalAveragePooling2D" || cls == "GlobalAvgPool2D") {
    builder::GlobalPool2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.readBool("keepdims", o.keepdims)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.GlobalAveragePooling2D(o);
    return success();
  }

  if (cls == "GlobalMaxPooling2D" || cls == "GlobalMaxPool2D") {
    builder::GlobalPool2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.readBool("keepdims", o.keepdims)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.GlobalMaxPooling2D(o);
    return success();
  }

  if (cls == "UpSampling2D") {
    builder::UpSampling2DOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.readPair("size", o.size)) ||
        failed(c.expectString("interpolation", "nearest")) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.UpSampling2D(o);
    return success();
  }

  if (cls == "Permute") {
    builder::PermuteOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInts("dims", o.dims, true)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Permute(o);
    return success();
  }

  if (cls == "ZeroPadding2D" || cls == "Cropping2D") {
    builder::Padding2DOptions o;
    bool pad = cls == "ZeroPadding2D";
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) ||
        failed(readAmounts2D(c, pad ? "padding" : "cropping", o)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    if (pad && !c.getSet("padding"))
      o.top = o.bottom = o.left = o.right = 1; // Keras' default (1, 1)
    entry.layer = pad ? model.ZeroPadding2D(o) : model.Cropping2D(o);
    return success();
  }

  if (cls == "Flatten") {
    builder::LayerOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Flatten(o);
    return success();
  }

  if (cls == "Reshape") {
    builder::ReshapeOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInts("target_shape", o.target_shape, true)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Reshape(o);
    return success();
  }

  if (cls == "Activation" || cls == "ReLU" || cls == "Softmax" ||
      cls == "ELU" || cls == "LeakyReLU") {
    builder::ActivationOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)))
      return failure();
    if (cls == "Activation") {
      if (!c.getSet("activation"))
        return c.missing("activation");
      if (failed(
              readActivation(c, "activation", o.activation, traits.tfKeras2)))
        return failure();
    } else if (cls == "ReLU") {
      o.activation = builder::Activation::relu;
      if (c.getSet("max_value")) {
        double cap = 0.0;
        if (failed(c.readDouble("max_value", cap)))
          return failure();
        o.max_value = cap;
      }
      if (failed(c.readDouble("negative_slope", o.negative_slope)) ||
          failed(c.readDouble("threshold", o.threshold)))
        return failure();
      // Keras' ReLU refuses negative settings.
      for (auto [key, value] : {std::pair<llvm::StringRef, double>{
                                    "max_value", o.max_value.value_or(0.0)},
                                {"negative_slope", o.negative_slope},
                                {"threshold", o.threshold}})
        if (!(value >= 0.0))
          return c.unsupportedValue(key, "expected a number >= 0");
    } else if (cls == "Softmax") {
      o.activation = builder::Activation::softmax;
      if (failed(c.readInt("axis", o.axis)))
        return failure();
    } else if (cls == "ELU") {
      o.activation = builder::Activation::elu;
      double alpha = 1.0;
      if (failed(c.readDouble("alpha", alpha)))
        return failure();
      o.alpha = alpha;
    } else {
      // The layer's default slope (0.3) differs from the leaky_relu
      // activation's (0.2); Keras 3 calls it negative_slope, tf.keras alpha.
      o.activation = builder::Activation::leaky_relu;
      double slope = 0.3;
      if (failed(c.readDouble("negative_slope", slope)) ||
          failed(c.readDouble("alpha", slope)))
        return failure();
      o.alpha = slope;
    }
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Activation(o, cls);
    return success();
  }

  if (cls == "Dropout") {
    builder::DropoutOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readDouble("rate", o.rate, true)) ||
        failed(c.readSeed("seed", o.seed)))
      return failure();
    if (const json::Value *field = c.getSet("noise_shape")) {
      // [null, 1, 1, 1]: null is the input's dimension.
      const json::Array *dims = field->getAsArray();
      if (!dims)
        return c.unsupportedValue("noise_shape",
                                  "expected a list of null or positive ints");
      std::vector<std::optional<int64_t>> shape;
      for (const json::Value &d : *dims) {
        std::optional<int64_t> n = d.getAsInteger();
        if (d.kind() != json::Value::Null && (!n || *n <= 0))
          return c.unsupportedValue("noise_shape",
                                    "expected a list of null or positive ints");
        shape.push_back(n);
      }
      o.noise_shape = std::move(shape);
    }
    c.ignore("noise_shape");
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Dropout(o);
    return success();
  }

  if (cls == "SpatialDropout2D") {
    // Drops whole channels: noise_shape [N, 1, 1, C].
    builder::DropoutOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readDouble("rate", o.rate, true)) ||
        failed(c.readSeed("seed", o.seed)) || failed(channelsLast()))
      return failure();
    // Keras 3 writes noise_shape (null: it computes [N, 1, 1, C] itself).
    if (failed(c.expectUnset("noise_shape", "SpatialDropout2D computes its "
                                            "own noise_shape")) ||
        failed(c.checkNoOtherFields()))
      return failure();
    o.noise_shape =
        std::vector<std::optional<int64_t>>{std::nullopt, 1, 1, std::nullopt};
    entry.layer = model.Dropout(o);
    entry.checkInputs = [sink = c.errorSink(),
                         loc = entry.loc](llvm::ArrayRef<Tensor> in) {
      if (in[0].shape().size() == 4)
        return success();
      sink(loc, "expects a 4-D input (NHWC), got rank " +
                    llvm::Twine(in[0].shape().size()));
      return failure();
    };
    return success();
  }

  if (cls == "Normalization") {
    builder::NormalizationOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.expectBool("invert", false)))
      return failure();
    int64_t axis = -1;
    if (failed(readOneAxis(axis)))
      return failure();
    for (auto [key, value] :
         {std::pair<llvm::StringRef, std::optional<std::vector<double>> *>{
              "mean", &o.mean},
          {"variance", &o.variance}}) {
      // A number, or a list of numbers (one per channel).
      const json::Value *field = c.getSet(key);
      if (!field)
        continue;
      std::vector<double> values;
      if (std::optional<double> number = field->getAsNumber())
        values.push_back(*number);
      else if (failed(readNumberList(c, key, values)))
        return failure();
      *value = std::move(values);
    }
    if (o.mean.has_value() != o.variance.has_value())
      return c.error(o.mean ? "mean" : "variance",
                     "mean and variance must be set together");
    c.ignore("mean");
    c.ignore("variance");
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Normalization(o);
    requireLastAxis(axis);
    return success();
  }

  if (cls == "RandomFlip" || cls == "RandomRotation" || cls == "RandomZoom" ||
      cls == "RandomTranslation" || cls == "RandomCrop") {
    builder::RandomImageTransformOptions o;
    o.kind = llvm::StringSwitch<std::string>(cls)
                 .Case("RandomFlip", "flip")
                 .Case("RandomRotation", "rotation")
                 .Case("RandomZoom", "zoom")
                 .Case("RandomTranslation", "translation")
                 .Default("crop");
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.readSeed("seed", o.seed)))
      return failure();
    auto oneOf = [&](llvm::StringRef key, const std::string &value,
                     std::initializer_list<llvm::StringRef> allowed,
                     llvm::StringRef expected) {
      return llvm::is_contained(allowed, llvm::StringRef(value))
                 ? success()
                 : c.unsupportedValue(key, expected);
    };
    if (o.kind == "flip" &&
        (failed(c.readString("mode", o.mode)) ||
         failed(oneOf("mode", o.mode,
                      {"horizontal", "vertical", "horizontal_and_vertical"},
                      "expected 'horizontal', 'vertical' or "
                      "'horizontal_and_vertical'"))))
      return failure();
    if (o.kind == "rotation" && failed(readFactor(c, "factor", o.factor, true)))
      return failure();
    if (o.kind == "zoom" || o.kind == "translation") {
      if (failed(readFactor(c, "height_factor", o.height_factor, true)))
        return failure();
      const json::Value *width = c.getSet("width_factor");
      if (width || o.kind == "translation") {
        o.width_factor.emplace();
        if (failed(readFactor(c, "width_factor", *o.width_factor, true)))
          return failure();
      }
    }
    if (o.kind == "crop" && (failed(c.readInt("height", o.height, true)) ||
                             failed(c.readInt("width", o.width, true))))
      return failure();
    if (o.kind != "flip" && o.kind != "crop" &&
        (failed(c.readString("fill_mode", o.fill_mode)) ||
         failed(oneOf("fill_mode", o.fill_mode,
                      {"reflect", "wrap", "constant", "nearest"},
                      "expected 'reflect', 'wrap', 'constant' or 'nearest'")) ||
         failed(c.readString("interpolation", o.interpolation)) ||
         failed(oneOf("interpolation", o.interpolation, {"bilinear", "nearest"},
                      "expected 'bilinear' or 'nearest'")) ||
         failed(c.readDouble("fill_value", o.fill_value))))
      return failure();
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.RandomImageTransform(o);
    return success();
  }

  if (cls == "RandomContrast") {
    builder::RandomContrastOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(channelsLast()) || failed(c.readSeed("seed", o.seed)) ||
        failed(readFactor(c, "factor", o.factor, true)))
      return failure();
    // A single number f is Keras' [0, f] here (lower bound clipped at 0).
    if (const json::Value *f = c.get("factor"); f && f->getAsNumber())
      o.factor[0] = 0.0;
    if (c.getSet("value_range")) {
      std::array<double, 2> range;
      if (failed(readFactor(c, "value_range", range, true)) ||
          !c.get("value_range")->getAsArray())
        return c.unsupportedValue("value_range", "expected [low, high]");
      o.value_range = range;
    }
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.RandomContrast(o);
    return success();
  }

  if (cls == "BatchNormalization") {
    builder::BatchNormalizationOptions o;
    int64_t axis = -1;
    if (failed(readCommon(entry, c, modelTrainable, o)))
      return failure();
    if (failed(readOneAxis(axis)))
      return failure();
    // Renormalization settings only matter when renorm is on.
    for (llvm::StringRef ignored : {"renorm_clipping", "renorm_momentum"})
      c.ignore(ignored);
    // tf.keras 2 picks its fused kernel unless `fused` is false, and that
    // kernel's moving variance takes the unbiased batch variance.
    bool fused = true;
    if (const json::Value *field = c.getSet("fused")) {
      if (std::optional<bool> value = field->getAsBoolean())
        fused = *value;
      else
        return c.unsupportedValue("fused", "expected true, false or null");
    }
    c.ignore("fused");
    o.tf2_fused = traits.tfKeras2 && fused;
    if (failed(c.readDouble("momentum", o.momentum)) ||
        failed(c.readDouble("epsilon", o.epsilon)) ||
        failed(c.readBool("center", o.center)) ||
        failed(c.readBool("scale", o.scale)) ||
        failed(readInitializer(c, "beta_initializer", o.beta_initializer)) ||
        failed(readInitializer(c, "gamma_initializer", o.gamma_initializer)) ||
        failed(readInitializer(c, "moving_mean_initializer",
                               o.moving_mean_initializer)) ||
        failed(readInitializer(c, "moving_variance_initializer",
                               o.moving_variance_initializer)) ||
        failed(regularizersAndConstraints({"beta", "gamma"})) ||
        failed(c.expectBool("synchronized", false)) ||
        failed(c.expectBool("renorm", false)) ||
        failed(c.expectUnset("virtual_batch_size",
                             "virtual batches are not supported")) ||
        failed(c.expectUnset("adjustment", "adjustment is not supported")) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.BatchNormalization(o);
    requireLastAxis(axis);
    return success();
  }

  if (cls == "LayerNormalization") {
    builder::LayerNormalizationOptions o;
    int64_t axis = -1;
    if (failed(readCommon(entry, c, modelTrainable, o)))
      return failure();
    if (failed(readOneAxis(axis)))
      return failure();
    if (const json::Value *field = c.getSet("rms_scaling")) {
      std::optional<bool> value = field->getAsBoolean();
      if (!value || *value)
        return c.unsupportedValue("rms_scaling",
                                  "RMS scaling is not supported, expected "
                                  "false");
    }
    c.ignore("rms_scaling");
    if (failed(c.readDouble("epsilon", o.epsilon)) ||
        failed(c.readBool("center", o.center)) ||
        failed(c.readBool("scale", o.scale)) ||
        failed(readInitializer(c, "beta_initializer", o.beta_initializer)) ||
        failed(readInitializer(c, "gamma_initializer", o.gamma_initializer)) ||
        failed(regularizersAndConstraints({"beta", "gamma"})) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.LayerNormalization(o);
    requireLastAxis(axis);
    return success();
  }

  // keras.applications' own layer classes (their module is the
  // application's, e.g. keras.src.applications.convnext).
  if (cls == "LayerScale") {
    builder::LayerScaleOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readDouble("init_values", o.init_values, true)) ||
        failed(c.readInt("projection_dim", o.projection_dim, true)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.LayerScale(o);
    return success();
  }

  if (cls == "StochasticDepth") {
    builder::LayerOptions o;
    double rate = 0.0;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readDouble("drop_path_rate", rate, true)))
      return failure();
    if (rate != 0.0)
      return c.unsupportedValue("drop_path_rate",
                                "only 0, the identity, is supported: "
                                "dropping whole samples in training is not");
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.StochasticDepth(o);
    return success();
  }

  if (cls == "CustomScaleLayer") {
    builder::CustomScaleOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readDouble("scale", o.scale, true)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.CustomScaleLayer(o);
    return success();
  }

  if (cls == "Add") {
    builder::LayerOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Add(o);
    return success();
  }

  if (cls == "Multiply" || cls == "Subtract" || cls == "Average" ||
      cls == "Maximum") {
    builder::LayerOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = cls == "Multiply"   ? model.Multiply(o)
                  : cls == "Subtract" ? model.Subtract(o)
                  : cls == "Average"  ? model.Average(o)
                                      : model.Maximum(o);
    return success();
  }

  if (cls == "Rescaling") {
    builder::RescalingOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)))
      return failure();
    for (auto [key, value, list] :
         {std::tuple<llvm::StringRef, double *, std::vector<double> *>{
              "scale", &o.scale, &o.scales},
          {"offset", &o.offset, &o.offsets}}) {
      // A number, or a list of numbers (one per channel).
      const json::Value *field = c.getSet(key);
      if (field && field->getAsArray()) {
        if (failed(readNumberList(c, key, *list)))
          return failure();
        c.ignore(key);
        continue;
      }
      if (field && !field->getAsNumber())
        return c.unsupportedValue(key, "expected a number or a list of "
                                       "numbers");
      if (failed(c.readDouble(key, *value, key == "scale")))
        return failure();
    }
    if (failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Rescaling(o);
    return success();
  }

  if (cls == "Concatenate") {
    builder::ConcatenateOptions o;
    if (failed(readCommon(entry, c, modelTrainable, o)) ||
        failed(c.readInt("axis", o.axis)) || failed(c.checkNoOtherFields()))
      return failure();
    entry.layer = model.Concatenate(o);
    entry.checkInputs = [axis = o.axis, loc = axisLoc(),
                         sink = c.errorSink()](llvm::ArrayRef<Tensor> in) {
      int64_t rank = static_cast<int64_t>(in[0].shape().size());
      if (axis != 0 && axis != -rank)
        return success();
      sink(loc, "field 'axis': unsupported value " + llvm::Twine(axis) +
                    " (concatenating along the batch axis is not supported)");
      return failure();
    };
    return success();
  }

  return layerError(model, entry,
                    "unsupported layer class '" + cls +
                        "' (supported: " + kSupportedLayers + ")");
}

} // namespace graph::keras
