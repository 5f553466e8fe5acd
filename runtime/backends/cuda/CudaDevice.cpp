//===- CudaDevice.cpp - logical GPUs and the CUDA program runner ----------===//

#include "runtime/backends/cuda/CudaDevice.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/InputGather.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace graph::runtime::cuda {
namespace {

/// Set when the watchdog gave up on a step: some GPU may never finish its
/// work, so teardown must not wait for it.
std::atomic<bool> &gpuHungFlag() {
  static std::atomic<bool> flag{false};
  return flag;
}
bool gpuHung() { return gpuHungFlag().load(std::memory_order_relaxed); }
void markGpuHung() { gpuHungFlag().store(true, std::memory_order_relaxed); }

std::atomic<int64_t> &allocationCounter() {
  static std::atomic<int64_t> counter{0};
  return counter;
}

/// Page-locked host memory (portable: every GPU of the process may copy
/// from it asynchronously).
struct PinnedFree {
  void operator()(void *p) const {
    if (!gpuHung()) // cudaFreeHost may synchronise: leak (see ~CudaDevice)
      (void)cudaFreeHost(p);
  }
};
using PinnedMemory = std::unique_ptr<void, PinnedFree>;

Status allocatePinned(size_t bytes, PinnedMemory &out) {
  void *p = nullptr;
  RETURN_IF_CUDA_ERROR(
      cudaHostAlloc(&p, std::max<size_t>(bytes, 8), cudaHostAllocPortable));
  std::memset(p, 0, std::max<size_t>(bytes, 8));
  out.reset(p);
  return Status::ok();
}

double readScalar(const std::byte *p, plan::DType dtype) {
  switch (dtype) {
  case plan::DType::f32: {
    float v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  case plan::DType::f64: {
    double v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  case plan::DType::i32: {
    int32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
  case plan::DType::i64: {
    int64_t v;
    std::memcpy(&v, p, sizeof v);
    return static_cast<double>(v);
  }
  default:
    return std::nan("");
  }
}

int streamIndex(plan::StreamKind kind) {
  switch (kind) {
  case plan::StreamKind::comm:
    return 1;
  case plan::StreamKind::copy:
    return 2;
  default:
    return 0;
  }
}

constexpr std::array<plan::StreamKind, 3> kStreams = {
    plan::StreamKind::compute, plan::StreamKind::comm, plan::StreamKind::copy};

} // namespace

int physicalGpuCount(std::string *whyNone) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError(); // not sticky: leave the runtime clean
    if (whyNone)
      *whyNone = "cudaGetDeviceCount: " + resultText(e);
    return 0;
  }
  if (count == 0 && whyNone)
    *whyNone = "cudaGetDeviceCount found no GPU";
  return count;
}

int64_t cudaAllocations() {
  return allocationCounter().load(std::memory_order_relaxed);
}

//===----------------------------------------------------------------------===//
// CudaDevice
//===----------------------------------------------------------------------===//

Status CudaDevice::create(int logical, int ordinal,
                          std::unique_ptr<CudaDevice> &out) {
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  d->state_.logical = logical;
  d->state_.ordinal = ordinal;
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal));
  RETURN_IF_CUDA_ERROR(
      cudaStreamCreateWithFlags(&d->state_.compute, cudaStreamNonBlocking));
  RETURN_IF_CUDA_ERROR(
      cudaStreamCreateWithFlags(&d->state_.comm, cudaStreamNonBlocking));
  RETURN_IF_CUDA_ERROR(
      cudaStreamCreateWithFlags(&d->state_.copy, cudaStreamNonBlocking));
  RETURN_IF_CUDA_ERROR(cudnnCreate(&d->state_.cudnn));
  RETURN_IF_CUDA_ERROR(cudnnSetStream(d->state_.cudnn, d->state_.compute));
  RETURN_IF_CUDA_ERROR(cublasLtCreate(&d->state_.cublasLt));
  if (Status s =
          d->allocate(static_cast<int64_t>(kWorkspaceBytes), d->workspace_);
      !s)
    return Status::error(d->name() + " workspace: " + s.message());
  d->state_.workspace = d->workspace_.data();
  d->state_.workspaceBytes = kWorkspaceBytes;
  if (Status s = d->allocate(sizeof(int64_t), d->step_); !s)
    return Status::error(d->name() + " step scalar: " + s.message());
  d->state_.deviceStep = d->deviceStep();
  out = std::move(d);
  return Status::ok();
}

CudaDevice::~CudaDevice() {
  // After the watchdog gave up on a step, a kernel may never finish: every
  // synchronising call (a stream sync, cudaFree) would block forever and
  // the error would never reach the user. Leak instead; the process is
  // about to exit with that error.
  if (gpuHung())
    return;
  // Teardown reports to no one: errors are ignored on purpose, and queued
  // work finishes before the memory and streams it uses go away.
  (void)cudaSetDevice(state_.ordinal);
  (void)synchronize();
  workspace_ = DeviceMemory();
  step_ = DeviceMemory();
  if (state_.cublasLt)
    (void)cublasLtDestroy(state_.cublasLt);
  if (state_.cudnn)
    (void)cudnnDestroy(state_.cudnn);
  for (cudaStream_t s : {state_.compute, state_.comm, state_.copy})
    if (s)
      (void)cudaStreamDestroy(s);
}

std::string CudaDevice::name() const {
  return "cuda:" + std::to_string(state_.logical) + " (GPU " +
         std::to_string(state_.ordinal) + ")";
}

cudaStream_t CudaDevice::stream(plan::StreamKind kind) const {
  switch (kind) {
  case plan::StreamKind::comm:
    return state_.comm;
  case plan::StreamKind::copy:
    return state_.copy;
  default:
    return state_.compute;
  }
}

Status CudaDevice::activate() {
  RETURN_IF_CUDA_ERROR(cudaSetDevice(state_.ordinal));
  return Status::ok();
}

Status CudaDevice::synchronize() {
  RETURN_IF_CUDA_ERROR(cudaSetDevice(state_.ordinal));
  for (cudaStream_t s : {state_.compute, state_.comm, state_.copy})
    if (s)
      RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(s));
  return Status::ok();
}

Status CudaDevice::allocate(int64_t bytes, DeviceMemory &out) {
  if (bytes < 0)
    return Status::error(name() + ": negative allocation " +
                         std::to_string(bytes));
  RETURN_IF_CUDA_ERROR(cudaSetDevice(state_.ordinal));
  size_t size = std::max<size_t>(static_cast<size_t>(bytes), 1);
  void *p = nullptr;
  cudaError_t e = cudaMalloc(&p, size);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return Status::error(name() + ": cannot allocate " + std::to_string(size) +
                         " bytes of device memory: " + resultText(e) +
                         " (a smaller --batch-size or fewer logical GPUs per "
                         "GPU needs less)");
  }
  int ordinal = state_.ordinal;
  DeviceMemory memory(p, bytes, [ordinal](void *q) {
    if (gpuHung())
      return; // cudaFree would wait for the hung kernel: leak (see above)
    (void)cudaSetDevice(ordinal);
    (void)cudaFree(q);
  });
  // Zeroed on a stream of this device: the memory is ready for any of them
  // once allocate() returns.
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(p, 0, size, state_.copy));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(state_.copy));
  allocationCounter().fetch_add(1, std::memory_order_relaxed);
  out = std::move(memory);
  return Status::ok();
}

Status CudaDevice::copyFromHost(void *dst, const void *src, size_t bytes) {
  if (Status s = synchronize(); !s)
    return s;
  RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, state_.copy));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(state_.copy));
  return Status::ok();
}

Status CudaDevice::copyToHost(void *dst, const void *src, size_t bytes) {
  if (Status s = synchronize(); !s)
    return s;
  RETURN_IF_CUDA_ERROR(
      cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, state_.copy));
  RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(state_.copy));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// CudaRunner
//===----------------------------------------------------------------------===//

namespace {

class CudaRunner final : public ProgramRunner {
public:
  CudaRunner(const PreparedProgram &program, CudaDeviceSet &set,
             const ExecutorOptions &options)
      : program_(program), set_(set), options_(options) {}
  ~CudaRunner() override;

  Status prepare();
  Status stage(const std::vector<data::BatchSlice> &slices) override;
  Status launch(int64_t step) override;
  Status wait(StepResult &result) override;
  Status cacheDataset(const data::Dataset &dataset,
                      data::LabelFormat format) override;
  void discardStaged() override;

private:
  Status upload(int slot, const std::vector<data::BatchSlice> &slices,
                bool indices);
  Status enqueueStep(int slot, int64_t step);
  Status newEvent(int ordinal, unsigned flags, cudaEvent_t &out);
  Status prepareStaging();
  Status enqueueInputs(int slot, bool graphs);
  Status enqueueOps(int64_t step, bool capturing);
  Status enqueueEagerEnd();
  Status captureGraphs(int64_t step);
  Status launchGraphs();
  Status waitForStep(int64_t step);
  Status readResults(StepResult &result);
  cudaEvent_t doneEvent(int replica) const {
    return graphsReady_ ? done_[groups_[groupOf_[replica]].members.front()]
                        : done_[replica];
  }
  std::string where(const PreparedOp &op) const {
    return "program '" + program_.name + "', op " + std::to_string(op.index);
  }

  struct GraphGroup {
    int ordinal = 0;
    std::vector<int> members; // replicas on this GPU; the first is the origin
    cudaEvent_t fork = nullptr;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
  };

  /// One of the two input staging slots: stage(k+1) fills one while step
  /// k reads the other. The host half is pinned (every replica's payload,
  /// back to back); the device half is one buffer per replica on its GPU,
  /// filled on the copy stream and moved into the arena's input buffers at
  /// launch (a device-to-device copy, or a gather from the cached dataset).
  struct StagingSlot {
    PinnedMemory host;
    std::vector<DeviceMemory> device;  // [replica]
    std::vector<cudaEvent_t> copied;   // [replica], on the copy stream
    std::vector<cudaEvent_t> consumed; // [replica], on the compute stream
    bool indices = false;              // holds source indices, not rows
  };
  static constexpr int kSlots = 2;

  const PreparedProgram &program_;
  CudaDeviceSet &set_;
  ExecutorOptions options_;
  int replicas_ = 0;
  NcclCollective *collective_ = nullptr;
  std::vector<CudaDevice *> devices_;   // [replica]
  std::vector<KernelContext> contexts_; // [replica]
  std::vector<std::pair<cudaEvent_t, int>> ownedEvents_;
  std::vector<cudaEvent_t> planEvents_;      // [plan event]
  std::vector<cudaEvent_t> timestampEvents_; // [op], null for other ops
  std::vector<int64_t> outputOffset_;        // [op], -1 for other ops
  PinnedMemory outputs_;                     // every output op's bytes
  std::array<StagingSlot, kSlots> slots_;
  std::vector<size_t> payloadOffset_; // [input], in its replica's
  std::vector<size_t> replicaOffset_; // [replica], in a host slot
  std::vector<size_t> replicaBytes_;  // [replica], rows' payload
  int nextSlot_ = 0;
  int stagedSlot_ = -1; // -1: nothing staged
  bool inFlight_ = false;
  // Set by any failure after the first enqueue: the devices may still run
  // (or never finish) work of this runner, so nothing more is enqueued.
  bool broken_ = false;
  int64_t stepInFlight_ = 0;
  PinnedMemory stepHost_;                        // the step, for the scalars
  std::vector<cudaEvent_t> inputReady_, done_;   // [replica]
  std::vector<std::array<cudaEvent_t, 3>> join_; // [replica][stream]
  std::vector<GraphGroup> groups_;
  std::vector<int> groupOf_;                                  // [replica]
  std::vector<std::chrono::steady_clock::time_point> anchor_; // [replica]
  // --cache-on-device: the dataset on each physical GPU, and the label
  // format the program's labels input wants.
  struct CachedOnGpu {
    DeviceMemory images, labels;
    CachedExamples view;
  };
  std::map<int, CachedOnGpu> cached_; // by ordinal
  bool cachedOneHot_ = false;
  bool useGraphs_ = false;
  bool graphsReady_ = false;
  int64_t stepsRun_ = 0;
};

CudaRunner::~CudaRunner() {
  if (gpuHung())
    return; // see ~CudaDevice
  // Nothing may still use the graphs and events destroyed below.
  for (CudaDevice *d : devices_)
    (void)d->synchronize();
  for (GraphGroup &g : groups_) {
    (void)cudaSetDevice(g.ordinal);
    if (g.exec)
      (void)cudaGraphExecDestroy(g.exec);
    if (g.graph)
      (void)cudaGraphDestroy(g.graph);
  }
  for (auto &[event, ordinal] : ownedEvents_) {
    (void)cudaSetDevice(ordinal);
    (void)cudaEventDestroy(event);
  }
}

Status CudaRunner::newEvent(int ordinal, unsigned flags, cudaEvent_t &out) {
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal));
  RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&out, flags));
  ownedEvents_.emplace_back(out, ordinal);
  return Status::ok();
}

Status CudaRunner::prepare() {
  replicas_ = program_.replicas;
  std::string at = "program '" + program_.name + "': ";
  if (replicas_ > set_.size())
    return Status::error(at + std::to_string(replicas_) + " replicas on " +
                         std::to_string(set_.size()) + " logical GPUs");
  for (int r = 0; r < replicas_; ++r) {
    CudaDevice &d = set_.cudaDevice(r);
    devices_.push_back(&d);
    KernelContext ctx;
    ctx.replica = r;
    ctx.replicas = replicas_;
    ctx.globalRowOffset = program_.firstRow + program_.batch / replicas_ * r;
    ctx.seed = options_.seed;
    ctx.deviceState = d.kernelState();
    contexts_.push_back(ctx);
  }

  // Per replica: input hand-over, completion, and the joins of its comm
  // and copy streams into compute. Completion events time the step.
  inputReady_.resize(replicas_);
  done_.resize(replicas_);
  join_.resize(replicas_);
  for (int r = 0; r < replicas_; ++r) {
    int ordinal = devices_[r]->ordinal();
    if (Status s = newEvent(ordinal, cudaEventDisableTiming, inputReady_[r]);
        !s)
      return s;
    if (Status s = newEvent(ordinal, cudaEventDefault, done_[r]); !s)
      return s;
    for (cudaEvent_t &e : join_[r])
      if (Status s = newEvent(ordinal, cudaEventDisableTiming, e); !s)
        return s;
  }

  // Graph groups: the replicas of each physical GPU.
  groupOf_.assign(replicas_, -1);
  for (int r = 0; r < replicas_; ++r) {
    int ordinal = devices_[r]->ordinal();
    auto it =
        std::find_if(groups_.begin(), groups_.end(),
                     [&](const GraphGroup &g) { return g.ordinal == ordinal; });
    if (it == groups_.end()) {
      groups_.push_back(GraphGroup{});
      groups_.back().ordinal = ordinal;
      it = groups_.end() - 1;
    }
    it->members.push_back(r);
    groupOf_[r] = static_cast<int>(it - groups_.begin());
  }
  for (GraphGroup &g : groups_)
    if (Status s = newEvent(g.ordinal, cudaEventDisableTiming, g.fork); !s)
      return s;

  // Plan events live on the GPU whose stream records them; a wait on
  // another GPU would cross two graph captures, so such a program runs
  // eagerly.
  bool crossGpuWait = false;
  planEvents_.assign(static_cast<size_t>(program_.numEvents), nullptr);
  std::vector<int> eventOrdinal(planEvents_.size(), -1);
  timestampEvents_.assign(program_.ops.size(), nullptr);
  outputOffset_.assign(program_.ops.size(), -1);
  int64_t outputBytes = 0;
  bool hasAllReduce = false;
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    const PreparedOp &op = program_.ops[i];
    int ordinal = op.device >= 0 ? devices_[op.device]->ordinal() : -1;
    switch (op.kind) {
    case plan::OpKind::record:
      if (eventOrdinal[op.event] < 0) {
        eventOrdinal[op.event] = ordinal;
        if (Status s = newEvent(ordinal, cudaEventDisableTiming,
                                planEvents_[op.event]);
            !s)
          return s;
      } else if (eventOrdinal[op.event] != ordinal) {
        return Status::error(where(op) + ": event " + std::to_string(op.event) +
                             " is recorded on GPU " +
                             std::to_string(eventOrdinal[op.event]) +
                             " and on GPU " + std::to_string(ordinal) +
                             "; a CUDA event belongs to one GPU");
      }
      break;
    case plan::OpKind::wait:
      if (eventOrdinal[op.event] != ordinal)
        crossGpuWait = true;
      break;
    case plan::OpKind::timestamp:
      if (Status s = newEvent(ordinal, cudaEventDefault, timestampEvents_[i]);
          !s)
        return s;
      break;
    case plan::OpKind::output:
      // Scalars (loss, metrics) and tensors (predictions) side by side,
      // each 8-byte aligned.
      if (op.tensorOutput < 0 && dtypeBytes(op.ins[0].dtype) > 8)
        return Status::error(where(op) + ": output '" + std::string(op.name) +
                             "' is wider than 8 bytes");
      outputOffset_[i] = outputBytes;
      outputBytes +=
          (op.ins[0].elements() * dtypeBytes(op.ins[0].dtype) + 7) / 8 * 8;
      break;
    case plan::OpKind::all_reduce:
      hasAllReduce = true;
      break;
    default:
      break;
    }
  }
  if (hasAllReduce)
    if (Status s =
            set_.collective(program_.span, options_.workers, collective_);
        !s)
      return Status::error(at + s.message());

  if (Status s = allocatePinned(static_cast<size_t>(outputBytes), outputs_); !s)
    return Status::error(at + "output staging: " + s.message());
  // Staging and the gather write replica r's inputs from replica r's
  // streams: an input on another device would be written unordered with
  // that device's streams. The compiler places each replica's inputs on
  // its own device.
  for (const PreparedInput &in : program_.inputs)
    if (in.device != in.replica)
      return Status::error(at + "an input of replica " +
                           std::to_string(in.replica) + " is on device " +
                           std::to_string(in.device) +
                           "; the cuda backend needs each replica's inputs "
                           "on its own device");
  if (Status s = prepareStaging(); !s)
    return Status::error(at + "input staging: " + s.message());
  if (Status s = allocatePinned(sizeof(int64_t), stepHost_); !s)
    return Status::error(at + "step staging: " + s.message());
  anchor_.resize(replicas_);

  useGraphs_ = options_.cudaGraph;
  // NCCL's documentation ("Using NCCL with CUDA Graphs"): graphs of several
  // GPUs' communicators launched from one thread can deadlock, and mixing
  // eager and captured collectives on one communicator (our eager first
  // step) has been seen to. One physical GPU (logical GPUs reduced by our
  // own kernel) is unaffected.
  if (useGraphs_ && hasAllReduce && collective_ &&
      collective_->physicalGpus() > 1) {
    useGraphs_ = false;
    std::fprintf(stderr,
                 "graphrun: note: program '%s' all-reduces across %d GPUs "
                 "with NCCL from one thread; it runs without CUDA graphs\n",
                 program_.name.c_str(), collective_->physicalGpus());
  }
  if (useGraphs_ && crossGpuWait) {
    useGraphs_ = false;
    std::fprintf(stderr,
                 "graphrun: note: program '%s' waits on another GPU's event; "
                 "it runs without CUDA graphs\n",
                 program_.name.c_str());
  }
  return Status::ok();
}

Status CudaRunner::prepareStaging() {
  // A replica's payload: its inputs' bytes (each 256-byte aligned), or its
  // rows' source indices when the dataset is cached; the slots are sized
  // for either, since cacheDataset() may come after prepare().
  const int64_t rows = program_.batch / replicas_;
  replicaBytes_.assign(replicas_, 0);
  payloadOffset_.assign(program_.inputs.size(), 0);
  for (size_t i = 0; i < program_.inputs.size(); ++i) {
    const PreparedInput &in = program_.inputs[i];
    payloadOffset_[i] = replicaBytes_[in.replica];
    replicaBytes_[in.replica] += (in.bytes + 255) / 256 * 256;
  }
  size_t hostBytes = 0;
  replicaOffset_.assign(replicas_, 0);
  std::vector<size_t> capacity(replicas_);
  for (int r = 0; r < replicas_; ++r) {
    capacity[r] =
        std::max(replicaBytes_[r], static_cast<size_t>(rows) * sizeof(int64_t));
    capacity[r] = (capacity[r] + 255) / 256 * 256;
    replicaOffset_[r] = hostBytes;
    hostBytes += capacity[r];
  }
  for (StagingSlot &slot : slots_) {
    if (Status s = allocatePinned(hostBytes, slot.host); !s)
      return s;
    slot.device.resize(replicas_);
    slot.copied.assign(replicas_, nullptr);
    slot.consumed.assign(replicas_, nullptr);
    for (int r = 0; r < replicas_; ++r) {
      int ordinal = devices_[r]->ordinal();
      if (Status s = devices_[r]->allocate(static_cast<int64_t>(capacity[r]),
                                           slot.device[r]);
          !s)
        return s;
      if (Status s = newEvent(ordinal, cudaEventDisableTiming, slot.copied[r]);
          !s)
        return s;
      if (Status s =
              newEvent(ordinal, cudaEventDisableTiming, slot.consumed[r]);
          !s)
        return s;
    }
  }
  return Status::ok();
}

Status CudaRunner::cacheDataset(const data::Dataset &dataset,
                                data::LabelFormat format) {
  if (inFlight_ || stagedSlot_ >= 0)
    return Status::error("cannot cache a dataset while a step is staged or "
                         "in flight");
  if (program_.batch / replicas_ > 65535)
    return Status::error(std::to_string(program_.batch / replicas_) +
                         " rows per replica; the gather takes at most 65535");
  const int64_t imageBytes = dataset.size() * dataset.shape.elements() *
                             static_cast<int64_t>(sizeof(float));
  const int64_t labelBytes =
      dataset.size() * static_cast<int64_t>(sizeof(int32_t));
  std::map<int, CachedOnGpu> cached;
  // One copy per physical GPU: logical GPUs that share one share it.
  for (CudaDevice *d : devices_) {
    if (cached.count(d->ordinal()))
      continue;
    CachedOnGpu &c = cached[d->ordinal()];
    if (Status s = d->allocate(imageBytes, c.images); !s)
      return s;
    if (Status s = d->allocate(labelBytes, c.labels); !s)
      return s;
    if (Status s = d->copyFromHost(c.images.data(), dataset.images.data(),
                                   static_cast<size_t>(imageBytes));
        !s)
      return s;
    if (Status s = d->copyFromHost(c.labels.data(), dataset.labels.data(),
                                   static_cast<size_t>(labelBytes));
        !s)
      return s;
    c.view.images = static_cast<const float *>(c.images.data());
    c.view.labels = static_cast<const int32_t *>(c.labels.data());
    c.view.examples = dataset.size();
    c.view.elements = dataset.shape.elements();
    c.view.classes = dataset.numClasses;
  }
  cached_ = std::move(cached);
  cachedOneHot_ = format == data::LabelFormat::OneHot;
  return Status::ok();
}

Status CudaRunner::stage(const std::vector<data::BatchSlice> &slices) {
  const std::string at = "program '" + program_.name + "': staging a batch: ";
  if (broken_)
    return Status::error(at + "an earlier step of this program failed");
  if (stagedSlot_ >= 0)
    return Status::error(at + "the previous one was not launched yet");
  if (static_cast<int>(slices.size()) != replicas_)
    return Status::error(at + std::to_string(slices.size()) + " slices for " +
                         std::to_string(replicas_) + " replicas");
  const bool indices = slices.front().images == nullptr;
  if (indices && cached_.empty())
    return Status::error(at + "a batch of indices, and no dataset is cached");
  if (Status s = upload(nextSlot_, slices, indices); !s) {
    broken_ = true;
    return s;
  }
  stagedSlot_ = nextSlot_;
  nextSlot_ = (nextSlot_ + 1) % kSlots;
  return Status::ok();
}

void CudaRunner::discardStaged() {
  // The upload may still run; the slot's events order its next use.
  stagedSlot_ = -1;
}

Status CudaRunner::upload(int slot, const std::vector<data::BatchSlice> &slices,
                          bool indices) {
  StagingSlot &st = slots_[slot];
  // The slot's last copy (two stages ago) has finished long since; this
  // wait is for the rare host that outruns it.
  for (int r = 0; r < replicas_; ++r) {
    RETURN_IF_CUDA_ERROR(cudaSetDevice(devices_[r]->ordinal()));
    RETURN_IF_CUDA_ERROR(cudaEventSynchronize(st.copied[r]));
  }
  std::byte *host = static_cast<std::byte *>(st.host.get());
  if (indices) {
    for (int r = 0; r < replicas_; ++r)
      std::memcpy(host + replicaOffset_[r], slices[r].sourceIndices,
                  static_cast<size_t>(slices[r].rows) * sizeof(int64_t));
  } else {
    for (size_t i = 0; i < program_.inputs.size(); ++i) {
      const PreparedInput &in = program_.inputs[i];
      const data::BatchSlice &s = slices[in.replica];
      std::memcpy(host + replicaOffset_[in.replica] + payloadOffset_[i],
                  s.data(in.part), in.bytes);
    }
  }
  for (int r = 0; r < replicas_; ++r) {
    const CudaDeviceState &d = devices_[r]->state();
    size_t bytes = indices
                       ? static_cast<size_t>(slices[r].rows) * sizeof(int64_t)
                       : replicaBytes_[r];
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal));
    // Not over the payload a launch may still be reading.
    RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(d.copy, st.consumed[r], 0));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(st.device[r].data(),
                                         host + replicaOffset_[r], bytes,
                                         cudaMemcpyHostToDevice, d.copy));
    RETURN_IF_CUDA_ERROR(cudaEventRecord(st.copied[r], d.copy));
  }
  st.indices = indices;
  return Status::ok();
}

Status CudaRunner::enqueueInputs(int slot, bool graphs) {
  StagingSlot &st = slots_[slot];
  for (int r = 0; r < replicas_; ++r) {
    CudaDevice &d = *devices_[r];
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal()));
    cudaStream_t compute = d.state().compute;
    RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(compute, st.copied[r], 0));
    const std::byte *payload =
        static_cast<const std::byte *>(st.device[r].data());
    if (st.indices) {
      float *images = nullptr;
      void *labels = nullptr;
      for (const PreparedInput &in : program_.inputs) {
        if (in.replica != r)
          continue;
        if (in.part == data::BatchPart::labels)
          labels = in.dst;
        else if (in.part == data::BatchPart::images)
          images = static_cast<float *>(in.dst);
      }
      RETURN_IF_CUDA_ERROR(enqueueGatherExamples(
          cached_.at(d.ordinal()).view,
          reinterpret_cast<const int64_t *>(payload),
          program_.batch / replicas_, images, labels, cachedOneHot_, compute));
    } else {
      for (size_t i = 0; i < program_.inputs.size(); ++i) {
        const PreparedInput &in = program_.inputs[i];
        if (in.replica == r)
          RETURN_IF_CUDA_ERROR(
              cudaMemcpyAsync(in.dst, payload + payloadOffset_[i], in.bytes,
                              cudaMemcpyDeviceToDevice, compute));
      }
    }
    RETURN_IF_CUDA_ERROR(cudaEventRecord(st.consumed[r], compute));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(d.deviceStep(), stepHost_.get(),
                                         sizeof(int64_t),
                                         cudaMemcpyHostToDevice, compute));
    RETURN_IF_CUDA_ERROR(cudaEventRecord(inputReady_[r], compute));
    if (graphs) {
      // A graph starts from its origin stream: the origin waits for every
      // replica of its GPU.
      const GraphGroup &g = groups_[groupOf_[r]];
      cudaStream_t origin = devices_[g.members.front()]->state().compute;
      if (origin != compute)
        RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(origin, inputReady_[r], 0));
    } else {
      // The step's own work on the other streams starts after its inputs.
      RETURN_IF_CUDA_ERROR(
          cudaStreamWaitEvent(d.state().comm, inputReady_[r], 0));
      RETURN_IF_CUDA_ERROR(
          cudaStreamWaitEvent(d.state().copy, inputReady_[r], 0));
    }
  }
  return Status::ok();
}

Status CudaRunner::enqueueOps(int64_t step, bool capturing) {
  std::byte *outputs = static_cast<std::byte *>(outputs_.get());
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    const PreparedOp &op = program_.ops[i];
    CudaDevice *d = op.device >= 0 ? devices_[op.device] : nullptr;
    cudaStream_t stream = d ? d->stream(op.stream) : nullptr;
    if (d)
      RETURN_IF_CUDA_ERROR(cudaSetDevice(d->ordinal()));
    switch (op.kind) {
    case plan::OpKind::launch: {
      KernelContext &ctx = contexts_[op.device];
      ctx.step = step;
      Status s;
      try {
        s = op.kernel(ctx, op.config, op.ins, op.outs);
      } catch (const std::exception &e) {
        s = Status::error(std::string("exception: ") + e.what());
      }
      if (s) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess)
          s = Status::error("the launch failed: " + resultText(e));
      }
      if (!s)
        return Status::error(where(op) + " ('" + op.kernelName + "' on " +
                             d->name() + "): " + s.message());
      break;
    }
    case plan::OpKind::all_reduce:
      // One call per local replica, as on the host; the last enqueues.
      for (int r = 0; r < replicas_; ++r)
        if (Status s = collective_->allReduce(r, op.reduceData[r],
                                              op.reduceCount, op.reduceOp);
            !s)
          return Status::error(where(op) + ": " + s.message());
      break;
    case plan::OpKind::copy:
      RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(op.copyDst, op.copySrc, op.copyBytes,
                                           cudaMemcpyDefault, stream));
      break;
    case plan::OpKind::record:
      RETURN_IF_CUDA_ERROR(cudaEventRecord(planEvents_[op.event], stream));
      break;
    case plan::OpKind::wait:
      RETURN_IF_CUDA_ERROR(
          cudaStreamWaitEvent(stream, planEvents_[op.event], 0));
      break;
    case plan::OpKind::timestamp:
      // In a capture a plain record is only an edge; an external record
      // becomes a node that records the event on every replay.
      if (capturing)
        RETURN_IF_CUDA_ERROR(cudaEventRecordWithFlags(
            timestampEvents_[i], stream, cudaEventRecordExternal));
      else
        RETURN_IF_CUDA_ERROR(cudaEventRecord(timestampEvents_[i], stream));
      break;
    case plan::OpKind::output:
      RETURN_IF_CUDA_ERROR(
          cudaMemcpyAsync(outputs + outputOffset_[i], op.ins[0].data,
                          op.ins[0].elements() * dtypeBytes(op.ins[0].dtype),
                          cudaMemcpyDeviceToHost, stream));
      break;
    default:
      return Status::error(where(op) + ": unknown op kind");
    }
  }
  return Status::ok();
}

Status CudaRunner::enqueueEagerEnd() {
  for (int r = 0; r < replicas_; ++r) {
    const CudaDeviceState &s = devices_[r]->state();
    RETURN_IF_CUDA_ERROR(cudaSetDevice(s.ordinal));
    for (plan::StreamKind kind :
         {plan::StreamKind::comm, plan::StreamKind::copy}) {
      cudaEvent_t join = join_[r][streamIndex(kind)];
      RETURN_IF_CUDA_ERROR(cudaEventRecord(join, devices_[r]->stream(kind)));
      RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(s.compute, join, 0));
    }
    RETURN_IF_CUDA_ERROR(cudaEventRecord(done_[r], s.compute));
  }
  return Status::ok();
}

Status CudaRunner::captureGraphs(int64_t step) {
  // Every GPU's capture starts before any op is enqueued: an all-reduce's
  // NCCL group spans the captures of all GPUs.
  size_t begun = 0;
  Status status;
  for (; begun < groups_.size() && status; ++begun) {
    GraphGroup &g = groups_[begun];
    cudaStream_t origin = devices_[g.members.front()]->state().compute;
    status = CUDA_CALL_STATUS(cudaSetDevice(g.ordinal));
    if (status)
      status = CUDA_CALL_STATUS(
          cudaStreamBeginCapture(origin, cudaStreamCaptureModeThreadLocal));
    if (!status)
      break;
    // Fork every other stream of the GPU's replicas into the capture.
    status = CUDA_CALL_STATUS(cudaEventRecord(g.fork, origin));
    for (int r : g.members)
      for (plan::StreamKind kind : kStreams) {
        cudaStream_t s = devices_[r]->stream(kind);
        if (status && s != origin)
          status = CUDA_CALL_STATUS(cudaStreamWaitEvent(s, g.fork, 0));
      }
  }
  if (status)
    status = enqueueOps(step, /*capturing=*/true);
  // Every begun capture is ended, also after a failure, so no stream is
  // left capturing.
  for (size_t i = 0; i < begun; ++i) {
    GraphGroup &g = groups_[i];
    cudaStream_t origin = devices_[g.members.front()]->state().compute;
    // Ended on its own GPU even when this fails, but the failure is kept.
    if (Status set = CUDA_CALL_STATUS(cudaSetDevice(g.ordinal)); status && !set)
      status = set;
    for (int r : g.members)
      for (plan::StreamKind kind : kStreams) {
        cudaStream_t s = devices_[r]->stream(kind);
        if (!status || s == origin)
          continue;
        cudaEvent_t join = join_[r][streamIndex(kind)];
        status = CUDA_CALL_STATUS(cudaEventRecord(join, s));
        if (status)
          status = CUDA_CALL_STATUS(cudaStreamWaitEvent(origin, join, 0));
      }
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamEndCapture(origin, &graph);
    if (status && e != cudaSuccess)
      status = Status::error("cudaStreamEndCapture on GPU " +
                             std::to_string(g.ordinal) + ": " + resultText(e));
    g.graph = graph;
  }
  for (size_t i = 0; status && i < groups_.size(); ++i) {
    GraphGroup &g = groups_[i];
    status = CUDA_CALL_STATUS(cudaSetDevice(g.ordinal));
    if (status)
      status = CUDA_CALL_STATUS(cudaGraphInstantiate(&g.exec, g.graph, 0));
  }
  if (!status) {
    (void)cudaGetLastError();
    for (GraphGroup &g : groups_) {
      (void)cudaSetDevice(g.ordinal);
      if (g.exec)
        (void)cudaGraphExecDestroy(g.exec);
      if (g.graph)
        (void)cudaGraphDestroy(g.graph);
      g.exec = nullptr;
      g.graph = nullptr;
    }
    return Status::error(status.message() +
                         " (while capturing the step into a CUDA graph; "
                         "--no-cuda-graph runs it without one)");
  }
  graphsReady_ = true;
  return Status::ok();
}

Status CudaRunner::launchGraphs() {
  for (GraphGroup &g : groups_) {
    cudaStream_t origin = devices_[g.members.front()]->state().compute;
    RETURN_IF_CUDA_ERROR(cudaSetDevice(g.ordinal));
    RETURN_IF_CUDA_ERROR(cudaGraphLaunch(g.exec, origin));
    RETURN_IF_CUDA_ERROR(cudaEventRecord(done_[g.members.front()], origin));
  }
  return Status::ok();
}

Status CudaRunner::waitForStep(int64_t step) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + options_.timeout;
  std::vector<char> finished(static_cast<size_t>(replicas_), 0);
  int remaining = replicas_;
  while (remaining > 0) {
    for (int r = 0; r < replicas_; ++r) {
      if (finished[r])
        continue;
      cudaError_t e = cudaEventQuery(doneEvent(r));
      if (e == cudaSuccess) {
        finished[r] = 1;
        anchor_[r] = Clock::now();
        --remaining;
      } else if (e != cudaErrorNotReady) {
        return Status::error(
            "program '" + program_.name + "', step " + std::to_string(step) +
            ": " + devices_[r]->name() + " failed: " + resultText(e) +
            " (a kernel faulted; compute-sanitizer and --no-cuda-graph "
            "narrow it down)");
      }
    }
    if (remaining == 0)
      break;
    if (collective_)
      if (Status s = collective_->asyncError(); !s) {
        collective_->abort();
        return Status::error("program '" + program_.name + "', step " +
                             std::to_string(step) + ": " + s.message());
      }
    if (Clock::now() > deadline) {
      std::string late, done;
      for (int r = 0; r < replicas_; ++r) {
        std::string &list = finished[r] ? done : late;
        list += (list.empty() ? "" : ", ") + devices_[r]->name();
      }
      if (collective_)
        collective_->abort();
      markGpuHung();
      return Status::error(
          "program '" + program_.name + "', step " + std::to_string(step) +
          ": replica(s) " + late + " did not finish within " +
          std::to_string(options_.timeout.count()) + " ms" +
          (done.empty() ? std::string() : " (finished: " + done + ")") +
          ": a kernel hangs or a GPU stopped (--collective-timeout sets the "
          "limit)");
    }
    std::this_thread::yield();
  }
  return Status::ok();
}

Status CudaRunner::readResults(StepResult &result) {
  const std::byte *outputs = static_cast<const std::byte *>(outputs_.get());
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    const PreparedOp &op = program_.ops[i];
    if (op.kind != plan::OpKind::output)
      continue;
    if (op.tensorOutput >= 0) {
      const auto *values =
          reinterpret_cast<const float *>(outputs + outputOffset_[i]);
      result.tensors[op.replica][op.tensorOutput].assign(
          values, values + op.ins[0].elements());
    } else {
      result.perReplica[op.replica][op.output] =
          readScalar(outputs + outputOffset_[i], op.ins[0].dtype);
    }
  }
  // Timestamps: the anchor (the host time the completion event was seen)
  // minus the device time from the timestamp to completion.
  static std::once_flag warned;
  for (size_t i = 0; i < program_.ops.size(); ++i) {
    const PreparedOp &op = program_.ops[i];
    if (op.kind != plan::OpKind::timestamp)
      continue;
    float ms = 0;
    cudaError_t e =
        cudaEventElapsedTime(&ms, timestampEvents_[i], doneEvent(op.device));
    if (e != cudaSuccess) {
      // Timing is diagnostics: a device that cannot time an event still
      // trains; the step split is then missing, and says why once.
      (void)cudaGetLastError();
      std::call_once(warned, [&] {
        std::fprintf(stderr,
                     "graphrun: warning: no GPU timestamps: "
                     "cudaEventElapsedTime: %s\n",
                     resultText(e).c_str());
      });
      continue;
    }
    auto before =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double, std::milli>(ms));
    result.timestamps[op.device].push_back(
        {op.name, anchor_[op.device] - before});
  }
  return Status::ok();
}

Status CudaRunner::launch(int64_t step) {
  const std::string at =
      "program '" + program_.name + "', step " + std::to_string(step) + ": ";
  if (broken_)
    return Status::error(at + "an earlier step of this program failed");
  if (inFlight_)
    return Status::error(at + "launched while the previous step is in "
                              "flight");
  if (stagedSlot_ < 0)
    return Status::error(at + "launched with no staged batch");
  const int slot = stagedSlot_;
  stagedSlot_ = -1;
  if (Status s = enqueueStep(slot, step); !s) {
    broken_ = true;
    return s;
  }
  inFlight_ = true;
  stepInFlight_ = step;
  return Status::ok();
}

Status CudaRunner::enqueueStep(int slot, int64_t step) {
  // The previous step has finished (wait() saw it), so its read of the
  // step scalar's staging has too.
  std::memcpy(stepHost_.get(), &step, sizeof step);

  // Step 1 runs eagerly (kernels load, libraries warm up, nothing in it is
  // captured); step 2 captures; every later step replays.
  bool capture = useGraphs_ && !graphsReady_ && stepsRun_ >= 1;
  if (Status s = enqueueInputs(slot, useGraphs_ && (graphsReady_ || capture));
      !s)
    return s;
  if (capture)
    if (Status s = captureGraphs(step); !s)
      return s;
  if (graphsReady_) {
    if (Status s = launchGraphs(); !s)
      return s;
  } else {
    if (Status s = enqueueOps(step, /*capturing=*/false); !s)
      return s;
    if (Status s = enqueueEagerEnd(); !s)
      return s;
  }
  return Status::ok();
}

Status CudaRunner::wait(StepResult &result) {
  if (!inFlight_)
    return Status::error("program '" + program_.name +
                         "': wait() with no step in flight");
  inFlight_ = false;
  if (Status s = waitForStep(stepInFlight_); !s) {
    broken_ = true; // the step may still run: nothing may touch its buffers
    return s;
  }
  ++stepsRun_;
  return readResults(result);
}

} // namespace

//===----------------------------------------------------------------------===//
// CudaDeviceSet and registration
//===----------------------------------------------------------------------===//

Status CudaDeviceSet::create(int logical, const ExecutorOptions &options,
                             std::shared_ptr<DeviceSet> &out) {
  std::string why;
  int present = physicalGpuCount(&why);
  if (present == 0)
    return Status::error("no CUDA GPU: " + why +
                         ": train on the CPU instead (--backend cpu)");
  if (logical < 1)
    return Status::error("cuda: need at least one logical GPU, asked for " +
                         std::to_string(logical));
  int first = options.firstPhysicalDevice;
  if (first < 0 || first >= present)
    return Status::error("cuda: GPU " + std::to_string(first) +
                         " asked for, but this process sees " +
                         std::to_string(present) + " GPU(s)");
  int physical = present - first;
  if (options.maxPhysicalDevices > 0)
    physical = std::min(physical, options.maxPhysicalDevices);
  physical = std::min(physical, logical);
  if (logical > physical) {
    static std::once_flag warned;
    std::call_once(warned, [&] {
      std::fprintf(stderr,
                   "graphrun: warning: %d logical GPUs on %d physical GPU(s), "
                   "round robin: replicas that share a GPU take turns on it "
                   "(a check of multi-GPU training, not a speed-up)\n",
                   logical, physical);
    });
  }
  std::shared_ptr<CudaDeviceSet> set(new CudaDeviceSet());
  set->physicalGpus_ = physical;
  for (int d = 0; d < logical; ++d) {
    std::unique_ptr<CudaDevice> device;
    if (Status s = CudaDevice::create(d, first + d % physical, device); !s)
      return Status::error("cuda:" + std::to_string(d) + ": " + s.message());
    set->devices_.push_back(std::move(device));
  }
  set->collectives_.resize(static_cast<size_t>(logical) + 1);
  out = std::move(set);
  return Status::ok();
}

Status CudaDeviceSet::collective(ReplicaSpan span, Workers *workers,
                                 NcclCollective *&out) {
  int replicas = span.local;
  if (replicas < 1 || replicas > size())
    return Status::error("all-reduce over " + std::to_string(replicas) +
                         " of " + std::to_string(size()) + " logical GPUs");
  std::unique_ptr<NcclCollective> &c = collectives_[replicas];
  if (!c) {
    std::vector<CollectiveRank> ranks;
    for (int r = 0; r < replicas; ++r)
      ranks.push_back({devices_[r]->ordinal(), devices_[r]->state().comm});
    if (Status s = NcclCollective::create(ranks, span, workers, c); !s)
      return s;
  }
  out = c.get();
  return Status::ok();
}

Status CudaDeviceSet::createRunner(const PreparedProgram &program,
                                   const ExecutorOptions &options,
                                   std::unique_ptr<ProgramRunner> &out) {
  auto runner = std::make_unique<CudaRunner>(program, *this, options);
  if (Status s = runner->prepare(); !s)
    return s;
  out = std::move(runner);
  return Status::ok();
}

void registerCudaBackend() {
  static std::once_flag once;
  std::call_once(once, [] {
    registerCudaKernels();
    DevicePlatform platform;
    platform.physicalDevices = [] { return physicalGpuCount(); };
    platform.createDevices = [](int logical, const ExecutorOptions &options,
                                std::shared_ptr<DeviceSet> &out) {
      return CudaDeviceSet::create(logical, options, out);
    };
    registerDevicePlatform(Backend::cuda, std::move(platform));
  });
}

} // namespace graph::runtime::cuda
