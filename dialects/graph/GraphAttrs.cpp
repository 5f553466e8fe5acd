//===- GraphAttrs.cpp - graph dialect attributes --------------------------===//

#include "dialects/graph/GraphAttrs.h"
#include "dialects/graph/GraphDialect.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"
#include <charconv>
#include <cmath>

using namespace mlir;
using namespace mlir::graph;

#include "dialects/graph/GraphEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "dialects/graph/GraphAttrs.cpp.inc"

void GraphDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/graph/GraphAttrs.cpp.inc"
      >();
}

FailureOr<llvm::APFloat> mlir::graph::parseF64(AsmParser &parser) {
  double value;
  if (parser.parseFloat(value))
    return failure();
  return llvm::APFloat(value);
}

std::string mlir::graph::formatF64(double value) {
  // std::to_chars gives the shortest digits that read back as the same double.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return std::string(buffer, end);
}

void mlir::graph::printF64(AsmPrinter &printer, const llvm::APFloat &value) {
  // MLIR's lexer only takes a float literal with a '.'.
  std::string text = formatF64(value.convertToDouble());
  if (text.find_first_of(".ni") == std::string::npos) {
    size_t exponent = text.find('e');
    text.insert(exponent == std::string::npos ? text.size() : exponent, ".0");
  }
  printer.getStream() << text;
}

FailureOr<bool> mlir::graph::parseBool(AsmParser &parser) {
  if (succeeded(parser.parseOptionalKeyword("true")))
    return true;
  if (succeeded(parser.parseOptionalKeyword("false")))
    return false;
  return parser.emitError(parser.getCurrentLocation(),
                          "expected 'true' or 'false'");
}

//===----------------------------------------------------------------------===//
// InitializerAttr
//===----------------------------------------------------------------------===//

FailureOr<std::optional<llvm::APFloat>>
mlir::graph::parseMaybeF64(AsmParser &parser) {
  FailureOr<llvm::APFloat> value = parseF64(parser);
  if (failed(value))
    return failure();
  return std::optional<llvm::APFloat>(*value);
}

bool mlir::graph::sameF64(const std::optional<llvm::APFloat> &a,
                          const std::optional<llvm::APFloat> &b) {
  return a.has_value() == b.has_value() && (!a || a->bitwiseIsEqual(*b));
}

FailureOr<SmallVector<int64_t>> mlir::graph::parseI64List(AsmParser &parser) {
  SmallVector<int64_t> values;
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
        int64_t v;
        if (parser.parseInteger(v))
          return failure();
        values.push_back(v);
        return success();
      }))
    return failure();
  return values;
}

void mlir::graph::printI64List(AsmPrinter &printer, ArrayRef<int64_t> values) {
  printer << '[';
  llvm::interleaveComma(values, printer);
  printer << ']';
}

ArrayRef<StringRef> InitializerAttr::parameterNames(InitKind kind) {
  static const StringRef normal[] = {"mean", "stddev", "seed"};
  static const StringRef uniform[] = {"minval", "maxval", "seed"};
  static const StringRef constant[] = {"value"};
  static const StringRef seedOnly[] = {"seed"};
  switch (kind) {
  case InitKind::zeros:
  case InitKind::ones:
    return {};
  case InitKind::constant:
    return constant;
  case InitKind::random_normal:
  case InitKind::truncated_normal:
    return normal;
  case InitKind::random_uniform:
    return uniform;
  case InitKind::glorot_uniform:
  case InitKind::glorot_normal:
  case InitKind::he_normal:
  case InitKind::he_uniform:
  case InitKind::lecun_normal:
  case InitKind::lecun_uniform:
    return seedOnly;
  }
  llvm_unreachable("unknown initializer kind");
}

Attribute InitializerAttr::parse(AsmParser &parser, Type) {
  StringRef kindName;
  SMLoc kindLoc = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword(&kindName))
    return {};
  std::optional<InitKind> kind = symbolizeInitKind(kindName);
  if (!kind) {
    parser.emitError(kindLoc, "unknown initializer '") << kindName << "'";
    return {};
  }
  double mean = 0.0, stddev = 0.05, minval = -0.05, maxval = 0.05, value = 0.0;
  std::optional<int64_t> seed;
  ArrayRef<StringRef> allowed = parameterNames(*kind);
  llvm::SmallDenseSet<StringRef> seen;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (!seen.insert(key).second) {
      parser.emitError(keyLoc, "parameter '") << key << "' given twice";
      return {};
    }
    if (!llvm::is_contained(allowed, key)) {
      parser.emitError(keyLoc, "'")
          << key << "' is not a parameter of initializer '" << kindName << "'";
      return {};
    }
    if (key == "seed") {
      int64_t s;
      if (parser.parseInteger(s))
        return {};
      seed = s;
      continue;
    }
    double number;
    if (parser.parseFloat(number))
      return {};
    double *slot = llvm::StringSwitch<double *>(key)
                       .Case("mean", &mean)
                       .Case("stddev", &stddev)
                       .Case("minval", &minval)
                       .Case("maxval", &maxval)
                       .Case("value", &value);
    *slot = number;
  }
  if (parser.parseGreater())
    return {};
  using llvm::APFloat;
  return parser.getChecked<InitializerAttr>(
      parser.getContext(), *kind, APFloat(mean), APFloat(stddev),
      APFloat(minval), APFloat(maxval), APFloat(value), seed);
}

void InitializerAttr::print(AsmPrinter &printer) const {
  printer << '<' << stringifyInitKind(getKind());
  for (StringRef name : parameterNames(getKind())) {
    if (name == "seed") {
      if (getSeed())
        printer << ", seed = " << *getSeed();
      continue;
    }
    llvm::APFloat v = llvm::StringSwitch<llvm::APFloat>(name)
                          .Case("mean", getMean())
                          .Case("stddev", getStddev())
                          .Case("minval", getMinval())
                          .Case("maxval", getMaxval())
                          .Case("value", getValue());
    printer << ", " << name << " = ";
    printF64(printer, v);
  }
  printer << '>';
}

LogicalResult InitializerAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, InitKind kind,
    llvm::APFloat meanF, llvm::APFloat stddevF, llvm::APFloat minvalF,
    llvm::APFloat maxvalF, llvm::APFloat valueF, std::optional<int64_t> seed) {
  double mean = meanF.convertToDouble(), stddev = stddevF.convertToDouble();
  double minval = minvalF.convertToDouble(), maxval = maxvalF.convertToDouble();
  double value = valueF.convertToDouble();
  for (double v : {mean, stddev, minval, maxval, value})
    if (!std::isfinite(v))
      return emitError() << "initializer parameters must be finite";
  if ((kind == InitKind::random_normal || kind == InitKind::truncated_normal) &&
      stddev <= 0)
    return emitError() << "initializer '" << stringifyInitKind(kind)
                       << "' needs stddev > 0, got " << formatF64(stddev);
  if (kind == InitKind::random_uniform && !(minval < maxval))
    return emitError() << "initializer 'random_uniform' needs minval < maxval, "
                          "got ["
                       << formatF64(minval) << ", " << formatF64(maxval) << "]";
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizers
//===----------------------------------------------------------------------===//

/// The initial rate must be finite and not negative. Keras takes 0 (the
/// weights then stay, a schedule's warm-up from 0 included).
static LogicalResult
verifyLearningRate(function_ref<InFlightDiagnostic()> emitError,
                   StringRef optimizer, double learningRate) {
  if (!(learningRate >= 0) || !std::isfinite(learningRate))
    return emitError() << optimizer
                       << " needs a finite learning_rate >= 0, got "
                       << formatF64(learningRate);
  return success();
}

static LogicalResult
verifyUnitInterval(function_ref<InFlightDiagnostic()> emitError,
                   StringRef optimizer, StringRef name, double v) {
  if (!(v >= 0 && v < 1))
    return emitError() << optimizer << " needs " << name << " in [0, 1), got "
                       << formatF64(v);
  return success();
}

/// Clipping and weight decay: each off (0) or a finite positive number, and
/// at most one kind of clipping, as Keras allows.
static LogicalResult
verifyCommon(function_ref<InFlightDiagnostic()> emitError, StringRef optimizer,
             llvm::APFloat clipnormF, llvm::APFloat globalClipnormF,
             llvm::APFloat clipvalueF, llvm::APFloat weightDecayF,
             Attribute schedule, int64_t accumulationSteps) {
  std::pair<StringRef, double> options[] = {
      {"clipnorm", clipnormF.convertToDouble()},
      {"global_clipnorm", globalClipnormF.convertToDouble()},
      {"clipvalue", clipvalueF.convertToDouble()},
      {"weight_decay", weightDecayF.convertToDouble()}};
  for (auto [name, value] : options)
    if (!(value >= 0) || !std::isfinite(value))
      return emitError() << optimizer << " needs a finite " << name
                         << " >= 0 (0: off), got " << formatF64(value);
  int clips = (options[0].second > 0) + (options[1].second > 0) +
              (options[2].second > 0);
  if (clips > 1)
    return emitError() << optimizer
                       << " takes at most one of clipnorm, global_clipnorm "
                          "and clipvalue";
  if (accumulationSteps == 1 || accumulationSteps < 0)
    return emitError() << optimizer
                       << " needs gradient_accumulation_steps >= 2 (0: off), "
                          "got "
                       << accumulationSteps;
  if (accumulationSteps > 0 && (options[0].second > 0 || options[1].second > 0))
    return emitError() << optimizer
                       << " with gradient_accumulation_steps clips by "
                          "clipvalue only: clipnorm and global_clipnorm "
                          "would need the norm of the accumulated mean";
  if (!schedule)
    return success();
  auto positive = [&](StringRef name, double v) -> LogicalResult {
    if (!(v > 0) || !std::isfinite(v))
      return emitError() << optimizer << "'s schedule needs a finite " << name
                         << " > 0, got " << formatF64(v);
    return success();
  };
  auto nonNegative = [&](StringRef name, double v) -> LogicalResult {
    if (!(v >= 0) || !std::isfinite(v))
      return emitError() << optimizer << "'s schedule needs a finite " << name
                         << " >= 0, got " << formatF64(v);
    return success();
  };
  if (auto e = dyn_cast<ExponentialDecayAttr>(schedule))
    return failure(
        failed(positive("decay_steps", e.getDecaySteps().convertToDouble())) ||
        failed(nonNegative("decay_rate", e.getDecayRate().convertToDouble())));
  if (auto i = dyn_cast<InverseTimeDecayAttr>(schedule))
    return failure(
        failed(positive("decay_steps", i.getDecaySteps().convertToDouble())) ||
        failed(nonNegative("decay_rate", i.getDecayRate().convertToDouble())));
  if (auto p = dyn_cast<PolynomialDecayAttr>(schedule))
    return failure(
        failed(positive("decay_steps", p.getDecaySteps().convertToDouble())) ||
        failed(nonNegative("end_learning_rate",
                           p.getEndLearningRate().convertToDouble())) ||
        failed(positive("power", p.getPower().convertToDouble())));
  if (auto c = dyn_cast<CosineDecayAttr>(schedule))
    return failure(
        failed(positive("decay_steps", c.getDecaySteps().convertToDouble())) ||
        failed(nonNegative("alpha", c.getAlpha().convertToDouble())) ||
        failed(nonNegative("warmup_target",
                           c.getWarmupTarget().convertToDouble())) ||
        failed(
            nonNegative("warmup_steps", c.getWarmupSteps().convertToDouble())));
  if (auto r = dyn_cast<CosineDecayRestartsAttr>(schedule))
    return failure(
        failed(positive("first_decay_steps",
                        r.getFirstDecaySteps().convertToDouble())) ||
        failed(positive("t_mul", r.getTMul().convertToDouble())) ||
        failed(nonNegative("m_mul", r.getMMul().convertToDouble())) ||
        failed(nonNegative("alpha", r.getAlpha().convertToDouble())));
  if (auto pc = dyn_cast<PiecewiseConstantDecayAttr>(schedule)) {
    ArrayRef<double> boundaries = pc.getBoundaries().asArrayRef();
    ArrayRef<double> values = pc.getValues().asArrayRef();
    if (boundaries.empty() || boundaries.size() > kMaxScheduleBoundaries ||
        values.size() != boundaries.size() + 1)
      return emitError() << optimizer
                         << "'s piecewise_constant_decay needs 1 to "
                         << kMaxScheduleBoundaries
                         << " boundaries and one value more, got "
                         << boundaries.size() << " and " << values.size();
    for (size_t i = 0; i < boundaries.size(); ++i)
      if (!std::isfinite(boundaries[i]) ||
          (i > 0 && !(boundaries[i] > boundaries[i - 1])))
        return emitError() << optimizer
                           << "'s piecewise_constant_decay needs finite, "
                              "increasing boundaries";
    for (double v : values)
      if (failed(nonNegative("value", v)))
        return failure();
    return success();
  }
  return emitError() << optimizer << " has an unknown schedule " << schedule;
}

OptimizerOptions mlir::graph::getOptimizerOptions(Attribute optimizer) {
  OptimizerOptions o;
  auto fill = [&](auto attr) {
    o.learningRate = attr.getLearningRate().convertToDouble();
    o.clipnorm = attr.getClipnorm().convertToDouble();
    o.globalClipnorm = attr.getGlobalClipnorm().convertToDouble();
    o.clipvalue = attr.getClipvalue().convertToDouble();
    o.weightDecay = attr.getWeightDecay().convertToDouble();
    o.schedule = attr.getSchedule();
    o.gradientAccumulationSteps = attr.getGradientAccumulationSteps();
  };
  if (auto sgd = dyn_cast<SGDAttr>(optimizer))
    fill(sgd);
  else if (auto adam = dyn_cast<AdamAttr>(optimizer))
    fill(adam);
  else if (auto rms = dyn_cast<RMSpropAttr>(optimizer))
    fill(rms);
  else if (auto adagrad = dyn_cast<AdagradAttr>(optimizer))
    fill(adagrad);
  else if (auto adamax = dyn_cast<AdamaxAttr>(optimizer))
    fill(adamax);
  else
    fill(cast<NadamAttr>(optimizer));
  return o;
}

LogicalResult SGDAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, llvm::APFloat learningRateF,
    llvm::APFloat momentumF, bool nesterov, llvm::APFloat clipnorm,
    llvm::APFloat globalClipnorm, llvm::APFloat clipvalue,
    llvm::APFloat weightDecay, Attribute schedule, int64_t accumulationSteps) {
  double learningRate = learningRateF.convertToDouble();
  double momentum = momentumF.convertToDouble();
  if (failed(verifyLearningRate(emitError, "sgd", learningRate)) ||
      failed(verifyCommon(emitError, "sgd", clipnorm, globalClipnorm, clipvalue,
                          weightDecay, schedule, accumulationSteps)) ||
      failed(verifyUnitInterval(emitError, "sgd", "momentum", momentum)))
    return failure();
  if (nesterov && momentum == 0)
    return emitError() << "sgd with nesterov needs momentum > 0";
  return success();
}

LogicalResult
AdamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                 llvm::APFloat learningRateF, llvm::APFloat beta1F,
                 llvm::APFloat beta2F, llvm::APFloat epsilonF, bool,
                 llvm::APFloat clipnorm, llvm::APFloat globalClipnorm,
                 llvm::APFloat clipvalue, llvm::APFloat weightDecay,
                 Attribute schedule, int64_t accumulationSteps) {
  double learningRate = learningRateF.convertToDouble();
  double beta1 = beta1F.convertToDouble(), beta2 = beta2F.convertToDouble();
  double epsilon = epsilonF.convertToDouble();
  if (failed(verifyLearningRate(emitError, "adam", learningRate)) ||
      failed(verifyCommon(emitError, "adam", clipnorm, globalClipnorm,
                          clipvalue, weightDecay, schedule,
                          accumulationSteps)) ||
      failed(verifyUnitInterval(emitError, "adam", "beta_1", beta1)) ||
      failed(verifyUnitInterval(emitError, "adam", "beta_2", beta2)))
    return failure();
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return emitError() << "adam needs a finite epsilon > 0, got "
                       << formatF64(epsilon);
  return success();
}

LogicalResult
RMSpropAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                    llvm::APFloat learningRateF, llvm::APFloat rhoF,
                    llvm::APFloat momentumF, llvm::APFloat epsilonF, bool,
                    llvm::APFloat clipnorm, llvm::APFloat globalClipnorm,
                    llvm::APFloat clipvalue, llvm::APFloat weightDecay,
                    Attribute schedule, int64_t accumulationSteps) {
  double learningRate = learningRateF.convertToDouble();
  double rho = rhoF.convertToDouble(), momentum = momentumF.convertToDouble();
  double epsilon = epsilonF.convertToDouble();
  if (failed(verifyLearningRate(emitError, "rmsprop", learningRate)) ||
      failed(verifyCommon(emitError, "rmsprop", clipnorm, globalClipnorm,
                          clipvalue, weightDecay, schedule,
                          accumulationSteps)) ||
      failed(verifyUnitInterval(emitError, "rmsprop", "rho", rho)) ||
      failed(verifyUnitInterval(emitError, "rmsprop", "momentum", momentum)))
    return failure();
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return emitError() << "rmsprop needs a finite epsilon > 0, got "
                       << formatF64(epsilon);
  return success();
}

LogicalResult AdagradAttr::verify(
    function_ref<InFlightDiagnostic()> emitError, llvm::APFloat learningRateF,
    llvm::APFloat initialF, llvm::APFloat epsilonF, llvm::APFloat clipnorm,
    llvm::APFloat globalClipnorm, llvm::APFloat clipvalue,
    llvm::APFloat weightDecay, Attribute schedule, int64_t accumulationSteps) {
  double initial = initialF.convertToDouble();
  double epsilon = epsilonF.convertToDouble();
  if (failed(verifyLearningRate(emitError, "adagrad",
                                learningRateF.convertToDouble())) ||
      failed(verifyCommon(emitError, "adagrad", clipnorm, globalClipnorm,
                          clipvalue, weightDecay, schedule, accumulationSteps)))
    return failure();
  if (!(initial >= 0) || !std::isfinite(initial))
    return emitError() << "adagrad needs a finite initial_accumulator_value "
                          ">= 0, got "
                       << formatF64(initial);
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return emitError() << "adagrad needs a finite epsilon > 0, got "
                       << formatF64(epsilon);
  return success();
}

/// Adamax and Nadam: Adam's hyper-parameters.
static LogicalResult verifyAdamLike(
    function_ref<InFlightDiagnostic()> emitError, StringRef optimizer,
    llvm::APFloat learningRateF, llvm::APFloat beta1F, llvm::APFloat beta2F,
    llvm::APFloat epsilonF, llvm::APFloat clipnorm,
    llvm::APFloat globalClipnorm, llvm::APFloat clipvalue,
    llvm::APFloat weightDecay, Attribute schedule, int64_t accumulationSteps) {
  double epsilon = epsilonF.convertToDouble();
  if (failed(verifyLearningRate(emitError, optimizer,
                                learningRateF.convertToDouble())) ||
      failed(verifyCommon(emitError, optimizer, clipnorm, globalClipnorm,
                          clipvalue, weightDecay, schedule,
                          accumulationSteps)) ||
      failed(verifyUnitInterval(emitError, optimizer, "beta_1",
                                beta1F.convertToDouble())) ||
      failed(verifyUnitInterval(emitError, optimizer, "beta_2",
                                beta2F.convertToDouble())))
    return failure();
  if (!(epsilon > 0) || !std::isfinite(epsilon))
    return emitError() << optimizer << " needs a finite epsilon > 0, got "
                       << formatF64(epsilon);
  return success();
}

LogicalResult AdamaxAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 llvm::APFloat learningRate,
                                 llvm::APFloat beta1, llvm::APFloat beta2,
                                 llvm::APFloat epsilon, llvm::APFloat clipnorm,
                                 llvm::APFloat globalClipnorm,
                                 llvm::APFloat clipvalue,
                                 llvm::APFloat weightDecay, Attribute schedule,
                                 int64_t accumulationSteps) {
  return verifyAdamLike(emitError, "adamax", learningRate, beta1, beta2,
                        epsilon, clipnorm, globalClipnorm, clipvalue,
                        weightDecay, schedule, accumulationSteps);
}

LogicalResult NadamAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                llvm::APFloat learningRate, llvm::APFloat beta1,
                                llvm::APFloat beta2, llvm::APFloat epsilon,
                                llvm::APFloat clipnorm,
                                llvm::APFloat globalClipnorm,
                                llvm::APFloat clipvalue,
                                llvm::APFloat weightDecay, Attribute schedule,
                                int64_t accumulationSteps) {
  return verifyAdamLike(emitError, "nadam", learningRate, beta1, beta2, epsilon,
                        clipnorm, globalClipnorm, clipvalue, weightDecay,
                        schedule, accumulationSteps);
}
