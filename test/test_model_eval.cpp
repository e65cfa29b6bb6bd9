// SPDX-License-Identifier: Apache-2.0
// A model's evaluation: gates on tables and on the whole, shares of lookups,
// the whole model's metrics, the reports.
#include "test_util.hpp"

#include <edo/model_eval.hpp>
#include <edo/report_html.hpp>

#include <cmath>

using namespace edo;

namespace {

ModelTableEval table(const std::string& name, uint64_t rows, double lookups, double recall, double cos_min) {
  ModelTableEval t;
  t.name = name;
  t.rows = rows;
  t.dim = 4;
  t.lookups = lookups;
  t.result.metric = Metric::cos;
  t.result.set("rows", static_cast<double>(rows));
  t.result.set("dim", 4);
  t.result.set("recall@10", recall);
  t.result.set("cos.min", cos_min);
  t.result.set("bytes_before", static_cast<double>(rows * 16));
  t.result.set("bytes_after", static_cast<double>(rows * 4));
  t.result.set("ratio", 4);
  return t;
}

}  // namespace

TEST_CASE("model gates: a table prefix by exact name, split at the last ':', none the whole model") {
  const std::vector<std::string> tables = {"emb.words.weight", "a:b"};
  const auto gates =
      parse_model_gates({"emb.words.weight:recall@10>=0.95", "recall@10>=0.9", "a:b:cos.min > 0.5"}, tables);
  REQUIRE(gates.size() == 3);
  CHECK(gates[0].table == "emb.words.weight");
  CHECK(gates[0].gate.metric == "recall@10");
  CHECK(gates[1].table.empty());
  CHECK(gates[1].gate.threshold == doctest::Approx(0.9));
  CHECK(gates[2].table == "a:b");
  CHECK(gates[2].gate.metric == "cos.min");
  try {
    (void)parse_model_gates({"emb.nothere:recall@10>=0.9"}, tables);
    FAIL("a gate naming no table parsed");
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    CHECK(std::string(e.what()).find("'emb.nothere' is not a table") != std::string::npos);
  }
}

TEST_CASE("model metrics: weighted by shares of lookups, counts summed, cos.min the lowest, ratio from the sums") {
  std::vector<ModelTableEval> t = {table("a", 100, 300, 0.9, 0.8), table("b", 10, 100, 0.5, 0.95)};
  set_lookup_shares(t);
  CHECK(t[0].share == doctest::Approx(0.75));
  CHECK(t[1].share == doctest::Approx(0.25));
  const EvalResult m = combine_model_metrics(t);
  CHECK(m.at("recall@10") == doctest::Approx(0.75 * 0.9 + 0.25 * 0.5));
  CHECK(m.at("rows") == 110);
  CHECK_FALSE(m.has("dim"));
  CHECK(m.at("cos.min") == doctest::Approx(0.8));
  CHECK(m.at("ratio") == doctest::Approx(4.0));
  // The model file's own bytes stand for the tables' when given.
  CHECK(combine_model_metrics(t, 880).at("ratio") == doctest::Approx(2.0));
  // A metric one table lacks is left out of the whole.
  t[0].result.set("w.recall@10", 0.9);
  CHECK_FALSE(combine_model_metrics(t).has("w.recall@10"));
}

TEST_CASE("model gates checked per table and on the whole, reports naming every table") {
  ModelEval e;
  e.original = "m.safetensors";
  e.compressed = "m.edo";
  e.tables = {table("a", 100, 100, 0.9, 0.8), table("b", 100, 100, 0.5, 0.95)};
  set_lookup_shares(e.tables);
  e.model = combine_model_metrics(e.tables);
  check_model_gates(e, parse_model_gates({"a:recall@10>=0.85", "b:recall@10>=0.85", "recall@10>=0.6"}, {"a", "b"}));
  CHECK(e.tables[0].outcomes.at(0).pass);
  CHECK_FALSE(e.tables[1].outcomes.at(0).pass);
  CHECK(e.outcomes.at(0).pass);
  CHECK_FALSE(e.passed());
  const nlohmann::json j = model_eval_json(e);
  CHECK(j["tables"].size() == 2);
  CHECK(j["shares"]["a"].get<double>() == doctest::Approx(0.5));
  CHECK(j["model"]["recall@10"].get<double>() == doctest::Approx(0.7));
  CHECK(j["gates_passed"] == false);
  const std::string text = model_eval_text(e, "recall@10");
  CHECK(text.find("\n  model ") != std::string::npos);
  CHECK(text.find("gate b:recall@10>=0.85") != std::string::npos);
  HtmlReport page;
  page.title = "model";
  page.model_tables = report_model_tables(e, "recall@10");
  const std::string html = to_html(page);
  CHECK(html.find("id=\"model-tables\"") != std::string::npos);
  CHECK(html.find("<td class=\"name\">b</td>") != std::string::npos);
}
