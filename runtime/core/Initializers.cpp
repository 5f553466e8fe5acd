//===- Initializers.cpp - Keras initializers from Philox ------------------===//

#include "runtime/core/Initializers.h"

#include <algorithm>
#include <cmath>

namespace graph::runtime {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c,
                                   std::array<uint32_t, 2> k) {
  constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint64_t p0 = static_cast<uint64_t>(kM0) * c[0];
    uint64_t p1 = static_cast<uint64_t>(kM1) * c[2];
    uint32_t hi0 = static_cast<uint32_t>(p0 >> 32),
             lo0 = static_cast<uint32_t>(p0);
    uint32_t hi1 = static_cast<uint32_t>(p1 >> 32),
             lo1 = static_cast<uint32_t>(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

uint64_t hashName(const std::string &name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : name) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  return h;
}

InitSpec InitSpec::fromPlan(const plan::Initializer &init) {
  InitSpec s;
  s.kind = init.kind();
  s.mean = init.mean();
  s.stddev = init.stddev();
  s.minval = init.minval();
  s.maxval = init.maxval();
  s.value = init.value();
  s.seed = init.seed();
  s.hasSeed = init.has_seed();
  return s;
}

void computeFans(const std::vector<int64_t> &shape, double &fanIn,
                 double &fanOut) {
  if (shape.empty()) {
    fanIn = fanOut = 1;
  } else if (shape.size() == 1) {
    fanIn = fanOut = static_cast<double>(shape[0]);
  } else if (shape.size() == 2) {
    fanIn = static_cast<double>(shape[0]);
    fanOut = static_cast<double>(shape[1]);
  } else {
    double receptive = 1;
    for (size_t i = 0; i + 2 < shape.size(); ++i)
      receptive *= static_cast<double>(shape[i]);
    fanIn = static_cast<double>(shape[shape.size() - 2]) * receptive;
    fanOut = static_cast<double>(shape.back()) * receptive;
  }
}

namespace {

/// Keras' correction: the stddev of a unit normal truncated at +-2.
constexpr double kTruncatedStddev = 0.87962566103423978;

/// The draws of one element: Philox at counter (index, attempt).
class ElementStream {
public:
  ElementStream(uint64_t key, uint64_t index)
      : key_{static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32)},
        index_(index) {}

  /// Uniform in [0, 1) with 53 random bits.
  double uniform() {
    uint64_t bits = (static_cast<uint64_t>(take()) << 32) | take();
    return static_cast<double>(bits >> 11) * 0x1.0p-53;
  }
  /// A unit normal (Box-Muller).
  double normal() {
    double u1 = 1.0 - uniform(); // (0, 1]: log is finite
    double u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  }
  /// A unit normal redrawn until it lies in [-2, 2], as
  /// tf.random.truncated_normal does.
  double truncatedNormal() {
    for (;;) {
      double z = normal();
      if (std::fabs(z) <= 2.0)
        return z;
    }
  }

private:
  uint32_t take() {
    if (used_ == 4) {
      block_ = philox4x32({static_cast<uint32_t>(index_),
                           static_cast<uint32_t>(index_ >> 32), attempt_, 0},
                          key_);
      ++attempt_;
      used_ = 0;
    }
    return block_[used_++];
  }

  std::array<uint32_t, 2> key_;
  uint64_t index_;
  uint32_t attempt_ = 0;
  std::array<uint32_t, 4> block_{};
  int used_ = 4;
};

} // namespace

Status initializeVariable(const std::string &name,
                          const std::vector<int64_t> &shape,
                          const InitSpec &init, uint64_t seed, float *out) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return Status::error("variable '" + name + "': negative dimension");
    n *= d;
  }
  // The key: the name, then the seed, each through a SplitMix64 finalizer so
  // that near names and near seeds give unrelated keys.
  auto mix = [](uint64_t z) {
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t useSeed = init.hasSeed ? static_cast<uint64_t>(init.seed) : seed;
  uint64_t key = mix(mix(hashName(name)) ^ useSeed);

  double fanIn = 1, fanOut = 1;
  computeFans(shape, fanIn, fanOut);
  auto fill = [&](auto draw) {
    for (int64_t i = 0; i < n; ++i) {
      ElementStream s(key, static_cast<uint64_t>(i));
      out[i] = static_cast<float>(draw(s));
    }
  };
  auto uniformIn = [&](double limit) {
    fill([limit](ElementStream &s) {
      return (2.0 * s.uniform() - 1.0) * limit;
    });
  };
  auto truncatedWith = [&](double stddev) {
    fill([stddev](ElementStream &s) {
      return s.truncatedNormal() * stddev / kTruncatedStddev;
    });
  };
  double fanAvg = std::max(1.0, (fanIn + fanOut) / 2.0);
  fanIn = std::max(1.0, fanIn);

  switch (init.kind) {
  case plan::InitKind::zeros:
    std::fill(out, out + n, 0.0f);
    return Status::ok();
  case plan::InitKind::ones:
    std::fill(out, out + n, 1.0f);
    return Status::ok();
  case plan::InitKind::constant:
    std::fill(out, out + n, static_cast<float>(init.value));
    return Status::ok();
  case plan::InitKind::random_normal:
    fill(
        [&](ElementStream &s) { return init.mean + init.stddev * s.normal(); });
    return Status::ok();
  case plan::InitKind::random_uniform:
    fill([&](ElementStream &s) {
      return init.minval + (init.maxval - init.minval) * s.uniform();
    });
    return Status::ok();
  case plan::InitKind::truncated_normal:
    fill([&](ElementStream &s) {
      return init.mean + init.stddev * s.truncatedNormal();
    });
    return Status::ok();
  // VarianceScaling: scale / fan, uniform with limit sqrt(3 * variance) or
  // a truncated normal with stddev sqrt(variance).
  case plan::InitKind::glorot_uniform:
    uniformIn(std::sqrt(3.0 / fanAvg));
    return Status::ok();
  case plan::InitKind::glorot_normal:
    truncatedWith(std::sqrt(1.0 / fanAvg));
    return Status::ok();
  case plan::InitKind::he_uniform:
    uniformIn(std::sqrt(6.0 / fanIn));
    return Status::ok();
  case plan::InitKind::he_normal:
    truncatedWith(std::sqrt(2.0 / fanIn));
    return Status::ok();
  case plan::InitKind::lecun_uniform:
    uniformIn(std::sqrt(3.0 / fanIn));
    return Status::ok();
  case plan::InitKind::lecun_normal:
    truncatedWith(std::sqrt(1.0 / fanIn));
    return Status::ok();
  }
  return Status::error("variable '" + name + "': unknown initializer kind " +
                       std::to_string(static_cast<int>(init.kind)));
}

} // namespace graph::runtime
