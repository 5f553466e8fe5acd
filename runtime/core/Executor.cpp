//===- Executor.cpp - runs one plan program for one step -----------------===//

#include "runtime/core/Executor.h"

#include "runtime/core/HostSchedule.h"

#include "runtime/collectives/Workers.h"
#include "runtime/core/DenormalMode.h"
#include "runtime/core/Initializers.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <map>
#include <set>
#include <utility>

namespace graph::runtime {

double StepResult::value(const std::string &name) const {
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name)
      return mean[i];
  return std::nan("");
}

namespace {

/// A batch part, for messages.
const char *partName(data::BatchPart part) {
  switch (part) {
  case data::BatchPart::images:
    return "images";
  case data::BatchPart::labels:
    return "labels";
  case data::BatchPart::sampleWeights:
    return "sample weights";
  case data::BatchPart::metricWeights:
    return "metric weights";
  }
  return "input";
}

double readScalar(const TensorRef &t) {
  switch (t.dtype) {
  case plan::DType::f32:
    return *static_cast<const float *>(t.data);
  case plan::DType::f64:
    return *static_cast<const double *>(t.data);
  case plan::DType::i32:
    return *static_cast<const int32_t *>(t.data);
  case plan::DType::i64:
    return static_cast<double>(*static_cast<const int64_t *>(t.data));
  default:
    return std::nan("");
  }
}

} // namespace

Executor::Executor(const plan::Plan &plan, const plan::Program &program)
    : plan_(plan), program_(program) {}

Executor::~Executor() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

const DeviceMemory &Executor::arena(int device) const {
  return arenas_[device];
}

Status Executor::create(const plan::Plan &plan, const plan::Program &program,
                        MirroredVariables &variables,
                        const ExecutorOptions &options,
                        std::unique_ptr<Executor> &out) {
  std::unique_ptr<Executor> e(new Executor(plan, program));
  if (Status s = e->prepare(variables, options); !s)
    return s;
  // Device 0 runs on the caller's thread; the others on their own.
  for (int d = 1; d < e->replicas_; ++d)
    e->workers_.emplace_back([raw = e.get(), d] { raw->workerLoop(d); });
  out = std::move(e);
  return Status::ok();
}

Status Executor::prepare(MirroredVariables &variables,
                         const ExecutorOptions &options) {
  options_ = options;
  std::string where = "program '" + program_.name()->str() + "'";
  // This process's slice of the program's replicas: all of them, or with
  // W workers the rank's N / W.
  int workers = options.workers ? options.workers->size() : 1;
  int rank = options.workers ? options.workers->rank() : 0;
  span_.total = program_.replicas();
  if (workers < 1 || span_.total % workers != 0)
    return Status::error(where + ": " + std::to_string(span_.total) +
                         " replicas do not split evenly across " +
                         std::to_string(workers) + " workers");
  span_.local = span_.total / workers;
  span_.first = rank * span_.local;
  replicas_ = span_.local;
  if (variables.devices() < replicas_)
    return Status::error(where + ": needs " + std::to_string(replicas_) +
                         " devices' variables, has " +
                         std::to_string(variables.devices()));

  // Inputs: the model's (one or several: each example's features are
  // their rows one after another, in plan order) and, optionally, "labels",
  // "sample_weight" and "metric_weight".
  const auto &inputs = *plan_.inputs();
  int imageInput = -1, labelInput = -1, weightInput = -1,
      metricWeightInput = -1;
  // [input]: where its elements start in an example's features (-1: not a
  // model input), and the features' elements per example. A model of
  // several outputs has a labels input each ("labels:<output>"), which take
  // their columns of the batch's targets the same way.
  std::vector<int64_t> columnOffset(inputs.size(), -1),
      labelOffset(inputs.size(), -1);
  int64_t rowElements = 0, labelElements = 0;
  int labelInputs = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (isLabelsInput(inputs[i]->name()->string_view())) {
      labelInput = static_cast<int>(i);
      ++labelInputs;
      labelOffset[i] = labelElements;
      int64_t row = 1;
      for (size_t k = 1; k < inputs[i]->shape()->size(); ++k)
        row *= inputs[i]->shape()->Get(k);
      labelElements += row;
    } else if (inputs[i]->name()->str() == "sample_weight" ||
               inputs[i]->name()->str() == "metric_weight") {
      (inputs[i]->name()->str() == "sample_weight" ? weightInput
                                                   : metricWeightInput) =
          static_cast<int>(i);
      if (inputs[i]->dtype() != plan::DType::f32 ||
          inputs[i]->shape()->size() != 1)
        return Status::error(where + ": input '" + inputs[i]->name()->str() +
                             "' must be f32 [batch]");
    } else {
      if (imageInput < 0)
        imageInput = static_cast<int>(i);
      columnOffset[i] = rowElements;
      int64_t row = 1;
      for (size_t k = 1; k < inputs[i]->shape()->size(); ++k)
        row *= inputs[i]->shape()->Get(k);
      rowElements += row;
      if (inputs[i]->shape()->Get(0) != inputs[imageInput]->shape()->Get(0))
        return Status::error(
            where + ": inputs '" + inputs[imageInput]->name()->str() +
            "' and '" + inputs[i]->name()->str() + "' have different batches");
    }
  }
  if (imageInput < 0)
    return Status::error(where + ": the plan has no image input");
  globalBatch_ = inputs[imageInput]->shape()->Get(0);
  multiLabels_ = labelInputs > 1;
  if (multiLabels_)
    labelFormat_ = data::LabelFormat::Dense;
  else if (labelInput >= 0)
    labelFormat_ = inputs[labelInput]->dtype() == plan::DType::i32
                       ? data::LabelFormat::Sparse
                   : takesTargets(plan_) ? data::LabelFormat::Dense
                                         : data::LabelFormat::OneHot;
  if (globalBatch_ % span_.total != 0)
    return Status::error(where + ": global batch " +
                         std::to_string(globalBatch_) +
                         " does not split evenly across " +
                         std::to_string(span_.total) + " replicas");
  const int64_t rowsPerReplica = globalBatch_ / span_.total;
  localBatch_ = rowsPerReplica * replicas_;

  // Devices: the host's, or the backend's (shared with the variables, which
  // move there on the first executor of a run).
  if (isHostBackend(options.backend)) {
    if (variables.placement())
      return Status::error(where + ": the variables are on " +
                           backendName(variables.placement()->backend()) +
                           " devices, not in host memory");
    if (Status s =
            createDeviceSet(options.backend, replicas_, options, deviceSet_);
        !s)
      return Status::error(where + ": " + s.message());
  } else {
    if (variables.placement() &&
        variables.placement()->backend() == options.backend) {
      deviceSet_ = variables.placement();
    } else {
      if (Status s = createDeviceSet(options.backend,
                                     std::max(replicas_, variables.devices()),
                                     options, deviceSet_);
          !s)
        return Status::error(where + ": " + s.message());
      if (Status s = variables.placeOn(deviceSet_); !s)
        return Status::error(where + ": " + s.message());
    }
    if (deviceSet_->size() < replicas_)
      return Status::error(where + ": needs " + std::to_string(replicas_) +
                           " devices, the variables' device set has " +
                           std::to_string(deviceSet_->size()));
  }

  prepared_.name = program_.name()->str();
  prepared_.replicas = replicas_;
  prepared_.span = span_;
  prepared_.batch = localBatch_;
  prepared_.firstRow = rowsPerReplica * span_.first;
  prepared_.numEvents = std::max(0, program_.num_events());
  prepared_.timestamps.assign(static_cast<size_t>(replicas_), 0);
  arenas_.resize(static_cast<size_t>(replicas_));
  for (int d = 0; d < replicas_; ++d) {
    Device &device = deviceSet_->device(d);
    if (Status s = device.allocate(program_.arena_bytes()->Get(span_.first + d),
                                   arenas_[d]);
        !s)
      return Status::error(where + ", " + device.name() +
                           " arena: " + s.message());
  }
  // The plan numbers the job's devices; this process holds [first, first +
  // local) of them as its devices 0..local - 1.
  auto local = [&](int device) -> int {
    int d = device - span_.first;
    return d >= 0 && d < replicas_ ? d : -1;
  };

  // Buffers to pointers.
  const auto &buffers = *program_.buffers();
  std::vector<void *> data(buffers.size(), nullptr);
  std::map<std::tuple<int, int, int>, void *> inputBuffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const plan::Buffer &b = *buffers[i];
    std::string at = where + ", buffer " + std::to_string(i) + ": ";
    int64_t bytes =
        elementCount(b.shape()) * static_cast<int64_t>(dtypeBytes(b.dtype()));
    // Another worker's buffer: never touched here (a view of one is too).
    int device = local(b.device());
    if (device < 0)
      continue;
    switch (b.kind()) {
    case plan::BufferKind::arena:
      data[i] = static_cast<std::byte *>(arenas_[device].data()) + b.offset();
      break;
    case plan::BufferKind::variable: {
      const plan::Variable &v = *plan_.variables()->Get(b.variable());
      if (v.dtype() != b.dtype() || bytes > variables.bytes(b.variable()))
        return Status::error(at + "does not match variable '" +
                             v.name()->str() + "'");
      data[i] = variables.data(device, b.variable());
      break;
    }
    case plan::BufferKind::input: {
      const plan::Input &in = *inputs[b.input()];
      data::BatchPart part =
          labelOffset[b.input()] >= 0      ? data::BatchPart::labels
          : b.input() == weightInput       ? data::BatchPart::sampleWeights
          : b.input() == metricWeightInput ? data::BatchPart::metricWeights
                                           : data::BatchPart::images;
      // The feed writes float32 (class indices as int32 labels).
      if (b.dtype() != plan::DType::f32 &&
          !(part == data::BatchPart::labels && b.dtype() == plan::DType::i32))
        return Status::error(at + "input '" + in.name()->str() +
                             "' is neither float32 nor int32 labels");
      // The replica's share: rows B/N of the global input's row shape.
      int64_t rows = rowsPerReplica;
      bool shapeOk = b.dtype() == in.dtype() &&
                     b.shape()->size() == in.shape()->size() &&
                     b.shape()->Get(0) == rows;
      for (size_t k = 1; shapeOk && k < b.shape()->size(); ++k)
        shapeOk = b.shape()->Get(k) == in.shape()->Get(k);
      if (!shapeOk || in.shape()->Get(0) != globalBatch_)
        return Status::error(at + "input '" + in.name()->str() +
                             "' of replica " + std::to_string(b.replica()) +
                             " is not its " + std::to_string(rows) +
                             "-row share of the global batch");
      int replica = local(b.replica());
      if (replica < 0)
        return Status::error(at + "input of replica " +
                             std::to_string(b.replica()) + " on device " +
                             std::to_string(b.device()) +
                             ", which holds another worker's replica");
      auto key = std::make_tuple(device, b.input(), replica);
      auto found = inputBuffers.find(key);
      if (found != inputBuffers.end()) {
        data[i] = found->second;
        break;
      }
      DeviceMemory storage;
      if (Status s = deviceSet_->device(device).allocate(bytes, storage); !s)
        return Status::error(at + s.message());
      data[i] = storage.data();
      inputBuffers[key] = storage.data();
      PreparedInput prepared{storage.data(), device, replica, part,
                             static_cast<size_t>(bytes)};
      if (part == data::BatchPart::images &&
          rowElements * rowsPerReplica * int64_t(sizeof(float)) != bytes) {
        prepared.columnOffset = columnOffset[b.input()];
        prepared.columns = bytes / (rowsPerReplica * int64_t(sizeof(float)));
        prepared.rowElements = rowElements;
      }
      if (part == data::BatchPart::labels && multiLabels_) {
        prepared.columnOffset = labelOffset[b.input()];
        prepared.columns = bytes / (rowsPerReplica * 4);
        prepared.rowElements = labelElements;
        prepared.intLabels = in.dtype() == plan::DType::i32;
      }
      prepared_.inputs.push_back(prepared);
      if (data::isWeights(part))
        ones_.assign(static_cast<size_t>(localBatch_), 1.0f);
      inputStorage_.push_back(std::move(storage));
      break;
    }
    case plan::BufferKind::view:
      if (b.source() < 0 || static_cast<size_t>(b.source()) >= i ||
          !data[b.source()])
        return Status::error(at + "a view must follow its source buffer");
      data[i] = static_cast<std::byte *>(data[b.source()]) +
                b.offset() * static_cast<int64_t>(dtypeBytes(b.dtype()));
      break;
    default:
      return Status::error(at + "unknown buffer kind");
    }
  }
  auto tensor = [&](int32_t index) {
    const plan::Buffer &b = *buffers[index];
    TensorRef t;
    t.data = data[index];
    t.shape.assign(b.shape()->begin(), b.shape()->end());
    t.dtype = b.dtype();
    return t;
  };

  // Ops, in program order.
  std::map<std::string, int> outputIndex, tensorOutputIndex;
  std::set<std::string> missing;
  const KernelRegistry &registry = KernelRegistry::global();
  const auto &ops = *program_.ops();

  // A mixed-precision plan on a host backend: the float32 copies its
  // kernels compute on (ReducedPrecision.h) share one scratch per device,
  // sized for the device's largest launch, rather than one copy per launch
  // (which took more memory than the float32 plan's whole arena).
  std::vector<int64_t> widen(arenas_.size(), 0);
  for (const plan::Op *op : ops) {
    int device = local(op->device());
    if (op->kind() != plan::OpKind::launch || device < 0 ||
        static_cast<size_t>(device) >= widen.size())
      continue;
    std::vector<TensorRef> ins, outs;
    if (op->ins())
      for (int32_t b : *op->ins())
        ins.push_back(tensor(b));
    if (op->outs())
      for (int32_t b : *op->outs())
        outs.push_back(tensor(b));
    widen[device] = std::max(
        widen[device], registry.widenedElements(op->kernel()->str(),
                                                options.backend, ins, outs));
  }
  widenScratch_.clear();
  for (int64_t elements : widen)
    widenScratch_.emplace_back(elements ? new float[elements]() : nullptr);

  for (size_t i = 0; i < ops.size(); ++i) {
    const plan::Op &op = *ops[i];
    std::string at = where + ", op " + std::to_string(i) + ": ";
    PreparedOp p;
    p.kind = op.kind();
    p.stream = op.stream();
    p.index = i;
    // Another worker's op: it runs there. An all-reduce is everyone's.
    if (op.kind() != plan::OpKind::all_reduce) {
      p.device = local(op.device());
      if (p.device < 0)
        continue;
    }
    switch (op.kind()) {
    case plan::OpKind::launch: {
      p.kernelName = op.kernel()->str();
      p.config = KernelConfig::fromPlan(op.config());
      if (options.learningRate >= 0 && p.config.has("learning_rate") &&
          p.kernelName == "optimizer_update") {
        // A fixed rate: it replaces a schedule too.
        p.config.set("learning_rate", options.learningRate);
        p.config.set("lr_schedule", int64_t{0});
      }
      if (op.ins())
        for (int32_t b : *op.ins())
          p.ins.push_back(tensor(b));
      if (op.outs())
        for (int32_t b : *op.outs())
          p.outs.push_back(tensor(b));
      for (auto *list : {op.ins(), op.outs()})
        if (list)
          for (int32_t b : *list)
            if (buffers[b]->device() != op.device())
              return Status::error(at + "'" + p.kernelName + "' on device " +
                                   std::to_string(op.device()) +
                                   " uses buffer " + std::to_string(b) +
                                   " of device " +
                                   std::to_string(buffers[b]->device()));
      if (!registry.has(p.kernelName, options.backend)) {
        missing.insert(p.kernelName);
        break;
      }
      Device &device = deviceSet_->device(p.device);
      if (Status s = device.activate(); !s)
        return Status::error(at + s.message());
      KernelContext site;
      site.step = 0;
      site.replica = p.device;
      site.replicas = replicas_;
      site.seed = options.seed;
      site.deviceState = device.kernelState();
      if (static_cast<size_t>(p.device) < widen.size()) {
        site.widenScratch = widenScratch_[p.device].get();
        site.widenScratchElements = widen[p.device];
      }
      if (Status s = registry.instantiate(p.kernelName, options.backend, site,
                                          p.config, p.ins, p.outs, p.kernel);
          !s)
        return Status::error(at + "'" + p.kernelName + "': " + s.message());
      break;
    }
    case plan::OpKind::all_reduce: {
      std::string reduction = op.reduction() ? op.reduction()->str() : "";
      if (reduction != "mean" && reduction != "sum")
        return Status::error(at + "all_reduce reduction '" + reduction +
                             "' is neither mean nor sum");
      int64_t count = -1;
      if (!op.ins() || static_cast<int>(op.ins()->size()) != span_.total)
        return Status::error(at + "all_reduce needs one operand per replica");
      for (int r = 0; r < span_.total; ++r) {
        const plan::Buffer &b = *buffers[op.ins()->Get(r)];
        int64_t n = elementCount(b.shape());
        if (b.device() != r || b.dtype() != plan::DType::f32 ||
            (count >= 0 && n != count))
          return Status::error(at + "all_reduce operand " + std::to_string(r) +
                               " must be an f32 buffer of device " +
                               std::to_string(r) + " as long as the others");
        count = n;
        // This process reduces its own replicas' copies; the collective
        // carries the others'.
        if (local(r) >= 0)
          p.reduceData.push_back(static_cast<float *>(data[op.ins()->Get(r)]));
      }
      p.device = -1;
      p.reduceCount = count;
      p.reduceOp = reduction == "mean" ? ReduceOp::mean : ReduceOp::sum;
      break;
    }
    case plan::OpKind::copy: {
      const plan::Buffer &src = *buffers[op.ins()->Get(0)];
      const plan::Buffer &dst = *buffers[op.outs()->Get(0)];
      size_t bytes = static_cast<size_t>(elementCount(src.shape())) *
                     dtypeBytes(src.dtype());
      if (bytes != static_cast<size_t>(elementCount(dst.shape())) *
                       dtypeBytes(dst.dtype()))
        return Status::error(at + "copy between buffers of different sizes");
      p.copySrc = data[op.ins()->Get(0)];
      p.copyDst = data[op.outs()->Get(0)];
      p.copyBytes = bytes;
      break;
    }
    case plan::OpKind::record:
    case plan::OpKind::wait:
      p.event = op.event();
      break;
    case plan::OpKind::timestamp:
      p.name = std::string_view(op.name()->c_str(), op.name()->size());
      prepared_.timestamps[p.device]++;
      break;
    case plan::OpKind::output: {
      std::string name = op.name()->str();
      TensorRef value = tensor(op.ins()->Get(0));
      // A one-element output is a scalar (loss, a metric); a larger one a
      // tensor the caller reads whole (predictions).
      // Both are read as float32 (a mixed-precision plan casts its outputs).
      if (value.dtype != plan::DType::f32)
        return Status::error(at + "output '" + name + "' is not float32");
      if (value.elements() == 1) {
        auto [it, added] =
            outputIndex.emplace(name, static_cast<int>(outputIndex.size()));
        if (added)
          prepared_.outputNames.push_back(name);
        p.output = it->second;
      } else {
        auto [it, added] = tensorOutputIndex.emplace(
            name, static_cast<int>(tensorOutputIndex.size()));
        if (added)
          prepared_.tensorOutputNames.push_back(name);
        p.tensorOutput = it->second;
      }
      p.replica = local(op.replica());
      if (p.replica < 0)
        return Status::error(at + "output '" + name + "' of replica " +
                             std::to_string(op.replica()) +
                             " on a device of replica " +
                             std::to_string(op.device()));
      p.ins.push_back(tensor(op.ins()->Get(0)));
      break;
    }
    default:
      return Status::error(at + "unknown op kind");
    }
    prepared_.ops.push_back(std::move(p));
  }
  if (!missing.empty()) {
    std::string list;
    for (const std::string &k : missing)
      list += (list.empty() ? "" : ", ") + k;
    size_t have = registry.names(options.backend).size();
    return Status::error(
        where + ": the " + backendName(options.backend) +
        " backend has no kernel for: " + list + " (" + std::to_string(have) +
        " kernels registered" +
        (have == 0 ? "; are its kernels linked into this build?" : "") +
        "): choose another --backend");
  }

  if (Status s = deviceSet_->createRunner(prepared_, options, runner_); !s)
    return Status::error(where + ": " + s.message());
  if (runner_ && options.allReduceWire != WireType::f32)
    return Status::error(
        where + ": the " + backendName(options.backend) +
        " backend all-reduces in float32 only (NCCL's bfloat16 path is not "
        "built yet): leave --allreduce-dtype at fp32");
  if (!runner_) {
    // The host path: every device runs its ops (and each all-reduce) on its
    // own thread; events are a board of step ids.
    collective_ = makeLocalCollective(span_, options.workers, options.timeout,
                                      options.allReduceWire);
    eventStep_.assign(static_cast<size_t>(prepared_.numEvents), 0);
    hostOps_ = scheduleHostOps(prepared_.ops, replicas_, prepared_.numEvents);
  }
  return Status::ok();
}

void Executor::fail(const Status &status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!failed_) {
      failed_ = true;
      error_ = status;
    }
  }
  cv_.notify_all();
  if (collective_)
    collective_->abort(status.message());
}

void Executor::recordEvent(int event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    eventStep_[event] = stepId_;
  }
  cv_.notify_all();
}

Status Executor::waitEvent(int event, int device) {
  std::unique_lock<std::mutex> lock(mutex_);
  bool ok = cv_.wait_for(lock, options_.timeout, [&] {
    return eventStep_[event] == stepId_ || failed_;
  });
  if (failed_)
    return Status::cancelled("aborted");
  if (!ok)
    return Status::timeout("program '" + program_.name()->str() + "': device " +
                           std::to_string(device) + " timed out after " +
                           std::to_string(options_.timeout.count()) +
                           " ms waiting for event " + std::to_string(event));
  return Status::ok();
}

void Executor::runDevice(int d) {
  // The cpu backend's step flushes subnormals (and its kernels hand the mode
  // on to their OpenMP teams); the reference backend's is exact IEEE
  // whatever the caller's thread had. Device 0 runs on the caller's thread,
  // which gets its own mode back afterwards.
  ScopedDenormalMode denormals(options_.backend == Backend::cpu &&
                               options_.flushDenormals);
  const data::BatchSlice *slices = slices_.data();
  for (const PreparedInput &in : prepared_.inputs) {
    if (in.device != d)
      continue;
    const data::BatchSlice &s = slices[in.replica];
    if (!s.images && !data::isWeights(in.part)) {
      // A batch of indices: the rows come from the cached dataset; the
      // image input's turn gathers its replica's labels too.
      if (in.part == data::BatchPart::labels)
        continue;
      void *labels = nullptr;
      for (const PreparedInput &other : prepared_.inputs)
        if (other.part == data::BatchPart::labels && other.device == d &&
            other.replica == in.replica)
          labels = other.dst;
      data::gatherExamples(*cached_, s.sourceIndices, s.rows, labelFormat_,
                           static_cast<float *>(in.dst), labels);
      continue;
    }
    if (in.intLabels) {
      // One of several outputs' class indices: its column of the targets.
      const float *src = static_cast<const float *>(s.data(in.part));
      int32_t *dst = static_cast<int32_t *>(in.dst);
      for (int64_t r = 0; r < s.rows; ++r)
        dst[r] =
            static_cast<int32_t>(src[r * in.rowElements + in.columnOffset]);
      continue;
    }
    if (in.columns > 0) {
      // One of several inputs (outputs): its columns of every row.
      const float *src = static_cast<const float *>(s.data(in.part));
      float *dst = static_cast<float *>(in.dst);
      const size_t rowBytes = static_cast<size_t>(in.columns) * sizeof(float);
      for (int64_t r = 0; r < s.rows; ++r)
        std::memcpy(dst + r * in.columns,
                    src + r * in.rowElements + in.columnOffset, rowBytes);
      continue;
    }
    std::memcpy(in.dst, s.data(in.part), in.bytes);
  }
  std::vector<Timestamp> &timeline = hostResult_->timestamps[d];
  KernelContext ctx;
  ctx.step = step_;
  ctx.replica = d;
  ctx.replicas = replicas_;
  ctx.globalRowOffset = prepared_.firstRow + localBatch_ / replicas_ * d;
  ctx.seed = options_.seed;
  ctx.learningRate = learningRate_;
  ctx.deviceState = nullptr;
  for (const PreparedOp *p : hostOps_[d]) {
    const PreparedOp &op = *p;
    if (failed_)
      return;
    Status s;
    switch (op.kind) {
    case plan::OpKind::launch:
      try {
        s = op.kernel(ctx, op.config, op.ins, op.outs);
      } catch (const std::exception &e) {
        s = Status::error(std::string("exception: ") + e.what());
      }
      if (!s)
        s = Status::error("program '" + program_.name()->str() + "', op " +
                          std::to_string(op.index) + " ('" + op.kernelName +
                          "' on device " + std::to_string(d) +
                          "): " + s.message());
      break;
    case plan::OpKind::all_reduce: {
      // The thread runs it between its backward ops: its span is timed
      // (kReduceBegin/End), for the step timer and the trace.
      timeline.push_back({kReduceBegin, std::chrono::steady_clock::now()});
      s = collective_->allReduce(d, op.reduceData[d], op.reduceCount,
                                 op.reduceOp);
      timeline.push_back({kReduceEnd, std::chrono::steady_clock::now()});
      if (!s)
        s = Status::error("program '" + program_.name()->str() + "', op " +
                          std::to_string(op.index) + ": " + s.message());
      break;
    }
    case plan::OpKind::copy:
      std::memcpy(op.copyDst, op.copySrc, op.copyBytes);
      break;
    case plan::OpKind::record:
      recordEvent(op.event);
      break;
    case plan::OpKind::wait:
      s = waitEvent(op.event, d);
      break;
    case plan::OpKind::timestamp:
      timeline.push_back({op.name, std::chrono::steady_clock::now()});
      break;
    case plan::OpKind::output:
      if (op.tensorOutput >= 0) {
        const float *values = op.ins[0].f32();
        hostResult_->tensors[op.replica][op.tensorOutput].assign(
            values, values + op.ins[0].elements());
      } else {
        hostResult_->perReplica[op.replica][op.output] = readScalar(op.ins[0]);
      }
      break;
    default:
      break;
    }
    if (!s) {
      fail(s);
      return;
    }
  }
}

void Executor::workerLoop(int device) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [&] { return stopping_ || startGeneration_ != seen; });
      if (stopping_)
        return;
      seen = startGeneration_;
    }
    runDevice(device);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ++finished_;
    }
    cv_.notify_all();
  }
}

Status Executor::checkBatch(const data::Batch &batch) {
  // Messages are built only on failure: a step allocates nothing.
  auto where = [&] { return "program '" + program_.name()->str() + "'"; };
  if (batch.size != localBatch_)
    return Status::error(
        where() + ": the batch has " + std::to_string(batch.size) +
        " rows, the plan was compiled for a global batch of " +
        std::to_string(globalBatch_) +
        (localBatch_ != globalBatch_
             ? ", of which this worker feeds " + std::to_string(localBatch_)
             : std::string()));
  if (batch.indicesOnly()) {
    if (!cached_)
      return Status::error(where() + ": a batch of indices only, and no "
                                     "dataset is cached to gather from "
                                     "(cacheDataset)");
    return data::checkSourceIndices(batch, cached_->size());
  }
  // The slices must fill the input buffers exactly.
  for (const PreparedInput &in : prepared_.inputs) {
    const data::BatchSlice &sl = slices_[in.replica];
    size_t have = 0;
    switch (in.part) {
    case data::BatchPart::images:
      have =
          static_cast<size_t>(sl.rows * batch.shape.elements()) * sizeof(float);
      if (in.columns > 0 && batch.shape.elements() == in.rowElements)
        have = static_cast<size_t>(sl.rows * in.columns) * sizeof(float);
      break;
    case data::BatchPart::labels:
      have =
          sl.sparseLabels ? sl.rows * sizeof(int32_t)
          : sl.oneHotLabels
              ? static_cast<size_t>(sl.rows * batch.numClasses) * sizeof(float)
              : 0;
      if (in.columns > 0 && sl.oneHotLabels &&
          batch.numClasses == in.rowElements)
        have = static_cast<size_t>(sl.rows * in.columns) * 4;
      break;
    case data::BatchPart::sampleWeights:
    case data::BatchPart::metricWeights:
      have = static_cast<size_t>(sl.rows) * sizeof(float);
      break;
    }
    if (have != in.bytes)
      return Status::error(
          where() + ": the batch's " + partName(in.part) + " (" +
          batch.shape.str() + ", " + std::to_string(batch.numClasses) +
          " classes, " +
          (batch.labelFormat == data::LabelFormat::Sparse  ? "sparse"
           : batch.labelFormat == data::LabelFormat::Dense ? "target"
                                                           : "one-hot") +
          " labels) do not fit the plan's input of " +
          std::to_string(in.bytes) + " bytes per replica");
  }
  return Status::ok();
}

Status Executor::cacheDataset(std::shared_ptr<const data::Dataset> dataset) {
  std::string at = "program '" + program_.name()->str() + "': caching " +
                   (dataset ? dataset->name : std::string("no dataset")) + ": ";
  if (!dataset)
    return Status::error(at + "no dataset given");
  if (multiLabels_)
    return Status::error(at + "the model has several outputs, whose labels "
                              "a cached dataset does not feed yet");
  if (Status s = dataset->validate(); !s)
    return Status::error(at + s.message());
  // Each input buffer must be exactly the rows a gather writes.
  int64_t rows = localBatch_ / replicas_;
  for (const PreparedInput &in : prepared_.inputs) {
    // The weights come with the indices, from the host.
    if (data::isWeights(in.part))
      continue;
    int64_t want = in.part == data::BatchPart::labels
                       ? rows * (labelFormat_ == data::LabelFormat::Sparse
                                     ? static_cast<int64_t>(sizeof(int32_t))
                                     : dataset->numClasses *
                                           static_cast<int64_t>(sizeof(float)))
                       : rows * dataset->shape.elements() *
                             static_cast<int64_t>(sizeof(float));
    if (static_cast<int64_t>(in.bytes) != want)
      return Status::error(at + "its " + partName(in.part) + " (" +
                           dataset->shape.str() + ", " +
                           std::to_string(dataset->numClasses) +
                           " classes) do not fit the plan's input of " +
                           std::to_string(in.bytes) + " bytes per replica");
  }
  if (runner_)
    if (Status s = runner_->cacheDataset(*dataset, labelFormat_); !s)
      return Status::error(at + s.message());
  cached_ = std::move(dataset);
  return Status::ok();
}

Status Executor::stage(const data::Batch &batch) {
  if (failed_)
    return Status::error("program '" + program_.name()->str() +
                         "': an earlier step failed: " + error_.message());
  if (staged_)
    return Status::error("program '" + program_.name()->str() +
                         "': stage() twice without a launch() between");
  if (Status s = data::splitBatch(batch, replicas_, slices_); !s)
    return s;
  // A batch without weights (every row an example) weighs every row 1.
  if (!ones_.empty())
    for (data::BatchSlice &slice : slices_) {
      if (!slice.sampleWeights)
        slice.sampleWeights = ones_.data() + slice.firstRow;
      if (!slice.metricWeights)
        slice.metricWeights = ones_.data() + slice.firstRow;
    }
  if (Status s = checkBatch(batch); !s)
    return s;
  if (runner_)
    if (Status s = runner_->stage(slices_); !s) {
      fail(s);
      return s;
    }
  staged_ = true;
  return Status::ok();
}

Status Executor::launch(int64_t step, StepResult &result) {
  if (failed_)
    return Status::error("program '" + program_.name()->str() +
                         "': an earlier step failed: " + error_.message());
  if (!staged_)
    return Status::error("program '" + program_.name()->str() +
                         "': launch() with no staged batch (stage() first)");
  if (stepsInFlight() >= maxStepsInFlight())
    return Status::error("program '" + program_.name()->str() + "': launch() " +
                         "while " + std::to_string(stepsInFlight()) +
                         " step(s) are in flight (wait() first)");
  for (const Launched &l : inFlight_)
    if (l.result == &result)
      return Status::error("program '" + program_.name()->str() +
                           "': launch() into the result of a step in flight");
  const std::vector<std::string> &names = prepared_.outputNames;
  if (result.names != names) {
    result.names = names;
    result.perReplica.assign(static_cast<size_t>(replicas_),
                             std::vector<double>(names.size(), 0.0));
    result.mean.assign(names.size(), 0.0);
  }
  if (result.tensorNames != prepared_.tensorOutputNames) {
    result.tensorNames = prepared_.tensorOutputNames;
    result.tensors.assign(
        static_cast<size_t>(replicas_),
        std::vector<std::vector<float>>(result.tensorNames.size()));
  }
  result.timestamps.resize(static_cast<size_t>(replicas_));
  for (int d = 0; d < replicas_; ++d) {
    result.timestamps[d].clear();
    result.timestamps[d].reserve(prepared_.timestamps[d]);
  }
  staged_ = false;
  Launched launched;
  launched.result = &result;
  if (runner_) {
    launched.status = runner_->launch(step);
  } else {
    hostResult_ = &result;
    launched.status = runHost(step);
    hostResult_ = nullptr;
    launched.crossWorkerSeconds =
        collective_ ? collective_->takeCrossWorkerSeconds() : 0.0;
  }
  // A failure is wait()'s to report, but a device that failed mid-launch
  // takes no more stages meanwhile.
  if (!launched.status && runner_)
    fail(launched.status);
  inFlight_.push_back(std::move(launched));
  return Status::ok();
}

int Executor::maxStepsInFlight() const {
  // The host backends run a step inside launch(): a second launch only
  // queues its result behind the first's.
  return runner_ ? runner_->maxStepsInFlight() : 2;
}

Status Executor::setLearningRate(double rate) {
  if (runner_)
    return Status::error(
        "a learning rate set while training (ReduceLROnPlateau) is not on "
        "the " +
        std::string(backendName(options_.backend)) +
        " backend yet: its captured steps read the plan's rate");
  if (!inFlight_.empty())
    return Status::error("the learning rate changes between steps, not with "
                         "a step in flight");
  learningRate_ = rate;
  return Status::ok();
}

void Executor::discardStaged() {
  if (!staged_)
    return;
  staged_ = false;
  if (runner_)
    runner_->discardStaged();
}

Status Executor::wait() {
  if (inFlight_.empty())
    return Status::error("program '" + program_.name()->str() +
                         "': wait() with no step launched");
  Launched oldest = std::move(inFlight_.front());
  inFlight_.erase(inFlight_.begin());
  StepResult &result = *oldest.result;
  Status s = std::move(oldest.status);
  if (s && runner_)
    s = runner_->wait(result);
  if (!s) {
    // A device that failed mid-step is in an unknown state: later steps
    // report this failure instead of running on it.
    if (runner_)
      fail(s);
    return s;
  }
  for (size_t o = 0; o < result.names.size(); ++o) {
    double sum = 0;
    for (int r = 0; r < replicas_; ++r)
      sum += result.perReplica[r][o];
    result.mean[o] = sum / replicas_;
  }
  result.crossWorkerSeconds = oldest.crossWorkerSeconds;
  return Status::ok();
}

Status Executor::run(const data::Batch &batch, int64_t step,
                     StepResult &result) {
  if (Status s = stage(batch); !s)
    return s;
  if (Status s = launch(step, result); !s)
    return s;
  return wait();
}

Status Executor::runHost(int64_t step) {
  step_ = step;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++stepId_;
    ++startGeneration_;
    finished_ = 0;
  }
  cv_.notify_all();
  runDevice(0);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return finished_ == replicas_ - 1; });
  }
  if (failed_)
    return error_;
  return Status::ok();
}

int64_t Executor::tensorOutputElements(const std::string &name) const {
  for (const PreparedOp &op : prepared_.ops)
    if (op.tensorOutput >= 0 &&
        prepared_.tensorOutputNames[op.tensorOutput] == name)
      return op.ins[0].elements();
  return 0;
}

Status findProgram(const plan::Plan &plan, plan::ProgramKind kind, int replicas,
                   const std::string &planName, const plan::Program *&out) {
  std::string wanted = std::string(plan::EnumNameProgramKind(kind)) + "_x" +
                       std::to_string(replicas);
  std::vector<int> counts;
  for (const plan::Program *p : *plan.programs()) {
    if (p->kind() != kind)
      continue;
    if (p->name()->str() == wanted && p->replicas() == replicas) {
      out = p;
      return Status::ok();
    }
    counts.push_back(p->replicas());
  }
  std::sort(counts.begin(), counts.end());
  std::string list;
  for (int c : counts)
    list += (list.empty() ? "" : ", ") + std::to_string(c);
  return Status::error(
      planName + ": no " + plan::EnumNameProgramKind(kind) + " program for " +
      std::to_string(replicas) + " replica(s) ('" + wanted + "'); " +
      (list.empty() ? std::string("it has none")
                    : "it has programs for " + list + " replica(s)") +
      ": use one of those counts, or recompile with graphc --replicas=" +
      std::to_string(replicas));
}

} // namespace graph::runtime
