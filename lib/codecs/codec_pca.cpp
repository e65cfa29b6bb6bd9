// SPDX-License-Identifier: Apache-2.0
// pca:K,CODEC and rot,CODEC with their training (fit_pca: BLAS and LAPACK;
// fit_rotation) and encoding.
#include "pca_codec.hpp"

#include <edo/pca.hpp>

namespace edo::detail {
namespace {

class PcaCodec final : public PcaDecoder {
 public:
  using PcaDecoder::PcaDecoder;

  void train(const float* x, size_t n, uint64_t seed) override {
    EncodeOptions opt;
    opt.input = basis_ == Basis::random_rotation ? "rot training sample" : "pca training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    opt.allow_underflow = true;  // only sums that overflow are refused here
    check_trainable_norms(x, n, dim_, spec(), opt);
    model_ = basis_ == Basis::random_rotation ? fit_rotation(x, n, dim_, seed) : fit_pca(x, n, dim_, k_, seed);
    if (inner_->needs_training()) {
      std::vector<float> y(n * k_);
      pca_project(model_, x, n, y.data());
      inner_->train(y.data(), n, seed);
    }
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    std::vector<float> y(n * k_);
    pca_project(model_, x, n, y.data(), opt.device, opt.impl);
    EncodeOptions inner_opt = opt;
    const char* what = basis_ == Basis::random_rotation ? "rotated rows" : "pca projections";
    inner_opt.input = opt.input.empty() ? std::string(what) : fmt::format("{} ({})", opt.input, what);
    inner_->encode(y.data(), n, codes, inner_opt);
  }
};
}  // namespace

std::unique_ptr<Codec> make_pca(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  const size_t k = transform_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'pca:{}': needs a codec after it", k);
  return std::make_unique<PcaCodec>(dim, k, std::move(inner));
}

std::unique_ptr<Codec> make_rot(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  rotation_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'rot': needs a codec after it");
  return std::make_unique<PcaCodec>(dim, dim, std::move(inner), Basis::random_rotation);
}

}  // namespace edo::detail
