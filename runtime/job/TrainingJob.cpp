//===- TrainingJob.cpp - one graphrun job, flags to weights ---------------===//
//
// A job in phases, so that a fault every worker finds is reported once and
// ends the job cleanly, and no worker trains while another has given up:
//
//   1. each worker checks what it alone can: devices, plan, data, paths;
//      the workers agree on the outcome (Workers::agree);
//   2. the workers compare their views of the job (plan, flags, data) and
//      refuse to start unless they are the same;
//   3. sessions; the chief restores a checkpoint or --init-weights and
//      broadcasts the state; the initial variables must be equal everywhere;
//   4. training. A failure now is one worker's: it reports it and aborts the
//      job (Workers::abort), since the others may be waiting for it.
//
// With one worker (graphrun started alone) phases 1 to 3 involve no
// collective and everything is as it always was.
//
//===----------------------------------------------------------------------===//

#include "runtime/job/TrainingJob.h"

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cuda/ConvAlgoCache.h"
#ifdef GRAPH_HAVE_CUDA
#include "runtime/backends/cuda/CudaDevice.h"
#endif
#include "runtime/backends/reference/ReferenceKernels.h"
#include "runtime/base/AtomicFile.h"
#include "runtime/base/HostMemory.h"
#include "runtime/base/ZipArchive.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/KerasWeights.h"
#include "runtime/checkpoint/KerasWeightsWriter.h"
#include "runtime/checkpoint/Npy.h"
#include "runtime/checkpoint/Weights.h"
#include "runtime/collectives/Workers.h"
#include "runtime/core/Device.h"
#include "runtime/core/Hooks.h"
#include "runtime/core/Session.h"
#include "runtime/data/ClassWeights.h"
#include "runtime/data/DataSource.h"
#include "runtime/data/Pipeline.h"
#include "runtime/data/SplitMix64.h"
#include "runtime/job/FitCallbacksHook.h"
#include "runtime/job/LogCutBack.h"
#include "runtime/job/Preemption.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace graph::runtime::job {

namespace ckpt = graph::runtime::checkpoint;
namespace fs = std::filesystem;

namespace {

/// The precision a host backend computes `program` in, for the start-up
/// line: fp32, or the reduced type a mixed-precision plan rounds its
/// activations to and, on the cpu backend, the kernels that take it.
std::string hostPrecision(const plan::Program &program, Backend backend) {
  bool bf16 = false, f16 = false;
  for (const plan::Buffer *b : *program.buffers()) {
    bf16 |= b->dtype() == plan::DType::bf16;
    f16 |= b->dtype() == plan::DType::f16;
  }
  std::string text = std::string(bf16  ? "mixed bf16"
                                 : f16 ? "mixed f16"
                                       : "fp32") +
                     " (" + backendName(backend);
  std::string path;
  if (bf16 && backend == Backend::cpu && cpu::describeBf16Path(path))
    text += ": " + path;
  return text + ")";
}

/// " loss = 0.25, accuracy = 0.9": an evaluation's values, each name after
/// `prefix` (Keras' val_ for validation).
std::string namedValues(const EvalResult &result, const std::string &prefix) {
  std::string text;
  for (size_t i = 0; i < result.names.size(); ++i) {
    char value[32];
    std::snprintf(value, sizeof value, "%.6f", result.values[i]);
    text += (i ? ", " : " ") + prefix + result.names[i] + " = " + value;
  }
  return text;
}

/// A file written in the format its name asks for (KerasWeightsWriter.h):
/// a known extension, a Keras format only from a plan that holds the
/// model's Keras config, and for a whole model (`wholeModel`) .keras or
/// .h5 alone.
Status checkWeightsOutput(const std::string &flag, const std::string &path,
                          const plan::Plan &plan, bool wholeModel) {
  ckpt::WeightsFileFormat format;
  if (Status s = ckpt::weightsFileFormat(path, format); !s)
    return Status::error(flag + " " + s.message());
  using F = ckpt::WeightsFileFormat;
  if (wholeModel && format != F::kerasModel && format != F::legacyH5)
    return Status::error(flag + " " + path +
                         ": a whole model is a .keras file (or a legacy "
                         ".h5); weights alone are --save-weights'");
  if (format != F::safetensors &&
      (!plan.keras_config() || plan.keras_config()->size() == 0))
    return Status::error(
        flag + " " + path +
        ": the plan holds no Keras config (the model was not imported "
        "from Keras JSON or a .keras file, or an older graphc compiled it); "
        "Keras' files are laid out after it: compile the plan again, or "
        "write .safetensors");
  return Status::ok();
}

std::string mebibytes(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB",
                static_cast<double>(bytes) / (1 << 20));
  return buf;
}

/// The devices a worker uses: --gpus N, --cpus N, or, with neither, every
/// GPU (one CPU replica when there is none).
struct Placement {
  Backend backend = Backend::cpu;
  int replicas = 1;
};

/// Why this process sees no CUDA GPU, for a message.
std::string noCudaGpuReason() {
  std::string why = "this graphrun was built without CUDA";
#ifdef GRAPH_HAVE_CUDA
  cuda::physicalGpuCount(&why);
#endif
  return why;
}

Status choosePlacement(const JobOptions &o, Placement &out) {
  // The GPU count starts the CUDA runtime: asked only when it decides.
  if (o.gpus > 0) {
    if (physicalDeviceCount(Backend::cuda) == 0)
      return Status::error("--gpus " + std::to_string(o.gpus) +
                           ": no CUDA GPU (" + noCudaGpuReason() +
                           "); run on CPU replicas with --cpus " +
                           std::to_string(o.gpus));
    if (!o.backend.empty() && o.backend != "cuda")
      return Status::error("--gpus runs the cuda backend, not --backend " +
                           o.backend + "; use --cpus for CPU backends");
    out = {Backend::cuda, o.gpus};
    return Status::ok();
  }
  // No count: every GPU there is (--backend cuda asks for them, and says
  // so when there is none).
  if (o.cpus == 0 && (o.backend.empty() || o.backend == "cuda")) {
    if (int gpus = physicalDeviceCount(Backend::cuda); gpus > 0) {
      out = {Backend::cuda, gpus};
      return Status::ok();
    }
    if (o.backend == "cuda")
      return Status::error("--backend cuda: no CUDA GPU (" + noCudaGpuReason() +
                           "); run on CPU replicas with --cpus N");
  }
  out.replicas = o.cpus > 0 ? o.cpus : 1;
  std::optional<Backend> backend =
      o.backend.empty() ? Backend::cpu : parseBackend(o.backend);
  if (!backend)
    return Status::error("--backend " + o.backend +
                         ": unknown backend (reference, cpu or cuda)");
  out.backend = *backend;
  if (out.backend == Backend::cuda)
    return Status::error("--backend cuda runs on GPUs: use --gpus N, not "
                         "--cpus");
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

/// The examples a shard of `examples` holds (tf.data's shard).
int64_t shardSize(int64_t examples, int64_t count, int64_t index) {
  return examples > index ? (examples - index + count - 1) / count : 0;
}

/// FNV-1a, for comparing plans and variables across workers.
uint64_t fnv1a(const void *data, size_t bytes,
               uint64_t h = 1469598103934665603ULL) {
  const auto *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < bytes; ++i)
    h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

/// Worker rank's own output file (--trace, --data-order): the path itself
/// on the chief, "t.rank1.json" for "t.json" on worker 1.
std::string workerPath(const std::string &path, int rank) {
  if (rank == 0)
    return path;
  fs::path p(path);
  return (p.parent_path() / (p.stem().string() + ".rank" +
                             std::to_string(rank) + p.extension().string()))
      .string();
}

/// An ostream that discards: the non-chief workers' report.
class NullStream : public std::ostream {
public:
  NullStream() : std::ostream(nullptr) {}
};

/// Whether the plan trains with Keras' use_ema (a hyper-parameter
/// `use_ema` = 1 and slots `<var>/average`).
/// The classes a program's class loss predicts: the last dimension of what
/// its cross-entropy kernel reads first (the logits or the probabilities);
/// 0 when it has none.
int32_t lossClasses(const plan::Program &program) {
  if (!program.ops() || !program.buffers())
    return 0;
  for (const plan::Op *op : *program.ops()) {
    if (op->kind() != plan::OpKind::launch || !op->kernel() || !op->ins() ||
        op->ins()->size() == 0)
      continue;
    const std::string kernel = op->kernel()->str();
    if (kernel != "softmax_cross_entropy" &&
        kernel != "sparse_categorical_crossentropy")
      continue;
    if (static_cast<uint32_t>(op->ins()->Get(0)) >= program.buffers()->size())
      return 0;
    const plan::Buffer *b = program.buffers()->Get(op->ins()->Get(0));
    if (b && b->shape() && b->shape()->size() > 0)
      return static_cast<int32_t>(b->shape()->Get(b->shape()->size() - 1));
  }
  return 0;
}

bool usesEma(const plan::Plan &p) {
  return trainingHyperParameter(p, "use_ema", 0) != 0;
}

/// The classes output `name` of a model of several outputs predicts: the
/// last dimension of its predictions ("predictions:<name>") in the first
/// program that outputs them; 0 when none does.
int32_t outputClasses(const plan::Plan &plan, const std::string &name) {
  const std::string output = "predictions:" + name;
  for (const plan::Program *program : *plan.programs()) {
    if (!program->ops() || !program->buffers())
      continue;
    for (const plan::Op *op : *program->ops()) {
      if (op->kind() != plan::OpKind::output || !op->name() ||
          op->name()->str() != output || !op->ins() || op->ins()->size() == 0 ||
          static_cast<uint32_t>(op->ins()->Get(0)) >=
              program->buffers()->size())
        continue;
      const plan::Buffer *b = program->buffers()->Get(op->ins()->Get(0));
      if (b && b->shape() && b->shape()->size() > 1)
        return static_cast<int32_t>(b->shape()->Get(b->shape()->size() - 1));
    }
  }
  return 0;
}

/// Copies every `<var>/average` slot into `<var>`, on every device.
Status finalizeEma(MirroredVariables &vars) {
  std::vector<char> buffer;
  for (int v = 0; v < vars.count(); ++v) {
    int average = vars.find(vars.name(v) + "/average");
    if (average < 0)
      continue;
    buffer.resize(static_cast<size_t>(vars.bytes(average)));
    if (Status s = vars.read(average, buffer.data()); !s)
      return s;
    if (Status s = vars.write(v, buffer.data()); !s)
      return Status::error("use_ema: setting '" + vars.name(v) +
                           "' to its average: " + s.message());
  }
  return Status::ok();
}

class TrainingJob {
public:
  /// `signals`: the preemption signals' handlers (null: none).
  TrainingJob(const JobOptions &o, Workers &workers, std::ostream &out,
              std::ostream &err, PreemptionSignals *signals = nullptr,
              const JobIo &io = {})
      : o_(o), workers_(workers), chief_(workers.isChief()),
        out_(chief_ ? out : null_), err_(err), signals_(signals), io_(io) {}

  /// Phases 1 to 3. A failure every worker agrees on comes back on every
  /// worker; `reportedBy` says which one prints it.
  Status setUp(int &reportedBy);
  /// Phase 4 and the end: train, evaluate, save.
  Status run();
  /// Whether run() ended on a preemption signal (every worker after the
  /// same step).
  bool preempted() const { return preempted_; }
  /// JobIo::state: the variables and the step from it (on every worker,
  /// which all hold the same), or into it at the end.
  Status adoptState(const ModelState &state);
  Status captureState(ModelState &state);

private:
  void warn(const std::string &message) {
    if (!chief_)
      return;
    out_.flush();
    err_ << "graphrun: warning: " << message << "\n";
    err_.flush();
  }
  int workerCount() const { return workers_.size(); }
  /// The checks of phase 1, on this worker alone.
  Status checkLocally();
  Status chooseGpus();
  /// The last evaluation's confusion matrix, as a table.
  void printConfusion();
  /// --predict's checks, in place of the training data's.
  Status checkPrediction();
  /// --predict: the predictions of every example, to the .npy file.
  Status predict();
  /// Phase 2: every worker's view of the job, compared with the chief's.
  Status compareWorkers();
  /// Phase 3's state: the chief's checkpoint or --init-weights, sent to
  /// every worker; the initial variables, checked equal.
  Status restoreState(int &reportedBy);
  /// After --init-weights read a Keras 3 file (`format`, WeightsReport's):
  /// its optimizer's slots too, and its iterations as `step` and `origin`.
  Status loadKerasOptimizer(const std::string &format, int64_t &step,
                            int64_t &origin);
  Status broadcastVariables();
  /// The chief's resumedExtra_, to every worker.
  Status broadcastExtraState();
  /// Continues the fit callbacks from the checkpoint this run resumed.
  Status resumeFitCallbacks(FitCallbacksHook &hook);
  /// Cuts --metrics back to the size the resumed checkpoint recorded.
  Status cutMetricsFile();
  std::string dataDescription() const;
  Status evaluate(int64_t step, bool final);
  /// One pass over `source` (this worker's shard, the last batch padded
  /// and its padding weighted 0) into `out`.
  Status evaluateOn(const data::DataSource &source, int64_t maxBatches,
                    EvalResult &out);
  /// Keras' per-epoch validation, at the end of epoch `step /
  /// stepsPerEpoch`: val_loss and val_<metric>, printed, logged and added
  /// to `logs`.
  Status validate(int64_t step, int64_t stepsPerEpoch, EpochLogs &logs);
  /// fit's callbacks (--early-stopping, --reduce-lr-on-plateau,
  /// --checkpoint-best, --csv-log, --tensorboard, --checkpoint-format
  /// keras) and the per-epoch validation, as one hook; null when the run
  /// has none of them.
  Status makeFitCallbacks(int64_t stepsPerEpoch,
                          std::unique_ptr<FitCallbacksHook> &out);
  /// What Keras' files hold besides the variables, now.
  ckpt::KerasModelState kerasState(double learningRate) const {
    return {loaded_.plan, session_->globalStep(), learningRate};
  }
  /// The plan's constant learning rate (or --learning-rate's).
  double planLearningRate() const;
  /// --cache over an image folder: whether this worker's decoded shard fits
  /// in the memory available, saying so either way.
  bool cacheFits();
  /// --skip-bad-images: the files skipped, at the end.
  void reportSkipped();

  const JobOptions &o_;
  Workers &workers_;
  bool chief_;
  NullStream null_;
  std::ostream &out_;
  std::ostream &err_;
  PreemptionSignals *signals_;
  JobIo io_;
  bool preempted_ = false;
  /// The global step this job's data and epochs start from: 0, or the
  /// step of the state a JobIo handed over (ModelState).
  int64_t stepOrigin_ = 0;

  Placement placement_;
  int firstGpu_ = 0; // this worker's first GPU on its host
  LoadedPlan loaded_;
  int64_t globalBatch_ = 0, localBatch_ = 0;
  /// What opening a data flag takes: the flags, and the plan's input.
  data::DataSourceOptions sourceOptions(bool labelled) const {
    data::DataSourceOptions so;
    so.dataDir = o_.dataDir;
    so.seed = o_.seed;
    so.preprocess = o_.preprocess;
    so.resize = o_.resize;
    so.skipBadImages = o_.skipBadImages;
    so.fastDecode = o_.fastDecode;
    so.decodeThreads = o_.decodeThreads;
    data::ArraysOptions &a = so.arrays;
    a.inputName = inputName_;
    a.classes = sparseLabels2d_ ? classes_ : indexClasses_;
    a.targetShape = targetShape_;
    a.needsLabels = labelled;
    a.labelColumns = o_.labelColumns;
    a.featureColumns = o_.featureColumns;
    a.inMemory = o_.arrays;
    a.inputs = multiInputs_;
    a.outputs = multiOutputs_;
    const auto *outputs = loaded_.plan->training()->outputs();
    if (outputs && outputs->size() == 1 && outputs->Get(0)->has_ignore_class())
      a.ignoreClass = outputs->Get(0)->ignore_class();
    // Categorical cross-entropy takes class probabilities (soft labels).
    a.softLabels = loaded_.plan->training()->loss() ==
                   plan::LossKind::categorical_crossentropy;
    if (int64_t available = availableMemory(); available > 0)
      a.inMemoryBytes = std::min<int64_t>(a.inMemoryBytes, available / 4);
    return so;
  }
  data::ExampleShape shape_;
  /// The model input graphrun feeds (the plan's name for it).
  std::string inputName_;
  /// A model of several inputs: each one's name and example shape, in plan
  /// order (shape_ is then their elements side by side); else empty.
  std::vector<std::pair<std::string, data::ExampleShape>> multiInputs_;
  /// A model of several outputs: each one's labels, in plan order (the
  /// targets are their columns side by side, targetShape_ their width);
  /// else empty.
  std::vector<data::ArraysOptions::Output> multiOutputs_;
  /// With an element-wise loss, one example's targets (else empty).
  data::ExampleShape targetShape_;
  int32_t classes_ = 10;
  /// With class-index labels ([batch]): the classes the loss predicts, which
  /// arrays' labels must stay below (0: unknown).
  int32_t indexClasses_ = 0;
  bool sparseLabels2d_ = false;
  std::optional<data::DataSource> train_, test_;
  /// --validation-split or --validation-data: evaluated every epoch.
  std::optional<data::DataSource> validation_;
  int64_t epochExamples_ = 0; // the job's epoch (a single worker's --shard)
  int64_t shuffleBuffer_ = 5000;
  std::unique_ptr<Session> session_;
  ckpt::RunState runState_;
  std::optional<ckpt::CheckpointManager> checkpoints_;
  bool resumed_ = false;
  /// What the resumed checkpoint holds beyond the variables: the fit
  /// callbacks' state, and the file it came from.
  ckpt::ExtraState resumedExtra_;
  std::string resumedFrom_;
  // Evaluation, shared by --eval-every and --eval.
  std::unique_ptr<MetricsFileHook> metrics_;
  std::ofstream metricsFile_;
  bool showProgress_ = false;
  EvalResult lastEval_;
  int64_t lastEvalStep_ = -1;
};

/// Workers that share a host take disjoint GPUs of it, in rank order
/// (NCCL refuses one GPU in two ranks), unless the launcher already gave
/// each its own through CUDA_VISIBLE_DEVICES (Slurm's --gpus-per-task, one
/// MPI Operator pod per worker).
Status TrainingJob::chooseGpus() {
  if (placement_.backend != Backend::cuda)
    return Status::ok();
  const std::string &host = workers_.host(workers_.rank());
  int here = 0, before = 0;
  for (int w = 0; w < workerCount(); ++w)
    if (workers_.host(w) == host) {
      ++here;
      before += w < workers_.rank();
    }
  if (here == 1)
    return Status::ok();
  int present = physicalDeviceCount(Backend::cuda);
  if (present >= here * placement_.replicas) {
    firstGpu_ = before * placement_.replicas;
    return Status::ok();
  }
  if (std::getenv("CUDA_VISIBLE_DEVICES"))
    return Status::ok();
  return Status::error(
      std::to_string(here) + " workers on host " + host + " with --gpus " +
      std::to_string(placement_.replicas) + " each need " +
      std::to_string(here * placement_.replicas) + " GPUs; it has " +
      std::to_string(present) +
      ": start fewer workers per host, or give each its own GPUs with "
      "CUDA_VISIBLE_DEVICES");
}

Status TrainingJob::checkLocally() {
  if (o_.shardCount < 1 || o_.shardIndex < 0 || o_.shardIndex >= o_.shardCount)
    return Status::error("--shard " + std::to_string(o_.shardIndex) + "/" +
                         std::to_string(o_.shardCount) +
                         ": the index must lie in [0, count)");
  if (workerCount() > 1 && o_.shardCount > 1)
    return Status::error("--shard " + std::to_string(o_.shardIndex) + "/" +
                         std::to_string(o_.shardCount) +
                         ": a job of several workers shards the data by "
                         "worker itself; drop --shard");
  if (Status s = choosePlacement(o_, placement_); !s)
    return s;
  if (Status s = chooseGpus(); !s)
    return s;
  Backend backend = placement_.backend;
  if (!o_.precision.empty() && !parsePrecision(o_.precision))
    return Status::error("--precision " + o_.precision +
                         ": unknown precision (fp32 or tf32)");
  if (!o_.allReduceDtype.empty() && o_.allReduceDtype != "fp32" &&
      o_.allReduceDtype != "bf16")
    return Status::error("--allreduce-dtype " + o_.allReduceDtype +
                         ": expected fp32 or bf16");
  if (KernelRegistry::global().names(backend).empty())
    return Status::error(std::string("backend ") + backendName(backend) +
                         ": no kernels of that backend are in this build; "
                         "use --backend reference");

  if (Status s = loadPlan(o_.plan, loaded_); !s)
    return s;
  const plan::Plan &p = *loaded_.plan;
  // The model's input and the labels, as the plan declares them (the
  // steps' row weights are the runtime's own).
  const plan::Input *features = nullptr, *labels = nullptr;
  std::vector<const plan::Input *> modelInputs;
  for (const plan::Input *in : *p.inputs()) {
    std::string name = in->name()->str();
    if (name == "labels")
      labels = in;
    else if (!isStepInput(name))
      modelInputs.push_back(in);
  }
  if (!modelInputs.empty())
    features = modelInputs.front();
  for (const plan::Input *in : modelInputs) {
    if (in->shape()->size() < 2)
      return Status::error(o_.plan + ": input '" + in->name()->str() +
                           "' has no example dimension after the batch's");
    if (in->dtype() != plan::DType::f32)
      return Status::error(o_.plan + ": input '" + in->name()->str() + "' is " +
                           plan::EnumNameDType(in->dtype()) +
                           "; graphrun feeds float32 inputs");
  }
  if (!features)
    return Status::error(o_.plan + ": graphrun feeds one input of examples "
                                   "(a batch dimension and the example's); "
                                   "the plan has none");
  // A model of several inputs (the functional API's dict) takes them from
  // arrays named after them, each example's rows side by side
  // (ArraysDataset.h's multi-input form).
  if (modelInputs.size() > 1) {
    std::string names;
    for (const plan::Input *in : modelInputs)
      names += (names.empty() ? "'" : ", '") + in->name()->str() + "'";
    // (--predict reads its data alone.)
    for (const std::string *spec : {o_.predict.empty() ? &o_.data : &o_.predict,
                                    &o_.evalData, &o_.validationData})
      if (!spec->empty() &&
          !(data::isArraysSpec(*spec) && !spec->starts_with("csv:")))
        return Status::error(o_.plan + ": the model has several inputs (" +
                             names + "); " + *spec +
                             " holds one: give arrays named after each input, "
                             "arrays:FILE.npz (np.savez(f, " +
                             modelInputs[0]->name()->str() +
                             "=..., ..., y=...))");
    if (placement_.backend == Backend::cuda || o_.cacheOnDevice)
      return Status::error(o_.plan + ": the model has several inputs (" +
                           names +
                           "): the cuda backend and --cache-on-device "
                           "feed one input yet; use --backend cpu");
    for (const plan::Input *in : modelInputs)
      multiInputs_.push_back(
          {in->name()->str(),
           data::ExampleShape(std::vector<int64_t>(in->shape()->begin() + 1,
                                                   in->shape()->end()))});
  }
  globalBatch_ = features->shape()->Get(0);
  if (o_.batchSize > 0 && o_.batchSize != globalBatch_)
    return Status::error("--batch-size " + std::to_string(o_.batchSize) + ": " +
                         o_.plan + " was compiled for a global batch of " +
                         std::to_string(globalBatch_) +
                         "; recompile it with graph-import --batch-size " +
                         std::to_string(o_.batchSize) + " and graphc");
  inputName_ = features->name()->str();
  shape_ = data::ExampleShape(std::vector<int64_t>(
      features->shape()->begin() + 1, features->shape()->end()));
  if (!multiInputs_.empty()) {
    int64_t elements = 0;
    for (const auto &[name, shape] : multiInputs_)
      elements += shape.elements();
    shape_ = data::ExampleShape(std::vector<int64_t>{elements});
  }
  // A model of several outputs takes each output's labels from an array
  // named after it, side by side as targets (ArraysDataset.h).
  const auto *outputs = p.training()->outputs();
  if (outputs && outputs->size() > 1) {
    std::string names;
    for (const plan::Output *out : *outputs)
      names += (names.empty() ? "'" : ", '") + out->name()->str() + "'";
    for (const std::string *spec : {o_.predict.empty() ? &o_.data : &o_.predict,
                                    &o_.evalData, &o_.validationData})
      if (!spec->empty() &&
          !(data::isArraysSpec(*spec) && !spec->starts_with("csv:")))
        return Status::error(o_.plan + ": the model has several outputs (" +
                             names + "); " + *spec +
                             " holds one label each: give arrays named after "
                             "each output, arrays:FILE.npz");
    if (placement_.backend == Backend::cuda || o_.cacheOnDevice)
      return Status::error(o_.plan + ": the model has several outputs (" +
                           names +
                           "): the cuda backend and --cache-on-device feed "
                           "one output's labels yet; use --backend cpu");
    if (!o_.classWeight.empty())
      return Status::error("--class-weight: the model has several outputs (" +
                           names +
                           "); Keras' class_weight is for a model of one "
                           "output only");
    int64_t width = 0;
    for (const plan::Output *out : *outputs) {
      const plan::Input *in = nullptr;
      for (const plan::Input *candidate : *p.inputs())
        if (candidate->name()->str() == out->labels()->str())
          in = candidate;
      data::ArraysOptions::Output o;
      o.name = out->name()->str();
      if (out->has_ignore_class())
        o.ignoreClass = out->ignore_class();
      using Kind = data::ArraysOptions::Output::Kind;
      std::vector<int64_t> dims(in->shape()->begin() + 1, in->shape()->end());
      if (in->dtype() == plan::DType::i32) {
        o.kind = Kind::indices;
        o.shape = data::ExampleShape({1});
        o.classes = outputClasses(p, o.name);
      } else if (out->loss() == plan::LossKind::categorical_crossentropy) {
        o.kind = Kind::oneHot;
        o.shape = data::ExampleShape(dims);
        o.classes = static_cast<int32_t>(dims.empty() ? 1 : dims.back());
      } else {
        o.kind = Kind::targets;
        o.shape = data::ExampleShape(dims);
      }
      width += o.shape.elements();
      multiOutputs_.push_back(std::move(o));
    }
    targetShape_ = data::ExampleShape(std::vector<int64_t>{width});
  } else if (labels && takesTargets(p)) {
    // An element-wise loss takes targets of the output's shape; the class
    // losses class labels, one-hot rows when the labels are [batch,
    // classes].
    targetShape_ = data::ExampleShape(std::vector<int64_t>(
        labels->shape()->begin() + 1, labels->shape()->end()));
  } else {
    sparseLabels2d_ = labels && labels->shape()->size() == 2;
    if (sparseLabels2d_)
      classes_ = static_cast<int32_t>(labels->shape()->Get(1));
  }
  // The job's replicas: every worker's, each running its slice of the
  // program for all of them.
  int total = placement_.replicas * workerCount();
  const plan::Program *program = nullptr;
  if (Status s =
          findProgram(p, plan::ProgramKind::train, total, o_.plan, program);
      !s)
    return workerCount() > 1
               ? Status::error(std::to_string(workerCount()) + " workers x " +
                               std::to_string(placement_.replicas) +
                               " replicas: " + s.message())
               : s;
  localBatch_ = globalBatch_ / workerCount();
  // Class indices are checked against the classes the loss predicts before
  // step 1 (a label past them fails the loss kernel at the first step).
  if (!sparseLabels2d_ && targetShape_.rank() == 0)
    indexClasses_ = lossClasses(*program);

  // Every output path, before anything trains: the chief's outputs, and
  // each worker's own trace.
  if (chief_) {
    for (const auto &[flag, path] :
         {std::pair{"--save-weights", &o_.saveWeights},
          std::pair{"--save-model", &o_.saveModel},
          std::pair{"--metrics", &o_.metrics},
          std::pair{"--csv-log", &o_.csvLog}})
      if (!path->empty())
        if (Status s = checkOutputFile(flag, *path); !s)
          return s;
    for (const auto &[flag, path, whole] :
         {std::tuple{"--save-weights", &o_.saveWeights, false},
          std::tuple{"--save-model", &o_.saveModel, true}})
      if (!path->empty())
        if (Status s = checkWeightsOutput(flag, *path, p, whole); !s)
          return s;
    if (o_.checkpointFormat != "safetensors" && o_.checkpointFormat != "keras")
      return Status::error("--checkpoint-format " + o_.checkpointFormat +
                           ": safetensors or keras");
    if (o_.checkpointFormat == "keras") {
      if (o_.checkpointDir.empty())
        return Status::error("--checkpoint-format keras writes "
                             "ckpt-<epoch>.keras into --checkpoint-dir: give "
                             "one");
      if (Status s =
              checkWeightsOutput("--checkpoint-format keras",
                                 o_.checkpointDir + "/ckpt-1.keras", p, true);
          !s)
        return s;
    }
    if (!o_.tensorboard.empty())
      for (const char *sub : {"train", "validation"}) {
        std::error_code ec;
        fs::path dir = fs::path(o_.tensorboard) / sub;
        fs::create_directories(dir, ec);
        if (ec || !fs::is_directory(dir, ec))
          return Status::error("--tensorboard " + o_.tensorboard +
                               ": cannot create " + dir.string() +
                               (ec ? ": " + ec.message() : ""));
      }
    if (!o_.checkpointDir.empty()) {
      std::error_code ec;
      fs::create_directories(o_.checkpointDir, ec);
      if (ec || !fs::is_directory(o_.checkpointDir, ec))
        return Status::error("--checkpoint-dir " + o_.checkpointDir +
                             ": cannot create the directory" +
                             (ec ? ": " + ec.message() : ""));
    }
  }
  for (const auto &[flag, path] : {std::pair{"--trace", &o_.trace},
                                   std::pair{"--data-order", &o_.dataOrder}})
    if (!path->empty())
      if (Status s = checkOutputFile(flag, workerPath(*path, workers_.rank()));
          !s)
        return s;

  // The data: the training set, and the test set now rather than after
  // training when the run evaluates.
  // Prediction reads no label: its data's classes are not checked.
  auto checkFits = [&](const data::DataSource &ds,
                       bool labelled = true) -> Status {
    if (!(ds.shape() == shape_))
      return Status::error(ds.name() + ": examples are " + ds.shape().str() +
                           ", the plan's input is " + shape_.str());
    if (labelled && ds.numClasses() != classes_ && sparseLabels2d_)
      return Status::error(ds.name() + ": " + std::to_string(ds.numClasses()) +
                           " classes, the plan's labels have " +
                           std::to_string(classes_));
    return Status::ok();
  };
  // An image folder's classes and counts, once, before anything runs.
  auto describe = [&](const char *role, const data::DataSource &ds) {
    if (ds.images)
      out_ << "graphrun: " << role << ": " << ds.images->summary() << "\n";
  };
  if (o_.cacheOnDevice && data::isImageFolder(o_.data))
    return Status::error("--cache-on-device keeps the training set, decoded, "
                         "in device memory; " +
                         o_.data +
                         " is decoded in the pipeline: use --cache to keep "
                         "the decoded images in host memory");
  if (!o_.predict.empty()) {
    // The data predicted on stands in for the training data: the job
    // steps through it once, in order.
    train_.emplace();
    if (Status s = data::openDataSource(sourceOptions(false), o_.predict, true,
                                        shape_, classes_, o_.labels, *train_);
        !s)
      return Status::error("--predict " + o_.predict + ": " + s.message());
    if (Status s = checkFits(*train_, false); !s)
      return Status::error("--predict " + o_.predict + ": " + s.message());
    if (train_->size() == 0)
      return Status::invalidInput("--predict " + o_.predict +
                                  ": no example to predict");
    describe("--predict", *train_);
    return checkPrediction();
  }
  train_.emplace();
  if (Status s = data::openDataSource(sourceOptions(true), o_.data, false,
                                      shape_, classes_, o_.labels, *train_);
      !s)
    return data::isImageFolder(o_.data) || data::isArraysSpec(o_.data)
               ? Status::error("--data: " + s.message())
               : s;
  if (Status s = checkFits(*train_); !s)
    return s;
  if (o_.cacheOnDevice && !train_->inMemory())
    return Status::error("--cache-on-device keeps the training set in device "
                         "memory; " +
                         train_->name() +
                         " is too large to hold in host memory and stays "
                         "mapped: drop --cache-on-device");
  describe("training data", *train_);
  if (o_.validationSplit > 0) {
    validation_.emplace();
    if (Status s =
            data::splitValidation(*train_, o_.validationSplit, *validation_);
        !s)
      return s;
  } else if (!o_.validationData.empty()) {
    validation_.emplace();
    std::vector<std::string> names = o_.labels;
    if (train_->images && data::isImageFolder(o_.validationData))
      names = train_->images->classNames();
    if (Status s =
            data::openDataSource(sourceOptions(true), o_.validationData, true,
                                 shape_, classes_, names, *validation_);
        !s)
      return Status::error("--validation-data " + o_.validationData + ": " +
                           s.message());
    if (Status s = checkFits(*validation_); !s)
      return Status::error("--validation-data: " + s.message());
  }
  // class_weight weighs the training examples only, after the split, as
  // Keras' data adapter does.
  if (!o_.classWeight.empty()) {
    if (train_->weights)
      return Status::error(
          "--class-weight: " + o_.data +
          " holds a sample_weight array; Keras takes one or the other, not "
          "both (drop --class-weight, or the array)");
    data::ClassWeights weights;
    if (Status s = data::parseClassWeights(o_.classWeight, weights); !s)
      return s;
    if (Status s =
            data::classWeightsPerExample(*train_, weights, train_->weights);
        !s)
      return s;
  }
  if (validation_ &&
      shardSize(validation_->size(), workerCount(), workers_.rank()) == 0)
    return Status::error("the validation data: " + validation_->name() +
                         " holds " + std::to_string(validation_->size()) +
                         " examples, none for " +
                         workers_.name(workers_.rank()));
  // A folder is listed class by class: only a buffer of all of it mixes the
  // classes. Arrays are shuffled whole every epoch, as Keras' fit(x, y,
  // shuffle=True) permutes them (arrays sorted by class train far worse
  // through a smaller buffer). Over data that is read at a position (in
  // memory, an example list) the buffer holds positions, 8 bytes an
  // example, unless --cache puts copies before it. The IDX files and
  // synthetic data keep the seed's tf.data recipe, shuffle(5000).
  const bool wholeShuffle = !train_->inMemory() || data::isArraysSpec(o_.data);
  shuffleBuffer_ = o_.shuffleBuffer > 0 ? o_.shuffleBuffer
                   : wholeShuffle       ? std::max<int64_t>(1, train_->size())
                                        : 5000;
  bool evaluates = o_.eval || o_.evalEvery > 0;
  if (!o_.evalData.empty() && !evaluates)
    return Status::error("--eval-data " + o_.evalData +
                         ": evaluated only with --eval or --eval-every; add "
                         "one, or drop --eval-data");
  if (evaluates) {
    std::string spec = o_.evalData.empty() ? o_.data : o_.evalData;
    if (o_.evalData.empty() && data::isImageFolder(o_.data))
      return Status::error("--eval with --data " + o_.data +
                           ": an image folder has no test split of its own; "
                           "name the folder to evaluate on with --eval-data "
                           "images:DIR");
    if (o_.evalData.empty() && data::isArraysSpec(o_.data))
      return Status::error("--eval with --data " + o_.data +
                           ": arrays have no test split of their own; name "
                           "the test arrays with --eval-data (Keras' "
                           "evaluate(x_test, y_test))");
    // The test folder's labels are the training folder's: the same names
    // in the same order, whatever else the test folder holds.
    std::vector<std::string> names = o_.labels;
    if (train_->images && data::isImageFolder(spec))
      names = train_->images->classNames();
    test_.emplace();
    // Arrays in memory evaluated as they are trained on (the Python
    // module's evaluate(x, y), which trains 0 steps) are converted once.
    if (spec == o_.data && spec.starts_with("memory:") && train_->inMemory() &&
        !validation_)
      *test_ = *train_;
    else if (Status s = data::openDataSource(sourceOptions(true), spec, true,
                                             shape_, classes_, names, *test_);
             !s)
      return Status::error(
          "the test set (--eval" +
          (o_.evalData.empty() ? std::string() : "-data " + o_.evalData) +
          "): " + s.message());
    if (Status s = checkFits(*test_); !s)
      return Status::error("the test set (--eval): " + s.message());
    // (Class indices from arrays count their classes by the largest label,
    // which a test set may lack.)
    if (test_->numClasses() != train_->numClasses() &&
        !(data::isArraysSpec(spec) && !sparseLabels2d_ &&
          targetShape_.rank() == 0))
      return Status::error("the test set (--eval): " + test_->name() + " has " +
                           std::to_string(test_->numClasses()) +
                           " classes, the training data " +
                           std::to_string(train_->numClasses()));
    describe("test data", *test_);
    if (shardSize(test_->size(), workerCount(), workers_.rank()) == 0)
      return Status::error("the test set (--eval): " + test_->name() +
                           " holds " + std::to_string(test_->size()) +
                           " examples, none for " +
                           workers_.name(workers_.rank()));
  }
  // The epoch this worker passes over: the whole training set with several
  // workers (each runs the job's shuffle of all of it and takes its rows of
  // every global batch), else its --shard of it.
  epochExamples_ = workerCount() > 1 ? train_->size()
                                     : shardSize(train_->size(), o_.shardCount,
                                                 o_.shardIndex);
  if (o_.steps != 0 && epochExamples_ == 0) {
    std::string which = o_.shardCount > 1 && workerCount() == 1
                            ? " in shard " + std::to_string(o_.shardIndex) +
                                  "/" + std::to_string(o_.shardCount)
                            : std::string();
    return Status::error(train_->name() + ": no training example" + which +
                         ": nothing to train on");
  }
  return Status::ok();
}

Status TrainingJob::compareWorkers() {
  if (workerCount() < 2)
    return Status::ok();
  // Everything that must be the same on every worker, one field a line.
  std::ostringstream view;
  view << "plan=" << std::hex
       << fnv1a(loaded_.bytes.data(), loaded_.bytes.size()) << std::dec << " ("
       << o_.plan << ")\n"
       << "replicas per worker=" << placement_.replicas << "\n"
       << "backend=" << backendName(placement_.backend) << "\n"
       << "seed=" << o_.seed << "\n"
       << "steps=" << o_.steps << "\n"
       << "epochs=" << o_.epochs << "\n"
       << "learning rate=" << o_.learningRate << "\n"
       << "shuffle=" << (o_.noShuffle ? -1 : shuffleBuffer_) << "\n"
       << "cache=" << o_.cache << "\n"
       << "eval=" << o_.eval << "/" << o_.evalEvery << "/" << o_.evalSteps
       << "\n"
       << "checkpoint every=" << o_.checkpointEvery << "\n"
       << "collective timeout=" << o_.collectiveTimeoutSeconds << "\n"
       << "precision=" << o_.precision << "\n"
       << "allreduce dtype="
       << (o_.allReduceDtype.empty() ? "fp32" : o_.allReduceDtype) << "\n"
       << "nan guard=" << o_.nanGuard << "/" << o_.checkNumerics << "\n"
       << "preempt signals=" << o_.preemptSignals << "\n"
       << "training data=" << o_.data << ", " << train_->size() << " examples\n"
       << "images=" << o_.preprocess << "/" << o_.resize << "/"
       << o_.skipBadImages << "/" << o_.fastDecode << "\n"
       << "test data=" << (test_ ? std::to_string(test_->size()) : "none")
       << " examples\n"
       << "class weights=" << o_.classWeight << "\n"
       << "validation=" << o_.validationSplit << "/" << o_.validationData
       << ", " << (validation_ ? std::to_string(validation_->size()) : "none")
       << " examples\n";
  std::vector<std::string> all;
  if (Status s = workers_.allGather(view.str(), all); !s)
    return s;
  auto lines = [](const std::string &text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
      out.push_back(line);
    return out;
  };
  std::vector<std::string> chief = lines(all[0]);
  for (int w = 1; w < workerCount(); ++w) {
    std::vector<std::string> mine = lines(all[w]);
    for (size_t k = 0; k < std::max(mine.size(), chief.size()); ++k) {
      std::string a = k < chief.size() ? chief[k] : "",
                  b = k < mine.size() ? mine[k] : "";
      // The plan by its bytes, not its path (named for the message): the
      // Python module's workers each hold their own copy of it.
      auto compared = [](const std::string &line) {
        return line.starts_with("plan=") ? line.substr(0, line.find(" ("))
                                         : line;
      };
      if (compared(a) != compared(b))
        return Status::error(
            "the workers disagree: " + workers_.name(w) + " has " + b + ", " +
            workers_.name(0) + " has " + a +
            ": every worker must run the same plan with the same flags and "
            "the same data");
    }
  }
  return Status::ok();
}

std::string TrainingJob::dataDescription() const {
  // Not the worker count: every shape of job orders the data alike (one
  // shuffle of the whole set, cut into global batches), so a checkpoint of
  // W x R replicas resumes on W' x R'.
  std::string shard;
  if (workerCount() == 1 && o_.shardCount > 1)
    shard = ", shard " + std::to_string(o_.shardIndex) + "/" +
            std::to_string(o_.shardCount);
  return o_.data + shard +
         (o_.noShuffle ? ", file order"
                       : ", shuffle buffer " + std::to_string(shuffleBuffer_));
}

Status TrainingJob::broadcastVariables() {
  MirroredVariables &vars = session_->variables();
  std::vector<char> buffer;
  for (int v = 0; v < vars.count(); ++v) {
    buffer.resize(static_cast<size_t>(vars.bytes(v)));
    if (chief_)
      if (Status s = vars.read(v, buffer.data()); !s)
        return s;
    if (Status s = workers_.broadcast(buffer.data(), buffer.size(), 0); !s)
      return Status::error("sending variable '" + vars.name(v) +
                           "' from the chief: " + s.message());
    if (!chief_)
      if (Status s = vars.write(v, buffer.data()); !s)
        return s;
  }
  return Status::ok();
}

Status TrainingJob::broadcastExtraState() {
  // Packed on the chief into one string of length-prefixed fields: the
  // count of texts, their names and values, then the tensors' names and
  // values.
  ckpt::ExtraState &extra = resumedExtra_;
  std::string packed;
  auto put = [&](const void *data, uint64_t bytes) {
    packed.append(reinterpret_cast<const char *>(&bytes), sizeof bytes);
    packed.append(static_cast<const char *>(data), bytes);
  };
  if (chief_) {
    uint64_t texts = extra.texts.size();
    put(&texts, sizeof texts);
    for (const auto &[name, text] : extra.texts) {
      put(name.data(), name.size());
      put(text.data(), text.size());
    }
    for (const auto &[name, values] : extra.tensors) {
      put(name.data(), name.size());
      put(values.data(), values.size() * sizeof(float));
    }
  }
  uint64_t bytes = packed.size();
  if (Status s = workers_.broadcast(&bytes, sizeof bytes, 0); !s)
    return s;
  packed.resize(bytes);
  if (Status s = workers_.broadcast(packed.data(), bytes, 0); !s)
    return s;
  if (chief_)
    return Status::ok();
  size_t at = 0;
  bool whole = true;
  auto take = [&]() {
    uint64_t n = 0;
    if (packed.size() - at < sizeof n) {
      whole = false;
      return std::string();
    }
    std::memcpy(&n, packed.data() + at, sizeof n);
    at += sizeof n;
    if (packed.size() - at < n) {
      whole = false;
      return std::string();
    }
    std::string field = packed.substr(at, n);
    at += n;
    return field;
  };
  extra = {};
  uint64_t texts = 0;
  std::string count = take();
  if (count.size() == sizeof texts)
    std::memcpy(&texts, count.data(), sizeof texts);
  for (uint64_t i = 0; i < texts && whole; ++i) {
    std::string name = take();
    extra.texts[name] = take();
  }
  while (whole && at < packed.size()) {
    std::string name = take(), data = take();
    std::vector<float> values(data.size() / sizeof(float));
    std::memcpy(values.data(), data.data(), values.size() * sizeof(float));
    extra.tensors.emplace_back(std::move(name), std::move(values));
  }
  if (!whole || count.size() != sizeof texts)
    return Status::internal("the checkpoint's extra state came from the "
                            "chief cut short (" +
                            std::to_string(packed.size()) + " bytes)");
  return Status::ok();
}

/// The names of a checkpoint's ExtraState texts: the fit callbacks'
/// state, and the --metrics file's size and absolute path
/// ("<bytes>:<path>").
constexpr const char *kFitCallbacksState = "fit_callbacks";
constexpr const char *kMetricsFile = "metrics_file";

/// A checkpoint's copy of EarlyStopping's best weight `name`.
std::string bestWeightTensorName(const std::string &name) {
  return "fit_callbacks/best_weights/" + name;
}

Status TrainingJob::cutMetricsFile() {
  const std::string *text = resumedExtra_.text(kMetricsFile);
  if (!text)
    return Status::ok(); // an older checkpoint, or a run without --metrics
  uintmax_t bytes = 0;
  auto [end, ec] =
      std::from_chars(text->data(), text->data() + text->size(), bytes);
  if (ec != std::errc() || end == text->data() + text->size() || *end != ':')
    return Status::error(resumedFrom_ + ": the --metrics file's record '" +
                         *text + "' is not <bytes>:<path>");
  // Another path than the checkpointed run's is another file: kept whole.
  if (std::string_view(end + 1, text->data() + text->size() - end - 1) !=
      absolutePath(o_.metrics))
    return Status::ok();
  if (Status s = cutBack(o_.metrics, bytes); !s)
    return Status::error("--metrics: " + s.message());
  return Status::ok();
}

Status TrainingJob::resumeFitCallbacks(FitCallbacksHook &hook) {
  const ckpt::ExtraState &extra = resumedExtra_;
  const std::string *state = extra.text(kFitCallbacksState);
  if (!state) {
    warn(resumedFrom_ +
         ": holds no state of fit's callbacks (its run had no validation, "
         "callbacks or epoch logs, or an older graphrun wrote it): they "
         "start afresh, and this epoch's logs count its steps from here");
    return Status::ok();
  }
  MirroredVariables &variables = session_->variables();
  std::vector<std::vector<float>> best;
  std::vector<int> weights = ckpt::modelWeights(variables);
  for (int w : weights) {
    const std::vector<float> *copy =
        extra.find(bestWeightTensorName(variables.name(w)));
    if (!copy)
      continue;
    if (copy->size() * sizeof(float) != static_cast<size_t>(variables.bytes(w)))
      return Status::error(resumedFrom_ + ": the best weights' copy of '" +
                           variables.name(w) + "' has " +
                           std::to_string(copy->size()) +
                           " values, not the variable's");
    best.push_back(*copy);
  }
  if (!best.empty() && best.size() != weights.size())
    return Status::error(resumedFrom_ + ": holds a copy of " +
                         std::to_string(best.size()) + " of the model's " +
                         std::to_string(weights.size()) + " weights");
  std::vector<std::string> notes;
  if (Status s = hook.restoreState(*state, std::move(best), notes); !s)
    return Status::error(resumedFrom_ + ": " + s.message());
  for (const std::string &note : notes)
    warn(note);
  return Status::ok();
}

Status TrainingJob::restoreState(int &reportedBy) {
  const plan::Plan &p = *loaded_.plan;
  runState_.model = p.model() ? p.model()->str() : "";
  runState_.seed = o_.seed;
  runState_.globalBatch = globalBatch_;
  // Each step takes one global batch: the position in an epoch is that of
  // the job, whose epoch is the whole training set (or its --shard).
  runState_.epochExamples = epochExamples_;
  runState_.data = dataDescription();

  // The chief alone reads the checkpoint or the weights file: the others
  // may not even see its directory (another host).
  Status chiefRead;
  int64_t step = 0, origin = 0;
  if (chief_) {
    if (!o_.checkpointDir.empty()) {
      checkpoints_.emplace(o_.checkpointDir, o_.keepCheckpoints);
      ckpt::LoadedCheckpoint latest;
      std::vector<std::string> warnings;
      // A prediction only reads the directory, maybe while a run trains in
      // it: it claims nothing.
      if (o_.predict.empty())
        chiefRead = checkpoints_->claim();
      if (chiefRead)
        chiefRead = checkpoints_->findLatest(latest, resumed_, warnings);
      for (const std::string &w : warnings)
        warn(w);
      if (chiefRead && resumed_) {
        chiefRead = ckpt::CheckpointManager::restore(latest, runState_,
                                                     session_->variables());
        step = latest.state.globalStep;
        origin = latest.state.stepOrigin;
        resumedExtra_ = std::move(latest.state.extra);
        resumedFrom_ = latest.path;
        if (chiefRead)
          out_ << "graphrun: resumed from " << latest.path << ": step "
               << latest.state.globalStep << ", in epoch "
               << latest.state.epoch() + 1 << " at example "
               << latest.state.exampleInEpoch() << " of "
               << runState_.epochExamples << "\n";
        out_.flush();
        if (chiefRead && !o_.initWeights.empty())
          warn("--init-weights " + o_.initWeights +
               ": not applied, the run resumes from its checkpoint");
      }
    }
    if (chiefRead && !resumed_ && !o_.initWeights.empty()) {
      ckpt::WeightsReport report;
      if (Status s = ckpt::loadWeights(o_.initWeights, session_->variables(),
                                       o_.initWeightsPartial
                                           ? ckpt::WeightsMatch::partial
                                           : ckpt::WeightsMatch::exact,
                                       &report);
          !s) {
        chiefRead = Status::error("--init-weights: " + s.message());
      } else {
        // Which weights came from the file, and (partial) which did not:
        // a transfer-learning run must not train a head it thinks loaded.
        out_ << "graphrun: --init-weights " << report.text(o_.initWeights);
        out_.flush();
        // The optimizer's state goes with the whole model only (a partial
        // load's model is another), and a prediction takes no step.
        if (!o_.initWeightsPartial && o_.predict.empty())
          chiefRead = loadKerasOptimizer(report.format, step, origin);
      }
    }
  }
  if (Status s = agree(workers_, chiefRead, reportedBy); !s)
    return s;

  if (workerCount() > 1) {
    // The chief's state, to every worker: whether it resumed, its step,
    // and (when it read anything) every variable.
    int64_t header[3] = {resumed_ ? 1 : 0, step, origin};
    if (Status s = workers_.broadcast(header, sizeof header, 0); !s) {
      reportedBy = workers_.rank();
      return s;
    }
    resumed_ = header[0] != 0;
    step = header[1];
    origin = header[2];
    if (resumed_ || !o_.initWeights.empty())
      if (Status s = broadcastVariables(); !s) {
        reportedBy = workers_.rank();
        return s;
      }
    if (resumed_)
      if (Status s = broadcastExtraState(); !s) {
        reportedBy = workers_.rank();
        return s;
      }
    // Same initial weights on every worker: the name-keyed initializers
    // give them, the broadcast above too; a different build or data type
    // would not, and would fail here rather than train apart.
    MirroredVariables &vars = session_->variables();
    uint64_t h = 1469598103934665603ULL;
    std::vector<char> buffer;
    for (int v = 0; v < vars.count(); ++v) {
      buffer.resize(static_cast<size_t>(vars.bytes(v)));
      if (Status s = vars.read(v, buffer.data()); !s)
        return s;
      h = fnv1a(buffer.data(), buffer.size(), h);
    }
    std::vector<std::string> hashes;
    if (Status s = workers_.allGather(std::to_string(h), hashes); !s) {
      reportedBy = workers_.rank();
      return s;
    }
    for (int w = 1; w < workerCount(); ++w)
      if (hashes[w] != hashes[0]) {
        reportedBy = 0;
        return Status::error(
            "the workers' initial variables differ: " + workers_.name(w) +
            " has other values than " + workers_.name(0) +
            " (a different graphrun build?)");
      }
  }
  if (Status s = session_->setGlobalStep(step); !s) {
    reportedBy = workers_.rank();
    return s;
  }
  // The data start at their first batch at `origin`.
  stepOrigin_ = origin;
  runState_.stepOrigin = origin;
  return Status::ok();
}

Status TrainingJob::loadKerasOptimizer(const std::string &format, int64_t &step,
                                       int64_t &origin) {
  const bool archive = format == "Keras 3 .keras archive";
  if (!archive && format != "Keras 3 .weights.h5")
    return Status::ok();
  ckpt::KerasOptimizerReport report;
  if (Status s =
          ckpt::loadKerasOptimizer(o_.initWeights, archive, *loaded_.plan,
                                   session_->variables(), report);
      !s)
    return Status::error("--init-weights: " + s.message());
  if (!report.present)
    return Status::ok();
  if (!report.loaded) {
    warn("--init-weights " + o_.initWeights +
         ": its optimizer state is not loaded (" + report.why +
         "): the optimizer starts afresh");
    return Status::ok();
  }
  // Keras' load_model then fit(): the optimizer goes on from its
  // iterations (Adam's bias correction, a schedule's step) while the data
  // start from their first batch.
  step = origin = report.iterations;
  out_ << "graphrun: --init-weights " << o_.initWeights
       << ": and its optimizer's state (slots, " << report.iterations
       << " iterations): training goes on at step " << report.iterations + 1
       << "\n";
  out_.flush();
  if (report.learningRate && o_.learningRate < 0 &&
      *report.learningRate != static_cast<float>(planLearningRate()))
    warn("--init-weights " + o_.initWeights + ": its optimizer's rate is " +
         pythonFloatRepr(*report.learningRate) +
         " (a callback lowered it?), the plan's " +
         pythonFloatRepr(planLearningRate()) +
         ", which this run trains at; to go on at the file's, give it as "
         "the learning rate (graphrun --learning-rate, graphc.compile's "
         "learning_rate)");
  return Status::ok();
}

Status TrainingJob::setUp(int &reportedBy) {
  reportedBy = workers_.rank();
  // Phase 1.
  Status local = checkLocally();
  if (Status s = agree(workers_, local, reportedBy); !s)
    return s;
  // Phase 2: every worker computes the same verdict; the chief reports it.
  if (Status s = compareWorkers(); !s) {
    reportedBy = 0;
    return s;
  }

  // Phase 3.
  SessionOptions so;
  so.replicas = placement_.replicas;
  so.workers = &workers_;
  so.backend = placement_.backend;
  so.seed = o_.seed;
  so.learningRate = o_.learningRate;
  so.cudaGraph = !o_.noCudaGraph;
  so.flushDenormals = !o_.keepDenormals;
  so.allReduceWire =
      o_.allReduceDtype == "bf16" ? WireType::bf16 : WireType::f32;
  so.stepsInFlight = o_.stepsInFlight;
  // TF32 convolutions and matrix products by default on a GPU (PyTorch's
  // cuDNN default); the host backends compute in fp32 regardless.
  if (placement_.backend == Backend::cuda) {
    so.precision = parsePrecision(o_.precision.empty() ? "tf32" : o_.precision)
                       .value_or(Precision::tf32);
    // cudnn.benchmark's measurements, kept for the plan's next run.
    so.convAlgoCachePath = cuda::ConvAlgoCache::pathBeside(o_.plan);
  }
  so.firstPhysicalDevice = firstGpu_;
  so.timeout = std::chrono::milliseconds(
      static_cast<int64_t>(o_.collectiveTimeoutSeconds * 1000));
  Status created = Session::create(loaded_, so, session_);
  if (Status s = agree(workers_, created, reportedBy); !s)
    return s;
  const plan::Plan &p = *loaded_.plan;
  Backend backend = placement_.backend;
  out_ << "graphrun: " << o_.plan << " (model '"
       << (p.model() ? p.model()->c_str() : "") << "'): "
       << (o_.predict.empty()
               ? std::string(session_->trainProgram().name()->c_str())
               : "predict_x" + std::to_string(session_->totalReplicas()))
       << " on "
       << (workerCount() > 1 ? std::to_string(workerCount()) + " workers x " +
                                   std::to_string(placement_.replicas)
                             : std::to_string(placement_.replicas))
       << " " << (backend == Backend::cuda ? "GPU" : "CPU")
       << " replica(s), backend " << backendName(backend) << ", precision "
       << (backend == Backend::cuda
               ? std::string(precisionName(so.precision))
               : hostPrecision(session_->trainProgram(), backend));
  if (o_.predict.empty() && session_->stepsInFlight() > 1)
    out_ << ", " << session_->stepsInFlight() << " steps in flight";
  out_ << ", global batch " << globalBatch_ << " ("
       << globalBatch_ / session_->totalReplicas() << " per replica), data "
       << (o_.predict.empty() ? o_.data : o_.predict) << " (" << train_->size()
       << " examples";
  if (workerCount() > 1)
    out_ << ", each worker its " << localBatch_
         << " rows of every global batch, gradients across workers in "
         << (so.allReduceWire == WireType::bf16 ? "bf16" : "fp32");
  else if (o_.shardCount > 1)
    out_ << ", shard " << o_.shardIndex << "/" << o_.shardCount << ": "
         << epochExamples_;
  out_ << ")\n";
  if (workerCount() == 1 && so.allReduceWire == WireType::bf16)
    out_ << "graphrun: note: --allreduce-dtype bf16 has no effect on a job "
            "of one worker: its replicas sum in fp32, in shared memory\n";
  if (backend != Backend::cuda && o_.precision == "tf32")
    out_ << "graphrun: note: --precision tf32 has no effect on the "
         << backendName(backend) << " backend, which computes in fp32\n";
  out_.flush();
  return restoreState(reportedBy);
}

Status TrainingJob::evaluateOn(const data::DataSource &source,
                               int64_t maxBatches, EvalResult &out) {
  // Every worker its shard, the last batch padded and its padding
  // weighted 0: every example once, over all workers.
  data::Pipeline pipeline = source.pipeline();
  if (workerCount() > 1)
    pipeline.shard(workerCount(), workers_.rank());
  source.decode(pipeline);
  pipeline.batch(localBatch_, session_->labelFormat(), data::Remainder::pad)
      .prefetch(o_.prefetch);
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches); !s)
    return s;
  return session_->evaluate(*batches, out, maxBatches);
}

Status TrainingJob::validate(int64_t step, int64_t stepsPerEpoch,
                             EpochLogs &logs) {
  EvalResult result;
  if (Status s = evaluateOn(*validation_, -1, result); !s)
    return s;
  for (size_t i = 0; i < result.names.size(); ++i)
    logs["val_" + result.names[i]] = result.values[i];
  const int64_t epoch =
      (step - stepOrigin_) / std::max<int64_t>(1, stepsPerEpoch);
  if (metrics_)
    if (Status s =
            metrics_->writeValidation(step, epoch, result.names, result.values);
        !s)
      return s;
  std::string line = "epoch " + std::to_string(epoch) + " (step " +
                     std::to_string(step) + "):";
  if (showProgress_)
    line = "\n" + line;
  line += namedValues(result, "val_");
  out_ << line << " (" << result.examples << " validation examples)\n";
  out_.flush();
  return Status::ok();
}

double TrainingJob::planLearningRate() const {
  if (o_.learningRate >= 0)
    return o_.learningRate;
  return trainingHyperParameter(*loaded_.plan, "learning_rate", 0.01);
}

Status TrainingJob::makeFitCallbacks(int64_t stepsPerEpoch,
                                     std::unique_ptr<FitCallbacksHook> &out) {
  const plan::Plan &p = *loaded_.plan;
  const bool any = validation_ || o_.earlyStopping || o_.reduceLrOnPlateau ||
                   o_.checkpointBest || !o_.csvLog.empty() ||
                   !o_.tensorboard.empty() || o_.checkpointFormat == "keras" ||
                   io_.report;
  if (!any)
    return Status::ok();
  // The keys every epoch's logs will have: what a monitor may name.
  std::vector<std::string> metricNames, keys{"loss"};
  if (p.training() && p.training()->metrics())
    for (const auto *m : *p.training()->metrics())
      metricNames.push_back(m->str());
  keys.insert(keys.end(), metricNames.begin(), metricNames.end());
  if (validation_) {
    keys.push_back("val_loss");
    for (const std::string &m : metricNames)
      keys.push_back("val_" + m);
  }
  MetricDirections directions = compiledMetricDirections(metricNames);
  FitCallbacksHook::Callbacks c;
  // Keras warns at every epoch's end when a monitored key is not logged,
  // and the callback never acts; graphrun refuses before step 1.
  if (o_.reduceLrOnPlateau) {
    ReduceLROnPlateauOptions options;
    if (Status s =
            parseReduceLROnPlateauOptions(*o_.reduceLrOnPlateau, options);
        !s)
      return s;
    std::vector<std::string> withRate = keys;
    withRate.push_back("learning_rate");
    if (Status s = checkMonitorLogged("--reduce-lr-on-plateau", options.monitor,
                                      withRate);
        !s)
      return s;
    if (trainingHyperParameter(p, "lr_schedule", 0) != 0 && o_.learningRate < 0)
      return Status::error(
          "--reduce-lr-on-plateau sets the optimizer's learning rate, and "
          "this model's is a schedule (Keras refuses the same: a "
          "LearningRateSchedule's rate is not settable)");
    if (placement_.backend == Backend::cuda)
      return Status::error("--reduce-lr-on-plateau is not on the cuda backend "
                           "yet (its captured steps read the plan's rate); "
                           "use --backend cpu");
    ReduceLROnPlateau callback;
    if (Status s = ReduceLROnPlateau::create(options, directions, callback); !s)
      return s;
    c.reduceLr = std::move(callback);
  }
  if (o_.earlyStopping) {
    EarlyStoppingOptions options;
    if (Status s = parseEarlyStoppingOptions(*o_.earlyStopping, options); !s)
      return s;
    if (Status s =
            checkMonitorLogged("--early-stopping", options.monitor, keys);
        !s)
      return s;
    EarlyStopping callback;
    if (Status s = EarlyStopping::create(options, directions, callback); !s)
      return s;
    c.earlyStopping = std::move(callback);
  }
  if (o_.checkpointBest) {
    // ModelCheckpoint's first argument, filepath, as a key of the flag.
    std::string text = *o_.checkpointBest, path;
    std::string rest;
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
      if (item.rfind("filepath=", 0) == 0)
        path = item.substr(9);
      else
        rest += (rest.empty() ? "" : ",") + item;
    }
    if (path.empty())
      path = o_.checkpointDir.empty()
                 ? std::string("best.keras")
                 : (fs::path(o_.checkpointDir) / "best.keras").string();
    BestCheckpointOptions options;
    if (Status s = parseBestCheckpointOptions(rest, options); !s)
      return s;
    if (Status s =
            checkMonitorLogged("--checkpoint-best", options.monitor, keys);
        !s)
      return s;
    // A filepath of fields ({epoch:02d}) is checked as the first epoch
    // would write it.
    std::string first;
    if (Status s = formatKerasFilepath(path, 0, nullptr, first); !s)
      return Status::invalidInput("--checkpoint-best filepath " + path + ": " +
                                  s.message());
    if (chief_) {
      if (Status s = checkOutputFile("--checkpoint-best filepath", first); !s)
        return s;
      if (Status s =
              checkWeightsOutput("--checkpoint-best filepath", first, p, false);
          !s)
        return s;
    }
    BestCheckpoint callback;
    if (Status s = BestCheckpoint::create(options, directions, callback); !s)
      return s;
    c.bestCheckpoint = std::move(callback);
    c.bestCheckpointPath = path;
  }
  if (chief_ && !o_.csvLog.empty())
    if (Status s = CsvLogger::open(o_.csvLog, ',', resumed_, c.csv); !s)
      return Status::error("--csv-log: " + s.message());
  if (chief_ && !o_.tensorboard.empty()) {
    if (Status s = TensorBoardWriter::open(
            (fs::path(o_.tensorboard) / "train").string(), c.tensorBoardTrain);
        !s)
      return Status::error("--tensorboard: " + s.message());
    if (validation_)
      if (Status s = TensorBoardWriter::open(
              (fs::path(o_.tensorboard) / "validation").string(),
              c.tensorBoardValidation);
          !s)
        return Status::error("--tensorboard: " + s.message());
    c.batchEvery = o_.logEvery;
  }
  if (o_.checkpointFormat == "keras")
    c.epochCheckpointPattern =
        (fs::path(o_.checkpointDir) / "ckpt-{epoch}.keras").string();
  if (io_.report)
    c.history = &io_.report->epochs;
  c.stepOrigin = stepOrigin_;
  c.epochOrigin = o_.initialEpoch;

  FitCallbacksHook::Job job;
  if (validation_)
    job.validate = [this, stepsPerEpoch](int64_t step, EpochLogs &logs) {
      return validate(step, stepsPerEpoch, logs);
    };
  MirroredVariables &variables = session_->variables();
  std::vector<int> weights = ckpt::modelWeights(variables);
  job.readWeights = [&variables,
                     weights](std::vector<std::vector<float>> &out) {
    out.resize(weights.size());
    for (size_t i = 0; i < weights.size(); ++i) {
      out[i].resize(static_cast<size_t>(variables.bytes(weights[i]) / 4));
      if (Status s = variables.read(weights[i], out[i].data()); !s)
        return s;
    }
    return Status::ok();
  };
  job.writeWeights = [&variables,
                      weights](const std::vector<std::vector<float>> &in) {
    for (size_t i = 0; i < weights.size() && i < in.size(); ++i)
      if (Status s = variables.write(weights[i], in[i].data()); !s)
        return s;
    return Status::ok();
  };
  job.setLearningRate = [this](double rate) {
    return session_->setLearningRate(rate);
  };
  job.save = [this](const std::string &path, double rate) {
    return ckpt::saveWeightsFile(path, session_->variables(), kerasState(rate),
                                 {});
  };
  out = std::make_unique<FitCallbacksHook>(std::move(c), std::move(job),
                                           stepsPerEpoch, planLearningRate(),
                                           chief_, out_);
  return Status::ok();
}

Status TrainingJob::evaluate(int64_t step, bool final) {
  if (step != lastEvalStep_) {
    if (Status s = evaluateOn(*test_, o_.evalSteps, lastEval_); !s)
      return s;
    lastEvalStep_ = step;
    if (metrics_)
      if (Status s = metrics_->writeEvaluation(
              step, lastEval_.names, lastEval_.values, lastEval_.confusion);
          !s)
        return s;
  }
  std::string line =
      final ? "eval:" : "eval at step " + std::to_string(step) + ":";
  // Below the progress bar's open line, which the next step redraws.
  if (showProgress_ && !final)
    line = "\n" + line;
  line += namedValues(lastEval_, "");
  out_ << line << " (" << lastEval_.examples << " of " << test_->size()
       << " test examples, " << lastEval_.batches << " batches of "
       << localBatch_
       << (workerCount() > 1
               ? " over " + std::to_string(workerCount()) + " workers"
               : std::string())
       << ")\n";
  if (final && lastEval_.classes > 0)
    printConfusion();
  out_.flush();
  return Status::ok();
}

void TrainingJob::printConfusion() {
  const int64_t n = lastEval_.classes;
  // A table wider than a terminal helps nobody; the metrics file has it.
  constexpr int64_t kMostClassesPrinted = 32;
  if (n > kMostClassesPrinted) {
    out_ << "confusion matrix: " << n << " classes, not printed (more than "
         << kMostClassesPrinted << "); --metrics writes it\n";
    return;
  }
  // An image folder's classes by name, others by number; columns as wide
  // as the largest count and the longest name.
  std::vector<std::string> names;
  if (test_ && test_->images &&
      static_cast<int64_t>(test_->images->classNames().size()) == n)
    names = test_->images->classNames();
  else
    for (int64_t c = 0; c < n; ++c)
      names.push_back(std::to_string(c));
  int64_t largest = n;
  for (int64_t c : lastEval_.confusion)
    largest = std::max(largest, c);
  size_t widest = std::to_string(largest).size();
  for (const std::string &name : names)
    widest = std::max(widest, name.size());
  int width = static_cast<int>(widest) + 1;
  out_ << "confusion matrix (rows: true class, columns: predicted; "
       << "recall per class):\n";
  auto cell = [&](const std::string &text) {
    out_ << std::string(static_cast<size_t>(std::max<int>(
                            0, width - static_cast<int>(text.size()))),
                        ' ')
         << text;
  };
  out_ << std::string(static_cast<size_t>(width), ' ');
  for (int64_t p = 0; p < n; ++p)
    cell(names[p]);
  out_ << "\n";
  for (int64_t t = 0; t < n; ++t) {
    cell(names[t]);
    int64_t total = 0;
    for (int64_t p = 0; p < n; ++p) {
      int64_t c = lastEval_.confusion[t * n + p];
      total += c;
      cell(std::to_string(c));
    }
    char recall[32];
    std::snprintf(recall, sizeof recall, "  %.4f",
                  total ? static_cast<double>(lastEval_.confusion[t * n + t]) /
                              static_cast<double>(total)
                        : 0.0);
    out_ << recall << "\n";
  }
}

Status TrainingJob::checkPrediction() {
  if (workerCount() > 1)
    return Status::error("--predict runs in one process: start it without "
                         "mpirun");
  if (o_.steps > 0 || o_.epochs > 0 || o_.eval || o_.evalEvery > 0)
    return Status::error("--predict predicts and does not train or "
                         "evaluate: drop --steps, --epochs, --eval and "
                         "--eval-every");
  if (o_.predictions.empty() && !io_.report)
    return Status::error("--predict " + o_.predict +
                         ": say where the predictions go with "
                         "--predictions FILE.npy");
  const auto *outputs = loaded_.plan->training()->outputs();
  if (!o_.predictions.empty() && outputs && outputs->size() > 1 &&
      !o_.predictions.ends_with(".npz")) {
    std::string names;
    for (const plan::Output *out : *outputs)
      names += (names.empty() ? "'" : ", '") + out->name()->str() + "'";
    return Status::invalidInput(
        "--predictions " + o_.predictions +
        ": the model has several outputs (" + names +
        "): name an .npz file, which holds an array for each");
  }
  // One output's predictions are one array, as Keras' predict gives them:
  // an .npy (the plan does not name a single output, so an .npz would have
  // to invent the array's name).
  if ((!outputs || outputs->size() <= 1) && o_.predictions.ends_with(".npz"))
    return Status::invalidInput(
        "--predictions " + o_.predictions +
        ": the model has one output, whose predictions are one array: name "
        "an .npy file");
  if (!o_.predictions.empty())
    for (const std::string &path : {o_.predictions, o_.predictions + ".txt"})
      if (Status s = checkOutputFile("--predictions", path); !s)
        return s;
  if (o_.initWeights.empty() && o_.checkpointDir.empty() && !io_.state)
    warn("--predict with the initial weights: give the trained ones with "
         "--init-weights or --checkpoint-dir");
  return Status::ok();
}

Status TrainingJob::predict() {
  // In the data's order, every example once: the last batch padded, its
  // padding dropped from the predictions.
  data::Pipeline pipeline = train_->pipeline();
  train_->decode(pipeline);
  pipeline.batch(localBatch_, session_->labelFormat(), data::Remainder::pad)
      .prefetch(o_.prefetch);
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches); !s)
    return Status::error(train_->name() + ": " + s.message());
  std::vector<JobReport::Prediction> outputs;
  std::vector<int64_t> sources;
  Status s = session_->predict(
      *batches,
      [&](const std::vector<OutputRows> &batch, int64_t n,
          const int64_t *indices) -> Status {
        if (outputs.empty())
          for (const OutputRows &rows : batch)
            outputs.push_back({std::string(rows.output), {}, rows.width});
        for (size_t i = 0; i < batch.size(); ++i)
          outputs[i].values.insert(outputs[i].values.end(), batch[i].values,
                                   batch[i].values + n * batch[i].width);
        sources.insert(sources.end(), indices, indices + n);
        return Status::ok();
      });
  if (!s)
    return s;
  if (train_->images && o_.skipBadImages) {
    // A file the decoder found bad was replaced by another of its class, so
    // its row predicts that other image: drop it, as listing dropped the
    // bad files it found.
    std::set<std::string> bad;
    for (const data::SkippedImage &skipped : train_->images->skippedImages())
      bad.insert(skipped.path);
    size_t kept = 0;
    for (size_t r = 0; r < sources.size(); ++r) {
      if (bad.count(train_->source(sources[r])))
        continue;
      for (JobReport::Prediction &p : outputs)
        std::copy_n(p.values.begin() + static_cast<int64_t>(r) * p.width,
                    p.width,
                    p.values.begin() + static_cast<int64_t>(kept) * p.width);
      sources[kept++] = sources[r];
    }
    sources.resize(kept);
    for (JobReport::Prediction &p : outputs)
      p.values.resize(kept * static_cast<size_t>(p.width));
  }
  int64_t examples = static_cast<int64_t>(sources.size());
  if (io_.report && o_.predictions.empty()) {
    io_.report->predictions = std::move(outputs);
    return Status::ok();
  }
  if (outputs.size() == 1) {
    if (Status w = ckpt::writeNpy(o_.predictions, outputs[0].values,
                                  {examples, outputs[0].width});
        !w)
      return Status::error("--predictions: " + w.message());
  } else {
    // Keras' predict returns one array an output: an .npz of an array
    // named after each, as np.load gives them back.
    std::vector<std::string> bytes;
    for (const JobReport::Prediction &p : outputs)
      bytes.push_back(ckpt::npyBytes(p.values, {examples, p.width}));
    std::vector<ZipMember> members;
    for (size_t i = 0; i < outputs.size(); ++i)
      members.push_back({outputs[i].output + ".npy", bytes[i]});
    std::string archive;
    if (Status w = storedZipArchive(members, archive); !w)
      return Status::error("--predictions " + o_.predictions + ": " +
                           w.message());
    if (Status w = writeFileAtomically(o_.predictions, archive); !w)
      return Status::error("--predictions: " + w.message());
  }
  // A line per example: a newline in a file's name (and the backslash
  // that escapes it) is written escaped, so that line i is example i.
  std::string list;
  for (int64_t index : sources) {
    for (char c : train_->source(index))
      list += c == '\n' ? "\\n" : c == '\\' ? "\\\\" : std::string(1, c);
    list += "\n";
  }
  if (Status w = writeFileAtomically(o_.predictions + ".txt", list); !w)
    return Status::error("--predictions: " + w.message());
  std::string widths;
  for (const JobReport::Prediction &p : outputs)
    widths += (widths.empty() ? "" : ", ") +
              (outputs.size() > 1 ? p.output + ": " : std::string()) +
              std::to_string(p.width);
  out_ << "graphrun: predictions of " << examples << " examples (" << widths
       << " values each) written to " << o_.predictions << ", their sources to "
       << o_.predictions << ".txt\n";
  reportSkipped();
  out_.flush();
  return Status::ok();
}

Status TrainingJob::adoptState(const ModelState &state) {
  MirroredVariables &vars = session_->variables();
  if (static_cast<int>(state.variables.size()) != vars.count())
    return Status::internal(
        "the model state holds " + std::to_string(state.variables.size()) +
        " variables; the plan has " + std::to_string(vars.count()));
  for (int v = 0; v < vars.count(); ++v) {
    const std::vector<char> &value = state.variables[static_cast<size_t>(v)];
    if (static_cast<int64_t>(value.size()) != vars.bytes(v))
      return Status::internal("the model state's variable " +
                              std::to_string(v) + " has " +
                              std::to_string(value.size()) + " bytes; the " +
                              "plan's " + std::to_string(vars.bytes(v)));
    if (Status s = vars.write(v, value.data()); !s)
      return s;
  }
  if (Status s = session_->setGlobalStep(state.step); !s)
    return s;
  stepOrigin_ = state.step;
  return Status::ok();
}

Status TrainingJob::captureState(ModelState &state) {
  MirroredVariables &vars = session_->variables();
  std::vector<std::vector<char>> values(static_cast<size_t>(vars.count()));
  for (int v = 0; v < vars.count(); ++v) {
    values[static_cast<size_t>(v)].resize(static_cast<size_t>(vars.bytes(v)));
    if (Status s = vars.read(v, values[static_cast<size_t>(v)].data()); !s)
      return s;
  }
  state.variables = std::move(values);
  state.names.clear();
  state.shapes.clear();
  for (int v = 0; v < vars.count(); ++v) {
    state.names.push_back(vars.name(v));
    state.shapes.push_back(vars.shape(v));
  }
  state.step = session_->globalStep();
  return Status::ok();
}

bool TrainingJob::cacheFits() {
  // The cache, and the shuffle buffer after it, which holds copies.
  auto decodedBytes = [&](int64_t examples) {
    return train_->images
               ? train_->images->decodedBytes(examples)
               : examples * train_->shape().elements() * int64_t(sizeof(float));
  };
  int64_t bytes = decodedBytes(epochExamples_);
  if (!o_.noShuffle)
    bytes += decodedBytes(std::min(shuffleBuffer_, epochExamples_));
  int64_t available = availableMemory();
  // A margin for the model, the batches and the rest of the host.
  bool fits = available < 0 || bytes <= available / 10 * 8;
  if (fits) {
    out_ << "graphrun: --cache: the decoded "
         << (train_->images ? "images" : "examples")
         << (o_.noShuffle ? "" : " and the shuffle buffer's copies") << " take "
         << mebibytes(bytes)
         << (available >= 0 ? " of the " + mebibytes(available) + " available"
                            : std::string())
         << "; each is decoded once, in the first epoch\n";
    out_.flush();
  } else {
    warn("--cache: the " + std::to_string(epochExamples_) + " decoded " +
         (train_->images ? "images" : "examples") + " of " + train_->name() +
         (o_.noShuffle ? "" : " and the shuffle buffer's copies") +
         " would take " + mebibytes(bytes) + ", more than 80% of the " +
         mebibytes(available) +
         " of memory available: not cached, every epoch decodes them again "
         "(drop --cache)");
  }
  return fits;
}

void TrainingJob::reportSkipped() {
  if (!o_.skipBadImages)
    return;
  for (const std::optional<data::DataSource> *ds : {&train_, &test_}) {
    if (!*ds || !(*ds)->images)
      continue;
    std::vector<data::SkippedImage> skipped = (*ds)->images->skippedImages();
    out_ << "graphrun: --skip-bad-images: " << skipped.size()
         << (skipped.size() == 1 ? " bad image" : " bad images")
         << " skipped in " << (*ds)->name() << (skipped.empty() ? "" : ":")
         << "\n";
    for (const data::SkippedImage &bad : skipped)
      out_ << "  " << bad.reason << "\n";
  }
  out_.flush();
}

Status TrainingJob::run() {
  if (!o_.predict.empty()) {
    // No step to stop at: a signal ends a prediction at once.
    if (signals_)
      signals_->restore();
    return predict();
  }
  const plan::Plan &p = *loaded_.plan;
  // --cache-on-device: the training set goes to the devices once and the
  // pipeline hands out only positions; the same shuffle draws them, so the
  // batches are those of a run without the flag.
  if (o_.cacheOnDevice)
    if (Status s = session_->cacheTrainingData(train_->memory); !s)
      return Status::error("--cache-on-device: " + s.message());

  // Steps still to run: a resumed run trains up to the requested total.
  // An epoch is the job's pass over the training set, ending with its
  // short last batch as Keras' does: every worker takes its rows of each
  // global batch of it.
  int64_t jobEpoch = epochExamples_;
  int64_t stepsPerEpoch = (jobEpoch + globalBatch_ - 1) / globalBatch_;
  int64_t epochs = std::max<int64_t>(1, o_.epochs);
  if (o_.steps < 0 && epochs > INT64_MAX / std::max<int64_t>(1, jobEpoch))
    return Status::error("--epochs " + std::to_string(o_.epochs) +
                         ": too many passes over " + std::to_string(jobEpoch) +
                         " examples");
  int64_t totalSteps = o_.steps >= 0 ? o_.steps : stepsPerEpoch * epochs;

  // Every worker runs the job's pipeline: one shuffle of the whole
  // training set with --seed, cut into global batches, of which each
  // worker takes its rows (replicas rank * R to rank * R + R - 1 of the
  // program's), so that W workers of R replicas see, step for step, what
  // one worker of W * R replicas sees, and a checkpoint's data position is
  // the job's. A single worker's --shard partitions the data first.
  data::Pipeline pipeline = train_->pipeline();
  if (workerCount() == 1 && o_.shardCount > 1)
    pipeline.shard(o_.shardCount, o_.shardIndex);
  // An image folder is decoded after the shuffle and the repeat, which move
  // labels only, and after the worker's rows are taken, so that it decodes
  // those only; with --cache, before them, so that the cache holds pixels
  // and each image is decoded once (every worker caches all of them: its
  // rows differ from epoch to epoch).
  bool cache = o_.cache && (train_->inMemory() || cacheFits());
  if (cache) {
    train_->decode(pipeline);
    pipeline.cache();
  }
  if (!o_.noShuffle)
    pipeline.shuffle(shuffleBuffer_, o_.seed);
  // The epoch's short last batch: padded to the static shape with rows that
  // weigh 0, its examples' weights scaled so that the step's mean is theirs
  // (the plan's steps take sample_weight). One stream position per row, so
  // a checkpoint's step still names the data position.
  pipeline.padToBatches(globalBatch_,
                        trainingHyperParameter(p, "reduction_sum", 0) == 0);
  pipeline.repeat(o_.steps >= 0 || workerCount() > 1 ? data::Pipeline::kForever
                                                     : epochs);
  if (workerCount() > 1)
    pipeline.shardBatches(globalBatch_, workerCount(), workers_.rank());
  if (!cache)
    train_->decode(pipeline);
  if (o_.cacheOnDevice)
    pipeline.batchIndices(localBatch_);
  else
    pipeline.batch(localBatch_, session_->labelFormat());
  pipeline.prefetch(o_.prefetch);
  // A resumed run starts the pipeline where the checkpointed run stopped:
  // the same seed gives the same batches, and the pipeline seeks to the
  // batch without reading the ones before it.
  std::unique_ptr<data::BatchIterator> batches;
  if (Status s = pipeline.open(batches, session_->globalStep() - stepOrigin_);
      !s)
    return Status::error(train_->name() + ": " + s.message());

  // Validation and fit's callbacks at each epoch's end (made after the
  // pipeline opened, so that a run that cannot start leaves their logs
  // alone); a resumed run's go on from the checkpoint (a run
  // EarlyStopping stopped stays stopped).
  std::unique_ptr<FitCallbacksHook> fitCallbacks;
  if (Status s = makeFitCallbacks(stepsPerEpoch, fitCallbacks); !s)
    return s;
  if (fitCallbacks && resumed_)
    if (Status s = resumeFitCallbacks(*fitCallbacks); !s)
      return s;
  const bool stoppedBefore = fitCallbacks && fitCallbacks->stopRequested();
  int64_t remaining =
      stoppedBefore
          ? 0
          : std::max<int64_t>(0, totalSteps -
                                     (session_->globalStep() - stepOrigin_));
  if (resumed_ && stoppedBefore)
    out_ << "graphrun: the checkpointed run was stopped at step "
         << session_->globalStep() << " by --early-stopping: nothing left to "
         << "train\n";
  else if (resumed_ && remaining == 0)
    out_ << "graphrun: the checkpoint is at step " << session_->globalStep()
         << " of " << totalSteps << ": nothing left to train\n";

  if (chief_ && !o_.metrics.empty()) {
    // A resumed run continues the killed run's log, cut back to what it
    // held at the checkpoint: the steps after it are trained again.
    if (resumed_)
      if (Status s = cutMetricsFile(); !s)
        return s;
    metricsFile_.open(o_.metrics, resumed_ ? std::ios::app : std::ios::trunc);
    if (!metricsFile_)
      return Status::error(
          "--metrics " + o_.metrics +
          ": cannot open it for writing: " + std::strerror(errno));
    metrics_ = std::make_unique<MetricsFileHook>(o_.logEvery, metricsFile_,
                                                 "--metrics " + o_.metrics);
  }
  showProgress_ = chief_ && o_.progress && &out_ == &std::cout && ::isatty(1);

  // Hooks run in this order after each step and at the end. The NaN guard
  // comes first, so that no later hook (a checkpoint above all) sees a step
  // that diverged; the progress bar, which replaces the log lines on a
  // terminal, comes before the step timer, so that it ends its line before
  // the timer's summary. The chief alone logs, times, writes metrics and
  // checkpoints; every worker evaluates (its shard) and guards.
  std::vector<Hook *> hooks;
  std::unique_ptr<NanGuardHook> nanGuard;
  if (o_.nanGuard) {
    nanGuard = std::make_unique<NanGuardHook>(
        session_->variables(), o_.checkNumerics
                                   ? NanGuardHook::Mode::everyTensor
                                   : NanGuardHook::Mode::outputs);
    hooks.push_back(nanGuard.get());
  }
  std::unique_ptr<ProgressBarHook> progress;
  std::unique_ptr<LoggerHook> logger;
  std::unique_ptr<StepTimerHook> timer;
  if (chief_) {
    if (showProgress_) {
      progress = std::make_unique<ProgressBarHook>(out_, remaining);
      hooks.push_back(progress.get());
    } else {
      logger = std::make_unique<LoggerHook>(o_.logEvery, out_);
      hooks.push_back(logger.get());
    }
    timer = std::make_unique<StepTimerHook>(o_.warmup, out_);
    hooks.push_back(timer.get());
    if (metrics_)
      hooks.push_back(metrics_.get());
  }
  // Validation and fit's callbacks at each epoch's end, after the step's
  // logs and before --eval-every and the checkpoints (which save what an
  // epoch's end decided: a lowered rate, a stop).
  if (fitCallbacks)
    hooks.push_back(fitCallbacks.get());
  std::unique_ptr<EvaluationHook> evalHook;
  if (o_.evalEvery > 0) {
    evalHook = std::make_unique<EvaluationHook>(
        o_.evalEvery, [&](int64_t step) { return evaluate(step, false); },
        stepOrigin_);
    hooks.push_back(evalHook.get());
  }
  std::unique_ptr<ckpt::CheckpointHook> checkpointHook;
  if (checkpoints_) {
    int64_t every =
        o_.checkpointEvery >= 0 ? o_.checkpointEvery : stepsPerEpoch;
    checkpointHook = std::make_unique<ckpt::CheckpointHook>(
        *checkpoints_, session_->variables(), every, runState_);
    checkpointHook->setExtraState([this, hook = fitCallbacks.get()] {
      ckpt::ExtraState extra;
      if (metrics_) {
        metricsFile_.flush();
        std::error_code ec;
        uintmax_t bytes = fs::file_size(o_.metrics, ec);
        if (!ec)
          extra.texts[kMetricsFile] =
              std::to_string(bytes) + ":" + absolutePath(o_.metrics);
      }
      if (!hook)
        return extra;
      extra.texts[kFitCallbacksState] = hook->saveState();
      MirroredVariables &variables = session_->variables();
      const std::vector<std::vector<float>> &best = hook->bestWeights();
      std::vector<int> weights = ckpt::modelWeights(variables);
      for (size_t i = 0; i < best.size() && i < weights.size(); ++i)
        extra.tensors.emplace_back(
            bestWeightTensorName(variables.name(weights[i])), best[i]);
      return extra;
    });
    hooks.push_back(checkpointHook.get());
  }
  std::unique_ptr<TraceHook> trace;
  if (!o_.trace.empty()) {
    trace = std::make_unique<TraceHook>(workerPath(o_.trace, workers_.rank()));
    hooks.push_back(trace.get());
  }
  std::ofstream dataOrderFile;
  std::unique_ptr<DataOrderHook> dataOrder;
  if (!o_.dataOrder.empty()) {
    std::string path = workerPath(o_.dataOrder, workers_.rank());
    // A resumed run trains the steps after its checkpoint again: their
    // lines, written by the run it resumes, go.
    if (resumed_)
      if (Status s = cutBackAfterStep(path, session_->globalStep()); !s)
        return Status::error("--data-order: " + s.message());
    dataOrderFile.open(path, resumed_ ? std::ios::app : std::ios::trunc);
    if (!dataOrderFile)
      return Status::error(
          "--data-order " + path +
          ": cannot open it for writing: " + std::strerror(errno));
    dataOrder =
        std::make_unique<DataOrderHook>(dataOrderFile, "--data-order " + path);
    hooks.push_back(dataOrder.get());
  }

  // Last, so that it sees each step after every other hook did (its
  // checkpoint written).
  std::unique_ptr<PreemptionHook> preemption;
  if (signals_ && !signals_->signals().empty()) {
    // A caller that keeps the state (JobIo) keeps what the steps did: the
    // hook's "nothing saved" is graphrun's to say.
    preemption = std::make_unique<PreemptionHook>(
        workerCount(), chief_, o_.checkpointDir, io_.state ? null_ : out_);
    hooks.push_back(preemption.get());
  }

  const int64_t stepBefore = session_->globalStep();
  Status trained = session_->train(*batches, remaining, hooks);
  if (!trained)
    return trained;
  batches.reset();
  if (io_.report) {
    JobReport &r = *io_.report;
    r.steps = session_->globalStep() - stepBefore;
    r.stoppedEarly = fitCallbacks && fitCallbacks->stopRequested();
    if (fitCallbacks)
      r.callbacksState = fitCallbacks->saveState();
    if (fitCallbacks && o_.reduceLrOnPlateau)
      r.learningRate = fitCallbacks->learningRate();
    if (timer) {
      r.meanStepSeconds = timer->meanStepSeconds();
      r.examplesPerSecond = timer->imagesPerSecond();
      const std::vector<StepTimerHook::Parts> &parts = timer->stepParts();
      for (const StepTimerHook::Parts &part : parts) {
        r.inputSeconds += part.input / static_cast<double>(parts.size());
        r.hookSeconds += part.hooks / static_cast<double>(parts.size());
        r.computeSeconds += part.other / static_cast<double>(parts.size());
      }
    }
  }
  // A run that ran all its steps: from now on a signal ends the process at
  // once, the final checkpoint being written. A stopped one keeps its
  // handlers until every worker is done, so that another signal cannot end
  // a worker while the chief still writes.
  if (signals_ && !(preemption && preemption->stopped()))
    signals_->restore();
  if (preemption && preemption->stopped()) {
    preempted_ = true;
    if (io_.state)
      if (Status s = captureState(*io_.state); !s)
        return s;
    std::string written;
    if (checkpointHook && checkpointHook->lastSaved() > 0)
      written = (fs::path(o_.checkpointDir) /
                 ckpt::checkpointFileName(checkpointHook->lastSaved()))
                    .string();
    return preemption->finish(workers_, session_->globalStep(), written);
  }
  // Keras' on_train_end, after the last checkpoint (the last step's state).
  if (fitCallbacks)
    if (Status s = fitCallbacks->trainEnd(); !s)
      return s;
  // Keras' use_ema: fit() ends by replacing each trained variable with its
  // moving average (finalize_variable_values), after the checkpoints, which
  // keep both, so that a resumed run goes on from the raw weights. Keras
  // does so before on_train_end, where EarlyStopping's restore_best_weights
  // then sets the best epoch's raw weights over the averages: a restore
  // leaves nothing to finalize. Keras finalizes whenever fit() was asked
  // for epochs, none left to run included, so that the command of a
  // finished run, run again, ends with the run's weights.
  if (totalSteps > 0 && usesEma(p) &&
      !(fitCallbacks && fitCallbacks->restoredBestWeights()))
    if (Status s = finalizeEma(session_->variables()); !s)
      return s;

  if (o_.eval)
    if (Status s = evaluate(session_->globalStep(), true); !s)
      return s;
  if (o_.eval && io_.report)
    for (size_t i = 0; i < lastEval_.names.size(); ++i)
      io_.report->evaluation.emplace_back(lastEval_.names[i],
                                          lastEval_.values[i]);
  if (io_.state)
    if (Status s = captureState(*io_.state); !s)
      return s;
  const double rate =
      fitCallbacks ? fitCallbacks->learningRate() : planLearningRate();
  if (chief_ && !o_.saveWeights.empty()) {
    // Nothing run-specific (no step, no time): the same weights give the
    // same file, so runs compare with cmp.
    std::map<std::string, std::string> metadata{
        {"model", p.model() ? p.model()->str() : ""}};
    if (Status s = ckpt::saveWeightsFile(o_.saveWeights, session_->variables(),
                                         kerasState(rate), metadata);
        !s)
      return Status::error("--save-weights: " + s.message());
  }
  if (chief_ && !o_.saveModel.empty())
    if (Status s = ckpt::saveWeightsFile(o_.saveModel, session_->variables(),
                                         kerasState(rate), {});
        !s)
      return Status::error("--save-model: " + s.message());
  reportSkipped();
  out_.flush();
  return Status::ok();
}

} // namespace

Status processWorkers(double collectiveTimeoutSeconds, Workers *&out) {
  // MPI is initialized once in a process: the first caller's workers stay.
  static std::unique_ptr<Workers> workers;
  if (!workers) {
    if (launchedAsWorker()) {
      if (Status s = joinWorkers(std::chrono::milliseconds(static_cast<int64_t>(
                                     collectiveTimeoutSeconds * 1000)),
                                 workers);
          !s)
        return s;
    } else {
      workers = singleWorker();
    }
  }
  out = workers.get();
  return Status::ok();
}

Status runTrainingJob(const JobOptions &o, std::ostream &out, std::ostream &err,
                      const JobIo &io) {
  std::unique_ptr<Workers> joined;
  Workers *workers = io.workers;
  if (!workers) {
    if (launchedAsWorker()) {
      if (Status s = joinWorkers(std::chrono::milliseconds(static_cast<int64_t>(
                                     o.collectiveTimeoutSeconds * 1000)),
                                 joined);
          !s)
        return s;
    } else {
      joined = singleWorker();
    }
    workers = joined.get();
  }
  // Workers on one host share its cores rather than each taking them all.
  int here = 0;
  for (int w = 0; w < workers->size(); ++w)
    here += workers->host(w) == workers->host(workers->rank());
  cpu::shareCoresWith(here);
  reference::registerReferenceKernels();
  cpu::registerCpuKernels();
#ifdef GRAPH_HAVE_CUDA
  cuda::registerCudaBackend();
#endif
  auto named = [&](const Status &s) {
    return workers->size() > 1 ? Status::error(workers->name(workers->rank()) +
                                               ": " + s.message())
                               : s;
  };

  // Before the job's first file is read, so that a signal from now on
  // finds a handler; each worker checks the list (graphrun's flag parser
  // did too), and the workers compare it (compareWorkers).
  std::vector<int> preemptSignals;
  if (Status s = parsePreemptSignals(o.preemptSignals, preemptSignals); !s)
    return workers->isChief() ? s : Status::error("");
  std::unique_ptr<PreemptionSignals> signals;
  if (Status s = PreemptionSignals::install(preemptSignals, signals); !s)
    return s;
  // This thread runs device 0's kernels, and its OpenMP team may predate
  // the job: neither may take a signal (Preemption.h says why).
  cpu::shareSignalMask();
  // StatusCode::cancelled says "preempted" to graphrun, and nothing else.
  auto notPreempted = [](const Status &s) {
    return s.code() == StatusCode::cancelled ? Status::error(s.message()) : s;
  };

  TrainingJob job(o, *workers, out, err, signals.get(), io);
  int reportedBy = 0;
  Status setUp = job.setUp(reportedBy);
  if (setUp && io.state && !io.state->empty())
    // Every worker holds the same state (their jobs ran the same steps):
    // each adopts its own, and nothing needs agreeing.
    if (setUp = job.adoptState(*io.state); !setUp)
      reportedBy = workers->rank();
  if (Status s = notPreempted(setUp); !s) {
    // Every worker knows; one says it. An empty message tells graphrun's
    // main to exit non-zero without printing.
    if (workers->size() == 1)
      return s;
    // Said now, in one write, by the one worker, and only then may any
    // worker leave (the sum below is the barrier): once one exits non-zero,
    // mpirun signals the others within milliseconds, and an error printed
    // later would be lost.
    if (reportedBy == workers->rank()) {
      out.flush();
      err << "graphrun: error: " + (reportedBy != 0 ? named(s) : s).message() +
                 "\n";
      err.flush();
    }
    double done = 1;
    (void)workers->allReduceSum(&done, 1);
    return Status::error("");
  }
  Status s = job.run();
  // Every worker stopped after the same step and waited for the chief's
  // checkpoint: nothing to abort.
  if (job.preempted() && s.code() == StatusCode::cancelled) {
    // Said now, in one write, while every worker is still here: once one
    // exits non-zero, mpirun signals the others within milliseconds.
    out.flush();
    if (!s.message().empty())
      err << "graphrun: " + s.message() + "\n";
    err.flush();
    if (workers->size() > 1 && PreemptionSignals::sentByParent()) {
      // Open MPI's mpirun, sent SIGTERM (or Ctrl-C), ends the job itself:
      // it sends the workers SIGTERM and a second later SIGKILL, and
      // answers no MPI_Finalize in between (PMIx_Finalize waits for it).
      // The checkpoint is written and every worker is done: leave without
      // the MPI teardown.
      std::fflush(nullptr);
      std::_Exit(kPreemptedExitStatus);
    }
    return Status::cancelled("");
  }
  s = notPreempted(s);
  if (!s && workers->size() > 1) {
    // The others may be waiting in a collective for this worker: say why,
    // then end the job.
    out.flush();
    err << "graphrun: error: " << named(s).message() << "\n";
    err.flush();
    workers->abort(1);
  }
  return s;
}

} // namespace graph::runtime::job
