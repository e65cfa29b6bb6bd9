// SPDX-License-Identifier: Apache-2.0
// The writing half of the sparse tier kind (sparse.hpp): which values of a
// row are kept, how they are stored, and the sections streamed. The values
// go straight into the file; offsets, column indices (or masks) and row
// parameters are spooled to temporary files and copied in at the end, so
// memory stays bounded by a block whatever the table's size.
#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/io/table.hpp>
#include <edo/parallel.hpp>
#include <edo/random.hpp>
#include <edo/sparse_writer.hpp>
#include <edo/table_writer.hpp>

#include "spool.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#ifdef __AVX2__
#include <immintrin.h>
#endif

namespace edo {

namespace {

// Magnitude bits of a float: for finite values they order as |v| does, so
// the selection compares integers, with no fabs and no float compare.
inline uint32_t magnitude_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof u);
  return u & 0x7fffffffu;
}

// Entry b: the positions of b's set bits, ascending (then zeros): the
// vpermd index that packs the lanes a mask selects to the front.
constexpr std::array<std::array<uint8_t, 8>, 256> kPackLanes = [] {
  std::array<std::array<uint8_t, 8>, 256> t{};
  for (uint32_t b = 0; b < 256; ++b)
    for (uint32_t c = 0, k = 0; c < 8; ++c)
      if ((b >> c) & 1u) t[b][k++] = static_cast<uint8_t>(c);
  return t;
}();

// dst = src[j] (j itself when src is null) for the j < n whose flag[j] is
// ~0 (the others 0), in order; returns how many. dst has room for n + 8 and
// may be src. With AVX2 eight lanes a step, packed by one permute; else
// one a step, without a branch.
uint32_t pack_flagged(const uint32_t* flag, const uint32_t* src, uint32_t n, uint32_t* dst) {
  uint32_t m = 0, j = 0;
#ifdef __AVX2__
  const __m256i iota = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (; j + 8 <= n; j += 8) {
    const auto bits = static_cast<uint32_t>(
        _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(flag + j)))));
    const __m256i v = src ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + j))
                          : _mm256_add_epi32(iota, _mm256_set1_epi32(static_cast<int>(j)));
    const __m256i lanes =
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(kPackLanes[bits].data())));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + m), _mm256_permutevar8x32_epi32(v, lanes));
    m += static_cast<uint32_t>(std::popcount(bits));
  }
#endif
  for (; j < n; ++j) {
    dst[m] = src ? src[j] : j;
    m += flag[j] & 1u;
  }
  return m;
}

// 0/1 as a flag for pack_flagged (all ones or zero), combined with & so
// that the loops computing flags vectorise.
inline uint32_t flag_of(bool b) { return 0u - static_cast<uint32_t>(b); }

// The `count`-th largest of mag[0, dim) (0 < count <= dim, none above
// `top`): the largest t with at least `count` values >= t, decided bit by
// bit from the top, each bit one branch-free counting pass that vectorises
// (nth_element's data-dependent branches cost more at these sizes). After
// every 8 bits the values whose bits so far differ from t's drop out (those
// above counted once) into `cand`, so later passes run over the few left,
// and end early when t is the smallest or the largest of them. `flag` is
// scratch; both hold dim + 8 values.
uint32_t nth_largest(const uint32_t* mag, uint32_t dim, size_t count, uint32_t top, uint32_t* cand, uint32_t* flag) {
  const uint32_t* in = mag;
  uint32_t n = dim, need = static_cast<uint32_t>(count), t = 0;
  for (int low = 24;; low -= 8) {
    for (int b = low == 24 ? 30 : low + 7; b >= low; --b) {
      const uint32_t c = t | 1u << b;
      if (c > top) continue;  // no value reaches it
      uint32_t k = 0;
      for (uint32_t j = 0; j < n; ++j) k += static_cast<uint32_t>(in[j] >= c);
      if (k >= need) t = c;
    }
    if (low == 0) return t;
    uint32_t above = 0;
    for (uint32_t j = 0; j < n; ++j) {
      flag[j] = flag_of(in[j] >> low == t >> low);
      above += static_cast<uint32_t>(in[j] >> low > t >> low);
    }
    n = pack_flagged(flag, in, n, cand);
    in = cand, need -= above;
    if (need == 1) return *std::max_element(in, in + n);
    if (need == n) return *std::min_element(in, in + n);
  }
}

}  // namespace

// The columns a row keeps, ascending: the rule's choice among its nonzero
// values, made even for int4 (the next value in magnitude order added, or
// the smallest kept one dropped when there is no other). Magnitude order is
// larger first, ties to the lower column, so the first `count` in that order
// are the values above the count-th largest magnitude t and the lowest
// columns holding t. (The plain nth_element form is the reference in
// test/test_sparse.cpp.)
void sparse_select(const SparseSpec& spec, float threshold, const float* row, uint32_t dim, std::vector<uint32_t>& keep,
                   std::vector<uint32_t>& scratch) {
  scratch.resize(3 * (size_t{dim} + 8));  // magnitudes, flags, nth_largest's candidates
  uint32_t *mag = scratch.data(), *flag = mag + dim + 8;
  uint32_t nz = 0, top = 0;
  for (uint32_t j = 0; j < dim; ++j) {
    mag[j] = magnitude_bits(row[j]);
    nz += static_cast<uint32_t>(mag[j] != 0);
    top = std::max(top, mag[j]);
  }
  const bool by_threshold = spec.rule != SparseRule::per_row_k;
  uint32_t above = 0;
  if (by_threshold)
    for (uint32_t j = 0; j < dim; ++j) {
      flag[j] = flag_of(mag[j] != 0) & flag_of(std::fabs(row[j]) >= threshold);
      above += flag[j] & 1u;
    }
  size_t count = by_threshold ? above : std::min<size_t>(spec.k, nz);
  if (spec.values == SparseValues::int4 && count % 2 != 0) count += count < nz ? 1 : -1;
  keep.resize(size_t{dim} + 8);
  const auto keep_flagged = [&] { keep.resize(pack_flagged(flag, nullptr, dim, keep.data())); };
  if (count == nz) {
    for (uint32_t j = 0; j < dim; ++j) flag[j] = flag_of(mag[j] != 0);
    return keep_flagged();
  }
  if (by_threshold && count == above) return keep_flagged();
  if (count == 0) return keep.clear();
  // 0 < count < nz, so t is a nonzero magnitude and zeros are never kept.
  const uint32_t t = nth_largest(mag, dim, count, top, flag + dim + 8, flag);
  uint32_t greater = 0, ties = 0;
  for (uint32_t j = 0; j < dim; ++j) {
    flag[j] = flag_of(mag[j] >= t);
    greater += static_cast<uint32_t>(mag[j] > t), ties += static_cast<uint32_t>(mag[j] == t);
  }
  if (greater + ties == count) return keep_flagged();
  // More columns hold t than are needed: the lowest of them, one at a time (rare).
  uint32_t m = 0, tied_left = static_cast<uint32_t>(count) - greater;
  for (uint32_t j = 0; j < dim; ++j) {
    const bool tie = mag[j] == t && tied_left > 0;
    tied_left -= tie ? 1u : 0u;
    keep[m] = j;
    m += mag[j] > t || tie ? 1u : 0u;
  }
  keep.resize(m);
}

// The magnitude at rank density * count among up to 2^20 of the rows'
// magnitudes, drawn with the seed (a fixed stride could fall on one column).
float sparse_fit_threshold(double density, const float* x, size_t n, uint32_t dim, uint64_t seed) {
  const std::vector<uint64_t> pick = sample_indices(n * dim, uint64_t{1} << 20, seed);
  std::vector<float> mags(pick.size());
  for (size_t k = 0; k < pick.size(); ++k) mags[k] = std::fabs(x[pick[k]]);
  const auto keep = static_cast<uint64_t>(std::llround(density * static_cast<double>(mags.size())));
  if (keep == 0) return std::numeric_limits<float>::max();
  if (keep >= mags.size()) return 0.0f;
  std::nth_element(mags.begin(), mags.begin() + static_cast<long>(keep - 1), mags.end(), std::greater<>());
  return mags[keep - 1];
}

// One pass per kind over the kept columns, into bytes sized once.
void sparse_store_values(SparseValues v, const float* row, const std::vector<uint32_t>& keep,
                         std::vector<uint8_t>& values, uint8_t* params) {
  const size_t m = keep.size(), at = values.size();
  // int4 pairs values in a byte; an odd count (never from sparse_select) ends on a low nibble.
  values.resize(at + (v == SparseValues::int4 ? (m + 1) / 2 : sparse_value_bytes(v, m)));
  uint8_t* out = values.data() + at;
  switch (v) {
    case SparseValues::f32:
      for (size_t i = 0; i < m; ++i) std::memcpy(out + 4 * i, &row[keep[i]], 4);
      return;
    case SparseValues::f16:
    case SparseValues::bf16:
      for (size_t i = 0; i < m; ++i) {
        const float f = row[keep[i]];
        const uint16_t h = v == SparseValues::f16 ? float_to_half_bits(f) : float_to_bf16_bits(f);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case SparseValues::int8:
    case SparseValues::int4:
      break;
  }
  float lo = 0, hi = 0;
  if (m > 0) lo = hi = row[keep[0]];
  for (uint32_t j : keep) lo = std::min(lo, row[j]), hi = std::max(hi, row[j]);
  const uint32_t qmax = sparse_qmax(v);
  const math::AffineParams p = math::affine_from_range(lo, hi, qmax);
  math::store_f32(params, p.scale);
  math::store_f32(params + 4, p.offset);
  const math::AffineInverse inv = math::affine_inverse(p.scale);
  const auto q = [&, qm = static_cast<float>(qmax)](size_t i) {
    return static_cast<uint8_t>(math::affine_quantize(row[keep[i]], p.offset, inv, qm));
  };
  if (v == SparseValues::int8) {
    for (size_t i = 0; i < m; ++i) out[i] = q(i);
    return;
  }
  for (size_t i = 0; i + 1 < m; i += 2) out[i / 2] = static_cast<uint8_t>(q(i) | q(i + 1) << 4);
  if (m % 2 != 0) out[m / 2] = q(m - 1);
}

// The values decoded in runs (sparse_decode_run, the reader's own loops)
// through a small buffer, then placed at their columns.
void sparse_decode_values(SparseValues v, const uint8_t* values, const uint8_t* params,
                          const std::vector<uint32_t>& keep, uint32_t dim, float* out) {
  std::fill(out, out + dim, 0.0f);
  const math::AffineParams p = sparse_row_params(sparse_values_affine(v) ? params : nullptr);
  constexpr size_t kRun = 256;  // even: every run of int4 values starts on a byte
  float run[kRun];
  for (size_t i = 0; i < keep.size(); i += kRun) {
    const size_t n = std::min(kRun, keep.size() - i);
    sparse_decode_run(v, values, i, n, p, run);
    for (size_t k = 0; k < n; ++k) out[keep[i + k]] = run[k];
  }
}

namespace {

// One row through a sparse tier: selected, stored as the tier stores it,
// and decoded as the reader decodes it.
struct RowCoder {
  std::vector<uint32_t> keep, scratch;
  // Appends the row's values to `values`, writes its affine pair to
  // params[0, 8) (int8/int4) and its decoded form to out[0, dim).
  void code(const SparseSpec& spec, float threshold, const float* row, uint32_t dim, std::vector<uint8_t>& values,
            uint8_t* params, float* out) {
    sparse_select(spec, threshold, row, dim, keep, scratch);
    const size_t at = values.size();
    sparse_store_values(spec.values, row, keep, values, params);
    sparse_decode_values(spec.values, values.data() + at, params, keep, dim, out);
  }
};

}  // namespace

// Rows are independent, so they are spread across threads: the same result
// whatever the thread count.
void sparse_round_trip(const SparseSpec& spec, float threshold, const float* x, size_t n, uint32_t dim, float* out) {
  const auto rows = static_cast<int64_t>(n);
#pragma omp parallel if (parallel_worth(n * dim))
  {
    RowCoder coder;
    std::vector<uint8_t> values;
    uint8_t params[8] = {};
#pragma omp for schedule(static)
    for (int64_t i = 0; i < rows; ++i) {
      const size_t r = static_cast<size_t>(i);
      values.clear();
      coder.code(spec, threshold, x + r * dim, dim, values, params, out + r * dim);
    }
  }
}

namespace {

class SparseTierBuilder final : public TierBuilder {
 public:
  SparseTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc)
      : spec_(parse_sparse_spec(spec, dim)), dim_(static_cast<uint32_t>(dim)), enc_(enc) {
    threshold_ = spec_.rule == SparseRule::threshold ? spec_.threshold : 0.0f;
  }

  std::string codec() const override { return format_sparse_spec(spec_); }
  // Every value stored, at the same width and with the same row parameters.
  uint64_t dense_bytes() const override {
    const uint64_t row = spec_.values == SparseValues::int4 ? (dim_ + 1) / 2 : sparse_value_bytes(spec_.values, dim_);
    return rows_ * (row + sparse_param_bytes(spec_.values));
  }
  bool needs_training() const override { return spec_.rule == SparseRule::density; }

  void train(const float* x, size_t n, const uint64_t* row_ids, uint64_t seed) override {
    check_values(x, n, row_ids);
    threshold_ = sparse_fit_threshold(spec_.density, x, n, dim_, seed);
  }

  std::vector<NamedBlob> trained_state() const override { return {{"threshold", {1}, {threshold_}}}; }

  void load_trained(const TrainedTier& state) override {
    if (state.blobs.size() != 1 || state.blobs[0].name != "threshold" || state.blobs[0].values.size() != 1)
      EDO_USAGE_FAIL("--trained: tier '{}' holds no fitted threshold", state.name);
    threshold_ = state.blobs[0].values[0];
  }

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    recon_ = std::make_unique<RowErrorStats>(dim_);
    writer_ = &writer;
    writer.begin_section(prefix + "values");
    const uint64_t zero = 0;
    offsets_.write(&zero, sizeof zero);
  }

  // The block's rows in chunks spread across threads, each chunk encoded
  // into its own buffers; the chunks are then written and the rows' errors
  // summed in row order, so the file and the report do not depend on the
  // thread count.
  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    const auto t0 = std::chrono::steady_clock::now();
    check_values(x, n, row_ids);
    const size_t per = std::max<size_t>(1, kParallelMinWork / dim_);
    const size_t chunks = (n + per - 1) / per;
    if (chunks_.size() < chunks) chunks_.resize(chunks);
    errors_.resize(n);
    const auto count = static_cast<int64_t>(chunks);
#pragma omp parallel for schedule(dynamic, 1) if (chunks > 1)
    for (int64_t c = 0; c < count; ++c) {
      const size_t begin = static_cast<size_t>(c) * per;
      encode_chunk(x, begin, std::min(n, begin + per), chunks_[static_cast<size_t>(c)]);
    }
    check_underflow(n, per, row_ids);
    for (size_t c = 0; c < chunks; ++c) write_chunk(chunks_[c]);
    for (size_t i = 0; i < n; ++i) recon_->add(errors_[i]);
    encode_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    writer.end_section();
    section_bytes_ = {{"values", sparse_value_bytes(spec_.values, nnz_)}};
    const bool narrow = sparse_offset_bytes(nnz_) == 4;
    writer.begin_section(prefix + "offsets");
    offsets_.replay([&](const uint8_t* data, size_t size) {
      if (!narrow) return writer.append(data, size);
      std::vector<uint32_t> o(size / 8);
      for (size_t k = 0; k < o.size(); ++k) {
        uint64_t v;
        std::memcpy(&v, data + 8 * k, 8);
        o[k] = static_cast<uint32_t>(v);
      }
      writer.append(o.data(), o.size() * 4);
    });
    writer.end_section();
    section_bytes_.emplace_back("offsets", offsets_.bytes() / (narrow ? 2 : 1));
    nlohmann::json sections = {{"values", prefix + "values"}, {"offsets", prefix + "offsets"}};
    const char* role = spec_.form == SparseForm::csr ? "indices" : "masks";
    section_bytes_.emplace_back(role, copy_spool(writer, prefix + role, where_));
    sections[role] = prefix + role;
    if (sparse_values_affine(spec_.values)) {
      section_bytes_.emplace_back("params", copy_spool(writer, prefix + "params", params_));
      sections["params"] = prefix + "params";
    }
    uint64_t bytes = 0;
    for (const auto& [role_name, b] : section_bytes_) bytes += b;
    entry.update({{"codec", codec()},
                  {"code_size", 0},
                  {"sections", sections},
                  {"nnz", nnz_},
                  {"offset_bytes", sparse_offset_bytes(nnz_)},
                  {"density", sparse_density(nnz_, rows_, dim_)}});
    return bytes;
  }

 private:
  void check_values(const float* x, size_t n, const uint64_t* row_ids) const {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    enc.allow_nonfinite = false;
    // fp16 values overflow from 65520 up (they would round to Inf).
    const uint32_t limit = spec_.values == SparseValues::f16 ? kHalfOverflowBits : 0x7f800000u;
    check_finite(x, n, dim_, limit, codec(), enc, false);
  }

  // The rule every codec follows (docs/CLI.md, "Tiny and huge values"): a
  // nonzero row whose kept values all round to zero in the value type (fp16
  // below 6e-8, say) is refused, not stored as a row of zeros.
  void check_underflow(size_t n, size_t per, const uint64_t* row_ids) const {
    if (enc_.allow_underflow) return;
    for (size_t i = 0; i < n; ++i) {
      const RowError& e = errors_[i];
      if (!(e.norm2 > 0) || e.decoded_norm2 != 0 || chunks_[i / per].counts[i % per] == 0) continue;
      const uint64_t row = row_ids ? row_ids[i] : enc_.first_row + i;
      EDO_FAIL(
          "{}{}row {}: nonzero, but {} stores its kept values as all zeros (below the value type's smallest "
          "step); store them as fp32 or int8, or scale the table up",
          enc_.input, enc_.input.empty() ? "" : ": ", row, codec());
    }
  }

  static uint64_t copy_spool(io::ContainerWriter& writer, const std::string& name, Spool& spool) {
    writer.begin_section(name);
    spool.replay([&](const uint8_t* data, size_t size) { writer.append(data, size); });
    writer.end_section();
    return spool.bytes();
  }

  // A chunk of a block's rows, encoded: its sections' bytes and each row's value count.
  struct Chunk {
    std::vector<uint8_t> values, where, params;
    std::vector<uint64_t> counts;
  };

  // Rows [begin, end) of x into `c`, their reconstruction errors into errors_.
  void encode_chunk(const float* x, size_t begin, size_t end, Chunk& c) {
    c.values.clear(), c.where.clear(), c.params.clear(), c.counts.clear();
    RowCoder coder;
    std::vector<float> decoded(dim_);
    const bool affine = sparse_values_affine(spec_.values);
    uint8_t no_params[8] = {};
    for (size_t i = begin; i < end; ++i) {
      const float* row = x + i * dim_;
      if (affine) c.params.resize(c.params.size() + 8);
      coder.code(spec_, threshold_, row, dim_, c.values, affine ? c.params.data() + c.params.size() - 8 : no_params,
                 decoded.data());
      errors_[i] = row_error(row, decoded.data(), dim_);
      c.counts.push_back(coder.keep.size());
      place_columns(coder.keep, c.where);
    }
  }

  // A row's columns in the tier's form: little-endian indices, or a mask.
  void place_columns(const std::vector<uint32_t>& keep, std::vector<uint8_t>& where) const {
    const size_t at = where.size();
    if (spec_.form == SparseForm::bitmap) {
      where.resize(at + sparse_mask_bytes(dim_), 0);
      for (uint32_t j : keep) where[at + j / 8] |= static_cast<uint8_t>(1u << (j % 8));
      return;
    }
    const bool wide = sparse_index_bytes(dim_) == 2;
    where.resize(at + (wide ? 2 : 1) * keep.size());
    uint8_t* w = where.data() + at;
    for (size_t i = 0; i < keep.size(); ++i) {
      if (!wide) {
        w[i] = static_cast<uint8_t>(keep[i]);
        continue;
      }
      w[2 * i] = static_cast<uint8_t>(keep[i]);
      w[2 * i + 1] = static_cast<uint8_t>(keep[i] >> 8);
    }
  }

  // A chunk's sections, one write each, its offsets running on from nnz_.
  void write_chunk(const Chunk& c) {
    writer_->append(c.values.data(), c.values.size());
    ends_.clear();
    for (uint64_t m : c.counts) ends_.push_back(nnz_ += m);
    offsets_.write(ends_.data(), ends_.size() * sizeof(uint64_t));
    where_.write(c.where.data(), c.where.size());
    params_.write(c.params.data(), c.params.size());
    rows_ += c.counts.size();
  }

  SparseSpec spec_;
  uint32_t dim_;
  EncodeOptions enc_;
  float threshold_ = 0;
  io::ContainerWriter* writer_ = nullptr;
  Spool offsets_{"a sparse tier"}, where_{"a sparse tier"}, params_{"a sparse tier"};
  uint64_t nnz_ = 0, rows_ = 0;
  std::vector<Chunk> chunks_;  // reused from block to block
  std::vector<RowError> errors_;
  std::vector<uint64_t> ends_;
};

}  // namespace

double sparse_expected_density(const SparseSpec& spec, io::TableReader& table, uint64_t sample_rows) {
  const uint64_t dim = table.dim();
  if (spec.rule == SparseRule::per_row_k) return static_cast<double>(spec.k) / static_cast<double>(dim);
  if (spec.rule == SparseRule::density) return spec.density;
  const uint64_t rows = table.rows(), n = std::min(rows, sample_rows);
  if (n == 0) return 0;
  std::vector<float> row(dim);
  uint64_t kept = 0;
  for (uint64_t i = 0; i < n; ++i) {
    table.read_f32(i * rows / n, 1, row.data());
    kept += static_cast<uint64_t>(
        std::count_if(row.begin(), row.end(), [&](float v) { return v != 0.0f && std::fabs(v) >= spec.threshold; }));
  }
  return static_cast<double>(kept) / static_cast<double>(n * dim);
}

std::unique_ptr<TierBuilder> make_sparse_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc) {
  return std::make_unique<SparseTierBuilder>(spec, dim, enc);
}

}  // namespace edo
