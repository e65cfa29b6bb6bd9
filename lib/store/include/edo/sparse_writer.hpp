// SPDX-License-Identifier: Apache-2.0
// The writing half of sparse tiers (edo/sparse.hpp has the layout and the
// reader's half): which columns a row keeps, the density rule's fit, stored
// values, and the planner's estimates.
#pragma once

#include <edo/sparse.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edo {

namespace io {
class TableReader;
}

// The columns a row keeps, ascending (the writer's rule, edo_store):
// `threshold` is the rule's magnitude threshold (fitted for density=).
void sparse_select(const SparseSpec& spec, float threshold, const float* row, uint32_t dim, std::vector<uint32_t>& keep,
                   std::vector<uint32_t>& scratch);

// The density rule's fit (edo_store): the magnitude threshold that keeps a
// share `density` of the values of n rows, judged on a seeded sample of them.
float sparse_fit_threshold(double density, const float* x, size_t n, uint32_t dim, uint64_t seed);
// A row's kept values (columns `keep`, ascending) as a sparse tier stores
// them: bytes appended to `values`; for int8/int4 the row's affine pair
// written to params[0..8).
void sparse_store_values(SparseValues v, const float* row, const std::vector<uint32_t>& keep,
                         std::vector<uint8_t>& values, uint8_t* params);
// The row those values decode to (zeros elsewhere), as the reader decodes it.
void sparse_decode_values(SparseValues v, const uint8_t* values, const uint8_t* params,
                          const std::vector<uint32_t>& keep, uint32_t dim, float* out);
// n rows selected, stored and decoded as a sparse tier of `spec` would
// (threshold: the rule's, fitted for density=): the planner's estimate.
void sparse_round_trip(const SparseSpec& spec, float threshold, const float* x, size_t n, uint32_t dim, float* out);

// The share of values `spec` keeps (edo_store): k / dim, the density asked,
// or for a threshold the share measured on up to `sample_rows` rows of
// `table` spread over it.
double sparse_expected_density(const SparseSpec& spec, io::TableReader& table, uint64_t sample_rows);

}  // namespace edo
