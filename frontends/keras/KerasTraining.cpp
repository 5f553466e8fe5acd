//===- KerasTraining.cpp - compile_config to graph.training ---------------===//

#include "frontends/keras/KerasTraining.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace json = llvm::json;
using mlir::failed;
using mlir::failure;
using mlir::LogicalResult;
using mlir::success;

namespace graph::keras {
namespace {

using builder::LossKind;

LogicalResult fileError(mlir::Location loc, const llvm::Twine &message) {
  mlir::emitError(loc) << message;
  return failure();
}

/// Keras serializes optimizer hyper-parameters from float32 variables,
/// widened to double (0.0010000000474974513 for 0.001). The shortest decimal
/// that reads back as the same float32 is the value the user wrote.
double roundToFloat32(double value) {
  float rounded = static_cast<float>(value);
  if (!std::isfinite(rounded))
    return value;
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits,
                  static_cast<double>(rounded));
    if (std::strtof(text, nullptr) == rounded)
      return std::strtod(text, nullptr);
  }
  return rounded;
}

/// The loss a Keras 3 name (keras.losses.get: the function's, the class's
/// or an alias like "mse"; tf.keras 2 writes the same names) means.
std::optional<LossKind> lossKindOf(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<LossKind>>(name)
      .Cases({"categorical_crossentropy", "CategoricalCrossentropy"},
             LossKind::categorical_crossentropy)
      .Cases(
          {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
          LossKind::sparse_categorical_crossentropy)
      .Cases({"binary_crossentropy", "BinaryCrossentropy", "bce", "BCE"},
             LossKind::binary_crossentropy)
      .Cases({"mean_squared_error", "MeanSquaredError", "mse", "MSE"},
             LossKind::mean_squared_error)
      .Cases({"mean_absolute_error", "MeanAbsoluteError", "mae", "MAE"},
             LossKind::mean_absolute_error)
      .Cases({"mean_absolute_percentage_error", "MeanAbsolutePercentageError",
              "mape", "MAPE"},
             LossKind::mean_absolute_percentage_error)
      .Cases({"mean_squared_logarithmic_error", "MeanSquaredLogarithmicError",
              "msle", "MSLE"},
             LossKind::mean_squared_logarithmic_error)
      .Cases({"huber", "Huber", "huber_loss"}, LossKind::huber)
      .Cases({"log_cosh", "LogCosh", "logcosh"}, LossKind::log_cosh)
      .Cases({"poisson", "Poisson"}, LossKind::poisson)
      .Cases({"kl_divergence", "KLDivergence", "kld", "KLD",
              "kullback_leibler_divergence"},
             LossKind::kl_divergence)
      .Cases({"hinge", "Hinge"}, LossKind::hinge)
      .Cases({"squared_hinge", "SquaredHinge"}, LossKind::squared_hinge)
      .Cases({"binary_focal_crossentropy", "BinaryFocalCrossentropy"},
             LossKind::binary_focal_crossentropy)
      .Cases({"categorical_focal_crossentropy", "CategoricalFocalCrossentropy"},
             LossKind::categorical_focal_crossentropy)
      .Cases({"cosine_similarity", "CosineSimilarity"},
             LossKind::cosine_similarity)
      .Cases({"categorical_hinge", "CategoricalHinge"},
             LossKind::categorical_hinge)
      .Cases({"dice", "Dice"}, LossKind::dice)
      .Cases({"tversky", "Tversky"}, LossKind::tversky)
      .Default(std::nullopt);
}

constexpr llvm::StringLiteral kSupportedLosses =
    "supported: categorical_crossentropy, sparse_categorical_crossentropy, "
    "binary_crossentropy, mean_squared_error, mean_absolute_error, "
    "mean_absolute_percentage_error, mean_squared_logarithmic_error, huber, "
    "log_cosh, poisson, kl_divergence, hinge, squared_hinge, "
    "binary_focal_crossentropy, categorical_focal_crossentropy, "
    "cosine_similarity, categorical_hinge, dice, tversky, by function, "
    "class or alias name";

/// A loss's numeric option `key` into `out` (unset: Keras' default, which
/// the kernels know); gamma must not be negative.
LogicalResult readLossOption(ConfigReader &config, llvm::StringRef key,
                             std::optional<double> &out) {
  const json::Value *field = config.getSet(key);
  if (!field)
    return success();
  std::optional<double> value = field->getAsNumber();
  if (!value || !std::isfinite(*value) || (key == "gamma" && *value < 0))
    return config.unsupportedValue(
        key, key == "gamma" ? "expected a non-negative number"
                            : "expected a number (a list of per-class "
                              "weights is not supported)");
  out = *value;
  return success();
}

/// The name of a function that compile() was given (loss=
/// keras.losses.mean_squared_error, metrics=[keras.metrics.binary_accuracy]),
/// which Keras 3 saves as {"class_name": "function", "config": NAME}: the
/// same loss or metric as the string NAME.
std::optional<llvm::StringRef> functionName(const json::Value &value) {
  const json::Object *object = value.getAsObject();
  if (!object || object->getString("class_name") != "function")
    return std::nullopt;
  return object->getString("config");
}

/// One loss, a name or a Keras loss object, that field `key` of `owner`
/// holds (`value`: the field, or an element of it, whose fields are named
/// `path`...). Its options go into `out`.
LogicalResult readOneLoss(ConfigReader &owner, llvm::StringRef key,
                          const json::Value &value, const std::string &path,
                          builder::OutputLoss &out) {
  constexpr llvm::StringLiteral expected = kSupportedLosses;
  std::optional<llvm::StringRef> function = functionName(value);
  if (std::optional<llvm::StringRef> name =
          function ? function : value.getAsString()) {
    std::optional<LossKind> kind = lossKindOf(*name);
    if (!kind)
      return owner.errorAt(&value, key,
                           "unsupported loss " +
                               llvm::Twine(function ? "function " : "") + "'" +
                               *name + "' (" + expected + ")");
    out.loss = *kind;
    return success();
  }
  const json::Object *objectValue = value.getAsObject();
  if (!objectValue)
    return owner.errorAt(&value, key,
                         "unsupported value " + describe(value) +
                             " (a loss name or a Keras loss object; " +
                             expected + ")");
  ConfigReader object(owner.document(), value, *objectValue, path,
                      owner.errorSink());
  std::string className;
  if (failed(object.readString("class_name", className, true)))
    return failure();
  std::optional<LossKind> loss = lossKindOf(className);
  if (!loss)
    return object.error("class_name", "unsupported loss '" + className + "' (" +
                                          expected + ")");
  out.loss = *loss;
  object.ignore("module");
  object.ignore("registered_name");
  if (!object.getSet("config"))
    return object.checkNoOtherFields();
  std::unique_ptr<ConfigReader> config = object.child("config");
  std::string reduction;
  if (!config || failed(config->readBool("from_logits", out.from_logits)))
    return failure();
  // Keras 3 writes reduction=None, no reduction, as null.
  if (const json::Value *field = config->get("reduction");
      field && field->kind() == json::Value::Null)
    return config->error("reduction",
                         "reduction None (a loss per example) is not "
                         "supported for training; expected "
                         "'sum_over_batch_size' or 'sum'");
  if (failed(config->readString("reduction", reduction)))
    return failure();
  // sum_over_batch_size, mean and auto: the loss is averaged over the batch,
  // which graph.training does; sum is its sum_reduction. None (a loss per
  // example) has nothing to train on.
  if (reduction == "none")
    return config->error("reduction",
                         "reduction 'none' (a loss per example) is not "
                         "supported for training; expected "
                         "'sum_over_batch_size' or 'sum'");
  // Keras 3's 'mean' is sum_over_batch_size under another name (its
  // reduce_values and apply_mask treat the two alike).
  if (reduction == "mean_with_sample_weight")
    return config->error("reduction",
                         "reduction 'mean_with_sample_weight' (the sum "
                         "divided by the sum of the sample weights) is not "
                         "supported; expected 'sum_over_batch_size' (or "
                         "'mean') or 'sum'");
  if (!reduction.empty() && reduction != "sum_over_batch_size" &&
      reduction != "mean" && reduction != "auto" && reduction != "sum")
    return config->unsupportedValue(
        "reduction", "expected 'sum_over_batch_size' (or 'mean') or 'sum'");
  out.sum_reduction = reduction == "sum";
  config->ignore("name");
  config->ignore("dtype");
  // tf.keras 2's LossFunctionWrapper saves the function it wraps.
  if (const json::Value *fn = config->getSet("fn")) {
    std::optional<llvm::StringRef> name = fn->getAsString();
    if (!name || lossKindOf(*name) != loss)
      return config->unsupportedValue("fn",
                                      "expected the function of " + className);
  }
  // label_smoothing: CategoricalCrossentropy's (in [0, 1)) and
  // BinaryCrossentropy's (in [0, 1]); Keras' SparseCategoricalCrossentropy
  // has none.
  if (const json::Value *ls = config->getSet("label_smoothing")) {
    std::optional<double> value = ls->getAsNumber();
    if (*loss == LossKind::sparse_categorical_crossentropy) {
      if (value != std::optional<double>(0.0))
        return config->error("label_smoothing",
                             "SparseCategoricalCrossentropy has no label "
                             "smoothing in Keras; use "
                             "CategoricalCrossentropy with one-hot labels");
    } else if (*loss == LossKind::binary_crossentropy ||
               *loss == LossKind::binary_focal_crossentropy ||
               *loss == LossKind::categorical_focal_crossentropy) {
      if (!value || !(*value >= 0 && *value <= 1))
        return config->unsupportedValue("label_smoothing",
                                        "expected a number in [0, 1]");
      out.label_smoothing = roundToFloat32(*value);
    } else {
      if (!value || !(*value >= 0 && *value < 1))
        return config->unsupportedValue("label_smoothing",
                                        "expected a number in [0, 1)");
      out.label_smoothing = roundToFloat32(*value);
    }
  }
  if (*loss == LossKind::huber) {
    if (const json::Value *d = config->getSet("delta")) {
      std::optional<double> value = d->getAsNumber();
      if (!value || !(*value > 0) || !std::isfinite(*value))
        return config->unsupportedValue("delta", "expected a positive number");
      out.delta = *value;
    }
  }
  bool focal = *loss == LossKind::binary_focal_crossentropy ||
               *loss == LossKind::categorical_focal_crossentropy;
  if (focal && (failed(readLossOption(*config, "alpha", out.alpha)) ||
                failed(readLossOption(*config, "gamma", out.gamma))))
    return failure();
  if (*loss == LossKind::binary_focal_crossentropy &&
      failed(
          config->readBool("apply_class_balancing", out.apply_class_balancing)))
    return failure();
  if (*loss == LossKind::tversky &&
      (failed(readLossOption(*config, "alpha", out.alpha)) ||
       failed(readLossOption(*config, "beta", out.beta))))
    return failure();
  // Dice's and Tversky's axis defaults to None, the whole batch; a number
  // or a list of axes takes one ratio per sample (and per position of the
  // axes left). The other losses reduce the last axis.
  if (*loss == LossKind::dice || *loss == LossKind::tversky) {
    if (const json::Value *axis = config->getSet("axis")) {
      if (std::optional<int64_t> one = axis->getAsInteger()) {
        out.axis = {*one};
      } else if (failed(config->readInts("axis", out.axis))) {
        return failure();
      }
      if (out.axis.empty())
        return config->unsupportedValue(
            "axis", "expected None, an axis or a list of axes");
      for (int64_t a : out.axis)
        if (a == 0)
          return config->unsupportedValue(
              "axis", "the batch axis (0) cannot be reduced: Keras' loss "
                      "is then one value a sample");
    }
  } else if (const json::Value *axis = config->getSet("axis")) {
    // The class (or feature) axis: the builder checks it is the output's
    // last, as -1 is.
    std::optional<int64_t> one = axis->getAsInteger();
    if (!one || *one == 0)
      return config->unsupportedValue(
          "axis", "expected the output's last axis, -1 (0 is the batch's)");
    out.axis = {*one};
  }
  // ignore_class: SparseCategoricalCrossentropy's label whose rows are
  // left out (weight 0, and not counted in the mean).
  if (const json::Value *ignore = config->getSet("ignore_class")) {
    std::optional<int64_t> label = ignore->getAsInteger();
    if (*loss != LossKind::sparse_categorical_crossentropy)
      return config->error("ignore_class",
                           "ignore_class is SparseCategoricalCrossentropy's");
    if (!label)
      return config->unsupportedValue("ignore_class",
                                      "expected an integer or None");
    out.ignore_class = *label;
  }
  if (failed(config->checkNoOtherFields()))
    return failure();
  return object.checkNoOtherFields();
}

/// The learning-rate schedule of `optimizer.config.learning_rate`, Keras 3's
/// ExponentialDecay, InverseTimeDecay, PolynomialDecay, CosineDecay and
/// PiecewiseConstantDecay (keras/src/optimizers/schedules).
LogicalResult readSchedule(ConfigReader &optimizer,
                           std::optional<builder::Schedule> &out,
                           double &initialRate) {
  std::unique_ptr<ConfigReader> object = optimizer.child("learning_rate");
  std::string className;
  if (!object || failed(object->readString("class_name", className, true)))
    return failure();
  using Kind = builder::Schedule::Kind;
  std::optional<Kind> kind =
      llvm::StringSwitch<std::optional<Kind>>(className)
          .Case("ExponentialDecay", Kind::exponential_decay)
          .Case("InverseTimeDecay", Kind::inverse_time_decay)
          .Case("PolynomialDecay", Kind::polynomial_decay)
          .Case("CosineDecay", Kind::cosine_decay)
          .Case("CosineDecayRestarts", Kind::cosine_decay_restarts)
          .Case("PiecewiseConstantDecay", Kind::piecewise_constant_decay)
          .Default(std::nullopt);
  if (!kind)
    return optimizer.error(
        "learning_rate",
        "unsupported learning-rate schedule '" + className +
            "' (expected ExponentialDecay, InverseTimeDecay, "
            "PolynomialDecay, CosineDecay, CosineDecayRestarts or "
            "PiecewiseConstantDecay)");
  object->ignore("module");
  object->ignore("registered_name");
  std::unique_ptr<ConfigReader> config = object->child("config");
  if (!config || failed(object->checkNoOtherFields()))
    return failure();
  ConfigReader &c = *config;
  c.ignore("name");
  builder::Schedule s;
  s.kind = *kind;
  auto number = [&](llvm::StringRef key, double &value, bool positive) {
    const json::Value *field = c.getSet(key);
    if (!field)
      return c.missing(key);
    std::optional<double> v = field->getAsNumber();
    if (!v || !std::isfinite(*v) || (positive ? !(*v > 0) : *v < 0))
      return c.unsupportedValue(key, positive ? "expected a number > 0"
                                              : "expected a number >= 0");
    value = roundToFloat32(*v);
    return success();
  };
  if (*kind == Kind::piecewise_constant_decay) {
    for (llvm::StringRef key : {"boundaries", "values"}) {
      const json::Value *field = c.getSet(key);
      const json::Array *list = field ? field->getAsArray() : nullptr;
      if (!list)
        return field ? c.unsupportedValue(key, "expected a list of numbers")
                     : c.missing(key);
      std::vector<double> &to = key == "boundaries" ? s.boundaries : s.values;
      for (const json::Value &v : *list) {
        std::optional<double> d = v.getAsNumber();
        if (!d || !std::isfinite(*d) || *d < 0)
          return c.unsupportedValue(key, "expected numbers >= 0");
        to.push_back(key == "values" ? roundToFloat32(*d) : *d);
      }
    }
    if (s.boundaries.empty() ||
        s.boundaries.size() > mlir::graph::kMaxScheduleBoundaries)
      return c.unsupportedValue(
          "boundaries", "expected 1 to " +
                            llvm::Twine(mlir::graph::kMaxScheduleBoundaries) +
                            " boundaries");
    for (size_t i = 1; i < s.boundaries.size(); ++i)
      if (!(s.boundaries[i] > s.boundaries[i - 1]))
        return c.unsupportedValue("boundaries", "expected increasing steps");
    if (s.values.size() != s.boundaries.size() + 1)
      return c.unsupportedValue("values",
                                "expected one value more than boundaries");
    if (!(s.values[0] > 0))
      return c.unsupportedValue("values", "expected a first value > 0");
    initialRate = s.values[0];
    out = s;
    return c.checkNoOtherFields();
  }
  // Keras' warm-up example starts CosineDecay from a rate of 0.
  auto warmsUp = [&] {
    auto positiveField = [&](llvm::StringRef key) {
      const json::Value *f = c.getSet(key);
      std::optional<double> v = f ? f->getAsNumber() : std::nullopt;
      return v && *v > 0;
    };
    return *kind == Kind::cosine_decay && positiveField("warmup_steps") &&
           positiveField("warmup_target");
  };
  if (failed(number("initial_learning_rate", initialRate, !warmsUp())) ||
      failed(number(*kind == Kind::cosine_decay_restarts ? "first_decay_steps"
                                                         : "decay_steps",
                    s.decay_steps, true)))
    return failure();
  switch (*kind) {
  case Kind::exponential_decay:
  case Kind::inverse_time_decay:
    if (failed(number("decay_rate", s.decay_rate, false)) ||
        failed(c.readBool("staircase", s.staircase)))
      return failure();
    break;
  case Kind::polynomial_decay:
    if (failed(number("end_learning_rate", s.end_learning_rate, false)) ||
        failed(number("power", s.power, true)) ||
        failed(c.readBool("cycle", s.cycle)))
      return failure();
    break;
  case Kind::cosine_decay: {
    if (c.getSet("alpha") && failed(number("alpha", s.alpha, false)))
      return failure();
    // Keras warms up only with a warmup_target; with 0 warm-up steps the
    // decay starts from the target, which is a decay from that rate.
    double steps = 0;
    if (c.getSet("warmup_steps") &&
        failed(number("warmup_steps", steps, false)))
      return failure();
    if (c.getSet("warmup_target")) {
      double target = 0;
      if (failed(number("warmup_target", target, false)))
        return failure();
      if (steps > 0) {
        s.warmup_target = target;
        s.warmup_steps = steps;
      } else {
        if (!(target > 0))
          return c.unsupportedValue("warmup_target", "expected a number > 0");
        initialRate = target;
      }
    }
    break;
  }
  case Kind::cosine_decay_restarts:
    if (failed(number("t_mul", s.t_mul, true)) ||
        failed(number("m_mul", s.m_mul, false)) ||
        failed(number("alpha", s.alpha, false)))
      return failure();
    break;
  case Kind::piecewise_constant_decay:
    break;
  }
  out = s;
  return c.checkNoOtherFields();
}

static LogicalResult readOptimizerField(ConfigReader &parent,
                                        llvm::StringRef key, bool wrapped,
                                        std::optional<builder::Optimizer> &out,
                                        builder::Training &training);

/// Keras' LossScaleOptimizer (Keras 3: inner_optimizer, initial_scale,
/// dynamic_growth_steps; tf.keras 2 adds `dynamic`, which must be true, as
/// Keras 3 requires): the inner optimizer, and dynamic loss scaling.
static LogicalResult
readLossScaleOptimizer(ConfigReader &object,
                       std::optional<builder::Optimizer> &out,
                       builder::Training &training) {
  object.ignore("module");
  object.ignore("registered_name");
  std::unique_ptr<ConfigReader> config = object.child("config");
  if (!config)
    return failure();
  ConfigReader &c = *config;
  builder::Training::LossScale scale;
  if (failed(c.readDouble("initial_scale", scale.initial_scale)))
    return failure();
  if (!(scale.initial_scale > 0) || !std::isfinite(scale.initial_scale))
    return c.unsupportedValue("initial_scale", "expected a number > 0");
  if (const json::Value *steps = c.getSet("dynamic_growth_steps")) {
    std::optional<int64_t> n = steps->getAsInteger();
    if (!n || *n < 1)
      return c.unsupportedValue("dynamic_growth_steps",
                                "expected an integer >= 1");
    scale.dynamic_growth_steps = *n;
  }
  bool dynamic = true;
  if (failed(c.readBool("dynamic", dynamic)))
    return failure();
  if (!dynamic)
    return c.unsupportedValue("dynamic",
                              "a fixed loss scale is not supported; Keras 3 "
                              "refuses dynamic=False too");
  c.ignore("name");
  if (!c.getSet("inner_optimizer"))
    return c.error("inner_optimizer", "a LossScaleOptimizer needs the "
                                      "optimizer it wraps");
  if (failed(readOptimizerField(c, "inner_optimizer", /*wrapped=*/true, out,
                                training)))
    return failure();
  training.loss_scale = scale;
  if (failed(c.checkNoOtherFields()))
    return failure();
  return object.checkNoOtherFields();
}

/// builder::Optimizer's alternative, with the class's defaults, for one of
/// Keras' optimizers by its class or string name.
static std::optional<builder::Optimizer> optimizerOf(llvm::StringRef name) {
  if (name == "SGD" || name == "sgd")
    return builder::SGD{};
  if (name == "Adam" || name == "adam")
    return builder::Adam{};
  // Adam with decoupled weight decay: Keras' AdamW is Adam whose
  // weight_decay defaults to 0.004 (Adam's to None).
  if (name == "AdamW" || name == "adamw") {
    builder::Adam adamw;
    adamw.weight_decay = 0.004;
    return adamw;
  }
  if (name == "RMSprop" || name == "rmsprop")
    return builder::RMSprop{};
  if (name == "Adagrad" || name == "adagrad")
    return builder::Adagrad{};
  if (name == "Adamax" || name == "adamax")
    return builder::Adamax{};
  if (name == "Nadam" || name == "nadam")
    return builder::Nadam{};
  return std::nullopt;
}

/// The optimizer in `parent`'s field `key`: a name, or an object whose
/// class is one of Keras' optimizers or (not `wrapped`) a
/// LossScaleOptimizer around one.
static LogicalResult readOptimizerField(ConfigReader &parent,
                                        llvm::StringRef key, bool wrapped,
                                        std::optional<builder::Optimizer> &out,
                                        builder::Training &training) {
  ConfigReader &compile = parent;
  const json::Value *field = compile.getSet(key);
  if (!field)
    return success();
  constexpr llvm::StringLiteral expected =
      "expected SGD, Adam, AdamW, RMSprop, Adagrad, Adamax or Nadam";
  if (std::optional<llvm::StringRef> name = field->getAsString()) {
    out = optimizerOf(*name);
    if (!out)
      return compile.error(key, "unsupported optimizer '" + *name + "' (" +
                                    expected + ")");
    return success();
  }
  std::unique_ptr<ConfigReader> object = compile.child(key);
  std::string className;
  if (!object || failed(object->readString("class_name", className, true)))
    return failure();
  if (className == "LossScaleOptimizer" && !wrapped)
    return readLossScaleOptimizer(*object, out, training);
  out = optimizerOf(className);
  if (!out)
    return compile.error(key, "unsupported optimizer '" + className + "' (" +
                                  expected + ")");
  object->ignore("module");
  object->ignore("registered_name");
  if (!object->getSet("config"))
    return object->checkNoOtherFields();
  std::unique_ptr<ConfigReader> config = object->child("config");
  if (!config)
    return failure();
  ConfigReader &c = *config;

  // A learning-rate schedule object (keras.optimizers.schedules) sets the
  // initial rate and the schedule; a number is a constant rate.
  std::optional<builder::Schedule> schedule;
  double initialRate = 0;
  if (const json::Value *rate = c.getSet("learning_rate");
      rate && !rate->getAsNumber()) {
    if (!rate->getAsObject())
      return c.error("learning_rate",
                     "unsupported value " + describe(*rate) +
                         " (expected a number or a learning-rate schedule)");
    if (failed(readSchedule(c, schedule, initialRate)))
      return failure();
  }
  // Hyper-parameters are float32 in Keras: read each back to the float the
  // user wrote.
  auto readParam = [&](llvm::StringRef key, double &value) {
    if (failed(c.readDouble(key, value)))
      return failure();
    value = roundToFloat32(value);
    return success();
  };
  LogicalResult read = std::visit(
      [&](auto &opt) -> LogicalResult {
        using T = std::decay_t<decltype(opt)>;
        if (schedule) {
          opt.learning_rate = initialRate;
          opt.schedule = schedule;
        } else if (failed(readParam("learning_rate", opt.learning_rate))) {
          return failure();
        }
        if constexpr (std::is_same_v<T, builder::SGD>)
          return failure(failed(readParam("momentum", opt.momentum)) ||
                         failed(c.readBool("nesterov", opt.nesterov)));
        else if constexpr (std::is_same_v<T, builder::Adam>)
          return failure(failed(readParam("beta_1", opt.beta_1)) ||
                         failed(readParam("beta_2", opt.beta_2)) ||
                         failed(readParam("epsilon", opt.epsilon)) ||
                         failed(c.readBool("amsgrad", opt.amsgrad)));
        else if constexpr (std::is_same_v<T, builder::RMSprop>)
          return failure(failed(readParam("rho", opt.rho)) ||
                         failed(readParam("momentum", opt.momentum)) ||
                         failed(readParam("epsilon", opt.epsilon)) ||
                         failed(c.readBool("centered", opt.centered)));
        else if constexpr (std::is_same_v<T, builder::Adagrad>)
          return failure(failed(readParam("initial_accumulator_value",
                                          opt.initial_accumulator_value)) ||
                         failed(readParam("epsilon", opt.epsilon)));
        else // Adamax, Nadam
          return failure(failed(readParam("beta_1", opt.beta_1)) ||
                         failed(readParam("beta_2", opt.beta_2)) ||
                         failed(readParam("epsilon", opt.epsilon)));
      },
      *out);
  if (failed(read))
    return failure();
  // Gradient clipping and decoupled weight decay, which every Keras
  // optimizer takes: null (or 0, which Keras treats as unset) is off.
  // AdamW requires a weight decay; Keras writes it even when it is the
  // default.
  bool adamw = className == "AdamW" || className == "adamw";
  auto readOption = [&](llvm::StringRef key, double &value) {
    const json::Value *field = c.getSet(key);
    if (!field)
      return success();
    std::optional<double> number = field->getAsNumber();
    if (!number || !std::isfinite(*number) || *number < 0)
      return c.unsupportedValue(key, "expected a number >= 0 or null");
    value = roundToFloat32(*number);
    return success();
  };
  LogicalResult options = std::visit(
      [&](auto &opt) -> LogicalResult {
        if (adamw && !c.getSet("weight_decay") && c.get("weight_decay"))
          return c.error("weight_decay", "AdamW needs a weight decay (a "
                                         "number >= 0), got null");
        if (failed(readOption("clipnorm", opt.clipnorm)) ||
            failed(readOption("global_clipnorm", opt.global_clipnorm)) ||
            failed(readOption("clipvalue", opt.clipvalue)) ||
            failed(readOption("weight_decay", opt.weight_decay)))
          return failure();
        int clips = (opt.clipnorm > 0) + (opt.global_clipnorm > 0) +
                    (opt.clipvalue > 0);
        if (clips > 1)
          return c.error(opt.clipnorm > 0 ? "clipnorm" : "global_clipnorm",
                         "only one of clipnorm, global_clipnorm and "
                         "clipvalue can be set (as in Keras)");
        return success();
      },
      *out);
  if (failed(options))
    return failure();
  // gradient_accumulation_steps: null, or an integer >= 2 (Keras' rule).
  if (const json::Value *steps = c.getSet("gradient_accumulation_steps")) {
    std::optional<int64_t> n = steps->getAsInteger();
    if (!n || *n < 2)
      return c.unsupportedValue("gradient_accumulation_steps",
                                "expected an integer >= 2 or null");
    bool byNorm = std::visit(
        [](auto &opt) { return opt.clipnorm > 0 || opt.global_clipnorm > 0; },
        *out);
    if (byNorm)
      return c.error("gradient_accumulation_steps",
                     "gradient accumulation with clipnorm or "
                     "global_clipnorm is not supported (the norm would be "
                     "of the accumulated mean, which the step does not "
                     "compute); clipvalue is");
    std::visit([&](auto &opt) { opt.gradient_accumulation_steps = *n; }, *out);
  }
  for (llvm::StringRef ignored : {"name", "jit_compile", "is_legacy_optimizer"})
    c.ignore(ignored);
  // use_ema: the moving average of the weights, with Keras' defaults
  // (momentum 0.99, no overwrite during training) and rules.
  bool useEma = false;
  if (failed(c.readBool("use_ema", useEma)))
    return failure();
  if (!useEma) {
    c.ignore("ema_momentum");
    c.ignore("ema_overwrite_frequency");
  } else {
    double momentum = 0.99;
    if (failed(c.readDouble("ema_momentum", momentum)))
      return failure();
    if (!(momentum >= 0 && momentum <= 1))
      return c.unsupportedValue("ema_momentum", "expected a number in [0, 1]");
    training.ema_momentum = momentum;
    if (const json::Value *every = c.getSet("ema_overwrite_frequency")) {
      std::optional<int64_t> n = every->getAsInteger();
      if (!n || *n < 1)
        return c.unsupportedValue("ema_overwrite_frequency",
                                  "expected an integer >= 1 or null");
      training.ema_overwrite_frequency = *n;
    }
  }
  if (failed(c.expectUnset("loss_scale_factor",
                           "loss scaling is not supported")) ||
      failed(c.checkNoOtherFields()))
    return failure();
  return object->checkNoOtherFields();
}

LogicalResult readOptimizer(ConfigReader &compile,
                            std::optional<builder::Optimizer> &out,
                            builder::Training &training) {
  return readOptimizerField(compile, "optimizer", /*wrapped=*/false, out,
                            training);
}

/// The metric a Keras name means (keras.metrics.get: a function's name, a
/// class's, their snake_case forms, or an alias), with the log name a
/// string gives it (the string itself, as Keras logs it) and the
/// defaults of its class.
std::optional<builder::Metric> metricOf(llvm::StringRef name) {
  using K = mlir::graph::MetricKind;
  std::optional<K> kind =
      llvm::StringSwitch<std::optional<K>>(name)
          .Cases({"accuracy", "acc"}, K::accuracy)
          .Cases({"binary_accuracy", "BinaryAccuracy"}, K::binary_accuracy)
          .Cases({"categorical_accuracy", "CategoricalAccuracy"},
                 K::categorical_accuracy)
          .Cases({"sparse_categorical_accuracy", "SparseCategoricalAccuracy"},
                 K::sparse_categorical_accuracy)
          .Cases({"top_k_categorical_accuracy", "TopKCategoricalAccuracy"},
                 K::top_k_categorical_accuracy)
          .Cases({"sparse_top_k_categorical_accuracy",
                  "SparseTopKCategoricalAccuracy"},
                 K::sparse_top_k_categorical_accuracy)
          .Cases({"mae", "MAE", "mean_absolute_error", "MeanAbsoluteError"},
                 K::mean_absolute_error)
          .Cases({"mse", "MSE", "mean_squared_error", "MeanSquaredError"},
                 K::mean_squared_error)
          .Cases({"mape", "MAPE", "mean_absolute_percentage_error",
                  "MeanAbsolutePercentageError"},
                 K::mean_absolute_percentage_error)
          .Cases({"msle", "MSLE", "mean_squared_logarithmic_error",
                  "MeanSquaredLogarithmicError"},
                 K::mean_squared_logarithmic_error)
          .Cases({"root_mean_squared_error", "RootMeanSquaredError"},
                 K::root_mean_squared_error)
          .Cases({"precision", "Precision"}, K::precision)
          .Cases({"recall", "Recall"}, K::recall)
          .Cases({"auc", "AUC"}, K::auc)
          .Default(std::nullopt);
  if (!kind)
    return std::nullopt;
  builder::Metric metric;
  metric.kind = *kind;
  metric.name = name.str();
  if (*kind == K::top_k_categorical_accuracy ||
      *kind == K::sparse_top_k_categorical_accuracy)
    metric.k = 5;
  return metric;
}

constexpr llvm::StringLiteral kSupportedMetrics =
    "supported: accuracy, binary_accuracy, categorical_accuracy, "
    "sparse_categorical_accuracy, the (sparse) top-k categorical "
    "accuracies, mae, mse, mape, msle, root_mean_squared_error, precision, "
    "recall, auc, their class and long names";

/// Precision's and Recall's `thresholds`: null, a number or a list of one.
LogicalResult readThreshold(ConfigReader &config, double &out) {
  const json::Value *field = config.getSet("thresholds");
  if (!field)
    return success();
  const json::Value *one = field;
  if (const json::Array *list = field->getAsArray()) {
    if (list->size() != 1)
      return config.unsupportedValue(
          "thresholds", "one threshold (a metric with several thresholds "
                        "logs a list, which is not supported)");
    one = &(*list)[0];
  }
  std::optional<double> value = one->getAsNumber();
  if (!value || !std::isfinite(*value))
    return config.unsupportedValue("thresholds", "expected a number");
  out = roundToFloat32(*value);
  return success();
}

/// One metric, a name or a Keras metric object, at `value` in field `key`
/// of `owner` (whose fields are named `path`...).
LogicalResult readOneMetric(ConfigReader &owner, llvm::StringRef key,
                            const json::Value &value, const std::string &path,
                            builder::Metric &out) {
  using K = mlir::graph::MetricKind;
  auto unsupported = [&](const json::Value &at, const std::string &what) {
    // Built by appending: GCC 12 warns (-Wrestrict, a false positive) on
    // "'" + std::string&&.
    std::string message = "unsupported metric ";
    message.append(what)
        .append(" (")
        .append(kSupportedMetrics.str())
        .append(")");
    return owner.errorAt(&at, key, message);
  };
  if (std::optional<llvm::StringRef> name = value.getAsString()) {
    std::optional<builder::Metric> metric = metricOf(*name);
    if (!metric)
      return unsupported(value, "'" + name->str() + "'");
    out = *metric;
    return success();
  }
  if (std::optional<llvm::StringRef> name = functionName(value)) {
    std::optional<builder::Metric> metric = metricOf(*name);
    // The function accuracy compares values exactly (keras.metrics.
    // Accuracy), not the accuracy compile() picks for the string.
    if (!metric || *name == "accuracy" || *name == "acc")
      return unsupported(value, "function '" + name->str() + "'");
    out = *metric;
    return success();
  }
  const json::Object *objectValue = value.getAsObject();
  if (!objectValue)
    return unsupported(value, describe(value));
  ConfigReader object(owner.document(), value, *objectValue, path,
                      owner.errorSink());
  std::string className;
  if (failed(object.readString("class_name", className, true)))
    return failure();
  std::optional<builder::Metric> metric = metricOf(className);
  // Keras' Accuracy compares values exactly: another metric than the
  // accuracy its name suggests.
  if (!metric || className == "accuracy" || className == "acc")
    return unsupported(value, "'" + className + "'");
  object.ignore("module");
  object.ignore("registered_name");
  out = *metric;
  if (!object.getSet("config"))
    return object.checkNoOtherFields();
  std::unique_ptr<ConfigReader> config = object.child("config");
  if (!config)
    return failure();
  ConfigReader &c = *config;
  c.ignore("dtype");
  std::string name;
  if (failed(c.readString("name", name)))
    return failure();
  if (!name.empty())
    out.name = name;
  switch (out.kind) {
  case K::binary_accuracy: {
    double threshold = 0.5;
    if (failed(c.readDouble("threshold", threshold)))
      return failure();
    out.threshold = roundToFloat32(threshold);
    break;
  }
  case K::top_k_categorical_accuracy:
  case K::sparse_top_k_categorical_accuracy: {
    if (failed(c.readInt("k", out.k)))
      return failure();
    if (out.k < 1)
      return c.unsupportedValue("k", "expected an integer >= 1");
    bool sorted = false;
    if (failed(c.readBool("from_sorted_ids", sorted)))
      return failure();
    if (sorted)
      return c.error("from_sorted_ids", "predictions that are sorted class "
                                        "ids are not supported");
    break;
  }
  case K::precision:
  case K::recall: {
    if (failed(readThreshold(c, out.threshold)) ||
        failed(c.readInt("top_k", out.k)) ||
        failed(c.readInt("class_id", out.class_id)))
      return failure();
    if (c.getSet("top_k") && out.k < 1)
      return c.unsupportedValue("top_k", "expected an integer >= 1 or None");
    if (c.getSet("class_id") && out.class_id < 0)
      return c.unsupportedValue("class_id", "expected an integer >= 0 or None");
    // Keras' default threshold: 0.5, or with top_k NEG_INF (-1e10), which
    // counts exactly the top k; a threshold given, 0.5 included, applies.
    if (!c.getSet("thresholds") && out.k > 0)
      out.threshold = builder::kKerasTopKThreshold;
    break;
  }
  case K::auc: {
    std::string curve = "ROC", summation = "interpolation";
    bool multiLabel = false;
    if (failed(c.readInt("num_thresholds", out.num_thresholds)) ||
        failed(c.readString("curve", curve)) ||
        failed(c.readString("summation_method", summation)) ||
        failed(c.readBool("multi_label", multiLabel)) ||
        failed(c.readBool("from_logits", out.from_logits)))
      return failure();
    if (out.num_thresholds < 2)
      return c.unsupportedValue("num_thresholds", "expected an integer > 1");
    if (curve == "ROC")
      out.curve = mlir::graph::AucCurve::roc;
    else if (curve == "PR")
      out.curve = mlir::graph::AucCurve::pr;
    else
      return c.unsupportedValue("curve", "expected 'ROC' or 'PR'");
    std::optional<mlir::graph::AucSummation> method =
        mlir::graph::symbolizeAucSummation(summation);
    if (!method)
      return c.unsupportedValue(
          "summation_method",
          "expected 'interpolation', 'minoring' or 'majoring'");
    out.summation = *method;
    if (multiLabel)
      return c.error("multi_label", "AUC with multi_label (an AUC per "
                                    "label, averaged) is not supported");
    if (failed(c.expectUnset("num_labels", "num_labels needs multi_label")) ||
        failed(c.expectUnset("label_weights",
                             "AUC's label_weights are not supported")) ||
        failed(c.expectUnset("thresholds",
                             "AUC's own thresholds are not supported; use "
                             "num_thresholds")))
      return failure();
    break;
  }
  default:
    break;
  }
  if (failed(c.checkNoOtherFields()))
    return failure();
  return object.checkNoOtherFields();
}

/// A list of metrics (or one, or null) for one output, at `value`.
LogicalResult readMetricList(ConfigReader &owner, llvm::StringRef key,
                             const json::Value &value, const std::string &path,
                             std::vector<builder::Metric> &out) {
  if (value.kind() == json::Value::Null)
    return success();
  const json::Array *list = value.getAsArray();
  if (!list) {
    builder::Metric metric;
    if (failed(readOneMetric(owner, key, value, path, metric)))
      return failure();
    out.push_back(metric);
    return success();
  }
  for (auto [i, element] : llvm::enumerate(*list)) {
    builder::Metric metric;
    std::string at =
        path.substr(0, path.size() - 1) + "[" + std::to_string(i) + "].";
    if (failed(readOneMetric(owner, key, element, at, metric)))
      return failure();
    // Two metrics of one name are both logged, the second as NAME_1, the
    // third NAME_2 (Keras' CompileMetrics.result).
    const std::string base = metric.name;
    for (int index = 1; llvm::any_of(
             out,
             [&](const builder::Metric &m) { return m.name == metric.name; });
         ++index)
      metric.name = base + "_" + std::to_string(index);
    out.push_back(metric);
  }
  return success();
}

/// compile_config's `field` (loss, loss_weights or metrics) split by
/// output, Keras' way: one value for every output (`shared`, when the
/// value is not a container of them), a list with one entry per output, or
/// a dict by output name. `each(i, value, path)` reads output i's entry;
/// an output a dict leaves out is skipped.
LogicalResult
forEachOutput(ConfigReader &compile, llvm::StringRef field,
              llvm::ArrayRef<std::string> outputs,
              llvm::function_ref<bool(const json::Value &)> shared,
              llvm::function_ref<LogicalResult(size_t, const json::Value &,
                                               const std::string &)>
                  each) {
  const json::Value *value = compile.getSet(field);
  if (!value)
    return success();
  std::string base = "compile_config." + field.str();
  auto names = [&] {
    std::string text;
    for (const std::string &o : outputs)
      text += (text.empty() ? "'" : ", '") + o + "'";
    return text;
  };
  if (shared(*value)) {
    for (size_t i = 0; i < outputs.size(); ++i)
      if (failed(each(i, *value, base + ".")))
        return failure();
    return success();
  }
  if (const json::Array *list = value->getAsArray()) {
    if (list->size() != outputs.size())
      return compile.error(field, "a list of " + llvm::Twine(list->size()) +
                                      " entries for a model of " +
                                      llvm::Twine(outputs.size()) +
                                      " outputs (" + names() + ")");
    for (auto [i, element] : llvm::enumerate(*list))
      if (failed(each(i, element, base + "[" + std::to_string(i) + "].")))
        return failure();
    return success();
  }
  const json::Object *dict = value->getAsObject();
  if (!dict)
    return compile.unsupportedValue(field, "a list or a dict by output");
  for (const auto &entry : *dict) {
    llvm::StringRef key = entry.first;
    const std::string *match =
        llvm::find_if(outputs, [&](const std::string &o) { return o == key; });
    if (match == outputs.end())
      return compile.error(field, "the model has no output '" + key +
                                      "' (its outputs: " + names() + ")");
  }
  for (auto [i, name] : llvm::enumerate(outputs))
    if (const json::Value *entry = dict->get(name))
      if (failed(each(i, *entry, base + "." + name + ".")))
        return failure();
  return success();
}

/// builder::Optimizer's alternative for an --optimizer flag value.
std::optional<size_t> optimizerIndex(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<size_t>>(name)
      .Case("sgd", 0)
      .Case("adam", 1)
      .Case("rmsprop", 2)
      .Case("adagrad", 3)
      .Case("adamax", 4)
      .Case("nadam", 5)
      .Default(std::nullopt);
}

} // namespace

LogicalResult checkImportOptions(const ImportOptions &options,
                                 mlir::Location fileLoc) {
  if (options.batchSize && *options.batchSize <= 0)
    return fileError(fileLoc, "batch size must be positive, got " +
                                  llvm::Twine(*options.batchSize));
  if (options.learningRate &&
      !(std::isfinite(*options.learningRate) && *options.learningRate >= 0))
    return fileError(fileLoc, "learning rate must be finite and >= 0, got " +
                                  formatNumber(*options.learningRate));
  if (options.loss && !lossKindOf(*options.loss))
    return fileError(fileLoc, "unsupported loss option '" + *options.loss +
                                  "' (" + kSupportedLosses + ")");
  std::pair<const char *, const std::optional<double> &> numbers[] = {
      {"clipnorm", options.clipnorm},
      {"global clipnorm", options.globalClipnorm},
      {"clipvalue", options.clipvalue},
      {"weight decay", options.weightDecay}};
  for (auto &[name, value] : numbers)
    if (value && !(std::isfinite(*value) && *value >= 0))
      return fileError(fileLoc, llvm::Twine(name) +
                                    " must be a number >= 0 (0: off), got " +
                                    formatNumber(*value));
  if ((options.clipnorm.value_or(0) > 0) +
          (options.globalClipnorm.value_or(0) > 0) +
          (options.clipvalue.value_or(0) > 0) >
      1)
    return fileError(fileLoc, "at most one of --clipnorm, --global-clipnorm "
                              "and --clipvalue can be set (as in Keras)");
  if (options.optimizer && !optimizerIndex(*options.optimizer))
    return fileError(fileLoc, "unsupported optimizer option '" +
                                  *options.optimizer +
                                  "' (expected 'sgd', 'adam', 'rmsprop', "
                                  "'adagrad', 'adamax' or 'nadam')");
  return success();
}

LogicalResult readTraining(ConfigReader &root, const ImportOptions &options,
                           llvm::ArrayRef<std::string> outputs,
                           std::optional<builder::Training> &out) {
  // Each output's loss (unset: none given), weight and metrics.
  size_t n = outputs.size();
  std::vector<std::optional<builder::OutputLoss>> losses(n);
  std::vector<double> weights(n, 1.0);
  std::vector<std::optional<std::vector<builder::Metric>>> metrics(n);
  std::optional<builder::Optimizer> optimizer;
  builder::Training training;
  bool compiled = root.getSet("compile_config") != nullptr;
  if (compiled) {
    std::unique_ptr<ConfigReader> compile = root.child("compile_config");
    if (!compile)
      return failure();
    ConfigReader &c = *compile;
    auto isKerasObject = [](const json::Value &v) {
      const json::Object *o = v.getAsObject();
      return o && o->get("class_name");
    };
    auto oneLoss = [&](const json::Value &v) {
      return v.getAsString() || isKerasObject(v);
    };
    if (failed(forEachOutput(
            c, "loss", outputs, oneLoss,
            [&](size_t i, const json::Value &v, const std::string &path) {
              if (v.kind() == json::Value::Null)
                return success();
              builder::OutputLoss loss;
              if (failed(readOneLoss(c, "loss", v, path, loss)))
                return failure();
              losses[i] = loss;
              return success();
            })))
      return failure();
    if (failed(forEachOutput(
            c, "loss_weights", outputs,
            [](const json::Value &v) { return v.getAsNumber().has_value(); },
            [&](size_t i, const json::Value &v, const std::string &) {
              if (v.kind() == json::Value::Null)
                return success();
              std::optional<double> w = v.getAsNumber();
              if (!w || !std::isfinite(*w))
                return c.errorAt(&v, "loss_weights",
                                 "expected a number, got " + describe(v));
              weights[i] = roundToFloat32(*w);
              return success();
            })))
      return failure();
    // One output's metrics may be a list, one metric or null; the whole
    // field a list for a model of one output.
    auto sharedMetrics = [&](const json::Value &v) {
      bool dict = v.getAsObject() && !isKerasObject(v);
      return !dict && (n == 1 || !v.getAsArray());
    };
    if (failed(forEachOutput(
            c, "metrics", outputs, sharedMetrics,
            [&](size_t i, const json::Value &v, const std::string &path) {
              std::vector<builder::Metric> list;
              if (failed(readMetricList(c, "metrics", v, path, list)))
                return failure();
              metrics[i] = std::move(list);
              return success();
            })))
      return failure();
    if (failed(readOptimizer(c, optimizer, training)))
      return failure();
    if (const json::Value *weighted = c.getSet("weighted_metrics")) {
      const json::Array *list = weighted->getAsArray();
      if (!list || !list->empty())
        return c.unsupportedValue("weighted_metrics",
                                  "weighted metrics are not supported; "
                                  "expected null");
    }
    // Execution settings (run_eagerly, jit_compile, steps_per_execution,
    // auto_scale_loss) do not change what is trained.
    // compile() without an optimizer means RMSprop (Keras' default).
    if (!optimizer)
      optimizer = builder::RMSprop{};
    bool any =
        llvm::any_of(losses, [](const auto &l) { return l.has_value(); });
    if (any && !options.loss)
      for (auto [i, loss] : llvm::enumerate(losses))
        if (!loss)
          return c.error("loss", "output '" + outputs[i] +
                                     "' has no loss: every output of a "
                                     "trained model needs one (as Keras' "
                                     "loss dict does)");
  }
  // Without a compile_config the builder's metrics (accuracy) stay.

  if (options.loss) {
    // The flag's loss for every output. What the file says of the output
    // (from_logits), of any loss (the reduction, label smoothing) stays;
    // the options of the file's own loss go with it.
    LossKind flag = *lossKindOf(*options.loss);
    for (std::optional<builder::OutputLoss> &loss : losses) {
      if (!loss)
        loss.emplace();
      else if (loss->loss == flag)
        continue;
      loss->loss = flag;
      loss->alpha.reset();
      loss->beta.reset();
      loss->gamma.reset();
      loss->delta.reset();
      loss->apply_class_balancing = false;
      loss->ignore_class.reset();
      loss->axis.clear();
      if (loss->label_smoothing > 0 &&
          flag != LossKind::categorical_crossentropy &&
          flag != LossKind::binary_crossentropy &&
          flag != LossKind::binary_focal_crossentropy &&
          flag != LossKind::categorical_focal_crossentropy)
        return fileError(root.document().fileLoc(),
                         "the compile_config's label_smoothing needs "
                         "categorical_crossentropy, binary_crossentropy or a "
                         "focal cross-entropy, but the loss option is " +
                             mlir::graph::stringifyLossKind(flag).str());
    }
  }
  if (!losses.front()) {
    if (options.optimizer || options.learningRate || options.fromLogits ||
        options.clipnorm || options.globalClipnorm || options.clipvalue ||
        options.weightDecay)
      return fileError(root.document().fileLoc(),
                       "training options were given but the model has no "
                       "loss: it has no compile_config loss and no loss "
                       "option");
    // The forward model alone (graph-opt takes it); graphc will need a
    // loss, and the user should hear why now.
    llvm::errs() << "graph-import: note: the model has no loss (no "
                    "compile_config loss, no --loss): the module holds the "
                    "forward model only, and graphc needs a loss; Keras' "
                    "to_json() does not record compile(), so pass --loss "
                    "categorical_crossentropy or "
                    "sparse_categorical_crossentropy (and --optimizer)\n";
    return success();
  }
  training.losses.clear();
  for (size_t i = 0; i < n; ++i) {
    builder::OutputLoss loss = *losses[i];
    if (options.fromLogits)
      loss.from_logits = *options.fromLogits;
    loss.weight = weights[i];
    if (compiled || metrics[i])
      loss.metrics = metrics[i].value_or(std::vector<builder::Metric>{});
    // Class indices have no shape to compare predictions with; labels of
    // the predictions' shape are no class indices.
    using K = mlir::graph::MetricKind;
    bool sparse = loss.loss == LossKind::sparse_categorical_crossentropy;
    for (const builder::Metric &m : loss.metrics) {
      bool wantsIndices = m.kind == K::sparse_categorical_accuracy ||
                          m.kind == K::sparse_top_k_categorical_accuracy;
      bool wantsShape = !wantsIndices && m.kind != K::accuracy;
      if (sparse ? wantsShape : wantsIndices)
        return fileError(
            root.document().fileLoc(),
            "metric '" + m.name + "'" +
                (n > 1 ? " of output '" + outputs[i] + "'" : std::string()) +
                (sparse ? " compares predictions with labels of their shape; "
                          "the loss sparse_categorical_crossentropy takes "
                          "class indices"
                        : " takes class indices; the loss " +
                              mlir::graph::stringifyLossKind(loss.loss).str() +
                              " takes labels of the predictions' shape"));
    }
    training.losses.push_back(std::move(loss));
  }

  if (options.optimizer) {
    // builder::Optimizer's alternative for the flag. Emplaced, not copied
    // from a temporary: copying a variant whose alternatives hold vectors
    // (a schedule's boundaries) trips GCC 12's -Wmaybe-uninitialized.
    size_t requested = *optimizerIndex(*options.optimizer);
    // The file's hyper-parameters stay when it names the same optimizer
    // (use_ema included).
    if (!optimizer || optimizer->index() != requested) {
      training.ema_momentum.reset();
      training.ema_overwrite_frequency = 0;
      switch (requested) {
      case 0:
        optimizer.emplace(builder::SGD{});
        break;
      case 1:
        optimizer.emplace(builder::Adam{});
        break;
      case 2:
        optimizer.emplace(builder::RMSprop{});
        break;
      case 3:
        optimizer.emplace(builder::Adagrad{});
        break;
      case 4:
        optimizer.emplace(builder::Adamax{});
        break;
      default:
        optimizer.emplace(builder::Nadam{});
        break;
      }
    }
  }
  // A model that was never compiled (no compile_config) gets Adam with
  // Keras' defaults (what the builder defaults to), not compile()'s RMSprop
  // default: there is no compile() call to imitate.
  training.optimizer = optimizer.value_or(builder::Adam{});
  if (options.learningRate)
    std::visit(
        [&](auto &opt) {
          // A constant rate: it replaces a schedule too.
          opt.learning_rate = roundToFloat32(*options.learningRate);
          opt.schedule.reset();
        },
        training.optimizer);
  // A clipping flag replaces the file's clipping, whichever kind it was.
  bool clipFlag =
      options.clipnorm || options.globalClipnorm || options.clipvalue;
  std::visit(
      [&](auto &opt) {
        if (clipFlag) {
          opt.clipnorm = roundToFloat32(options.clipnorm.value_or(0));
          opt.global_clipnorm =
              roundToFloat32(options.globalClipnorm.value_or(0));
          opt.clipvalue = roundToFloat32(options.clipvalue.value_or(0));
        }
        if (options.weightDecay)
          opt.weight_decay = roundToFloat32(*options.weightDecay);
      },
      training.optimizer);
  out = training;
  return success();
}

namespace {

/// builder::Optimizer's alternative of a saved optimizer (a name or an
/// object; a LossScaleOptimizer's inner one's), if it is one of Keras'.
std::optional<size_t> savedOptimizerIndex(const json::Value *optimizer) {
  if (!optimizer)
    return std::nullopt;
  std::optional<llvm::StringRef> name = optimizer->getAsString();
  if (const json::Object *object = optimizer->getAsObject()) {
    name = object->getString("class_name");
    if (name == "LossScaleOptimizer")
      if (const json::Object *config = object->getObject("config"))
        return savedOptimizerIndex(config->get("inner_optimizer"));
  }
  std::optional<builder::Optimizer> kind =
      name ? optimizerOf(*name) : std::nullopt;
  return kind ? std::optional<size_t>(kind->index()) : std::nullopt;
}

/// The optimizer's own config object (a LossScaleOptimizer's inner one's).
json::Object *optimizerConfig(json::Value &optimizer) {
  json::Object *object = optimizer.getAsObject();
  if (!object)
    return nullptr;
  json::Object *config = object->getObject("config");
  if (config && object->getString("class_name") == "LossScaleOptimizer")
    if (json::Value *inner = config->get("inner_optimizer"))
      return optimizerConfig(*inner);
  return config;
}

/// A loss, by its Keras name, as compile() saves a loss object.
json::Value lossObject(llvm::StringRef name, bool fromLogits) {
  static constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral>
      kLogitClasses[] = {
          {"binary_crossentropy", "BinaryCrossentropy"},
          {"categorical_crossentropy", "CategoricalCrossentropy"},
          {"sparse_categorical_crossentropy", "SparseCategoricalCrossentropy"},
          {"binary_focal_crossentropy", "BinaryFocalCrossentropy"},
          {"categorical_focal_crossentropy", "CategoricalFocalCrossentropy"}};
  for (const auto &[snake, className] : kLogitClasses)
    if (name == snake && fromLogits)
      return json::Object{
          {"module", "keras.losses"},
          {"class_name", className},
          {"config", json::Object{{"name", snake},
                                  {"reduction", "sum_over_batch_size"},
                                  {"from_logits", true}}},
          {"registered_name", nullptr}};
  return name.str();
}

/// Whether a saved loss says from_logits.
bool savedFromLogits(const json::Value &loss) {
  const json::Object *object = loss.getAsObject();
  const json::Object *config = object ? object->getObject("config") : nullptr;
  return config && config->getBoolean("from_logits").value_or(false);
}

/// `loss` (one saved loss, or a list or dict of them) with the flags.
void applyLossOptions(json::Value &loss, const ImportOptions &options) {
  if (json::Array *list = loss.getAsArray()) {
    for (json::Value &each : *list)
      applyLossOptions(each, options);
    return;
  }
  if (json::Object *dict = loss.getAsObject();
      dict && !dict->get("class_name")) {
    for (auto &entry : *dict)
      applyLossOptions(entry.second, options);
    return;
  }
  if (loss.kind() == json::Value::Null)
    return;
  bool fromLogits = options.fromLogits.value_or(savedFromLogits(loss));
  if (options.loss) {
    loss = lossObject(*options.loss, fromLogits);
    return;
  }
  if (!options.fromLogits)
    return;
  if (std::optional<llvm::StringRef> name = loss.getAsString()) {
    loss = lossObject(*name, fromLogits);
  } else if (json::Object *object = loss.getAsObject()) {
    if (json::Object *config = object->getObject("config"))
      (*config)["from_logits"] = fromLogits;
  }
}

} // namespace

void applyOptionsToCompileConfig(json::Object &config,
                                 const ImportOptions &options) {
  json::Object *compile = config.getObject("compile_config");
  if (!compile)
    return;
  if (options.loss || options.fromLogits)
    if (json::Value *loss = compile->get("loss"))
      applyLossOptions(*loss, options);
  if (options.optimizer && savedOptimizerIndex(compile->get("optimizer")) !=
                               optimizerIndex(*options.optimizer)) {
    // Another optimizer: Keras' defaults, as the training took them.
    static constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral>
        kClasses[] = {{"sgd", "SGD"},         {"adam", "Adam"},
                      {"rmsprop", "RMSprop"}, {"adagrad", "Adagrad"},
                      {"adamax", "Adamax"},   {"nadam", "Nadam"}};
    llvm::StringRef className;
    for (const auto &[flag, name] : kClasses)
      if (*options.optimizer == flag)
        className = name;
    (*compile)["optimizer"] =
        json::Object{{"module", "keras.optimizers"},
                     {"class_name", className},
                     {"config", json::Object{{"name", *options.optimizer}}},
                     {"registered_name", nullptr}};
  }
  json::Value *optimizer = compile->get("optimizer");
  if (optimizer && optimizer->getAsString() &&
      (options.learningRate || options.clipnorm || options.globalClipnorm ||
       options.clipvalue || options.weightDecay)) {
    // compile(optimizer="adam"): the object the flags' values go in.
    std::string name = optimizer->getAsString()->lower();
    *optimizer = json::Object{{"module", "keras.optimizers"},
                              {"class_name", *optimizer->getAsString()},
                              {"config", json::Object{{"name", name}}},
                              {"registered_name", nullptr}};
  }
  json::Object *settings = optimizer ? optimizerConfig(*optimizer) : nullptr;
  if (!settings)
    return;
  if (options.learningRate)
    (*settings)["learning_rate"] = roundToFloat32(*options.learningRate);
  if (options.clipnorm || options.globalClipnorm || options.clipvalue) {
    // A clipping flag replaces the file's clipping, whichever kind it was.
    auto clip = [](const std::optional<double> &v) -> json::Value {
      if (v && *v > 0)
        return roundToFloat32(*v);
      return nullptr;
    };
    (*settings)["clipnorm"] = clip(options.clipnorm);
    (*settings)["global_clipnorm"] = clip(options.globalClipnorm);
    (*settings)["clipvalue"] = clip(options.clipvalue);
  }
  if (options.weightDecay)
    (*settings)["weight_decay"] = roundToFloat32(*options.weightDecay);
}

} // namespace graph::keras
