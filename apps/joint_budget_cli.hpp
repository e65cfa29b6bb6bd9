// A model under one size budget on the command line (edo-pack MODEL
// --budget, edo-profile MODEL --plan --budget; docs/PACK.md, "One budget for
// a model"): the table weights, the joint plan made again after a write with
// the headers as measured, and the plan file edo-pack --config packs. Both
// tools run the same rounds, so the plan reviewed is the plan packed.
#pragma once

#include "model_cli.hpp"

#include <edo/budget.hpp>
#include <edo/eval.hpp>
#include <edo/joint_plan.hpp>
#include <edo/model_evaluate.hpp>
#include <edo/pack.hpp>

#include <charconv>
#include <cmath>
#include <functional>

namespace edo::cli {

// --table-weight NAME=W, each naming a chosen table, W > 0.
inline std::map<std::string, double> parse_table_weights(const io::ModelSelection& model, const std::string& input,
                                                         const std::vector<std::string>& texts) {
  std::map<std::string, double> weights;
  for (const std::string& w : texts) {
    const auto eq = w.rfind('=');
    const std::string name = eq == std::string::npos ? "" : w.substr(0, eq);
    double v = 0;
    const char* end = w.c_str() + w.size();
    const auto r = eq == std::string::npos ? std::from_chars_result{end, std::errc::invalid_argument}
                                           : std::from_chars(w.c_str() + eq + 1, end, v);
    if (r.ec != std::errc() || r.ptr != end || !(v > 0) || !std::isfinite(v))
      EDO_USAGE_FAIL("--table-weight '{}': expected NAME=W with W a number above 0", w);
    if (std::none_of(model.tables.begin(), model.tables.end(), [&](const auto& t) { return t.name == name; }))
      EDO_USAGE_FAIL("--table-weight '{}': {} is not a chosen table of {}", w, name, input);
    weights[name] = v;
  }
  return weights;
}

struct JointBudgetRun {
  JointPlan plan;
  uint64_t cap = 0;      // the budget's file cap
  uint64_t written = 0;  // the bytes of the last model file written with the plan
};

// Writes the model with each table's tiers (by name) and returns the file's bytes; `quiet` for a second round.
using PlannedModelWrite = std::function<uint64_t(const std::map<std::string, std::vector<TierSpec>>&, bool quiet)>;

// The joint plan under `budget`, written by `write` once, and again (once)
// when the file is under 99% of the cap, planned with the headers as they
// were measured; a second plan that overshoots is replaced by the first.
inline JointBudgetRun plan_model_budget(const io::ModelSelection& model, const Budget& budget,
                                        const std::map<std::string, std::string>& freq_files,
                                        const std::map<std::string, double>& weights, uint64_t seed,
                                        const std::vector<std::string>& codecs, const PlannedModelWrite& write) {
  std::vector<std::unique_ptr<io::TableReader>> readers;
  std::vector<JointTable> tables;
  uint64_t fp32 = 0;
  for (const io::ModelTable& t : model.tables) {
    readers.push_back(open_any_table(t.spec, io::Verify::all));
    tables.push_back({t.name, readers.back().get(), model_table_freq(freq_files, t),
                      weights.count(t.name) ? weights.at(t.name) : 1.0});
    fp32 += t.rows * t.dim * 4;
  }
  JointBudgetRun run;
  run.cap = budget_file_cap(budget, fp32, 0);
  // Room for each table's header and manifest and the model's directory (about 600 bytes a table measured,
  // more with tiers and counts' names): the plan's data bytes are the cap less this.
  const uint64_t overhead = 4096 + 2048 * model.tables.size();
  JointPlanOptions jopt;
  jopt.max_bytes = run.cap > overhead ? run.cap - overhead : 0;  // 0: plan_joint names the smallest reachable size
  jopt.header_bytes = overhead;
  jopt.seed = seed;
  jopt.codecs = codecs;
  const uint64_t margin = 64 + 320 * model.tables.size();  // manifests grow with a table's second tier
  for (int round = 0; round < 3; ++round) {
    run.plan = plan_joint(tables, jopt);
    std::map<std::string, std::vector<TierSpec>> planned;
    for (const JointTablePlan& tp : run.plan.tables) planned[tp.name] = tp.choice().tiers;
    run.written = write(planned, round > 0);
    if (round == 2) break;
    if (run.written > run.cap) {
      if (round == 0) break;
      jopt.max_bytes = run.cap > overhead ? run.cap - overhead : 0;  // the second plan overshot: write the first again
      round = 1;
      continue;
    }
    const uint64_t headers = run.written > run.plan.bytes ? run.written - run.plan.bytes : 0;
    if (round == 1 || static_cast<double>(run.written) >= 0.99 * static_cast<double>(run.cap) ||
        headers + margin >= run.cap || run.cap - headers - margin <= jopt.max_bytes)
      break;
    jopt.max_bytes = run.cap - headers - margin;
  }
  return run;
}

// Each table's recall@10 in the model file `file` the plan wrote, measured as
// edo-eval MODEL FILE --freq-dir measures it (cos, `queries` rows drawn with
// `seed`): w.recall@10 where the table has counts, recall@10 (the same, one
// lookup a row) where not.
inline void measure_joint_recall(JointBudgetRun& run, const io::ModelSelection& model, const std::string& file,
                                 const std::map<std::string, std::string>& freq_files, uint64_t seed, uint64_t queries,
                                 Device device) {
  EvalOptions eo;
  eo.metric = Metric::cos;
  eo.ks = {10};
  eo.queries = queries;
  eo.seed = seed;
  eo.device = device;
  const ModelEval e = evaluate_model(model, file, freq_files, eo, {});
  for (JointTablePlan& tp : run.plan.tables)
    for (const ModelTableEval& t : e.tables)
      if (t.name == tp.name) tp.recall = t.result.get("w.recall@10").value_or(t.result.at("recall@10"));
}

// The plan with its budget, cap and the file it made: edo-pack --json's
// joint_plan, and the file edo-profile --plan-config writes for edo-pack --config.
inline nlohmann::json joint_budget_json(const JointBudgetRun& run, const Budget& budget) {
  nlohmann::json j = to_json(run.plan);
  j["budget"] = budget.sizes.front().expression;
  j["cap_bytes"] = run.cap;
  j["file_bytes"] = run.written;
  j["cap_used"] = static_cast<double>(run.written) / static_cast<double>(run.cap);
  return j;
}

}  // namespace edo::cli
