// SPDX-License-Identifier: Apache-2.0
// The hashed tier fit's product A^T F A v in two grid-stride passes over a
// block of rows: each (row, column) value of F A v, then each (slot, column)
// sum over the slot's rows in row order, continued block after block, so
// the sums are the CPU's (lib/store/hash_builder.cpp) bit for bit.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/hash_fit.cuh>
#include <edo/hash.hpp>

namespace edo::cuda {
namespace {

__global__ void row_values_kernel(HashNormalTerms t, const float* __restrict__ v, uint64_t r0, uint64_t r1,
                                  float* __restrict__ y) {
  const size_t items = (r1 - r0) * t.dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < items; i += size_t{gridDim.x} * blockDim.x) {
    const uint64_t p = r0 + i / t.dim, j = i % t.dim, a = t.row_start[p];
    y[i] = hash_normal_row(t.row_coef + a, t.row_slot + a, static_cast<uint32_t>(t.row_start[p + 1] - a), t.freq[p], v,
                           t.dim, j);
  }
}

// The first of [a, b) whose row is at least r (entries ascend by row).
__device__ uint64_t first_entry_from(const uint64_t* entry_row, uint64_t a, uint64_t b, uint64_t r) {
  while (a < b) {
    const uint64_t mid = a + (b - a) / 2;
    if (entry_row[mid] < r)
      a = mid + 1;
    else
      b = mid;
  }
  return a;
}

__global__ void slot_sums_kernel(HashNormalTerms t, uint64_t slots, const float* __restrict__ y, uint64_t r0,
                                 uint64_t r1, float* __restrict__ out) {
  const size_t items = slots * t.dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < items; i += size_t{gridDim.x} * blockDim.x) {
    const uint64_t s = i / t.dim, j = i % t.dim, end = t.slot_start[s + 1];
    float sum = out[i];
    for (uint64_t e = first_entry_from(t.entry_row, t.slot_start[s], end, r0); e < end && t.entry_row[e] < r1; ++e)
      sum = hash_normal_add(sum, t.entry_coef[e], y[(t.entry_row[e] - r0) * t.dim + j]);
    out[i] = sum;
  }
}

}  // namespace

void hash_row_values(const HashNormalTerms& t, const float* v, uint64_t r0, uint64_t r1, float* y,
                     cudaStream_t stream) {
  if (r1 <= r0 || t.dim == 0) return;
  row_values_kernel<<<grid_blocks((r1 - r0) * t.dim), kThreads, 0, stream>>>(t, v, r0, r1, y);
}

void hash_slot_sums(const HashNormalTerms& t, uint64_t slots, const float* y, uint64_t r0, uint64_t r1, float* out,
                    cudaStream_t stream) {
  if (r1 <= r0 || slots == 0 || t.dim == 0) return;
  slot_sums_kernel<<<grid_blocks(slots * t.dim), kThreads, 0, stream>>>(t, slots, y, r0, r1, out);
}

}  // namespace edo::cuda
