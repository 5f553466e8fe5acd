//===- TensorBoardEvents.cpp - TFRecord-framed Event messages ------------===//

#include "runtime/job/TensorBoardEvents.h"

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <system_error>
#include <unistd.h>

namespace graph::runtime::job {

namespace {

//===----------------------------------------------------------------------===//
// The protobuf wire format, the few pieces Event needs.
//===----------------------------------------------------------------------===//

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLengthDelimited = 2,
  kFixed32 = 5
};

void putVarint(std::string &out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out.push_back(static_cast<char>(value));
}

void putKey(std::string &out, uint32_t field, WireType type) {
  putVarint(out, (uint64_t(field) << 3) | type);
}

/// Little-endian whatever the host's order.
void putLittleEndian(std::string &out, uint64_t bits, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>(bits >> (8 * i)));
}

void putBytes(std::string &out, uint32_t field, const std::string &bytes) {
  putKey(out, field, kLengthDelimited);
  putVarint(out, bytes.size());
  out += bytes;
}

/// proto3 leaves a double out when its bits are 0 (so -0.0 is written).
void putDouble(std::string &out, uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if (bits == 0)
    return;
  putKey(out, field, kFixed64);
  putLittleEndian(out, bits, 8);
}

void putFloat(std::string &out, uint32_t field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  putKey(out, field, kFixed32);
  putLittleEndian(out, bits, 4);
}

// Field numbers: tensorboard/compat/proto/event.proto and summary.proto.
constexpr uint32_t kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3,
                   kEventSummary = 5;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;

std::string fileVersionEvent(double wallTime) {
  std::string event;
  putDouble(event, kEventWallTime, wallTime);
  putBytes(event, kEventFileVersion, "brain.Event:2");
  return event;
}

std::string scalarEvent(const std::string &tag, int64_t step, float value,
                        double wallTime) {
  std::string item;
  putBytes(item, kValueTag, tag);
  // simple_value is in a oneof, which proto3 writes even when it is 0.
  putFloat(item, kValueSimpleValue, value);
  std::string summary;
  putBytes(summary, kSummaryValue, item);

  std::string event;
  putDouble(event, kEventWallTime, wallTime);
  if (step != 0) {
    putKey(event, kEventStep, kVarint);
    putVarint(event, static_cast<uint64_t>(step)); // negative: 10 bytes
  }
  putBytes(event, kEventSummary, summary);
  return event;
}

std::string frameRecord(const std::string &data) {
  std::string record;
  record.reserve(data.size() + 16);
  putLittleEndian(record, data.size(), 8);
  putLittleEndian(record, maskCrc32c(crc32c(record.data(), 8)), 4);
  record += data;
  putLittleEndian(record, maskCrc32c(crc32c(data.data(), data.size())), 4);
  return record;
}

//===----------------------------------------------------------------------===//
// Files.
//===----------------------------------------------------------------------===//

double secondsNow() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0')
    return "localhost";
  return name;
}

/// 0 or the errno of the write that failed.
int writeAll(int fd, const std::string &bytes) {
  const char *p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return errno;
    if (n == 0) // not expected of a file; do not spin
      return EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

Status ioError(const std::string &path, const char *what, int err) {
  std::string message = path + ": " + what + ": " + std::strerror(err);
  if (err == ENOSPC || err == EDQUOT)
    return Status::resourceExhausted(
        message + " (free space on the disk, or log elsewhere)");
  return Status::error(message);
}

/// Which file of this process the name is, as TensorFlow's writers count.
std::atomic<int64_t> fileCounter{0};

} // namespace

uint32_t maskCrc32c(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

Status TensorBoardWriter::open(const std::string &directory,
                               std::unique_ptr<TensorBoardWriter> &out) {
  out.reset();
  if (directory.empty())
    return Status::invalidInput(
        "the TensorBoard log directory is an empty path");
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec)
    return Status::error(
        directory +
        ": cannot create the TensorBoard log directory: " + ec.message());
  // Named by the first event's second, as TensorFlow does; O_EXCL with the
  // next count keeps two writers of one second from sharing a file.
  long long seconds = static_cast<long long>(secondsNow());
  std::string host = hostname();
  for (int attempt = 0;; ++attempt) {
    char tail[96];
    std::snprintf(tail, sizeof tail, ".%d.%" PRId64 ".v2",
                  static_cast<int>(::getpid()), fileCounter.fetch_add(1));
    char head[64];
    std::snprintf(head, sizeof head, "events.out.tfevents.%010lld.", seconds);
    std::string path =
        (std::filesystem::path(directory) / (std::string(head) + host + tail))
            .string();
    int fd =
        ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      // A file whose first event could not be written is of no use to a
      // reader; leave nothing behind.
      Status s = start(path, fd, out);
      if (!s)
        ::unlink(path.c_str());
      return s;
    }
    if (errno != EEXIST || attempt == 100)
      return ioError(path, "cannot create the TensorBoard event file", errno);
  }
}

Status TensorBoardWriter::openFile(const std::string &path,
                                   std::unique_ptr<TensorBoardWriter> &out) {
  out.reset();
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return ioError(path, "cannot create the TensorBoard event file", errno);
  return start(path, fd, out);
}

Status TensorBoardWriter::start(std::string path, int fd,
                                std::unique_ptr<TensorBoardWriter> &out) {
  std::unique_ptr<TensorBoardWriter> writer(
      new TensorBoardWriter(std::move(path), fd));
  if (Status s = writer->writeRecord(fileVersionEvent(secondsNow())); !s)
    return s;
  out = std::move(writer);
  return Status::ok();
}

TensorBoardWriter::~TensorBoardWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status TensorBoardWriter::writeRecord(const std::string &event) {
  if (!error_)
    return error_;
  if (fd_ < 0)
    return Status::internal(path_ + ": write to a closed TensorBoard writer");
  std::string record = frameRecord(event);
  if (int err = writeAll(fd_, record)) {
    // A partial record would end what readers load at it; cut it off. (A
    // device such as /dev/full cannot be cut, and holds nothing anyway.)
    error_ = ioError(path_, "cannot write a TensorBoard event", err);
    if (::ftruncate(fd_, static_cast<off_t>(written_)) != 0 && errno != EINVAL)
      error_ = Status::error(error_.code(),
                             error_.message() +
                                 "; the file may end in a partial record "
                                 "(ftruncate: " +
                                 std::strerror(errno) + ")");
    return error_;
  }
  written_ += record.size();
  return Status::ok();
}

Status TensorBoardWriter::addScalar(const std::string &tag, int64_t step,
                                    double value, double wallTime) {
  if (tag.empty())
    return Status::invalidInput(path_ + ": a TensorBoard scalar needs a tag");
  return writeRecord(
      scalarEvent(tag, step, static_cast<float>(value), wallTime));
}

Status TensorBoardWriter::flush() {
  if (!error_)
    return error_;
  if (fd_ < 0)
    return Status::internal(path_ + ": flush of a closed TensorBoard writer");
  // EINVAL: a file (a pipe, a device) that has nothing to sync.
  if (::fsync(fd_) != 0 && errno != EINVAL)
    error_ =
        ioError(path_, "fsync of the TensorBoard event file failed", errno);
  return error_;
}

Status TensorBoardWriter::close() {
  if (fd_ < 0)
    return error_;
  Status flushed = flush();
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && flushed)
    error_ =
        ioError(path_, "close of the TensorBoard event file failed", errno);
  return error_;
}

} // namespace graph::runtime::job
