// SPDX-License-Identifier: Apache-2.0
// The fallback kinds for dropped rows (docs/FORMAT.md 9.4): "zero", which
// stores nothing, and "centroids:C", C shared vectors with each row's index
// among them. (The third, "default", one shared vector, is in tiers.cpp.)
#include "pool_kernels.hpp"
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/matrix.hpp>

#include <algorithm>
#include <charconv>
#include <cstring>

namespace edo {

uint64_t centroid_count(std::string_view codec_field) {
  const std::vector<SpecStage> stages = parse_spec(codec_field);
  uint64_t c = 0;
  if (stages.size() == 1 && stages[0].name == "centroids" && stages[0].params.size() == 1 &&
      stages[0].params[0].key.empty()) {
    const std::string& v = stages[0].params[0].value;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), c);
    if (ec != std::errc() || end != v.data() + v.size()) c = 0;
  }
  if (c == 0 || c > kMaxCentroids)
    EDO_USAGE_FAIL("'{}': expected centroids:C with C in 1..{}", codec_field, kMaxCentroids);
  return c;
}

uint32_t centroid_index_bytes(uint64_t centroids) { return centroids <= 256 ? 1u : centroids <= 65536 ? 2u : 4u; }

namespace {

class ZeroTier final : public TierView {
 public:
  ZeroTier(const io::Container& c, const io::TierInfo& info) : dim_(c.dim()) {
    stats_ = tier_base_stats(info, TierKind::zero);
    stats_.codec = tier_kind_word(TierKind::zero);
    if (!info.sections.empty()) EDO_CORRUPT_FAIL("{}: tier '{}': a zero tier has no sections", c.path(), info.name);
  }
  void gather(const uint64_t*, const uint64_t* dst, size_t n, float* out) const override {
    for (size_t k = 0; k < n; ++k) std::fill(out + dst[k] * dim_, out + (dst[k] + 1) * dim_, 0.0f);
  }
  void decode_range(uint64_t, uint64_t count, float* out, Device) const override {
    std::fill(out, out + count * dim_, 0.0f);
  }
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    thread_local std::vector<float> zeros;
    zeros.resize(dim_);
    detail::pool_vector(zeros.data(), rows, mode, first, acc);
  }

 private:
  uint64_t dim_;
};

class CentroidTier final : public TierView {
 public:
  CentroidTier(const io::Container& c, const io::TierInfo& info) : path_(c.path()), dim_(c.dim()) {
    stats_ = tier_base_stats(info, TierKind::centroids);
    try {
      count_ = centroid_count(info.codec);
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, info.name, e.what());
    }
    stats_.codec = fmt::format("centroids:{}", count_);
    index_bytes_ = centroid_index_bytes(count_);
    stats_.code_size = index_bytes_;
    if (info.sections.size() != 2) fail("a centroids tier has exactly the sections 'centroids' and 'assign'");
    const io::SectionView cv = tier_section(c, info, "centroids", checked_mul(count_, dim_ * sizeof(float)), stats_);
    centroids_.resize(count_ * dim_);  // copied: the mapping's alignment is only the section's
    std::memcpy(centroids_.data(), cv.data, cv.size);
    assign_ = tier_section(c, info, "assign", checked_mul(info.rows, index_bytes_), stats_).data;
  }
  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    for (size_t k = 0; k < n; ++k) copy_row(local[k], out + dst[k] * dim_);
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device) const override {
    for (uint64_t k = 0; k < count; ++k) copy_row(begin + k, out + k * dim_);
  }
  // Each row's centroid folded as it is stored.
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    for (size_t k = 0; k < rows.n; ++k) {
      TierRows one = rows;
      one.local = rows.local + k;
      one.weights = rows.weights ? rows.weights + k : nullptr;
      one.n = 1;
      detail::pool_vector(centroid(rows.local[k]), one, mode, first && k == 0, acc);
    }
  }
  const uint8_t* row_address(uint64_t local) const override { return assign_ + local * index_bytes_; }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, stats_.name, what);
  }

  const float* centroid(uint64_t r) const {
    uint32_t index = 0;
    std::memcpy(&index, assign_ + r * index_bytes_, index_bytes_);  // little-endian low bytes
    if (index >= count_) fail(fmt::format("row {} is assigned centroid {} of {}", r, index, count_));
    return centroids_.data() + index * dim_;
  }
  void copy_row(uint64_t r, float* out) const { std::memcpy(out, centroid(r), dim_ * sizeof(float)); }

  std::string path_;
  uint64_t dim_, count_ = 0;
  uint32_t index_bytes_ = 0;
  std::vector<float> centroids_;
  const uint8_t* assign_ = nullptr;
};

class NearestTier final : public TierView {
 public:
  NearestTier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) : path_(c.path()) {
    stats_ = tier_base_stats(info, TierKind::nearest);
    metric_ = nearest_metric(info.codec);
    stats_.codec = metric_ == Metric::l2 ? "nearest:l2" : "nearest:cos";
    if (!jt.contains("target_bytes") || !jt["target_bytes"].is_number_unsigned() ||
        (jt["target_bytes"].get<uint64_t>() != 4 && jt["target_bytes"].get<uint64_t>() != 8))
      EDO_CORRUPT_FAIL("{}: tier '{}': a nearest tier needs target_bytes 4 or 8", path_, info.name);
    target_bytes_ = jt["target_bytes"].get<uint32_t>();
    stats_.code_size = target_bytes_;
    const auto it = info.sections.find("target");
    if (it == info.sections.end() || info.sections.size() != 1)
      EDO_CORRUPT_FAIL("{}: tier '{}': a nearest tier has exactly one section, 'target'", path_, info.name);
    const io::SectionView v = c.section(it->second);
    const auto want = checked_mul(info.rows, target_bytes_);
    if (!want || v.size != *want)
      EDO_CORRUPT_FAIL("{}: section '{}' holds {} bytes, {} rows of {} bytes need {}", path_, it->second, v.size,
                       info.rows, target_bytes_, want ? *want : 0);
    targets_ = v.data;
    stats_.bytes = v.size;
  }
  void gather(const uint64_t*, const uint64_t*, size_t, float*) const override { unreachable(); }
  void decode_range(uint64_t, uint64_t, float*, Device) const override { unreachable(); }
  bool redirects() const override { return true; }
  uint64_t redirect(uint64_t local) const override {
    uint64_t target = 0;
    std::memcpy(&target, targets_ + local * target_bytes_, target_bytes_);  // little-endian low bytes
    return target;
  }

 private:
  [[noreturn]] void unreachable() const {
    EDO_CORRUPT_FAIL("{}: tier '{}': a redirecting tier decodes through the rows it points at", path_, stats_.name);
  }

  std::string path_;
  Metric metric_ = Metric::cos;
  uint32_t target_bytes_ = 4;
  const uint8_t* targets_ = nullptr;
};

}  // namespace

Metric nearest_metric(std::string_view codec_field) {
  const std::vector<SpecStage> stages = parse_spec(codec_field);
  if (stages.size() == 1 && stages[0].name == "nearest" && stages[0].params.size() <= 1) {
    if (stages[0].params.empty()) return Metric::cos;
    const SpecParam& p = stages[0].params[0];
    // Spelled here: the reader does not link the k-NN engine that parse_metric lives in.
    if (p.key.empty() && p.value == "cos") return Metric::cos;
    if (p.key.empty() && p.value == "l2") return Metric::l2;
  }
  EDO_USAGE_FAIL("'{}': expected nearest, nearest:cos or nearest:l2", codec_field);
}

std::unique_ptr<TierView> open_nearest_tier(const io::Container& c, const io::TierInfo& info,
                                            const nlohmann::json& jt) {
  try {
    return std::make_unique<NearestTier>(c, info, jt);
  } catch (const Error& e) {
    if (e.code() == ExitCode::usage) EDO_CORRUPT_FAIL("{}: tier '{}': {}", c.path(), info.name, e.what());
    throw;
  }
}

std::unique_ptr<TierView> open_zero_tier(const io::Container& c, const io::TierInfo& info) {
  return std::make_unique<ZeroTier>(c, info);
}

std::unique_ptr<TierView> open_centroid_tier(const io::Container& c, const io::TierInfo& info) {
  return std::make_unique<CentroidTier>(c, info);
}

}  // namespace edo
