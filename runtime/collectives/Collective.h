//===- Collective.h - all-reduce of a bucket over replicas ------*- C++ -*-===//
//
// One interface for every way a step's replicas exchange a bucket, as
// PyTorch's c10d Backend or Horovod's operation manager: the executor asks
// for "all-reduce this bucket" and never learns what carries it. Each local
// replica calls allReduce with its own copy of the bucket, in the same
// order of buckets on every replica and every worker. The transports are
// chosen by what the job spans:
//
//   LocalCollective   host replicas (threads) of this process, and when
//                     the job has several workers, the MPI step between
//                     them (Workers.h) on the reduced bucket
//   NcclCollective    GPUs: NCCL over the GPUs of every worker (its unique
//                     id bootstrapped through Workers), a kernel among
//                     logical GPUs that share one. It is the CUDA
//                     backend's (runtime/backends/cuda, as IREE keeps its
//                     nccl_channel in its CUDA driver), so this folder
//                     holds no CUDA header.
//
// Host transports return when the result is in every local copy. Device
// transports return once the reduction is enqueued on the replicas' comm
// streams; the last local replica's call enqueues it. Every call has a
// timeout, and its error names the replicas or workers that did not
// arrive: a hang becomes a message.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_COLLECTIVES_COLLECTIVE_H
#define RUNTIME_COLLECTIVES_COLLECTIVE_H

#include "runtime/base/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace graph::runtime {

class Workers;

enum class ReduceOp { sum, mean };

/// The type a bucket crosses between workers in (graphrun
/// --allreduce-dtype): float32, or bfloat16 for half the bytes on the
/// wire, each worker's local sum and each partial sum across workers
/// rounded to bfloat16 (nearest even). Replicas within a process always sum
/// in float32, in shared memory.
enum class WireType { f32, bf16 };

/// The replicas of a job that this process holds: replicas [first, first +
/// local) of `total` (workers x local replicas each).
struct ReplicaSpan {
  int local = 1;
  int first = 0;
  int total = 1;
};

class Collective {
public:
  virtual ~Collective() = default;
  virtual ReplicaSpan span() const = 0;
  /// All-reduces one bucket: `count` floats at `data`, local replica
  /// `rank`'s copy (0 <= rank < span().local). A mean divides by the job's
  /// replicas, every worker's included.
  virtual Status allReduce(int rank, float *data, int64_t count,
                           ReduceOp op) = 0;
  /// Fails every pending and later call with `reason`: a replica that fails
  /// mid-step releases the others instead of letting them time out.
  virtual void abort(const std::string &reason) = 0;
  /// Seconds spent reducing between workers since the last call (0 when
  /// the job has one worker), for the step timer.
  virtual double takeCrossWorkerSeconds() { return 0; }
};

/// Host replicas as threads of this process: a rendezvous, then each rank
/// reduces its own slice of the buffers (in rank order, so the result does
/// not depend on arrival order), then a second rendezvous. With `workers`
/// of more than one process, the first local replica also sums the bucket
/// across them (Workers::allReduceSum) between the two. `workers` must
/// outlive the collective; null means one process. `wire` is the type the
/// cross-worker step sums in.
std::unique_ptr<Collective>
makeLocalCollective(ReplicaSpan span, Workers *workers,
                    std::chrono::milliseconds timeout,
                    WireType wire = WireType::f32);

/// One process's `replicas` replicas, no other worker.
inline std::unique_ptr<Collective>
makeLocalCollective(int replicas, std::chrono::milliseconds timeout) {
  return makeLocalCollective({replicas, 0, replicas}, nullptr, timeout);
}

} // namespace graph::runtime

#endif // RUNTIME_COLLECTIVES_COLLECTIVE_H
