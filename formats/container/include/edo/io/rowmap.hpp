// SPDX-License-Identifier: Apache-2.0
// The row-to-tier map of a tiered .edo file (docs/FORMAT.md, "Tiered
// files"): which tier stores each table row, and where in that tier.
//
// Two sections:
//   tier  R bytes: byte i is the tier index of row i.
//   rank  ceil(R / 256) * T little-endian u64: entry [b * T + t] counts the
//         rows of tier t among rows [0, 256 b).
// A tier stores its rows in ascending row order, so the index of row i in its
// tier t is rank[(i / 256) * T + t] plus the rows of tier t among the rows of
// i's block before i: at most 255 bytes compared, eight at a time, O(1) per
// id; 1 + 8T / 256 bytes per row.
//
// Or, where the tiers' rows form few runs of consecutive ids (a table
// ordered by frequency whose ids are too, as word-vector vocabularies are),
// one section of runs (RowRuns): K runs of three little-endian u64 each,
// (first row, tier, index within the tier of that row): a count of at most
// 16 run starts per id, or a binary search over more.
//
// Opening checks only section sizes (cost independent of R); every lookup
// checks the tier id and the index it computes, so a hostile map yields an
// error, never an out-of-bounds read. validate() checks the whole map.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::io {

inline constexpr uint64_t kRowMapBlock = 256;
inline constexpr uint32_t kMaxTiers = 64;

// The rank checkpoints of a tier-id array (the `rank` section's values).
std::vector<uint64_t> rowmap_rank(const uint8_t* tier_of_row, uint64_t rows, uint32_t tiers);

// The runs of a tier-id array: K x (first row, tier, index within the tier),
// flattened (the `runs` section's values), consecutive runs in different
// tiers; empty when there are more than `max_runs` (the walk stops there, so
// memory stays bounded by max_runs, not by the rows).
std::vector<uint64_t> rowmap_runs(const uint8_t* tier_of_row, uint64_t rows, uint64_t max_runs);
// Bytes a run entry takes: three u64.
inline constexpr uint64_t kRowRunBytes = 24;

class RowMap {
 public:
  struct Location {
    uint32_t tier = 0;
    uint64_t index = 0;
  };

  RowMap() = default;
  // Views of the two sections (kept alive by the caller) for a table of
  // `rows` rows whose tiers hold tier_rows[t] rows each. Throws naming
  // `path` when a size does not match or the tier rows do not add up to rows.
  RowMap(const uint8_t* tier, uint64_t tier_bytes, const uint8_t* rank, uint64_t rank_bytes, uint64_t rows,
         std::vector<uint64_t> tier_rows, std::string path);

  uint64_t rows() const { return rows_; }
  uint32_t tiers() const { return static_cast<uint32_t>(tier_rows_.size()); }
  uint64_t tier_rows(uint32_t t) const { return tier_rows_[t]; }
  const uint8_t* tier_bytes() const { return tier_; }
  const std::string& path() const { return path_; }
  // False (and `loc` unspecified) when the map is corrupt at this row; row < rows() is the caller's.
  bool try_locate(uint64_t row, Location& loc) const;
  // Throws naming the file and the row when the map is corrupt there.
  Location locate(uint64_t row) const;
  // Index within tier t of the first row >= `row` stored in t (row <= rows()).
  bool try_index_at(uint64_t row, uint32_t t, uint64_t& index) const;
  // Reads every byte: tier ids in range, checkpoints equal to the counts,
  // per-tier totals equal to the tiers' rows. Throws naming the first fault.
  void validate() const;

 private:
  uint64_t rank_at(uint64_t block, uint32_t t) const;

  const uint8_t* tier_ = nullptr;
  const uint8_t* rank_ = nullptr;
  uint64_t rows_ = 0;
  std::vector<uint64_t> tier_rows_;
  std::string path_;
};

class RowRuns {
 public:
  struct Run {
    uint64_t first = 0, tier = 0, index = 0;
  };

  RowRuns() = default;
  // A view of the runs section (kept alive by the caller); throws naming
  // `path` when its size is not a whole number of runs, holds no run or more
  // runs than rows, or the tier rows do not add up to rows. A map of at most
  // kFewRuns runs (one a tier, the usual case) is also copied, each run
  // checked once against the table and its tier, so a lookup counts the run
  // starts at or before the row without a branch to mispredict on ids drawn
  // by frequency; more runs take a binary search.
  RowRuns(const uint8_t* runs, uint64_t bytes, uint64_t rows, std::vector<uint64_t> tier_rows, std::string path);

  uint64_t rows() const { return rows_; }
  uint64_t runs() const { return runs_; }
  uint32_t tiers() const { return static_cast<uint32_t>(tier_rows_.size()); }
  uint64_t tier_rows(uint32_t t) const { return tier_rows_[t]; }
  const std::string& path() const { return path_; }
  Run run(uint64_t k) const;
  // False when the map is corrupt at this row (row < rows(), the caller's):
  // the run that holds it does not, or its tier or index is out of range.
  bool try_locate(uint64_t row, RowMap::Location& loc) const {
    if (few_ == 0) return try_locate_searched(row, loc);
    size_t at = 0;
    for (size_t j = 1; j < few_; ++j) at += start_[j] <= row;
    if (row < start_[at] || row >= end_[at]) return false;
    loc.tier = tier_[at];
    loc.index = base_[at] + row;
    return true;
  }
  // Reads every run: first rows rising from 0, tiers in range, each run's
  // index the count of its tier's earlier rows, totals equal to the tiers'
  // rows. Throws naming the first fault.
  void validate() const;

 private:
  static constexpr size_t kFewRuns = 16;
  bool try_locate_searched(uint64_t row, RowMap::Location& loc) const;

  const uint8_t* runs_data_ = nullptr;
  uint64_t runs_ = 0;
  uint64_t rows_ = 0;
  std::vector<uint64_t> tier_rows_;
  std::string path_;
  // The copy of a few runs: a run that does not check out claims no row (end 0).
  size_t few_ = 0;
  uint64_t start_[kFewRuns] = {}, end_[kFewRuns] = {}, base_[kFewRuns] = {};
  uint32_t tier_[kFewRuns] = {};
};

}  // namespace edo::io
