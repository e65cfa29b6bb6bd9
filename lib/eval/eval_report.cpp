// SPDX-License-Identifier: Apache-2.0
// JSON and Markdown reports of an evaluation and its gates.
#include <edo/gates.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace edo {

namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// Counts print as integers, everything else with 6 significant digits.
std::string format_value(double v) {
  if (std::isfinite(v) && v == std::trunc(v) && std::fabs(v) < 1e15) return fmt::format("{:.0f}", v);
  return fmt::format("{:.6g}", v);
}

std::string format_margin(double m) { return std::isfinite(m) ? fmt::format("{:+.6g}", m) : "n/a"; }

}  // namespace

nlohmann::json to_json(const EvalResult& result, const std::vector<GateOutcome>& gates) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, value] : result.metrics()) {
    j[name] = number(value);
    if (const size_t at = name.find("r1@"); at != std::string::npos && (at == 0 || name[at - 1] == '.'))
      j[std::string(name).replace(at, 3, kOldR1Name)] = number(value);  // the 0.1 name, for one release
  }
  j["metric"] = metric_name(result.metric);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& o : gates) {
    list.push_back({{"expression", o.gate.expression},
                    {"metric", o.gate.metric},
                    {"op", gate_op_text(o.gate.op)},
                    {"threshold", o.gate.threshold},
                    {"value", number(o.value)},
                    {"pass", o.pass},
                    {"margin", number(o.margin)}});
  }
  j["gates"] = std::move(list);
  j["gates_passed"] = all_passed(gates);
  return j;
}

std::string to_markdown(const EvalResult& result, const std::vector<GateOutcome>& gates) {
  std::string md = fmt::format("### edo evaluation (k-NN metric `{}`)\n\n", metric_name(result.metric));
  const MetricsGrid grid = metrics_grid(result);
  // One column reads "value"; with tiers, weights or buckets, one column each.
  md += "| metric |";
  for (const std::string& c : grid.columns) md += fmt::format(" {} |", grid.columns.size() == 1 ? "value" : c);
  md += "\n| --- |";
  for (size_t c = 0; c < grid.columns.size(); ++c) md += " ---: |";
  md += "\n";
  for (size_t r = 0; r < grid.rows.size(); ++r) {
    md += fmt::format("| `{}` |", grid.rows[r]);
    for (const std::string& v : grid.cells[r]) md += fmt::format(" {} |", v);
    md += "\n";
  }
  if (!gates.empty()) {
    md += fmt::format("\n**Gates: {}**\n\n", all_passed(gates) ? "all passed" : "FAILED");
    md += "| gate | value | result | margin |\n| --- | ---: | :---: | ---: |\n";
    for (const auto& o : gates)
      md += fmt::format("| `{}` | {} | {} | {} |\n", o.gate.expression, format_value(o.value),
                        o.pass ? "pass" : "**FAIL**", format_margin(o.margin));
  }
  return md;
}

MetricsGrid metrics_grid(const EvalResult& result) {
  // One row a metric, one column for the whole table, the access-weighted
  // figure ("w.") and each group ("<group>."), in first-seen order.
  std::vector<std::string> prefixes = {""};
  MetricsGrid grid;
  std::map<std::pair<std::string, std::string>, double> cell;
  const auto column_of = [&](const std::string& name) -> std::string {
    if (name.starts_with("w.")) return "w.";
    for (const std::string& g : result.groups)
      if (name.size() > g.size() + 1 && name.starts_with(g) && name[g.size()] == '.') return g + ".";
    return "";
  };
  for (const auto& [name, value] : result.metrics()) {
    const std::string col = column_of(name), row = name.substr(col.size());
    if (std::find(prefixes.begin(), prefixes.end(), col) == prefixes.end()) prefixes.push_back(col);
    if (std::find(grid.rows.begin(), grid.rows.end(), row) == grid.rows.end()) grid.rows.push_back(row);
    cell[{row, col}] = value;
  }
  const auto rank = [&](const std::string& c) -> size_t {
    if (c.empty()) return 0;
    if (c == "w.") return 1;
    return 2 + static_cast<size_t>(std::find(result.groups.begin(), result.groups.end(), c.substr(0, c.size() - 1)) -
                                   result.groups.begin());
  };
  std::stable_sort(prefixes.begin(), prefixes.end(),
                   [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
  for (const std::string& c : prefixes)
    grid.columns.push_back(c.empty() ? "all" : c == "w." ? "weighted" : c.substr(0, c.size() - 1));
  for (const std::string& r : grid.rows) {
    grid.cells.emplace_back();
    for (const std::string& c : prefixes) {
      const auto it = cell.find({r, c});
      grid.cells.back().push_back(it == cell.end() ? std::string() : format_value(it->second));
    }
  }
  return grid;
}

std::string metrics_text(const EvalResult& result) {
  const MetricsGrid grid = metrics_grid(result);
  size_t name_width = 6;
  for (const std::string& r : grid.rows) name_width = std::max(name_width, r.size());
  std::vector<size_t> width;
  for (size_t c = 0; c < grid.columns.size(); ++c) {
    size_t w = std::max<size_t>(9, grid.columns[c].size());
    for (const auto& row : grid.cells) w = std::max(w, row[c].size());
    width.push_back(w);
  }
  const auto line = [&](const std::string& first, const std::vector<std::string>& texts) {
    std::string l = fmt::format("  {:<{}}", first, name_width);
    for (size_t c = 0; c < texts.size(); ++c) l += fmt::format("  {:>{}}", texts[c], width[c]);
    while (!l.empty() && l.back() == ' ') l.pop_back();
    return l + "\n";
  };
  std::string s = line("metric", grid.columns);
  for (size_t r = 0; r < grid.rows.size(); ++r) s += line(grid.rows[r], grid.cells[r]);
  return s;
}

std::string to_text(const EvalResult& result, const std::vector<GateOutcome>& gates, const std::string& original,
                    const std::string& compressed) {
  std::string s = fmt::format("{} vs {} ({})\n", original, compressed, metric_name(result.metric));
  s += metrics_text(result);
  for (const auto& o : gates) s += fmt::format("  gate {}\n", o.message);
  return s;
}

}  // namespace edo
