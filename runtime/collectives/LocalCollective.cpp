//===- LocalCollective.cpp - all-reduce among threads, then workers -------===//

#include "runtime/collectives/Collective.h"

#include "runtime/collectives/Workers.h"

#include <condition_variable>
#include <mutex>
#include <utility>
#include <vector>

namespace graph::runtime {
namespace {

/// With one worker: rendezvous, each rank reduces its slice (mean or sum)
/// into every buffer, rendezvous. With several: each rank sums its slice
/// into every buffer, rank 0 sums buffer 0 across the workers and the
/// others wait for it, then each rank scales its slice of buffer 0 into
/// every buffer. The local sums run in rank order and MPI sums in a fixed
/// order, so the result does not depend on timing.
class LocalCollective final : public Collective {
public:
  LocalCollective(ReplicaSpan span, Workers *workers,
                  std::chrono::milliseconds timeout, WireType wire)
      : span_(span), replicas_(span.local), timeout_(timeout), wire_(wire),
        workers_(workers && workers->size() > 1 ? workers : nullptr),
        buffers_(static_cast<size_t>(span.local), nullptr),
        counts_(static_cast<size_t>(span.local), 0),
        arrivedAt_(static_cast<size_t>(span.local), 0) {}

  ReplicaSpan span() const override { return span_; }

  Status allReduce(int rank, float *data, int64_t count, ReduceOp op) override {
    if (rank < 0 || rank >= replicas_)
      return Status::error("all-reduce: rank " + std::to_string(rank) +
                           " outside the " + std::to_string(replicas_) +
                           " replicas");
    float scale =
        op == ReduceOp::mean ? 1.0f / static_cast<float>(span_.total) : 1.0f;
    if (replicas_ == 1 && !workers_)
      return Status::ok(); // the mean and the sum of one buffer are itself
    buffers_[rank] = data;
    counts_[rank] = count;
    if (Status s = rendezvous(rank, "all-reduce"); !s)
      return s;
    for (int r = 0; r < replicas_; ++r)
      if (counts_[r] != count)
        return fail("all-reduce: replica " + std::to_string(r) + " sent " +
                    std::to_string(counts_[r]) + " floats, replica " +
                    std::to_string(rank) + " sent " + std::to_string(count));
    int64_t begin = count * rank / replicas_;
    int64_t end = count * (rank + 1) / replicas_;
    if (!workers_) {
      reduceSlice(begin, end, scale);
      // Nobody may leave (and write its buffer again) before every slice
      // is reduced.
      return rendezvous(rank, "all-reduce (completion)");
    }
    reduceSlice(begin, end, 1.0f);
    if (Status s = rendezvous(rank, "all-reduce (local sum)"); !s)
      return s;
    if (rank == 0) {
      auto start = std::chrono::steady_clock::now();
      Status s = wire_ == WireType::bf16
                     ? workers_->allReduceSumAsBf16(buffers_[0], count)
                     : workers_->allReduceSum(buffers_[0], count);
      crossWorkerSeconds_ += std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      if (!s)
        return fail("all-reduce across workers: " + s.message());
    }
    // Rank 0's MPI call has the same timeout and names the late worker:
    // the local ranks give it time to.
    if (Status s = rendezvous(rank, "all-reduce (across workers)", 2); !s)
      return s;
    for (int64_t i = begin; i < end; ++i) {
      float v = buffers_[0][i] * scale;
      for (int r = 0; r < replicas_; ++r)
        buffers_[r][i] = v;
    }
    return rendezvous(rank, "all-reduce (completion)");
  }

  double takeCrossWorkerSeconds() override {
    return std::exchange(crossWorkerSeconds_, 0.0);
  }

  void abort(const std::string &reason) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.empty())
      aborted_ = reason;
    cv_.notify_all();
  }

private:
  /// A generation-counting barrier that gives up after the timeout and
  /// names the ranks that did not arrive.
  Status rendezvous(int rank, const char *what, int timeouts = 1) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!aborted_.empty())
      return Status::error(aborted_);
    uint64_t generation = generation_;
    arrivedAt_[rank] = generation + 1;
    if (++arrived_ == replicas_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return Status::ok();
    }
    bool done = cv_.wait_for(lock, timeout_ * timeouts, [&] {
      return generation_ != generation || !aborted_.empty();
    });
    if (generation_ != generation)
      return Status::ok();
    if (!aborted_.empty())
      return Status::error(aborted_);
    (void)done;
    std::string late;
    for (int r = 0; r < replicas_; ++r)
      if (arrivedAt_[r] != generation + 1)
        late += (late.empty() ? "" : ", ") + std::to_string(r);
    aborted_ = std::string(what) + ": timed out after " +
               std::to_string((timeout_ * timeouts).count()) +
               " ms waiting for replica(s) " + late + " (replica " +
               std::to_string(rank) +
               " was waiting): a replica is stuck or failed";
    cv_.notify_all();
    return Status::timeout(aborted_);
  }

  Status fail(const std::string &reason) {
    abort(reason);
    return Status::error(reason);
  }

  /// Elements [begin, end) of every buffer: their sum, times `scale`.
  void reduceSlice(int64_t begin, int64_t end, float scale) {
    for (int64_t i = begin; i < end; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < replicas_; ++r)
        sum += buffers_[r][i];
      sum *= scale;
      for (int r = 0; r < replicas_; ++r)
        buffers_[r][i] = sum;
    }
  }

  ReplicaSpan span_;
  int replicas_;
  std::chrono::milliseconds timeout_;
  WireType wire_;
  Workers *workers_; // null: this process is the whole job
  double crossWorkerSeconds_ = 0;
  std::vector<float *> buffers_;
  std::vector<int64_t> counts_;
  std::vector<uint64_t> arrivedAt_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  uint64_t generation_ = 0;
  std::string aborted_;
};

} // namespace

std::unique_ptr<Collective>
makeLocalCollective(ReplicaSpan span, Workers *workers,
                    std::chrono::milliseconds timeout, WireType wire) {
  return std::make_unique<LocalCollective>(span, workers, timeout, wire);
}

} // namespace graph::runtime
