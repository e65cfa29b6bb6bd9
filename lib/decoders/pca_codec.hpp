// SPDX-License-Identifier: Apache-2.0
// pca:K,CODEC: projects rows onto K principal directions and hands the
// projections to CODEC; decoding maps back to the input dimension.
// rot,CODEC: the same linear map with K = dim and a seeded random
// orthonormal basis instead of the principal one, which spreads a few
// outlying dimensions over all of them before a scalar code sets its range.
// PcaDecoder decodes both (no BLAS or LAPACK: the reader library's);
// PcaCodec (codec_pca.cpp) adds fitting the basis and encoding.
#pragma once

#include "codec_impl.hpp"

#include <edo/error.hpp>
#include <edo/pca_transform.hpp>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

namespace edo::detail {

// Which basis a linear transform stage stores, and the names of its state.
enum class Basis : uint8_t { principal, random_rotation };

class PcaDecoder : public Codec {
 public:
  PcaDecoder(size_t dim, size_t k, std::unique_ptr<Codec> inner, Basis basis = Basis::principal)
      : dim_(dim), k_(k), inner_(std::move(inner)), basis_(basis) {}

  std::string spec() const override {
    return basis_ == Basis::random_rotation ? fmt::format("rot,{}", inner_->spec())
                                            : fmt::format("pca:{},{}", k_, inner_->spec());
  }
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return inner_->code_size(); }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return model_.k != 0 && inner_->is_trained(); }

  void train(const float*, size_t, uint64_t) override { decode_only(spec(), "training"); }
  void encode(const float*, size_t, uint8_t*, const EncodeOptions&) const override { decode_only(spec(), "encoding"); }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    require_trained();
    std::vector<float> y(n * k_);
    inner_->decode(codes, n, y.data(), opt);
    pca_reconstruct(model_, y.data(), n, x, opt.device, opt.impl);
  }

  std::vector<NamedBlob> state() const override {
    require_trained();
    std::vector<NamedBlob> out = {{mean_name(), {dim_}, model_.mean}, {basis_name(), {k_, dim_}, model_.components}};
    for (NamedBlob& b : inner_->state()) out.push_back(std::move(b));
    return out;
  }

  void load_state(const std::vector<NamedBlob>& blobs) override {
    const NamedBlob* mean = nullptr;
    const NamedBlob* comps = nullptr;
    std::vector<NamedBlob> rest;
    for (const NamedBlob& b : blobs) {
      const NamedBlob** slot = b.name == mean_name() ? &mean : b.name == basis_name() ? &comps : nullptr;
      if (!slot) {
        rest.push_back(b);
        continue;
      }
      if (*slot) EDO_FAIL("{}: state blob '{}' appears twice", spec(), b.name);
      *slot = &b;
    }
    if (!mean || !comps) EDO_FAIL("{}: state lacks '{}'", spec(), mean ? basis_name() : mean_name());
    check_blob(spec(), *mean, {dim_});
    check_blob(spec(), *comps, {k_, dim_});
    inner_->load_state(rest);
    PcaModel m;
    m.dim = dim_;
    m.k = k_;
    m.mean = mean->values;
    m.components = comps->values;
    model_ = std::move(m);
  }

 protected:
  const char* mean_name() const { return basis_ == Basis::random_rotation ? "rot.mean" : "pca.mean"; }
  const char* basis_name() const { return basis_ == Basis::random_rotation ? "rot.matrix" : "pca.components"; }
  void require_trained() const {
    if (model_.k == 0) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
  }

  size_t dim_, k_;
  std::unique_ptr<Codec> inner_;
  Basis basis_;
  PcaModel model_;
};

}  // namespace edo::detail
