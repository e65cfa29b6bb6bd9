// SPDX-License-Identifier: Apache-2.0
// Host launchers of the reader's lookup kernels. Pointers are device memory;
// launches are asynchronous on `stream`, the caller checks launch errors.
#pragma once

#include <edo/codec_math.hpp>
#include <edo/pool_math.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// Gather + decode in one pass: out[dst[i] * L.dim + j] is value j of code row
// index[i] of `codes`, decoded by math::decode_value (bit-exact with the CPU).
void gather_decode_scalar(const math::ScalarLayout& L, const uint8_t* codes, const uint64_t* index, const uint64_t* dst,
                          size_t n, float* out, cudaStream_t stream = 0);
// out[dst[i] * dim + j] = rows[i * dim + j]: rows decoded elsewhere, copied in.
void scatter_rows(const float* rows, const uint64_t* dst, size_t n, size_t dim, float* out, cudaStream_t stream = 0);
// Pooling a window of decoded rows (Reader::lookup_bags_device): bag b of
// `bags` folds rows [begin[b], end[b]) of `rows` (dim wide; times weights[r]
// when weights is not null, sum only) into out + b * dim, in row order, by
// the functions of pool_math.hpp (so as the CPU does); `first[b]` is nonzero
// when the bag's first row is among them (the fold starts from zero, so an
// empty bag pools to zeros), zero when it continues one an earlier window
// began (from what `out` holds). With mode mean, a bag whose last row is in the
// window (count[b] > 0: its rows in all) is then scaled by the mean's factor.
void pool_rows(PoolMode mode, const float* rows, const uint64_t* begin, const uint64_t* end, const uint8_t* first,
               const uint64_t* count, const float* weights, size_t bags, size_t dim, float* out,
               cudaStream_t stream = 0);
// A tier whose code rows lie in device memory (a scalar codec's), as the
// fused pooling kernel reads it; codes null for a tier that has none there.
struct DeviceCodeTier {
  math::ScalarLayout layout;
  const uint8_t* codes;
};
// Pooling straight from code rows (Reader::lookup_bags_device when every
// row of the window lies in a resident tier): bag b folds rows [begin[b],
// end[b]) of the window, row r being local row local[r] of tiers[tier[r]],
// each value decoded by math::decode_value into the bag's sums, which stay
// in registers (one warp a bag, a lane 4 columns of each 128). The same
// order and functions as pool_rows() on decoded rows, so the same bits;
// first, count and weights as there.
void pool_codes(PoolMode mode, const DeviceCodeTier* tiers, const uint32_t* tier, const uint64_t* local,
                const uint64_t* begin, const uint64_t* end, const uint8_t* first, const uint64_t* count,
                const float* weights, size_t bags, uint32_t dim, float* out, cudaStream_t stream = 0);
// Waits for the device and returns the first error of the launches before.
// (fmt does not build under nvcc, so lib/ turns errors into edo::Error.)
cudaError_t synchronize();

}  // namespace edo::cuda
