// SPDX-License-Identifier: Apache-2.0
// Reverse water-filling (rate_distortion.hpp): the water level found by
// bisection on its logarithm, where the rate is monotone.
#include <edo/rate_distortion.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace edo {

namespace {

// Bits a value at water level `level`, and the MSE a value it leaves.
struct WaterLevel {
  double bits, mse;
};
WaterLevel at_level(std::span<const double> eigenvalues, double level) {
  double bits = 0, mse = 0;
  for (const double l : eigenvalues) {
    if (!(l > 0)) continue;
    bits += l > level ? 0.5 * std::log2(l / level) : 0.0;
    mse += std::min(l, level);
  }
  const auto n = static_cast<double>(eigenvalues.size());
  return {bits / n, mse / n};
}

}  // namespace

double gaussian_distortion(std::span<const double> eigenvalues, double bits_per_value) {
  double largest = 0, smallest = std::numeric_limits<double>::infinity(), positive = 0;
  for (const double l : eigenvalues)
    if (l > 0) largest = std::max(largest, l), smallest = std::min(smallest, l), positive += 1;
  if (eigenvalues.empty() || !(largest > 0)) return 0.0;
  if (!(bits_per_value > 0)) return at_level(eigenvalues, largest).mse;
  // The level lies in [smallest * 2^(-2B - 1), largest], B the bits each
  // positive component takes when they share all the rate: at the low end
  // every one of them takes more.
  const double shared = bits_per_value * static_cast<double>(eigenvalues.size()) / positive;
  double lo = std::log2(smallest) - 2 * shared - 1, hi = std::log2(largest);
  for (int i = 0; i < 200 && hi - lo > 1e-13; ++i) {
    const double mid = 0.5 * (lo + hi);
    (at_level(eigenvalues, std::exp2(mid)).bits > bits_per_value ? lo : hi) = mid;
  }
  return at_level(eigenvalues, std::exp2(0.5 * (lo + hi))).mse;
}

double rate_gap_bits(double mse, double bound) {
  if (!(mse > 0) || !(bound > 0)) return std::numeric_limits<double>::quiet_NaN();
  return 0.5 * std::log2(mse / bound);
}

}  // namespace edo
