//===- PlanMemoryPass.cpp - place allocs in per-device arenas -------------===//
//
// Per program and device, a linear scan over program order. An exec.alloc is
// live from its own position (the lowering puts it right before its first
// writer) to its last use, a use through an exec.view counting as a use of
// the alloc. Two refinements keep reuse safe across streams:
//  - a use on a stream other than the device's compute stream (the
//    all-reduce of a bucket on the comm stream, a copy stream) lasts until
//    the compute stream waits for an event that stream records after the
//    use; with no such wait, until the end of the program;
//  - a buffer an exec.output reports lives until the end of the program,
//    where the runtime reads it.
// A dead buffer's space goes back to a free list (coalesced); each new alloc
// takes the smallest free block that fits (best fit, lowest offset on ties),
// else grows the arena. Sizes are rounded up to `alignment`, so every offset
// is a multiple of it, and so is each device's arena size.
//
// exec.variable and exec.input are not in the arena. The result depends only
// on the program, so running the pass again changes nothing.
//
// Every size, rounding and offset is computed with overflow checks: a batch
// of 2^63 - 1 made the arena's offsets wrap negative. An arena over
// `max-arena-bytes` is refused here, naming its largest buffer, rather than
// by the runtime when it cannot allocate it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/CheckedArithmetic.h"
#include "llvm/Support/Format.h"

#include <map>
#include <optional>

namespace mlir::graphc {
#define GEN_PASS_DEF_PLANMEMORY
#include "compiler/Passes.h.inc"
} // namespace mlir::graphc

using namespace mlir;

namespace {
/// One alloc's lifetime in program positions, both ends inclusive.
struct Lifetime {
  exec::AllocOp alloc;
  int64_t begin;
  int64_t end;
};

/// Best-fit placement in one growing arena. Sizes and offsets that would not
/// fit in int64_t make allocate() return nothing.
class Arena {
public:
  explicit Arena(int64_t alignment) : alignment(alignment) {}

  std::optional<int64_t> allocate(int64_t bytes) {
    std::optional<int64_t> rounded = roundUp(bytes);
    if (!rounded)
      return std::nullopt;
    int64_t size = *rounded;
    if (size == 0)
      return 0;
    auto best = free.end();
    for (auto it = free.begin(); it != free.end(); ++it)
      if (it->second >= size &&
          (best == free.end() || it->second < best->second))
        best = it;
    if (best != free.end()) {
      int64_t offset = best->first, left = best->second - size;
      free.erase(best);
      if (left)
        free[offset + size] = left;
      return offset;
    }
    // Grow: extend a free block that ends at the top, else start at the top.
    int64_t offset = top;
    auto last = free.empty() ? free.end() : std::prev(free.end());
    if (last != free.end() && last->first + last->second == top)
      offset = last->first;
    std::optional<int64_t> end = llvm::checkedAdd(offset, size);
    if (!end)
      return std::nullopt;
    if (offset != top)
      free.erase(last);
    top = *end;
    return offset;
  }

  /// Frees what allocate(bytes) returned at `offset`: both fitted then.
  void release(int64_t offset, int64_t bytes) {
    int64_t size = *roundUp(bytes);
    if (size == 0)
      return;
    auto next = free.lower_bound(offset);
    if (next != free.end() && offset + size == next->first) {
      size += next->second;
      next = free.erase(next);
    }
    if (next != free.begin()) {
      auto prev = std::prev(next);
      if (prev->first + prev->second == offset) {
        prev->second += size;
        return;
      }
    }
    free[offset] = size;
  }

  int64_t size() const { return top; }

private:
  std::optional<int64_t> roundUp(int64_t bytes) const {
    std::optional<int64_t> padded = llvm::checkedAdd(bytes, alignment - 1);
    if (!padded)
      return std::nullopt;
    return *padded / alignment * alignment;
  }

  int64_t alignment;
  int64_t top = 0;
  std::map<int64_t, int64_t> free; // offset -> size
};
} // namespace

/// The bytes of a buffer of `type`; nothing if they do not fit in int64_t
/// (MemRefType::getNumElements would wrap).
static std::optional<int64_t> byteSize(MemRefType type) {
  std::optional<int64_t> elements = 1;
  for (int64_t d : type.getShape())
    if (!(elements = llvm::checkedMul(*elements, d)))
      return std::nullopt;
  int64_t bits = type.getElementTypeBitWidth();
  if (bits % 8 == 0)
    return llvm::checkedMul(*elements, bits / 8);
  // Sub-byte elements are packed, the last byte rounded up.
  std::optional<int64_t> total = llvm::checkedMul(*elements, bits);
  if (!total)
    return std::nullopt;
  return *total / 8 + (*total % 8 != 0);
}

/// `bytes` in binary units with three significant digits: "6.6 PiB".
static std::string formatBytes(int64_t bytes) {
  static const char *const units[] = {"bytes", "KiB", "MiB", "GiB",
                                      "TiB",   "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 6) {
    value /= 1024;
    ++unit;
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  if (unit == 0)
    os << bytes << " bytes";
  else if (value >= 100 || value == static_cast<int64_t>(value))
    os << llvm::format("%.0f %s", value, units[unit]);
  else
    os << llvm::format(value >= 10 ? "%.1f %s" : "%.2f %s", value, units[unit]);
  return text;
}

static exec::AllocOp rootAlloc(Value buffer) {
  while (auto view = buffer.getDefiningOp<exec::ViewOp>())
    buffer = view.getSource();
  return buffer.getDefiningOp<exec::AllocOp>();
}

/// The stream an op runs on, if it runs on one.
static std::optional<exec::StreamAttr> streamOf(Operation *op, Value buffer) {
  if (auto launch = dyn_cast<exec::LaunchOp>(op))
    return launch.getStream();
  if (auto copy = dyn_cast<exec::CopyOp>(op))
    return copy.getStream();
  if (isa<exec::AllReduceOp>(op))
    if (std::optional<int64_t> device = exec::getBufferDevice(buffer))
      return exec::StreamAttr::get(op->getContext(), exec::StreamKind::comm,
                                   *device);
  return std::nullopt;
}

namespace {
struct PlanMemoryPass : graphc::impl::PlanMemoryBase<PlanMemoryPass> {
  using PlanMemoryBase::PlanMemoryBase;

  void runOnOperation() override {
    if (alignment <= 0) {
      getOperation().emitError("exec-plan-memory: alignment must be positive, "
                               "got ")
          << alignment;
      return signalPassFailure();
    }
    if (maxArenaBytes <= 0) {
      getOperation().emitError("exec-plan-memory: max-arena-bytes must be "
                               "positive, got ")
          << maxArenaBytes;
      return signalPassFailure();
    }
    for (auto program : getOperation().getOps<exec::ProgramOp>())
      if (failed(plan(program)))
        return signalPassFailure();
  }

  /// The position from which the compute stream of `device` is ordered after
  /// position `use` of `stream`: its first wait for an event `stream`
  /// records after the use. The end of the program when there is none.
  static int64_t
  joinedByCompute(ArrayRef<Operation *> ops,
                  const llvm::DenseMap<Operation *, int64_t> &positions,
                  int64_t use, exec::StreamAttr stream, int64_t device) {
    int64_t last = static_cast<int64_t>(ops.size()) - 1, join = last;
    for (int64_t i = use + 1; i <= last; ++i) {
      auto record = dyn_cast<exec::RecordOp>(ops[i]);
      if (!record || record.getStream() != stream)
        continue;
      for (Operation *user : record.getEvent().getUsers()) {
        auto wait = dyn_cast<exec::WaitOp>(user);
        if (!wait || wait.getStream().getKind() != exec::StreamKind::compute ||
            wait.getStream().getDevice() != device)
          continue;
        int64_t at = positions.lookup(wait);
        if (at > i)
          join = std::min(join, at);
      }
    }
    return join;
  }

  /// ", written by kernel 'NAME'" for the first launch (in program order,
  /// `positions`) that uses `alloc`.
  static std::string
  describeWriter(exec::AllocOp alloc,
                 const llvm::DenseMap<Operation *, int64_t> &positions) {
    exec::LaunchOp first;
    for (Operation *user : alloc->getUsers())
      if (auto launch = dyn_cast<exec::LaunchOp>(user))
        if (!first || positions.lookup(launch) < positions.lookup(first))
          first = launch;
    return first ? (", written by kernel '" + first.getKernel() + "'").str()
                 : "";
  }

  LogicalResult plan(exec::ProgramOp program) {
    SmallVector<Operation *> ops;
    llvm::DenseMap<Operation *, int64_t> positions;
    for (Operation &op : program.getBody().front()) {
      positions[&op] = static_cast<int64_t>(ops.size());
      ops.push_back(&op);
    }
    int64_t last = static_cast<int64_t>(ops.size()) - 1;

    SmallVector<Lifetime> lifetimes;
    llvm::DenseMap<Operation *, size_t> lifetimeOf;
    for (auto [i, op] : llvm::enumerate(ops))
      if (auto alloc = dyn_cast<exec::AllocOp>(op)) {
        lifetimeOf[alloc] = lifetimes.size();
        int64_t position = static_cast<int64_t>(i);
        lifetimes.push_back({alloc, position, position});
      }

    for (auto [i, op] : llvm::enumerate(ops)) {
      int64_t position = static_cast<int64_t>(i);
      for (Value operand : op->getOperands()) {
        if (!isa<MemRefType>(operand.getType()))
          continue;
        exec::AllocOp alloc = rootAlloc(operand);
        if (!alloc)
          continue;
        Lifetime &lifetime = lifetimes[lifetimeOf.lookup(alloc)];
        int64_t end = position;
        if (isa<exec::OutputOp>(op)) {
          end = last;
        } else if (std::optional<exec::StreamAttr> stream =
                       streamOf(op, operand)) {
          if (stream->getKind() != exec::StreamKind::compute ||
              stream->getDevice() != static_cast<int64_t>(alloc.getDevice()))
            end = joinedByCompute(ops, positions, position, *stream,
                                  alloc.getDevice());
        }
        lifetime.end = std::max(lifetime.end, end);
      }
    }

    int64_t replicas = program.getReplicas();
    SmallVector<int64_t> arenaBytes(replicas, 0);
    for (int64_t device = 0; device < replicas; ++device) {
      Arena arena(alignment);
      // Live allocs, by the position after which their space is free.
      std::multimap<int64_t, std::pair<int64_t, int64_t>> live;
      exec::AllocOp largest;
      int64_t largestBytes = -1;
      for (Lifetime &lifetime : lifetimes) {
        if (static_cast<int64_t>(lifetime.alloc.getDevice()) != device)
          continue;
        while (!live.empty() && live.begin()->first < lifetime.begin) {
          arena.release(live.begin()->second.first,
                        live.begin()->second.second);
          live.erase(live.begin());
        }
        MemRefType type = lifetime.alloc.getBuffer().getType();
        std::optional<int64_t> bytes = byteSize(type);
        std::optional<int64_t> offset =
            bytes ? arena.allocate(*bytes) : std::nullopt;
        if (!offset) {
          // At the location, not the op: MLIR would print the op, and with
          // it the whole program.
          mlir::emitError(lifetime.alloc.getLoc())
              << "exec-plan-memory: " << type << " does not fit in the "
              << "arena of device " << device << " of @" << program.getSymName()
              << ": its size or offset overflows 64 bits";
          return failure();
        }
        if (*bytes > largestBytes) {
          largest = lifetime.alloc;
          largestBytes = *bytes;
        }
        lifetime.alloc.setOffset(static_cast<uint64_t>(*offset));
        live.insert({lifetime.end, {*offset, *bytes}});
      }
      arenaBytes[device] = arena.size();
      if (arena.size() > maxArenaBytes) {
        InFlightDiagnostic diag =
            mlir::emitError(program.getLoc())
            << "exec-plan-memory: the arena of device " << device << " of @"
            << program.getSymName() << " (replicas = " << replicas << ") needs "
            << formatBytes(arena.size()) << " (" << arena.size()
            << " bytes), over the limit of " << formatBytes(maxArenaBytes)
            << " (graphc --max-arena-bytes)";
        diag.attachNote(largest.getLoc())
            << "its largest buffer: " << formatBytes(largestBytes) << ", "
            << largest.getBuffer().getType()
            << describeWriter(largest, positions);
        return failure();
      }
    }
    program.setArenaBytes(ArrayRef<int64_t>(arenaBytes));
    return success();
  }
};
} // namespace
