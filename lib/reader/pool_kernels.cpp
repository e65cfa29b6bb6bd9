// SPDX-License-Identifier: Apache-2.0
// The portable pooling kernels (CpuPath::portable: plain C++, the
// reference's per-value functions) and the choice of a kernel table by
// CPU path.
#include "pool_kernels.hpp"

#include <edo/codec_math.hpp>
#include <edo/float16.hpp>
#include <edo/float8.hpp>

#include <array>
#include <cstring>

namespace edo::detail {
namespace {

// The layout the format was made from (pool_row_format), for the codecs'
// own per-value decode.
math::ScalarLayout layout_of(const PoolRowFormat& f) {
  return {static_cast<math::ScalarKind>(f.scalar_kind),
          f.dim,
          f.group,
          f.groups,
          f.bits,
          f.header_bytes,
          f.code_size,
          f.half_params};
}

// As the SIMD paths' prefetch_wide_row (pool_kernels_simd.inc, which says
// why it is written so): every line of the row.
void prefetch_row(const uint8_t* p, uint32_t code_size) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  __builtin_prefetch(reinterpret_cast<const void*>(at), 0, 2);
  if (code_size > 64) __builtin_prefetch(reinterpret_cast<const void*>(at + 64), 0, 2);
  if (code_size > 128) __builtin_prefetch(reinterpret_cast<const void*>(at + 128), 0, 2);
  if (code_size > 192) __builtin_prefetch(reinterpret_cast<const void*>(at + 192), 0, 2);
  __builtin_prefetch(reinterpret_cast<const void*>(at + code_size - 1), 0, 2);
  for (uint32_t off = 256; off + 1 < code_size; off += 64) {
#if defined(__x86_64__)
    asm volatile("prefetcht1 %0" : : "m"(*reinterpret_cast<const char*>(at + off)));
#else
    __builtin_prefetch(reinterpret_cast<const void*>(at + off), 0, 2);
#endif
  }
}

float apply(PoolMode mode, float acc, float v, const float* weight) {
  if (mode == PoolMode::max) return math::pool_max(acc, v);
  return weight ? math::pool_weighted_sum(acc, *weight, v) : math::pool_sum(acc, v);
}

// Each value by math::decode_value, the codecs' own reference decode.
bool portable_scalar(const PoolRowFormat& f, const PoolRun& run, PoolMode mode, bool first, float* acc) {
  const math::ScalarLayout L = layout_of(f);
  const size_t ahead = pool_prefetch_rows(run.prefetch_bytes);
  for (size_t k = 0; k < run.n; ++k) {
    const uint8_t* code = run.rows[k];
    if (k + ahead < run.n + run.ahead)
      prefetch_row(run.rows[k + ahead], run.row_bytes ? run.row_bytes[k + ahead] : run.prefetch_bytes);
    const float* w = run.weights ? run.weights + k : nullptr;
    const bool copy = mode == PoolMode::max && first && k == 0;
    for (uint32_t j = 0; j < f.dim; ++j) {
      const float v = math::decode_value(L, code, j);
      acc[j] = copy ? v : apply(mode, acc[j], v, w);
    }
  }
  return true;
}

// Also the reference's fold (Reader::lookup_bags_reference): decoded rows
// value by value with pool_math.hpp's operations.
void portable_fold(PoolMode mode, const float* rows, size_t n, const float* weights, size_t dim, bool first,
                   float* acc) {
  for (size_t k = 0; k < n; ++k) {
    const float* row = rows + k * dim;
    if (mode == PoolMode::max && first && k == 0) {
      std::memcpy(acc, row, dim * sizeof(float));
      continue;
    }
    const float* w = weights ? weights + k : nullptr;
    for (size_t j = 0; j < dim; ++j) acc[j] = apply(mode, acc[j], row[j], w);
  }
}

bool portable_decode(const PoolRowFormat& f, const PoolRun& run, const uint64_t* dst, float* out) {
  const math::ScalarLayout L = layout_of(f);
  const size_t ahead = pool_prefetch_rows(run.prefetch_bytes);
  for (size_t k = 0; k < run.n; ++k) {
    if (k + ahead < run.n + run.ahead)
      prefetch_row(run.rows[k + ahead], run.row_bytes ? run.row_bytes[k + ahead] : run.prefetch_bytes);
    float* row = out + dst[k] * f.dim;
    for (uint32_t j = 0; j < f.dim; ++j) row[j] = math::decode_value(L, run.rows[k], j);
  }
  return true;
}

#include "pool_kernels_pq.inc"

}  // namespace

const PoolKernels kPoolKernelsPortable = {CpuPath::portable, portable_scalar, portable_fold, portable_decode, pq_pool};

void prefetch_code_row(const uint8_t* row, uint32_t bytes) { prefetch_row(row, bytes); }

const PoolKernels& pool_kernels(CpuPath path) {
  switch (path) {
    case CpuPath::avx512:
      return kPoolKernelsAvx512;
    case CpuPath::avx2:
      return kPoolKernelsAvx2;
    case CpuPath::portable:
      break;
  }
  return kPoolKernelsPortable;
}

const float* fp8_value_table(bool e5m2) {
  static const auto tables = [] {
    std::array<std::array<float, 256>, 2> t{};
    for (int c = 0; c < 256; ++c) {
      t[0][c] = math::fp8_to_float(static_cast<uint8_t>(c), math::Fp8Format::e4m3);
      t[1][c] = math::fp8_to_float(static_cast<uint8_t>(c), math::Fp8Format::e5m2);
    }
    return t;
  }();
  return tables[e5m2 ? 1 : 0].data();
}

PoolRowFormat pool_row_format(const math::ScalarLayout& L) {
  // By the kind's family and width (math::scalar_kind_traits): a new
  // integer width needs nothing here.
  PoolRowFormat f{};
  switch (math::scalar_kind_traits(L.kind).family) {
    case math::ScalarFamily::plain:
      f.values = L.kind == math::ScalarKind::f32   ? PoolValues::f32
                 : L.kind == math::ScalarKind::f16 ? PoolValues::f16
                                                   : PoolValues::bf16;
      break;
    case math::ScalarFamily::fp8:
      f.values = PoolValues::fp8;
      f.fp8_e5m2 = math::fp8_format(L.kind) == math::Fp8Format::e5m2;
      f.fp8_values = fp8_value_table(f.fp8_e5m2);
      break;
    case math::ScalarFamily::affine:
      f.values = L.bits == 8 ? PoolValues::affine8 : L.bits == 4 ? PoolValues::affine4 : PoolValues::affine;
      break;
    case math::ScalarFamily::sign:
      f.values = PoolValues::sign;
      break;
  }
  f.scalar_kind = static_cast<uint8_t>(L.kind);
  f.bits = L.bits;
  f.dim = L.dim;
  f.group = L.group;
  f.groups = L.groups;
  f.header_bytes = L.header_bytes;
  f.code_size = L.code_size;
  f.half_params = L.half_params;
  return f;
}

}  // namespace edo::detail
