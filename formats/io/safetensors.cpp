// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/safetensors.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <set>
#include <unordered_set>

namespace edo::io {

namespace {

struct DTypeName {
  const char* name;
  uint64_t size;
  std::optional<DType> dtype;
};

// The format's dtypes with their sizes; BOOL is known (for the size check) but not a table type.
constexpr DTypeName kDTypes[] = {
    {"F64", 8, DType::f64},         {"F32", 4, DType::f32},         {"F16", 2, DType::f16},    {"BF16", 2, DType::bf16},
    {"F8_E4M3", 1, DType::f8_e4m3}, {"F8_E5M2", 1, DType::f8_e5m2}, {"I64", 8, DType::i64},    {"U64", 8, DType::u64},
    {"I32", 4, DType::i32},         {"U32", 4, DType::u32},         {"I16", 2, DType::i16},    {"U16", 2, DType::u16},
    {"I8", 1, DType::i8},           {"U8", 1, DType::u8},           {"BOOL", 1, std::nullopt},
};

const DTypeName* find_dtype(const std::string& name) {
  for (const DTypeName& d : kDTypes)
    if (name == d.name) return &d;
  return nullptr;
}

SafetensorsTensor parse_entry(const std::string& name, const nlohmann::json& v, uint64_t data_offset,
                              uint64_t buffer_bytes, const std::string& path) {
  if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets") ||
      !v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() ||
      v["data_offsets"].size() != 2)
    EDO_FAIL("{}: tensor '{}': expected {{\"dtype\", \"shape\", \"data_offsets\": [begin, end]}}", path, name);
  SafetensorsTensor t;
  t.name = name;
  t.dtype_name = v["dtype"].get<std::string>();
  const DTypeName* d = find_dtype(t.dtype_name);
  if (d) t.dtype = d->dtype;
  uint64_t elements = 1;
  for (const auto& e : v["shape"]) {
    if (!e.is_number_unsigned()) EDO_FAIL("{}: tensor '{}': a shape entry is not an integer >= 0", path, name);
    t.shape.push_back(e.get<uint64_t>());
    const auto product = checked_mul(elements, t.shape.back());
    if (!product) EDO_FAIL("{}: tensor '{}': shape [{}] overflows", path, name, fmt::join(t.shape, ", "));
    elements = *product;
  }
  const auto& off = v["data_offsets"];
  if (!off[0].is_number_unsigned() || !off[1].is_number_unsigned())
    EDO_FAIL("{}: tensor '{}': data_offsets are not integers >= 0", path, name);
  const uint64_t begin = off[0].get<uint64_t>(), end = off[1].get<uint64_t>();
  if (begin > end || end > buffer_bytes)
    EDO_FAIL("{}: tensor '{}': data_offsets [{}, {}] outside the {} bytes after the header", path, name, begin, end,
             buffer_bytes);
  if (d) {
    const auto need = checked_mul(elements, d->size);
    if (!need || *need != end - begin)
      EDO_FAIL("{}: tensor '{}': {} of shape [{}] does not fit the {} bytes its data_offsets give", path, name,
               t.dtype_name, fmt::join(t.shape, ", "), end - begin);
  }
  t.begin = data_offset + begin;
  t.end = data_offset + end;
  return t;
}

std::string directory_of(const std::string& path) {
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? std::string(".") : dir.string();
}

// A sharded model's index: tensor name -> shard file (resolved beside the index).
std::map<std::string, std::string> read_index(const std::string& path) {
  const MappedFile f(path);
  if (f.size() > kMaxSafetensorsHeaderBytes) EDO_FAIL("{}: an index of {} bytes is too large", path, f.size());
  const nlohmann::json j = nlohmann::json::parse(f.data(), f.data() + f.size(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    EDO_FAIL("{}: not a safetensors index (a JSON object with a \"weight_map\" object)", path);
  std::map<std::string, std::string> out;
  std::set<std::string> checked;
  for (const auto& [name, file] : j["weight_map"].items()) {
    if (!file.is_string()) EDO_FAIL("{}: weight_map['{}'] is not a file name", path, name);
    const std::string shard = file.get<std::string>();
    if (shard.find('/') != std::string::npos || shard == "." || shard == ".." || shard.empty())
      EDO_FAIL("{}: weight_map['{}'] = '{}': shards must be files beside the index", path, name, shard);
    out[name] = directory_of(path) + "/" + shard;
    if (checked.insert(shard).second)
      check_link_beside(out[name], directory_of(path), path, hdf5_input_policy().allow_external);
  }
  return out;
}

SafetensorsHeader read_header(const MappedFile& f) {
  return parse_safetensors_header(f.data(), f.size(), f.size(), f.path());
}

bool is_table(const SafetensorsTensor& t) { return t.dtype && t.shape.size() == 2 && t.shape[0] > 0 && t.shape[1] > 0; }

// The readable 2-D tensors of one file's header, appended to `out`.
void add_tables(const SafetensorsHeader& h, const std::string& file, std::vector<SafetensorsTable>& out) {
  for (const SafetensorsTensor& t : h.tensors)
    if (is_table(t)) out.push_back({t.name, file, *t.dtype, t.shape[0], t.shape[1], t.bytes()});
}

void largest_first(std::vector<SafetensorsTable>& tables) {
  std::stable_sort(tables.begin(), tables.end(), [](const auto& a, const auto& b) { return a.bytes > b.bytes; });
}

std::string table_list(const std::vector<SafetensorsTable>& tables) {
  std::string s;
  for (size_t i = 0; i < tables.size() && i < 8; ++i)
    s += fmt::format("{}{} ({} x {} {})", i ? ", " : "", tables[i].name, tables[i].rows, tables[i].dim,
                     dtype_name(tables[i].dtype));
  if (tables.size() > 8) s += fmt::format(", and {} more (edo-profile FILE lists them all)", tables.size() - 8);
  return s;
}

}  // namespace

SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size, uint64_t file_size,
                                           const std::string& path) {
  if (size < 8 || file_size < 8) EDO_FAIL("{}: not a safetensors file: shorter than its 8-byte header length", path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];
  // The length is the file's content: a message never quotes it (a link to
  // a secret would show the secret's first 8 bytes as a number).
  if (n > kMaxSafetensorsHeaderBytes)
    EDO_FAIL("{}: not a safetensors file: its header length is more than the format's {} bytes", path,
             kMaxSafetensorsHeaderBytes);
  if (n > file_size - 8)
    EDO_FAIL("{}: not a safetensors file: its header length runs past the end of the file ({} bytes)", path, file_size);
  if (n > size - 8) EDO_FAIL("{}: the safetensors header is not all in memory", path);
  if (n == 0 || bytes[8] != '{') EDO_FAIL("{}: not a safetensors file: the header is not a JSON object", path);
  const nlohmann::json j = nlohmann::json::parse(bytes + 8, bytes + 8 + n, nullptr, false);
  if (j.is_discarded() || !j.is_object()) EDO_FAIL("{}: the safetensors header is not valid JSON", path);
  const uint64_t data_offset = 8 + n, buffer_bytes = file_size - data_offset;
  SafetensorsHeader h;
  for (const auto& [name, v] : j.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) EDO_FAIL("{}: __metadata__ is not an object", path);
      for (const auto& [k, s] : v.items()) {
        if (!s.is_string()) EDO_FAIL("{}: __metadata__['{}'] is not a string", path, k);
        h.metadata[k] = s.get<std::string>();
      }
      continue;
    }
    h.tensors.push_back(parse_entry(name, v, data_offset, buffer_bytes, path));
  }
  std::sort(h.tensors.begin(), h.tensors.end(), [](const SafetensorsTensor& a, const SafetensorsTensor& b) {
    return a.begin < b.begin || (a.begin == b.begin && a.end < b.end);
  });
  uint64_t next = data_offset;
  for (const SafetensorsTensor& t : h.tensors) {
    if (t.begin != next)
      EDO_FAIL("{}: tensor '{}' starts at byte {} of the buffer, where {} (tensors must tile it: no gap, no overlap)",
               path, t.name, t.begin - data_offset, next - data_offset);
    next = t.end;
  }
  if (next != file_size)
    EDO_FAIL("{}: the tensors cover {} of the {} bytes after the header", path, next - data_offset, buffer_bytes);
  return h;
}

bool is_safetensors_path(const std::string& path) {
  return path.ends_with(".safetensors") || path.ends_with(".safetensors.index.json");
}

std::vector<SafetensorsTable> list_safetensors_tables(const std::string& path) {
  std::vector<SafetensorsTable> out;
  std::vector<std::string> files;
  if (path.ends_with(".index.json")) {
    std::unordered_set<std::string> seen;  // an index may name 100,000 tensors
    for (const auto& [name, file] : read_index(path))
      if (seen.insert(file).second) files.push_back(file);
  } else {
    files.push_back(path);
  }
  for (const std::string& file : files) add_tables(read_header(MappedFile(file)), file, out);
  largest_first(out);
  return out;
}

std::vector<std::string> safetensors_tensor_names(const std::string& path) {
  std::vector<std::string> names;
  if (path.ends_with(".index.json")) {
    for (const auto& entry : read_index(path)) names.push_back(entry.first);
    return names;
  }
  for (const SafetensorsTensor& t : read_header(MappedFile(path)).tensors) names.push_back(t.name);
  return names;
}

std::unique_ptr<TableReader> open_safetensors(const std::string& path, const std::string& tensor,
                                              const std::string& display) {
  std::string file = path;
  if (path.ends_with(".index.json")) {
    if (tensor.empty()) {
      const auto tables = list_safetensors_tables(path);
      if (tables.size() != 1)
        EDO_FAIL("{}: name a tensor (file:tensor); the model's 2-D tensors: {}", display, table_list(tables));
      return open_safetensors(tables[0].file, tables[0].name, display);
    }
    const auto index = read_index(path);
    const auto it = index.find(tensor);
    if (it == index.end())
      EDO_FAIL("{}: no tensor '{}' in the index; its 2-D tensors: {}", display, tensor,
               table_list(list_safetensors_tables(path)));
    file = it->second;
  }
  MappedFile f(file);
  const SafetensorsHeader h = read_header(f);
  const SafetensorsTensor* pick = nullptr;
  std::vector<SafetensorsTable> tables;
  add_tables(h, file, tables);
  largest_first(tables);
  if (tensor.empty() && tables.size() != 1)
    EDO_FAIL("{}: name a tensor (file:tensor); its 2-D tensors: {}", display,
             tables.empty() ? std::string("none") : table_list(tables));
  const std::string& wanted = tensor.empty() ? tables[0].name : tensor;
  for (const SafetensorsTensor& t : h.tensors)
    if (t.name == wanted) pick = &t;
  if (!pick) EDO_FAIL("{}: no tensor '{}'; its 2-D tensors: {}", display, tensor, table_list(tables));
  if (!pick->dtype)
    EDO_NOT_A_TABLE(NotATableReason::dtype, "{}: tensor '{}' is {}, which edo does not read", display, pick->name,
                    pick->dtype_name);
  if (!is_table(*pick))
    EDO_NOT_A_TABLE(NotATableReason::shape, "{}: tensor '{}' has shape [{}], not a table (rows x dim)", display,
                    pick->name, fmt::join(pick->shape, ", "));
  const RowsLayout at{pick->shape[0], pick->shape[1], *pick->dtype, pick->begin};
  return open_mapped_rows(std::move(f), display, "safetensors", at);
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsTensor& t : header.tensors)
    if (t.name == name) return &t;
  return nullptr;
}

SafetensorsFile open_safetensors_file(const std::string& path) {
  MappedFile f(path);
  SafetensorsHeader h = read_header(f);
  return SafetensorsFile{std::move(f), std::move(h)};
}

uint64_t safetensors_dtype_size(const std::string& dtype_name) {
  const DTypeName* d = find_dtype(dtype_name);
  return d ? d->size : 0;
}

SafetensorsFileWriter::SafetensorsFileWriter(const std::string& path, std::vector<SafetensorsTensorSpec> tensors,
                                             const std::map<std::string, std::string>& metadata)
    : path_(path), file_(path), tensors_(std::move(tensors)) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const SafetensorsTensorSpec& t : tensors_) {
    const uint64_t size = safetensors_dtype_size(t.dtype_name);
    if (size == 0) EDO_FAIL("{}: safetensors has no dtype '{}'", path, t.dtype_name);
    if (t.name.empty() || t.name == "__metadata__" || header.contains(t.name))
      EDO_FAIL("{}: '{}' cannot name a tensor (empty, reserved or repeated)", path, t.name);
    uint64_t bytes = size;
    for (uint64_t e : t.shape) bytes *= e;
    header[t.name] = {{"dtype", t.dtype_name}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    begin_.push_back(offset);
    bytes_.push_back(bytes);
    offset += bytes;
  }
  written_.assign(tensors_.size(), 0);
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  file_.write(length, 8);
  file_.write(text.data(), text.size());
  for (uint64_t& b : begin_) b += 8 + text.size();
}

void SafetensorsFileWriter::write(size_t index, uint64_t offset, const void* data, uint64_t n) {
  if (index >= tensors_.size() || offset > bytes_[index] || n > bytes_[index] - offset)
    EDO_FAIL("{}: a write outside tensor {} of the file", path_, index);
  file_.pwrite(data, n, begin_[index] + offset);
  written_[index] += n;
}

void SafetensorsFileWriter::commit() {
  for (size_t i = 0; i < tensors_.size(); ++i)
    if (written_[i] != bytes_[i])
      EDO_FAIL("{}: tensor '{}': {} of its {} bytes written", path_, tensors_[i].name, written_[i], bytes_[i]);
  file_.commit();
}

namespace {

// One tensor, written as rows arrive.
class SafetensorsWriter final : public TableWriter {
 public:
  SafetensorsWriter(const std::string& path, const std::string& tensor, uint64_t rows, uint64_t dim, DType dtype)
      : TableWriter(rows, dim), path_(path), dtype_(dtype), file_(open(path, tensor, rows, dim, dtype)) {}

  void write_f32(const float* rows, uint64_t count) override {
    if (written_ + count > rows_) EDO_FAIL("{}: more rows written than the declared {}", path_, rows_);
    const uint64_t n = count * dim_, offset = written_ * dim_ * dtype_size(dtype_);
    if (dtype_ == DType::f32) {
      file_.write(0, offset, rows, n * 4);
    } else {
      scratch_.resize(n * dtype_size(dtype_));
      narrow_from_f32(dtype_, rows, n, scratch_.data());
      file_.write(0, offset, scratch_.data(), scratch_.size());
    }
    written_ += count;
  }

  void write_raw(const void* rows, uint64_t count) override {
    if (written_ + count > rows_) EDO_FAIL("{}: more rows written than the declared {}", path_, rows_);
    const uint64_t row_bytes = dim_ * dtype_size(dtype_);
    file_.write(0, written_ * row_bytes, rows, count * row_bytes);
    written_ += count;
  }

  void commit() override {
    if (written_ != rows_) EDO_FAIL("{}: {} rows written, {} declared", path_, written_, rows_);
    file_.commit();
  }

 private:
  static SafetensorsFileWriter open(const std::string& path, const std::string& tensor, uint64_t rows, uint64_t dim,
                                    DType dtype) {
    const char* name = dtype == DType::f32    ? "F32"
                       : dtype == DType::f16  ? "F16"
                       : dtype == DType::bf16 ? "BF16"
                       : dtype == DType::u8   ? "U8"
                                              : nullptr;
    if (!name)
      EDO_FAIL("{}: safetensors output takes float32, float16, bfloat16 or uint8, not {}", path, dtype_name(dtype));
    return SafetensorsFileWriter(path, {{tensor, name, {rows, dim}}}, {{"writer", "edo"}});
  }

  std::string path_;
  DType dtype_;
  SafetensorsFileWriter file_;
  uint64_t written_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace

std::unique_ptr<TableWriter> create_safetensors(const std::string& path, const std::string& tensor, uint64_t rows,
                                                uint64_t dim, DType dtype) {
  return std::make_unique<SafetensorsWriter>(path, tensor, rows, dim, dtype);
}

namespace {

// A tensor a table, laid out in the order given; rows converted from fp32 as they come.
class SafetensorsTablesWriter final : public MultiTableWriter {
 public:
  SafetensorsTablesWriter(const std::string& path, const std::vector<NamedTableShape>& tables, DType dtype)
      : path_(path), dtype_(dtype), tables_(tables), written_(tables.size(), 0), file_(open(path, tables, dtype)) {}

  void write_f32(size_t table, const float* rows, uint64_t count) override {
    const NamedTableShape& t = tables_.at(table);
    if (written_[table] + count > t.rows)
      EDO_FAIL("{}: more rows written to '{}' than the declared {}", path_, t.name, t.rows);
    const uint64_t n = count * t.dim, offset = written_[table] * t.dim * dtype_size(dtype_);
    if (dtype_ == DType::f32) {
      file_.write(table, offset, rows, n * 4);
    } else {
      scratch_.resize(n * dtype_size(dtype_));
      narrow_from_f32(dtype_, rows, n, scratch_.data());
      file_.write(table, offset, scratch_.data(), scratch_.size());
    }
    written_[table] += count;
  }

  void commit() override {
    for (size_t i = 0; i < tables_.size(); ++i)
      if (written_[i] != tables_[i].rows)
        EDO_FAIL("{}: '{}': {} rows written, {} declared", path_, tables_[i].name, written_[i], tables_[i].rows);
    file_.commit();
  }

 private:
  static SafetensorsFileWriter open(const std::string& path, const std::vector<NamedTableShape>& tables, DType dtype) {
    const char* name = dtype == DType::f32    ? "F32"
                       : dtype == DType::f16  ? "F16"
                       : dtype == DType::bf16 ? "BF16"
                                              : nullptr;
    if (!name) EDO_FAIL("{}: safetensors tables take float32, float16 or bfloat16, not {}", path, dtype_name(dtype));
    std::vector<SafetensorsTensorSpec> specs;
    for (const NamedTableShape& t : tables) specs.push_back({t.name, name, {t.rows, t.dim}});
    return SafetensorsFileWriter(path, std::move(specs), {{"writer", "edo"}});
  }

  std::string path_;
  DType dtype_;
  std::vector<NamedTableShape> tables_;
  std::vector<uint64_t> written_;
  SafetensorsFileWriter file_;
  std::vector<uint8_t> scratch_;
};

}  // namespace

std::unique_ptr<MultiTableWriter> create_safetensors_tables(const std::string& path,
                                                            const std::vector<NamedTableShape>& tables, DType dtype) {
  return std::make_unique<SafetensorsTablesWriter>(path, tables, dtype);
}

}  // namespace edo::io
