// SPDX-License-Identifier: Apache-2.0
// Gate parsing and checking, and the JSON / Markdown reports.
#include "test_util.hpp"

#include <edo/gates.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace edo;

namespace {

std::string usage_error(std::string_view text) {
  try {
    (void)parse_gate(text);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    return e.what();
  }
  FAIL("expected a usage error for '" << std::string(text) << "'");
  return {};
}

EvalResult sample_result() {
  EvalResult r;
  r.metric = Metric::cos;
  r.set("queries", 1000);
  r.set("recall@10", 0.93125);
  r.set("1-recall@10", 0.99);
  r.set("cos.min", 0.8);
  r.set("ratio", 4);
  r.set("accuracy_drop", 0.01);
  r.set("w.recall@10", 0.97);
  return r;
}

}  // namespace

TEST_CASE("gates: parse every operator, with or without spaces") {
  struct Case {
    const char* text;
    const char* metric;
    GateOp op;
    double threshold;
  };
  const Case cases[] = {
      {"recall@10>=0.95", "recall@10", GateOp::ge, 0.95},
      {"  1-recall@10 > 0.5 ", "1-recall@10", GateOp::gt, 0.5},
      {"cos.min<=1e-3", "cos.min", GateOp::le, 1e-3},
      {"ratio == 4", "ratio", GateOp::eq, 4},
      {"w.recall@10 < 1", "w.recall@10", GateOp::lt, 1},
      {"accuracy_drop <= +0.02", "accuracy_drop", GateOp::le, 0.02},
      {"recall_drop@10 <= -.5", "recall_drop@10", GateOp::le, -0.5},
      {"\trecall@100\t>=\t0.9", "recall@100", GateOp::ge, 0.9},
  };
  for (const Case& c : cases) {
    CAPTURE(c.text);
    const Gate g = parse_gate(c.text);
    CHECK(g.metric == c.metric);
    CHECK(g.op == c.op);
    CHECK(g.threshold == c.threshold);
  }
  CHECK(parse_gate("  ratio == 4 ").expression == "ratio == 4");
}

TEST_CASE("gates: bad syntax is a usage error naming the expression") {
  CHECK(usage_error("recall@10").find("gate 'recall@10': no comparison operator") != std::string::npos);
  CHECK(usage_error("recall@10 = 0.9").find("unknown operator") != std::string::npos);
  CHECK(usage_error("recall@10 => 0.9").find("unknown operator") != std::string::npos);
  CHECK(usage_error("recall@10 != 0.9").find("unknown operator") != std::string::npos);
  CHECK(usage_error(">= 0.9").find("no metric name") != std::string::npos);
  CHECK(usage_error("recall@10 >= ").find("no number") != std::string::npos);
  CHECK(usage_error("recall@10 >= abc").find("'abc' is not a finite number") != std::string::npos);
  CHECK(usage_error("recall@10 >= 0.9x").find("is not a finite number") != std::string::npos);
  CHECK(usage_error("recall@10 >= 0.9 0.8").find("is not a finite number") != std::string::npos);
  CHECK(usage_error("recall@10 >= nan").find("is not a finite number") != std::string::npos);
  CHECK(usage_error("recall@10 >= inf").find("is not a finite number") != std::string::npos);
  CHECK(usage_error("recall@10 >= 1e999").find("is not a finite number") != std::string::npos);
  CHECK(usage_error("recall @10 >= 1").find("'recall @10' is not a metric name") != std::string::npos);
  CHECK(usage_error("").find("expected NAME OP NUMBER") != std::string::npos);
}

TEST_CASE("gates: pass, fail with the shortfall, margins") {
  const EvalResult r = sample_result();
  const GateOutcome pass = check_gate(parse_gate("recall@10 >= 0.9"), r);
  CHECK(pass.pass);
  CHECK(pass.value == 0.93125);
  CHECK(pass.margin == doctest::Approx(0.03125));
  const GateOutcome fail = check_gate(parse_gate("recall@10 >= 0.95"), r);
  CHECK_FALSE(fail.pass);
  CHECK(fail.margin == doctest::Approx(-0.01875));
  CHECK(fail.message == "recall@10 >= 0.95: 0.93125, misses by 0.01875");
  CHECK(check_gate(parse_gate("accuracy_drop <= 0.02"), r).pass);
  const GateOutcome le_fail = check_gate(parse_gate("accuracy_drop <= 0.005"), r);
  CHECK_FALSE(le_fail.pass);
  CHECK(le_fail.margin == doctest::Approx(-0.005));
  CHECK(check_gate(parse_gate("ratio == 4"), r).pass);
  CHECK(check_gate(parse_gate("ratio == 4"), r).margin == 0.0);
  CHECK(check_gate(parse_gate("ratio == 3"), r).margin == -1.0);
  CHECK_FALSE(check_gate(parse_gate("ratio > 4"), r).pass);
  CHECK(check_gate(parse_gate("ratio > 4"), r).message.find("equal to the strict bound") != std::string::npos);
  CHECK_FALSE(check_gate(parse_gate("cos.min < 0.8"), r).pass);
  CHECK(check_gate(parse_gate("cos.min < 0.81"), r).pass);
  const auto all = check_gates({parse_gate("w.recall@10 >= 0.95"), parse_gate("recall@10 >= 0.95")}, r);
  REQUIRE(all.size() == 2);
  CHECK(all[0].pass);
  CHECK_FALSE(all[1].pass);
  CHECK_FALSE(all_passed(all));
  CHECK(all_passed({all[0]}));
}

TEST_CASE("gates: NaN fails every comparison; unknown metrics list the names") {
  EvalResult r = sample_result();
  r.set("cos.min", std::numeric_limits<double>::quiet_NaN());
  for (const char* g : {"cos.min >= 0", "cos.min <= 0", "cos.min > 0", "cos.min < 0", "cos.min == 0"}) {
    const GateOutcome o = check_gate(parse_gate(g), r);
    CHECK_FALSE(o.pass);
    CHECK(o.message.find("NaN") != std::string::npos);
  }
  try {
    (void)check_gate(parse_gate("recall@5 >= 0.9"), r);
    FAIL("expected a usage error");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    CHECK(std::string(e.what()) ==
          "gate 'recall@5 >= 0.9': unknown metric 'recall@5' (available: queries, recall@10, 1-recall@10, cos.min, "
          "ratio, accuracy_drop, w.recall@10)");
  }
}

TEST_CASE("report: JSON has every metric, the gates and nulls for non-finite values") {
  EvalResult r = sample_result();
  r.set("bits_per_value", 8);
  r.set("max_abs", std::numeric_limits<double>::infinity());
  const auto gates = check_gates({parse_gate("recall@10 >= 0.95"), parse_gate("ratio >= 3.5")}, r);
  const nlohmann::json j = to_json(r, gates);
  CHECK(j["recall@10"].get<double>() == 0.93125);
  CHECK(j["bits_per_value"].get<double>() == 8);
  CHECK(j["max_abs"].is_null());
  CHECK(j["metric"] == "cos");
  CHECK(j["gates_passed"] == false);
  REQUIRE(j["gates"].size() == 2);
  CHECK(j["gates"][0]["expression"] == "recall@10 >= 0.95");
  CHECK(j["gates"][0]["metric"] == "recall@10");
  CHECK(j["gates"][0]["op"] == ">=");
  CHECK(j["gates"][0]["threshold"].get<double>() == 0.95);
  CHECK(j["gates"][0]["value"].get<double>() == 0.93125);
  CHECK(j["gates"][0]["pass"] == false);
  CHECK(j["gates"][0]["margin"].get<double>() == doctest::Approx(-0.01875));
  CHECK(j["gates"][1]["pass"] == true);
  // The JSON reparses (no NaN/Inf literals leak out).
  CHECK(nlohmann::json::parse(j.dump()) == j);
  const nlohmann::json none = to_json(r);
  CHECK(none["gates"].empty());
  CHECK(none["gates_passed"] == true);
}

TEST_CASE("report: Markdown tables for a CI summary") {
  const EvalResult r = sample_result();
  const auto gates = check_gates({parse_gate("recall@10 >= 0.95"), parse_gate("ratio >= 3.5")}, r);
  const std::string md = to_markdown(r, gates);
  // The grid of the text report: "w." names in the weighted column.
  CHECK(md.find("| metric | all | weighted |") != std::string::npos);
  CHECK(md.find("| `recall@10` | 0.93125 | 0.97 |") != std::string::npos);
  CHECK(md.find("| `queries` | 1000 |  |") != std::string::npos);
  CHECK(md.find("**Gates: FAILED**") != std::string::npos);
  CHECK(md.find("| `recall@10 >= 0.95` | 0.93125 | **FAIL** | -0.01875 |") != std::string::npos);
  CHECK(md.find("| `ratio >= 3.5` | 4 | pass | +0.5 |") != std::string::npos);
  const std::string plain = to_markdown(r);
  CHECK(plain.find("Gates") == std::string::npos);
  EvalResult one;
  one.set("recall@10", 0.5);
  CHECK(to_markdown(one).find("| metric | value |\n| --- | ---: |\n| `recall@10` | 0.5 |") != std::string::npos);
}

TEST_CASE("report: the text report is one table, a column for all rows, the weighted figure and each group") {
  EvalResult r;
  r.groups = {"hot", "cold"};
  r.set("rows", 100);
  r.set("recall@10", 0.9);
  r.set("hot.rows", 10);
  r.set("hot.recall@10", 0.95);
  r.set("cold.recall@10", 0.85);
  r.set("w.recall@10", 0.93);
  r.set("ratio", 4.5);
  r.set("coldest.x", 1);  // not a group: a row of its own
  const std::string t = metrics_text(r);
  const auto line_of = [&](const std::string& start) {
    const size_t at = t.find("\n  " + start + " ");
    REQUIRE(at != std::string::npos);
    return t.substr(at + 1, t.find('\n', at + 1) - at - 1);
  };
  const std::string head = t.substr(0, t.find('\n'));
  CHECK(head.find("all") < head.find("weighted"));
  CHECK(head.find("weighted") < head.find("hot"));
  CHECK(head.find("hot") < head.find("cold"));
  const std::string recall = line_of("recall@10");
  CHECK(recall.find("0.9") < recall.find("0.93"));
  CHECK(recall.find("0.93") < recall.find("0.95"));
  CHECK(recall.find("0.95") < recall.find("0.85"));
  CHECK(line_of("rows").find("10") != std::string::npos);
  CHECK(line_of("coldest.x").find("1") != std::string::npos);
  CHECK(t.find("\n  hot.") == std::string::npos);
  CHECK(std::count(t.begin(), t.end(), '\n') == 5);  // the header and four rows
}
