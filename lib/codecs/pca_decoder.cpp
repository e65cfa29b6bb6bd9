// The pca stage's decoder and its parameters (pca_codec.hpp).
#include "pca_codec.hpp"

namespace edo::detail {

size_t pca_output_dim(const SpecStage& stage, size_t dim) {
  StageParams params(stage, "pca:K", true, {});
  if (!params.positional()) EDO_USAGE_FAIL("codec 'pca': needs the output dimension K (pca:K)");
  const size_t k = params.get_size(*params.positional(), "K", kMaxCodecDim);
  if (k > dim) EDO_USAGE_FAIL("codec 'pca:{}': K is larger than the input dimension {}", k, dim);
  return k;
}

std::unique_ptr<Codec> make_pca_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  const size_t k = pca_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'pca:{}': needs a codec after it", k);
  return std::make_unique<PcaDecoder>(dim, k, std::move(inner));
}

}  // namespace edo::detail
