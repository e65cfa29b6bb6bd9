// SPDX-License-Identifier: Apache-2.0
// edo-eval of a model: each table against its namesake in a model file.
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/table.hpp>
#include <edo/model_evaluate.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace edo {

bool is_model_file(const std::string& path) {
  return path != "-" && is_edo_file(path) && io::Container::open(path).is_model();
}

io::ModelSelection model_eval_selection(const std::string& input, const std::string& compressed,
                                        const std::vector<std::string>& globs) {
  const std::vector<std::string> in_file =
      io::Container::open(compressed).is_model() ? Reader::open(compressed).tables() : std::vector<std::string>{};
  if (in_file.empty()) EDO_USAGE_FAIL("{}: not a model file (FORMAT.md 10); evaluate a model against one", compressed);
  std::vector<std::string> chosen;
  for (const std::string& name : in_file)
    if (globs.empty() ||
        std::any_of(globs.begin(), globs.end(), [&](const auto& g) { return io::table_glob_match(g, name); }))
      chosen.push_back(name);
  if (chosen.empty())
    EDO_USAGE_FAIL("--tables: nothing in {} matches (its tables: {})", compressed, fmt::join(in_file, ", "));
  // Tables by exact name: '*' and '?' in a name match themselves too.
  io::ModelSelection sel = io::select_model_tables(input, globs.empty() ? chosen : globs);
  if (globs.empty())  // the file's names, which may also be parts of other tensors' names
    std::erase_if(sel.tables, [&](const io::ModelTable& t) {
      return std::find(chosen.begin(), chosen.end(), t.name) == chosen.end();
    });
  for (const io::ModelTable& t : sel.tables)
    if (std::find(chosen.begin(), chosen.end(), t.name) == chosen.end())
      EDO_USAGE_FAIL("table '{}' of {} is not in {} (it holds {})", t.name, input, compressed,
                     fmt::join(in_file, ", "));
  for (const std::string& name : chosen)
    if (std::none_of(sel.tables.begin(), sel.tables.end(), [&](const io::ModelTable& t) { return t.name == name; }))
      EDO_USAGE_FAIL("table '{}' of {} is not a table of {}", name, compressed, input);
  return sel;
}

namespace {

ModelTableEval evaluate_one(const io::ModelTable& t, const std::shared_ptr<const Reader>& file,
                            const std::map<std::string, std::string>& freq_files, const EvalOptions& base) {
  auto original = io::open_table(t.spec);
  auto compressed = EdoTable::open_table(file, t.name);
  if (original->rows() != compressed->rows() || original->dim() != compressed->dim())
    EDO_FAIL("{}: shape {} x {} does not match {} ({} x {})", compressed->path(), compressed->rows(), compressed->dim(),
             t.spec, original->rows(), original->dim());
  EvalOptions eo = base;
  eo.freq.clear();
  if (const auto it = freq_files.find(t.name); it != freq_files.end()) {
    eo.freq = io::read_frequencies(it->second, t.rows);
    if (std::none_of(eo.freq.begin(), eo.freq.end(), [](double f) { return f > 0; }))
      EDO_FAIL("{}: every count is 0; table '{}' would have no lookups", it->second, t.name);
  }
  if (compressed->reader().tiers().size() > 1) group_by_tier(eo, compressed->reader());
  ModelTableEval e;
  e.name = t.name;
  e.rows = t.rows;
  e.dim = t.dim;
  e.counted = !eo.freq.empty();
  e.lookups = e.counted ? std::accumulate(eo.freq.begin(), eo.freq.end(), 0.0) : static_cast<double>(t.rows);
  e.result = evaluate(*original, *compressed, eo);
  add_memory_metrics(e.result, *original, *compressed);
  return e;
}

}  // namespace

ModelEval evaluate_model(const io::ModelSelection& sel, const std::string& compressed,
                         const std::map<std::string, std::string>& freq_files, const EvalOptions& base,
                         const std::vector<ModelGate>& gates, const std::function<void(const std::string&)>& note) {
  const std::shared_ptr<const Reader> file = EdoTable::open_reader(compressed, io::Verify::all, Device::cpu);
  ModelEval eval;
  eval.original = sel.path;
  eval.compressed = compressed;
  for (size_t i = 0; i < sel.tables.size(); ++i) {
    const io::ModelTable& t = sel.tables[i];
    if (note) note(fmt::format("table {}/{}: {} ({} x {})", i + 1, sel.tables.size(), t.name, t.rows, t.dim));
    eval.tables.push_back(evaluate_one(t, file, freq_files, base));
  }
  set_lookup_shares(eval.tables);
  // Every table of the file evaluated: the model file's bytes are the model's.
  const uint64_t model_bytes = sel.tables.size() == file->tables().size() ? written_file_bytes(file->container()) : 0;
  eval.model = combine_model_metrics(eval.tables, model_bytes);
  check_model_gates(eval, gates);
  return eval;
}

}  // namespace edo
