//===- FitCallbacks.cpp - what Keras' fit callbacks decide ----------------===//

#include "runtime/job/FitCallbacks.h"

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <utility>

#include <unistd.h>

namespace graph::runtime::job {

namespace {

constexpr std::string_view kEarlyStoppingFlag = "--early-stopping";
constexpr std::string_view kReduceLrFlag = "--reduce-lr-on-plateau";
constexpr std::string_view kCheckpointBestFlag = "--checkpoint-best";

//===----------------------------------------------------------------------===//
// key=value,... options
//===----------------------------------------------------------------------===//

/// One key a flag takes: `set` parses its value and returns what is wrong
/// with it ("is not a whole number >= 0"), or an empty string.
struct OptionKey {
  std::string_view name;
  std::function<std::string(std::string_view value)> set;
};

std::string keyList(const std::vector<OptionKey> &keys) {
  std::string list;
  for (const OptionKey &k : keys)
    list += (list.empty() ? "" : ", ") + std::string(k.name);
  return list;
}

Status parseKeyValues(std::string_view flag, std::string_view text,
                      const std::vector<OptionKey> &keys) {
  if (text.empty())
    return Status::ok();
  std::string prefix = std::string(flag) + ": ";
  std::vector<std::string_view> seen;
  size_t pos = 0;
  while (true) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? comma : comma - pos);
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Status::invalidInput(prefix + "'" + std::string(item) +
                                  "' is not key=value (the keys are " +
                                  keyList(keys) + ")");
    std::string_view name = item.substr(0, eq), value = item.substr(eq + 1);
    const OptionKey *key = nullptr;
    for (const OptionKey &k : keys)
      if (k.name == name)
        key = &k;
    if (!key)
      return Status::invalidInput(prefix + "unknown key '" + std::string(name) +
                                  "'; the keys are " + keyList(keys));
    for (std::string_view s : seen)
      if (s == name)
        return Status::invalidInput(prefix + "key '" + std::string(name) +
                                    "' is given twice");
    seen.push_back(name);
    if (std::string fault = key->set(value); !fault.empty())
      return Status::invalidInput(prefix + std::string(item) + " " + fault);
    if (comma == std::string_view::npos)
      return Status::ok();
    pos = comma + 1;
  }
}

/// A whole number >= 0: digits only, within 64 bits.
std::function<std::string(std::string_view)> countKey(int64_t &target) {
  return [&target](std::string_view text) -> std::string {
    int64_t value = 0;
    auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || text[0] == '-' || ec != std::errc() ||
        end != text.data() + text.size())
      return "is not a whole number >= 0";
    target = value;
    return "";
  };
}

bool parseFinite(std::string_view text, double &out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() &&
         end == text.data() + text.size() && std::isfinite(out);
}

std::function<std::string(std::string_view)> numberKey(double &target) {
  return [&target](std::string_view text) -> std::string {
    double value = 0;
    if (!parseFinite(text, value))
      return "is not a finite number";
    target = value;
    return "";
  };
}

std::function<std::string(std::string_view)>
optionalNumberKey(std::optional<double> &target) {
  return [&target](std::string_view text) -> std::string {
    double value = 0;
    if (!parseFinite(text, value))
      return "is not a finite number";
    target = value;
    return "";
  };
}

std::function<std::string(std::string_view)> boolKey(bool &target) {
  return [&target](std::string_view text) -> std::string {
    if (text == "true" || text == "True" || text == "1")
      target = true;
    else if (text == "false" || text == "False" || text == "0")
      target = false;
    else
      return "is not true or false";
    return "";
  };
}

std::function<std::string(std::string_view)> modeKey(MonitorMode &target) {
  return [&target](std::string_view text) -> std::string {
    if (text == "auto")
      target = MonitorMode::automatic;
    else if (text == "min")
      target = MonitorMode::min;
    else if (text == "max")
      target = MonitorMode::max;
    else
      return "is not auto, min or max";
    return "";
  };
}

std::function<std::string(std::string_view)> monitorKey(std::string &target) {
  return [&target](std::string_view text) -> std::string {
    if (text.empty())
      return "names no logged value (loss, val_loss, accuracy, ...)";
    target = std::string(text);
    return "";
  };
}

/// Python's "{:.5f}", as ModelCheckpoint prints a value.
std::string fixed5(double value) {
  if (std::isnan(value))
    return "nan"; // C may print "-nan"; Python never does
  char text[400];
  std::snprintf(text, sizeof text, "%.5f", value);
  return text;
}

} // namespace

//===----------------------------------------------------------------------===//
// Monitor
//===----------------------------------------------------------------------===//

std::optional<MetricDirection> kerasMetricDirection(std::string_view name) {
  // The names compile() gives the metrics it makes from these strings, and
  // their classes' _direction (keras/src/metrics/*.py).
  static constexpr std::string_view kUp[] = {
      "accuracy",
      "acc",
      "binary_accuracy",
      "categorical_accuracy",
      "sparse_categorical_accuracy",
      "top_k_categorical_accuracy",
      "sparse_top_k_categorical_accuracy",
      "auc",
      "precision",
      "recall",
      "f1_score",
      "r2_score",
      "cosine_similarity",
      "pearson_correlation",
      "concordance_correlation",
  };
  static constexpr std::string_view kDown[] = {
      "mae",
      "mse",
      "mape",
      "msle",
      "mean_absolute_error",
      "mean_squared_error",
      "mean_absolute_percentage_error",
      "mean_squared_logarithmic_error",
      "root_mean_squared_error",
      "binary_crossentropy",
      "categorical_crossentropy",
      "sparse_categorical_crossentropy",
      "kl_divergence",
      "poisson",
      "hinge",
      "squared_hinge",
      "categorical_hinge",
  };
  for (std::string_view n : kUp)
    if (n == name)
      return MetricDirection::up;
  for (std::string_view n : kDown)
    if (n == name)
      return MetricDirection::down;
  return std::nullopt;
}

MetricDirections compiledMetricDirections(std::vector<std::string> metrics) {
  return [metrics = std::move(metrics)](
             const std::string &name) -> std::optional<MetricDirection> {
    for (const std::string &m : metrics)
      if (m == name)
        return kerasMetricDirection(name);
    return std::nullopt;
  };
}

Status Monitor::create(std::string_view flag, std::string monitor,
                       MonitorMode mode, double minDelta,
                       const MetricDirections &metrics,
                       MonitorPrecision precision, Monitor &out) {
  Monitor m;
  if (mode == MonitorMode::min) {
    m.direction_ = MetricDirection::down;
  } else if (mode == MonitorMode::max) {
    m.direction_ = MetricDirection::up;
  } else {
    std::string_view name = monitor;
    if (name.substr(0, 4) == "val_")
      name.remove_prefix(4);
    std::optional<MetricDirection> direction;
    if (name == "loss")
      direction = MetricDirection::down;
    if (metrics)
      if (std::optional<MetricDirection> d = metrics(std::string(name)))
        direction = d;
    if (!direction)
      return Status::invalidInput(
          std::string(flag) +
          ": mode=auto cannot tell whether monitor=" + monitor +
          " is to be minimized or maximized (it is neither the loss nor a "
          "compiled metric with a known direction); pass mode=min or "
          "mode=max");
    m.direction_ = *direction;
  }
  m.key_ = std::move(monitor);
  m.delta_ = std::fabs(minDelta);
  if (m.direction_ == MetricDirection::down)
    m.delta_ = -m.delta_;
  m.precision_ = precision;
  out = std::move(m);
  return Status::ok();
}

bool Monitor::isImprovement(double current,
                            std::optional<double> reference) const {
  if (!reference)
    return true;
  double shifted = current - delta_;
  if (precision_ == MonitorPrecision::float32) {
    float a = static_cast<float>(shifted), b = static_cast<float>(*reference);
    return direction_ == MetricDirection::up ? a > b : a < b;
  }
  return direction_ == MetricDirection::up ? shifted > *reference
                                           : shifted < *reference;
}

Status checkMonitorLogged(std::string_view flag, const std::string &monitor,
                          const std::vector<std::string> &epochLogKeys) {
  for (const std::string &k : epochLogKeys)
    if (k == monitor)
      return Status::ok();
  std::string logged;
  for (const std::string &k : epochLogKeys)
    logged += (logged.empty() ? "" : ", ") + k;
  std::string message = std::string(flag) + ": monitor=" + monitor +
                        " is not logged at an epoch's end (the epochs log " +
                        (logged.empty() ? "nothing" : logged) + ")";
  if (monitor.rfind("val_", 0) == 0)
    message += "; val_ values need validation data (--validation-split or "
               "--validation-data)";
  return Status::invalidInput(message);
}

//===----------------------------------------------------------------------===//
// EarlyStopping
//===----------------------------------------------------------------------===//

Status parseEarlyStoppingOptions(std::string_view text,
                                 EarlyStoppingOptions &out) {
  EarlyStoppingOptions o;
  std::vector<OptionKey> keys = {
      {"monitor", monitorKey(o.monitor)},
      {"min_delta", numberKey(o.minDelta)},
      {"patience", countKey(o.patience)},
      {"verbose", countKey(o.verbose)},
      {"mode", modeKey(o.mode)},
      {"baseline", optionalNumberKey(o.baseline)},
      {"restore_best_weights", boolKey(o.restoreBestWeights)},
      {"start_from_epoch", countKey(o.startFromEpoch)},
  };
  if (Status s = parseKeyValues(kEarlyStoppingFlag, text, keys); !s)
    return s;
  out = std::move(o);
  return Status::ok();
}

Status EarlyStopping::create(const EarlyStoppingOptions &options,
                             const MetricDirections &metrics,
                             EarlyStopping &out) {
  EarlyStopping e;
  // Keras passes no baseline to MonitorCallback: its best starts empty and
  // the baseline is a second reference.
  if (Status s = Monitor::create(kEarlyStoppingFlag, options.monitor,
                                 options.mode, options.minDelta, metrics,
                                 options.precision, e.monitor_);
      !s)
    return s;
  e.options_ = options;
  out = std::move(e);
  return Status::ok();
}

void EarlyStopping::onTrainBegin() {
  wait_ = 0;
  stoppedEpoch_ = 0;
  best_.reset();
  haveWeights_ = false;
  bestEpoch_ = 0;
}

void EarlyStopping::setState(const State &state) {
  wait_ = state.wait;
  stoppedEpoch_ = state.stoppedEpoch;
  bestEpoch_ = state.bestEpoch;
  best_ = state.best;
  haveWeights_ = state.keptWeights;
}

EarlyStopping::Decision EarlyStopping::onEpochEnd(int64_t epoch,
                                                  const EpochLogs &logs) {
  Decision d;
  auto it = logs.find(monitor_.key());
  if (it == logs.end()) {
    d.missing = true;
    return d;
  }
  if (epoch < options_.startFromEpoch)
    return d;
  double current = it->second;
  if (options_.restoreBestWeights && !haveWeights_) {
    haveWeights_ = true;
    bestEpoch_ = epoch;
    d.keepWeights = true;
  }
  ++wait_;
  if (monitor_.isImprovement(current, best_)) {
    best_ = current;
    bestEpoch_ = epoch;
    if (options_.restoreBestWeights)
      d.keepWeights = true;
    if (!options_.baseline ||
        monitor_.isImprovement(current, options_.baseline))
      wait_ = 0;
    return d;
  }
  if (wait_ >= options_.patience && epoch > 0) {
    stoppedEpoch_ = epoch;
    d.stop = true;
  }
  return d;
}

EarlyStopping::TrainEnd EarlyStopping::onTrainEnd() const {
  TrainEnd end;
  bool verbose = options_.verbose > 0;
  if (stoppedEpoch_ > 0 && verbose)
    end.messages.push_back("Epoch " + std::to_string(stoppedEpoch_ + 1) +
                           ": early stopping");
  if (options_.restoreBestWeights && haveWeights_) {
    end.restoreEpoch = bestEpoch_;
    if (verbose)
      end.messages.push_back(
          "Restoring model weights from the end of the best epoch: " +
          std::to_string(bestEpoch_ + 1) + ".");
  }
  return end;
}

//===----------------------------------------------------------------------===//
// ReduceLROnPlateau
//===----------------------------------------------------------------------===//

Status parseReduceLROnPlateauOptions(std::string_view text,
                                     ReduceLROnPlateauOptions &out) {
  ReduceLROnPlateauOptions o;
  std::vector<OptionKey> keys = {
      {"monitor", monitorKey(o.monitor)},
      {"factor",
       [&o](std::string_view text) -> std::string {
         if (!parseFinite(text, o.factor))
           return "is not a finite number";
         if (o.factor >= 1)
           return "is not below 1 (the learning rate is multiplied by it; "
                  "Keras refuses factor >= 1)";
         if (o.factor < 0)
           return "is negative (the learning rate is multiplied by it)";
         return "";
       }},
      {"patience", countKey(o.patience)},
      {"verbose", countKey(o.verbose)},
      {"mode", modeKey(o.mode)},
      {"min_delta", numberKey(o.minDelta)},
      {"cooldown", countKey(o.cooldown)},
      {"min_lr",
       [&o](std::string_view text) -> std::string {
         if (!parseFinite(text, o.minLr))
           return "is not a finite number";
         if (o.minLr < 0)
           return "is negative (a learning rate's lower bound)";
         return "";
       }},
  };
  if (Status s = parseKeyValues(kReduceLrFlag, text, keys); !s)
    return s;
  out = std::move(o);
  return Status::ok();
}

Status ReduceLROnPlateau::create(const ReduceLROnPlateauOptions &options,
                                 const MetricDirections &metrics,
                                 ReduceLROnPlateau &out) {
  ReduceLROnPlateau r;
  if (Status s = Monitor::create(kReduceLrFlag, options.monitor, options.mode,
                                 options.minDelta, metrics, options.precision,
                                 r.monitor_);
      !s)
    return s;
  r.options_ = options;
  out = std::move(r);
  return Status::ok();
}

void ReduceLROnPlateau::onTrainBegin() {
  best_.reset();
  cooldownCounter_ = 0;
  wait_ = 0;
}

ReduceLROnPlateau::Decision ReduceLROnPlateau::onEpochEnd(int64_t epoch,
                                                          const EpochLogs &logs,
                                                          float learningRate) {
  Decision d;
  d.learningRate = learningRate;
  d.assigned = learningRate;
  double current = learningRate;
  if (monitor_.key() != "learning_rate") {
    auto it = logs.find(monitor_.key());
    if (it == logs.end()) {
      d.missing = true;
      return d;
    }
    current = it->second;
  }
  if (cooldownCounter_ > 0) {
    --cooldownCounter_;
    wait_ = 0;
  }
  if (monitor_.isImprovement(current, best_)) {
    best_ = current;
    wait_ = 0;
    return d;
  }
  if (cooldownCounter_ > 0)
    return d;
  ++wait_;
  if (wait_ < options_.patience)
    return d;
  // Keras: `old_lr > np.float32(self.min_lr)`, the rate being a float32
  // read exactly; then max(old_lr * factor, min_lr) in Python floats.
  if (!(learningRate > static_cast<float>(options_.minLr)))
    return d;
  double next = static_cast<double>(learningRate) * options_.factor;
  if (options_.minLr > next)
    next = options_.minLr;
  d.assigned = next;
  d.learningRate = static_cast<float>(next);
  d.reduced = true;
  cooldownCounter_ = options_.cooldown;
  wait_ = 0;
  if (options_.verbose > 0)
    d.message = "Epoch " + std::to_string(epoch + 1) +
                ": ReduceLROnPlateau reducing learning rate to " +
                pythonFloatRepr(next) + ".";
  return d;
}

//===----------------------------------------------------------------------===//
// ModelCheckpoint(save_best_only=True)
//===----------------------------------------------------------------------===//

Status parseBestCheckpointOptions(std::string_view text,
                                  BestCheckpointOptions &out) {
  BestCheckpointOptions o;
  std::vector<OptionKey> keys = {
      {"monitor", monitorKey(o.monitor)},
      {"verbose", countKey(o.verbose)},
      {"mode", modeKey(o.mode)},
      {"initial_value_threshold", optionalNumberKey(o.initialValueThreshold)},
  };
  if (Status s = parseKeyValues(kCheckpointBestFlag, text, keys); !s)
    return s;
  out = std::move(o);
  return Status::ok();
}

Status BestCheckpoint::create(const BestCheckpointOptions &options,
                              const MetricDirections &metrics,
                              BestCheckpoint &out) {
  BestCheckpoint b;
  if (Status s =
          Monitor::create(kCheckpointBestFlag, options.monitor, options.mode, 0,
                          metrics, options.precision, b.monitor_);
      !s)
    return s;
  b.options_ = options;
  b.best_ = options.initialValueThreshold;
  out = std::move(b);
  return Status::ok();
}

BestCheckpoint::Decision BestCheckpoint::onEpochEnd(int64_t,
                                                    const EpochLogs &logs) {
  Decision d;
  d.previousBest = best_;
  auto it = logs.find(monitor_.key());
  if (it == logs.end()) {
    d.missing = true;
    d.save = true;
    return d;
  }
  d.current = it->second;
  if (monitor_.isImprovement(d.current, best_)) {
    best_ = d.current;
    d.save = true;
  }
  return d;
}

std::string BestCheckpoint::message(int64_t epoch, const Decision &decision,
                                    const std::string &path) const {
  if (options_.verbose <= 0 || decision.missing)
    return "";
  std::string best =
      decision.previousBest ? fixed5(*decision.previousBest) : "None";
  std::string head =
      "Epoch " + std::to_string(epoch + 1) + ": " + monitor_.key() + " ";
  if (decision.save)
    return head + "improved from " + best + " to " + fixed5(decision.current) +
           ", saving model to " + path;
  return head + "did not improve from " + best;
}

//===----------------------------------------------------------------------===//
// CSVLogger
//===----------------------------------------------------------------------===//

std::string pythonFloatRepr(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  // The shortest round-trip digits, as Python's repr picks them (the
  // nearest of the shortest); only the layout is Python's own.
  char text[64];
  auto [end, ec] = std::to_chars(text, text + sizeof text, value,
                                 std::chars_format::scientific);
  (void)ec; // 64 bytes hold any double
  std::string_view s(text, end - text);
  std::string out;
  if (s.front() == '-') {
    out = "-";
    s.remove_prefix(1);
  }
  size_t e = s.find('e');
  std::string digits;
  for (char c : s.substr(0, e))
    if (c != '.')
      digits += c;
  std::string_view exponent = s.substr(e + 1);
  bool negative = exponent.front() == '-';
  int exp = 0;
  exponent.remove_prefix(1); // to_chars always writes the sign
  std::from_chars(exponent.data(), exponent.data() + exponent.size(), exp);
  if (negative)
    exp = -exp;
  // Python's float_repr_style "short": the digits times 10^decpt read as
  // 0.DIGITS; positional for -4 < decpt <= 16.
  int decpt = exp + 1;
  int n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (n > 1)
      out += "." + digits.substr(1);
    char tail[16];
    std::snprintf(tail, sizeof tail, "e%c%02d", exp < 0 ? '-' : '+',
                  exp < 0 ? -exp : exp);
    out += tail;
  } else if (decpt <= 0) {
    out += "0." + std::string(-decpt, '0') + digits;
  } else if (decpt >= n) {
    out += digits + std::string(decpt - n, '0') + ".0";
  } else {
    out += digits.substr(0, decpt) + "." + digits.substr(decpt);
  }
  return out;
}

namespace {

/// A field as Python's csv writes it with QUOTE_MINIMAL: quoted when it
/// holds the separator, a quote or a line break, a quote doubled.
std::string csvField(std::string_view field, char separator) {
  bool quote = false;
  for (char c : field)
    quote |= c == separator || c == '"' || c == '\r' || c == '\n';
  if (!quote)
    return std::string(field);
  std::string out = "\"";
  for (char c : field) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

} // namespace

std::vector<std::string> CsvLogger::columns(const EpochLogs &logs) {
  std::vector<std::string> keys;
  bool validation = false;
  for (const auto &[key, value] : logs) {
    keys.push_back(key);
    validation |= key.rfind("val_", 0) == 0;
  }
  if (!validation) {
    size_t n = keys.size();
    for (size_t i = 0; i < n; ++i)
      keys.push_back("val_" + keys[i]);
  }
  return keys;
}

std::string CsvLogger::formatHeader(const std::vector<std::string> &columns,
                                    char separator) {
  std::string line = "epoch";
  for (const std::string &c : columns)
    line += separator + csvField(c, separator);
  return line + "\r\n";
}

std::string CsvLogger::formatRow(int64_t epoch,
                                 const std::vector<std::string> &columns,
                                 const EpochLogs &logs, char separator) {
  std::string line = std::to_string(epoch);
  for (const std::string &c : columns) {
    auto it = logs.find(c);
    line += separator;
    line += it == logs.end() ? "NA" : pythonFloatRepr(it->second);
  }
  return line + "\r\n";
}

Status CsvLogger::open(const std::string &path, char separator, bool append,
                       std::unique_ptr<CsvLogger> &out) {
  if (separator == '"' || separator == '\r' || separator == '\n')
    return Status::invalidInput(path + ": a CSV separator cannot be a quote "
                                       "or a line break");
  // Keras: in append mode the header is written only if the file's first
  // line is empty, that is, the file is missing or empty.
  bool header = true;
  if (append)
    if (std::FILE *existing = std::fopen(path.c_str(), "rb")) {
      header = std::fgetc(existing) == EOF;
      std::fclose(existing);
    }
  std::FILE *file = std::fopen(path.c_str(), append ? "ab" : "wb");
  if (!file)
    return Status::invalidInput(
        path + ": cannot open the CSV log: " + std::strerror(errno));
  // A pipe or a terminal (/dev/stdout) has no size: such a log is written
  // as it goes and never cut back.
  std::optional<uint64_t> size;
  if (std::fseek(file, 0, SEEK_END) == 0)
    if (long end = std::ftell(file); end >= 0)
      size = static_cast<uint64_t>(end);
  out.reset(new CsvLogger(path, file, separator, header, size));
  return Status::ok();
}

Status CsvLogger::resumeAt(uint64_t size) {
  if (!file_)
    return Status::internal(path_ + ": the CSV log is closed");
  if (!size_)
    return Status::ok();
  if (size < *size_) {
    // Appending writes at the end, wherever the file ends: now `size`.
    if (::ftruncate(::fileno(file_), static_cast<off_t>(size)) != 0)
      return Status::resourceExhausted(path_ +
                                       ": cannot cut the CSV log back to the "
                                       "checkpoint's rows: " +
                                       std::strerror(errno));
    size_ = size;
  }
  header_ = *size_ == 0;
  return Status::ok();
}

CsvLogger::~CsvLogger() {
  if (file_)
    std::fclose(file_);
}

Status CsvLogger::write(const std::string &text) {
  if (!file_)
    return Status::internal(path_ + ": the CSV log is closed");
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size() ||
      std::fflush(file_) != 0)
    return Status::resourceExhausted(
        path_ + ": cannot write the CSV log: " + std::strerror(errno));
  if (size_)
    *size_ += text.size();
  return Status::ok();
}

Status CsvLogger::onEpochEnd(int64_t epoch, const EpochLogs &logs) {
  std::string text;
  if (!columns_) {
    columns_ = columns(logs);
    if (header_)
      text = formatHeader(*columns_, separator_);
  }
  return write(text + formatRow(epoch, *columns_, logs, separator_));
}

Status CsvLogger::close() {
  if (!file_)
    return Status::ok();
  int result = std::fclose(file_);
  file_ = nullptr;
  if (result != 0)
    return Status::resourceExhausted(
        path_ + ": cannot close the CSV log: " + std::strerror(errno));
  return Status::ok();
}

namespace {

/// One field's value under `spec` ([0][width][.precision][type]), as
/// Python's format() writes an int or a float.
Status formatField(std::string_view name, std::string_view spec, bool isInteger,
                   double value, std::string &out) {
  const std::string where = "field '{" + std::string(name) +
                            (spec.empty() ? "" : ":" + std::string(spec)) +
                            "}'";
  size_t at = 0;
  bool zero = false;
  if (at < spec.size() && spec[at] == '0') {
    zero = true;
    ++at;
  }
  int width = 0, precision = -1;
  while (at < spec.size() && std::isdigit(static_cast<unsigned char>(spec[at])))
    width = width * 10 + (spec[at++] - '0');
  if (at < spec.size() && spec[at] == '.') {
    ++at;
    precision = 0;
    if (at >= spec.size() ||
        !std::isdigit(static_cast<unsigned char>(spec[at])))
      return Status::invalidInput(where + ": a precision needs digits");
    while (at < spec.size() &&
           std::isdigit(static_cast<unsigned char>(spec[at])))
      precision = precision * 10 + (spec[at++] - '0');
  }
  char type = at < spec.size() ? spec[at++] : '\0';
  if (at != spec.size() || width > 256 || precision > 64 ||
      (type && !std::strchr("dfeg%", type)))
    return Status::invalidInput(
        where + ": unsupported format spec (supported: [0][width]"
                "[.precision][d|f|e|g|%], as in {epoch:02d} and "
                "{val_loss:.2f})");
  if (type == 'd' && !isInteger)
    return Status::invalidInput(where + ": 'd' formats an integer; '" +
                                std::string(name) +
                                "' is a float (Python refuses it too)");
  if (type == 'd' && precision >= 0)
    return Status::invalidInput(where + ": an integer takes no precision");
  std::string text;
  char buffer[512];
  if (isInteger && (type == 'd' || type == '\0')) {
    std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(value));
    text = buffer;
  } else if (type == '\0' && precision < 0) {
    // str(float): Python's repr.
    text = pythonFloatRepr(value);
  } else {
    char conversion = type == '\0' ? 'g' : type == '%' ? 'f' : type;
    // Python's default precision for f, e and % is 6; g without a type
    // and with a precision is Python's general format.
    int digits = precision >= 0 ? precision : 6;
    double shown = type == '%' ? value * 100.0 : value;
    const char format[] = {'%', '.', '*', conversion, '\0'};
    std::snprintf(buffer, sizeof buffer, format, digits, shown);
    text = buffer;
    if (type == '%')
      text += '%';
  }
  if (static_cast<int>(text.size()) < width) {
    size_t pad = static_cast<size_t>(width) - text.size();
    if (zero) {
      size_t sign = !text.empty() && (text[0] == '-' || text[0] == '+');
      text.insert(sign, pad, '0');
    } else {
      // Python right-aligns numbers.
      text.insert(0, pad, ' ');
    }
  }
  out += text;
  return Status::ok();
}

} // namespace

Status formatKerasFilepath(std::string_view pattern, int64_t epoch,
                           const EpochLogs *logs, std::string &out) {
  out.clear();
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '}') {
      if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      return Status::invalidInput(
          "a single '}' in the filepath: Keras formats it with str.format, "
          "where a brace is written '}}'");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    size_t close = pattern.find('}', i);
    if (close == std::string_view::npos)
      return Status::invalidInput("an unclosed '{' in the filepath: Keras "
                                  "formats it with str.format");
    std::string_view field = pattern.substr(i + 1, close - i - 1);
    size_t colon = field.find(':');
    std::string_view name = field.substr(0, colon);
    std::string_view spec =
        colon == std::string_view::npos ? "" : field.substr(colon + 1);
    if (name.empty())
      return Status::invalidInput("a field without a name, '{" +
                                  std::string(field) +
                                  "}', in the filepath (Keras names them: "
                                  "{epoch}, {val_loss})");
    bool isEpoch = name == "epoch";
    double value = 0;
    if (isEpoch) {
      value = static_cast<double>(epoch + 1);
    } else if (logs) {
      auto found = logs->find(std::string(name));
      if (found == logs->end()) {
        std::string keys = "epoch";
        for (const auto &[key, v] : *logs)
          keys += ", " + key;
        return Status::invalidInput(
            "the filepath's field '{" + std::string(field) + "}' names '" +
            std::string(name) + "', which the epoch's logs do not hold (" +
            keys + ")");
      }
      value = found->second;
    }
    if (Status s = formatField(name, spec, isEpoch || !logs, value, out); !s)
      return Status::invalidInput("the filepath's " + s.message());
    i = close;
  }
  return Status::ok();
}

} // namespace graph::runtime::job
