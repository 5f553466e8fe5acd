//===- graphrun.cpp - train a model from a plan ---------------------------===//
//
// graphrun plan --cpus 2 --data fashion_mnist --epochs 1 --eval
//
// A thin main: flags to a Session, an input pipeline and the built-in hooks.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/reference/ReferenceKernels.h"
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
#include <string>

using namespace graph::runtime;
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
  std::string backend = "reference";
  double timeoutSeconds = 60;
};

int fail(const std::string &message) {
  std::fflush(stdout);
  std::cerr << "graphrun: error: " << message << "\n";
  return 1;
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

int run(const Flags &flags) {
  if (flags.gpus > 0)
    return fail("--gpus " + std::to_string(flags.gpus) +
                ": this graphrun has no GPU backend yet; run on CPU replicas "
                "with --cpus " +
                std::to_string(flags.gpus));
  int replicas = flags.cpus > 0 ? flags.cpus : 1;
  Backend backend = *parseBackend(flags.backend);
  reference::registerReferenceKernels();
  cpu::registerCpuKernels();
  if (KernelRegistry::global().names(backend).empty())
    return fail("--backend " + flags.backend +
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

  data::Pipeline pipeline(train);
  if (!flags.noShuffle)
    pipeline.shuffle(flags.shuffleBuffer, flags.seed);
  pipeline.repeat(flags.steps > 0 ? data::Pipeline::kForever
                                  : std::max<int64_t>(1, flags.epochs));
  pipeline.batch(globalBatch, session->labelFormat()).prefetch(flags.prefetch);
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches); !s)
    return fail(s.message());

  std::printf("graphrun: %s (model '%s'): %s on %d CPU replica(s), backend "
              "%s, global batch %lld (%lld per replica), data %s (%lld "
              "examples)\n",
              flags.plan.c_str(), p.model() ? p.model()->c_str() : "",
              session->trainProgram().name()->c_str(), replicas,
              backendName(backend), static_cast<long long>(globalBatch),
              static_cast<long long>(globalBatch / replicas),
              flags.data.c_str(), static_cast<long long>(train->size()));
  std::fflush(stdout);

  StepTimerHook timer(flags.warmup, std::cout);
  LoggerHook logger(flags.logEvery, std::cout);
  std::vector<Hook *> hooks{&logger, &timer};
  std::ofstream metricsFile;
  std::unique_ptr<MetricsFileHook> metrics;
  if (!flags.metrics.empty()) {
    metricsFile.open(flags.metrics, std::ios::trunc);
    if (!metricsFile)
      return fail(flags.metrics + ": cannot write the metrics file");
    metrics = std::make_unique<MetricsFileHook>(flags.logEvery, metricsFile);
    hooks.push_back(metrics.get());
  }
  if (Status s = session->train(*batches, flags.steps, hooks); !s)
    return fail(s.message());
  batches.reset();

  if (flags.eval) {
    std::shared_ptr<const data::Dataset> test;
    if (Status s = loadData(flags, true, shape, classes, test); !s)
      return fail(s.message());
    data::Pipeline evalPipeline(test);
    evalPipeline.batch(globalBatch, session->labelFormat())
        .prefetch(flags.prefetch);
    std::unique_ptr<data::BatchIterator> evalBatches;
    if (Status s = evalPipeline.open(evalBatches); !s)
      return fail(s.message());
    EvalResult result;
    if (Status s = session->evaluate(*evalBatches, result, flags.evalSteps); !s)
      return fail(s.message());
    if (metrics)
      metrics->writeEvaluation(session->globalStep(), result.names,
                               result.values);
    std::string line = "eval:";
    for (size_t i = 0; i < result.names.size(); ++i) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "%s %s = %.6f", i ? "," : "",
                    result.names[i].c_str(), result.values[i]);
      line += buf;
    }
    std::printf("%s (%lld of %lld test examples, %lld batches of %lld)\n",
                line.c_str(), static_cast<long long>(result.examples),
                static_cast<long long>(test->size()),
                static_cast<long long>(result.batches),
                static_cast<long long>(globalBatch));
  }
  std::fflush(stdout);
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"graphrun: train a model from a graphc plan on CPU replicas"};
  Flags flags;
  app.add_option("plan", flags.plan, "the plan file (graphc's output)")
      ->required();
  auto *cpus = app.add_option("--cpus", flags.cpus,
                              "replicas on CPU threads (default 1)")
                   ->check(CLI::PositiveNumber);
  app.add_option("--gpus", flags.gpus, "replicas on GPUs (not supported yet)")
      ->check(CLI::PositiveNumber)
      ->excludes(cpus);
  app.add_option("--data", flags.data, "fashion_mnist or synthetic")
      ->check(CLI::IsMember({"fashion_mnist", "synthetic"}))
      ->capture_default_str();
  app.add_option("--data-dir", flags.dataDir,
                 "the directory of the Fashion-MNIST IDX files")
      ->capture_default_str();
  auto *steps = app.add_option("--steps", flags.steps, "training steps")
                    ->check(CLI::PositiveNumber);
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
  app.add_option("--backend", flags.backend, "reference or cpu")
      ->check(CLI::IsMember({"reference", "cpu"}))
      ->capture_default_str();
  app.add_option("--collective-timeout", flags.timeoutSeconds,
                 "seconds a replica waits for the others before the step "
                 "fails")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  return run(flags);
}
