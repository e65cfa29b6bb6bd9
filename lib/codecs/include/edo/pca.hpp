// SPDX-License-Identifier: Apache-2.0
// Principal component analysis: fit on a seeded row sample, project to K
// dimensions and back. Used by the pca:K codec stage and by edo-profile's
// spectrum report.
#pragma once

#include <edo/codec.hpp>
#include <edo/pca_transform.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace edo {

// The one covariance and eigen-decomposition routine (fit_pca and
// edo-profile's spectrum both use it).
struct CovarianceEigen {
  std::vector<double> mean;  // dim
  // Eigenvalues of the covariance (the centred rows' A^T A divided by the
  // number of rows), largest first; rounding's small negatives clamped to 0.
  std::vector<double> values;
  // With `vectors`: dim x dim, row i the unit eigenvector of values[i]
  // (LAPACK's sign); otherwise empty.
  std::vector<double> vectors;
};

// Mean and covariance of rows `rows` of x (n rows of dim floats; every row,
// in order, when `rows` is empty), accumulated in double over blocks of
// 16 MiB, then diagonalised on the CPU with LAPACK (dsyevd). The covariance
// is summed by BLAS (dsyrk) on the CPU, or by a kernel on a GPU with device
// cuda (an error without one): its eigenvalues agree with the CPU's to about
// 1e-12 of the largest (summation order only), and a GPU run repeats itself
// bit for bit. Throws when there are no rows.
CovarianceEigen covariance_eigen(const float* x, size_t n, size_t dim, std::span<const size_t> rows, bool vectors,
                                 Device device = Device::cpu);

// Rows sampled for the fit when more are given (a seeded choice).
inline constexpr size_t kPcaMaxSample = 65536;

// Fits mean and the top-k principal directions of n rows of x (dim floats
// each) on at most `max_sample` rows chosen with `seed`, by covariance_eigen
// on the CPU whatever the codec's device (the model is stored in files).
// Each direction's largest-magnitude component (first on ties) is made
// positive, so the result is deterministic. Throws on n == 0 or k > dim.
PcaModel fit_pca(const float* x, size_t n, size_t dim, size_t k, uint64_t seed, size_t max_sample = kPcaMaxSample);

// The rot stage's model: the mean of the n rows (summed in double, in row
// order) and a dim x dim orthonormal basis drawn from `seed`: uniform
// entries in [-1, 1) from edo's Rng, orthonormalised by classical
// Gram-Schmidt run twice per row, in double, each dot product in a fixed
// order, so the basis is the same on every platform and thread count.
// Costs about 4 dim^3 flops (a second on two cores at dim 1024). `variance`
// is left empty. Throws on n == 0.
PcaModel fit_rotation(const float* x, size_t n, size_t dim, uint64_t seed);

// Fewest leading directions whose variance reaches `fraction` of the total.
size_t pca_dims_for_variance(const std::vector<double>& variance, double fraction);

}  // namespace edo
