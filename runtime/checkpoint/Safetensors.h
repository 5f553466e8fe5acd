//===- Safetensors.h - the safetensors tensor file format -------*- C++ -*-===//
//
// safetensors (Hugging Face): an 8-byte little-endian header length N, N
// bytes of JSON header, then the tensors' raw little-endian bytes:
//
//   {"conv2d/kernel": {"dtype": "F32", "shape": [3, 3, 1, 32],
//                      "data_offsets": [0, 1152]},
//    "__metadata__": {"global_step": "40"}}
//
// data_offsets are [begin, end) into the data that follows the header. The
// reader is as strict as the reference implementation: the tensors must
// tile the data exactly (no overlap, no gap, nothing after the last one),
// each must hold product(shape) * dtype size bytes, and any fault is an
// error naming the file and the tensor, so a truncated or corrupted file is
// never mistaken for weights.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CHECKPOINT_SAFETENSORS_H
#define RUNTIME_CHECKPOINT_SAFETENSORS_H

#include "runtime/base/Status.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graph::runtime::checkpoint {

/// The dtypes of the format, by their names in the header.
enum class DType {
  BOOL,
  U8,
  I8,
  F8_E5M2,
  F8_E4M3,
  I16,
  U16,
  F16,
  BF16,
  I32,
  U32,
  F32,
  F64,
  I64,
  U64,
};

std::optional<DType> parseDType(std::string_view name);
const char *dtypeName(DType dtype);
int64_t dtypeSize(DType dtype);

/// The header of files bigger than this is rejected unread (the reference
/// implementation's limit), so a corrupted length cannot ask for gigabytes.
inline constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// [begin, end) into the data section.
  uint64_t begin = 0, end = 0;
};

/// A whole file, held in memory, with its header checked.
class SafetensorsFile {
public:
  /// Checks and indexes `bytes` (a file's content); `source` (the path)
  /// prefixes every error.
  static Status parse(std::string bytes, const std::string &source,
                      SafetensorsFile &out);
  static Status read(const std::string &path, SafetensorsFile &out);

  /// The tensors in data order.
  const std::vector<TensorInfo> &tensors() const { return tensors_; }
  /// The tensor named `name`, or null.
  const TensorInfo *find(const std::string &name) const;
  /// The tensor's bytes.
  std::string_view data(const TensorInfo &tensor) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// The metadata entry `key`, or null.
  const std::string *metadata(const std::string &key) const;
  const std::string &source() const { return source_; }
  /// CRC-32C of the data section (every tensor's bytes).
  uint32_t dataCrc32c() const;

private:
  std::string source_;
  std::string bytes_;
  uint64_t dataStart_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// Collects tensors and metadata, then writes them in the order added.
class SafetensorsWriter {
public:
  void setMetadata(const std::string &key, std::string value);
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }
  /// Adds a tensor; `bytes` must hold product(shape) * dtypeSize(dtype)
  /// bytes, and the name must be new and not "__metadata__".
  Status add(const std::string &name, DType dtype, std::vector<int64_t> shape,
             std::string bytes);
  /// CRC-32C of the data section the file will have (every tensor's
  /// bytes, in the order added).
  uint32_t dataCrc32c() const;
  /// The file's content.
  std::string serialize() const;
  /// Writes the file atomically (AtomicFile.h).
  Status write(const std::string &path) const;

private:
  std::string header() const;

  struct Entry {
    std::string name;
    DType dtype;
    std::vector<int64_t> shape;
    std::string bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

} // namespace graph::runtime::checkpoint

#endif // RUNTIME_CHECKPOINT_SAFETENSORS_H
