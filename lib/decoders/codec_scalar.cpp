// SPDX-License-Identifier: Apache-2.0
// The scalar codecs (fp32, fp16, bf16, fp8, int8/6/5/4/3/2, bin): a plain reference
// implementation built from the per-row functions in codec_math.hpp, a fast
// CPU one (OpenMP across rows, SIMD within), and the CUDA one. The fast paths
// must give the reference's bytes exactly; test_codecs.cpp checks they do.
#include "codec_impl.hpp"

#include "affine_search_lanes.hpp"

#include <edo/codec_math.hpp>
#include <edo/error.hpp>
#include <edo/parallel.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/scalar_codecs.cuh>
#endif

#if defined(__AVX2__) || defined(__F16C__)
#include <immintrin.h>
#endif

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

namespace edo::detail {
namespace {

using math::ScalarKind;
using math::ScalarLayout;

ScalarLayout make_layout(ScalarKind kind, size_t dim, size_t group, bool half_params = false) {
  ScalarLayout L{};
  L.kind = kind;
  L.half_params = half_params && math::is_affine(kind);
  L.dim = static_cast<uint32_t>(dim);
  L.group = static_cast<uint32_t>(group == 0 || group > dim ? dim : group);
  L.groups = (L.dim + L.group - 1) / L.group;
  L.bits = math::scalar_kind_traits(kind).bits;
  if (math::is_affine(kind)) {
    L.header_bytes = (L.half_params ? 4 : 8) * L.groups;
  } else if (kind == ScalarKind::f32 || kind == ScalarKind::f16 || kind == ScalarKind::bf16) {
    L.header_bytes = 0;
  } else {
    L.header_bytes = 4;
  }
  // dim <= 2^24 keeps all of this far from uint32 overflow.
  L.code_size = L.header_bytes + (L.bits >= 8 ? L.dim * (L.bits / 8) : (L.dim * L.bits + 7) / 8);
  return L;
}

// Magnitude bits from which a value cannot be stored: NaN/Inf for all, plus
// finite values that round to Inf in fp16/bf16, and those whose group
// offset (a value of the group, rounded) an fp16 pair could not hold.
uint32_t nonfinite_limit(const ScalarLayout& L) {
  if (L.kind == ScalarKind::f16 || L.half_params) return kHalfOverflowBits;
  if (L.kind == ScalarKind::bf16) return 0x7f7f8000u;  // FLT_MAX's upper half rounds to Inf
  return 0x7f800000u;
}

bool keeps_nonfinite(ScalarKind kind) {
  return kind == ScalarKind::f32 || kind == ScalarKind::f16 || kind == ScalarKind::bf16;
}

// ---- SIMD helpers (exact, so any evaluation order gives the same answer) ----------

// out[j] = math::affine_quantize(x[j], offset, inv, qmax), 32 then 8 at a
// time, the bytes the reference's: the same sub and mul, the min with qmax,
// then a conversion that rounds to nearest even (on [0, qmax] the
// reference's round-by-magic add exactly) and unsigned saturating packs,
// which turn what the reference's max with 0 would have clamped (a negative
// product, or a NaN one, converted to INT_MIN) into 0. 32 at a time packs
// four registers into one store: perf put a third of int8's encode on the
// packs and stores of 8 at a time.
void affine_quantize_row(const float* x, size_t n, float offset, math::AffineInverse inv, float qmax, uint8_t* out) {
  size_t j = 0;
#ifdef __AVX2__
  // A lifted (subnormal-scale) group is rare: the scalar loop below serves it.
  if (inv.lift == 1.0f) {
    const __m256 vo = _mm256_set1_ps(offset), vi = _mm256_set1_ps(inv.inv), vq = _mm256_set1_ps(qmax);
    // min(qmax, t) = qmax < t ? qmax : t keeps a NaN t, as clampf's max with 0 would not: it packs to 0 either way.
    const auto codes8 = [&](const float* v) {
      const __m256 t = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v), vo), vi);
      return _mm256_cvtps_epi32(_mm256_min_ps(vq, t));
    };
    // The in-lane packs leave dword k of four registers' bytes at position order[k].
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; j + 32 <= n; j += 32) {
      const __m256i ab = _mm256_packus_epi32(codes8(x + j), codes8(x + j + 8));
      const __m256i cd = _mm256_packus_epi32(codes8(x + j + 16), codes8(x + j + 24));
      const __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(ab, cd), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + j), bytes);
    }
    for (; j + 8 <= n; j += 8) {
      const __m256i q = codes8(x + j);
      const __m128i words = _mm_packus_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(out + j), _mm_packus_epi16(words, words));
    }
  }
#endif
  for (; j < n; ++j) out[j] = static_cast<uint8_t>(math::affine_quantize(x[j], offset, inv, qmax));
}

// x[j] = math::affine_dequantize(q[j], p), 8 at a time (one fused multiply-add each, as fmaf).
void affine_dequantize_row(const uint8_t* q, size_t n, math::AffineParams p, float* x) {
  size_t j = 0;
#ifdef __AVX2__
  const __m256 vs = _mm256_set1_ps(p.scale), vo = _mm256_set1_ps(p.offset);
  for (; j + 8 <= n; j += 8) {
    const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + j));
    const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
    _mm256_storeu_ps(x + j, _mm256_fmadd_ps(v, vs, vo));
  }
#endif
  for (; j < n; ++j) x[j] = math::affine_dequantize(q[j], p);
}

#ifdef __AVX2__
// affine_dequantize_row for int4 values [begin, begin + n) of a packed row
// (two a byte, low nibble first; `begin` even), unpacked in registers: the
// same operations on the same values, so the same bits.
void int4_dequantize_row(const uint8_t* packed, size_t begin, size_t n, math::AffineParams p, float* x) {
  const uint8_t* in = packed + begin / 2;
  const __m256 vs = _mm256_set1_ps(p.scale), vo = _mm256_set1_ps(p.offset);
  const __m128i nibble = _mm_set1_epi8(0x0f);
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    uint32_t word;
    std::memcpy(&word, in + j / 2, sizeof word);
    const __m128i b = _mm_cvtsi32_si128(static_cast<int>(word));
    const __m128i q = _mm_unpacklo_epi8(_mm_and_si128(b, nibble), _mm_and_si128(_mm_srli_epi16(b, 4), nibble));
    _mm256_storeu_ps(x + j, _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(q)), vs, vo));
  }
  for (; j < n; ++j) {
    const size_t at = begin + j;
    x[j] = math::affine_dequantize(static_cast<uint8_t>((packed[at / 2] >> (at % 2 * 4)) & 15u), p);
  }
}
#endif

#ifdef __AVX2__
// math::AffineGroup 16 values a step in two registers: the reference's
// float operations with value i in lane i % 16 (register i / 8 % 2, lane
// i % 8), the last step masked (a masked value adds exact zeros), the lanes
// folded in registers in the reference's tree, and the reference's doubles
// after: every sum is the reference's bit for bit, so the search picks the
// same parameters. Several candidates share a pass. Values are taken into
// centred units as each pass reads them (one fma): this path searches the
// few groups a tile's lane searches leave, one by one.
class AffineGroupAvx2 {
 public:
  AffineGroupAvx2(const float* x, size_t n, uint32_t qmax, float lo, float unit)
      : x_(x), n_(n), qmax_(qmax), unit_(unit), lo_units_(lo * unit) {
    const __m256 vu = _mm256_set1_ps(unit_), neg_lo = _mm256_set1_ps(-lo_units_);
    __m256 s[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()}, ss[2] = {s[0], s[1]};
    for (size_t i = 0; i < n_; i += 8) {
      const int r = static_cast<int>(i / 8 % 2);
      __m256 xc = _mm256_fmadd_ps(load(i), vu, neg_lo);
      if (i + 8 > n_) xc = _mm256_and_ps(xc, _mm256_castsi256_ps(live(i)));
      s[r] = _mm256_add_ps(s[r], xc);
      ss[r] = _mm256_fmadd_ps(xc, xc, ss[r]);
    }
    moments = math::AffineMoments{fold(s[0], s[1]), fold(ss[0], ss[1]), static_cast<double>(n_)};
  }

  void sums_batch(const math::AffineParams* p, int count, math::AffineCodeSums* out) const {
    static_assert(math::kClipBatchMax == 3, "one pass<K> a batch size");
    switch (count) {
      case 1:
        return pass<1>(p, out);
      case 2:
        return pass<2>(p, out);
      default:
        return pass<3>(p, out);
    }
  }

  math::AffineMoments moments;

 private:
  // Values [i, i + 8), zeros past n (the masked lanes).
  __m256 load(size_t i) const {
    if (i + 8 <= n_) return _mm256_loadu_ps(x_ + i);
    return _mm256_maskload_ps(x_ + i, live(i));
  }
  __m256i live(size_t i) const {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n_ - i)), lane);
  }
  // The reference's lane_tree of lanes a (0-7) and b (8-15).
  static float fold(__m256 a, __m256 b) {
    const __m256 t = _mm256_add_ps(a, b);
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(t, t), _mm256_hadd_ps(t, t));
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)));
  }

  template <int K>
  void pass(const math::AffineParams* p, math::AffineCodeSums* out) const {
    const __m256 vq = _mm256_set1_ps(static_cast<float>(qmax_)), zero = _mm256_setzero_ps(),
                 magic = _mm256_set1_ps(12582912.0f), vu = _mm256_set1_ps(unit_), neg_lo = _mm256_set1_ps(-lo_units_);
    math::AffineCandidate cand[K];
    __m256 vi[K], vb[K], q[K][2], qq[K][2], qx[K][2];
    for (int k = 0; k < K; ++k) {
      cand[k] = math::affine_candidate(p[k], lo_units_, unit_);
      vi[k] = _mm256_set1_ps(cand[k].inv);
      vb[k] = _mm256_set1_ps(cand[k].bias);
      q[k][0] = q[k][1] = qq[k][0] = qq[k][1] = qx[k][0] = qx[k][1] = zero;
    }
    for (size_t i = 0; i < n_; i += 8) {
      const int r = static_cast<int>(i / 8 % 2);
      const __m256 xc = _mm256_fmadd_ps(load(i), vu, neg_lo);
      const bool tail = i + 8 > n_;
      const __m256 keep = tail ? _mm256_castsi256_ps(live(i)) : zero;
      for (int k = 0; k < K; ++k) {
        const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(xc, vi[k], vb[k]), zero), vq);  // as clampf
        __m256 c = _mm256_sub_ps(_mm256_add_ps(t, magic), magic);  // round_small_uint, exact
        if (tail) c = _mm256_and_ps(c, keep);
        q[k][r] = _mm256_add_ps(q[k][r], c);
        qq[k][r] = _mm256_fmadd_ps(c, c, qq[k][r]);
        qx[k][r] = _mm256_fmadd_ps(c, xc, qx[k][r]);
      }
    }
    for (int k = 0; k < K; ++k) {
      math::AffineCodeSums& o = out[k];
      if (!cand[k].measurable) {
        o = math::AffineCodeSums{};
        o.sse = INFINITY;
        continue;
      }
      o.q = fold(q[k][0], q[k][1]);
      o.qq = fold(qq[k][0], qq[k][1]);
      o.qx = fold(qx[k][0], qx[k][1]);
      o.sse = math::affine_moment_sse(cand[k].scale, cand[k].offset, o.q, o.qq, o.qx, moments);
    }
  }

  const float* x_;
  size_t n_;
  uint32_t qmax_;
  float unit_, lo_units_;
};
#endif

// Group parameters of int6 to int2 (the MSE search) on the fast path.
math::AffineParams affine_search_fast(const float* x, size_t n, float lo, float hi, uint32_t qmax, bool half) {
#ifdef __AVX2__
  const float unit = math::affine_unit(static_cast<double>(hi) - static_cast<double>(lo));
  return math::affine_params_search(AffineGroupAvx2(x, n, qmax, lo, unit), n, lo, hi, qmax, unit, half);
#else
  return math::affine_params_search(x, n, lo, hi, qmax, half);
#endif
}

// The row's min and max (lanes of 8 folded in order, so signed zeros come
// out the same however it is called), when its magnitude bits all stay
// below `limit` (no NaN/Inf, as below_limit() says), in one pass over it;
// false (lo, hi unset) when one does not.
bool min_max_below(const float* x, size_t n, uint32_t limit, float& lo, float& hi) {
  size_t i = 0;
  float l = x[0], h = x[0];
  uint32_t worst = 0;
#ifdef __AVX2__
  if (n >= 8) {
    const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
    __m256 vl = _mm256_loadu_ps(x), vh = vl;
    __m256i w = _mm256_and_si256(_mm256_castps_si256(vl), magnitude);
    for (i = 8; i + 8 <= n; i += 8) {
      const __m256 v = _mm256_loadu_ps(x + i);
      vl = _mm256_min_ps(vl, v);
      vh = _mm256_max_ps(vh, v);
      w = _mm256_max_epu32(w, _mm256_and_si256(_mm256_castps_si256(v), magnitude));
    }
    alignas(32) float bl[8], bh[8];
    alignas(32) uint32_t bw[8];
    _mm256_store_ps(bl, vl);
    _mm256_store_ps(bh, vh);
    _mm256_store_si256(reinterpret_cast<__m256i*>(bw), w);
    for (int k = 0; k < 8; ++k) {
      l = std::min(l, bl[k]);
      h = std::max(h, bh[k]);
      worst = std::max(worst, bw[k]);
    }
  }
#endif
  for (; i < n; ++i) {
    l = std::min(l, x[i]);
    h = std::max(h, x[i]);
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    worst = std::max(worst, b & 0x7fffffffu);
  }
  if (worst >= limit) return false;
  lo = l;
  hi = h;
  return true;
}

// min_max_below() with no limit (rows already checked).
void min_max(const float* x, size_t n, float& lo, float& hi) { min_max_below(x, n, UINT32_MAX, lo, hi); }

float max_abs(const float* x, size_t n) {
  size_t i = 0;
  float m = 0.0f;
#ifdef __AVX2__
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 vm = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) vm = _mm256_max_ps(vm, _mm256_and_ps(_mm256_loadu_ps(x + i), abs_mask));
  alignas(32) float b[8];
  _mm256_store_ps(b, vm);
  for (int k = 0; k < 8; ++k) m = std::max(m, b[k]);
#endif
  for (; i < n; ++i) m = std::max(m, std::fabs(x[i]));
  return m;
}

// Magnitude bits of a float (sign cleared): compared with a limit, it tells
// NaN/Inf (>= 0x7f800000) and values a narrower format overflows.
inline uint32_t magnitude_bits(float v) { return float_bits(v) & 0x7fffffffu; }

// Converts n floats; returns the largest magnitude bits seen, so the caller
// checks for NaN/Inf/overflow without a second pass over memory.
uint32_t floats_to_half(const float* x, size_t n, uint8_t* out) {
  size_t i = 0;
  uint32_t worst = 0;
#ifdef __F16C__
  const __m256i magnitude = _mm256_set1_epi32(0x7fffffff);
  __m256i worst8 = _mm256_setzero_si256();
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    worst8 = _mm256_max_epu32(worst8, _mm256_and_si256(_mm256_castps_si256(v), magnitude));
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2 * i), h);
  }
  alignas(32) uint32_t lanes[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), worst8);
  for (uint32_t lane : lanes) worst = std::max(worst, lane);
#endif
  for (; i < n; ++i) {
    worst = std::max(worst, magnitude_bits(x[i]));
    const uint16_t h = float_to_half_bits(x[i]);
    std::memcpy(out + 2 * i, &h, 2);
  }
  return worst;
}

void half_to_floats(const uint8_t* in, size_t n, float* x) {
  size_t i = 0;
#ifdef __F16C__
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + 2 * i))));
  }
  // The last few values through the same conversion, one at a time (the
  // software one costs more; both are exact).
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    x[i] = _cvtsh_ss(h);
  }
  return;
#endif
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, in + 2 * i, 2);
    x[i] = half_bits_to_float(h);
  }
}

uint32_t floats_to_bf16(const float* x, size_t n, uint8_t* out) {
  uint32_t worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t m = magnitude_bits(x[i]);
    worst = m > worst ? m : worst;
    const uint16_t b = float_to_bf16_bits(x[i]);
    std::memcpy(out + 2 * i, &b, 2);
  }
  return worst;
}

void bf16_to_floats(const uint8_t* in, size_t n, float* x) {
  for (size_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, in + 2 * i, 2);
    x[i] = bf16_bits_to_float(b);
  }
}

void pack_signs(const float* x, size_t n, uint8_t* out) {
  size_t i = 0;
#ifdef __AVX2__
  const __m256 zero = _mm256_setzero_ps();
  for (; i + 8 <= n; i += 8) {
    out[i / 8] = static_cast<uint8_t>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), zero, _CMP_LT_OQ)));
  }
#endif
  if (i < n) {
    uint32_t byte = 0;
    for (size_t k = 0; i + k < n; ++k) byte |= math::sign_bit(x[i + k]) << k;
    out[i / 8] = static_cast<uint8_t>(byte);
  }
}

// Packs codes q[0..n) of `bits` bits each (1 to 7) into (n * bits + 7) / 8
// bytes, value j at bit j * bits, low bits first: a bit stream through a
// 64-bit accumulator, whole bytes out as they fill, the last padded with zeros.
// Eight codes of kBits bits fill kBits whole bytes: pack and unpack them a
// group of eight at a time, with the width known to the compiler, which
// turns the shifts into a few word operations (a bit accumulator a value
// cost int4's decode half its speed). Bits run from the low end of each
// byte up, value after value, as the loops below write them.
template <uint32_t kBits>
size_t pack_eights(const uint8_t* q, size_t n, uint8_t* out) {
  size_t j = 0;
  for (; j + 8 <= n; j += 8, out += kBits) {
    uint64_t word = 0;
    for (uint32_t k = 0; k < 8; ++k) word |= static_cast<uint64_t>(q[j + k]) << (k * kBits);
    for (uint32_t b = 0; b < kBits; ++b) out[b] = static_cast<uint8_t>(word >> (8 * b));
  }
  return j;
}

template <uint32_t kBits>
size_t unpack_eights(const uint8_t* in, size_t n, uint8_t* q) {
  constexpr uint64_t kMask = (uint64_t{1} << kBits) - 1;
  size_t j = 0;
  for (; j + 8 <= n; j += 8, in += kBits) {
    uint64_t word = 0;
    for (uint32_t b = 0; b < kBits; ++b) word |= static_cast<uint64_t>(in[b]) << (8 * b);
    for (uint32_t k = 0; k < 8; ++k) q[j + k] = static_cast<uint8_t>((word >> (k * kBits)) & kMask);
  }
  return j;
}

// fn(std::integral_constant<uint32_t, bits>{}) for the widths that have
// eight-at-a-time loops: the values it handled; 0 for any other width.
template <class Fn>
size_t with_width(uint32_t bits, Fn&& fn) {
  switch (bits) {
    case 2:
      return fn(std::integral_constant<uint32_t, 2>{});
    case 3:
      return fn(std::integral_constant<uint32_t, 3>{});
    case 4:
      return fn(std::integral_constant<uint32_t, 4>{});
    case 5:
      return fn(std::integral_constant<uint32_t, 5>{});
    case 6:
      return fn(std::integral_constant<uint32_t, 6>{});
    default:
      return 0;
  }
}

#ifdef __AVX2__
// pack_eights<4> and <2>, 32 codes at a time: a multiply-add of neighbouring
// bytes (and, for 2 bits, of neighbouring words) puts each output byte's
// codes side by side in one lane, and unsigned packs gather the lanes in
// order; the same bytes as the word loop at about eight times its speed,
// which at 4 and 2 bits was a tenth of the encode.
size_t pack_fours_avx2(const uint8_t* q, size_t n, uint8_t* out) {
  const __m256i pairs = _mm256_set1_epi16(0x1001);  // byte 2k + byte (2k + 1) * 16
  size_t j = 0;
  for (; j + 32 <= n; j += 32, out += 16) {
    const __m256i w = _mm256_maddubs_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + j)), pairs);
    const __m256i b = _mm256_permute4x64_epi64(_mm256_packus_epi16(w, w), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm256_castsi256_si128(b));
  }
  return j;
}

size_t pack_twos_avx2(const uint8_t* q, size_t n, uint8_t* out) {
  const __m256i pairs = _mm256_set1_epi16(0x0401);      // byte 2k + byte (2k + 1) * 4
  const __m256i quads = _mm256_set1_epi32(0x00100001);  // word 2k + word (2k + 1) * 16
  size_t j = 0;
  for (; j + 32 <= n; j += 32, out += 8) {
    const __m256i w = _mm256_maddubs_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q + j)), pairs);
    const __m256i d = _mm256_madd_epi16(w, quads);
    const __m256i h = _mm256_packus_epi32(d, d);
    const __m256i b = _mm256_packus_epi16(h, h);
    const uint32_t low = static_cast<uint32_t>(_mm256_extract_epi32(b, 0)),
                   high = static_cast<uint32_t>(_mm256_extract_epi32(b, 4));
    std::memcpy(out, &low, 4);
    std::memcpy(out + 4, &high, 4);
  }
  return j;
}
#endif

void pack_bits(const uint8_t* q, size_t n, uint32_t bits, uint8_t* out) {
  size_t j = 0;
#ifdef __AVX2__
  if (bits == 4) j = pack_fours_avx2(q, n, out);
  if (bits == 2) j = pack_twos_avx2(q, n, out);
  out += j / 8 * bits;
#endif
  const size_t eights = with_width(bits, [&](auto width) { return pack_eights<width.value>(q + j, n - j, out); });
  out += eights / 8 * bits;
  j += eights;
  uint64_t acc = 0;
  uint32_t filled = 0;
  for (; j < n; ++j) {
    acc |= static_cast<uint64_t>(q[j]) << filled;
    filled += bits;
    for (; filled >= 8; filled -= 8, acc >>= 8) *out++ = static_cast<uint8_t>(acc);
  }
  if (filled > 0) *out = static_cast<uint8_t>(acc);
}

void unpack_bits(const uint8_t* in, size_t n, uint32_t bits, uint8_t* q) {
  const uint32_t mask = (1u << bits) - 1u;
  size_t j = with_width(bits, [&](auto width) { return unpack_eights<width.value>(in, n, q); });
  for (; j < n; ++j) {
    const size_t bit = j * bits;
    uint32_t word = in[bit / 8];
    if (bit % 8 + bits > 8) word |= static_cast<uint32_t>(in[bit / 8 + 1]) << 8;
    q[j] = static_cast<uint8_t>((word >> (bit % 8)) & mask);
  }
}

std::array<float, 256> fp8_table(math::Fp8Format fmt) {
  std::array<float, 256> t{};
  for (uint32_t c = 0; c < 256; ++c) t[c] = math::fp8_to_float(static_cast<uint8_t>(c), fmt);
  return t;
}

// Runs fn(begin, len) over [0, total) in chunks spread across threads.
template <class Fn>
void parallel_chunks(size_t total, Fn&& fn) {
  const size_t chunk = size_t{1} << 16;
  const int64_t chunks = static_cast<int64_t>((total + chunk - 1) / chunk);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t begin = static_cast<size_t>(c) * chunk;
    fn(begin, std::min(chunk, total - begin));
  }
}

// True when every value's magnitude bits are below `limit` (0x7f800000:
// finite). A branch-free max over the bits, so it vectorises.
bool below_limit(const float* x, size_t n, uint32_t limit) {
  uint32_t worst = 0;
#pragma omp simd reduction(max : worst)
  for (size_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, sizeof b);
    b &= 0x7fffffffu;
    worst = b > worst ? b : worst;
  }
  return worst < limit;
}

// Runs fn(r) for every row r < n, rows spread across threads.
template <class Fn>
void parallel_rows(size_t n, size_t dim, Fn&& fn) {
  const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim))
  for (int64_t r = 0; r < rows; ++r) fn(static_cast<size_t>(r));
}

// ---- the codec ---------------------------------------------------------------------------

class ScalarCodec final : public Codec {
 public:
  ScalarCodec(ScalarLayout L, std::string spec) : L_(L), spec_(std::move(spec)) {}

  std::string spec() const override { return spec_; }
  size_t dim() const override { return L_.dim; }
  size_t code_size() const override { return L_.code_size; }
  const ScalarLayout& layout() const { return L_; }

  // Worst cases for a row in the codec's normal range (docs/CLI.md):
  // rounding to nearest with p mantissa bits errs by at most 2^-(p+1) of
  // each value; fp8 adds its subnormal step at the row's scale; an affine
  // group of G values errs by at most half a step, (hi - lo) / (2 qmax),
  // per value while its squared norm is at least (hi - lo)^2 / 2; sign codes
  // at their MSE-optimal scale never err more than the zero vector would.
  double row_error_bound() const override {
    const double root_dim = std::sqrt(static_cast<double>(L_.dim));
    switch (L_.kind) {
      case ScalarKind::f32:
        return 0.0;
      case ScalarKind::f16:
        return 0x1p-11;
      case ScalarKind::bf16:
        return 0x1p-8;
      case ScalarKind::fp8_e4m3:
        return 0x1p-4 + root_dim * 0x1p-10 / 448.0;
      case ScalarKind::fp8_e5m2:
        return 0x1p-3 + root_dim * 0x1p-17 / 57344.0;
      default:  // the affine integer widths (ScalarFamily::affine)
        // fp16 parameters add their rounding: 2^-11 of the offset and of
        // the range, well inside 2^-9 of the row.
        return std::sqrt(static_cast<double>(L_.group) / 2.0) / static_cast<double>(math::affine_qmax(L_)) +
               (L_.half_params ? 0x1p-9 : 0.0);
      case ScalarKind::sign:
        return 1.0;
    }
    return std::numeric_limits<double>::infinity();
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    if (opt.device == Device::cpu && opt.impl == Impl::fast) {
      // The fast path checks each chunk for NaN/Inf (or overflow) while it is
      // in cache, instead of a separate pass over memory; on a hit,
      // check_finite() finds the first offender and throws naming it.
      const bool passthrough = opt.allow_nonfinite && keeps_nonfinite(L_.kind);
      const uint32_t limit = passthrough ? 0xffffffffu : nonfinite_limit(L_);
      if (n > 0 && !encode_fast(x, n, codes, limit))
        check_finite(x, n, L_.dim, nonfinite_limit(L_), spec_, opt, keeps_nonfinite(L_.kind));
      return;
    }
    check_finite(x, n, L_.dim, nonfinite_limit(L_), spec_, opt, keeps_nonfinite(L_.kind));
    if (n == 0) return;
    if (opt.device == Device::cuda) return encode_cuda(x, n, codes);
    encode_reference(x, n, codes);
  }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    if (n == 0) return;
    if (opt.device == Device::cuda) return decode_cuda(codes, n, x);
    if (opt.impl == Impl::reference) return decode_reference(codes, n, x);
    decode_fast(codes, n, x);
  }

  // Row by row straight from the code array into place: no copies, no
  // parallel region (the reader runs gathers on its own threads).
  void decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n,
                     float* x) const override {
    // One loop per kind, the row decode inlined into it: a lookup decodes
    // short rows, where a call and a switch per row cost as much as the row.
    switch (L_.kind) {
      case ScalarKind::f32:
        return gather_rows(codes, rows, dst, n, x,
                           [d = L_.dim](const uint8_t* c, float* r) { std::memcpy(r, c, d * sizeof(float)); });
      case ScalarKind::f16:
        return gather_rows(codes, rows, dst, n, x,
                           [d = L_.dim](const uint8_t* c, float* r) { half_to_floats(c, d, r); });
      case ScalarKind::bf16:
        return gather_rows(codes, rows, dst, n, x,
                           [d = L_.dim](const uint8_t* c, float* r) { bf16_to_floats(c, d, r); });
      case ScalarKind::int8:
        if (L_.groups == 1)  // row-wise: no group loop
          return gather_rows(codes, rows, dst, n, x, [L = L_](const uint8_t* c, float* r) {
            affine_dequantize_row(c + L.header_bytes, L.dim, math::load_group_params(L, c, 0), r);
          });
        return gather_rows(codes, rows, dst, n, x, [L = L_](const uint8_t* c, float* r) {
          for (uint32_t g = 0, begin = 0; g < L.groups; ++g, begin += L.group)
            affine_dequantize_row(c + L.header_bytes + begin, std::min(L.group, L.dim - begin),
                                  math::load_group_params(L, c, g), r + begin);
        });
      default:
        break;
    }
#ifdef __AVX2__
    if (math::is_affine(L_.kind) && L_.bits == 4 && (L_.groups == 1 || L_.group % 2 == 0))
      return gather_rows(codes, rows, dst, n, x, [L = L_](const uint8_t* c, float* r) {
        for (uint32_t g = 0, begin = 0; g < L.groups; ++g, begin += L.group)
          int4_dequantize_row(c + L.header_bytes, begin, std::min(L.group, L.dim - begin),
                              math::load_group_params(L, c, g), r + begin);
      });
#endif
    std::vector<uint8_t> q(math::is_affine(L_.kind) && L_.bits != 8 ? L_.dim : 0);
    gather_rows(codes, rows, dst, n, x, [&](const uint8_t* c, float* r) { decode_row(c, r, q.data()); });
  }

 private:
  // decode(code row, output row) for rows[k] into x + dst[k] * dim. Ids come
  // in any order, so nearly every code row is a cache miss: fetching a few
  // rows ahead keeps several misses in flight at once.
  template <class DecodeRow>
  void gather_rows(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n, float* x,
                   DecodeRow&& decode) const {
    constexpr size_t kAhead = 8;
    const size_t code_size = L_.code_size, dim = L_.dim;
    for (size_t k = 0; k < n; ++k) {
      if (k + kAhead < n) {
        const uint8_t* next = codes + rows[k + kAhead] * code_size;
        for (size_t b = 0; b < code_size; b += 64) __builtin_prefetch(next + b);
        __builtin_prefetch(next + code_size - 1);  // a row that straddles a line
      }
      decode(codes + rows[k] * code_size, x + dst[k] * dim);
    }
  }

  void encode_reference(const float* x, size_t n, uint8_t* codes) const {
    const uint32_t units = math::payload_units(L_);
    for (size_t r = 0; r < n; ++r) {
      const float* row = x + r * L_.dim;
      uint8_t* code = codes + r * L_.code_size;
      for (uint32_t g = 0; g < L_.groups; ++g) math::encode_group_params(L_, row, g, code);
      for (uint32_t u = 0; u < units; ++u) math::encode_unit(L_, row, u, code);
    }
  }

  void decode_reference(const uint8_t* codes, size_t n, float* x) const {
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t j = 0; j < L_.dim; ++j) x[r * L_.dim + j] = math::decode_value(L_, codes + r * L_.code_size, j);
    }
  }

  // Returns false (codes undefined) when some value's magnitude bits reach
  // `limit`: NaN/Inf, or a value the format would overflow.
  bool encode_fast(const float* x, size_t n, uint8_t* codes, uint32_t limit) const {
    const size_t d = L_.dim;
    bool ok = true;
    switch (L_.kind) {
      case ScalarKind::f32:
      case ScalarKind::f16:
      case ScalarKind::bf16:
        // No header: the whole block is one array of values.
        parallel_chunks(n * d, [&](size_t begin, size_t len) {
          uint32_t worst = 0;
          if (L_.kind == ScalarKind::f32) {
            worst = below_limit(x + begin, len, limit) ? 0 : limit;
            std::memcpy(codes + 4 * begin, x + begin, len * sizeof(float));
          } else if (L_.kind == ScalarKind::f16) {
            worst = floats_to_half(x + begin, len, codes + 2 * begin);
          } else {
            worst = floats_to_bf16(x + begin, len, codes + 2 * begin);
          }
          if (worst >= limit) {
#pragma omp atomic write
            ok = false;
          }
        });
        return ok;
      case ScalarKind::fp8_e4m3:
      case ScalarKind::fp8_e5m2: {
        const math::Fp8Format fmt = math::fp8_format(L_.kind);
        parallel_rows(n, d, [&](size_t r) {
          const float* row = x + r * d;
          if (!below_limit(row, d, limit)) {
#pragma omp atomic write
            ok = false;
            return;
          }
          uint8_t* code = codes + r * L_.code_size;
          const float scale = math::fp8_scale(max_abs(row, d), fmt);
          math::store_f32(code, scale);
          for (size_t j = 0; j < d; ++j) code[4 + j] = math::fp8_encode(row[j], scale, fmt);
        });
        return ok;
      }
      default:  // the affine integer widths (ScalarFamily::affine)
        return encode_affine_fast(x, n, codes, limit);
      case ScalarKind::sign: {
        parallel_rows(n, d, [&](size_t r) {
          if (!below_limit(x + r * d, d, limit)) {
#pragma omp atomic write
            ok = false;
            return;
          }
          math::store_f32(codes + r * L_.code_size, math::sign_scale(x + r * d, d));
          pack_signs(x + r * d, d, codes + r * L_.code_size + 4);
        });
        return ok;
      }
    }
    return ok;
  }

  // Rows go kTileRows at a time: their groups' MSE searches run eight or
  // sixteen at a time, a group a SIMD lane (search_groups).
  bool encode_affine_fast(const float* x, size_t n, uint8_t* codes, uint32_t limit) const {
    constexpr size_t kTileRows = 16;
    const size_t dim = L_.dim;
    const int64_t tiles = static_cast<int64_t>((n + kTileRows - 1) / kTileRows);
    const uint32_t qmax = math::affine_qmax(L_);
    const float qmaxf = static_cast<float>(qmax);
    const bool whole = L_.groups == 1;
    bool ok = true;
#pragma omp parallel if (parallel_worth(n * dim))
    {
      std::vector<uint8_t> q(L_.bits == 8 ? 0 : kTileRows * dim);
      std::vector<GroupJob> jobs;
      jobs.reserve(kTileRows * L_.groups);
      std::vector<float> scratch(16 * L_.group);  // the lane searches' transposed values
#pragma omp for schedule(static)
      for (int64_t t = 0; t < tiles; ++t) {
        const size_t first = static_cast<size_t>(t) * kTileRows, rows = std::min(kTileRows, n - first);
        jobs.clear();
        for (size_t r = first; r < first + rows; ++r) {
          const float* row = x + r * dim;
          // One group: its min/max pass also checks the limit.
          float lo = 0, hi = 0;
          if (whole ? !min_max_below(row, dim, limit, lo, hi) : !below_limit(row, dim, limit)) {
#pragma omp atomic write
            ok = false;
            continue;
          }
          for (uint32_t g = 0; g < L_.groups; ++g) {
            const uint32_t begin = g * L_.group, len = std::min(L_.group, L_.dim - begin);
            if (!whole) min_max(row + begin, len, lo, hi);
            // Filled in place: a temporary's copy reloaded the fields it had just stored, a stall a group.
            GroupJob& job = jobs.emplace_back();
            job.row = r;
            job.group = g;
            job.len = len;
            job.lo = lo;
            job.hi = hi;
          }
        }
        if (!math::scalar_kind_traits(L_.kind).range_search) {
          for (GroupJob& j : jobs) j.p = math::affine_stored_range(j.lo, j.hi, qmax, L_.half_params);
        } else {
          search_groups(x, jobs, qmax, scratch);
        }
        for (size_t k = 0; k < jobs.size(); ++k) {
          const GroupJob& j = jobs[k];
          const uint32_t begin = j.group * L_.group;
          uint8_t* code = codes + j.row * L_.code_size;
          uint8_t* out = L_.bits == 8 ? code + L_.header_bytes : q.data() + (j.row - first) * dim;
          math::store_group_params(L_, code, j.group, j.p);
          affine_quantize_row(x + j.row * dim + begin, j.len, j.p.offset, math::affine_inverse(j.p.scale), qmaxf,
                              out + begin);
          const bool last_of_row = k + 1 == jobs.size() || jobs[k + 1].row != j.row;
          if (L_.bits != 8 && last_of_row) pack_bits(out, L_.dim, L_.bits, code + L_.header_bytes);
        }
      }
    }
    return ok;
  }

  // One group of a tile: where it is, its range, and its parameters once searched.
  struct GroupJob {
    size_t row;
    uint32_t group, len;
    float lo, hi;
    math::AffineParams p;
  };

  // The MSE search of each job's group: sixteen (AVX-512) or eight groups
  // of one length at a time in the lanes of a lane search, then eight where
  // sixteen are not left, the rest (and any batch a search hands back) one
  // by one; the same parameters every way.
  void search_groups(const float* x, std::vector<GroupJob>& jobs, uint32_t qmax, std::vector<float>& scratch) const {
    const size_t dim = L_.dim;
    const auto one_by_one = [&](GroupJob& j) {
      j.p = affine_search_fast(x + j.row * dim + j.group * L_.group, j.len, j.lo, j.hi, qmax, L_.half_params);
    };
    // Searches lane[0, width) in one lane search, or one by one where it hands them back.
    const auto search_batch = [&](GroupJob* const* lane, size_t width, uint32_t len) {
      float lo[16], hi[16];
      const float* values[16];
      for (size_t l = 0; l < width; ++l) {
        lo[l] = lane[l]->lo;
        hi[l] = lane[l]->hi;
        values[l] = x + lane[l]->row * dim + lane[l]->group * L_.group;
      }
      math::AffineParams p[16];
      const bool ok = width == 16 ? search_sixteen_groups(values, len, lo, hi, qmax, L_.half_params, scratch.data(), p)
                                  : search_eight_groups(values, len, lo, hi, qmax, L_.half_params, scratch.data(), p);
      for (size_t l = 0; l < width; ++l) {
        if (ok) {
          lane[l]->p = p[l];
        } else {
          one_by_one(*lane[l]);
        }
      }
    };
    const size_t widest = affine_search_lanes();
    // A tile's groups have at most two lengths: the group's, and the last group's of each row.
    for (const uint32_t len : {L_.group, L_.dim % L_.group}) {
      if (len == 0) continue;
      std::array<GroupJob*, 16> lane{};
      size_t filled = 0;
      for (GroupJob& j : jobs) {
        if (j.len != len) continue;
        lane[filled++] = &j;
        if (filled < widest) continue;
        filled = 0;
        search_batch(lane.data(), widest, len);
      }
      // Where sixteen were not left, eight may be.
      size_t done = 0;
      if (filled >= 8) {
        search_batch(lane.data(), 8, len);
        done = 8;
      }
      for (size_t l = done; l < filled; ++l) one_by_one(*lane[l]);
    }
  }

  // One row of the fast path; `q` holds dim bytes for unpacking int6 to int2.
  void decode_row(const uint8_t* code, float* row, uint8_t* q) const {
    const size_t d = L_.dim;
    switch (L_.kind) {
      case ScalarKind::f32:
        std::memcpy(row, code, d * sizeof(float));
        return;
      case ScalarKind::f16:
        half_to_floats(code, d, row);
        return;
      case ScalarKind::bf16:
        bf16_to_floats(code, d, row);
        return;
      case ScalarKind::fp8_e4m3:
      case ScalarKind::fp8_e5m2: {
        const float* table = fp8_decode_table(L_.kind);
        const float scale = math::load_f32(code);
        for (size_t j = 0; j < d; ++j) row[j] = table[code[4 + j]] * scale;
        return;
      }
      default: {  // the affine integer widths (ScalarFamily::affine)
        const uint8_t* qs = code + L_.header_bytes;
        if (L_.bits != 8) {
          unpack_bits(code + L_.header_bytes, d, L_.bits, q);
          qs = q;
        }
        for (uint32_t g = 0; g < L_.groups; ++g) {
          const uint32_t begin = g * L_.group, len = std::min(L_.group, L_.dim - begin);
          affine_dequantize_row(qs + begin, len, math::load_group_params(L_, code, g), row + begin);
        }
        return;
      }
      case ScalarKind::sign: {
        const float scale = math::load_f32(code);
        for (size_t j = 0; j < d; ++j) row[j] = math::sign_decode((code[4 + j / 8] >> (j % 8)) & 1u, scale);
        return;
      }
    }
  }

  static const float* fp8_decode_table(ScalarKind kind) {
    static const std::array<float, 256> e4m3 = fp8_table(math::Fp8Format::e4m3);
    static const std::array<float, 256> e5m2 = fp8_table(math::Fp8Format::e5m2);
    return kind == ScalarKind::fp8_e4m3 ? e4m3.data() : e5m2.data();
  }

  void decode_fast(const uint8_t* codes, size_t n, float* x) const {
    const size_t d = L_.dim;
    switch (L_.kind) {
      case ScalarKind::f32:
        std::memcpy(x, codes, n * d * sizeof(float));
        return;
      case ScalarKind::f16:
      case ScalarKind::bf16:
        // Rows are contiguous in both arrays: convert in long runs.
        parallel_chunks(n * d, [&](size_t begin, size_t len) {
          if (L_.kind == ScalarKind::f16) {
            half_to_floats(codes + 2 * begin, len, x + begin);
          } else {
            bf16_to_floats(codes + 2 * begin, len, x + begin);
          }
        });
        return;
      default:
        break;
    }
    const int64_t rows = static_cast<int64_t>(n);
#pragma omp parallel if (parallel_worth(n * d))
    {
      std::vector<uint8_t> q(d);
#pragma omp for schedule(static)
      for (int64_t r = 0; r < rows; ++r)
        decode_row(codes + static_cast<size_t>(r) * L_.code_size, x + static_cast<size_t>(r) * d, q.data());
    }
  }

  void encode_cuda(const float* x, size_t n, uint8_t* codes) const {
#ifdef EDO_HAVE_CUDA
    DeviceBuffer dx(n * L_.dim * sizeof(float)), dc(n * L_.code_size);
    dx.upload(x, dx.bytes());
    cuda::encode_scalar(L_, dx.as<float>(), n, dc.as<uint8_t>());
    check_cuda_launch("encode_scalar");
    dc.download(codes, dc.bytes());
#else
    (void)x, (void)n, (void)codes;
    require_device(Device::cuda);
#endif
  }

  void decode_cuda(const uint8_t* codes, size_t n, float* x) const {
#ifdef EDO_HAVE_CUDA
    DeviceBuffer dc(n * L_.code_size), dx(n * L_.dim * sizeof(float));
    dc.upload(codes, dc.bytes());
    cuda::decode_scalar(L_, dc.as<uint8_t>(), n, dx.as<float>());
    check_cuda_launch("decode_scalar");
    dx.download(x, dx.bytes());
#else
    (void)x, (void)n, (void)codes;
    require_device(Device::cuda);
#endif
  }

  ScalarLayout L_;
  std::string spec_;
};

std::unique_ptr<Codec> make_plain(ScalarKind kind, const SpecStage& stage, size_t dim) {
  StageParams params(stage, stage.name.c_str(), false, {});
  check_dim(stage.name, dim);
  return std::make_unique<ScalarCodec>(make_layout(kind, dim, 0), stage.name);
}

std::unique_ptr<Codec> make_affine(ScalarKind kind, const SpecStage& stage, size_t dim) {
  const std::string grammar = stage.name + "[:group=G][,scale=fp32|fp16]";
  StageParams params(stage, grammar.c_str(), false, {"group", "scale"});
  check_dim(stage.name, dim);
  size_t group = dim;
  if (const std::string* g = params.get("group")) group = params.get_size(*g, "group", kMaxCodecDim);
  bool half = false;
  if (const std::string* sc = params.get("scale")) {
    if (*sc != "fp32" && *sc != "fp16")
      EDO_USAGE_FAIL("codec '{}': scale '{}' is not fp32 or fp16 (expected {})", stage.name, *sc, grammar);
    half = *sc == "fp16";
  }
  // A group that does not divide dim leaves a shorter last group; one at
  // least as large as dim means one group per row, printed without group=.
  // fp32 parameters are the default and printed without scale=, so specs
  // written before the option existed stay canonical.
  const bool row_wise = group >= dim;
  std::string spec = row_wise ? stage.name : fmt::format("{}:group={}", stage.name, group);
  if (half) spec += row_wise ? ":scale=fp16" : ",scale=fp16";
  return std::make_unique<ScalarCodec>(make_layout(kind, dim, row_wise ? dim : group, half), std::move(spec));
}

std::unique_ptr<Codec> make_fp8(const SpecStage& stage, size_t dim) {
  const char* grammar = "fp8:e4m3|e5m2";
  StageParams params(stage, grammar, true, {"format"});
  check_dim(stage.name, dim);
  const std::string* format = params.positional();
  const std::string* keyed = params.get("format");
  if (format && keyed) EDO_USAGE_FAIL("codec 'fp8': format given twice (expected {})", grammar);
  if (!format) format = keyed;
  ScalarKind kind = ScalarKind::fp8_e4m3;
  if (format && *format == "e5m2") {
    kind = ScalarKind::fp8_e5m2;
  } else if (format && *format != "e4m3") {
    EDO_USAGE_FAIL("codec 'fp8': unknown format '{}' (expected {})", *format, grammar);
  }
  return std::make_unique<ScalarCodec>(make_layout(kind, dim, 0),
                                       kind == ScalarKind::fp8_e5m2 ? "fp8:e5m2" : "fp8:e4m3");
}

}  // namespace

std::unique_ptr<Codec> make_scalar(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  const std::string& name = stage.name;
  if (name == "fp8") return make_fp8(stage, dim);
  for (uint32_t k = 0; k < math::kScalarKindCount; ++k) {
    const auto kind = static_cast<ScalarKind>(k);
    if (math::is_affine(kind) && name == math::scalar_kind_traits(kind).codec) return make_affine(kind, stage, dim);
  }
  if (name == "fp32") return make_plain(ScalarKind::f32, stage, dim);
  if (name == "fp16") return make_plain(ScalarKind::f16, stage, dim);
  if (name == "bf16") return make_plain(ScalarKind::bf16, stage, dim);
  if (name == "bin") return make_plain(ScalarKind::sign, stage, dim);
  EDO_USAGE_FAIL("codec '{}' is not a scalar codec", name);
}

}  // namespace edo::detail

namespace edo {

std::optional<math::ScalarLayout> scalar_layout(const Codec& codec) {
  if (const auto* scalar = dynamic_cast<const detail::ScalarCodec*>(&codec)) return scalar->layout();
  return std::nullopt;
}

}  // namespace edo
