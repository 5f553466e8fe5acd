//===- NcclCollective.h - all-reduce across GPUs and workers ----*- C++ -*-===//
//
// The GPU transport of Collective.h, enqueued on the logical devices' comm
// streams. One NCCL rank per physical GPU: in one process, communicators
// from ncclCommInitAll; across workers, one communicator over every
// worker's GPUs (ncclGetUniqueId on the chief, broadcast through Workers,
// ncclCommInitRank per local GPU inside a group). Logical GPUs that share
// a physical one (more `--gpus` than GPUs) first reduce among themselves
// with a kernel, since NCCL refuses two ranks on one GPU:
//
//   one GPU, one worker: mean of the N buffers, written back to all N
//   one logical per GPU: ncclAllReduce(avg or sum) inside one group call
//   otherwise:           per GPU, sum into the first logical device's
//                        buffer; NCCL sum across GPUs; per GPU, scale by
//                        1/N and write back to every logical device
//
// The executor calls allReduce once per local replica, from one thread;
// the last call enqueues the bucket's whole reduction. Each logical
// device's comm stream hands its buffer over with an event and waits for
// the result with another, so the plan's stream order holds.
//
// Compiled and linked in CI; it has never run on a GPU, and across workers
// never at all (bench/gpu-check.sh is the command for a lent GPU).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_COLLECTIVES_NCCLCOLLECTIVE_H
#define RUNTIME_COLLECTIVES_NCCLCOLLECTIVE_H

#include "runtime/base/Status.h"
#include "runtime/collectives/Collective.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace graph::runtime::cuda {

/// Where one logical device's collective work runs.
struct CollectiveRank {
  int ordinal = 0;             // the physical GPU
  cudaStream_t comm = nullptr; // the logical device's comm stream
};

class NcclCollective final : public Collective {
public:
  /// Groups `ranks` (one per local logical device, in replica order) by
  /// physical GPU and creates the NCCL communicators: among this process's
  /// GPUs when `workers` is null or one process, else among every worker's
  /// (a collective call: every worker creates its NcclCollective together).
  /// `span` says which of the job's replicas these are; a mean divides by
  /// span.total.
  static Status create(const std::vector<CollectiveRank> &ranks,
                       ReplicaSpan span, Workers *workers,
                       std::unique_ptr<NcclCollective> &out);
  ~NcclCollective() override;
  NcclCollective(const NcclCollective &) = delete;
  NcclCollective &operator=(const NcclCollective &) = delete;

  ReplicaSpan span() const override { return span_; }
  /// This process's physical GPUs.
  int physicalGpus() const { return static_cast<int>(groups_.size()); }
  /// Records local replica `rank`'s buffer (device memory of logical
  /// device `rank`); the call for the last local replica enqueues the
  /// in-place all-reduce of every buffer on the comm streams and returns
  /// once enqueued. Legal during CUDA graph capture of every involved
  /// stream.
  Status allReduce(int rank, float *data, int64_t count, ReduceOp op) override;
  void abort(const std::string &reason) override;
  /// An error naming the GPU whose communicator reported an asynchronous
  /// failure (a peer died, a network error); ok otherwise.
  Status asyncError() const;
  /// Aborts the communicators: pending NCCL work ends instead of hanging.
  void abort();

private:
  NcclCollective() = default;
  /// Enqueues the reduction of data[r] for every local replica r.
  Status enqueueAllReduce(const std::vector<float *> &data, int64_t count,
                          ReduceOp op);
  /// On GPU `group`: with `handIn`, the leader waits for every member and
  /// sums them; the result (times `scale`) goes to the leader, and with
  /// `handBack` to every member, whose comm streams then wait for it.
  Status enqueueLocal(int group, const std::vector<float *> &data,
                      int64_t count, bool handIn, float scale, bool handBack);

  struct Group {
    int ordinal = 0;
    std::vector<int> members; // logical devices, the first is the leader
    ncclComm_t comm = nullptr;
  };
  std::vector<CollectiveRank> ranks_;
  std::vector<Group> groups_;
  ReplicaSpan span_;
  /// NCCL ranks beyond this process's GPUs: communicators span workers.
  bool acrossWorkers_ = false;
  /// The buffers the local replicas handed over for the bucket in flight.
  std::vector<float *> pending_;
  int64_t pendingCount_ = -1;
  // Per logical device: its comm stream marks its buffer ready (arrive) and
  // waits for its GPU's leader to finish (release, one per GPU).
  std::vector<cudaEvent_t> arrive_;
  std::vector<cudaEvent_t> release_;
  bool aborted_ = false;
};

} // namespace graph::runtime::cuda

#endif // RUNTIME_COLLECTIVES_NCCLCOLLECTIVE_H
