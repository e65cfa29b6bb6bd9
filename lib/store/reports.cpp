// SPDX-License-Identifier: Apache-2.0
// The tools' reports from computed results (edo/reports.hpp).
#include <edo/report_html.hpp>
#include <edo/reports.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace edo {

std::string front_recall(const std::vector<uint64_t>& ks) {
  const bool has10 = std::find(ks.begin(), ks.end(), uint64_t{10}) != ks.end();
  return fmt::format("recall@{}", has10 ? uint64_t{10} : ks.front());
}

std::vector<bool> pareto_front(const std::vector<double>& by_bytes, bool higher_is_better) {
  std::vector<bool> front;
  double best = higher_is_better ? -HUGE_VAL : HUGE_VAL;
  for (const double v : by_bytes) {
    const bool better = higher_is_better ? v > best : v < best;  // false for NaN
    front.push_back(better);
    if (better) best = v;
  }
  return front;
}

std::vector<bool> pareto_front(const std::vector<const EvalResult*>& by_bytes, const std::string& metric) {
  std::vector<double> values;
  for (const EvalResult* r : by_bytes) values.push_back(r->get(metric).value_or(NAN));
  return pareto_front(values);
}

namespace {

// A metric's cell: 6 significant digits, "-" where the result lacks it.
std::string metric_cell(const EvalResult& r, const std::string& metric) {
  const auto v = r.get(metric);
  return v ? fmt::format("{:.6g}", *v) : std::string("-");
}

}  // namespace

std::string sweep_html(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics,
                       const std::string& title, const std::string& recall_name, double fp32_bytes) {
  HtmlReport page;
  page.title = title;
  page.recall_name = recall_name;
  page.fp32_bytes = fp32_bytes;
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return points[a].file_bytes < points[b].file_bytes; });
  std::vector<const EvalResult*> results;
  for (size_t i : order) results.push_back(&points[i].eval);
  const std::vector<bool> front = pareto_front(results, page.recall_name);
  HtmlReport::Table t{"Items, smallest first", {"item", "file bytes", "ratio"}, {}};
  t.header.insert(t.header.end(), metrics.begin(), metrics.end());
  for (size_t j = 0; j < order.size(); ++j) {
    const SweepPoint& p = points[order[j]];
    page.points.push_back({p.spec, static_cast<double>(p.file_bytes), p.eval.get(page.recall_name).value_or(NAN),
                           p.eval.get("analogy.3cosadd").value_or(NAN), front[j], false});
    t.rows.push_back({p.spec + (front[j] ? " *" : ""), std::to_string(p.file_bytes), fmt::format("{:.3g}", p.ratio)});
    for (const std::string& m : metrics) t.rows.back().push_back(metric_cell(p.eval, m));
  }
  page.tables.push_back(std::move(t));
  return to_html(page);
}

std::string plan_html(const PlanResult& plan, const std::string& title) {
  HtmlReport page;
  page.title = title;
  page.fp32_bytes = static_cast<double>(plan.fp32_bytes);
  const Gate* first = plan.budget.empty() ? nullptr : &plan.budget.front();
  page.recall_name = first ? first->metric : "recall@10";
  const bool higher_better = !first || first->op == GateOp::ge || first->op == GateOp::gt;
  HtmlReport::Table table{"Candidates, in evaluation order", {"tiers", "bytes", "ratio"}, {}};
  for (const auto& g : plan.budget) table.header.push_back(g.metric);
  table.header.push_back("budget");
  std::vector<size_t> by_bytes;
  for (size_t i = 0; i < plan.tried.size(); ++i) {
    const PlanCandidate& c = plan.tried[i];
    std::string tiers;
    for (const auto& t : c.tiers) tiers += (tiers.empty() ? "" : " ") + t.name + ":" + share_text(t) + ":" + t.codec;
    double value = NAN;
    for (const auto& [name, v] : c.metrics)
      if (name == page.recall_name) value = v;
    page.points.push_back({tiers, static_cast<double>(c.bytes), value, NAN, false, static_cast<int>(i) == plan.chosen});
    table.rows.push_back({tiers, std::to_string(c.bytes),
                          fmt::format("{:.3g}", static_cast<double>(plan.fp32_bytes) / static_cast<double>(c.bytes))});
    for (const auto& g : plan.budget) {
      std::string cell = "-";
      for (const auto& [name, v] : c.metrics)
        if (name == g.metric) cell = fmt::format("{:.4g}", v);
      table.rows.back().push_back(cell);
    }
    table.rows.back().push_back(!c.error.empty() ? c.error : c.passed ? "met" : "missed");
    if (c.evaluated && c.error.empty()) by_bytes.push_back(i);
  }
  std::stable_sort(by_bytes.begin(), by_bytes.end(),
                   [&](size_t a, size_t b) { return plan.tried[a].bytes < plan.tried[b].bytes; });
  std::vector<double> values;
  for (size_t i : by_bytes) values.push_back(page.points[i].recall);
  const std::vector<bool> front = pareto_front(values, higher_better);
  for (size_t j = 0; j < by_bytes.size(); ++j) page.points[by_bytes[j]].front = front[j];
  page.tables.push_back(std::move(table));
  return to_html(page);
}

Comparison compare_files_report(std::vector<ComparedFile> files, const std::string& original, uint64_t rows,
                                uint64_t dim, const EvalOptions& eo) {
  Comparison c;
  c.files = std::move(files);
  std::stable_sort(c.files.begin(), c.files.end(), [](const ComparedFile& a, const ComparedFile& b) {
    return a.result.get("bytes_after").value_or(0) < b.result.get("bytes_after").value_or(0);
  });
  c.columns = {"bytes_after", "ratio"};
  for (uint64_t k : eo.ks) c.columns.push_back(fmt::format("recall@{}", k));
  if (!eo.freq.empty())
    for (uint64_t k : eo.ks) c.columns.push_back(fmt::format("w.recall@{}", k));
  c.columns.insert(c.columns.end(), {"cos.mean", "rel_fro"});
  if (!c.files.empty())
    for (const auto& [name, value] : c.files.front().result.metrics())
      if (name.ends_with(".drop") && (name.starts_with("analogy.") || name.starts_with("sim.")))
        c.columns.push_back(name);
  c.front_metric = front_recall(eo.ks);
  std::vector<const EvalResult*> results;
  for (const ComparedFile& f : c.files) results.push_back(&f.result);
  c.on_front = pareto_front(results, c.front_metric);
  c.text = fmt::format("{} ({} x {}, {}): {} files, smallest first (* on the front of bytes against {})\n", original,
                       rows, dim, metric_name(eo.metric), c.files.size(), c.front_metric);
  size_t path_width = 4;
  for (const ComparedFile& f : c.files) path_width = std::max(path_width, f.path.size() + 2);
  c.text += fmt::format("  {:<{}}", "file", path_width);
  for (const std::string& col : c.columns) c.text += fmt::format(" {:>{}}", col, std::max<size_t>(10, col.size()));
  c.text += "\n";
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < c.files.size(); ++i) {
    const ComparedFile& f = c.files[i];
    c.text += fmt::format("  {:<{}}", f.path + (c.on_front[i] ? " *" : ""), path_width);
    for (const std::string& col : c.columns)
      c.text += fmt::format(" {:>{}}", metric_cell(f.result, col), std::max<size_t>(10, col.size()));
    c.text += "\n";
    for (const auto& o : f.outcomes) c.passed = c.passed && o.pass;
    nlohmann::json j = to_json(f.result, f.outcomes);
    j["file"] = f.path;
    j["pareto_front"] = static_cast<bool>(c.on_front[i]);
    list.push_back(std::move(j));
  }
  c.json = {{"original", original}, {"files", list}, {"gates_passed", c.passed}};
  return c;
}

std::string comparison_html(const Comparison& c, const std::string& original) {
  HtmlReport page;
  page.title = fmt::format("edo-eval {}: {} files compared", original, c.files.size());
  page.recall_name = c.front_metric;
  if (!c.files.empty()) {
    page.fp32_bytes = c.files.front().result.get("bytes_before").value_or(0);
    page.fp32_analogy = c.files.front().result.get("analogy.3cosadd.original").value_or(NAN);
  }
  HtmlReport::Table table{"Files, smallest first (* on the front)", {"file"}, {}};
  table.header.insert(table.header.end(), c.columns.begin(), c.columns.end());
  for (size_t i = 0; i < c.files.size(); ++i) {
    const EvalResult& r = c.files[i].result;
    page.points.push_back({c.files[i].path, r.get("bytes_after").value_or(0), r.get(c.front_metric).value_or(NAN),
                           r.get("analogy.3cosadd").value_or(NAN), c.on_front[i], false});
    table.rows.push_back({c.files[i].path + (c.on_front[i] ? " *" : "")});
    for (const std::string& col : c.columns) table.rows.back().push_back(metric_cell(r, col));
  }
  page.tables.push_back(std::move(table));
  return to_html(page);
}

}  // namespace edo
