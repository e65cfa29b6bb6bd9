// SPDX-License-Identifier: Apache-2.0
// A shard set (docs/SCALE.md, FORMAT.md 9.9): a small JSON file naming the
// shard files of one table with their row ranges and fingerprints, read as
// that table without copying: each shard is mapped by its own Reader and
// lookups go to the shard that holds each id.
#pragma once

#include <edo/reader.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edo {

// Largest shard-set file read (a set names at most a few thousand shards).
inline constexpr uint64_t kMaxShardSetBytes = uint64_t{16} << 20;

// A shard's manifest entry (FORMAT.md 9.8), the one parse of it.
struct ShardEntry {
  uint64_t index = 0, count = 0, first_row = 0, table_rows = 0;
};
// nullopt when the manifest has no "shard" entry; an error naming `path` when
// it is malformed (not an object, a field missing or not an integer >= 0).
std::optional<ShardEntry> shard_entry_of(const nlohmann::json& manifest, const std::string& path);

// True when the file begins like a shard set ('{' then the "edo_shard_set" key).
bool is_shard_set_file(const std::string& path);

class ShardSet {
 public:
  // Opens every shard (their manifests, not their sections, unless
  // options.verify says all) and checks each against the set: the file's
  // size and its manifest's checksum as recorded (a shard rewritten since
  // the set was made is refused), its shard entry, its columns; the shards
  // tile the table's rows. Hashed unknown ids are not offered.
  static ShardSet open(const std::string& path, const ReaderOptions& options = {});

  const std::string& path() const { return path_; }
  uint64_t rows() const { return rows_; }
  uint64_t dim() const { return dim_; }
  size_t shard_count() const { return shards_.size(); }
  const Reader& shard(size_t i) const { return shards_[i]; }
  uint64_t first_row(size_t i) const { return first_[i]; }
  uint64_t file_bytes() const;  // the shard files' sizes, summed

  // As Reader::lookup: ids grouped by shard, each shard's rows decoded by
  // its Reader and put back in the ids' order.
  void lookup(const int64_t* ids, size_t n, float* out) const;
  // As Reader::decode_rows, across shard boundaries.
  void decode_rows(uint64_t begin, uint64_t count, float* out) const;

 private:
  std::string path_;
  uint64_t rows_ = 0, dim_ = 0;
  UnknownIdPolicy unknown_ = UnknownIdPolicy::error;
  std::vector<Reader> shards_;
  std::vector<uint64_t> first_;  // each shard's first row, ascending
};

}  // namespace edo
