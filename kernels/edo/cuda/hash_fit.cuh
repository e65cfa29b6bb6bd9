// SPDX-License-Identifier: Apache-2.0
// Host launchers of the hashed tier fit's product A^T F A v (edo/hash.hpp,
// lib/store/hash_builder.cpp). Pointers are device memory, non-owning;
// launches are asynchronous on `stream`, the caller checks launch errors.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// The fit's design matrix both ways: row p's terms (slot, coefficient) at
// [row_start[p], row_start[p + 1]) of row_slot/row_coef in the CPU's term
// order, and slot s's entries (row, coefficient) at [slot_start[s],
// slot_start[s + 1]) of entry_row/entry_coef in ascending row order (a slot
// appears at most once a row).
struct HashNormalTerms {
  uint64_t dim = 0;
  const uint64_t* row_start = nullptr;
  const uint64_t* row_slot = nullptr;
  const float* row_coef = nullptr;
  const float* freq = nullptr;  // one count a row
  const uint64_t* slot_start = nullptr;
  const uint64_t* entry_row = nullptr;
  const float* entry_coef = nullptr;
};

// y[(p - r0) * dim + j] = hash_normal_row(row p's terms, freq[p], v, j) for rows [r0, r1).
void hash_row_values(const HashNormalTerms& t, const float* v, uint64_t r0, uint64_t r1, float* y,
                     cudaStream_t stream = 0);
// out[s * dim + j] continues its sum with slot s's entries of rows [r0, r1)
// (hash_normal_add in row order), for every slot s < slots.
void hash_slot_sums(const HashNormalTerms& t, uint64_t slots, const float* y, uint64_t r0, uint64_t r1, float* out,
                    cudaStream_t stream = 0);

}  // namespace edo::cuda
