// JSON and Markdown reports of an evaluation and its gates.
#include <edo/gates.hpp>

#include <fmt/format.h>

#include <cmath>

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
  for (const auto& [name, value] : result.metrics()) j[name] = number(value);
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
  md += "| metric | value |\n| --- | ---: |\n";
  for (const auto& [name, value] : result.metrics()) md += fmt::format("| `{}` | {} |\n", name, format_value(value));
  if (!gates.empty()) {
    md += fmt::format("\n**Gates: {}**\n\n", all_passed(gates) ? "all passed" : "FAILED");
    md += "| gate | value | result | margin |\n| --- | ---: | :---: | ---: |\n";
    for (const auto& o : gates)
      md += fmt::format("| `{}` | {} | {} | {} |\n", o.gate.expression, format_value(o.value),
                        o.pass ? "pass" : "**FAIL**", format_margin(o.margin));
  }
  return md;
}

std::string metrics_text(const EvalResult& result) {
  std::string s;
  for (const auto& [name, value] : result.metrics()) s += fmt::format("  {:<22} {:.6g}\n", name, value);
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
