// SPDX-License-Identifier: Apache-2.0
// A fitted PCA basis and the two transforms a reader needs (the pca:K and rot
// stages decode through pca_reconstruct). Fitting is edo/pca.hpp's, in the
// training library.
#pragma once

#include <edo/codec.hpp>
#include <edo/device.hpp>

#include <cstddef>
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

// y (n x k) = (x - mean) * components^T, summed in a fixed order: every
// implementation and device gives the same bits. Host pointers on any device.
void pca_project(const PcaModel& m, const float* x, size_t n, float* y, Device device = Device::cpu,
                 Impl impl = Impl::fast);
// x (n x dim) = y * components + mean, with the same guarantees.
void pca_reconstruct(const PcaModel& m, const float* y, size_t n, float* x, Device device = Device::cpu,
                     Impl impl = Impl::fast);

}  // namespace edo
