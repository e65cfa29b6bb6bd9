// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/shard_set.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace edo {

std::optional<ShardEntry> shard_entry_of(const nlohmann::json& manifest, const std::string& path) {
  const auto it = manifest.find("shard");
  if (it == manifest.end()) return std::nullopt;
  if (!it->is_object()) EDO_CORRUPT_FAIL("{}: manifest: \"shard\" is not an object", path);
  const auto field = [&](const char* key) {
    if (!it->contains(key) || !(*it)[key].is_number_unsigned())
      EDO_CORRUPT_FAIL("{}: manifest: the shard entry has no \"{}\" (an integer >= 0)", path, key);
    return (*it)[key].get<uint64_t>();
  };
  return ShardEntry{field("index"), field("count"), field("first_row"), field("table_rows")};
}

bool is_shard_set_file(const std::string& path) {
  // The key may follow others ("dim" sorts first) and any whitespace: the first 4 KiB.
  if (!io::is_regular_file(path)) return false;  // a FIFO would block the read; the open that follows refuses it
  std::ifstream f(path, std::ios::binary);
  std::string text(4096, '\0');
  f.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(f.gcount()));
  const size_t brace = text.find_first_not_of(" \t\r\n");
  return brace != std::string::npos && text[brace] == '{' && text.find("\"edo_shard_set\"") != std::string::npos;
}

namespace {

uint64_t entry_number(const nlohmann::json& e, const char* key, const std::string& path, size_t i) {
  if (!e.contains(key) || !e[key].is_number_unsigned())
    EDO_CORRUPT_FAIL("{}: shard entry {} has no \"{}\" (an integer >= 0)", path, i, key);
  return e[key].get<uint64_t>();
}

uint64_t hex_number(const nlohmann::json& e, const char* key, const std::string& path, size_t i) {
  uint64_t v = 0;
  const std::string s = e.contains(key) && e[key].is_string() ? e[key].get<std::string>() : "";
  if (s.size() != 16 || std::from_chars(s.data(), s.data() + s.size(), v, 16).ptr != s.data() + s.size())
    EDO_CORRUPT_FAIL("{}: shard entry {} has no \"{}\" (16 hex digits)", path, i, key);
  return v;
}

// A shard's file, beside the set unless its name is absolute.
std::string resolve(const std::string& set_path, const std::string& file) {
  if (file.empty() || file.find('\0') != std::string::npos)
    EDO_CORRUPT_FAIL("{}: a shard entry names no file", set_path);
  if (file.front() == '/') return file;
  const std::filesystem::path dir = std::filesystem::path(set_path).parent_path();
  return (dir.empty() ? std::filesystem::path(file) : dir / file).string();
}

}  // namespace

ShardSet ShardSet::open(const std::string& path, const ReaderOptions& options) {
  if (options.unknown_ids == UnknownIdPolicy::hash)
    EDO_USAGE_FAIL("{}: a shard set answers unknown ids with an error or the default vector, not by hash", path);
  const io::MappedFile f(path);
  if (f.size() > kMaxShardSetBytes) EDO_CORRUPT_FAIL("{}: a shard set of {} bytes is too large", path, f.size());
  const nlohmann::json j = nlohmann::json::parse(f.data(), f.data() + f.size(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("edo_shard_set") || j["edo_shard_set"] != 1 ||
      !j.contains("shards") || !j["shards"].is_array() || j["shards"].empty())
    EDO_CORRUPT_FAIL("{}: not a shard set (edo-pack --shard-set writes one)", path);
  ShardSet set;
  set.path_ = path;
  set.unknown_ = options.unknown_ids;
  set.rows_ = entry_number(j, "rows", path, 0);
  set.dim_ = entry_number(j, "dim", path, 0);
  ReaderOptions sub = options;
  sub.allow_shard = true;
  uint64_t next = 0;
  const nlohmann::json& list = j["shards"];
  for (size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    if (!e.is_object() || !e.contains("file") || !e["file"].is_string())
      EDO_CORRUPT_FAIL("{}: shard entry {} names no file", path, i);
    const std::string file = resolve(path, e["file"].get<std::string>());
    const uint64_t first = entry_number(e, "first_row", path, i), rows = entry_number(e, "rows", path, i);
    const uint64_t bytes = entry_number(e, "file_bytes", path, i),
                   fingerprint = hex_number(e, "manifest_xxh64", path, i);
    if (first != next)
      EDO_CORRUPT_FAIL("{}: shard entry {} starts at row {}, where the entries before end at {}", path, i, first, next);
    Reader r = Reader::open(file, sub);
    const io::Container& c = r.container();
    if (c.file_size() != bytes || c.manifest_checksum() != fingerprint)
      EDO_CORRUPT_FAIL(
          "{}: changed since {} was written ({} bytes, manifest checksum {:016x}; the set records {} and "
          "{:016x}): write the set again",
          file, path, c.file_size(), c.manifest_checksum(), bytes, fingerprint);
    const std::optional<ShardEntry> said = shard_entry_of(c.manifest(), file);
    if (!said || said->first_row != first || r.rows() != rows || said->table_rows != set.rows_ || said->index != i ||
        said->count != list.size())
      EDO_CORRUPT_FAIL("{}: not shard {}/{} (rows {} to {} of {}) as {} says", file, i, list.size(), first,
                       first + rows, set.rows_, path);
    if (r.dim() != set.dim_) EDO_CORRUPT_FAIL("{}: {} columns, where {} says {}", file, r.dim(), path, set.dim_);
    set.first_.push_back(first);
    set.shards_.push_back(std::move(r));
    next = first + rows;
  }
  if (next != set.rows_) EDO_CORRUPT_FAIL("{}: its shards hold {} of the table's {} rows", path, next, set.rows_);
  return set;
}

uint64_t ShardSet::file_bytes() const {
  uint64_t total = 0;
  for (const Reader& r : shards_) total += r.file_bytes();
  return total;
}

void ShardSet::lookup(const int64_t* ids, size_t n, float* out) const {
  // Positions of the ids each shard answers, in the ids' order.
  std::vector<std::vector<size_t>> at(shards_.size());
  for (size_t i = 0; i < n; ++i) {
    const int64_t id = ids[i];
    if (id < 0 || static_cast<uint64_t>(id) >= rows_) {
      if (unknown_ == UnknownIdPolicy::error) EDO_FAIL("{}: id {} is outside the table's {} rows", path_, id, rows_);
      at[0].push_back(i);  // shard 0 answers it with the default vector, as every shard would
      continue;
    }
    const auto s = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), static_cast<uint64_t>(id)) -
                                       first_.begin() - 1);
    at[s].push_back(i);
  }
  std::vector<int64_t> local;
  std::vector<float> rows;
  for (size_t s = 0; s < shards_.size(); ++s) {
    if (at[s].empty()) continue;
    local.clear();
    for (size_t i : at[s]) {
      const int64_t id = ids[i];
      const bool inside = id >= 0 && static_cast<uint64_t>(id) < rows_;
      local.push_back(inside ? id - static_cast<int64_t>(first_[s]) : -1);
    }
    rows.resize(local.size() * dim_);
    shards_[s].lookup(local.data(), local.size(), rows.data());
    for (size_t k = 0; k < at[s].size(); ++k)
      std::memcpy(out + at[s][k] * dim_, rows.data() + k * dim_, dim_ * sizeof(float));
  }
}

void ShardSet::decode_rows(uint64_t begin, uint64_t count, float* out) const {
  if (begin > rows_ || count > rows_ - begin)
    EDO_FAIL("{}: rows [{}, {}+{}) are outside the table ({} rows)", path_, begin, begin, count, rows_);
  while (count > 0) {
    const auto s = static_cast<size_t>(std::upper_bound(first_.begin(), first_.end(), begin) - first_.begin() - 1);
    const uint64_t local = begin - first_[s];
    const uint64_t n = std::min(count, shards_[s].rows() - local);
    shards_[s].decode_rows(local, n, out);
    out += n * dim_;
    begin += n;
    count -= n;
  }
}

}  // namespace edo
