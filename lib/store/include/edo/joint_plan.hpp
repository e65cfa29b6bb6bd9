// SPDX-License-Identifier: Apache-2.0
// One size budget planned jointly over a model's tables (edo-pack MODEL
// --budget 'bytes<=2G'; docs/PACK.md, "One budget for a model"): every
// table's tiers chosen so that the model's access-weighted error,
// sum_t s_t E_t, is as small as the bytes allow. s_t is table t's share of
// the model's lookups (its counts' sum over all counts; a table without
// counts counts one lookup a row), times its --table-weight; E_t =
// sum_i f_i ||x_i - y_i||^2 / sum_i f_i ||x_i||^2 over its rows, estimated on
// a seeded sample. The allocation minimises the same sum with each row's
// f_i raised by the cold weight (JointPlanOptions::cold_weight). E_t adds up
// tier by tier, so each table's options (one codec, or a hot slice in a
// more precise codec over the rest; the codecs the codec chooser's
// candidates) are scored from one round trip of the sample per codec,
// reduced to their Pareto front in (bytes, objective), and the bytes go,
// step by step along each front's lower convex hull, where they lower the
// sum most per byte; what is left then goes to the front's points off the
// hull that lower the sum most.
#pragma once

#include <edo/io/table.hpp>
#include <edo/pack.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edo {

struct JointTable {
  std::string name;
  io::TableReader* table = nullptr;
  std::vector<double> freq;  // one count a row, or empty: one lookup a row, rows ordered by norm
  double weight = 1;         // multiplies the table's share in the objective
};

struct JointOption {
  std::vector<TierSpec> tiers;
  uint64_t bytes = 0;    // data bytes: codes, codec state and the id map
  double error = 0;      // E_t on the sample
  double objective = 0;  // the same with each row weighted by its count plus the cold weight's share
};

struct JointTablePlan {
  std::string name;
  uint64_t rows = 0, dim = 0, fp32_bytes = 0;
  double share = 0;                   // of the model's lookups
  double weight = 1;                  // --table-weight
  std::vector<JointOption> frontier;  // the options no other beats in both bytes and objective, cheapest first
  size_t chosen = 0;                  // index into frontier
  // Recall@10 of the packed table, access-weighted by its counts (one lookup
  // a row without), measured on the file written; nullopt until measured.
  std::optional<double> recall;
  // Seconds by step (hot order, sample read, each codec's round trip of the
  // sample, the options): where a plan's time goes (to_json).
  std::vector<std::pair<std::string, double>> seconds;
  const JointOption& choice() const { return frontier[chosen]; }
};

struct JointPlanOptions {
  uint64_t max_bytes = 0;     // the tables' data bytes together
  uint64_t header_bytes = 0;  // what the file takes beside them (for the message when nothing fits)
  uint64_t sample_rows = 4096;
  uint64_t seed = 0;
  // Codecs a tier may use, each scored by one round trip of the sample (a
  // trained codec trained on it first; on tiers of at least 256 rows);
  // empty: the codec chooser's candidates for each table (chooser_candidates).
  std::vector<std::string> codecs;
  std::vector<double> cuts = {1, 2, 5, 10, 20, 30, 40, 50, 60, 80};  // hot slices, percent of rows
  // 0 (the default): the objective is sum_t w_t s_t E_t exactly. Above 0,
  // a recall-oriented objective: each row weighs its count plus cold_weight
  // x its table's mean count (a table without counts: every row alike,
  // whatever this is), since a row's error also costs the queries it is a
  // neighbour of, which its own count does not see (docs/PACK.md, "One
  // budget for a model"). Plans and baselines are compared under it.
  double cold_weight = 0;
  // Called as candidates are scored: (stage, candidates scored, candidates
  // in all), from one thread at a time.
  std::function<void(const std::string&, uint64_t, uint64_t)> progress;
};

struct JointPlan {
  std::vector<JointTablePlan> tables;
  uint64_t max_bytes = 0, bytes = 0;
  double error = 0;      // sum_t weight_t s_t E_t
  double objective = 0;  // the same sum of the options' objective, which the allocation minimises
  double cold_weight = 0;
  bool shares_by_counts = false;  // s_t by counts (every table has them), else by rows
  bool exact = true;              // the allocation is the least objective of the fronts (not thinned)
  double allocate_seconds = 0;
  // The objective and error with every table at the same ratio (its share of
  // the data bytes by its fp32 bytes, the option of least objective under
  // it; its cheapest where none fits, so the sum may pass the cap): the
  // loop a user writes today, for comparison.
  double same_ratio_objective = 0, same_ratio_error = 0;
  uint64_t same_ratio_bytes = 0;
};

// "sum w_t s_t E_t", with the cold weight when one is set: the objective in use.
std::string objective_name(const JointPlan& plan);

// Throws edo::Error (runtime) when even every table's cheapest option is over
// max_bytes, naming that smallest total.
JointPlan plan_joint(const std::vector<JointTable>& tables, const JointPlanOptions& opt);

// Each table's share s_t of the model's lookups: by counts when every table
// has them (`by_counts` set), else by rows (a count file's scale says nothing
// beside a table without one). The joint plan's and the model chooser's rule.
std::vector<double> lookup_shares(const std::vector<JointTable>& tables, bool& by_counts);

// The options no other beats in both bytes and objective, cheapest first:
// a front as replan_joint allocates over.
std::vector<JointOption> pareto_front(std::vector<JointOption> opts);

// A budget the input meets as stored, answered without training: every
// table in the codec that keeps its values exactly (fp16 and bf16 tables in
// theirs, any other in fp32), nullopt when those bytes pass max_bytes.
std::optional<JointPlan> plan_as_stored(const std::vector<JointTable>& tables, uint64_t max_bytes);

// A floor under any plan's data bytes, known before training: each table's
// rows in the candidate of fewest bytes a row (trained state not counted);
// `largest` names the table that takes the most of it. nullopt when a
// candidate named is not a codec (plan_joint says so).
std::optional<uint64_t> smallest_codes_bytes(const std::vector<JointTable>& tables, const JointPlanOptions& opt,
                                             std::string& largest);
// The same frontiers allocated again under another max_bytes (the scoring,
// the costly part, is not repeated); the same error as plan_joint's.
void replan_joint(JointPlan& plan, uint64_t max_bytes, uint64_t header_bytes);

// A table's move to a larger option of its frontier.
struct JointStep {
  std::string table;
  size_t to = 0;  // index into its frontier
  uint64_t more_bytes = 0;
};
// The move that costs the fewest bytes, nullopt when every table has its
// most precise option: what a plan short of its cap could not afford.
std::optional<JointStep> cheapest_step(const JointPlan& plan);

nlohmann::json to_json(const JointPlan& plan);
// A joint plan file (to_json's object, as edo-profile MODEL --plan-config
// writes it): each table's tiers by name. nullopt when the file is a one-table
// plan (a "tiers" array, read_plan_file); runtime error naming `path` when
// it is neither, or names a table twice.
std::optional<std::map<std::string, std::vector<TierSpec>>> read_joint_plan_file(const std::string& path);
std::string to_text(const JointPlan& plan);

}  // namespace edo
