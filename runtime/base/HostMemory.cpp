//===- HostMemory.cpp - how much memory this process may still take -------===//

#include "runtime/base/HostMemory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <limits>
#include <string>
#include <system_error>

namespace graph::runtime {

int64_t availableMemory() {
  int64_t available = -1;
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  std::ifstream maxFile("/sys/fs/cgroup/memory.max"),
      currentFile("/sys/fs/cgroup/memory.current");
  std::string max;
  int64_t current = 0;
  if (maxFile >> max && max != "max" && currentFile >> current) {
    int64_t limit = 0;
    auto [end, ec] =
        std::from_chars(max.data(), max.data() + max.size(), limit);
    if (ec == std::errc()) {
      int64_t left = std::max<int64_t>(0, limit - current);
      available = available < 0 ? left : std::min(available, left);
    }
  }
  return available;
}

} // namespace graph::runtime
