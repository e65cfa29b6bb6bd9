// SPDX-License-Identifier: Apache-2.0
// Profile statistics against independently computed values: numpy (figures
// below computed with numpy 1.24 in float64 from the same files) and small
// hand-made tables.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/profile.hpp>
#include <edo/rate_distortion.hpp>

#include <omp.h>

#include <cmath>
#include <limits>

using namespace edo;
using doctest::Approx;

namespace {

TableProfile profile_of(const std::string& path, ProfileOptions opt = {}) {
  auto t = io::open_table(path);
  return profile_table(*t, opt);
}

const Percentile& pct(const std::vector<Percentile>& v, double q) {
  for (const auto& p : v)
    if (p.q == q) return p;
  FAIL("missing percentile");
  return v.front();
}

}  // namespace

TEST_CASE("profile: GloVe statistics match numpy") {
  const TableProfile p = profile_of(test::shared_data("glove.6B.50d.10k.npy"));
  CHECK(p.rows == 10000);
  CHECK(p.dim == 50);
  CHECK(p.nan_count == 0);
  CHECK(p.first_nonfinite_row == -1);
  CHECK(p.min == Approx(-5.45930004).epsilon(1e-7));
  CHECK(p.max == Approx(5.13520002).epsilon(1e-7));
  CHECK(p.mean == Approx(0.00259691318975).epsilon(1e-5));
  CHECK(p.stddev == Approx(0.708777770142).epsilon(1e-6));
  CHECK(p.zero_count == 0);
  // The whole table is the sample (10000 rows), so the threshold is exactly 1% of the RMS.
  CHECK(p.sample_rows == 10000);
  CHECK(p.near_zero_threshold == Approx(0.007087825275816434).epsilon(1e-6));
  CHECK(p.near_zero_count == 4518);
  CHECK(p.norm_min == Approx(2.359267560935344).epsilon(1e-6));
  CHECK(p.norm_max == Approx(14.121561470450906).epsilon(1e-6));
  CHECK(p.norm_mean == Approx(4.9682666392106825).epsilon(1e-6));
  CHECK(pct(p.norm_percentiles, 50).value == Approx(4.9623398954620495).epsilon(1e-6));
  CHECK(pct(p.norm_percentiles, 99).value == Approx(6.577216984096859).epsilon(1e-6));
  CHECK(pct(p.value_percentiles, 50).value == Approx(-0.015774999745190144).epsilon(1e-6));
  CHECK(pct(p.value_percentiles, 0.1).value == Approx(-2.2139017891883848).epsilon(1e-6));
  CHECK(p.duplicate_rows == 0);
  REQUIRE(p.pca_done);
  REQUIRE(p.pca_dims_for.size() == 3);
  CHECK(p.pca_dims_for[0].second == 36);
  CHECK(p.pca_dims_for[1].second == 39);
  CHECK(p.pca_dims_for[2].second == 42);
  // The rate-distortion report: the bound falls with the bits; each codec run on the sample sits above it
  // (GloVe's coordinates are heavy-tailed), fp32 loses nothing, sparse specs are not run.
  REQUIRE(p.rate_bound.size() == 4);
  for (size_t i = 1; i < p.rate_bound.size(); ++i) CHECK(p.rate_bound[i].second < p.rate_bound[i - 1].second);
  for (const edo::Footprint& f : p.footprints) {
    CAPTURE(f.spec);
    if (f.spec.starts_with("csr")) {
      CHECK(std::isnan(f.mse));
    } else if (f.spec == "fp32") {
      CHECK(f.mse == 0);
    } else {
      CHECK(f.mse > 0);
      CHECK(f.bound == Approx(edo::gaussian_distortion(p.pca_variances, f.bits_per_value)));
      CHECK(f.gap_bits > 0.5);
      CHECK(f.gap_bits < 8);
    }
  }
}

TEST_CASE("profile: BIGANN uint8 statistics match numpy") {
  const TableProfile p = profile_of(test::shared_data("bigann10k_base.npy"));
  CHECK(p.dtype == "uint8");
  CHECK(p.dim == 128);
  CHECK(p.mean == Approx(25.7938851562).epsilon(1e-9));
  CHECK(p.stddev == Approx(36.8337886909).epsilon(1e-9));
  CHECK(p.zero_count == 302512);
  CHECK(p.min == 0);
  CHECK(p.max == 216);
  CHECK(p.duplicate_rows == 0);
}

TEST_CASE("profile: hand-made table with NaN, Inf, zeros and duplicates") {
  test::TempDir dir;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // 5 rows x 2: rows 0 and 3 equal, row 2 has a NaN, row 4 an Inf, row 1 is zero.
  const std::vector<float> v = {3, 4, 0, 0, nan, 1, 3, 4, inf, -2};
  auto w = io::create_table(dir.file("t.npy"), 5, 2);
  w->write_f32(v.data(), 5);
  w->commit();
  ProfileOptions opt;
  opt.near_zero = 0.5;
  const TableProfile p = profile_of(dir.file("t.npy"), opt);
  CHECK(p.nan_count == 1);
  CHECK(p.inf_count == 1);
  CHECK(p.first_nonfinite_row == 2);
  // Finite values: 3 4 0 0 1 3 4 -2
  CHECK(p.zero_count == 2);
  CHECK(p.near_zero_count == 2);
  CHECK(p.min == -2);
  CHECK(p.max == 4);
  CHECK(p.mean == Approx(13.0 / 8));
  CHECK(p.stddev == Approx(std::sqrt(55.0 / 8 - (13.0 / 8) * (13.0 / 8))));
  // Norms of the finite rows: 5, 0, 5.
  CHECK(p.norm_min == 0);
  CHECK(p.norm_max == 5);
  CHECK(p.zero_rows == 1);
  REQUIRE(p.norm_percentiles.size() == 7);  // 1 5 25 50 75 95 99 of {0, 5, 5}
  CHECK(p.norm_percentiles[0].value == Approx(0.1));
  CHECK(p.norm_percentiles[3].value == 5);
  CHECK(p.duplicate_rows == 1);
  CHECK(p.duplicate_groups == 1);
}

TEST_CASE("profile: results do not depend on thread count or block size") {
  const std::string path = test::shared_data("glove.6B.50d.10k.npy");
  ProfileOptions small;
  small.block_bytes = 50 * 4 * 333;  // blocks that do not divide the table
  small.sample_rows = 1000;
  omp_set_num_threads(1);
  const auto a = to_json(profile_of(path, small)).dump();
  omp_set_num_threads(2);
  ProfileOptions big = small;
  big.block_bytes = io::kDefaultBlockBytes;
  const auto b = to_json(profile_of(path, big)).dump();
  CHECK(a == b);
}

TEST_CASE("profile: footprints count every byte") {
  const auto f = codec_footprints(1000, 300);
  auto find = [&](const std::string& spec) {
    for (const auto& x : f)
      if (x.spec == spec) return x;
    FAIL("missing " << spec);
    return f.front();
  };
  CHECK(find("fp32").bytes == 1000 * 300 * 4);
  CHECK(find("fp16").ratio == Approx(2.0));
  CHECK(find("pq:m=16").bytes == 1000 * 16 + 256 * 300 * 4);
  // CSR at 10%: 30000 fp16 values, 2-byte column indices (dim > 256), 4-byte row pointers.
  CHECK(find("csr:density=0.1,values=fp16").bytes == 30000 * 4 + 1001 * 4);
}

TEST_CASE("profile: access skew of a Zipf frequency") {
  std::vector<double> counts(10000);
  for (size_t r = 0; r < counts.size(); ++r) counts[r] = 1.0 / static_cast<double>(r + 1);
  const AccessSkew s = access_skew(counts);
  REQUIRE(s.rows_for_share.size() == 4);
  // numpy: cumulative share of sorted 1/r reaches 50/80/90/99% at these ranks.
  CHECK(s.rows_for_share[0].second == 75);
  CHECK(s.rows_for_share[1].second == 1412);
  CHECK(s.rows_for_share[2].second == 3758);
  CHECK(s.rows_for_share[3].second == 9068);
  CHECK(s.zipf_exponent == Approx(1.0).epsilon(1e-9));
  CHECK(s.zipf_r2 == Approx(1.0).epsilon(1e-9));
  CHECK_THROWS_AS(access_skew({1.0, -1.0}), edo::Error);
}
