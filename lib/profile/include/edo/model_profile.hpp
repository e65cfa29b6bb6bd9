// SPDX-License-Identifier: Apache-2.0
// edo-profile of a model (a model input, or a .edo model file): every table
// profiled, one compact section each, and the whole model's bytes now and
// under each codec (the tables' footprints summed).
#pragma once

#include <edo/io/model.hpp>
#include <edo/profile.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edo {

struct ModelProfileTable {
  std::string name;
  TableProfile profile;
  nlohmann::json container;  // container_summary() of a model file's table; null for a model input
};

struct ModelProfile {
  std::string path;
  std::vector<ModelProfileTable> tables;
  uint64_t rows = 0;
  uint64_t fp32_bytes = 0;    // every table as fp32
  uint64_t stored_bytes = 0;  // every table's values as stored (a model file: the file's bytes)
  // Each codec's footprint over the whole model: the tables' summed, for the
  // codecs every table has (PQ with more bytes than a short table's dim is left out).
  std::vector<Footprint> footprints;
};

// Every chosen table of a model input, profiled with `options`.
ModelProfile profile_model(const io::ModelSelection& selection, const ProfileOptions& options);
// Every table of the .edo model file `path` (FORMAT.md 10), checksums verified.
ModelProfile profile_model_file(const std::string& path, const ProfileOptions& options);

// {"model", "tables": {NAME: profile_report_json}, "total": {"tables", "rows", "fp32_bytes", "stored_bytes",
// "footprints"}}.
nlohmann::json model_profile_json(const ModelProfile& m);
// One section a table (its container summary for a model file, its profile
// without footprints), then the "total" line and the summed footprints.
std::string model_profile_text(const ModelProfile& m);

}  // namespace edo
