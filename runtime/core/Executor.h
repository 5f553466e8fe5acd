//===- Executor.h - runs one plan program for one step ----------*- C++ -*-===//
//
// The executor turns a verified plan program into something that runs a step
// without allocating: per device one arena (allocated once), the device's
// share of every data input, and the program's ops resolved to kernels and
// buffer pointers. On the host backends each device runs its ops in program
// order on its own thread (a host device's streams collapse into that order,
// which the compiler made dependency-respecting); events are real
// synchronisation between device threads and an all-reduce is a rendezvous
// of all of them. On other backends (CUDA) a ProgramRunner of the backend's
// DeviceSet runs the same prepared program (Device.h).
//
// Variables live outside the executor, in MirroredVariables
// (MirroredVariables.h), because the training and the evaluation program of
// a run share them; the options it runs under are Device.h's, since a
// backend's runner reads them too.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_EXECUTOR_H
#define RUNTIME_CORE_EXECUTOR_H

#include "runtime/base/Status.h"
#include "runtime/collectives/Collective.h"
#include "runtime/core/Arena.h"
#include "runtime/core/Device.h"
#include "runtime/core/Kernel.h"
#include "runtime/core/MirroredVariables.h"
#include "runtime/data/Batch.h"
#include "runtime/plan/plan_generated.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace graph::runtime {

class Executor {
public:
  /// Prepares `program` of `plan` (a verified plan) over `variables`
  /// (one copy per program device). Fails, naming them, when the backend
  /// lacks kernels the program launches.
  static Status create(const plan::Plan &plan, const plan::Program &program,
                       MirroredVariables &variables,
                       const ExecutorOptions &options,
                       std::unique_ptr<Executor> &out);
  ~Executor();
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// Runs one step on `batch` (this process's share of the global batch,
  /// localBatch() rows: local replica r gets rows [r*b, (r+1)*b) of it, b
  /// the rows per replica); `step` is the global step (1 on the first
  /// update). `result` is reused from step to step; its outputs are this
  /// process's replicas'. The same as stage(), launch() and wait() in a
  /// row.
  Status run(const data::Batch &batch, int64_t step, StepResult &result);

  /// run() in three parts, so that a caller overlaps the input of the next
  /// step with the step in flight (Session::train does):
  ///
  ///   stage(b1); launch(1, r); stage(b2); wait(); /* hooks */
  ///   launch(2, r); stage(b3); wait(); ...
  ///
  /// stage() hands over the batch of the next launch: on a GPU its copy
  /// starts on the copy stream and `batch` may be freed on return; on the
  /// host backends `batch` must stay alive and unchanged until that
  /// launch() returns. launch() starts the step (on the host backends it
  /// runs it whole); wait() finishes the oldest step launched, with its
  /// outputs in the `result` its launch() was given.
  ///
  /// Up to maxStepsInFlight() steps may be launched before a wait(), each
  /// into its own result; on a GPU the second then runs right behind the
  /// first, while the host reads the first's outputs (Session::train's
  /// launch-ahead):
  ///
  ///   stage(b1); launch(1, r1); stage(b2); launch(2, r2); stage(b3);
  ///   wait(); /* hooks of 1 */ launch(3, r1); stage(b4); wait(); ...
  ///
  /// Out of order (a launch with nothing staged, two stages in a row, a
  /// launch beyond maxStepsInFlight()) is an error, not a hang.
  Status stage(const data::Batch &batch);
  Status launch(int64_t step, StepResult &result);
  Status wait();
  /// How many launched steps may await their wait(): the runner's limit
  /// (2 on a GPU), and 2 on the host backends, which run the step inside
  /// launch(), so that a second launch there only queues its result.
  int maxStepsInFlight() const;
  /// The steps launched and not yet waited for.
  int stepsInFlight() const { return static_cast<int>(inFlight_.size()); }
  /// Sets the learning rate of the optimizer updates from the next launch
  /// on (KernelContext::learningRate; negative: the plan's again). Host
  /// backends only: the CUDA runner's captured steps do not read it yet,
  /// and it says so.
  Status setLearningRate(double rate);
  /// Forgets a staged batch that will not be launched (a run that stopped
  /// early), so that a later stage() starts afresh. A no-op when none is.
  void discardStaged();

  /// Keeps `dataset` where the program's devices read it (device memory on
  /// a GPU, shared host memory on the host backends): stage() then takes
  /// batches of source indices only (Pipeline::batchIndices), and each
  /// replica gathers its rows there (graphrun --cache-on-device). Batches
  /// with images are still accepted.
  Status cacheDataset(std::shared_ptr<const data::Dataset> dataset);

  const plan::Program &program() const { return program_; }
  /// The replicas of this process (all of the program's with one worker).
  int replicas() const { return replicas_; }
  /// The elements of tensor output `name` per replica (0: no such output).
  int64_t tensorOutputElements(const std::string &name) const;
  /// Which of the job's replicas they are.
  ReplicaSpan span() const { return span_; }
  /// The global batch the program was compiled for.
  int64_t globalBatch() const { return globalBatch_; }
  /// The rows this process feeds a step: the global batch over the
  /// workers.
  int64_t localBatch() const { return localBatch_; }
  /// How the program wants its labels (from the labels input's dtype).
  data::LabelFormat labelFormat() const { return labelFormat_; }
  /// Device `device`'s arena (tests check that it never moves).
  const DeviceMemory &arena(int device) const;
  /// The program as prepared: ops resolved to kernels and buffers (tests
  /// walk it as the CUDA runner would, cuda/StepSchedule.h).
  const PreparedProgram &prepared() const { return prepared_; }
  /// The devices the program runs on (variables and executors share them).
  DeviceSet &devices() const { return *deviceSet_; }

private:
  Executor(const plan::Plan &plan, const plan::Program &program);
  Status prepare(MirroredVariables &variables, const ExecutorOptions &options);
  Status runHost(int64_t step);
  Status checkBatch(const data::Batch &batch);
  void runDevice(int device);
  void workerLoop(int device);
  void fail(const Status &status);
  Status waitEvent(int event, int device);
  void recordEvent(int event);

  const plan::Plan &plan_;
  const plan::Program &program_;
  ExecutorOptions options_;
  int replicas_ = 1;
  ReplicaSpan span_;
  int64_t globalBatch_ = 0;
  int64_t localBatch_ = 0;
  data::LabelFormat labelFormat_ = data::LabelFormat::OneHot;
  /// Several outputs: each labels input takes its columns of the batch's
  /// targets (labelFormat_ is Dense).
  bool multiLabels_ = false;
  std::shared_ptr<DeviceSet> deviceSet_;
  std::vector<DeviceMemory> arenas_;       // [device]
  std::vector<DeviceMemory> inputStorage_; // every device's input buffers
  /// [device] the float32 scratch of a mixed-precision plan's widened
  /// kernels (KernelContext::widenScratch); null where none is needed.
  std::vector<std::unique_ptr<float[]>> widenScratch_;
  PreparedProgram prepared_;
  // The host path: each device's ops (all-reduces in every list), run by
  // runDevice; null runner_. Other backends: runner_.
  std::vector<std::vector<const PreparedOp *>> hostOps_;
  std::unique_ptr<ProgramRunner> runner_;
  std::unique_ptr<Collective> collective_;

  // The staged batch and the step in flight. On the host path slices_
  // point into the caller's batch, or only at its indices when the rows
  // come from cached_.
  std::vector<data::BatchSlice> slices_;
  std::shared_ptr<const data::Dataset> cached_;
  /// [global batch] ones: the weights of a batch that has none, for a
  /// program with a sample_weight input.
  std::vector<float> ones_;
  bool staged_ = false;
  /// A step launched and not yet waited for: launch()'s outcome, which
  /// wait() reports, and the result it fills.
  struct Launched {
    Status status;
    StepResult *result = nullptr;
    double crossWorkerSeconds = 0; // the host path's, taken at launch
  };
  // Oldest first; at most two, so a vector that stops allocating once it
  // held two.
  std::vector<Launched> inFlight_;
  StepResult *hostResult_ = nullptr; // the step runHost() runs
  int64_t step_ = 0;
  uint64_t stepId_ = 0;
  double learningRate_ = -1; // setLearningRate's, on the host path

  // Events and failure: one lock; events hold the id of the step that last
  // recorded them.
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<uint64_t> eventStep_;
  std::atomic<bool> failed_{false};
  Status error_;

  // Device threads (devices 1..N-1; device 0 runs on the caller's thread).
  std::vector<std::thread> workers_;
  uint64_t startGeneration_ = 0;
  int finished_ = 0;
  bool stopping_ = false;
};

/// The program `<kind>_x<replicas>` of `plan`, or an error listing the
/// replica counts the plan has programs for.
Status findProgram(const plan::Plan &plan, plan::ProgramKind kind, int replicas,
                   const std::string &planName, const plan::Program *&out);

} // namespace graph::runtime

#endif // RUNTIME_CORE_EXECUTOR_H
