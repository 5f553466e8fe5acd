//===- TensorBoardEvents.h - TensorBoard event files, no TF -----*- C++ -*-===//
//
// Writes the event files TensorBoard reads, so that `tensorboard --logdir`
// shows a graphrun job's curves next to a Keras run's, without TensorFlow
// or protobuf in the runtime. Keras' TensorBoard callback gives each run
// directory a `train` and a `validation` folder, one writer each, and names
// the scalars epoch_<log name> (epoch_loss, epoch_accuracy; validation's
// without the val_ prefix) at step = epoch; the caller picks the folder and
// the tags, this file only writes them.
//
// The file is TFRecord framing (tensorflow/core/lib/io/record_writer.cc)
// around serialized `tensorboard.Event` messages (event.proto,
// summary.proto). Each record is
//   uint64 length, little-endian
//   uint32 masked CRC-32C of those 8 bytes
//   the data: one serialized Event
//   uint32 masked CRC-32C of the data
// where masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8. The Event fields
// written are wall_time = 1 (double), step = 2 (int64), file_version = 3
// (string, "brain.Event:2" in the first event of a file) and summary = 5: a
// Summary with value = 1, each Value a tag = 1 (string) and a
// simple_value = 2 (float). The messages are hand-encoded, in the canonical
// order and without proto3 defaults, so the bytes equal what protobuf's own
// serializer gives. Keras 3 writes tensor summaries with the "scalars"
// plugin's metadata instead of simple_value; TensorBoard migrates a
// simple_value into that form when it loads one (tensorboard/data_compat.py),
// so both show as the same scalars.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_JOB_TENSORBOARDEVENTS_H
#define RUNTIME_JOB_TENSORBOARDEVENTS_H

#include "runtime/base/Crc32c.h"
#include "runtime/base/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace graph::runtime::job {

/// CRC-32C (runtime/base/Crc32c.h), as TFRecord frames its records.
using graph::runtime::crc32c;

/// TFRecord's masked CRC: a CRC stored next to the data it covers is
/// rotated and offset, so that the CRC of data that holds CRCs stays
/// strong.
uint32_t maskCrc32c(uint32_t crc);

/// One event file, written as Keras' TensorBoard callback writes one:
/// DIR/events.out.tfevents.<seconds>.<hostname>.<pid>.<n>.v2. Every record
/// goes to the kernel when it is added (a killed run keeps what it logged);
/// flush() also puts it on the disk. After a failed write the file is cut
/// back to its last whole record, so readers still load it, and every later
/// call returns that first error. Not thread-safe: one caller at a time.
class TensorBoardWriter {
public:
  /// Creates `directory` (and its parents) if need be and a new event file
  /// in it, and writes the file's first event (its wall time and
  /// file_version "brain.Event:2"). On failure no file is left behind.
  static Status open(const std::string &directory,
                     std::unique_ptr<TensorBoardWriter> &out);
  /// The same at exactly `path` (created or truncated): what tests use to
  /// aim the writer at a given file, /dev/full included.
  static Status openFile(const std::string &path,
                         std::unique_ptr<TensorBoardWriter> &out);

  /// Closes the file; call close() to learn whether that failed.
  ~TensorBoardWriter();
  TensorBoardWriter(const TensorBoardWriter &) = delete;
  TensorBoardWriter &operator=(const TensorBoardWriter &) = delete;

  /// Writes one event with `value` (stored as a float, as simple_value is)
  /// under `tag` at `step`; `wallTime` is in seconds since the epoch.
  Status addScalar(const std::string &tag, int64_t step, double value,
                   double wallTime);
  /// fsync: the events written so far survive a power cut too.
  Status flush();
  /// flush() and close the file. Later writes fail; a second close()
  /// returns what the first did.
  Status close();

  /// The event file's path.
  const std::string &path() const { return path_; }
  /// The bytes of whole records written to it (each is in the kernel's
  /// hands once added): where a checkpoint's resumed run cuts it back to.
  uint64_t size() const { return written_; }

private:
  TensorBoardWriter(std::string path, int fd)
      : path_(std::move(path)), fd_(fd) {}
  static Status start(std::string path, int fd,
                      std::unique_ptr<TensorBoardWriter> &out);
  /// Frames `event` as a record and writes it, or cuts the file back to
  /// its last whole record and keeps the error.
  Status writeRecord(const std::string &event);

  std::string path_;
  int fd_ = -1;
  /// The bytes of whole records in the file.
  uint64_t written_ = 0;
  /// The first failure; every call after it returns it.
  Status error_;
};

} // namespace graph::runtime::job

#endif // RUNTIME_JOB_TENSORBOARDEVENTS_H
