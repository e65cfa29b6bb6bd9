// SPDX-License-Identifier: Apache-2.0
#include <edo/build_info.hpp>
#include <edo/checked.hpp>
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/vocab.hpp>
#include <edo/parallel.hpp>
#include <edo/random.hpp>
#include <edo/safetensors_codes.hpp>
#include <edo/shard_set.hpp>

#include <fmt/ranges.h>

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>

namespace edo {

QuantizeReport quantize_to_edo(io::TableReader& input, const std::string& out_path, const QuantizeOptions& opt) {
  TableLayout layout;
  layout.tiers = {{"all", opt.spec, Residency::host, "rest"}};
  const TableWriteReport w = write_table(input, out_path, layout, opt);
  const TierWriteReport& tier = w.tiers[0];
  QuantizeReport rep;
  rep.spec = tier.codec;
  rep.rows = w.rows;
  rep.dim = w.dim;
  rep.fp32_bytes = w.fp32_bytes;
  rep.input_bytes = input.payload_bytes();
  rep.file_bytes = w.file_bytes;
  rep.vocab_bytes = w.vocab_bytes;
  rep.code_size = tier.code_size;
  rep.state_bytes = tier.bytes - tier.rows * tier.code_size;  // a codec tier: its codes, then its state
  rep.ratio = w.ratio;
  rep.bits_per_value = static_cast<double>(w.file_bytes) * 8.0 / static_cast<double>(w.rows * w.dim);
  rep.rel_frobenius = tier.recon.rel_fro;
  rep.mse = tier.recon.mse;
  rep.cos_mean = tier.recon.cos_mean;
  rep.cos_min = tier.recon.cos_min;
  rep.train_seconds = w.train_seconds;
  rep.encode_seconds = w.encode_seconds;
  rep.device = device_name(opt.device);
  return rep;
}

EdoTable::EdoTable(const std::string& path, std::shared_ptr<const Reader> file, const Reader& table)
    : TableReader(path, "edo"), file_(std::move(file)), reader_(&table) {
  rows_ = reader_->rows();
  dim_ = reader_->dim();
  dtype_ = io::DType::f32;
}

std::shared_ptr<const Reader> EdoTable::open_reader(const std::string& path, io::Verify verify, Device decode_device) {
  ReaderOptions opt;
  opt.verify = verify;
  opt.decode_device = decode_device;
  return std::make_shared<const Reader>(Reader::open(path, opt));
}

std::unique_ptr<EdoTable> EdoTable::open(const std::string& path, io::Verify verify, Device decode_device) {
  std::shared_ptr<const Reader> file = open_reader(path, verify, decode_device);
  const std::vector<std::string> names = file->tables();
  if (file->is_model() && names.size() == 1) return open_table(std::move(file), names.front());
  if (file->is_model())
    EDO_USAGE_FAIL("{}: a model file of {} tables ({}{}): name one", path, names.size(),
                   fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 20), ", "),
                   names.size() > 20 ? ", ..." : "");
  const Reader& table = *file;
  return std::unique_ptr<EdoTable>(new EdoTable(path, std::move(file), table));
}

std::unique_ptr<EdoTable> EdoTable::open_table(std::shared_ptr<const Reader> file, std::string_view name) {
  const Reader& table = file->table(name);
  const std::string path = file->is_model() ? table.path() : file->path();
  return std::unique_ptr<EdoTable>(new EdoTable(path, std::move(file), table));
}

const std::vector<std::string>* EdoTable::vocabulary() const {
  std::call_once(vocab_once_, [&] { vocab_ = io::read_vocab_section(reader_->container()); });
  return vocab_ ? &*vocab_ : nullptr;
}

const float* EdoTable::rows_f32(uint64_t begin, uint64_t count) {
  check_range(begin, count);
  buffer_.resize(count * dim_);
  reader_->decode_rows(begin, count, buffer_.data());
  return buffer_.data();
}

const uint8_t* EdoTable::codes_of(uint64_t begin, uint64_t count) {
  check_range(begin, count);
  const Codec* codec = reader_->single_tier_codec();
  if (!codec) EDO_FAIL("{}: a tiered file has no single code array", path());
  return reader_->single_tier_codes() + begin * codec->code_size();
}

bool is_edo_file(const std::string& path) {
  if (!io::is_regular_file(path)) return false;  // a FIFO would block the read; the open that follows refuses it
  std::ifstream f(path, std::ios::binary);
  uint8_t magic[8] = {};
  if (!f.read(reinterpret_cast<char*>(magic), 8)) return false;
  return std::memcmp(magic, io::kContainerMagic, 8) == 0;
}

namespace {

// A shard set (shard_set.hpp) read as one table.
class ShardSetTable final : public io::TableReader {
 public:
  ShardSetTable(const std::string& path, ShardSet set) : TableReader(path, "edo shard set"), set_(std::move(set)) {
    rows_ = set_.rows();
    dim_ = set_.dim();
    dtype_ = io::DType::f32;
  }
  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    buffer_.resize(count * dim_);
    set_.decode_rows(begin, count, buffer_.data());
    return buffer_.data();
  }
  uint64_t payload_bytes() const override {
    uint64_t total = 0;
    for (size_t i = 0; i < set_.shard_count(); ++i) total += written_file_bytes(set_.shard(i).container());
    return total;
  }
  const std::vector<std::string>* vocabulary() const override {
    std::call_once(once_, [&] {
      std::vector<std::string> all;
      for (size_t i = 0; i < set_.shard_count(); ++i) {
        const auto part = io::read_vocab_section(set_.shard(i).container());
        if (!part) return;
        all.insert(all.end(), part->begin(), part->end());
      }
      words_ = std::move(all);
    });
    return words_ ? &*words_ : nullptr;
  }

 private:
  ShardSet set_;
  std::vector<float> buffer_;
  mutable std::once_flag once_;
  mutable std::optional<std::vector<std::string>> words_;
};

}  // namespace

std::unique_ptr<io::TableReader> open_shard_set_table(const std::string& path, io::Verify verify) {
  ReaderOptions opt;
  opt.verify = verify;
  return std::make_unique<ShardSetTable>(path, ShardSet::open(path, opt));
}

std::unique_ptr<io::TableReader> open_any_table(const std::string& spec, io::Verify verify) {
  if (spec != "-" && is_edo_file(spec)) return EdoTable::open(spec, verify);
  if (spec != "-" && is_shard_set_file(spec)) return open_shard_set_table(spec, verify);
  const io::TableSpec parts = io::split_table_spec(spec);
  if (parts.file.ends_with(".safetensors"))
    if (auto codes = open_safetensors_codes(parts.file, parts.member, spec)) return codes;
  return io::open_table(spec);
}

}  // namespace edo

namespace edo {

uint64_t written_file_bytes(const io::Container& c) {
  // The words of the rows are not the table: their section (padded to the
  // alignment, as laid out) is left out like --eval's results.
  uint64_t words = 0;
  if (c.manifest().contains("vocab") && c.manifest()["vocab"].is_object() &&
      c.manifest()["vocab"].value("section", "") == io::kVocabSection && c.has_section(io::kVocabSection)) {
    words = io::align_up(c.section(io::kVocabSection).size);
  }
  if (!c.manifest().contains("eval")) return c.file_size() - words;
  nlohmann::json manifest = c.manifest();
  manifest.erase("eval");
  const uint64_t end = c.manifest_offset() + manifest.dump().size();
  return io::align_up(end) - words;
}

uint64_t compressed_bytes(io::TableReader& table) {
  if (auto* edo = dynamic_cast<EdoTable*>(&table)) return written_file_bytes(edo->container());
  return table.payload_bytes();  // a shard set's: its shards' written bytes
}

void republish_with_manifest(const std::string& src, const std::string& dst, const nlohmann::json& extra) {
  const io::Container in = io::Container::open(src, io::Verify::all);
  io::ContainerWriter out(dst);
  for (const auto& s : in.sections()) {
    const io::SectionView v = in.section(s.name);
    out.add_section(s.name, v.data, v.size);
  }
  nlohmann::json manifest = in.manifest();
  manifest.erase("sections");
  for (const auto& [key, value] : extra.items()) manifest[key] = value;
  out.finish(manifest);
}

}  // namespace edo

#include <edo/eval.hpp>

namespace edo {

void add_memory_metrics(EvalResult& result, io::TableReader& original, io::TableReader& compressed) {
  const double before = static_cast<double>(original.rows() * original.dim() * 4);
  const uint64_t after = compressed_bytes(compressed);
  result.set("bytes_before", before);
  result.set("bytes_after", static_cast<double>(after));
  result.set("ratio", compression_ratio(original.rows() * original.dim() * sizeof(float), after));
  const double bits = static_cast<double>(after) * 8.0 / static_cast<double>(original.rows() * original.dim());
  result.set("bits_per_value", bits);
  set_rate_gap(result, bits);
}

void group_by_tier(EvalOptions& eo, const Reader& reader) {
  eo.group_names.clear();
  eo.fallback_groups.clear();
  for (const auto& t : reader.tiers()) {
    const bool stand_in = is_fallback(t.kind);
    if (stand_in) eo.fallback_groups.push_back(static_cast<uint32_t>(eo.group_names.size()));
    eo.group_names.push_back(t.name);
  }
  eo.groups.resize(reader.rows());
  for (uint64_t r = 0; r < reader.rows(); ++r) eo.groups[r] = reader.tier_of(r);
}

}  // namespace edo
