// SPDX-License-Identifier: Apache-2.0
// Internal to the codec sources: the per-codec factories the traits table
// points at, and helpers for reading stage parameters and checking input.
#pragma once

#include <edo/codec.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace edo::detail {

// Reads a stage's params against what a codec accepts: at most one
// positional value and the named keys; anything else is a usage error that
// names the stage and lists what it takes.
class StageParams {
 public:
  StageParams(const SpecStage& stage, const char* grammar, bool takes_positional,
              std::initializer_list<const char*> keys);
  const std::string* positional() const { return positional_; }
  const std::string* get(std::string_view key) const;
  // A positive integer no larger than `max`; usage error otherwise.
  size_t get_size(const std::string& value, std::string_view what, size_t max) const;

 private:
  const SpecStage& stage_;
  const char* grammar_;
  const std::string* positional_ = nullptr;
};

void check_dim(std::string_view spec, size_t dim);

// Trained state from a file: shape, element count and finite values,
// each failure naming the spec and the blob.
void check_blob(const std::string& spec, const NamedBlob& b, const std::vector<uint64_t>& shape);
// The blobs named in `names`, in that order; anything missing, repeated or
// extra is an error.
std::vector<const NamedBlob*> take_blobs(const std::string& spec, const std::vector<NamedBlob>& blobs,
                                         std::initializer_list<const char*> names);
// Each column's mean and sum of squared deviations from it over n rows, in
// double, summed in row order (the same result whatever the thread count).
struct ColumnStats {
  std::vector<double> mean, squares;
};
ColumnStats column_stats(const float* x, size_t n, size_t dim);
// What a decoder (make_decoder) says when asked to train or encode.
[[noreturn]] void decode_only(const std::string& spec, const char* what);

// Builds a spec's stages, checking their order ([transform] codec), with
// `make` choosing the implementation of each stage: the traits' decoders
// (make_decoder) or the full codecs (make_codec).
using StageMaker = std::function<std::unique_ptr<Codec>(const CodecTraits&, const SpecStage&, size_t dim,
                                                        std::unique_ptr<Codec> inner)>;
std::unique_ptr<Codec> assemble_codec(std::string_view spec, size_t dim, const StageMaker& make);

// Every scalar codec (fp32 fp16 bf16 fp8 int8 int6 int5 int4 int3 int2 bin), by stage name.
std::unique_ptr<Codec> make_scalar(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
std::unique_ptr<Codec> make_pca(const SpecStage&, size_t dim, std::unique_ptr<Codec> inner);
std::unique_ptr<Codec> make_pca_decoder(const SpecStage&, size_t dim, std::unique_ptr<Codec> inner);
// K of a transform stage NAME:K (pca, dims): 1 <= K <= dim, else a usage error.
size_t transform_output_dim(const SpecStage&, size_t dim);
// rot,CODEC (pca_codec.hpp): a random rotation, K = dim; the stage takes no
// parameters. Its dim x dim matrix is fitted in about 4 dim^3 flops and
// stored in fp32, so dimensions above kMaxRotationDim are refused.
inline constexpr size_t kMaxRotationDim = 8192;
std::unique_ptr<Codec> make_rot(const SpecStage&, size_t dim, std::unique_ptr<Codec> inner);
std::unique_ptr<Codec> make_rot_decoder(const SpecStage&, size_t dim, std::unique_ptr<Codec> inner);
size_t rotation_output_dim(const SpecStage&, size_t dim);
// dims:K (codec_dims.cpp): one class trains, encodes and decodes.
std::unique_ptr<Codec> make_dims(const SpecStage&, size_t dim, std::unique_ptr<Codec> inner);
// tc:bits=B (tc_codec.hpp): decoder (tc_decoder.cpp) and full codec (codec_tc.cpp).
std::unique_ptr<Codec> make_tc(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
std::unique_ptr<Codec> make_tc_decoder(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
// pq and opq (by stage name), rq: codec_pq.cpp.
std::unique_ptr<Codec> make_pq(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
std::unique_ptr<Codec> make_rq(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
// rq defaults (docs/BENCHMARKS.md, "Product quantization"): a cheap greedy
// FAISS training at beam 2, then refit rounds and encoding at beam 8, beat
// FAISS trained and encoded at beam 8 in less training time.
inline constexpr uint32_t kRqDefaultBeam = 8;
inline constexpr uint32_t kRqDefaultTrainBeam = 2;
inline constexpr uint32_t kRqDefaultRefine = 2;

}  // namespace edo::detail
