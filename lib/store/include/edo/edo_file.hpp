// SPDX-License-Identifier: Apache-2.0
// Compressed tables as .edo files: writing one from a table and a codec spec
// (edo-quantize), and reading any .edo back as a table of fp32 rows
// (edo-unpack, edo-eval, edo-profile).
//
// edo-quantize's file is one tier named "all" holding every row in order
// (docs/FORMAT.md, "Codec payloads").
#pragma once

#include <edo/codec.hpp>
#include <edo/device.hpp>
#include <edo/eval.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/reader.hpp>
#include <edo/table_writer.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace edo {

struct QuantizeOptions : WriteOptions {
  QuantizeOptions() { tool = "edo-quantize"; }
  std::string spec;
};

struct QuantizeReport {
  std::string spec;  // canonical
  uint64_t rows = 0, dim = 0;
  uint64_t fp32_bytes = 0;    // rows * dim * 4
  uint64_t input_bytes = 0;   // the input's values as stored
  uint64_t file_bytes = 0;    // the .edo file, less its vocabulary section
  uint64_t vocab_bytes = 0;   // the vocabulary section (FORMAT.md 9.7), when the input had words
  uint64_t code_size = 0;     // bytes per row
  uint64_t state_bytes = 0;   // the codec's state (codebooks, basis, ...): a fixed cost, whatever the rows
  double ratio = 0;           // compression_ratio(fp32_bytes, file_bytes)
  double bits_per_value = 0;  // file_bytes * 8 / values
  // Reconstruction, over every row (double accumulation).
  double rel_frobenius = 0, mse = 0, cos_mean = 0, cos_min = 0;
  double train_seconds = 0, encode_seconds = 0;
  // Input fp32 bytes per second of encode alone (reading and error checks excluded).
  double encode_gbps() const { return encode_seconds > 0 ? static_cast<double>(fp32_bytes) / encode_seconds / 1e9 : 0; }
  std::string device;
};

// Streams `input` through the codec into a one-tier .edo at `out_path`
// through write_table() (temporary name, renamed on success). Memory: one
// block of rows, its codes and the training sample.
QuantizeReport quantize_to_edo(io::TableReader& input, const std::string& out_path, const QuantizeOptions& opt);

// edo-quantize's report (lib/store/write_report.cpp): the JSON object and
// the text lines after the "INPUT -> OUTPUT" line, each ending in a newline.
nlohmann::json quantize_report_json(const QuantizeReport& rep);
std::string quantize_report_text(const QuantizeReport& rep);

// Any .edo file (one tier or many) read as a table: rows_f32() decodes just
// the rows asked for, through the reader library (reader.hpp). A one-tier
// file also hands out its codes (CodedRows), for ADC evaluation. A table of
// a model file (FORMAT.md section 10) is read in place: open_table() keeps
// the model's Reader alive as long as the table.
class EdoTable final : public io::TableReader, public CodedRows {
 public:
  // A model file of one table opens as that table; of several, a usage
  // error naming them (open_table() picks one).
  static std::unique_ptr<EdoTable> open(const std::string& path, io::Verify verify = io::Verify::structure,
                                        Device decode_device = Device::cpu);
  // Table `name` of `file` (Reader::table: a one-table file's own name, or
  // one of a model's; a usage error naming the tables otherwise).
  static std::unique_ptr<EdoTable> open_table(std::shared_ptr<const Reader> file, std::string_view name);
  // Reader options for open(): verify and the decode device.
  static std::shared_ptr<const Reader> open_reader(const std::string& path, io::Verify verify = io::Verify::structure,
                                                   Device decode_device = Device::cpu);
  const float* rows_f32(uint64_t begin, uint64_t count) override;
  const io::Container& container() const { return reader_->container(); }
  const Reader& reader() const { return *reader_; }
  uint64_t file_bytes() const { return reader_->file_bytes(); }
  const Codec* codes_codec() const override { return reader_->single_tier_codec(); }
  const uint8_t* codes_of(uint64_t begin, uint64_t count) override;
  // The file's vocabulary section (FORMAT.md 9.7), read on first use; null without one.
  const std::vector<std::string>* vocabulary() const override;

 private:
  EdoTable(const std::string& path, std::shared_ptr<const Reader> file, const Reader& table);
  std::shared_ptr<const Reader> file_;  // owns the mapping (a model file's, for one of its tables)
  const Reader* reader_;                // the table: *file_, or one of its model tables
  std::vector<float> buffer_;
  mutable std::once_flag vocab_once_;
  mutable std::optional<std::vector<std::string>> vocab_;
};

// open_table() plus .edo files (by extension or magic), shard sets
// (shard_set.hpp) and the codes edo-unpack --codes writes to safetensors
// (safetensors_codes.hpp).
std::unique_ptr<io::TableReader> open_any_table(const std::string& spec, io::Verify verify = io::Verify::structure);
// A shard set as one table: its rows decoded by each shard's Reader.
std::unique_ptr<io::TableReader> open_shard_set_table(const std::string& path, io::Verify verify);
bool is_edo_file(const std::string& path);

}  // namespace edo

namespace edo {

// The size of a .edo file as its tool wrote it: the results `--eval` adds to
// the manifest afterwards are left out, so the ratio a file records in its
// own manifest is the one edo-eval measures on it later.
uint64_t written_file_bytes(const io::Container& c);

// What a compressed table costs, what compression_ratio() divides by: a
// .edo file's written_file_bytes(), or for other tables the bytes of their
// stored values.
uint64_t compressed_bytes(io::TableReader& table);

// Copies the container at `src` to `dst` (temporary name, renamed on
// success) with `extra` merged into its manifest; sections are unchanged.
void republish_with_manifest(const std::string& src, const std::string& dst, const nlohmann::json& extra);

}  // namespace edo

namespace edo {
class EvalResult;
// Adds bytes_before (the original as fp32), bytes_after (compressed_bytes),
// ratio and bits_per_value to an evaluation result.
void add_memory_metrics(EvalResult& result, io::TableReader& original, io::TableReader& compressed);
// Evaluation groups by tier: eo.group_names and eo.groups set so that
// evaluate() adds <tier>.* metrics for each tier of `reader`'s file.
void group_by_tier(EvalOptions& eo, const Reader& reader);

}  // namespace edo
