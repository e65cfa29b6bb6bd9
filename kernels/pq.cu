// SPDX-License-Identifier: Apache-2.0
// Product-quantization kernels: grid-stride loops over the functions of
// pq_math.hpp, so each thread decides exactly as the CPU encoder does.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/pq.cuh>

namespace edo::cuda {
namespace {

// One thread per (row, sub-space), scanning every centroid of the
// sub-space; the codebook slice stays hot in L1/L2 across the rows.
__global__ void assign_kernel(math::PqGeometry g, const float* __restrict__ codebooks, const float* __restrict__ x,
                              size_t n, uint32_t* __restrict__ assign) {
  const size_t total = n * g.m;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / g.m;
    const uint32_t j = static_cast<uint32_t>(i % g.m);
    const float* xs = x + r * g.dim + math::pq_sub_begin(g, j);
    const float* cb = codebooks + static_cast<size_t>(j) * g.ksub * g.dsub;
    assign[i] = math::pq_nearest(xs, cb, g.ksub, g.dsub, math::pq_sub_width(g, j));
  }
}

// One thread per row: sub-codes share bytes, so one writer per row.
__global__ void pack_kernel(math::PqGeometry g, const uint32_t* __restrict__ assign, size_t n,
                            uint8_t* __restrict__ codes) {
  for (size_t r = blockIdx.x * size_t{blockDim.x} + threadIdx.x; r < n; r += size_t{gridDim.x} * blockDim.x) {
    uint8_t* row = codes + r * g.code_size;
    for (uint32_t b = 0; b < g.code_size; ++b) row[b] = 0;
    for (uint32_t j = 0; j < g.m; ++j) math::pq_put_code(row, j, g.nbits, assign[r * g.m + j]);
  }
}

__global__ void decode_kernel(math::PqGeometry g, const float* __restrict__ codebooks,
                              const uint8_t* __restrict__ codes, size_t n, float* __restrict__ x) {
  const size_t total = n * g.dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / g.dim;
    const uint32_t col = static_cast<uint32_t>(i % g.dim);
    const uint32_t j = math::pq_sub_of_column(g, col);
    const uint32_t c = math::pq_get_code(codes + r * g.code_size, j, g.nbits);
    x[i] = codebooks[(static_cast<size_t>(j) * g.ksub + c) * g.dsub + (col - math::pq_sub_begin(g, j))];
  }
}

}  // namespace

void pq_assign(const math::PqGeometry& g, const float* codebooks, const float* x, size_t n, uint32_t* assign,
               cudaStream_t stream) {
  if (n == 0) return;
  assign_kernel<<<grid_blocks(n * g.m), kThreads, 0, stream>>>(g, codebooks, x, n, assign);
}

void pq_pack(const math::PqGeometry& g, const uint32_t* assign, size_t n, uint8_t* codes, cudaStream_t stream) {
  if (n == 0) return;
  pack_kernel<<<grid_blocks(n), kThreads, 0, stream>>>(g, assign, n, codes);
}

void pq_decode(const math::PqGeometry& g, const float* codebooks, const uint8_t* codes, size_t n, float* x,
               cudaStream_t stream) {
  if (n == 0) return;
  decode_kernel<<<grid_blocks(n * g.dim), kThreads, 0, stream>>>(g, codebooks, codes, n, x);
}

}  // namespace edo::cuda
