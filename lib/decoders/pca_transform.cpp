// SPDX-License-Identifier: Apache-2.0
// Projection onto a PCA basis and reconstruction from it (fixed-order fma
// chains, CPU or GPU): what encoding and decoding a pca tier need, with no
// BLAS or LAPACK, so the reader library can decode pca tiers. Fitting the
// basis lives in pca.cpp.
#include <edo/codec_math.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pca_transform.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/pca.cuh>
#endif

#include <algorithm>
#include <cmath>

namespace edo {

namespace {

enum class Launch { project, reconstruct };

// Uploads the model and n rows of `in_width` floats, runs one kernel, and
// downloads n rows of `out_width` floats.
void run_on_gpu(const PcaModel& m, const float* in, size_t n, size_t in_width, float* out, size_t out_width,
                Launch which) {
#ifdef EDO_HAVE_CUDA
  DeviceBuffer din(n * in_width * sizeof(float)), dmean(m.dim * sizeof(float)), dcomp(m.k * m.dim * sizeof(float)),
      dout(n * out_width * sizeof(float));
  din.upload(in, din.bytes());
  dmean.upload(m.mean.data(), dmean.bytes());
  dcomp.upload(m.components.data(), dcomp.bytes());
  if (which == Launch::project) {
    cuda::pca_project(din.as<float>(), n, dmean.as<float>(), dcomp.as<float>(), m.dim, m.k, dout.as<float>());
  } else {
    cuda::pca_reconstruct(din.as<float>(), n, dmean.as<float>(), dcomp.as<float>(), m.dim, m.k, dout.as<float>());
  }
  check_cuda_launch(which == Launch::project ? "pca_project" : "pca_reconstruct");
  dout.download(out, dout.bytes());
#else
  (void)m, (void)in, (void)n, (void)in_width, (void)out, (void)out_width, (void)which;
  require_device(Device::cuda);
#endif
}

}  // namespace

void pca_project(const PcaModel& m, const float* x, size_t n, float* y, Device device, Impl impl) {
  const size_t dim = m.dim, k = m.k;
  if (n == 0) return;
  if (device == Device::cuda) return run_on_gpu(m, x, n, dim, y, k, Launch::project);
  if (impl == Impl::reference) {
    for (size_t r = 0; r < n; ++r) {
      for (size_t i = 0; i < k; ++i) {
        y[r * k + i] = math::pca_project_one(x + r * dim, m.mean.data(), m.components.data() + i * dim, dim);
      }
    }
    return;
  }
  // Transposed components let the inner loop run across outputs (vectorised)
  // while each output still sums over j in order, as the reference does.
  std::vector<float> ct(dim * k);
  for (size_t i = 0; i < k; ++i) {
    for (size_t j = 0; j < dim; ++j) ct[j * k + i] = m.components[i * dim + j];
  }
  const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim * k))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + static_cast<size_t>(r) * dim;
    float* yr = y + static_cast<size_t>(r) * k;
    std::fill(yr, yr + k, 0.0f);
    for (size_t j = 0; j < dim; ++j) {
      const float xc = xr[j] - m.mean[j];
      const float* cj = ct.data() + j * k;
      for (size_t i = 0; i < k; ++i) yr[i] = fmaf(xc, cj[i], yr[i]);
    }
  }
}

void pca_reconstruct(const PcaModel& m, const float* y, size_t n, float* x, Device device, Impl impl) {
  const size_t dim = m.dim, k = m.k;
  if (n == 0) return;
  if (device == Device::cuda) return run_on_gpu(m, y, n, k, x, dim, Launch::reconstruct);
  if (impl == Impl::reference) {
    for (size_t r = 0; r < n; ++r) {
      for (size_t j = 0; j < dim; ++j) {
        x[r * dim + j] = math::pca_reconstruct_one(y + r * k, m.components.data(), k, dim, j, m.mean[j]);
      }
    }
    return;
  }
  const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim * k))
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y + static_cast<size_t>(r) * k;
    float* xr = x + static_cast<size_t>(r) * dim;
    std::fill(xr, xr + dim, 0.0f);
    for (size_t i = 0; i < k; ++i) {
      const float yi = yr[i];
      const float* ci = m.components.data() + i * dim;
      for (size_t j = 0; j < dim; ++j) xr[j] = fmaf(yi, ci[j], xr[j]);
    }
    for (size_t j = 0; j < dim; ++j) xr[j] += m.mean[j];
  }
}

}  // namespace edo
