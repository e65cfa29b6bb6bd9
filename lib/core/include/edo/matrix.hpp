// SPDX-License-Identifier: Apache-2.0
// The compute types shared across layers: metrics, row-major matrix views and
// k-NN results. The reader ranks fallback rows by a Metric, the pq codecs'
// training searches return KnnResults, and evaluation (edo/knn.hpp) searches
// with them; the search itself stays in evaluation.
#pragma once

#include <edo/device.hpp>

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace edo {

enum class Metric : uint8_t { ip, l2, cos };

// "ip", "l2" or "cos"; anything else is a usage error.
Metric parse_metric(std::string_view name);
const char* metric_name(Metric m);

struct KnnOptions {
  Metric metric = Metric::l2;
  uint64_t k = 10;
  // Per query, a row id that must not be returned (the query's own row), or
  // -1. Empty means no exclusions; otherwise one entry per query.
  std::vector<int64_t> exclude;
  // Rows read from a TableReader per block; 0 lets the reader choose.
  uint64_t block_rows = 0;
  // cuda: scores by cuBLAS on the first GPU (an error when there is none);
  // selection stays on the host, so results match the CPU up to float
  // summation order.
  Device device = Device::cpu;
};

// Top-k lists of nq queries, row-major: query q's list is ids[q*k, q*k+k).
struct KnnResult {
  uint64_t nq = 0;
  uint64_t k = 0;
  Metric metric = Metric::l2;
  std::vector<int64_t> ids;   // best first; -1 pads short lists
  std::vector<float> scores;  // see the table above; NaN pads short lists

  std::span<const int64_t> ids_of(uint64_t q) const { return {ids.data() + q * k, k}; }
  std::span<const float> scores_of(uint64_t q) const { return {scores.data() + q * k, k}; }
};

// An in-memory row-major fp32 matrix that the caller owns.
struct MatrixView {
  const float* data = nullptr;
  uint64_t rows = 0;
  uint64_t dim = 0;
};

}  // namespace edo
