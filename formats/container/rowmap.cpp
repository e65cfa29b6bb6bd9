// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/rowmap.hpp>

#include <bit>
#include <cstring>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace edo::io {

static_assert(std::endian::native == std::endian::little, "the rank section is read in place as little-endian u64");

std::vector<uint64_t> rowmap_rank(const uint8_t* tier_of_row, uint64_t rows, uint32_t tiers) {
  const uint64_t blocks = (rows + kRowMapBlock - 1) / kRowMapBlock;
  std::vector<uint64_t> rank(blocks * tiers);
  std::vector<uint64_t> seen(tiers, 0);
  for (uint64_t b = 0; b < blocks; ++b) {
    std::memcpy(rank.data() + b * tiers, seen.data(), tiers * sizeof(uint64_t));
    const uint64_t end = std::min(rows, (b + 1) * kRowMapBlock);
    for (uint64_t i = b * kRowMapBlock; i < end; ++i) {
      EDO_CHECK(tier_of_row[i] < tiers, "row map: row {} has tier {} of {}", i, tier_of_row[i], tiers);
      ++seen[tier_of_row[i]];
    }
  }
  return rank;
}

std::vector<uint64_t> rowmap_runs(const uint8_t* tier_of_row, uint64_t rows, uint64_t max_runs) {
  std::vector<uint64_t> runs;
  std::vector<uint64_t> seen(256, 0);
  for (uint64_t i = 0; i < rows; ++i) {
    const uint8_t t = tier_of_row[i];
    if (i == 0 || t != tier_of_row[i - 1]) {
      if (runs.size() / 3 == max_runs) return {};
      runs.insert(runs.end(), {i, t, seen[t]});
    }
    ++seen[t];
  }
  return runs;
}

namespace {

uint64_t total_rows(const std::vector<uint64_t>& tier_rows, const std::string& path) {
  uint64_t total = 0;
  for (uint64_t r : tier_rows) {
    const auto sum = checked_add(total, r);
    if (!sum) EDO_CORRUPT_FAIL("{}: tier rows overflow", path);
    total = *sum;
  }
  return total;
}

// Bytes equal to t among p[0..n): 32 at a time with AVX2, then eight at a
// time: a byte of x = word ^ t*0x01.. is zero exactly when its high bit in
// ~((x & 0x7f..) + 0x7f.. | x | 0x7f..) is set.
uint64_t count_byte(const uint8_t* p, uint64_t n, uint8_t t) {
  constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7fULL;
  const uint64_t pattern = 0x0101010101010101ULL * t;
  uint64_t count = 0, j = 0;
#ifdef __AVX2__
  const __m256i wanted = _mm256_set1_epi8(static_cast<char>(t));
  for (; j + 32 <= n; j += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + j));
    count +=
        static_cast<uint64_t>(std::popcount(static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, wanted)))));
  }
#endif
  for (; j + 8 <= n; j += 8) {
    uint64_t w;
    std::memcpy(&w, p + j, sizeof w);
    const uint64_t x = w ^ pattern;
    count += static_cast<uint64_t>(std::popcount(~(((x & kLow7) + kLow7) | x | kLow7)));
  }
  for (; j < n; ++j) count += p[j] == t;
  return count;
}

}  // namespace

RowMap::RowMap(const uint8_t* tier, uint64_t tier_bytes, const uint8_t* rank, uint64_t rank_bytes, uint64_t rows,
               std::vector<uint64_t> tier_rows, std::string path)
    : tier_(tier), rank_(rank), rows_(rows), tier_rows_(std::move(tier_rows)), path_(std::move(path)) {
  const uint64_t tiers = tier_rows_.size();
  if (tiers == 0 || tiers > kMaxTiers)
    EDO_CORRUPT_FAIL("{}: row map for {} tiers (1 to {} allowed)", path_, tiers, kMaxTiers);
  if (tier_bytes != rows_)
    EDO_CORRUPT_FAIL("{}: row map tier section holds {} bytes for {} rows", path_, tier_bytes, rows_);
  const uint64_t blocks = rows_ / kRowMapBlock + (rows_ % kRowMapBlock != 0);
  const auto need = checked_mul(blocks * tiers, sizeof(uint64_t));
  if (!need || *need != rank_bytes)
    EDO_CORRUPT_FAIL("{}: row map rank section holds {} bytes, {} blocks of {} tiers need {}", path_, rank_bytes,
                     blocks, tiers, need ? *need : 0);
  const uint64_t total = total_rows(tier_rows_, path_);
  if (total != rows_) EDO_CORRUPT_FAIL("{}: the tiers hold {} rows, the table {}", path_, total, rows_);
}

uint64_t RowMap::rank_at(uint64_t block, uint32_t t) const {
  uint64_t v;
  std::memcpy(&v, rank_ + (block * tier_rows_.size() + t) * sizeof(uint64_t), sizeof v);
  return v;
}

bool RowMap::try_index_at(uint64_t row, uint32_t t, uint64_t& index) const {
  if (row == rows_) {
    index = tier_rows_[t];
    return true;
  }
  const uint64_t block = row / kRowMapBlock;
  const uint64_t base = rank_at(block, t);
  if (base > tier_rows_[t]) return false;
  index = base + count_byte(tier_ + block * kRowMapBlock, row - block * kRowMapBlock, static_cast<uint8_t>(t));
  return index <= tier_rows_[t];
}

bool RowMap::try_locate(uint64_t row, Location& loc) const {
  const uint32_t t = tier_[row];
  if (t >= tier_rows_.size()) return false;
  loc.tier = t;
  return try_index_at(row, t, loc.index) && loc.index < tier_rows_[t];
}

RowMap::Location RowMap::locate(uint64_t row) const {
  Location loc;
  if (row >= rows_) EDO_FAIL("{}: row {} is outside the table ({} rows)", path_, row, rows_);
  if (!try_locate(row, loc)) EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", path_, row);
  return loc;
}

void RowMap::validate() const {
  const uint32_t tiers = static_cast<uint32_t>(tier_rows_.size());
  std::vector<uint64_t> seen(tiers, 0);
  for (uint64_t i = 0; i < rows_; ++i) {
    if (i % kRowMapBlock == 0) {
      for (uint32_t t = 0; t < tiers; ++t) {
        if (rank_at(i / kRowMapBlock, t) != seen[t])
          EDO_CORRUPT_FAIL("{}: row map rank of tier {} at row {} is {}, the tier bytes say {}", path_, t, i,
                           rank_at(i / kRowMapBlock, t), seen[t]);
      }
    }
    if (tier_[i] >= tiers) EDO_CORRUPT_FAIL("{}: row map gives row {} tier {} of {}", path_, i, tier_[i], tiers);
    ++seen[tier_[i]];
  }
  for (uint32_t t = 0; t < tiers; ++t) {
    if (seen[t] != tier_rows_[t])
      EDO_CORRUPT_FAIL("{}: row map puts {} rows in tier {}, the manifest {}", path_, seen[t], t, tier_rows_[t]);
  }
}

RowRuns::RowRuns(const uint8_t* runs, uint64_t bytes, uint64_t rows, std::vector<uint64_t> tier_rows, std::string path)
    : runs_data_(runs),
      runs_(bytes / kRowRunBytes),
      rows_(rows),
      tier_rows_(std::move(tier_rows)),
      path_(std::move(path)) {
  const uint64_t tiers = tier_rows_.size();
  if (tiers == 0 || tiers > kMaxTiers)
    EDO_CORRUPT_FAIL("{}: row map for {} tiers (1 to {} allowed)", path_, tiers, kMaxTiers);
  if (bytes % kRowRunBytes != 0)
    EDO_CORRUPT_FAIL("{}: row map runs section holds {} bytes, not a whole number of {}-byte runs", path_, bytes,
                     kRowRunBytes);
  if (runs_ == 0 || runs_ > rows_)
    EDO_CORRUPT_FAIL("{}: row map holds {} runs for {} rows (1 to the rows allowed)", path_, runs_, rows_);
  const uint64_t total = total_rows(tier_rows_, path_);
  if (total != rows_) EDO_CORRUPT_FAIL("{}: the tiers hold {} rows, the table {}", path_, total, rows_);
  if (runs_ > kFewRuns) return;
  few_ = static_cast<size_t>(runs_);
  for (uint64_t k = 0; k < runs_; ++k) {
    const Run r = run(k);
    const uint64_t end = k + 1 < runs_ ? run(k + 1).first : rows_;
    const bool ok = r.first < end && end <= rows_ && r.tier < tiers && r.index <= tier_rows_[r.tier] &&
                    end - r.first <= tier_rows_[r.tier] - r.index;
    start_[k] = r.first;
    end_[k] = ok ? end : 0;
    tier_[k] = ok ? static_cast<uint32_t>(r.tier) : 0;
    base_[k] = ok ? r.index - r.first : 0;  // wraps; base + row is the index of a row in the run
  }
}

RowRuns::Run RowRuns::run(uint64_t k) const {
  Run r;
  std::memcpy(&r.first, runs_data_ + k * kRowRunBytes, 8);
  std::memcpy(&r.tier, runs_data_ + k * kRowRunBytes + 8, 8);
  std::memcpy(&r.index, runs_data_ + k * kRowRunBytes + 16, 8);
  return r;
}

bool RowRuns::try_locate_searched(uint64_t row, RowMap::Location& loc) const {
  // The last run whose first row is <= row; on a hostile (unsorted) section
  // the search still ends, and a run that does not hold the row is refused.
  uint64_t k = 0, hi = runs_;
  while (hi - k > 1) {
    const uint64_t mid = k + (hi - k) / 2;
    uint64_t first;
    std::memcpy(&first, runs_data_ + mid * kRowRunBytes, 8);
    if (first <= row) {
      k = mid;
    } else {
      hi = mid;
    }
  }
  const Run r = run(k);
  if (r.first > row || r.tier >= tier_rows_.size()) return false;
  if (k + 1 < runs_ && run(k + 1).first <= row) return false;
  const uint64_t offset = row - r.first;
  if (r.index >= tier_rows_[r.tier] || offset >= tier_rows_[r.tier] - r.index) return false;
  loc.tier = static_cast<uint32_t>(r.tier);
  loc.index = r.index + offset;
  return true;
}

void RowRuns::validate() const {
  std::vector<uint64_t> seen(tier_rows_.size(), 0);
  for (uint64_t k = 0; k < runs_; ++k) {
    const Run r = run(k);
    const uint64_t end = k + 1 < runs_ ? run(k + 1).first : rows_;
    if (k == 0 && r.first != 0) EDO_CORRUPT_FAIL("{}: row map's first run starts at row {}, not 0", path_, r.first);
    if (end <= r.first || end > rows_)
      EDO_CORRUPT_FAIL("{}: row map run {} ends at row {}, not after its first row {} and within the {} rows", path_, k,
                       end, r.first, rows_);
    if (r.tier >= tier_rows_.size())
      EDO_CORRUPT_FAIL("{}: row map run {} names tier {} of {}", path_, k, r.tier, tier_rows_.size());
    if (r.index != seen[r.tier])
      EDO_CORRUPT_FAIL("{}: row map run {} starts at index {} of tier {}, its earlier runs say {}", path_, k, r.index,
                       r.tier, seen[r.tier]);
    seen[r.tier] += end - r.first;
  }
  for (uint32_t t = 0; t < seen.size(); ++t) {
    if (seen[t] != tier_rows_[t])
      EDO_CORRUPT_FAIL("{}: row map puts {} rows in tier {}, the manifest {}", path_, seen[t], t, tier_rows_[t]);
  }
}

}  // namespace edo::io
