// SPDX-License-Identifier: Apache-2.0
// A model evaluated table by table: shares of lookups, the whole model's
// metrics, gates per table and on the whole, and the reports.
#include <edo/error.hpp>
#include <edo/model_eval.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace edo {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < 20; ++i) s += (i ? ", " : "") + names[i];
  return names.size() > 20 ? s + ", ..." : s;
}

bool ends_with_metric(const std::string& name, std::string_view metric) {
  return name == metric ||
         (name.size() > metric.size() && name.ends_with(metric) && name[name.size() - metric.size() - 1] == '.');
}

enum class Fold : uint8_t { sum, min, max, weighted, ratio, bits, skip };

Fold fold_of(const std::string& name) {
  if (name == "dim") return Fold::skip;
  if (name == "ratio") return Fold::ratio;
  if (name == "bits_per_value") return Fold::bits;
  if (name == "rows" || name == "queries" || name == "w.queries" || name == "bytes_before" || name == "bytes_after" ||
      name.ends_with(".rows"))
    return Fold::sum;
  if (ends_with_metric(name, "cos.min")) return Fold::min;
  if (ends_with_metric(name, "max_abs")) return Fold::max;
  return Fold::weighted;
}

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

std::string cell(const EvalResult& r, const std::string& name, const char* format) {
  const auto v = r.get(name);
  return v ? fmt::format(fmt::runtime(format), *v) : "-";
}

}  // namespace

std::vector<ModelGate> parse_model_gates(const std::vector<std::string>& texts,
                                         const std::vector<std::string>& tables) {
  std::vector<ModelGate> out;
  for (const std::string& text : texts) {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos) {
      out.push_back({"", parse_gate(text)});
      continue;
    }
    const std::string table(trim(std::string_view(text).substr(0, colon)));
    if (std::find(tables.begin(), tables.end(), table) == tables.end())
      EDO_USAGE_FAIL("gate '{}': '{}' is not a table of the model (its tables: {})", text, table, listed(tables));
    out.push_back({table, parse_gate(std::string_view(text).substr(colon + 1))});
  }
  return out;
}

bool ModelEval::passed() const {
  if (!all_passed(outcomes)) return false;
  return std::all_of(tables.begin(), tables.end(), [](const ModelTableEval& t) { return all_passed(t.outcomes); });
}

void set_lookup_shares(std::vector<ModelTableEval>& tables) {
  double total = 0;
  for (const ModelTableEval& t : tables) total += t.lookups;
  if (!(total > 0)) EDO_FAIL("the model's tables have no lookups at all: their shares are undefined");
  for (ModelTableEval& t : tables) t.share = t.lookups / total;
}

EvalResult combine_model_metrics(const std::vector<ModelTableEval>& tables, uint64_t model_bytes) {
  EvalResult out;
  if (tables.empty()) return out;
  out.metric = tables.front().result.metric;
  double before = 0, after = 0, values = 0;
  for (const ModelTableEval& t : tables) {
    before += t.result.get("bytes_before").value_or(0);
    after += t.result.get("bytes_after").value_or(0);
    values += static_cast<double>(t.rows) * static_cast<double>(t.dim);
  }
  if (model_bytes > 0) after = static_cast<double>(model_bytes);
  for (const auto& [name, first] : tables.front().result.metrics()) {
    const Fold fold = fold_of(name);
    if (fold == Fold::skip) continue;
    if (!std::all_of(tables.begin(), tables.end(), [&](const ModelTableEval& t) { return t.result.has(name); }))
      continue;
    double v = fold == Fold::min   ? std::numeric_limits<double>::infinity()
               : fold == Fold::max ? -std::numeric_limits<double>::infinity()
                                   : 0.0;
    for (const ModelTableEval& t : tables) {
      const double x = *t.result.get(name);
      const bool nan = std::isnan(x) || std::isnan(v);
      if (fold == Fold::sum)
        v += x;
      else if (fold == Fold::weighted)
        v += t.share * x;
      else if (fold == Fold::min)
        v = nan ? NAN : std::min(v, x);
      else if (fold == Fold::max)
        v = nan ? NAN : std::max(v, x);
    }
    if (name == "bytes_after") v = after;
    if (fold == Fold::ratio) v = after > 0 ? before / after : NAN;
    if (fold == Fold::bits) v = values > 0 ? after * 8 / values : NAN;
    out.set(name, v);
  }
  return out;
}

void check_model_gates(ModelEval& eval, const std::vector<ModelGate>& gates) {
  for (const ModelGate& g : gates) {
    if (g.table.empty()) {
      eval.outcomes.push_back(check_gate(g.gate, eval.model));
      continue;
    }
    const auto t = std::find_if(eval.tables.begin(), eval.tables.end(),
                                [&](const ModelTableEval& x) { return x.name == g.table; });
    if (t == eval.tables.end()) EDO_USAGE_FAIL("gate on table '{}': the table was not evaluated", g.table);
    GateOutcome o = check_gate(g.gate, t->result);
    o.message = g.table + ":" + o.message;
    o.gate.expression = g.table + ":" + o.gate.expression;
    t->outcomes.push_back(std::move(o));
  }
}

nlohmann::json model_eval_json(const ModelEval& eval) {
  nlohmann::json tables = nlohmann::json::object(), shares = nlohmann::json::object(),
                 lookups = nlohmann::json::object();
  for (const ModelTableEval& t : eval.tables) {
    tables[t.name] = to_json(t.result, t.outcomes);
    shares[t.name] = number(t.share);
    lookups[t.name] = number(t.lookups);
  }
  return {{"original", eval.original},
          {"compressed", eval.compressed},
          {"metric", metric_name(eval.model.metric)},
          {"tables", std::move(tables)},
          {"model", to_json(eval.model, eval.outcomes)},
          {"shares", std::move(shares)},
          {"lookups", std::move(lookups)},
          {"gates_passed", eval.passed()}};
}

namespace {

// The columns of the text and Markdown tables: header and one row a table, the model last.
std::vector<std::vector<std::string>> model_rows(const ModelEval& eval, const std::string& recall_name) {
  const bool weighted = eval.model.has("w." + recall_name);
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"table", "rows", "dim", "share", "bytes", "ratio", recall_name});
  if (weighted) rows.back().push_back("w." + recall_name);
  rows.back().insert(rows.back().end(), {"cos.mean", "rel_fro"});
  auto add = [&](const std::string& name, const EvalResult& r, const std::string& dim, double share) {
    rows.push_back({name, cell(r, "rows", "{:.0f}"), dim, fmt::format("{:.4f}", share),
                    cell(r, "bytes_after", "{:.0f}"), cell(r, "ratio", "{:.3g}"), cell(r, recall_name, "{:.4f}")});
    if (weighted) rows.back().push_back(cell(r, "w." + recall_name, "{:.4f}"));
    rows.back().insert(rows.back().end(), {cell(r, "cos.mean", "{:.6f}"), cell(r, "rel_fro", "{:.4g}")});
  };
  for (const ModelTableEval& t : eval.tables) add(t.name, t.result, std::to_string(t.dim), t.share);
  add("model", eval.model, "", 1.0);
  return rows;
}

std::vector<const GateOutcome*> every_outcome(const ModelEval& eval) {
  std::vector<const GateOutcome*> out;
  for (const ModelTableEval& t : eval.tables)
    for (const GateOutcome& o : t.outcomes) out.push_back(&o);
  for (const GateOutcome& o : eval.outcomes) out.push_back(&o);
  return out;
}

}  // namespace

std::string model_eval_text(const ModelEval& eval, const std::string& recall_name) {
  std::string s = fmt::format("{} vs {} ({}): {} tables\n", eval.original, eval.compressed,
                              metric_name(eval.model.metric), eval.tables.size());
  const auto rows = model_rows(eval, recall_name);
  std::vector<size_t> width(rows.front().size(), 0);
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  for (const auto& r : rows) {
    s += " ";
    for (size_t c = 0; c < r.size(); ++c)
      s += c == 0 ? fmt::format(" {:<{}}", r[c], width[c]) : fmt::format("  {:>{}}", r[c], width[c]);
    s += "\n";
  }
  for (const GateOutcome* o : every_outcome(eval)) s += fmt::format("  gate {}\n", o->message);
  return s;
}

std::string model_eval_markdown(const ModelEval& eval, const std::string& recall_name) {
  std::string md = fmt::format("### edo evaluation of a model, {} tables (k-NN metric `{}`)\n\n", eval.tables.size(),
                               metric_name(eval.model.metric));
  const auto rows = model_rows(eval, recall_name);
  for (size_t r = 0; r < rows.size(); ++r) {
    md += "|";
    for (const std::string& c : rows[r]) md += " " + (r > 0 && &c == &rows[r][0] ? "`" + c + "`" : c) + " |";
    md += "\n";
    if (r == 0) {
      md += "| --- |";
      for (size_t c = 1; c < rows[r].size(); ++c) md += " ---: |";
      md += "\n";
    }
  }
  const auto outcomes = every_outcome(eval);
  if (outcomes.empty()) return md;
  md += fmt::format("\n**Gates: {}**\n\n| gate | value | result | margin |\n| --- | ---: | --- | ---: |\n",
                    eval.passed() ? "all passed" : "FAILED");
  for (const GateOutcome* o : outcomes)
    md += fmt::format("| `{}` | {:.6g} | {} | {} |\n", o->gate.expression, o->value, o->pass ? "pass" : "**FAIL**",
                      std::isfinite(o->margin) ? fmt::format("{:+.6g}", o->margin) : "n/a");
  return md;
}

std::vector<ReportModelTable> report_model_tables(const ModelEval& eval, const std::string& recall_name) {
  std::vector<ReportModelTable> out;
  auto add = [&](const std::string& name, const EvalResult& r, double share) {
    out.push_back({name, static_cast<uint64_t>(r.get("rows").value_or(0)), r.get("bytes_before").value_or(NAN),
                   r.get("bytes_after").value_or(NAN), r.get("ratio").value_or(NAN), r.get(recall_name).value_or(NAN),
                   share});
  };
  for (const ModelTableEval& t : eval.tables) add(t.name, t.result, t.share);
  add("model", eval.model, 1.0);
  return out;
}

}  // namespace edo
