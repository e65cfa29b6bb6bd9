// SPDX-License-Identifier: Apache-2.0
// TierView::pool for the kinds with no fused path of their own: rows decoded
// a few at a time into a buffer that stays in the L1 cache, then folded by
// the CPU path's kernel.
#include "pool_kernels.hpp"

#include <edo/tier.hpp>

#include <algorithm>
#include <vector>

namespace edo {

namespace {
constexpr size_t kBufferBytes = size_t{16} << 10;
constexpr size_t kMostRows = 64;
}  // namespace

void TierView::pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const {
  const uint64_t dim = rows.dim;
  const size_t at_once = std::clamp<size_t>(kBufferBytes / (std::max<uint64_t>(dim, 1) * sizeof(float)), 1, kMostRows);
  thread_local std::vector<float> buffer;
  thread_local std::vector<uint64_t> dst;
  buffer.resize(at_once * dim);
  if (dst.size() < at_once) {
    dst.resize(at_once);
    for (size_t k = 0; k < at_once; ++k) dst[k] = k;
  }
  const detail::PoolKernels& kernels = detail::pool_kernels(cpu_path());
  // Rows with an address (rows.codes) are prefetched as the kernels'
  // stream is: each chunk the rows as far beyond it, so that a call's
  // chunks and the calls of a stream keep as many in flight.
  for (size_t at = 0; at < rows.n; at += at_once) {
    const size_t m = std::min(at_once, rows.n - at);
    for (size_t k = at; k < at + m; ++k) detail::prefetch_stream_row(rows, k);
    gather(rows.local + at, dst.data(), m, buffer.data());
    kernels.fold(mode, buffer.data(), m, rows.weights ? rows.weights + at : nullptr, dim, first && at == 0, acc);
  }
}

namespace detail {

void prefetch_stream_row(const TierRows& rows, size_t k) {
  if (!rows.codes) return;
  const size_t at = k + pool_prefetch_rows(rows.prefetch_bytes);
  if (at < rows.n + rows.ahead)
    prefetch_code_row(rows.codes[at], rows.row_bytes ? rows.row_bytes[at] : rows.prefetch_bytes);
}

void pool_vector(const float* vector, const TierRows& rows, PoolMode mode, bool first, float* acc) {
  const PoolKernels& kernels = pool_kernels(cpu_path());
  for (size_t k = 0; k < rows.n; ++k)
    kernels.fold(mode, vector, 1, rows.weights ? rows.weights + k : nullptr, rows.dim, first && k == 0, acc);
}

}  // namespace detail
}  // namespace edo
