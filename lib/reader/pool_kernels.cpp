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

float value_at(const PoolRowFormat& f, const uint8_t* code, uint32_t j, math::AffineParams p) {
  const uint8_t* v = code + f.header_bytes;
  switch (f.values) {
    case PoolValues::f32:
      return math::load_f32(v + 4 * size_t{j});
    case PoolValues::f16: {
      uint16_t h;
      std::memcpy(&h, v + 2 * size_t{j}, sizeof h);
      return half_bits_to_float(h);
    }
    case PoolValues::bf16: {
      uint16_t h;
      std::memcpy(&h, v + 2 * size_t{j}, sizeof h);
      return bf16_bits_to_float(h);
    }
    case PoolValues::fp8:
      return f.fp8_values[v[j]] * p.scale;
    case PoolValues::affine8:
      return math::affine_dequantize(v[j], p);
    case PoolValues::affine4:
      return math::affine_dequantize((v[j / 2] >> (j % 2 * 4)) & 15u, p);
    case PoolValues::affine: {
      const uint32_t bit = j * f.bits;
      uint32_t word = v[bit / 8];
      if (bit % 8 + f.bits > 8) word |= static_cast<uint32_t>(v[bit / 8 + 1]) << 8;
      return math::affine_dequantize((word >> (bit % 8)) & ((1u << f.bits) - 1u), p);
    }
    case PoolValues::sign:
      return math::sign_decode((v[j / 8] >> (j % 8)) & 1u, p.scale);
  }
  return 0.0f;
}

math::AffineParams params_of(const PoolRowFormat& f, const uint8_t* code, uint32_t g) {
  if (f.values == PoolValues::fp8 || f.values == PoolValues::sign) return {math::load_f32(code), 0.0f};
  if (f.values != PoolValues::affine8 && f.values != PoolValues::affine4 && f.values != PoolValues::affine) return {};
  if (!f.half_params) return math::load_affine(code, g);
  uint16_t h[2];
  std::memcpy(h, code + 4 * g, sizeof h);
  return {half_bits_to_float(h[0]), half_bits_to_float(h[1])};
}

// As the SIMD paths' (pool_kernels_simd.inc, which says why it is written so).
void prefetch_row(const uint8_t* p, uint32_t code_size) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  __builtin_prefetch(reinterpret_cast<const void*>(at), 0, 2);
  if (code_size > 64) __builtin_prefetch(reinterpret_cast<const void*>(at + 64), 0, 2);
  if (code_size > 128) __builtin_prefetch(reinterpret_cast<const void*>(at + 128), 0, 2);
  if (code_size > 192) __builtin_prefetch(reinterpret_cast<const void*>(at + 192), 0, 2);
  __builtin_prefetch(reinterpret_cast<const void*>(at + code_size - 1), 0, 2);
}

float apply(PoolMode mode, float acc, float v, const float* weight) {
  if (mode == PoolMode::max) return math::pool_max(acc, v);
  return weight ? math::pool_weighted_sum(acc, *weight, v) : math::pool_sum(acc, v);
}

bool portable_scalar(const PoolRowFormat& f, const PoolRun& run, PoolMode mode, bool first, float* acc) {
  const uint32_t group = f.groups > 1 ? f.group : f.dim;
  const size_t ahead = pool_prefetch_rows(run.prefetch_bytes);
  for (size_t k = 0; k < run.n; ++k) {
    const uint8_t* code = run.rows[k];
    if (k + ahead < run.n + run.ahead)
      prefetch_row(run.rows[k + ahead], run.row_bytes ? run.row_bytes[k + ahead] : run.prefetch_bytes);
    const float* w = run.weights ? run.weights + k : nullptr;
    const bool copy = mode == PoolMode::max && first && k == 0;
    for (uint32_t g = 0, begin = 0; begin < f.dim; ++g, begin += group) {
      const math::AffineParams p = params_of(f, code, g);
      const uint32_t end = begin + group < f.dim ? begin + group : f.dim;
      for (uint32_t j = begin; j < end; ++j) {
        const float v = value_at(f, code, j, p);
        acc[j] = copy ? v : apply(mode, acc[j], v, w);
      }
    }
  }
  return true;
}

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
  const uint32_t group = f.groups > 1 ? f.group : f.dim;
  const size_t ahead = pool_prefetch_rows(run.prefetch_bytes);
  for (size_t k = 0; k < run.n; ++k) {
    const uint8_t* code = run.rows[k];
    if (k + ahead < run.n + run.ahead)
      prefetch_row(run.rows[k + ahead], run.row_bytes ? run.row_bytes[k + ahead] : run.prefetch_bytes);
    float* row = out + dst[k] * f.dim;
    for (uint32_t g = 0, begin = 0; begin < f.dim; ++g, begin += group) {
      const math::AffineParams p = params_of(f, code, g);
      const uint32_t end = begin + group < f.dim ? begin + group : f.dim;
      for (uint32_t j = begin; j < end; ++j) row[j] = value_at(f, code, j, p);
    }
  }
  return true;
}

}  // namespace

const PoolKernels kPoolKernelsPortable = {CpuPath::portable, portable_scalar, portable_fold, portable_decode};

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

std::optional<PoolRowFormat> pool_row_format(const math::ScalarLayout& L) {
  PoolRowFormat f{};
  switch (L.kind) {
    case math::ScalarKind::f32:
      f.values = PoolValues::f32;
      break;
    case math::ScalarKind::f16:
      f.values = PoolValues::f16;
      break;
    case math::ScalarKind::bf16:
      f.values = PoolValues::bf16;
      break;
    case math::ScalarKind::fp8_e4m3:
    case math::ScalarKind::fp8_e5m2:
      f.values = PoolValues::fp8;
      f.fp8_e5m2 = L.kind == math::ScalarKind::fp8_e5m2;
      f.fp8_values = fp8_value_table(f.fp8_e5m2);
      break;
    case math::ScalarKind::int8:
      f.values = PoolValues::affine8;
      break;
    case math::ScalarKind::int4:
      f.values = PoolValues::affine4;
      break;
    case math::ScalarKind::int6:
    case math::ScalarKind::int5:
    case math::ScalarKind::int3:
    case math::ScalarKind::int2:
      f.values = PoolValues::affine;
      break;
    case math::ScalarKind::sign:
      f.values = PoolValues::sign;
      break;
  }
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
