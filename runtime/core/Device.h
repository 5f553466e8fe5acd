//===- Device.h - devices and what runs a program on them ------*- C++ -*-===//
//
// The executor's view of hardware, in TensorFlow's words: a Device owns
// memory and the backend state its kernels receive; a DeviceSet is the
// devices of one run (shared by the mirrored variables and by the training
// and evaluation executors, so a GPU's streams, library handles and NCCL
// communicators are made once); a ProgramRunner runs a prepared program's
// step on them.
//
// The host path (reference and cpu backends) is built into the runtime
// (Device.cpp's host devices; the executor's threads run their programs).
// Other backends register a DevicePlatform (the CUDA backend does in
// cuda::registerCudaBackend()), so runtime/core never includes a CUDA header
// and builds without one.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_DEVICE_H
#define RUNTIME_CORE_DEVICE_H

#include "runtime/base/Status.h"
#include "runtime/collectives/Collective.h"
#include "runtime/core/Kernel.h"
#include "runtime/data/Batch.h"
#include "runtime/plan/plan_generated.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graph::runtime {

class Workers; // collectives/Workers.h

/// The arithmetic of convolutions and matrix products on a GPU: fp32
/// throughout, or operands rounded to TF32 on the tensor cores (PyTorch's
/// default for cuDNN convolutions; about 3e-4 relative). Everything else
/// (elementwise ops, normalisation statistics, losses, optimizers) is fp32
/// under either. The host backends always compute in fp32.
enum class Precision { fp32, tf32 };
const char *precisionName(Precision precision);
/// The precision named `name` ("fp32", "tf32").
std::optional<Precision> parsePrecision(const std::string &name);

/// How a run executes its programs: read by the executor and by a
/// backend's devices and runners (seed, timeout and workers as much as the
/// CUDA-only fields below), so they travel as one.
struct ExecutorOptions {
  Backend backend = Backend::reference;
  /// The run's seed: kernels mix it into dropout masks.
  uint64_t seed = 0;
  /// How long a device waits for another (all-reduce, event) before the
  /// step fails naming the late replica.
  std::chrono::milliseconds timeout{60000};
  /// Replaces the plan's learning rate in every optimizer_update (negative:
  /// keep the plan's).
  double learningRate = -1;
  /// cpu: the threads that run a step flush subnormal floats to zero (FTZ
  /// and DAZ), as TensorFlow's CPU kernels do (runtime/core/DenormalMode.h;
  /// `graphrun --keep-denormals` turns it off). The reference backend
  /// always computes exact IEEE arithmetic.
  bool flushDenormals = true;
  /// CUDA: capture the training step as a CUDA graph after one eager
  /// warm-up step and replay it (`graphrun --no-cuda-graph` turns it off).
  bool cudaGraph = true;
  /// CUDA: the physical GPUs to spread the logical devices over, round
  /// robin (0: all present). Tests set 1 to put two logical GPUs on one.
  int maxPhysicalDevices = 0;
  /// CUDA: the first physical GPU this process uses; workers that share a
  /// host take disjoint ranges (NCCL refuses one GPU in two ranks).
  int firstPhysicalDevice = 0;
  /// CUDA: convolutions' and matrix products' arithmetic (graphrun's
  /// --precision, default tf32 there; fp32 here, so tests compare with the
  /// reference at float tolerance unless they ask).
  Precision precision = Precision::fp32;
  /// CUDA: the file of measured cuDNN algorithms, read when the devices are
  /// made and written after a program's kernels are (graphrun: beside the
  /// plan). Empty: measured choices last this process only.
  std::string convAlgoCachePath;
  /// The job's workers (null: this process is the whole job). A program
  /// for N replicas then runs N / W of them here: replicas [rank * N / W,
  /// (rank + 1) * N / W), on this process's devices 0..N / W - 1, and its
  /// all-reduces span the workers.
  Workers *workers = nullptr;
  /// The type gradients cross between workers in (graphrun
  /// --allreduce-dtype): float32, or bfloat16 on the host transport
  /// (Collective.h). The cuda backend's NCCL path takes float32 only.
  WireType allReduceWire = WireType::f32;
};

/// Memory one device allocated; released by the function the device gave.
/// Move-only.
class DeviceMemory {
public:
  DeviceMemory() = default;
  DeviceMemory(void *data, int64_t bytes, std::function<void(void *)> release)
      : data_(data), bytes_(bytes), release_(std::move(release)) {}
  DeviceMemory(DeviceMemory &&other) noexcept { *this = std::move(other); }
  DeviceMemory &operator=(DeviceMemory &&other) noexcept {
    if (this != &other) {
      reset();
      data_ = std::exchange(other.data_, nullptr);
      bytes_ = std::exchange(other.bytes_, 0);
      release_ = std::exchange(other.release_, nullptr);
    }
    return *this;
  }
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;
  ~DeviceMemory() { reset(); }

  void *data() const { return data_; }
  int64_t bytes() const { return bytes_; }

private:
  void reset() {
    if (data_ && release_)
      release_(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  void *data_ = nullptr;
  int64_t bytes_ = 0;
  std::function<void(void *)> release_;
};

/// One logical device: a host replica, or a logical GPU.
class Device {
public:
  virtual ~Device() = default;
  /// For messages: "host:1", "cuda:1 (GPU 0)".
  virtual std::string name() const = 0;
  /// `bytes` of zeroed memory, aligned for any element type, allocated once
  /// (never inside a step).
  virtual Status allocate(int64_t bytes, DeviceMemory &out) = 0;
  /// Copies between host memory and this device's memory, after the work
  /// queued on the device has finished: a read sees the last step's values.
  virtual Status copyFromHost(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  /// Makes this device current for the calling thread (cudaSetDevice)
  /// before kernels are instantiated for it.
  virtual Status activate() { return Status::ok(); }
  /// KernelContext::deviceState for kernels on this device.
  virtual void *kernelState() { return nullptr; }
};

/// A named point of a device's step (`forward_begin`, `allreduce_end`, ...).
struct Timestamp {
  std::string_view name; // points into the plan, or is one of the below
  std::chrono::steady_clock::time_point at;
};

/// The host path's own points, around each all-reduce call of a device's
/// thread (which runs its reductions between its backward ops).
inline constexpr std::string_view kReduceBegin = "reduce_begin";
inline constexpr std::string_view kReduceEnd = "reduce_end";

/// What one step produced.
struct StepResult {
  /// The program's output names ("loss", "accuracy"), in program order.
  std::vector<std::string> names;
  /// [replica][output]: each replica's value.
  std::vector<std::vector<double>> perReplica;
  /// [output]: the mean over replicas (each replica saw an equal share).
  std::vector<double> mean;
  /// The program's tensor outputs ("predictions"), and [replica][output]
  /// each replica's values, float32, row-major (a replica's rows of the
  /// batch, in order).
  std::vector<std::string> tensorNames;
  std::vector<std::vector<std::vector<float>>> tensors;
  /// [device]: the timestamps the device reached, in order, as host
  /// steady_clock points. On a GPU they are device events of this step,
  /// converted through the step's completion event (see CudaDevice.h).
  std::vector<std::vector<Timestamp>> timestamps;
  /// Seconds this step spent summing buckets across workers (host
  /// transport; 0 with one worker), part of the all-reduce time.
  double crossWorkerSeconds = 0;

  /// The mean of output `name`, or NaN when the program has none.
  double value(const std::string &name) const;
};

/// One plan op resolved to pointers and, for a launch, a kernel instance.
struct PreparedOp {
  plan::OpKind kind = plan::OpKind::launch;
  plan::StreamKind stream = plan::StreamKind::compute;
  /// The op's device; -1 for an all-reduce (every device).
  int device = 0;
  /// The op's index in the plan program (for messages).
  size_t index = 0;
  KernelFn kernel;
  std::string kernelName;
  KernelConfig config;
  std::vector<TensorRef> ins, outs;
  int event = -1;
  std::string_view name;
  /// output: its index among the scalar outputs, or among the tensor
  /// outputs (tensorOutput; then output is -1).
  int output = -1;
  int tensorOutput = -1;
  int replica = -1;
  /// all_reduce: replica r's buffer is reduceData[r].
  std::vector<float *> reduceData;
  int64_t reduceCount = 0;
  ReduceOp reduceOp = ReduceOp::mean;
  const void *copySrc = nullptr;
  void *copyDst = nullptr;
  size_t copyBytes = 0;
};

/// One data input buffer of a device, refilled from the batch every step.
struct PreparedInput {
  void *dst = nullptr;
  int device = 0;
  int replica = 0;
  /// Which part of the replica's BatchSlice fills it.
  data::BatchPart part = data::BatchPart::images;
  size_t bytes = 0;
  /// A model of several inputs: each example's features are its inputs'
  /// rows one after another, in the plan's input order (ArraysDataset.h);
  /// this input takes elements [columnOffset, columnOffset + columns) of
  /// each row of rowElements. 0 columns: the whole row (one input).
  /// A model of several outputs takes its labels the same way, each
  /// output's columns of the batch's targets (its class index a float
  /// column, converted to `intLabels` i32 on the way).
  int64_t columnOffset = 0, columns = 0, rowElements = 0;
  bool intLabels = false;
};

/// A program ready to run: what the executor prepared, device-neutral.
struct PreparedProgram {
  std::string name;
  /// This process's replicas: devices 0..replicas - 1.
  int replicas = 1;
  /// Which of the job's replicas they are (with several workers, a slice).
  ReplicaSpan span;
  /// The rows this process feeds a step (the job's global batch over its
  /// workers): local replica r's rows start at r * batch / replicas.
  int64_t batch = 0;
  /// The row of the global batch where local replica 0's rows begin
  /// (dropout masks key on global rows).
  int64_t firstRow = 0;
  int numEvents = 0;
  /// Every op in program order.
  std::vector<PreparedOp> ops;
  std::vector<PreparedInput> inputs;
  /// [device]: the timestamps the device records per step.
  std::vector<size_t> timestamps;
  /// The program's scalar outputs (loss, metrics), in order; its tensor
  /// outputs (an evaluation's or a prediction's "predictions") apart.
  std::vector<std::string> outputNames;
  std::vector<std::string> tensorOutputNames;
};

/// Runs the steps of one prepared program on a DeviceSet, in three calls so
/// that the input of step k+1 travels while step k runs (Executor::stage):
/// stage(k+1) may come between launch(k) and wait(k).
class ProgramRunner {
public:
  virtual ~ProgramRunner() = default;
  /// Hands the device the inputs of the next launch(): replica r's share is
  /// slices[r]. Returns once the slices may be freed; the copy itself may
  /// still be running (on a GPU, on the copy stream, into a staging slot
  /// the step in flight does not read). One staged step at a time.
  virtual Status stage(const std::vector<data::BatchSlice> &slices) = 0;
  /// Forgets the staged batch (a run that stopped before launching it).
  virtual void discardStaged() = 0;
  /// Starts a step on the staged inputs; returns without waiting for it.
  /// Up to maxStepsInFlight() launches may precede a wait(): the device
  /// runs them in order, each on its own inputs and output staging.
  virtual Status launch(int64_t step) = 0;
  /// Waits for the oldest launched step; fills `result.perReplica` (sized
  /// by the caller) and `result.timestamps`. Returns when its outputs are
  /// on the host.
  virtual Status wait(StepResult &result) = 0;
  /// How many launched steps may be in flight at once.
  virtual int maxStepsInFlight() const { return 1; }
  /// Keeps `dataset` in device memory: later stage() calls pass slices of
  /// source indices only (BatchSlice::sourceIndices, the rest null) and the
  /// runner gathers the rows there. `format` is the labels input's.
  virtual Status cacheDataset(const data::Dataset &dataset,
                              data::LabelFormat format) = 0;
};

/// The devices of one run.
class DeviceSet {
public:
  virtual ~DeviceSet() = default;
  virtual Backend backend() const = 0;
  virtual int size() const = 0;
  virtual Device &device(int index) = 0;
  /// A runner for `program`, whose buffers were allocated on these devices
  /// and whose kernels were instantiated for them. `program` outlives it.
  virtual Status createRunner(const PreparedProgram &program,
                              const ExecutorOptions &options,
                              std::unique_ptr<ProgramRunner> &out) = 0;
};

/// A backend's devices, registered at start-up.
struct DevicePlatform {
  /// The physical devices present (0 when none or no driver; never fails).
  std::function<int()> physicalDevices;
  /// `logicalDevices` devices for one run.
  std::function<Status(int logicalDevices, const ExecutorOptions &options,
                       std::shared_ptr<DeviceSet> &out)>
      createDevices;
  /// Whether a device of this platform was declared lost (a hung GPU): the
  /// process must then end without tearing anything down (std::_Exit after
  /// its error is printed), since teardown would wait for the device
  /// forever. Null: never.
  std::function<bool()> lost;
};

/// Whether `backend` runs on the host (reference, cpu): its devices are
/// host memory and the executor's threads run their programs.
bool isHostBackend(Backend backend);
/// `bytes` of zeroed host memory, 64-byte aligned (an Arena, counted by
/// Arena::allocations()): a host device's, or a variable's before it is
/// placed on a device.
Status allocateHostMemory(int64_t bytes, DeviceMemory &out);

/// Registers the platform of `backend` (replacing an earlier one).
void registerDevicePlatform(Backend backend, DevicePlatform platform);
/// Whether a platform is registered for `backend`.
bool hasDevicePlatform(Backend backend);
/// The physical devices of `backend`: 0 when its platform is not
/// registered (a build without CUDA) or it has no device.
int physicalDeviceCount(Backend backend);
/// Whether any registered platform declared a device lost (DevicePlatform::
/// lost): a tool prints its error, flushes and calls std::_Exit.
bool deviceLost();
/// Creates `logicalDevices` devices of `backend`: host devices for a host
/// backend, else through its platform; an error naming the backend when
/// none is registered.
Status createDeviceSet(Backend backend, int logicalDevices,
                       const ExecutorOptions &options,
                       std::shared_ptr<DeviceSet> &out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_DEVICE_H
