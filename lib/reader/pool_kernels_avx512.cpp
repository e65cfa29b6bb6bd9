// SPDX-License-Identifier: Apache-2.0
// The pooling kernels for AVX-512 F, BW and VL (CpuPath::avx512), 16 floats
// a register; built with those instruction sets whatever the build's -march
// (CMakeLists.txt), run only where cpu_path() allows. Affine groups that a
// register of 16 would straddle go to the AVX2 kernels.
#include "pool_kernels.hpp"

#include <immintrin.h>

#include <cstring>

namespace edo::detail {
namespace {

struct Lanes {
  using V = __m512;
  static constexpr uint32_t kWidth = 16;
  static constexpr bool kNibblePairs = true;

  // int4 values [j, j + 32) (j a multiple of 32) as two registers, from one
  // load of 16 bytes: each byte widened to a lane, its low and high nibbles
  // split, then interleaved back into value order by two permutes; each
  // register takes its own group's (scale, offset). The same values and the
  // same fma as decode<affine4>, in half the instructions.
  static void decode_int4_pair(const PoolRowFormat& f, const uint8_t* code, uint32_t j, float s0, float o0, float s1,
                               float o1, V& lo, V& hi) {
    const uint8_t* p = code + f.header_bytes + j / 2;
    const __m512i bytes = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    const __m512i even = _mm512_and_si512(bytes, _mm512_set1_epi32(0x0f));  // values j, j+2, ..., j+30
    const __m512i odd = _mm512_srli_epi32(bytes, 4);                        // values j+1, j+3, ..., j+31
    const __m512i first = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i second = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    lo = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_permutex2var_epi32(even, first, odd)), _mm512_set1_ps(s0),
                         _mm512_set1_ps(o0));
    hi = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_permutex2var_epi32(even, second, odd)), _mm512_set1_ps(s1),
                         _mm512_set1_ps(o1));
  }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, V v) { _mm512_storeu_ps(p, v); }
  static V set1(float v) { return _mm512_set1_ps(v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V fmadd(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static V max(V a, V b) { return _mm512_max_ps(a, b); }

  // Values [j, j + 16) of a code row (j a multiple of 16, in one group).
  template <PoolValues K>
  static V decode(const PoolRowFormat& f, const uint8_t* code, uint32_t j, float s, float o) {
    const uint8_t* p = code + f.header_bytes;
    if constexpr (K == PoolValues::f32) return _mm512_loadu_ps(p + 4 * size_t{j});
    if constexpr (K == PoolValues::f16)
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * size_t{j})));
    if constexpr (K == PoolValues::bf16) {
      const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * size_t{j}));
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(b), 16));
    }
    if constexpr (K == PoolValues::fp8) {
      // Each code as the half of the same value (e5m2: the code is a half's
      // high byte; e4m3: its exponent and mantissa a bit lower, the half
      // 2^-8 of its value), converted exactly; NaN codes from the table.
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j));
      const __m256i w = _mm256_cvtepu8_epi16(bytes), mag = _mm256_and_si256(w, _mm256_set1_epi16(0x7f));
      __m512 v;
      __mmask16 nan;
      if (f.fp8_e5m2) {
        v = _mm512_cvtph_ps(_mm256_slli_epi16(w, 8));
        nan = _mm256_cmpgt_epi16_mask(mag, _mm256_set1_epi16(0x7c));
      } else {
        const __m256i h = _mm256_or_si256(_mm256_slli_epi16(_mm256_and_si256(w, _mm256_set1_epi16(0x80)), 8),
                                          _mm256_slli_epi16(mag, 7));
        v = _mm512_mul_ps(_mm512_cvtph_ps(h), _mm512_set1_ps(256.0f));
        nan = _mm256_cmpeq_epi16_mask(mag, _mm256_set1_epi16(0x7f));
      }
      if (nan) v = _mm512_mask_i32gather_ps(v, nan, _mm512_cvtepu8_epi32(bytes), f.fp8_values, 4);
      return _mm512_mul_ps(v, _mm512_set1_ps(s));
    }
    if constexpr (K == PoolValues::affine8) {
      const __m512i q = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j)));
      return _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(s), _mm512_set1_ps(o));
    }
    if constexpr (K == PoolValues::affine) {
      // 2 * bits bytes hold the sixteen values (j * bits is a whole byte);
      // a masked load reads nothing past them, then each lane takes its
      // value's 32-bit window (shuffle), shift and mask.
      const auto need = static_cast<__mmask16>((1u << (2 * f.bits)) - 1);
      const __m128i chunk = _mm_maskz_loadu_epi8(need, p + j * f.bits / 8);
      const PackedLanes& t = kPackedLanes[f.bits];
      const __m512i windows = _mm512_shuffle_epi8(_mm512_broadcast_i32x4(chunk), _mm512_loadu_si512(t.bytes));
      const __m512i q = _mm512_and_si512(_mm512_srlv_epi32(windows, _mm512_loadu_si512(t.shift)),
                                         _mm512_set1_epi32(static_cast<int>((1u << f.bits) - 1)));
      return _mm512_fmadd_ps(_mm512_cvtepi32_ps(q), _mm512_set1_ps(s), _mm512_set1_ps(o));
    }
    if constexpr (K == PoolValues::sign) {
      // Two bytes, sixteen bits: set bits give -scale.
      uint16_t bits;
      std::memcpy(&bits, p + j / 8, sizeof bits);
      const __m512 scale = _mm512_set1_ps(s);
      return _mm512_mask_blend_ps(static_cast<__mmask16>(bits), scale, _mm512_sub_ps(_mm512_setzero_ps(), scale));
    }
    // affine4: eight bytes, sixteen nibbles, low nibble first.
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + j / 2));
    const __m128i nibble = _mm_set1_epi8(0x0f);
    const __m128i q = _mm_unpacklo_epi8(_mm_and_si128(b, nibble), _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
    return _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(q)), _mm512_set1_ps(s), _mm512_set1_ps(o));
  }
};

#include "pool_kernels_simd.inc"

// After the SIMD kernels, whose prefetch_row it calls.
#include "pool_kernels_pq.inc"

bool avx512_scalar(const PoolRowFormat& f, const PoolRun& run, PoolMode mode, bool first, float* acc) {
  if (!registers_in_groups(f)) return kPoolKernelsAvx2.scalar(f, run, mode, first, acc);
  return simd_scalar(f, run, mode, first, acc);
}

bool avx512_decode(const PoolRowFormat& f, const PoolRun& run, const uint64_t* dst, float* out) {
  if (!registers_in_groups(f)) return kPoolKernelsAvx2.decode(f, run, dst, out);
  return simd_decode(f, run, dst, out);
}

}  // namespace

const PoolKernels kPoolKernelsAvx512 = {CpuPath::avx512, avx512_scalar, simd_fold, avx512_decode, pq_pool};

}  // namespace edo::detail
