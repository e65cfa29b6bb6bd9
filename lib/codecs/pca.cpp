// SPDX-License-Identifier: Apache-2.0
#include <edo/codec_math.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pca.hpp>
#include <edo/random.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/pca.cuh>
#endif

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>

extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
                        size_t uplo_len);

namespace edo {

namespace {

// Rows per centred block: 16 MiB of doubles, so memory stays bounded however
// many rows are sampled.
size_t covariance_block_rows(size_t dim) { return std::max<size_t>(1, (size_t{16} << 20) / (dim * sizeof(double))); }

// Adds one centred block's A^T A to the upper triangle of the covariance: on
// the CPU with BLAS, on a GPU into `gpu_cov` (device memory of the same layout).
class CovarianceSum {
 public:
  CovarianceSum(size_t dim, size_t block, Device device) : dim_(dim), device_(device) {
#ifdef EDO_HAVE_CUDA
    if (device == Device::cuda) {
      gpu_cov_ = std::make_unique<DeviceBuffer>(dim * dim * sizeof(double));
      gpu_block_ = std::make_unique<DeviceBuffer>(block * dim * sizeof(double));
      const std::vector<double> zeros(dim * dim, 0.0);
      gpu_cov_->upload(zeros.data(), gpu_cov_->bytes());
    }
#else
    (void)block;
    require_device(device);
#endif
  }

  void add(const double* centred, size_t len, std::vector<double>& cov) {
#ifdef EDO_HAVE_CUDA
    if (device_ == Device::cuda) {
      gpu_block_->upload(centred, len * dim_ * sizeof(double));
      cuda::syrk_upper_accumulate(gpu_block_->as<double>(), len, dim_, gpu_cov_->as<double>());
      check_cuda_launch("syrk_upper_accumulate");
      return;
    }
#endif
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(dim_), static_cast<int>(len), 1.0, centred,
                static_cast<int>(dim_), 1.0, cov.data(), static_cast<int>(dim_));
  }

  void finish(std::vector<double>& cov) {
#ifdef EDO_HAVE_CUDA
    if (device_ == Device::cuda) gpu_cov_->download(cov.data(), gpu_cov_->bytes());
#else
    (void)cov;
#endif
  }

 private:
  size_t dim_;
  Device device_;
#ifdef EDO_HAVE_CUDA
  std::unique_ptr<DeviceBuffer> gpu_cov_, gpu_block_;
#endif
};

// Eigenvalues (ascending, LAPACK's order) of the symmetric matrix whose upper
// triangle (row-major) `a` holds; with `vectors`, `a` is overwritten by the
// eigenvectors, one per row, in the same order.
std::vector<double> symmetric_eigen(std::vector<double>& a, size_t dim, bool vectors) {
  // Row-major upper triangle == column-major lower triangle. Eigenvectors
  // come back as columns (column-major), i.e. rows of our row-major array.
  const int nd = static_cast<int>(dim);
  const char* jobz = vectors ? "V" : "N";
  std::vector<double> w(dim);
  int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0;
  dsyevd_(jobz, "L", &nd, a.data(), &nd, w.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1);
  if (info != 0) EDO_FAIL("pca: LAPACK dsyevd workspace query failed (info {})", info);
  lwork = static_cast<int>(work_query);
  liwork = iwork_query;
  std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<size_t>(std::max(liwork, 1)));
  dsyevd_(jobz, "L", &nd, a.data(), &nd, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  if (info != 0) EDO_FAIL("pca: LAPACK dsyevd did not converge (info {})", info);
  return w;
}

}  // namespace

CovarianceEigen covariance_eigen(const float* x, size_t n, size_t dim, std::span<const size_t> rows, bool vectors,
                                 Device device) {
  const size_t s = rows.empty() ? n : rows.size();
  if (s == 0) EDO_FAIL("pca: no rows to fit on");
  if (dim == 0 || dim > static_cast<size_t>(INT32_MAX / 2)) EDO_USAGE_FAIL("pca: dimension {} is out of range", dim);
  auto row_of = [&](size_t i) { return x + (rows.empty() ? i : rows[i]) * dim; };

  CovarianceEigen out;
  std::vector<double> mean(dim, 0.0);
  for (size_t i = 0; i < s; ++i) {
    const float* row = row_of(i);
    for (size_t j = 0; j < dim; ++j) mean[j] += static_cast<double>(row[j]);
  }
  for (double& m : mean) m /= static_cast<double>(s);

  // Covariance = sum of centred blocks' A^T A, accumulated in double.
  std::vector<double> cov(dim * dim, 0.0);
  const size_t block = std::min(covariance_block_rows(dim), s);
  std::vector<double> centred(block * dim);
  CovarianceSum sum(dim, block, device);
  for (size_t b = 0; b < s; b += block) {
    const size_t len = std::min(block, s - b);
    for (size_t i = 0; i < len; ++i) {
      const float* row = row_of(b + i);
      for (size_t j = 0; j < dim; ++j) centred[i * dim + j] = static_cast<double>(row[j]) - mean[j];
    }
    sum.add(centred.data(), len, cov);
  }
  sum.finish(cov);
  for (double& c : cov) c /= static_cast<double>(s);

  const std::vector<double> w = symmetric_eigen(cov, dim, vectors);
  out.values.resize(dim);
  for (size_t i = 0; i < dim; ++i) out.values[i] = std::max(0.0, w[dim - 1 - i]);  // largest first
  if (vectors) {
    for (size_t i = 0; i < dim / 2; ++i)
      std::swap_ranges(cov.begin() + static_cast<std::ptrdiff_t>(i * dim),
                       cov.begin() + static_cast<std::ptrdiff_t>((i + 1) * dim),
                       cov.begin() + static_cast<std::ptrdiff_t>((dim - 1 - i) * dim));
    out.vectors = std::move(cov);
  }
  out.mean = std::move(mean);
  return out;
}

PcaModel fit_pca(const float* x, size_t n, size_t dim, size_t k, uint64_t seed, size_t max_sample) {
  if (n == 0) EDO_FAIL("pca: no rows to fit on");
  if (k == 0 || k > dim) EDO_USAGE_FAIL("pca:{}: K must be from 1 to the input dimension {}", k, dim);
  if (dim > static_cast<size_t>(INT32_MAX / 2)) EDO_USAGE_FAIL("pca: dimension {} is too large", dim);
  // The one seeded row sampler (random.hpp): every row when n <= max_sample.
  const std::vector<uint64_t> rows = sample_indices(n, std::max<size_t>(max_sample, 1), seed);
  // On the CPU always: the model is stored, and must not depend on the device.
  const CovarianceEigen e = covariance_eigen(x, n, dim, rows, true, Device::cpu);

  PcaModel m;
  m.dim = dim;
  m.k = k;
  m.mean.resize(dim);
  for (size_t j = 0; j < dim; ++j) m.mean[j] = static_cast<float>(e.mean[j]);
  m.components.resize(k * dim);
  for (size_t i = 0; i < k; ++i) {
    const double* v = e.vectors.data() + i * dim;
    size_t big = 0;
    for (size_t j = 1; j < dim; ++j) {
      if (std::fabs(v[j]) > std::fabs(v[big])) big = j;
    }
    const double sign = v[big] < 0 ? -1.0 : 1.0;
    for (size_t j = 0; j < dim; ++j) m.components[i * dim + j] = static_cast<float>(sign * v[j]);
  }
  m.variance = e.values;
  return m;
}

PcaModel fit_rotation(const float* x, size_t n, size_t dim, uint64_t seed) {
  if (n == 0) EDO_FAIL("rot: no rows to fit on");
  if (dim == 0 || dim > static_cast<size_t>(INT32_MAX / 2)) EDO_USAGE_FAIL("rot: dimension {} is out of range", dim);
  std::vector<double> mean(dim, 0.0);
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = 0; j < dim; ++j) mean[j] += static_cast<double>(x[i * dim + j]);
  }
  // Row i of q is basis vector i. A uniform draw is full rank with
  // probability 1; a row that Gram-Schmidt leaves (numerically) empty is
  // drawn again, so the loop ends with an orthonormal basis.
  Rng rng(seed ^ 0x726f746174696f6eULL);
  std::vector<double> q(dim * dim), h(dim);
  for (size_t i = 0; i < dim; ++i) {
    double* v = q.data() + i * dim;
    for (double norm = 0.0; !(norm > 1e-6);) {
      for (size_t j = 0; j < dim; ++j) v[j] = 2.0 * rng.uniform() - 1.0;
      const double drawn = std::sqrt(std::inner_product(v, v + dim, v, 0.0));
      for (int pass = 0; pass < 2; ++pass) {
        const int64_t done = static_cast<int64_t>(i);
#pragma omp parallel for schedule(static) if (parallel_worth(i * dim))
        for (int64_t k = 0; k < done; ++k) {
          const double* b = q.data() + static_cast<size_t>(k) * dim;
          h[static_cast<size_t>(k)] = std::inner_product(b, b + dim, v, 0.0);
        }
        // v -= sum_k h[k] q_k, each column's sum over k in order, columns in parallel blocks.
        constexpr size_t kColumns = 64;
        const int64_t blocks = static_cast<int64_t>((dim + kColumns - 1) / kColumns);
#pragma omp parallel for schedule(static) if (parallel_worth(i * dim))
        for (int64_t cb = 0; cb < blocks; ++cb) {
          const size_t begin = static_cast<size_t>(cb) * kColumns, end = std::min(dim, begin + kColumns);
          for (size_t k = 0; k < i; ++k) {
            const double* b = q.data() + k * dim;
            for (size_t j = begin; j < end; ++j) v[j] -= h[k] * b[j];
          }
        }
      }
      norm = std::sqrt(std::inner_product(v, v + dim, v, 0.0)) / drawn;
      if (norm > 1e-6) {
        const double scale = 1.0 / (norm * drawn);
        for (size_t j = 0; j < dim; ++j) v[j] *= scale;
      }
    }
  }
  PcaModel m;
  m.dim = dim;
  m.k = dim;
  m.mean.resize(dim);
  for (size_t j = 0; j < dim; ++j) m.mean[j] = static_cast<float>(mean[j] / static_cast<double>(n));
  m.components.assign(q.begin(), q.end());
  return m;
}

size_t pca_dims_for_variance(const std::vector<double>& variance, double fraction) {
  double total = 0;
  for (double v : variance) total += v;
  if (!(total > 0)) return variance.empty() ? 0 : 1;
  double acc = 0;
  for (size_t i = 0; i < variance.size(); ++i) {
    acc += variance[i];
    if (acc >= fraction * total) return i + 1;
  }
  return variance.size();
}

}  // namespace edo
