//===- Workers.h - the processes of one training job -----------*- C++ -*-===//
//
// A job runs as one process (graphrun alone) or as W workers that a
// launcher started: mpirun, srun --mpi=pmix, the Kubernetes MPI Operator.
// Workers is what the job needs to know about them, and the few operations
// that cross processes: summing a bucket (the gradient all-reduce's
// cross-worker step), broadcasting the chief's variables, gathering every
// worker's view of the job to check that they agree. Open MPI carries them
// (MpiWorkers.cpp); one process needs no MPI at all.
//
// Bootstrap is separate from transport, as in c10d and Horovod: NCCL takes
// its unique id through broadcast() and then carries the GPU all-reduce
// itself.
//
// Every operation has the job's collective timeout. A worker that died or
// hangs is named (rank and host) by the first worker that waits for it too
// long, and then the job is aborted (abort()), so that no worker is left
// waiting.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_COLLECTIVES_WORKERS_H
#define RUNTIME_COLLECTIVES_WORKERS_H

#include "runtime/base/Status.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace graph::runtime {

class Workers {
public:
  virtual ~Workers() = default;

  /// This worker's rank in [0, size()); rank 0 is the chief.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The host worker `rank` runs on.
  virtual const std::string &host(int rank) const = 0;
  bool isChief() const { return rank() == 0; }
  /// "worker 1 (host b)", for messages.
  std::string name(int rank) const {
    return "worker " + std::to_string(rank) + " (host " + host(rank) + ")";
  }

  /// Sums `count` values over the workers, in place. Every worker calls
  /// with the same count, in the same order.
  virtual Status allReduceSum(float *data, int64_t count) = 0;
  virtual Status allReduceSum(double *data, int64_t count) = 0;
  /// Sums `count` floats over the workers, in place, carried as bfloat16
  /// (runtime/base/Bfloat16.h): each worker's values rounded to bf16, then
  /// each partial sum computed in float32 and rounded to bf16 (nearest
  /// even), the result widened back. Half the bytes of float32 on the wire.
  virtual Status allReduceSumAsBf16(float *data, int64_t count) = 0;
  /// Copies `bytes` at `data` from worker `root` to every worker.
  virtual Status broadcast(void *data, size_t bytes, int root) = 0;
  /// Every worker's `mine`, in rank order.
  virtual Status allGather(const std::string &mine,
                           std::vector<std::string> &all) = 0;

  /// Records that this worker began global step `step`: what the
  /// late-worker diagnosis compares.
  virtual void progress(int64_t step) { (void)step; }

  /// Ends the whole job now, every worker, after a failure this worker
  /// cannot share (the others may be waiting in a collective). Does not
  /// return. One process just exits with `status`.
  [[noreturn]] virtual void abort(int status) = 0;
};

/// One process: rank 0 of 1; the collectives are the identity.
std::unique_ptr<Workers> singleWorker();

/// Whether a launcher (mpirun, srun, the MPI Operator) started this process
/// as one of a job's workers: its environment names a rank and a size.
bool launchedAsWorker();

/// Joins the job this process was launched into (MPI_Init_thread), within
/// `timeout` for every later operation. An error when this build has no
/// MPI or MPI does not start.
Status joinWorkers(std::chrono::milliseconds timeout,
                   std::unique_ptr<Workers> &out);

/// A status every worker agrees on: the first failing worker's (by rank),
/// or ok when all are. `reportedBy` is the rank whose message it is (-1
/// when ok): a caller prints it on that rank only, so a fault every worker
/// finds is reported once.
Status agree(Workers &workers, const Status &mine, int &reportedBy);

} // namespace graph::runtime

#endif // RUNTIME_COLLECTIVES_WORKERS_H
