// SPDX-License-Identifier: Apache-2.0
// Hashed tiers: the fits against least-squares answers computed here
// densely, the naive baseline, keep-top files, and bad specs and fits.
#include "test_util.hpp"

#include <edo/hash.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cmath>

using edo::test::error_of;

namespace {

struct Fixture {
  edo::test::TempDir dir;
  uint64_t rows = 60, dim = 3;
  std::vector<float> x;
  std::vector<double> freq;
  explicit Fixture(uint64_t seed = 3) {
    edo::Rng rng(seed);
    x.resize(rows * dim);
    for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
    auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(x.data(), rows);
    w->commit();
    for (uint64_t r = 0; r < rows; ++r) freq.push_back(1.0 / static_cast<double>(r + 1));
  }
  // The file written for `spec` (one hashed tier, or a fp32 top tier and the hashed rest), decoded.
  std::vector<float> fit(const std::string& spec, bool weighted, const std::string& keep = "",
                         const edo::HashFitOptions& fit = {}) {
    auto table = edo::io::open_table(dir.file("t.npy"));
    edo::PackOptions opt;
    if (!keep.empty()) opt.tiers.push_back(edo::parse_tier_spec("top:" + keep + ":fp32"));
    opt.tiers.push_back(edo::parse_tier_spec("hashed:rest:" + spec));
    if (weighted || !keep.empty()) opt.freq = freq;
    opt.hash_fit = fit;
    opt.hash_fit.tolerance = fit.tolerance == edo::HashFitOptions{}.tolerance ? 1e-7 : fit.tolerance;
    edo::pack_to_edo(*table, dir.file("h.edo"), opt);
    const edo::Reader r = edo::Reader::open(dir.file("h.edo"));
    std::vector<float> y(rows * dim);
    r.decode_all(y.data());
    return y;
  }
};

// Rows x slots design of a linear scheme: A[i][s] = how often row i uses slot s.
std::vector<double> design(const edo::HashSpec& s, uint64_t rows, uint64_t& slots) {
  const uint64_t q_rows = edo::qr_quotient_rows(rows, s.buckets);
  slots = s.scheme == edo::HashScheme::qr ? q_rows + s.buckets : s.buckets;
  std::vector<double> a(rows * slots, 0.0);
  for (uint64_t i = 0; i < rows; ++i) {
    if (s.scheme == edo::HashScheme::qr) {
      a[i * slots + i / s.buckets] += 1;
      a[i * slots + q_rows + i % s.buckets] += 1;
    } else {
      for (uint32_t k = 0; k < s.k; ++k) a[i * slots + edo::hash_bucket(i, k, s.seed, s.buckets)] += 1;
    }
  }
  return a;
}

// The weighted least-squares reconstruction A P* (P* from the normal
// equations with a tiny ridge, by Gaussian elimination), which is unique
// even where P* is not.
std::vector<double> least_squares_fit(const std::string& spec, const Fixture& f, bool weighted) {
  const edo::HashSpec s = edo::parse_hash_spec(spec);
  uint64_t slots = 0;
  const std::vector<double> a = design(s, f.rows, slots);
  std::vector<double> m(slots * slots, 0.0), rhs(slots * f.dim, 0.0);
  for (uint64_t i = 0; i < f.rows; ++i) {
    const double w = weighted ? f.freq[i] : 1.0;
    for (uint64_t p = 0; p < slots; ++p) {
      for (uint64_t q = 0; q < slots; ++q) m[p * slots + q] += w * a[i * slots + p] * a[i * slots + q];
      for (uint64_t j = 0; j < f.dim; ++j) rhs[p * f.dim + j] += w * a[i * slots + p] * f.x[i * f.dim + j];
    }
  }
  for (uint64_t p = 0; p < slots; ++p) m[p * slots + p] += 1e-10;
  for (uint64_t c = 0; c < slots; ++c) {  // elimination with partial pivoting
    uint64_t piv = c;
    for (uint64_t r = c + 1; r < slots; ++r)
      if (std::fabs(m[r * slots + c]) > std::fabs(m[piv * slots + c])) piv = r;
    for (uint64_t k = 0; k < slots; ++k) std::swap(m[c * slots + k], m[piv * slots + k]);
    for (uint64_t j = 0; j < f.dim; ++j) std::swap(rhs[c * f.dim + j], rhs[piv * f.dim + j]);
    for (uint64_t r = 0; r < slots; ++r) {
      if (r == c) continue;
      const double g = m[r * slots + c] / m[c * slots + c];
      for (uint64_t k = 0; k < slots; ++k) m[r * slots + k] -= g * m[c * slots + k];
      for (uint64_t j = 0; j < f.dim; ++j) rhs[r * f.dim + j] -= g * rhs[c * f.dim + j];
    }
  }
  std::vector<double> y(f.rows * f.dim, 0.0);
  for (uint64_t i = 0; i < f.rows; ++i)
    for (uint64_t p = 0; p < slots; ++p)
      for (uint64_t j = 0; j < f.dim; ++j) y[i * f.dim + j] += a[i * slots + p] * rhs[p * f.dim + j] / m[p * slots + p];
  return y;
}

double weighted_error(const Fixture& f, const std::vector<float>& y, bool weighted) {
  double e = 0, xx = 0;
  for (uint64_t i = 0; i < f.rows; ++i)
    for (uint64_t j = 0; j < f.dim; ++j) {
      const double w = weighted ? f.freq[i] : 1.0, v = f.x[i * f.dim + j];
      e += w * (v - y[i * f.dim + j]) * (v - y[i * f.dim + j]);
      xx += w * v * v;
    }
  return std::sqrt(e / xx);
}

}  // namespace

TEST_CASE("hash: specs parse to their canonical form and bad ones are usage errors") {
  CHECK(edo::format_hash_spec(edo::parse_hash_spec("hash:buckets=10")) ==
        "hash:buckets=10,k=1,weights=0,fit=ls,seed=0");
  CHECK(edo::format_hash_spec(edo::parse_hash_spec("hash:buckets=7,k=3,weights=1,seed=9")) ==
        "hash:buckets=7,k=3,weights=1,fit=ls,seed=9");
  CHECK(edo::format_hash_spec(edo::parse_hash_spec("qr:buckets=4,op=mul")) == "qr:buckets=4,op=mul");
  for (const char* bad :
       {"hash", "hash:buckets=0", "hash:buckets=5,k=0", "hash:buckets=5,k=9", "hash:buckets=5,k=2,fit=none",
        "hash:buckets=5,weights=2", "qr:buckets=5,k=2", "qr:buckets=5,op=div", "hash:buckets=x",
        "hash:buckets=5,buckets=6", "hash:buckets=5,fit=none,weights=1"}) {
    CAPTURE(bad);
    CHECK(edo::test::code_of([&] { edo::parse_hash_spec(bad); }) == edo::ExitCode::usage);
  }
}

TEST_CASE("hash: FORMAT.md 9.5's test vectors") {
  CHECK(edo::splitmix64(0) == 0xe220a8397b1dcdafull);
  CHECK(edo::hash_bucket(0, 0, 0, 1000) == 55);
  CHECK(edo::hash_bucket(1, 0, 0, 1000) == 430);
  CHECK(edo::hash_bucket(12345, 1, 0, 1000) == 752);
}

TEST_CASE("hash: fits match dense weighted least squares") {
  Fixture f;
  for (const char* spec : {"hash:buckets=7", "hash:buckets=7,k=2", "hash:buckets=5,k=3,seed=4", "qr:buckets=8"}) {
    for (const bool weighted : {false, true}) {
      CAPTURE(spec);
      CAPTURE(weighted);
      const std::vector<float> got = f.fit(spec, weighted);
      const std::vector<double> want = least_squares_fit(spec, f, weighted);
      double worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
      CHECK(worst < 2e-4);
    }
  }
}

TEST_CASE("hash: per-row weights and the product form fit better than their plain forms") {
  Fixture f;
  const double plain = weighted_error(f, f.fit("hash:buckets=7,k=2", true), true);
  const double with_weights = weighted_error(f, f.fit("hash:buckets=7,k=2,weights=1", true), true);
  CHECK(with_weights < plain - 0.01);
  // A table that is exactly Q[i / B] * R[i % B] is recovered by qr op=mul.
  for (uint64_t i = 0; i < f.rows; ++i)
    for (uint64_t j = 0; j < f.dim; ++j)
      f.x[i * f.dim + j] =
          static_cast<float>(static_cast<double>(1 + i / 6 + j) * (0.5 + static_cast<double>((i % 6) * (j + 1)) / 7));
  auto w = edo::io::create_table(f.dir.file("t.npy"), f.rows, f.dim);
  w->write_f32(f.x.data(), f.rows);
  w->commit();
  CHECK(weighted_error(f, f.fit("qr:buckets=6,op=mul", false), false) < 1e-4);
}

TEST_CASE("hash: fit=none keeps each bucket's highest-id row; keep-top rows stay exact") {
  Fixture f;
  const std::vector<float> naive = f.fit("hash:buckets=9,fit=none", false);
  for (uint64_t i = 0; i < f.rows; ++i) {
    uint64_t last = i;
    for (uint64_t r = 0; r < f.rows; ++r)
      if (edo::hash_bucket(r, 0, 0, 9) == edo::hash_bucket(i, 0, 0, 9)) last = r;
    CAPTURE(i);
    CHECK(std::equal(naive.begin() + static_cast<long>(i * f.dim), naive.begin() + static_cast<long>((i + 1) * f.dim),
                     f.x.begin() + static_cast<long>(last * f.dim)));
  }
  // The top 10% by frequency (ids 0-5) keep their rows; the rest are read from the buckets by their table id.
  const std::vector<float> kept = f.fit("hash:buckets=9,fit=none", true, "rows=10%");
  for (uint64_t i = 0; i < f.rows; ++i) {
    uint64_t last = i;
    for (uint64_t r = 6; r < f.rows; ++r)
      if (edo::hash_bucket(r, 0, 0, 9) == edo::hash_bucket(i, 0, 0, 9)) last = r;
    CAPTURE(i);
    CHECK(std::equal(kept.begin() + static_cast<long>(i * f.dim), kept.begin() + static_cast<long>((i + 1) * f.dim),
                     f.x.begin() + static_cast<long>((i < 6 ? i : last) * f.dim)));
  }
}

TEST_CASE("hash: bad fits are errors, nothing written; --allow-partial writes and says so") {
  Fixture f;
  CHECK(error_of([&] { f.fit("hash:buckets=60", false); }).find("share nothing") != std::string::npos);
  CHECK(!std::filesystem::exists(f.dir.file("h.edo")));
  edo::HashFitOptions few;
  few.max_iterations = 1;
  few.tolerance = 1e-9;
  CHECK(error_of([&] { f.fit("hash:buckets=7,k=2", true, "", few); }).find("stopped at relative residual") !=
        std::string::npos);
  CHECK(!std::filesystem::exists(f.dir.file("h.edo")));
  few.allow_partial = true;
  f.fit("hash:buckets=7,k=2", true, "", few);
  const edo::io::Container c = edo::io::Container::open(f.dir.file("h.edo"));
  CHECK_FALSE(c.manifest()["tiers"][0]["fit"]["converged"].get<bool>());
  CHECK(c.manifest()["tiers"][0]["fit"]["iterations"].get<uint64_t>() == 1);
}

TEST_CASE("group: bases are the groups' weighted means; residuals add back") {
  Fixture f;
  std::vector<int64_t> labels(f.rows);
  for (uint64_t i = 0; i < f.rows; ++i) labels[i] = static_cast<int64_t>(i % 4);
  edo::HashFitOptions fit;
  fit.group_labels = &labels;
  const std::vector<float> bases = f.fit("group:labels", true, "", fit);
  for (uint64_t g = 0; g < 4; ++g)
    for (uint64_t j = 0; j < f.dim; ++j) {
      double sum = 0, mass = 0;
      for (uint64_t i = g; i < f.rows; i += 4) sum += f.freq[i] * f.x[i * f.dim + j], mass += f.freq[i];
      for (uint64_t i = g; i < f.rows; i += 4) CHECK(bases[i * f.dim + j] == doctest::Approx(sum / mass).epsilon(1e-6));
    }
  const std::vector<float> exact = f.fit("group:labels,residual=fp32", true, "", fit);
  for (size_t i = 0; i < exact.size(); ++i) CHECK(exact[i] == doctest::Approx(f.x[i]).epsilon(1e-6));
  const std::vector<float> clusters = f.fit("group:clusters=5,residual=int8", false);
  CHECK(weighted_error(f, clusters, false) < 0.02);
  labels[7] = -2;
  CHECK(error_of([&] { f.fit("group:labels", true, "", fit); }).find("negative") != std::string::npos);
  CHECK(error_of([&] { f.fit("group:labels", true); }).find("--group-labels") != std::string::npos);
  CHECK(error_of([&] { f.fit("group:clusters=61", true); }).find("at least as many rows") != std::string::npos);
}
