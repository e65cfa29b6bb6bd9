// SPDX-License-Identifier: Apache-2.0
// Budgets as --budget takes them (edo-pack, edo-profile --plan): accuracy
// gates ("recall@10>=0.98", gates.hpp) and size budgets, "bytes<=2G" (the
// whole file, every section counted, vocabulary included; K, M, G and T are
// powers of 1024) and "ratio>=8" (the table's fp32 bytes over the file's, as
// every report prints the ratio). Size budgets are never read as weighted
// metrics: counts change which rows are hot, not what a byte is.
// docs/PACK.md, "Budgets in bytes and ratios".
#pragma once

#include <edo/gates.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

enum class SizeBudgetKind : uint8_t { bytes, ratio };

struct SizeBudget {
  SizeBudgetKind kind = SizeBudgetKind::bytes;
  std::string expression;  // as written, trimmed
  uint64_t max_bytes = 0;  // bytes: the largest file allowed
  double min_ratio = 0;    // ratio: the smallest fp32-over-file ratio allowed
  bool strict = false;     // '<' or '>': the bound itself is not allowed
};

struct Budget {
  std::vector<Gate> gates;  // accuracy: every gate must pass
  std::vector<SizeBudget> sizes;
};

// "2G", "512k", "1.5M", "1000": a byte count, K/M/G/T (either case) powers of
// 1024, fractions rounded down. Usage error naming `text` when it is not a
// size of at least one byte below 2^63.
uint64_t parse_size(std::string_view text);

// One --budget text: a size budget when its name is bytes or ratio ("bytes<=2G",
// "bytes<1M", "ratio>=8", "ratio>8"), else an accuracy gate (parse_gate).
// Usage errors: a size budget that is not a cap ("bytes>=1G", "ratio<=4"), a
// ratio not above 0, a malformed size, "w.bytes" / "w.ratio".
void add_budget(Budget& budget, std::string_view text);
Budget parse_budget(const std::vector<std::string>& texts);

// The largest file, vocabulary included, that meets every size budget of a
// table of `fp32_bytes` whose vocabulary section takes `vocab_bytes` (the
// ratio divides by the file less its vocabulary); UINT64_MAX when there is
// no size budget.
uint64_t budget_file_cap(const Budget& budget, uint64_t fp32_bytes, uint64_t vocab_bytes);

// The planner's options for a budget: its gates (under a size alone
// recall@10 >= 0, so that the most accurate plan under the cap wins), and
// under a size budget a cap on the plan's data bytes: the file's cap less
// the headers (measured by packing the table with no rows stored: header,
// manifest, vocabulary) and room for three tiers' manifest entries.
struct BudgetCap {
  uint64_t cap = UINT64_MAX;  // the largest whole file allowed (UINT64_MAX: no size budget)
  uint64_t header_bytes = 0;  // the file with no rows stored
  PackReport probe;           // that file's report
};
BudgetCap apply_budget(io::TableReader& table, const Budget& budget, const PackOptions& pack_opt,
                       PlanOptions& plan_opt);
// Throws edo::Error (runtime, exit 1) when the plan found no candidate under
// the size cap: the cap is below the headers alone or below the cheapest
// plan of the ladder; the message names the smallest reachable size.
void check_budget_reached(io::TableReader& table, const Budget& budget, const BudgetCap& cap, const PlanResult& plan);

// edo-pack TABLE --budget: the planner's choice under the budget, packed.
// With a size budget the plan is searched under the cap less the headers
// (measured by packing the table with no data), then the packed file's
// slack is filled by moving the hottest rows of the coldest codec tier into
// the tier above it (or into a new tier of the ladder's next more precise
// codec, for a plan of one tier) and packing again, until the file is within
// 1% of the cap; `fill` says what was done or why the file stays smaller.
struct BudgetPackReport {
  PackReport pack;              // the file written
  PlanResult plan;              // the search that chose the tiers
  std::vector<TierSpec> tiers;  // as packed: the plan's, filled toward the cap
  uint64_t cap = UINT64_MAX;    // the largest whole file the size budgets allow (UINT64_MAX: none)
  uint64_t file_bytes = 0;      // the whole file, vocabulary included
  uint64_t header_bytes = 0;    // the file with no data: header, manifest, vocabulary
  uint32_t packs = 0;           // whole-table packs written (the header probe not counted)
  std::string fill;             // how the slack was filled, or why the file stays under 99% of the cap
};

// Throws edo::Error (runtime) when no plan fits: a cap below the headers
// alone, or below the cheapest plan, naming the smallest reachable size.
BudgetPackReport pack_to_budget(io::TableReader& table, const std::string& out_path, const Budget& budget,
                                PlanOptions plan_opt, const PackOptions& pack_opt);

nlohmann::json budget_report_json(const BudgetPackReport& rep, const Budget& budget);
std::string budget_report_text(const BudgetPackReport& rep, const Budget& budget);

}  // namespace edo
