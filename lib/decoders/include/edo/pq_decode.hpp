// SPDX-License-Identifier: Apache-2.0
// Decoding PQ codes by their codebooks, what a reader needs of the pq family
// (encoding and training are edo/pq.hpp's, in the training library).
#pragma once

#include <edo/device.hpp>
#include <edo/pq_math.hpp>

#include <cstddef>
#include <cstdint>

namespace edo {

// n code rows -> n rows of g.dim floats (a codebook gather; exact on every device).
void pq_decode(const math::PqGeometry& g, const float* codebooks, const uint8_t* codes, size_t n, float* x,
               Device device = Device::cpu);
// One row's code into x (g.dim floats), on the CPU: what pq_decode does for each row.
void pq_decode_row(const math::PqGeometry& g, const float* codebooks, const uint8_t* code, float* x);

}  // namespace edo
