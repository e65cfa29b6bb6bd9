// SPDX-License-Identifier: Apache-2.0
// Host launchers of the PCA kernels. Device pointers; components are
// k x dim row-major. Asynchronous on `stream`; the caller checks launch errors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace edo::cuda {

void pca_project(const float* x, size_t n, const float* mean, const float* components, size_t dim, size_t k, float* y,
                 cudaStream_t stream = 0);
void pca_reconstruct(const float* y, size_t n, const float* mean, const float* components, size_t dim, size_t k,
                     float* x, cudaStream_t stream = 0);
// cov[i * dim + j] += sum over rows r of c[r * dim + i] * c[r * dim + j], for
// i <= j (the upper triangle of a row-major dim x dim matrix; the lower one
// is left alone): what cblas_dsyrk(RowMajor, Upper, Trans) adds, with each
// value summed in row order.
void syrk_upper_accumulate(const double* c, size_t n, size_t dim, double* cov, cudaStream_t stream = 0);

}  // namespace edo::cuda
