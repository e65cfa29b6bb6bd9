// SPDX-License-Identifier: Apache-2.0
// Tables bigger than one machine (docs/SCALE.md): a table split into N
// contiguous row ranges, each encoded by its own process with a codec state
// trained once, and the shard files merged into the file one process would
// have written, byte for byte.
#pragma once

#include <edo/codec.hpp>
#include <edo/io/table.hpp>
#include <edo/table_writer.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edo {

// Shards split at multiples of this many rows (the profile's fixed row
// chunks), so per-chunk figures never straddle two shards.
inline constexpr uint64_t kShardChunkRows = 2048;

struct RowRange {
  uint64_t begin = 0, end = 0;
  uint64_t size() const { return end - begin; }
};

// Shard `index` of `count` of a table of `rows` rows: with C = ceil(rows /
// 2048) chunks, rows [2048 * floor(index * C / count), 2048 * floor((index +
// 1) * C / count)), the last ending at `rows`. Usage error when index >=
// count or a shard would be empty (count > C).
RowRange shard_rows(uint64_t rows, uint32_t index, uint32_t count);

// Rows `range` of `table` as a table of their own (the vocabulary sliced to
// them); `table` must outlive it.
std::unique_ptr<io::TableReader> row_range_view(io::TableReader& table, RowRange range);

// The manifest's "shard" entry of shard `index` of `count`.
nlohmann::json shard_entry(uint32_t index, uint32_t count, RowRange range, uint64_t table_rows);

// How a shard names the table it was cut from (--source-hash).
enum class SourceHash : uint8_t {
  sampled,  // the shape and kSourceSampleRows rows or one a MiB of fp32 bytes, whichever is more
  full,     // the shape and every row
};
inline constexpr uint64_t kSourceSampleRows = 65536;
SourceHash parse_source_hash(std::string_view name);  // "sampled" or "full"; else a usage error
const char* source_hash_name(SourceHash how);

// What says two shards were cut from the same table, whatever its file is
// called: XXH3 of its shape and of rows spread evenly over the whole table
// (fp32 bytes; the first and the last among them): min(rows, max(65536,
// ceil(rows * dim * 4 / 2^20))) of them when `sampled`, all when `full`.
// Every shard run reads the same rows, so shards of one table agree and
// shards of two tables that share a file name do not; two versions of a
// table that differ only outside the sampled rows agree unless `full`.
// Stored as the shard entry's "source_sample_xxh3" (docs/FORMAT.md 9.8,
// with "source_hash": "full" when full) and compared by merges.
uint64_t source_digest(io::TableReader& table, SourceHash how);
inline constexpr const char* kSourceSampleKey = "source_sample_xxh3";
inline constexpr const char* kSourceHashKey = "source_hash";

// ---- train once (edo-quantize --train-only / --trained) ------------------------------

// Trains `spec` on the same seeded sample of `input` that a whole-table run
// draws (opt.seed, opt.train_rows) and writes its state as a .edo with no
// rows ("trained_only"; FORMAT.md 9.8): write_trained_layout() of the one
// tier edo-quantize writes. Usage error for a codec that trains nothing.
void write_trained_state(io::TableReader& input, const std::string& out_path, const std::string& spec,
                         const WriteOptions& opt);

struct TrainedState {
  std::vector<TrainedTier> tiers;  // for WriteOptions::trained
  uint64_t dim = 0;
  nlohmann::json parameters;  // the training run's provenance parameters
  uint64_t seed = 0;
};
// Reads what write_trained_layout() wrote (every checksum verified).
TrainedState read_trained_state(const std::string& path);

// ---- merge (edo-pack --merge) -----------------------------------------------------------

// Concatenates shard files (any order on the command line) written by the
// same tool and parameters with the same codec state into `out_path`,
// streaming their code sections without decoding. Errors (nothing written)
// on a missing, repeated or overlapping shard, different states, counts or
// parameters. Returns the rows written.
uint64_t merge_shards(const std::vector<std::string>& paths, const std::string& out_path);

// The same checks as merge_shards() (on the shards' manifests: nothing is
// copied), then a shard-set file (shard_set.hpp, FORMAT.md 9.9) naming each
// shard (by its name alone when it sits beside the set), its rows, size and
// manifest checksum.
void write_shard_set(const std::vector<std::string>& paths, const std::string& out_path);

}  // namespace edo
