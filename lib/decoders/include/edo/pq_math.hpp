// SPDX-License-Identifier: Apache-2.0
// Per-element arithmetic of the product-quantization family (pq, opq, rq),
// compiled by g++ and nvcc alike so the CPU tests cover what the kernels
// compute.
//
// Geometry: `dim` input columns are split into `m` sub-spaces of balanced
// width (the first dim % m get one column more); every sub-space is stored
// zero-padded to `dsub` = ceil(dim / m) columns, so codebooks are one dense
// (m, ksub, dsub) array whatever the split. Padding columns are zero in the
// codebooks and in the padded input, so they add nothing to any distance.
//
// Codes: sub-space j's centroid id occupies bits [j * nbits, (j + 1) * nbits)
// of the row's code, least significant bit first, bytes in increasing order
// (FAISS's PQEncoderGeneric/BitstringWriter layout); unused high bits of the
// last byte are zero.
#pragma once

#include <edo/float16.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace edo::math {

struct PqGeometry {
  uint32_t dim;        // input columns
  uint32_t m;          // sub-spaces
  uint32_t nbits;      // bits per sub-space code
  uint32_t ksub;       // 1 << nbits centroids per sub-space
  uint32_t dsub;       // padded width of every sub-space
  uint32_t code_size;  // ceil(m * nbits / 8) bytes per row
};

EDO_HD inline PqGeometry pq_geometry(uint32_t dim, uint32_t m, uint32_t nbits) {
  const uint32_t dsub = (dim + m - 1) / m;
  return PqGeometry{dim, m, nbits, 1u << nbits, dsub, (m * nbits + 7) / 8};
}

// First input column and width of sub-space j.
EDO_HD inline uint32_t pq_sub_begin(const PqGeometry& g, uint32_t j) {
  const uint32_t base = g.dim / g.m, extra = g.dim % g.m;
  return j * base + (j < extra ? j : extra);
}
EDO_HD inline uint32_t pq_sub_width(const PqGeometry& g, uint32_t j) {
  return g.dim / g.m + (j < g.dim % g.m ? 1u : 0u);
}

// The sub-space column `col` belongs to.
EDO_HD inline uint32_t pq_sub_of_column(const PqGeometry& g, uint32_t col) {
  const uint32_t base = g.dim / g.m, extra = g.dim % g.m;
  const uint32_t wide = extra * (base + 1);
  return col < wide ? col / (base + 1) : extra + (col - wide) / base;
}

EDO_HD inline uint32_t pq_get_code(const uint8_t* row, uint32_t j, uint32_t nbits) {
  const uint32_t bit = j * nbits;
  // Up to 8 bits starting anywhere in a byte span at most two bytes.
  uint32_t v = row[bit >> 3];
  if ((bit & 7u) + nbits > 8u) v |= static_cast<uint32_t>(row[(bit >> 3) + 1]) << 8;
  return (v >> (bit & 7u)) & ((1u << nbits) - 1u);
}

// ORs code c into a zeroed row at sub-space j.
EDO_HD inline void pq_put_code(uint8_t* row, uint32_t j, uint32_t nbits, uint32_t c) {
  const uint32_t bit = j * nbits;
  const uint32_t v = c << (bit & 7u);
  row[bit >> 3] = static_cast<uint8_t>(row[bit >> 3] | (v & 0xffu));
  if ((bit & 7u) + nbits > 8u) row[(bit >> 3) + 1] = static_cast<uint8_t>(row[(bit >> 3) + 1] | (v >> 8));
}

// Squared distance between w input values and a centroid's first w values,
// summed in double in column order with fma: the exact score every encoder
// (CPU, GPU, k-means) decides on, so they agree to the bit.
EDO_HD inline double pq_sub_distance(const float* x, const float* centroid, uint32_t w) {
  double s = 0.0;
  for (uint32_t t = 0; t < w; ++t) {
    const double d = static_cast<double>(x[t]) - static_cast<double>(centroid[t]);
    s = fma(d, d, s);
  }
  return s;
}

// Nearest centroid among `ksub` (stride dsub) by pq_sub_distance; the lower
// id wins a tie.
EDO_HD inline uint32_t pq_nearest(const float* x, const float* centroids, uint32_t ksub, uint32_t dsub, uint32_t w) {
  uint32_t best = 0;
  double best_d = pq_sub_distance(x, centroids, w);
  for (uint32_t k = 1; k < ksub; ++k) {
    const double d = pq_sub_distance(x, centroids + static_cast<size_t>(k) * dsub, w);
    if (d < best_d) {
      best_d = d;
      best = k;
    }
  }
  return best;
}

// ---- residual quantizer beam search ----------------------------------------------------
//
// rq codes: level j's codeword id is sub-code j, packed as above. The encoder
// keeps a beam of partial encodings per row, best first. At each level every
// (beam b, codeword k) pair is a candidate, scored by the squared norm of its
// residual, pq_sub_distance(residual_b, codeword_k, dim), and identified by
// b * ksub + k; the best rq_beams_after(level) candidates by (score, id)
// become the next beam, in that order, and the code of the first beam after
// the last level is the row's code. Every encoder (CPU reference, CPU fast
// path, GPU) keeps exactly these beams.

struct RqShape {
  uint32_t dim;    // input columns (every codeword is full width)
  uint32_t m;      // levels (codebooks)
  uint32_t nbits;  // bits per level; ksub = 1 << nbits codewords
  uint32_t beam;   // partial encodings kept per row, 1 to kRqMaxBeam
};
inline constexpr uint32_t kRqMaxBeam = 256;
inline constexpr uint32_t kRqMaxLevels = 64;  // codebooks (m) an rq spec may have

EDO_HD inline uint32_t rq_code_size(const RqShape& s) { return (s.m * s.nbits + 7) / 8; }

// True when candidate (da, ia) ranks before (db, ib).
EDO_HD inline bool rq_ranks_before(double da, uint32_t ia, double db, uint32_t ib) {
  return da < db || (da == db && ia < ib);
}

// Beams kept after level `level` (0-based): min(beam, ksub^(level + 1)).
EDO_HD inline uint32_t rq_beams_after(uint32_t level, uint32_t ksub, uint32_t beam) {
  uint64_t b = 1;
  for (uint32_t l = 0; l <= level && b < beam; ++l) b *= ksub;
  return b < beam ? static_cast<uint32_t>(b) : beam;
}

}  // namespace edo::math
