// SPDX-License-Identifier: Apache-2.0
// The pooled lookup's kernels (Reader::lookup_bags): code rows decoded
// straight into a bag's sums, with no row buffer, one table of kernels per
// CPU path (cpu_path.hpp), each in its own file built for its instruction
// set. Internal to lib/reader.
//
// Every kernel gives lookup_bags_reference()'s bits: each value decoded with
// the reference's operations (one fmaf for an affine code, an exact
// conversion for fp16 and bf16, a table value times the scale for fp8), and
// each sum kept in the reference's order (row after row, column by column),
// with its operations (pool_math.hpp). Columns are independent, so sweeping
// them in any blocks keeps the bits.
//
// The per-path files include no header with inline functions: the linker
// keeps one copy of an inline function, and the copy built for AVX-512
// could then serve a CPU without it.
#pragma once

#include <edo/cpu_path.hpp>
#include <edo/pool_math.hpp>

#include <cstddef>
#include <cstdint>

namespace edo::detail {

// How a scalar code row stores its values (math::ScalarLayout's facts the
// kernels need, as plain data).
enum class PoolValues : uint8_t {
  f32,      // dim floats
  f16,      // dim IEEE halves
  bf16,     // dim bfloat16s
  fp8,      // a float scale, then dim fp8 codes (fp8_values gives each code's value at scale 1)
  affine8,  // per group (scale, offset) as floats or halves, then dim bytes: value = fmaf(q, scale, offset)
  affine4,  // the same with two values a byte, low nibble first
  affine,   // the same with `bits` (2, 3, 5 or 6) a value, packed low bits first across bytes
  sign,     // a float scale, then a bit a value (low bit first): value = bit ? -scale : scale
};

struct PoolRowFormat {
  PoolValues values;
  uint32_t dim;
  uint32_t group;                     // affine: values per group (the last may be shorter); dim when row-wise
  uint32_t groups;                    // affine: ceil(dim / group)
  uint32_t header_bytes;              // bytes before the values
  uint32_t code_size;                 // bytes a row
  bool half_params;                   // affine: (scale, offset) as two halves, 4 bytes a group
  uint32_t bits = 0;                  // bits a value
  uint8_t scalar_kind = 0;            // the math::ScalarKind (the portable path decodes by math::decode_value)
  const float* fp8_values = nullptr;  // fp8: 256 values
  bool fp8_e5m2 = false;              // fp8: the format (else e4m3)
};

// For a register of packed `bits`-bit values whose first value starts a
// byte: value i's bytes (a 32-bit window from byte i * bits / 8) and its
// shift in that window, as shuffle and shift tables (bits 0 to 8).
struct PackedLanes {
  uint8_t bytes[16][4];
  uint32_t shift[16];
};
constexpr PackedLanes packed_lanes(uint32_t bits) {
  PackedLanes t{};
  for (uint32_t i = 0; i < 16; ++i) {
    for (uint32_t k = 0; k < 4; ++k) t.bytes[i][k] = static_cast<uint8_t>(i * bits / 8 + k);
    t.shift[i] = i * bits % 8;
  }
  return t;
}
inline constexpr PackedLanes kPackedLanes[9] = {packed_lanes(0), packed_lanes(1), packed_lanes(2),
                                                packed_lanes(3), packed_lanes(4), packed_lanes(5),
                                                packed_lanes(6), packed_lanes(7), packed_lanes(8)};

// One bag's rows, or the part of them in one tier, in the bag's order.
struct PoolRun {
  const uint8_t* const* rows;  // rows[k] (k < n): row k's code
  const float* weights;        // per row (mode sum only), or null
  size_t n;
  // rows[n .. n + ahead) are the addresses of the rows the stream pools
  // next (possibly of other bags or tiers; null where none): the kernels
  // prefetch from them, never read them otherwise.
  size_t ahead;
  // The most bytes a row of the stream takes, in any of its tiers: how far
  // ahead to prefetch (one distance for the whole stream, so every row is
  // prefetched once whatever its tier), and how many of each row's lines
  // unless row_bytes gives each row's own size (rows of several tiers:
  // row_bytes[0 .. n + ahead), beside rows).
  uint32_t prefetch_bytes;
  const uint32_t* row_bytes = nullptr;
};

// How far ahead of the row being pooled the stream's rows are prefetched:
// about kPoolPrefetchBytes of rows (30 rows of 136 bytes, 16 of 256, 8 of 512), from 4
// to 32 rows, into the L2 cache (prefetcht1: the L1's few line-fill buffers
// dropped or stalled prefetches into it; measured, docs/BENCHMARKS.md
// "Pooled lookups against torch and FBGEMM").
inline constexpr size_t kPoolPrefetchBytes = 4096;
constexpr size_t pool_prefetch_rows(uint32_t code_size) {
  const size_t rows = kPoolPrefetchBytes / (code_size ? code_size : 1);
  return rows < 4 ? 4 : rows > 32 ? 32 : rows;
}

// A pq codec's rows (no rotation): m codes of nbits bits, low bits first;
// sub-space j (the first dim % m one column wider) takes its width from
// centroid codebooks + (j * ksub + code) * dsub.
struct PoolPqFormat {
  uint32_t dim, m, nbits, ksub, dsub;
  const float* codebooks;
};

struct PoolKernels {
  CpuPath path;
  // Folds the run's code rows (format f) into acc, the bag's dim sums;
  // `first`: acc holds no row of the bag yet (mode max then takes the first
  // row as it is). False when this path has no kernel for f (then nothing
  // is read or written).
  bool (*scalar)(const PoolRowFormat& f, const PoolRun& run, PoolMode mode, bool first, float* acc);
  // Folds n decoded rows (row k at rows + k * dim) into acc the same way.
  void (*fold)(PoolMode mode, const float* rows, size_t n, const float* weights, size_t dim, bool first, float* acc);
  // Decodes the run's code rows, row k into out + dst[k] * dim (weights
  // unused): lookup()'s rows, with the same prefetching. False as scalar().
  bool (*decode)(const PoolRowFormat& f, const PoolRun& run, const uint64_t* dst, float* out);
  // Folds the run's pq code rows into acc as scalar() folds scalar ones.
  void (*product)(const PoolPqFormat& f, const PoolRun& run, PoolMode mode, bool first, float* acc);
};

extern const PoolKernels kPoolKernelsPortable;
extern const PoolKernels kPoolKernelsAvx2;
extern const PoolKernels kPoolKernelsAvx512;

// The table for `path`.
const PoolKernels& pool_kernels(CpuPath path);

// Prefetches a row of `bytes` bytes at `row` into the L2 cache, as the
// kernels do (for the kinds decoded through a buffer, tier_pool.cpp).
void prefetch_code_row(const uint8_t* row, uint32_t bytes);

}  // namespace edo::detail

namespace edo::math {
struct ScalarLayout;
}

namespace edo::detail {

// The kernels' view of a scalar codec's rows (every scalar kind). Defined in
// pool_kernels.cpp, not in the per-path files.
PoolRowFormat pool_row_format(const math::ScalarLayout& layout);

}  // namespace edo::detail

namespace edo {
struct TierRows;
}

namespace edo::detail {

// Prefetches, as the kernels do, the stream's row pool_prefetch_rows()
// beyond row k of `rows` (nothing where the stream has no such row or no
// addresses).
void prefetch_stream_row(const TierRows& rows, size_t k);

// Rows that are all `vector` (a shared vector, zeros, a centroid, the
// default for unknown ids) folded into acc as TierView::pool folds rows
// (tier_pool.cpp).
void pool_vector(const float* vector, const TierRows& rows, PoolMode mode, bool first, float* acc);

}  // namespace edo::detail
