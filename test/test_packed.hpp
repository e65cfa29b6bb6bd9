// SPDX-License-Identifier: Apache-2.0
// A small tiered .edo of seeded random rows, for the reader tests.
#pragma once

#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>

#include <string>
#include <vector>

namespace edo::test {

struct Packed {
  TempDir dir;
  uint64_t rows = 600, dim = 12;
  std::string path = dir.file("p.edo");
  std::vector<float> values;  // the table, rows x dim

  // With `ids_by_frequency`, the counts fall with the id (as in a frequency-sorted
  // vocabulary), so each tier is one run of ids; otherwise the tiers interleave.
  // `width` and `height`: the table's dim and rows.
  explicit Packed(const std::vector<std::string>& tiers, bool ids_by_frequency = false, uint64_t width = 12,
                  uint64_t height = 600)
      : rows(height), dim(width), values(rows * dim) {
    Rng rng(1);
    for (auto& v : values) v = static_cast<float>(rng.uniform() - 0.5);
    auto w = io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(values.data(), rows);
    w->commit();
    auto table = io::open_table(dir.file("t.npy"));
    PackOptions opt;
    opt.allow_larger_sparse = true;  // narrow rows: a sparse tier may take more than dense
    for (const std::string& t : tiers) opt.tiers.push_back(parse_tier_spec(t));
    opt.freq.resize(rows);
    for (uint64_t r = 0; r < rows; ++r)
      opt.freq[r] = static_cast<double>(ids_by_frequency ? rows - r : (r * 7919) % rows + 1);
    pack_to_edo(*table, path, opt);
  }
};

}  // namespace edo::test
