//===- SplitMix64.h - a small portable random generator ---------*- C++ -*-===//
//
// The data pipeline draws shuffle orders and synthetic examples from
// SplitMix64 (Steele, Lea and Flood, 2014) rather than from <random>: the
// standard distributions differ between standard libraries, and a seed must
// name one order on every machine a job runs on.
//
//===----------------------------------------------------------------------===//

#ifndef RUNTIME_DATA_SPLITMIX64_H
#define RUNTIME_DATA_SPLITMIX64_H

#include <cstdint>

namespace graph::runtime::data {

class SplitMix64 {
public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

  /// Uniform in [0, bound), bound > 0. Lemire's multiply-shift without the
  /// rejection step: the bias is below bound / 2^64, far under what a shuffle
  /// buffer can show.
  uint64_t below(uint64_t bound) {
    return static_cast<uint64_t>(
        (static_cast<unsigned __int128>(next()) * bound) >> 64);
  }

  /// Uniform in [0, 1), 24 random bits (a float's precision).
  float unitFloat() { return static_cast<float>(next() >> 40) * 0x1.0p-24f; }

private:
  uint64_t state_;
};

/// One 64-bit value from two: keys a generator by (seed, epoch) or
/// (seed, example) so that streams for different keys do not overlap.
inline uint64_t mixSeed(uint64_t a, uint64_t b) {
  SplitMix64 g(a ^ SplitMix64(b).next());
  return g.next();
}

} // namespace graph::runtime::data

#endif // RUNTIME_DATA_SPLITMIX64_H
