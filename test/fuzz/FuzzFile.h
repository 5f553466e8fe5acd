//===- FuzzFile.h - A fuzzer's input as a file the readers can open -*- C++
//-*-===//
//
// The data readers take paths (they map, pread or gzopen their files), so a
// fuzzer hands them its input as an anonymous in-memory file (memfd) named
// by /proc/self/fd/N: nothing touches the disk, and the file goes with the
// object.
//
//===----------------------------------------------------------------------===//

#ifndef TEST_FUZZ_FUZZFILE_H
#define TEST_FUZZ_FUZZFILE_H

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace graph::fuzz {

class FuzzFile {
public:
  FuzzFile(const uint8_t *data, size_t size) {
    fd_ = memfd_create("fuzz-input", MFD_CLOEXEC);
    if (fd_ < 0)
      std::abort();
    for (size_t done = 0; done < size;) {
      ssize_t n = write(fd_, data + done, size - done);
      if (n <= 0)
        std::abort();
      done += static_cast<size_t>(n);
    }
    path_ = "/proc/self/fd/" + std::to_string(fd_);
  }
  ~FuzzFile() { close(fd_); }
  FuzzFile(const FuzzFile &) = delete;
  FuzzFile &operator=(const FuzzFile &) = delete;

  const std::string &path() const { return path_; }

private:
  int fd_ = -1;
  std::string path_;
};

/// Stops the fuzzer with a crash report when a reader broke its contract
/// on an input it accepted (the sanitizers cannot see that).
inline void require(bool contract) {
  if (!contract)
    __builtin_trap();
}

} // namespace graph::fuzz

#endif // TEST_FUZZ_FUZZFILE_H
