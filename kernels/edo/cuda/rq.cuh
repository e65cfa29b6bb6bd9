// SPDX-License-Identifier: Apache-2.0
// Host launcher of the residual-quantizer beam-search kernel. Pointers are
// device memory; the launch is asynchronous on `stream` and the caller
// checks for launch errors.
#pragma once

#include <edo/pq_math.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// Device scratch bytes rq_encode needs when it runs `blocks` thread blocks.
size_t rq_scratch_bytes(const math::RqShape& s, uint32_t blocks);

// codes (n rows of math::rq_code_size(s) bytes) from x (n rows of s.dim
// floats) and codebooks (s.m, 1 << s.nbits, s.dim): one thread block per row
// at a time, `blocks` of them, each with its slice of `scratch`.
void rq_encode(const math::RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes, void* scratch,
               uint32_t blocks, cudaStream_t stream = 0);

}  // namespace edo::cuda
