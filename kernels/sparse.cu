// SPDX-License-Identifier: Apache-2.0
// The sparse tier decode: one warp per row, grid-stride over rows. Each warp
// checks its row as the CPU does (lib/reader/sparse_tier.cpp), zero-fills it,
// then scatters the stored values, each decoded by sparse_value(), so a row
// is bit-identical to the CPU's.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/sparse.cuh>

namespace edo::cuda {
namespace {

constexpr unsigned kFullWarp = 0xffffffffu;
constexpr uint32_t kWarp = 32;

__device__ uint64_t load_offset(const SparseRows& s, size_t k) {
  if (s.offset_bytes == 4) return reinterpret_cast<const uint32_t*>(s.offsets)[k];
  return reinterpret_cast<const uint64_t*>(s.offsets)[k];
}

// Column of stored value j (j within the slice).
__device__ uint32_t load_index(const SparseRows& s, uint64_t j) {
  if (s.index_bytes == 1) return s.indices[j];
  return static_cast<uint32_t>(s.indices[2 * j]) | static_cast<uint32_t>(s.indices[2 * j + 1]) << 8;
}

// 32 mask bits from byte 4 * w on, zeros past the row's `bytes`.
__device__ uint32_t load_mask_word(const uint8_t* mask, uint64_t bytes, uint64_t w) {
  uint32_t word = 0;
  for (uint32_t t = 0; t < 4; ++t)
    if (4 * w + t < bytes) word |= static_cast<uint32_t>(mask[4 * w + t]) << (8 * t);
  return word;
}

__device__ uint32_t warp_sum(uint32_t v) {
  for (uint32_t d = kWarp / 2; d > 0; d /= 2) v += __shfl_xor_sync(kFullWarp, v, d);
  return v;
}

// Values [a, b) at their columns; false (warp-uniform) when a column is at or beyond dim.
template <SparseValues V>
__device__ bool scatter_csr(const SparseRows& s, uint64_t a, uint64_t b, math::AffineParams p, uint32_t lane,
                            float* __restrict__ row) {
  bool bad = false, unordered = false;
  for (uint64_t i = a + lane; i < b; i += kWarp) {
    const uint32_t j = load_index(s, i - s.base);
    bad |= j >= s.dim;
    unordered |= i > a && j <= load_index(s, i - 1 - s.base);
  }
  if (__any_sync(kFullWarp, bad)) return false;
  if (!__any_sync(kFullWarp, unordered)) {
    for (uint64_t i = a + lane; i < b; i += kWarp)
      row[load_index(s, i - s.base)] = sparse_value(V, s.values, i - s.base, p);
    return true;
  }
  // Columns that repeat or descend (FORMAT.md 9.3 has them ascend): one lane,
  // in order, so that a column's last value wins as on the CPU.
  if (lane == 0)
    for (uint64_t i = a; i < b; ++i) row[load_index(s, i - s.base)] = sparse_value(V, s.values, i - s.base, p);
  return true;
}

// Values [a, b) at the set bits of mask row r; false (warp-uniform) when the
// mask's bit count is not b - a or a bit is set at or beyond dim.
template <SparseValues V>
__device__ bool scatter_bitmap(const SparseRows& s, size_t r, uint64_t a, uint64_t b, math::AffineParams p,
                               uint32_t lane, float* __restrict__ row) {
  const uint64_t bytes = s.mask_bytes, words = (bytes + 3) / 4;
  const uint8_t* mask = s.masks + r * bytes;
  uint32_t bits = 0;
  for (uint64_t w = lane; w < words; w += kWarp) bits += static_cast<uint32_t>(__popc(load_mask_word(mask, bytes, w)));
  bits = warp_sum(bits);
  if (bits != b - a || (s.dim % 8 != 0 && (mask[bytes - 1] >> (s.dim % 8)) != 0)) return false;
  // 32 words (1024 columns) a step: each lane's first value follows the set
  // bits of the lanes before it (a warp prefix sum) and of the steps before.
  uint64_t next = a - s.base;
  for (uint64_t w0 = 0; w0 < words; w0 += kWarp) {
    const uint64_t w = w0 + lane;
    uint32_t word = w < words ? load_mask_word(mask, bytes, w) : 0u;
    const uint32_t count = static_cast<uint32_t>(__popc(word));
    uint32_t inclusive = count;
    for (uint32_t d = 1; d < kWarp; d *= 2) {
      const uint32_t up = __shfl_up_sync(kFullWarp, inclusive, d);
      if (lane >= d) inclusive += up;
    }
    uint64_t i = next + (inclusive - count);
    for (; word != 0; word &= word - 1)
      row[32 * w + static_cast<uint64_t>(__ffs(static_cast<int>(word)) - 1)] = sparse_value(V, s.values, i++, p);
    next += __shfl_sync(kFullWarp, inclusive, kWarp - 1);
  }
  return true;
}

// Row r of the slice into `row`; false (warp-uniform) when it is corrupt.
template <SparseValues V>
__device__ bool decode_row(const SparseRows& s, size_t r, uint32_t lane, float* __restrict__ row) {
  const uint64_t a = load_offset(s, r), b = load_offset(s, r + 1);
  // The CPU's checks, then the slice's bounds (which rows that pass them keep:
  // the host copies the values of rows whose offsets ascend).
  if (a > b || b > s.nnz || b - a > s.dim || (V == SparseValues::int4 && a % 2 != 0) || a < s.base || b > s.end)
    return false;
  for (uint32_t j = lane; j < s.dim; j += kWarp) row[j] = 0.0f;
  __syncwarp();
  const math::AffineParams p = sparse_row_params(s.params ? s.params + 8 * r : nullptr);
  if (s.form == SparseForm::csr) return scatter_csr<V>(s, a, b, p, lane, row);
  return scatter_bitmap<V>(s, r, a, b, p, lane, row);
}

// One warp per row (blockDim a multiple of 32, so a warp's lanes share r).
template <SparseValues V>
__global__ void decode_sparse_kernel(SparseRows s, size_t rows, float* __restrict__ out,
                                     unsigned long long* __restrict__ bad_row) {
  const uint32_t lane = threadIdx.x % kWarp;
  const size_t warps = size_t{gridDim.x} * (blockDim.x / kWarp);
  for (size_t r = (blockIdx.x * size_t{blockDim.x} + threadIdx.x) / kWarp; r < rows; r += warps)
    if (!decode_row<V>(s, r, lane, out + r * s.dim) && lane == 0)
      atomicMin(bad_row, static_cast<unsigned long long>(r));
}

}  // namespace

void decode_sparse(const SparseRows& s, size_t rows, float* out, unsigned long long* bad_row, cudaStream_t stream) {
  if (rows == 0) return;
  const int blocks = grid_blocks(rows * kWarp);
  switch (s.values_kind) {
    case SparseValues::f32:
      decode_sparse_kernel<SparseValues::f32><<<blocks, kThreads, 0, stream>>>(s, rows, out, bad_row);
      break;
    case SparseValues::f16:
      decode_sparse_kernel<SparseValues::f16><<<blocks, kThreads, 0, stream>>>(s, rows, out, bad_row);
      break;
    case SparseValues::bf16:
      decode_sparse_kernel<SparseValues::bf16><<<blocks, kThreads, 0, stream>>>(s, rows, out, bad_row);
      break;
    case SparseValues::int8:
      decode_sparse_kernel<SparseValues::int8><<<blocks, kThreads, 0, stream>>>(s, rows, out, bad_row);
      break;
    case SparseValues::int4:
      decode_sparse_kernel<SparseValues::int4><<<blocks, kThreads, 0, stream>>>(s, rows, out, bad_row);
      break;
  }
}

}  // namespace edo::cuda
