// SPDX-License-Identifier: Apache-2.0
// Host launcher of the lossless tier decode (lossless.hpp, docs/FORMAT.md
// 9.10). Pointers are device memory: non-owning views of slices of a tier's
// sections and of the host's decoding tables. The launch is asynchronous on
// `stream`; the caller checks for launch errors.
#pragma once

#include <edo/lossless.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// Consecutive rows of a lossless tier: row k's code bytes are
// [spans[2k], spans[2k+1]) of `codes` (offsets the host has checked), its raw
// parts at raw + k * dim * lossless_raw_bytes(values), its segment's table
// tables + table_of[k] * 2^11 entries (table_of[k] < 0: a byte a symbol).
struct LosslessRows {
  LosslessValues values = LosslessValues::f32;
  uint64_t dim = 0;
  const uint8_t* codes = nullptr;
  const uint64_t* spans = nullptr;
  const uint8_t* raw = nullptr;
  const uint16_t* tables = nullptr;
  const int32_t* table_of = nullptr;
};

// Rows [0, rows) of `s` into out (rows * dim floats), one thread a row, by
// lossless_decode_row(): bit-identical to the CPU. The lowest row that does
// not decode goes to *bad_row (atomicMin: the caller sets it to ~0 first).
void decode_lossless(const LosslessRows& s, size_t rows, float* out, unsigned long long* bad_row,
                     cudaStream_t stream = 0);

}  // namespace edo::cuda
