// SPDX-License-Identifier: Apache-2.0
// PQ encode, decode and k-means (pq.hpp): BLAS narrows, pq_sub_distance
// decides, so the CPU, the GPU and any thread count give the same codes.
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pq.hpp>
#include <edo/random.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/pq.cuh>
#include <edo/cuda/rq.cuh>
#endif

#include <cblas.h>
#include <omp.h>
#include <edo/single_threaded_blas.hpp>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

namespace edo {
namespace {

constexpr size_t kAssignBlock = 4096;  // rows per distance-product block

// Sub-spaces this narrow skip BLAS: a distance product of K = w is mostly
// overhead, and the direct form below is several times faster.
constexpr uint32_t kSmallWidth = 16;

#ifdef __AVX2__
// Shared by the AVX2 and AVX-512 kernels below.

// Codeword c's value t at [t * kpad + c], zeros past ksub.
std::vector<float> codeword_columns(const float* cb, size_t ksub, size_t dsub, uint32_t w, size_t kpad) {
  std::vector<float> columns(static_cast<size_t>(w) * kpad, 0.0f);
  for (size_t c = 0; c < ksub; ++c)
    for (uint32_t t = 0; t < w; ++t) columns[t * kpad + c] = cb[c * dsub + t];
  return columns;
}

// The float distance up to which a codeword may be the exact nearest, from
// the lanes' smallest float distances: |float sum - exact| <= (w + 2) eps
// of the sum (w roundings of the adds, two of each square), plus an
// underflowed square's FLT_MIN; the exact best is within twice that of the
// float best.
float near_limit(float best, uint32_t w) {
  return best + best * (4.0f * static_cast<float>(w + 3) * FLT_EPSILON) + static_cast<float>(w + 1) * FLT_MIN;
}
float near_limit(const float* lows, int lanes, uint32_t w) {
  float best = lows[0];
  for (int l = 1; l < lanes; ++l) best = std::min(best, lows[l]);
  return near_limit(best, w);
}

// Rescores codewords base + (set bits of `near`) exactly, keeping the
// nearest (the lower id on ties, as they come in id order).
void rescore_near(uint32_t near, size_t base, const float* xr, const float* cb, size_t dsub, uint32_t w,
                  uint32_t& best_k, double& best_d) {
  for (; near != 0; near &= near - 1) {
    const size_t c = base + static_cast<size_t>(__builtin_ctz(near));
    const double d = math::pq_sub_distance(xr, cb + c * dsub, w);
    if (d < best_d) {
      best_d = d;
      best_k = static_cast<uint32_t>(c);
    }
  }
}

// The exact nearest of the codewords whose float distance is within the
// bound: near[b] has a bit for each of block b's `lanes` codewords that is.
// Nearly always exactly one is, and it is the exact nearest: taken without
// a branch a block (the winner's block varies, so such a branch
// mispredicts) and without rescoring. Otherwise all are rescored exactly.
// Lanes past the last of the `ksub` codewords hold +Inf, which a limit of
// +Inf (every float distance overflowed) would take in: they are masked off
// here, so no padding lane is rescored from past the codewords or returned.
inline uint32_t nearest_within(uint32_t* near, size_t blocks, uint32_t lanes, size_t ksub, const float* xr,
                               const float* cb, size_t dsub, uint32_t w) {
  if (const size_t tail = ksub - (blocks - 1) * lanes; tail < lanes) near[blocks - 1] &= (1u << tail) - 1u;
  uint32_t count = 0, only = 0;
  for (size_t b = 0; b < blocks; ++b) {
    count += static_cast<uint32_t>(__builtin_popcount(near[b]));
    only = near[b] != 0 ? static_cast<uint32_t>(b * lanes + _tzcnt_u32(near[b])) : only;
  }
  if (count == 1) return only;
  uint32_t best_k = 0;
  double best_d = std::numeric_limits<double>::infinity();
  for (size_t b = 0; b < blocks; ++b) rescore_near(near[b], b * lanes, xr, cb, dsub, w, best_k, best_d);
  return best_k;
}

// assign_cpu's answer for one sub-space of width w <= kSmallWidth: row r
// (`stride` floats apart, its w columns from x) gets the nearest of `ksub`
// codewords (stride dsub) by math::pq_sub_distance, the lower id on ties,
// written to assign[r * assign_stride]. Every codeword's distance is taken
// in float, eight codewords a step, each lane summing t = 0..w-1 with one
// rounding a step (the same floats in any order of rows or threads); the
// codewords within that sum's error bound of the smallest are rescored
// exactly, so the choice is the exact one.
void assign_small(const float* cb, size_t ksub, size_t dsub, uint32_t w, const float* x, size_t n, size_t stride,
                  uint32_t* assign, size_t assign_stride) {
  const size_t blocks = (ksub + 7) / 8, kpad = blocks * 8;
  const std::vector<float> columns = codeword_columns(cb, ksub, dsub, w, kpad);
  const __m256 inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma omp parallel if (parallel_worth(n * ksub * w))
  {
    std::vector<float> dist(kpad);
    std::vector<uint32_t> near(blocks);
    __m256 xv[kSmallWidth];
#pragma omp for schedule(static)
    for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
      const float* xr = x + static_cast<size_t>(ri) * stride;
      for (uint32_t t = 0; t < w; ++t) xv[t] = _mm256_set1_ps(xr[t]);
      __m256 low = inf;
      size_t b = 0;
      // Four blocks at a time: four independent fma chains where one waits
      // on the last; each lane's terms and order are unchanged.
      for (; b + 4 <= blocks && (b + 4) * 8 <= ksub; b += 4) {
        __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
        for (uint32_t t = 0; t < w; ++t) {
          const float* col = columns.data() + t * kpad + b * 8;
          for (int q = 0; q < 4; ++q) {
            const __m256 d = _mm256_sub_ps(xv[t], _mm256_loadu_ps(col + q * 8));
            acc[q] = _mm256_fmadd_ps(d, d, acc[q]);
          }
        }
        for (int q = 0; q < 4; ++q) {
          _mm256_storeu_ps(dist.data() + (b + q) * 8, acc[q]);
          low = _mm256_min_ps(low, acc[q]);
        }
      }
      for (; b < blocks; ++b) {
        __m256 acc = _mm256_setzero_ps();
        for (uint32_t t = 0; t < w; ++t) {
          const __m256 d = _mm256_sub_ps(xv[t], _mm256_loadu_ps(columns.data() + t * kpad + b * 8));
          acc = _mm256_fmadd_ps(d, d, acc);
        }
        if ((b + 1) * 8 > ksub) {  // lanes past the last codeword never win
          const __m256i past = _mm256_cmpgt_epi32(lane, _mm256_set1_epi32(static_cast<int>(ksub - b * 8) - 1));
          acc = _mm256_blendv_ps(acc, inf, _mm256_castsi256_ps(past));
        }
        _mm256_storeu_ps(dist.data() + b * 8, acc);
        low = _mm256_min_ps(low, acc);
      }
      alignas(32) float lows[8];
      _mm256_store_ps(lows, low);
      const __m256 limit = _mm256_set1_ps(near_limit(lows, 8, w));
      for (size_t c = 0; c < blocks; ++c)
        near[c] = static_cast<uint32_t>(
            _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(dist.data() + c * 8), limit, _CMP_LE_OQ)));
      assign[static_cast<size_t>(ri) * assign_stride] = nearest_within(near.data(), blocks, 8, ksub, xr, cb, dsub, w);
    }
  }
}

// assign_small sixteen codewords a step, for CPUs with AVX-512 (the build
// targets AVX2; assign_cpu asks the CPU at run time). Each lane sums the
// same terms in the same order, so the float distances, the codewords
// rescored and the answer are assign_small's.
// GCC 12's AVX-512 headers build min_ps from an "undefined" register that
// -Wmaybe-uninitialized then flags in the caller; the lanes are all defined.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f"))) void assign_small_avx512(const float* cb, size_t ksub, size_t dsub, uint32_t w,
                                                            const float* x, size_t n, size_t stride, uint32_t* assign,
                                                            size_t assign_stride) {
  const size_t blocks = (ksub + 15) / 16, kpad = blocks * 16;
  const std::vector<float> columns = codeword_columns(cb, ksub, dsub, w, kpad);
  const __m512 inf = _mm512_set1_ps(std::numeric_limits<float>::infinity());
#pragma omp parallel if (parallel_worth(n * ksub * w))
  {
    std::vector<float> dist(kpad);
    std::vector<uint32_t> near(blocks);
    __m512 xv[kSmallWidth];
#pragma omp for schedule(static)
    for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
      const float* xr = x + static_cast<size_t>(ri) * stride;
      for (uint32_t t = 0; t < w; ++t) xv[t] = _mm512_set1_ps(xr[t]);
      __m512 low = inf;
      size_t b = 0;
      // Four blocks at a time: four independent fma chains where one waits
      // on the last; each lane's terms and order are unchanged.
      for (; b + 4 <= blocks && (b + 4) * 16 <= ksub; b += 4) {
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        for (uint32_t t = 0; t < w; ++t) {
          const float* col = columns.data() + t * kpad + b * 16;
          for (int q = 0; q < 4; ++q) {
            const __m512 d = _mm512_sub_ps(xv[t], _mm512_loadu_ps(col + q * 16));
            acc[q] = _mm512_fmadd_ps(d, d, acc[q]);
          }
        }
        for (int q = 0; q < 4; ++q) {
          _mm512_storeu_ps(dist.data() + (b + q) * 16, acc[q]);
          low = _mm512_min_ps(low, acc[q]);
        }
      }
      for (; b < blocks; ++b) {
        __m512 acc = _mm512_setzero_ps();
        for (uint32_t t = 0; t < w; ++t) {
          const __m512 d = _mm512_sub_ps(xv[t], _mm512_loadu_ps(columns.data() + t * kpad + b * 16));
          acc = _mm512_fmadd_ps(d, d, acc);
        }
        if ((b + 1) * 16 > ksub) {  // lanes past the last codeword never win
          const auto live = static_cast<__mmask16>((1u << (ksub - b * 16)) - 1u);
          acc = _mm512_mask_blend_ps(live, inf, acc);
        }
        _mm512_storeu_ps(dist.data() + b * 16, acc);
        low = _mm512_min_ps(low, acc);
      }
      // A min is exact, so the tree reduction gives the lanes' smallest.
      const __m512 limit = _mm512_set1_ps(near_limit(_mm512_reduce_min_ps(low), w));
      for (size_t c = 0; c < blocks; ++c)
        near[c] = _mm512_cmp_ps_mask(_mm512_loadu_ps(dist.data() + c * 16), limit, _CMP_LE_OQ);
      assign[static_cast<size_t>(ri) * assign_stride] = nearest_within(near.data(), blocks, 16, ksub, xr, cb, dsub, w);
    }
  }
}

// assign_small_avx512 for the default 256 codewords and a compile-time
// width: the sixteen blocks' sums stay in registers (no store and reload
// of the distances) and the width's loop unrolls. Same lanes, same terms in
// the same order, same bound and rescoring, so the same answer; at 768 wide
// opq:m=192 (width 4) spends most of its training here.
template <uint32_t W>
__attribute__((target("avx512f"))) void assign_256_avx512(const float* cb, size_t dsub, const float* x, size_t n,
                                                          size_t stride, uint32_t* assign, size_t assign_stride) {
  constexpr size_t kCodewords = 256, kBlocks = kCodewords / 16;
  const std::vector<float> columns = codeword_columns(cb, kCodewords, dsub, W, kCodewords);
#pragma omp parallel for schedule(static) if (parallel_worth(n * kCodewords * W))
  for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
    const float* xr = x + static_cast<size_t>(ri) * stride;
    __m512 acc[kBlocks];
    for (size_t b = 0; b < kBlocks; ++b) acc[b] = _mm512_setzero_ps();
    for (uint32_t t = 0; t < W; ++t) {
      const __m512 xv = _mm512_set1_ps(xr[t]);
      for (size_t b = 0; b < kBlocks; ++b) {
        const __m512 d = _mm512_sub_ps(xv, _mm512_loadu_ps(columns.data() + t * kCodewords + b * 16));
        acc[b] = _mm512_fmadd_ps(d, d, acc[b]);
      }
    }
    __m512 low = acc[0];
    for (size_t b = 1; b < kBlocks; ++b) low = _mm512_min_ps(low, acc[b]);
    const __m512 limit = _mm512_set1_ps(near_limit(_mm512_reduce_min_ps(low), W));
    uint32_t near[kBlocks];
    for (size_t b = 0; b < kBlocks; ++b) near[b] = _mm512_cmp_ps_mask(acc[b], limit, _CMP_LE_OQ);
    assign[static_cast<size_t>(ri) * assign_stride] = nearest_within(near, kBlocks, 16, kBlocks * 16, xr, cb, dsub, W);
  }
}

#pragma GCC diagnostic pop

std::atomic<bool> avx512_allowed{true};

bool use_avx512() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has && avx512_allowed.load(std::memory_order_relaxed);
}
#endif

// assign[r * g.m + j] = nearest centroid of sub-space j for row r. x has
// `stride` floats a row and sub-space j reads its columns in place.
void assign_cpu(const math::PqGeometry& g, const float* codebooks, const float* x, size_t n, size_t stride,
                uint32_t* assign) {
  const size_t ksub = g.ksub, dsub = g.dsub;
  std::vector<float> sub(kAssignBlock * dsub), dots(kAssignBlock * ksub);
  std::vector<float> cnorm(ksub);
  for (uint32_t j = 0; j < g.m; ++j) {
    const uint32_t begin = math::pq_sub_begin(g, j), w = math::pq_sub_width(g, j);
    const float* cb = codebooks + static_cast<size_t>(j) * ksub * dsub;
#ifdef __AVX2__
    if (w <= kSmallWidth) {
      if (use_avx512() && ksub == 256 && w == 4) {
        assign_256_avx512<4>(cb, dsub, x + begin, n, stride, assign + j, g.m);
      } else if (use_avx512() && ksub == 256 && w == 8) {
        assign_256_avx512<8>(cb, dsub, x + begin, n, stride, assign + j, g.m);
      } else if (use_avx512() && ksub >= 16) {
        assign_small_avx512(cb, ksub, dsub, w, x + begin, n, stride, assign + j, g.m);
      } else {
        assign_small(cb, ksub, dsub, w, x + begin, n, stride, assign + j, g.m);
      }
      continue;
    }
#endif
    float cmax = 0;
    for (size_t k = 0; k < ksub; ++k) {
      double s = 0;
      for (uint32_t t = 0; t < w; ++t) s += static_cast<double>(cb[k * dsub + t]) * cb[k * dsub + t];
      cnorm[k] = static_cast<float>(s);
      cmax = std::max(cmax, cnorm[k]);
    }
    for (size_t r0 = 0; r0 < n; r0 += kAssignBlock) {
      const size_t bn = std::min(kAssignBlock, n - r0);
      for (size_t r = 0; r < bn; ++r) {
        std::memcpy(sub.data() + r * dsub, x + (r0 + r) * stride + begin, w * sizeof(float));
        std::fill(sub.data() + r * dsub + w, sub.data() + (r + 1) * dsub, 0.0f);
      }
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(bn), static_cast<int>(ksub),
                  static_cast<int>(dsub), 1.0f, sub.data(), static_cast<int>(dsub), cb, static_cast<int>(dsub), 0.0f,
                  dots.data(), static_cast<int>(ksub));
#pragma omp parallel for schedule(static) if (parallel_worth(bn * ksub))
      for (int64_t ri = 0; ri < static_cast<int64_t>(bn); ++ri) {
        const size_t r = static_cast<size_t>(ri);
        const float* xs = sub.data() + r * dsub;
        const float* dr = dots.data() + r * ksub;
        float xnorm = 0;
        for (uint32_t t = 0; t < w; ++t) xnorm += xs[t] * xs[t];
        float best = std::numeric_limits<float>::infinity();
        for (size_t k = 0; k < ksub; ++k) best = std::min(best, cnorm[k] - 2.0f * dr[k]);
        // Bound on the float error of |c|^2 - 2 x.c (a sum of dsub + 1
        // products each side), with room to spare: every centroid within it
        // of the best is rescored exactly.
        const float margin = 8.0f * static_cast<float>(dsub + 4) * FLT_EPSILON * (xnorm + cmax) + FLT_MIN;
        uint32_t best_k = 0;
        double best_d = std::numeric_limits<double>::infinity();
        for (size_t k = 0; k < ksub; ++k) {
          if (cnorm[k] - 2.0f * dr[k] > best + margin) continue;
          const double d = math::pq_sub_distance(xs, cb + k * dsub, w);
          if (d < best_d) {
            best_d = d;
            best_k = static_cast<uint32_t>(k);
          }
        }
        assign[(r0 + r) * g.m + j] = best_k;
      }
    }
  }
}

void pack_codes(const math::PqGeometry& g, const uint32_t* assign, size_t n, uint8_t* codes) {
  std::memset(codes, 0, n * g.code_size);
#pragma omp parallel for schedule(static) if (n > 4096)
  for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
    const size_t r = static_cast<size_t>(ri);
    for (uint32_t j = 0; j < g.m; ++j) math::pq_put_code(codes + r * g.code_size, j, g.nbits, assign[r * g.m + j]);
  }
}

void check_gpu_build(Device device) {
  require_device(device);
#ifndef EDO_HAVE_CUDA
  EDO_FAIL("edo was built without CUDA");
#endif
}

// ---- rq beam search ----

struct RqCandidate {
  double score;
  uint32_t id;  // beam * ksub + codeword
};
bool rq_before(const RqCandidate& a, const RqCandidate& b) {
  return math::rq_ranks_before(a.score, a.id, b.score, b.id);
}

// Candidate `id` of a level scored exactly: the residual of beam id / ksub
// minus codeword id % ksub, as every encoder decides on.
RqCandidate rq_score(const RqShape& s, const float* residuals, const float* codebook, uint32_t id) {
  const uint32_t ksub = 1u << s.nbits;
  return {math::pq_sub_distance(residuals + size_t{id / ksub} * s.dim, codebook + size_t{id % ksub} * s.dim, s.dim),
          id};
}

// rq_score for each of `count` candidate ids, eight at a time: each sum is
// pq_sub_distance's own fma chain, term by term in the same order, so the
// scores are its bits; the eight independent chains hide the fma latency
// that one chain waits on.
void rq_score_many(const RqShape& s, const float* residuals, const float* codebook, const uint32_t* ids, size_t count,
                   RqCandidate* out) {
  constexpr size_t kChains = 8;
  const uint32_t ksub = 1u << s.nbits;
  size_t i = 0;
  for (; i + kChains <= count; i += kChains) {
    const float* r[kChains];
    const float* c[kChains];
    double acc[kChains];
    for (size_t j = 0; j < kChains; ++j) {
      r[j] = residuals + size_t{ids[i + j] / ksub} * s.dim;
      c[j] = codebook + size_t{ids[i + j] % ksub} * s.dim;
      acc[j] = 0.0;
    }
    for (uint32_t t = 0; t < s.dim; ++t)
      for (size_t j = 0; j < kChains; ++j) {
        const double d = static_cast<double>(r[j][t]) - static_cast<double>(c[j][t]);
        acc[j] = std::fma(d, d, acc[j]);
      }
    for (size_t j = 0; j < kChains; ++j) out[i + j] = {acc[j], ids[i + j]};
  }
  for (; i < count; ++i) out[i] = rq_score(s, residuals, codebook, ids[i]);
}

void check_rq_shape(const RqShape& s) {
  if (s.dim == 0 || s.m == 0 || s.nbits < 1 || s.nbits > 8 || s.beam < 1 || s.beam > math::kRqMaxBeam)
    EDO_FAIL("rq encode: unsupported shape (dim {}, m {}, nbits {}, beam {})", s.dim, s.m, s.nbits, s.beam);
}

// One row's next beam from its chosen candidates (in rank order): residual
// minus the codeword, and the parent's path with this level's id.
void rq_extend(const RqShape& s, uint32_t level, const float* codebook, const RqCandidate* chosen, uint32_t next,
               const float* residual, const uint8_t* path, float* residual_next, uint8_t* path_next) {
  const uint32_t ksub = 1u << s.nbits;
  for (uint32_t t = 0; t < next; ++t) {
    const uint32_t b = chosen[t].id / ksub, k = chosen[t].id % ksub;
    const float* r = residual + size_t{b} * s.dim;
    const float* c = codebook + size_t{k} * s.dim;
    float* out = residual_next + size_t{t} * s.dim;
    for (uint32_t i = 0; i < s.dim; ++i) out[i] = r[i] - c[i];
    std::memcpy(path_next + size_t{t} * s.m, path + size_t{b} * s.m, s.m);
    path_next[size_t{t} * s.m + level] = static_cast<uint8_t>(k);
  }
}

void rq_pack(const RqShape& s, const uint8_t* path, uint8_t* code) {
  std::memset(code, 0, math::rq_code_size(s));
  for (uint32_t j = 0; j < s.m; ++j) math::pq_put_code(code, j, s.nbits, path[j]);
}

// Rows per distance-product block: up to 256, fewer for wide beams so a
// thread's residuals and scores stay near 16 MiB, and fewer for small
// inputs so every thread gets a block. The block size decides only which
// rows share a product, never a code.
size_t rq_block_rows(const RqShape& s, size_t n, size_t threads) {
  const size_t per_row = size_t{s.beam} * ((size_t{1} << s.nbits) + s.dim) * sizeof(float);
  const size_t fair = std::max<size_t>((n + threads - 1) / threads, 16);
  return std::clamp<size_t>(std::min((size_t{16} << 20) / per_row, fair), 1, 256);
}

// |v|^2 in float, sixteen partial sums: an approximate score's part, whose
// error the beam's bound covers in any summation order.
float squared_norm(const float* v, uint32_t n) {
  constexpr uint32_t kLanes = 16;
  float lanes[kLanes] = {};
  uint32_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (uint32_t j = 0; j < kLanes; ++j) lanes[j] += v[i + j] * v[i + j];
  float sum = 0;
  for (; i < n; ++i) sum += v[i] * v[i];
  for (uint32_t j = 0; j < kLanes; ++j) sum += lanes[j];
  return sum;
}

// One thread's scratch for a block of rows at every level.
struct RqBlockScratch {
  std::vector<float> res, res_next, dots, approx, worst;
  std::vector<uint8_t> path, path_next;
  std::vector<uint32_t> near;  // candidates within the bound, in id order
  std::vector<RqCandidate> keep;
};

// Encodes rows [r0, r0 + bn) of x: per level, one single-threaded SGEMM
// scores every (beam, codeword) of the block approximately; each row's
// candidates within a bound of its next-th best approximate score are
// scored exactly and ranked as the reference ranks them. The bound (as in
// assign_cpu) is at least twice the float error of |r|^2 + |c|^2 - 2 r.c, so
// every candidate of the exact next beam is among those scored exactly.
void rq_encode_block(const RqShape& s, const float* codebooks, const float* cnorm, const float* cmax, const float* x,
                     size_t bn, uint8_t* codes, RqBlockScratch& w) {
  const uint32_t ksub = 1u << s.nbits, dim = s.dim, beam = s.beam;
  w.res.resize(bn * beam * dim);
  w.res_next.resize(w.res.size());
  w.dots.resize(bn * beam * ksub);
  w.approx.resize(size_t{beam} * ksub);
  w.path.assign(bn * beam * s.m, 0);
  w.path_next.assign(w.path.size(), 0);
  std::memcpy(w.res.data(), x, bn * dim * sizeof(float));
  uint32_t cur = 1;
  for (uint32_t level = 0; level < s.m; ++level) {
    const uint32_t next = math::rq_beams_after(level, ksub, beam);
    const float* cw = codebooks + size_t{level} * ksub * dim;
    const float* cn = cnorm + size_t{level} * ksub;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(bn * cur), static_cast<int>(ksub),
                static_cast<int>(dim), 1.0f, w.res.data(), static_cast<int>(dim), cw, static_cast<int>(dim), 0.0f,
                w.dots.data(), static_cast<int>(ksub));
    for (size_t r = 0; r < bn; ++r) {
      const float* rr = w.res.data() + r * cur * dim;
      const float* dr = w.dots.data() + r * cur * ksub;
      float rmax = 0;
      for (uint32_t b = 0; b < cur; ++b) {
        const float rn = squared_norm(rr + size_t{b} * dim, dim);
        rmax = std::max(rmax, rn);
        float* ab = w.approx.data() + size_t{b} * ksub;
        const float* db = dr + size_t{b} * ksub;
        for (uint32_t k = 0; k < ksub; ++k) ab[k] = rn + cn[k] - 2.0f * db[k];
      }
      w.worst.clear();  // max-heap of the `next` smallest approximate scores
      for (uint32_t i = 0; i < cur * ksub; ++i) {
        const float a = w.approx[i];
        if (w.worst.size() < next) {
          w.worst.push_back(a);
          std::push_heap(w.worst.begin(), w.worst.end());
        } else if (a < w.worst.front()) {
          std::pop_heap(w.worst.begin(), w.worst.end());
          w.worst.back() = a;
          std::push_heap(w.worst.begin(), w.worst.end());
        }
      }
      const float limit =
          w.worst.front() + 8.0f * static_cast<float>(dim + 4) * FLT_EPSILON * (rmax + cmax[level]) + FLT_MIN;
      w.near.clear();
      for (uint32_t i = 0; i < cur * ksub; ++i)
        if (w.approx[i] <= limit) w.near.push_back(i);
      if (w.near.size() < next) {  // only where an approximate score overflowed: score them all
        w.near.resize(size_t{cur} * ksub);
        for (uint32_t i = 0; i < cur * ksub; ++i) w.near[i] = i;
      }
      w.keep.resize(w.near.size());
      rq_score_many(s, rr, cw, w.near.data(), w.near.size(), w.keep.data());
      std::partial_sort(w.keep.begin(), w.keep.begin() + next, w.keep.end(), rq_before);
      rq_extend(s, level, cw, w.keep.data(), next, rr, w.path.data() + r * cur * s.m,
                w.res_next.data() + r * next * dim, w.path_next.data() + r * next * s.m);
    }
    std::swap(w.res, w.res_next);
    std::swap(w.path, w.path_next);
    cur = next;
  }
  for (size_t r = 0; r < bn; ++r) rq_pack(s, w.path.data() + r * cur * s.m, codes + r * math::rq_code_size(s));
}

// The fast CPU path: OpenMP threads take whole blocks of rows, each through
// every level with its own single-threaded SGEMM. A block's levels are many
// small products; handing each to OpenBLAS's threads and back to OpenMP's
// spent half the time in the two pools' spinning and yielding (perf,
// docs/BENCHMARKS.md "Training time").
void rq_encode_cpu(const RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes) {
  const uint32_t ksub = 1u << s.nbits, dim = s.dim;
  std::vector<float> cnorm(size_t{s.m} * ksub), cmax(s.m, 0.0f);
  for (uint32_t j = 0; j < s.m; ++j) {
    for (uint32_t k = 0; k < ksub; ++k) {
      const float* c = codebooks + (size_t{j} * ksub + k) * dim;
      double acc = 0;
      for (uint32_t i = 0; i < dim; ++i) acc += static_cast<double>(c[i]) * c[i];
      cnorm[size_t{j} * ksub + k] = static_cast<float>(acc);
      cmax[j] = std::max(cmax[j], cnorm[size_t{j} * ksub + k]);
    }
  }
  const bool parallel = parallel_worth(uint64_t{n} * s.beam * ksub * s.m);
  const size_t threads = parallel ? static_cast<size_t>(std::max(1, omp_get_max_threads())) : 1;
  const size_t block_rows = rq_block_rows(s, n, threads);
  const auto blocks = static_cast<int64_t>((n + block_rows - 1) / block_rows);
  const size_t code_size = math::rq_code_size(s);
  detail::SingleThreadedBlas blas_guard;
#pragma omp parallel if (parallel && blocks > 1)
  {
    RqBlockScratch scratch;
#pragma omp for schedule(dynamic, 1)
    for (int64_t bi = 0; bi < blocks; ++bi) {
      const size_t r0 = static_cast<size_t>(bi) * block_rows, bn = std::min(block_rows, n - r0);
      rq_encode_block(s, codebooks, cnorm.data(), cmax.data(), x + r0 * dim, bn, codes + r0 * code_size, scratch);
    }
  }
}

}  // namespace

void rq_encode_reference(const RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes) {
  check_rq_shape(s);
  const uint32_t ksub = 1u << s.nbits;
  std::vector<float> res(size_t{s.beam} * s.dim), res_next(res.size());
  std::vector<uint8_t> path(size_t{s.beam} * s.m, 0), path_next(path.size(), 0);
  std::vector<RqCandidate> all;
  for (size_t r = 0; r < n; ++r) {
    std::memcpy(res.data(), x + r * s.dim, s.dim * sizeof(float));
    uint32_t cur = 1;
    for (uint32_t level = 0; level < s.m; ++level) {
      const uint32_t next = math::rq_beams_after(level, ksub, s.beam);
      const float* cw = codebooks + size_t{level} * ksub * s.dim;
      all.clear();
      for (uint32_t i = 0; i < cur * ksub; ++i) all.push_back(rq_score(s, res.data(), cw, i));
      std::sort(all.begin(), all.end(), rq_before);
      rq_extend(s, level, cw, all.data(), next, res.data(), path.data(), res_next.data(), path_next.data());
      std::swap(res, res_next);
      std::swap(path, path_next);
      cur = next;
    }
    rq_pack(s, path.data(), codes + r * math::rq_code_size(s));
  }
}

void rq_encode(const RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes, Device device) {
  check_rq_shape(s);
  if (n == 0) return;
  if (device == Device::cuda) {
    check_gpu_build(device);
#ifdef EDO_HAVE_CUDA
    const size_t ksub = size_t{1} << s.nbits, code_size = math::rq_code_size(s);
    const size_t chunk = std::min<size_t>(n, 1 << 16);
    // Enough blocks to fill the GPU, within 256 MiB of scratch.
    const size_t per_block = cuda::rq_scratch_bytes(s, 1);
    const auto blocks =
        static_cast<uint32_t>(std::clamp<size_t>((size_t{256} << 20) / per_block, 1, std::min<size_t>(chunk, 8192)));
    DeviceBuffer dcb(size_t{s.m} * ksub * s.dim * sizeof(float)), dx(chunk * s.dim * sizeof(float)),
        dc(chunk * code_size), scratch(cuda::rq_scratch_bytes(s, blocks));
    dcb.upload(codebooks, dcb.bytes());
    for (size_t r0 = 0; r0 < n; r0 += chunk) {
      const size_t cn = std::min(chunk, n - r0);
      dx.upload(x + r0 * s.dim, cn * s.dim * sizeof(float));
      cuda::rq_encode(s, dcb.as<float>(), dx.as<float>(), cn, dc.as<uint8_t>(), scratch.get(), blocks);
      check_cuda_launch("rq_encode");
      dc.download(codes + r0 * code_size, cn * code_size);
    }
#endif
    return;
  }
  rq_encode_cpu(s, codebooks, x, n, codes);
}

void set_pq_avx512(bool allowed) {
#ifdef __AVX2__
  avx512_allowed.store(allowed, std::memory_order_relaxed);
#else
  (void)allowed;
#endif
}

void pq_encode(const math::PqGeometry& g, const float* codebooks, const float* x, size_t n, uint8_t* codes,
               Device device) {
  if (n == 0) return;
  if (device == Device::cuda) {
    check_gpu_build(device);
#ifdef EDO_HAVE_CUDA
    const size_t cb_bytes = static_cast<size_t>(g.m) * g.ksub * g.dsub * sizeof(float);
    DeviceBuffer dx(n * g.dim * sizeof(float)), dcb(cb_bytes), da(n * g.m * sizeof(uint32_t)), dc(n * g.code_size);
    dx.upload(x, dx.bytes());
    dcb.upload(codebooks, cb_bytes);
    cuda::pq_assign(g, dcb.as<float>(), dx.as<float>(), n, da.as<uint32_t>());
    cuda::pq_pack(g, da.as<uint32_t>(), n, dc.as<uint8_t>());
    check_cuda_launch("pq_encode");
    dc.download(codes, dc.bytes());
#endif
    return;
  }
  std::vector<uint32_t> assign(n * g.m);
  assign_cpu(g, codebooks, x, n, g.dim, assign.data());
  pack_codes(g, assign.data(), n, codes);
}

std::vector<float> pq_pad_rows(const math::PqGeometry& g, const float* x, size_t n) {
  const size_t padded = static_cast<size_t>(g.m) * g.dsub;
  std::vector<float> out(n * padded, 0.0f);
  for (size_t r = 0; r < n; ++r) {
    for (uint32_t j = 0; j < g.m; ++j) {
      std::memcpy(out.data() + r * padded + static_cast<size_t>(j) * g.dsub, x + r * g.dim + math::pq_sub_begin(g, j),
                  math::pq_sub_width(g, j) * sizeof(float));
    }
  }
  return out;
}

void nearest_centroids(const float* x, size_t n, size_t d, const float* centroids, size_t k, uint32_t* assign,
                       Device device) {
  // One sub-space spanning all d columns, with k centroids.
  const math::PqGeometry g{static_cast<uint32_t>(d), 1, 0, static_cast<uint32_t>(k), static_cast<uint32_t>(d), 0};
  if (device == Device::cuda) {
    check_gpu_build(device);
#ifdef EDO_HAVE_CUDA
    DeviceBuffer dx(n * d * sizeof(float)), dcb(k * d * sizeof(float)), da(n * sizeof(uint32_t));
    dx.upload(x, dx.bytes());
    dcb.upload(centroids, dcb.bytes());
    cuda::pq_assign(g, dcb.as<float>(), dx.as<float>(), n, da.as<uint32_t>());
    check_cuda_launch("nearest_centroids");
    da.download(assign, da.bytes());
#endif
    return;
  }
  assign_cpu(g, centroids, x, n, d, assign);
}

// ---- k-means ----------------------------------------------------------------------

namespace {

double row_distance(const float* a, const float* b, size_t d) {
  return math::pq_sub_distance(a, b, static_cast<uint32_t>(d));
}

// k-means++: each next centroid is a row drawn with probability proportional
// to its squared distance to the nearest centroid so far.
std::vector<float> kmeanspp_seed(const float* x, size_t n, size_t d, size_t k, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> c(k * d);
  std::vector<double> nearest(n, std::numeric_limits<double>::infinity());
  size_t pick = rng.below(n);
  for (size_t i = 0; i < k; ++i) {
    std::memcpy(c.data() + i * d, x + pick * d, d * sizeof(float));
    if (i + 1 == k) break;
    // Sequential: n * k * d is small next to the Lloyd iterations, and many
    // short parallel regions cost more than they save on a busy machine.
    double sum = 0;
    for (size_t r = 0; r < n; ++r) {
      nearest[r] = std::min(nearest[r], row_distance(x + r * d, c.data() + i * d, d));
      sum += nearest[r];
    }
    if (!(sum > 0)) {
      pick = rng.below(n);  // every row coincides with a centroid: duplicates only
      continue;
    }
    const double goal = rng.uniform() * sum;
    double run = 0;
    pick = n - 1;
    for (size_t r = 0; r < n; ++r) {
      run += nearest[r];
      if (run > goal && nearest[r] > 0) {
        pick = r;
        break;
      }
    }
  }
  return c;
}

}  // namespace

std::vector<float> kmeans(const float* x, size_t n, size_t d, size_t k, const KmeansOptions& opt) {
  if (k == 0 || n < k) EDO_FAIL("k-means: {} rows cannot train {} centroids", n, k);
  std::vector<float> c = kmeanspp_seed(x, n, d, k, opt.seed);
  std::vector<uint32_t> assign(n), previous;
  std::vector<double> sums(k * d), far(n);
  std::vector<size_t> counts(k);
  for (size_t it = 0; it < opt.iterations; ++it) {
    nearest_centroids(x, n, d, c.data(), k, assign.data(), opt.device);
    if (assign == previous) break;
    std::fill(sums.begin(), sums.end(), 0.0);
    std::fill(counts.begin(), counts.end(), 0);
    for (size_t r = 0; r < n; ++r) {
      const uint32_t a = assign[r];
      ++counts[a];
      for (size_t t = 0; t < d; ++t) sums[a * d + t] += x[r * d + t];
    }
    for (size_t r = 0; r < n; ++r) far[r] = row_distance(x + r * d, c.data() + assign[r] * d, d);
    // An empty cluster restarts at the row worst served by a cluster that
    // can spare it (lowest id on ties); rows equal to their centroid are
    // never taken, so duplicates cannot empty another cluster.
    for (size_t e = 0; e < k; ++e) {
      if (counts[e] > 0) continue;
      size_t take = n;
      for (size_t r = 0; r < n; ++r) {
        if (counts[assign[r]] > 1 && far[r] > 0 && (take == n || far[r] > far[take])) take = r;
      }
      if (take == n) continue;  // fewer distinct rows than centroids: keep the seed centroid
      const uint32_t from = assign[take];
      for (size_t t = 0; t < d; ++t) {
        sums[from * d + t] -= x[take * d + t];
        sums[e * d + t] = x[take * d + t];
      }
      --counts[from];
      counts[e] = 1;
      assign[take] = static_cast<uint32_t>(e);
      far[take] = 0;
    }
    for (size_t a = 0; a < k; ++a) {
      if (counts[a] == 0) continue;
      for (size_t t = 0; t < d; ++t)
        c[a * d + t] = static_cast<float>(sums[a * d + t] / static_cast<double>(counts[a]));
    }
    previous = assign;
  }
  return c;
}

std::vector<float> train_pq_codebooks(const math::PqGeometry& g, const float* x, size_t n, const KmeansOptions& opt) {
  std::vector<float> codebooks(static_cast<size_t>(g.m) * g.ksub * g.dsub, 0.0f);
  std::vector<float> sub;
  for (uint32_t j = 0; j < g.m; ++j) {
    const uint32_t begin = math::pq_sub_begin(g, j), w = math::pq_sub_width(g, j);
    sub.resize(n * w);
    for (size_t r = 0; r < n; ++r) std::memcpy(sub.data() + r * w, x + r * g.dim + begin, w * sizeof(float));
    KmeansOptions o = opt;
    o.seed = opt.seed ^ (0x9e3779b97f4a7c15ull * (j + 1));
    const std::vector<float> c = kmeans(sub.data(), n, w, g.ksub, o);
    for (size_t k = 0; k < g.ksub; ++k) {
      std::memcpy(codebooks.data() + (static_cast<size_t>(j) * g.ksub + k) * g.dsub, c.data() + k * w,
                  w * sizeof(float));
    }
  }
  return codebooks;
}

}  // namespace edo
