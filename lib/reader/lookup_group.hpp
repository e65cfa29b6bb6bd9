// SPDX-License-Identifier: Apache-2.0
// Grouping a block of resolved ids by tier (Reader::lookup): the ids of one
// tier packed to the left, with their batch positions, in batch order.
// Internal to the reader; here so that tests compare the fast path with the
// plain one.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace edo::detail {

// The plain form: (local[k], k) for every k with tier[k] == t, in order.
inline size_t group_tier_reference(const uint32_t* tier, const uint64_t* local, size_t m, uint32_t t,
                                   uint64_t* local_out, uint64_t* position_out) {
  size_t at = 0;
  for (size_t k = 0; k < m; ++k) {
    if (tier[k] != t) continue;
    local_out[at] = local[k];
    position_out[at] = k;
    ++at;
  }
  return at;
}

#ifdef __AVX2__
// For each 4-bit mask of chosen u64 lanes, the u32 lane indices that move
// the chosen lanes to the front, in order.
inline constexpr std::array<std::array<uint32_t, 8>, 16> kLeftPackLanes = [] {
  std::array<std::array<uint32_t, 8>, 16> table{};
  for (uint32_t mask = 0; mask < 16; ++mask) {
    uint32_t out = 0;
    for (uint32_t lane = 0; lane < 4; ++lane) {
      if (!(mask >> lane & 1u)) continue;
      table[mask][2 * out] = 2 * lane;
      table[mask][2 * out + 1] = 2 * lane + 1;
      ++out;
    }
  }
  return table;
}();
#endif

// Same result as group_tier_reference, without a branch per id (tiers
// alternate unpredictably in a batch). It may write up to 4 entries past the
// count it returns: the outputs need that much room.
inline size_t group_tier(const uint32_t* tier, const uint64_t* local, size_t m, uint32_t t, uint64_t* local_out,
                         uint64_t* position_out) {
  size_t k = 0, at = 0;
#ifdef __AVX2__
  const __m128i want = _mm_set1_epi32(static_cast<int>(t));
  __m256i position = _mm256_set_epi64x(3, 2, 1, 0);
  const __m256i four = _mm256_set1_epi64x(4);
  for (; k + 4 <= m; k += 4) {
    const __m128i tiers = _mm_loadu_si128(reinterpret_cast<const __m128i*>(tier + k));
    const auto mask = static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(tiers, want))));
    const __m256i lanes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kLeftPackLanes[mask].data()));
    const __m256i locals = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(local + k));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(local_out + at), _mm256_permutevar8x32_epi32(locals, lanes));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(position_out + at), _mm256_permutevar8x32_epi32(position, lanes));
    at += static_cast<size_t>(std::popcount(mask));
    position = _mm256_add_epi64(position, four);
  }
#endif
  for (; k < m; ++k) {
    local_out[at] = local[k];
    position_out[at] = k;
    at += tier[k] == t;
  }
  return at;
}

}  // namespace edo::detail
