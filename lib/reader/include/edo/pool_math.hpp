// SPDX-License-Identifier: Apache-2.0
// How a bag's rows pool, value by value: one definition for the CPU's pooled
// lookups (Reader::lookup_bags) and the GPU's pooling kernel
// (kernels/lookup.cu), so the two give the same bits for the same rows.
#pragma once

#include <edo/float16.hpp>  // EDO_HD

#include <cmath>
#include <cstdint>

namespace edo {

// How a bag of rows pools, as PyTorch's EmbeddingBag modes.
enum class PoolMode : uint8_t { sum, mean, max };

namespace math {

// Explicit fused multiply-adds and comparisons: what a compiler may contract
// or reorder differs between host and device code, these do not.
EDO_HD inline float pool_sum(float acc, float v) { return acc + v; }
EDO_HD inline float pool_weighted_sum(float acc, float weight, float v) { return fmaf(weight, v, acc); }
// A NaN row value never replaces a number (as std::max(acc, v) keeps acc).
EDO_HD inline float pool_max(float acc, float v) { return acc < v ? v : acc; }
// The factor a mean multiplies a bag's sum by (count > 0).
EDO_HD inline float pool_mean_factor(uint64_t count) { return 1.0f / static_cast<float>(count); }

}  // namespace math
}  // namespace edo
