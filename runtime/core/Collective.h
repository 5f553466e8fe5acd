//===- Collective.h - collectives across the replicas of a step -*- C++ -*-===//
//
// One interface for the host replicas' ways of exchanging gradients (local
// threads now; MPI later). Each replica calls the collective with its own
// buffer; the call returns when the result is in every replica's buffer.
// GPUs do not use it: their all-reduce is enqueued on streams and returns
// before it runs (runtime/backends/cuda/NcclCollective.h).
// Every call has a timeout, and its error names the replicas that did not
// arrive: a hang becomes a message.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_COLLECTIVE_H
#define RUNTIME_CORE_COLLECTIVE_H

#include "runtime/core/Status.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace graph::runtime {

enum class ReduceOp { sum, mean };

class Collective {
public:
  virtual ~Collective() = default;
  virtual int size() const = 0;
  /// In place over `count` floats of replica `rank`'s `data`. Every rank
  /// calls it with the same count and op; calls of all ranks pair up in
  /// order.
  virtual Status allReduce(int rank, float *data, int64_t count,
                           ReduceOp op) = 0;
  /// Fails every pending and later call with `reason`: a replica that fails
  /// mid-step releases the others instead of letting them time out.
  virtual void abort(const std::string &reason) = 0;
};

/// Replicas as threads of this process: a rendezvous, then each rank
/// reduces its own slice of the buffers (in rank order, so the result does
/// not depend on arrival order), then a second rendezvous.
std::unique_ptr<Collective>
makeLocalCollective(int replicas, std::chrono::milliseconds timeout);

} // namespace graph::runtime

#endif // RUNTIME_CORE_COLLECTIVE_H
