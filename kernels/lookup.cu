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

}  // namespace

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
