//===- AtomicFile.cpp - write a file so readers see all of it or none ----===//

#include "runtime/base/AtomicFile.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace graph::runtime {

namespace {

std::string errnoText() { return std::strerror(errno); }

/// Tells this process's temporaries apart.
std::atomic<uint64_t> temporaryCount{0};

bool allDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(),
                                   [](char c) { return c >= '0' && c <= '9'; });
}

} // namespace

std::string_view finalNameOf(std::string_view name) {
  if (!name.ends_with(kTemporarySuffix))
    return {};
  std::string_view base = name.substr(0, name.size() - kTemporarySuffix.size());
  // ".<pid>.<n>", which an earlier build's names lack.
  for (int part = 0; part < 2; ++part) {
    size_t dot = base.rfind('.');
    if (dot == std::string_view::npos || !allDigits(base.substr(dot + 1)))
      return part == 0 ? base : std::string_view();
    base = base.substr(0, dot);
  }
  return base;
}

AtomicFile::~AtomicFile() { abandon(); }

void AtomicFile::abandon() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(temporary_.c_str());
  }
}

Status AtomicFile::open(const std::string &path) {
  abandon();
  path_ = path;
  temporary_ = path + "." + std::to_string(::getpid()) + "." +
               std::to_string(temporaryCount++) + std::string(kTemporarySuffix);
  fd_ =
      ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0)
    return Status::error(temporary_ + ": cannot create: " + errnoText());
  return Status::ok();
}

Status AtomicFile::append(const void *data, size_t bytes) {
  if (fd_ < 0)
    return Status::error(path_ + ": write to a file that is not open");
  const char *p = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd_, p, bytes);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return Status::error(temporary_ + ": write failed: " + errnoText());
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return Status::ok();
}

Status AtomicFile::commit() {
  if (fd_ < 0)
    return Status::error(path_ + ": commit of a file that is not open");
  // Data first, then the name: a rename that reached the disk before the
  // data would expose an empty or partial file after a crash.
  if (::fsync(fd_) != 0) {
    Status s = Status::error(temporary_ + ": fsync failed: " + errnoText());
    abandon();
    return s;
  }
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    ::unlink(temporary_.c_str());
    return Status::error(temporary_ + ": close failed: " + errnoText());
  }
  if (::rename(temporary_.c_str(), path_.c_str()) != 0) {
    Status s = Status::error(temporary_ + ": cannot rename to " + path_ + ": " +
                             errnoText());
    ::unlink(temporary_.c_str());
    return s;
  }
  std::string directory = std::filesystem::path(path_).parent_path().string();
  return syncDirectory(directory.empty() ? "." : directory);
}

Status writeFileAtomically(const std::string &path, std::string_view bytes) {
  AtomicFile file;
  if (Status s = file.open(path); !s)
    return s;
  if (Status s = file.append(bytes); !s)
    return s;
  return file.commit();
}

Status syncDirectory(const std::string &directory) {
  int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(directory +
                         ": cannot open the directory: " + errnoText());
  int rc = ::fsync(fd);
  std::string error = rc != 0 ? errnoText() : "";
  ::close(fd);
  if (rc != 0)
    return Status::error(directory +
                         ": fsync of the directory failed: " + error);
  return Status::ok();
}

} // namespace graph::runtime
