// SPDX-License-Identifier: Apache-2.0
// The MSE search of int6 to int2 (math::affine_params_search) for eight
// groups at once, one group a SIMD lane, on CPUs with AVX2 and F16C.
#pragma once

#include <edo/codec_math.hpp>

#include <cstddef>
#include <cstdint>

namespace edo::detail {

// The parameters math::affine_params_search gives each of eight groups of
// n values (n >= 1): group l's values at values[l], its range [lo[l], hi[l]];
// `scratch` holds 8 * n floats (the groups transposed, a group a lane).
// Every lane follows the reference walk's decisions with the reference's
// floats and doubles, so out[l] is its answer bit for bit; lanes whose walk
// ends early idle until the others end. Returns false (out unset) in a
// build without AVX2 and F16C: the caller then searches group by group.
bool search_eight_groups(const float* const* values, size_t n, const float* lo, const float* hi, uint32_t qmax,
                         bool half, float* scratch, math::AffineParams* out);

// The same for sixteen groups (values[0..15], lo and hi of 16, scratch of
// 16 * n floats) in the lanes of AVX-512 registers; false (out unset) where
// affine_search_lanes() is not 16, and without AVX2 and F16C, as above.
bool search_sixteen_groups(const float* const* values, size_t n, const float* lo, const float* hi, uint32_t qmax,
                           bool half, float* scratch, math::AffineParams* out);

// How many groups a lane search takes at once on this CPU: 16 where it runs
// AVX-512F and set_affine_search_avx512 has not turned that off, else 8.
size_t affine_search_lanes();

}  // namespace edo::detail
