// SPDX-License-Identifier: Apache-2.0
// A model evaluated table by table (edo-eval MODEL model.edo): each table's
// metrics, the whole model's (each metric weighted by the tables' shares of
// lookups), gates per table and on the whole, and the reports. Definitions:
// docs/EVAL.md, "Models".
#pragma once

#include <edo/eval.hpp>
#include <edo/gates.hpp>
#include <edo/report_html.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edo {

// A gate on one table of a model ("emb.words.weight:recall@10>=0.95") or,
// with `table` empty, on the whole model ("recall@10>=0.95").
struct ModelGate {
  std::string table;
  Gate gate;
};

// Parses gates against the model's `tables`: the text is split at its last
// ':' when what precedes it is one of `tables` (exact, byte for byte); a
// prefix that names no table is a usage error listing them.
std::vector<ModelGate> parse_model_gates(const std::vector<std::string>& texts, const std::vector<std::string>& tables);

struct ModelTableEval {
  std::string name;
  uint64_t rows = 0, dim = 0;
  bool counted = false;  // lookups came from counts (else one a row)
  double lookups = 0;    // sum of the table's counts, or its rows
  double share = 0;      // lookups / every table's lookups
  EvalResult result;
  std::vector<GateOutcome> outcomes;
};

struct ModelEval {
  std::string original, compressed;
  std::vector<ModelTableEval> tables;
  // The whole model (combine_model_metrics) and its gates.
  EvalResult model;
  std::vector<GateOutcome> outcomes;
  bool passed() const;
};

// Sets each table's share from its lookups (a table without lookups at all
// gets 0; every table 0 is an error).
void set_lookup_shares(std::vector<ModelTableEval>& tables);

// The whole model's metrics from its tables' (those every table has, in the
// first table's order): rows, queries, w.queries, bytes_before, bytes_after
// and every "*.rows" summed; ratio and bits_per_value from the sums (with
// `model_bytes` > 0, the model file's bytes stand for bytes_after); "*cos.min"
// the lowest and "*max_abs" the highest over the tables; dim left out; every
// other metric the tables' values weighted by their shares.
EvalResult combine_model_metrics(const std::vector<ModelTableEval>& tables, uint64_t model_bytes = 0);

// Checks each gate on its table (or the whole model); a gate's table must be
// among `eval.tables`.
void check_model_gates(ModelEval& eval, const std::vector<ModelGate>& gates);

// {"original", "compressed", "metric", "tables": {NAME: to_json(...)},
//  "model": to_json(model, gates on the whole), "shares": {NAME: share},
//  "lookups": {NAME: lookups}, "gates_passed"}.
nlohmann::json model_eval_json(const ModelEval& eval);
// One line a table, then the "model" line: rows, dim, share, bytes, ratio,
// `recall_name` (and its w. form when every table has it), cos.mean,
// rel_fro; then one "gate" line a gate.
std::string model_eval_text(const ModelEval& eval, const std::string& recall_name);
// The Markdown report: the same table, then the gates.
std::string model_eval_markdown(const ModelEval& eval, const std::string& recall_name);
// The HTML report's table-by-table rows (HtmlReport::model_tables).
std::vector<ReportModelTable> report_model_tables(const ModelEval& eval, const std::string& recall_name);

}  // namespace edo
