// The sparse tier kind (sparse.hpp): its spec, and the view a reader opens.
// Every row is checked as it is decoded (offsets in order and in range,
// column indices below dim, mask bits matching the row's value count), so a
// hostile file costs an error, never a read outside its sections, and
// opening stays independent of the table's rows. decode_range on a GPU
// runs the same checks and the same per-value math there (kernels/sparse.cu).
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/sparse.hpp>
#include <edo/tier.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/sparse.cuh>
#endif

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>

namespace edo {

namespace {

constexpr const char* kSparseGrammar = "csr|bitmap:density=D|k=K|threshold=T[,values=fp32|fp16|bf16|int8|int4]";

std::string_view stage_name(std::string_view spec) { return spec.substr(0, spec.find_first_of(":,")); }

template <class T>
T parse_number(std::string_view spec, const std::string& key, const std::string& text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    EDO_USAGE_FAIL("sparse spec '{}': {}={} is not a number", spec, key, text);
  return v;
}

}  // namespace

bool is_sparse_spec(std::string_view spec) {
  const std::string_view name = stage_name(spec);
  return name == "csr" || name == "bitmap";
}

const char* sparse_values_name(SparseValues v) {
  switch (v) {
    case SparseValues::f16:
      return "fp16";
    case SparseValues::bf16:
      return "bf16";
    case SparseValues::int8:
      return "int8";
    case SparseValues::int4:
      return "int4";
    case SparseValues::f32:
      break;
  }
  return "fp32";
}

SparseSpec parse_sparse_spec(std::string_view spec, uint64_t dim) {
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.size() != 1 || !is_sparse_spec(stages[0].name))
    EDO_USAGE_FAIL("sparse spec '{}': expected {}", spec, kSparseGrammar);
  SparseSpec s;
  s.form = stages[0].name == "csr" ? SparseForm::csr : SparseForm::bitmap;
  int rules = 0;
  bool have_values = false;
  for (const SpecParam& p : stages[0].params) {
    if (p.key == "density") {
      s.rule = SparseRule::density, s.density = parse_number<double>(spec, p.key, p.value), ++rules;
      if (!(s.density > 0 && s.density <= 1))
        EDO_USAGE_FAIL("sparse spec '{}': density {} is outside (0, 1]", spec, p.value);
    } else if (p.key == "k") {
      s.rule = SparseRule::per_row_k, s.k = parse_number<uint32_t>(spec, p.key, p.value), ++rules;
      if (s.k == 0 || s.k > dim)
        EDO_USAGE_FAIL("sparse spec '{}': k={} is outside 1..{} (the dimension)", spec, s.k, dim);
    } else if (p.key == "threshold") {
      s.rule = SparseRule::threshold, s.threshold = parse_number<float>(spec, p.key, p.value), ++rules;
      if (!(s.threshold > 0) || !std::isfinite(s.threshold))
        EDO_USAGE_FAIL("sparse spec '{}': threshold {} must be a finite number > 0", spec, p.value);
    } else if (p.key == "values" && !have_values) {
      have_values = true;
      const std::string& v = p.value;
      if (v == "fp32")
        s.values = SparseValues::f32;
      else if (v == "fp16")
        s.values = SparseValues::f16;
      else if (v == "bf16")
        s.values = SparseValues::bf16;
      else if (v == "int8")
        s.values = SparseValues::int8;
      else if (v == "int4")
        s.values = SparseValues::int4;
      else
        EDO_USAGE_FAIL("sparse spec '{}': values={} (fp32, fp16, bf16, int8 or int4)", spec, v);
    } else {
      EDO_USAGE_FAIL("sparse spec '{}': unexpected parameter '{}' (expected {})", spec, p.key.empty() ? p.value : p.key,
                     kSparseGrammar);
    }
  }
  if (rules != 1) EDO_USAGE_FAIL("sparse spec '{}': give exactly one of density=, k= or threshold=", spec);
  if (dim == 0 || dim > 65536) EDO_USAGE_FAIL("sparse spec '{}': dimension {} is outside 1..65536", spec, dim);
  return s;
}

std::string format_sparse_spec(const SparseSpec& s) {
  std::string out = s.form == SparseForm::csr ? "csr" : "bitmap";
  switch (s.rule) {
    case SparseRule::density:
      out += fmt::format(":density={}", s.density);
      break;
    case SparseRule::per_row_k:
      out += fmt::format(":k={}", s.k);
      break;
    case SparseRule::threshold:
      out += fmt::format(":threshold={}", s.threshold);
      break;
  }
  return out + ":values=" + sparse_values_name(s.values);
}

namespace {

class SparseTier final : public TierView {
 public:
  SparseTier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) : path_(c.path()) {
    dim_ = c.dim();
    stats_ = tier_base_stats(info, TierKind::sparse);
    spec_ = parse_sparse_spec(info.codec, dim_);
    stats_.codec = format_sparse_spec(spec_);
    if (!jt.contains("nnz") || !jt["nnz"].is_number_unsigned() || !jt.contains("offset_bytes") ||
        !jt["offset_bytes"].is_number_unsigned())
      fail("a sparse tier needs unsigned 'nnz' and 'offset_bytes'");
    nnz_ = jt["nnz"].get<uint64_t>();
    offset_bytes_ = jt["offset_bytes"].get<uint64_t>();
    if (offset_bytes_ != 4 && offset_bytes_ != 8) fail(fmt::format("offset_bytes {} (4 or 8)", offset_bytes_));
    if (spec_.values == SparseValues::int4 && nnz_ % 2 != 0) fail("an int4 tier stores an even number of values");
    const bool csr = spec_.form == SparseForm::csr;
    const bool affine = sparse_values_affine(spec_.values);
    if (info.sections.size() != 3u + (affine ? 1u : 0u)) fail("unexpected sections for its form and values");
    offsets_ = section(c, info, "offsets", checked_mul(info.rows + 1, offset_bytes_));
    values_ = section(c, info, "values",
                      spec_.values == SparseValues::int4 ? std::optional<uint64_t>(nnz_ / 2)
                                                         : checked_mul(nnz_, sparse_value_bytes(spec_.values, 1)));
    if (csr) {
      index_bytes_ = sparse_index_bytes(dim_);
      indices_ = section(c, info, "indices", checked_mul(nnz_, index_bytes_));
    } else {
      masks_ = section(c, info, "masks", checked_mul(info.rows, sparse_mask_bytes(dim_)));
    }
    if (affine) params_ = section(c, info, "params", checked_mul(info.rows, uint64_t{8}));
    if (offset(0) != 0 || offset(info.rows) != nnz_)
      fail(fmt::format("offsets run from {} to {}, the tier holds {} values", offset(0), offset(info.rows), nnz_));
  }

  // Rows come in any order: each row's offsets are fetched 16 rows ahead and
  // its values and columns 8 ahead (from those offsets, unchecked: a
  // prefetch of a bad address is harmless), so several misses overlap.
  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    constexpr size_t kAhead = 8;
    for (size_t k = 0; k < n; ++k) {
      if (k + 2 * kAhead < n) __builtin_prefetch(offsets_ + local[k + 2 * kAhead] * offset_bytes_);
      if (k + kAhead < n) prefetch_row(local[k + kAhead]);
      decode_row(local[k], out + dst[k] * dim_);
    }
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (device == Device::cuda) return decode_range_cuda(begin, count, out);
    for (uint64_t k = 0; k < count; ++k) decode_row(begin + k, out + k * dim_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { EDO_FAIL("{}: tier '{}': {}", path_, stats_.name, what); }

  const uint8_t* section(const io::Container& c, const io::TierInfo& info, const char* role,
                         std::optional<uint64_t> want) {
    return tier_section(c, info, role, want, stats_).data;
  }

  uint64_t offset(uint64_t r) const {
    if (offset_bytes_ == 4) {
      uint32_t o;
      std::memcpy(&o, offsets_ + 4 * r, 4);
      return o;
    }
    uint64_t o;
    std::memcpy(&o, offsets_ + 8 * r, 8);
    return o;
  }

  void prefetch_row(uint64_t r) const {
    const uint64_t a = offset(r);
    __builtin_prefetch(values_ + sparse_value_bytes(spec_.values, a & ~uint64_t{1}));
    if (indices_) __builtin_prefetch(indices_ + a * index_bytes_);
    if (masks_) __builtin_prefetch(masks_ + r * sparse_mask_bytes(dim_));
    if (params_) __builtin_prefetch(params_ + 8 * r);
  }

  [[noreturn]] void corrupt(uint64_t r) const { fail(fmt::format("row {} is corrupt", r)); }

  // Rows [begin, begin + count) on the GPU: the slices of the sections they
  // use copied in, decoded and checked by kernels/sparse.cu, copied out. The
  // offsets are checked here first: rows [begin, good) have them in order,
  // within nnz and at most dim apart, so the values they span (which size
  // every copy) lie inside the sections and number at most count * dim. The
  // first corrupt row is the kernel's lowest, else row `good`, as on the CPU.
  void decode_range_cuda(uint64_t begin, uint64_t count, float* out) const {
    require_device(Device::cuda);
    if (count == 0) return;
    const uint64_t end = begin + count;
    uint64_t good = begin;
    for (uint64_t a = offset(begin); good < end; ++good) {
      const uint64_t b = offset(good + 1);
      if (a > b || b > nnz_ || b - a > dim_) break;
      a = b;
    }
    if (good > begin) decode_rows_cuda(begin, good - begin, out);
    if (good < end) corrupt(good);
  }

  // Rows [begin, begin + n) whose offsets decode_range_cuda() has checked.
  void decode_rows_cuda(uint64_t begin, uint64_t n, float* out) const {
#ifdef EDO_HAVE_CUDA
    const uint64_t first = offset(begin), last = offset(begin + n);
    cuda::SparseRows s;
    s.form = spec_.form;
    s.values_kind = spec_.values;
    s.dim = static_cast<uint32_t>(dim_);
    s.offset_bytes = static_cast<uint32_t>(offset_bytes_);
    s.index_bytes = index_bytes_;
    s.nnz = nnz_;
    s.base = first & ~uint64_t{1};  // even: an int4 slice starts on a byte
    s.end = last;
    // int4: the byte holding value `last - 1` (last is even unless a row is corrupt; nnz is even).
    const uint64_t value_begin = sparse_value_bytes(spec_.values, s.base),
                   value_end =
                       spec_.values == SparseValues::int4 ? (last + 1) / 2 : sparse_value_bytes(spec_.values, last);
    const uint64_t mask_bytes = sparse_mask_bytes(dim_);
    s.mask_bytes = static_cast<uint32_t>(mask_bytes);
    DeviceBuffer d_offsets((n + 1) * offset_bytes_), d_values(value_end - value_begin),
        d_indices(indices_ ? (last - s.base) * index_bytes_ : 0), d_masks(masks_ ? n * mask_bytes : 0),
        d_params(params_ ? n * 8 : 0), d_out(n * dim_ * sizeof(float)), d_bad(sizeof(unsigned long long));
    d_offsets.upload(offsets_ + begin * offset_bytes_, d_offsets.bytes());
    d_values.upload(values_ + value_begin, d_values.bytes());
    if (indices_) d_indices.upload(indices_ + s.base * index_bytes_, d_indices.bytes());
    if (masks_) d_masks.upload(masks_ + begin * mask_bytes, d_masks.bytes());
    if (params_) d_params.upload(params_ + begin * 8, d_params.bytes());
    unsigned long long bad = ~0ull;
    d_bad.upload(&bad, sizeof bad);
    s.offsets = d_offsets.as<uint8_t>();
    s.values = d_values.as<uint8_t>();
    s.indices = indices_ ? d_indices.as<uint8_t>() : nullptr;
    s.masks = masks_ ? d_masks.as<uint8_t>() : nullptr;
    s.params = params_ ? d_params.as<uint8_t>() : nullptr;
    cuda::decode_sparse(s, n, d_out.as<float>(), d_bad.as<unsigned long long>());
    check_cuda_launch("decode_sparse");
    d_bad.download(&bad, sizeof bad);
    if (bad != ~0ull) corrupt(begin + bad);
    d_out.download(out, d_out.bytes());
#else
    (void)begin, (void)n, (void)out;
    require_device(Device::cuda);
#endif
  }

  void decode_row(uint64_t r, float* out) const {
    switch (spec_.values) {
      case SparseValues::f32:
        return decode_row_as<SparseValues::f32>(r, out);
      case SparseValues::f16:
        return decode_row_as<SparseValues::f16>(r, out);
      case SparseValues::bf16:
        return decode_row_as<SparseValues::bf16>(r, out);
      case SparseValues::int8:
        return decode_row_as<SparseValues::int8>(r, out);
      case SparseValues::int4:
        break;
    }
    decode_row_as<SparseValues::int4>(r, out);
  }

  // One loop per value kind (V a constant), so the per-value switch of
  // sparse_value() folds away.
  template <SparseValues V>
  void decode_row_as(uint64_t r, float* out) const {
    const uint64_t a = offset(r), b = offset(r + 1);
    if (a > b || b > nnz_ || b - a > dim_ || (V == SparseValues::int4 && a % 2 != 0)) corrupt(r);
    std::fill(out, out + dim_, 0.0f);
    const math::AffineParams params = sparse_row_params(params_ ? params_ + 8 * r : nullptr);
    if (indices_) {
      uint32_t bad = 0;
      for (uint64_t i = a; i < b; ++i) {
        const uint32_t j =
            index_bytes_ == 1 ? indices_[i] : static_cast<uint32_t>(indices_[2 * i] | indices_[2 * i + 1] << 8);
        bad |= j >= dim_;
        out[bad ? 0 : j] = sparse_value(V, values_, i, params);
      }
      if (bad) corrupt(r);
      return;
    }
    const uint64_t mb = sparse_mask_bytes(dim_);
    const uint8_t* mask = masks_ + r * mb;
    uint64_t bits = 0, byte = 0;
    for (; byte + 8 <= mb; byte += 8) {
      uint64_t w;
      std::memcpy(&w, mask + byte, 8);
      bits += static_cast<uint64_t>(std::popcount(w));
    }
    for (; byte < mb; ++byte) bits += static_cast<uint64_t>(std::popcount(mask[byte]));
    if (bits != b - a || (dim_ % 8 != 0 && (mask[mb - 1] >> (dim_ % 8)) != 0)) corrupt(r);
    uint64_t i = a;
    for (byte = 0; byte < mb; ++byte)
      for (uint32_t m = mask[byte]; m != 0; m &= m - 1)
        out[8 * byte + static_cast<uint64_t>(std::countr_zero(m))] = sparse_value(V, values_, i++, params);
  }

  std::string path_;
  SparseSpec spec_;
  uint64_t dim_ = 0, nnz_ = 0, offset_bytes_ = 0;
  uint32_t index_bytes_ = 0;
  const uint8_t *offsets_ = nullptr, *values_ = nullptr, *indices_ = nullptr, *masks_ = nullptr, *params_ = nullptr;
};

}  // namespace

std::unique_ptr<TierView> open_sparse_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) {
  try {
    return std::make_unique<SparseTier>(c, info, jt);
  } catch (const Error& e) {
    if (e.code() == ExitCode::usage) EDO_FAIL("{}: tier '{}': {}", c.path(), info.name, e.what());
    throw;
  }
}

}  // namespace edo
