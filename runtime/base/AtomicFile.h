//===- AtomicFile.h - files readers see whole or not at all -----*- C++ -*-===//
//
// A file is written under a temporary name next to its final one, flushed to
// the disk (fsync), renamed into place and the directory entry flushed too.
// rename(2) replaces atomically, so a reader, or a run restarted after a
// SIGKILL or a power cut, finds the old complete file or the new complete
// file, never a partial one. What an abandoned write leaves is the temporary
// file, which its name marks as such (kTemporarySuffix). The temporary name
// is the writer's own (its pid and a count), so two writers of one path
// never write into, or rename, each other's file.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_ATOMICFILE_H
#define RUNTIME_BASE_ATOMICFILE_H

#include "runtime/base/Status.h"

#include <cstddef>
#include <string>
#include <string_view>

namespace graph::runtime {

/// What a temporary file's name ends with: "<final name>.<pid>.<n>.tmp".
inline constexpr std::string_view kTemporarySuffix = ".tmp";

/// The final name an AtomicFile's temporary `name` is written for
/// ("ckpt-20.safetensors" of "ckpt-20.safetensors.4242.0.tmp", or of the
/// ".tmp" an earlier build wrote), or empty for any other name.
std::string_view finalNameOf(std::string_view name);

class AtomicFile {
public:
  AtomicFile() = default;
  /// Removes the temporary file unless commit() succeeded.
  ~AtomicFile();
  AtomicFile(const AtomicFile &) = delete;
  AtomicFile &operator=(const AtomicFile &) = delete;

  /// Creates a temporary file of its own beside `path`, for writing.
  Status open(const std::string &path);
  /// The temporary file open() made (empty before).
  const std::string &temporaryPath() const { return temporary_; }
  Status append(const void *data, size_t bytes);
  Status append(std::string_view bytes) {
    return append(bytes.data(), bytes.size());
  }
  /// fsync, close, rename over the final name, fsync the directory.
  Status commit();

private:
  void abandon();

  std::string path_, temporary_;
  int fd_ = -1;
};

/// Writes `bytes` to `path` through an AtomicFile.
Status writeFileAtomically(const std::string &path, std::string_view bytes);

/// Flushes the entries of `directory` (a rename or unlink in it) to disk.
Status syncDirectory(const std::string &directory);

} // namespace graph::runtime

#endif // RUNTIME_BASE_ATOMICFILE_H
