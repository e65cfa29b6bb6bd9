// SPDX-License-Identifier: Apache-2.0
// dims:K,CODEC: structured pruning. Training keeps the K dimensions whose
// variance over the sample is largest; encoding hands those K columns to
// CODEC; decoding puts them back and fills every dropped dimension with its
// mean over the sample, the value that costs the least squared error for a
// dimension stored once for the whole tier. Training needs no BLAS, so the
// decoder and the full codec are one class, in the reader's library.
#include "codec_impl.hpp"

#include <edo/error.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edo::detail {

namespace {

class DimsCodec final : public Codec {
 public:
  DimsCodec(size_t dim, size_t k, std::unique_ptr<Codec> inner) : dim_(dim), k_(k), inner_(std::move(inner)) {}

  std::string spec() const override { return fmt::format("dims:{},{}", k_, inner_->spec()); }
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return inner_->code_size(); }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !kept_.empty() && inner_->is_trained(); }

  // Column means and variances (column_stats); ties in variance keep the lower column.
  void train(const float* x, size_t n, uint64_t seed) override {
    EncodeOptions opt;
    opt.input = "dims training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    if (n == 0) EDO_FAIL("{}: training needs at least one row", spec());
    const ColumnStats stats = column_stats(x, n, dim_);
    const std::vector<double>& var = stats.squares;
    std::vector<uint32_t> order(dim_);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return var[a] > var[b]; });
    kept_.assign(order.begin(), order.begin() + static_cast<long>(k_));
    std::sort(kept_.begin(), kept_.end());
    fill_.assign(stats.mean.begin(), stats.mean.end());
    if (inner_->needs_training()) {
      std::vector<float> y(n * k_);
      select(x, n, y.data());
      inner_->train(y.data(), n, seed);
    }
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    std::vector<float> y(n * k_);
    select(x, n, y.data());
    EncodeOptions inner_opt = opt;
    inner_opt.input = opt.input.empty() ? std::string("kept dimensions") : opt.input + " (kept dimensions)";
    inner_->encode(y.data(), n, codes, inner_opt);
  }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    require_trained();
    std::vector<float> y(n * k_);
    inner_->decode(codes, n, y.data(), opt);
    for (size_t i = 0; i < n; ++i) {
      float* row = x + i * dim_;
      std::copy(fill_.begin(), fill_.end(), row);
      const float* kept = y.data() + i * k_;
      for (size_t c = 0; c < k_; ++c) row[kept_[c]] = kept[c];
    }
  }

  // The kept columns as floats (exact: dimensions are below 2^24) and the
  // fill row, whose kept entries decoding overwrites.
  std::vector<NamedBlob> state() const override {
    require_trained();
    std::vector<NamedBlob> out = {{"dims.kept", {k_}, std::vector<float>(kept_.begin(), kept_.end())},
                                  {"dims.fill", {dim_}, fill_}};
    for (NamedBlob& b : inner_->state()) out.push_back(std::move(b));
    return out;
  }

  void load_state(const std::vector<NamedBlob>& blobs) override {
    std::vector<NamedBlob> mine, rest;
    for (const NamedBlob& b : blobs) (b.name.starts_with("dims.") ? mine : rest).push_back(b);
    const std::vector<const NamedBlob*> b = take_blobs(spec(), mine, {"dims.kept", "dims.fill"});
    check_blob(spec(), *b[0], {k_});
    check_blob(spec(), *b[1], {dim_});
    std::vector<uint32_t> kept(k_);
    for (size_t c = 0; c < k_; ++c) {
      const float v = b[0]->values[c];
      // Strictly increasing whole numbers below dim: no column twice, none outside the row.
      if (!(v >= 0.0f && v < static_cast<float>(dim_) && v == std::floor(v)) || (c > 0 && v <= b[0]->values[c - 1]))
        EDO_FAIL("{}: state blob 'dims.kept' holds {} at {} (kept columns rise strictly from 0 to {})", spec(), v, c,
                 dim_ - 1);
      kept[c] = static_cast<uint32_t>(v);
    }
    inner_->load_state(rest);
    kept_ = std::move(kept);
    fill_ = b[1]->values;
  }

 private:
  void require_trained() const {
    if (kept_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
  }

  void select(const float* x, size_t n, float* y) const {
    for (size_t i = 0; i < n; ++i)
      for (size_t c = 0; c < k_; ++c) y[i * k_ + c] = x[i * dim_ + kept_[c]];
  }

  size_t dim_, k_;
  std::unique_ptr<Codec> inner_;
  std::vector<uint32_t> kept_;
  std::vector<float> fill_;
};

}  // namespace

std::unique_ptr<Codec> make_dims(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  const size_t k = transform_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'dims:{}': needs a codec after it", k);
  return std::make_unique<DimsCodec>(dim, k, std::move(inner));
}

}  // namespace edo::detail
