//===- HostMemory.h - how much memory this process may still take -*- C++
//-*-===//
//
// The job decides what to hold in memory (decoded images under --cache,
// NumPy arrays, an .npz member) from what the host can give: MemAvailable,
// or less where a cgroup's limit (a container's) leaves less.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_BASE_HOSTMEMORY_H
#define RUNTIME_BASE_HOSTMEMORY_H

#include <cstdint>

namespace graph::runtime {

/// The bytes this process may still take, or -1 when neither
/// /proc/meminfo nor the cgroup says.
int64_t availableMemory();

} // namespace graph::runtime

#endif // RUNTIME_BASE_HOSTMEMORY_H
