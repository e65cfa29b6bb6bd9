#include <edo/codec_math.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pca.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/pca.cuh>
#endif

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <random>

extern "C" void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                        double* work, const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len,
                        size_t uplo_len);

namespace edo {

namespace {

// Knuth's selection sampling: `want` of `n` row indices, in increasing order,
// in O(n) time and O(want) memory.
std::vector<size_t> sample_rows(size_t n, size_t want, uint64_t seed) {
  std::vector<size_t> rows;
  rows.reserve(want);
  std::mt19937_64 rng(seed);
  for (size_t i = 0; i < n && rows.size() < want; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    if (u * static_cast<double>(n - i) < static_cast<double>(want - rows.size())) rows.push_back(i);
  }
  return rows;
}

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

PcaModel fit_pca(const float* x, size_t n, size_t dim, size_t k, uint64_t seed, size_t max_sample) {
  if (n == 0) EDO_FAIL("pca: no rows to fit on");
  if (k == 0 || k > dim) EDO_USAGE_FAIL("pca:{}: K must be from 1 to the input dimension {}", k, dim);
  if (dim > static_cast<size_t>(INT32_MAX / 2)) EDO_USAGE_FAIL("pca: dimension {} is too large", dim);
  const std::vector<size_t> rows = sample_rows(n, std::min(n, std::max<size_t>(max_sample, 1)), seed);
  const size_t s = rows.size();

  std::vector<double> mean(dim, 0.0);
  for (size_t r : rows) {
    for (size_t j = 0; j < dim; ++j) mean[j] += static_cast<double>(x[r * dim + j]);
  }
  for (double& m : mean) m /= static_cast<double>(s);

  // Covariance = sum of centred blocks' A^T A, accumulated by BLAS in double.
  std::vector<double> cov(dim * dim, 0.0);
  const size_t block = std::max<size_t>(1, (size_t{16} << 20) / (dim * sizeof(double)));
  std::vector<double> centred(std::min(block, s) * dim);
  for (size_t b = 0; b < s; b += block) {
    const size_t len = std::min(block, s - b);
    for (size_t i = 0; i < len; ++i) {
      const float* row = x + rows[b + i] * dim;
      for (size_t j = 0; j < dim; ++j) centred[i * dim + j] = static_cast<double>(row[j]) - mean[j];
    }
    cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, static_cast<int>(dim), static_cast<int>(len), 1.0,
                centred.data(), static_cast<int>(dim), 1.0, cov.data(), static_cast<int>(dim));
  }
  for (double& c : cov) c /= static_cast<double>(s);

  // Row-major upper triangle == column-major lower triangle. Eigenvectors
  // come back as columns (column-major), i.e. rows of our row-major array.
  const int nd = static_cast<int>(dim);
  std::vector<double> w(dim);
  int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0;
  dsyevd_("V", "L", &nd, cov.data(), &nd, w.data(), &work_query, &lwork, &iwork_query, &liwork, &info, 1, 1);
  if (info != 0) EDO_FAIL("pca: LAPACK dsyevd workspace query failed (info {})", info);
  lwork = static_cast<int>(work_query);
  liwork = iwork_query;
  std::vector<double> work(static_cast<size_t>(std::max(lwork, 1)));
  std::vector<int> iwork(static_cast<size_t>(std::max(liwork, 1)));
  dsyevd_("V", "L", &nd, cov.data(), &nd, w.data(), work.data(), &lwork, iwork.data(), &liwork, &info, 1, 1);
  if (info != 0) EDO_FAIL("pca: LAPACK dsyevd did not converge (info {})", info);

  PcaModel m;
  m.dim = dim;
  m.k = k;
  m.mean.resize(dim);
  for (size_t j = 0; j < dim; ++j) m.mean[j] = static_cast<float>(mean[j]);
  m.components.resize(k * dim);
  for (size_t i = 0; i < k; ++i) {
    const double* v = cov.data() + (dim - 1 - i) * dim;  // eigenvalues ascend
    size_t big = 0;
    for (size_t j = 1; j < dim; ++j) {
      if (std::fabs(v[j]) > std::fabs(v[big])) big = j;
    }
    const double sign = v[big] < 0 ? -1.0 : 1.0;
    for (size_t j = 0; j < dim; ++j) m.components[i * dim + j] = static_cast<float>(sign * v[j]);
  }
  m.variance.resize(dim);
  for (size_t i = 0; i < dim; ++i) m.variance[i] = std::max(0.0, w[dim - 1 - i]);
  return m;
}

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
