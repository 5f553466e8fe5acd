//===- TrainingJob.cpp - one graphrun job, flags to weights ---------------===//

#include "runtime/job/TrainingJob.h"

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

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <system_error>
#include <unistd.h>

namespace graph::runtime::job {

namespace ckpt = graph::runtime::checkpoint;
namespace fs = std::filesystem;

namespace {

/// A source for the training or the test split, as --data and --data-dir
/// say.
Status loadData(const JobOptions &o, bool test, const data::ExampleShape &shape,
                int32_t classes, std::shared_ptr<const data::Dataset> &out) {
  auto ds = std::make_shared<data::Dataset>();
  if (o.data == "fashion_mnist") {
    std::string dir =
        o.dataDir.empty() ? data::kFashionMnistDefaultDir : o.dataDir;
    if (Status s = data::loadFashionMnist(dir,
                                          test ? data::FashionMnistSplit::Test
                                               : data::FashionMnistSplit::Train,
                                          *ds);
        !s)
      return Status::error(s.message() + " (or train on --data synthetic)");
  } else if (o.data == "synthetic") {
    data::SyntheticDatasetOptions so;
    so.numExamples = test ? 10000 : 60000;
    so.shape = shape;
    so.numClasses = classes;
    so.seed = o.seed + (test ? 1 : 0);
    if (Status s = data::makeSyntheticDataset(so, *ds); !s)
      return s;
    ds->name = test ? "synthetic test" : "synthetic train";
  } else {
    return Status::error("--data " + o.data +
                         ": unknown data set (fashion_mnist or synthetic)");
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

Status choosePlacement(const JobOptions &o, Placement &out) {
  // The GPU count starts the CUDA runtime: asked only when it decides.
  if (o.gpus > 0) {
    if (physicalDeviceCount(Backend::cuda) == 0) {
      std::string whyNone = "this graphrun was built without CUDA";
#ifdef GRAPH_HAVE_CUDA
      cuda::physicalGpuCount(&whyNone);
#endif
      return Status::error(
          "--gpus " + std::to_string(o.gpus) + ": no CUDA GPU (" + whyNone +
          "); run on CPU replicas with --cpus " + std::to_string(o.gpus));
    }
    if (!o.backend.empty() && o.backend != "cuda")
      return Status::error("--gpus runs the cuda backend, not --backend " +
                           o.backend + "; use --cpus for CPU backends");
    out = {Backend::cuda, o.gpus};
    return Status::ok();
  }
  if (o.cpus == 0 && o.backend.empty())
    if (int gpus = physicalDeviceCount(Backend::cuda); gpus > 0) {
      out = {Backend::cuda, gpus};
      return Status::ok();
    }
  out.replicas = o.cpus > 0 ? o.cpus : 1;
  std::optional<Backend> backend =
      o.backend.empty() ? Backend::cpu : parseBackend(o.backend);
  if (!backend)
    return Status::error("--backend " + o.backend +
                         ": unknown backend (reference, cpu or cuda)");
  out.backend = *backend;
  if (out.backend == Backend::cuda)
    return Status::error("--backend cuda runs on GPUs: use --gpus N");
  return Status::ok();
}

/// Checks, before any step, that `path` can be written as `flag`'s output:
/// not a directory, in a directory that exists and takes a new file. The
/// probe file is removed at once.
Status checkOutputFile(const std::string &flag, const std::string &path) {
  std::error_code ec;
  if (path.empty())
    return Status::error(flag + ": the path is empty");
  if (fs::is_directory(path, ec))
    return Status::error(flag + " " + path +
                         ": is a directory; give a file name");
  fs::path parent = fs::path(path).parent_path();
  if (parent.empty())
    parent = ".";
  if (!fs::is_directory(parent, ec))
    return Status::error(
        flag + " " + path + ": the directory " + parent.string() +
        (fs::exists(parent, ec) ? " is not a directory" : " does not exist"));
  std::string probe =
      (parent / (".graphrun-probe-" + std::to_string(::getpid()))).string();
  {
    std::ofstream file(probe);
    if (!file)
      return Status::error(flag + " " + path + ": cannot create a file in " +
                           parent.string());
  }
  fs::remove(probe, ec);
  return Status::ok();
}

/// The examples one epoch of the (sharded) training data holds.
int64_t shardSize(int64_t examples, int64_t count, int64_t index) {
  return examples > index ? (examples - index + count - 1) / count : 0;
}

} // namespace

Status runTrainingJob(const JobOptions &o, std::ostream &out,
                      std::ostream &err) {
  auto warn = [&](const std::string &message) {
    out.flush();
    err << "graphrun: warning: " << message << "\n";
    err.flush();
  };
  reference::registerReferenceKernels();
  cpu::registerCpuKernels();
#ifdef GRAPH_HAVE_CUDA
  cuda::registerCudaBackend();
#endif
  if (o.shardCount < 1 || o.shardIndex < 0 || o.shardIndex >= o.shardCount)
    return Status::error("--shard " + std::to_string(o.shardIndex) + "/" +
                         std::to_string(o.shardCount) +
                         ": the index must lie in [0, count)");
  Placement placement;
  if (Status s = choosePlacement(o, placement); !s)
    return s;
  int replicas = placement.replicas;
  Backend backend = placement.backend;
  if (KernelRegistry::global().names(backend).empty())
    return Status::error(std::string("backend ") + backendName(backend) +
                         ": no kernels of that backend are in this build; "
                         "use --backend reference");

  LoadedPlan loaded;
  if (Status s = loadPlan(o.plan, loaded); !s)
    return s;
  const plan::Plan &p = *loaded.plan;

  // The image input and the labels, as the plan declares them (the
  // evaluation program's sample_weight is the runtime's own).
  const plan::Input *image = nullptr, *labels = nullptr;
  for (const plan::Input *in : *p.inputs()) {
    std::string name = in->name()->str();
    if (name == "labels")
      labels = in;
    else if (name != "sample_weight")
      image = in;
  }
  if (!image || image->shape()->size() != 4)
    return Status::error(o.plan + ": graphrun feeds an NHWC image input; the "
                                  "plan has none");
  int64_t globalBatch = image->shape()->Get(0);
  if (o.batchSize > 0 && o.batchSize != globalBatch)
    return Status::error("--batch-size " + std::to_string(o.batchSize) + ": " +
                         o.plan + " was compiled for a global batch of " +
                         std::to_string(globalBatch) +
                         "; recompile it with graph-import --batch-size " +
                         std::to_string(o.batchSize) + " and graphc");
  data::ExampleShape shape{image->shape()->Get(1), image->shape()->Get(2),
                           image->shape()->Get(3)};
  int32_t classes = 10;
  if (labels && labels->shape()->size() == 2)
    classes = static_cast<int32_t>(labels->shape()->Get(1));

  // Every output path, before anything trains.
  for (const auto &[flag, path] :
       {std::pair{"--save-weights", &o.saveWeights},
        std::pair{"--metrics", &o.metrics}, std::pair{"--trace", &o.trace}})
    if (!path->empty())
      if (Status s = checkOutputFile(flag, *path); !s)
        return s;
  if (!o.checkpointDir.empty()) {
    std::error_code ec;
    fs::create_directories(o.checkpointDir, ec);
    if (ec || !fs::is_directory(o.checkpointDir, ec))
      return Status::error("--checkpoint-dir " + o.checkpointDir +
                           ": cannot create the directory" +
                           (ec ? ": " + ec.message() : ""));
  }

  SessionOptions so;
  so.replicas = replicas;
  so.backend = backend;
  so.seed = o.seed;
  so.learningRate = o.learningRate;
  so.cudaGraph = !o.noCudaGraph;
  so.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(o.collectiveTimeoutSeconds * 1000));
  std::unique_ptr<Session> session;
  if (Status s = Session::create(loaded, so, session); !s)
    return s;

  // The data: the training set, and the test set now rather than after
  // training when the run evaluates.
  auto checkFits = [&](const data::Dataset &ds) -> Status {
    if (!(ds.shape == shape))
      return Status::error(ds.name + ": examples are " + ds.shape.str() +
                           ", the plan's input is " + shape.str());
    if (ds.numClasses != classes && labels && labels->shape()->size() == 2)
      return Status::error(ds.name + ": " + std::to_string(ds.numClasses) +
                           " classes, the plan's labels have " +
                           std::to_string(classes));
    return Status::ok();
  };
  std::shared_ptr<const data::Dataset> train, test;
  if (Status s = loadData(o, false, shape, classes, train); !s)
    return s;
  if (Status s = checkFits(*train); !s)
    return s;
  bool evaluates = o.eval || o.evalEvery > 0;
  if (evaluates) {
    if (Status s = loadData(o, true, shape, classes, test); !s)
      return Status::error("the test set (--eval): " + s.message());
    if (Status s = checkFits(*test); !s)
      return Status::error("the test set (--eval): " + s.message());
    if (test->size() == 0)
      return Status::error("the test set (--eval): " + test->name +
                           " holds no example");
  }
  int64_t epochExamples = shardSize(train->size(), o.shardCount, o.shardIndex);
  if (o.steps != 0 && epochExamples < globalBatch)
    return Status::error(train->name + ": " + std::to_string(epochExamples) +
                         " training examples" +
                         (o.shardCount > 1
                              ? " in shard " + std::to_string(o.shardIndex) +
                                    "/" + std::to_string(o.shardCount)
                              : std::string()) +
                         ", fewer than one global batch of " +
                         std::to_string(globalBatch) + ": nothing to train on");

  out << "graphrun: " << o.plan << " (model '"
      << (p.model() ? p.model()->c_str() : "")
      << "'): " << session->trainProgram().name()->c_str() << " on " << replicas
      << " " << (backend == Backend::cuda ? "GPU" : "CPU")
      << " replica(s), backend " << backendName(backend) << ", global batch "
      << globalBatch << " (" << globalBatch / replicas << " per replica), data "
      << o.data << " (" << train->size() << " examples"
      << (o.shardCount > 1 ? ", shard " + std::to_string(o.shardIndex) + "/" +
                                 std::to_string(o.shardCount) + ": " +
                                 std::to_string(epochExamples)
                           : std::string())
      << ")\n";
  out.flush();

  // The state a checkpoint records, and a resumed run must match.
  ckpt::RunState runState;
  runState.seed = o.seed;
  runState.globalBatch = globalBatch;
  runState.epochExamples = epochExamples;
  runState.data =
      o.data +
      (o.shardCount > 1 ? ", shard " + std::to_string(o.shardIndex) + "/" +
                              std::to_string(o.shardCount)
                        : std::string()) +
      (o.noShuffle ? ", file order"
                   : ", shuffle buffer " + std::to_string(o.shuffleBuffer));
  std::optional<ckpt::CheckpointManager> checkpoints;
  bool resumed = false;
  if (!o.checkpointDir.empty()) {
    checkpoints.emplace(o.checkpointDir, o.keepCheckpoints);
    ckpt::LoadedCheckpoint latest;
    std::vector<std::string> warnings;
    Status s = checkpoints->findLatest(latest, resumed, warnings);
    for (const std::string &w : warnings)
      warn(w);
    if (!s)
      return s;
    if (resumed) {
      if (Status r = ckpt::CheckpointManager::restore(latest, runState,
                                                      session->variables());
          !r)
        return r;
      if (Status r = session->setGlobalStep(latest.state.globalStep); !r)
        return Status::error(latest.path + ": " + r.message());
      out << "graphrun: resumed from " << latest.path << ": step "
          << latest.state.globalStep << ", in epoch "
          << latest.state.epoch() + 1 << " at example "
          << latest.state.exampleInEpoch() << " of " << epochExamples << "\n";
      out.flush();
      if (!o.initWeights.empty())
        warn("--init-weights " + o.initWeights +
             ": not applied, the run resumes from its checkpoint");
    }
  }
  if (!resumed && !o.initWeights.empty())
    if (Status s = ckpt::loadWeights(o.initWeights, session->variables()); !s)
      return Status::error("--init-weights: " + s.message());

  // --cache-on-device: the training set goes to the devices once and the
  // pipeline hands out only positions; the same shuffle draws them, so the
  // batches are those of a run without the flag.
  if (o.cacheOnDevice)
    if (Status s = session->cacheTrainingData(train); !s)
      return Status::error("--cache-on-device: " + s.message());

  // Steps still to run: a resumed run trains up to the requested total.
  int64_t stepsPerEpoch = epochExamples / globalBatch;
  int64_t epochs = std::max<int64_t>(1, o.epochs);
  if (o.steps < 0 && epochs > INT64_MAX / std::max<int64_t>(1, epochExamples))
    return Status::error("--epochs " + std::to_string(o.epochs) +
                         ": too many passes over " +
                         std::to_string(epochExamples) + " examples");
  int64_t totalSteps =
      o.steps >= 0 ? o.steps : epochExamples * epochs / globalBatch;
  int64_t remaining = std::max<int64_t>(0, totalSteps - session->globalStep());
  if (resumed && remaining == 0)
    out << "graphrun: the checkpoint is at step " << session->globalStep()
        << " of " << totalSteps << ": nothing left to train\n";

  data::Pipeline pipeline(train);
  if (o.shardCount > 1)
    pipeline.shard(o.shardCount, o.shardIndex);
  if (o.cache)
    pipeline.cache();
  if (!o.noShuffle)
    pipeline.shuffle(o.shuffleBuffer, o.seed);
  pipeline.repeat(o.steps >= 0 ? data::Pipeline::kForever : epochs);
  if (o.cacheOnDevice)
    pipeline.batchIndices(globalBatch);
  else
    pipeline.batch(globalBatch, session->labelFormat());
  pipeline.prefetch(o.prefetch);
  // A resumed run starts the pipeline where the checkpointed run stopped:
  // the same seed gives the same batches, and the pipeline seeks to the
  // batch without reading the ones before it.
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches, session->globalStep()); !s)
    return Status::error(train->name + ": " + s.message());

  std::ofstream metricsFile;
  std::unique_ptr<MetricsFileHook> metrics;
  if (!o.metrics.empty()) {
    // A resumed run continues the killed run's log.
    metricsFile.open(o.metrics, resumed ? std::ios::app : std::ios::trunc);
    if (!metricsFile)
      return Status::error(o.metrics + ": cannot write the metrics file");
    metrics = std::make_unique<MetricsFileHook>(o.logEvery, metricsFile);
  }

  bool showProgress = o.progress && &out == &std::cout && ::isatty(1);

  // One evaluation routine for --eval-every and the final --eval: every
  // test example once, the last batch padded and its padding weighted 0.
  EvalResult lastEval;
  int64_t lastEvalStep = -1;
  auto evaluate = [&](int64_t step, bool final) -> Status {
    if (step != lastEvalStep) {
      data::Pipeline evalPipeline(test);
      evalPipeline
          .batch(globalBatch, session->labelFormat(), data::Remainder::pad)
          .prefetch(o.prefetch);
      std::unique_ptr<data::BatchIterator> evalBatches;
      if (Status s = evalPipeline.open(evalBatches); !s)
        return s;
      if (Status s = session->evaluate(*evalBatches, lastEval, o.evalSteps); !s)
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
    out << line << " (" << lastEval.examples << " of " << test->size()
        << " test examples, " << lastEval.batches << " batches of "
        << globalBatch << ")\n";
    out.flush();
    return Status::ok();
  };

  // Hooks run in this order after each step and at the end. The NaN guard
  // comes first, so that no later hook (a checkpoint above all) sees a step
  // that diverged; the progress bar, which replaces the log lines on a
  // terminal, comes before the step timer, so that it ends its line before
  // the timer's summary.
  std::vector<Hook *> hooks;
  std::unique_ptr<NanGuardHook> nanGuard;
  if (o.nanGuard) {
    nanGuard = std::make_unique<NanGuardHook>(
        session->variables(), o.checkNumerics ? NanGuardHook::Mode::everyTensor
                                              : NanGuardHook::Mode::outputs);
    hooks.push_back(nanGuard.get());
  }
  std::unique_ptr<ProgressBarHook> progress;
  std::unique_ptr<LoggerHook> logger;
  if (showProgress) {
    progress = std::make_unique<ProgressBarHook>(out, remaining);
    hooks.push_back(progress.get());
  } else {
    logger = std::make_unique<LoggerHook>(o.logEvery, out);
    hooks.push_back(logger.get());
  }
  StepTimerHook timer(o.warmup, out);
  hooks.push_back(&timer);
  if (metrics)
    hooks.push_back(metrics.get());
  std::unique_ptr<EvaluationHook> evalHook;
  if (o.evalEvery > 0) {
    evalHook = std::make_unique<EvaluationHook>(
        o.evalEvery, [&](int64_t step) { return evaluate(step, false); });
    hooks.push_back(evalHook.get());
  }
  std::unique_ptr<ckpt::CheckpointHook> checkpointHook;
  if (checkpoints) {
    int64_t every = o.checkpointEvery >= 0 ? o.checkpointEvery : stepsPerEpoch;
    checkpointHook = std::make_unique<ckpt::CheckpointHook>(
        *checkpoints, session->variables(), every, runState);
    hooks.push_back(checkpointHook.get());
  }
  std::unique_ptr<TraceHook> trace;
  if (!o.trace.empty()) {
    trace = std::make_unique<TraceHook>(o.trace);
    hooks.push_back(trace.get());
  }

  if (Status s = session->train(*batches, remaining, hooks); !s)
    return s;
  batches.reset();

  if (o.eval)
    if (Status s = evaluate(session->globalStep(), true); !s)
      return s;
  if (!o.saveWeights.empty()) {
    // Nothing run-specific (no step, no time): the same weights give the
    // same file, so runs compare with cmp.
    std::map<std::string, std::string> metadata{
        {"model", p.model() ? p.model()->str() : ""}};
    if (Status s =
            ckpt::saveWeights(o.saveWeights, session->variables(), metadata);
        !s)
      return Status::error("--save-weights: " + s.message());
  }
  out.flush();
  return Status::ok();
}

} // namespace graph::runtime::job
