// SPDX-License-Identifier: Apache-2.0
// The pooling kernels for AVX2, FMA and F16C (CpuPath::avx2), 8 floats a
// register; built with those instruction sets whatever the build's -march
// (CMakeLists.txt), run only where cpu_path() allows.
#include "pool_kernels.hpp"

#include <immintrin.h>

#include <cstring>

namespace edo::detail {
namespace {

struct Lanes {
  using V = __m256;
  static constexpr uint32_t kWidth = 8;
  static constexpr bool kNibblePairs = false;  // no decode_int4_pair
  static void decode_int4_pair(const PoolRowFormat&, const uint8_t*, uint32_t, float, float, float, float, V&, V&) {}
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V set1(float v) { return _mm256_set1_ps(v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm256_max_ps(a, b); }

  // Values [j, j + 8) of a code row (j a multiple of 8, in one group).
  template <PoolValues K>
  static V decode(const PoolRowFormat& f, const uint8_t* code, uint32_t j, float s, float o) {
    const uint8_t* p = code + f.header_bytes;
    if constexpr (K == PoolValues::f32) return _mm256_loadu_ps(reinterpret_cast<const float*>(p + 4 * size_t{j}));
    if constexpr (K == PoolValues::f16)
      return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * size_t{j})));
    if constexpr (K == PoolValues::bf16) {
      const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * size_t{j}));
      return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(b), 16));
    }
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + j));
    if constexpr (K == PoolValues::fp8)
      return _mm256_mul_ps(_mm256_i32gather_ps(f.fp8_values, _mm256_cvtepu8_epi32(bytes), 4), _mm256_set1_ps(s));
    if constexpr (K == PoolValues::affine8)
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(s), _mm256_set1_ps(o));
    // affine4: four bytes, eight nibbles, low nibble first.
    uint32_t word;
    std::memcpy(&word, p + j / 2, sizeof word);
    const __m128i b = _mm_cvtsi32_si128(static_cast<int>(word));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i q = _mm_unpacklo_epi8(_mm_and_si128(b, nibble), _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), _mm256_set1_ps(s), _mm256_set1_ps(o));
  }
};

#include "pool_kernels_simd.inc"

}  // namespace

const PoolKernels kPoolKernelsAvx2 = {CpuPath::avx2, simd_scalar, simd_fold, simd_decode};

}  // namespace edo::detail
