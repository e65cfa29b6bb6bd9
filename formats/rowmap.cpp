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

namespace {

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
  if (tiers == 0 || tiers > kMaxTiers) EDO_FAIL("{}: row map for {} tiers (1 to {} allowed)", path_, tiers, kMaxTiers);
  if (tier_bytes != rows_) EDO_FAIL("{}: row map tier section holds {} bytes for {} rows", path_, tier_bytes, rows_);
  const uint64_t blocks = rows_ / kRowMapBlock + (rows_ % kRowMapBlock != 0);
  const auto need = checked_mul(blocks * tiers, sizeof(uint64_t));
  if (!need || *need != rank_bytes)
    EDO_FAIL("{}: row map rank section holds {} bytes, {} blocks of {} tiers need {}", path_, rank_bytes, blocks, tiers,
             need ? *need : 0);
  uint64_t total = 0;
  for (uint64_t r : tier_rows_) {
    const auto sum = checked_add(total, r);
    if (!sum) EDO_FAIL("{}: tier rows overflow", path_);
    total = *sum;
  }
  if (total != rows_) EDO_FAIL("{}: the tiers hold {} rows, the table {}", path_, total, rows_);
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
  if (!try_locate(row, loc)) EDO_FAIL("{}: row map is corrupt at row {}", path_, row);
  return loc;
}

void RowMap::validate() const {
  const uint32_t tiers = static_cast<uint32_t>(tier_rows_.size());
  std::vector<uint64_t> seen(tiers, 0);
  for (uint64_t i = 0; i < rows_; ++i) {
    if (i % kRowMapBlock == 0) {
      for (uint32_t t = 0; t < tiers; ++t) {
        if (rank_at(i / kRowMapBlock, t) != seen[t])
          EDO_FAIL("{}: row map rank of tier {} at row {} is {}, the tier bytes say {}", path_, t, i,
                   rank_at(i / kRowMapBlock, t), seen[t]);
      }
    }
    if (tier_[i] >= tiers) EDO_FAIL("{}: row map gives row {} tier {} of {}", path_, i, tier_[i], tiers);
    ++seen[tier_[i]];
  }
  for (uint32_t t = 0; t < tiers; ++t) {
    if (seen[t] != tier_rows_[t])
      EDO_FAIL("{}: row map puts {} rows in tier {}, the manifest {}", path_, seen[t], t, tier_rows_[t]);
  }
}

}  // namespace edo::io
