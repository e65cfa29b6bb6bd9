// PCA projection kernels: one thread per output value, running the same
// ordered sum as the CPU (codec_math.hpp).
#include <edo/codec_math.hpp>
#include <edo/cuda/grid.cuh>
#include <edo/cuda/pca.cuh>

namespace edo::cuda {
namespace {

__global__ void project_kernel(const float* __restrict__ x, size_t n, const float* __restrict__ mean,
                               const float* __restrict__ components, size_t dim, size_t k, float* __restrict__ y) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n * k; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / k, c = i % k;
    y[i] = math::pca_project_one(x + r * dim, mean, components + c * dim, dim);
  }
}

__global__ void reconstruct_kernel(const float* __restrict__ y, size_t n, const float* __restrict__ mean,
                                   const float* __restrict__ components, size_t dim, size_t k, float* __restrict__ x) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n * dim; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / dim, j = i % dim;
    x[i] = math::pca_reconstruct_one(y + r * k, components, k, dim, j, mean[j]);
  }
}

}  // namespace

void pca_project(const float* x, size_t n, const float* mean, const float* components, size_t dim, size_t k, float* y,
                 cudaStream_t stream) {
  if (n == 0) return;
  project_kernel<<<grid_blocks(n * k), kThreads, 0, stream>>>(x, n, mean, components, dim, k, y);
}

void pca_reconstruct(const float* y, size_t n, const float* mean, const float* components, size_t dim, size_t k,
                     float* x, cudaStream_t stream) {
  if (n == 0) return;
  reconstruct_kernel<<<grid_blocks(n * dim), kThreads, 0, stream>>>(y, n, mean, components, dim, k, x);
}

}  // namespace edo::cuda
