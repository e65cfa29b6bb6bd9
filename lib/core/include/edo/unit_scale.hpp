// SPDX-License-Identifier: Apache-2.0
// One rule for searches and fits that square values in float: a table whose
// largest magnitude lies far from 1 (below 2^-32, or from 2^32) is worked on
// times the power of two that brings it near 1. Multiplying by a power of two
// is exact (bar subnormal results), so nothing changes at sane scales and the
// results scale back exactly.
#pragma once

#include <cmath>

namespace edo {

// The exponent to multiply by (std::ldexp(v, shift)); 0 when `peak` (the
// largest finite magnitude) is 0 or already near 1. An exponent, not a
// factor: 2^149, for a subnormal peak, is no float.
inline int unit_scale_shift(float peak) {
  constexpr float kHigh = 4294967296.0f, kLow = 1.0f / 4294967296.0f;
  if (!(peak > 0.0f) || (peak >= kLow && peak < kHigh)) return 0;
  return -std::ilogb(peak);
}

}  // namespace edo
