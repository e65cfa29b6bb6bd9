// Principal component analysis: fit on a seeded row sample, project to K
// dimensions and back. Used by the pca:K codec stage and by edo-profile's
// spectrum report.
#pragma once

#include <edo/codec.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace edo {

struct PcaModel {
  size_t dim = 0;
  size_t k = 0;
  std::vector<float> mean;        // dim
  std::vector<float> components;  // k x dim, row i = i-th principal direction (unit length)
  // Every eigenvalue of the sample covariance, largest first (dim values):
  // the variance each direction explains.
  std::vector<double> variance;
};

// Rows sampled for the fit when more are given (a seeded choice).
inline constexpr size_t kPcaMaxSample = 65536;

// Fits mean and the top-k principal directions of n rows of x (dim floats
// each) on at most `max_sample` rows chosen with `seed`. The covariance is
// formed with BLAS (dsyrk, double) and diagonalised with LAPACK (dsyevd).
// Each direction's largest-magnitude component (first on ties) is made
// positive, so the result is deterministic. Throws on n == 0 or k > dim.
PcaModel fit_pca(const float* x, size_t n, size_t dim, size_t k, uint64_t seed, size_t max_sample = kPcaMaxSample);

// y (n x k) = (x - mean) * components^T, summed in a fixed order: every
// implementation and device gives the same bits. Host pointers on any device.
void pca_project(const PcaModel& m, const float* x, size_t n, float* y, Device device = Device::cpu,
                 Impl impl = Impl::fast);
// x (n x dim) = y * components + mean, with the same guarantees.
void pca_reconstruct(const PcaModel& m, const float* y, size_t n, float* x, Device device = Device::cpu,
                     Impl impl = Impl::fast);

// Fewest leading directions whose variance reaches `fraction` of the total.
size_t pca_dims_for_variance(const std::vector<double>& variance, double fraction);

}  // namespace edo
