// SPDX-License-Identifier: Apache-2.0
// The pca and rot stages' decoders and the K of every transform stage (pca_codec.hpp).
#include "pca_codec.hpp"

namespace edo::detail {

size_t transform_output_dim(const SpecStage& stage, size_t dim) {
  const std::string grammar = stage.name + ":K";
  StageParams params(stage, grammar.c_str(), true, {});
  if (!params.positional()) EDO_USAGE_FAIL("codec '{}': needs the output dimension K ({}:K)", stage.name, stage.name);
  const size_t k = params.get_size(*params.positional(), "K", kMaxCodecDim);
  if (k > dim) EDO_USAGE_FAIL("codec '{}:{}': K is larger than the input dimension {}", stage.name, k, dim);
  return k;
}

std::unique_ptr<Codec> make_pca_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  const size_t k = transform_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'pca:{}': needs a codec after it", k);
  return std::make_unique<PcaDecoder>(dim, k, std::move(inner));
}

size_t rotation_output_dim(const SpecStage& stage, size_t dim) {
  const StageParams params(stage, "rot,CODEC", false, {});  // refuses any parameter
  if (dim > kMaxRotationDim)
    EDO_USAGE_FAIL(
        "codec 'rot': dimension {} is above {} (its {} x {} matrix would take {:.1f} GB of the file and about "
        "{:.0e} flops to fit); use pca:K,CODEC to reduce the dimension instead",
        dim, kMaxRotationDim, dim, dim, static_cast<double>(dim) * static_cast<double>(dim) * 4e-9,
        4.0 * static_cast<double>(dim) * static_cast<double>(dim) * static_cast<double>(dim));
  return dim;
}

std::unique_ptr<Codec> make_rot_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec> inner) {
  rotation_output_dim(stage, dim);
  if (!inner) EDO_USAGE_FAIL("codec 'rot': needs a codec after it");
  return std::make_unique<PcaDecoder>(dim, dim, std::move(inner), Basis::random_rotation);
}

}  // namespace edo::detail
