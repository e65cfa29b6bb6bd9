// SPDX-License-Identifier: Apache-2.0
// Writing a model file (docs/FORMAT.md, section 10): each table of a model
// input written on its own by a tool's one-table writer, then the tables
// joined under their names. Memory is the one-table writer's: one table at
// a time, in blocks.
#pragma once

#include <edo/io/files.hpp>
#include <edo/io/model.hpp>
#include <edo/io/table.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace edo {

class Reader;

struct ModelTableReport {
  std::string name;
  uint64_t rows = 0, dim = 0;
  uint64_t fp32_bytes = 0;  // rows * dim * 4
  uint64_t file_bytes = 0;  // the table's one-table .edo, as stored in the model file
  nlohmann::json summary;   // what the tool's writer reported for it (its --json object)
};

struct ModelReport {
  std::string path;
  std::vector<ModelTableReport> tables;
  uint64_t fp32_bytes = 0;  // every table
  uint64_t file_bytes = 0;  // the model file
};

// The temporary one-table files of a model being written, beside its output
// (one file system: a rename, no copy): removed when this goes, and by the
// signal handlers meanwhile.
class TemporaryTables {
 public:
  explicit TemporaryTables(const std::string& out_path);
  ~TemporaryTables();
  TemporaryTables(const TemporaryTables&) = delete;
  TemporaryTables& operator=(const TemporaryTables&) = delete;
  // A new path ".OUT.table-TAG.tmp-PID.edo"; nothing is created.
  const std::string& add(const std::string& tag);

 private:
  std::string dir_, stem_;
  std::vector<std::string> paths_;
  std::vector<std::unique_ptr<io::CleanupOnSignal>> cleanups_;
};

// Writes table `t` of the model, opened as `input`, to the one-table .edo
// `out_path`, and returns the tool's summary of it; null (writing nothing)
// leaves the table out (a shard that holds none of its rows).
using ModelTableWriter =
    std::function<nlohmann::json(io::TableReader& input, const io::ModelTable& t, const std::string& out_path)>;

// Writes every table of `selection` with `write_one` into a temporary file
// beside `out_path` (removed afterwards, and on a signal), then the model
// file at `out_path` (write_model: read back before it is renamed in).
// `note` receives one line per table as it starts ("table 2/26: C3 ...").
ModelReport write_model_tables(const io::ModelSelection& selection, const std::string& out_path,
                               const ModelTableWriter& write_one, const nlohmann::json& provenance,
                               const std::function<void(const std::string&)>& note = {});

// Copies table `index` of the model file `model` to `out_path` as the
// one-table file it is (its bytes, as stored).
void extract_model_table(const std::string& model, size_t index, const std::string& out_path);

// --merge of model files whose tables are shards (each run's --shard I/N of
// every table): the tables merged one by one (merge_shards), in the first
// file's order, into the model file one process writes. Every file must
// list the same tables. Returns the rows of all tables.
uint64_t merge_model_shards(const std::vector<std::string>& paths, const std::string& out_path);

// edo-unpack MODEL -o x.safetensors|x.h5: every table of the model file
// `model` decoded into one file, each under its own name (io::create_tables),
// streamed in row blocks of at most io::kDefaultBlockBytes of fp32, so memory
// is one block whatever the model. `progress` gets (rows done, rows in all).
// Returns {"tables": [{"name", "rows", "dim"}, ...], "rows": all rows}.
nlohmann::json unpack_model(const Reader& model, const std::string& out_path, io::DType dtype, io::OtherContents others,
                            const std::function<void(uint64_t, uint64_t)>& progress = {});

// A model file's provenance from its tables' write options: tool, version,
// parameters and seed (write_model_tables adds the input).
struct WriteOptions;
nlohmann::json model_provenance(const WriteOptions& opt);

// The report as JSON ({"model", "tables": [...], "fp32_bytes", "file_bytes", "ratio"}) and as text lines.
nlohmann::json model_report_json(const ModelReport& rep);
std::string model_report_text(const ModelReport& rep);

// The tables a model selection took, one line each, and what it skipped: one
// line each when `verbose` or three at most, else one line counted by reason.
std::string model_selection_text(const io::ModelSelection& selection, bool verbose = false);

}  // namespace edo
