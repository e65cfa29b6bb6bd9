// SPDX-License-Identifier: Apache-2.0
// A model under one size budget on the command line (edo-pack MODEL
// --budget, edo-profile MODEL --plan --budget; docs/PACK.md, "One budget for
// a model"): the table weights. The planning rounds are the library's
// (edo/model_budget.hpp).
#pragma once

#include "model_cli.hpp"

#include <edo/budget.hpp>
#include <edo/model_budget.hpp>

#include <charconv>
#include <cmath>
#include <optional>

namespace edo::cli {

// --table-weight NAME=W, each naming a chosen table, W > 0.
inline std::map<std::string, double> parse_table_weights(const io::ModelSelection& model, const std::string& input,
                                                         const std::vector<std::string>& texts) {
  std::map<std::string, double> weights;
  for (const std::string& w : texts) {
    const auto eq = w.rfind('=');
    const std::string name = eq == std::string::npos ? "" : w.substr(0, eq);
    double v = 0;
    const char* end = w.c_str() + w.size();
    const auto r = eq == std::string::npos ? std::from_chars_result{end, std::errc::invalid_argument}
                                           : std::from_chars(w.c_str() + eq + 1, end, v);
    if (r.ec != std::errc() || r.ptr != end || !(v > 0) || !std::isfinite(v))
      EDO_USAGE_FAIL("--table-weight '{}': expected NAME=W with W a number above 0", w);
    if (std::none_of(model.tables.begin(), model.tables.end(), [&](const auto& t) { return t.name == name; }))
      EDO_USAGE_FAIL("--table-weight '{}': {} is not a chosen table of {}", w, name, input);
    weights[name] = v;
  }
  return weights;
}

// --table-weight and --cold-weight, which weigh a model's joint plan
// (`scope` says when they apply: "A model's size --budget", "A model's --plan").
inline void add_joint_weight_options(CLI::App& app, std::vector<std::string>& table_weights,
                                     std::optional<double>& cold_weight, const std::string& scope) {
  app.add_option("--table-weight", table_weights,
                 scope +
                     ": NAME=W multiplies table NAME's share of lookups in the joint objective (W > 0;\n"
                     "repeatable)");
  app.add_option("--cold-weight", cold_weight,
                 scope +
                     ": a recall-oriented objective instead of sum w_t s_t E_t: each row weighs its\n"
                     "count plus W x its table's mean count (W from 0 to 1e6; default 0, the counts alone). A\n"
                     "row's error also costs the queries it is a neighbour of, which its count does not see: W = 1\n"
                     "keeps recall@10 on rare rows. Plans and baselines are compared under the objective in use\n"
                     "(docs/PACK.md, 'One budget for a model')");
}

// --cold-weight W: 0 to 1e6 (NaN and infinities refused), default 0.
inline double checked_cold_weight(const std::optional<double>& w) {
  if (!w) return 0.0;
  if (!(*w >= 0 && *w <= 1e6)) EDO_USAGE_FAIL("--cold-weight {}: expected a number from 0 to 1e6", *w);
  return *w;
}

}  // namespace edo::cli
