// pca:K,CODEC: projects rows onto K principal directions and hands the
// projections to CODEC; decoding maps back to the input dimension.
#include "codec_impl.hpp"

#include <edo/error.hpp>
#include <edo/pca.hpp>

#include <cmath>

namespace edo::detail {
namespace {

class PcaCodec final : public Codec {
 public:
  PcaCodec(size_t dim, size_t k, std::unique_ptr<Codec> inner) : dim_(dim), k_(k), inner_(std::move(inner)) {}

  std::string spec() const override { return fmt::format("pca:{},{}", k_, inner_->spec()); }
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return inner_->code_size(); }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return model_.k != 0 && inner_->is_trained(); }

  void train(const float* x, size_t n, uint64_t seed) override {
    EncodeOptions opt;
    opt.input = "pca training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    opt.allow_underflow = true;  // only sums that overflow are refused here
    check_trainable_norms(x, n, dim_, spec(), opt);
    model_ = fit_pca(x, n, dim_, k_, seed);
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
    inner_opt.input = opt.input.empty() ? std::string("pca projections") : opt.input + " (pca projections)";
    inner_->encode(y.data(), n, codes, inner_opt);
  }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    require_trained();
    std::vector<float> y(n * k_);
    inner_->decode(codes, n, y.data(), opt);
    pca_reconstruct(model_, y.data(), n, x, opt.device, opt.impl);
  }

  std::vector<NamedBlob> state() const override {
    require_trained();
    std::vector<NamedBlob> out = {{"pca.mean", {dim_}, model_.mean}, {"pca.components", {k_, dim_}, model_.components}};
    for (NamedBlob& b : inner_->state()) out.push_back(std::move(b));
    return out;
  }

  void load_state(const std::vector<NamedBlob>& blobs) override {
    const NamedBlob* mean = nullptr;
    const NamedBlob* comps = nullptr;
    std::vector<NamedBlob> rest;
    for (const NamedBlob& b : blobs) {
      const NamedBlob** slot = b.name == "pca.mean" ? &mean : b.name == "pca.components" ? &comps : nullptr;
      if (!slot) {
        rest.push_back(b);
        continue;
      }
      if (*slot) EDO_FAIL("{}: state blob '{}' appears twice", spec(), b.name);
      *slot = &b;
    }
    if (!mean || !comps) EDO_FAIL("{}: state lacks '{}'", spec(), mean ? "pca.components" : "pca.mean");
    check_blob(*mean, {dim_});
    check_blob(*comps, {k_, dim_});
    inner_->load_state(rest);
    PcaModel m;
    m.dim = dim_;
    m.k = k_;
    m.mean = mean->values;
    m.components = comps->values;
    model_ = std::move(m);
  }

 private:
  void require_trained() const {
    if (model_.k == 0) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
  }

  void check_blob(const NamedBlob& b, const std::vector<uint64_t>& shape) const {
    if (b.shape != shape) {
      EDO_FAIL("{}: state blob '{}' has shape ({}), expected ({})", spec(), b.name, fmt::join(b.shape, ", "),
               fmt::join(shape, ", "));
    }
    uint64_t count = 1;
    for (uint64_t d : shape) count *= d;
    if (b.values.size() != count) {
      EDO_FAIL("{}: state blob '{}' holds {} values, its shape needs {}", spec(), b.name, b.values.size(), count);
    }
    for (size_t i = 0; i < b.values.size(); ++i) {
      if (!std::isfinite(b.values[i])) EDO_FAIL("{}: state blob '{}' value {} is not finite", spec(), b.name, i);
    }
  }

  size_t dim_, k_;
  std::unique_ptr<Codec> inner_;
  PcaModel model_;
};

}  // namespace

size_t pca_output_dim(const SpecStage& stage, size_t dim) {
  StageParams params(stage, "pca:K", true, {});
  if (!params.positional()) EDO_USAGE_FAIL("codec 'pca': needs the output dimension K (pca:K)");
  const size_t k = params.get_size(*params.positional(), "K", kMaxCodecDim);
  if (k > dim) EDO_USAGE_FAIL("codec 'pca:{}': K is larger than the input dimension {}", k, dim);
  return k;
}

std::unique_ptr<Codec> make_pca(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  const size_t k = pca_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'pca:{}': needs a codec after it", k);
  return std::make_unique<PcaCodec>(dim, k, std::move(inner));
}

}  // namespace edo::detail
