// SPDX-License-Identifier: Apache-2.0
#include <edo/random.hpp>

#include <algorithm>
#include <bit>
#include <numeric>
#include <unordered_set>

namespace edo {

uint64_t Rng::below(uint64_t bound) {
  if (bound == 0) return 0;
  for (;;) {
    __extension__ using u128 = unsigned __int128;
    const u128 m = static_cast<u128>(next()) * bound;
    const auto low = static_cast<uint64_t>(m);
    if (low >= bound || low >= (0 - bound) % bound) return static_cast<uint64_t>(m >> 64);
  }
}

std::vector<uint64_t> sample_indices(uint64_t n, uint64_t count, uint64_t seed) {
  std::vector<uint64_t> out;
  if (count >= n) {
    out.resize(n);
    std::iota(out.begin(), out.end(), uint64_t{0});
    return out;
  }
  // Floyd's algorithm: exactly `count` draws. The chosen set is a bitmap of
  // n bits, read back in order, when that takes at most 16 MiB and no more
  // than a hash set of the draws would (2^20 draws took 0.26 s through a hash
  // set, a pruning fit's whole cost), else a hash set of O(count) memory,
  // independent of n; the same draws either way.
  Rng rng(seed);
  if (n <= (uint64_t{1} << 27) && n / 512 <= count) {
    std::vector<uint64_t> bits((n + 63) / 64, 0);
    const auto insert = [&](uint64_t i) {
      const uint64_t w = bits[i / 64], b = uint64_t{1} << (i % 64);
      bits[i / 64] = w | b;
      return (w & b) == 0;
    };
    for (uint64_t j = n - count; j < n; ++j)
      if (!insert(rng.below(j + 1))) insert(j);
    out.reserve(count);
    for (uint64_t w = 0; w < bits.size(); ++w)
      for (uint64_t b = bits[w]; b != 0; b &= b - 1) out.push_back(64 * w + static_cast<uint64_t>(std::countr_zero(b)));
    return out;
  }
  std::unordered_set<uint64_t> chosen;
  chosen.reserve(count * 2);
  for (uint64_t j = n - count; j < n; ++j) {
    const uint64_t t = rng.below(j + 1);
    if (!chosen.insert(t).second) chosen.insert(j);
  }
  out.assign(chosen.begin(), chosen.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace edo
