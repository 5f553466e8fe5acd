//===- LocalCollective.cpp - all-reduce among threads of one process ------===//

#include "runtime/core/Collective.h"

#include <condition_variable>
#include <mutex>
#include <vector>

namespace graph::runtime {
namespace {

class LocalCollective final : public Collective {
public:
  LocalCollective(int replicas, std::chrono::milliseconds timeout)
      : replicas_(replicas), timeout_(timeout),
        buffers_(static_cast<size_t>(replicas), nullptr),
        counts_(static_cast<size_t>(replicas), 0),
        arrivedAt_(static_cast<size_t>(replicas), 0) {}

  int size() const override { return replicas_; }

  Status allReduce(int rank, float *data, int64_t count, ReduceOp op) override {
    if (rank < 0 || rank >= replicas_)
      return Status::error("all-reduce: rank " + std::to_string(rank) +
                           " outside the " + std::to_string(replicas_) +
                           " replicas");
    if (replicas_ == 1) {
      return Status::ok(); // the mean and the sum of one buffer are itself
    }
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
    float scale =
        op == ReduceOp::mean ? 1.0f / static_cast<float>(replicas_) : 1.0f;
    for (int64_t i = begin; i < end; ++i) {
      float sum = 0.0f;
      for (int r = 0; r < replicas_; ++r)
        sum += buffers_[r][i];
      sum *= scale;
      for (int r = 0; r < replicas_; ++r)
        buffers_[r][i] = sum;
    }
    // Nobody may leave (and write its buffer again) before every slice is
    // reduced.
    return rendezvous(rank, "all-reduce (completion)");
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
  Status rendezvous(int rank, const char *what) {
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
    bool done = cv_.wait_for(lock, timeout_, [&] {
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
               std::to_string(timeout_.count()) +
               " ms waiting for replica(s) " + late + " (replica " +
               std::to_string(rank) +
               " was waiting): a replica is stuck or failed";
    cv_.notify_all();
    return Status::error(aborted_);
  }

  Status fail(const std::string &reason) {
    abort(reason);
    return Status::error(reason);
  }

  int replicas_;
  std::chrono::milliseconds timeout_;
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
makeLocalCollective(int replicas, std::chrono::milliseconds timeout) {
  return std::make_unique<LocalCollective>(replicas, timeout);
}

} // namespace graph::runtime
