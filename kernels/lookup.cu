// SPDX-License-Identifier: Apache-2.0
// The reader's GPU lookup: gathers one thread per output value, grid-stride;
// pooling straight from code rows one warp a bag.
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

// One warp a bag, each lane kLaneColumns of every sweep of 32 *
// kLaneColumns columns: the sums stay in registers across the bag's rows,
// and each row's values are decoded where they are added.
constexpr uint32_t kLaneColumns = 4;
constexpr uint32_t kWarp = 32;

// Bag rows [begin, end) of the window into o (its dim sums), lane `lane` of its warp.
__device__ void pool_bag_codes(PoolMode mode, const DeviceCodeTier* __restrict__ tiers,
                               const uint32_t* __restrict__ tier, const uint64_t* __restrict__ local, uint64_t begin,
                               uint64_t end, bool first, uint64_t count, const float* __restrict__ weights,
                               uint32_t dim, uint32_t lane, float* __restrict__ o) {
  for (uint32_t sweep = 0; sweep < dim; sweep += kWarp * kLaneColumns) {
    float acc[kLaneColumns];
#pragma unroll
    for (uint32_t c = 0; c < kLaneColumns; ++c) {
      const uint32_t j = sweep + c * kWarp + lane;
      acc[c] = first || j >= dim ? 0.0f : o[j];
    }
    for (uint64_t r = begin; r < end; ++r) {
      const DeviceCodeTier t = tiers[tier[r]];
      const uint8_t* code = t.codes + local[r] * t.layout.code_size;
      const bool take = mode == PoolMode::max && first && r == begin;
      const float w = weights ? weights[r] : 0.0f;
#pragma unroll
      for (uint32_t c = 0; c < kLaneColumns; ++c) {
        const uint32_t j = sweep + c * kWarp + lane;
        if (j >= dim) continue;
        const float v = math::decode_value(t.layout, code, j);
        if (take)
          acc[c] = v;
        else if (mode == PoolMode::max)
          acc[c] = math::pool_max(acc[c], v);
        else
          acc[c] = weights ? math::pool_weighted_sum(acc[c], w, v) : math::pool_sum(acc[c], v);
      }
    }
#pragma unroll
    for (uint32_t c = 0; c < kLaneColumns; ++c) {
      const uint32_t j = sweep + c * kWarp + lane;
      if (j >= dim) continue;
      o[j] = mode == PoolMode::mean && count > 0 ? acc[c] * math::pool_mean_factor(count) : acc[c];
    }
  }
}

__global__ void pool_codes_kernel(PoolMode mode, const DeviceCodeTier* __restrict__ tiers,
                                  const uint32_t* __restrict__ tier, const uint64_t* __restrict__ local,
                                  const uint64_t* __restrict__ begin, const uint64_t* __restrict__ end,
                                  const uint8_t* __restrict__ first, const uint64_t* __restrict__ count,
                                  const float* __restrict__ weights, size_t bags, uint32_t dim,
                                  float* __restrict__ out) {
  const uint32_t lane = threadIdx.x % kWarp;
  const size_t warps = size_t{gridDim.x} * blockDim.x / kWarp;
  for (size_t b = (blockIdx.x * size_t{blockDim.x} + threadIdx.x) / kWarp; b < bags; b += warps) {
    pool_bag_codes(mode, tiers, tier, local, begin[b], end[b], first[b], count[b], weights, dim, lane, out + b * dim);
  }
}

}  // namespace

void pool_codes(PoolMode mode, const DeviceCodeTier* tiers, const uint32_t* tier, const uint64_t* local,
                const uint64_t* begin, const uint64_t* end, const uint8_t* first, const uint64_t* count,
                const float* weights, size_t bags, uint32_t dim, float* out, cudaStream_t stream) {
  if (bags == 0 || dim == 0) return;
  pool_codes_kernel<<<grid_blocks(bags * kWarp), kThreads, 0, stream>>>(mode, tiers, tier, local, begin, end, first,
                                                                        count, weights, bags, dim, out);
}

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
