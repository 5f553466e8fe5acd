//===- TrainingJob.h - one graphrun job, flags to weights ------*- C++ -*-===//
//
// What `graphrun plan ...` does, as a library a test can drive: choose the
// devices, load the plan and the data, restore a checkpoint, build the
// input pipeline and the hooks, train, evaluate, save. tools/graphrun only
// parses flags into JobOptions.
//
// Everything a job will read or write is checked before its first step (the
// plan, the training and test data, --init-weights, the checkpoint
// directory, every output path), so that a job never trains for an hour and
// then fails to save.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_TRAININGJOB_H
#define RUNTIME_JOB_TRAININGJOB_H

#include "runtime/base/Status.h"
#include "runtime/data/ArraysDataset.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace graph::runtime {
class Workers;
}

namespace graph::runtime::job {

/// graphrun's flags, with graphrun's defaults.
struct JobOptions {
  std::string plan;
  /// Replicas on CPU threads or on GPUs (0: graphrun's default, every GPU
  /// or else one CPU replica).
  int cpus = 0;
  int gpus = 0;
  /// reference, cpu or cuda; empty: cuda with GPUs, else cpu.
  std::string backend;
  /// fashion_mnist, synthetic, images:DIR: a folder with one sub-folder
  /// of JPEGs per class, or a glob under one (images:DIR/**/*.jpeg),
  /// decoded in the input pipeline (runtime/data/ImageFolder.h), or
  /// arrays:FILE.npz, arrays:X.npy,Y.npy, csv:FILE (ArraysDataset.h).
  std::string data = "fashion_mnist";
  /// csv: the label and the feature columns (empty features: the rest).
  std::vector<std::string> labelColumns;
  std::vector<std::string> featureColumns;
  std::string dataDir;
  /// What --eval and --eval-every evaluate on: empty, the test split of
  /// `data` (fashion_mnist, synthetic); or images:DIR. Image training data
  /// need it (a folder has no test split of its own).
  std::string evalData;
  /// Keras' validation_split (arrays only: the last fraction of the
  /// training examples, before any shuffle) or validation_data: evaluated
  /// at every epoch's end, logged as val_loss and val_<metric>. 0 / empty:
  /// none.
  double validationSplit = 0;
  std::string validationData;
  /// Keras' class_weight: CLASS:WEIGHT pairs (0:1,1:5) or a .json file of
  /// them (data/ClassWeights.h); the training examples' weights. Empty:
  /// none. Refused with a sample_weight array, as Keras refuses both.
  std::string classWeight;
  /// Image folders' class names in label order; empty: the sub-folders'
  /// names, sorted. Every sub-folder must then be one of them.
  std::vector<std::string> labels;
  /// Image folders: what the pixels become after the resize: unit ([0, 1]),
  /// caffe (keras.applications.vgg16.preprocess_input), tf ([-1, 1]:
  /// MobileNet, Inception, Xception, ResNetV2), torch (ImageNet's mean and
  /// deviation: DenseNet) or raw ([0, 255]).
  std::string preprocess = "unit";
  /// Image folders: the bilinear resize's convention, half-pixel (TF 2's
  /// tf.image.resize) or legacy (TF 1's resize_bilinear).
  std::string resize = "half-pixel";
  /// Image folders: leave out (or replace by the next good file of its
  /// class) a file that cannot be decoded, count it and list it at the end,
  /// instead of failing.
  bool skipBadImages = false;
  /// Image folders: decode at 1/2, 1/4 or 1/8 scale where the input allows
  /// (DCT scaling), faster on large files, instead of in full as
  /// tf.io.decode_jpeg does (the default: with the resize, the pixels of
  /// image_dataset_from_directory to float rounding).
  bool fastDecode = false;
  /// Image folders: threads that decode ahead of the step (0: one a core).
  int decodeThreads = 0;
  /// Training length: `steps` global steps in all (a resumed run's
  /// included), or `epochs` passes; -1: unset (one epoch).
  int64_t steps = -1;
  int64_t epochs = -1;
  /// Keras' fit(initial_epoch=): the number fit's callbacks give this
  /// job's first epoch (EarlyStopping's start_from_epoch, {epoch} in
  /// file names, the CSV log's and TensorBoard's epochs).
  int64_t initialEpoch = 0;
  /// Must equal the plan's global batch when set (> 0).
  int64_t batchSize = -1;
  uint64_t seed = 0;
  /// Examples in the shuffle buffer; -1: 5000, or a whole image folder (a
  /// folder is listed class by class).
  int64_t shuffleBuffer = -1;
  bool noShuffle = false;
  /// Keep the decoded training examples in memory after the first epoch.
  bool cache = false;
  /// Read only shard `shardIndex` of `shardCount` of the training data
  /// (tf.data's shard: examples i with i % count == index).
  int64_t shardCount = 1;
  int64_t shardIndex = 0;
  int64_t prefetch = 2;
  int64_t logEvery = 100;
  bool eval = false;
  int64_t evalEvery = 0;
  int64_t evalSteps = -1;
  /// Replaces the plan's learning rate (negative: keep it).
  double learningRate = -1;
  int64_t warmup = 5;
  std::string metrics;
  bool noCudaGraph = false;
  /// cpu: compute with subnormal floats instead of flushing them to zero
  /// (ExecutorOptions::flushDenormals).
  bool keepDenormals = false;
  /// fp32 or bf16: the type gradients cross between workers in
  /// (ExecutorOptions::allReduceWire; empty: fp32).
  std::string allReduceDtype;
  /// Steps kept launched at once (SessionOptions::stepsInFlight; 0: the
  /// backend's choice, 2 on a GPU).
  int stepsInFlight = 0;
  bool cacheOnDevice = false;
  /// fp32 or tf32: the GPU's convolutions and matrix products (empty:
  /// tf32). The host backends compute in fp32 whatever it says.
  std::string precision;
  double collectiveTimeoutSeconds = 60;
  std::string checkpointDir;
  /// -1: once per epoch; 0: only at the end.
  int64_t checkpointEvery = -1;
  int keepCheckpoints = 3;
  std::string initWeights;
  /// --init-weights-partial: load what matches by layer name and shape and
  /// leave the rest initial (Keras' by_name=True, skip_mismatch=True), for
  /// a new head on a pretrained base; the report says what was left.
  bool initWeightsPartial = false;
  /// The model's weights at the end, in the format the name asks for:
  /// .weights.h5 (Keras 3's save_weights, optimizer included), .h5
  /// (tf.keras 2's layout), .keras (a whole Keras model) or .safetensors;
  /// any other name is an error (KerasWeightsWriter.h).
  std::string saveWeights;
  /// --save-model: the whole model at the end, as model.save does (.keras;
  /// or .h5, the legacy layout).
  std::string saveModel;
  /// --checkpoint-format keras: besides the checkpoints a killed run
  /// resumes from, ModelCheckpoint's ckpt-<epoch>.keras at every epoch's
  /// end in --checkpoint-dir (epochs numbered from 1, as Keras' {epoch}).
  std::string checkpointFormat = "safetensors";
  /// fit's callbacks, with Keras' keys and defaults ("" takes them all;
  /// unset: off): FitCallbacks.h.
  std::optional<std::string> earlyStopping, reduceLrOnPlateau, checkpointBest;
  /// CSVLogger's file, TensorBoard's log directory (empty: off).
  std::string csvLog, tensorboard;
  std::string trace;
  /// Write every step's examples (their source positions) here; with
  /// several workers each writes its own (".rank<r>" before the extension).
  std::string dataOrder;
  bool progress = true;
  /// The NaN guard: off, or on the step's outputs (the default), or also on
  /// every variable after every step (--check-numerics).
  bool nanGuard = true;
  bool checkNumerics = false;
  /// Prediction instead of training (Keras' predict): the data to predict
  /// on ("fashion_mnist" or "synthetic": their test split; images:DIR, in
  /// the folder's listing order; arrays), and the .npy file the
  /// predictions go to (float32 [examples, outputs], in the data's order;
  /// a model of several outputs: an .npz of an array named after each, as
  /// Keras' predict returns one each; the examples' sources, a line each,
  /// in `predictions` + ".txt": an image's path, else "name#index").
  std::string predict;
  std::string predictions;
  /// The signals that stop the job at a whole step, write the checkpoint of
  /// that step and exit kPreemptedExitStatus (Preemption.h): names as
  /// `kill -l` prints them, comma-separated, or "none" (their default
  /// actions stay: the process ends at once).
  std::string preemptSignals = "TERM,USR1";
  /// The arrays memory:NAME specs name (--data, --eval-data,
  /// --validation-data, --predict): the Python module's NumPy arrays,
  /// borrowed, not copied, until the job converts them.
  std::shared_ptr<const data::InMemoryArrays> arrays;
};

/// A model's state between the jobs of one caller that trains, evaluates
/// and predicts in turn (the Python module's Trainer, as a Keras model keeps
/// its weights across fit, evaluate and predict): every variable, weights
/// and optimizer slots, in the plan's order, and the optimizer's step
/// (Keras' `optimizer.iterations`).
struct ModelState {
  std::vector<std::vector<char>> variables;
  /// Each variable's name ("<layer>/<weight>", a slot "<...>/<slot>") and
  /// Keras shape, as MirroredVariables reads them (set by the job).
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  int64_t step = 0;
  bool empty() const { return variables.empty(); }
};

/// What a job measured, for a caller that reads it rather than the log.
struct JobReport {
  using Logs = std::vector<std::pair<std::string, double>>;
  /// Each epoch's logs as fit's callbacks saw them (Keras' History: loss,
  /// the metrics, val_*, learning_rate under ReduceLROnPlateau).
  std::vector<std::map<std::string, double>> epochs;
  /// --eval's result: the loss, then each metric, over the whole set.
  Logs evaluation;
  /// --predict without --predictions: each output's [examples, width]
  /// floats, in the data's order (one, named "", for a model of one
  /// output).
  struct Prediction {
    std::string output;
    std::vector<float> values;
    int64_t width = 0;
  };
  std::vector<Prediction> predictions;
  /// The steps run, and the step timer's figures (0 before its warm-up
  /// ends): mean step seconds, examples per second, and the mean split of
  /// a step (input wait, hooks, the rest: the devices).
  int64_t steps = 0;
  double meanStepSeconds = 0, examplesPerSecond = 0;
  double inputSeconds = 0, hookSeconds = 0, computeSeconds = 0;
  /// Whether fit's callbacks stopped training (EarlyStopping).
  bool stoppedEarly = false;
  /// fit's callbacks' state at the end (FitCallbacksHook::saveState's
  /// JSON: EarlyStopping's wait, best and stopped_epoch, ModelCheckpoint's
  /// best, ...), which Keras' callback objects hold after fit; empty
  /// without callbacks.
  std::string callbacksState;
  /// Under ReduceLROnPlateau: the rate it left, which Keras' optimizer
  /// keeps for the next fit (JobOptions::learningRate carries it there).
  std::optional<double> learningRate;
};

/// What a caller that keeps a model across jobs passes along (all
/// optional).
struct JobIo {
  /// In: the state to start from (empty: as the flags say: the plan's
  /// initial values, a checkpoint, --init-weights); out: the state at the
  /// end, also after a preemption signal stopped the job at a step. A job
  /// that starts from a state numbers its epochs from that state's step,
  /// and reads its data from the start.
  ModelState *state = nullptr;
  JobReport *report = nullptr;
  /// The workers to run with, kept across jobs (null: joined for this job
  /// when launched by mpirun, else one).
  Workers *workers = nullptr;
};

/// Runs the job: its report goes to `out` (graphrun's stdout), warnings to
/// `err`. An error names the file or flag at fault and what to do; nothing
/// is left half-written. StatusCode::cancelled means, and means only, that
/// a preemption signal stopped every worker after the same step, the
/// chief's checkpoint written (the job has said so on `err`): graphrun
/// exits kPreemptedExitStatus, and the same command resumes the job.
Status runTrainingJob(const JobOptions &options, std::ostream &out,
                      std::ostream &err, const JobIo &io = {});

/// This process's workers: joined once through MPI when mpirun started it
/// (JobOptions::collectiveTimeoutSeconds' timeout), else a single worker;
/// kept until the process ends, for callers that run several jobs.
Status processWorkers(double collectiveTimeoutSeconds, Workers *&out);

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_TRAININGJOB_H
