#pragma once
// Random numbers for augmentations. The host gives every sample its own generator seeded
// from (pipeline seed, epoch, position in the epoch), so results do not depend on which
// thread ran first: same seed, same output.
#include <cstdint>
#include <random>

namespace yoloflow {

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0) : engine_(seed) {}
  // Uniform in [lo, hi).
  double uniform(double lo = 0.0, double hi = 1.0) {
    return lo + (hi - lo) * std::generate_canonical<double, 53>(engine_);
  }
  // True with probability p.
  bool chance(double p) { return p > 0.0 && uniform() < p; }
  // Uniform integer in [lo, hi] (inclusive).
  std::int64_t integer(std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }
  std::mt19937_64& engine() { return engine_; }

  // SplitMix64 mixing of several values into one seed.
  static std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    std::uint64_t z = a + 0x9E3779B97F4A7C15ULL + (b << 6) + (b >> 2);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace yoloflow
