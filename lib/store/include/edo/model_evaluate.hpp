// SPDX-License-Identifier: Apache-2.0
// edo-eval MODEL model.edo: each table of a model input against the table of
// the same name in a model file, and the whole model (docs/EVAL.md, "Models").
#pragma once

#include <edo/eval.hpp>
#include <edo/io/model.hpp>
#include <edo/model_eval.hpp>

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace edo {

// Whether `path` is a .edo model file (FORMAT.md 10).
bool is_model_file(const std::string& path);

// The tables of model `input` to evaluate against the model file
// `compressed`: those `globs` choose in both (without globs, every table of
// the file, each by its exact name). A table chosen in one and not the
// other is an error naming it.
io::ModelSelection model_eval_selection(const std::string& input, const std::string& compressed,
                                        const std::vector<std::string>& globs);

// Evaluates every table of `sel` against its namesake in `compressed`, with
// `base` (its freq replaced by the table's counts from `freq_files`, NAME ->
// counts file; tiers as groups), memory metrics added; then the shares, the
// whole model and `gates`. `note` receives a line per table as it starts.
ModelEval evaluate_model(const io::ModelSelection& sel, const std::string& compressed,
                         const std::map<std::string, std::string>& freq_files, const EvalOptions& base,
                         const std::vector<ModelGate>& gates, const std::function<void(const std::string&)>& note = {});

}  // namespace edo
