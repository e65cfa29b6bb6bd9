// SPDX-License-Identifier: Apache-2.0
// Deterministic pseudo-random numbers and seeded sampling. std:: distributions
// differ between standard libraries, so edo draws its own: the same seed gives
// the same sample on every platform, build and thread count.
#pragma once

#include <cstdint>
#include <vector>

namespace edo {

// SplitMix64: tiny, fast, and good enough for sampling (not for cryptography).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, bound) without modulo bias (Lemire's multiply-shift with rejection).
  uint64_t below(uint64_t bound);
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// `count` distinct indices from [0, n), sorted ascending (all of them when count >= n).
std::vector<uint64_t> sample_indices(uint64_t n, uint64_t count, uint64_t seed);

}  // namespace edo
