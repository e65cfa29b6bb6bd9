// SPDX-License-Identifier: Apache-2.0
// The recommender-table proxies of evaluate() (docs/EVAL.md, "Recommender
// proxies"): per-bucket errors by access frequency, pooled bags, dot-product
// fidelity and lookup shares. Internal to edo_eval: evaluate() feeds it the
// same blocks it streams for everything else.
#pragma once

#include <edo/eval.hpp>

#include <cstdint>
#include <vector>

namespace edo::detail {

// The highest-ranked `keep` values of a stream under `less` (a min-heap of
// the best kept), for nearest-rank percentiles of the worst rows without
// holding every row.
class WorstValues {
 public:
  WorstValues() = default;
  explicit WorstValues(uint64_t keep) : keep_(keep) {}
  // Higher values rank worse; NaN ranks worst of all.
  void add(double v);
  // The `rank`-th worst value (1-based, rank <= keep), NaN when fewer were added.
  double worst(uint64_t rank) const;

 private:
  uint64_t keep_ = 0;
  std::vector<double> heap_;  // the kept values, the least bad on top
};

class RecProxies {
 public:
  RecProxies(uint64_t rows, uint64_t dim, const EvalOptions& opts);
  // Rows [begin, begin + n): x the original, y the decoded, `errors` their row_error()s.
  void add(uint64_t begin, uint64_t n, const float* x, const float* y, const RowError* errors);
  void report(EvalResult& r) const;

  // The bucket names, in order, and the share of lookups at which each ends.
  static constexpr const char* kBucketNames[3] = {"head", "torso", "tail"};
  static constexpr double kBucketEnds[2] = {0.5, 0.9};

 private:
  struct Bucket {
    RowErrorStats weighted;  // freq-weighted sums
    WorstValues low_cos, high_rel;
    uint64_t rows = 0;
    double lookups = 0;
  };
  struct Draw {
    uint64_t row;
    uint32_t slot;  // bag index, or pair slot (2 * pair + side)
  };

  uint64_t dim_;
  const EvalOptions& opts_;
  double freq_sum_ = 0;
  std::vector<uint8_t> bucket_of_;  // per row, with frequencies
  std::vector<Bucket> buckets_;
  std::vector<double> group_lookups_;
  std::vector<Draw> bag_draws_, pair_draws_;  // sorted by row
  size_t bag_next_ = 0, pair_next_ = 0;
  std::vector<double> bag_x_, bag_y_;   // bags x dim sums
  std::vector<float> pair_x_, pair_y_;  // 2 * pairs x dim rows
};

}  // namespace edo::detail
