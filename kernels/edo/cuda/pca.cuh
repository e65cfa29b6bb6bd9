// Host launchers of the PCA projection kernels. Device pointers; components
// are k x dim row-major. Asynchronous on `stream`.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace edo::cuda {

void pca_project(const float* x, size_t n, const float* mean, const float* components, size_t dim, size_t k, float* y,
                 cudaStream_t stream = 0);
void pca_reconstruct(const float* y, size_t n, const float* mean, const float* components, size_t dim, size_t k,
                     float* x, cudaStream_t stream = 0);

}  // namespace edo::cuda
