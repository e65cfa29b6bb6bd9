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
    if constexpr (K == PoolValues::fp8) {
      // Each code as the half of the same value (e5m2: the code is a half's
      // high byte; e4m3: its exponent and mantissa a bit lower, the half
      // 2^-8 of its value), converted exactly; NaN codes from the table.
      const __m128i w = _mm_cvtepu8_epi16(bytes), mag = _mm_and_si128(w, _mm_set1_epi16(0x7f));
      __m256 v;
      __m128i nan;
      if (f.fp8_e5m2) {
        v = _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
        nan = _mm_cmpgt_epi16(mag, _mm_set1_epi16(0x7c));
      } else {
        const __m128i h =
            _mm_or_si128(_mm_slli_epi16(_mm_and_si128(w, _mm_set1_epi16(0x80)), 8), _mm_slli_epi16(mag, 7));
        v = _mm256_mul_ps(_mm256_cvtph_ps(h), _mm256_set1_ps(256.0f));
        nan = _mm_cmpeq_epi16(mag, _mm_set1_epi16(0x7f));
      }
      if (!_mm_testz_si128(nan, nan))
        v = _mm256_blendv_ps(v, _mm256_i32gather_ps(f.fp8_values, _mm256_cvtepu8_epi32(bytes), 4),
                             _mm256_castsi256_ps(_mm256_cvtepi16_epi32(nan)));
      return _mm256_mul_ps(v, _mm256_set1_ps(s));
    }
    if constexpr (K == PoolValues::affine8)
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)), _mm256_set1_ps(s), _mm256_set1_ps(o));
    if constexpr (K == PoolValues::affine) {
      // `bits` bytes hold the eight values (j * bits is a whole byte); copied
      // alone, so nothing past the row is read, then each lane takes its
      // value's 32-bit window (shuffle), shift and mask.
      uint64_t word = 0;
      std::memcpy(&word, p + j * f.bits / 8, f.bits);
      const __m256i chunk = _mm256_broadcastsi128_si256(_mm_cvtsi64_si128(static_cast<long long>(word)));
      const PackedLanes& t = kPackedLanes[f.bits];
      const __m256i windows = _mm256_shuffle_epi8(chunk, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.bytes)));
      const __m256i shifts = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.shift));
      const __m256i mask = _mm256_set1_epi32(static_cast<int>((1u << f.bits) - 1));
      const __m256i q = _mm256_and_si256(_mm256_srlv_epi32(windows, shifts), mask);
      return _mm256_fmadd_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(s), _mm256_set1_ps(o));
    }
    if constexpr (K == PoolValues::sign) {
      // Byte j / 8's bits, one a lane: set bits give -scale.
      const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
      const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(p[j / 8]), bit), bit);
      const __m256 scale = _mm256_set1_ps(s);
      return _mm256_blendv_ps(scale, _mm256_sub_ps(_mm256_setzero_ps(), scale), _mm256_castsi256_ps(set));
    }
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

// After the SIMD kernels, whose prefetch_row it calls.
#include "pool_kernels_pq.inc"

}  // namespace

const PoolKernels kPoolKernelsAvx2 = {CpuPath::avx2, simd_scalar, simd_fold, simd_decode, pq_pool};

}  // namespace edo::detail
