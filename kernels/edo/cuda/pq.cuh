// SPDX-License-Identifier: Apache-2.0
// Host launchers of the product-quantization kernels. Pointers are device
// memory; launches are asynchronous on `stream` and the caller checks for
// launch errors.
#pragma once

#include <edo/pq_math.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// assign[r * g.m + j] = nearest centroid (math::pq_nearest) of row r's
// sub-space j; x is n rows of g.dim floats, codebooks (g.m, g.ksub, g.dsub).
void pq_assign(const math::PqGeometry& g, const float* codebooks, const float* x, size_t n, uint32_t* assign,
               cudaStream_t stream = 0);
// Packs assignments into n code rows of g.code_size bytes.
void pq_pack(const math::PqGeometry& g, const uint32_t* assign, size_t n, uint8_t* codes, cudaStream_t stream = 0);
// Codebook gather: n code rows -> n rows of g.dim floats.
void pq_decode(const math::PqGeometry& g, const float* codebooks, const uint8_t* codes, size_t n, float* x,
               cudaStream_t stream = 0);

}  // namespace edo::cuda
