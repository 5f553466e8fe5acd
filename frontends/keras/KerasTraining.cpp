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

LogicalResult readLoss(ConfigReader &compile, std::optional<LossKind> &loss,
                       bool &fromLogits, builder::Training &training) {
  double &labelSmoothing = training.label_smoothing;
  std::optional<double> &delta = training.delta;
  bool &sumReduction = training.sum_reduction;
  const json::Value *field = compile.getSet("loss");
  if (!field)
    return success();
  auto kindOf = [](llvm::StringRef name) { return lossKindOf(name); };
  constexpr llvm::StringLiteral expected = kSupportedLosses;
  if (std::optional<llvm::StringRef> name = field->getAsString()) {
    loss = kindOf(*name);
    if (!loss)
      return compile.error("loss", "unsupported loss '" + *name + "' (" +
                                       expected + ")");
    return success();
  }
  if (!field->getAsObject())
    return compile.error("loss", "unsupported value " + describe(*field) +
                                     " (a model with several outputs or "
                                     "losses is not supported; " +
                                     expected + ")");
  std::unique_ptr<ConfigReader> object = compile.child("loss");
  std::string className;
  if (failed(object->readString("class_name", className, true)))
    return failure();
  loss = kindOf(className);
  if (!loss)
    return compile.error("loss", "unsupported loss '" + className + "' (" +
                                     expected + ")");
  object->ignore("module");
  object->ignore("registered_name");
  if (!object->getSet("config"))
    return object->checkNoOtherFields();
  std::unique_ptr<ConfigReader> config = object->child("config");
  std::string reduction;
  if (!config || failed(config->readBool("from_logits", fromLogits)) ||
      failed(config->readString("reduction", reduction)))
    return failure();
  // sum_over_batch_size and auto mean the loss is averaged over the batch,
  // which graph.training does; sum is its reduction = "sum". None (a loss
  // per example) has nothing to train on.
  if (reduction == "none")
    return config->error("reduction",
                         "reduction 'none' (a loss per example) is not "
                         "supported for training; expected "
                         "'sum_over_batch_size' or 'sum'");
  if (!reduction.empty() && reduction != "sum_over_batch_size" &&
      reduction != "auto" && reduction != "sum")
    return config->unsupportedValue("reduction",
                                    "expected 'sum_over_batch_size' or 'sum'");
  sumReduction = reduction == "sum";
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
      labelSmoothing = roundToFloat32(*value);
    } else {
      if (!value || !(*value >= 0 && *value < 1))
        return config->unsupportedValue("label_smoothing",
                                        "expected a number in [0, 1)");
      labelSmoothing = roundToFloat32(*value);
    }
  }
  if (*loss == LossKind::huber) {
    if (const json::Value *d = config->getSet("delta")) {
      std::optional<double> value = d->getAsNumber();
      if (!value || !(*value > 0) || !std::isfinite(*value))
        return config->unsupportedValue("delta", "expected a positive number");
      delta = *value;
    }
  }
  bool focal = *loss == LossKind::binary_focal_crossentropy ||
               *loss == LossKind::categorical_focal_crossentropy;
  if (focal && (failed(readLossOption(*config, "alpha", training.alpha)) ||
                failed(readLossOption(*config, "gamma", training.gamma))))
    return failure();
  if (*loss == LossKind::binary_focal_crossentropy &&
      failed(config->readBool("apply_class_balancing",
                              training.apply_class_balancing)))
    return failure();
  if (*loss == LossKind::tversky &&
      (failed(readLossOption(*config, "alpha", training.alpha)) ||
       failed(readLossOption(*config, "beta", training.beta))))
    return failure();
  // Dice's and Tversky's axis defaults to None, the whole batch; the other
  // losses reduce the last axis.
  if (*loss == LossKind::dice || *loss == LossKind::tversky) {
    if (failed(config->expectUnset(
            "axis", "only axis None (one ratio over the whole batch, "
                    "Keras' default) is supported")))
      return failure();
  } else if (failed(config->expectNumber("axis", -1.0))) {
    return failure();
  }
  if (failed(config->expectUnset("ignore_class",
                                 "ignore_class is not supported")) ||
      failed(config->checkNoOtherFields()))
    return failure();
  return object->checkNoOtherFields();
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

LogicalResult readOptimizer(ConfigReader &compile,
                            std::optional<builder::Optimizer> &out,
                            builder::Training &training) {
  const json::Value *field = compile.getSet("optimizer");
  if (!field)
    return success();
  auto kindOf = [](llvm::StringRef name) -> std::optional<builder::Optimizer> {
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
  };
  constexpr llvm::StringLiteral expected =
      "expected SGD, Adam, AdamW, RMSprop, Adagrad, Adamax or Nadam";
  if (std::optional<llvm::StringRef> name = field->getAsString()) {
    out = kindOf(*name);
    if (!out)
      return compile.error("optimizer", "unsupported optimizer '" + *name +
                                            "' (" + expected + ")");
    return success();
  }
  std::unique_ptr<ConfigReader> object = compile.child("optimizer");
  std::string className;
  if (!object || failed(object->readString("class_name", className, true)))
    return failure();
  out = kindOf(className);
  if (!out)
    return compile.error("optimizer", "unsupported optimizer '" + className +
                                          "' (" + expected + ")");
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

LogicalResult readMetrics(ConfigReader &compile, std::vector<std::string> &out,
                          std::map<std::string, int64_t> &topK) {
  out.clear();
  topK.clear();
  const json::Value *field = compile.getSet("metrics");
  if (!field)
    return success();
  const json::Array *list = field->getAsArray();
  if (!list)
    return compile.error("metrics",
                         "expected a list of metrics, got " + describe(*field));
  for (const json::Value &metric : *list) {
    std::optional<llvm::StringRef> name = metric.getAsString();
    if (const json::Object *object = metric.getAsObject())
      name = object->getString("class_name");
    // Keras resolves "accuracy" to categorical or sparse accuracy from the
    // labels, as graph.accuracy does. (The Accuracy class compares values
    // exactly, which is another metric.)
    static constexpr llvm::StringLiteral accuracyNames[] = {
        "accuracy",
        "acc",
        "categorical_accuracy",
        "sparse_categorical_accuracy",
        "CategoricalAccuracy",
        "SparseCategoricalAccuracy"};
    bool accuracy = name && llvm::is_contained(accuracyNames, *name);
    // Keras' top-k accuracies (k = 5 unless the object says), under their
    // function's name or the object's own.
    if (name && (*name == "top_k_categorical_accuracy" ||
                 *name == "sparse_top_k_categorical_accuracy" ||
                 *name == "TopKCategoricalAccuracy" ||
                 *name == "SparseTopKCategoricalAccuracy")) {
      bool sparse = name->contains_insensitive("sparse");
      std::string logName = sparse ? "sparse_top_k_categorical_accuracy"
                                   : "top_k_categorical_accuracy";
      int64_t k = 5;
      if (const json::Object *object = metric.getAsObject())
        if (const json::Object *config = object->getObject("config")) {
          if (std::optional<llvm::StringRef> own = config->getString("name"))
            logName = own->str();
          if (const json::Value *kv = config->get("k")) {
            std::optional<int64_t> given = kv->getAsInteger();
            if (!given || *given < 1)
              return compile.error("metrics", name->str() +
                                                  ": k must be an "
                                                  "integer >= 1, got " +
                                                  describe(*kv));
            k = *given;
          }
          if (std::optional<bool> sorted =
                  config->getBoolean("from_sorted_ids");
              sorted && *sorted)
            return compile.error("metrics",
                                 name->str() + ": from_sorted_ids (predictions "
                                               "that are sorted class ids) is "
                                               "not supported");
        }
      if (!llvm::is_contained(out, logName))
        out.push_back(logName);
      topK[logName] = k;
      continue;
    }
    // The error metrics and binary accuracy, under the name Keras' logs
    // give them: the string as written, or the metric object's own name.
    std::optional<std::string> pointwise;
    if (name && !accuracy) {
      static constexpr std::pair<llvm::StringLiteral, llvm::StringLiteral>
          classes[] = {
              {"MeanAbsoluteError", "mean_absolute_error"},
              {"MeanSquaredError", "mean_squared_error"},
              {"MeanAbsolutePercentageError", "mean_absolute_percentage_error"},
              {"MeanSquaredLogarithmicError", "mean_squared_logarithmic_error"},
              {"BinaryAccuracy", "binary_accuracy"}};
      std::string canonical = name->str();
      for (const auto &[className, function] : classes)
        if (*name == className)
          canonical = function.str();
      if (mlir::graph::pointwiseMetricKind(canonical)) {
        pointwise = canonical;
        if (const json::Object *object = metric.getAsObject())
          if (const json::Object *config = object->getObject("config"))
            if (std::optional<llvm::StringRef> own = config->getString("name"))
              pointwise = own->str();
        // The log name must still say which metric it is.
        if (!mlir::graph::pointwiseMetricKind(*pointwise))
          pointwise = canonical;
      }
    }
    if (!accuracy && !pointwise) {
      // Built by appending: GCC 12 warns (-Wrestrict, a false positive) on
      // "'" + std::string&&.
      std::string what = "unsupported metric ";
      if (name)
        what.append("'").append(name->str()).append("'");
      else
        what.append(describe(metric));
      return compile.error("metrics",
                           what + " (supported: accuracy, binary_accuracy, "
                                  "mae, mse, mape, msle, the (sparse) top-k "
                                  "categorical accuracies, their long and "
                                  "class names)");
    }
    std::string logName = accuracy ? std::string("accuracy") : *pointwise;
    if (!llvm::is_contained(out, logName))
      out.push_back(logName);
  }
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
      !(std::isfinite(*options.learningRate) && *options.learningRate > 0))
    return fileError(fileLoc, "learning rate must be positive, got " +
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
                           std::optional<builder::Training> &out) {
  std::optional<LossKind> loss;
  bool fromLogits = false;
  std::optional<builder::Optimizer> optimizer;
  builder::Training training;
  if (root.getSet("compile_config")) {
    std::unique_ptr<ConfigReader> compile = root.child("compile_config");
    if (!compile || failed(readLoss(*compile, loss, fromLogits, training)) ||
        failed(readOptimizer(*compile, optimizer, training)) ||
        failed(readMetrics(*compile, training.metrics, training.top_k)) ||
        failed(compile->expectUnset("loss_weights",
                                    "loss weights are not supported")))
      return failure();
    if (loss && !mlir::graph::isPointwiseLoss(*loss))
      for (const std::string &metric : training.metrics)
        if (mlir::graph::pointwiseMetricKind(metric))
          return compile->error(
              "metrics", "metric '" + metric +
                             "' compares predictions with targets of their "
                             "shape; the loss " +
                             mlir::graph::stringifyLossKind(*loss).str() +
                             " takes class labels");
    if (const json::Value *weighted = compile->getSet("weighted_metrics")) {
      const json::Array *list = weighted->getAsArray();
      if (!list || !list->empty())
        return compile->unsupportedValue("weighted_metrics",
                                         "weighted metrics are not supported; "
                                         "expected null");
    }
    // Execution settings (run_eagerly, jit_compile, steps_per_execution,
    // auto_scale_loss) do not change what is trained.
    // compile() without an optimizer means RMSprop (Keras' default).
    if (!optimizer)
      optimizer = builder::RMSprop{};
  }
  // Without a compile_config the builder's metrics (accuracy) stay.

  if (options.loss) {
    std::optional<LossKind> fileLoss = loss;
    loss = lossKindOf(*options.loss);
    // The file's focal and Tversky options belong to the file's loss.
    if (loss != fileLoss) {
      training.alpha.reset();
      training.beta.reset();
      training.gamma.reset();
      training.apply_class_balancing = false;
    }
  }
  if (!loss) {
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
  training.loss = *loss;
  training.from_logits = options.fromLogits.value_or(fromLogits);
  if (training.label_smoothing > 0 &&
      training.loss != LossKind::categorical_crossentropy &&
      training.loss != LossKind::binary_crossentropy &&
      training.loss != LossKind::binary_focal_crossentropy &&
      training.loss != LossKind::categorical_focal_crossentropy)
    return fileError(root.document().fileLoc(),
                     "the compile_config's label_smoothing needs "
                     "categorical_crossentropy, binary_crossentropy or a "
                     "focal cross-entropy, but the loss option is " +
                         mlir::graph::stringifyLossKind(training.loss).str());

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

} // namespace graph::keras
