// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/gates.hpp>

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace edo {

const char* gate_op_text(GateOp op) {
  switch (op) {
    case GateOp::ge:
      return ">=";
    case GateOp::le:
      return "<=";
    case GateOp::gt:
      return ">";
    case GateOp::lt:
      return "<";
    case GateOp::eq:
      return "==";
  }
  return "?";
}

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t");
  return s.substr(first, last - first + 1);
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
         c == '@' || c == '-' || c == '+';
}

[[noreturn]] void bad_gate(std::string_view text, std::string_view why) {
  EDO_USAGE_FAIL("gate '{}': {} (expected NAME OP NUMBER, OP one of >=, <=, >, <, ==; e.g. 'recall@10 >= 0.95')", text,
                 why);
}

}  // namespace

GateParts split_gate(std::string_view text) {
  GateParts p;
  p.expression = trim(text);
  const auto op_pos = p.expression.find_first_of("<>=!");
  p.name = trim(p.expression.substr(0, op_pos));
  if (op_pos == std::string_view::npos) return p;
  const std::string_view rest = p.expression.substr(op_pos);
  const auto op_end = rest.find_first_not_of("<>=!");
  p.op = rest.substr(0, op_end);
  if (op_end != std::string_view::npos) p.value = trim(rest.substr(op_end));
  return p;
}

Gate parse_gate(std::string_view text) {
  const GateParts parts = split_gate(text);
  if (parts.op.empty()) bad_gate(text, "no comparison operator");
  Gate g;
  g.expression = std::string(parts.expression);
  g.metric = std::string(parts.name);
  if (g.metric.empty()) bad_gate(text, "no metric name");
  for (char c : g.metric)
    if (!is_name_char(c)) bad_gate(text, fmt::format("'{}' is not a metric name", g.metric));

  const std::string_view rest = parts.expression.substr(parts.expression.find_first_of("<>=!"));
  if (rest.starts_with(">=")) {
    g.op = GateOp::ge;
  } else if (rest.starts_with("<=")) {
    g.op = GateOp::le;
  } else if (rest.starts_with("==")) {
    g.op = GateOp::eq;
  } else if (rest.starts_with(">")) {
    g.op = GateOp::gt;
  } else if (rest.starts_with("<")) {
    g.op = GateOp::lt;
  } else {
    bad_gate(text, fmt::format("unknown operator at '{}'", rest));
  }
  const std::string_view number = trim(rest.substr(std::string_view(gate_op_text(g.op)).size()));
  if (number.empty()) bad_gate(text, "no number after the operator");
  // from_chars takes no leading '+'; accept it since users write "+0.5".
  const std::string_view digits = number.front() == '+' ? number.substr(1) : number;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), g.threshold);
  if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(g.threshold))
    bad_gate(text, fmt::format("'{}' is not a finite number", number));
  return g;
}

GateOutcome check_gate(const Gate& gate, const EvalResult& result) {
  const auto value = result.get(gate.metric);
  if (!value)
    EDO_USAGE_FAIL("gate '{}': unknown metric '{}' (available: {})", gate.expression, gate.metric, result.names());
  GateOutcome o;
  o.gate = gate;
  o.value = *value;
  const double v = *value, t = gate.threshold;
  switch (gate.op) {
    case GateOp::ge:
      o.pass = v >= t;
      o.margin = v - t;
      break;
    case GateOp::gt:
      o.pass = v > t;
      o.margin = v - t;
      break;
    case GateOp::le:
      o.pass = v <= t;
      o.margin = t - v;
      break;
    case GateOp::lt:
      o.pass = v < t;
      o.margin = t - v;
      break;
    case GateOp::eq:
      o.pass = v == t;
      o.margin = -std::fabs(v - t);
      break;
  }
  if (o.pass)
    o.message = fmt::format("{}: {:.6g}, passes by {:.6g}", gate.expression, v, o.margin);
  else if (std::isnan(v))
    o.message = fmt::format("{}: the value is NaN, which fails every gate", gate.expression);
  else if (o.margin == 0)
    o.message = fmt::format("{}: {:.6g}, fails (equal to the strict bound)", gate.expression, v);
  else
    o.message = fmt::format("{}: {:.6g}, misses by {:.6g}", gate.expression, v, -o.margin);
  return o;
}

std::vector<GateOutcome> check_gates(const std::vector<Gate>& gates, const EvalResult& result) {
  std::vector<GateOutcome> out;
  out.reserve(gates.size());
  for (const Gate& g : gates) out.push_back(check_gate(g, result));
  return out;
}

bool all_passed(const std::vector<GateOutcome>& outcomes) {
  for (const auto& o : outcomes)
    if (!o.pass) return false;
  return true;
}

}  // namespace edo
