// SPDX-License-Identifier: Apache-2.0
// Quality gates ("recall@10 >= 0.95", "cos.min > 0.9") checked against an
// EvalResult, and the reports (JSON, Markdown) that show metrics and gates.
#pragma once

#include <edo/eval.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edo {

enum class GateOp : uint8_t { ge, le, gt, lt, eq };
const char* gate_op_text(GateOp op);  // ">=", "<=", ...

struct Gate {
  std::string expression;  // as written, trimmed
  std::string metric;      // e.g. "recall@10", "w.cos.mean"
  GateOp op = GateOp::ge;
  double threshold = 0;
};

// Parses "NAME OP NUMBER" (OP one of >= <= > < ==; spaces optional). NAME is
// letters, digits and _ . @ - + ; NUMBER is a finite decimal or exponent
// literal. Anything else is a usage error naming the expression.
Gate parse_gate(std::string_view text);

// "NAME OP VALUE" cut at its operator (the first of < > = !), each part
// trimmed; op and value empty when there is no operator. Size budgets
// (budget.hpp) read their own values ("bytes<=2G").
struct GateParts {
  std::string_view expression, name, op, value;
};
GateParts split_gate(std::string_view text);

struct GateOutcome {
  Gate gate;
  double value = 0;   // the metric's value
  bool pass = false;  // false when the value is NaN
  // How far the value is on the passing side of the threshold (>= 0 when it
  // passes, the shortfall as a negative number when it fails). For == it is
  // -|value - threshold|.
  double margin = 0;
  // One line for the user: "recall@10 >= 0.95: 0.9312, misses by 0.0188".
  std::string message;
};

// Evaluates a gate. A metric absent from `result` is a usage error listing
// the available names.
GateOutcome check_gate(const Gate& gate, const EvalResult& result);
std::vector<GateOutcome> check_gates(const std::vector<Gate>& gates, const EvalResult& result);
bool all_passed(const std::vector<GateOutcome>& outcomes);

// {"<metric name>": value, ..., "metric": "l2", "gates": [{"expression",
// "metric", "op", "threshold", "value", "pass", "margin"}, ...],
// "gates_passed": bool}. Non-finite numbers are written as null.
nlohmann::json to_json(const EvalResult& result, const std::vector<GateOutcome>& gates = {});
// The metrics grid as a table and, when there are gates, a gate table with pass/fail:
// GitHub-flavoured Markdown for a CI job summary.
std::string to_markdown(const EvalResult& result, const std::vector<GateOutcome>& gates = {});
// The metrics as a grid: a row per metric (its name without the column's
// prefix), a column for the whole table ("all"), the access-weighted figure
// ("weighted", from "w." names) and each of result.groups; cells formatted
// as the reports print them, "" where a metric has no value in a column.
struct MetricsGrid {
  std::vector<std::string> columns;
  std::vector<std::string> rows;
  std::vector<std::vector<std::string>> cells;  // [row][column]
};
MetricsGrid metrics_grid(const EvalResult& result);
// The metrics one a line ("  recall@10              0.9312"), as every tool
// prints them.
std::string metrics_text(const EvalResult& result);
// edo-eval's text report: "ORIGINAL vs COMPRESSED (metric)", the metrics,
// then one "gate ..." line per gate.
std::string to_text(const EvalResult& result, const std::vector<GateOutcome>& gates, const std::string& original,
                    const std::string& compressed);

}  // namespace edo
