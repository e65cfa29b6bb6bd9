// SPDX-License-Identifier: Apache-2.0
// math::affine_params_search with a group in each lane of a SIMD register:
// eight groups in AVX2 registers, or sixteen in AVX-512 registers where the
// CPU runs AVX-512F (checked at run time). One group at a time, a search
// spends most of its time between its passes: folding sixteen sum lanes
// across a register, then the next candidates' parameters in scalar double
// arithmetic, a division each, and the walk's branches; short groups (32
// values: four steps a pass) are nearly all of that. With a group a lane,
// the passes' sums stay vertical (the reference's sixteen lanes are sixteen
// registers in turn, folded by vertical adds in the reference's tree), and
// the parameters, divisions and choices of all the walks are a few vector
// operations. The walk itself is written once, for any width, in
// affine_search_walk.inc; this file gives it each width's operations.
//
// Exactness: every lane runs the reference's float and double operations
// in the reference's order (math::affine_from_range, affine_half_params,
// affine_centred, affine_candidate, affine_code_sums and affine_moments,
// the walk and the refit), and takes
// the reference's decisions through masks; a lane whose walk or refits
// have ended keeps its state while the others go on. F16C's and AVX-512's
// conversions to fp16 round to nearest even, as float_to_half_bits does,
// and both widths round codes to nearest even (the AVX2 path by adding and
// subtracting 1.5 x 2^23, AVX-512's VRNDSCALEPS), the same for 0 to qmax.
#include "affine_search_lanes.hpp"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#endif

#include <atomic>
#include <cfloat>
#include <cmath>

namespace edo::detail {

#if defined(__AVX2__) && defined(__F16C__)
namespace {

using math::AffineParams;

// xt[i * stride + l] = src[l][i] for i < n: eight groups, a group a lane
// (the sixteen-lane search writes two such halves, stride 16). Blocks of
// 8 x 8 go through registers.
void transpose_eight(const float* const* src, size_t n, float* xt, size_t stride) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 r[8], t[8], u[8];
    for (int l = 0; l < 8; ++l) r[l] = _mm256_loadu_ps(src[l] + i);
    for (int l = 0; l < 8; l += 2) {
      t[l] = _mm256_unpacklo_ps(r[l], r[l + 1]);
      t[l + 1] = _mm256_unpackhi_ps(r[l], r[l + 1]);
    }
    for (int l = 0; l < 8; l += 4) {
      u[l] = _mm256_shuffle_ps(t[l], t[l + 2], 0x44);
      u[l + 1] = _mm256_shuffle_ps(t[l], t[l + 2], 0xee);
      u[l + 2] = _mm256_shuffle_ps(t[l + 1], t[l + 3], 0x44);
      u[l + 3] = _mm256_shuffle_ps(t[l + 1], t[l + 3], 0xee);
    }
    for (int k = 0; k < 4; ++k) {
      _mm256_storeu_ps(xt + (i + k) * stride, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
      _mm256_storeu_ps(xt + (i + k + 4) * stride, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
    }
  }
  for (; i < n; ++i)
    for (int l = 0; l < 8; ++l) xt[i * stride + l] = src[l][i];
}

// ---- eight lanes: AVX2 -------------------------------------------------------------

namespace lanes8 {

constexpr int kLanes = 8;
using F = __m256;
using Mask = unsigned;
using Stalls = __m256i;

// Eight lanes of doubles: lanes 0-3 and 4-7.
struct D {
  __m256d lo, hi;
};

F fzero() { return _mm256_setzero_ps(); }
F fset1(float v) { return _mm256_set1_ps(v); }
F fload(const float* p) { return _mm256_loadu_ps(p); }
void fstore(float* p, F v) { _mm256_storeu_ps(p, v); }
F fadd(F a, F b) { return _mm256_add_ps(a, b); }
F fmul(F a, F b) { return _mm256_mul_ps(a, b); }
F fneg(F a) { return _mm256_xor_ps(a, _mm256_set1_ps(-0.0f)); }
F fdiv(F a, F b) { return _mm256_div_ps(a, b); }
F fmin(F a, F b) { return _mm256_min_ps(a, b); }
F fmax(F a, F b) { return _mm256_max_ps(a, b); }
F ffma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
F round_code(F t) {  // round_small_uint: exact for 0 <= t < 2^22
  const F magic = _mm256_set1_ps(12582912.0f);
  return _mm256_sub_ps(_mm256_add_ps(t, magic), magic);
}
F half_round_trip(F v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

D widen(F f) { return {_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))}; }
F narrow(D d) { return _mm256_set_m128(_mm256_cvtpd_ps(d.hi), _mm256_cvtpd_ps(d.lo)); }
D splat(double v) { return {_mm256_set1_pd(v), _mm256_set1_pd(v)}; }
D sub(D a, D b) { return {_mm256_sub_pd(a.lo, b.lo), _mm256_sub_pd(a.hi, b.hi)}; }
D mul(D a, D b) { return {_mm256_mul_pd(a.lo, b.lo), _mm256_mul_pd(a.hi, b.hi)}; }
D div(D a, D b) { return {_mm256_div_pd(a.lo, b.lo), _mm256_div_pd(a.hi, b.hi)}; }
D fma(D a, D b, D c) { return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)}; }
D negate(D a) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  return {_mm256_xor_pd(a.lo, sign), _mm256_xor_pd(a.hi, sign)};
}
D magnitude(D a) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  return {_mm256_andnot_pd(sign, a.lo), _mm256_andnot_pd(sign, a.hi)};
}

// Lane masks as eight bits (bit l: lane l), and as registers for blends.
F float_mask(Mask m) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(m)), bit), bit));
}
D double_mask(Mask m) {
  const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
  const auto part = [&](Mask four) {
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(four), bit), bit));
  };
  return {part(m & 15u), part(m >> 4)};
}
template <int kCmp>
Mask compare(F a, F b) {
  return static_cast<Mask>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, kCmp)));
}
template <int kCmp>
Mask compare(D a, D b) {
  return static_cast<Mask>(_mm256_movemask_pd(_mm256_cmp_pd(a.lo, b.lo, kCmp))) |
         static_cast<Mask>(_mm256_movemask_pd(_mm256_cmp_pd(a.hi, b.hi, kCmp))) << 4;
}
F pick(F otherwise, F then, Mask m) { return _mm256_blendv_ps(otherwise, then, float_mask(m)); }
D pick(D otherwise, D then, Mask m) {
  const D mask = double_mask(m);
  return {_mm256_blendv_pd(otherwise.lo, then.lo, mask.lo), _mm256_blendv_pd(otherwise.hi, then.hi, mask.hi)};
}

Stalls stalls_zero() { return _mm256_setzero_si256(); }
Mask below(int patience, Stalls stalls) {
  return static_cast<Mask>(
      _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(patience), stalls))));
}
// Active lanes: a falling one's stalls restart at 0, the others' count one more.
Stalls stalls_next(Stalls stalls, Mask falling, Mask active) {
  const __m256i next =
      _mm256_andnot_si256(_mm256_castps_si256(float_mask(falling)), _mm256_add_epi32(stalls, _mm256_set1_epi32(1)));
  return _mm256_castps_si256(pick(_mm256_castsi256_ps(stalls), _mm256_castsi256_ps(next), active));
}

void transpose(const float* const* values, size_t n, float* xt) { transpose_eight(values, n, xt, 8); }

// A batch fills only its first `count` candidates, and passes read only
// those: GCC cannot see it through the dispatch on count.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "affine_search_walk.inc"
#pragma GCC diagnostic pop

}  // namespace lanes8

// ---- sixteen lanes: AVX-512F -------------------------------------------------------

#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12's AVX-512 headers build some results on _mm512_undefined_*(), which
// its -Wuninitialized reports inside every caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace lanes16 {

constexpr int kLanes = 16;
using F = __m512;
using Mask = unsigned;
using Stalls = __m512i;

// Sixteen lanes of doubles: lanes 0-7 and 8-15.
struct D {
  __m512d lo, hi;
};

F fzero() { return _mm512_setzero_ps(); }
F fset1(float v) { return _mm512_set1_ps(v); }
F fload(const float* p) { return _mm512_loadu_ps(p); }
void fstore(float* p, F v) { _mm512_storeu_ps(p, v); }
F fadd(F a, F b) { return _mm512_add_ps(a, b); }
F fmul(F a, F b) { return _mm512_mul_ps(a, b); }
// Through the integer unit: AVX-512F has no xor of floats.
F fneg(F a) {
  return _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(a), _mm512_set1_epi32(static_cast<int>(0x80000000u))));
}
F fdiv(F a, F b) { return _mm512_div_ps(a, b); }
F fmin(F a, F b) { return _mm512_min_ps(a, b); }
F fmax(F a, F b) { return _mm512_max_ps(a, b); }
F ffma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
F round_code(F t) { return _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
F half_round_trip(F v) { return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)); }

D widen(F f) {
  return {_mm512_cvtps_pd(_mm512_castps512_ps256(f)),
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)))};
}
F narrow(D d) {
  const __m256 lo = _mm512_cvtpd_ps(d.lo), hi = _mm512_cvtpd_ps(d.hi);
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
D splat(double v) { return {_mm512_set1_pd(v), _mm512_set1_pd(v)}; }
D sub(D a, D b) { return {_mm512_sub_pd(a.lo, b.lo), _mm512_sub_pd(a.hi, b.hi)}; }
D mul(D a, D b) { return {_mm512_mul_pd(a.lo, b.lo), _mm512_mul_pd(a.hi, b.hi)}; }
D div(D a, D b) { return {_mm512_div_pd(a.lo, b.lo), _mm512_div_pd(a.hi, b.hi)}; }
D fma(D a, D b, D c) { return {_mm512_fmadd_pd(a.lo, b.lo, c.lo), _mm512_fmadd_pd(a.hi, b.hi, c.hi)}; }
// The sign bit flipped or cleared through the integer unit (AVX-512F has no xor of doubles).
D sign_bits(D a, bool clear) {
  const __m512i sign = _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull));
  const auto op = [&](__m512d v) {
    const __m512i bits = _mm512_castpd_si512(v);
    return _mm512_castsi512_pd(clear ? _mm512_andnot_si512(sign, bits) : _mm512_xor_si512(bits, sign));
  };
  return {op(a.lo), op(a.hi)};
}
D negate(D a) { return sign_bits(a, false); }
D magnitude(D a) { return sign_bits(a, true); }

template <int kCmp>
Mask compare(F a, F b) {
  return static_cast<Mask>(_mm512_cmp_ps_mask(a, b, kCmp));
}
template <int kCmp>
Mask compare(D a, D b) {
  return static_cast<Mask>(_mm512_cmp_pd_mask(a.lo, b.lo, kCmp)) |
         static_cast<Mask>(_mm512_cmp_pd_mask(a.hi, b.hi, kCmp)) << 8;
}
F pick(F otherwise, F then, Mask m) { return _mm512_mask_blend_ps(static_cast<__mmask16>(m), otherwise, then); }
D pick(D otherwise, D then, Mask m) {
  return {_mm512_mask_blend_pd(static_cast<__mmask8>(m & 0xffu), otherwise.lo, then.lo),
          _mm512_mask_blend_pd(static_cast<__mmask8>(m >> 8), otherwise.hi, then.hi)};
}

Stalls stalls_zero() { return _mm512_setzero_si512(); }
Mask below(int patience, Stalls stalls) {
  return static_cast<Mask>(_mm512_cmpgt_epi32_mask(_mm512_set1_epi32(patience), stalls));
}
Stalls stalls_next(Stalls stalls, Mask falling, Mask active) {
  const __m512i next = _mm512_maskz_add_epi32(static_cast<__mmask16>(~falling & 0xffffu), stalls, _mm512_set1_epi32(1));
  return _mm512_mask_blend_epi32(static_cast<__mmask16>(active), stalls, next);
}

void transpose(const float* const* values, size_t n, float* xt) {
  transpose_eight(values, n, xt, 16);
  transpose_eight(values + 8, n, xt + 8, 16);
}

#include "affine_search_walk.inc"

}  // namespace lanes16
#pragma GCC diagnostic pop
#pragma GCC pop_options

std::atomic<bool> sixteen_allowed{true};

}  // namespace

bool search_eight_groups(const float* const* values, size_t n, const float* lo, const float* hi, uint32_t qmax,
                         bool half, float* scratch, math::AffineParams* out) {
  return lanes8::search(values, n, lo, hi, qmax, half, scratch, out);
}

size_t affine_search_lanes() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && sixteen_allowed.load(std::memory_order_relaxed) ? 16 : 8;
}

bool search_sixteen_groups(const float* const* values, size_t n, const float* lo, const float* hi, uint32_t qmax,
                           bool half, float* scratch, math::AffineParams* out) {
  if (affine_search_lanes() != 16) return false;
  return lanes16::search(values, n, lo, hi, qmax, half, scratch, out);
}

#else

bool search_eight_groups(const float* const*, size_t, const float*, const float*, uint32_t, bool, float*,
                         math::AffineParams*) {
  return false;
}

size_t affine_search_lanes() { return 8; }

bool search_sixteen_groups(const float* const*, size_t, const float*, const float*, uint32_t, bool, float*,
                           math::AffineParams*) {
  return false;
}

#endif

}  // namespace edo::detail

namespace edo {

void set_affine_search_avx512(bool allowed) {
#if defined(__AVX2__) && defined(__F16C__)
  detail::sixteen_allowed.store(allowed, std::memory_order_relaxed);
#else
  (void)allowed;
#endif
}

}  // namespace edo
