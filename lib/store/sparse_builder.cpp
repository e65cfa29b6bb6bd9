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
#include <edo/random.hpp>
#include <edo/sparse.hpp>
#include <edo/table_writer.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

namespace edo {

namespace {

// An anonymous temporary file written once and read back once.
class Spool {
 public:
  Spool() : file_(std::tmpfile(), &std::fclose) {
    if (!file_) EDO_FAIL("cannot create a temporary file for a sparse tier (TMPDIR)");
  }
  void write(const void* data, size_t size) {
    if (size && std::fwrite(data, 1, size, file_.get()) != size)
      EDO_FAIL("writing a sparse tier's temporary file failed");
    bytes_ += size;
  }
  uint64_t bytes() const { return bytes_; }
  // Streams the contents to fn(data, size) in pieces.
  template <class Fn>
  void replay(Fn&& fn) {
    if (std::fflush(file_.get()) != 0 || std::fseek(file_.get(), 0, SEEK_SET) != 0)
      EDO_FAIL("reading a sparse tier's temporary file failed");
    std::vector<uint8_t> piece(1 << 20);
    for (uint64_t left = bytes_; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, piece.size()));
      if (std::fread(piece.data(), 1, n, file_.get()) != n) EDO_FAIL("reading a sparse tier's temporary file failed");
      fn(piece.data(), n);
      left -= n;
    }
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  uint64_t bytes_ = 0;
};

// Magnitude order: larger first, ties to the lower column.
struct ByMagnitude {
  const float* row;
  bool operator()(uint32_t a, uint32_t b) const {
    const float ma = std::fabs(row[a]), mb = std::fabs(row[b]);
    return ma != mb ? ma > mb : a < b;
  }
};

}  // namespace

// The columns a row keeps, ascending: the rule's choice among its nonzero
// values, made even for int4 (the next value in magnitude order added, or
// the smallest kept one dropped when there is no other).
void sparse_select(const SparseSpec& spec, float threshold, const float* row, uint32_t dim, std::vector<uint32_t>& keep,
                   std::vector<uint32_t>& scratch) {
  keep.clear();
  scratch.clear();
  for (uint32_t j = 0; j < dim; ++j)
    if (row[j] != 0.0f) scratch.push_back(j);
  const ByMagnitude order{row};
  size_t count = scratch.size();
  if (spec.rule == SparseRule::per_row_k) {
    count = std::min<size_t>(spec.k, scratch.size());
  } else {
    count = static_cast<size_t>(
        std::count_if(scratch.begin(), scratch.end(), [&](uint32_t j) { return std::fabs(row[j]) >= threshold; }));
  }
  if (spec.values == SparseValues::int4 && count % 2 != 0) count += count < scratch.size() ? 1 : -1;
  std::nth_element(scratch.begin(), scratch.begin() + static_cast<long>(count), scratch.end(), order);
  keep.assign(scratch.begin(), scratch.begin() + static_cast<long>(count));
  std::sort(keep.begin(), keep.end());
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

void sparse_store_values(SparseValues v, const float* row, const std::vector<uint32_t>& keep,
                         std::vector<uint8_t>& values, uint8_t* params) {
  const auto append = [&](const void* p, size_t bytes) {
    const auto* b = static_cast<const uint8_t*>(p);
    values.insert(values.end(), b, b + bytes);
  };
  switch (v) {
    case SparseValues::f32:
      for (uint32_t j : keep) append(&row[j], 4);
      return;
    case SparseValues::f16:
    case SparseValues::bf16:
      for (uint32_t j : keep) {
        const uint16_t h = v == SparseValues::f16 ? float_to_half_bits(row[j]) : float_to_bf16_bits(row[j]);
        append(&h, 2);
      }
      return;
    case SparseValues::int8:
    case SparseValues::int4:
      break;
  }
  float lo = 0, hi = 0;
  if (!keep.empty()) lo = hi = row[keep[0]];
  for (uint32_t j : keep) lo = std::min(lo, row[j]), hi = std::max(hi, row[j]);
  const uint32_t qmax = sparse_qmax(v);
  const math::AffineParams p = math::affine_from_range(lo, hi, qmax);
  math::store_f32(params, p.scale);
  math::store_f32(params + 4, p.offset);
  const math::AffineInverse inv = math::affine_inverse(p.scale);
  const auto q = [&](uint32_t j) {
    return static_cast<uint8_t>(math::affine_quantize(row[j], p.offset, inv, static_cast<float>(qmax)));
  };
  if (v == SparseValues::int8) {
    for (uint32_t j : keep) values.push_back(q(j));
    return;
  }
  for (size_t i = 0; i < keep.size(); i += 2) values.push_back(static_cast<uint8_t>(q(keep[i]) | q(keep[i + 1]) << 4));
}

void sparse_decode_values(SparseValues v, const uint8_t* values, const uint8_t* params,
                          const std::vector<uint32_t>& keep, uint32_t dim, float* out) {
  std::fill(out, out + dim, 0.0f);
  const math::AffineParams p = sparse_row_params(sparse_values_affine(v) ? params : nullptr);
  for (size_t i = 0; i < keep.size(); ++i) out[keep[i]] = sparse_value(v, values, i, p);
}

void sparse_round_trip(const SparseSpec& spec, float threshold, const float* x, size_t n, uint32_t dim, float* out) {
  std::vector<uint32_t> keep, scratch;
  std::vector<uint8_t> values;
  uint8_t params[8] = {};
  for (size_t i = 0; i < n; ++i) {
    sparse_select(spec, threshold, x + i * dim, dim, keep, scratch);
    values.clear();
    sparse_store_values(spec.values, x + i * dim, keep, values, params);
    sparse_decode_values(spec.values, values.data(), params, keep, dim, out + i * dim);
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

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    recon_ = std::make_unique<RowErrorStats>(dim_);
    writer_ = &writer;
    writer.begin_section(prefix + "values");
    const uint64_t zero = 0;
    offsets_.write(&zero, sizeof zero);
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    const auto t0 = std::chrono::steady_clock::now();
    check_values(x, n, row_ids);
    std::vector<float> decoded(dim_);
    for (size_t i = 0; i < n; ++i) {
      const float* row = x + i * dim_;
      sparse_select(spec_, threshold_, row, dim_, keep_, scratch_);
      store_row(row);
      decode_stored(decoded.data());
      recon_->add(row_error(row, decoded.data(), dim_));
    }
    flush_block();
    encode_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    writer.end_section();
    section_bytes_ = {{"values", sparse_value_bytes(spec_.values, nnz_)}};
    const bool narrow = nnz_ <= UINT32_MAX;
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
                  {"offset_bytes", narrow ? 4 : 8},
                  {"density", rows_ ? static_cast<double>(nnz_) / (static_cast<double>(rows_) * dim_) : 0.0}});
    return bytes;
  }

 private:
  void check_values(const float* x, size_t n, const uint64_t* row_ids) const {
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;
    enc.allow_nonfinite = false;
    // fp16 values overflow from 65520 up (they would round to Inf).
    const uint32_t limit = spec_.values == SparseValues::f16 ? 0x477ff000u : 0x7f800000u;
    check_finite(x, n, dim_, limit, codec(), enc, false);
  }

  static uint64_t copy_spool(io::ContainerWriter& writer, const std::string& name, Spool& spool) {
    writer.begin_section(name);
    spool.replay([&](const uint8_t* data, size_t size) { writer.append(data, size); });
    writer.end_section();
    return spool.bytes();
  }

  // Appends the kept values of `row` (columns keep_) in the tier's form.
  void store_row(const float* row) {
    const size_t m = keep_.size();
    values_.clear();
    param_bytes_.fill(0);
    sparse_store_values(spec_.values, row, keep_, values_, param_bytes_.data());
    block_.values.insert(block_.values.end(), values_.begin(), values_.end());
    nnz_ += m;
    block_.offsets.push_back(nnz_);
    if (spec_.form == SparseForm::csr) {
      const uint32_t ib = sparse_index_bytes(dim_);
      for (uint32_t j : keep_)
        for (uint32_t b = 0; b < ib; ++b) block_.where.push_back(static_cast<uint8_t>(j >> (8 * b)));  // little-endian
    } else {
      const size_t at = block_.where.size();
      block_.where.resize(at + sparse_mask_bytes(dim_), 0);
      for (uint32_t j : keep_) block_.where[at + j / 8] |= static_cast<uint8_t>(1u << (j % 8));
    }
    if (sparse_values_affine(spec_.values))
      block_.params.insert(block_.params.end(), param_bytes_.begin(), param_bytes_.end());
    ++rows_;
  }

  // A block's sections, written once per add(): one write per section, not per row.
  struct BlockBuffers {
    std::vector<uint8_t> values, where, params;
    std::vector<uint64_t> offsets;
    void clear() { values.clear(), where.clear(), params.clear(), offsets.clear(); }
  };
  void flush_block() {
    writer_->append(block_.values.data(), block_.values.size());
    offsets_.write(block_.offsets.data(), block_.offsets.size() * sizeof(uint64_t));
    where_.write(block_.where.data(), block_.where.size());
    params_.write(block_.params.data(), block_.params.size());
    block_.clear();
  }

  // The row just stored, decoded as a reader decodes it.
  void decode_stored(float* out) const {
    sparse_decode_values(spec_.values, values_.data(), param_bytes_.data(), keep_, dim_, out);
  }

  SparseSpec spec_;
  uint32_t dim_;
  EncodeOptions enc_;
  float threshold_ = 0;
  io::ContainerWriter* writer_ = nullptr;
  Spool offsets_, where_, params_;
  uint64_t nnz_ = 0, rows_ = 0;
  std::vector<uint32_t> keep_, scratch_;
  std::vector<uint8_t> values_;
  std::array<uint8_t, 8> param_bytes_{};
  BlockBuffers block_;
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
