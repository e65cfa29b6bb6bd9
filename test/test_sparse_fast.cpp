// SPDX-License-Identifier: Apache-2.0
// The fast paths of sparse tiers against their plain forms: the selection
// (a bitwise nth-largest) against nth_element in magnitude order, the run
// decode (eight values a step) against sparse_value() one at a time, and
// Floyd's sampling through a bitmap against the hash-set form.
#include "test_util.hpp"

#include <edo/float16.hpp>
#include <edo/random.hpp>
#include <edo/sparse_writer.hpp>

#include <algorithm>
#include <cmath>
#include <unordered_set>

namespace {

// The selection as first written: the nonzero columns, the first `count` in
// magnitude order (larger first, ties to the lower column), ascending.
std::vector<uint32_t> select_reference(const edo::SparseSpec& spec, float threshold, const float* row, uint32_t dim) {
  std::vector<uint32_t> nz;
  for (uint32_t j = 0; j < dim; ++j)
    if (row[j] != 0.0f) nz.push_back(j);
  size_t count = nz.size();
  if (spec.rule == edo::SparseRule::per_row_k)
    count = std::min<size_t>(spec.k, nz.size());
  else
    count = static_cast<size_t>(
        std::count_if(nz.begin(), nz.end(), [&](uint32_t j) { return std::fabs(row[j]) >= threshold; }));
  if (spec.values == edo::SparseValues::int4 && count % 2 != 0) count += count < nz.size() ? 1 : -1;
  const auto by_magnitude = [row](uint32_t a, uint32_t b) {
    const float ma = std::fabs(row[a]), mb = std::fabs(row[b]);
    return ma != mb ? ma > mb : a < b;
  };
  std::nth_element(nz.begin(), nz.begin() + static_cast<long>(count), nz.end(), by_magnitude);
  std::vector<uint32_t> keep(nz.begin(), nz.begin() + static_cast<long>(count));
  std::sort(keep.begin(), keep.end());
  return keep;
}

// A row with zeros, ties (values drawn from a few levels) and both signs.
std::vector<float> hard_row(edo::Rng& rng, uint32_t dim, uint32_t levels) {
  std::vector<float> row(dim);
  for (auto& v : row) {
    const uint64_t kind = rng.below(10);
    if (kind == 0)
      v = 0.0f;
    else if (kind < 4)
      v = static_cast<float>(rng.below(levels) + 1) * (rng.below(2) ? 0.25f : -0.25f);
    else
      v = static_cast<float>(rng.uniform() * 2 - 1) * std::ldexp(1.0f, static_cast<int>(rng.below(40)) - 20);
  }
  return row;
}

}  // namespace

TEST_CASE("sparse fast: the selection equals nth_element in magnitude order, ties to the lower column") {
  edo::Rng rng(5);
  std::vector<uint32_t> keep, scratch;
  for (uint32_t dim : {1u, 7u, 8u, 9u, 50u, 128u, 300u, 1000u}) {
    for (uint32_t levels : {1u, 3u, 1000u}) {
      for (int trial = 0; trial < 20; ++trial) {
        const std::vector<float> row = hard_row(rng, dim, levels);
        for (edo::SparseValues v : {edo::SparseValues::f32, edo::SparseValues::int4}) {
          edo::SparseSpec spec;
          spec.values = v;
          spec.rule = edo::SparseRule::per_row_k;
          for (uint32_t k : {0u, 1u, 2u, 3u, dim / 3, dim - 1, dim, dim + 5}) {
            spec.k = k;
            edo::sparse_select(spec, 0.0f, row.data(), dim, keep, scratch);
            CAPTURE(dim);
            CAPTURE(k);
            CAPTURE(levels);
            CHECK(keep == select_reference(spec, 0.0f, row.data(), dim));
          }
          spec.rule = edo::SparseRule::threshold;
          for (float t : {0.0f, 1e-6f, 0.25f, 0.5f, 2.0f}) {
            edo::sparse_select(spec, t, row.data(), dim, keep, scratch);
            CAPTURE(dim);
            CAPTURE(t);
            CHECK(keep == select_reference(spec, t, row.data(), dim));
          }
        }
      }
    }
  }
}

TEST_CASE("sparse fast: runs decode bit for bit as sparse_value, from any offset, in every kind") {
  edo::Rng rng(9);
  std::vector<uint8_t> bytes(4 * 200);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng.below(256));
  // f16 Inf/NaN patterns, which the eight-wide path hands to the scalar one.
  bytes[2 * 17 + 1] = 0x7c, bytes[2 * 40 + 1] = 0xfe, bytes[2 * 41] = 0x01, bytes[2 * 41 + 1] = 0x7c;
  const edo::math::AffineParams p{0.0371f, -1.25f};
  std::vector<float> out(200 + 8), want(200);
  for (edo::SparseValues v : {edo::SparseValues::f32, edo::SparseValues::f16, edo::SparseValues::bf16,
                              edo::SparseValues::int8, edo::SparseValues::int4}) {
    for (uint64_t first : {0u, 2u, 6u, 16u}) {
      for (uint64_t count : {0u, 1u, 7u, 8u, 9u, 31u, 150u}) {
        edo::sparse_decode_run(v, bytes.data(), first, count, p, out.data());
        for (uint64_t i = 0; i < count; ++i) {
          const float w = edo::sparse_value(v, bytes.data(), first + i, p);
          const int kind = static_cast<int>(v);
          CAPTURE(kind);
          CAPTURE(first);
          CAPTURE(count);
          CAPTURE(i);
          uint32_t a, b;
          std::memcpy(&a, &out[i], 4), std::memcpy(&b, &w, 4);
          CHECK(a == b);
        }
      }
    }
  }
}

TEST_CASE("sparse fast: Floyd's sample through a bitmap draws the same set as through a hash set") {
  for (uint64_t n : {10u, 1000u, 100000u}) {
    for (uint64_t count : {1u, 9u, 500u}) {
      if (count >= n) continue;
      for (uint64_t seed : {1u, 77u}) {
        std::unordered_set<uint64_t> chosen;
        edo::Rng rng(seed);
        for (uint64_t j = n - count; j < n; ++j)
          if (!chosen.insert(rng.below(j + 1)).second) chosen.insert(j);
        std::vector<uint64_t> want(chosen.begin(), chosen.end());
        std::sort(want.begin(), want.end());
        CAPTURE(n);
        CAPTURE(count);
        CHECK(edo::sample_indices(n, count, seed) == want);
      }
    }
  }
}
