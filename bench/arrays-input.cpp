//===- arrays-input.cpp - NumPy arrays through the input pipeline ---------===//
//
// Opens `--data arrays:...` as graphrun does (data::openArrays: in memory up
// to --in-memory-bytes of float32, a memory-mapped .npy above it), builds
// the pipeline TrainingJob::run builds for it (shuffle, repeat, the mapped
// array's loading map, batch with sparse labels, prefetch) and times what
// the input alone delivers: the consumer only takes the batches, so the
// figure is the pipeline's ceiling, the rate above which it cannot feed a
// step. Prints examples per second (first batch excluded), the time to the
// first batch, the process's CPU seconds and its peak resident set.
//
//   arrays-input --data arrays:train.npz [--shape 28x28x1] [--batch 256]
//                [--batches N | --epochs E] [--threads 2]
//                [--in-memory-bytes 1073741824] [--shuffle-buffer B]
//                [--prefetch 2] [--seed 1] [--input-name NAME]
//
// --in-memory-bytes 0 forces the mapped path (it needs a .npy x). The
// shuffle buffer defaults to TrainingJob's choice: 5000 examples in memory,
// the whole set for mapped arrays (labels only, not rows, are buffered).
// The in-memory limit is capped, as TrainingJob caps it, at a quarter of
// the memory available.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/HostMemory.h"
#include "runtime/data/ArraysDataset.h"
#include "runtime/data/DataSource.h"
#include "runtime/data/Pipeline.h"

#include "bench/ProcessClock.h"

#include <CLI/CLI.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace graph::runtime;
using namespace graph::runtime::data;
using namespace graph::bench;

namespace {

/// "28x28x1", "784", "10x8": positive dimensions joined by 'x'.
bool parseShape(const std::string &text, ExampleShape &out) {
  std::vector<int64_t> dims;
  size_t start = 0;
  while (start <= text.size()) {
    size_t at = text.find('x', start);
    std::string part = text.substr(start, at - start);
    if (part.empty() ||
        part.find_first_not_of("0123456789") != std::string::npos)
      return false;
    dims.push_back(std::strtoll(part.c_str(), nullptr, 10));
    if (at == std::string::npos)
      break;
    start = at + 1;
  }
  out = ExampleShape(std::move(dims));
  return out.positive();
}

int fail(const Status &s) {
  std::fprintf(stderr, "arrays-input: %s\n", s.message().c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"Times NumPy arrays through graphrun's input pipeline"};
  std::string data, shapeText = "28x28x1", inputName = "input";
  int threads = 2;
  int64_t batch = 256, batches = 0, epochs = 1, shuffleBuffer = 0, prefetch = 2,
          inMemoryBytes = int64_t(1) << 30;
  uint64_t seed = 1;
  int32_t classes = 0;
  app.add_option("--data", data, "arrays:FILE.npz or arrays:X.npy,Y.npy")
      ->required();
  app.add_option("--shape", shapeText, "one example's shape: 28x28x1, 784");
  app.add_option("--input-name", inputName, "the model input's name");
  app.add_option("--classes", classes,
                 "the model's classes (0: the largest label + 1)");
  app.add_option("--threads", threads,
                 "map threads that convert mapped rows (graphrun's "
                 "--decode-threads)");
  app.add_option("--batch", batch, "examples a batch (the global batch)");
  app.add_option("--batches", batches,
                 "batches to take, repeating the data as needed (0: "
                 "--epochs passes)");
  app.add_option("--epochs", epochs,
                 "passes over the data (without --batches)");
  app.add_option("--in-memory-bytes", inMemoryBytes,
                 "features up to this many bytes of float32 go to memory; "
                 "0 keeps a .npy mapped");
  app.add_option("--shuffle-buffer", shuffleBuffer,
                 "examples in the shuffle buffer (0: TrainingJob's choice)");
  app.add_option("--prefetch", prefetch, "batches prepared ahead");
  app.add_option("--seed", seed, "the shuffle's seed");
  CLI11_PARSE(app, argc, argv);

  ArraysOptions o;
  o.inputName = inputName;
  if (!parseShape(shapeText, o.shape))
    return fail(Status::error("--shape " + shapeText +
                              ": give positive dimensions, 28x28x1 or 784"));
  o.classes = classes;
  o.needsLabels = true;
  // As TrainingJob::sourceOptions: at most a quarter of what is available.
  o.inMemoryBytes = inMemoryBytes;
  if (int64_t available = availableMemory(); available > 0)
    o.inMemoryBytes = std::min<int64_t>(o.inMemoryBytes, available / 4);

  auto start = std::chrono::steady_clock::now();
  double cpuOpen = cpuSeconds();
  DataSource source;
  source.spec = data;
  if (Status s =
          openArrays(data, o, source.memory, source.mapped, source.weights);
      !s)
    return fail(s);
  source.decodeThreads = std::max(1, threads);
  std::printf("open: %s, %lld examples of %s, %s: %.3f s wall, %.3f cpu-s, "
              "peak RSS %.0f MiB\n",
              source.name().c_str(), static_cast<long long>(source.size()),
              source.shape().str().c_str(),
              source.inMemory() ? "in memory" : "memory-mapped",
              secondsSince(start), cpuSeconds() - cpuOpen, peakRssMiB());

  // TrainingJob::run's pipeline for one worker, without --cache.
  int64_t buffer = shuffleBuffer > 0    ? shuffleBuffer
                   : !source.inMemory() ? std::max<int64_t>(1, source.size())
                                        : 5000;
  Pipeline p = source.pipeline();
  p.shuffle(buffer, seed);
  p.repeat(batches > 0 ? Pipeline::kForever : std::max<int64_t>(1, epochs));
  source.decode(p);
  p.batch(batch, LabelFormat::Sparse);
  p.prefetch(prefetch);
  std::unique_ptr<BatchIterator> it;
  start = std::chrono::steady_clock::now();
  if (Status s = p.open(it); !s)
    return fail(s);

  // Timed from the first batch on, as the peers are (their start-up, a
  // thread pool or TF's tracing, is not the pipeline's rate); the time to
  // the first batch (a mapped set's whole-set shuffle buffer fills there)
  // is printed apart.
  int64_t examples = 0, taken = 0;
  double checksum = 0, firstBatch = 0, cpuStart = 0;
  for (;;) {
    if (batches > 0 && taken == batches)
      break;
    Batch b;
    bool end = false;
    if (Status s = it->next(b, end); !s)
      return fail(s);
    if (end)
      break;
    // Touch the batch as a step would read it: its first and last rows.
    checksum += b.images.front() + b.images.back() + b.sparseLabels.back();
    if (taken++ == 0) {
      firstBatch = secondsSince(start);
      start = std::chrono::steady_clock::now();
      cpuStart = cpuSeconds();
    } else {
      examples += b.size;
    }
  }
  double seconds = secondsSince(start);
  double cpu = cpuSeconds() - cpuStart;
  it.reset(); // joins the pipeline's threads
  if (examples == 0)
    return fail(Status::error("fewer than two batches of " +
                              std::to_string(batch) +
                              ": nothing to time; take more"));
  std::printf("ours (%s): %lld batches of %lld, %lld examples of %s, %d map "
              "threads, shuffle buffer %lld: %.3f s, %.0f examples/s, %.3f "
              "cpu-us/example, %.3f cpu-s; first batch %.3f s; peak RSS %.0f "
              "MiB (first batch excluded; checksum %.3f)\n",
              source.inMemory() ? "in memory" : "mapped",
              static_cast<long long>(taken), static_cast<long long>(batch),
              static_cast<long long>(examples), source.shape().str().c_str(),
              source.inMemory() ? 0 : source.decodeThreads,
              static_cast<long long>(buffer), seconds, examples / seconds,
              1e6 * cpu / examples, cpu, firstBatch, peakRssMiB(), checksum);
  return 0;
}
