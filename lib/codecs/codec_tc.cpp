// SPDX-License-Identifier: Apache-2.0
// tc:bits=B's training (fit_pca on the sample's directions: BLAS and LAPACK)
// and encoding (tc_codec.hpp).
#include "tc_codec.hpp"

#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/parallel.hpp>
#include <edo/pca.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <list>
#include <memory>
#include <mutex>

namespace edo::detail {
namespace {

double row_norm(const float* x, size_t dim) {
  double s = 0;
  for (size_t j = 0; j < dim; ++j) s += static_cast<double>(x[j]) * x[j];
  return std::sqrt(s);
}

// The lengths' unit: the power of two that puts the sample's longest row in
// [2^12, 2^13) of fp16's range (up to 65504), leaving 8 to 16 times that
// length for rows longer than the sample's (fp16's precision is the same
// relative step over its whole normal range, 2^-14 to 65504); a normal float.
float length_unit(double longest) {
  const int e = std::clamp(std::ilogb(longest) - 12, -126, 127);
  return std::ldexp(1.0f, e);
}

// A row's gain as the file stores it: its length over `unit` rounded to
// fp16, times `unit` (exact: a power of two); one fp16 cannot hold (65520
// units and up) is an error naming the row.
float stored_gain(const float* x, size_t dim, float unit, const std::string& spec, const EncodeOptions& opt, size_t i) {
  const double norm = row_norm(x, dim);
  const float units = half_bits_to_float(float_to_half_bits(static_cast<float>(norm / unit)));
  if (!std::isfinite(units)) {
    const uint64_t row = opt.row_ids ? opt.row_ids[i] : opt.first_row + i;
    EDO_FAIL(
        "{}: {} row {} has length {:.6g}, beyond the {:.6g} the trained length unit allows (65504 units of {:g}, "
        "set by the training sample's longest row)",
        spec, opt.input.empty() ? std::string("input") : opt.input, row, norm, 65504.0 * unit, unit);
  }
  return units * unit;
}

// What tc's training computes before the rate enters: the directions' PCA
// (basis rounded as the file stores it), the sample projected onto it and
// its columns' statistics. The same sample gives the same fit at every
// bits, so candidates of several rates scored on one sample (the codec
// chooser, the joint plan) fit it once: the last few fits of samples up to
// kTcFitCacheBytes are kept, keyed by the sample's values themselves.
struct TcFit {
  std::vector<float> mean, basis, z;
  ColumnStats stats;
};
constexpr size_t kTcFitCacheBytes = size_t{8} << 20;
constexpr size_t kTcFitCacheEntries = 2;

struct TcFitCache {
  struct Entry {
    std::vector<float> sample;
    size_t dim = 0;
    uint64_t seed = 0;
    std::shared_ptr<const TcFit> fit;
  };
  std::mutex mutex;
  std::list<Entry> entries;  // most recent first

  std::shared_ptr<const TcFit> find(const std::vector<float>& u, size_t dim, uint64_t seed) {
    const std::lock_guard<std::mutex> lock(mutex);
    for (auto it = entries.begin(); it != entries.end(); ++it)
      if (it->dim == dim && it->seed == seed && it->sample.size() == u.size() &&
          std::memcmp(it->sample.data(), u.data(), u.size() * sizeof(float)) == 0) {
        entries.splice(entries.begin(), entries, it);
        return it->fit;
      }
    return nullptr;
  }

  void keep(const std::vector<float>& u, size_t dim, uint64_t seed, std::shared_ptr<const TcFit> fit) {
    if (u.size() * sizeof(float) > kTcFitCacheBytes) return;
    const std::lock_guard<std::mutex> lock(mutex);
    entries.push_front({u, dim, seed, std::move(fit)});
    if (entries.size() > kTcFitCacheEntries) entries.pop_back();
  }
};

TcFitCache& tc_fit_cache() {
  static TcFitCache cache;
  return cache;
}

// Bits to coordinates by variance: each of `total` bits in turn goes to the
// coordinate whose error estimate, variance x 4^-bits, is the largest (the
// first on ties), until it holds kTcMaxBits.
std::vector<uint32_t> allocate_bits(const std::vector<double>& variance, uint64_t total) {
  std::vector<uint32_t> bits(variance.size(), 0);
  std::vector<double> error = variance;
  for (uint64_t k = 0; k < total; ++k) {
    size_t best = variance.size();
    for (size_t j = 0; j < variance.size(); ++j)
      if (bits[j] < kTcMaxBits && (best == variance.size() || error[j] > error[best])) best = j;
    ++bits[best];
    error[best] *= 0.25;
  }
  return bits;
}

// The spread, sd x f for f = 1.0, 1.1, ... 2.6, whose cells give the
// column the least squared error (the first on ties). For Gaussian values
// the best is near sqrt(3) sd at high rates (cells as dense as the cube
// root of the density); fewer bits and heavier tails move it.
float fitted_spread(const std::vector<float>& column, uint32_t bits, float center, double sd) {
  float best = static_cast<float>(sd);
  double best_error = HUGE_VAL;
  for (int k = 0; k <= 16; ++k) {
    const auto spread = static_cast<float>(sd * (1.0 + 0.1 * k));
    const TcCells cells = tc_cells(bits, center, spread, true);
    double error = 0;
    for (const float z : column) {
      const double e = static_cast<double>(cells.levels[cells.code(z)]) - z;
      error += e * e;
    }
    if (error < best_error) {
      best_error = error;
      best = spread;
    }
  }
  return best;
}

class TcCodec final : public TcDecoder {
 public:
  TcCodec(size_t dim, const TcParams& p) : TcDecoder(dim, p) { encodes_ = true; }

  // The directions of the sample's rows (each row over its stored gain;
  // zero rows left out) give the basis; their coordinates' variances the
  // bits, their means the centers and their values the spreads.
  void train(const float* x, size_t n, uint64_t seed) override {
    EncodeOptions opt;
    opt.input = "tc training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    opt.allow_underflow = true;  // only sums that overflow are refused here
    check_trainable_norms(x, n, dim_, spec(), opt);
    double longest = 0;
    for (size_t i = 0; i < n; ++i) longest = std::max(longest, row_norm(x + i * dim_, dim_));
    if (!(longest > 0.0)) EDO_FAIL("{}: training needs a nonzero row", spec());
    unit_ = length_unit(longest);
    std::vector<float> u;
    u.reserve(n * dim_);
    for (size_t i = 0; i < n; ++i) {
      const float gain = stored_gain(x + i * dim_, dim_, unit_, spec(), opt, i);
      if (!(gain > 0.0f)) continue;
      for (size_t j = 0; j < dim_; ++j) u.push_back(x[i * dim_ + j] / gain);
    }
    const size_t m = u.size() / dim_;
    if (m == 0) EDO_FAIL("{}: training needs a nonzero row", spec());
    std::shared_ptr<const TcFit> fit = tc_fit_cache().find(u, dim_, seed);
    if (!fit) {
      auto made = std::make_shared<TcFit>();
      const PcaModel model = fit_pca(u.data(), m, dim_, dim_, seed);
      made->mean = model.mean;
      mean_ = made->mean;  // project() centres on it
      // The file stores the basis in fp16 (half the state bytes, which a tier
      // of a small table feels: 5 KB of a 50-wide tier's 10); training and
      // encoding use the rounded values decoding will see.
      made->basis = model.components;
      for (float& v : made->basis) v = half_bits_to_float(float_to_half_bits(v));
      set_basis(made->basis);
      made->z.resize(m * dim_);
#pragma omp parallel for schedule(static) if (parallel_worth(uint64_t{m} * dim_ * dim_))
      for (int64_t r = 0; r < static_cast<int64_t>(m); ++r)
        project(u.data() + static_cast<size_t>(r) * dim_, made->z.data() + static_cast<size_t>(r) * dim_);
      made->stats = column_stats(made->z.data(), m, dim_);
      tc_fit_cache().keep(u, dim_, seed, made);
      fit = std::move(made);
    } else {
      set_basis(fit->basis);
    }
    mean_ = fit->mean;
    const std::vector<float>& z = fit->z;
    const ColumnStats& stats = fit->stats;
    std::vector<uint32_t> bits = allocate_bits(stats.squares, p_.total);
    std::vector<float> center(dim_), spread(dim_, 0.0f), column(m);
    for (size_t j = 0; j < dim_; ++j) {
      center[j] = static_cast<float>(stats.mean[j]);
      const double sd = std::sqrt(stats.squares[j] / static_cast<double>(m));
      if (bits[j] == 0 || !(sd > 0.0)) continue;
      for (size_t r = 0; r < m; ++r) column[r] = z[r * dim_ + j];
      spread[j] = fitted_spread(column, bits[j], center[j], sd);
    }
    set_quantizers(std::move(bits), std::move(center), std::move(spread));
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    const size_t cs = code_size();
    // Gains first, in row order, so an error names the first offending row whatever the thread count.
    std::vector<float> gains(n);
    for (size_t i = 0; i < n; ++i) gains[i] = stored_gain(x + i * dim_, dim_, unit_, spec(), opt, i);
#pragma omp parallel if (parallel_worth(uint64_t{n} * dim_ * dim_))
    {
      std::vector<float> u(dim_), z(dim_);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < static_cast<int64_t>(n); ++r) {
        const size_t i = static_cast<size_t>(r);
        const float gain = gains[i];
        for (size_t j = 0; j < dim_; ++j) u[j] = gain > 0.0f ? x[i * dim_ + j] / gain : 0.0f;
        project(u.data(), z.data());
        uint8_t* out = codes + i * cs;
        const uint16_t g = float_to_half_bits(gain / unit_);
        out[0] = static_cast<uint8_t>(g & 0xffu);
        out[1] = static_cast<uint8_t>(g >> 8);
        pack(z.data(), out + 2);
      }
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_tc(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<TcCodec>(dim, parse_tc_params(stage, dim));
}

}  // namespace edo::detail
