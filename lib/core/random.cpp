#include <edo/random.hpp>

#include <algorithm>
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
  // Floyd's algorithm: exactly `count` draws, memory O(count), independent of n.
  Rng rng(seed);
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
