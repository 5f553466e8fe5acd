//===- ConvAlgoCache.h - measured cuDNN algorithms, kept beside the plan
//-*-===//
//
// PyTorch's cudnn.benchmark, made to last: at start-up each convolution
// shape's algorithms are timed once (cudnnFind*Algorithm, ConvKernels.cpp)
// and the choice is kept in a file beside the plan ("<plan>.cudnn-algos"),
// so a later run of the plan skips the timing. This file is the pure part:
// keys, the file format, reading and writing. It includes no CUDA header,
// so its tests run on any machine.
//
// A key names everything the choice depends on: the pass, the convolution's
// shape and parameters, the workspace limit, the GPU's name, the cuDNN
// version and the precision. The file is text:
//
//   graph-cudnn-algos 1
//   <key>\t<algo> <math> <workspace bytes> <milliseconds>
//   ...
//   end <entries>
//
// A file that does not parse (a wrong header, a malformed line, a missing
// or wrong end line) is ignored whole, with a warning, and rewritten; its
// entries of another cuDNN version are stale: dropped, with a warning. The
// file is written atomically (checkpoint/AtomicFile.h), so a reader sees
// the old or the new file, never a partial one.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BACKENDS_CUDA_CONVALGOCACHE_H
#define RUNTIME_BACKENDS_CUDA_CONVALGOCACHE_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace graph::runtime::cuda {

/// What a convolution's algorithm choice depends on.
struct ConvAlgoKey {
  /// "fwd", "fwd_bias_act" (the fused forward), "bwd_data", "bwd_filter".
  std::string pass;
  /// The (possibly pre-padded) NHWC input, the filters and the window.
  int64_t n = 0, h = 0, w = 0, c = 0, filters = 0, kh = 0, kw = 0;
  /// Convolution groups (written only when > 1).
  int64_t groups = 1;
  int64_t strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  int64_t padH = 0, padW = 0;
  /// The workspace the choice had to fit in.
  uint64_t workspaceLimit = 0;
  /// The GPU's name (cudaDeviceProp::name), cudnnGetVersion(), and the
  /// precision ("fp32" or "tf32").
  std::string device;
  int64_t cudnnVersion = 0;
  std::string precision;

  /// The key as the file writes it: "field=value" pairs joined by ';'. The
  /// device name loses the characters the format uses (';', '=', tab,
  /// newline).
  std::string text() const;
};

/// The measured choice for one key.
struct ConvAlgoChoice {
  int algo = 0;
  /// cudnnMathType_t of the algorithm.
  int math = 0;
  uint64_t workspace = 0;
  /// Its measured time, for the curious reader of the file.
  float milliseconds = 0;
  bool operator==(const ConvAlgoChoice &o) const {
    return algo == o.algo && math == o.math && workspace == o.workspace;
  }
};

/// The choices of one plan's file; thread-safe.
class ConvAlgoCache {
public:
  /// The file beside `planPath`: "<plan>.cudnn-algos".
  static std::string pathBeside(const std::string &planPath);

  /// Reads `path` (a missing file is an empty cache). A file that does not
  /// parse is ignored whole, and entries of a cuDNN version other than
  /// `cudnnVersion` are dropped; each adds a line to `warnings`. Never
  /// fails: the cache is an optimisation.
  void load(const std::string &path, int64_t cudnnVersion,
            std::vector<std::string> &warnings);
  /// Parses file `text` (load() without the file). Returns false, with the
  /// reason in `why`, when it does not parse; then the cache is unchanged.
  bool parse(const std::string &text, int64_t cudnnVersion, std::string &why,
             int &stale);
  /// The file's text for the current entries.
  std::string serialize() const;
  /// Writes the entries to `path` atomically; clears dirty().
  Status save(const std::string &path);

  std::optional<ConvAlgoChoice> find(const ConvAlgoKey &key) const;
  void insert(const ConvAlgoKey &key, const ConvAlgoChoice &choice);
  /// Whether an entry was added or dropped since load() or save().
  bool dirty() const;
  size_t size() const;

private:
  mutable std::mutex mutex_;
  std::map<std::string, ConvAlgoChoice> entries_; // by key text
  bool dirty_ = false;
};

} // namespace graph::runtime::cuda

#endif // RUNTIME_BACKENDS_CUDA_CONVALGOCACHE_H
