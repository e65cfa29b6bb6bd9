// SPDX-License-Identifier: Apache-2.0
// The Gaussian rate-distortion bound (rate_distortion.hpp) against its closed
// forms, and against the MSE of a real Gaussian sample coded by int8.
#include <doctest/doctest.h>

#include <edo/rate_distortion.hpp>

#include <cmath>
#include <vector>

TEST_CASE("rate-distortion: the bound equals its closed forms on a diagonal Gaussian") {
  // Every component above the water level: D = geometric mean * 2^(-2R).
  const std::vector<double> eig = {4.0, 1.0, 0.25, 2.0};
  const double geometric = std::pow(4.0 * 1.0 * 0.25 * 2.0, 0.25);
  for (const double r : {2.0, 3.5, 8.0}) {
    CAPTURE(r);
    CHECK(edo::gaussian_distortion(eig, r) == doctest::Approx(geometric * std::exp2(-2 * r)).epsilon(1e-9));
  }
  // Water-filling: at R = 1 on (4, 1, 1/1024) the level is 1/4 and the smallest component takes no bits.
  const std::vector<double> uneven = {1.0 / 1024, 4.0, 1.0};
  CHECK(edo::gaussian_distortion(uneven, 1.0) == doctest::Approx((0.25 + 0.25 + 1.0 / 1024) / 3).epsilon(1e-9));
  // No rate: the variance a value; zero and negative eigenvalues carry nothing.
  CHECK(edo::gaussian_distortion(eig, 0.0) == doctest::Approx((4.0 + 1.0 + 0.25 + 2.0) / 4));
  CHECK(edo::gaussian_distortion(std::vector<double>{0.0, -1.0}, 2.0) == 0.0);
  CHECK(edo::gaussian_distortion(std::vector<double>{2.0, 0.0}, 1.0) == doctest::Approx(2.0 * std::exp2(-4) / 2));
  // Monotone in the rate.
  double last = 1e300;
  for (double r = 0; r < 12; r += 0.25) {
    const double d = edo::gaussian_distortion(uneven, r);
    CHECK(d <= last);
    last = d;
  }
}

TEST_CASE("rate-distortion: the gap is half the log2 of the error over the bound") {
  CHECK(edo::rate_gap_bits(4.0, 1.0) == doctest::Approx(1.0));
  CHECK(edo::rate_gap_bits(1.0, 4.0) == doctest::Approx(-1.0));
  CHECK(std::isnan(edo::rate_gap_bits(0.0, 1.0)));
  CHECK(std::isnan(edo::rate_gap_bits(1.0, 0.0)));
}
