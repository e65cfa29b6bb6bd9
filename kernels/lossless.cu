// SPDX-License-Identifier: Apache-2.0
// The lossless tier decode: one thread a row, grid-stride over rows, each
// row by lossless_decode_row() (lossless.hpp), the function the CPU's tests
// hold its own decode to, so a row is bit-identical to the CPU's.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/lossless.cuh>

namespace edo::cuda {
namespace {

__global__ void decode_lossless_kernel(LosslessRows s, size_t rows, float* __restrict__ out,
                                       unsigned long long* __restrict__ bad_row) {
  const size_t stride = size_t{gridDim.x} * blockDim.x;
  const uint64_t table_size = uint64_t{1} << kLosslessMaxCodeBits;
  const uint64_t rb = lossless_raw_bytes(s.values);
  for (size_t r = blockIdx.x * size_t{blockDim.x} + threadIdx.x; r < rows; r += stride) {
    const uint16_t* entry = s.table_of[r] < 0 ? nullptr : s.tables + static_cast<uint64_t>(s.table_of[r]) * table_size;
    if (!lossless_decode_row(entry, s.codes + s.spans[2 * r], s.codes + s.spans[2 * r + 1], s.raw + r * s.dim * rb,
                             s.values, s.dim, out + r * s.dim))
      atomicMin(bad_row, static_cast<unsigned long long>(r));
  }
}

}  // namespace

void decode_lossless(const LosslessRows& s, size_t rows, float* out, unsigned long long* bad_row, cudaStream_t stream) {
  if (rows == 0) return;
  decode_lossless_kernel<<<grid_blocks(rows), kThreads, 0, stream>>>(s, rows, out, bad_row);
}

}  // namespace edo::cuda
