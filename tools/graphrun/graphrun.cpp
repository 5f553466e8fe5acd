//===- graphrun.cpp - train a model from a plan ---------------------------===//
//
// graphrun plan --cpus 2 --data fashion_mnist --epochs 1 --eval
// graphrun plan --epochs 10 --checkpoint-dir ckpt   (killed? the same command
//                                                    resumes where it was)
//
// A thin main: flags to a Session, an input pipeline and the built-in hooks;
// checkpoints and weights files are runtime/checkpoint's.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#ifdef GRAPH_HAVE_CUDA
#include "runtime/backends/cuda/CudaDevice.h"
#endif
#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/core/Device.h"
#include "runtime/core/Hooks.h"
#include "runtime/core/Session.h"
#include "runtime/data/FashionMnist.h"
#include "runtime/data/Pipeline.h"
#include "runtime/data/SyntheticDataset.h"
#include "runtime/plan/PlanLoader.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unistd.h>

using namespace graph::runtime;
namespace ckpt = graph::runtime::checkpoint;
namespace plan = graph::plan;

namespace {

struct Flags {
  std::string plan;
  int cpus = 0;
  int gpus = 0;
  std::string data = "fashion_mnist";
  std::string dataDir = data::kFashionMnistDefaultDir;
  int64_t steps = -1;
  int64_t epochs = -1;
  int64_t batchSize = -1;
  uint64_t seed = 0;
  int64_t shuffleBuffer = 5000;
  bool noShuffle = false;
  int64_t prefetch = 2;
  int64_t logEvery = 100;
  bool eval = false;
  int64_t evalSteps = -1;
  double learningRate = -1;
  int64_t warmup = 5;
  std::string metrics;
  std::string backend; // empty: cuda with --gpus, else cpu
  bool noCudaGraph = false;
  bool cacheOnDevice = false;
  double timeoutSeconds = 60;
  int64_t evalEvery = 0;
  std::string checkpointDir;
  int64_t checkpointEvery = -1; // -1: once per epoch
  int keepCheckpoints = 3;
  std::string initWeights;
  std::string saveWeights;
  std::string trace;
  bool noProgress = false;
};

int fail(const std::string &message) {
  std::fflush(stdout);
  std::cerr << "graphrun: error: " << message << "\n";
  return 1;
}

void warn(const std::string &message) {
  std::fflush(stdout);
  std::cerr << "graphrun: warning: " << message << "\n";
}

/// A source for `split` as --data and --data-dir say.
Status loadData(const Flags &flags, bool test, const data::ExampleShape &shape,
                int32_t classes, std::shared_ptr<const data::Dataset> &out) {
  auto ds = std::make_shared<data::Dataset>();
  if (flags.data == "fashion_mnist") {
    if (Status s = data::loadFashionMnist(flags.dataDir,
                                          test ? data::FashionMnistSplit::Test
                                               : data::FashionMnistSplit::Train,
                                          *ds);
        !s)
      return Status::error(s.message() + " (or train on --data synthetic)");
  } else {
    data::SyntheticDatasetOptions o;
    o.numExamples = test ? 10000 : 60000;
    o.shape = shape;
    o.numClasses = classes;
    o.seed = flags.seed + (test ? 1 : 0);
    if (Status s = data::makeSyntheticDataset(o, *ds); !s)
      return s;
    ds->name = test ? "synthetic test" : "synthetic train";
  }
  out = std::move(ds);
  return Status::ok();
}

/// The devices a run uses: --gpus N, --cpus N, or, with neither, every GPU
/// (one CPU replica when there is none).
struct Placement {
  Backend backend = Backend::cpu;
  int replicas = 1;
};

Status choosePlacement(const Flags &flags, Placement &out) {
  // The GPU count starts the CUDA runtime: asked only when it decides.
  if (flags.gpus > 0) {
    if (physicalDeviceCount(Backend::cuda) == 0) {
      std::string whyNone = "this graphrun was built without CUDA";
#ifdef GRAPH_HAVE_CUDA
      cuda::physicalGpuCount(&whyNone);
#endif
      return Status::error(
          "--gpus " + std::to_string(flags.gpus) + ": no CUDA GPU (" + whyNone +
          "); run on CPU replicas with --cpus " + std::to_string(flags.gpus));
    }
    if (!flags.backend.empty() && flags.backend != "cuda")
      return Status::error("--gpus runs the cuda backend, not --backend " +
                           flags.backend + "; use --cpus for CPU backends");
    out = {Backend::cuda, flags.gpus};
    return Status::ok();
  }
  if (flags.cpus == 0 && flags.backend.empty())
    if (int gpus = physicalDeviceCount(Backend::cuda); gpus > 0) {
      out = {Backend::cuda, gpus};
      return Status::ok();
    }
  out.replicas = flags.cpus > 0 ? flags.cpus : 1;
  out.backend =
      flags.backend.empty() ? Backend::cpu : *parseBackend(flags.backend);
  if (out.backend == Backend::cuda)
    return Status::error("--backend cuda runs on GPUs: use --gpus N");
  return Status::ok();
}

int run(const Flags &flags) {
  reference::registerReferenceKernels();
  cpu::registerCpuKernels();
#ifdef GRAPH_HAVE_CUDA
  cuda::registerCudaBackend();
#endif
  Placement placement;
  if (Status s = choosePlacement(flags, placement); !s)
    return fail(s.message());
  int replicas = placement.replicas;
  Backend backend = placement.backend;
  if (KernelRegistry::global().names(backend).empty())
    return fail(std::string("backend ") + backendName(backend) +
                ": no kernels of that backend are in this build; use "
                "--backend reference");

  LoadedPlan loaded;
  if (Status s = loadPlan(flags.plan, loaded); !s)
    return fail(s.message());
  const plan::Plan &p = *loaded.plan;

  // The image input and the labels, as the plan declares them.
  const plan::Input *image = nullptr, *labels = nullptr;
  for (const plan::Input *in : *p.inputs())
    (in->name()->str() == "labels" ? labels : image) = in;
  if (!image || image->shape()->size() != 4)
    return fail(flags.plan + ": graphrun feeds an NHWC image input; the "
                             "plan has none");
  int64_t globalBatch = image->shape()->Get(0);
  if (flags.batchSize > 0 && flags.batchSize != globalBatch)
    return fail("--batch-size " + std::to_string(flags.batchSize) + ": " +
                flags.plan + " was compiled for a global batch of " +
                std::to_string(globalBatch) +
                "; recompile it with graph-import --batch-size " +
                std::to_string(flags.batchSize) + " and graphc");
  data::ExampleShape shape{image->shape()->Get(1), image->shape()->Get(2),
                           image->shape()->Get(3)};
  int32_t classes = 10;
  if (labels && labels->shape()->size() == 2)
    classes = static_cast<int32_t>(labels->shape()->Get(1));

  SessionOptions so;
  so.replicas = replicas;
  so.backend = backend;
  so.seed = flags.seed;
  so.learningRate = flags.learningRate;
  so.cudaGraph = !flags.noCudaGraph;
  so.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(flags.timeoutSeconds * 1000));
  std::unique_ptr<Session> session;
  if (Status s = Session::create(loaded, so, session); !s)
    return fail(s.message());

  std::shared_ptr<const data::Dataset> train;
  if (Status s = loadData(flags, false, shape, classes, train); !s)
    return fail(s.message());
  if (!(train->shape == shape))
    return fail(train->name + ": examples are " + train->shape.str() +
                ", the plan's input is " + shape.str());
  if (train->numClasses != classes && labels && labels->shape()->size() == 2)
    return fail(train->name + ": " + std::to_string(train->numClasses) +
                " classes, the plan's labels have " + std::to_string(classes));

  std::printf("graphrun: %s (model '%s'): %s on %d %s replica(s), backend "
              "%s, global batch %lld (%lld per replica), data %s (%lld "
              "examples)\n",
              flags.plan.c_str(), p.model() ? p.model()->c_str() : "",
              session->trainProgram().name()->c_str(), replicas,
              backend == Backend::cuda ? "GPU" : "CPU", backendName(backend),
              static_cast<long long>(globalBatch),
              static_cast<long long>(globalBatch / replicas),
              flags.data.c_str(), static_cast<long long>(train->size()));
  std::fflush(stdout);

  // The state a checkpoint records, and a resumed run must match.
  ckpt::RunState runState;
  runState.seed = flags.seed;
  runState.globalBatch = globalBatch;
  runState.epochExamples = train->size();
  runState.data =
      flags.data + (flags.noShuffle ? ", file order"
                                    : ", shuffle buffer " +
                                          std::to_string(flags.shuffleBuffer));
  std::optional<ckpt::CheckpointManager> checkpoints;
  bool resumed = false;
  if (!flags.checkpointDir.empty()) {
    checkpoints.emplace(flags.checkpointDir, flags.keepCheckpoints);
    ckpt::LoadedCheckpoint latest;
    std::vector<std::string> warnings;
    Status s = checkpoints->findLatest(latest, resumed, warnings);
    for (const std::string &w : warnings)
      warn(w);
    if (!s)
      return fail(s.message());
    if (resumed) {
      if (Status r = ckpt::CheckpointManager::restore(latest, runState,
                                                      session->variables());
          !r)
        return fail(r.message());
      if (Status r = session->setGlobalStep(latest.state.globalStep); !r)
        return fail(latest.path + ": " + r.message());
      std::printf("graphrun: resumed from %s: step %lld, in epoch %lld at "
                  "example %lld of %lld\n",
                  latest.path.c_str(),
                  static_cast<long long>(latest.state.globalStep),
                  static_cast<long long>(latest.state.epoch() + 1),
                  static_cast<long long>(latest.state.exampleInEpoch()),
                  static_cast<long long>(train->size()));
      if (!flags.initWeights.empty())
        warn("--init-weights " + flags.initWeights +
             ": not applied, the run resumes from its checkpoint");
    }
  }
  if (!resumed && !flags.initWeights.empty())
    if (Status s = ckpt::loadWeights(flags.initWeights, session->variables());
        !s)
      return fail("--init-weights: " + s.message());

  // --cache-on-device: the training set goes to the devices once and the
  // pipeline hands out only positions; the same shuffle draws them, so the
  // batches are those of a run without the flag.
  if (flags.cacheOnDevice)
    if (Status s = session->cacheTrainingData(train); !s)
      return fail("--cache-on-device: " + s.message());
  data::Pipeline pipeline(train);
  if (!flags.noShuffle)
    pipeline.shuffle(flags.shuffleBuffer, flags.seed);
  pipeline.repeat(flags.steps >= 0 ? data::Pipeline::kForever
                                   : std::max<int64_t>(1, flags.epochs));
  if (flags.cacheOnDevice)
    pipeline.batchIndices(globalBatch);
  else
    pipeline.batch(globalBatch, session->labelFormat());
  pipeline.prefetch(flags.prefetch);
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches); !s)
    return fail(s.message());
  // The same pipeline yields the same batches, so skipping those the
  // checkpointed run consumed continues its data order exactly.
  if (Status s = ckpt::skipBatches(*batches, session->globalStep()); !s)
    return fail(train->name + ": resuming at step " +
                std::to_string(session->globalStep()) + ": " + s.message());

  std::ofstream metricsFile;
  std::unique_ptr<MetricsFileHook> metrics;
  if (!flags.metrics.empty()) {
    // A resumed run continues the killed run's log.
    metricsFile.open(flags.metrics, resumed ? std::ios::app : std::ios::trunc);
    if (!metricsFile)
      return fail(flags.metrics + ": cannot write the metrics file");
    metrics = std::make_unique<MetricsFileHook>(flags.logEvery, metricsFile);
  }

  bool showProgress = !flags.noProgress && ::isatty(STDOUT_FILENO);

  // One evaluation routine for --eval-every and the final --eval.
  std::shared_ptr<const data::Dataset> test;
  EvalResult lastEval;
  int64_t lastEvalStep = -1;
  auto evaluate = [&](int64_t step, bool final) -> Status {
    if (step != lastEvalStep) {
      if (!test)
        if (Status s = loadData(flags, true, shape, classes, test); !s)
          return s;
      data::Pipeline evalPipeline(test);
      evalPipeline.batch(globalBatch, session->labelFormat())
          .prefetch(flags.prefetch);
      std::unique_ptr<data::BatchIterator> evalBatches;
      if (Status s = evalPipeline.open(evalBatches); !s)
        return s;
      if (Status s = session->evaluate(*evalBatches, lastEval, flags.evalSteps);
          !s)
        return s;
      lastEvalStep = step;
      if (metrics)
        metrics->writeEvaluation(step, lastEval.names, lastEval.values);
    }
    std::string line =
        final ? "eval:" : "eval at step " + std::to_string(step) + ":";
    // Below the progress bar's open line, which the next step redraws.
    if (showProgress && !final)
      line = "\n" + line;
    for (size_t i = 0; i < lastEval.names.size(); ++i) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "%s %s = %.6f", i ? "," : "",
                    lastEval.names[i].c_str(), lastEval.values[i]);
      line += buf;
    }
    std::printf("%s (%lld of %lld test examples, %lld batches of %lld)\n",
                line.c_str(), static_cast<long long>(lastEval.examples),
                static_cast<long long>(test->size()),
                static_cast<long long>(lastEval.batches),
                static_cast<long long>(globalBatch));
    std::fflush(stdout);
    return Status::ok();
  };

  // Steps still to run: a resumed run trains up to the requested total.
  int64_t stepsPerEpoch = train->size() / globalBatch;
  int64_t totalSteps =
      flags.steps >= 0
          ? flags.steps
          : train->size() * std::max<int64_t>(1, flags.epochs) / globalBatch;
  int64_t remaining = std::max<int64_t>(0, totalSteps - session->globalStep());
  if (resumed && remaining == 0)
    std::printf("graphrun: the checkpoint is at step %lld of %lld: nothing "
                "left to train\n",
                static_cast<long long>(session->globalStep()),
                static_cast<long long>(totalSteps));

  // Hooks run in this order after each step and at the end. The NaN guard
  // comes first, so that no later hook (a checkpoint above all) sees a step
  // that diverged; the progress bar, which replaces the log lines on a
  // terminal, comes before the step timer, so that it ends its line before
  // the timer's summary.
  NanGuardHook nanGuard(session->variables());
  std::vector<Hook *> hooks{&nanGuard};
  std::unique_ptr<ProgressBarHook> progress;
  std::unique_ptr<LoggerHook> logger;
  if (showProgress) {
    progress = std::make_unique<ProgressBarHook>(std::cout, remaining);
    hooks.push_back(progress.get());
  } else {
    logger = std::make_unique<LoggerHook>(flags.logEvery, std::cout);
    hooks.push_back(logger.get());
  }
  StepTimerHook timer(flags.warmup, std::cout);
  hooks.push_back(&timer);
  if (metrics)
    hooks.push_back(metrics.get());
  std::unique_ptr<EvaluationHook> evalHook;
  if (flags.evalEvery > 0) {
    evalHook = std::make_unique<EvaluationHook>(
        flags.evalEvery, [&](int64_t step) { return evaluate(step, false); });
    hooks.push_back(evalHook.get());
  }
  std::unique_ptr<ckpt::CheckpointHook> checkpointHook;
  if (checkpoints) {
    int64_t every =
        flags.checkpointEvery >= 0 ? flags.checkpointEvery : stepsPerEpoch;
    checkpointHook = std::make_unique<ckpt::CheckpointHook>(
        *checkpoints, session->variables(), every, runState);
    hooks.push_back(checkpointHook.get());
  }
  std::unique_ptr<TraceHook> trace;
  if (!flags.trace.empty()) {
    trace = std::make_unique<TraceHook>(flags.trace);
    hooks.push_back(trace.get());
  }

  if (Status s = session->train(*batches, remaining, hooks); !s)
    return fail(s.message());
  batches.reset();

  if (flags.eval)
    if (Status s = evaluate(session->globalStep(), true); !s)
      return fail(s.message());
  if (!flags.saveWeights.empty()) {
    // Nothing run-specific (no step, no time): the same weights give the
    // same file, so runs compare with cmp.
    std::map<std::string, std::string> metadata{
        {"model", p.model() ? p.model()->str() : ""}};
    if (Status s = ckpt::saveWeights(flags.saveWeights, session->variables(),
                                     metadata);
        !s)
      return fail("--save-weights: " + s.message());
  }
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"graphrun: train a model from a graphc plan on GPU or CPU "
               "replicas"};
  Flags flags;
  app.add_option("plan", flags.plan, "the plan file (graphc's output)")
      ->required();
  auto *cpus = app.add_option("--cpus", flags.cpus,
                              "replicas on CPU threads (default 1)")
                   ->check(CLI::PositiveNumber);
  app.add_option("--gpus", flags.gpus,
                 "replicas on GPUs (more than the GPUs present: logical GPUs "
                 "sharing them); default: every GPU, else one CPU replica")
      ->check(CLI::PositiveNumber)
      ->excludes(cpus);
  app.add_option("--data", flags.data, "fashion_mnist or synthetic")
      ->check(CLI::IsMember({"fashion_mnist", "synthetic"}))
      ->capture_default_str();
  app.add_option("--data-dir", flags.dataDir,
                 "the directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  auto *steps =
      app.add_option("--steps", flags.steps,
                     "training steps in all, a resumed run's included (0: "
                     "none, to evaluate or convert --init-weights)")
          ->check(CLI::NonNegativeNumber);
  app.add_option("--epochs", flags.epochs,
                 "passes over the training data (default 1)")
      ->check(CLI::PositiveNumber)
      ->excludes(steps);
  app.add_option("--batch-size", flags.batchSize,
                 "the global batch; must be the plan's")
      ->check(CLI::PositiveNumber);
  app.add_option("--learning-rate", flags.learningRate,
                 "replaces the optimizer's learning rate in the plan")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", flags.seed,
                 "seeds the initial weights, the shuffle, synthetic data "
                 "and dropout")
      ->capture_default_str();
  app.add_option("--shuffle-buffer", flags.shuffleBuffer,
                 "examples in the shuffle buffer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--no-shuffle", flags.noShuffle, "train in dataset order");
  app.add_option("--prefetch", flags.prefetch, "batches prepared ahead")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--metrics", flags.metrics,
                 "also write one JSON line per logged step and per "
                 "evaluation to this file");
  app.add_option("--log-every", flags.logEvery,
                 "log the loss every this many steps (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--eval", flags.eval,
               "after training, the test set's loss and accuracy");
  app.add_option("--eval-steps", flags.evalSteps,
                 "evaluate on this many test batches only (default: all)")
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", flags.warmup,
                 "steps the step timer leaves out of its statistics")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--backend", flags.backend,
                 "reference, cpu or cuda (default: cuda with --gpus, else "
                 "cpu)")
      ->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  app.add_flag("--no-cuda-graph", flags.noCudaGraph,
               "launch the step's kernels one by one instead of replaying "
               "it as a CUDA graph");
  app.add_flag("--cache-on-device", flags.cacheOnDevice,
               "keep the training set in device memory and gather each "
               "batch there: per step only its indices travel (the same "
               "batches as without)");
  app.add_option("--collective-timeout", flags.timeoutSeconds,
                 "seconds a replica waits for the others before the step "
                 "fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--eval-every", flags.evalEvery,
                 "also evaluate on the test set every this many steps")
      ->check(CLI::PositiveNumber);
  app.add_option("--checkpoint-dir", flags.checkpointDir,
                 "save checkpoints (variables, optimizer slots, step, data "
                 "position) here, and resume from the newest one in it");
  app.add_option("--checkpoint-every", flags.checkpointEvery,
                 "steps between checkpoints (default: one epoch's steps; 0: "
                 "only at the end)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--keep-checkpoints", flags.keepCheckpoints,
                 "how many of the newest checkpoints to keep")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--init-weights", flags.initWeights,
                 "start from the model weights in this safetensors file "
                 "(Keras names and layouts)");
  app.add_option("--save-weights", flags.saveWeights,
                 "write the model weights to this safetensors file at the "
                 "end");
  app.add_option("--trace", flags.trace,
                 "write a Chrome/Perfetto trace of the steps to this file");
  app.add_flag("--no-progress", flags.noProgress,
               "log lines (--log-every) instead of the progress bar a "
               "terminal gets");
  CLI11_PARSE(app, argc, argv);
  return run(flags);
}
