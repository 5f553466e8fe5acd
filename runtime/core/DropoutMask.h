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

/// A noise shape (Keras' noise_shape, SpatialDropout2D) as the kernels read
/// it: the axes after the batch axis, each of the input's dimension or 1 in
/// the noise. An element's mask is the noise element's at its coordinates
/// with the unit axes at 0: global index (batch row) * rowElements + the
/// index within the noise row.
struct NoiseMap {
  static constexpr int kMaxRank = 8;
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t noise[kMaxRank] = {};
  int64_t rowElements = 1;
};

/// Fills `map` from an input shape and a noise shape of the axes after its
/// batch axis (graph.dropout's noise_shape); false if they do not fit (a
/// rank over kMaxRank + 1, or a dimension neither 1 nor the input's).
template <typename Shape>
inline bool makeNoiseMap(const Shape &shape, const Shape &noise,
                         NoiseMap &map) {
  if (shape.empty() || noise.size() + 1 != shape.size() ||
      shape.size() > NoiseMap::kMaxRank + 1)
    return false;
  map.rank = static_cast<int>(shape.size()) - 1;
  map.rowElements = 1;
  for (int d = 0; d < map.rank; ++d) {
    map.dims[d] = shape[d + 1];
    map.noise[d] = noise[d];
    if (map.noise[d] != map.dims[d] && map.noise[d] != 1)
      return false;
    map.rowElements *= map.noise[d];
  }
  return true;
}

/// The index within a noise row of element `i` of an input row.
GRAPH_HOST_DEVICE inline int64_t noiseIndexInRow(const NoiseMap &map,
                                                 int64_t i) {
  int64_t index = 0, stride = 1;
  for (int d = map.rank - 1; d >= 0; --d) {
    int64_t coordinate = i % map.dims[d];
    i /= map.dims[d];
    if (map.noise[d] != 1)
      index += coordinate * stride;
    stride *= map.noise[d];
  }
  return index;
}

} // namespace graph::runtime::dropout

#endif // RUNTIME_CORE_DROPOUTMASK_H
