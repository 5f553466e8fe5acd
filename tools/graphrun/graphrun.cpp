//===- graphrun.cpp - train a model from a plan ---------------------------===//
//
// graphrun plan --cpus 2 --data fashion_mnist --epochs 1 --eval
// graphrun plan --data images:OCT2017/train --eval-data images:OCT2017/test
//               --preprocess caffe --epochs 10 --eval
// graphrun plan --epochs 10 --checkpoint-dir ckpt   (killed? the same command
//                                                    resumes where it was)
//
// A thin main: flags to runtime/job's JobOptions. Numbers are parsed
// strictly (a whole number in range, a finite positive rate): CLI11's own
// conversions saturate out-of-range integers and accept nan.
//
//===----------------------------------------------------------------------===//

#include "runtime/core/Device.h"
#include "runtime/job/Preemption.h"
#include "runtime/job/TrainingJob.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

using graph::runtime::Status;
using graph::runtime::job::JobOptions;

namespace {

/// An integer flag in [min, max]: digits only (a leading '-' where min < 0),
/// so "1e3", "-1" for a count, or a value past 64 bits is an error, not a
/// saturated or wrapped number.
template <typename T>
CLI::Option *addInteger(CLI::App &app, const std::string &name, T &target,
                        T min, T max, const std::string &description) {
  auto parse = [&target, name, min, max](const std::string &text) {
    T value{};
    auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value, 10);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        value < min || value > max)
      throw CLI::ValidationError(
          name, "'" + text + "' is not a whole number from " +
                    std::to_string(min) + " to " + std::to_string(max));
    target = value;
  };
  return app.add_option_function<std::string>(name, parse, description)
      ->type_name("INT");
}

/// A finite number in (0, max].
CLI::Option *addPositive(CLI::App &app, const std::string &name, double &target,
                         double max, const std::string &description) {
  auto parse = [&target, name, max](const std::string &text) {
    double value = 0;
    auto [end, ec] =
        std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        !std::isfinite(value) || !(value > 0) || value > max) {
      char bound[32];
      std::snprintf(bound, sizeof bound, "%g", max);
      throw CLI::ValidationError(name, "'" + text +
                                           "' is not a finite number above 0 "
                                           "and at most " +
                                           bound);
    }
    target = value;
  };
  return app.add_option_function<std::string>(name, parse, description)
      ->type_name("NUM");
}

/// --shard INDEX/COUNT.
CLI::Option *addShard(CLI::App &app, JobOptions &o) {
  auto parse = [&o](const std::string &text) {
    size_t slash = text.find('/');
    auto number = [](const std::string &part, int64_t &out) {
      auto [end, ec] =
          std::from_chars(part.data(), part.data() + part.size(), out);
      return !part.empty() && ec == std::errc() &&
             end == part.data() + part.size();
    };
    int64_t index = 0, count = 0;
    if (slash == std::string::npos || !number(text.substr(0, slash), index) ||
        !number(text.substr(slash + 1), count) || count < 1 || index < 0 ||
        index >= count)
      throw CLI::ValidationError(
          "--shard", "'" + text +
                         "' is not INDEX/COUNT with 0 <= INDEX < COUNT "
                         "(e.g. 0/2)");
    o.shardIndex = index;
    o.shardCount = count;
  };
  return app
      .add_option_function<std::string>(
          "--shard", parse,
          "train on shard INDEX of COUNT of the training data (tf.data's "
          "shard: every COUNT-th example from the INDEX-th)")
      ->type_name("INDEX/COUNT");
}

/// --data, --eval-data, --predict: a data set's name, images:DIR,
/// arrays:FILE.npz, arrays:X.npy,Y.npy or csv:FILE.
const CLI::Validator dataSpec(
    [](std::string &text) -> std::string {
      if (text == "fashion_mnist" || text == "synthetic")
        return "";
      for (const char *prefix : {"images:", "arrays:", "csv:"})
        if (text.starts_with(prefix) &&
            text.size() > std::string_view(prefix).size())
          return "";
      return "'" + text +
             "' is not fashion_mnist, synthetic, images:DIR (a folder "
             "with one sub-folder of JPEGs per class), arrays:FILE.npz, "
             "arrays:X.npy,Y.npy or csv:FILE";
    },
    "DATA");

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"graphrun: train a model from a graphc plan on GPU or CPU "
               "replicas"};
  JobOptions o;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int kMaxReplicas = 4096;
  app.add_option("plan", o.plan, "the plan file (graphc's output)")->required();
  auto *cpus = addInteger(app, "--cpus", o.cpus, 1, kMaxReplicas,
                          "replicas on CPU threads (default 1)");
  addInteger(app, "--gpus", o.gpus, 1, kMaxReplicas,
             "replicas on GPUs (more than the GPUs present: logical GPUs "
             "sharing them); default: every GPU, else one CPU replica")
      ->excludes(cpus);
  app.add_option("--data", o.data,
                 "fashion_mnist, synthetic, images:DIR (one sub-folder of "
                 "JPEGs per class; or images:DIR/**/*.jpeg), arrays:FILE.npz "
                 "(NumPy arrays x and y), arrays:X.npy,Y.npy, or csv:FILE "
                 "(with --label-columns)")
      ->check(dataSpec)
      ->capture_default_str();
  app.add_option("--eval-data", o.evalData,
                 "what --eval and --eval-every evaluate on (default: the "
                 "test split of --data; needed for images:DIR, arrays: and "
                 "csv:)")
      ->check(dataSpec);
  auto *validationSplit = addPositive(
      app, "--validation-split", o.validationSplit, 1.0,
      "Keras' validation_split: evaluate on the last fraction F (0 < F < 1) "
      "of the training arrays, taken out before the shuffle, at every "
      "epoch's end (val_loss, val_<metric>)");
  app.add_option("--validation-data", o.validationData,
                 "Keras' validation_data: evaluate on this data at every "
                 "epoch's end (val_loss, val_<metric>)")
      ->check(dataSpec)
      ->excludes(validationSplit);
  app.add_option("--class-weight", o.classWeight,
                 "Keras' class_weight: each training example weighs its "
                 "class's weight (1 for a class not named), as "
                 "CLASS:WEIGHT pairs (0:1,1:5) or a .json file of them "
                 "({\"0\": 1, \"1\": 5})");
  app.add_option("--label-columns", o.labelColumns,
                 "csv: the columns that hold the labels, comma-separated")
      ->delimiter(',');
  app.add_option("--feature-columns", o.featureColumns,
                 "csv: the columns that hold the features, comma-separated "
                 "(default: every column but the labels)")
      ->delimiter(',');
  app.add_option("--labels", o.labels,
                 "image folders: the class names in label order, "
                 "comma-separated (default: the sub-folders, sorted); every "
                 "sub-folder must be one of them")
      ->delimiter(',');
  app.add_option("--preprocess", o.preprocess,
                 "image folders: unit ([0, 1], default), caffe "
                 "(keras.applications.vgg16.preprocess_input), tf "
                 "(x / 127.5 - 1: MobileNet, Inception, Xception, ResNetV2), "
                 "torch (ImageNet's mean and std: DenseNet) or raw "
                 "([0, 255])")
      ->check(CLI::IsMember({"unit", "caffe", "tf", "torch", "raw"}));
  app.add_option("--resize", o.resize,
                 "image folders: half-pixel (TF 2's tf.image.resize, "
                 "default) or legacy (TF 1's resize_bilinear)")
      ->check(CLI::IsMember({"half-pixel", "legacy"}));
  app.add_flag("--skip-bad-images", o.skipBadImages,
               "image folders: skip the files that cannot be decoded, count "
               "them and list them at the end, instead of stopping");
  auto *fastDecode = app.add_flag(
      "--fast-decode", o.fastDecode,
      "image folders: decode at 1/2, 1/4 or 1/8 scale where the input "
      "allows (DCT scaling): faster for large files, but not the pixels of "
      "TF's full decode (the default, image_dataset_from_directory's)");
  // The default since --fast-decode: accepted so that old command lines
  // run, and kept apart from the flag that undoes it.
  bool tfDecode = false;
  app.add_flag("--tf-decode", tfDecode,
               "image folders: decode in full as tf.io.decode_jpeg does "
               "(the default; kept for old command lines)")
      ->excludes(fastDecode);
  addInteger(app, "--decode-threads", o.decodeThreads, 1, 1024,
             "image folders: threads that decode ahead of the step "
             "(default: one a core)");
  app.add_option("--data-dir", o.dataDir,
                 "the directory of the Fashion-MNIST IDX files (default "
                 "/usr/share/datasets/fashion-mnist)");
  auto *steps = addInteger(app, "--steps", o.steps, int64_t{0}, kMax,
                           "training steps in all, a resumed run's included "
                           "(0: none, to evaluate or convert --init-weights)");
  addInteger(app, "--epochs", o.epochs, int64_t{1}, kMax,
             "passes over the training data (default 1)")
      ->excludes(steps);
  addInteger(app, "--batch-size", o.batchSize, int64_t{1}, kMax,
             "the global batch; must be the plan's");
  addPositive(app, "--learning-rate", o.learningRate, 1e6,
              "replaces the optimizer's learning rate in the plan");
  addInteger(app, "--seed", o.seed, uint64_t{0},
             std::numeric_limits<uint64_t>::max(),
             "seeds the initial weights, the shuffle, synthetic data and "
             "dropout (default 0)");
  addInteger(
      app, "--shuffle-buffer", o.shuffleBuffer, int64_t{1}, int64_t{1} << 40,
      "examples in the shuffle buffer (default 5000 for fashion_mnist and "
      "synthetic data, as the seed's tf.data pipeline; arrays, CSV and image "
      "folders: all of them, as Keras' fit shuffles)");
  app.add_flag("--no-shuffle", o.noShuffle, "train in dataset order");
  app.add_flag("--cache", o.cache,
               "keep the training examples in memory after the first epoch "
               "(tf.data's cache)");
  addShard(app, o);
  addInteger(app, "--prefetch", o.prefetch, int64_t{0}, int64_t{1} << 20,
             "batches prepared ahead (default 2)");
  app.add_option("--metrics", o.metrics,
                 "also write one JSON line per logged step and per "
                 "evaluation to this file");
  addInteger(app, "--log-every", o.logEvery, int64_t{0}, kMax,
             "log the loss every this many steps (0: never; default 100)");
  app.add_flag("--eval", o.eval,
               "after training, the test set's loss and accuracy (every "
               "example: the last batch is padded and its padding weighs "
               "nothing)");
  addInteger(app, "--eval-steps", o.evalSteps, int64_t{1}, kMax,
             "evaluate on this many test batches only (default: all)");
  addInteger(app, "--warmup", o.warmup, int64_t{0}, kMax,
             "steps the step timer leaves out of its statistics (default "
             "5)");
  app.add_option("--backend", o.backend,
                 "reference, cpu or cuda (default: cuda with --gpus, else "
                 "cpu)")
      ->check(CLI::IsMember({"reference", "cpu", "cuda"}));
  app.add_option("--precision", o.precision,
                 "fp32 or tf32: the GPU's convolutions and matrix products "
                 "(default tf32, PyTorch's cuDNN default; everything else "
                 "is fp32; the CPU backends are always fp32)")
      ->check(CLI::IsMember({"fp32", "tf32"}));
  app.add_flag("--no-cuda-graph", o.noCudaGraph,
               "launch the step's kernels one by one instead of replaying "
               "it as a CUDA graph");
  app.add_flag("--keep-denormals", o.keepDenormals,
               "cpu: compute with subnormal floats instead of flushing them "
               "to zero (the default, as TensorFlow's CPU kernels do: "
               "arithmetic on them is slow, and Adam's moments fill with "
               "them over a long run)");
  app.add_option("--allreduce-dtype", o.allReduceDtype,
                 "fp32 or bf16: the type gradients cross between workers in "
                 "(default fp32; bf16 halves the bytes on the wire, each "
                 "sum rounded to bfloat16; replicas in one process always "
                 "sum in fp32; host transport only)")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  addInteger(app, "--steps-in-flight", o.stepsInFlight, 1, 2,
             "steps launched before the host waits for the oldest: 2 "
             "launches step k+1 before reading step k's outputs, so the "
             "GPU runs the steps back to back (default 2 on a GPU, 1 on "
             "the CPU)");
  app.add_flag("--cache-on-device", o.cacheOnDevice,
               "keep the training set in device memory and gather each "
               "batch there: per step only its indices travel (the same "
               "batches as without)");
  addPositive(app, "--collective-timeout", o.collectiveTimeoutSeconds, 1e6,
              "seconds a replica waits for the others before the step "
              "fails (default 60)");
  addInteger(app, "--eval-every", o.evalEvery, int64_t{1}, kMax,
             "also evaluate on the test set every this many steps");
  app.add_option("--checkpoint-dir", o.checkpointDir,
                 "save checkpoints (variables, optimizer slots, step, data "
                 "position) here, and resume from the newest one in it");
  addInteger(app, "--checkpoint-every", o.checkpointEvery, int64_t{0}, kMax,
             "steps between checkpoints (default: one epoch's steps; 0: "
             "only at the end)");
  addInteger(app, "--keep-checkpoints", o.keepCheckpoints, 1, 1 << 20,
             "how many of the newest checkpoints to keep (default 3)");
  auto *initWeights = app.add_option(
      "--init-weights", o.initWeights,
      "start from the model weights in this file: safetensors (Keras names "
      "and layouts) or Keras' own weights (legacy .h5, .weights.h5, "
      ".keras), told apart by content; every model weight must be in it");
  app.add_flag("--init-weights-partial", o.initWeightsPartial,
               "load only the --init-weights weights that match the model "
               "by layer name and shape, leave the others at their initial "
               "values and list them (Keras' by_name=True, "
               "skip_mismatch=True: a pretrained base under a new head)")
      ->needs(initWeights);
  app.add_option("--save-weights", o.saveWeights,
                 "write the model weights to this file at the end, in the "
                 "format its name says: .weights.h5 (Keras 3's "
                 "save_weights), .h5 (tf.keras 2's), .keras, .safetensors");
  app.add_option("--save-model", o.saveModel,
                 "write the whole model at the end as model.save does: a "
                 ".keras file keras.models.load_model opens and fit() "
                 "continues (or a legacy .h5)");
  app.add_option("--checkpoint-format", o.checkpointFormat,
                 "keras: also write ModelCheckpoint's ckpt-<epoch>.keras to "
                 "--checkpoint-dir at every epoch's end (default "
                 "safetensors: only the checkpoints a run resumes from)");
  // fit's callbacks: KEY=VALUE,... with Keras' argument names; the flag
  // alone takes Keras' defaults.
  auto callback = [&](const char *name, std::optional<std::string> &into,
                      const char *description) {
    app.add_option_function<std::string>(
           name, [&into](const std::string &v) { into = v; }, description)
        ->expected(0, 1)
        ->default_str("");
  };
  callback("--early-stopping", o.earlyStopping,
           "keras.callbacks.EarlyStopping: monitor=val_loss, min_delta=0, "
           "patience=0, mode=auto, baseline, restore_best_weights=false, "
           "start_from_epoch=0, verbose=0");
  callback("--reduce-lr-on-plateau", o.reduceLrOnPlateau,
           "keras.callbacks.ReduceLROnPlateau: monitor=val_loss, "
           "factor=0.1, patience=10, mode=auto, min_delta=1e-4, cooldown=0, "
           "min_lr=0, verbose=0");
  callback("--checkpoint-best", o.checkpointBest,
           "keras.callbacks.ModelCheckpoint(save_best_only=True): "
           "filepath (default best.keras, in --checkpoint-dir if given; "
           "its format by its name), monitor=val_loss, mode=auto, "
           "initial_value_threshold, verbose=0");
  app.add_option("--csv-log", o.csvLog,
                 "keras.callbacks.CSVLogger: one row per epoch (epoch, then "
                 "the logs' keys sorted)");
  app.add_option("--tensorboard", o.tensorboard,
                 "keras.callbacks.TensorBoard's log directory: DIR/train and "
                 "DIR/validation event files (epoch_* each epoch, batch_* "
                 "every --log-every steps)");
  app.add_option("--trace", o.trace,
                 "write a Chrome/Perfetto trace of the steps to this file "
                 "(each worker of a job its own: .rank<r> before the "
                 "extension)");
  app.add_option("--data-order", o.dataOrder,
                 "write the source position of every example each step "
                 "trains on to this file, a line a step (each worker its "
                 "own)");
  auto *predict =
      app.add_option("--predict", o.predict,
                     "predict instead of training (Keras' predict): the "
                     "data, fashion_mnist or synthetic (their test split) or "
                     "images:DIR, in order; the weights from --init-weights "
                     "or --checkpoint-dir")
          ->check(dataSpec);
  app.add_option("-o,--predictions", o.predictions,
                 "with --predict: the .npy file of the predictions (float32 "
                 "[examples, outputs]); the examples' sources (an image's "
                 "path) go to the same path plus .txt")
      ->needs(predict);
  bool noProgress = false, noNanGuard = false;
  app.add_flag("--no-progress", noProgress,
               "log lines (--log-every) instead of the progress bar a "
               "terminal gets");
  auto *noGuard = app.add_flag(
      "--no-nan-guard", noNanGuard,
      "do not stop at a non-finite loss or gradient (the default guard "
      "reads only the step's loss and gradient norm)");
  app.add_flag("--check-numerics", o.checkNumerics,
               "also check every variable after every step, to name the "
               "step whose update overflowed (slower: reads them all)")
      ->excludes(noGuard);
  app.add_option("--preempt-signals", o.preemptSignals,
                 "signals that stop the job after the step in progress, on "
                 "every worker, write the checkpoint of that step to "
                 "--checkpoint-dir and exit with status 143, so that the "
                 "same command resumes (Kubernetes' SIGTERM, Slurm's "
                 "--signal=USR1@90); none: they end the process at once")
      ->check(CLI::Validator(
          [](std::string &text) -> std::string {
            std::vector<int> signals;
            Status s = graph::runtime::job::parsePreemptSignals(text, signals);
            // CLI11 puts the flag's name first already.
            std::string prefix = "--preempt-signals " + text + ": ";
            return s ? ""
                   : s.message().starts_with(prefix)
                       ? s.message().substr(prefix.size())
                       : s.message();
          },
          "SIGNALS"))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  o.progress = !noProgress;
  o.nanGuard = !noNanGuard;

  Status s = graph::runtime::job::runTrainingJob(o, std::cout, std::cerr);
  std::cout.flush();
  // Preempted: every worker stopped after the same step, the checkpoint
  // written; the job said so.
  if (s.code() == graph::runtime::StatusCode::cancelled)
    return graph::runtime::job::kPreemptedExitStatus;
  if (!s) {
    // An empty message: another worker of the job reports the fault.
    if (!s.message().empty())
      std::cerr << "graphrun: error: " << s.message() << "\n";
    // A hung GPU: exit() would run the CUDA runtime's teardown, which waits
    // for it forever (runtime/backends/cuda/GpuHang.h).
    if (graph::runtime::deviceLost()) {
      std::cerr.flush();
      std::_Exit(1);
    }
    return 1;
  }
  return 0;
}
