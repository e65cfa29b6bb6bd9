// The MSE search of int6 to int2 (math::affine_params_search) for eight
// groups at once, one group a SIMD lane, on CPUs with AVX2 and F16C.
#pragma once

#include <edo/codec_math.hpp>

#include <cstddef>
#include <cstdint>

namespace edo::detail {

// Whether search_eight_groups exists in this build.
bool have_lane_search();

// The parameters math::affine_params_search gives each of eight groups of
// n values (n >= 1): group l's value i at xt[i * 8 + l], its range
// [lo[l], hi[l]]. Every lane follows the reference walk's decisions with the
// reference's floats, so out[l] is its answer bit for bit; lanes whose walk
// ends early idle until the others end. Returns false (out unset) when a
// candidate's scale is subnormal (the lifted inverse), which the caller
// then searches group by group.
bool search_eight_groups(const float* xt, size_t n, const float* lo, const float* hi, uint32_t qmax, bool half,
                         math::AffineParams* out);

}  // namespace edo::detail
