// SPDX-License-Identifier: Apache-2.0
// Sparse tiers: rows pruned to their largest values, stored as CSR (column
// indices) or as a bitmap (a dim-bit mask per row), values in fp32, fp16,
// bf16, or int8/int4 with an affine (scale, offset) pair per row. A tier kind
// (tier.hpp, TierKind::sparse) written by edo-sparsify and by edo-pack's
// `csr:`/`bitmap:` tiers; the byte layout is docs/FORMAT.md, "Sparse tiers".
//
// Spec: FORM:RULE[,values=V]  FORM = csr | bitmap,
//   RULE = density=D (0 < D <= 1: a magnitude threshold fitted on the tier's
//          training sample so that a share D of the values is kept),
//        | k=K (each row keeps its K largest magnitudes),
//        | threshold=T (T > 0: values with |v| >= T are kept);
//   V = fp32 (default) | fp16 | bf16 | int8 | int4.
// Zeros are never stored. An int4 row keeps an even number of values (one
// more, or one fewer when the row has no more), so rows start on a byte.
#pragma once

#include <edo/codec_math.hpp>
#include <edo/float16.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

enum class SparseForm : uint8_t { csr, bitmap };
enum class SparseValues : uint8_t { f32, f16, bf16, int8, int4 };
enum class SparseRule : uint8_t { density, per_row_k, threshold };

struct SparseSpec {
  SparseForm form = SparseForm::csr;
  SparseRule rule = SparseRule::density;
  double density = 0;   // rule density
  uint32_t k = 0;       // rule per_row_k
  float threshold = 0;  // rule threshold
  SparseValues values = SparseValues::f32;
};

// True when a manifest "codec" field or tier codec names a sparse form.
bool is_sparse_spec(std::string_view spec);
// Parses and checks a spec for rows of `dim` values; usage error naming the spec.
SparseSpec parse_sparse_spec(std::string_view spec, uint64_t dim);
// The canonical spec ("csr:density=0.25:values=int8").
std::string format_sparse_spec(const SparseSpec& s);
const char* sparse_values_name(SparseValues v);

// Bytes of `count` stored values (count even for int4).
inline uint64_t sparse_value_bytes(SparseValues v, uint64_t count) {
  switch (v) {
    case SparseValues::f32:
      return 4 * count;
    case SparseValues::f16:
    case SparseValues::bf16:
      return 2 * count;
    case SparseValues::int8:
      return count;
    case SparseValues::int4:
      break;
  }
  return count / 2;
}
inline bool sparse_values_affine(SparseValues v) { return v == SparseValues::int8 || v == SparseValues::int4; }
inline uint32_t sparse_qmax(SparseValues v) { return v == SparseValues::int8 ? 255u : 15u; }
// Bytes per row of the `params` section: an affine (scale, offset) pair.
inline uint32_t sparse_param_bytes(SparseValues v) { return sparse_values_affine(v) ? 8u : 0u; }
// Column index width of a CSR tier: 1 byte up to 256 columns, else 2.
inline uint32_t sparse_index_bytes(uint64_t dim) { return dim <= 256 ? 1u : 2u; }
// Bytes of each row offset of a tier holding `nnz` values (FORMAT.md 9.3):
// u32 while they fit, else u64; and the tier's recorded density.
inline uint32_t sparse_offset_bytes(uint64_t nnz) { return nnz <= UINT32_MAX ? 4u : 8u; }
inline double sparse_density(uint64_t nnz, uint64_t rows, uint64_t dim) {
  return rows ? static_cast<double>(nnz) / (static_cast<double>(rows) * static_cast<double>(dim)) : 0.0;
}
inline uint64_t sparse_mask_bytes(uint64_t dim) { return (dim + 7) / 8; }

// Value i of a row's stored values, `p` the row's affine pair (int8/int4).
EDO_HD inline float sparse_value(SparseValues v, const uint8_t* values, uint64_t i, math::AffineParams p) {
  switch (v) {
    case SparseValues::f32: {
      float f;
      memcpy(&f, values + 4 * i, 4);
      return f;
    }
    case SparseValues::f16:
    case SparseValues::bf16: {
      uint16_t h;
      memcpy(&h, values + 2 * i, 2);
      return v == SparseValues::f16 ? half_bits_to_float(h) : bf16_bits_to_float(h);
    }
    case SparseValues::int8:
      return math::affine_dequantize(values[i], p);
    case SparseValues::int4:
      break;
  }
  return math::affine_dequantize((values[i / 2] >> (4 * (i % 2))) & 0xfu, p);
}

// The row's affine pair from its `params` entry (null: values are floats).
EDO_HD inline math::AffineParams sparse_row_params(const uint8_t* params) {
  return params ? math::load_affine(params, 0) : math::AffineParams{0.0f, 0.0f};
}

// Stored values [first, first + count) of a tier's `values` section (first
// even for int4) decoded to out[0, count), bit for bit as sparse_value()
// decodes each, eight at a time where the CPU allows (edo_reader).
void sparse_decode_run(SparseValues v, const uint8_t* values, uint64_t first, uint64_t count, math::AffineParams p,
                       float* out);

// The form that stores rows of `dim` values at `density` in fewer bytes:
// bitmap once density * index bytes exceeds a mask's ceil(dim/8) / dim bytes
// per value (docs/FORMAT.md 9.3), csr below.
inline SparseForm smaller_sparse_form(double density, uint64_t dim) {
  return density * static_cast<double>(sparse_index_bytes(dim)) * static_cast<double>(dim) >
                 static_cast<double>(sparse_mask_bytes(dim))
             ? SparseForm::bitmap
             : SparseForm::csr;
}

}  // namespace edo
