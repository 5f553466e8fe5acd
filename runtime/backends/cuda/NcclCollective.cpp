//===- NcclCollective.cpp - all-reduce across GPUs and workers ------------===//

#include "runtime/backends/cuda/NcclCollective.h"

#include "runtime/backends/cuda/CudaCheck.h"
#include "runtime/backends/cuda/GpuHang.h"
#include "runtime/backends/cuda/LogicalAllReduce.h"
#include "runtime/collectives/Workers.h"

#include <cstring>
#include <map>
#include <string>

namespace graph::runtime::cuda {

Status NcclCollective::create(const std::vector<CollectiveRank> &ranks,
                              ReplicaSpan span, Workers *workers,
                              std::unique_ptr<NcclCollective> &out) {
  std::unique_ptr<NcclCollective> c(new NcclCollective());
  c->ranks_ = ranks;
  c->span_ = span;
  c->pending_.assign(ranks.size(), nullptr);
  if (span.local != static_cast<int>(ranks.size()))
    return Status::error("all-reduce: " + std::to_string(ranks.size()) +
                         " logical GPUs for " + std::to_string(span.local) +
                         " local replicas");
  std::map<int, int> groupOf; // ordinal -> group
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    auto [it, added] =
        groupOf.emplace(ranks[r].ordinal, static_cast<int>(c->groups_.size()));
    if (added)
      c->groups_.push_back({ranks[r].ordinal, {}, nullptr});
    c->groups_[it->second].members.push_back(r);
  }
  for (const Group &g : c->groups_)
    if (g.members.size() > static_cast<size_t>(kMaxLogicalPerGpu))
      return Status::error("all-reduce: " + std::to_string(g.members.size()) +
                           " logical GPUs on GPU " + std::to_string(g.ordinal) +
                           "; at most " + std::to_string(kMaxLogicalPerGpu) +
                           " share one GPU: use fewer --gpus");

  // The events are made before any fails: the destructor frees what exists.
  c->arrive_.assign(ranks.size(), nullptr);
  c->release_.assign(c->groups_.size(), nullptr);
  for (size_t r = 0; r < ranks.size(); ++r) {
    RETURN_IF_CUDA_ERROR(cudaSetDevice(ranks[r].ordinal));
    RETURN_IF_CUDA_ERROR(
        cudaEventCreateWithFlags(&c->arrive_[r], cudaEventDisableTiming));
  }
  for (size_t g = 0; g < c->groups_.size(); ++g) {
    RETURN_IF_CUDA_ERROR(cudaSetDevice(c->groups_[g].ordinal));
    RETURN_IF_CUDA_ERROR(
        cudaEventCreateWithFlags(&c->release_[g], cudaEventDisableTiming));
  }

  c->acrossWorkers_ = workers && workers->size() > 1;
  if (c->acrossWorkers_) {
    // One NCCL rank per physical GPU of every worker: this worker's GPUs
    // are ranks [offset, offset + groups) of `world`.
    std::vector<std::string> counts;
    if (Status s =
            workers->allGather(std::to_string(c->groups_.size()), counts);
        !s)
      return Status::error("all-reduce across workers: " + s.message());
    int offset = 0, world = 0;
    for (int w = 0; w < static_cast<int>(counts.size()); ++w) {
      int n = std::stoi(counts[w]);
      if (w < workers->rank())
        offset += n;
      world += n;
    }
    ncclUniqueId id;
    std::memset(&id, 0, sizeof id);
    if (workers->isChief())
      RETURN_IF_CUDA_ERROR(ncclGetUniqueId(&id));
    if (Status s = workers->broadcast(&id, sizeof id, 0); !s)
      return Status::error("all-reduce across workers: NCCL's unique id: " +
                           s.message());
    RETURN_IF_CUDA_ERROR(ncclGroupStart());
    for (size_t g = 0; g < c->groups_.size(); ++g) {
      cudaError_t set = cudaSetDevice(c->groups_[g].ordinal);
      ncclResult_t r = set == cudaSuccess
                           ? ncclCommInitRank(&c->groups_[g].comm, world, id,
                                              offset + static_cast<int>(g))
                           : ncclInvalidUsage;
      if (set != cudaSuccess || r != ncclSuccess) {
        (void)ncclGroupEnd(); // the group must be closed before reporting
        return Status::error(
            "ncclCommInitRank for GPU " +
            std::to_string(c->groups_[g].ordinal) + " (NCCL rank " +
            std::to_string(offset + static_cast<int>(g)) + " of " +
            std::to_string(world) + ") failed: " +
            (set != cudaSuccess ? resultText(set) : resultText(r)));
      }
    }
    RETURN_IF_CUDA_ERROR(ncclGroupEnd());
  } else if (c->groups_.size() > 1) {
    std::vector<int> ordinals;
    for (const Group &g : c->groups_)
      ordinals.push_back(g.ordinal);
    std::vector<ncclComm_t> comms(ordinals.size(), nullptr);
    RETURN_IF_CUDA_ERROR(ncclCommInitAll(
        comms.data(), static_cast<int>(ordinals.size()), ordinals.data()));
    for (size_t g = 0; g < comms.size(); ++g)
      c->groups_[g].comm = comms[g];
  }
  out = std::move(c);
  return Status::ok();
}

Status NcclCollective::allReduce(int rank, float *data, int64_t count,
                                 ReduceOp op) {
  if (rank < 0 || rank >= static_cast<int>(ranks_.size()))
    return Status::error("all-reduce: local replica " + std::to_string(rank) +
                         " outside the " + std::to_string(ranks_.size()) +
                         " logical GPUs");
  if (pendingCount_ >= 0 && pendingCount_ != count)
    return Status::error("all-reduce: local replica " + std::to_string(rank) +
                         " sent " + std::to_string(count) +
                         " floats, an earlier one " +
                         std::to_string(pendingCount_));
  pending_[rank] = data;
  pendingCount_ = count;
  for (float *p : pending_)
    if (!p)
      return Status::ok(); // the last local replica enqueues
  std::vector<float *> buffers = pending_;
  std::fill(pending_.begin(), pending_.end(), nullptr);
  pendingCount_ = -1;
  return enqueueAllReduce(buffers, count, op);
}

void NcclCollective::abort(const std::string &) { abort(); }

NcclCollective::~NcclCollective() {
  // Teardown has no one to report to: errors here are ignored on purpose.
  for (Group &g : groups_)
    if (g.comm) {
      // ncclCommDestroy waits for the communicator's work; after a hang
      // only the abort returns.
      if (aborted_ || gpuHung())
        (void)ncclCommAbort(g.comm);
      else
        (void)ncclCommDestroy(g.comm);
    }
  if (gpuHung())
    return; // no CUDA runtime call after a hang (GpuHang.h): leak the events
  for (size_t r = 0; r < arrive_.size(); ++r)
    if (arrive_[r]) {
      (void)cudaSetDevice(ranks_[r].ordinal);
      (void)cudaEventDestroy(arrive_[r]);
    }
  for (size_t g = 0; g < release_.size(); ++g)
    if (release_[g]) {
      (void)cudaSetDevice(groups_[g].ordinal);
      (void)cudaEventDestroy(release_[g]);
    }
}

Status NcclCollective::enqueueLocal(int group, const std::vector<float *> &data,
                                    int64_t count, bool handIn, float scale,
                                    bool handBack) {
  const Group &g = groups_[group];
  int leader = g.members.front();
  cudaStream_t stream = ranks_[leader].comm;
  RETURN_IF_CUDA_ERROR(cudaSetDevice(g.ordinal));
  if (handIn) {
    for (size_t k = 1; k < g.members.size(); ++k) {
      int m = g.members[k];
      RETURN_IF_CUDA_ERROR(cudaEventRecord(arrive_[m], ranks_[m].comm));
      RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(stream, arrive_[m], 0));
    }
  }
  // Hand-in sums every member into the leader; hand-back writes the
  // leader's (scaled) result to every member; both at once on one GPU.
  std::vector<const float *> ins;
  std::vector<float *> outs;
  for (int m : g.members) {
    if (handIn || m == leader)
      ins.push_back(data[m]);
    if (handBack || m == leader)
      outs.push_back(data[m]);
  }
  bool identity = ins.size() == 1 && outs.size() == 1 && scale == 1.0f;
  if (!identity)
    RETURN_IF_CUDA_ERROR(
        enqueueScaledSum(ins.data(), static_cast<int>(ins.size()), outs.data(),
                         static_cast<int>(outs.size()), count, scale, stream));
  if (handBack && g.members.size() > 1) {
    RETURN_IF_CUDA_ERROR(cudaEventRecord(release_[group], stream));
    for (size_t k = 1; k < g.members.size(); ++k)
      RETURN_IF_CUDA_ERROR(
          cudaStreamWaitEvent(ranks_[g.members[k]].comm, release_[group], 0));
  }
  return Status::ok();
}

Status NcclCollective::enqueueAllReduce(const std::vector<float *> &data,
                                        int64_t count, ReduceOp op) {
  if (data.size() != ranks_.size())
    return Status::error("all-reduce: " + std::to_string(data.size()) +
                         " buffers for " + std::to_string(ranks_.size()) +
                         " logical GPUs");
  if (aborted_)
    return Status::error("all-reduce: the communicators were aborted");
  float scale =
      op == ReduceOp::mean ? 1.0f / static_cast<float>(span_.total) : 1.0f;
  if (groups_.size() == 1 && !acrossWorkers_)
    return enqueueLocal(0, data, count, /*handIn=*/true, scale,
                        /*handBack=*/true);

  // NCCL's average divides by its ranks: right only when every worker has
  // one replica per GPU (then ranks == replicas); else sum and scale.
  bool onePerGpu = groups_.size() == ranks_.size();
  if (!onePerGpu)
    for (int g = 0; g < physicalGpus(); ++g)
      if (Status s = enqueueLocal(g, data, count, /*handIn=*/true, 1.0f,
                                  /*handBack=*/false);
          !s)
        return s;
  bool nativeMean = onePerGpu && !acrossWorkers_ && op == ReduceOp::mean;
  ncclRedOp_t ncclOp = nativeMean ? ncclAvg : ncclSum;
  RETURN_IF_CUDA_ERROR(ncclGroupStart());
  for (const Group &g : groups_) {
    int leader = g.members.front();
    ncclResult_t r =
        ncclAllReduce(data[leader], data[leader], static_cast<size_t>(count),
                      ncclFloat, ncclOp, g.comm, ranks_[leader].comm);
    if (r != ncclSuccess) {
      (void)ncclGroupEnd(); // the group must be closed before reporting
      return Status::error("ncclAllReduce on GPU " + std::to_string(g.ordinal) +
                           " failed: " + resultText(r));
    }
  }
  RETURN_IF_CUDA_ERROR(ncclGroupEnd());
  // Back to every logical device, and our own scaling of NCCL's sum.
  if (!onePerGpu || (!nativeMean && scale != 1.0f))
    for (int g = 0; g < physicalGpus(); ++g)
      if (Status s = enqueueLocal(g, data, count, /*handIn=*/false, scale,
                                  /*handBack=*/true);
          !s)
        return s;
  return Status::ok();
}

Status NcclCollective::asyncError() const {
  for (const Group &g : groups_) {
    if (!g.comm)
      continue;
    ncclResult_t async = ncclSuccess;
    RETURN_IF_CUDA_ERROR(ncclCommGetAsyncError(g.comm, &async));
    if (async != ncclSuccess && async != ncclInProgress)
      return Status::error("NCCL communicator of GPU " +
                           std::to_string(g.ordinal) +
                           " failed: " + resultText(async));
  }
  return Status::ok();
}

void NcclCollective::abort() {
  if (aborted_)
    return;
  aborted_ = true;
  for (Group &g : groups_)
    if (g.comm) {
      (void)ncclCommAbort(g.comm);
      g.comm = nullptr;
    }
}

} // namespace graph::runtime::cuda
