// SPDX-License-Identifier: Apache-2.0
// The writing half of the hashed tier kind (hash.hpp): shared tables fitted
// by weighted least squares to the tier's trained rows, in prepare(), which
// sees the whole input. The fits stream the table in blocks: memory is the
// tables (a few copies of B x dim floats for the solver), 12 bytes a row of
// the tier (its ids and access counts), K fp16 weights a table row when the
// spec has weights, and a block.
//
// Every sum over rows runs in table order inside one column of the tables,
// and threads take whole columns, so a fit is the same bits whatever the
// thread count. On a GPU (EncodeOptions::device) the solver's products run
// in kernels/hash_fit.cu with the same operations in the same order: the
// same bits again.
#include <edo/codec.hpp>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/hash.hpp>
#include <edo/io/table.hpp>
#include <edo/parallel.hpp>
#include <edo/table_writer.hpp>
#include <edo/unit_scale.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/hash_fit.cuh>
#endif

#include <omp.h>

#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

namespace edo {

namespace {

// The rows a fit sees: the tier's ids in table order and their weights.
struct FitRows {
  std::vector<uint64_t> ids;
  std::vector<float> freq;  // access counts (1 each without frequencies)
};

// Up to K (slot, coefficient) pairs of a row in the fit's parameter table,
// slots repeated within a row merged (their coefficients summed).
struct RowTerms {
  std::array<uint64_t, kMaxHashK> slot;
  std::array<float, kMaxHashK> coef;
  uint32_t n = 0;
  void add(uint64_t s, float c) {
    for (uint32_t t = 0; t < n; ++t)
      if (slot[t] == s) {
        coef[t] += c;
        return;
      }
    slot[n] = s, coef[n] = c, ++n;
  }
};

// Columns [j0, j1) of `dim`, split into one chunk per thread: fn(j0, j1).
template <class Fn>
void for_column_chunks(uint64_t dim, uint64_t work, Fn&& fn) {
  const int chunks =
      parallel_worth(work) ? std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(dim))) : 1;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int c = 0; c < chunks; ++c)
    fn(dim * static_cast<uint64_t>(c) / static_cast<uint64_t>(chunks),
       dim * static_cast<uint64_t>(c + 1) / static_cast<uint64_t>(chunks));
}

#ifdef EDO_HAVE_CUDA
// A^T F A v on the GPU: the design matrix both ways (hash_fit.cuh), uploaded
// once a solve, then a block of rows' values at a time (at most 256 MB).
class GpuNormalProduct {
 public:
  // terms_of(p): row p's terms, for p below freq.size().
  template <class TermsOf>
  GpuNormalProduct(TermsOf&& terms_of, const std::vector<float>& freq, uint64_t slots, uint64_t dim,
                   uint64_t block_rows)
      : rows_(freq.size()),
        slots_(slots),
        dim_(dim),
        block_rows_(
            std::max<uint64_t>(1, std::min<uint64_t>(rows_, block_rows > 0 ? block_rows : (uint64_t{1} << 26) / dim))),
        row_start_((rows_ + 1) * 8),
        freq_(rows_ * 4),
        slot_start_((slots + 1) * 8),
        v_(slots * dim * 4),
        out_(slots * dim * 4),
        y_(block_rows_ * dim * 4) {
    std::vector<uint64_t> row_start(rows_ + 1, 0), row_slot, slot_start(slots + 1, 0);
    std::vector<float> row_coef;
    for (uint64_t p = 0; p < rows_; ++p) {
      const RowTerms t = terms_of(p);
      for (uint32_t k = 0; k < t.n; ++k) {
        row_slot.push_back(t.slot[k]);
        row_coef.push_back(t.coef[k]);
        ++slot_start[t.slot[k] + 1];
      }
      row_start[p + 1] = row_slot.size();
    }
    std::partial_sum(slot_start.begin(), slot_start.end(), slot_start.begin());
    std::vector<uint64_t> entry_row(row_slot.size()), next(slot_start.begin(), slot_start.end() - 1);
    std::vector<float> entry_coef(row_slot.size());
    for (uint64_t p = 0; p < rows_; ++p)
      for (uint64_t e = row_start[p]; e < row_start[p + 1]; ++e) {
        const uint64_t at = next[row_slot[e]]++;
        entry_row[at] = p;
        entry_coef[at] = row_coef[e];
      }
    row_slot_ = std::make_unique<DeviceBuffer>(row_slot.size() * 8);
    row_coef_ = std::make_unique<DeviceBuffer>(row_coef.size() * 4);
    entry_row_ = std::make_unique<DeviceBuffer>(entry_row.size() * 8);
    entry_coef_ = std::make_unique<DeviceBuffer>(entry_coef.size() * 4);
    row_start_.upload(row_start.data(), row_start_.bytes());
    freq_.upload(freq.data(), freq_.bytes());
    slot_start_.upload(slot_start.data(), slot_start_.bytes());
    row_slot_->upload(row_slot.data(), row_slot_->bytes());
    row_coef_->upload(row_coef.data(), row_coef_->bytes());
    entry_row_->upload(entry_row.data(), entry_row_->bytes());
    entry_coef_->upload(entry_coef.data(), entry_coef_->bytes());
  }

  void apply(const std::vector<float>& v, std::vector<float>& out) {
    cuda::HashNormalTerms t;
    t.dim = dim_;
    t.row_start = row_start_.as<uint64_t>();
    t.row_slot = row_slot_->as<uint64_t>();
    t.row_coef = row_coef_->as<float>();
    t.freq = freq_.as<float>();
    t.slot_start = slot_start_.as<uint64_t>();
    t.entry_row = entry_row_->as<uint64_t>();
    t.entry_coef = entry_coef_->as<float>();
    v_.upload(v.data(), v_.bytes());
    std::fill(out.begin(), out.end(), 0.0f);
    out_.upload(out.data(), out_.bytes());
    for (uint64_t r0 = 0; r0 < rows_; r0 += block_rows_) {
      const uint64_t r1 = std::min(rows_, r0 + block_rows_);
      cuda::hash_row_values(t, v_.as<float>(), r0, r1, y_.as<float>());
      check_cuda_launch("hash_row_values");
      cuda::hash_slot_sums(t, slots_, y_.as<float>(), r0, r1, out_.as<float>());
      check_cuda_launch("hash_slot_sums");
    }
    out_.download(out.data(), out_.bytes());
  }

 private:
  uint64_t rows_, slots_, dim_, block_rows_;
  DeviceBuffer row_start_, freq_, slot_start_, v_, out_, y_;
  std::unique_ptr<DeviceBuffer> row_slot_, row_coef_, entry_row_, entry_coef_;
};
#else
struct GpuNormalProduct {
  void apply(const std::vector<float>&, std::vector<float>&) {}
};
#endif

class HashTierBuilder final : public TierBuilder {
 public:
  HashTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc, const HashFitOptions& fit)
      : spec_(parse_hash_spec(spec)), dim_(dim), enc_(enc), fit_(fit) {}

  std::string codec() const override { return format_hash_spec(spec_); }
  uint64_t code_size() const override { return spec_.weights ? 2 * spec_.k : 0; }

  // The fit reads every row of the tier: a shard loads the one a
  // --train-only run made (its tables, weights and report).
  ShardNeed shard_need() const override { return ShardNeed::tier; }

  void prepare(io::TableReader& input, const TableLayout& layout, uint8_t self) override {
    const auto t0 = std::chrono::steady_clock::now();
    input_ = &input;
    table_rows_ = input.rows();
    name_ = layout.tiers[self].name;
    recon_ = std::make_unique<RowErrorStats>(dim_);
    if (spec_.buckets >= table_rows_)
      EDO_USAGE_FAIL("tier '{}': {} buckets for a table of {} rows share nothing (B must be below the rows)", name_,
                     spec_.buckets, table_rows_);
    slots_ = spec_.buckets;
    if (spec_.scheme == HashScheme::qr) {
      quotient_rows_ = qr_quotient_rows(table_rows_, spec_.buckets);
      slots_ += quotient_rows_;  // the fit's parameter table: quotient rows, then remainder rows
    }
    if (loaded_) return use_loaded();
    collect_rows(layout, self);
    params_.assign(slots_ * dim_, 0.0f);
    if (spec_.weights) weights_.assign(table_rows_ * spec_.k, 0x3c00);  // 1.0
    if (spec_.fit != HashFit::none) shift_ = fit_shift();
    if (spec_.fit == HashFit::none)
      fit_naive();
    else if (spec_.scheme == HashScheme::qr && spec_.op == QrOp::mul)
      fit_qr_product();
    else if (spec_.scheme == HashScheme::hash && spec_.k == 1 && !spec_.weights)
      fit_bucket_means();
    else
      fit_linear();
    unscale_params();
    if (spec_.fit == HashFit::none || (spec_.scheme == HashScheme::hash && spec_.k == 1 && !spec_.weights))
      measure_objective();
    // The fit is the tier's encoding: its time is reported as such (never stored: files are reproducible).
    encode_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  std::vector<NamedBlob> trained_state() const override {
    std::vector<NamedBlob> state = {{"params", {slots_, dim_}, params_}};
    if (spec_.weights) state.push_back({"weights", {table_rows_, spec_.k}, {weights_.begin(), weights_.end()}});
    return state;
  }
  nlohmann::json trained_info() const override { return {{"fit", fit_report()}, {"collisions", collisions()}}; }
  // The fit report is checked here, before any row is read; the tables'
  // sizes once prepare() knows the table.
  void load_trained(const TrainedTier& state) override {
    const nlohmann::json& info = state.info;
    const auto has = [](const nlohmann::json& o, const char* key, bool (nlohmann::json::*is)() const noexcept) {
      return o.contains(key) && (o[key].*is)();
    };
    const bool fit = info.contains("fit") && info["fit"].is_object() && info.contains("collisions") &&
                     info["collisions"].is_object() && has(info["fit"], "method", &nlohmann::json::is_string) &&
                     has(info["fit"], "iterations", &nlohmann::json::is_number_unsigned) &&
                     has(info["fit"], "residual", &nlohmann::json::is_number) &&
                     has(info["fit"], "converged", &nlohmann::json::is_boolean) &&
                     has(info["fit"], "weighted_relative_error", &nlohmann::json::is_number) &&
                     has(info["collisions"], "buckets", &nlohmann::json::is_number_unsigned) &&
                     has(info["collisions"], "rows", &nlohmann::json::is_number_unsigned) &&
                     has(info["collisions"], "max_rows", &nlohmann::json::is_number_unsigned) &&
                     has(info["collisions"], "empty", &nlohmann::json::is_number_unsigned) &&
                     has(info["collisions"], "mean_rows", &nlohmann::json::is_number) &&
                     has(info["collisions"], "max_mass", &nlohmann::json::is_number);
    if (!fit) EDO_USAGE_FAIL("--trained: tier '{}' holds no fit report of {}", state.name, codec());
    loaded_ = state;
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    std::vector<float> y(dim_);
    const HashTables t = tables();
    for (size_t i = 0; i < n; ++i) {
      hash_decode(spec_, t, row_ids[i], y.data());
      recon_->add(row_error(x + i * dim_, y.data(), dim_));
    }
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    nlohmann::json sections = nlohmann::json::object();
    const auto put = [&](const char* role, const void* data, uint64_t bytes) {
      writer.add_section(prefix + role, data, bytes);
      sections[role] = prefix + role;
      section_bytes_.emplace_back(role, bytes);
    };
    if (spec_.scheme == HashScheme::qr) {
      put("quotient", params_.data(), quotient_rows_ * dim_ * sizeof(float));
      put("remainder", params_.data() + quotient_rows_ * dim_, spec_.buckets * dim_ * sizeof(float));
    } else {
      put("buckets", params_.data(), params_.size() * sizeof(float));
      if (spec_.weights) put("weights", weights_.data(), weights_.size() * sizeof(uint16_t));
    }
    uint64_t bytes = 0;
    for (const auto& [role, b] : section_bytes_) bytes += b;
    entry.update({{"codec", codec()}, {"code_size", code_size()}, {"sections", sections}});
    const nlohmann::json info = loaded_ ? loaded_->info : trained_info();
    entry["fit"] = info["fit"];
    entry["collisions"] = info["collisions"];
    return bytes;
  }

 private:
  nlohmann::json fit_report() const {
    return {{"method", method_},
            {"iterations", iterations_},
            {"residual", residual_},
            {"converged", converged_},
            {"weighted_relative_error", objective_}};
  }

  // The tables and report of a --train-only run, checked against the spec and table.
  void use_loaded() {
    const std::vector<NamedBlob>& blobs = loaded_->blobs;
    const bool tables = !blobs.empty() && blobs[0].name == "params" && blobs[0].values.size() == slots_ * dim_;
    const bool weights = spec_.weights ? blobs.size() == 2 && blobs[1].name == "weights" &&
                                             blobs[1].values.size() == table_rows_ * spec_.k
                                       : blobs.size() == 1;
    if (!tables || !weights)
      EDO_USAGE_FAIL("--trained: tier '{}' holds no fit of {} for a table of {} rows", name_, codec(), table_rows_);
    params_ = blobs[0].values;
    if (spec_.weights)
      for (float w : blobs[1].values) {
        if (!(w >= 0 && w <= 65535 && w == std::floor(w)))
          EDO_USAGE_FAIL("--trained: tier '{}': a weight is not fp16 bits", name_);
        weights_.push_back(static_cast<uint16_t>(w));
      }
  }

  void collect_rows(const TableLayout& layout, uint8_t self) {
    const bool whole = layout.tier_of_row.empty();
    double mass = 0;
    for (uint64_t r = 0; r < table_rows_; ++r)
      if (whole || layout.tier_of_row[r] == self) {
        rows_.ids.push_back(r);
        mass += layout.freq.empty() ? 0.0 : layout.freq[r];
      }
    if (rows_.ids.empty()) EDO_USAGE_FAIL("tier '{}': a hashed tier needs rows to fit", name_);
    // Counts weigh the fit when the tier's rows are looked up at all (as
    // they weigh its error report).
    for (uint64_t r : rows_.ids) rows_.freq.push_back(mass > 0 ? static_cast<float>(layout.freq[r]) : 1.0f);
  }

  HashTables tables() const {
    HashTables t;
    t.rows = table_rows_;
    t.dim = dim_;
    if (spec_.scheme == HashScheme::qr) {
      t.quotient = params_.data();
      t.quotient_rows = quotient_rows_;
      t.buckets = params_.data() + quotient_rows_ * dim_;
    } else {
      t.buckets = params_.data();
      if (spec_.weights) t.weights = reinterpret_cast<const uint8_t*>(weights_.data());
    }
    return t;
  }

  RowTerms terms(uint64_t id) const {
    RowTerms t;
    if (spec_.scheme == HashScheme::qr) {
      t.add(id / spec_.buckets, 1.0f);
      t.add(quotient_rows_ + id % spec_.buckets, 1.0f);
      return t;
    }
    for (uint32_t k = 0; k < spec_.k; ++k)
      t.add(hash_bucket(id, k, spec_.seed, spec_.buckets),
            spec_.weights ? half_bits_to_float(weights_[id * spec_.k + k]) : 1.0f);
    return t;
  }

  // Streams the tier's rows in blocks: fn(position in rows_, row values).
  template <class Fn>
  void for_each_row(Fn&& fn) {
    const uint64_t block = input_->block_rows(io::kDefaultBlockBytes);
    size_t next = 0;
    for (uint64_t begin = 0; begin < table_rows_ && next < rows_.ids.size(); begin += block) {
      const uint64_t n = std::min(block, table_rows_ - begin);
      if (rows_.ids[next] >= begin + n) continue;
      const float* x = input_->rows_f32(begin, n);
      EncodeOptions enc = enc_;
      enc.first_row = begin;
      check_finite(x, n, dim_, 0x7f800000u, codec(), enc, false);
      if (shift_ != 0) {
        scaled_.assign(x, x + n * dim_);
        for (float& v : scaled_) v = std::ldexp(v, shift_);
        x = scaled_.data();
      }
      size_t end = next;
      while (end < rows_.ids.size() && rows_.ids[end] < begin + n) ++end;
      fn(next, end, x, begin);
      next = end;
    }
  }

  // The fits square values in float: a table far from unit scale (1e-20,
  // 1e19) underflows or overflows them and came out as rows of zeros. The
  // fit sees the rows shifted by edo/unit_scale.hpp's rule, and its tables
  // are scaled back after.
  int fit_shift() {
    float peak = 0.0f;
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for (size_t p = a; p < b; ++p) {
        const float* row = x + (rows_.ids[p] - begin) * dim_;
        for (uint64_t j = 0; j < dim_; ++j) peak = std::max(peak, std::fabs(row[j]));
      }
    });
    return unit_scale_shift(peak);
  }

  // Back to the table's units: every table of a linear fit; for a qr
  // product, the quotient rows alone (the product carries the scale once).
  void unscale_params() {
    if (shift_ == 0) return;
    const size_t end = spec_.scheme == HashScheme::qr && spec_.op == QrOp::mul ? quotient_rows_ * dim_ : params_.size();
    for (size_t i = 0; i < end; ++i) params_[i] = std::ldexp(params_[i], -shift_);
    shift_ = 0;
  }

  // The naive baseline (fit=none): each bucket the highest-id row hashed to it.
  void fit_naive() {
    method_ = "none";
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for (size_t p = a; p < b; ++p) {
        const uint64_t id = rows_.ids[p];
        std::copy_n(x + (id - begin) * dim_, dim_, params_.data() + terms(id).slot[0] * dim_);
      }
    });
    converged_ = true;
  }

  // One hash, no weights: each bucket the weighted mean of its rows.
  void fit_bucket_means() {
    method_ = "closed form";
    std::vector<double> sum(params_.size(), 0.0), mass(slots_, 0.0);
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for (size_t p = a; p < b; ++p) {
        const uint64_t id = rows_.ids[p], s = terms(id).slot[0];
        const double f = rows_.freq[p];
        mass[s] += f;
        for (uint64_t j = 0; j < dim_; ++j) sum[s * dim_ + j] += f * x[(id - begin) * dim_ + j];
      }
    });
    for (uint64_t s = 0; s < slots_; ++s)
      if (mass[s] > 0)
        for (uint64_t j = 0; j < dim_; ++j) params_[s * dim_ + j] = static_cast<float>(sum[s * dim_ + j] / mass[s]);
    converged_ = true;
  }

  // The weighted relative error of the fit as stored, by one pass:
  // sqrt(sum f ||x - decoded||^2 / sum f ||x||^2).
  void measure_objective() {
    const HashTables t = tables();
    std::vector<float> y(dim_);
    double err = 0, xx = 0;
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for (size_t p = a; p < b; ++p) {
        const float* row = x + (rows_.ids[p] - begin) * dim_;
        hash_decode(spec_, t, rows_.ids[p], y.data());
        for (uint64_t j = 0; j < dim_; ++j) {
          const double e = static_cast<double>(row[j]) - y[j];
          err += rows_.freq[p] * e * e;
          xx += rows_.freq[p] * static_cast<double>(row[j]) * row[j];
        }
      }
    });
    objective_ = xx > 0 ? std::sqrt(err / xx) : 0.0;
  }

  // out = A^T F A v over the tier's rows (A: the rows' terms), column by
  // column, by hash_normal_row() and hash_normal_add(), on the GPU when the
  // solve uploaded the terms there.
  void normal_product(const std::vector<float>& v, std::vector<float>& out) const {
    if (gpu_) return gpu_->apply(v, out);
    std::fill(out.begin(), out.end(), 0.0f);
    const size_t n = rows_.ids.size();
    for_column_chunks(dim_, n * dim_, [&](uint64_t j0, uint64_t j1) {
      for (size_t p = 0; p < n; ++p) {
        const RowTerms t = terms(rows_.ids[p]);
        for (uint64_t j = j0; j < j1; ++j) {
          const float y = hash_normal_row(t.coef.data(), t.slot.data(), t.n, rows_.freq[p], v.data(), dim_, j);
          for (uint32_t k = 0; k < t.n; ++k)
            out[t.slot[k] * dim_ + j] = hash_normal_add(out[t.slot[k] * dim_ + j], t.coef[k], y);
        }
      }
    });
  }

  // With EncodeOptions::device cuda, the solver's products go to the GPU
  // with the rows' terms as they stand (the weights change between rounds).
  void upload_terms() {
    gpu_.reset();
#ifdef EDO_HAVE_CUDA
    if (enc_.device != Device::cuda) return;
    gpu_ = std::make_unique<GpuNormalProduct>([&](uint64_t p) { return terms(rows_.ids[p]); }, rows_.freq, slots_, dim_,
                                              fit_.gpu_block_rows);
#endif
  }

  // rhs = A^T F X: one pass over the table.
  void normal_rhs(std::vector<float>& rhs, double& xx) {
    std::fill(rhs.begin(), rhs.end(), 0.0f);
    xx = 0;
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for_column_chunks(dim_, (b - a) * dim_, [&](uint64_t j0, uint64_t j1) {
        for (size_t p = a; p < b; ++p) {
          const RowTerms t = terms(rows_.ids[p]);
          const float* row = x + (rows_.ids[p] - begin) * dim_;
          for (uint64_t j = j0; j < j1; ++j)
            for (uint32_t k = 0; k < t.n; ++k) rhs[t.slot[k] * dim_ + j] += t.coef[k] * rows_.freq[p] * row[j];
        }
      });
      for (size_t p = a; p < b; ++p) {
        const float* row = x + (rows_.ids[p] - begin) * dim_;
        double s = 0;
        for (uint64_t j = 0; j < dim_; ++j) s += static_cast<double>(row[j]) * row[j];
        xx += rows_.freq[p] * s;
      }
    });
  }

  // Solves A^T F A P = A^T F X for the parameters P (every column at once,
  // each its own conjugate-gradient recurrence), from P as it stands, with
  // the diagonal of A^T F A as preconditioner. Returns the relative residual.
  double solve_normal(const std::vector<float>& rhs, uint32_t& iterations) {
    const size_t m = params_.size();
    std::vector<double> diag(slots_, 0.0);
    for (size_t p = 0; p < rows_.ids.size(); ++p) {
      const RowTerms t = terms(rows_.ids[p]);
      for (uint32_t k = 0; k < t.n; ++k) diag[t.slot[k]] += static_cast<double>(rows_.freq[p]) * t.coef[k] * t.coef[k];
    }
    std::vector<float> r(m), z(m), d(m), md(m);
    normal_product(params_, md);
    for (size_t i = 0; i < m; ++i) r[i] = rhs[i] - md[i];
    const auto precondition = [&] {
      for (size_t i = 0; i < m; ++i) z[i] = diag[i / dim_] > 0 ? static_cast<float>(r[i] / diag[i / dim_]) : 0.0f;
    };
    const auto column_dots = [&](const std::vector<float>& a, const std::vector<float>& b) {
      std::vector<double> s(dim_, 0.0);
      for (size_t i = 0; i < m; ++i) s[i % dim_] += static_cast<double>(a[i]) * b[i];
      return s;
    };
    double rhs_norm = 0;
    for (float v : rhs) rhs_norm += static_cast<double>(v) * v;
    rhs_norm = std::sqrt(rhs_norm);
    const auto relative = [&] {
      double s = 0;
      for (float v : r) s += static_cast<double>(v) * v;
      return rhs_norm > 0 ? std::sqrt(s) / rhs_norm : 0.0;
    };
    precondition();
    d = z;
    std::vector<double> rz = column_dots(r, z);
    double res = relative();
    for (iterations = 0; iterations < fit_.max_iterations && res > fit_.tolerance; ++iterations) {
      normal_product(d, md);
      const std::vector<double> dmd = column_dots(d, md);
      std::vector<float> alpha(dim_);
      for (uint64_t j = 0; j < dim_; ++j) alpha[j] = dmd[j] > 0 ? static_cast<float>(rz[j] / dmd[j]) : 0.0f;
      for (size_t i = 0; i < m; ++i) {
        params_[i] += alpha[i % dim_] * d[i];
        r[i] -= alpha[i % dim_] * md[i];
      }
      precondition();
      const std::vector<double> rz_next = column_dots(r, z);
      for (size_t i = 0; i < m; ++i) {
        const uint64_t j = i % dim_;
        d[i] = z[i] + (rz[j] > 0 ? static_cast<float>(rz_next[j] / rz[j]) : 0.0f) * d[i];
      }
      rz = rz_next;
      res = relative();
      if (fit_.note && (iterations + 1) % 10 == 0)
        fit_.note(fmt::format("tier '{}': conjugate gradient iteration {}, relative residual {:.3g}", name_,
                              iterations + 1, res));
    }
    return res;
  }

  // Linear schemes (several hashes, weights, qr sum) by conjugate gradient;
  // with weights, alternating with each row's K weights by least squares.
  void fit_linear() {
    std::vector<float> rhs(params_.size());
    double xx = 0;
    const uint32_t rounds = spec_.weights ? 5 : 1;
    method_ = spec_.weights ? "alternating least squares (conjugate gradient, per-row weights)" : "conjugate gradient";
    double previous = HUGE_VAL;
    for (uint32_t round = 0; round < rounds; ++round) {
      upload_terms();
      normal_rhs(rhs, xx);
      uint32_t its = 0;
      residual_ = solve_normal(rhs, its);
      iterations_ += its;
      objective_ = relative_error(rhs, xx);
      if (fit_.note)
        fit_.note(fmt::format("tier '{}': {} iterations, relative residual {:.3g}, weighted relative error {:.4f}",
                              name_, its, residual_, objective_));
      if (residual_ > fit_.tolerance) break;
      if (!spec_.weights || round + 1 == rounds || previous - objective_ < fit_.tolerance * previous) break;
      previous = objective_;
      fit_row_weights();
    }
    gpu_.reset();
    converged_ = residual_ <= fit_.tolerance;
    if (!converged_ && !fit_.allow_partial)
      EDO_FAIL(
          "tier '{}': the fit stopped at relative residual {:.3g} after {} iterations, short of {} (raise "
          "--max-iterations, loosen --tolerance, or --allow-partial to write the best fit reached)",
          name_, residual_, iterations_, fit_.tolerance);
  }

  // sqrt(sum f ||x - A P||^2 / sum f ||x||^2) from the normal equations' terms.
  double relative_error(const std::vector<float>& rhs, double xx) const {
    std::vector<float> mp(params_.size());
    normal_product(params_, mp);
    double cross = 0, quad = 0;
    for (size_t i = 0; i < params_.size(); ++i) {
      cross += static_cast<double>(params_[i]) * rhs[i];
      quad += static_cast<double>(params_[i]) * mp[i];
    }
    return xx > 0 ? std::sqrt(std::max(0.0, (xx - 2 * cross + quad) / xx)) : 0.0;
  }

  // Each row's K weights given the buckets: the K x K least-squares system
  // of its buckets' Gram matrix (a small ridge for repeated or zero
  // buckets), solved by Cholesky, rounded to fp16 as stored.
  void fit_row_weights() {
    const uint32_t K = spec_.k;
    for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
      for (size_t p = a; p < b; ++p) {
        const uint64_t id = rows_.ids[p];
        const float* row = x + (id - begin) * dim_;
        std::array<const float*, kMaxHashK> vec;
        for (uint32_t k = 0; k < K; ++k) vec[k] = params_.data() + hash_bucket(id, k, spec_.seed, spec_.buckets) * dim_;
        std::array<double, kMaxHashK * kMaxHashK> g{};
        std::array<double, kMaxHashK> c{};
        double trace = 0;
        for (uint32_t k = 0; k < K; ++k) {
          for (uint32_t l = 0; l <= k; ++l) {
            double s = 0;
            for (uint64_t j = 0; j < dim_; ++j) s += static_cast<double>(vec[k][j]) * vec[l][j];
            g[k * K + l] = g[l * K + k] = s;
          }
          for (uint64_t j = 0; j < dim_; ++j) c[k] += static_cast<double>(vec[k][j]) * row[j];
          trace += g[k * K + k];
        }
        // Relative to the Gram matrix alone: an absolute floor swamped rows of 1e-20 (their weights went to 0).
        const double ridge = trace > 0 ? 1e-6 * trace / K : 1.0;
        for (uint32_t k = 0; k < K; ++k) g[k * K + k] += ridge;
        if (!cholesky_solve(g.data(), c.data(), K)) continue;  // keeps the weights it had
        for (uint32_t k = 0; k < K; ++k) weights_[id * K + k] = float_to_half_bits(static_cast<float>(c[k]));
      }
    });
  }

  // Solves g w = c in place (w into c) for a symmetric positive-definite g.
  static bool cholesky_solve(double* g, double* c, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t j = 0; j <= i; ++j) {
        double s = g[i * n + j];
        for (uint32_t k = 0; k < j; ++k) s -= g[i * n + k] * g[j * n + k];
        if (i == j) {
          if (!(s > 0)) return false;
          g[i * n + i] = std::sqrt(s);
        } else {
          g[i * n + j] = s / g[j * n + j];
        }
      }
    }
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t k = 0; k < i; ++k) c[i] -= g[i * n + k] * c[k];
      c[i] /= g[i * n + i];
    }
    for (uint32_t i = n; i-- > 0;) {
      for (uint32_t k = i + 1; k < n; ++k) c[i] -= g[k * n + i] * c[k];
      c[i] /= g[i * n + i];
    }
    return std::isfinite(c[0]);
  }

  // qr with op=mul: Q and R updated in turn, each entry by its closed form
  // (a weighted ratio over the rows that use it), until the weighted
  // relative error stops improving by more than the tolerance.
  void fit_qr_product() {
    method_ = "alternating closed-form updates";
    float* remainder = params_.data() + quotient_rows_ * dim_;
    std::fill(remainder, remainder + spec_.buckets * dim_, 1.0f);
    std::vector<double> num(params_.size()), den(params_.size());
    double previous = HUGE_VAL;
    for (iterations_ = 0; iterations_ < fit_.max_iterations; ++iterations_) {
      for (const bool update_quotient : {true, false}) {
        std::fill(num.begin(), num.end(), 0.0);
        std::fill(den.begin(), den.end(), 0.0);
        double err = 0, xx = 0;
        for_each_row([&](size_t a, size_t b, const float* x, uint64_t begin) {
          for (size_t p = a; p < b; ++p) {
            const uint64_t id = rows_.ids[p], q = id / spec_.buckets, r = quotient_rows_ + id % spec_.buckets;
            const uint64_t own = update_quotient ? q : r, other = update_quotient ? r : q;
            const float* row = x + (id - begin) * dim_;
            const double f = rows_.freq[p];
            for (uint64_t j = 0; j < dim_; ++j) {
              const double o = params_[other * dim_ + j], v = row[j];
              num[own * dim_ + j] += f * v * o;
              den[own * dim_ + j] += f * o * o;
              const double e = v - static_cast<double>(params_[own * dim_ + j]) * o;
              err += f * e * e;
              xx += f * v * v;
            }
          }
        });
        const uint64_t first = update_quotient ? 0 : quotient_rows_,
                       count = update_quotient ? quotient_rows_ : spec_.buckets;
        for (uint64_t i = first * dim_; i < (first + count) * dim_; ++i)
          if (den[i] > 0) params_[i] = static_cast<float>(num[i] / den[i]);
        objective_ = xx > 0 ? std::sqrt(err / xx) : 0.0;
      }
      if (fit_.note && (iterations_ + 1) % 5 == 0)
        fit_.note(
            fmt::format("tier '{}': round {}, weighted relative error {:.4f}", name_, iterations_ + 1, objective_));
      residual_ = previous < HUGE_VAL && previous > 0 ? (previous - objective_) / previous : 1.0;
      if (residual_ <= fit_.tolerance) {
        ++iterations_;
        break;
      }
      previous = objective_;
    }
    converged_ = residual_ <= fit_.tolerance;
    if (!converged_ && !fit_.allow_partial)
      EDO_FAIL(
          "tier '{}': the fit still improved by {:.3g} after {} rounds, more than {} (raise --max-iterations, "
          "loosen --tolerance, or --allow-partial to write the best fit reached)",
          name_, residual_, iterations_, fit_.tolerance);
  }

  // How the tier's rows share buckets (remainder rows for qr): loads by row
  // count and by access mass, and a histogram of loads (0, 1, 2, 3-4, 5-8, ...).
  nlohmann::json collisions() const {
    std::vector<uint32_t> load(spec_.buckets, 0);
    std::vector<double> mass(spec_.buckets, 0.0);
    double total = 0;
    for (size_t p = 0; p < rows_.ids.size(); ++p) {
      const uint64_t id = rows_.ids[p];
      const uint64_t b =
          spec_.scheme == HashScheme::qr ? id % spec_.buckets : hash_bucket(id, 0, spec_.seed, spec_.buckets);
      ++load[b];
      mass[b] += rows_.freq[p];
      total += rows_.freq[p];
    }
    std::vector<uint64_t> histogram;
    for (uint32_t l : load) {
      const size_t bin = l == 0 ? 0 : 1 + static_cast<size_t>(std::bit_width(l) - 1);
      if (histogram.size() <= bin) histogram.resize(bin + 1, 0);
      ++histogram[bin];
    }
    const uint32_t max_load = *std::max_element(load.begin(), load.end());
    const double max_mass = total > 0 ? *std::max_element(mass.begin(), mass.end()) / total : 0.0;
    return {{"buckets", spec_.buckets},
            {"rows", rows_.ids.size()},
            {"max_rows", max_load},
            {"mean_rows", static_cast<double>(rows_.ids.size()) / static_cast<double>(spec_.buckets)},
            {"empty", histogram.empty() ? 0 : histogram[0]},
            {"max_mass", max_mass},
            {"histogram", histogram},
            {"histogram_bins", "0, 1, 2-3, 4-7, 8-15, ... rows (first hash)"}};
  }

  HashSpec spec_;
  uint64_t dim_;
  EncodeOptions enc_;
  HashFitOptions fit_;
  io::TableReader* input_ = nullptr;
  uint64_t table_rows_ = 0, slots_ = 0, quotient_rows_ = 0;
  std::string name_;
  FitRows rows_;
  std::vector<float> params_;
  std::vector<uint16_t> weights_;
  int shift_ = 0;                          // fit_shift() while fitting (rows times 2^shift_), else 0
  std::vector<float> scaled_;              // a block of rows, shifted
  std::unique_ptr<GpuNormalProduct> gpu_;  // the solver's products on the GPU (upload_terms)
  std::string method_;
  uint32_t iterations_ = 0;
  double residual_ = 0, objective_ = 0;
  bool converged_ = false;
  std::optional<TrainedTier> loaded_;
};

}  // namespace

std::unique_ptr<TierBuilder> make_hash_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc,
                                                    const HashFitOptions& fit) {
  return std::make_unique<HashTierBuilder>(spec, dim, enc, fit);
}

}  // namespace edo
