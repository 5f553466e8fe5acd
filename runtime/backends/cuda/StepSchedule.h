//===- StepSchedule.h - the order a GPU step is issued in -------*- C++ -*-===//
//
// The CUDA runner's schedule walk, apart from CUDA: which launch, event
// record, event wait, all-reduce, copy, timestamp and output a step issues,
// in which order, on which device and stream. CudaRunner (CudaDevice.cpp)
// issues a step through a StepLauncher that calls CUDA, cuDNN and NCCL;
// a test passes one that records, so the launch sequence of a plan is
// checked against the plan on a machine without a GPU
// (test/runtime/cuda/StepScheduleTest.cpp).
//
// What stays outside the walk: the inputs' hand-over before it (the staging
// slots' events, the step scalar) and the graph capture's fork and join,
// which depend on CUDA objects only.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_STEPSCHEDULE_H
#define RUNTIME_BACKENDS_CUDA_STEPSCHEDULE_H

#include "runtime/core/Device.h"

#include <cstddef>

namespace graph::runtime::cuda {

/// Issues one step's work. `i` is the op's index in PreparedProgram::ops;
/// every call enqueues on the op's device and stream (op.device,
/// op.stream), except allReduce, which enqueues replica `replica`'s part on
/// that replica's comm stream.
class StepLauncher {
public:
  virtual ~StepLauncher() = default;
  virtual Status kernel(size_t i, const PreparedOp &op) = 0;
  /// Called once per local replica, 0 first; the last call enqueues the
  /// collective for all of them (NCCL's group).
  virtual Status allReduce(size_t i, const PreparedOp &op, int replica) = 0;
  virtual Status copy(size_t i, const PreparedOp &op) = 0;
  virtual Status record(size_t i, const PreparedOp &op) = 0;
  virtual Status wait(size_t i, const PreparedOp &op) = 0;
  virtual Status timestamp(size_t i, const PreparedOp &op) = 0;
  virtual Status output(size_t i, const PreparedOp &op) = 0;
  /// The end of an eager step: replica `replica`'s `stream` joins its
  /// compute stream; then done(replica) records the completion event.
  virtual Status join(int replica, plan::StreamKind stream) = 0;
  virtual Status done(int replica) = 0;
};

/// The program's ops in program order, each to its launcher call: what a
/// step issues, eagerly or into a CUDA graph capture.
Status scheduleOps(const PreparedProgram &program, StepLauncher &launcher);

/// After the ops of an eager step: per replica, its comm and copy streams
/// join its compute stream, which then records completion.
Status scheduleEagerEnd(const PreparedProgram &program, StepLauncher &launcher);

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_STEPSCHEDULE_H
