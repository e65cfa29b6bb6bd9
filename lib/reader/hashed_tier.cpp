// SPDX-License-Identifier: Apache-2.0
// The hashed and group-shared tier kinds (hash.hpp): their specs, and the
// views a reader opens.
// A hashed tier is keyed by global id (TierView::keyed_by_id): the reader
// hands it table ids, not local ones, and it finds each id's rows of its
// shared tables itself, so it stores nothing per row but optional weights.
#include "pool_kernels.hpp"
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/hash.hpp>
#include <edo/tier.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <new>

namespace edo {

namespace {

constexpr const char* kHashGrammar =
    "hash:buckets=B[,k=K][,weights=0|1][,fit=ls|none][,seed=S] or qr:buckets=B[,op=sum|mul]";

uint64_t parse_unsigned(std::string_view spec, const SpecParam& p) {
  uint64_t v = 0;
  const std::string& t = p.value;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (ec != std::errc() || end != t.data() + t.size() || t.empty())
    EDO_USAGE_FAIL("hash spec '{}': {}={} is not a whole number", spec, p.key, t);
  return v;
}

}  // namespace

bool is_hash_spec(std::string_view spec) { return tier_kind_of(spec) == TierKind::hashed; }

HashSpec parse_hash_spec(std::string_view spec) {
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.size() != 1 || !is_hash_spec(stages[0].name))
    EDO_USAGE_FAIL("hash spec '{}': expected {}", spec, kHashGrammar);
  HashSpec s;
  s.scheme = stages[0].name == "qr" ? HashScheme::qr : HashScheme::hash;
  const bool qr = s.scheme == HashScheme::qr;
  if (qr) s.k = 2;
  std::vector<std::string> seen;
  for (const SpecParam& p : stages[0].params) {
    if (std::find(seen.begin(), seen.end(), p.key) != seen.end())
      EDO_USAGE_FAIL("hash spec '{}': {} given twice", spec, p.key);
    seen.push_back(p.key);
    if (p.key == "buckets") {
      s.buckets = parse_unsigned(spec, p);
    } else if (p.key == "k" && !qr) {
      const uint64_t k = parse_unsigned(spec, p);
      if (k < 1 || k > kMaxHashK) EDO_USAGE_FAIL("hash spec '{}': k={} is outside 1..{}", spec, k, kMaxHashK);
      s.k = static_cast<uint32_t>(k);
    } else if (p.key == "weights" && !qr && (p.value == "0" || p.value == "1")) {
      s.weights = p.value == "1";
    } else if (p.key == "fit" && !qr && (p.value == "ls" || p.value == "none")) {
      s.fit = p.value == "ls" ? HashFit::least_squares : HashFit::none;
    } else if (p.key == "seed" && !qr) {
      s.seed = parse_unsigned(spec, p);
    } else if (p.key == "op" && qr && (p.value == "sum" || p.value == "mul")) {
      s.op = p.value == "sum" ? QrOp::sum : QrOp::mul;
    } else {
      EDO_USAGE_FAIL("hash spec '{}': unexpected '{}{}{}' (expected {})", spec, p.key, p.key.empty() ? "" : "=",
                     p.value, kHashGrammar);
    }
  }
  if (s.buckets < 1 || s.buckets > kMaxBuckets)
    EDO_USAGE_FAIL("hash spec '{}': needs buckets=B with B in 1..{}", spec, kMaxBuckets);
  if (s.fit == HashFit::none && (s.k != 1 || s.weights))
    EDO_USAGE_FAIL("hash spec '{}': fit=none (the naive baseline) is for k=1 without weights", spec);
  return s;
}

std::string format_hash_spec(const HashSpec& s) {
  if (s.scheme == HashScheme::qr)
    return fmt::format("qr:buckets={},op={}", s.buckets, s.op == QrOp::sum ? "sum" : "mul");
  return fmt::format("hash:buckets={},k={},weights={},fit={},seed={}", s.buckets, s.k, s.weights ? 1 : 0,
                     s.fit == HashFit::least_squares ? "ls" : "none", s.seed);
}

bool is_group_spec(std::string_view spec) { return tier_kind_of(spec) == TierKind::grouped; }

GroupSpec parse_group_spec(std::string_view spec, uint64_t dim) {
  constexpr const char* grammar = "group:clusters=C|labels|groups=C[,residual=CODEC|none]";
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.size() != 1 || stages[0].name != "group") EDO_USAGE_FAIL("group spec '{}': expected {}", spec, grammar);
  GroupSpec g;
  int sources = 0;
  bool residual = false;
  for (const SpecParam& p : stages[0].params) {
    if ((p.key == "clusters" || p.key == "groups") && !p.value.empty()) {
      g.groups = parse_unsigned(spec, p), ++sources;
      if (g.groups < 1 || g.groups > kMaxCentroids)
        EDO_USAGE_FAIL("group spec '{}': {}={} is outside 1..{}", spec, p.key, p.value, kMaxCentroids);
    } else if (p.key.empty() && p.value == "labels") {
      g.from_labels = true, ++sources;
    } else if (p.key == "residual" && !residual) {
      residual = true;
      g.residual = p.value == "none" ? "none" : canonical_spec(p.value, dim);
    } else {
      EDO_USAGE_FAIL("group spec '{}': unexpected '{}{}{}' (expected {})", spec, p.key, p.key.empty() ? "" : "=",
                     p.value, grammar);
    }
  }
  if (sources != 1) EDO_USAGE_FAIL("group spec '{}': give one of clusters=C and labels (expected {})", spec, grammar);
  return g;
}

std::string format_group_spec(const GroupSpec& s) {
  return format_spec({{"group", {{"groups", std::to_string(s.groups)}, {"residual", s.residual}}}});
}

namespace {

// Memory advised for transparent huge pages before anything touches it: a
// table's random bucket rows then cost no page walk each (as torch's fp32
// tables with THP). Advice only: without huge pages it is ordinary memory.
template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  explicit HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) { ::munmap(p, n * sizeof(T)); }
  bool operator==(const HugePageAllocator&) const { return true; }
};
using HugeFloats = std::vector<float, HugePageAllocator<float>>;

// Tables are copied out of the mapping (whose alignment is only the
// section's) once at open: B x dim floats, the size of what they replace
// divided by the sharing.
class HashedTier final : public TierView {
 public:
  HashedTier(const io::Container& c, const io::TierInfo& info) : path_(c.path()), dim_(c.dim()), rows_(c.rows()) {
    stats_ = tier_base_stats(info, TierKind::hashed);
    try {
      spec_ = parse_hash_spec(info.codec);
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, info.name, e.what());
    }
    stats_.codec = format_hash_spec(spec_);
    const bool qr = spec_.scheme == HashScheme::qr;
    if (rows_ == 0) fail("a hashed tier needs a table of at least one row");
    if (qr) {
      quotient_rows_ = qr_quotient_rows(rows_, spec_.buckets);
      if (info.sections.size() != 2) fail("a qr tier has exactly the sections 'quotient' and 'remainder'");
      quotient_ = table(c, info, "quotient", quotient_rows_);
      buckets_ = table(c, info, "remainder", spec_.buckets);
      tables_ = {buckets_.data(), quotient_.data(), quotient_rows_, nullptr, rows_, dim_};
      return;
    }
    if (info.sections.size() != (spec_.weights ? 2u : 1u))
      fail(spec_.weights ? "a weighted hash tier has exactly the sections 'buckets' and 'weights'"
                         : "a hash tier has exactly one section, 'buckets'");
    buckets_ = table(c, info, "buckets", spec_.buckets);
    tables_ = {buckets_.data(), nullptr, 0, nullptr, rows_, dim_};
    bucket_format_ = detail::pool_row_format(*scalar_layout(*make_decoder("fp32", dim_)));
    if (spec_.weights) {
      tables_.weights =
          tier_section(c, info, "weights", checked_mul(checked_mul(rows_, spec_.k).value_or(UINT64_MAX), 2), stats_)
              .data;
      stats_.code_size = 2 * spec_.k;
    }
  }

  bool keyed_by_id() const override { return true; }

  void gather(const uint64_t* ids, const uint64_t* dst, size_t n, float* out) const override {
    for (size_t k = 0; k < n; ++k) decode_id(ids[k], out + dst[k] * dim_);
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (device == Device::cuda) require_device(Device::cuda);  // decoded on the host all the same
    for (uint64_t k = 0; k < count; ++k) decode_id(begin + k, out + k * dim_);
  }
  // One bucket an id, unweighted: the bucket's row is the id's row, an
  // fp32 row folded from where it lies by the CPU path's fp32 kernel (no
  // copy); the other schemes through a row buffer.
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    if (spec_.scheme == HashScheme::qr || spec_.k != 1 || tables_.weights)
      return TierView::pool(rows, mode, first, acc);
    const detail::PoolKernels& kernels = detail::pool_kernels(cpu_path());
    if (rows.codes) {  // row_address(): each id's bucket row, hashed once
      const detail::PoolRun run{rows.codes, rows.weights, rows.n, rows.ahead, rows.prefetch_bytes, rows.row_bytes};
      if (kernels.scalar(bucket_format_, run, mode, first, acc)) return;
    }
    for (size_t k = 0; k < rows.n; ++k) {
      detail::prefetch_stream_row(rows, k);
      const float* bucket = buckets_.data() + hash_bucket(rows.local[k], 0, spec_.seed, spec_.buckets) * dim_;
      kernels.fold(mode, bucket, 1, rows.weights ? rows.weights + k : nullptr, dim_, first && k == 0, acc);
    }
  }
  // An id's first bucket (qr: its remainder row), for a pooled lookup's
  // prefetches: a bucket row of dim floats.
  const uint8_t* row_address(uint64_t id) const override {
    const uint64_t bucket =
        spec_.scheme == HashScheme::qr ? id % spec_.buckets : hash_bucket(id, 0, spec_.seed, spec_.buckets);
    return reinterpret_cast<const uint8_t*>(buckets_.data() + bucket * dim_);
  }
  uint64_t fetch_bytes() const override { return dim_ * sizeof(float); }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, stats_.name, what);
  }

  HugeFloats table(const io::Container& c, const io::TierInfo& info, const char* role, uint64_t rows) {
    const auto bytes = checked_mul(checked_mul(rows, dim_).value_or(UINT64_MAX), sizeof(float));
    const io::SectionView v = tier_section(c, info, role, bytes, stats_);
    HugeFloats t(rows * dim_);
    std::memcpy(t.data(), v.data, v.size);
    return t;
  }

  void decode_id(uint64_t id, float* out) const { hash_decode(spec_, tables_, id, out); }

  std::string path_;
  uint64_t dim_, rows_;
  HashSpec spec_;
  uint64_t quotient_rows_ = 0;
  HugeFloats buckets_, quotient_;
  HashTables tables_;
  detail::PoolRowFormat bucket_format_{};  // a bucket row as the kernels read it (fp32)
};

// Rows of one group share its base vector, each adding its own residual
// (a registry codec's code row; none: the base alone).
class GroupedTier final : public TierView {
 public:
  GroupedTier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt)
      : path_(c.path()), dim_(c.dim()) {
    stats_ = tier_base_stats(info, TierKind::grouped);
    try {
      spec_ = parse_group_spec(info.codec, dim_);
      if (spec_.from_labels) EDO_CORRUPT_FAIL("a stored group tier names its count, groups=C");
      if (spec_.residual != "none") residual_ = make_decoder(spec_.residual, dim_);
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, info.name, e.what());
    }
    stats_.codec = format_group_spec(spec_);
    index_bytes_ = centroid_index_bytes(spec_.groups);
    const uint64_t code = residual_ ? residual_->code_size() : 0;
    stats_.code_size = index_bytes_ + code;
    const io::SectionView bv = tier_section(c, info, "base", checked_mul(spec_.groups, dim_ * sizeof(float)), stats_);
    base_.resize(spec_.groups * dim_);
    std::memcpy(base_.data(), bv.data, bv.size);
    assign_ = tier_section(c, info, "assign", checked_mul(info.rows, index_bytes_), stats_).data;
    if (!residual_) {
      if (info.sections.size() != 2) fail("a group tier without residuals has exactly 'base' and 'assign'");
      return;
    }
    codes_ = tier_section(c, info, "codes", checked_mul(info.rows, code), stats_).data;
    std::vector<NamedBlob> blobs = load_codec_state(c, info, jt, {"codes", "base", "assign"});
    for (const auto& b : blobs) stats_.bytes += state_stored_bytes(b);
    try {
      residual_->load_state(blobs);
    } catch (const Error& e) {
      EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, info.name, e.what());
    }
  }

  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    if (residual_) residual_->decode_gather(codes_, local, dst, n, out);
    for (size_t k = 0; k < n; ++k) add_base(local[k], out + dst[k] * dim_);
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (residual_) {
      DecodeOptions opt;
      opt.device = device;
      residual_->decode(codes_ + begin * residual_->code_size(), count, out, opt);
    } else if (device == Device::cuda) {
      require_device(Device::cuda);  // decoded on the host all the same
    }
    for (uint64_t k = 0; k < count; ++k) add_base(begin + k, out + k * dim_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, stats_.name, what);
  }

  // out = base[group] + out (the residual), or the base alone.
  void add_base(uint64_t r, float* out) const {
    uint32_t g = 0;
    std::memcpy(&g, assign_ + r * index_bytes_, index_bytes_);  // little-endian low bytes
    if (g >= spec_.groups) fail(fmt::format("row {} is in group {} of {}", r, g, spec_.groups));
    const float* b = base_.data() + g * dim_;
    if (!residual_)
      std::memcpy(out, b, dim_ * sizeof(float));
    else
      for (uint64_t j = 0; j < dim_; ++j) out[j] = b[j] + out[j];
  }

  std::string path_;
  uint64_t dim_;
  GroupSpec spec_;
  std::unique_ptr<Codec> residual_;
  uint32_t index_bytes_ = 0;
  std::vector<float> base_;
  const uint8_t *assign_ = nullptr, *codes_ = nullptr;
};

}  // namespace

std::unique_ptr<TierView> open_hashed_tier(const io::Container& c, const io::TierInfo& info) {
  return std::make_unique<HashedTier>(c, info);
}

std::unique_ptr<TierView> open_grouped_tier(const io::Container& c, const io::TierInfo& info,
                                            const nlohmann::json& jt) {
  return std::make_unique<GroupedTier>(c, info, jt);
}

}  // namespace edo
