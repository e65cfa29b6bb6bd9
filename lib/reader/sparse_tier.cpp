// SPDX-License-Identifier: Apache-2.0
// The sparse tier kind (sparse.hpp): its spec, and the view a reader opens.
// Every row is checked as it is decoded (offsets in order and in range,
// column indices below dim, mask bits matching the row's value count), so a
// hostile file costs an error, never a read outside its sections, and
// opening stays independent of the table's rows. decode_range on a GPU
// runs the same checks and the same per-value math there (kernels/sparse.cu).
#include "first_read_check.hpp"
#include "pool_kernels.hpp"
#include "tier_kinds.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/cpu_path.hpp>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/pool_math.hpp>
#include <edo/sparse.hpp>
#include <edo/tier.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/sparse.cuh>
#endif

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

namespace edo {

namespace {

constexpr const char* kSparseGrammar = "csr|bitmap:density=D|k=K|threshold=T[,values=fp32|fp16|bf16|int8|int4]";

template <class T>
T parse_number(std::string_view spec, const std::string& key, const std::string& text) {
  T v{};
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    EDO_USAGE_FAIL("sparse spec '{}': {}={} is not a number", spec, key, text);
  return v;
}

}  // namespace

bool is_sparse_spec(std::string_view spec) { return tier_kind_of(spec) == TierKind::sparse; }

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

// Eight values a step needs AVX2, FMA and F16C (x86-64-v3, the build's
// default where the host has them); without them, one value a step.
#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#define EDO_SPARSE_VECTOR 1

// Values j .. j + 7 of a values section (j even for int4), bit for bit as
// sparse_value() decodes each.
template <SparseValues V>
__m256 decode8(const uint8_t* values, uint64_t j, math::AffineParams p) {
  if constexpr (V == SparseValues::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(values + 4 * j));
  } else if constexpr (V == SparseValues::f16 || V == SparseValues::bf16) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(values + 2 * j));
    if constexpr (V == SparseValues::bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    // vcvtph2ps quiets a signalling NaN (its bits change): Inf/NaN one at a time.
    const __m128i exponent = _mm_set1_epi16(0x7c00);
    if (_mm_movemask_epi8(_mm_cmpeq_epi16(_mm_and_si128(h, exponent), exponent)) == 0) return _mm256_cvtph_ps(h);
    float one_by_one[8];
    for (uint64_t i = 0; i < 8; ++i) one_by_one[i] = sparse_value(V, values, j + i, p);
    return _mm256_loadu_ps(one_by_one);
  } else {
    __m256i q;
    if constexpr (V == SparseValues::int8) {
      q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(values + j)));
    } else {
      int32_t four;
      std::memcpy(&four, values + j / 2, 4);
      const __m128i pairs = _mm_shuffle_epi8(_mm_cvtsi32_si128(four),
                                             _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, -1, -1, -1, -1, -1, -1, -1, -1));
      q = _mm256_and_si256(_mm256_srlv_epi32(_mm256_cvtepu8_epi32(pairs), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4)),
                           _mm256_set1_epi32(0xf));
    }
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(p.scale), _mm256_set1_ps(p.offset));
  }
}

#endif

// Column i of a csr row's columns (u8, or u16 when Wide: little-endian, as the offsets).
template <bool Wide>
uint32_t column_at(const uint8_t* columns, uint64_t i) {
  if constexpr (!Wide) return columns[i];
  uint16_t j;
  std::memcpy(&j, columns + 2 * i, 2);
  return j;
}

#ifdef EDO_SPARSE_VECTOR
// Lanes [0, n) of v (n <= 8) stored at out[column_at(columns, 0 .. n - 1)]
// straight from the register (loaded back from a buffer just stored, they
// would wait on store forwarding); lanes from n on go to *spare, so that no
// branch depends on n.
template <bool Wide>
[[gnu::always_inline]] inline void store_lanes(__m256 v, uint64_t n, const uint8_t* columns, float* out, float* spare) {
  const __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  const auto put = [&]<int K>(__m128 half) {
    float* at = K < static_cast<int>(n) ? out + column_at<Wide>(columns, K) : spare;
    _mm_store_ss(at, _mm_shuffle_ps(half, half, K % 4));
  };
  put.template operator()<0>(lo), put.template operator()<1>(lo), put.template operator()<2>(lo);
  put.template operator()<3>(lo), put.template operator()<4>(hi), put.template operator()<5>(hi);
  put.template operator()<6>(hi), put.template operator()<7>(hi);
}
#endif

// The values [first, first + count) of a csr row (first even for int4)
// stored at out[column i], each column checked against dim (false: one is
// not, the row is corrupt). Eight a step while the section holds eight more
// from there (`avail`: the values, and so the columns, it holds from first;
// a row's last step may decode values past the row, never stored, but reads
// nothing outside the section), the rest one at a time as sparse_value()
// decodes each, the bound folded into the address rather than branched on.
template <SparseValues V, bool Wide>
[[gnu::always_inline]] inline bool scatter_run(const uint8_t* values, uint64_t first, uint64_t count, uint64_t avail,
                                               math::AffineParams p, const uint8_t* columns, uint64_t dim, float* out) {
  uint64_t i = 0;
#ifdef EDO_SPARSE_VECTOR
  float spare;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), cap = _mm256_set1_epi32(static_cast<int>(dim - 1));
  for (; i < count && i + 8 <= avail; i += 8) {
    const uint64_t n = std::min<uint64_t>(8, count - i);
    const __m256i c = Wide ? _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(columns + 2 * i)))
                           : _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(columns + i)));
    const __m256i in_row = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lane);
    if (!_mm256_testz_si256(_mm256_cmpgt_epi32(c, cap), in_row)) return false;
    store_lanes<Wide>(decode8<V>(values, first + i, p), n, columns + (Wide ? 2 : 1) * i, out, &spare);
  }
#else
  (void)avail;
#endif
  uint32_t bad = 0;
  for (; i < count; ++i) {
    const uint32_t j = column_at<Wide>(columns, i);
    bad |= j >= dim;
    out[bad ? 0 : j] = sparse_value(V, values, first + i, p);
  }
  return bad == 0;
}

// The same into out[0, count), which has room for 7 more: whole steps of 8.
template <SparseValues V>
void decode_run(const uint8_t* values, uint64_t first, uint64_t count, uint64_t avail, math::AffineParams p,
                float* out) {
  uint64_t i = 0;
#ifdef EDO_SPARSE_VECTOR
  for (; i < count && i + 8 <= avail; i += 8) _mm256_storeu_ps(out + i, decode8<V>(values, first + i, p));
#else
  (void)avail;
#endif
  for (; i < count; ++i) out[i] = sparse_value(V, values, first + i, p);
}

// Entry b, lane c: the rank of bit c among the set bits of b below it, with
// the sign bit set when bit c is set, so one vector is both vpermps's index
// (its low 3 bits) and vblendvps's mask (its sign).
constexpr std::array<std::array<int8_t, 8>, 256> kExpandLanes = [] {
  std::array<std::array<int8_t, 8>, 256> t{};
  for (uint32_t b = 0; b < 256; ++b)
    for (uint32_t c = 0; c < 8; ++c)
      t[b][c] = static_cast<int8_t>(std::popcount(b & ((1u << c) - 1)) | ((b >> c) & 1u ? 0x80 : 0));
  return t;
}();

// How an expanded row meets what is there (pool_math.hpp): added, added
// times its weight, the larger kept, or taken as it is (mode max's first
// row; a decoded row).
enum class FoldOp : uint8_t { sum, weighted, max, copy };

template <FoldOp O>
[[gnu::always_inline]] inline float fold_value(float acc, float v, float w) {
  if constexpr (O == FoldOp::sum) return math::pool_sum(acc, v);
  if constexpr (O == FoldOp::weighted) return math::pool_weighted_sum(acc, w, v);
  if constexpr (O == FoldOp::max) return math::pool_max(acc, v);
  return v;
}

// A bitmap row's columns [0, dim) folded into acc with fold_value()'s
// operations: a set bit takes the next of the row's values (run, readable 8
// values past the last), a clear one +0, as the decoded row holds them, so
// pooled sums keep the reference's bits; FoldOp::copy writes the decoded
// row itself. Eight columns a step in registers (one permute expands them)
// unless `portable` (CpuPath::portable); the last dim % 8 and the portable
// path one column a step, without a branch.
template <FoldOp O>
[[gnu::always_inline]] inline void expand_fold(const uint8_t* mask, uint64_t dim, const float* run, float w,
                                               bool portable, float* acc) {
  uint64_t byte = 0, pos = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if (!portable) {
    const __m256 weight = _mm256_set1_ps(w);
    // Columns [8 b, 8 b + 8) from values [at, ...).
    const auto step = [&](uint64_t b, uint32_t bits, uint64_t at) {
      const __m256i lanes =
          _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kExpandLanes[bits].data())));
      const __m256 v = _mm256_blendv_ps(_mm256_setzero_ps(), _mm256_permutevar8x32_ps(_mm256_loadu_ps(run + at), lanes),
                                        _mm256_castsi256_ps(lanes));
      const __m256 a = _mm256_loadu_ps(acc + 8 * b);
      __m256 r = v;
      if constexpr (O == FoldOp::sum) r = _mm256_add_ps(a, v);
      if constexpr (O == FoldOp::weighted) r = _mm256_fmadd_ps(weight, v, a);
      if constexpr (O == FoldOp::max) r = _mm256_blendv_ps(a, v, _mm256_cmp_ps(a, v, _CMP_LT_OQ));  // a < v ? v : a
      _mm256_storeu_ps(acc + 8 * b, r);
    };
    // 64 columns a word: each step's first value counted from the word, so
    // the steps do not wait on one another's counts.
    for (; 8 * byte + 64 <= dim; byte += 8) {
      uint64_t word;
      std::memcpy(&word, mask + byte, 8);
      for (uint32_t i = 0; i < 8; ++i)
        step(byte + i, static_cast<uint32_t>(word >> (8 * i)) & 0xffu,
             pos + static_cast<uint64_t>(std::popcount(word & ((uint64_t{1} << (8 * i)) - 1))));
      pos += static_cast<uint64_t>(std::popcount(word));
    }
    for (; 8 * byte + 8 <= dim; ++byte) {
      step(byte, mask[byte], pos);
      pos += static_cast<uint64_t>(std::popcount(mask[byte]));
    }
  }
#endif
  (void)portable;
  for (uint64_t c = 8 * byte; c < dim; ++c) {
    const uint32_t bit = (mask[c / 8] >> (c % 8)) & 1u;
    acc[c] = fold_value<O>(acc[c], std::bit_cast<float>(std::bit_cast<uint32_t>(run[pos]) & (0u - bit)), w);
    pos += bit;
  }
}

}  // namespace

void sparse_decode_run(SparseValues v, const uint8_t* values, uint64_t first, uint64_t count, math::AffineParams p,
                       float* out) {
  switch (v) {
    case SparseValues::f32:
      return decode_run<SparseValues::f32>(values, first, count, count, p, out);
    case SparseValues::f16:
      return decode_run<SparseValues::f16>(values, first, count, count, p, out);
    case SparseValues::bf16:
      return decode_run<SparseValues::bf16>(values, first, count, count, p, out);
    case SparseValues::int8:
      return decode_run<SparseValues::int8>(values, first, count, count, p, out);
    case SparseValues::int4:
      break;
  }
  decode_run<SparseValues::int4>(values, first, count, count, p, out);
}

namespace {

// What the CPU decode reads: a tier's sections and sizes, by value, so that a
// loop holding a copy keeps them in registers across its stores to the rows.
struct SparseRows {
  uint64_t dim, nnz, offset_bytes, mask_bytes;
  uint32_t index_bytes;  // csr
  const uint8_t *offsets, *values, *indices, *masks, *masks_end, *params;

  // A row's values decoded in order before they are placed: dim of them at
  // most, 8 more for the last eight-value step and for expand_fold's reads.
  size_t run_floats() const { return dim + 8; }

  uint64_t offset(uint64_t r) const {
    if (offset_bytes == 4) {
      uint32_t o;
      std::memcpy(&o, offsets + 4 * r, 4);
      return o;
    }
    uint64_t o;
    std::memcpy(&o, offsets + 8 * r, 8);
    return o;
  }

  template <SparseValues V>
  void prefetch(uint64_t r) const {
    const uint64_t a = offset(r);
    __builtin_prefetch(values + sparse_value_bytes(V, a & ~uint64_t{1}));
    if (indices) __builtin_prefetch(indices + a * index_bytes);
    if (masks) __builtin_prefetch(masks + r * mask_bytes);
    if (params) __builtin_prefetch(params + 8 * r);
  }

  // A row is decoded in two steps, a row apart (SparseTier::decode_rows_cpu).
  // stage: row r checked whole (offsets, then its columns or mask; false
  // when it is corrupt), and a bitmap row's values decoded into run.
  template <SparseValues V>
  [[gnu::always_inline]] bool stage(uint64_t r, float* run) const {
    const uint64_t a = offset(r), b = offset(r + 1);
    if (a > b || b > nnz || b - a > dim || (V == SparseValues::int4 && a % 2 != 0)) return false;
    if (indices) return true;
    if (!mask_holds(masks + r * mask_bytes, b - a)) return false;
    decode_run<V>(values, a, b - a, nnz - a, row_params(r), run);
    return true;
  }

  // place: row r, staged, into out[0, dim): csr values decoded and stored
  // at their columns of a zeroed row, bitmap values expanded along the mask.
  template <SparseValues V>
  [[gnu::always_inline]] bool place(uint64_t r, const float* run, float* out) const {
    if (masks) return expand_fold<FoldOp::copy>(masks + r * mask_bytes, dim, run, 0.0f, false, out), true;
    const uint64_t a = offset(r), m = offset(r + 1) - a;
    zero_row(out);
    if (index_bytes == 1) return scatter_run<V, false>(values, a, m, nnz - a, row_params(r), indices + a, dim, out);
    return scatter_run<V, true>(values, a, m, nnz - a, row_params(r), indices + 2 * a, dim, out);
  }

  math::AffineParams row_params(uint64_t r) const { return sparse_row_params(params ? params + 8 * r : nullptr); }

  // (n a local: the stores may alias any field, which would be reloaded.)
  void zero_row(float* out) const {
    const uint64_t n = dim;
#ifdef __AVX2__
    if (n >= 8) {
      for (uint64_t c = 0; c + 8 <= n; c += 8) _mm256_storeu_ps(out + c, _mm256_setzero_ps());
      return _mm256_storeu_ps(out + n - 8, _mm256_setzero_ps());
    }
#endif
    std::fill(out, out + n, 0.0f);
  }

  // A mask with exactly m bits set, none at or beyond dim, counted 8 bytes a
  // step; the last few bytes too when the section holds 8 from there.
  bool mask_holds(const uint8_t* mask, uint64_t m) const {
    uint64_t bits = 0, byte = 0, w = 0;
    for (; byte + 8 <= mask_bytes; byte += 8) {
      std::memcpy(&w, mask + byte, 8);
      bits += static_cast<uint64_t>(std::popcount(w));
    }
    if (const uint64_t left = mask_bytes - byte; left > 0) {
      w = 0;
      if (mask + byte + 8 <= masks_end) {
        std::memcpy(&w, mask + byte, 8);
        w &= ~uint64_t{0} >> (64 - 8 * left);
      } else {
        for (uint64_t k = 0; k < left; ++k) w |= uint64_t{mask[byte + k]} << (8 * k);
      }
      bits += static_cast<uint64_t>(std::popcount(w));
    }
    return bits == m && (dim % 8 == 0 || (mask[mask_bytes - 1] >> (dim % 8)) == 0);
  }
};

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
      mask_bytes_ = sparse_mask_bytes(dim_);
      masks_ = section(c, info, "masks", checked_mul(info.rows, mask_bytes_));
      masks_end_ = masks_ + info.rows * mask_bytes_;
    }
    if (affine) params_ = section(c, info, "params", checked_mul(info.rows, uint64_t{8}));
    values_end_ = values_ + sparse_value_bytes(spec_.values, nnz_);  // (an int4 tier's nnz is even)
    mean_row_values_ = info.rows ? (nnz_ + info.rows - 1) / info.rows : 0;
    if (offset(0) != 0 || offset(info.rows) != nnz_)
      fail(fmt::format("offsets run from {} to {}, the tier holds {} values", offset(0), offset(info.rows), nnz_));
  }

  void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const override {
    if (check_) check_->ensure();
    for_kind([&]<SparseValues V>() {
      decode_rows_cpu<V>(
          n, [local](size_t k) { return local[k]; }, [&](size_t k) { return out + dst[k] * dim_; }, true);
    });
  }
  void decode_range(uint64_t begin, uint64_t count, float* out, Device device) const override {
    if (check_) check_->ensure();
    if (device == Device::cuda) return decode_range_cuda(begin, count, out);
    for_kind([&]<SparseValues V>() {
      decode_rows_cpu<V>(
          count, [begin](size_t k) { return begin + k; }, [&](size_t k) { return out + k * dim_; }, false);
    });
  }
  bool check_on_first_read(std::shared_ptr<const detail::FirstReadCheck> check) override {
    check_ = std::move(check);
    return true;
  }
  void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const override {
    if (check_) check_->ensure();
    for_kind([&]<SparseValues V>() { pool_rows<V>(rows, mode, first, acc); });
  }
  // Where row `local`'s values begin (its offset read now: a pooled lookup
  // notes every row's address before it pools, so these reads overlap, and
  // the values are prefetched in its stream). A bitmap row's mask and its
  // scales are prefetched here, with the address, up to a thousand ids
  // before the row is pooled; its values, and a csr row's columns, with the
  // stream (prefetch_stream_row). Not checked: only prefetched.
  const uint8_t* row_address(uint64_t local) const override {
    if (masks_) __builtin_prefetch(masks_ + local * mask_bytes_, 0, 2);
    if (params_) __builtin_prefetch(params_ + 8 * local, 0, 2);
    const uint64_t a = offset(local);
    return a < nnz_ ? values_ + sparse_value_bytes(spec_.values, a & ~uint64_t{1}) : nullptr;
  }
  // The offsets, one random line a row, fetched 16 rows ahead of the loads
  // that read them.
  void row_addresses(const uint64_t* local, size_t n, const uint8_t** out) const override {
    constexpr size_t kAhead = 16;
    for (size_t k = 0; k < n; ++k) {
      if (k + kAhead < n) __builtin_prefetch(offsets_ + local[k + kAhead] * offset_bytes_, 0, 2);
      out[k] = row_address(local[k]);
    }
  }
  // A row's values at the tier's mean count (the stream's prefetch
  // distance, and the bytes prefetched from each row's address).
  uint64_t fetch_bytes() const override {
    return std::max<uint64_t>(sparse_value_bytes(spec_.values, mean_row_values_ + 1), 1);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    EDO_CORRUPT_FAIL("{}: tier '{}': {}", path_, stats_.name, what);
  }

  const uint8_t* section(const io::Container& c, const io::TierInfo& info, const char* role,
                         std::optional<uint64_t> want) {
    return tier_section(c, info, role, want, stats_).data;
  }

  // Rows row(0) .. row(n - 1) into dst(0) .. dst(n - 1), V their value
  // kind. Each row is staged (checked, bitmap values decoded) one row ahead
  // of being placed, so the stores that stage a row's values have reached
  // the cache by the time they are loaded back: loaded straight after, each
  // row waited on store forwarding (bitmap lookups ran at half the speed).
  // The first corrupt row in order is the error, after the rows before it.
  // Rows in any order (`ahead`): each row's offsets are fetched 16 rows
  // ahead and its values and columns 8 ahead (from those offsets,
  // unchecked: a prefetch of a bad address is harmless), so misses overlap.
  template <SparseValues V, class Row, class Dst>
  void decode_rows_cpu(size_t n, Row&& row, Dst&& dst, bool ahead) const {
    const SparseRows rows = view();
    constexpr size_t kAhead = 8, kLag = 1, kRing = 4;
    std::vector<float> run(kRing * rows.run_floats());
    const auto staged = [&](size_t k) { return run.data() + k % kRing * rows.run_floats(); };
    if (rows.indices) {
      for (size_t k = 0; k < n; ++k) {
        if (ahead && k + 2 * kAhead < n) __builtin_prefetch(rows.offsets + row(k + 2 * kAhead) * rows.offset_bytes);
        if (ahead && k + kAhead < n) rows.prefetch<V>(row(k + kAhead));
        if (!rows.stage<V>(row(k), nullptr) || !rows.place<V>(row(k), nullptr, dst(k))) corrupt(row(k));
      }
      return;
    }
    bool ok[kRing];
    for (size_t k = 0; k < std::min(n, kLag); ++k) ok[k] = rows.stage<V>(row(k), staged(k));
    for (size_t k = 0; k < n; ++k) {
      if (ahead && k + 2 * kAhead < n) __builtin_prefetch(rows.offsets + row(k + 2 * kAhead) * rows.offset_bytes);
      if (ahead && k + kAhead < n) rows.prefetch<V>(row(k + kAhead));
      if (k + kLag < n) ok[(k + kLag) % kRing] = rows.stage<V>(row(k + kLag), staged(k + kLag));
      if (!ok[k % kRing] || !rows.place<V>(row(k), staged(k), dst(k))) corrupt(row(k));
    }
  }

  // The pooled lookup's rows in the bag's sums. A bitmap row's values are
  // decoded (staged) kLag rows ahead and expanded along its mask straight
  // into the sums (expand_fold); a csr row is placed (scattered into a
  // zeroed row that stays in the L1 cache) kLag rows ahead and folded by
  // the CPU path's kernel. Ahead: loaded straight after they were stored,
  // the values waited on store forwarding, and the loads of the rows
  // ahead overlap. The first corrupt row in the bag's order is the error.
  // The stream's rows are prefetched as the kernels prefetch code rows
  // (pool_kernels.hpp), their columns too; their masks and scales were,
  // with their addresses.
  template <SparseValues V>
  void pool_rows(const TierRows& rows, PoolMode mode, bool first, float* acc) const {
    constexpr size_t kLag = 3, kRing = 4;
    const SparseRows s = view();
    const detail::PoolKernels& kernels = detail::pool_kernels(cpu_path());
    const bool portable = kernels.path == CpuPath::portable;
    const size_t run_floats = s.run_floats(), ahead = detail::pool_prefetch_rows(rows.prefetch_bytes);
    thread_local std::vector<float> scratch;
    if (scratch.size() < kRing * run_floats) scratch.resize(kRing * run_floats);
    const auto staged = [&](size_t k) { return scratch.data() + k % kRing * run_floats; };
    // Row k checked and staged (csr: placed) into staged(k).
    const auto stage = [&](size_t k) {
      const uint64_t r = rows.local[k];
      return s.stage<V>(r, staged(k)) && (s.masks || s.place<V>(r, nullptr, staged(k)));
    };
    bool ok[kRing];
    for (size_t k = 0; k < std::min(rows.n, kLag); ++k) ok[k] = stage(k);
    for (size_t k = 0; k < rows.n; ++k) {
      if (rows.codes && k + ahead < rows.n + rows.ahead) prefetch_stream_row<V>(rows.codes[k + ahead]);
      if (k + kLag < rows.n) ok[(k + kLag) % kRing] = stage(k + kLag);
      if (!ok[k % kRing]) corrupt(rows.local[k]);
      const float* w = rows.weights ? rows.weights + k : nullptr;
      if (!s.masks) {
        kernels.fold(mode, staged(k), 1, w, s.dim, first && k == 0, acc);
        continue;
      }
      const uint8_t* mask = s.masks + rows.local[k] * s.mask_bytes;
      if (mode == PoolMode::max && first && k == 0)
        expand_fold<FoldOp::copy>(mask, s.dim, staged(k), 0.0f, portable, acc);
      else if (mode == PoolMode::max)
        expand_fold<FoldOp::max>(mask, s.dim, staged(k), 0.0f, portable, acc);
      else if (w)
        expand_fold<FoldOp::weighted>(mask, s.dim, staged(k), *w, portable, acc);
      else
        expand_fold<FoldOp::sum>(mask, s.dim, staged(k), 0.0f, portable, acc);
    }
  }

  // A stream's row at `at` (its row_address()): its values, and a csr
  // row's columns, prefetched; nothing for another tier's row.
  template <SparseValues V>
  void prefetch_stream_row(const uint8_t* at) const {
    const auto address = reinterpret_cast<uintptr_t>(at);
    if (address < reinterpret_cast<uintptr_t>(values_) || address >= reinterpret_cast<uintptr_t>(values_end_)) return;
    detail::prefetch_code_row(at, static_cast<uint32_t>(fetch_bytes()));
    if (!indices_) return;
    const auto bytes = static_cast<uint64_t>(at - values_);
    const uint64_t a = V == SparseValues::int4 ? 2 * bytes : bytes / sparse_value_bytes(V, 1);
    detail::prefetch_code_row(indices_ + a * index_bytes_, static_cast<uint32_t>(mean_row_values_ * index_bytes_));
  }

  // The CPU decode's view of the sections, taken by value by each loop.
  SparseRows view() const {
    return SparseRows{dim_,    nnz_,     offset_bytes_, mask_bytes_, index_bytes_, offsets_,
                      values_, indices_, masks_,        masks_end_,  params_};
  }

  uint64_t offset(uint64_t r) const { return view().offset(r); }

  // fn.template operator()<V>() for the tier's value kind V, a constant there.
  template <class Fn>
  void for_kind(Fn&& fn) const {
    switch (spec_.values) {
      case SparseValues::f32:
        return fn.template operator()<SparseValues::f32>();
      case SparseValues::f16:
        return fn.template operator()<SparseValues::f16>();
      case SparseValues::bf16:
        return fn.template operator()<SparseValues::bf16>();
      case SparseValues::int8:
        return fn.template operator()<SparseValues::int8>();
      case SparseValues::int4:
        break;
    }
    fn.template operator()<SparseValues::int4>();
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

  std::string path_;
  SparseSpec spec_;
  uint64_t dim_ = 0, nnz_ = 0, offset_bytes_ = 0;
  uint32_t index_bytes_ = 0;
  uint64_t mask_bytes_ = 0;  // a bitmap row's
  const uint8_t *offsets_ = nullptr, *values_ = nullptr, *indices_ = nullptr, *masks_ = nullptr, *params_ = nullptr;
  const uint8_t *masks_end_ = nullptr, *values_end_ = nullptr;
  uint64_t mean_row_values_ = 0;  // a row's values at the tier's mean, rounded up: what a prefetch covers
  std::shared_ptr<const detail::FirstReadCheck> check_;  // io::Verify::small
};

}  // namespace

std::unique_ptr<TierView> open_sparse_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) {
  try {
    return std::make_unique<SparseTier>(c, info, jt);
  } catch (const Error& e) {
    if (e.code() == ExitCode::usage) EDO_CORRUPT_FAIL("{}: tier '{}': {}", c.path(), info.name, e.what());
    throw;
  }
}

}  // namespace edo
