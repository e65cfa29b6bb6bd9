// SPDX-License-Identifier: Apache-2.0
// The Gaussian rate-distortion bound of a table (docs/EVAL.md, "Rate-distortion
// gap"): for a Gaussian source with the table's covariance, the least mean
// squared error a value any code of R bits a value can reach, by reverse
// water-filling over the covariance's eigenvalues; and a code's gap to it.
#pragma once

#include <span>

namespace edo {

// D(R): the per-value MSE bound at `bits_per_value` (R >= 0) for a source of
// these covariance eigenvalues (any order; those <= 0 carry nothing): with
// water level t, each component of variance l costs max(0, log2(l / t) / 2)
// bits and leaves min(t, l) error, t chosen so the bits average R a value.
// At R = 0 the mean eigenvalue; 0 when none is positive.
double gaussian_distortion(std::span<const double> eigenvalues, double bits_per_value);

// A code's distance from the bound in bits a value: log2(mse / bound) / 2,
// the bits a value it spends beyond what the bound needs for its error at
// high rate. Negative where the code beats the Gaussian bound (the table is
// not Gaussian: the bound holds for Gaussian sources). NaN when either is not
// positive.
double rate_gap_bits(double mse, double bound);

}  // namespace edo
