// SPDX-License-Identifier: Apache-2.0
// Reports the tools print and write, made from results the library has
// computed: the Pareto front of bytes against a quality metric, a sweep's
// HTML page, a plan's HTML page and the comparison of several files against
// one original (edo-eval FILE...). Pure functions: they return text or JSON;
// the tools print or write it.
#pragma once

#include <edo/eval.hpp>
#include <edo/gates.hpp>
#include <edo/pack.hpp>
#include <edo/sweep.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edo {

// The recall comparisons rank files by: recall@10 when asked, else the first k.
std::string front_recall(const std::vector<uint64_t>& ks);

// For values in ascending bytes: whether each beats every smaller one (the
// Pareto front of bytes against the value); NaN is never on it.
std::vector<bool> pareto_front(const std::vector<double>& by_bytes, bool higher_is_better = true);
// The same for results in ascending bytes on `metric` (higher is better; absent is never on the front).
std::vector<bool> pareto_front(const std::vector<const EvalResult*>& by_bytes, const std::string& metric);

// A sweep's HTML page: every point on the chart of `recall_name` against
// bytes, and a table of `metrics`, smallest first, '*' marking the front.
std::string sweep_html(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics,
                       const std::string& title, const std::string& recall_name, double fp32_bytes);

// A plan's HTML page (edo-profile --plan --report-html): every candidate
// tried on the chart of the first budget metric against bytes (estimated
// data bytes; the front among the evaluated ones), and as a table.
std::string plan_html(const PlanResult& plan, const std::string& title);

// One file of a comparison against one original, and the comparison: one
// table, smallest first, the front of bytes against `front_metric` marked.
struct ComparedFile {
  std::string path;
  EvalResult result;
  std::vector<GateOutcome> outcomes;
};
struct Comparison {
  std::vector<ComparedFile> files;  // ascending bytes_after
  std::vector<std::string> columns;
  std::string front_metric;
  std::vector<bool> on_front;  // by files
  std::string text;            // the table as edo-eval prints it
  nlohmann::json json;         // {original, files: [metrics, gates, file, pareto_front], gates_passed}
  bool passed = true;          // every gate of every file
};
// `files` in any order; `original`: its path, rows and dim; `eo`: the
// evaluation's options (metric, ks, freq).
Comparison compare_files_report(std::vector<ComparedFile> files, const std::string& original, uint64_t rows,
                                uint64_t dim, const EvalOptions& eo);
// The comparison's HTML page.
std::string comparison_html(const Comparison& c, const std::string& original);

}  // namespace edo
