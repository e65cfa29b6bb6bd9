// SPDX-License-Identifier: Apache-2.0
// PCA kernels. Projection: one thread per output value, running the same
// ordered sum as the CPU (codec_math.hpp). Covariance: a tiled product of
// the centred rows with themselves, in double, each value summed over the
// rows in row order (so a run repeats itself bit for bit).
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

// The covariance tile: kCovTile x kCovTile values of the upper triangle per
// block, each thread kCovTile / kCovRows of one column; rows come through
// shared memory kCovTile at a time.
constexpr int kCovTile = 32;
constexpr int kCovRows = 8;  // blockDim.y
constexpr int kCovPerThread = kCovTile / kCovRows;

__global__ void syrk_upper_kernel(const double* __restrict__ c, size_t n, size_t dim, double* __restrict__ cov) {
  if (blockIdx.y > blockIdx.x) return;  // the lower triangle mirrors the upper one
  __shared__ double a[kCovTile][kCovTile + 1];
  __shared__ double b[kCovTile][kCovTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const size_t i0 = size_t{blockIdx.y} * kCovTile, j0 = size_t{blockIdx.x} * kCovTile;
  double acc[kCovPerThread] = {};
  for (size_t r0 = 0; r0 < n; r0 += kCovTile) {
    for (int rr = ty; rr < kCovTile; rr += kCovRows) {
      const size_t r = r0 + static_cast<size_t>(rr);
      a[rr][tx] = r < n && i0 + tx < dim ? c[r * dim + i0 + tx] : 0.0;
      b[rr][tx] = r < n && j0 + tx < dim ? c[r * dim + j0 + tx] : 0.0;
    }
    __syncthreads();
    for (int rr = 0; rr < kCovTile; ++rr) {
      const double bj = b[rr][tx];
      for (int q = 0; q < kCovPerThread; ++q) acc[q] = fma(a[rr][ty + kCovRows * q], bj, acc[q]);
    }
    __syncthreads();
  }
  const size_t j = j0 + static_cast<size_t>(tx);
  for (int q = 0; q < kCovPerThread; ++q) {
    const size_t i = i0 + static_cast<size_t>(ty + kCovRows * q);
    if (i <= j && j < dim) cov[i * dim + j] += acc[q];
  }
}

}  // namespace

void syrk_upper_accumulate(const double* c, size_t n, size_t dim, double* cov, cudaStream_t stream) {
  if (n == 0 || dim == 0) return;
  const unsigned tiles = static_cast<unsigned>((dim + kCovTile - 1) / kCovTile);
  syrk_upper_kernel<<<dim3(tiles, tiles), dim3(kCovTile, kCovRows), 0, stream>>>(c, n, dim, cov);
}

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
