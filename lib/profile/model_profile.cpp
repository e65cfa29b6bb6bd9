// SPDX-License-Identifier: Apache-2.0
// edo-profile of a model: each table's profile and the whole model's bytes.
#include <edo/edo_file.hpp>
#include <edo/human_bytes.hpp>
#include <edo/model_profile.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace edo {

namespace {

// The tables' footprints summed by codec, for the codecs every table has.
std::vector<Footprint> summed_footprints(const ModelProfile& m) {
  std::vector<Footprint> out;
  if (m.tables.empty()) return out;
  const double values = static_cast<double>(m.fp32_bytes) / 4;
  for (const Footprint& first : m.tables.front().profile.footprints) {
    Footprint f{first.name, first.spec, 0, 0, 0, "summed over the tables"};
    bool everywhere = true;
    for (const ModelProfileTable& t : m.tables) {
      const auto& fps = t.profile.footprints;
      const auto it = std::find_if(fps.begin(), fps.end(), [&](const Footprint& x) { return x.name == first.name; });
      if (it == fps.end())
        everywhere = false;
      else
        f.bytes += it->bytes;
    }
    if (!everywhere || f.bytes == 0) continue;
    f.ratio = static_cast<double>(m.fp32_bytes) / static_cast<double>(f.bytes);
    f.bits_per_value = static_cast<double>(f.bytes) * 8 / values;
    out.push_back(std::move(f));
  }
  return out;
}

void add_table(ModelProfile& m, ModelProfileTable t, uint64_t stored) {
  m.rows += t.profile.rows;
  m.fp32_bytes += t.profile.rows * t.profile.dim * 4;
  m.stored_bytes += stored;
  m.tables.push_back(std::move(t));
}

}  // namespace

ModelProfile profile_model(const io::ModelSelection& selection, const ProfileOptions& options) {
  ModelProfile m;
  m.path = selection.path;
  for (const io::ModelTable& t : selection.tables) {
    auto table = io::open_table(t.spec);
    ModelProfileTable p{t.name, profile_table(*table, options), nullptr};
    add_table(m, std::move(p), table->payload_bytes());
  }
  m.footprints = summed_footprints(m);
  return m;
}

ModelProfile profile_model_file(const std::string& path, const ProfileOptions& options) {
  const std::shared_ptr<const Reader> file = EdoTable::open_reader(path, io::Verify::all);
  ModelProfile m;
  m.path = path;
  for (const std::string& name : file->tables()) {
    auto table = EdoTable::open_table(file, name);
    ModelProfileTable p{name, profile_table(*table, options), container_summary(table->container())};
    add_table(m, std::move(p), 0);
  }
  m.stored_bytes = file->file_bytes();
  m.footprints = summed_footprints(m);
  return m;
}

nlohmann::json model_profile_json(const ModelProfile& m) {
  nlohmann::json tables = nlohmann::json::object(), fps = nlohmann::json::array();
  for (const ModelProfileTable& t : m.tables) tables[t.name] = profile_report_json(t.profile, t.container, nullptr);
  for (const Footprint& f : m.footprints)
    fps.push_back({{"name", f.name},
                   {"spec", f.spec},
                   {"bytes", f.bytes},
                   {"ratio", f.ratio},
                   {"bits_per_value", f.bits_per_value}});
  return {{"model", m.path},
          {"tables", std::move(tables)},
          {"total",
           {{"tables", m.tables.size()},
            {"rows", m.rows},
            {"fp32_bytes", m.fp32_bytes},
            {"stored_bytes", m.stored_bytes},
            {"footprints", std::move(fps)}}}};
}

std::string model_profile_text(const ModelProfile& m) {
  std::string s = fmt::format("{}: a model of {} tables\n", m.path, m.tables.size());
  for (size_t i = 0; i < m.tables.size(); ++i) {
    const ModelProfileTable& t = m.tables[i];
    s += fmt::format("\n== table {}/{}: {} ({} x {})\n", i + 1, m.tables.size(), t.name, t.profile.rows, t.profile.dim);
    if (!t.container.is_null()) s += container_summary_text(t.container) + "\ndecoded rows: ";
    s += to_text(t.profile, false);
  }
  s += fmt::format("\ntotal  {} tables, {} rows: {} bytes as fp32 ({}), {} bytes as stored ({})\n", m.tables.size(),
                   m.rows, m.fp32_bytes, human_bytes(static_cast<double>(m.fp32_bytes)), m.stored_bytes,
                   human_bytes(static_cast<double>(m.stored_bytes)));
  s += "footprint of the whole model (each codec on every table, summed)\n" + footprint_text(m.footprints);
  return s;
}

}  // namespace edo
