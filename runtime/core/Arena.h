//===- Arena.h - a device's memory, allocated once --------------*- C++ -*-===//
//
// The memory planner gives every temporary of a program an offset in one
// per-device arena; the executor allocates each arena once, 64-byte aligned
// (a cache line, an AVX-512 vector), and never allocates inside a step.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_ARENA_H
#define RUNTIME_CORE_ARENA_H

#include "runtime/base/Status.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace graph::runtime {

constexpr size_t kArenaAlignment = 64;

/// A zeroed, 64-byte aligned block of host memory.
class Arena {
public:
  Arena() = default;

  /// Allocates `bytes` (rounded up to the alignment; at least one line).
  static Status allocate(int64_t bytes, Arena &out) {
    if (bytes < 0)
      return Status::error("arena: negative size " + std::to_string(bytes));
    size_t size = (static_cast<size_t>(bytes) + kArenaAlignment - 1) /
                  kArenaAlignment * kArenaAlignment;
    if (size == 0)
      size = kArenaAlignment;
    void *p = std::aligned_alloc(kArenaAlignment, size);
    if (!p)
      return Status::error("arena: cannot allocate " + std::to_string(size) +
                           " bytes: out of host memory");
    std::memset(p, 0, size);
    out.data_.reset(static_cast<std::byte *>(p));
    out.size_ = bytes;
    allocationCounter().fetch_add(1, std::memory_order_relaxed);
    return Status::ok();
  }

  std::byte *data() const { return data_.get(); }
  int64_t size() const { return size_; }

  /// Arenas allocated by this process so far: tests check that steps
  /// allocate none.
  static int64_t allocations() {
    return allocationCounter().load(std::memory_order_relaxed);
  }

private:
  struct Free {
    void operator()(std::byte *p) const { std::free(p); }
  };
  static std::atomic<int64_t> &allocationCounter() {
    static std::atomic<int64_t> counter{0};
    return counter;
  }

  std::unique_ptr<std::byte, Free> data_;
  int64_t size_ = 0;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_ARENA_H
