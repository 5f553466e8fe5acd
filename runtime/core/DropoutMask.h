//===- DropoutMask.h - which elements dropout keeps, for every backend ---===//
//
// Dropout's mask is a counter-based hash of (op seed, run seed, step, global
// element index), so dropout_grad regenerates the forward's mask instead of
// storing it, and a batch split across replicas drops what one replica
// would. This header is the one definition the reference, cpu and CUDA
// backends share (host and device code): four chained splitmix64 rounds,
// the first three independent of the element (stepKey, hashed once per
// launch), and the element kept when u = (h >> 11) * 2^-53 >= rate, i.e.
// when (h >> 11) >= ceil(rate * 2^53) (both sides scaled by a power of two,
// so the integer comparison is exact).
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_CORE_DROPOUTMASK_H
#define RUNTIME_CORE_DROPOUTMASK_H

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define GRAPH_HOST_DEVICE __host__ __device__
#else
#define GRAPH_HOST_DEVICE
#endif

namespace graph::runtime::dropout {

GRAPH_HOST_DEVICE inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The hash of everything but the element: once per launch and step.
GRAPH_HOST_DEVICE inline uint64_t stepKey(int64_t opSeed, uint64_t runSeed,
                                          int64_t step) {
  uint64_t h = splitmix64(static_cast<uint64_t>(opSeed));
  h = splitmix64(h ^ runSeed);
  return splitmix64(h ^ static_cast<uint64_t>(step));
}

/// keep()'s threshold for keeping an element with probability 1 - rate.
inline uint64_t keepThreshold(double rate) {
  return static_cast<uint64_t>(std::ceil(rate * 0x1.0p53));
}

/// Whether the element with global index `index` is kept.
GRAPH_HOST_DEVICE inline bool keep(uint64_t stepKey, int64_t index,
                                   uint64_t threshold) {
  return (splitmix64(stepKey ^ static_cast<uint64_t>(index)) >> 11) >=
         threshold;
}

} // namespace graph::runtime::dropout

#endif // RUNTIME_CORE_DROPOUTMASK_H
