// SPDX-License-Identifier: Apache-2.0
// Hashed tiers: rows answered by small shared tables addressed from each
// row's global id, fitted to a trained table by least squares (edo-hash).
// A tier kind (tier.hpp, TierKind::hashed); the byte layout and the hash,
// precisely enough to reproduce every bucket elsewhere, are docs/FORMAT.md
// 9.5.
//
// Spec:
//   hash:buckets=B[,k=K][,weights=0|1][,fit=ls|none][,seed=S]
//       each row is the sum of K (1..8, default 1) of B shared bucket
//       vectors, bucket k of id `i` being hash_bucket(i, k, S, B); with
//       weights=1 each row also keeps K fp16 weights (Hash Embeddings) and
//       is the weighted sum. fit=ls (default) fits the buckets (and weights)
//       by least squares; fit=none, for K = 1 without weights only, is the
//       naive baseline: each bucket holds the highest-id row hashed to it.
//   qr:buckets=B[,op=sum|mul]
//       quotient-remainder: row i is Q[i / B] + R[i mod B] (op=sum, default)
//       or their elementwise product (op=mul); Q has ceil(rows / B) rows.
#pragma once

#include <edo/codec_math.hpp>
#include <edo/float16.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace edo {

enum class HashScheme : uint8_t { hash, qr };
enum class QrOp : uint8_t { sum, mul };
enum class HashFit : uint8_t { least_squares, none };

inline constexpr uint32_t kMaxHashK = 8;
inline constexpr uint64_t kMaxBuckets = uint64_t{1} << 32;

struct HashSpec {
  HashScheme scheme = HashScheme::hash;
  uint64_t buckets = 0;  // B
  uint32_t k = 1;        // components a row sums (hash; 2 for qr)
  bool weights = false;  // hash: K fp16 weights a row
  QrOp op = QrOp::sum;   // qr
  HashFit fit = HashFit::least_squares;
  uint64_t seed = 0;  // hash: the hash family's seed
};

// True when a manifest "codec" field or tier codec names a hashed tier.
bool is_hash_spec(std::string_view spec);
// Parses and checks a spec; usage error naming it.
HashSpec parse_hash_spec(std::string_view spec);
// The canonical spec ("hash:buckets=1000,k=2,weights=1,fit=ls,seed=0").
std::string format_hash_spec(const HashSpec& s);

// The SplitMix64 output function of state x (Steele, Lea and Flood 2014,
// as in java.util.SplittableRandom): the state advanced by the golden
// gamma, then two xor-shift-multiply rounds and a final xor-shift.
EDO_HD inline uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Group-shared tiers (a sibling kind, TierKind::grouped, also written by
// edo-hash): rows of one group share a base vector and each keeps a
// residual in any registry codec. Spec:
//   group:clusters=C[,residual=CODEC|none]   C k-means groups of the tier's rows
//   group:labels[,residual=CODEC|none]       the groups of a labels file (edo-hash --group-labels)
// stored as group:groups=C,residual=CODEC|none (FORMAT.md 9.6). A codec
// with ',' or ':' goes in brackets: residual=[pq:m=8].
struct GroupSpec {
  uint64_t groups = 0;       // C; 0 for labels until they are read
  bool from_labels = false;  // group:labels
  std::string residual = "none";
};
bool is_group_spec(std::string_view spec);
// Usage error naming the spec; `dim` checks the residual codec.
GroupSpec parse_group_spec(std::string_view spec, uint64_t dim);
std::string format_group_spec(const GroupSpec& s);  // the stored form

// Bucket k (0-based) of global id `id` among `buckets`: the id xor-ed with
// a key drawn from (seed, k), mixed, reduced modulo the bucket count.
EDO_HD inline uint64_t hash_bucket(uint64_t id, uint32_t k, uint64_t seed, uint64_t buckets) {
  return splitmix64(id ^ splitmix64(seed + k)) % buckets;
}

// The least-squares fit's product A^T F A v (lib/store/hash_builder.cpp;
// A: each row's terms, F: its access counts), split where the GPU splits
// it: one row's value at column j of A v times its count, then each term's
// share added to its slot. Explicit fused multiply-adds in term order then
// row order, so the CPU and kernels/hash_fit.cu give the same bits.
EDO_HD inline float hash_normal_row(const float* coef, const uint64_t* slot, uint32_t terms, float freq, const float* v,
                                    uint64_t dim, uint64_t j) {
  float y = 0.0f;
  for (uint32_t k = 0; k < terms; ++k) y = fmaf(coef[k], v[slot[k] * dim + j], y);
  return y * freq;
}
EDO_HD inline float hash_normal_add(float sum, float coef, float row_value) { return fmaf(coef, row_value, sum); }

// Rows of a qr tier's quotient table for a table of `rows`.
inline uint64_t qr_quotient_rows(uint64_t rows, uint64_t buckets) { return (rows + buckets - 1) / buckets; }
// The quotient row of `id`: id / B, which wraps for ids beyond the table
// (served on request: ReaderOptions::unknown_ids = hash).
EDO_HD inline uint64_t qr_quotient(uint64_t id, uint64_t buckets, uint64_t quotient_rows) {
  return (id / buckets) % quotient_rows;
}

// A hashed tier's tables: `buckets` (hash: B x dim; qr: the remainder
// table), `quotient` (qr: quotient_rows x dim), `weights` (hash with
// weights=1: rows x K fp16, row-major by id; else null) for a table of `rows`.
struct HashTables {
  const float* buckets = nullptr;
  const float* quotient = nullptr;
  uint64_t quotient_rows = 0;
  const uint8_t* weights = nullptr;
  uint64_t rows = 0, dim = 0;
};

// Row `id` into out[0..dim), with FORMAT.md 9.5's float32 operations in its
// order (weighted terms after the first by one fused multiply-add each):
// the one decode the reader, the writer's error report and the tests use.
EDO_HD inline void hash_decode(const HashSpec& s, const HashTables& t, uint64_t id, float* out) {
  if (s.scheme == HashScheme::qr) {
    const float* q = t.quotient + qr_quotient(id, s.buckets, t.quotient_rows) * t.dim;
    const float* r = t.buckets + (id % s.buckets) * t.dim;
    if (s.op == QrOp::sum)
      for (uint64_t j = 0; j < t.dim; ++j) out[j] = q[j] + r[j];
    else
      for (uint64_t j = 0; j < t.dim; ++j) out[j] = q[j] * r[j];
    return;
  }
  for (uint32_t k = 0; k < s.k; ++k) {
    const float* b = t.buckets + hash_bucket(id, k, s.seed, s.buckets) * t.dim;
    if (!t.weights) {
      if (k == 0)
        for (uint64_t j = 0; j < t.dim; ++j) out[j] = b[j];
      else
        for (uint64_t j = 0; j < t.dim; ++j) out[j] += b[j];
      continue;
    }
    uint16_t h = 0x3c00;  // 1.0: ids beyond the table have no weights
    if (id < t.rows) memcpy(&h, t.weights + 2 * (id * s.k + k), 2);
    const float w = half_bits_to_float(h);
    if (k == 0)
      for (uint64_t j = 0; j < t.dim; ++j) out[j] = w * b[j];
    else
      for (uint64_t j = 0; j < t.dim; ++j) out[j] = fmaf(w, b[j], out[j]);
  }
}

}  // namespace edo
