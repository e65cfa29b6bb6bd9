// SPDX-License-Identifier: Apache-2.0
// The decoding half of pq, opq and rq (FORMAT.md, "Codec payloads: pq,
// opq, rq"): codebooks loaded from a file, rows decoded and scored (ADC)
// without FAISS or BLAS, so the reader library links neither. Training and
// encoding are added by PqCodec and RqCodec (codec_pq.cpp, in edo_codecs).
#pragma once

#include "codec_impl.hpp"

#include <edo/pq_decode.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edo::detail {

enum class PqTrainer { faiss, edo };

struct PqParams {
  bool rotate = false;  // opq
  uint32_t m = 0, nbits = 8;
  PqTrainer trainer = PqTrainer::faiss;
  StateStorage books = StateStorage::f32;  // codebooks=fp32|fp16|int8 (opq's rotation stays fp32)
};
PqParams parse_pq_params(const SpecStage& stage, size_t dim);  // pq and opq

struct RqParams {
  uint32_t m = 0, nbits = 8, beam = 0, train_beam = 0, refine = 0;
  StateStorage books = StateStorage::f32;
};

// Trained or loaded codebooks as the codec stores them: with fp16 storage
// each value rounds to the nearest fp16 number, with int8 storage each
// codeword of `codeword` values to int8 codes under a power of two
// (round_to_int8_exp2): the values the file will hold, so codes are chosen
// against them. A value beyond fp16's range under fp16 is a runtime error
// naming the spec.
void store_codebooks(const std::string& spec, StateStorage storage, std::vector<float> values, uint64_t codeword,
                     std::vector<float>& codebooks);
RqParams parse_rq_params(const SpecStage& stage);

// pq and opq. opq: rows are rotated into m * ceil(dim / m) columns, so every
// sub-space has the same width.
class PqDecoder : public Codec, public AdcCodec {
 public:
  PqDecoder(size_t dim, const PqParams& p);
  std::string spec() const override;
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return g_.code_size; }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !codebooks_.empty(); }
  const AdcCodec* adc() const override { return this; }
  void train(const float* x, size_t n, uint64_t seed) override;
  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override;
  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override;
  void decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n,
                     float* x) const override;
  std::vector<NamedBlob> state() const override;
  void load_state(const std::vector<NamedBlob>& blobs) override;
  size_t adc_table_size() const override { return static_cast<size_t>(g_.m) * g_.ksub; }
  void adc_tables(const float* queries, size_t nq, float* tables) const override;
  void adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const override;
  std::optional<PqLayout> layout() const;  // pq_layout()

 protected:
  void require_trained() const;
  void rotate(const float* x, size_t n, float* y) const;    // y (n x g_.dim) = x A^T
  void unrotate(const float* y, size_t n, float* x) const;  // x (n x dim) = y A

  bool rotate_;
  size_t dim_;
  PqTrainer trainer_;
  StateStorage books_;
  math::PqGeometry g_;
  std::vector<float> codebooks_;  // (m, ksub, dsub)
  std::vector<float> rotation_;   // opq: (g_.dim, dim_)
};

// Residual quantizer: m codebooks of ksub full-dimension vectors; a row
// decodes to the sum of one vector from each.
class RqDecoder : public Codec, public AdcCodec {
 public:
  RqDecoder(size_t dim, const RqParams& p);
  std::string spec() const override;
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return code_size_; }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !codebooks_.empty(); }
  const AdcCodec* adc() const override { return this; }
  void train(const float* x, size_t n, uint64_t seed) override;
  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override;
  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override;
  void decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n,
                     float* x) const override;
  std::vector<NamedBlob> state() const override;
  void load_state(const std::vector<NamedBlob>& blobs) override;
  size_t adc_table_size() const override { return static_cast<size_t>(p_.m) * ksub_; }
  void adc_tables(const float* queries, size_t nq, float* tables) const override;
  void adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const override;

 protected:
  void require_trained() const;
  math::RqShape shape() const { return {static_cast<uint32_t>(dim_), p_.m, p_.nbits, p_.beam}; }
  const float* codeword(uint32_t j, uint32_t c) const {
    return codebooks_.data() + (static_cast<size_t>(j) * ksub_ + c) * dim_;
  }
  void decode_row(const uint8_t* code, float* x) const;

  size_t dim_;
  RqParams p_;
  uint32_t ksub_;
  size_t code_size_;
  std::vector<float> codebooks_;  // (m, ksub, dim)
};

// Decoders by stage name (pq, opq; rq), for the traits table.
std::unique_ptr<Codec> make_pq_decoder(const SpecStage&, size_t dim, std::unique_ptr<Codec>);
std::unique_ptr<Codec> make_rq_decoder(const SpecStage&, size_t dim, std::unique_ptr<Codec>);

}  // namespace edo::detail
