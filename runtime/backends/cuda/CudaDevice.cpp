//===- CudaDevice.cpp - logical GPUs and the CUDA program runner ----------===//

#include "runtime/backends/cuda/CudaDevice.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/GpuHang.h"
#include "runtime/backends/cuda/InputGather.h"
#include "runtime/backends/cuda/StepSchedule.h"
#include "runtime/collectives/Workers.h"
#include "runtime/plan/PlanLoader.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

namespace graph::runtime::cuda {
namespace {

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

Status CudaDevice::create(int logical, int ordinal, bool tf32,
                          std::unique_ptr<CudaDevice> &out) {
  std::unique_ptr<CudaDevice> d(new CudaDevice());
  d->state_.logical = logical;
  d->state_.ordinal = ordinal;
  d->state_.tf32 = tf32;
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

namespace {
/// The error of any device operation after the watchdog declared a GPU hung
/// (GpuHang.h): it would wait for the hung GPU forever.
Status hungError(const std::string &device) {
  return Status::error(device + ": not touched: a GPU of this process is "
                                "hung (an earlier step timed out)");
}
} // namespace

Status CudaDevice::activate() {
  if (gpuHung())
    return hungError(name());
  RETURN_IF_CUDA_ERROR(cudaSetDevice(state_.ordinal));
  return Status::ok();
}

Status CudaDevice::synchronize() {
  if (gpuHung())
    return hungError(name());
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
  if (gpuHung())
    return hungError(name());
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
  int maxStepsInFlight() const override { return kParities; }
  Status cacheDataset(const data::Dataset &dataset,
                      data::LabelFormat format) override;
  void discardStaged() override;

private:
  /// A launched step: its parity (which of the per-step resources it
  /// uses) and whether it replayed a graph.
  struct InFlight {
    int64_t step = 0;
    int parity = 0;
    bool graph = false;
    bool waited = false; // waited for before a capture (anchors kept)
  };

  Status upload(int slot, const std::vector<data::BatchSlice> &slices,
                bool indices);
  Status enqueueStep(int slot, InFlight &step);
  Status newEvent(int ordinal, unsigned flags, cudaEvent_t &out);
  Status prepareStaging();
  Status enqueueInputs(int slot, int parity, bool graphs);
  class Launcher; // the StepLauncher that calls CUDA
  Status enqueueOps(int64_t step, int parity, bool capturing);
  Status enqueueEagerEnd(int parity);
  Status captureGraphs(int64_t step, int parity);
  Status launchGraphs(int parity);
  Status waitForStep(const InFlight &step);
  void waiterLoop();
  Status readResults(const InFlight &step, StepResult &result);
  /// The event that completes replica `replica`'s part of `step`: its own,
  /// or in a graph its GPU's origin's.
  cudaEvent_t doneEvent(const InFlight &step, int replica) const {
    return step.graph
               ? done_[step.parity][groups_[groupOf_[replica]].members.front()]
               : done_[step.parity][replica];
  }
  std::string where(const PreparedOp &op) const {
    return "program '" + program_.name + "', op " + std::to_string(op.index);
  }

  /// Two steps may be in flight (Session::train launches step k+1 before
  /// it waits for step k): what a step writes and the host reads after it
  /// (the step scalar's staging, the outputs' staging, the timestamp and
  /// completion events, and so a captured graph, whose nodes hold them)
  /// exists twice, and step k uses parity k mod 2. The arena is shared: the
  /// steps run one after the other on the device.
  static constexpr int kParities = 2;

  struct GraphGroup {
    int ordinal = 0;
    std::vector<int> members; // replicas on this GPU; the first is the origin
    cudaEvent_t fork = nullptr;
    std::array<cudaGraph_t, kParities> graph{};
    std::array<cudaGraphExec_t, kParities> exec{};
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
  std::vector<cudaEvent_t> planEvents_; // [plan event]
  // [parity][op], null for other ops
  std::array<std::vector<cudaEvent_t>, kParities> timestampEvents_;
  std::vector<int64_t> outputOffset_; // [op], -1 for other ops
  // [parity]: every output op's bytes
  std::array<PinnedMemory, kParities> outputs_;
  std::array<StagingSlot, kSlots> slots_;
  std::vector<size_t> payloadOffset_; // [input], in its replica's
  std::vector<size_t> replicaOffset_; // [replica], in a host slot
  std::vector<size_t> replicaBytes_;  // [replica], rows' payload
  // With a cached dataset, a replica's payload is its rows' source indices
  // (this many bytes, 256-aligned), then its rows' weights (each weights
  // input at its indexedOffset_; 0 for the other inputs).
  size_t indicesBytes_ = 0;
  std::vector<size_t> indexedOffset_; // [input]
  int nextSlot_ = 0;
  int stagedSlot_ = -1;            // -1: nothing staged
  std::vector<InFlight> inFlight_; // oldest first (a vector: no allocation)
  // Set by any failure after the first enqueue: the devices may still run
  // (or never finish) work of this runner, so nothing more is enqueued.
  bool broken_ = false;
  // Set when waiting for a step failed: no later step is waited for.
  bool waitFailed_ = false;
  // [parity]: the step, for the scalars
  std::array<PinnedMemory, kParities> stepHost_;
  std::vector<cudaEvent_t> inputReady_;                  // [replica]
  std::array<std::vector<cudaEvent_t>, kParities> done_; // [parity][replica]
  InFlight lastLaunched_; // valid once stepsLaunched_ > 0
  std::vector<std::array<cudaEvent_t, 3>> join_; // [replica][stream]
  std::vector<GraphGroup> groups_;
  std::vector<int> groupOf_; // [replica]
  // [parity][replica]: when the waiter saw the step's completion
  std::array<std::vector<std::chrono::steady_clock::time_point>, kParities>
      anchor_;
  // --cache-on-device: the dataset on each physical GPU, and the label
  // format the program's labels input wants.
  struct CachedOnGpu {
    DeviceMemory images, labels;
    CachedExamples view;
  };
  std::map<int, CachedOnGpu> cached_; // by ordinal
  bool cachedOneHot_ = false;
  bool useGraphs_ = false;
  std::array<bool, kParities> graphReady_{}; // [parity]
  int64_t stepsLaunched_ = 0;

  // The step's completion is waited for on the waiter thread, in
  // cudaEventSynchronize on the done_ events (cudaEventBlockingSync: the
  // thread sleeps until the GPU signals, no core spins), while the caller's
  // thread keeps the watchdog: it wakes every kWatchdogPoll to check NCCL's
  // asynchronous errors and the deadline. A request is served when every
  // replica's event completed or one failed.
  std::thread waiter_;
  std::mutex waitMutex_;
  std::condition_variable waitCv_;
  int64_t waitRequested_ = 0, waitServed_ = 0;
  InFlight waitStep_; // the step of the latest request
  bool stopWaiter_ = false;
  std::vector<char> finished_; // [replica], this request's
  cudaError_t waitError_ = cudaSuccess;
  int waitErrorReplica_ = -1;
};

constexpr std::chrono::milliseconds kWatchdogPoll{10};

CudaRunner::~CudaRunner() {
  if (waiter_.joinable()) {
    std::unique_lock<std::mutex> lock(waitMutex_);
    // A waiter still in cudaEventSynchronize (a step that failed another
    // way: an NCCL error, a kernel that faulted on another replica) gets
    // the timeout to finish; one that does not is a hung GPU.
    if (!gpuHung() && !waitCv_.wait_for(lock, options_.timeout, [&] {
          return waitServed_ == waitRequested_;
        }))
      markGpuHung();
    stopWaiter_ = true;
    lock.unlock();
    waitCv_.notify_all();
    // A waiter blocked on a hung GPU never returns: it is left behind (the
    // process is about to end, see GpuHang.h).
    if (gpuHung())
      waiter_.detach();
    else
      waiter_.join();
  }
  if (gpuHung())
    return; // see ~CudaDevice
  // Nothing may still use the graphs and events destroyed below.
  for (CudaDevice *d : devices_)
    (void)d->synchronize();
  for (GraphGroup &g : groups_) {
    (void)cudaSetDevice(g.ordinal);
    for (int p = 0; p < kParities; ++p) {
      if (g.exec[p])
        (void)cudaGraphExecDestroy(g.exec[p]);
      if (g.graph[p])
        (void)cudaGraphDestroy(g.graph[p]);
    }
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
  for (std::vector<cudaEvent_t> &done : done_)
    done.resize(replicas_);
  join_.resize(replicas_);
  for (int r = 0; r < replicas_; ++r) {
    int ordinal = devices_[r]->ordinal();
    if (Status s = newEvent(ordinal, cudaEventDisableTiming, inputReady_[r]);
        !s)
      return s;
    // Timed (timestamps are read against it) and waited for on the host
    // by a sleeping thread, not a spinning one.
    for (std::vector<cudaEvent_t> &done : done_)
      if (Status s = newEvent(ordinal, cudaEventBlockingSync, done[r]); !s)
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
  for (std::vector<cudaEvent_t> &events : timestampEvents_)
    events.assign(program_.ops.size(), nullptr);
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
      for (std::vector<cudaEvent_t> &events : timestampEvents_)
        if (Status s = newEvent(ordinal, cudaEventDefault, events[i]); !s)
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

  for (PinnedMemory &outputs : outputs_)
    if (Status s = allocatePinned(static_cast<size_t>(outputBytes), outputs);
        !s)
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
  for (PinnedMemory &step : stepHost_)
    if (Status s = allocatePinned(sizeof(int64_t), step); !s)
      return Status::error(at + "step staging: " + s.message());
  for (auto &anchors : anchor_)
    anchors.resize(replicas_);
  finished_.assign(replicas_, 0);
  waiter_ = std::thread([this] { waiterLoop(); });

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
  // rows' source indices and sample weights when the dataset is cached;
  // the slots are sized for either, since cacheDataset() may come after
  // prepare().
  const int64_t rows = program_.batch / replicas_;
  indicesBytes_ =
      (static_cast<size_t>(rows) * sizeof(int64_t) + 255) / 256 * 256;
  replicaBytes_.assign(replicas_, 0);
  payloadOffset_.assign(program_.inputs.size(), 0);
  std::vector<size_t> indexedBytes(replicas_, indicesBytes_);
  indexedOffset_.assign(program_.inputs.size(), 0);
  for (size_t i = 0; i < program_.inputs.size(); ++i) {
    const PreparedInput &in = program_.inputs[i];
    payloadOffset_[i] = replicaBytes_[in.replica];
    replicaBytes_[in.replica] += (in.bytes + 255) / 256 * 256;
    if (data::isWeights(in.part)) {
      indexedOffset_[i] = indexedBytes[in.replica];
      indexedBytes[in.replica] += (in.bytes + 255) / 256 * 256;
    }
  }
  size_t hostBytes = 0;
  replicaOffset_.assign(replicas_, 0);
  std::vector<size_t> capacity(replicas_);
  for (int r = 0; r < replicas_; ++r) {
    capacity[r] = std::max(replicaBytes_[r], indexedBytes[r]);
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
      // upload() waits for it on the host, asleep.
      if (Status s =
              newEvent(ordinal, cudaEventBlockingSync | cudaEventDisableTiming,
                       slot.copied[r]);
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
  if (!inFlight_.empty() || stagedSlot_ >= 0)
    return Status::error("cannot cache a dataset while a step is staged or "
                         "in flight");
  if (program_.batch / replicas_ > 65535)
    return Status::error(std::to_string(program_.batch / replicas_) +
                         " rows per replica; the gather takes at most 65535");
  // The gather kernel writes class labels (indices or one-hot rows); float
  // targets stay on the host path until a GPU run has measured one.
  if (format == data::LabelFormat::Dense)
    return Status::invalidInput(
        "float targets (an element-wise loss) are not kept on the GPU yet: "
        "drop --cache-on-device");
  if (!dataset.targets.empty())
    return Status::invalidInput(
        "soft labels (rows of class probabilities) are not kept on the GPU "
        "yet: drop --cache-on-device");
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
  // With indices, the weights follow them (the gather writes the rest).
  std::vector<size_t> bytes(replicas_, indicesBytes_);
  if (indices) {
    for (int r = 0; r < replicas_; ++r)
      std::memcpy(host + replicaOffset_[r], slices[r].sourceIndices,
                  static_cast<size_t>(slices[r].rows) * sizeof(int64_t));
    for (size_t i = 0; i < program_.inputs.size(); ++i) {
      const PreparedInput &in = program_.inputs[i];
      if (!data::isWeights(in.part))
        continue;
      std::memcpy(host + replicaOffset_[in.replica] + indexedOffset_[i],
                  slices[in.replica].data(in.part), in.bytes);
      bytes[in.replica] =
          std::max(bytes[in.replica], indexedOffset_[i] + in.bytes);
    }
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
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal));
    // Not over the payload a launch may still be reading.
    RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(d.copy, st.consumed[r], 0));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(
        st.device[r].data(), host + replicaOffset_[r],
        indices ? bytes[r] : replicaBytes_[r], cudaMemcpyHostToDevice, d.copy));
    RETURN_IF_CUDA_ERROR(cudaEventRecord(st.copied[r], d.copy));
  }
  st.indices = indices;
  return Status::ok();
}

Status CudaRunner::enqueueInputs(int slot, int parity, bool graphs) {
  StagingSlot &st = slots_[slot];
  for (int r = 0; r < replicas_; ++r) {
    CudaDevice &d = *devices_[r];
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal()));
    cudaStream_t compute = d.state().compute;
    // The inputs and the step scalar are overwritten only after the step
    // before has read them: an eager step ran on this stream, but a graph
    // ran on its GPU's origin stream, which only the origin replica's
    // compute stream is.
    if (graphs && stepsLaunched_ > 0)
      RETURN_IF_CUDA_ERROR(
          cudaStreamWaitEvent(compute, doneEvent(lastLaunched_, r), 0));
    RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(compute, st.copied[r], 0));
    const std::byte *payload =
        static_cast<const std::byte *>(st.device[r].data());
    if (st.indices) {
      float *images = nullptr;
      void *labels = nullptr;
      for (size_t i = 0; i < program_.inputs.size(); ++i) {
        const PreparedInput &in = program_.inputs[i];
        if (in.replica != r)
          continue;
        if (in.part == data::BatchPart::labels)
          labels = in.dst;
        else if (in.part == data::BatchPart::images)
          images = static_cast<float *>(in.dst);
        else if (data::isWeights(in.part))
          RETURN_IF_CUDA_ERROR(
              cudaMemcpyAsync(in.dst, payload + indexedOffset_[i], in.bytes,
                              cudaMemcpyDeviceToDevice, compute));
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
    RETURN_IF_CUDA_ERROR(
        cudaMemcpyAsync(d.deviceStep(), stepHost_[parity].get(),
                        sizeof(int64_t), cudaMemcpyHostToDevice, compute));
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

/// The step's schedule (StepSchedule.h) issued through CUDA, cuDNN and
/// NCCL on the runner's devices, streams and events.
class CudaRunner::Launcher final : public StepLauncher {
public:
  Launcher(CudaRunner &runner, int64_t step, int parity, bool capturing)
      : r_(runner), step_(step), parity_(parity), capturing_(capturing) {}

  Status kernel(size_t, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    KernelContext &ctx = r_.contexts_[op.device];
    ctx.step = step_;
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
      return Status::error(r_.where(op) + " ('" + op.kernelName + "' on " +
                           d->name() + "): " + s.message());
    return Status::ok();
  }
  Status allReduce(size_t, const PreparedOp &op, int replica) override {
    if (Status s = r_.collective_->allReduce(replica, op.reduceData[replica],
                                             op.reduceCount, op.reduceOp);
        !s)
      return Status::error(r_.where(op) + ": " + s.message());
    return Status::ok();
  }
  Status copy(size_t, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(op.copyDst, op.copySrc, op.copyBytes,
                                         cudaMemcpyDefault, stream));
    return Status::ok();
  }
  Status record(size_t, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    RETURN_IF_CUDA_ERROR(cudaEventRecord(r_.planEvents_[op.event], stream));
    return Status::ok();
  }
  Status wait(size_t, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    RETURN_IF_CUDA_ERROR(
        cudaStreamWaitEvent(stream, r_.planEvents_[op.event], 0));
    return Status::ok();
  }
  Status timestamp(size_t i, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    // In a capture a plain record is only an edge; an external record
    // becomes a node that records the event on every replay.
    cudaEvent_t event = r_.timestampEvents_[parity_][i];
    if (capturing_)
      RETURN_IF_CUDA_ERROR(
          cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal));
    else
      RETURN_IF_CUDA_ERROR(cudaEventRecord(event, stream));
    return Status::ok();
  }
  Status output(size_t i, const PreparedOp &op) override {
    CudaDevice *d = nullptr;
    cudaStream_t stream = nullptr;
    if (Status s = enter(op, d, stream); !s)
      return s;
    std::byte *outputs = static_cast<std::byte *>(r_.outputs_[parity_].get());
    RETURN_IF_CUDA_ERROR(
        cudaMemcpyAsync(outputs + r_.outputOffset_[i], op.ins[0].data,
                        op.ins[0].elements() * dtypeBytes(op.ins[0].dtype),
                        cudaMemcpyDeviceToHost, stream));
    return Status::ok();
  }
  Status join(int replica, plan::StreamKind kind) override {
    CudaDevice &d = *r_.devices_[replica];
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal()));
    cudaEvent_t join = r_.join_[replica][streamIndex(kind)];
    RETURN_IF_CUDA_ERROR(cudaEventRecord(join, d.stream(kind)));
    RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(d.state().compute, join, 0));
    return Status::ok();
  }
  Status done(int replica) override {
    CudaDevice &d = *r_.devices_[replica];
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d.ordinal()));
    RETURN_IF_CUDA_ERROR(
        cudaEventRecord(r_.done_[parity_][replica], d.state().compute));
    return Status::ok();
  }

private:
  /// The op's device made current, and its stream.
  Status enter(const PreparedOp &op, CudaDevice *&d, cudaStream_t &stream) {
    d = r_.devices_[op.device];
    stream = d->stream(op.stream);
    RETURN_IF_CUDA_ERROR(cudaSetDevice(d->ordinal()));
    return Status::ok();
  }
  CudaRunner &r_;
  int64_t step_;
  int parity_;
  bool capturing_;
};

Status CudaRunner::enqueueOps(int64_t step, int parity, bool capturing) {
  Launcher launcher(*this, step, parity, capturing);
  return scheduleOps(program_, launcher);
}

Status CudaRunner::enqueueEagerEnd(int parity) {
  // No kernels: the step does not matter.
  Launcher launcher(*this, /*step=*/0, parity, /*capturing=*/false);
  return scheduleEagerEnd(program_, launcher);
}

Status CudaRunner::captureGraphs(int64_t step, int parity) {
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
    status = enqueueOps(step, parity, /*capturing=*/true);
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
    g.graph[parity] = graph;
  }
  for (size_t i = 0; status && i < groups_.size(); ++i) {
    GraphGroup &g = groups_[i];
    status = CUDA_CALL_STATUS(cudaSetDevice(g.ordinal));
    if (status)
      status = CUDA_CALL_STATUS(
          cudaGraphInstantiate(&g.exec[parity], g.graph[parity], 0));
  }
  if (!status) {
    (void)cudaGetLastError();
    for (GraphGroup &g : groups_) {
      (void)cudaSetDevice(g.ordinal);
      if (g.exec[parity])
        (void)cudaGraphExecDestroy(g.exec[parity]);
      if (g.graph[parity])
        (void)cudaGraphDestroy(g.graph[parity]);
      g.exec[parity] = nullptr;
      g.graph[parity] = nullptr;
    }
    return Status::error(status.message() +
                         " (while capturing the step into a CUDA graph; "
                         "--no-cuda-graph runs it without one)");
  }
  graphReady_[parity] = true;
  return Status::ok();
}

Status CudaRunner::launchGraphs(int parity) {
  for (GraphGroup &g : groups_) {
    cudaStream_t origin = devices_[g.members.front()]->state().compute;
    RETURN_IF_CUDA_ERROR(cudaSetDevice(g.ordinal));
    RETURN_IF_CUDA_ERROR(cudaGraphLaunch(g.exec[parity], origin));
    RETURN_IF_CUDA_ERROR(
        cudaEventRecord(done_[parity][g.members.front()], origin));
  }
  return Status::ok();
}

void CudaRunner::waiterLoop() {
  std::unique_lock<std::mutex> lock(waitMutex_);
  for (;;) {
    waitCv_.wait(lock,
                 [&] { return stopWaiter_ || waitServed_ < waitRequested_; });
    if (stopWaiter_)
      return;
    const int64_t request = waitRequested_;
    const InFlight step = waitStep_;
    for (int r = 0; r < replicas_; ++r) {
      cudaEvent_t done = doneEvent(step, r);
      int ordinal = devices_[r]->ordinal();
      lock.unlock();
      cudaError_t e = cudaSetDevice(ordinal);
      if (e == cudaSuccess)
        e = cudaEventSynchronize(done);
      auto seen = std::chrono::steady_clock::now();
      lock.lock();
      if (e != cudaSuccess) {
        waitError_ = e;
        waitErrorReplica_ = r;
        break;
      }
      // The anchor is when this thread saw the event complete: a replica
      // that finished while an earlier one was waited for is anchored late
      // by that much, which shifts all its timestamps alike (the step split,
      // differences within a replica, is unaffected).
      anchor_[step.parity][r] = seen;
      finished_[r] = 1;
    }
    waitServed_ = request;
    waitCv_.notify_all();
  }
}

Status CudaRunner::waitForStep(const InFlight &step) {
  using Clock = std::chrono::steady_clock;
  const std::string at = "program '" + program_.name + "', step " +
                         std::to_string(step.step) + ": ";
  auto deadline = Clock::now() + options_.timeout;
  std::unique_lock<std::mutex> lock(waitMutex_);
  std::fill(finished_.begin(), finished_.end(), 0);
  waitError_ = cudaSuccess;
  waitErrorReplica_ = -1;
  waitStep_ = step;
  const int64_t request = ++waitRequested_;
  waitCv_.notify_all();
  for (;;) {
    if (waitCv_.wait_for(lock, kWatchdogPoll,
                         [&] { return waitServed_ >= request; })) {
      if (waitError_ != cudaSuccess)
        return Status::error(
            at + devices_[waitErrorReplica_]->name() +
            " failed: " + resultText(waitError_) +
            " (a kernel faulted; compute-sanitizer and --no-cuda-graph "
            "narrow it down)");
      return Status::ok();
    }
    lock.unlock();
    if (collective_)
      if (Status s = collective_->asyncError(); !s) {
        collective_->abort();
        return Status::error(at + s.message());
      }
    lock.lock();
    if (Clock::now() > deadline && waitServed_ < request) {
      std::string late, done;
      for (int r = 0; r < replicas_; ++r) {
        std::string &list = finished_[r] ? done : late;
        list += (list.empty() ? "" : ", ") + devices_[r]->name();
      }
      // The hang is declared first: from here on nothing calls into the
      // CUDA runtime (GpuHang.h); NCCL's abort is made for this moment.
      markGpuHung();
      lock.unlock();
      if (collective_)
        collective_->abort();
      return Status::timeout(
          at + "replica(s) " + late + " did not finish within " +
          std::to_string(options_.timeout.count()) + " ms" +
          (done.empty() ? std::string() : " (finished: " + done + ")") +
          ": a kernel hangs or a GPU stopped (--collective-timeout sets the "
          "limit)");
    }
  }
}

Status CudaRunner::readResults(const InFlight &step, StepResult &result) {
  const std::byte *outputs =
      static_cast<const std::byte *>(outputs_[step.parity].get());
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
    cudaError_t e = cudaEventElapsedTime(&ms, timestampEvents_[step.parity][i],
                                         doneEvent(step, op.device));
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
        {op.name, anchor_[step.parity][op.device] - before});
  }
  return Status::ok();
}

Status CudaRunner::launch(int64_t step) {
  const std::string at =
      "program '" + program_.name + "', step " + std::to_string(step) + ": ";
  if (broken_)
    return Status::error(at + "an earlier step of this program failed");
  if (static_cast<int>(inFlight_.size()) >= kParities)
    return Status::error(at + "launched while " +
                         std::to_string(inFlight_.size()) +
                         " steps are in flight");
  if (stagedSlot_ < 0)
    return Status::error(at + "launched with no staged batch");
  const int slot = stagedSlot_;
  stagedSlot_ = -1;
  InFlight launched;
  launched.step = step;
  launched.parity = static_cast<int>(stepsLaunched_ % kParities);
  if (Status s = enqueueStep(slot, launched); !s) {
    broken_ = true;
    return s;
  }
  ++stepsLaunched_;
  inFlight_.push_back(launched);
  return Status::ok();
}

Status CudaRunner::enqueueStep(int slot, InFlight &step) {
  // The last step of this parity has finished (its wait() returned before
  // this launch: at most kParities steps are in flight), so its read of
  // the step scalar's staging has too.
  const int parity = step.parity;
  std::memcpy(stepHost_[parity].get(), &step.step, sizeof step.step);

  // Step 1 runs eagerly (kernels load, libraries warm up, nothing in it is
  // captured); steps 2 and 3 capture the graphs of the two parities; every
  // later step replays its parity's.
  bool capture = useGraphs_ && !graphReady_[parity] && stepsLaunched_ >= 1;
  bool graph = useGraphs_ && (graphReady_[parity] || capture);
  // A capture starts with the device idle, as one step at a time captured:
  // no eager step's work (an NCCL call above all, whose communicator the
  // captured step shares) is in flight meanwhile. Twice per run.
  if (capture)
    for (InFlight &earlier : inFlight_) {
      if (Status s = waitForStep(earlier); !s) {
        waitFailed_ = true;
        return s;
      }
      earlier.waited = true;
    }
  if (Status s = enqueueInputs(slot, parity, graph); !s)
    return s;
  if (capture)
    if (Status s = captureGraphs(step.step, parity); !s)
      return s;
  if (graph) {
    if (Status s = launchGraphs(parity); !s)
      return s;
  } else {
    if (Status s = enqueueOps(step.step, parity, /*capturing=*/false); !s)
      return s;
    if (Status s = enqueueEagerEnd(parity); !s)
      return s;
  }
  step.graph = graph;
  lastLaunched_ = step;
  return Status::ok();
}

Status CudaRunner::wait(StepResult &result) {
  if (inFlight_.empty())
    return Status::error("program '" + program_.name +
                         "': wait() with no step in flight");
  const InFlight step = inFlight_.front();
  inFlight_.erase(inFlight_.begin());
  // After a wait that failed the waiter may still be inside its request (a
  // step that hung, or one whose NCCL call failed): a new request would
  // race with it. The steps behind it are not waited for; the destructor
  // waits for the devices.
  if (waitFailed_ || gpuHung()) {
    broken_ = true;
    return Status::error("program '" + program_.name + "', step " +
                         std::to_string(step.step) +
                         ": not waited for after an earlier step failed");
  }
  if (!step.waited) {
    if (Status s = waitForStep(step); !s) {
      // The step may still run: nothing may touch its buffers.
      broken_ = waitFailed_ = true;
      return s;
    }
  }
  return readResults(step, result);
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
  set->convAlgoPath_ = options.convAlgoCachePath;
  if (!set->convAlgoPath_.empty()) {
    std::vector<std::string> warnings;
    set->convAlgos_.load(set->convAlgoPath_, cudnnGetVersion(), warnings);
    for (const std::string &w : warnings)
      std::fprintf(stderr, "graphrun: warning: %s\n", w.c_str());
    // Workers of one job on one host would write the same file: the chief
    // writes it (the others read what it wrote on the next run).
    set->writeConvAlgos_ = !options.workers || options.workers->rank() == 0;
  }
  for (int d = 0; d < logical; ++d) {
    std::unique_ptr<CudaDevice> device;
    if (Status s =
            CudaDevice::create(d, first + d % physical,
                               options.precision == Precision::tf32, device);
        !s)
      return Status::error("cuda:" + std::to_string(d) + ": " + s.message());
    device->setConvAlgoCache(&set->convAlgos_);
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
  // The program's kernels are made: what they measured is kept for the
  // plan's next run. A file that cannot be written costs only the
  // measuring next time.
  if (writeConvAlgos_ && convAlgos_.dirty())
    if (Status s = convAlgos_.save(convAlgoPath_); !s)
      std::fprintf(stderr,
                   "graphrun: warning: cuDNN algorithm cache not written: "
                   "%s\n",
                   s.message().c_str());
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
    platform.lost = [] { return gpuHung(); };
    registerDevicePlatform(Backend::cuda, std::move(platform));
  });
}

} // namespace graph::runtime::cuda
