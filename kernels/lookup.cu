// SPDX-License-Identifier: Apache-2.0
// The reader's GPU lookup: one thread per output value, grid-stride.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/lookup.cuh>

namespace edo::cuda {
namespace {

__global__ void gather_decode_kernel(math::ScalarLayout L, const uint8_t* __restrict__ codes,
                                     const uint64_t* __restrict__ index, const uint64_t* __restrict__ dst, size_t n,
                                     float* __restrict__ out) {
  const size_t total = n * L.dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / L.dim;
    const uint32_t j = static_cast<uint32_t>(i % L.dim);
    out[dst[r] * L.dim + j] = math::decode_value(L, codes + index[r] * L.code_size, j);
  }
}

__global__ void scatter_kernel(const float* __restrict__ rows, const uint64_t* __restrict__ dst, size_t n, size_t dim,
                               float* __restrict__ out) {
  const size_t total = n * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / dim;
    out[dst[r] * dim + i % dim] = rows[i];
  }
}

// One thread an output value: the bag's rows in order, as the CPU folds them.
__global__ void pool_kernel(PoolMode mode, const float* __restrict__ rows, const uint64_t* __restrict__ begin,
                            const uint64_t* __restrict__ end, const uint8_t* __restrict__ first,
                            const uint64_t* __restrict__ count, const float* __restrict__ weights, size_t bags,
                            size_t dim, float* __restrict__ out) {
  const size_t total = bags * dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t b = i / dim, j = i % dim;
    float acc = first[b] ? 0.0f : out[i];
    for (uint64_t r = begin[b]; r < end[b]; ++r) {
      const float v = rows[r * dim + j];
      if (mode == PoolMode::max)
        acc = first[b] && r == begin[b] ? v : math::pool_max(acc, v);
      else
        acc = weights ? math::pool_weighted_sum(acc, weights[r], v) : math::pool_sum(acc, v);
    }
    if (mode == PoolMode::mean && count[b] > 0) acc *= math::pool_mean_factor(count[b]);
    out[i] = acc;
  }
}

}  // namespace

void pool_rows(PoolMode mode, const float* rows, const uint64_t* begin, const uint64_t* end, const uint8_t* first,
               const uint64_t* count, const float* weights, size_t bags, size_t dim, float* out, cudaStream_t stream) {
  if (bags == 0 || dim == 0) return;
  pool_kernel<<<grid_blocks(bags * dim), kThreads, 0, stream>>>(mode, rows, begin, end, first, count, weights, bags,
                                                                dim, out);
}

void gather_decode_scalar(const math::ScalarLayout& L, const uint8_t* codes, const uint64_t* index, const uint64_t* dst,
                          size_t n, float* out, cudaStream_t stream) {
  if (n == 0) return;
  gather_decode_kernel<<<grid_blocks(n * L.dim), kThreads, 0, stream>>>(L, codes, index, dst, n, out);
}

void scatter_rows(const float* rows, const uint64_t* dst, size_t n, size_t dim, float* out, cudaStream_t stream) {
  if (n == 0) return;
  scatter_kernel<<<grid_blocks(n * dim), kThreads, 0, stream>>>(rows, dst, n, dim, out);
}

cudaError_t synchronize() { return cudaDeviceSynchronize(); }

}  // namespace edo::cuda
