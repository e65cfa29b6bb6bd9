// SPDX-License-Identifier: Apache-2.0
// tc:bits=B, transform coding: a row is stored as its length (an fp16 gain)
// and its direction, whose coordinates in the principal basis of the
// training sample's directions each get their own quantizer, with the row's
// round(B x d) bits shared out by variance (a coordinate gets one more bit
// while its error, variance x 4^-bits, is the largest: reverse water-filling
// in whole bits, at most kTcMaxBits a coordinate). A coordinate's 2^b cells
// are those of a Gaussian compander: equal shares of the normal
// distribution N(center, spread^2), each decoded to its median, with the
// spread fitted to the coordinate's values (least squared error), so cells
// are narrow where values are dense. No scale or offset is stored per row,
// and low-variance directions cost few bits, so at equal bytes it keeps more
// neighbours than the row-wise integer codecs (docs/BENCHMARKS.md,
// "Transform coding").
//
// Row layout (FORMAT.md 7.6): the gain over the tier's length unit (a power
// of two the sample's longest row sets, so fp16 holds any table's lengths)
// as little-endian binary16, then the
// coordinates' codes, coordinate j's bits[j]-bit code after those of
// coordinates 0..j-1, least significant bit first, in ceil(total / 8) bytes.
// TcDecoder decodes (the reader library's, no BLAS or LAPACK); TcCodec
// (codec_tc.cpp) adds training and encoding.
#pragma once

#include "codec_impl.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edo::detail {

// The most bits one coordinate gets, and the widest table tc takes (it
// stores a d x d basis and spends d^2 flops a row each way, as rot does).
// A coordinate's cells are built when the state is set: 2^bits levels (and
// as many thresholds for an encoder), at most 4096 x 2048 floats, 32 MiB,
// whatever a file declares.
inline constexpr uint32_t kTcMaxBits = 12;
inline constexpr size_t kTcMaxDim = 2048;
// Columns a decode accumulates at once, in registers (4 AVX2 vectors).
inline constexpr size_t kTcBlock = 32;

// The standard normal quantile: x with Phi(x) = p, for 0 < p < 1, in double
// (a rational first guess, then four Newton steps on erfc: a fixed sequence
// of operations, so the same bits on every run).
double normal_quantile(double p);

// A coordinate's quantizer: 2^bits cells of N(center, spread^2) of equal
// probability. thresholds[k - 1] = center + spread x Phi^-1(k / 2^bits) for
// k = 1 .. 2^bits - 1, levels[q] = center + spread x Phi^-1((q + 1/2) / 2^bits),
// both rounded to float; bits = 0: the one level `center`. Decoding needs
// the levels only; the thresholds are built for an encoder (with_thresholds).
struct TcCells {
  std::vector<float> thresholds, levels;
  uint32_t code(float z) const;  // the number of thresholds <= z
};
TcCells tc_cells(uint32_t bits, float center, float spread, bool with_thresholds);

// Where coordinate j's code lies in a row's code bytes (after the gain):
// `bytes` bytes from `byte` (1 to 3: a code of up to 12 bits starting at
// any bit), shifted right by `shift`, masked to its width.
struct TcField {
  uint32_t byte = 0, mask = 0;
  uint8_t shift = 0, bytes = 0;
};

struct TcParams {
  double bits = 0;     // average bits a value, as the spec gives it
  uint64_t total = 0;  // bits a row for the coordinates: round(bits x dim)
};

TcParams parse_tc_params(const SpecStage& stage, size_t dim);

class TcDecoder : public Codec {
 public:
  TcDecoder(size_t dim, const TcParams& p);

  std::string spec() const override;
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return 2 + static_cast<size_t>((p_.total + 7) / 8); }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !bits_.empty(); }

  void train(const float*, size_t, uint64_t) override { decode_only(spec(), "training"); }
  void encode(const float*, size_t, uint8_t*, const EncodeOptions&) const override { decode_only(spec(), "encoding"); }
  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override;

  std::vector<NamedBlob> state() const override;
  void load_state(const std::vector<NamedBlob>& blobs) override;

 protected:
  void require_trained() const;
  // Sets the basis and its transpose, which project() walks.
  void set_basis(std::vector<float> basis);
  // Sets the quantizers and builds their cells (with thresholds when encodes_) and fields.
  void set_quantizers(std::vector<uint32_t> bits, std::vector<float> center, std::vector<float> spread);
  // Coordinates of a direction u (dim floats): z_j = sum_i (u_i - mean_i) basis_ji,
  // one fma chain a coordinate in i order.
  void project(const float* u, float* z) const;
  // One row's codes (after its gain) <-> its coordinates' quantized values.
  void pack(const float* z, uint8_t* out) const;

  size_t dim_;
  TcParams p_;
  float unit_ = 1.0f;        // the lengths' unit: a row's gain is its fp16 value x unit_
  std::vector<float> mean_;  // dim
  // dim x dim, one principal direction a row, largest variance first, in
  // fp16 values (stored as binary16: FORMAT.md 9.8's state_dtypes).
  std::vector<float> basis_;
  std::vector<float> basis_t_;          // encoders: its transpose, column j of row i at [i][j]
  std::vector<float> basis_pad_;        // the basis, rows zero-padded to a multiple of kTcBlock
  size_t pad_dim_ = 0;                  // that row length
  std::vector<uint32_t> bits_;          // dim, summing to p_.total; empty until trained
  std::vector<float> center_, spread_;  // dim: each coordinate's N(center, spread^2)
  std::vector<TcCells> cells_;          // dim: built from bits_, center_ and spread_
  std::vector<TcField> fields_;         // dim: each code's place in a row
  bool encodes_ = false;                // TcCodec: build the cells' thresholds too
};

}  // namespace edo::detail
