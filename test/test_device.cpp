// SPDX-License-Identifier: Apache-2.0
// Devices: the CUDA error check, the shared covariance routine, and the GPU
// paths of edo-eval's k-NN and edo-profile's PCA against the CPU. GPU tests
// have "cuda" in their names and skip when no GPU is present.
#include "test_util.hpp"

#include <edo/device.hpp>
#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/pca.hpp>
#include <edo/profile.hpp>
#include <edo/random.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda_check.hpp>
#endif

#include <cmath>
#include <cstring>
#include <numeric>

using namespace edo;
using doctest::Approx;

namespace {

// Rows with a decaying spectrum (column j scaled by 1/(1+j)), so the
// eigenvalues are distinct and the leading ones dominate.
std::vector<float> skewed_rows(uint64_t n, uint64_t dim, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n * dim);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < dim; ++j)
      v[i * dim + j] = static_cast<float>((rng.uniform() - 0.5) / (1.0 + static_cast<double>(j)) + 0.1);
  return v;
}

// Covariance by definition (two passes, double), for the reference.
std::vector<double> covariance_by_definition(const std::vector<float>& x, uint64_t n, uint64_t dim) {
  std::vector<double> mean(dim, 0.0), cov(dim * dim, 0.0);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t j = 0; j < dim; ++j) mean[j] += x[i * dim + j];
  for (double& m : mean) m /= static_cast<double>(n);
  for (uint64_t i = 0; i < n; ++i)
    for (uint64_t a = 0; a < dim; ++a)
      for (uint64_t b = 0; b < dim; ++b)
        cov[a * dim + b] += (x[i * dim + a] - mean[a]) * (x[i * dim + b] - mean[b]) / static_cast<double>(n);
  return cov;
}

}  // namespace

TEST_CASE("device: --device cuda without a GPU is an error, never a fallback") {
  CHECK(select_device("cpu") == Device::cpu);
  CHECK(select_device("auto") == (cuda_available() ? Device::cuda : Device::cpu));
  CHECK(test::error_of([] { select_device("gpu"); }).find("expected auto, cpu or cuda") != std::string::npos);
  if (!cuda_available()) {
    CHECK(test::error_of([] { select_device("cuda"); }).find("--device cuda") != std::string::npos);
    CHECK(test::error_of([] { DeviceBuffer b(16); }).find("device cuda: ") != std::string::npos);
    CHECK_THROWS_AS(check_cuda_launch("k"), Error);  // no kernel can have run
  }
}

#ifdef EDO_HAVE_CUDA
TEST_CASE("device: EDO_CUDA_TRY names the call, the CUDA error and the caller's line") {
  // Device -1 never exists, with a GPU or without one (or without a driver).
  const int line = __LINE__ + 2;
  try {
    EDO_CUDA_TRY(cudaSetDevice(-1));
    FAIL("expected edo::Error");
  } catch (const Error& e) {
    const std::string what = e.what();
    CHECK(what.rfind("cuda: cudaSetDevice failed: ", 0) == 0);
    CHECK(what.find(fmt::format("test/test_device.cpp:{})", line)) != std::string::npos);
    CHECK(std::string(e.source_file()) == __FILE__);
    CHECK(e.source_line() == line);
    CHECK(e.code() == ExitCode::runtime);
  }
  // The failure was cleared: it does not resurface as a kernel's. (Without a
  // driver every call fails, cudaGetLastError too.)
  if (cuda_available()) CHECK(cudaGetLastError() == cudaSuccess);
}
#endif

TEST_CASE("pca: covariance_eigen matches the covariance by definition") {
  const uint64_t n = 500, dim = 12;
  const auto x = skewed_rows(n, dim, 3);
  const CovarianceEigen e = covariance_eigen(x.data(), n, dim, {}, true);
  const std::vector<double> cov = covariance_by_definition(x, n, dim);
  REQUIRE(e.values.size() == dim);
  REQUIRE(e.vectors.size() == dim * dim);
  double trace = 0;
  for (uint64_t j = 0; j < dim; ++j) trace += cov[j * dim + j];
  CHECK(std::accumulate(e.values.begin(), e.values.end(), 0.0) == Approx(trace).epsilon(1e-12));
  for (uint64_t i = 0; i + 1 < dim; ++i) CHECK(e.values[i] >= e.values[i + 1]);
  // cov v = lambda v for every returned pair.
  for (uint64_t i = 0; i < dim; ++i) {
    const double* v = e.vectors.data() + i * dim;
    for (uint64_t a = 0; a < dim; ++a) {
      double cv = 0;
      for (uint64_t b = 0; b < dim; ++b) cv += cov[a * dim + b] * v[b];
      CHECK(cv == Approx(e.values[i] * v[a]).epsilon(1e-9).scale(e.values[0]));
    }
  }
  // A row subset is the same as those rows on their own.
  const std::vector<size_t> odd = {1, 3, 5, 7, 9, 11, 13};
  std::vector<float> picked;
  for (size_t r : odd)
    picked.insert(picked.end(), x.begin() + static_cast<long>(r * dim), x.begin() + static_cast<long>((r + 1) * dim));
  const CovarianceEigen sub = covariance_eigen(x.data(), n, dim, odd, false);
  const CovarianceEigen alone = covariance_eigen(picked.data(), odd.size(), dim, {}, false);
  CHECK(sub.values == alone.values);
  CHECK(sub.vectors.empty());
  CHECK(test::error_of([&] { covariance_eigen(x.data(), 0, dim, {}, false); }).find("no rows") != std::string::npos);
}

TEST_CASE("pca cuda: the GPU covariance matches the CPU's") {
  if (!cuda_available()) {
    MESSAGE("no CUDA device: GPU covariance test skipped");
    return;
  }
  for (uint64_t dim : {1u, 7u, 33u, 100u, 300u}) {
    const uint64_t n = 3000;
    const auto x = skewed_rows(n, dim, dim);
    const CovarianceEigen cpu = covariance_eigen(x.data(), n, dim, {}, true, Device::cpu);
    const CovarianceEigen gpu = covariance_eigen(x.data(), n, dim, {}, true, Device::cuda);
    CHECK(gpu.mean == cpu.mean);
    // Only the summation order differs: eigenvalues within 1e-12 of the largest.
    for (uint64_t i = 0; i < dim; ++i) CHECK(std::fabs(gpu.values[i] - cpu.values[i]) <= 1e-12 * cpu.values[0]);
    // And a GPU run repeats itself bit for bit.
    CHECK(covariance_eigen(x.data(), n, dim, {}, false, Device::cuda).values ==
          covariance_eigen(x.data(), n, dim, {}, false, Device::cuda).values);
  }
}

TEST_CASE("profile cuda: the PCA spectrum on the GPU matches the CPU") {
  if (!cuda_available()) {
    MESSAGE("no CUDA device: GPU profile test skipped");
    return;
  }
  auto t = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  ProfileOptions o;
  const TableProfile cpu = profile_table(*t, o);
  o.device = Device::cuda;
  const TableProfile gpu = profile_table(*t, o);
  REQUIRE(gpu.pca_done);
  CHECK(gpu.pca_dims_for == cpu.pca_dims_for);
  REQUIRE(gpu.pca_explained.size() == cpu.pca_explained.size());
  for (size_t i = 0; i < cpu.pca_explained.size(); ++i)
    CHECK(std::fabs(gpu.pca_explained[i] - cpu.pca_explained[i]) <= 1e-12);
  // Everything else does not touch the device.
  CHECK(gpu.norm_mean == cpu.norm_mean);
  CHECK(gpu.duplicate_rows == cpu.duplicate_rows);
}

TEST_CASE("eval cuda: evaluate() on the GPU matches the CPU") {
  if (!cuda_available()) {
    MESSAGE("no CUDA device: GPU evaluation test skipped");
    return;
  }
  // Small integers: every dot product is exact on both devices, so the
  // neighbour lists, and with them every metric, are identical.
  const uint64_t rows = 3000, dim = 24;
  Rng rng(5);
  std::vector<float> x(rows * dim), y(rows * dim);
  for (uint64_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(static_cast<int>(rng.uniform() * 9) - 4);
    y[i] = x[i] + static_cast<float>(static_cast<int>(rng.uniform() * 3) - 1);
  }
  test::TempDir dir;
  for (auto [name, data] : {std::pair{"x.npy", &x}, std::pair{"y.npy", &y}}) {
    auto w = io::create_table(dir.file(name), rows, dim);
    w->write_f32(data->data(), rows);
    w->commit();
  }
  for (Metric m : {Metric::ip, Metric::l2, Metric::cos}) {
    auto a = io::open_table(dir.file("x.npy"));
    auto b = io::open_table(dir.file("y.npy"));
    EvalOptions o;
    o.metric = m;
    o.queries = 300;
    const EvalResult cpu = evaluate(*a, *b, o);
    o.device = Device::cuda;
    const EvalResult gpu = evaluate(*a, *b, o);
    REQUIRE(gpu.metrics().size() == cpu.metrics().size());
    for (size_t i = 0; i < cpu.metrics().size(); ++i) {
      CAPTURE(cpu.metrics()[i].first);
      CHECK(gpu.metrics()[i] == cpu.metrics()[i]);
    }
  }
}
