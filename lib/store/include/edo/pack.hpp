// SPDX-License-Identifier: Apache-2.0
// Tiered .edo files (edo-pack) and the planner that chooses their tiers
// under an accuracy budget (edo-profile --plan). docs/PACK.md is the guide.
//
// Tier spec grammar (flags and plan files):
//   tier      := NAME ':' share ':' codec [':' residency]
//   share     := 'rows=' NUMBER '%' | 'rows=' COUNT | 'mass=' NUMBER '%' | 'rest'
//   codec     := a codec spec (codec.hpp) | 'default'
//   residency := 'gpu' | 'host' | 'disk'          (default: host)
// The codec runs from the third field to the end, minus a last field that is
// exactly a residency word; codec specs use ':' inside a stage and ',' between
// stages, and no codec parameter is a bare gpu/host/disk, so
// "cold:rest:pq:m=16,nbits=8:disk" is tier cold, codec "pq:m=16,nbits=8".
//
// Rows are ordered hottest first (by access count with frequencies, by row
// L2 norm without: a documented proxy), ties by row id. Tiers take
// consecutive slices of that order in the order given; a `rest` tier takes
// what the others leave, the tiers after it being laid out from the cold end.
#pragma once

#include <edo/device.hpp>
#include <edo/gates.hpp>
#include <edo/io/table.hpp>
#include <edo/table_writer.hpp>
#include <edo/tier.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

enum class ShareKind : uint8_t { rows_percent, rows_count, mass_percent, rest };

struct TierSpec {
  std::string name;
  ShareKind share = ShareKind::rest;
  double value = 0;   // percent (rows_percent, mass_percent) or row count
  std::string codec;  // codec spec, or a tier kind's word ("default": tier.hpp)
  Residency residency = Residency::host;
  bool operator==(const TierSpec&) const = default;
};

// Usage error naming the spec on malformed text.
TierSpec parse_tier_spec(std::string_view text);
std::string format_tier_spec(const TierSpec& tier);  // parses back to the same TierSpec
std::string share_text(const TierSpec& tier);        // "rows=5%", "mass=80%", "rows=1000", "rest"
// Whole-plan checks against a table of `rows` x `dim`: names unique and
// valid, at most one rest, codecs buildable at dim (usage errors naming the tier).
void check_tier_specs(const std::vector<TierSpec>& tiers, uint64_t rows, uint64_t dim);

// Plan files: {"tiers": [{"name", "share", "codec", "residency"}, ...], ...}
// (extra keys are kept by edo-profile for the reader's information and ignored here).
nlohmann::json plan_to_json(const std::vector<TierSpec>& tiers);
std::vector<TierSpec> plan_from_json(const nlohmann::json& plan, const std::string& path);
std::vector<TierSpec> read_plan_file(const std::string& path);

// Row ids, hottest first: by `key` descending, ties by id ascending.
std::vector<uint64_t> hot_order(const std::vector<double>& key);

// Where each tier's slice of the hot order begins and ends: tier t takes
// order[cuts[t] .. cuts[t+1]). `weights` are the access counts by row id (or
// empty: then mass shares are an error). Throws a usage error when shares
// overflow the table or, without a rest tier, do not cover it.
std::vector<uint64_t> tier_cuts(const std::vector<TierSpec>& tiers, const std::vector<uint64_t>& order,
                                const std::vector<double>& weights);
// The tier of each row id under those cuts (at most 256 tiers).
std::vector<uint8_t> tier_of_rows(const std::vector<uint64_t>& order, const std::vector<uint64_t>& cuts);

struct PackOptions : WriteOptions {
  PackOptions() { tool = "edo-pack"; }
  std::vector<TierSpec> tiers;
  std::vector<double> freq;  // one count per row, or empty (row-norm order)
  // A shard (WriteOptions::shard set): rows [first_row, first_row +
  // shard_rows) of `input` are written; the layout (hot order, cuts, masses)
  // is the whole table's, so it needs `freq`.
  uint64_t shard_rows = 0;
};

// What write_table() reports, with the order rows were ranked by and each
// tier's spec as given.
struct PackReport : TableWriteReport {
  std::string order;            // "frequency" or "norm"
  std::vector<TierSpec> specs;  // specs[t] for tiers[t]
};

// Writes a tiered .edo through write_table() (temporary name, renamed on
// success). One read pass for the order and the source digest, then one pass
// per tier over the blocks that hold its rows; memory is a block, the
// per-row order and tier ids (9 bytes a row) and one training sample.
PackReport pack_to_edo(io::TableReader& input, const std::string& out_path, const PackOptions& opt);
// Usage error unless a pack of these tiers at `dim` can be written in
// shards (docs/SCALE.md): no group tier, and every tier that trains or fits
// (ShardNeed sample or tier) given its state in opt.trained, which each
// tier's builder then checks, before any row is read.
void check_shardable(const PackOptions& opt, uint64_t dim);

// edo-pack --train-only: every tier that trains, trained on the sample a
// whole-table pack draws, written as a state file (write_trained_layout()).
void pack_trained_state(io::TableReader& input, const std::string& out_path, const PackOptions& opt);

// edo-pack's report (lib/store/write_report.cpp): the JSON object (sizes,
// bytes by residency and a "tiers" array) and the text lines after the
// "INPUT -> OUTPUT" line, each ending in a newline.
nlohmann::json pack_report_json(const PackReport& rep);
std::string pack_report_text(const PackReport& rep);
// Adds bytes_gpu, bytes_host, bytes_disk and gpu_fraction (of the fp32 bytes)
// to an evaluation of the packed file.
void add_residency_metrics(EvalResult& result, const PackReport& rep);

// edo-hash --export: the first hashed tier of the .edo at `edo_path` as npy
// files in `dir` (created if missing; buckets.npy and weights.npy, or
// quotient.npy and remainder.npy) and hash.json, which says how row i is
// formed from them. Returns that description.
nlohmann::json export_hash_tables(const std::string& edo_path, const std::string& dir);

// ---- planning under a budget ----------------------------------------------------

struct PlanOptions {
  // Every gate must pass. With frequencies, a metric without the "w." prefix
  // is read as its access-weighted form (recall@10 -> w.recall@10).
  std::vector<Gate> budget;
  std::vector<double> freq;
  uint64_t max_bytes = 0;        // 0: no cap. With a cap the most accurate plan under it wins
  uint64_t gpu_bytes = 0;        // 0: no cap on the gpu-resident bytes
  uint64_t sample_rows = 10000;  // seeded sample the candidates are evaluated on
  uint64_t queries = 1000;
  Metric metric = Metric::cos;
  uint64_t seed = 0;
  uint64_t train_rows = 65536;
  // Codecs a tier may use, ranked by bytes a row; empty: fp16, int8, int4,
  // int2 and pq/opq settings when the registry has them. Also sparse specs
  // ("csr:density=0.3,values=int8", bytes estimated from the sample's
  // density), hashed and group tiers ("hash:buckets=B,k=2",
  // "group:clusters=C,residual=int4": fitted to the sample) and the dropped
  // rows' fallbacks ("default", "zero", "centroids:C", "nearest[:cos|l2]"),
  // which are only ever the coldest of two or three tiers (docs/PACK.md,
  // "Planning").
  std::vector<std::string> codecs;
  // Hot-order boundaries (percent of rows) tiers may start or end at.
  std::vector<double> cuts = {1, 2, 5, 10, 20, 30, 40};
  std::function<void(uint64_t, uint64_t)> progress;  // (candidates evaluated, candidates)
  // The chosen plan is packed on the whole table and evaluated there before
  // it is returned; when it falls short, the sample's budget is tightened by
  // the shortfall and the search runs again, at most this many rounds in all
  // (docs/PACK.md, "Planning"). false: the sample's word is taken (tests).
  bool check_on_table = true;
  uint32_t max_check_rounds = 4;
  // A size alone (apply_budget): when max_bytes holds the table as its file
  // stores it (fp32, or fp16 / bf16 for tables of those), that is the plan,
  // chosen before any sample is drawn (PlanResult::as_stored).
  bool size_only = false;
  // A budget's recall@K with K at or beyond the rows it is scored on is a
  // usage error (every row would count as found); false: allowed, as for a
  // model's tables under one floor (a 3-row table's recall@10 is 1).
  bool refuse_k_beyond_rows = true;
  std::function<void(const std::string&)> note;  // one line a tightening round; may be empty
};

// A chosen plan packed and evaluated on the whole table.
struct PlanCheck {
  std::vector<TierSpec> tiers;
  std::vector<std::pair<std::string, double>> planned;   // the budget's metrics on the sample
  std::vector<std::pair<std::string, double>> measured;  // and on the whole table, packed
  bool passed = false;
};

struct PlanCandidate {
  std::vector<TierSpec> tiers;
  uint64_t bytes = 0;  // data bytes of the whole table (sections)
  uint64_t gpu_bytes = 0;
  bool evaluated = false;
  bool passed = false;
  std::string error;                                    // a codec that could not be trained on its tier, etc.
  std::vector<std::pair<std::string, double>> metrics;  // the budget's metrics
  // A near-tie under a byte cap: the first metric again with more queries
  // (PlanResult::rescored_queries), which chose among the near-ties.
  std::optional<double> rescored;
};

// A ladder entry as the search ranked it (edo-pack --budget fills a plan's
// slack with the next more precise codec of the ladder).
struct PlanLadderEntry {
  std::string spec;
  bool codec = false;  // a codec (TierKind::codec), not a sparse, shared or fallback kind
  uint64_t code_size = 0, state_bytes = 0;
  double sample_error = 0;  // ||X - decoded X|| / ||X|| over the sample (codecs)
};

struct PlanResult {
  std::string order;  // "frequency" or "norm"
  uint64_t rows = 0, dim = 0, fp32_bytes = 0, sample_rows = 0;
  std::vector<Gate> budget;             // as applied (w. names with frequencies)
  uint64_t candidates = 0;              // generated
  uint64_t over_cap = 0;                // excluded by --max-bytes / --gpu-bytes
  uint64_t smallest_bytes = 0;          // data bytes of the cheapest candidate generated, caps aside
  std::vector<PlanLadderEntry> ladder;  // the entries plans were made of, most precise first
  uint64_t dominated = 0;               // skipped: no more precise than one that failed (under a cap: evaluated)
  std::vector<PlanCandidate> tried;     // evaluated, in evaluation order (the last search's)
  int chosen = -1;                      // index into tried, -1 when none passed
  std::vector<Gate> search_budget;      // what the last search asked of the sample
  std::vector<PlanCheck> checks;        // each search's choice measured on the whole table
  bool unmet_on_table = false;          // a plan passed on the sample, none on the whole table
  bool as_stored = false;               // the cap holds the table as stored: that plan, no search
  uint64_t rescored_queries = 0;        // the queries near-ties were evaluated again with (0: none)
};

PlanResult plan_tiers(io::TableReader& table, const PlanOptions& opt);
// The chosen plan as an edo-pack --config file (plan_to_json plus the
// budget, bytes and metrics it was chosen on). Throws when none was chosen.
nlohmann::json plan_config(const PlanResult& plan);
nlohmann::json to_json(const PlanResult& plan);
std::string to_text(const PlanResult& plan);

}  // namespace edo
