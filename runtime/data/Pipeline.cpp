//===- Pipeline.cpp - the input pipeline: tf.data for graphrun ------------===//
//
// A Pipeline is a chain of immutable ExampleStages; open() turns it into a
// chain of iterators, each pulling from the one before, with a Batcher (and a
// Prefetcher) on top. Repeat reopens the stages below it once per epoch and
// passes the epoch down, which is how a shuffle draws a new order per epoch.
//
// A pass can start at any example (ExampleStage::open's `start`), which is
// how a resumed run continues without replaying its batches: each stage
// maps the position to its upstream's (repeat: epoch and offset; shard: the
// worker's stride; shardBatches: the worker's slice of the global batch
// the position falls in) and only a shuffle does work, simulating its buffer on
// positions, without touching an example, up to the start (at most one
// epoch's draws however many steps were taken).
//
//===----------------------------------------------------------------------===//

#include "runtime/data/Pipeline.h"

#include "runtime/data/SplitMix64.h"

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

namespace graph::runtime::data {

/// One pass over the examples of a stage. Once it has reported the end it
/// reports the end on every later call.
class ExampleIterator {
public:
  virtual ~ExampleIterator() = default;
  virtual Status next(Example &out, bool &end) = 0;
  /// Steps over one example; sources override it to skip the copy.
  virtual Status skip(bool &end) {
    Example unused;
    return next(unused, end);
  }
};

class ExampleStage {
public:
  virtual ~ExampleStage() = default;
  /// Starts a pass at its `start`-th example (0: the beginning; past the
  /// end: a pass that is over). `pass` counts the passes a repeat above has
  /// made (0 without one): a shuffle keys its order by it.
  virtual Status open(uint64_t pass, int64_t start,
                      std::unique_ptr<ExampleIterator> &out) const = 0;
  /// Examples in one pass, or Pipeline::kInfinite.
  virtual int64_t cardinality() const = 0;
  /// Whether readAt() reads any example of a pass directly (a source in
  /// memory, and the stages that map a position to one of its): a shuffle
  /// over such a stage buffers positions, not copies of the examples.
  virtual bool readsAt() const { return false; }
  /// Example `position` of pass `pass`, where readsAt().
  virtual Status readAt(uint64_t, int64_t, Example &) const {
    return Status::internal("readAt() on a stage that does not read at a "
                            "position");
  }
};

namespace {

constexpr int64_t kInfinite = Pipeline::kInfinite;

/// Runs `fn`, turning an exception into a Status: no exception leaves a
/// worker thread (it would terminate the process) or the API.
template <typename Fn> Status guarded(const char *what, Fn &&fn) {
  try {
    return fn();
  } catch (const std::exception &e) {
    return Status::error(std::string(what) + " threw: " + e.what() +
                         "; return an error Status instead of throwing");
  } catch (...) {
    return Status::error(std::string(what) +
                         " threw a non-standard exception; return an error "
                         "Status instead of throwing");
  }
}

//===-- source ------------------------------------------------------------===//

class DatasetIterator final : public ExampleIterator {
public:
  DatasetIterator(std::shared_ptr<const Dataset> dataset, int64_t start)
      : dataset_(std::move(dataset)), pos_(start) {}

  Status next(Example &out, bool &end) override {
    end = pos_ >= dataset_->size();
    if (!end)
      read(*dataset_, pos_++, out);
    return Status::ok();
  }

  /// Example `pos` of `dataset`.
  static void read(const Dataset &dataset, int64_t pos, Example &out) {
    const float *image = dataset.image(pos);
    out.image.assign(image, image + dataset.shape.elements());
    out.label = dataset.labels[pos];
    if (!dataset.targets.empty())
      out.target.assign(dataset.target(pos),
                        dataset.target(pos) + dataset.numClasses);
    else
      out.target.clear();
    out.index = pos;
    out.weight = 1.0f;
    out.scale = out.lossScale = 1.0f;
  }

  Status skip(bool &end) override {
    end = pos_ >= dataset_->size();
    if (!end)
      ++pos_;
    return Status::ok();
  }

private:
  std::shared_ptr<const Dataset> dataset_;
  int64_t pos_;
};

class DatasetStage final : public ExampleStage {
public:
  explicit DatasetStage(std::shared_ptr<const Dataset> dataset)
      : dataset_(std::move(dataset)) {}
  Status open(uint64_t, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    out = std::make_unique<DatasetIterator>(dataset_, start);
    return Status::ok();
  }
  int64_t cardinality() const override { return dataset_->size(); }
  bool readsAt() const override { return true; }
  Status readAt(uint64_t, int64_t position, Example &out) const override {
    DatasetIterator::read(*dataset_, position, out);
    return Status::ok();
  }

private:
  std::shared_ptr<const Dataset> dataset_;
};

/// The examples of an ExampleList: a label and an index, no pixels.
class ExampleListIterator final : public ExampleIterator {
public:
  ExampleListIterator(std::shared_ptr<const ExampleList> list, int64_t start)
      : list_(std::move(list)), pos_(start) {}

  Status next(Example &out, bool &end) override {
    end = pos_ >= list_->size();
    if (!end)
      read(*list_, pos_++, out);
    return Status::ok();
  }

  /// Example `pos` of `list`.
  static void read(const ExampleList &list, int64_t pos, Example &out) {
    out.image.clear();
    out.label = list.labels[pos];
    if (!list.targets.empty()) {
      const float *t = list.targets.data() + pos * list.numClasses;
      out.target.assign(t, t + list.numClasses);
    } else {
      out.target.clear();
    }
    out.index = pos;
    out.weight = 1.0f;
    out.scale = out.lossScale = 1.0f;
  }

  Status skip(bool &end) override {
    end = pos_ >= list_->size();
    if (!end)
      ++pos_;
    return Status::ok();
  }

private:
  std::shared_ptr<const ExampleList> list_;
  int64_t pos_;
};

class ExampleListStage final : public ExampleStage {
public:
  explicit ExampleListStage(std::shared_ptr<const ExampleList> list)
      : list_(std::move(list)) {}
  Status open(uint64_t, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    out = std::make_unique<ExampleListIterator>(list_, start);
    return Status::ok();
  }
  int64_t cardinality() const override { return list_->size(); }
  bool readsAt() const override { return true; }
  Status readAt(uint64_t, int64_t position, Example &out) const override {
    ExampleListIterator::read(*list_, position, out);
    return Status::ok();
  }

private:
  std::shared_ptr<const ExampleList> list_;
};

//===-- weigh -------------------------------------------------------------===//

class WeighIterator final : public ExampleIterator {
public:
  WeighIterator(std::unique_ptr<ExampleIterator> upstream,
                std::shared_ptr<const std::vector<float>> weights)
      : upstream_(std::move(upstream)), weights_(std::move(weights)) {}
  Status next(Example &out, bool &end) override {
    if (Status s = upstream_->next(out, end); !s || end)
      return s;
    return weigh(*weights_, out);
  }
  Status skip(bool &end) override { return upstream_->skip(end); }

  /// Gives `out` its weight, by its index.
  static Status weigh(const std::vector<float> &weights, Example &out) {
    if (out.index < 0 || out.index >= static_cast<int64_t>(weights.size()))
      return Status::internal("weigh(): example " + std::to_string(out.index) +
                              " has no weight among " +
                              std::to_string(weights.size()));
    out.weight = weights[static_cast<size_t>(out.index)];
    return Status::ok();
  }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  std::shared_ptr<const std::vector<float>> weights_;
};

class WeighStage final : public ExampleStage {
public:
  WeighStage(std::shared_ptr<const ExampleStage> upstream,
             std::shared_ptr<const std::vector<float>> weights)
      : upstream_(std::move(upstream)), weights_(std::move(weights)) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    std::unique_ptr<ExampleIterator> up;
    if (Status s = upstream_->open(pass, start, up); !s)
      return s;
    out = std::make_unique<WeighIterator>(std::move(up), weights_);
    return Status::ok();
  }
  int64_t cardinality() const override { return upstream_->cardinality(); }
  bool readsAt() const override { return upstream_->readsAt(); }
  Status readAt(uint64_t pass, int64_t position, Example &out) const override {
    if (Status s = upstream_->readAt(pass, position, out); !s)
      return s;
    return WeighIterator::weigh(*weights_, out);
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  std::shared_ptr<const std::vector<float>> weights_;
};

//===-- pad to batches ----------------------------------------------------===//

/// One pass of `examples` upstream examples, then padding up to `total`;
/// the last batch's rows scaled by group / its examples.
class PadToBatchesIterator final : public ExampleIterator {
public:
  PadToBatchesIterator(std::unique_ptr<ExampleIterator> upstream,
                       int64_t examples, int64_t group, int64_t total,
                       int64_t start, bool scaleLoss)
      : upstream_(std::move(upstream)), examples_(examples), group_(group),
        total_(total), pos_(start), scaleLoss_(scaleLoss) {}

  Status next(Example &out, bool &end) override {
    end = pos_ >= total_;
    if (end)
      return Status::ok();
    if (pos_ < examples_) {
      if (Status s = upstream_->next(out, end); !s)
        return s;
      if (end)
        return Status::internal("padToBatches(): the pass ended after " +
                                std::to_string(pos_) + " examples, not " +
                                std::to_string(examples_));
    } else {
      out.image.clear();
      out.target.clear();
      out.label = 0;
      out.index = -1;
      out.weight = 0.0f;
    }
    out.scale = scaleAt(pos_++);
    out.lossScale = scaleLoss_ ? out.scale : 1.0f;
    return Status::ok();
  }

  Status skip(bool &end) override {
    end = pos_ >= total_;
    if (end)
      return Status::ok();
    if (pos_ < examples_)
      if (Status s = upstream_->skip(end); !s || end)
        return s;
    ++pos_;
    return Status::ok();
  }

private:
  float scaleAt(int64_t pos) const {
    const int64_t first = pos / group_ * group_;
    const int64_t inBatch = std::min(group_, examples_ - first);
    return static_cast<float>(static_cast<double>(group_) /
                              static_cast<double>(inBatch));
  }

  std::unique_ptr<ExampleIterator> upstream_;
  int64_t examples_, group_, total_, pos_;
  bool scaleLoss_;
};

class PadToBatchesStage final : public ExampleStage {
public:
  PadToBatchesStage(std::shared_ptr<const ExampleStage> upstream, int64_t group,
                    bool scaleLoss)
      : upstream_(std::move(upstream)), group_(group), scaleLoss_(scaleLoss) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    const int64_t examples = upstream_->cardinality();
    std::unique_ptr<ExampleIterator> up;
    // A start in the padding reads nothing upstream.
    if (start < examples)
      if (Status s = upstream_->open(pass, start, up); !s)
        return s;
    out = std::make_unique<PadToBatchesIterator>(
        std::move(up), examples, group_, cardinality(), start, scaleLoss_);
    return Status::ok();
  }
  int64_t cardinality() const override {
    const int64_t n = upstream_->cardinality();
    return (n + group_ - 1) / group_ * group_;
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t group_;
  bool scaleLoss_;
};

//===-- shard -------------------------------------------------------------===//

/// Over an upstream opened at this worker's first example: takes one, then
/// steps over the other workers' examples before each next one.
class ShardIterator final : public ExampleIterator {
public:
  ShardIterator(std::unique_ptr<ExampleIterator> upstream, int64_t numWorkers)
      : upstream_(std::move(upstream)), numWorkers_(numWorkers) {}

  Status next(Example &out, bool &end) override {
    if (started_)
      for (int64_t k = 0; k < numWorkers_ - 1; ++k)
        if (Status s = upstream_->skip(end); !s || end)
          return s;
    started_ = true;
    return upstream_->next(out, end);
  }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  int64_t numWorkers_;
  bool started_ = false;
};

class ShardStage final : public ExampleStage {
public:
  ShardStage(std::shared_ptr<const ExampleStage> upstream, int64_t numWorkers,
             int64_t index)
      : upstream_(std::move(upstream)), numWorkers_(numWorkers), index_(index) {
  }
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    // This worker's start-th example is upstream's index + start * workers.
    std::unique_ptr<ExampleIterator> up;
    if (Status s = upstream_->open(pass, index_ + start * numWorkers_, up); !s)
      return s;
    out = std::make_unique<ShardIterator>(std::move(up), numWorkers_);
    return Status::ok();
  }
  int64_t cardinality() const override {
    int64_t n = upstream_->cardinality();
    if (n == kInfinite)
      return kInfinite;
    return n > index_ ? (n - index_ + numWorkers_ - 1) / numWorkers_ : 0;
  }
  bool readsAt() const override { return upstream_->readsAt(); }
  Status readAt(uint64_t pass, int64_t position, Example &out) const override {
    return upstream_->readAt(pass, index_ + position * numWorkers_, out);
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t numWorkers_, index_;
};

//===-- shard batches -----------------------------------------------------===//

/// Over an upstream opened at one of this worker's examples: takes the rest
/// of the worker's slice of that global batch, then steps over the other
/// workers' rows (the end of this global batch, the start of the next)
/// before the next slice.
class ShardBatchesIterator final : public ExampleIterator {
public:
  /// `taken`: the slice's examples before the start; `remaining`: the
  /// examples left to yield (kInfinite: no end).
  ShardBatchesIterator(std::unique_ptr<ExampleIterator> upstream, int64_t group,
                       int64_t slice, int64_t taken, int64_t remaining)
      : upstream_(std::move(upstream)), group_(group), slice_(slice),
        taken_(taken), remaining_(remaining) {}

  Status next(Example &out, bool &end) override {
    end = remaining_ == 0;
    if (end)
      return Status::ok();
    if (taken_ == slice_) {
      for (int64_t k = 0; k < group_ - slice_; ++k)
        if (Status s = upstream_->skip(end); !s || end)
          return s;
      taken_ = 0;
    }
    if (Status s = upstream_->next(out, end); !s || end)
      return s;
    ++taken_;
    if (remaining_ != kInfinite)
      --remaining_;
    return Status::ok();
  }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  int64_t group_, slice_, taken_, remaining_;
};

class ShardBatchesStage final : public ExampleStage {
public:
  ShardBatchesStage(std::shared_ptr<const ExampleStage> upstream, int64_t group,
                    int64_t numWorkers, int64_t index)
      : upstream_(std::move(upstream)), group_(group),
        slice_(group / numWorkers), index_(index) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    // This worker's start-th example: row start % slice of its slice of
    // global batch start / slice.
    int64_t n = cardinality();
    int64_t remaining =
        n == kInfinite ? kInfinite : std::max<int64_t>(0, n - start);
    int64_t offset = start % slice_;
    int64_t first = start / slice_ * group_ + index_ * slice_ + offset;
    // A pass that is over reads nothing.
    std::unique_ptr<ExampleIterator> up;
    if (remaining != 0)
      if (Status s = upstream_->open(pass, first, up); !s)
        return s;
    out = std::make_unique<ShardBatchesIterator>(std::move(up), group_, slice_,
                                                 offset, remaining);
    return Status::ok();
  }
  int64_t cardinality() const override {
    int64_t n = upstream_->cardinality();
    return n == kInfinite ? kInfinite : n / group_ * slice_;
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t group_, slice_, index_;
};

//===-- cache -------------------------------------------------------------===//

/// Shared by every pass over a cache stage (and every copy of the Pipeline).
struct CacheContents {
  std::mutex mutex;
  /// Set once, by the first pass that reaches the end.
  std::shared_ptr<const std::vector<Example>> examples;
};

/// Replays the cached examples.
class CacheReplayIterator final : public ExampleIterator {
public:
  CacheReplayIterator(std::shared_ptr<const std::vector<Example>> examples,
                      int64_t start)
      : examples_(std::move(examples)),
        pos_(static_cast<size_t>(std::max<int64_t>(0, start))) {}
  Status next(Example &out, bool &end) override {
    end = pos_ >= examples_->size();
    if (!end)
      out = (*examples_)[pos_++];
    return Status::ok();
  }
  Status skip(bool &end) override {
    end = pos_ >= examples_->size();
    if (!end)
      ++pos_;
    return Status::ok();
  }

private:
  std::shared_ptr<const std::vector<Example>> examples_;
  size_t pos_;
};

/// Passes the upstream examples through and keeps copies; a pass that is
/// abandoned before its end (a pipeline destroyed mid-epoch) caches nothing,
/// so a cache never holds part of the data.
class CacheFillIterator final : public ExampleIterator {
public:
  CacheFillIterator(std::unique_ptr<ExampleIterator> upstream,
                    std::shared_ptr<CacheContents> contents)
      : upstream_(std::move(upstream)), contents_(std::move(contents)) {}
  Status next(Example &out, bool &end) override {
    if (Status s = upstream_->next(out, end); !s)
      return s;
    if (!end) {
      filled_.push_back(out);
    } else if (!committed_) {
      committed_ = true;
      std::lock_guard<std::mutex> lock(contents_->mutex);
      if (!contents_->examples)
        contents_->examples =
            std::make_shared<const std::vector<Example>>(std::move(filled_));
    }
    return Status::ok();
  }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  std::shared_ptr<CacheContents> contents_;
  std::vector<Example> filled_;
  bool committed_ = false;
};

class CacheStage final : public ExampleStage {
public:
  explicit CacheStage(std::shared_ptr<const ExampleStage> upstream)
      : upstream_(std::move(upstream)),
        contents_(std::make_shared<CacheContents>()) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    {
      std::lock_guard<std::mutex> lock(contents_->mutex);
      if (contents_->examples) {
        out = std::make_unique<CacheReplayIterator>(contents_->examples, start);
        return Status::ok();
      }
    }
    std::unique_ptr<ExampleIterator> up;
    if (Status s = upstream_->open(pass, start, up); !s)
      return s;
    // A pass that starts midway cannot fill the cache: the next complete
    // pass does.
    if (start > 0)
      out = std::move(up);
    else
      out = std::make_unique<CacheFillIterator>(std::move(up), contents_);
    return Status::ok();
  }
  int64_t cardinality() const override { return upstream_->cardinality(); }
  /// Over a source read at a position (data in memory already), the cache
  /// replays what it reads: a shuffle after it reads there too, rather
  /// than buffer copies of every example.
  bool readsAt() const override { return upstream_->readsAt(); }
  Status readAt(uint64_t pass, int64_t position, Example &out) const override {
    return upstream_->readAt(pass, position, out);
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  std::shared_ptr<CacheContents> contents_;
};

//===-- shuffle -----------------------------------------------------------===//

/// tf.data's shuffle buffer: fill it, emit a random element, refill.
class ShuffleIterator final : public ExampleIterator {
public:
  ShuffleIterator(std::unique_ptr<ExampleIterator> upstream, size_t bufferSize,
                  SplitMix64 rng, std::vector<Example> buffer,
                  bool upstreamDone)
      : upstream_(std::move(upstream)), bufferSize_(bufferSize), rng_(rng),
        buffer_(std::move(buffer)), upstreamDone_(upstreamDone) {}

  Status next(Example &out, bool &end) override {
    while (!upstreamDone_ && buffer_.size() < bufferSize_) {
      Example e;
      bool upEnd = false;
      if (Status s = upstream_->next(e, upEnd); !s)
        return s;
      if (upEnd)
        upstreamDone_ = true;
      else
        buffer_.push_back(std::move(e));
    }
    end = buffer_.empty();
    if (end)
      return Status::ok();
    size_t j = rng_.below(buffer_.size());
    out = std::move(buffer_[j]);
    if (j + 1 != buffer_.size())
      buffer_[j] = std::move(buffer_.back());
    buffer_.pop_back();
    return Status::ok();
  }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  size_t bufferSize_;
  SplitMix64 rng_;
  std::vector<Example> buffer_;
  bool upstreamDone_ = false;
};

/// The same buffer over an upstream that reads at a position: it holds
/// positions, and reads the example drawn. The draws are ShuffleIterator's
/// (the same generator, the same slots), so the order is the same; a
/// buffer of the whole data costs 8 bytes an example, not a copy of it.
class PositionShuffleIterator final : public ExampleIterator {
public:
  PositionShuffleIterator(std::shared_ptr<const ExampleStage> upstream,
                          uint64_t pass, size_t bufferSize, SplitMix64 rng,
                          std::vector<int64_t> slots, int64_t nextUp)
      : upstream_(std::move(upstream)), pass_(pass), bufferSize_(bufferSize),
        rng_(rng), slots_(std::move(slots)), nextUp_(nextUp),
        size_(upstream_->cardinality()) {}

  Status next(Example &out, bool &end) override {
    while (nextUp_ < size_ && slots_.size() < bufferSize_)
      slots_.push_back(nextUp_++);
    end = slots_.empty();
    if (end)
      return Status::ok();
    size_t j = rng_.below(slots_.size());
    int64_t position = slots_[j];
    slots_[j] = slots_.back();
    slots_.pop_back();
    return upstream_->readAt(pass_, position, out);
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  uint64_t pass_;
  size_t bufferSize_;
  SplitMix64 rng_;
  std::vector<int64_t> slots_; // upstream positions, in buffer order
  int64_t nextUp_, size_;
};

class ShuffleStage final : public ExampleStage {
public:
  ShuffleStage(std::shared_ptr<const ExampleStage> upstream, int64_t bufferSize,
               uint64_t seed)
      : upstream_(std::move(upstream)), bufferSize_(bufferSize), seed_(seed) {}

  /// A pass from its `start`-th output: the buffer's draws up to there are
  /// replayed on upstream positions alone (ShuffleIterator's exact steps,
  /// the same generator), which tells which upstream examples the buffer
  /// holds, in which slots, and where upstream stands. Then only those
  /// examples are read, from the oldest one on, stepping over the others.
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    SplitMix64 rng(mixSeed(seed_, pass));
    size_t capacity = static_cast<size_t>(bufferSize_);
    int64_t upstreamSize = upstream_->cardinality();
    std::vector<int64_t> slots; // upstream positions, in buffer order
    int64_t nextUp = 0;
    bool upstreamDone = false;
    auto fill = [&] {
      while (!upstreamDone && slots.size() < capacity) {
        if (upstreamSize != kInfinite && nextUp >= upstreamSize)
          upstreamDone = true;
        else
          slots.push_back(nextUp++);
      }
    };
    for (int64_t k = 0; k < start; ++k) {
      fill();
      if (slots.empty())
        break;
      size_t j = rng.below(slots.size());
      slots[j] = slots.back();
      slots.pop_back();
    }
    if (start > 0)
      fill(); // next() would refill before its draw: the same state
    if (upstream_->readsAt() && upstreamSize != kInfinite) {
      out = std::make_unique<PositionShuffleIterator>(
          upstream_, pass, capacity, rng, std::move(slots), nextUp);
      return Status::ok();
    }
    int64_t first = nextUp;
    for (int64_t p : slots)
      first = std::min(first, p);
    std::unique_ptr<ExampleIterator> up;
    if (Status s = upstream_->open(pass, first, up); !s)
      return s;
    std::vector<Example> buffer(slots.size());
    if (!slots.empty()) {
      std::vector<int64_t> slotOf(static_cast<size_t>(nextUp - first), -1);
      for (size_t i = 0; i < slots.size(); ++i)
        slotOf[static_cast<size_t>(slots[i] - first)] = static_cast<int64_t>(i);
      for (int64_t p = first; p < nextUp; ++p) {
        bool end = false;
        int64_t slot = slotOf[static_cast<size_t>(p - first)];
        Status s = slot >= 0 ? up->next(buffer[slot], end) : up->skip(end);
        if (!s)
          return s;
        if (end)
          return Status::error("the shuffle buffer's upstream ended at "
                               "example " +
                               std::to_string(p) + " of " +
                               std::to_string(upstreamSize) +
                               " while resuming its pass");
      }
    }
    out = std::make_unique<ShuffleIterator>(std::move(up), capacity, rng,
                                            std::move(buffer),
                                            start > 0 && upstreamDone);
    return Status::ok();
  }
  int64_t cardinality() const override { return upstream_->cardinality(); }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t bufferSize_;
  uint64_t seed_;
};

//===-- repeat ------------------------------------------------------------===//

class RepeatIterator final : public ExampleIterator {
public:
  /// Starts in epoch `epoch`, at example `offset` of it.
  RepeatIterator(std::shared_ptr<const ExampleStage> upstream, int64_t epochs,
                 uint64_t outerPass, int64_t epoch, int64_t offset)
      : upstream_(std::move(upstream)), epochs_(epochs), outerPass_(outerPass),
        epoch_(epoch), offset_(offset) {}

  Status next(Example &out, bool &end) override {
    for (;;) {
      if (done_ || (epochs_ != Pipeline::kForever && epoch_ >= epochs_)) {
        end = true;
        return Status::ok();
      }
      if (!current_) {
        // A repeat inside a repeated stage: keep the passes of different
        // outer passes apart.
        uint64_t pass = (outerPass_ << 32) + static_cast<uint64_t>(epoch_);
        if (Status s =
                upstream_->open(pass, std::exchange(offset_, 0), current_);
            !s)
          return s;
        producedThisEpoch_ = false;
      }
      if (Status s = current_->next(out, end); !s)
        return s;
      if (!end) {
        producedThisEpoch_ = true;
        return Status::ok();
      }
      current_.reset();
      ++epoch_;
      // An empty pass repeated forever would spin without yielding.
      if (!producedThisEpoch_ && epochs_ == Pipeline::kForever)
        done_ = true;
    }
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t epochs_;
  uint64_t outerPass_;
  int64_t epoch_;
  int64_t offset_;
  std::unique_ptr<ExampleIterator> current_;
  bool producedThisEpoch_ = false;
  bool done_ = false;
};

class RepeatStage final : public ExampleStage {
public:
  RepeatStage(std::shared_ptr<const ExampleStage> upstream, int64_t epochs)
      : upstream_(std::move(upstream)), epochs_(epochs) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    // Epoch and offset of the start: each epoch is one upstream pass.
    int64_t n = upstream_->cardinality();
    int64_t epoch = 0, offset = start;
    if (n > 0) {
      epoch = start / n;
      offset = start % n;
    }
    out = std::make_unique<RepeatIterator>(upstream_, epochs_, pass, epoch,
                                           offset);
    return Status::ok();
  }
  int64_t cardinality() const override {
    int64_t n = upstream_->cardinality();
    if (n == kInfinite || n == 0)
      return n;
    return epochs_ == Pipeline::kForever ? kInfinite : n * epochs_;
  }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  int64_t epochs_;
};

//===-- map ---------------------------------------------------------------===//

Status applyMap(const MapFn &fn, Example &example) {
  // A padding example has no features to make: batch() writes zeros.
  if (example.padding())
    return Status::ok();
  return guarded("the map function", [&] { return fn(example); });
}

/// A map on the thread that pulls.
class InlineMapIterator final : public ExampleIterator {
public:
  InlineMapIterator(std::unique_ptr<ExampleIterator> upstream,
                    std::shared_ptr<const MapFn> fn)
      : upstream_(std::move(upstream)), fn_(std::move(fn)) {}
  Status next(Example &out, bool &end) override {
    if (Status s = upstream_->next(out, end); !s || end)
      return s;
    return applyMap(*fn_, out);
  }
  /// A skipped example is never seen, so it need not be mapped.
  Status skip(bool &end) override { return upstream_->skip(end); }

private:
  std::unique_ptr<ExampleIterator> upstream_;
  std::shared_ptr<const MapFn> fn_;
};

/// A map on worker threads, order preserved: a worker takes the next
/// upstream example and a slot at the back of a window in one step (under
/// pullMutex_, so slots are in upstream order), maps it outside any lock,
/// and marks the slot done; next() hands out the front slot once it is done.
/// The window bounds the examples in flight.
class ParallelMapIterator final : public ExampleIterator {
public:
  ParallelMapIterator(std::unique_ptr<ExampleIterator> upstream,
                      std::shared_ptr<const MapFn> fn, int threads)
      : upstream_(std::move(upstream)), fn_(std::move(fn)),
        window_(4 * static_cast<size_t>(threads)) {
    workers_.reserve(threads);
    try {
      for (int t = 0; t < threads; ++t)
        workers_.emplace_back([this] { work(); });
    } catch (...) {
      stopWorkers();
      throw;
    }
  }

  ~ParallelMapIterator() override { stopWorkers(); }

  Status next(Example &out, bool &end) override {
    std::unique_lock<std::mutex> lock(mutex_);
    readyCv_.wait(lock, [&] {
      return slots_.empty() ? upstreamDone_ : slots_.front().done;
    });
    if (slots_.empty()) {
      end = true;
      return upstreamStatus_;
    }
    Slot &front = slots_.front();
    Status s = std::move(front.status);
    out = std::move(front.example);
    slots_.pop_front();
    lock.unlock();
    spaceCv_.notify_one();
    end = false;
    return s;
  }

private:
  struct Slot {
    Example example;
    Status status;
    bool done = false;
  };

  void work() {
    for (;;) {
      std::unique_lock<std::mutex> pull(pullMutex_);
      {
        std::unique_lock<std::mutex> lock(mutex_);
        spaceCv_.wait(lock, [&] {
          return stop_ || upstreamDone_ || slots_.size() < window_;
        });
        if (stop_ || upstreamDone_)
          return;
      }
      Example example;
      bool end = false;
      Status s = guarded("the stage before the map",
                         [&] { return upstream_->next(example, end); });
      Slot *slot = nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stop_)
          return;
        if (!s || end) {
          upstreamDone_ = true;
          upstreamStatus_ = std::move(s);
        } else {
          // A deque keeps references to its elements across push_back and
          // across pop_front of other elements: `slot` stays valid.
          slot = &slots_.emplace_back();
          slot->example = std::move(example);
        }
      }
      if (!slot) {
        readyCv_.notify_all();
        spaceCv_.notify_all();
        return;
      }
      pull.unlock();
      Status mapped = applyMap(*fn_, slot->example);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        slot->status = std::move(mapped);
        slot->done = true;
      }
      readyCv_.notify_all();
    }
  }

  void stopWorkers() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    spaceCv_.notify_all();
    for (std::thread &t : workers_)
      if (t.joinable())
        t.join();
  }

  std::unique_ptr<ExampleIterator> upstream_;
  std::shared_ptr<const MapFn> fn_;
  const size_t window_;

  /// Held by the one worker pulling from upstream_ (not thread-safe).
  std::mutex pullMutex_;
  /// Guards everything below.
  std::mutex mutex_;
  std::condition_variable readyCv_, spaceCv_;
  std::deque<Slot> slots_;
  bool upstreamDone_ = false;
  Status upstreamStatus_;
  bool stop_ = false;
  /// Last: started after, and joined before, what they use.
  std::vector<std::thread> workers_;
};

class MapStage final : public ExampleStage {
public:
  MapStage(std::shared_ptr<const ExampleStage> upstream, MapFn fn, int threads)
      : upstream_(std::move(upstream)),
        fn_(std::make_shared<const MapFn>(std::move(fn))), threads_(threads) {}
  Status open(uint64_t pass, int64_t start,
              std::unique_ptr<ExampleIterator> &out) const override {
    std::unique_ptr<ExampleIterator> up;
    if (Status s = upstream_->open(pass, start, up); !s)
      return s;
    if (threads_ <= 1)
      out = std::make_unique<InlineMapIterator>(std::move(up), fn_);
    else
      out = std::make_unique<ParallelMapIterator>(std::move(up), fn_, threads_);
    return Status::ok();
  }
  int64_t cardinality() const override { return upstream_->cardinality(); }

private:
  std::shared_ptr<const ExampleStage> upstream_;
  std::shared_ptr<const MapFn> fn_;
  int threads_;
};

//===-- batch -------------------------------------------------------------===//

class Batcher final : public BatchIterator {
public:
  Batcher(std::unique_ptr<ExampleIterator> upstream, std::string name,
          int64_t batchSize, LabelFormat labelFormat, Remainder remainder,
          ExampleShape shape, int32_t numClasses,
          std::optional<int32_t> ignoredLabel, bool indicesOnly)
      : upstream_(std::move(upstream)), name_(std::move(name)),
        batchSize_(batchSize), labelFormat_(labelFormat), remainder_(remainder),
        shape_(shape), numClasses_(numClasses), ignoredLabel_(ignoredLabel),
        indicesOnly_(indicesOnly) {}

  Status next(Batch &out, bool &end) override {
    if (!error_)
      return error_;
    end = done_;
    if (done_)
      return Status::ok();
    error_ = fill(out, end);
    done_ = error_.isOk() && end;
    return error_;
  }

private:
  Status fill(Batch &out, bool &end) {
    const int64_t elements = shape_.elements();
    Batch b;
    b.size = batchSize_;
    b.shape = shape_;
    b.numClasses = numClasses_;
    b.labelFormat = labelFormat_;
    if (!indicesOnly_) {
      b.images.resize(batchSize_ * elements);
      if (labelFormat_ == LabelFormat::Sparse)
        b.sparseLabels.resize(batchSize_);
      else
        b.oneHotLabels.assign(batchSize_ * numClasses_, 0.0f);
    }
    b.sourceIndices.resize(batchSize_);
    b.sampleWeights.assign(batchSize_, 1.0f);
    b.metricWeights.assign(batchSize_, 1.0f);
    for (int64_t row = 0; row < batchSize_; ++row) {
      if (Status s = upstream_->next(example_, end); !s)
        return s;
      if (!end && example_.padding()) {
        // An epoch's short last batch: zero features and labels (already
        // so), weight 0. A batch of indices points the row at example 0,
        // which a device can gather; its weights (0) keep it out.
        ++b.padding;
        b.weightScale = example_.scale;
        b.sourceIndices[row] = indicesOnly_ ? 0 : -1;
        b.sampleWeights[row] = 0.0f;
        b.metricWeights[row] = 0.0f;
        continue;
      }
      if (end) {
        // A step's shape is static: drop the partial batch, or pad it with
        // zero rows that weigh 0.
        if (remainder_ == Remainder::drop || row == 0)
          return Status::ok();
        b.padding += batchSize_ - row;
        std::fill(b.sourceIndices.begin() + row, b.sourceIndices.end(), -1);
        std::fill(b.sampleWeights.begin() + row, b.sampleWeights.end(), 0.0f);
        std::fill(b.metricWeights.begin() + row, b.metricWeights.end(), 0.0f);
        out = std::move(b);
        end = false;
        return Status::ok();
      }
      if (static_cast<int64_t>(example_.image.size()) != elements)
        return Status::error(
            name_ + ": example " + std::to_string(example_.index) + " has " +
            std::to_string(example_.image.size()) +
            " floats when it reaches batch(), a " + shape_.str() +
            " example has " + std::to_string(elements) +
            "; give map() the shape its function produces");
      // An ignore_class label reaches the loss as it is (class indices
      // only: it has no one-hot row).
      bool ignored = labelFormat_ == LabelFormat::Sparse &&
                     example_.label == ignoredLabel_;
      if ((example_.label < 0 || example_.label >= numClasses_) && !ignored)
        return Status::error(
            name_ + ": example " + std::to_string(example_.index) +
            " has label " + std::to_string(example_.label) +
            " when it reaches batch(), outside [0, " +
            std::to_string(numClasses_) + "); a map must keep labels in range");
      b.sourceIndices[row] = example_.index;
      b.sampleWeights[row] = example_.weight * example_.lossScale;
      b.metricWeights[row] = example_.scale;
      b.weightScale = example_.scale;
      if (indicesOnly_)
        continue;
      std::memcpy(b.images.data() + row * elements, example_.image.data(),
                  elements * sizeof(float));
      if (labelFormat_ == LabelFormat::Sparse) {
        b.sparseLabels[row] = example_.label;
      } else if (labelFormat_ == LabelFormat::Dense) {
        if (static_cast<int64_t>(example_.target.size()) != numClasses_)
          return Status::error(
              name_ + ": example " + std::to_string(example_.index) + " has " +
              std::to_string(example_.target.size()) +
              " targets, the loss takes " + std::to_string(numClasses_) +
              " (the model output's width): feed targets of its shape");
        std::memcpy(b.oneHotLabels.data() + row * numClasses_,
                    example_.target.data(), numClasses_ * sizeof(float));
      } else if (!example_.target.empty()) {
        // Soft labels (rows of class probabilities, which categorical
        // cross-entropy takes): the row as it is.
        if (static_cast<int64_t>(example_.target.size()) != numClasses_)
          return Status::error(name_ + ": example " +
                               std::to_string(example_.index) + " has " +
                               std::to_string(example_.target.size()) +
                               " class probabilities, the loss takes " +
                               std::to_string(numClasses_));
        std::memcpy(b.oneHotLabels.data() + row * numClasses_,
                    example_.target.data(), numClasses_ * sizeof(float));
      } else {
        b.oneHotLabels[row * numClasses_ + example_.label] = 1.0f;
      }
    }
    out = std::move(b);
    end = false;
    return Status::ok();
  }

  std::unique_ptr<ExampleIterator> upstream_;
  std::string name_;
  int64_t batchSize_;
  LabelFormat labelFormat_;
  Remainder remainder_;
  ExampleShape shape_;
  int32_t numClasses_;
  std::optional<int32_t> ignoredLabel_;
  bool indicesOnly_;
  /// Reused across rows so that its image buffer is allocated once.
  Example example_;
  Status error_;
  bool done_ = false;
};

//===-- prefetch ----------------------------------------------------------===//

/// Runs the batcher on a background thread, keeping up to `capacity` batches
/// ready in a queue. The destructor stops the thread whether it is waiting
/// for room in a full queue or building a batch (it finishes that batch).
class Prefetcher final : public BatchIterator {
public:
  Prefetcher(std::unique_ptr<BatchIterator> upstream, size_t capacity)
      : upstream_(std::move(upstream)), capacity_(capacity),
        thread_([this] { produce(); }) {}

  ~Prefetcher() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    notFull_.notify_all();
    thread_.join();
  }

  Status next(Batch &out, bool &end) override {
    std::unique_lock<std::mutex> lock(mutex_);
    notEmpty_.wait(lock, [&] { return !queue_.empty() || producerDone_; });
    if (queue_.empty()) {
      end = true;
      return producerStatus_;
    }
    out = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    notFull_.notify_one();
    end = false;
    return Status::ok();
  }

private:
  void produce() {
    for (;;) {
      Batch batch;
      bool end = false;
      Status s = guarded("the input pipeline",
                         [&] { return upstream_->next(batch, end); });
      std::unique_lock<std::mutex> lock(mutex_);
      if (!s || end) {
        producerDone_ = true;
        producerStatus_ = std::move(s);
        lock.unlock();
        notEmpty_.notify_all();
        return;
      }
      notFull_.wait(lock, [&] { return stop_ || queue_.size() < capacity_; });
      if (stop_)
        return;
      queue_.push_back(std::move(batch));
      lock.unlock();
      notEmpty_.notify_one();
    }
  }

  std::unique_ptr<BatchIterator> upstream_;
  const size_t capacity_;
  std::mutex mutex_;
  std::condition_variable notEmpty_, notFull_;
  std::deque<Batch> queue_;
  bool producerDone_ = false;
  Status producerStatus_;
  bool stop_ = false;
  /// Last: started after, and joined before, what it uses.
  std::thread thread_;
};

} // namespace

//===-- Pipeline ----------------------------------------------------------===//

Pipeline::Pipeline(std::shared_ptr<const Dataset> source) {
  if (!source) {
    name_ = "input pipeline";
    fail("Pipeline", "no dataset; load one first");
    return;
  }
  name_ = source->name;
  if (Status s = source->validate(); !s) {
    error_ = s;
    return;
  }
  shape_ = source->shape;
  numClasses_ = source->numClasses;
  ignoredLabel_ = source->ignoredLabel;
  stage_ = std::make_shared<DatasetStage>(std::move(source));
}

Pipeline::Pipeline(std::shared_ptr<const ExampleList> source) {
  if (!source) {
    name_ = "input pipeline";
    fail("Pipeline", "no example list; list the examples first");
    return;
  }
  name_ = source->name;
  if (Status s = source->validate(); !s) {
    error_ = s;
    return;
  }
  numClasses_ = source->numClasses;
  ignoredLabel_ = source->ignoredLabel;
  needsPixels_ = true;
  stage_ = std::make_shared<ExampleListStage>(std::move(source));
}

Pipeline::Pipeline(std::nullptr_t)
    : Pipeline(std::shared_ptr<const Dataset>()) {}

void Pipeline::fail(const std::string &call, const std::string &fault) {
  if (error_)
    error_ = Status::error(name_ + ": input pipeline: " + call + ": " + fault);
}

bool Pipeline::acceptsExampleStage(const std::string &call) {
  if (!error_)
    return false;
  if (batchSize_ > 0) {
    fail(call, "comes after batch(); per-example stages go before batch()");
    return false;
  }
  return true;
}

Pipeline &Pipeline::shard(int64_t numWorkers, int64_t index) {
  std::string call = "shard(" + std::to_string(numWorkers) + ", " +
                     std::to_string(index) + ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (numWorkers <= 0)
    fail(call, "the worker count must be positive");
  else if (index < 0 || index >= numWorkers)
    fail(call, "the worker index must lie in [0, " +
                   std::to_string(numWorkers) + "); pass this worker's index");
  else
    stage_ = std::make_shared<ShardStage>(stage_, numWorkers, index);
  return *this;
}

Pipeline &Pipeline::shardBatches(int64_t globalBatchSize, int64_t numWorkers,
                                 int64_t index) {
  std::string call = "shardBatches(" + std::to_string(globalBatchSize) + ", " +
                     std::to_string(numWorkers) + ", " + std::to_string(index) +
                     ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (numWorkers <= 0)
    fail(call, "the worker count must be positive");
  else if (index < 0 || index >= numWorkers)
    fail(call, "the worker index must lie in [0, " +
                   std::to_string(numWorkers) + "); pass this worker's index");
  else if (globalBatchSize <= 0 || globalBatchSize % numWorkers != 0)
    fail(call, "the global batch must be a positive multiple of the worker "
               "count, so that every worker takes as many rows");
  else
    stage_ = std::make_shared<ShardBatchesStage>(stage_, globalBatchSize,
                                                 numWorkers, index);
  return *this;
}

Pipeline &Pipeline::padToBatches(int64_t globalBatchSize, bool scaleLoss) {
  std::string call = "padToBatches(" + std::to_string(globalBatchSize) + ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (globalBatchSize <= 0)
    fail(call, "the batch size must be positive");
  else if (stage_->cardinality() == kInfinite)
    fail(call, "follows repeat() without end: a pass it could pad never "
               "ends; put padToBatches() before repeat()");
  else
    stage_ =
        std::make_shared<PadToBatchesStage>(stage_, globalBatchSize, scaleLoss);
  return *this;
}

Pipeline &Pipeline::weigh(std::shared_ptr<const std::vector<float>> weights) {
  if (!acceptsExampleStage("weigh()"))
    return *this;
  if (!weights)
    fail("weigh()", "no weights given");
  else
    stage_ = std::make_shared<WeighStage>(stage_, std::move(weights));
  return *this;
}

Pipeline &Pipeline::cache() {
  if (!acceptsExampleStage("cache()"))
    return *this;
  if (stage_->cardinality() == kInfinite)
    fail("cache()", "follows repeat() without end, so its first pass would "
                    "never complete; put cache() before repeat()");
  else
    stage_ = std::make_shared<CacheStage>(stage_);
  return *this;
}

Pipeline &Pipeline::shuffle(int64_t bufferSize, uint64_t seed) {
  std::string call = "shuffle(" + std::to_string(bufferSize) + ", " +
                     std::to_string(seed) + ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (bufferSize <= 0)
    fail(call, "the buffer size must be positive (1 keeps the order)");
  else
    stage_ = std::make_shared<ShuffleStage>(stage_, bufferSize, seed);
  return *this;
}

Pipeline &Pipeline::repeat(int64_t epochs) {
  std::string call = "repeat(" + std::to_string(epochs) + ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (epochs < 0 && epochs != kForever)
    fail(call, "the epoch count must be 0 or more, or Pipeline::kForever");
  else
    stage_ = std::make_shared<RepeatStage>(stage_, epochs);
  return *this;
}

Pipeline &Pipeline::map(MapFn fn, int threads) {
  if (error_ && needsPixels_) {
    fail("map(fn, " + std::to_string(threads) + ")",
         "the examples hold no pixels yet (the source is an example list); "
         "give map() the shape its function produces");
    return *this;
  }
  return map(std::move(fn), threads, shape_);
}

Pipeline &Pipeline::map(MapFn fn, int threads, ExampleShape outputShape) {
  std::string call = "map(fn, " + std::to_string(threads) + ")";
  if (!acceptsExampleStage(call))
    return *this;
  if (!fn)
    fail(call, "no function given");
  else if (threads < 1)
    fail(call, "the thread count must be 1 or more");
  else if (!outputShape.positive())
    fail(call, "the output shape " + outputShape.str() + " is not positive");
  else {
    stage_ = std::make_shared<MapStage>(stage_, std::move(fn), threads);
    shape_ = outputShape;
    mapped_ = true;
    needsPixels_ = false;
  }
  return *this;
}

Pipeline &Pipeline::batch(int64_t globalBatchSize, LabelFormat labels,
                          Remainder remainder) {
  std::string call = "batch(" + std::to_string(globalBatchSize) + ")";
  if (!error_)
    return *this;
  if (batchSize_ > 0)
    fail(call, "a second batch(); batch once, by the global batch size");
  else if (needsPixels_)
    fail(call, "the examples hold no pixels yet (the source is an example "
               "list); map() its decoder, with the decoded shape, before "
               "batch()");
  else if (globalBatchSize <= 0)
    fail(call, "the batch size must be positive");
  else {
    batchSize_ = globalBatchSize;
    labelFormat_ = labels;
    remainder_ = remainder;
  }
  return *this;
}

Pipeline &Pipeline::batchIndices(int64_t globalBatchSize) {
  if (mapped_) {
    fail("batchIndices(" + std::to_string(globalBatchSize) + ")",
         "follows map(): a mapped example is not the source's, so its "
         "index cannot stand for it; use batch()");
    return *this;
  }
  if (needsPixels_) {
    fail("batchIndices(" + std::to_string(globalBatchSize) + ")",
         "the source is an example list, which holds no rows to gather; "
         "map() its decoder and use batch()");
    return *this;
  }
  batch(globalBatchSize, LabelFormat::Sparse);
  if (error_)
    indicesOnly_ = true;
  return *this;
}

Pipeline &Pipeline::prefetch(int64_t batches) {
  std::string call = "prefetch(" + std::to_string(batches) + ")";
  if (!error_)
    return *this;
  if (batchSize_ == 0)
    fail(call, "comes before batch(); prefetch holds batches, so it goes last");
  else if (prefetchSet_)
    fail(call, "a second prefetch()");
  else if (batches < 0)
    fail(call, "the batch count must be 0 or more (0: no prefetch)");
  else {
    prefetch_ = batches;
    prefetchSet_ = true;
  }
  return *this;
}

int64_t Pipeline::cardinality() const {
  if (!stage_)
    return 0;
  int64_t examples = stage_->cardinality();
  if (examples == kInfinite || batchSize_ == 0)
    return examples;
  if (remainder_ == Remainder::pad)
    return (examples + batchSize_ - 1) / batchSize_;
  return examples / batchSize_;
}

Status Pipeline::open(std::unique_ptr<BatchIterator> &out,
                      int64_t startBatch) const {
  if (!error_)
    return error_;
  if (batchSize_ == 0)
    return Status::error(name_ + ": input pipeline: no batch(); a training "
                                 "step takes batches, so end with batch()");
  if (startBatch < 0 || (startBatch > 0 && startBatch > INT64_MAX / batchSize_))
    return Status::error(name_ + ": input pipeline: cannot start at batch " +
                         std::to_string(startBatch));
  return guarded("opening the input pipeline", [&] {
    std::unique_ptr<ExampleIterator> examples;
    if (Status s = stage_->open(0, startBatch * batchSize_, examples); !s)
      return s;
    std::unique_ptr<BatchIterator> it = std::make_unique<Batcher>(
        std::move(examples), name_, batchSize_, labelFormat_, remainder_,
        shape_, numClasses_, ignoredLabel_, indicesOnly_);
    if (prefetch_ > 0)
      it = std::make_unique<Prefetcher>(std::move(it),
                                        static_cast<size_t>(prefetch_));
    out = std::move(it);
    return Status::ok();
  });
}

} // namespace graph::runtime::data
