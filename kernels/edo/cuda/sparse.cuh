// SPDX-License-Identifier: Apache-2.0
// Host launcher of the sparse tier decode (sparse.hpp, docs/FORMAT.md 9.3).
// Pointers are device memory: non-owning views of slices of a tier's
// sections. The launch is asynchronous on `stream`; the caller checks for
// launch errors.
#pragma once

#include <edo/sparse.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace edo::cuda {

// Consecutive rows of a sparse tier, row k's offsets at entries k and k + 1
// of `offsets`. The slice holds the tier's stored values [base, end) (base
// even): stored value j is value (and csr index) j - base of the slice.
struct SparseRows {
  SparseForm form = SparseForm::csr;
  SparseValues values_kind = SparseValues::f32;
  uint32_t dim = 0;
  uint32_t offset_bytes = 4;  // 4 (u32) or 8 (u64)
  uint32_t index_bytes = 1;   // csr: 1 (u8) or 2 (u16)
  uint32_t mask_bytes = 0;    // bitmap: sparse_mask_bytes(dim)
  uint64_t nnz = 0;           // the tier's stored values
  uint64_t base = 0, end = 0;
  const uint8_t* offsets = nullptr;  // rows + 1 entries
  const uint8_t* values = nullptr;
  const uint8_t* indices = nullptr;  // csr
  const uint8_t* masks = nullptr;    // bitmap: one mask of mask_bytes per row
  const uint8_t* params = nullptr;   // int8/int4: one (scale, offset) pair per row
};

// Rows [0, rows) of `s` into out (rows * dim floats), by sparse_value() and
// sparse_row_params(): bit-identical to the CPU. Each row is checked as the
// CPU checks it (lib/reader/sparse_tier.cpp); the lowest corrupt row goes to
// *bad_row (atomicMin: the caller sets it to ~0 first), its output unspecified.
void decode_sparse(const SparseRows& s, size_t rows, float* out, unsigned long long* bad_row, cudaStream_t stream = 0);

}  // namespace edo::cuda
