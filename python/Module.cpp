//===- Module.cpp - graphc._graphc: the C++ the Python module binds -------===//
//
// The binding is small on purpose: the compiler in one call
// (CompileModel.h), and a Model that keeps a plan's state (every variable
// and the optimizer's step) across the jobs it runs, each job being what
// `graphrun` runs (TrainingJob.h), on NumPy arrays borrowed in place
// (memory:NAME specs). python/graphc/ builds Keras' interface on top.
//
// The GIL is released while a job runs. SIGINT stops a fit at a step
// boundary (the job's preemption signals), the state of that step kept;
// graphrun's lines go to Python's sys.stdout and sys.stderr.
//
//===----------------------------------------------------------------------===//

#include "python/CompileModel.h"
#include "python/PythonStreams.h"
#include "runtime/checkpoint/KerasWeightsWriter.h"
#include "runtime/collectives/Workers.h"
#include "runtime/core/LearningRateSchedule.h"
#include "runtime/data/NumpyArray.h"
#include "runtime/job/TrainingJob.h"
#include "runtime/plan/PlanLoader.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace py = pybind11;
using namespace graph::runtime;

namespace {

class NullStream : public std::ostream {
public:
  NullStream() : std::ostream(nullptr) {}
};

/// NumPy's dtype as the reader's element type; native byte order only (the
/// Python side converts the rest once).
data::ElementType elementType(const py::dtype &dtype, const std::string &what) {
  const char kind = dtype.kind();
  const py::ssize_t size = dtype.itemsize();
  if (kind == 'f' && size == 2)
    return data::ElementType::f16;
  if (kind == 'f' && size == 4)
    return data::ElementType::f32;
  if (kind == 'f' && size == 8)
    return data::ElementType::f64;
  if (kind == 'b' && size == 1)
    return data::ElementType::boolean;
  if (kind == 'i' || kind == 'u') {
    const bool u = kind == 'u';
    switch (size) {
    case 1:
      return u ? data::ElementType::u8 : data::ElementType::i8;
    case 2:
      return u ? data::ElementType::u16 : data::ElementType::i16;
    case 4:
      return u ? data::ElementType::u32 : data::ElementType::i32;
    case 8:
      return u ? data::ElementType::u64 : data::ElementType::i64;
    }
  }
  throw std::invalid_argument(what + ": dtype " +
                              std::string(py::str(py::handle(dtype))) +
                              " is not a numeric array type");
}

/// The arrays of one memory:NAME set, borrowed: each must stay alive (the
/// caller holds it) while the job runs.
std::vector<data::NumpyArray> borrowArrays(const std::string &set,
                                           const py::dict &arrays) {
  std::vector<data::NumpyArray> out;
  for (auto item : arrays) {
    std::string name = py::str(item.first);
    py::array a = py::reinterpret_borrow<py::array>(item.second);
    std::string source = set + "[" + name + "]";
    const bool c = a.flags() & py::array::c_style;
    const bool f = a.flags() & py::array::f_style;
    if (!c && !f)
      throw std::invalid_argument(source + ": not contiguous");
    std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
    out.push_back(
        data::NumpyArray::borrow(name, source, elementType(a.dtype(), source),
                                 std::move(shape), !c && f, a.data(), nullptr));
  }
  return out;
}

template <typename T> void setIf(const py::dict &d, const char *key, T &field) {
  if (d.contains(key) && !d[key].is_none())
    field = d[key].cast<T>();
}

job::JobOptions jobOptions(const py::dict &d) {
  job::JobOptions o;
  setIf(d, "plan", o.plan);
  setIf(d, "cpus", o.cpus);
  setIf(d, "gpus", o.gpus);
  setIf(d, "backend", o.backend);
  setIf(d, "data", o.data);
  setIf(d, "eval_data", o.evalData);
  setIf(d, "validation_split", o.validationSplit);
  setIf(d, "validation_data", o.validationData);
  setIf(d, "class_weight", o.classWeight);
  setIf(d, "steps", o.steps);
  setIf(d, "epochs", o.epochs);
  setIf(d, "initial_epoch", o.initialEpoch);
  setIf(d, "batch_size", o.batchSize);
  setIf(d, "seed", o.seed);
  setIf(d, "shuffle_buffer", o.shuffleBuffer);
  setIf(d, "no_shuffle", o.noShuffle);
  setIf(d, "prefetch", o.prefetch);
  setIf(d, "log_every", o.logEvery);
  setIf(d, "eval", o.eval);
  setIf(d, "learning_rate", o.learningRate);
  setIf(d, "warmup", o.warmup);
  setIf(d, "metrics", o.metrics);
  setIf(d, "init_weights", o.initWeights);
  setIf(d, "save_weights", o.saveWeights);
  setIf(d, "predict", o.predict);
  setIf(d, "progress", o.progress);
  setIf(d, "preempt_signals", o.preemptSignals);
  setIf(d, "keep_denormals", o.keepDenormals);
  setIf(d, "allreduce_dtype", o.allReduceDtype);
  setIf(d, "precision", o.precision);
  setIf(d, "collective_timeout", o.collectiveTimeoutSeconds);
  setIf(d, "csv_log", o.csvLog);
  setIf(d, "tensorboard", o.tensorboard);
  if (d.contains("early_stopping") && !d["early_stopping"].is_none())
    o.earlyStopping = d["early_stopping"].cast<std::string>();
  if (d.contains("reduce_lr_on_plateau") &&
      !d["reduce_lr_on_plateau"].is_none())
    o.reduceLrOnPlateau = d["reduce_lr_on_plateau"].cast<std::string>();
  if (d.contains("checkpoint_best") && !d["checkpoint_best"].is_none())
    o.checkpointBest = d["checkpoint_best"].cast<std::string>();
  return o;
}

/// A compiled plan and its state across jobs.
class Model {
public:
  explicit Model(std::string planPath) : planPath_(std::move(planPath)) {}

  py::dict run(py::dict options, py::dict arrays, int verbose) {
    job::JobOptions o = jobOptions(options);
    o.plan = planPath_;
    auto table = std::make_shared<data::InMemoryArrays>();
    for (auto item : arrays)
      (*table)[py::str(item.first)] = borrowArrays(
          py::str(item.first), py::reinterpret_borrow<py::dict>(item.second));
    o.arrays = table;
    // verbose=1: graphrun's progress bar on a terminal; 2: its log lines;
    // 0: nothing (the output goes to a null stream below).
    if (verbose != 1)
      o.progress = false;

    Workers *workers = nullptr;
    if (Status s = job::processWorkers(o.collectiveTimeoutSeconds, workers); !s)
      return result(s, {});
    job::JobReport report;
    job::JobIo io;
    io.state = &state_;
    io.report = &report;
    io.workers = workers;
    Status status;
    {
      // graphrun's lines into Python's streams (a notebook's cell); the
      // GIL is taken back only to write them.
      py::module_ sys = py::module_::import("sys");
      graph::python::PythonStreamRedirect out(std::cout, sys.attr("stdout"),
                                              STDOUT_FILENO);
      graph::python::PythonStreamRedirect err(std::cerr, sys.attr("stderr"),
                                              STDERR_FILENO);
      {
        py::gil_scoped_release released;
        NullStream quiet;
        status =
            job::runTrainingJob(o, verbose ? std::cout : quiet, std::cerr, io);
        std::cout.flush();
        std::cerr.flush();
      }
      // A write the Python streams raised (Ctrl-C in a notebook's stream,
      // a closed one, a broken pipe) is raised now, as print() would have:
      // the job ran to its end, its state kept.
      out.raiseError();
      err.raiseError();
    }
    return result(status, report);
  }

  /// The optimizer's steps (Keras' optimizer._iterations, what its files
  /// hold): the steps run, or, where loss scaling skips steps, those
  /// applied, which the plan keeps in "optimizer/iterations".
  int64_t step() const {
    for (size_t v = 0; v < state_.names.size(); ++v)
      if (state_.names[v] == "optimizer/iterations" &&
          state_.variables[v].size() == sizeof(float)) {
        float value;
        std::memcpy(&value, state_.variables[v].data(), sizeof value);
        return static_cast<int64_t>(value);
      }
    return state_.step;
  }

  /// Every variable: (name, Keras shape, a float32 array of it).
  py::list variables() const {
    py::list out;
    for (size_t v = 0; v < state_.variables.size(); ++v) {
      const std::vector<int64_t> &shape = state_.shapes[v];
      std::vector<py::ssize_t> dims(shape.begin(), shape.end());
      py::array_t<float> a(dims);
      const std::vector<char> &bytes = state_.variables[v];
      if (static_cast<size_t>(a.nbytes()) != bytes.size())
        throw std::runtime_error("variable " + state_.names[v] +
                                 ": its bytes do not match its shape");
      std::memcpy(a.mutable_data(), bytes.data(), bytes.size());
      out.append(
          py::make_tuple(state_.names[v], py::tuple(py::cast(shape)), a));
    }
    return out;
  }

  /// Replaces variable `name`'s value (the Python side's from_keras).
  void setVariable(
      const std::string &name,
      py::array_t<float, py::array::c_style | py::array::forcecast> value) {
    for (size_t v = 0; v < state_.names.size(); ++v)
      if (state_.names[v] == name) {
        if (static_cast<size_t>(value.nbytes()) != state_.variables[v].size())
          throw std::invalid_argument(
              name + ": " + std::to_string(value.size()) +
              " values; the variable holds " +
              std::to_string(state_.variables[v].size() / 4));
        std::memcpy(state_.variables[v].data(), value.data(),
                    state_.variables[v].size());
        return;
      }
    throw std::invalid_argument(name + ": no such variable");
  }

  bool hasState() const { return !state_.empty(); }

  /// What the plan says of the model: its global batch, its inputs (by the
  /// names graph-import gave them, its InputLayers') and its outputs' names
  /// (a model of one output has one, unnamed).
  py::dict describe() const {
    LoadedPlan loaded;
    if (Status s = loadPlan(planPath_, loaded); !s)
      throw std::runtime_error(s.message());
    const graph::plan::Plan &p = *loaded.plan;
    py::dict d;
    d["global_batch_size"] =
        p.training() ? p.training()->global_batch_size() : 0;
    // Keras' optimizer.iterations is the steps // this.
    d["gradient_accumulation_steps"] = static_cast<int64_t>(
        trainingHyperParameter(p, "gradient_accumulation_steps", 0));
    py::list inputs, outputs;
    for (const graph::plan::Input *in : *p.inputs())
      if (!isStepInput(in->name()->string_view()))
        inputs.append(in->name()->str());
    if (p.training() && p.training()->outputs())
      for (const graph::plan::Output *out : *p.training()->outputs())
        outputs.append(out->name() ? out->name()->str() : std::string());
    d["inputs"] = inputs;
    d["outputs"] = outputs;
    return d;
  }

  /// How Keras 3 lays out the plan's optimizer (KerasWeightsWriter.h's
  /// kerasOptimizerLayout), for to_keras to set a Keras optimizer's
  /// variables: {"classes": its Keras classes, "rate_variable", "slots":
  /// [variable names in optimizer.variables' order after iterations and
  /// the rate], "trailing": [the values of the variables after them at
  /// this step: Nadam's u_product]}; None when Keras keeps the state
  /// elsewhere (use_ema, accumulation, loss scaling) or the plan has no
  /// Keras config.
  py::object kerasOptimizerLayout() const {
    LoadedPlan loaded;
    if (Status s = loadPlan(planPath_, loaded); !s)
      throw std::runtime_error(s.message());
    // Names and shapes are all the layout reads: nothing is allocated.
    MirroredVariables variables;
    if (Status s = variables.initialize(*loaded.plan, 0, 0); !s)
      throw std::runtime_error(s.message());
    checkpoint::KerasOptimizerLayout layout;
    if (!checkpoint::kerasOptimizerLayout(variables, *loaded.plan, layout))
      return py::none();
    py::dict d;
    d["classes"] = layout.classes;
    d["rate_variable"] = layout.rateVariable;
    py::list slots;
    for (int v : layout.slots)
      slots.append(variables.name(v));
    d["slots"] = slots;
    py::list trailing;
    if (layout.trailing > 0) // Nadam's u_product, a function of the step
      trailing.append(nadamUProduct(
          trainingHyperParameter(*loaded.plan, "beta_1", 0.9), step()));
    d["trailing"] = trailing;
    return d;
  }

private:
  py::dict result(const Status &status, const job::JobReport &report) {
    py::dict r;
    r["ok"] = bool(status);
    r["code"] = statusCodeName(status.code()); // "ok", "invalid input", ...
    r["message"] = status.message();
    py::list epochs;
    for (const auto &logs : report.epochs)
      epochs.append(py::cast(logs));
    r["history"] = epochs;
    r["evaluation"] = py::cast(report.evaluation);
    r["steps"] = report.steps;
    r["step"] = state_.step;
    r["stopped_early"] = report.stoppedEarly;
    r["callbacks"] = report.callbacksState;
    r["learning_rate"] = report.learningRate
                             ? py::object(py::float_(*report.learningRate))
                             : py::object(py::none());
    py::dict timing;
    timing["mean_step_seconds"] = report.meanStepSeconds;
    timing["examples_per_second"] = report.examplesPerSecond;
    timing["input_seconds"] = report.inputSeconds;
    timing["hook_seconds"] = report.hookSeconds;
    timing["compute_seconds"] = report.computeSeconds;
    r["timing"] = timing;
    // One output: its array; several: a list, in the model's output order.
    py::list predictions;
    for (const job::JobReport::Prediction &p : report.predictions) {
      const int64_t rows = static_cast<int64_t>(p.values.size()) / p.width;
      py::array_t<float> a(
          {static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(p.width)});
      std::memcpy(a.mutable_data(), p.values.data(),
                  p.values.size() * sizeof(float));
      predictions.append(a);
    }
    if (report.predictions.size() == 1)
      r["predictions"] = predictions[0];
    else if (!report.predictions.empty())
      r["predictions"] = predictions;
    return r;
  }

  std::string planPath_;
  job::ModelState state_;
};

py::bytes compileModel(const std::string &source, bool isPath,
                       std::optional<int64_t> batchSize,
                       std::optional<std::string> loss,
                       std::optional<std::string> optimizer,
                       std::optional<double> learningRate,
                       std::vector<int64_t> replicas, std::string precision) {
  graph::python::CompileOptions o;
  o.precision = std::move(precision);
  o.batchSize = batchSize;
  o.loss = std::move(loss);
  o.optimizer = std::move(optimizer);
  o.learningRate = learningRate;
  o.replicas = std::move(replicas);
  std::vector<uint8_t> plan;
  std::string error;
  bool ok;
  {
    py::gil_scoped_release released;
    ok = graph::python::compileKerasModel(source, isPath, o, plan, error);
  }
  if (!ok)
    throw std::invalid_argument(error);
  return py::bytes(reinterpret_cast<const char *>(plan.data()), plan.size());
}

Workers &workers() {
  Workers *w = nullptr;
  if (Status s = job::processWorkers(60, w); !s)
    throw std::runtime_error(s.message());
  return *w;
}

} // namespace

PYBIND11_MODULE(_graphc, m) {
  m.doc() = "graphc's C++ core: the compiler and the trainer's jobs";
  m.def("compile_model", &compileModel, py::arg("source"), py::arg("is_path"),
        py::arg("batch_size") = py::none(), py::arg("loss") = py::none(),
        py::arg("optimizer") = py::none(),
        py::arg("learning_rate") = py::none(),
        py::arg("replicas") = std::vector<int64_t>{},
        py::arg("precision") = std::string(),
        "A Keras model (a path, or its JSON) to a training plan's bytes; "
        "ValueError with the importer's or compiler's messages.");
  py::class_<Model>(m, "Model")
      .def(py::init<std::string>(), py::arg("plan_path"))
      .def("run", &Model::run, py::arg("options"), py::arg("arrays"),
           py::arg("verbose") = 1)
      .def("variables", &Model::variables)
      .def("set_variable", &Model::setVariable)
      .def_property_readonly("step", &Model::step)
      .def_property_readonly("has_state", &Model::hasState)
      .def("describe", &Model::describe)
      .def("keras_optimizer_layout", &Model::kerasOptimizerLayout);
  m.def("worker_index", [] { return workers().rank(); });
  m.def("num_workers", [] { return workers().size(); });
  m.def("launched_as_worker", [] { return launchedAsWorker(); });
}
