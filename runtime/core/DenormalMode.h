//===- DenormalMode.h - flushing subnormal floats to zero -------*- C++ -*-===//
//
// Whether the calling thread's float arithmetic flushes subnormal numbers to
// zero: x86's MXCSR bits FTZ (subnormal results become 0) and DAZ
// (subnormal operands read as 0), which hold per thread.
//
// The cpu backend runs a step with both set, as TensorFlow runs its CPU
// kernels (and torch.set_flush_denormal(True) does for PyTorch): Adam's
// first moments decay into subnormals over a long run, and each operation
// on one takes a microcode assist of about a hundred cycles (after 5,600
// steps of Keras' multi-GPU-guide MLP, 15-17% of two kernels' slots were
// subnormal and the update ran twice as slow). The reference backend is the
// oracle and computes exact IEEE arithmetic, so the executor sets the mode
// of each host device's step explicitly, either way (Executor::runDevice),
// and the cpu backend hands it on to the OpenMP team of the device thread
// (cpu::useReplicaThreads).
//
// Elsewhere than x86 these are no-ops: nothing flushes.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_DENORMALMODE_H
#define RUNTIME_CORE_DENORMALMODE_H

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#define GRAPH_HAVE_MXCSR 1
#endif

namespace graph::runtime {

#ifdef GRAPH_HAVE_MXCSR
/// MXCSR's flush-to-zero (bit 15) and denormals-are-zero (bit 6).
inline constexpr unsigned kFlushDenormalBits = 0x8040;
#endif

/// Whether the calling thread flushes subnormals (FTZ and DAZ both set).
inline bool flushesDenormals() {
#ifdef GRAPH_HAVE_MXCSR
  return (_mm_getcsr() & kFlushDenormalBits) == kFlushDenormalBits;
#else
  return false;
#endif
}

/// Sets (true) or clears (false) FTZ and DAZ on the calling thread.
inline void setFlushDenormals(bool flush) {
#ifdef GRAPH_HAVE_MXCSR
  unsigned csr = _mm_getcsr();
  unsigned want = flush ? csr | kFlushDenormalBits : csr & ~kFlushDenormalBits;
  if (want != csr)
    _mm_setcsr(want);
#else
  (void)flush;
#endif
}

/// The calling thread flushes subnormals (or not) for the scope's
/// lifetime; its earlier mode comes back at the end (only FTZ and DAZ: the
/// rest of MXCSR is left as the scope's code left it).
class ScopedDenormalMode {
public:
  explicit ScopedDenormalMode(bool flush) : saved_(flushesDenormals()) {
    setFlushDenormals(flush);
  }
  ~ScopedDenormalMode() { setFlushDenormals(saved_); }
  ScopedDenormalMode(const ScopedDenormalMode &) = delete;
  ScopedDenormalMode &operator=(const ScopedDenormalMode &) = delete;

private:
  bool saved_;
};

} // namespace graph::runtime

#endif // RUNTIME_CORE_DENORMALMODE_H
