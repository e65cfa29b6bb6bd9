// SPDX-License-Identifier: Apache-2.0
// Internal to lib/store: pack.cpp, plan.cpp, joint_plan.cpp, budget.cpp and table_writer.cpp.
#pragma once

#include <edo/io/container.hpp>
#include <edo/io/table.hpp>

#include <cstdint>
#include <vector>

namespace edo::detail {

// The source digest of the provenance (FORMAT.md 5, "source_fp32_rows_xxh3"):
// the sum, mod 2^64, of XXH3-64 of each row's fp32 bytes seeded with its
// table row number. Sums of row ranges add up, so shards written apart
// compose into the digest of the whole table, whatever the split.
uint64_t rows_digest(const float* x, uint64_t n, uint64_t dim, uint64_t first_row);

// One streaming pass: rows_digest of the table and, when asked,
// every row's L2 norm (the hot-order proxy without frequencies).
struct TablePass {
  uint64_t digest = 0;
  std::vector<double> norms;
};
// The codec that keeps a table's values as its input stores them: fp16 and
// bf16 tables in theirs, any other in fp32 (a size budget the input meets as
// stored is planned so, with no sample: plan_tiers, plan_as_stored).
inline const char* stored_codec(io::DType t) {
  return t == io::DType::f16 ? "fp16" : t == io::DType::bf16 ? "bf16" : "fp32";
}

// The seeded sample a one-tier write trains on (`want` rows of the table,
// row numbers in sample_rows): what --train-only draws, so it trains on the
// same rows a whole-table run would.
std::vector<float> training_sample(io::TableReader& input, uint64_t want, uint64_t seed,
                                   std::vector<uint64_t>& sample_rows);

// The row map's "rowmap/local" section (FORMAT.md 9.2) of `tier_of_row`.
void write_local_indices(io::ContainerWriter& writer, const std::vector<uint8_t>& tier_of_row, size_t ntiers);

TablePass digest_and_norms(io::TableReader& input, bool want_norms, size_t block_bytes, uint64_t first_row = 0);

}  // namespace edo::detail
