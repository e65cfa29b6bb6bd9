// SPDX-License-Identifier: Apache-2.0
// Lossless tiers: bf16, fp16 or fp32 values stored bit for bit, with the
// eight bits below each value's sign (a bf16's or fp32's exponent; an fp16's
// exponent and top three mantissa bits) Huffman-coded under a static code
// per segment of rows, and the sign and low bits stored as they are. A tier
// kind (tier.hpp, TierKind::lossless) written by edo-pack's `lossless` tiers;
// the byte layout is docs/FORMAT.md, "Lossless tiers".
//
// Spec: lossless[:values=V], V = bf16 | fp16 | fp32. Without V the writer
// stores the input's own precision (bf16 for bf16, fp8 and 8-bit integer
// tables, fp16 for fp16 ones, else fp32); a value V cannot hold exactly is
// an error, never rounded.
//
// A row keeps random access: a u64 offset a block of rows and a u16 a row
// locate its code bits, so a lookup decodes its own rows and no others.
#pragma once

#include <edo/float16.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace edo {

enum class LosslessValues : uint8_t { bf16, f16, f32 };

struct LosslessSpec {
  LosslessValues values = LosslessValues::f32;
  bool values_given = false;  // "lossless" alone: the writer takes the input's precision
};

// Parses "lossless" or "lossless:values=V"; usage error naming the spec.
LosslessSpec parse_lossless_spec(std::string_view spec);
// The canonical spec ("lossless:values=bf16").
std::string format_lossless_spec(LosslessValues v);
const char* lossless_values_name(LosslessValues v);  // "bf16", "fp16", "fp32"

// Bits of a stored value, and bytes of its part stored as it is (the sign
// and the bits below the coded symbol): 1 for bf16 and fp16, 3 for fp32.
EDO_HD inline uint32_t lossless_value_bits(LosslessValues v) { return v == LosslessValues::f32 ? 32u : 16u; }
EDO_HD inline uint32_t lossless_raw_bytes(LosslessValues v) { return lossless_value_bits(v) / 8 - 1; }

// A value's W bits split into its symbol (the 8 bits below the sign) and
// its raw part (the sign above the W - 9 low bits), and joined back.
EDO_HD inline uint32_t lossless_symbol(uint32_t bits, uint32_t width) { return (bits >> (width - 9)) & 0xffu; }
EDO_HD inline uint32_t lossless_raw(uint32_t bits, uint32_t width) {
  const uint32_t low = (1u << (width - 9)) - 1u;
  return ((bits >> (width - 1)) << (width - 9)) | (bits & low);
}
EDO_HD inline uint32_t lossless_join(uint32_t symbol, uint32_t raw, uint32_t width) {
  const uint32_t low = (1u << (width - 9)) - 1u;
  return ((raw >> (width - 9)) << (width - 1)) | (symbol << (width - 9)) | (raw & low);
}
// A value's bits in type v (the low bits of the result), which the writer
// checks hold it exactly: an fp32's upper half for bf16; for fp16 a NaN
// narrowed as it is (its payload's top bits kept, not made quiet).
EDO_HD inline uint32_t lossless_stored_bits(LosslessValues v, float value) {
  const uint32_t f = float_bits(value);
  if (v == LosslessValues::f32) return f;
  if (v == LosslessValues::bf16) return f >> 16;
  if ((f & 0x7fffffffu) > 0x7f800000u) return ((f >> 16) & 0x8000u) | 0x7c00u | ((f >> 13) & 0x3ffu);
  return float_to_half_bits(value);
}
// The fp32 a stored value reads as (fp16 widened exactly, bf16 shifted up).
EDO_HD inline float lossless_value(LosslessValues v, uint32_t symbol, uint32_t raw) {
  const uint32_t bits = lossless_join(symbol, raw, lossless_value_bits(v));
  if (v == LosslessValues::f32) return bits_float(bits);
  if (v == LosslessValues::bf16) return bits_float(bits << 16);
  return half_bits_to_float(static_cast<uint16_t>(bits));
}

// The code: canonical Huffman, at most this many bits a symbol, each
// segment's 256 code lengths in 128 bytes (a nibble a symbol, the low nibble
// first); all zero: the segment's symbols are stored a byte each.
inline constexpr uint32_t kLosslessMaxCodeBits = 11;
inline constexpr uint64_t kLosslessTableBytes = 128;
// Zero bytes after the last row's code bits, so that a decoder may load
// eight bytes at any position inside a row.
inline constexpr uint64_t kLosslessCodePad = 8;
// How the `rows` section locates a row in its block: for rows of at most
// 185 values, whose code never passes 255 bytes (11 bits a value), a byte a
// row holding its code's length; for wider ones a u16 a row, its offset.
inline constexpr uint64_t kLosslessMaxLengthDim = 185;
inline bool lossless_row_lengths(uint64_t dim) { return dim <= kLosslessMaxLengthDim; }
// The writer's rows a block (one u64 offset each; a row's u16 offset
// within its block then never overflows) and a segment (one code each,
// about 4M values: a few MB buffered while writing).
uint32_t lossless_block_rows(uint64_t dim);
uint64_t lossless_segment_rows(uint64_t dim, uint32_t block_rows);
// The most a reader accepts (FORMAT.md 9.10).
inline constexpr uint64_t kLosslessMaxBlockRows = 4096;
inline constexpr uint64_t kLosslessMaxSegmentValues = uint64_t{1} << 26;

// The canonical code of lengths[256] (0: the symbol does not occur): each
// symbol's code bits reversed (the first bit lowest, as a decoder reads
// them). Returns false when the lengths overflow the code space (Kraft sum
// above 1) or one exceeds kLosslessMaxCodeBits.
bool lossless_canonical_codes(const uint8_t* lengths, uint16_t* codes);
// Length-limited Huffman code lengths of a histogram (ties broken by
// symbol, so the same counts give the same code); a lone symbol gets 1 bit.
void lossless_code_lengths(const uint64_t* counts, uint8_t* lengths);
// Bytes a row of n sample rows x takes in a lossless tier of type v, as the
// writer would store them in one segment: raw parts, code bits, its offset
// and its share of a block's (the planner's size of a lossless tier).
double lossless_row_bytes(LosslessValues v, const float* x, uint64_t n, uint64_t dim);

// One row, the reference decode (the GPU's, and what the CPU's four-row
// loop is tested against): `dim` symbols from the row's bytes [p, end) by
// the segment's table `entry` (2^11 entries: symbol | length << 8, 0 where
// no code begins; null: the segment stores a byte a symbol), each joined
// with its raw part into out. Reads nothing outside [p, end) and `raw`'s
// row. False unless every code is one of the table's and the codes take
// exactly the row's bytes (or, a byte a symbol, the row holds dim bytes).
EDO_HD inline bool lossless_decode_row(const uint16_t* entry, const uint8_t* p, const uint8_t* end, const uint8_t* raw,
                                       LosslessValues v, uint64_t dim, float* out) {
  const uint32_t rb = lossless_raw_bytes(v);
  const auto raw_at = [&](uint64_t j) {
    uint32_t r = 0;
    for (uint32_t k = 0; k < rb; ++k) r |= uint32_t{raw[j * rb + k]} << (8 * k);
    return r;
  };
  if (!entry) {
    if (static_cast<uint64_t>(end - p) != dim) return false;
    for (uint64_t j = 0; j < dim; ++j) out[j] = lossless_value(v, p[j], raw_at(j));
    return true;
  }
  uint64_t buf = 0;
  uint32_t held = 0;
  for (uint64_t j = 0; j < dim; ++j) {
    while (held <= 56 && p < end) buf |= uint64_t{*p++} << held, held += 8;
    const uint32_t e = entry[buf & ((uint64_t{1} << kLosslessMaxCodeBits) - 1)];
    const uint32_t len = e >> 8;
    if (len == 0 || len > held) return false;
    buf >>= len;
    held -= len;
    out[j] = lossless_value(v, e & 0xffu, raw_at(j));
  }
  return p == end && held < 8;
}

}  // namespace edo
