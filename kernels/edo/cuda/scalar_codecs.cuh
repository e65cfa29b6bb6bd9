// SPDX-License-Identifier: Apache-2.0
// Host launchers of the scalar codec kernels. Pointers are device memory
// (non-owning views); rows are contiguous, code rows are L.code_size bytes.
// Launches are asynchronous on `stream`; the caller checks for launch errors.
#pragma once

#include <edo/codec_math.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

void encode_scalar(const math::ScalarLayout& L, const float* x, size_t n, uint8_t* codes, cudaStream_t stream = 0);
void decode_scalar(const math::ScalarLayout& L, const uint8_t* codes, size_t n, float* x, cudaStream_t stream = 0);

}  // namespace edo::cuda
