//===- Pipeline.h - the input pipeline: tf.data for graphrun ----*- C++ -*-===//
//
// A Pipeline describes, in the order its methods are called, what happens to
// the examples of a Dataset on their way to the training step, as tf.data
// does:
//
//   Pipeline p(train);                    // std::shared_ptr<const Dataset>
//   p.shard(numWorkers, workerIndex)      // dataset.shard(n, i)
//    .shuffle(5000, seed)                 // dataset.shuffle(5000, seed)
//    .repeat(epochs)                      // dataset.repeat(epochs)
//    .batch(256, LabelFormat::OneHot)     // dataset.batch(256, True)
//    .prefetch(2);                        // dataset.prefetch(2)
//   std::unique_ptr<BatchIterator> it;
//   if (Status s = p.open(it); !s) ...
//   for (bool end = false;;) {
//     Batch b;
//     if (Status s = it->next(b, end); !s) ...
//     if (end) break;
//   }
//
// The source is a Dataset (pixels in memory) or an ExampleList (a label per
// example; a map makes the pixels from the example's index, as an image
// folder's decoder does), so that a data set too large to hold decoded is
// decoded in the pipeline, ahead of the step, on the map's threads:
//
//   Pipeline p(folder.examples());        // std::shared_ptr<const ExampleList>
//   p.shard(n, i).shuffle(100000, seed)   // shuffles labels, not pixels
//    .repeat(epochs)
//    .map(folder.decoder(), 2, folder.shape())
//    .batch(32, LabelFormat::OneHot).prefetch(2);
//
// The per-example stages (shard, cache, shuffle, repeat, map) compose in any
// order; batch comes after them and prefetch last. An argument out of range
// is remembered and returned by open(), so a chain of calls needs one check.
//
// Semantics worth knowing:
// - batch drops the last partial batch (drop_remainder=True): every step sees
//   the same static shape, which the compiled plan requires. batch follows
//   repeat, so batches run across epoch boundaries (as tf.data's
//   repeat().batch()) and only the final partial batch is dropped: 10 epochs
//   of 60000 examples at 256 give 2343 batches, not 10 x 234. Evaluation
//   pads it instead (Remainder::pad): zero rows weighted 0
//   (Batch::sampleWeights), so that every example counts once.
// - padToBatches(g), before repeat, ends every pass with its short last
//   batch as Keras' fit does: it pads the pass to a multiple of g with
//   padding examples (Example::padding(): no features, weight 0), and gives
//   the rows of that batch the scale g / n (n its examples) that makes the
//   step's mean over g rows the mean over n. 10 epochs of 60000 at 256 are
//   then 10 x 235 steps, each epoch's last of 96 examples.
// - weigh(w) gives example i the weight w[i] (Keras' sample_weight, or
//   class_weight's per-example form); batch() hands them to the step.
// - open(it, k) starts at batch k, as if k batches had been taken: a
//   resumed run continues in O(1) of the batches taken (the shuffle replays
//   at most one epoch of buffer draws on positions, reading no example it
//   does not emit).
// - shuffle draws from a buffer of bufferSize examples; under a repeat each
//   epoch is shuffled with its own order, derived from (seed, epoch), so a
//   seed names the whole sequence. bufferSize >= the dataset size is a
//   uniform permutation. Over a source that reads any example directly (a
//   Dataset or an ExampleList, through weigh, shard and cache) the buffer
//   holds positions and reads the example it draws: the same order, 8
//   bytes an example, so a buffer of a whole in-memory data set costs no
//   copy of it.
// - shard(n, i) keeps the examples at positions i, i + n, i + 2n, ...: apply
//   it first, so that the workers partition the data before they shuffle.
// - shardBatches(g, n, i) keeps worker i's slice of every global batch: of
//   each g consecutive examples, the g / n from i * g / n on. Every worker
//   runs the same pipeline (same seed, same shuffle of the whole data) up
//   to it, so that n workers batching g / n each see, step for step, the
//   rows one worker batching g would split among its replicas; the worker
//   count then changes nothing but who reads which rows. Put it after the
//   shuffle and the repeat (global batches run across epochs) and before a
//   decoding map, so that a worker decodes its rows only:
//
//     p.shuffle(60000, seed).repeat().shardBatches(256, 2, rank)
//      .map(decoder, 2, shape).batch(128, LabelFormat::OneHot);
// - cache keeps what reaches it during the first complete pass and replays it
//   afterwards; it pays for itself after an expensive map (decoding,
//   resizing). A source Dataset is in memory already; over an ExampleList,
//   put it after the decoding map (before it, it would keep labels only).
// - over an ExampleList, batch() needs a map with an output shape before it:
//   the examples have no pixels until one makes them.
// - map runs a per-example function on `threads` threads with the order
//   preserved; with one thread it runs on the thread that pulls (the
//   prefetch thread when prefetching).
// - prefetch(n) runs everything upstream on a background thread that keeps
//   up to n batches ready.
//
// Threads: open() starts them; destroying the BatchIterator stops and joins
// them all, even mid-epoch with a full prefetch queue. A Pipeline itself holds
// no thread and may be opened many times (its cache, if any, is shared).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_PIPELINE_H
#define RUNTIME_DATA_PIPELINE_H

#include "runtime/base/Status.h"
#include "runtime/data/Batch.h"
#include "runtime/data/Dataset.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace graph::runtime::data {

/// A per-example transform: edits the example in place (its image may change
/// size when the map declares an output shape). Called from several threads
/// at once when the map has several: it must be safe to.
using MapFn = std::function<Status(Example &)>;

/// The batches of one opened pipeline. Call next() from one thread at a time.
class BatchIterator {
public:
  virtual ~BatchIterator() = default;
  /// Moves the next batch into `out` and clears `end`, or sets `end` (and
  /// leaves `out` alone) when the data are exhausted. After the end or an
  /// error, every later call answers the same.
  virtual Status next(Batch &out, bool &end) = 0;
};

/// One step of the description (Pipeline.cpp holds the kinds).
class ExampleStage;

/// What batch() does with a last batch of fewer examples than the batch
/// size.
enum class Remainder {
  /// Drops it (training: every step sees whole batches).
  drop,
  /// Pads it to the batch size with rows of weight 0 (evaluation).
  pad,
};

class Pipeline {
public:
  /// repeat(kForever) repeats without end.
  static constexpr int64_t kForever = -1;
  /// cardinality() of a pipeline without end.
  static constexpr int64_t kInfinite = -1;

  explicit Pipeline(std::shared_ptr<const Dataset> source);
  /// Over examples without pixels yet: a map with an output shape must make
  /// them before batch().
  explicit Pipeline(std::shared_ptr<const ExampleList> source);
  /// No source: open() reports it. Keeps Pipeline(nullptr), which the two
  /// constructors above would make ambiguous, meaning what it always did.
  explicit Pipeline(std::nullptr_t);

  /// Keeps the examples at positions index, index + numWorkers, ...
  Pipeline &shard(int64_t numWorkers, int64_t index);
  /// Keeps worker `index`'s rows of every global batch: of each
  /// globalBatchSize consecutive examples, the globalBatchSize / numWorkers
  /// from index * globalBatchSize / numWorkers on. A last run of fewer than
  /// globalBatchSize examples is dropped, as batch() drops a partial batch.
  Pipeline &shardBatches(int64_t globalBatchSize, int64_t numWorkers,
                         int64_t index);
  /// Pads each pass to a multiple of globalBatchSize examples with padding
  /// examples, which come last and weigh 0, and scales the weights of the
  /// last batch's examples by globalBatchSize / its examples (the loss's
  /// only with `scaleLoss`: a loss summed over the batch takes the short
  /// batch's sum as it is). Before repeat(), over a finite pass.
  Pipeline &padToBatches(int64_t globalBatchSize, bool scaleLoss = true);
  /// Sets each example's weight to weights[its index in the source]; the
  /// vector holds one per source example.
  Pipeline &weigh(std::shared_ptr<const std::vector<float>> weights);
  /// Holds the examples of the first complete pass in memory and replays
  /// them on later passes.
  Pipeline &cache();
  /// Emits examples in random order through a buffer of bufferSize.
  Pipeline &shuffle(int64_t bufferSize, uint64_t seed);
  /// Passes over everything before it `epochs` times (kForever: no end).
  Pipeline &repeat(int64_t epochs = kForever);
  /// Applies `fn` to every example on `threads` threads, order preserved.
  Pipeline &map(MapFn fn, int threads = 1);
  /// As map(fn, threads), for a function whose images have `outputShape`.
  Pipeline &map(MapFn fn, int threads, ExampleShape outputShape);
  /// Groups examples into batches of globalBatchSize rows, with labels as
  /// the loss wants them; a last partial batch is dropped or padded.
  Pipeline &batch(int64_t globalBatchSize, LabelFormat labels,
                  Remainder remainder = Remainder::drop);
  /// As batch(), but a batch holds only its examples' positions in the
  /// source (Batch::indicesOnly()): for a consumer that holds the dataset
  /// itself and gathers the rows (graphrun --cache-on-device). The order is
  /// batch()'s, example for example. Refused after map(): a mapped example
  /// is no longer the source's.
  Pipeline &batchIndices(int64_t globalBatchSize);
  /// Prepares up to `batches` batches ahead on a background thread (0: none).
  Pipeline &prefetch(int64_t batches);

  /// The batches open() will yield in all (kInfinite without end); before
  /// batch(), the examples.
  int64_t cardinality() const;
  /// The shape of an example (of a batch row) at the end of the pipeline.
  ExampleShape exampleShape() const { return shape_; }
  int32_t numClasses() const { return numClasses_; }

  /// Starts a pass over the pipeline at batch `startBatch` (0: the first):
  /// checks the description (the first fault of the chain, if any, is
  /// returned here) and starts its threads. The batches are those a pass
  /// from the start yields after its first `startBatch`.
  Status open(std::unique_ptr<BatchIterator> &out,
              int64_t startBatch = 0) const;

private:
  /// Records the first fault of the chain, prefixed with the source's name.
  void fail(const std::string &call, const std::string &fault);
  bool acceptsExampleStage(const std::string &call);

  Status error_;
  std::string name_;
  std::shared_ptr<const ExampleStage> stage_;
  ExampleShape shape_;
  int32_t numClasses_ = 0;
  /// The source's Dataset::ignoredLabel.
  std::optional<int32_t> ignoredLabel_;
  int64_t batchSize_ = 0;
  LabelFormat labelFormat_ = LabelFormat::Sparse;
  Remainder remainder_ = Remainder::drop;
  bool indicesOnly_ = false;
  bool mapped_ = false;
  /// The examples hold no pixels: the source is an ExampleList and no map
  /// with an output shape has come yet.
  bool needsPixels_ = false;
  int64_t prefetch_ = 0;
  bool prefetchSet_ = false;
};

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_PIPELINE_H
