// SPDX-License-Identifier: Apache-2.0
// Models on the command line (docs/PACK.md, "Models"): --tables, the
// selection line, per-table counts, and the summary of a model written.
#pragma once

#include "cli_common.hpp"
#include "shard_cli.hpp"

#include <edo/io/freq.hpp>
#include <edo/io/model.hpp>
#include <edo/model.hpp>
#include <edo/reader.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edo::cli {

struct ModelFlags {
  std::vector<std::string> tables;  // globs
  bool verbose = false;             // every skipped tensor on its own line
  // Set by model_input() when a model's selection is one table, run as one:
  // its name, which the file records (FORMAT.md 5.1, "table_name").
  std::string chosen_table;

  // The manifest entry that records the chosen table's name (none otherwise).
  nlohmann::json manifest_entry() const {
    return chosen_table.empty() ? nlohmann::json::object() : nlohmann::json{{kTableNameKey, chosen_table}};
  }

  void add_to(CLI::App& app) {
    app.add_option("--tables", tables,
                   "Tables of a model INPUT (a .safetensors or its .index.json, an .npz, an HDF5 file or a folder of\n"
                   ".npy) to take, by name: GLOB[,GLOB...] ('*' and '?'), matching the whole name or any run of\n"
                   "its '.'- or '/'-separated parts ('word*' takes embeddings.word_embeddings.weight); tensors a\n"
                   "wildcard reaches that are no table are skipped. Default: the 2-D floating tensors whose name\n"
                   "holds 'emb' or starts with 'lm_head' (all 2-D floating ones when none does). Several tables make\n"
                   "a model file (one table under its name each); FILE:tensor is one table, as always")
        ->delimiter(',');
    app.add_flag("--verbose", verbose, "A model INPUT: list every tensor skipped and why (default: one line, counted)");
  }
};

// When `input` names a model: its selection, said on stderr (took, skipped
// and why) unless quiet. A selection of one table is run as one table:
// nullopt, with `input` pointed at that table when the plain input would not
// open it by itself. nullopt for a one-table input; --tables then is a usage error.
inline std::optional<io::ModelSelection> model_input(std::string& input, ModelFlags& flags, bool quiet,
                                                     const char* tool) {
  if (!io::is_model_spec(input)) {
    if (!flags.tables.empty()) EDO_USAGE_FAIL("--tables: {} is one table, not a model", input);
    return std::nullopt;
  }
  io::ModelSelection sel = io::select_model_tables(input, flags.tables);
  const bool narrowed = !flags.tables.empty() || sel.passed_over_tables;
  if (sel.tables.size() == 1) {
    if (narrowed) {
      input = sel.tables.front().spec;
      flags.chosen_table = sel.tables.front().name;
    }
    if (!quiet && narrowed) std::fprintf(stderr, "%s: %s\n", tool, model_selection_text(sel, flags.verbose).c_str());
    return std::nullopt;
  }
  if (!quiet) std::fprintf(stderr, "%s: %s\n", tool, model_selection_text(sel, flags.verbose).c_str());
  return sel;
}

// Per-table counts: "--freq NAME=counts.npy" (NAME a chosen table; a value
// that names none is a usage error: a model's counts go per table) and
// "--freq-dir DIR" (DIR/NAME.npy, "/" in a name written "__"; a file naming
// no table of the model is refused). Tables without counts: none.
inline std::map<std::string, std::string> model_freq_files(const io::ModelSelection& sel,
                                                           const std::vector<std::string>& freq_args,
                                                           const std::string& freq_dir) {
  std::vector<std::string> names;
  for (const io::ModelTable& t : sel.tables) names.push_back(t.name);
  std::map<std::string, std::string> files;
  for (const std::string& arg : freq_args) {
    const auto named = io::split_named_argument(arg, names);
    if (!named) {
      std::string shown;
      for (size_t i = 0; i < names.size() && i < 10; ++i) shown += (i ? ", " : "") + names[i];
      EDO_USAGE_FAIL("--freq {}: a model takes counts per table, as --freq NAME=counts.npy (its tables: {}{})", arg,
                     shown, names.size() > 10 ? ", ..." : "");
    }
    if (!files.emplace(named->first, named->second).second)
      EDO_USAGE_FAIL("--freq: two count files for table '{}'", named->first);
  }
  if (!freq_dir.empty()) {
    if (!std::filesystem::is_directory(freq_dir)) EDO_USAGE_FAIL("--freq-dir {}: not a directory", freq_dir);
    for (const std::string& name : names) {
      std::string file = name;
      for (size_t at = file.find('/'); at != std::string::npos; at = file.find('/', at + 2)) file.replace(at, 1, "__");
      const std::string path = freq_dir + "/" + file + ".npy";
      if (std::filesystem::exists(path) && !files.count(name)) files.emplace(name, path);
    }
    for (const auto& entry : std::filesystem::directory_iterator(freq_dir)) {
      if (entry.path().extension() != ".npy") continue;
      std::string stem = entry.path().stem().string();
      for (size_t at = stem.find("__"); at != std::string::npos; at = stem.find("__", at + 1)) stem.replace(at, 2, "/");
      const bool other_table =
          std::any_of(sel.skipped.begin(), sel.skipped.end(), [&](const auto& s) { return s.first == stem; });
      if (std::find(names.begin(), names.end(), stem) == names.end() && !other_table)
        EDO_USAGE_FAIL("--freq-dir {}: {} counts table '{}', which is no table of {}", freq_dir,
                       entry.path().filename().string(), stem, sel.path);
    }
  }
  return files;
}

// The outputs and count files of a model run checked (PathGuard), then its
// count files by table.
inline std::map<std::string, std::string> checked_model_counts(const io::ModelSelection& sel, const std::string& input,
                                                               const std::string& output,
                                                               const std::vector<std::string>& freq_args,
                                                               const std::string& freq_dir) {
  PathGuard paths;
  paths.input(input).input(freq_dir).output("-o", output);
  paths.check();
  return model_freq_files(sel, freq_args, freq_dir);
}

// The counts of table `t` from `files` (empty without a file: each row once).
inline std::vector<double> model_table_freq(const std::map<std::string, std::string>& files, const io::ModelTable& t) {
  const auto it = files.find(t.name);
  return it == files.end() ? std::vector<double>{} : io::read_frequencies(it->second, t.rows);
}

// --shard, --train-only and --trained of a model run (docs/SCALE.md): each
// table sharded alike (shard I of a model holds slice I of every table);
// --train-only writes a model of trained states, and --trained takes one,
// table NAME's state training table NAME.
class ModelShards {
 public:
  ModelShards(const ShardFlags& f, const io::ModelSelection& sel, const std::string& out_path)
      : flags_(f),
        choice_(f.train_only ? ShardChoice{} : resolve_shard(f.shard, f.shard_count)),
        temporaries_(out_path) {
    if (choice_.active()) {
      bool any = false;
      for (const io::ModelTable& t : sel.tables) any = any || choice_.index < table_shards(t.rows);
      if (!any)
        EDO_USAGE_FAIL(
            "shard {}/{} of {} holds no rows: each table splits at multiples of {} rows into at most as "
            "many shards, and none has {}",
            choice_.index, choice_.count, sel.path, kShardChunkRows, choice_.index + 1);
    }
    if (f.trained.empty()) return;
    const io::Container c = io::Container::open(f.trained);
    if (!c.is_model())
      EDO_USAGE_FAIL("--trained {}: the state of one table; a model takes the --train-only state of the model",
                     f.trained);
    // A run with a trained state records the training run's parameters and
    // seed, as its tables do (FORMAT.md 9.8): the model file is then the one
    // that run writes whole.
    trained_provenance_ = c.manifest()["provenance"];
    const auto& states = c.model_tables();
    for (const io::ModelTable& t : sel.tables) {
      const auto it = std::find_if(states.begin(), states.end(), [&](const auto& s) { return s.name == t.name; });
      if (it == states.end()) EDO_USAGE_FAIL("--trained {}: no state for table '{}'", f.trained, t.name);
      const size_t index = static_cast<size_t>(it - states.begin());
      const std::string& path = temporaries_.add(fmt::format("trained-{}", index));
      extract_model_table(f.trained, index, path);
      trained_[t.name] = path;
    }
  }
  // The model file's provenance: `base`, with a trained state's parameters and seed.
  nlohmann::json provenance(nlohmann::json base) const {
    for (const char* key : {"parameters", "seed"})
      if (trained_provenance_.contains(key)) base[key] = trained_provenance_[key];
    return base;
  }

  // The flags as table `t`'s own run takes them: shard I of min(N, its
  // chunks of rows), as each table splits into as many as it can. nullopt
  // when this shard holds none of its rows (I beyond that count).
  std::optional<ShardFlags> for_table(const io::ModelTable& t) const {
    ShardFlags f = flags_;
    const auto it = trained_.find(t.name);
    f.trained = it == trained_.end() ? std::string() : it->second;
    if (!choice_.active()) return f;
    const uint32_t count = table_shards(t.rows);
    if (choice_.index >= count) return std::nullopt;
    f.shard = fmt::format("{}/{}", choice_.index, count);
    f.shard_count = 0;
    return f;
  }

 private:
  uint32_t table_shards(uint64_t rows) const {
    return static_cast<uint32_t>(std::min<uint64_t>(choice_.count, (rows + kShardChunkRows - 1) / kShardChunkRows));
  }

  ShardFlags flags_;
  ShardChoice choice_;
  nlohmann::json trained_provenance_ = nlohmann::json::object();
  TemporaryTables temporaries_;
  std::map<std::string, std::string> trained_;
};

// One table of a model run through pack_to_edo (edo-pack, edo-sparsify,
// edo-hash): its trained state (--train-only), or its shard or whole table.
inline nlohmann::json pack_model_table(const char* tool, const std::optional<ShardFlags>& f, io::TableReader& table,
                                       const std::string& out, PackOptions& opt, bool quiet) {
  if (!f) return nullptr;  // this shard holds none of the table's rows
  PackShards shards;
  if (shards.train_only(tool, *f, table, out, opt, false, quiet)) return {{"trained_state", true}};
  shards.apply(tool, *f, table, opt, false);
  return pack_report_json(pack_to_edo(table, out, opt));
}

inline void print_model_summary(bool json, const ModelReport& rep, const std::string& input,
                                const std::string& output) {
  if (json) {
    nlohmann::json j = model_report_json(rep);
    j["input"] = input;
    j["output"] = output;
    j["written"] = true;
    std::puts(j.dump(2).c_str());
    return;
  }
  std::printf("%s -> %s: a model of %zu tables\n", input.c_str(), output.c_str(), rep.tables.size());
  std::fputs(model_report_text(rep).c_str(), stdout);
}

}  // namespace edo::cli
