// SPDX-License-Identifier: Apache-2.0
// Per-element and per-group arithmetic of the scalar codecs, compiled by both
// g++ (reference and fast CPU paths) and nvcc (kernels), so the CPU tests cover
// what the GPU computes.
//
// Bit-exactness across the three implementations rests on three rules:
//  - every multiply-add is written as an explicit fmaf/fma (one rounding on
//    every target), and no other product feeds a sum: compilers contract a*b+c
//    on their own (g++ does even in ISO mode, nvcc by default), so a plain
//    a*b+c would round differently on different paths;
//  - rounding to integers uses the 1.5*2^23 trick (plain adds), never the
//    current rounding mode;
//  - order-dependent reductions (sums) run sequentially over one group in the
//    functions below; min/max reductions are exact and may run in any order.
#pragma once

#include <edo/float16.hpp>
#include <edo/float8.hpp>

#include <cfloat>
#include <cmath>
#include <cstddef>
#include <cstdint>

namespace edo::math {

// ---- helpers --------------------------------------------------------------

EDO_HD inline bool is_finite_bits(float x) { return (float_bits(x) & 0x7f800000u) != 0x7f800000u; }

// Round a float in [0, 2^22) to the nearest integer, ties to even.
EDO_HD inline uint32_t round_small_uint(float t) {
  const float magic = 12582912.0f;  // 1.5 * 2^23: its ulp is 1
  return float_bits(t + magic) - float_bits(magic);
}

EDO_HD inline float clampf(float v, float lo, float hi) {
  v = v > lo ? v : lo;
  return v < hi ? v : hi;
}

// ---- fp8: the conversions are edo/float8.hpp's ------------------------------------

// Per-row scale so that the row's largest magnitude maps to the format's
// largest finite value. Never zero, so x / scale is always finite for finite x.
EDO_HD inline float fp8_scale(float amax, Fp8Format fmt) {
  const float s = amax / fp8_layout(fmt).max_value;
  const float tiny = bits_float(1u);  // smallest subnormal
  return s > tiny ? s : tiny;
}

EDO_HD inline uint8_t fp8_encode(float x, float scale, Fp8Format fmt) { return float_to_fp8(x / scale, fmt); }
EDO_HD inline float fp8_decode(uint8_t c, float scale, Fp8Format fmt) { return fp8_to_float(c, fmt) * scale; }

// ---- affine integer codes (int8/int6/int5/int4/int3/int2) -------------------------------

// One group's parameters: x ~= q * scale + offset, q in [0, qmax].
struct AffineParams {
  float scale;
  float offset;
};

// The inverse of a scale, as two factors: q = ((x - offset) * lift) * inv.
// lift is 1 for a normal scale (multiplying by 1 is exact, so this is the
// plain (x - offset) * (1 / scale)); a subnormal scale, whose reciprocal
// would overflow, is lifted by 2^64 first (exact on both sides), so tables
// of tiny values keep int8's precision instead of decoding to constants.
struct AffineInverse {
  float lift;
  float inv;
};

EDO_HD inline AffineInverse affine_inverse(float scale) {
  if (!(scale > 0.0f)) return AffineInverse{1.0f, 0.0f};
  if (scale >= FLT_MIN) return AffineInverse{1.0f, 1.0f / scale};
  constexpr float kLift = 18446744073709551616.0f;  // 2^64
  return AffineInverse{kLift, 1.0f / (scale * kLift)};
}

EDO_HD inline uint32_t affine_quantize(float x, float offset, AffineInverse inv, float qmax) {
  return round_small_uint(clampf(((x - offset) * inv.lift) * inv.inv, 0.0f, qmax));
}

EDO_HD inline float affine_dequantize(uint32_t q, AffineParams p) {
  return fmaf(static_cast<float>(q), p.scale, p.offset);
}

// Turns a range [lo, hi] (lo <= hi, both finite) into stored parameters. The
// scale is kept in [2^-149, FLT_MAX / (qmax + 1)]: nonzero (a subnormal scale
// serves a range of subnormal values, see affine_inverse) and small enough
// that q * scale + offset cannot overflow; a range wider than float can hold
// is clipped (saturation) rather than decoded to Inf. -0 offsets become +0 so
// the stored bytes do not depend on the order the minimum was found in.
EDO_HD inline AffineParams affine_from_range(double lo, double hi, uint32_t qmax) {
  const double q = static_cast<double>(qmax);
  double s = (hi - lo) / q;
  if (s <= 0.0) return AffineParams{0.0f, static_cast<float>(lo) + 0.0f};
  const double max_scale = static_cast<double>(FLT_MAX) / (q + 1.0);
  if (s > max_scale) {
    s = max_scale;
    const double mid = fma(0.5, lo, 0.5 * hi);
    lo = fma(-0.5 * q, s, mid);
  }
  constexpr double kMinScale = 1.401298464324817e-45;  // 2^-149, the smallest subnormal
  if (s < kMinScale) s = kMinScale;
  return AffineParams{static_cast<float>(s), static_cast<float>(lo) + 0.0f};
}

// The parameters as an fp16 pair stores them (`scale=fp16`): each rounded to
// the nearest half, a positive scale kept at least the smallest half
// subnormal (2^-24) so it stays positive. A pair that fp16 cannot hold comes
// out infinite: its error is then Inf or NaN, which no search keeps, and the
// encoder refuses values from 65520 on before it gets here.
EDO_HD inline AffineParams affine_half_params(AffineParams p) {
  float s = half_bits_to_float(float_to_half_bits(p.scale));
  if (p.scale > 0.0f && !(s > 0.0f)) s = half_bits_to_float(1);
  return AffineParams{s, half_bits_to_float(float_to_half_bits(p.offset)) + 0.0f};
}

// affine_from_range, then rounded to the stored precision.
EDO_HD inline AffineParams affine_stored_range(double lo, double hi, uint32_t qmax, bool half) {
  const AffineParams p = affine_from_range(lo, hi, qmax);
  return half ? affine_half_params(p) : p;
}

// The power of two 2^-e with range in [2^e, 2^(e+1)), e clamped to
// [-126, 126] (so the unit is a normal float); 1 for an empty range. Read
// from and written as exponent bits: ilogb and ldexpf's answers bit for bit
// (a subnormal or infinite range lands on a clamp either way), without two
// library calls a group, which cost the sixteen-lane search a twentieth of
// its time on groups of 32 values.
EDO_HD inline float affine_unit(double range) {
  if (!(range > 0.0)) return 1.0f;
  uint64_t range_bits;
  memcpy(&range_bits, &range, sizeof range_bits);
  int e = static_cast<int>(range_bits >> 52 & 0x7ffu) - 1023;
  e = e < -126 ? -126 : e > 126 ? 126 : e;
  const uint32_t unit_bits = static_cast<uint32_t>(127 - e) << 23;
  float unit;
  memcpy(&unit, &unit_bits, sizeof unit);
  return unit;
}

// The search measures a group in centred units: value x becomes
// x' = x * unit - lo * unit in one fma, in [0, 2) for a group of range
// [lo, hi] (unit: affine_unit of hi - lo, a power of two, so lo * unit is
// exact but where it underflows), and no sum below overflows or loses the
// group's detail, whatever the table's magnitude or offset.
EDO_HD inline float affine_centred(float x, float lo_units, float unit) { return fmaf(x, unit, -lo_units); }

// A candidate (scale, offset) in centred units: x' ~= q * S + M, codes
// q = round(clamp(x' * inv + bias, 0, qmax)), the same codes as
// affine_quantize up to ties at a code boundary, which the search does not
// care about (the codes a file stores are affine_quantize's of the chosen
// pair). A candidate no group could want (S below 2^-100 or not finite, M
// beyond 2^20 units: a group's range is one or two units) is not measured
// and errs +Inf, which also keeps every product below finite: t never
// meets Inf - Inf.
struct AffineCandidate {
  float inv, bias;
  float scale, offset;  // S and M
  bool measurable;
};

EDO_HD inline AffineCandidate affine_candidate(AffineParams p, float lo_units, float unit) {
  AffineCandidate c;
  c.scale = p.scale * unit;
  c.offset = fmaf(p.offset, unit, -lo_units);
  c.measurable = c.scale >= 0x1p-100f && c.scale <= FLT_MAX && fabsf(c.offset) <= 0x1p20f;
  c.inv = c.measurable ? 1.0f / c.scale : 0.0f;
  c.bias = c.measurable ? -(c.offset * c.inv) : 0.0f;
  return c;
}

// x''s code under a candidate, as a float.
EDO_HD inline float affine_candidate_code(float xc, const AffineCandidate& c, float qmax) {
  return static_cast<float>(round_small_uint(clampf(fmaf(xc, c.inv, c.bias), 0.0f, qmax)));
}

// What the search knows of a group besides its values: the sums of x' and
// x'^2, and its size.
struct AffineMoments {
  double sx, sxx, n;
};

// A candidate's codes, summarised: the sums of q, q^2 and q * x', and from
// them and the group's moments the squared error sum (x' - S q - M)^2,
// expanded (in double; sum q and sum q^2 are exact integers in float, sum
// q x' carries a few float roundings, so the error is good to about 1e-4 of
// itself, plenty to rank candidates). One pass of seven lane operations a
// value (code: fma, max, min, round; sums: add, fma, fma) gives both what
// the walk compares and what a refit needs, so no candidate is measured
// twice. Each float sum runs in sixteen interleaved lanes, value i in lane
// i % 16, folded as lane l + lane l + 8, then a tree of the eight: the one
// order every implementation (this reference, the CPU's lane searches in
// lib/codecs, the GPU) follows.
struct AffineCodeSums {
  double sse = 0;
  float q = 0, qq = 0, qx = 0;
};

inline constexpr size_t kSumLanes = 16;

EDO_HD inline float lane_tree(const float* lane) {
  float t[8];
  for (int l = 0; l < 8; ++l) t[l] = lane[l] + lane[l + 8];
  return ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
}

// sum (x' - S q - M)^2 = S (S sum q^2 + 2 M sum q - 2 sum q x') + M (n M - 2 sum x') + sum x'^2, every
// product that meets a sum an explicit fma.
EDO_HD inline double affine_moment_sse(double s, double m, double sq, double sqq, double sqx, const AffineMoments& g) {
  const double codes = fma(s, sqq, fma(2.0 * m, sq, -2.0 * sqx));
  const double centre = fma(m, fma(g.n, m, -2.0 * g.sx), g.sxx);
  return fma(s, codes, centre);
}

EDO_HD inline AffineCodeSums affine_code_sums(const float* x, size_t n, AffineParams p, uint32_t qmax, float lo_units,
                                              float unit, const AffineMoments& g) {
  const AffineCandidate c = affine_candidate(p, lo_units, unit);
  AffineCodeSums out;
  if (!c.measurable) {
    out.sse = INFINITY;
    return out;
  }
  const float qm = static_cast<float>(qmax);
  float q[kSumLanes] = {}, qq[kSumLanes] = {}, qx[kSumLanes] = {};
  for (size_t i = 0; i < n; ++i) {
    const size_t l = i % kSumLanes;
    const float xc = affine_centred(x[i], lo_units, unit);
    const float code = affine_candidate_code(xc, c, qm);
    q[l] += code;
    qq[l] = fmaf(code, code, qq[l]);
    qx[l] = fmaf(code, xc, qx[l]);
  }
  out.q = lane_tree(q);
  out.qq = lane_tree(qq);
  out.qx = lane_tree(qx);
  out.sse = affine_moment_sse(c.scale, c.offset, out.q, out.qq, out.qx, g);
  return out;
}

EDO_HD inline AffineMoments affine_moments(const float* x, size_t n, float lo_units, float unit) {
  float s[kSumLanes] = {}, ss[kSumLanes] = {};
  for (size_t i = 0; i < n; ++i) {
    const size_t l = i % kSumLanes;
    const float xc = affine_centred(x[i], lo_units, unit);
    s[l] += xc;
    ss[l] = fmaf(xc, xc, ss[l]);
  }
  return AffineMoments{lane_tree(s), lane_tree(ss), static_cast<double>(n)};
}

// The reference's view of one group, for affine_params_search: its values,
// code width, unit, lo * unit and moments.
struct AffineGroup {
  const float* x;
  size_t n;
  uint32_t qmax;
  float unit, lo_units;
  AffineMoments moments;
  EDO_HD void sums_batch(const AffineParams* p, int count, AffineCodeSums* out) const {
    for (int k = 0; k < count; ++k) out[k] = affine_code_sums(x, n, p[k], qmax, lo_units, unit, moments);
  }
};

EDO_HD inline AffineGroup affine_group(const float* x, size_t n, uint32_t qmax, float lo, float unit) {
  const float lo_units = lo * unit;
  return AffineGroup{x, n, qmax, unit, lo_units, affine_moments(x, n, lo_units, unit)};
}

// The clip walk of affine_params_search for a code width: each end is
// clipped by 1, 2, ... steps of kMaxClip / steps of the range until
// `patience` steps in a row err no less than the step before; candidates
// are measured up to `batch` at a time (a fast evaluator shares one pass
// over the group among them; the batch never changes the answer, only the
// work spent past the walk's end). Measured on GloVe and BIGANN, row-wise
// and in groups of 32 and 16 (docs/BENCHMARKS.md, "Scalar codecs"): from
// int3 to int5, steps of 2.5% and a walk that stops at the first step that
// does not improve err less than steps of 5% with patience 3 and take about
// a third fewer candidates; int6's 64 levels gain nothing from the finer
// steps, and patience never changed its answer; int2's four levels want
// clips the patient walk reaches past a worse step, so it keeps that walk.
// Then up to kRefits least-squares refits.
struct ClipWalk {
  int steps, patience, batch;
};
inline constexpr double kMaxClip = 0.4;
inline constexpr int kClipBatchMax = 3;
inline constexpr int kRefits = 3;

EDO_HD inline ClipWalk clip_walk(uint32_t qmax) {
  if (qmax <= 3) return ClipWalk{8, 3, 3};
  return qmax >= 63 ? ClipWalk{8, 1, 1} : ClipWalk{16, 1, 1};
}

// The parameters that minimise the group's squared error among: plain
// min/max; the low end clipped along clip_walk(qmax) (the error is
// near-unimodal in the clip, and most groups' best clip is small); then the
// high end likewise, with the best low end kept; then up to kRefits
// least-squares refits of (scale, offset) to the codes of the best so far,
// while they improve. Few levels (int6 down to int2) gain most
// from clipping outliers at the ends, and the refit finds a scale no grid
// point hits. Ties keep the earlier candidate, so the choice is
// deterministic. `g` measures candidates in centred units (AffineCodeSums):
// AffineGroup here, lane twins on the CPU's fast path that give the same
// floats and doubles. With `half`, every candidate is rounded to fp16
// before it is measured, so the search picks among the pairs the file can
// store.
template <class Group>
EDO_HD inline AffineParams affine_params_search(const Group& g, size_t n, float lo, float hi, uint32_t qmax, float unit,
                                                bool half) {
  AffineParams best = affine_stored_range(lo, hi, qmax, half);
  if (!(best.scale > 0.0f)) return best;
  AffineCodeSums c;
  g.sums_batch(&best, 1, &c);
  const double range = static_cast<double>(hi) - static_cast<double>(lo);
  double best_lo = lo;
  const ClipWalk walk = clip_walk(qmax);
  for (int side = 0; side < 2; ++side) {
    double chosen = side == 0 ? static_cast<double>(lo) : static_cast<double>(hi);
    double previous = c.sse;
    int stalls = 0;
    // Steps are measured a batch at a time and taken in order; steps
    // measured past the walk's end are ignored, so the result is the
    // one-by-one walk's.
    for (int first = 1; first <= walk.steps && stalls < walk.patience; first += walk.batch) {
      const int count = walk.steps - first + 1 < walk.batch ? walk.steps - first + 1 : walk.batch;
      AffineParams p[kClipBatchMax];
      double end[kClipBatchMax];
      AffineCodeSums sums[kClipBatchMax];
      for (int k = 0; k < count; ++k) {
        const double fraction = kMaxClip * (first + k) / walk.steps;
        end[k] =
            side == 0 ? fma(range, fraction, static_cast<double>(lo)) : fma(-range, fraction, static_cast<double>(hi));
        p[k] =
            side == 0 ? affine_stored_range(end[k], hi, qmax, half) : affine_stored_range(best_lo, end[k], qmax, half);
      }
      g.sums_batch(p, count, sums);
      for (int k = 0; k < count && stalls < walk.patience; ++k) {
        if (sums[k].sse < c.sse) {
          c = sums[k];
          best = p[k];
          chosen = end[k];
        }
        stalls = sums[k].sse < previous ? 0 : stalls + 1;
        previous = sums[k].sse;
      }
    }
    if (side == 0) best_lo = chosen;
  }
  // Least squares of x' on the codes q: x' ~= S q + M, then in values (exact but for the last rounding).
  const double sx = g.moments.sx, nn = static_cast<double>(n), to_values = 1.0 / static_cast<double>(unit);
  for (int iter = 0; iter < kRefits; ++iter) {
    const double sq = c.q, sqq = c.qq, sqx = c.qx;
    const double den = fma(nn, sqq, -(sq * sq));
    if (!(den > 0.0)) break;
    const double s_units = fma(nn, sqx, -(sq * sx)) / den;
    const double s = s_units * to_values, m = fma(fma(-s_units, sq, sx) / nn, to_values, static_cast<double>(lo));
    if (!(s > 0.0) || !(fabs(m) <= static_cast<double>(FLT_MAX))) break;
    const AffineParams p = affine_stored_range(m, fma(s, static_cast<double>(qmax), m), qmax, half);
    AffineCodeSums next;
    g.sums_batch(&p, 1, &next);
    if (!(next.sse < c.sse)) break;
    best = p;
    c = next;
  }
  return best;
}

EDO_HD inline AffineParams affine_params_search(const float* x, size_t n, float lo, float hi, uint32_t qmax,
                                                bool half) {
  const float unit = affine_unit(static_cast<double>(hi) - static_cast<double>(lo));
  return affine_params_search(affine_group(x, n, qmax, lo, unit), n, lo, hi, qmax, unit, half);
}

// ---- sign codes ---------------------------------------------------------------------

// The MSE-optimal scale for sign codes: mean |x|, summed in double in order.
EDO_HD inline float sign_scale(const float* x, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; ++i) s += fabs(static_cast<double>(x[i]));
  return static_cast<float>(s / static_cast<double>(n));
}

EDO_HD inline uint32_t sign_bit(float x) { return x < 0.0f ? 1u : 0u; }
EDO_HD inline float sign_decode(uint32_t bit, float scale) { return bit ? -scale : scale; }

// ---- row layout of the scalar codecs ------------------------------------------------
//
// A row's code is [header][payload]. The header holds per-group
// parameters, little-endian: fp8 one fp32 scale; int8 to int2 (scale,
// offset) per group, an fp32 pair or, with `scale=fp16`, an fp16 pair; sign
// one fp32 scale. The payload packs value j at bit j * bits,
// least significant bits first (a 3-, 5- or 6-bit value may straddle two
// bytes); the last byte's unused bits are zero.

enum class ScalarKind : uint8_t { f32, f16, bf16, fp8_e4m3, fp8_e5m2, int8, int6, int5, int4, int3, int2, sign };
inline constexpr uint32_t kScalarKindCount = 12;

// How a kind stores a row: plain floats (no parameters), fp8 with a row
// scale, affine integers (scale and offset per group), signs with a scale.
enum class ScalarFamily : uint8_t { plain, fp8, affine, sign };

// One row per scalar kind. The affine kinds differ only in this row: their
// width, codec name and range rule; every switch over kinds handles them
// together, so a new integer width is one enumerator and one row here
// (docs/ARCHITECTURE.md, "Adding an integer width").
struct ScalarKindTraits {
  ScalarFamily family;
  uint32_t bits;      // bits per value in the payload
  const char* codec;  // the codec's name (codec.hpp's registry)
  // Affine kinds: the group's range is searched to minimise squared error;
  // false keeps min/max (int8, where the search gains nothing measurable).
  bool range_search;
};

EDO_HD constexpr ScalarKindTraits scalar_kind_traits(ScalarKind k) {
  switch (k) {
    case ScalarKind::f32:
      return {ScalarFamily::plain, 32, "fp32", false};
    case ScalarKind::f16:
      return {ScalarFamily::plain, 16, "fp16", false};
    case ScalarKind::bf16:
      return {ScalarFamily::plain, 16, "bf16", false};
    case ScalarKind::fp8_e4m3:
      return {ScalarFamily::fp8, 8, "fp8", false};
    case ScalarKind::fp8_e5m2:
      return {ScalarFamily::fp8, 8, "fp8", false};
    case ScalarKind::int8:
      return {ScalarFamily::affine, 8, "int8", false};
    case ScalarKind::int6:
      return {ScalarFamily::affine, 6, "int6", true};
    case ScalarKind::int5:
      return {ScalarFamily::affine, 5, "int5", true};
    case ScalarKind::int4:
      return {ScalarFamily::affine, 4, "int4", true};
    case ScalarKind::int3:
      return {ScalarFamily::affine, 3, "int3", true};
    case ScalarKind::int2:
      return {ScalarFamily::affine, 2, "int2", true};
    case ScalarKind::sign:
      return {ScalarFamily::sign, 1, "bin", false};
  }
  return {ScalarFamily::plain, 32, "fp32", false};
}

struct ScalarLayout {
  ScalarKind kind;
  uint32_t dim;
  uint32_t group;         // values per group (the last group may be shorter); dim when row-wise
  uint32_t groups;        // ceil(dim / group)
  uint32_t bits;          // bits per value in the payload
  uint32_t header_bytes;  // bytes of per-group parameters before the payload
  uint32_t code_size;     // header_bytes + payload bytes
  bool half_params;       // affine kinds: (scale, offset) stored as fp16, 4 bytes a group instead of 8
};

EDO_HD constexpr bool is_affine(ScalarKind k) { return scalar_kind_traits(k).family == ScalarFamily::affine; }
EDO_HD inline Fp8Format fp8_format(ScalarKind k) {
  return k == ScalarKind::fp8_e5m2 ? Fp8Format::e5m2 : Fp8Format::e4m3;
}
EDO_HD inline uint32_t affine_qmax(const ScalarLayout& L) { return (1u << L.bits) - 1u; }

EDO_HD inline float load_f32(const uint8_t* p) {
  float v;
  memcpy(&v, p, sizeof v);
  return v;
}
EDO_HD inline void store_f32(uint8_t* p, float v) { memcpy(p, &v, sizeof v); }

// An affine group's stored (scale, offset): an fp32 pair at byte 8g, or an
// fp16 pair at byte 4g (values already rounded by affine_half_params).
EDO_HD inline void store_group_params(const ScalarLayout& L, uint8_t* code, uint32_t g, AffineParams p) {
  if (L.half_params) {
    const uint16_t h[2] = {float_to_half_bits(p.scale), float_to_half_bits(p.offset)};
    memcpy(code + 4 * g, h, sizeof h);
    return;
  }
  store_f32(code + 8 * g, p.scale);
  store_f32(code + 8 * g + 4, p.offset);
}

EDO_HD inline AffineParams load_affine(const uint8_t* code, uint32_t g) {
  return AffineParams{load_f32(code + 8 * g), load_f32(code + 8 * g + 4)};
}

EDO_HD inline AffineParams load_group_params(const ScalarLayout& L, const uint8_t* code, uint32_t g) {
  if (!L.half_params) return load_affine(code, g);
  uint16_t h[2];
  memcpy(h, code + 4 * g, sizeof h);
  return AffineParams{half_bits_to_float(h[0]), half_bits_to_float(h[1])};
}

// Computes group g's parameters from the row and writes them to the header.
EDO_HD inline void encode_group_params(const ScalarLayout& L, const float* row, uint32_t g, uint8_t* code) {
  const uint32_t begin = g * L.group;
  const uint32_t len = (L.dim - begin) < L.group ? (L.dim - begin) : L.group;
  const float* x = row + begin;
  if (L.kind == ScalarKind::fp8_e4m3 || L.kind == ScalarKind::fp8_e5m2) {
    float amax = 0.0f;
    for (uint32_t i = 0; i < len; ++i) amax = fmaxf(amax, fabsf(x[i]));
    store_f32(code, fp8_scale(amax, fp8_format(L.kind)));
  } else if (is_affine(L.kind)) {
    float lo = x[0], hi = x[0];
    for (uint32_t i = 1; i < len; ++i) {
      lo = fminf(lo, x[i]);
      hi = fmaxf(hi, x[i]);
    }
    const AffineParams p = scalar_kind_traits(L.kind).range_search
                               ? affine_params_search(x, len, lo, hi, affine_qmax(L), L.half_params)
                               : affine_stored_range(lo, hi, affine_qmax(L), L.half_params);
    store_group_params(L, code, g, p);
  } else if (L.kind == ScalarKind::sign) {
    store_f32(code, sign_scale(x, len));
  }
}

// Encodes payload unit u of a row whose header is already written. A unit is
// one value for 32/16/8-bit kinds, one byte (8 / bits values) otherwise.
EDO_HD inline void encode_unit(const ScalarLayout& L, const float* row, uint32_t u, uint8_t* code) {
  uint8_t* payload = code + L.header_bytes;
  switch (L.kind) {
    case ScalarKind::f32:
      store_f32(payload + 4 * u, row[u]);
      return;
    case ScalarKind::f16: {
      const uint16_t h = float_to_half_bits(row[u]);
      memcpy(payload + 2 * u, &h, 2);
      return;
    }
    case ScalarKind::bf16: {
      const uint16_t h = float_to_bf16_bits(row[u]);
      memcpy(payload + 2 * u, &h, 2);
      return;
    }
    case ScalarKind::fp8_e4m3:
    case ScalarKind::fp8_e5m2:
      payload[u] = fp8_encode(row[u], load_f32(code), fp8_format(L.kind));
      return;
    default: {  // the affine integer widths (ScalarFamily::affine)
      // Byte u holds payload bits [8u, 8u + 8): the values that overlap them,
      // each shifted to its place (a value that straddles two bytes gives
      // its low bits to the first and its high bits to the second).
      const float qmax = static_cast<float>(affine_qmax(L));
      const uint32_t first_bit = 8 * u;
      uint32_t byte = 0;
      for (uint32_t j = first_bit / L.bits; j * L.bits < first_bit + 8 && j < L.dim; ++j) {
        const AffineParams p = load_group_params(L, code, j / L.group);
        const uint32_t q = affine_quantize(row[j], p.offset, affine_inverse(p.scale), qmax);
        const uint32_t bit = j * L.bits;
        byte |= bit >= first_bit ? q << (bit - first_bit) : q >> (first_bit - bit);
      }
      payload[u] = static_cast<uint8_t>(byte);
      return;
    }
    case ScalarKind::sign: {
      uint32_t byte = 0;
      for (uint32_t k = 0; k < 8 && u * 8 + k < L.dim; ++k) byte |= sign_bit(row[u * 8 + k]) << k;
      payload[u] = static_cast<uint8_t>(byte);
      return;
    }
  }
}

EDO_HD inline uint32_t payload_units(const ScalarLayout& L) { return L.bits >= 8 ? L.dim : (L.dim * L.bits + 7) / 8; }

EDO_HD inline float decode_value(const ScalarLayout& L, const uint8_t* code, uint32_t j) {
  const uint8_t* payload = code + L.header_bytes;
  switch (L.kind) {
    case ScalarKind::f32:
      return load_f32(payload + 4 * j);
    case ScalarKind::f16: {
      uint16_t h;
      memcpy(&h, payload + 2 * j, 2);
      return half_bits_to_float(h);
    }
    case ScalarKind::bf16: {
      uint16_t h;
      memcpy(&h, payload + 2 * j, 2);
      return bf16_bits_to_float(h);
    }
    case ScalarKind::fp8_e4m3:
    case ScalarKind::fp8_e5m2:
      return fp8_decode(payload[j], load_f32(code), fp8_format(L.kind));
    default: {  // the affine integer widths (ScalarFamily::affine)
      const uint32_t bit = j * L.bits;
      uint32_t word = payload[bit / 8];
      if (bit % 8 + L.bits > 8) word |= static_cast<uint32_t>(payload[bit / 8 + 1]) << 8;  // straddles two bytes
      const uint32_t q = (word >> (bit % 8)) & affine_qmax(L);
      return affine_dequantize(q, load_group_params(L, code, j / L.group));
    }
    case ScalarKind::sign:
      return sign_decode((payload[j / 8] >> (j % 8)) & 1u, load_f32(code));
  }
  return 0.0f;
}

// ---- PCA projection ---------------------------------------------------------------------
// Both sums run in index order with one rounding per step (fmaf), so the
// fast CPU loop (vectorised across outputs) and the GPU (one thread per
// output) give the reference's result exactly.

// y[k] = sum_j (x[j] - mean[j]) * components[k][j]
EDO_HD inline float pca_project_one(const float* x, const float* mean, const float* component, size_t dim) {
  float acc = 0.0f;
  for (size_t j = 0; j < dim; ++j) acc = fmaf(x[j] - mean[j], component[j], acc);
  return acc;
}

// x[j] = mean[j] + sum_k y[k] * components[k][j]; components is k x dim.
EDO_HD inline float pca_reconstruct_one(const float* y, const float* components, size_t k, size_t dim, size_t j,
                                        float mean_j) {
  float acc = 0.0f;
  for (size_t i = 0; i < k; ++i) acc = fmaf(y[i], components[i * dim + j], acc);
  return acc + mean_j;
}

}  // namespace edo::math
