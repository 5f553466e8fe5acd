//===- CudaDevice.h - logical GPUs and the CUDA program runner --*- C++ -*-===//
//
// The CUDA backend's side of runtime/core/Device.h.
//
// A CudaDevice is one logical GPU: three non-blocking streams (compute,
// comm, copy), a cuDNN handle bound to the compute stream, a cuBLASLt
// handle, the kernels' workspace (kWorkspaceBytes) and the device-memory
// step scalar. `--gpus N` with fewer physical GPUs maps logical device d to
// GPU d mod P (a warning says so once): each logical device keeps its own
// streams and arena, and the all-reduce among the logical devices of one GPU
// is a kernel (runtime/backends/cuda/NcclCollective.h).
//
// The runner enqueues a step from one host thread, in program order: each
// op on its device's stream of the op's kind, plan events as CUDA events,
// all-reduces through NCCL inside one group call. The first step runs
// eagerly; the second and the third capture the step once per physical GPU
// into a CUDA graph (every logical device of that GPU in one graph, so the
// logical all-reduce's cross-stream events stay inside one capture), one
// per parity (below), which the later steps replay.
//
// Inputs are double-buffered (ProgramRunner::stage/launch/wait): stage()
// copies the next batch into one of two pinned host slots and starts its
// upload on the copy stream into that slot's device buffer, while the step
// in flight reads the arena; launch() then moves the slot into the arena's
// input buffers on the compute stream (a device-to-device copy, or with
// --cache-on-device a gather from the dataset held on the GPU, for which
// only the batch's indices were uploaded) and writes the step scalar,
// outside the graph. Events keep a slot from being refilled before the
// launch that reads it has. The uploads share the copy stream with the
// plan's own copy ops, which the compiler does not emit today; if it ever
// does, an eager step's upload would queue behind them (a dedicated upload
// stream would then keep the overlap).
//
// Two steps may be in flight: a launch() of step k+1 before the wait() of
// step k (Session::train's launch-ahead) enqueues it behind step k, so the
// GPU runs the steps back to back while the host reads step k's outputs
// and runs its hooks. What the host writes for a step or reads after it
// exists once per parity (k mod 2): the step scalar's staging, the
// outputs' pinned staging, the timestamp and completion events, and so
// the captured graph, whose nodes hold them (steps 2 and 3 capture one
// each, with nothing in flight). The arena is shared: the steps run in
// order, and a graph's other replicas wait for the step before it.
//
// Timestamps are CUDA events recorded in the step (external event nodes in
// a graph). run() waits for the step's completion events anyway (the
// outputs go to the host): a waiter thread sleeps in cudaEventSynchronize
// on them (cudaEventBlockingSync, so no core spins), while the caller's
// thread is the watchdog, waking every few milliseconds to check NCCL's
// asynchronous errors and the deadline (a replica whose step does not
// finish in the timeout is named, the GPU declared hung, and from then on
// nothing calls into the CUDA runtime: GpuHang.h). The host time at which
// the waiter sees an event complete anchors the step's timestamps: a
// timestamp is that time minus cudaEventElapsedTime(timestamp, completion).
// Reading them costs no extra synchronisation.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
#define RUNTIME_BACKENDS_CUDA_CUDADEVICE_H

#include "runtime/backends/cuda/ConvAlgoCache.h"
#include "runtime/backends/cuda/CudaDeviceState.h"
#include "runtime/backends/cuda/NcclCollective.h"
#include "runtime/core/Device.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime::cuda {

/// The physical GPUs this process sees: 0 when there is none, no driver, or
/// the CUDA runtime cannot start (then `whyNone`, when given, says why).
/// Never fails and never aborts.
int physicalGpuCount(std::string *whyNone = nullptr);

/// Registers the CUDA kernels and the CUDA devices under Backend::cuda.
/// Tools call it once at start-up; idempotent. Needs no GPU.
void registerCudaBackend();

/// Device-memory allocations made through CudaDevice so far (tests check
/// that steps make none).
int64_t cudaAllocations();

class CudaDevice final : public Device {
public:
  /// Logical device `logical` on physical GPU `ordinal`; its convolutions
  /// and matrix products in TF32 when `tf32` (CudaDeviceState::tf32).
  static Status create(int logical, int ordinal, bool tf32,
                       std::unique_ptr<CudaDevice> &out);
  /// The measured-algorithm cache its kernels use (null: none).
  void setConvAlgoCache(ConvAlgoCache *cache) { state_.convAlgos = cache; }
  ~CudaDevice() override;
  CudaDevice(const CudaDevice &) = delete;
  CudaDevice &operator=(const CudaDevice &) = delete;

  std::string name() const override;
  Status allocate(int64_t bytes, DeviceMemory &out) override;
  Status copyFromHost(void *dst, const void *src, size_t bytes) override;
  Status copyToHost(void *dst, const void *src, size_t bytes) override;
  Status activate() override;
  void *kernelState() override { return &state_; }

  const CudaDeviceState &state() const { return state_; }
  int ordinal() const { return state_.ordinal; }
  int logical() const { return state_.logical; }
  cudaStream_t stream(plan::StreamKind kind) const;
  /// Waits for the work queued on the device's three streams.
  Status synchronize();
  /// The step scalar kernels read (CudaDeviceState::deviceStep).
  int64_t *deviceStep() const { return static_cast<int64_t *>(step_.data()); }

private:
  CudaDevice() = default;
  CudaDeviceState state_;
  DeviceMemory workspace_;
  DeviceMemory step_;
};

/// The logical GPUs of one run and their collective.
class CudaDeviceSet final : public DeviceSet {
public:
  /// `logical` logical GPUs over the physical ones from
  /// `options.firstPhysicalDevice` (at most `options.maxPhysicalDevices`
  /// when positive), round robin.
  static Status create(int logical, const ExecutorOptions &options,
                       std::shared_ptr<DeviceSet> &out);

  Backend backend() const override { return Backend::cuda; }
  int size() const override { return static_cast<int>(devices_.size()); }
  Device &device(int index) override { return *devices_[index]; }
  CudaDevice &cudaDevice(int index) { return *devices_[index]; }
  /// The physical GPUs in use.
  int physicalGpus() const { return physicalGpus_; }
  /// The all-reduce among the first `span.local` logical devices, across
  /// `workers` when there are several (made on first use; a program for
  /// fewer replicas than the set gets its own).
  Status collective(ReplicaSpan span, Workers *workers, NcclCollective *&out);
  Status createRunner(const PreparedProgram &program,
                      const ExecutorOptions &options,
                      std::unique_ptr<ProgramRunner> &out) override;

private:
  CudaDeviceSet() = default;
  int physicalGpus_ = 0;
  // The plan's measured cuDNN algorithms, which every device's kernels
  // share (CudaDeviceState::convAlgos); written after each runner's
  // kernels are made, when they measured something new.
  ConvAlgoCache convAlgos_;
  std::string convAlgoPath_;
  bool writeConvAlgos_ = false;
  std::vector<std::unique_ptr<CudaDevice>> devices_;
  // Declared after the devices, so destroyed before them: NCCL work ends
  // before the streams it runs on.
  std::vector<std::unique_ptr<NcclCollective>> collectives_; // by replicas
};

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
