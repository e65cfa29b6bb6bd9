// SPDX-License-Identifier: Apache-2.0
// Sweeps: several codecs tried on one table in one run, each written to a
// temporary .edo, evaluated and compared, then removed; the tools' --sweep.
//
// Grammar (every tool's --sweep): items separated by ';', each a tier codec
// the tool accepts (edo-sparsify: a registry codec or a sparse spec, whose
// form may be `auto`, or a drop share rows=P%|rows=N|mass=P%|count<N).
#pragma once

#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edo {

// The items of a sweep text; usage error on an empty list or item.
std::vector<std::string> parse_sweep(std::string_view text);

// One file of a sweep: one tier over every row, or tiers cut by frequency
// (kept rows and the dropped rows' fallback).
struct SweepItem {
  std::string label;  // as the table prints it; empty: the first tier's canonical codec
  std::vector<TierSpec> tiers;
  bool baseline = false;  // one of the dense codecs added for comparison
};

struct SweepPoint {
  std::string spec;  // the item's label
  bool baseline = false;
  uint64_t file_bytes = 0;
  double ratio = 0;  // compression_ratio(fp32 bytes, file bytes)
  // Values stored / (rows * dim): a sparse tier's density, K/dim for dims:K and pca:K,
  // 0 for fallback tiers, 1 for other codecs; weighted by the tiers' rows.
  double density = 1;
  double fallback_share = 0;  // share of lookups a fallback tier answers (0 without frequencies)
  double seconds = 0;         // training and encoding (fitting, for hashed tiers) of the file
  EvalResult eval;
};

// Writes `table` once per item with `pack` (its tiers replaced by the
// item's) to a temporary file in `dir`, evaluates it against the table with
// `eval_opt`, and removes it.
std::vector<SweepPoint> run_sweep(io::TableReader& table, const std::vector<SweepItem>& items, const PackOptions& pack,
                                  const EvalOptions& eval_opt, const std::string& dir);

nlohmann::json sweep_json(const std::vector<SweepPoint>& points);
// A table: spec, density, bytes, ratio, the fallback share when a point has
// one, then `metrics` (the names of EvalResult values; "-" where a point lacks one).
std::string sweep_text(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics);

}  // namespace edo
