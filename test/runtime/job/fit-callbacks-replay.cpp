//===- fit-callbacks-replay.cpp - runtime/job/FitCallbacks on a table -----===//
//
// fit-callbacks-replay INPUT.json WORKDIR
//
// Replays epoch-log sequences through FitCallbacks as Keras' fit would call
// its callbacks, and prints every decision as JSON on stdout, for
// fit_callbacks_keras.py to compare with Keras' own callback classes run on
// the same table. INPUT holds
//   "precision": "float32" or "float64" (MonitorPrecision),
//   "repr_bits": doubles as 16 hex digits, printed back with
//                pythonFloatRepr,
//   "direction_names": names to look up with kerasMetricDirection,
//   "cases": [{"name", "compile_metrics": [...], "learning_rate",
//              "initial_epoch", "require_logged",
//              "callbacks": [{"type": "early_stopping" |
//                             "reduce_lr_on_plateau" | "checkpoint_best",
//                             "options": "key=value,..."} |
//                            {"type": "csv_logger", "separator", "append",
//                             "initial": text already in the file}],
//              "epochs": [{log name: number or "nan"/"inf"/"-inf"}]}].
// A CSV log goes to WORKDIR/<case>.<index>.ours.csv.
//
//===----------------------------------------------------------------------===//

#include "runtime/job/FitCallbacks.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>
#include <variant>

using namespace graph::runtime;
using namespace graph::runtime::job;
using Json = nlohmann::json;

namespace {

Json best(std::optional<double> value) {
  return value ? Json(pythonFloatRepr(*value)) : Json(nullptr);
}

double logValue(const Json &v) {
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "nan")
      return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf")
      return std::numeric_limits<double>::infinity();
    if (s == "-inf")
      return -std::numeric_limits<double>::infinity();
    return std::stod(s);
  }
  return v.get<double>();
}

struct Csv {
  std::unique_ptr<CsvLogger> logger;
  std::string path;
};
using Callback =
    std::variant<EarlyStopping, ReduceLROnPlateau, BestCheckpoint, Csv>;

/// The case's result, or {"error": message} for the first failure.
Json runCase(const Json &c, MonitorPrecision precision,
             const std::string &workdir) {
  std::string name = c.at("name").get<std::string>();
  Json out = {{"name", name}};
  auto fail = [&](const Status &s) {
    out["error"] = s.message();
    return out;
  };
  MetricDirections metrics = compiledMetricDirections(
      c.value("compile_metrics", std::vector<std::string>{}));
  std::vector<Json> epochs = c.at("epochs").get<std::vector<Json>>();
  std::vector<std::string> logged;
  if (!epochs.empty())
    for (auto &[key, value] : epochs.front().items())
      logged.push_back(key);

  std::vector<Callback> callbacks;
  for (const Json &cb : c.at("callbacks")) {
    std::string type = cb.at("type").get<std::string>();
    std::string options = cb.value("options", "");
    Status s = Status::ok();
    if (type == "early_stopping") {
      EarlyStoppingOptions o;
      EarlyStopping e;
      if (!(s = parseEarlyStoppingOptions(options, o)))
        return fail(s);
      o.precision = precision;
      if (c.value("require_logged", false) &&
          !(s = checkMonitorLogged("--early-stopping", o.monitor, logged)))
        return fail(s);
      if (!(s = EarlyStopping::create(o, metrics, e)))
        return fail(s);
      e.onTrainBegin();
      callbacks.emplace_back(std::move(e));
    } else if (type == "reduce_lr_on_plateau") {
      ReduceLROnPlateauOptions o;
      ReduceLROnPlateau r;
      if (!(s = parseReduceLROnPlateauOptions(options, o)))
        return fail(s);
      o.precision = precision;
      std::vector<std::string> withLr = logged;
      withLr.push_back("learning_rate");
      if (c.value("require_logged", false) &&
          !(s = checkMonitorLogged("--reduce-lr-on-plateau", o.monitor,
                                   withLr)))
        return fail(s);
      if (!(s = ReduceLROnPlateau::create(o, metrics, r)))
        return fail(s);
      r.onTrainBegin();
      callbacks.emplace_back(std::move(r));
    } else if (type == "checkpoint_best") {
      BestCheckpointOptions o;
      BestCheckpoint b;
      if (!(s = parseBestCheckpointOptions(options, o)))
        return fail(s);
      o.precision = precision;
      if (c.value("require_logged", false) &&
          !(s = checkMonitorLogged("--checkpoint-best", o.monitor, logged)))
        return fail(s);
      if (!(s = BestCheckpoint::create(o, metrics, b)))
        return fail(s);
      callbacks.emplace_back(std::move(b));
    } else if (type == "csv_logger") {
      Csv csv;
      csv.path = workdir + "/" + name + "." + std::to_string(callbacks.size()) +
                 ".ours.csv";
      std::remove(csv.path.c_str());
      if (cb.contains("initial")) {
        std::ofstream f(csv.path, std::ios::binary);
        f << cb.at("initial").get<std::string>();
      }
      std::string sep = cb.value("separator", ",");
      if (sep.size() != 1)
        return fail(Status::invalidInput("separator must be one character"));
      if (!(s = CsvLogger::open(csv.path, sep[0], cb.value("append", false),
                                csv.logger)))
        return fail(s);
      callbacks.emplace_back(std::move(csv));
    } else {
      return fail(Status::invalidInput("unknown callback type " + type));
    }
  }

  float lr = static_cast<float>(c.value("learning_rate", 0.01));
  int64_t epoch = c.value("initial_epoch", int64_t{0});
  std::vector<Json> results(callbacks.size(), Json::object());
  for (Json &r : results)
    r["per_epoch"] = Json::array();
  Json messages = Json::array();
  int64_t run = 0;
  for (const Json &e : epochs) {
    EpochLogs logs;
    for (auto &[key, value] : e.items())
      logs[key] = logValue(value);
    bool stop = false;
    for (size_t i = 0; i < callbacks.size(); ++i) {
      Json &per = results[i]["per_epoch"];
      if (auto *es = std::get_if<EarlyStopping>(&callbacks[i])) {
        EarlyStopping::Decision d = es->onEpochEnd(epoch, logs);
        stop |= d.stop;
        per.push_back({{"stop", d.stop},
                       {"keep", d.keepWeights},
                       {"missing", d.missing},
                       {"wait", es->wait()},
                       {"best", best(es->best())}});
      } else if (auto *rl = std::get_if<ReduceLROnPlateau>(&callbacks[i])) {
        // Keras writes the rate into the logs the later callbacks see.
        logs["learning_rate"] = lr;
        ReduceLROnPlateau::Decision d = rl->onEpochEnd(epoch, logs, lr);
        lr = d.learningRate;
        if (!d.message.empty())
          messages.push_back(d.message);
        per.push_back({{"lr", pythonFloatRepr(lr)},
                       {"reduced", d.reduced},
                       {"missing", d.missing},
                       {"wait", rl->wait()},
                       {"cooldown", rl->cooldownCounter()},
                       {"best", best(rl->best())}});
      } else if (auto *ck = std::get_if<BestCheckpoint>(&callbacks[i])) {
        BestCheckpoint::Decision d = ck->onEpochEnd(epoch, logs);
        const std::string path = "best.weights.h5";
        if (std::string m = ck->message(epoch, d, path); !m.empty())
          messages.push_back(m);
        if (d.save && ck->options().verbose > 0)
          messages.push_back("Epoch " + std::to_string(epoch + 1) +
                             ": finished saving model to " + path);
        per.push_back({{"save", d.save}, {"best", best(ck->best())}});
      } else if (auto *csv = std::get_if<Csv>(&callbacks[i])) {
        if (Status s = csv->logger->onEpochEnd(epoch, logs); !s)
          return fail(s);
      }
    }
    ++epoch;
    ++run;
    if (stop)
      break;
  }
  for (size_t i = 0; i < callbacks.size(); ++i) {
    Json &r = results[i];
    if (auto *es = std::get_if<EarlyStopping>(&callbacks[i])) {
      EarlyStopping::TrainEnd end = es->onTrainEnd();
      r["type"] = "early_stopping";
      r["stopped_epoch"] = es->stoppedEpoch();
      r["best_epoch"] = es->bestEpoch();
      r["restore_epoch"] =
          end.restoreEpoch ? Json(*end.restoreEpoch) : Json(nullptr);
      for (const std::string &m : end.messages)
        messages.push_back(m);
    } else if (std::holds_alternative<ReduceLROnPlateau>(callbacks[i])) {
      r["type"] = "reduce_lr_on_plateau";
    } else if (std::holds_alternative<BestCheckpoint>(callbacks[i])) {
      r["type"] = "checkpoint_best";
    } else if (auto *csv = std::get_if<Csv>(&callbacks[i])) {
      r = {{"type", "csv_logger"}, {"file", csv->path}};
      if (Status s = csv->logger->close(); !s)
        return fail(s);
    }
  }
  out["epochs_run"] = run;
  out["callbacks"] = results;
  out["messages"] = messages;
  return out;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 3) {
    std::cerr << "usage: fit-callbacks-replay INPUT.json WORKDIR\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << argv[1] << ": cannot open\n";
    return 1;
  }
  Json input = Json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (input.is_discarded()) {
    std::cerr << argv[1] << ": not JSON\n";
    return 1;
  }
  MonitorPrecision precision = input.value("precision", "float32") == "float64"
                                   ? MonitorPrecision::float64
                                   : MonitorPrecision::float32;
  Json out;
  out["repr"] = Json::array();
  for (const Json &bits : input.value("repr_bits", Json::array())) {
    uint64_t u = std::stoull(bits.get<std::string>(), nullptr, 16);
    double d;
    std::memcpy(&d, &u, sizeof d);
    out["repr"].push_back(pythonFloatRepr(d));
  }
  out["directions"] = Json::object();
  for (const Json &n : input.value("direction_names", Json::array())) {
    std::optional<MetricDirection> d =
        kerasMetricDirection(n.get<std::string>());
    out["directions"][n.get<std::string>()] =
        d ? Json(*d == MetricDirection::up ? "up" : "down") : Json(nullptr);
  }
  out["cases"] = Json::array();
  for (const Json &c : input.value("cases", Json::array()))
    out["cases"].push_back(runCase(c, precision, argv[2]));
  std::cout << out.dump(1) << "\n";
  return 0;
}
