// SPDX-License-Identifier: Apache-2.0
// The tier kinds a reader opens (a codec's code rows, one shared vector) and
// the id maps (identity, the packed row map).
#include "first_read_check.hpp"
#include "page_cache.hpp"
#include "pool_kernels.hpp"
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/hash.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/sparse.hpp>
#include <edo/tier.hpp>

#include <algorithm>
#include <array>
#include <cstring>

namespace edo {

namespace {

constexpr TierKindTraits kTierKinds[] = {
    {.kind = TierKind::codec,
     .name = "codec",
     .stages = {},
     .bare_word = false,
     .fallback = false,
     .answers_across_shards = false,
     .row_sections = {"codes"},
     .example = "int8"},
    {.kind = TierKind::shared_vector,
     .name = "default",
     .stages = {"default"},
     .bare_word = true,
     .fallback = true,
     .answers_across_shards = false,
     .row_sections = {},
     .example = "default"},
    {.kind = TierKind::sparse,
     .name = "sparse",
     .stages = {"csr", "bitmap"},
     .bare_word = false,
     .fallback = false,
     .answers_across_shards = false,
     .row_sections = {"values", "offsets", "indices", "masks", "params"},
     .example = "csr:density=0.5,values=fp16"},
    {.kind = TierKind::zero,
     .name = "zero",
     .stages = {"zero"},
     .bare_word = true,
     .fallback = true,
     .answers_across_shards = false,
     .row_sections = {},
     .example = "zero"},
    {.kind = TierKind::centroids,
     .name = "centroids",
     .stages = {"centroids"},
     .bare_word = false,
     .fallback = true,
     .answers_across_shards = false,
     .row_sections = {"assign"},
     .example = "centroids:4"},
    {.kind = TierKind::nearest,
     .name = "nearest",
     .stages = {"nearest"},
     .bare_word = false,
     .fallback = true,
     .answers_across_shards = true,
     .row_sections = {"target"},
     .example = "nearest"},
    {.kind = TierKind::hashed,
     .name = "hashed",
     .stages = {"hash", "qr"},
     .bare_word = false,
     .fallback = false,
     .answers_across_shards = true,
     .row_sections = {},
     .example = "hash:buckets=64"},
    {.kind = TierKind::grouped,
     .name = "grouped",
     .stages = {"group"},
     .bare_word = false,
     .fallback = false,
     .answers_across_shards = false,
     .row_sections = {},
     .example = "group:clusters=4"},
    {.kind = TierKind::lossless,
     .name = "lossless",
     .stages = {"lossless"},
     .bare_word = false,
     .fallback = false,
     .answers_across_shards = false,
     // Per-row payload, checked at a lookup's first read (the block offsets
     // and the segments' code lengths at open); a lossless tier never shards.
     .row_sections = {"raw", "codes", "rows"},
     .example = "lossless",
     .feature = "tier:lossless"},
};
static_assert(std::size(kTierKinds) == kTierKindCount);

constexpr bool rows_in_enum_order() {
  for (size_t i = 0; i < std::size(kTierKinds); ++i)
    if (static_cast<size_t>(kTierKinds[i].kind) != i) return false;
  return true;
}
static_assert(rows_in_enum_order(), "kTierKinds rows must follow TierKind's order");

}  // namespace

std::span<const TierKindTraits> tier_kinds() { return kTierKinds; }

const TierKindTraits& tier_kind_traits(TierKind kind) {
  const auto i = static_cast<size_t>(kind);
  if (i >= std::size(kTierKinds)) EDO_FAIL("tier kind {} is not in the traits table", i);
  return kTierKinds[i];
}

TierKind tier_kind_of(std::string_view codec_field) {
  const std::string_view stage = codec_field.substr(0, codec_field.find_first_of(":,"));
  for (const TierKindTraits& t : kTierKinds)
    for (const char* name : t.stages)
      if (name && stage == name && (!t.bare_word || codec_field == name)) return t.kind;
  return TierKind::codec;
}

const char* tier_kind_word(TierKind kind) {
  const TierKindTraits& t = tier_kind_traits(kind);
  return t.fallback ? t.stages[0] : nullptr;
}

bool is_row_section(TierKind kind, std::string_view role) {
  for (const char* r : tier_kind_traits(kind).row_sections)
    if (r && role == r) return true;
  return false;
}

TierStats tier_base_stats(const io::TierInfo& info, TierKind kind) {
  TierStats s;
  s.name = info.name;
  s.kind = kind;
  s.rows = info.rows;
  // Files written before residencies were recorded (edo-quantize 0.1) have none: host.
  s.residency = info.residency.value_or(Residency::host);
  return s;
}

io::SectionView tier_section(const io::Container& c, const io::TierInfo& info, const char* role,
                             std::optional<uint64_t> want, TierStats& stats) {
  const auto it = info.sections.find(role);
  if (it == info.sections.end()) EDO_CORRUPT_FAIL("{}: tier '{}': no '{}' section", c.path(), info.name, role);
  const io::SectionView v = c.section(it->second);
  if (!want || v.size != *want)
    EDO_CORRUPT_FAIL("{}: tier '{}': section '{}' holds {} bytes, {} expected", c.path(), info.name, it->second, v.size,
                     want ? *want : 0);
  stats.bytes += v.size;
  return v;
}

namespace {

std::string tier_error(const std::string& path, const std::string& tier, const std::string& what) {
  return fmt::format("{}: tier '{}': {}", path, tier, what);
}

// ---- codec tiers -------------------------------------------------------------------

}  // namespace

std::vector<NamedBlob> load_codec_state(const io::Container& c, const io::TierInfo& tier, const nlohmann::json& jt,
                                        std::initializer_list<const char*> skip) {
  const std::string& path = c.path();
  std::vector<NamedBlob> blobs;
  const nlohmann::json shapes = jt.value("state_shapes", nlohmann::json::object());
  if (!shapes.is_object()) EDO_CORRUPT_FAIL("{}", tier_error(path, tier.name, "state_shapes is not an object"));
  if (jt.contains("state_dtypes") && !jt["state_dtypes"].is_object())
    EDO_CORRUPT_FAIL("{}", tier_error(path, tier.name, "state_dtypes is not an object"));
  for (const auto& [role, section] : tier.sections) {
    if (std::find(skip.begin(), skip.end(), role) != skip.end()) continue;
    NamedBlob blob;
    blob.name = role;
    if (!shapes.contains(role) || !shapes[role].is_array() || shapes[role].size() > 8)
      EDO_CORRUPT_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' has no valid shape", role)));
    uint64_t count = 1;
    for (const auto& d : shapes[role]) {
      if (!d.is_number_unsigned())
        EDO_CORRUPT_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' has a bad shape", role)));
      const auto m = checked_mul(count, d.get<uint64_t>());
      if (!m) EDO_CORRUPT_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' shape overflows", role)));
      count = *m;
      blob.shape.push_back(d.get<uint64_t>());
    }
    const StateStorage storage = state_storage_in(jt, role, fmt::format("{}: tier '{}'", path, tier.name));
    const io::SectionView view = c.section(section);
    if (!read_state_section(blob, storage, view.data, view.size, count)) {
      const auto bytes = state_section_size(storage, count, blob.shape.empty() ? count : blob.shape.back());
      if (bytes && *bytes == view.size)
        EDO_CORRUPT_FAIL("{}: section '{}': an int8_exp2 row has an exponent above 121 or a code of -128", path,
                         section);
      EDO_CORRUPT_FAIL("{}: section '{}' holds {} bytes, its shape needs {} as {}", path, section, view.size,
                       bytes ? *bytes : 0, state_dtype_name(storage));
    }
    blobs.push_back(std::move(blob));
  }
  return blobs;
}

namespace {

class CodecTier final : public TierView {
 public:
  CodecTier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) {
    const std::string& path = c.path();
    stats_ = tier_base_stats(info, TierKind::codec);
    try {
      codec_ = make_decoder(info.codec, c.dim());
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}", tier_error(path, info.name, e.what()));
    }
    stats_.codec = codec_->spec();
    stats_.code_size = codec_->code_size();
    if (!jt.contains("code_size") || !jt["code_size"].is_number_unsigned() ||
        jt["code_size"].get<uint64_t>() != stats_.code_size)
      EDO_CORRUPT_FAIL("{}", tier_error(path, info.name,
                                        fmt::format("code_size does not match codec '{}' ({} bytes a row)", info.codec,
                                                    stats_.code_size)));
    const auto codes_it = info.sections.find("codes");
    if (codes_it == info.sections.end()) EDO_CORRUPT_FAIL("{}", tier_error(path, info.name, "no codes section"));
    const io::SectionView codes = c.section(codes_it->second);
    const auto need = checked_mul(info.rows, stats_.code_size);
    if (!need || *need != codes.size)
      EDO_CORRUPT_FAIL("{}: section '{}' holds {} bytes, {} rows of {} bytes need {}", path, codes_it->second,
                       codes.size, info.rows, stats_.code_size, need ? *need : 0);
    codes_ = codes.data;
    stats_.bytes = codes.size;
    for (const io::SectionInfo& si : c.sections())
      if (si.name == codes_it->second) codes_offset_ = c.backing_offset() + si.offset;
    std::vector<NamedBlob> blobs = load_codec_state(c, info, jt, {"codes"});
    for (const auto& b : blobs) stats_.bytes += state_stored_bytes(b);
    try {
      codec_->load_state(blobs);
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}", tier_error(path, info.name, e.what()));
    }
    if (const std::optional<math::ScalarLayout> L = scalar_layout(*codec_)) format_ = detail::pool_row_format(*L);
    if (const std::optional<PqLayout> L = pq_layout(*codec_)) {
      const math::PqGeometry& g = L->geometry;
      pq_format_ = detail::PoolPqFormat{g.dim, g.m, g.nbits, g.ksub, g.dsub, L->codebooks};
    }
  }

  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    if (check_) check_->ensure(cache_, owner_);
    if (!cache_ && format_ && decode_rows(local, dst, n, out)) return;
    if (!cache_) return codec_->decode_gather(codes_, local, dst, n, out);
    // The rows' codes, read through the cache as one batch, then decoded as rows 0..n-1.
    const uint64_t size = stats_.code_size;
    thread_local std::vector<uint8_t> rows;
    thread_local std::vector<uint64_t> offsets, order;
    rows.resize(n * size);
    offsets.resize(n);
    order.resize(n);
    for (size_t k = 0; k < n; ++k) {
      offsets[k] = codes_offset_ + local[k] * size;
      order[k] = k;
    }
    cache_->read_spans(owner_, offsets.data(), n, size, rows.data());
    codec_->decode_gather(rows.data(), order.data(), dst, n, out);
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (check_) check_->ensure(cache_, owner_);
    DecodeOptions opt;
    opt.device = device;
    if (!cache_) return codec_->decode(codes_ + begin * stats_.code_size, count, out, opt);
    // A scan: read once, past the cache, so it does not evict the hot pages.
    std::vector<uint8_t> codes(count * stats_.code_size);
    cache_->read_direct(owner_, codes_offset_ + begin * stats_.code_size, codes.size(), codes.data());
    codec_->decode(codes.data(), count, out, opt);
  }
  // Scalar and pq codes decoded into the sums by the CPU path's kernels;
  // the others (and rows read through the page cache) a few rows at a time.
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    if ((format_ || pq_format_) && !cache_) {
      if (check_) check_->ensure(cache_, owner_);
      const detail::PoolRun run{rows.codes, rows.weights, rows.n, rows.ahead, rows.prefetch_bytes, rows.row_bytes};
      const detail::PoolKernels& kernels = detail::pool_kernels(cpu_path());
      if (pq_format_) return kernels.product(*pq_format_, run, mode, first, acc);
      if (kernels.scalar(*format_, run, mode, first, acc)) return;
    }
    TierView::pool(rows, mode, first, acc);
  }
  // Scalar rows by the CPU path's kernel, prefetched as the pooled lookup's
  // are, a block of addresses at a time; false where it has none.
  bool decode_rows(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const {
    constexpr size_t kBlock = 512;
    std::array<const uint8_t*, kBlock> rows;
    const detail::PoolKernels& kernels = detail::pool_kernels(cpu_path());
    for (size_t at = 0; at < n; at += kBlock) {
      const size_t m = std::min(kBlock, n - at);
      for (size_t k = 0; k < m; ++k) rows[k] = codes_ + local[at + k] * stats_.code_size;
      const detail::PoolRun run{rows.data(), nullptr, m, 0, static_cast<uint32_t>(stats_.code_size)};
      if (!kernels.decode(*format_, run, dst + at, out)) return false;  // the format's answer: at the first block
    }
    return true;
  }
  const uint8_t* row_address(uint64_t local) const override {
    return cache_ ? nullptr : codes_ + local * stats_.code_size;
  }
  void row_addresses(const uint64_t* local, size_t n, const uint8_t** out) const override {
    const uint64_t size = stats_.code_size;
    const uint8_t* base = cache_ ? nullptr : codes_;
    for (size_t k = 0; k < n; ++k) out[k] = base ? base + local[k] * size : nullptr;
  }
  const Codec* codec() const override { return codec_.get(); }
  const uint8_t* codes() const override { return codes_; }
  bool read_through(detail::PageCache& cache, size_t owner) override {
    cache_ = &cache;
    owner_ = owner;
    cache.keep(codes_offset_, codes_offset_ + stats_.rows * stats_.code_size);
    return true;
  }
  bool check_on_first_read(std::shared_ptr<const detail::FirstReadCheck> check) override {
    check_ = std::move(check);
    return true;
  }

 private:
  std::unique_ptr<Codec> codec_;
  std::optional<detail::PoolRowFormat> format_;    // scalar codecs the pooling kernels decode
  std::optional<detail::PoolPqFormat> pq_format_;  // pq codecs (no rotation) they fold
  const uint8_t* codes_ = nullptr;
  uint64_t codes_offset_ = 0;  // in the file
  detail::PageCache* cache_ = nullptr;
  size_t owner_ = 0;
  std::shared_ptr<const detail::FirstReadCheck> check_;  // io::Verify::small
};

// ---- shared-vector tiers ("default") -----------------------------------------------------

class SharedVectorTier final : public TierView {
 public:
  SharedVectorTier(const io::Container& c, const io::TierInfo& info) {
    const std::string& path = c.path();
    const uint64_t dim = c.dim();
    stats_ = tier_base_stats(info, TierKind::shared_vector);
    stats_.codec = tier_kind_word(TierKind::shared_vector);
    const auto it = info.sections.find("vector");
    if (it == info.sections.end() || info.sections.size() != 1)
      EDO_CORRUPT_FAIL("{}", tier_error(path, info.name, "a default tier has exactly one section, 'vector'"));
    const io::SectionView v = c.section(it->second);
    if (v.size != dim * sizeof(float))
      EDO_CORRUPT_FAIL("{}: section '{}' holds {} bytes, a vector of {} floats needs {}", path, it->second, v.size, dim,
                       dim * sizeof(float));
    // Copied: the mapping's alignment is only the section's, and the vector is small.
    vector_.resize(dim);
    std::memcpy(vector_.data(), v.data, v.size);
    stats_.bytes = v.size;
  }

  void gather(const uint64_t*, const uint64_t* dst, size_t n, float* out) const override {
    const size_t dim = vector_.size();
    for (size_t k = 0; k < n; ++k) std::memcpy(out + dst[k] * dim, vector_.data(), dim * sizeof(float));
  }
  void decode_range(uint64_t, uint64_t count, float* out, Device) const override {
    const size_t dim = vector_.size();
    for (uint64_t k = 0; k < count; ++k) std::memcpy(out + k * dim, vector_.data(), dim * sizeof(float));
  }
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    detail::pool_vector(vector_.data(), rows, mode, first, acc);
  }
  const float* shared_vector() const override { return vector_.data(); }

 private:
  std::vector<float> vector_;
};

// ---- id maps -----------------------------------------------------------------------------

class IdentityMap final : public IdMap {
 public:
  explicit IdentityMap(uint64_t rows) : rows_(rows) {}
  IdMapKind kind() const override { return IdMapKind::identity; }
  size_t resolve(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local) const override {
    for (size_t k = 0; k < n; ++k) {
      const bool known = ids[k] >= 0 && static_cast<uint64_t>(ids[k]) < rows_;
      tier[k] = known ? 0u : 1u;
      local[k] = known ? static_cast<uint64_t>(ids[k]) : 0;
    }
    return n;
  }
  void resolve_range(uint64_t begin, uint64_t count, uint32_t* tier, uint64_t* local) const override {
    std::fill(tier, tier + count, 0u);
    for (uint64_t i = 0; i < count; ++i) local[i] = begin + i;
  }

 private:
  uint64_t rows_;
};

// The packed row map: tier bytes, rank checkpoints and, in files written
// since edo 0.2, each row's index within its tier (u32). With that section
// an id resolves with two loads; without it (older files, or a tier of 2^32
// rows or more) by the rank checkpoints and a count of at most 255 bytes.
class RowMapIdMap final : public IdMap {
  static constexpr size_t kResolveAhead = 32;

 public:
  RowMapIdMap(io::RowMap map, const uint8_t* local, uint64_t bytes)
      : map_(std::move(map)), local_(local), bytes_(bytes) {
    for (uint32_t t = 0; t < map_.tiers(); ++t) tier_rows_.push_back(map_.tier_rows(t));
  }
  IdMapKind kind() const override { return IdMapKind::row_map; }

  size_t resolve(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local) const override {
    const uint64_t rows = map_.rows();
    const uint32_t unknown = map_.tiers();
    const uint8_t* bytes = map_.tier_bytes();
    for (size_t k = 0; k < n; ++k) {
      // Ids are random rows: both map entries a few ids ahead are fetched
      // now, so their cache misses overlap the ones being resolved.
      // Into the L2 cache, as the pooled rows (pool_kernels.hpp).
      if (k + kResolveAhead < n && local_) {
        const auto ahead = static_cast<uint64_t>(ids[k + kResolveAhead]);
        if (ahead < rows) {
          __builtin_prefetch(bytes + ahead, 0, 2);
          __builtin_prefetch(local_ + ahead * sizeof(uint32_t), 0, 2);
        }
      }
      if (ids[k] < 0 || static_cast<uint64_t>(ids[k]) >= rows) {
        tier[k] = unknown;
        local[k] = 0;
        continue;
      }
      const uint64_t row = static_cast<uint64_t>(ids[k]);
      if (local_) {
        const uint32_t t = bytes[row];
        uint32_t index;
        std::memcpy(&index, local_ + row * sizeof index, sizeof index);
        if (t >= unknown || index >= tier_rows_[t]) return k;
        tier[k] = t;
        local[k] = index;
        continue;
      }
      io::RowMap::Location loc;
      if (!map_.try_locate(row, loc)) return k;
      tier[k] = loc.tier;
      local[k] = loc.index;
    }
    return n;
  }

  // One walk of the tier bytes from each tier's index at `begin`.
  void resolve_range(uint64_t begin, uint64_t count, uint32_t* tier, uint64_t* local) const override {
    const uint32_t tiers = map_.tiers();
    std::vector<uint64_t> next(tiers);
    for (uint32_t t = 0; t < tiers; ++t)
      if (!map_.try_index_at(begin, t, next[t]))
        EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", map_.path(), begin);
    const uint8_t* bytes = map_.tier_bytes();
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t t = bytes[begin + i];
      if (t >= tiers || next[t] >= tier_rows_[t])
        EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", map_.path(), begin + i);
      tier[i] = t;
      local[i] = next[t]++;
    }
  }

  void validate() const override {
    map_.validate();
    if (!local_) return;
    std::vector<uint64_t> next(map_.tiers(), 0);
    const uint8_t* bytes = map_.tier_bytes();
    for (uint64_t r = 0; r < map_.rows(); ++r) {
      uint32_t index;
      std::memcpy(&index, local_ + r * sizeof index, sizeof index);
      if (index != next[bytes[r]]++)
        EDO_CORRUPT_FAIL("{}: row map gives row {} index {} in its tier, the tier bytes say {}", map_.path(), r, index,
                         next[bytes[r]] - 1);
    }
  }
  uint64_t bytes() const override { return bytes_; }

 private:
  io::RowMap map_;
  const uint8_t* local_;
  uint64_t bytes_;
  std::vector<uint64_t> tier_rows_;
};

// Runs of consecutive rows in one tier (io::RowRuns locates each row).
class RowRunsIdMap final : public IdMap {
 public:
  RowRunsIdMap(io::RowRuns runs, uint64_t bytes) : runs_(std::move(runs)), bytes_(bytes) {}
  IdMapKind kind() const override { return IdMapKind::row_runs; }

  size_t resolve(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local) const override {
    const uint64_t rows = runs_.rows();
    for (size_t k = 0; k < n; ++k) {
      if (ids[k] < 0 || static_cast<uint64_t>(ids[k]) >= rows) {
        tier[k] = runs_.tiers();
        local[k] = 0;
        continue;
      }
      io::RowMap::Location loc;
      if (!runs_.try_locate(static_cast<uint64_t>(ids[k]), loc)) return k;
      tier[k] = loc.tier;
      local[k] = loc.index;
    }
    return n;
  }

  void resolve_range(uint64_t begin, uint64_t count, uint32_t* tier, uint64_t* local) const override {
    for (uint64_t i = 0; i < count; ++i) {
      io::RowMap::Location loc;
      if (!runs_.try_locate(begin + i, loc))
        EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", runs_.path(), begin + i);
      tier[i] = loc.tier;
      local[i] = loc.index;
    }
  }

  void validate() const override { runs_.validate(); }
  uint64_t bytes() const override { return bytes_; }

 private:
  io::RowRuns runs_;
  uint64_t bytes_;
};

using TierOpener = std::unique_ptr<TierView> (*)(const io::Container&, const io::TierInfo&, const nlohmann::json&);
using io::Container, io::TierInfo, nlohmann::json;

// The reader's column of the tier-kind traits (edo/tier.hpp): how each kind
// opens, in TierKind's order.
constexpr TierOpener kTierOpeners[] = {
    [](const Container& c, const TierInfo& i, const json& jt) -> std::unique_ptr<TierView> {
      return std::make_unique<CodecTier>(c, i, jt);
    },
    [](const Container& c, const TierInfo& i, const json&) -> std::unique_ptr<TierView> {
      return std::make_unique<SharedVectorTier>(c, i);
    },
    [](const Container& c, const TierInfo& i, const json& jt) { return open_sparse_tier(c, i, jt); },
    [](const Container& c, const TierInfo& i, const json&) { return open_zero_tier(c, i); },
    [](const Container& c, const TierInfo& i, const json&) { return open_centroid_tier(c, i); },
    [](const Container& c, const TierInfo& i, const json& jt) { return open_nearest_tier(c, i, jt); },
    [](const Container& c, const TierInfo& i, const json&) { return open_hashed_tier(c, i); },
    [](const Container& c, const TierInfo& i, const json& jt) { return open_grouped_tier(c, i, jt); },
    [](const Container& c, const TierInfo& i, const json& jt) { return open_lossless_tier(c, i, jt); },
};
static_assert(std::size(kTierOpeners) == kTierKindCount);

}  // namespace

std::unique_ptr<TierView> open_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) {
  return kTierOpeners[static_cast<size_t>(tier_kind_of(info.codec))](c, info, jt);
}

std::unique_ptr<IdMap> open_id_map(const io::Container& c, const std::vector<uint64_t>& tier_rows) {
  const std::string& path = c.path();
  const nlohmann::json& manifest = c.manifest();
  const uint64_t rows = c.rows();
  if (!manifest.contains("rowmap")) {
    if (tier_rows.size() != 1) EDO_CORRUPT_FAIL("{}: {} tiers but no row map", path, tier_rows.size());
    if (tier_rows[0] != rows)
      EDO_CORRUPT_FAIL("{}: tier '{}' has {} rows, the table {}", path, c.tiers()[0].name, tier_rows[0], rows);
    return std::make_unique<IdentityMap>(rows);
  }
  const nlohmann::json& rm = manifest["rowmap"];
  if (rm.is_object() && rm.contains("runs")) {
    if (!rm["runs"].is_string() || rm.size() != 1)
      EDO_CORRUPT_FAIL("{}: rowmap with 'runs' holds that section's name and nothing else", path);
    const io::SectionView v = c.section(rm["runs"].get<std::string>());
    return std::make_unique<RowRunsIdMap>(io::RowRuns(v.data, v.size, rows, tier_rows, path), v.size);
  }
  if (!rm.is_object() || !rm.contains("tier") || !rm["tier"].is_string() || !rm.contains("rank") ||
      !rm["rank"].is_string() || !rm.contains("block") || !rm["block"].is_number_unsigned())
    EDO_CORRUPT_FAIL("{}: rowmap needs string 'tier' and 'rank' sections and an integer 'block'", path);
  if (rm["block"].get<uint64_t>() != io::kRowMapBlock)
    EDO_CORRUPT_FAIL("{}: rowmap block {} (this reader knows {})", path, rm["block"].get<uint64_t>(), io::kRowMapBlock);
  const io::SectionView tier = c.section(rm["tier"].get<std::string>());
  const io::SectionView rank = c.section(rm["rank"].get<std::string>());
  io::RowMap map(tier.data, tier.size, rank.data, rank.size, rows, tier_rows, path);
  uint64_t bytes = tier.size + rank.size;
  const uint8_t* local = nullptr;
  if (rm.contains("local")) {
    if (!rm["local"].is_string()) EDO_CORRUPT_FAIL("{}: rowmap 'local' is not a section name", path);
    const io::SectionView v = c.section(rm["local"].get<std::string>());
    if (v.size / sizeof(uint32_t) != rows || v.size % sizeof(uint32_t) != 0)
      EDO_CORRUPT_FAIL("{}: row map local section holds {} bytes for {} rows of 4 bytes", path, v.size, rows);
    local = v.data;
    bytes += v.size;
  }
  return std::make_unique<RowMapIdMap>(std::move(map), local, bytes);
}

}  // namespace edo
