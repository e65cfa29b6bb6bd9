// SPDX-License-Identifier: Apache-2.0
// Scalar codec kernels: grid-stride loops over the per-group and per-unit
// functions of codec_math.hpp, so each thread computes exactly what the CPU
// reference computes for the same group or unit.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/scalar_codecs.cuh>

namespace edo::cuda {
namespace {

// One thread per (row, group): the group's range search is sequential by
// design (its sums must run in the reference's order).
__global__ void encode_params_kernel(math::ScalarLayout L, const float* __restrict__ x, size_t n,
                                     uint8_t* __restrict__ codes) {
  const size_t total = n * L.groups;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / L.groups;
    const uint32_t g = static_cast<uint32_t>(i % L.groups);
    math::encode_group_params(L, x + r * L.dim, g, codes + r * L.code_size);
  }
}

__global__ void encode_units_kernel(math::ScalarLayout L, const float* __restrict__ x, size_t n,
                                    uint8_t* __restrict__ codes) {
  const uint32_t units = math::payload_units(L);
  const size_t total = n * units;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / units;
    math::encode_unit(L, x + r * L.dim, static_cast<uint32_t>(i % units), codes + r * L.code_size);
  }
}

__global__ void decode_kernel(math::ScalarLayout L, const uint8_t* __restrict__ codes, size_t n,
                              float* __restrict__ x) {
  const size_t total = n * L.dim;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / L.dim;
    x[i] = math::decode_value(L, codes + r * L.code_size, static_cast<uint32_t>(i % L.dim));
  }
}

}  // namespace

void encode_scalar(const math::ScalarLayout& L, const float* x, size_t n, uint8_t* codes, cudaStream_t stream) {
  if (n == 0) return;
  if (L.header_bytes > 0) encode_params_kernel<<<grid_blocks(n * L.groups), kThreads, 0, stream>>>(L, x, n, codes);
  encode_units_kernel<<<grid_blocks(n * math::payload_units(L)), kThreads, 0, stream>>>(L, x, n, codes);
}

void decode_scalar(const math::ScalarLayout& L, const uint8_t* codes, size_t n, float* x, cudaStream_t stream) {
  if (n == 0) return;
  decode_kernel<<<grid_blocks(n * L.dim), kThreads, 0, stream>>>(L, codes, n, x);
}

}  // namespace edo::cuda
