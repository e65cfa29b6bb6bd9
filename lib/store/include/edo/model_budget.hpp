// SPDX-License-Identifier: Apache-2.0
// A model under one size budget, planned and written (edo-pack MODEL
// --budget 'bytes<=2G', edo-profile MODEL --plan --budget; docs/PACK.md, "One
// budget for a model"): the joint plan (edo/joint_plan.hpp) scored once,
// written, and allocated again with the headers as the write measured them,
// so the file is within the cap and as near it as the frontiers allow. Both
// tools run the same rounds, so the plan reviewed is the plan packed.
#pragma once

#include <edo/budget.hpp>
#include <edo/device.hpp>
#include <edo/io/model.hpp>
#include <edo/joint_plan.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace edo {

struct ModelBudgetOptions {
  std::map<std::string, std::string> freq_files;  // table name -> counts file
  std::map<std::string, double> weights;          // table name -> --table-weight
  uint64_t seed = 0;
  std::vector<std::string> codecs;  // --plan-codecs; empty: the chooser's candidates
  double cold_weight = 0;           // --cold-weight (JointPlanOptions::cold_weight)
  std::function<void(const std::string&, uint64_t, uint64_t)> progress;  // JointPlanOptions::progress
};

struct ModelBudgetRun {
  JointPlan plan;
  uint64_t cap = 0;      // the budget's file cap
  uint64_t written = 0;  // the bytes of the last model file written with the plan
  // Empty when the file takes at least 99% of the cap; else why it does
  // not: the cheapest further step of any table, and what it would cost.
  std::string short_of_cap;
};

// Writes the model with each table's tiers (by name) and returns the file's
// bytes; `quiet` for a round after the first.
using PlannedModelWrite = std::function<uint64_t(const std::map<std::string, std::vector<TierSpec>>&, bool quiet)>;

// The joint plan under the size budget `budget`, written by `write` once,
// and again (at most twice) while the file is under 99% of the cap, the
// data bytes then the cap less the headers the write measured; a plan that
// overshoots is replaced by the last one that fitted. Runtime error when no
// plan fits (the smallest reachable size named).
ModelBudgetRun plan_model_budget(const io::ModelSelection& model, const Budget& budget, const ModelBudgetOptions& opt,
                                 const PlannedModelWrite& write);

// Each table's recall@10 in the model file `file`, measured as edo-eval
// MODEL FILE --freq-dir measures it (cos, `queries` rows drawn with `seed`):
// w.recall@10 where the table has counts, recall@10 where not.
void measure_model_budget_recall(ModelBudgetRun& run, const io::ModelSelection& model, const std::string& file,
                                 const std::map<std::string, std::string>& freq_files, uint64_t seed, uint64_t queries,
                                 Device device);

// The plan with its budget, cap and the file it made: edo-pack --json's
// joint_plan, and the file edo-profile --plan-config writes for edo-pack --config.
nlohmann::json model_budget_json(const ModelBudgetRun& run, const Budget& budget);
// The plan's table and the line on the cap, for stdout.
std::string model_budget_text(const ModelBudgetRun& run, const Budget& budget);

}  // namespace edo
