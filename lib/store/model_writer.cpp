// SPDX-License-Identifier: Apache-2.0
#include <edo/build_info.hpp>
#include <edo/error.hpp>
#include <edo/human_bytes.hpp>
#include <edo/io/container.hpp>
#include <edo/io/files.hpp>
#include <edo/model.hpp>
#include <edo/shard.hpp>
#include <edo/table_writer.hpp>

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <memory>

namespace edo {

TemporaryTables::TemporaryTables(const std::string& out_path) {
  const std::filesystem::path out(out_path);
  dir_ = out.parent_path().empty() ? std::string(".") : out.parent_path().string();
  stem_ = out.filename().string();
}

TemporaryTables::~TemporaryTables() {
  for (const std::string& p : paths_) ::unlink(p.c_str());
}

const std::string& TemporaryTables::add(const std::string& tag) {
  paths_.push_back(fmt::format("{}/.{}.table-{}.tmp-{}.edo", dir_, stem_, tag, ::getpid()));
  cleanups_.push_back(std::make_unique<io::CleanupOnSignal>(paths_.back()));
  return paths_.back();
}

ModelReport write_model_tables(const io::ModelSelection& selection, const std::string& out_path,
                               const ModelTableWriter& write_one, const nlohmann::json& provenance,
                               const std::function<void(const std::string&)>& note) {
  ModelReport rep;
  rep.path = out_path;
  TemporaryTables temporaries(out_path);
  std::vector<io::ModelTableFile> files;
  for (size_t i = 0; i < selection.tables.size(); ++i) {
    const io::ModelTable& t = selection.tables[i];
    if (note) note(fmt::format("table {}/{}: {} ({} x {})", i + 1, selection.tables.size(), t.name, t.rows, t.dim));
    const std::string& tmp = temporaries.add(fmt::format("{}", i));
    auto input = io::open_table(t.spec);
    ModelTableReport tr;
    tr.name = t.name;
    tr.rows = input->rows();
    tr.dim = input->dim();
    tr.fp32_bytes = tr.rows * tr.dim * sizeof(float);
    tr.summary = write_one(*input, t, tmp);
    if (tr.summary.is_null()) continue;  // the writer took none of its rows (a shard beyond the table's)
    tr.file_bytes = std::filesystem::file_size(tmp);
    tr.rows = io::Container::open(tmp).rows();  // a shard's own
    tr.fp32_bytes = tr.rows * tr.dim * sizeof(float);
    rep.fp32_bytes += tr.fp32_bytes;
    rep.tables.push_back(std::move(tr));
    files.push_back({t.name, tmp});
  }
  nlohmann::json prov = provenance;
  prov["input"] = selection.path;
  io::write_model(out_path, files, prov);
  rep.file_bytes = std::filesystem::file_size(out_path);
  return rep;
}

void extract_model_table(const std::string& model, size_t index, const std::string& out_path) {
  const io::Container c = io::Container::open(model);
  const io::SectionView bytes = c.section(c.model_tables().at(index).section);
  io::AtomicFile out(out_path);
  out.write(bytes.data, bytes.size);
  out.commit();
}

uint64_t merge_model_shards(const std::vector<std::string>& paths, const std::string& out_path) {
  std::vector<io::Container> models;
  for (const std::string& p : paths) {
    models.push_back(io::Container::open(p, io::Verify::all));
    if (!models.back().is_model())
      EDO_USAGE_FAIL("--merge: {} is one table, {} a model: merge like with like", p, paths[0]);
  }
  // Shard 0 of a model holds every table (a table splits into at most as
  // many shards as it has chunks of rows, and always into shard 0); the
  // others hold the tables large enough for them. Tables in shard 0's order.
  size_t widest = 0;
  for (size_t k = 1; k < models.size(); ++k)
    if (models[k].model_tables().size() > models[widest].model_tables().size()) widest = k;
  const auto& names = models[widest].model_tables();
  for (size_t k = 0; k < models.size(); ++k)
    for (const io::ModelTableInfo& t : models[k].model_tables())
      if (std::none_of(names.begin(), names.end(), [&](const io::ModelTableInfo& n) { return n.name == t.name; }))
        EDO_USAGE_FAIL("--merge: {} holds table '{}', which {} lacks: shards of one model", paths[k], t.name,
                       paths[widest]);
  TemporaryTables temporaries(out_path);
  std::vector<io::ModelTableFile> merged;
  uint64_t rows = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<std::string> parts;
    for (size_t k = 0; k < paths.size(); ++k) {
      const auto& held = models[k].model_tables();
      const auto it = std::find_if(held.begin(), held.end(), [&](const auto& t) { return t.name == names[i].name; });
      if (it == held.end()) continue;
      parts.push_back(temporaries.add(fmt::format("{}-{}", i, k)));
      extract_model_table(paths[k], static_cast<size_t>(it - held.begin()), parts.back());
    }
    // A table of one chunk of rows is whole in shard 0 (its one shard).
    if (parts.size() == 1 && !io::Container::open(parts[0]).manifest().contains("shard")) {
      rows += io::Container::open(parts[0]).rows();
      merged.push_back({names[i].name, parts[0]});
      continue;
    }
    const std::string& table = temporaries.add(fmt::format("{}", i));
    rows += merge_shards(parts, table);
    merged.push_back({names[i].name, table});
  }
  io::write_model(out_path, merged, models[widest].manifest()["provenance"]);
  return rows;
}

nlohmann::json model_provenance(const WriteOptions& opt) {
  return {{"tool", opt.tool}, {"version", EDO_VERSION_STRING}, {"parameters", opt.parameters}, {"seed", opt.seed}};
}

nlohmann::json model_report_json(const ModelReport& rep) {
  nlohmann::json tables = nlohmann::json::array();
  for (const ModelTableReport& t : rep.tables)
    tables.push_back({{"name", t.name},
                      {"rows", t.rows},
                      {"dim", t.dim},
                      {"fp32_bytes", t.fp32_bytes},
                      {"file_bytes", t.file_bytes},
                      {"summary", t.summary}});
  return {{"model", rep.path},
          {"tables", std::move(tables)},
          {"fp32_bytes", rep.fp32_bytes},
          {"file_bytes", rep.file_bytes},
          {"ratio", rep.file_bytes ? static_cast<double>(rep.fp32_bytes) / static_cast<double>(rep.file_bytes) : 0.0}};
}

std::string model_report_text(const ModelReport& rep) {
  size_t width = 5;
  for (const ModelTableReport& t : rep.tables) width = std::max(width, t.name.size());
  std::string s = fmt::format("  {:<{}}  {:>10}  {:>5}  {:>12}  {:>12}  {:>7}\n", "table", width, "rows", "dim", "fp32",
                              "file", "ratio");
  for (const ModelTableReport& t : rep.tables)
    s += fmt::format("  {:<{}}  {:>10}  {:>5}  {:>12}  {:>12}  {:>6.2f}x\n", t.name, width, t.rows, t.dim,
                     human_bytes(static_cast<double>(t.fp32_bytes)), human_bytes(static_cast<double>(t.file_bytes)),
                     t.file_bytes ? static_cast<double>(t.fp32_bytes) / static_cast<double>(t.file_bytes) : 0.0);
  s += fmt::format("  {:<{}}  {:>10}  {:>5}  {:>12}  {:>12}  {:>6.2f}x\n", "model", width, "", "",
                   human_bytes(static_cast<double>(rep.fp32_bytes)), human_bytes(static_cast<double>(rep.file_bytes)),
                   rep.file_bytes ? static_cast<double>(rep.fp32_bytes) / static_cast<double>(rep.file_bytes) : 0.0);
  return s;
}

std::string model_selection_text(const io::ModelSelection& selection, bool verbose) {
  std::string s = fmt::format("{} ({}): {} table{}", selection.path, selection.format, selection.tables.size(),
                              selection.tables.size() == 1 ? "" : "s");
  for (const io::ModelTable& t : selection.tables) s += fmt::format("\n  took    {} ({} x {})", t.name, t.rows, t.dim);
  if (verbose || selection.skipped.size() <= 3) {
    for (const auto& [name, why] : selection.skipped) s += fmt::format("\n  skipped {}: {}", name, why);
    return s;
  }
  // A transformer holds a hundred tensors beside its tables: one line, counted by reason.
  std::vector<std::pair<std::string, size_t>> reasons;
  for (const auto& [name, why] : selection.skipped) {
    auto at = std::find_if(reasons.begin(), reasons.end(), [&](const auto& r) { return r.first == why; });
    if (at == reasons.end())
      reasons.emplace_back(why, 1);
    else
      ++at->second;
  }
  std::string counted;
  for (const auto& [why, n] : reasons) counted += fmt::format("{}{} {}", counted.empty() ? "" : "; ", n, why);
  return s + fmt::format("\n  skipped {} tensors ({}); --verbose lists them", selection.skipped.size(), counted);
}

}  // namespace edo
