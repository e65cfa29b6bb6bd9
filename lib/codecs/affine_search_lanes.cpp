// math::affine_params_search with eight groups in the eight lanes of each
// AVX2 register. One group at a time, a search spends most of its time
// between its passes: folding sixteen sum lanes across a register, then
// the next candidates' parameters in scalar double arithmetic, a division
// each, and the walk's branches; short groups (32 values: four steps a
// pass) are nearly all of that. With a group a lane, the passes' sums stay
// vertical (the reference's sixteen lanes are sixteen registers in turn,
// folded by vertical adds in the reference's tree), and the parameters,
// divisions and choices of eight walks are a few vector operations.
//
// Exactness: every lane runs the reference's float and double operations
// in the reference's order (math::affine_from_range, affine_half_params,
// affine_inverse, AffineGroup's sums, the walk and the refit), and takes
// the reference's decisions through masks; a lane whose walk or refits
// have ended keeps its state while the others go on. F16C's conversions
// round to nearest even, as float_to_half_bits does.
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

// Eight lanes of doubles: lanes 0-3 and 4-7.
struct D8 {
  __m256d lo, hi;
};

D8 widen(__m256 f) {
  return {_mm256_cvtps_pd(_mm256_castps256_ps128(f)), _mm256_cvtps_pd(_mm256_extractf128_ps(f, 1))};
}
__m256 narrow(D8 d) { return _mm256_set_m128(_mm256_cvtpd_ps(d.hi), _mm256_cvtpd_ps(d.lo)); }
D8 splat(double v) { return {_mm256_set1_pd(v), _mm256_set1_pd(v)}; }

template <class Op>
D8 each(D8 a, D8 b, Op op) {
  return {op(a.lo, b.lo), op(a.hi, b.hi)};
}
D8 sub(D8 a, D8 b) {
  return each(a, b, [](__m256d x, __m256d y) { return _mm256_sub_pd(x, y); });
}
D8 mul(D8 a, D8 b) {
  return each(a, b, [](__m256d x, __m256d y) { return _mm256_mul_pd(x, y); });
}
D8 div(D8 a, D8 b) {
  return each(a, b, [](__m256d x, __m256d y) { return _mm256_div_pd(x, y); });
}
D8 fma(D8 a, D8 b, D8 c) { return {_mm256_fmadd_pd(a.lo, b.lo, c.lo), _mm256_fmadd_pd(a.hi, b.hi, c.hi)}; }
D8 negate(D8 a) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  return {_mm256_xor_pd(a.lo, sign), _mm256_xor_pd(a.hi, sign)};
}
D8 magnitude(D8 a) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  return {_mm256_andnot_pd(sign, a.lo), _mm256_andnot_pd(sign, a.hi)};
}

// Lane masks as eight bits (bit l: lane l), and as registers for blends.
using Lanes = unsigned;
__m256 float_mask(Lanes m) {
  const __m256i bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  return _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32(static_cast<int>(m)), bit), bit));
}
D8 double_mask(Lanes m) {
  const __m256i bit = _mm256_setr_epi64x(1, 2, 4, 8);
  const auto part = [&](Lanes four) {
    return _mm256_castsi256_pd(_mm256_cmpeq_epi64(_mm256_and_si256(_mm256_set1_epi64x(four), bit), bit));
  };
  return {part(m & 15u), part(m >> 4)};
}
template <int kCmp>
Lanes compare(__m256 a, __m256 b) {
  return static_cast<Lanes>(_mm256_movemask_ps(_mm256_cmp_ps(a, b, kCmp)));
}
template <int kCmp>
Lanes compare(D8 a, D8 b) {
  return static_cast<Lanes>(_mm256_movemask_pd(_mm256_cmp_pd(a.lo, b.lo, kCmp))) |
         static_cast<Lanes>(_mm256_movemask_pd(_mm256_cmp_pd(a.hi, b.hi, kCmp))) << 4;
}
__m256 pick(__m256 otherwise, __m256 then, Lanes m) { return _mm256_blendv_ps(otherwise, then, float_mask(m)); }
D8 pick(D8 otherwise, D8 then, Lanes m) {
  const D8 mask = double_mask(m);
  return {_mm256_blendv_pd(otherwise.lo, then.lo, mask.lo), _mm256_blendv_pd(otherwise.hi, then.hi, mask.hi)};
}

struct Params8 {
  __m256 scale, offset;
};
Params8 pick(Params8 otherwise, Params8 then, Lanes m) {
  return {pick(otherwise.scale, then.scale, m), pick(otherwise.offset, then.offset, m)};
}

// math::affine_stored_range, lane by lane.
Params8 stored_range(D8 lo, D8 hi, uint32_t qmax, bool half) {
  const double q = static_cast<double>(qmax);
  const D8 max_scale = splat(static_cast<double>(FLT_MAX) / (q + 1.0));
  constexpr double kMinScale = 1.401298464324817e-45;  // as affine_from_range
  D8 s = div(sub(hi, lo), splat(q));
  const Lanes empty = compare<_CMP_LE_OQ>(s, splat(0.0));
  const Lanes wide = compare<_CMP_GT_OQ>(s, max_scale);
  if (wide != 0) {
    const D8 mid = fma(splat(0.5), lo, mul(splat(0.5), hi));
    lo = pick(lo, fma(splat(-0.5 * q), max_scale, mid), wide);
    s = pick(s, max_scale, wide);
  }
  s = pick(s, splat(kMinScale), compare<_CMP_LT_OQ>(s, splat(kMinScale)));
  Params8 p{narrow(s), _mm256_add_ps(narrow(lo), _mm256_setzero_ps())};
  p.scale = pick(p.scale, _mm256_setzero_ps(), empty);
  if (half) {
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m256 s16 = _mm256_cvtph_ps(_mm256_cvtps_ph(p.scale, kRound));
    const Lanes vanished =
        compare<_CMP_GT_OQ>(p.scale, _mm256_setzero_ps()) & ~compare<_CMP_GT_OQ>(s16, _mm256_setzero_ps()) & 0xffu;
    s16 = pick(s16, _mm256_set1_ps(5.9604644775390625e-08f), vanished);  // the smallest half subnormal
    p = {s16, _mm256_add_ps(_mm256_cvtph_ps(_mm256_cvtps_ph(p.offset, kRound)), _mm256_setzero_ps())};
  }
  return p;
}

// math::affine_inverse's `inv` for normal and zero scales; false when a
// lane in `lanes` has a subnormal scale (the lifted inverse).
bool inverse(__m256 scale, Lanes lanes, __m256& inv) {
  const Lanes positive = compare<_CMP_GT_OQ>(scale, _mm256_setzero_ps());
  const Lanes normal = compare<_CMP_GE_OQ>(scale, _mm256_set1_ps(FLT_MIN));
  if ((positive & ~normal & lanes) != 0) return false;
  inv = pick(_mm256_setzero_ps(), _mm256_div_ps(_mm256_set1_ps(1.0f), scale), positive);
  return true;
}

struct Sums8 {
  __m256 sse, q, qq, qx;
};

// The reference's lane_tree over sixteen registers of lanes.
__m256 fold(const __m256* lane) {
  __m256 t[8];
  for (int l = 0; l < 8; ++l) t[l] = _mm256_add_ps(lane[l], lane[l + 8]);
  return _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(t[0], t[1]), _mm256_add_ps(t[2], t[3])),
                       _mm256_add_ps(_mm256_add_ps(t[4], t[5]), _mm256_add_ps(t[6], t[7])));
}

// The eight groups' values, transposed, and what every pass shares.
struct Lanes8 {
  const float* xt;
  size_t n;
  __m256 unit, qmax;

  // K candidates' AffineGroup::sse (or, with kSums, sums) in one pass:
  // sum lane l of the reference takes values l, l + 16, ... in order. The
  // values go in order too, so the sixteen lanes' sums of one block of 16
  // values are independent of each other (they wait only on the block
  // before), and stay in L1 between blocks.
  template <int K, bool kSums>
  void pass(const Params8* p, const __m256* inv, Sums8* out) const {
    const __m256 zero = _mm256_setzero_ps(), magic = _mm256_set1_ps(12582912.0f);
    __m256 e[K][16], q[K][16], qq[K][16], qx[K][16];
    for (int k = 0; k < K; ++k) {
      for (int l = 0; l < 16; ++l) {
        e[k][l] = zero;
        if constexpr (kSums) q[k][l] = qq[k][l] = qx[k][l] = zero;
      }
    }
    for (size_t block = 0; block < n; block += 16) {
      const size_t lanes = n - block < 16 ? n - block : 16;
      for (size_t l = 0; l < lanes; ++l) {
        const __m256 v = _mm256_loadu_ps(xt + 8 * (block + l));
        for (int k = 0; k < K; ++k) {
          __m256 t = _mm256_mul_ps(_mm256_sub_ps(v, p[k].offset), inv[k]);
          t = _mm256_min_ps(_mm256_max_ps(t, zero), qmax);                 // as clampf
          const __m256 c = _mm256_sub_ps(_mm256_add_ps(t, magic), magic);  // round_small_uint, exact
          const __m256 d = _mm256_mul_ps(_mm256_sub_ps(v, _mm256_fmadd_ps(c, p[k].scale, p[k].offset)), unit);
          e[k][l] = _mm256_fmadd_ps(d, d, e[k][l]);
          if constexpr (kSums) {
            q[k][l] = _mm256_add_ps(q[k][l], c);
            qq[k][l] = _mm256_fmadd_ps(c, c, qq[k][l]);
            qx[k][l] = _mm256_fmadd_ps(c, _mm256_mul_ps(v, unit), qx[k][l]);
          }
        }
      }
    }
    for (int k = 0; k < K; ++k) {
      out[k].sse = fold(e[k]);
      if constexpr (kSums) out[k] = Sums8{out[k].sse, fold(q[k]), fold(qq[k]), fold(qx[k])};
    }
  }

  void sse(const Params8* p, const __m256* inv, int count, __m256* out) const {
    Sums8 s[math::kClipBatchMax];
    static_assert(math::kClipBatchMax == 3, "one pass<K> a batch size");
    if (count == 1) pass<1, false>(p, inv, s);
    if (count == 2) pass<2, false>(p, inv, s);
    if (count == 3) pass<3, false>(p, inv, s);
    for (int k = 0; k < count; ++k) out[k] = s[k].sse;
  }

  Sums8 sums(const Params8& p, __m256 inv) const {
    Sums8 s;
    pass<1, true>(&p, &inv, &s);
    return s;
  }

  // AffineGroup::total: lane l += x * unit (a product, then a sum).
  __m256 total() const {
    __m256 lane[16];
    for (__m256& v : lane) v = _mm256_setzero_ps();
    for (size_t i = 0; i < n; ++i)
      lane[i % 16] = _mm256_add_ps(lane[i % 16], _mm256_mul_ps(_mm256_loadu_ps(xt + 8 * i), unit));
    return fold(lane);
  }
};

// xt[i * stride + l] = src[l][i] for i < n: eight groups, a group a lane
// (the sixteen-lane search writes two such halves, stride 16). Blocks of
// 8 x 8 go through registers.
void transpose_eight(const float* const* src, size_t n, float* xt, size_t stride = 8) {
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

}  // namespace

// A batch fills only its first `count` candidates, and passes read only
// those: GCC cannot see it through the dispatch on count.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
bool search_eight_groups(const float* const* values, size_t n, const float* lo_in, const float* hi_in, uint32_t qmax,
                         bool half, float* scratch, AffineParams* out) {
  transpose_eight(values, n, scratch);
  const float* xt = scratch;
  const __m256 lo_f = _mm256_loadu_ps(lo_in), hi_f = _mm256_loadu_ps(hi_in);
  const D8 lo = widen(lo_f), hi = widen(hi_f);
  Params8 best = stored_range(lo, hi, qmax, half);
  // Groups of one value repeated stop here, as the reference does.
  const Lanes live = compare<_CMP_GT_OQ>(best.scale, _mm256_setzero_ps());
  alignas(32) float unit[8];
  for (int l = 0; l < 8; ++l)
    unit[l] = math::affine_unit(static_cast<double>(hi_in[l]) - static_cast<double>(lo_in[l]));
  const Lanes8 g{xt, n, _mm256_load_ps(unit), _mm256_set1_ps(static_cast<float>(qmax))};

  if (live != 0) {
    __m256 inv;
    if (!inverse(best.scale, live, inv)) return false;
    __m256 best_sse;
    g.sse(&best, &inv, 1, &best_sse);
    const D8 range = sub(hi, lo);
    D8 best_lo = lo;
    const math::ClipWalk walk = math::clip_walk(qmax);
    for (int side = 0; side < 2; ++side) {
      D8 chosen = side == 0 ? lo : hi;
      __m256 previous = best_sse;
      __m256i stalls = _mm256_setzero_si256();
      const __m256i patience = _mm256_set1_epi32(walk.patience);
      const auto walking = [&] {
        return live & static_cast<Lanes>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(patience, stalls))));
      };
      for (int first = 1; first <= walk.steps && walking() != 0; first += walk.batch) {
        const int count = walk.steps - first + 1 < walk.batch ? walk.steps - first + 1 : walk.batch;
        Params8 p[math::kClipBatchMax];
        D8 end[math::kClipBatchMax];
        __m256 inv_k[math::kClipBatchMax], sse[math::kClipBatchMax];
        for (int k = 0; k < count; ++k) {
          const D8 fraction = splat(math::kMaxClip * (first + k) / walk.steps);
          end[k] = side == 0 ? fma(range, fraction, lo) : fma(negate(range), fraction, hi);
          p[k] = side == 0 ? stored_range(end[k], hi, qmax, half) : stored_range(best_lo, end[k], qmax, half);
          if (!inverse(p[k].scale, walking(), inv_k[k])) return false;
        }
        g.sse(p, inv_k, count, sse);
        for (int k = 0; k < count; ++k) {
          const Lanes active = walking();
          const Lanes better = active & compare<_CMP_LT_OQ>(sse[k], best_sse);
          best_sse = pick(best_sse, sse[k], better);
          best = pick(best, p[k], better);
          chosen = pick(chosen, end[k], better);
          const Lanes falling = compare<_CMP_LT_OQ>(sse[k], previous);
          const __m256i next = _mm256_andnot_si256(_mm256_castps_si256(float_mask(falling)),
                                                   _mm256_add_epi32(stalls, _mm256_set1_epi32(1)));
          stalls = _mm256_castps_si256(pick(_mm256_castsi256_ps(stalls), _mm256_castsi256_ps(next), active));
          previous = pick(previous, sse[k], active);
        }
      }
      if (side == 0) best_lo = chosen;
    }

    // Least-squares refits of (scale, offset) to the best codes, while they improve.
    if (!inverse(best.scale, live, inv)) return false;
    Sums8 c = g.sums(best, inv);
    const D8 sx = widen(g.total()), nn = splat(static_cast<double>(n));
    const D8 to_values = div(splat(1.0), widen(g.unit));
    Lanes refitting = live;
    for (int iter = 0; iter < math::kRefits && refitting != 0; ++iter) {
      const D8 sq = widen(c.q), sqq = widen(c.qq), sqx = widen(c.qx);
      const D8 den = fma(nn, sqq, negate(mul(sq, sq)));
      refitting &= compare<_CMP_GT_OQ>(den, splat(0.0));
      const D8 s_units = div(fma(nn, sqx, negate(mul(sq, sx))), den);
      const D8 s = mul(s_units, to_values), m = mul(div(fma(negate(s_units), sq, sx), nn), to_values);
      refitting &=
          compare<_CMP_GT_OQ>(s, splat(0.0)) & compare<_CMP_LE_OQ>(magnitude(m), splat(static_cast<double>(FLT_MAX)));
      if (refitting == 0) break;
      const Params8 p = stored_range(m, fma(s, splat(static_cast<double>(qmax)), m), qmax, half);
      __m256 inv_p;
      if (!inverse(p.scale, refitting, inv_p)) return false;
      const Sums8 next = g.sums(p, inv_p);
      refitting &= compare<_CMP_LT_OQ>(next.sse, best_sse);
      best_sse = pick(best_sse, next.sse, refitting);
      best = pick(best, p, refitting);
      c = Sums8{pick(c.sse, next.sse, refitting), pick(c.q, next.q, refitting), pick(c.qq, next.qq, refitting),
                pick(c.qx, next.qx, refitting)};
    }
  }
  alignas(32) float scale[8], offset[8];
  _mm256_store_ps(scale, best.scale);
  _mm256_store_ps(offset, best.offset);
  for (int l = 0; l < 8; ++l) out[l] = AffineParams{scale[l], offset[l]};
  return true;
}
#pragma GCC diagnostic pop

// ---- sixteen groups at once: AVX-512 ------------------------------------------------
//
// The same walk with sixteen groups in the sixteen lanes of a 512-bit
// register, where the CPU runs AVX-512F (checked at run time): a pass over
// the values does the work of two eight-lane passes, and the serial steps
// between candidates (parameters in double, the fp16 rounding, the choices)
// serve sixteen groups instead of eight. Every operation is the eight-lane
// path's in its lanes (the rounding to whole codes, nearest-even, as
// VRNDSCALEPS does it for the values 0 to qmax), so each lane's answer is
// again the reference's bit for bit.
#pragma GCC push_options
#pragma GCC target("avx512f")
// GCC 12's AVX-512 headers build some results on _mm512_undefined_*(), which
// its -Wuninitialized reports inside every caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
namespace {

struct D16 {
  __m512d lo, hi;  // lanes 0-7 and 8-15
};
using Lanes16 = unsigned;

D16 widen16(__m512 f) {
  return {_mm512_cvtps_pd(_mm512_castps512_ps256(f)),
          _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(f), 1)))};
}
__m512 narrow16(D16 d) {
  const __m256 lo = _mm512_cvtpd_ps(d.lo), hi = _mm512_cvtpd_ps(d.hi);
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(lo)), _mm256_castps_pd(hi), 1));
}
D16 splat16(double v) { return {_mm512_set1_pd(v), _mm512_set1_pd(v)}; }
D16 sub16(D16 a, D16 b) { return {_mm512_sub_pd(a.lo, b.lo), _mm512_sub_pd(a.hi, b.hi)}; }
D16 mul16(D16 a, D16 b) { return {_mm512_mul_pd(a.lo, b.lo), _mm512_mul_pd(a.hi, b.hi)}; }
D16 div16(D16 a, D16 b) { return {_mm512_div_pd(a.lo, b.lo), _mm512_div_pd(a.hi, b.hi)}; }
D16 fma16(D16 a, D16 b, D16 c) { return {_mm512_fmadd_pd(a.lo, b.lo, c.lo), _mm512_fmadd_pd(a.hi, b.hi, c.hi)}; }
D16 sign_bits16(D16 a, bool clear) {
  const __m512i sign = _mm512_set1_epi64(static_cast<long long>(0x8000000000000000ull));
  const auto op = [&](__m512d v) {
    const __m512i bits = _mm512_castpd_si512(v);
    return _mm512_castsi512_pd(clear ? _mm512_andnot_si512(sign, bits) : _mm512_xor_si512(bits, sign));
  };
  return {op(a.lo), op(a.hi)};
}
D16 negate16(D16 a) { return sign_bits16(a, false); }
D16 magnitude16(D16 a) { return sign_bits16(a, true); }

template <int kCmp>
Lanes16 compare16(__m512 a, __m512 b) {
  return static_cast<Lanes16>(_mm512_cmp_ps_mask(a, b, kCmp));
}
template <int kCmp>
Lanes16 compare16(D16 a, D16 b) {
  return static_cast<Lanes16>(_mm512_cmp_pd_mask(a.lo, b.lo, kCmp)) |
         static_cast<Lanes16>(_mm512_cmp_pd_mask(a.hi, b.hi, kCmp)) << 8;
}
__m512 pick16(__m512 otherwise, __m512 then, Lanes16 m) {
  return _mm512_mask_blend_ps(static_cast<__mmask16>(m), otherwise, then);
}
D16 pick16(D16 otherwise, D16 then, Lanes16 m) {
  return {_mm512_mask_blend_pd(static_cast<__mmask8>(m & 0xffu), otherwise.lo, then.lo),
          _mm512_mask_blend_pd(static_cast<__mmask8>(m >> 8), otherwise.hi, then.hi)};
}

struct Params16 {
  __m512 scale, offset;
};
Params16 pick16(Params16 otherwise, Params16 then, Lanes16 m) {
  return {pick16(otherwise.scale, then.scale, m), pick16(otherwise.offset, then.offset, m)};
}

// math::affine_stored_range, lane by lane (stored_range's sixteen-lane twin).
Params16 stored_range16(D16 lo, D16 hi, uint32_t qmax, bool half) {
  const double q = static_cast<double>(qmax);
  const D16 max_scale = splat16(static_cast<double>(FLT_MAX) / (q + 1.0));
  constexpr double kMinScale = 1.401298464324817e-45;  // as affine_from_range
  const __m512 zero = _mm512_setzero_ps();
  D16 s = div16(sub16(hi, lo), splat16(q));
  const Lanes16 empty = compare16<_CMP_LE_OQ>(s, splat16(0.0));
  const Lanes16 wide = compare16<_CMP_GT_OQ>(s, max_scale);
  if (wide != 0) {
    const D16 mid = fma16(splat16(0.5), lo, mul16(splat16(0.5), hi));
    lo = pick16(lo, fma16(splat16(-0.5 * q), max_scale, mid), wide);
    s = pick16(s, max_scale, wide);
  }
  s = pick16(s, splat16(kMinScale), compare16<_CMP_LT_OQ>(s, splat16(kMinScale)));
  Params16 p{narrow16(s), _mm512_add_ps(narrow16(lo), zero)};
  p.scale = pick16(p.scale, zero, empty);
  if (half) {
    constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    __m512 s16 = _mm512_cvtph_ps(_mm512_cvtps_ph(p.scale, kRound));
    const Lanes16 vanished = compare16<_CMP_GT_OQ>(p.scale, zero) & ~compare16<_CMP_GT_OQ>(s16, zero) & 0xffffu;
    s16 = pick16(s16, _mm512_set1_ps(5.9604644775390625e-08f), vanished);  // the smallest half subnormal
    p = {s16, _mm512_add_ps(_mm512_cvtph_ps(_mm512_cvtps_ph(p.offset, kRound)), zero)};
  }
  return p;
}

// inverse()'s twin: false when a lane in `lanes` has a subnormal scale.
bool inverse16(__m512 scale, Lanes16 lanes, __m512& inv) {
  const __m512 zero = _mm512_setzero_ps();
  const Lanes16 positive = compare16<_CMP_GT_OQ>(scale, zero);
  const Lanes16 normal = compare16<_CMP_GE_OQ>(scale, _mm512_set1_ps(FLT_MIN));
  if ((positive & ~normal & lanes) != 0) return false;
  inv = pick16(zero, _mm512_div_ps(_mm512_set1_ps(1.0f), scale), positive);
  return true;
}

struct Sums16 {
  __m512 sse, q, qq, qx;
};

__m512 fold16(const __m512* lane) {
  __m512 t[8];
  for (int l = 0; l < 8; ++l) t[l] = _mm512_add_ps(lane[l], lane[l + 8]);
  return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(t[0], t[1]), _mm512_add_ps(t[2], t[3])),
                       _mm512_add_ps(_mm512_add_ps(t[4], t[5]), _mm512_add_ps(t[6], t[7])));
}

// Lanes8's twin: sixteen groups, value i of group l at xt[16 i + l].
struct GroupLanes16 {
  const float* xt;
  size_t n;
  __m512 unit, qmax;

  template <int K, bool kSums>
  void pass(const Params16* p, const __m512* inv, Sums16* out) const {
    const __m512 zero = _mm512_setzero_ps();
    __m512 e[K][16], q[K][16], qq[K][16], qx[K][16];
    for (int k = 0; k < K; ++k) {
      for (int l = 0; l < 16; ++l) {
        e[k][l] = zero;
        if constexpr (kSums) q[k][l] = qq[k][l] = qx[k][l] = zero;
      }
    }
    for (size_t block = 0; block < n; block += 16) {
      const size_t lanes = n - block < 16 ? n - block : 16;
      for (size_t l = 0; l < lanes; ++l) {
        const __m512 v = _mm512_loadu_ps(xt + 16 * (block + l));
        for (int k = 0; k < K; ++k) {
          __m512 t = _mm512_mul_ps(_mm512_sub_ps(v, p[k].offset), inv[k]);
          t = _mm512_min_ps(_mm512_max_ps(t, zero), qmax);  // as clampf
          const __m512 c = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          const __m512 d = _mm512_mul_ps(_mm512_sub_ps(v, _mm512_fmadd_ps(c, p[k].scale, p[k].offset)), unit);
          e[k][l] = _mm512_fmadd_ps(d, d, e[k][l]);
          if constexpr (kSums) {
            q[k][l] = _mm512_add_ps(q[k][l], c);
            qq[k][l] = _mm512_fmadd_ps(c, c, qq[k][l]);
            qx[k][l] = _mm512_fmadd_ps(c, _mm512_mul_ps(v, unit), qx[k][l]);
          }
        }
      }
    }
    for (int k = 0; k < K; ++k) {
      out[k].sse = fold16(e[k]);
      if constexpr (kSums) out[k] = Sums16{out[k].sse, fold16(q[k]), fold16(qq[k]), fold16(qx[k])};
    }
  }

  void sse(const Params16* p, const __m512* inv, int count, __m512* out) const {
    Sums16 s[math::kClipBatchMax];
    static_assert(math::kClipBatchMax == 3, "one pass<K> a batch size");
    if (count == 1) pass<1, false>(p, inv, s);
    if (count == 2) pass<2, false>(p, inv, s);
    if (count == 3) pass<3, false>(p, inv, s);
    for (int k = 0; k < count; ++k) out[k] = s[k].sse;
  }

  Sums16 sums(const Params16& p, __m512 inv) const {
    Sums16 s;
    pass<1, true>(&p, &inv, &s);
    return s;
  }

  __m512 total() const {
    __m512 lane[16];
    for (__m512& v : lane) v = _mm512_setzero_ps();
    for (size_t i = 0; i < n; ++i)
      lane[i % 16] = _mm512_add_ps(lane[i % 16], _mm512_mul_ps(_mm512_loadu_ps(xt + 16 * i), unit));
    return fold16(lane);
  }
};

bool search_sixteen_avx512(const float* const* values, size_t n, const float* lo_in, const float* hi_in, uint32_t qmax,
                           bool half, float* scratch, AffineParams* out) {
  transpose_eight(values, n, scratch, 16);
  transpose_eight(values + 8, n, scratch + 8, 16);
  const D16 lo = widen16(_mm512_loadu_ps(lo_in)), hi = widen16(_mm512_loadu_ps(hi_in));
  Params16 best = stored_range16(lo, hi, qmax, half);
  const __m512 zero = _mm512_setzero_ps();
  // Groups of one value repeated stop here, as the reference does.
  const Lanes16 live = compare16<_CMP_GT_OQ>(best.scale, zero);
  alignas(64) float unit[16];
  for (int l = 0; l < 16; ++l)
    unit[l] = math::affine_unit(static_cast<double>(hi_in[l]) - static_cast<double>(lo_in[l]));
  const GroupLanes16 g{scratch, n, _mm512_load_ps(unit), _mm512_set1_ps(static_cast<float>(qmax))};

  if (live != 0) {
    __m512 inv;
    if (!inverse16(best.scale, live, inv)) return false;
    __m512 best_sse;
    g.sse(&best, &inv, 1, &best_sse);
    const D16 range = sub16(hi, lo);
    D16 best_lo = lo;
    const math::ClipWalk walk = math::clip_walk(qmax);
    for (int side = 0; side < 2; ++side) {
      D16 chosen = side == 0 ? lo : hi;
      __m512 previous = best_sse;
      __m512i stalls = _mm512_setzero_si512();
      const __m512i patience = _mm512_set1_epi32(walk.patience);
      const auto walking = [&] { return live & static_cast<Lanes16>(_mm512_cmpgt_epi32_mask(patience, stalls)); };
      for (int first = 1; first <= walk.steps && walking() != 0; first += walk.batch) {
        const int count = walk.steps - first + 1 < walk.batch ? walk.steps - first + 1 : walk.batch;
        Params16 p[math::kClipBatchMax];
        D16 end[math::kClipBatchMax];
        __m512 inv_k[math::kClipBatchMax], sse[math::kClipBatchMax];
        for (int k = 0; k < count; ++k) {
          const D16 fraction = splat16(math::kMaxClip * (first + k) / walk.steps);
          end[k] = side == 0 ? fma16(range, fraction, lo) : fma16(negate16(range), fraction, hi);
          p[k] = side == 0 ? stored_range16(end[k], hi, qmax, half) : stored_range16(best_lo, end[k], qmax, half);
          if (!inverse16(p[k].scale, walking(), inv_k[k])) return false;
        }
        g.sse(p, inv_k, count, sse);
        for (int k = 0; k < count; ++k) {
          const Lanes16 active = walking();
          const Lanes16 better = active & compare16<_CMP_LT_OQ>(sse[k], best_sse);
          best_sse = pick16(best_sse, sse[k], better);
          best = pick16(best, p[k], better);
          chosen = pick16(chosen, end[k], better);
          const Lanes16 falling = compare16<_CMP_LT_OQ>(sse[k], previous);
          // A falling lane's stalls restart at 0; the others' count one more.
          const __m512i next =
              _mm512_maskz_add_epi32(static_cast<__mmask16>(~falling & 0xffffu), stalls, _mm512_set1_epi32(1));
          stalls = _mm512_mask_blend_epi32(static_cast<__mmask16>(active), stalls, next);
          previous = pick16(previous, sse[k], active);
        }
      }
      if (side == 0) best_lo = chosen;
    }

    // Least-squares refits of (scale, offset) to the best codes, while they improve.
    if (!inverse16(best.scale, live, inv)) return false;
    Sums16 c = g.sums(best, inv);
    const D16 sx = widen16(g.total()), nn = splat16(static_cast<double>(n));
    const D16 to_values = div16(splat16(1.0), widen16(g.unit));
    Lanes16 refitting = live;
    for (int iter = 0; iter < math::kRefits && refitting != 0; ++iter) {
      const D16 sq = widen16(c.q), sqq = widen16(c.qq), sqx = widen16(c.qx);
      const D16 den = fma16(nn, sqq, negate16(mul16(sq, sq)));
      refitting &= compare16<_CMP_GT_OQ>(den, splat16(0.0));
      const D16 s_units = div16(fma16(nn, sqx, negate16(mul16(sq, sx))), den);
      const D16 s = mul16(s_units, to_values), m = mul16(div16(fma16(negate16(s_units), sq, sx), nn), to_values);
      refitting &= compare16<_CMP_GT_OQ>(s, splat16(0.0)) &
                   compare16<_CMP_LE_OQ>(magnitude16(m), splat16(static_cast<double>(FLT_MAX)));
      if (refitting == 0) break;
      const Params16 p = stored_range16(m, fma16(s, splat16(static_cast<double>(qmax)), m), qmax, half);
      __m512 inv_p;
      if (!inverse16(p.scale, refitting, inv_p)) return false;
      const Sums16 next = g.sums(p, inv_p);
      refitting &= compare16<_CMP_LT_OQ>(next.sse, best_sse);
      best_sse = pick16(best_sse, next.sse, refitting);
      best = pick16(best, p, refitting);
      c = Sums16{pick16(c.sse, next.sse, refitting), pick16(c.q, next.q, refitting), pick16(c.qq, next.qq, refitting),
                 pick16(c.qx, next.qx, refitting)};
    }
  }
  alignas(64) float scale[16], offset[16];
  _mm512_store_ps(scale, best.scale);
  _mm512_store_ps(offset, best.offset);
  for (int l = 0; l < 16; ++l) out[l] = AffineParams{scale[l], offset[l]};
  return true;
}

}  // namespace
#pragma GCC diagnostic pop
#pragma GCC pop_options

namespace {
std::atomic<bool> sixteen_allowed{true};
}  // namespace

size_t affine_search_lanes() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && sixteen_allowed.load(std::memory_order_relaxed) ? 16 : 8;
}

bool search_sixteen_groups(const float* const* values, size_t n, const float* lo, const float* hi, uint32_t qmax,
                           bool half, float* scratch, math::AffineParams* out) {
  if (affine_search_lanes() != 16) return false;
  return search_sixteen_avx512(values, n, lo, hi, qmax, half, scratch, out);
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
