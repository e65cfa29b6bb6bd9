// SPDX-License-Identifier: Apache-2.0
// The rounds of a model under one size budget (edo/model_budget.hpp).
#include <edo/model_budget.hpp>

#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/freq.hpp>
#include <edo/model_evaluate.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <memory>

namespace edo {

namespace {

// Room for each table's header and manifest and the model's directory
// (about 600 bytes a table measured, more with tiers and counts' names):
// the first plan's data bytes are the cap less this.
uint64_t header_allowance(size_t tables) { return 4096 + 2048 * tables; }

// What the written file's headers may grow by when a table moves to a
// second tier (its manifest names the tier and its codec).
uint64_t header_margin(size_t tables) { return 64 + 320 * tables; }

std::string explain_short_of_cap(const ModelBudgetRun& run, uint64_t margin, uint64_t overshot_data_bytes) {
  const uint64_t left = run.cap - run.written;
  const std::optional<JointStep> step = cheapest_step(run.plan);
  if (!step)
    return fmt::format("every table already has the most precise option of its frontier ({} bytes left unused)", left);
  std::string why = fmt::format(
      "the cheapest further step, table {} to its frontier's option {}, takes {} more bytes of data where {} are left",
      step->table, step->to, step->more_bytes, left);
  if (step->more_bytes <= left)
    why += fmt::format(" and {} of those are kept for the manifests, which grow when a table takes a second tier",
                       std::min(margin, left));
  if (overshot_data_bytes)
    why +=
        fmt::format("; a plan of {} data bytes overshot the cap once written (its headers grew)", overshot_data_bytes);
  return why;
}

}  // namespace

ModelBudgetRun plan_model_budget(const io::ModelSelection& model, const Budget& budget, const ModelBudgetOptions& opt,
                                 const PlannedModelWrite& write) {
  std::vector<std::unique_ptr<io::TableReader>> readers;
  std::vector<JointTable> tables;
  uint64_t fp32 = 0;
  for (const io::ModelTable& t : model.tables) {
    readers.push_back(open_any_table(t.spec, io::Verify::all));
    const auto freq = opt.freq_files.find(t.name);
    const auto weight = opt.weights.find(t.name);
    tables.push_back({t.name, readers.back().get(),
                      freq == opt.freq_files.end() ? std::vector<double>{} : io::read_frequencies(freq->second, t.rows),
                      weight == opt.weights.end() ? 1.0 : weight->second});
    fp32 += t.rows * t.dim * 4;
  }
  ModelBudgetRun run;
  run.cap = budget_file_cap(budget, fp32, 0);
  const uint64_t allowance = header_allowance(model.tables.size()), margin = header_margin(model.tables.size());
  JointPlanOptions jopt;
  jopt.max_bytes = run.cap > allowance ? run.cap - allowance : 0;  // 0: plan_joint names the smallest reachable size
  jopt.header_bytes = allowance;
  jopt.seed = opt.seed;
  jopt.codecs = opt.codecs;
  jopt.cold_weight = opt.cold_weight;
  jopt.progress = opt.progress;
  // Budgets answered before any training: one the tables meet as stored, and
  // one under the headers or the fewest bytes any codec takes.
  std::string largest;
  const std::optional<uint64_t> floor = smallest_codes_bytes(tables, jopt, largest);
  if (run.cap <= allowance || (floor && *floor > jopt.max_bytes))
    EDO_FAIL(
        "{}: budget {} allows {} bytes: the tables' codes take at least {} bytes in their most compact codecs, "
        "beside about {} of headers: the smallest model file the planner can make is about bytes<={} (ratio {:.3g}); "
        "the largest part is table {}",
        model.path, budget.sizes.front().expression, run.cap, floor.value_or(0), allowance,
        floor.value_or(0) + allowance, static_cast<double>(fp32) / static_cast<double>(floor.value_or(0) + allowance),
        largest);
  if (std::optional<JointPlan> stored = plan_as_stored(tables, jopt.max_bytes))
    run.plan = std::move(*stored);
  else
    run.plan = plan_joint(tables, jopt);
  const auto tiers_of = [](const JointPlan& plan) {
    std::map<std::string, std::vector<TierSpec>> planned;
    for (const JointTablePlan& tp : plan.tables) planned[tp.name] = tp.choice().tiers;
    return planned;
  };
  run.written = write(tiers_of(run.plan), false);
  if (run.written > run.cap) return run;  // the caller refuses it, naming the overshoot
  // Up to two more rounds with the headers as written, each kept only if it fits.
  uint64_t overshot = 0;
  for (int round = 1; round < 3; ++round) {
    const uint64_t headers = run.written > run.plan.bytes ? run.written - run.plan.bytes : 0;
    if (static_cast<double>(run.written) >= 0.99 * static_cast<double>(run.cap) || headers + margin >= run.cap) break;
    const uint64_t data = run.cap - headers - margin;
    if (data <= run.plan.max_bytes) break;
    JointPlan next = run.plan;
    replan_joint(next, data, headers + margin);
    if (next.bytes == run.plan.bytes) break;  // no table could take a larger option
    const uint64_t written = write(tiers_of(next), true);
    if (written > run.cap) {
      overshot = next.bytes;
      run.written = write(tiers_of(run.plan), true);  // the last plan that fitted, again
      break;
    }
    run.plan = std::move(next);
    run.written = written;
  }
  if (static_cast<double>(run.written) < 0.99 * static_cast<double>(run.cap))
    run.short_of_cap = explain_short_of_cap(run, margin, overshot);
  return run;
}

void measure_model_budget_recall(ModelBudgetRun& run, const io::ModelSelection& model, const std::string& file,
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

nlohmann::json model_budget_json(const ModelBudgetRun& run, const Budget& budget) {
  nlohmann::json j = to_json(run.plan);
  j["budget"] = budget.sizes.front().expression;
  j["cap_bytes"] = run.cap;
  j["file_bytes"] = run.written;
  j["cap_used"] = static_cast<double>(run.written) / static_cast<double>(run.cap);
  if (!run.short_of_cap.empty()) j["short_of_cap"] = run.short_of_cap;
  return j;
}

std::string model_budget_text(const ModelBudgetRun& run, const Budget& budget) {
  std::string out =
      fmt::format("  budget {}: the file {} bytes of the {} allowed ({:.2f}%)\n", budget.sizes.front().expression,
                  run.written, run.cap, 100.0 * static_cast<double>(run.written) / static_cast<double>(run.cap));
  if (!run.short_of_cap.empty()) out += fmt::format("  under 99% of the cap: {}\n", run.short_of_cap);
  return out;
}

}  // namespace edo
