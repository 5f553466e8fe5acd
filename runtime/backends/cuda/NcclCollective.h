//===- NcclCollective.h - all-reduce across logical GPUs --------*- C++ -*-===//
//
// The gradient all-reduce of the CUDA runtime, enqueued on the logical
// devices' comm streams. One NCCL rank per physical GPU, all made in this
// process by ncclCommInitAll. Logical GPUs that share a physical one (more
// `--gpus` than GPUs) first reduce among themselves with a kernel, since
// NCCL refuses two ranks on one GPU:
//
//   one GPU:             mean of the N buffers, written back to all N
//   one logical per GPU: ncclAllReduce(avg or sum) inside one group call
//   otherwise:           per GPU, sum into the first logical device's
//                        buffer; NCCL sum across GPUs; per GPU, scale by
//                        1/N and write back to every logical device
//
// Each logical device's comm stream hands its buffer over with an event and
// waits for the result with another, so the plan's stream order holds.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_NCCLCOLLECTIVE_H
#define RUNTIME_BACKENDS_CUDA_NCCLCOLLECTIVE_H

#include "runtime/core/Collective.h"
#include "runtime/core/Status.h"

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

class NcclCollective {
public:
  /// Groups `ranks` (one per logical device, in replica order) by physical
  /// GPU and creates one NCCL communicator per GPU when there are several.
  static Status create(const std::vector<CollectiveRank> &ranks,
                       std::unique_ptr<NcclCollective> &out);
  ~NcclCollective();
  NcclCollective(const NcclCollective &) = delete;
  NcclCollective &operator=(const NcclCollective &) = delete;

  int size() const { return static_cast<int>(ranks_.size()); }
  int physicalGpus() const { return static_cast<int>(groups_.size()); }
  /// Enqueues the in-place all-reduce of `count` floats at data[r] (device
  /// memory of logical device r) on the comm streams; returns once enqueued.
  /// Legal during CUDA graph capture of every involved stream.
  Status enqueueAllReduce(const std::vector<float *> &data, int64_t count,
                          ReduceOp op);
  /// An error naming the GPU whose communicator reported an asynchronous
  /// failure (a peer died, a network error); ok otherwise.
  Status asyncError() const;
  /// Aborts the communicators: pending NCCL work ends instead of hanging.
  void abort();

private:
  NcclCollective() = default;
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
  // Per logical device: its comm stream marks its buffer ready (arrive) and
  // waits for its GPU's leader to finish (release, one per GPU).
  std::vector<cudaEvent_t> arrive_;
  std::vector<cudaEvent_t> release_;
  bool aborted_ = false;
};

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_NCCLCOLLECTIVE_H
