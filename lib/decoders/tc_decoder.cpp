// SPDX-License-Identifier: Apache-2.0
// tc's parameters, state and decoding (tc_codec.hpp).
#include "tc_codec.hpp"

#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/parallel.hpp>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>

namespace edo::detail {

namespace {

constexpr const char* kTcGrammar = "tc:bits=B";

// Bit `at` onwards of a row's code bytes: `width` bits, least significant first.
uint32_t read_bits(const uint8_t* bytes, uint64_t at, uint32_t width) {
  uint32_t v = 0;
  for (uint32_t b = 0; b < width; ++b, ++at) v |= static_cast<uint32_t>((bytes[at / 8] >> (at % 8)) & 1u) << b;
  return v;
}

}  // namespace

TcParams parse_tc_params(const SpecStage& stage, size_t dim) {
  StageParams params(stage, kTcGrammar, false, {"bits"});
  const std::string* b = params.get("bits");
  if (!b) EDO_USAGE_FAIL("codec 'tc': needs bits=B, the average bits a value (expected {})", kTcGrammar);
  TcParams p;
  const char* end = b->data() + b->size();
  const auto r = std::from_chars(b->data(), end, p.bits);
  if (r.ec != std::errc() || r.ptr != end || !(p.bits >= 1.0 && p.bits <= kTcMaxBits))
    EDO_USAGE_FAIL("codec 'tc': bits '{}' must be a number from 1 to {} (expected {})", *b, kTcMaxBits, kTcGrammar);
  if (dim > kTcMaxDim)
    EDO_USAGE_FAIL(
        "codec 'tc': dimension {} is above {} (it stores a {} x {} basis and spends d^2 flops a row each way); use "
        "pca:K,CODEC first",
        dim, kTcMaxDim, dim, dim);
  p.total = static_cast<uint64_t>(std::llround(p.bits * static_cast<double>(dim)));
  return p;
}

TcDecoder::TcDecoder(size_t dim, const TcParams& p) : dim_(dim), p_(p) {}

std::string TcDecoder::spec() const { return fmt::format("tc:bits={}", p_.bits); }

void TcDecoder::require_trained() const {
  if (bits_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
}

double normal_quantile(double p) {
  // Abramowitz and Stegun 26.2.23 (error below 4.5e-4) for the first guess.
  const double tail = p < 0.5 ? p : 1.0 - p;
  const double t = std::sqrt(-2.0 * std::log(tail));
  double x = t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1.0 + t * (1.432788 + t * (0.189269 + t * 0.001308)));
  if (p < 0.5) x = -x;
  constexpr double kInvSqrt2 = 0.70710678118654752440, kInvSqrt2Pi = 0.39894228040143267794;
  for (int step = 0; step < 4; ++step) {
    const double cdf = 0.5 * std::erfc(-x * kInvSqrt2);
    const double density = kInvSqrt2Pi * std::exp(-0.5 * x * x);
    if (!(density > 0.0)) break;
    x -= (cdf - p) / density;
  }
  return x;
}

uint32_t TcCells::code(float z) const {
  return static_cast<uint32_t>(std::upper_bound(thresholds.begin(), thresholds.end(), z) - thresholds.begin());
}

TcCells tc_cells(uint32_t bits, float center, float spread, bool with_thresholds) {
  TcCells c;
  const size_t cells = size_t{1} << bits;
  const double l = static_cast<double>(cells), m = center, s = spread;
  c.levels.resize(cells);
  if (with_thresholds) c.thresholds.resize(cells - 1);
  if (cells == 1) {
    c.levels[0] = center;
    return c;
  }
  for (size_t q = 0; q < cells; ++q) {
    c.levels[q] = static_cast<float>(m + s * normal_quantile((static_cast<double>(q) + 0.5) / l));
    if (with_thresholds && q > 0)
      c.thresholds[q - 1] = static_cast<float>(m + s * normal_quantile(static_cast<double>(q) / l));
  }
  return c;
}

void TcDecoder::set_quantizers(std::vector<uint32_t> bits, std::vector<float> center, std::vector<float> spread) {
  std::vector<TcCells> cells(dim_);
  std::vector<TcField> fields(dim_);
  uint64_t at = 0;
  for (size_t j = 0; j < dim_; ++j) {
    cells[j] = tc_cells(bits[j], center[j], spread[j], encodes_);
    TcField& f = fields[j];
    f.byte = static_cast<uint32_t>(at / 8);
    f.shift = static_cast<uint8_t>(at % 8);
    f.bytes = static_cast<uint8_t>(bits[j] ? (at % 8 + bits[j] + 7) / 8 : 0);
    f.mask = (1u << bits[j]) - 1u;
    at += bits[j];
  }
  fields_ = std::move(fields);
  bits_ = std::move(bits);
  center_ = std::move(center);
  spread_ = std::move(spread);
  cells_ = std::move(cells);
}

void TcDecoder::set_basis(std::vector<float> basis) {
  basis_t_.assign(encodes_ ? basis.size() : 0, 0.0f);
  pad_dim_ = (dim_ + kTcBlock - 1) / kTcBlock * kTcBlock;
  basis_pad_.assign(dim_ * pad_dim_, 0.0f);
  for (size_t j = 0; j < dim_; ++j)
    for (size_t i = 0; i < dim_; ++i) {
      if (encodes_) basis_t_[i * dim_ + j] = basis[j * dim_ + i];
      basis_pad_[j * pad_dim_ + i] = basis[j * dim_ + i];
    }
  basis_ = std::move(basis);
}

// Each z_j is the same fma chain over i = 0, 1, ... as a dot product row by
// row; walking the transpose advances every coordinate's chain at once, a
// vector of them at a time.
void TcDecoder::project(const float* u, float* z) const {
  for (size_t j = 0; j < dim_; ++j) z[j] = 0.0f;
  for (size_t i = 0; i < dim_; ++i) {
    const float d = u[i] - mean_[i];
    const float* v = basis_t_.data() + i * dim_;
    for (size_t j = 0; j < dim_; ++j) z[j] = std::fma(d, v[j], z[j]);
  }
}

void TcDecoder::pack(const float* z, uint8_t* out) const {
  std::fill(out, out + (p_.total + 7) / 8, uint8_t{0});
  uint64_t at = 0;
  for (size_t j = 0; j < dim_; ++j) {
    const uint32_t width = bits_[j];
    if (width == 0) continue;
    const uint32_t code = cells_[j].code(z[j]);
    for (uint32_t b = 0; b < width; ++b, ++at) out[at / 8] |= static_cast<uint8_t>(((code >> b) & 1u) << (at % 8));
  }
}

// x = gain * (mean + sum_j zhat_j basis_j), the sum taken in j order for
// every column (so a column's value does not depend on vectorization).
void TcDecoder::decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const {
  require_trained();
  const size_t cs = code_size();
  const bool reference = opt.impl == Impl::reference;
#pragma omp parallel if (parallel_worth(uint64_t{n} * dim_ * dim_))
  {
    std::vector<float> zhat(dim_);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < static_cast<int64_t>(n); ++r) {
      const uint8_t* code = codes + static_cast<size_t>(r) * cs;
      float* row = x + static_cast<size_t>(r) * dim_;
      const float gain = half_bits_to_float(static_cast<uint16_t>(code[0] | (code[1] << 8))) * unit_;
      if (reference) {
        uint64_t at = 0;
        for (size_t j = 0; j < dim_; ++j) {
          const uint32_t width = bits_[j];
          zhat[j] = cells_[j].levels[width ? read_bits(code + 2, at, width) : 0u];
          at += width;
        }
      } else {
        // Each code from the one to three bytes it spans, read whole (none past the row's end).
        for (size_t j = 0; j < dim_; ++j) {
          const TcField f = fields_[j];
          const uint8_t* b = code + 2 + f.byte;
          uint32_t word = 0;
          for (uint32_t k = 0; k < f.bytes; ++k) word |= static_cast<uint32_t>(b[k]) << (8 * k);
          zhat[j] = cells_[j].levels[(word >> f.shift) & f.mask];
        }
      }
      if (reference) {
        for (size_t i = 0; i < dim_; ++i) row[i] = 0.0f;
        for (size_t j = 0; j < dim_; ++j) {
          const float* v = basis_.data() + j * dim_;
          const float c = zhat[j];
          for (size_t i = 0; i < dim_; ++i) row[i] = std::fma(c, v[i], row[i]);
        }
        for (size_t i = 0; i < dim_; ++i) row[i] = gain * (row[i] + mean_[i]);
        continue;
      }
      // kTcBlock columns at a time, their sums in registers over every j (the
      // padded basis' zero columns past dim are computed and dropped).
      for (size_t i0 = 0; i0 < dim_; i0 += kTcBlock) {
        float acc[kTcBlock] = {};
        for (size_t j = 0; j < dim_; ++j) {
          const float* v = basis_pad_.data() + j * pad_dim_ + i0;
          const float c = zhat[j];
          for (size_t i = 0; i < kTcBlock; ++i) acc[i] = std::fma(c, v[i], acc[i]);
        }
        const size_t len = std::min(kTcBlock, dim_ - i0);
        for (size_t i = 0; i < len; ++i) row[i0 + i] = gain * (acc[i] + mean_[i0 + i]);
      }
    }
  }
}

std::vector<NamedBlob> TcDecoder::state() const {
  require_trained();
  return {{"tc.unit", {1}, {unit_}},
          {"tc.mean", {dim_}, mean_},
          {"tc.basis", {dim_, dim_}, basis_, StateStorage::f16},
          {"tc.bits", {dim_}, std::vector<float>(bits_.begin(), bits_.end())},
          {"tc.center", {dim_}, center_},
          {"tc.spread", {dim_}, spread_}};
}

void TcDecoder::load_state(const std::vector<NamedBlob>& blobs) {
  const std::vector<const NamedBlob*> all =
      take_blobs(spec(), blobs, {"tc.unit", "tc.mean", "tc.basis", "tc.bits", "tc.center", "tc.spread"});
  check_blob(spec(), *all[0], {1});
  const float unit = all[0]->values[0];
  int exponent = 0;
  if (!(unit >= FLT_MIN) || std::frexp(unit, &exponent) != 0.5f)
    EDO_FAIL("{}: state blob 'tc.unit' holds {} (a power of two from 2^-126 up)", spec(), unit);
  const NamedBlob* const* b = all.data() + 1;
  check_blob(spec(), *b[0], {dim_});
  check_blob(spec(), *b[1], {dim_, dim_});
  for (size_t k = 2; k < 5; ++k) check_blob(spec(), *b[k], {dim_});
  std::vector<uint32_t> bits(dim_);
  uint64_t total = 0;
  for (size_t j = 0; j < dim_; ++j) {
    const float v = b[2]->values[j];
    if (!(v >= 0.0f && v <= static_cast<float>(kTcMaxBits) && v == std::floor(v)))
      EDO_FAIL("{}: state blob 'tc.bits' holds {} at {} (whole numbers from 0 to {})", spec(), v, j, kTcMaxBits);
    bits[j] = static_cast<uint32_t>(v);
    total += bits[j];
    const float s = b[4]->values[j];
    if (!(s >= 0.0f)) EDO_FAIL("{}: state blob 'tc.spread' holds {} at {} (spreads are not negative)", spec(), s, j);
  }
  if (total != p_.total)
    EDO_FAIL("{}: state blob 'tc.bits' gives {} bits a row where the spec's code holds {}", spec(), total, p_.total);
  unit_ = unit;
  mean_ = b[0]->values;
  set_basis(b[1]->values);
  set_quantizers(std::move(bits), b[3]->values, b[4]->values);
}

std::unique_ptr<Codec> make_tc_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<TcDecoder>(dim, parse_tc_params(stage, dim));
}

}  // namespace edo::detail
