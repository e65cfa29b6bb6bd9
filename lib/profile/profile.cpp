// SPDX-License-Identifier: Apache-2.0
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/make_codec.hpp>
#include <edo/pca.hpp>
#include <edo/profile.hpp>
#include <edo/random.hpp>
#include <edo/rate_distortion.hpp>

#include "big_array.hpp"

#include <fmt/format.h>
#include <omp.h>
// Inlined from the header so the row hash is compiled for the build's CPU
// target (AVX2 where available) rather than the shared library's baseline.
#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <map>
#include <numeric>
#include <tuple>

namespace edo {
namespace {

constexpr double kVarianceShares[] = {90, 95, 99};
constexpr double kLookupShares[] = {50, 80, 90, 99};
// Values kept from the sample for percentiles and PCA (32 MiB of fp32).
constexpr uint64_t kMaxSampleValues = uint64_t{8} << 20;

struct RowStats {
  double sum = 0, sumsq = 0;
  float min = std::numeric_limits<float>::infinity();
  float max = -std::numeric_limits<float>::infinity();
  uint32_t nan = 0, inf = 0, zeros = 0, near_zero = 0;
};

// Totals over a run of rows, folded in row order.
struct ChunkTotals {
  double sum = 0, sumsq = 0;
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity();
  uint64_t nan = 0, inf = 0, zeros = 0, near_zero = 0;
  int64_t first_nonfinite = -1;
  // Row norms of the finite rows.
  uint64_t finite_rows = 0, zero_rows = 0;
  double norm_sum = 0;
  float norm_min = std::numeric_limits<float>::infinity(), norm_max = 0;

  void add_norm(float norm) {
    ++finite_rows;
    zero_rows += norm == 0.0f;
    norm_sum += norm;
    norm_min = std::min(norm_min, norm);
    norm_max = std::max(norm_max, norm);
  }
  void add_finite(float row_sum, float row_sumsq) {
    sum += row_sum;
    sumsq += row_sumsq;
  }
  // Counts and range of some finite values (an empty set has lo > hi).
  void add_values(uint64_t zero_count, uint64_t near_count, float lo, float hi) {
    zeros += zero_count;
    near_zero += near_count;
    if (lo <= hi) {
      min = std::min(min, static_cast<double>(lo));
      max = std::max(max, static_cast<double>(hi));
    }
  }
  void add(const RowStats& r, uint64_t row) {
    if ((r.nan || r.inf) && first_nonfinite < 0) first_nonfinite = static_cast<int64_t>(row);
    nan += r.nan;
    inf += r.inf;
    sum += r.sum;
    sumsq += r.sumsq;
    add_values(r.zeros, r.near_zero, r.min, r.max);
  }
  template <class Lanes>
  void fold(const Lanes& lanes) {
    for (size_t l = 0; l < std::size(lanes.min); ++l)
      add_values(lanes.zeros[l], lanes.near_zero[l], lanes.min[l], lanes.max[l]);
  }
  void merge(const ChunkTotals& o) {
    if (first_nonfinite < 0) first_nonfinite = o.first_nonfinite;
    nan += o.nan;
    inf += o.inf;
    zeros += o.zeros;
    near_zero += o.near_zero;
    sum += o.sum;
    sumsq += o.sumsq;
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    finite_rows += o.finite_rows;
    zero_rows += o.zero_rows;
    norm_sum += o.norm_sum;
    norm_min = std::min(norm_min, o.norm_min);
    norm_max = std::max(norm_max, o.norm_max);
  }
};

bool is_nonfinite(float v) { return (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u; }

// The hot loop, in kLanes independent lanes the compiler keeps in one
// vector register each. A row costs two horizontal reductions (its sum and
// sum of squares, which need row order for the totals and the norm); its
// min, max and counts stay lane-wise in `lanes` until the chunk is done.
constexpr int kLanes = 8;

struct LaneTotals {
  float min[kLanes], max[kLanes];
  uint64_t zeros[kLanes] = {}, near_zero[kLanes] = {};
  LaneTotals() {
    std::fill(std::begin(min), std::end(min), std::numeric_limits<float>::infinity());
    std::fill(std::begin(max), std::end(max), -std::numeric_limits<float>::infinity());
  }
};

// One row's lane accumulators.
struct RowLanes {
  float s[kLanes] = {}, ss[kLanes] = {}, mn[kLanes], mx[kLanes];
  uint32_t zeros[kLanes] = {}, near[kLanes] = {}, bad[kLanes] = {};
  RowLanes() {
    std::fill(std::begin(mn), std::end(mn), std::numeric_limits<float>::infinity());
    std::fill(std::begin(mx), std::end(mx), -std::numeric_limits<float>::infinity());
  }
  // Branch-free, so the loop over lanes becomes vector instructions.
  void add(int l, float v, float near_zero) {
    bad[l] |= (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u ? 1u : 0u;
    s[l] += v;
    ss[l] += v * v;
    mn[l] = v < mn[l] ? v : mn[l];
    mx[l] = v > mx[l] ? v : mx[l];
    zeros[l] += v == 0.0f ? 1u : 0u;
    near[l] += std::fabs(v) < near_zero ? 1u : 0u;
  }
};

// Adds a row to `lanes` and returns true, with its sum and sum of squares
// (float: exact enough within one row); returns false, adding nothing, when
// the row holds a NaN or an Inf.
bool finite_row_stats(const float* x, uint64_t dim, float near_zero, LaneTotals& lanes, float& sum, float& sumsq) {
  RowLanes r;
  uint64_t j = 0;
  for (; j + kLanes <= dim; j += kLanes) {
#pragma omp simd
    for (int l = 0; l < kLanes; ++l) r.add(l, x[j + static_cast<uint64_t>(l)], near_zero);
  }
  for (int l = 0; j < dim; ++j, ++l) r.add(l, x[j], near_zero);
  uint32_t any_bad = 0;
  for (int l = 0; l < kLanes; ++l) any_bad |= r.bad[l];
  if (any_bad) return false;
  sum = ((r.s[0] + r.s[1]) + (r.s[2] + r.s[3])) + ((r.s[4] + r.s[5]) + (r.s[6] + r.s[7]));
  sumsq = ((r.ss[0] + r.ss[1]) + (r.ss[2] + r.ss[3])) + ((r.ss[4] + r.ss[5]) + (r.ss[6] + r.ss[7]));
  for (int l = 0; l < kLanes; ++l) {
    lanes.min[l] = std::min(lanes.min[l], r.mn[l]);
    lanes.max[l] = std::max(lanes.max[l], r.mx[l]);
    lanes.zeros[l] += r.zeros[l];
    lanes.near_zero[l] += r.near[l];
  }
  return true;
}

// A row with NaN or Inf: counted value by value, those values left out.
RowStats nonfinite_row_stats(const float* x, uint64_t dim, float near_zero) {
  RowStats r;
  float s = 0, ss = 0;
  for (uint64_t j = 0; j < dim; ++j) {
    const float v = x[j];
    if (is_nonfinite(v)) {
      if (std::isnan(v))
        ++r.nan;
      else
        ++r.inf;
      continue;
    }
    s += v;
    ss += v * v;
    r.min = std::min(r.min, v);
    r.max = std::max(r.max, v);
    r.zeros += v == 0.0f;
    r.near_zero += std::fabs(v) < near_zero;
  }
  r.sum = s;
  r.sumsq = ss;
  return r;
}

// Linear-interpolated percentiles (numpy's default) of `v`, which is
// reordered. Selection instead of a full sort: O(n) per percentile.
std::vector<Percentile> percentiles(std::vector<float>& v, std::initializer_list<double> qs) {
  std::vector<Percentile> out;
  if (v.empty()) return out;
  auto first = v.begin();
  for (double q : qs) {  // ascending, so each selection only looks right of the last
    const double pos = q / 100.0 * static_cast<double>(v.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(pos));
    const auto nth = v.begin() + static_cast<std::ptrdiff_t>(lo);
    std::nth_element(first, nth, v.end());
    const double low = *nth;
    const double high = lo + 1 < v.size() ? *std::min_element(nth + 1, v.end()) : low;
    const double frac = pos - static_cast<double>(lo);
    out.push_back({q, low * (1 - frac) + high * frac});
    first = nth;
  }
  return out;
}

// Percentiles as above for the non-negative values of `v` (row norms; NaN
// entries, the rows with non-finite values, are left out), without
// reordering: the bits of a non-negative float sort like its value, so one
// histogram pass over the top 16 bits finds the bucket of every wanted rank,
// and a selection inside those few small buckets finishes the job.
std::vector<Percentile> nonneg_percentiles(const detail::BigArray<float>& v, std::initializer_list<double> qs) {
  constexpr size_t kBuckets = size_t{1} << 16;
  // Buckets from here up hold only NaN (the marker is 0x7fc00000); +Inf, a
  // norm that overflowed, sits in bucket 0x7f80 and is counted.
  constexpr uint32_t kFirstNaNBucket = 0x7f81;
  const auto n = static_cast<int64_t>(v.size());
  std::vector<uint64_t> count(kBuckets, 0);
  uint64_t* counts = count.data();
#pragma omp parallel for reduction(+ : counts[:kBuckets])
  for (int64_t i = 0; i < n; ++i) ++counts[std::bit_cast<uint32_t>(v[i]) >> 16];
  std::vector<uint64_t> below(kFirstNaNBucket + 1, 0);  // values in buckets before b
  for (size_t b = 0; b < kFirstNaNBucket; ++b) below[b + 1] = below[b] + count[b];
  const uint64_t total = below[kFirstNaNBucket];
  std::vector<Percentile> out;
  if (total == 0) return out;
  auto bucket_of = [&](uint64_t rank) {
    return static_cast<size_t>(std::upper_bound(below.begin(), below.end(), rank) - below.begin() - 1);
  };
  std::vector<uint64_t> ranks;
  for (double q : qs) {
    const double pos = q / 100.0 * static_cast<double>(total - 1);
    const auto lo = static_cast<uint64_t>(std::floor(pos));
    ranks.push_back(lo);
    ranks.push_back(std::min<uint64_t>(lo + 1, total - 1));
  }
  std::vector<int32_t> slot(kBuckets, -1);  // bucket -> index into members
  std::vector<size_t> wanted;
  for (uint64_t r : ranks) {
    const size_t b = bucket_of(r);
    if (slot[b] < 0) {
      slot[b] = static_cast<int32_t>(wanted.size());
      wanted.push_back(b);
    }
  }
  std::vector<std::vector<float>> members(wanted.size());
#pragma omp parallel
  {
    std::vector<std::vector<float>> mine(wanted.size());
#pragma omp for nowait
    for (int64_t i = 0; i < n; ++i) {
      const int32_t k = slot[std::bit_cast<uint32_t>(v[i]) >> 16];
      if (k >= 0) mine[static_cast<size_t>(k)].push_back(v[i]);
    }
#pragma omp critical(edo_norm_members)
    for (size_t k = 0; k < wanted.size(); ++k) members[k].insert(members[k].end(), mine[k].begin(), mine[k].end());
  }
  auto value_at = [&](uint64_t rank) {
    const size_t b = bucket_of(rank);
    std::vector<float>& m = members[static_cast<size_t>(slot[b])];
    const auto nth = m.begin() + static_cast<std::ptrdiff_t>(rank - below[b]);
    std::nth_element(m.begin(), nth, m.end());
    return static_cast<double>(*nth);
  };
  size_t i = 0;
  for (double q : qs) {
    const double pos = q / 100.0 * static_cast<double>(total - 1);
    const double frac = pos - std::floor(pos);
    const double low = value_at(ranks[i]), high = value_at(ranks[i + 1]);
    out.push_back({q, low * (1 - frac) + high * frac});
    i += 2;
  }
  return out;
}

// Rows equal to an earlier row, and distinct rows that repeat, from row
// hashes (reordered). Buckets by the top bits, then sorts each small bucket:
// linear time and parallel, where one big sort would dominate the profile.
std::pair<uint64_t, uint64_t> count_duplicates(detail::BigArray<uint64_t>& hashes) {
  const int bits = hashes.size() > (1u << 20) ? 16 : 8;
  const size_t buckets = size_t{1} << bits;
  const auto n = static_cast<int64_t>(hashes.size());
  std::vector<uint64_t> start(buckets + 1, 0);
  detail::BigArray<uint64_t> sorted(hashes.size());
  // A radix scatter, each thread over its own range of hashes: per-thread
  // histograms, then each thread writes its part of every bucket. Which slot
  // a hash lands in depends on the thread count; each bucket's contents do not.
  std::vector<uint64_t> fill;  // thread t's next slot in bucket b: fill[t * buckets + b]
#pragma omp parallel
  {
    const auto threads = static_cast<size_t>(omp_get_num_threads());
    const auto t = static_cast<size_t>(omp_get_thread_num());
#pragma omp single
    fill.assign(threads * buckets, 0);
    const int64_t lo = n * static_cast<int64_t>(t) / static_cast<int64_t>(threads);
    const int64_t hi = n * static_cast<int64_t>(t + 1) / static_cast<int64_t>(threads);
    uint64_t* mine = fill.data() + t * buckets;
    for (int64_t i = lo; i < hi; ++i) ++mine[hashes[i] >> (64 - bits)];
#pragma omp barrier
#pragma omp single
    {
      uint64_t at = 0;
      for (size_t b = 0; b < buckets; ++b) {
        start[b] = at;
        for (size_t u = 0; u < threads; ++u) {
          const uint64_t c = fill[u * buckets + b];
          fill[u * buckets + b] = at;
          at += c;
        }
      }
      start[buckets] = at;
    }
    for (int64_t i = lo; i < hi; ++i) sorted[mine[hashes[i] >> (64 - bits)]++] = hashes[i];
  }
  hashes = {};
  uint64_t rows = 0, groups = 0;
#pragma omp parallel for schedule(dynamic, 64) reduction(+ : rows, groups)
  for (int64_t b = 0; b < static_cast<int64_t>(buckets); ++b) {
    auto lo = sorted.begin() + static_cast<std::ptrdiff_t>(start[b]);
    auto hi = sorted.begin() + static_cast<std::ptrdiff_t>(start[b + 1]);
    std::sort(lo, hi);
    for (auto it = lo; it != hi && it + 1 != hi; ++it) {
      if (*(it + 1) == *it) {
        ++rows;
        if (it == lo || *(it - 1) != *it) ++groups;
      }
    }
  }
  return {rows, groups};
}

}  // namespace

std::vector<Footprint> codec_footprints(uint64_t rows, uint64_t dim) {
  std::vector<Footprint> out;
  const double values = static_cast<double>(rows) * static_cast<double>(dim);
  const uint64_t fp32 = rows * dim * 4;
  auto add = [&](std::string name, std::string spec, uint64_t bytes, std::string note) {
    out.push_back({std::move(name), std::move(spec), bytes, static_cast<double>(fp32) / static_cast<double>(bytes),
                   static_cast<double>(bytes) * 8.0 / values, std::move(note)});
  };
  // Scalar codecs: sizes from the codec registry, so the report and the files agree.
  const struct {
    const char* name;
    const char* spec;
    const char* note;
  } scalar[] = {
      {"fp32", "fp32", "4 bytes a value"},
      {"fp16", "fp16", "2 bytes a value"},
      {"bf16", "bf16", "2 bytes a value"},
      {"fp8 e4m3", "fp8:e4m3", "1 byte a value + fp32 scale a row"},
      {"int8 row-wise", "int8", "1 byte a value + fp32 scale and offset a row"},
      {"int4 row-wise", "int4", "4 bits a value + fp32 scale and offset a row"},
      {"int4 group 32", "int4:group=32", "4 bits a value + fp32 scale and offset a group of 32"},
      {"1-bit sign", "bin", "1 bit a value + fp32 scale a row"},
  };
  for (const auto& c : scalar) add(c.name, c.spec, rows * code_size(c.spec, dim), c.note);
  for (uint64_t m : {8u, 16u, 32u, 64u}) {
    if (m > dim) continue;
    // m one-byte codes a row + the codebooks (256 centroids of dim/m floats per sub-space).
    add(fmt::format("PQ {} bytes", m), fmt::format("pq:m={}", m), rows * m + 256 * dim * 4,
        "m bytes a row + 256 x dim fp32 codebook");
  }
  const uint64_t index_bytes = dim <= 256 ? 1 : dim <= 65536 ? 2 : 4;
  for (double density : {0.5, 0.25, 0.1, 0.05}) {
    const auto nnz = static_cast<uint64_t>(std::llround(density * values));
    const uint64_t ptr_bytes = nnz < (uint64_t{1} << 32) ? 4 : 8;
    add(fmt::format("CSR {:g}% fp16", density * 100), fmt::format("csr:density={:g},values=fp16", density),
        nnz * (2 + index_bytes) + (rows + 1) * ptr_bytes,
        fmt::format("fp16 values + {}-byte column indices + {}-byte row pointers", index_bytes, ptr_bytes));
  }
  return out;
}

AccessSkew access_skew(const std::vector<double>& counts) {
  AccessSkew s;
  std::vector<double> sorted;
  sorted.reserve(counts.size());
  for (double c : counts) {
    if (!(c >= 0) || !std::isfinite(c)) EDO_FAIL("frequency counts must be finite and non-negative");
    s.total += c;
    if (c > 0) {
      sorted.push_back(c);
      ++s.rows_accessed;
    }
  }
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  double cum = 0;
  size_t share_i = 0;
  for (size_t i = 0; i < sorted.size() && share_i < std::size(kLookupShares); ++i) {
    cum += sorted[i];
    while (share_i < std::size(kLookupShares) && cum >= kLookupShares[share_i] / 100.0 * s.total * (1 - 1e-12)) {
      s.rows_for_share.emplace_back(kLookupShares[share_i], i + 1);
      ++share_i;
    }
  }
  // log(count) = c - s log(rank), least squares over every accessed row.
  if (sorted.size() >= 2) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0, syy = 0;
    const auto n = static_cast<double>(sorted.size());
    for (size_t i = 0; i < sorted.size(); ++i) {
      const double x = std::log(static_cast<double>(i + 1));
      const double y = std::log(sorted[i]);
      sx += x;
      sy += y;
      sxx += x * x;
      sxy += x * y;
      syy += y * y;
    }
    const double cov = sxy - sx * sy / n, vx = sxx - sx * sx / n, vy = syy - sy * sy / n;
    if (vx > 0) {
      s.zipf_exponent = -cov / vx;
      s.zipf_r2 = vy > 0 ? cov * cov / (vx * vy) : 1.0;
    }
  }
  return s;
}

namespace {

// Step 1a. The PCA spectrum of the sample: explained-variance fractions and
// the dimensions that keep 90/95/99% of the variance.
void profile_pca(TableProfile& p, const std::vector<float>& sample, uint64_t sample_n, const ProfileOptions& options) {
  const uint64_t dim = p.dim;
  if (dim > options.max_pca_dim) {
    p.pca_skipped_reason = fmt::format("dimension {} is above the PCA limit {}", dim, options.max_pca_dim);
    return;
  }
  if (sample_n < 2) {
    p.pca_skipped_reason = "fewer than 2 finite rows in the sample";
    return;
  }
  const std::vector<double> eig = covariance_eigen(sample.data(), sample_n, dim, {}, false, options.device).values;
  const double total = std::accumulate(eig.begin(), eig.end(), 0.0);
  if (!(total > 0)) {
    p.pca_skipped_reason = "the sample has zero variance";
    return;
  }
  p.pca_done = true;
  p.pca_variances = eig;
  for (double e : eig) p.pca_explained.push_back(e / total);
  double cum = 0;
  size_t share_i = 0;
  for (size_t k = 0; k < eig.size() && share_i < std::size(kVarianceShares); ++k) {
    cum += p.pca_explained[k];
    while (share_i < std::size(kVarianceShares) && cum >= kVarianceShares[share_i] / 100.0 - 1e-12) {
      p.pca_dims_for.emplace_back(kVarianceShares[share_i], k + 1);
      ++share_i;
    }
  }
  while (share_i < std::size(kVarianceShares)) p.pca_dims_for.emplace_back(kVarianceShares[share_i++], dim);
}

// Step 1. The seeded sample's finite rows, in row order (their row numbers in `ids`).
std::vector<float> read_sample(io::TableReader& table, const ProfileOptions& options, std::vector<uint64_t>& ids) {
  const uint64_t dim = table.dim();
  const uint64_t sample_cap = std::max<uint64_t>(1, std::min(options.sample_rows, kMaxSampleValues / dim));
  const std::vector<uint64_t> sample_ids = sample_indices(table.rows(), sample_cap, options.seed);
  std::vector<float> sample;  // finite rows only
  sample.reserve(sample_ids.size() * dim);
  ids.clear();
  for (uint64_t id : sample_ids) {
    const float* r = table.rows_f32(id, 1);
    if (std::none_of(r, r + dim, is_nonfinite)) {
      sample.insert(sample.end(), r, r + dim);
      ids.push_back(id);
    }
  }
  return sample;
}

// Step 1c. The bound at 1 to 8 bits a value, and each footprint's codec
// (the sparse ones aside) run on the sample: its MSE, the bound at its bits
// a value, the gap (docs/EVAL.md, "Rate-distortion gap"). A codec that
// cannot run on the sample (too few rows to train) keeps NaN.
constexpr double kBoundBits[] = {1, 2, 4, 8};
void profile_rate_gaps(TableProfile& p, const std::vector<float>& sample, uint64_t sample_n, uint64_t seed) {
  if (!p.pca_done || sample_n == 0) return;
  for (const double r : kBoundBits) p.rate_bound.emplace_back(r, gaussian_distortion(p.pca_variances, r));
  std::vector<float> back(sample.size());
  for (Footprint& f : p.footprints) {
    if (f.spec.starts_with("csr") || f.spec.starts_with("bitmap")) continue;
    try {
      const std::unique_ptr<Codec> codec = make_codec(f.spec, p.dim);
      if (codec->needs_training()) codec->train(sample.data(), sample_n, seed);
      std::vector<uint8_t> codes(sample_n * codec->code_size());
      codec->encode(sample.data(), sample_n, codes.data());
      codec->decode(codes.data(), sample_n, back.data());
    } catch (const Error&) {
      continue;
    }
    double squared = 0;
    for (size_t i = 0; i < sample.size(); ++i) {
      const double d = static_cast<double>(sample[i]) - back[i];
      squared += d * d;
    }
    f.mse = squared / static_cast<double>(sample.size());
    f.bound = gaussian_distortion(p.pca_variances, f.bits_per_value);
    f.gap_bits = rate_gap_bits(f.mse, f.bound);
  }
}

// Step 1b. The sample's figures: value percentiles, PCA, the near-zero
// threshold, the footprints and (unless a shard's part asks not to) their
// rate-distortion gaps.
void sample_figures(TableProfile& p, std::vector<float>& sample, const ProfileOptions& options, bool rate_gaps = true) {
  const uint64_t sample_n = sample.size() / p.dim;
  p.sample_rows = sample_n;
  double sample_sumsq = 0;
  for (float v : sample) sample_sumsq += static_cast<double>(v) * v;
  const double sample_rms = sample_n ? std::sqrt(sample_sumsq / static_cast<double>(sample.size())) : 0.0;
  p.near_zero_threshold = options.near_zero > 0 ? options.near_zero : 0.01 * sample_rms;
  profile_pca(p, sample, sample_n, options);
  p.footprints = codec_footprints(p.rows, p.dim);
  if (rate_gaps) profile_rate_gaps(p, sample, sample_n, options.seed);
  p.value_percentiles = percentiles(sample, {0.1, 1, 5, 25, 50, 75, 95, 99, 99.9});  // sorts the sample
}

// What the streaming pass leaves: totals, and per row its norm and hash.
struct StreamResult {
  ChunkTotals total;
  detail::BigArray<float> norms;      // of rows first .. first + size
  detail::BigArray<uint64_t> hashes;  // likewise
  uint64_t first = 0;
};

// Rows are folded into totals in fixed chunks of kChunkRows global rows.
constexpr uint64_t kChunkRows = 2048;

// Step 2a. Rows [chunk_begin, chunk_end) into one chunk's totals, read
// piece_rows at a time into `piece` when the reader allows concurrent reads,
// else taken from `block` (rows from block_begin on, in memory).
void scan_chunk(io::TableReader& table, const float* block, uint64_t block_begin, uint64_t chunk_begin,
                uint64_t chunk_end, uint64_t piece_rows, float near, std::vector<float>& piece, ChunkTotals& t,
                StreamResult& out) {
  const uint64_t dim = table.dim();
  LaneTotals lanes;
  for (uint64_t p0 = chunk_begin; p0 < chunk_end; p0 += piece_rows) {
    const uint64_t p1 = std::min(chunk_end, p0 + piece_rows);
    const float* rows = block ? block + (p0 - block_begin) * dim : piece.data();
    if (!block) table.read_f32_concurrent(p0, p1 - p0, piece.data());
    for (uint64_t r = p0; r < p1; ++r) {
      const float* row = rows + (r - p0) * dim;
      const uint64_t at = r - out.first;
      out.hashes[at] = XXH3_64bits(row, dim * sizeof(float));
      float sum, sumsq;
      if (finite_row_stats(row, dim, near, lanes, sum, sumsq)) {
        t.add_finite(sum, sumsq);
        out.norms[at] = std::sqrt(sumsq);
        t.add_norm(out.norms[at]);
      } else {
        t.add(nonfinite_row_stats(row, dim, near), r);
        out.norms[at] = std::numeric_limits<float>::quiet_NaN();
      }
    }
  }
  t.fold(lanes);
}

// Step 2. The streaming pass over every row. Chunks are each summed in row
// order and folded in chunk order: the same arithmetic whatever the thread
// count and block size, with no serial per-row loop. Where the reader allows
// it (npy), each thread preads its rows in cache-sized pieces: cheaper than
// faulting in the mapped block and dropping it again, and the file's pages
// never count against this process.
// Rows [first, end) only, for a shard (chunks of global row numbers; a
// shard starts and ends on chunk boundaries, or at the table's end): each
// finished chunk's totals also go to `chunks_out` when given.
StreamResult stream_rows(io::TableReader& table, const ProfileOptions& options, const TableProfile& p, uint64_t first,
                         uint64_t last, std::vector<ChunkTotals>* chunks_out) {
  const uint64_t dim = p.dim;
  StreamResult out{ChunkTotals{}, detail::BigArray<float>(last - first), detail::BigArray<uint64_t>(last - first),
                   first};
  const uint64_t block = table.block_rows(options.block_bytes);
  const auto near = static_cast<float>(p.near_zero_threshold);
  const bool concurrent = table.concurrent_reads();
  const uint64_t piece_rows = std::clamp<uint64_t>((uint64_t{128} << 10) / (dim * sizeof(float)), 1, kChunkRows);
  std::vector<ChunkTotals> chunks;
  ChunkTotals carry;  // the chunk that continues into the next block
  for (uint64_t begin = first; begin < last; begin += block) {
    const uint64_t n = std::min(block, last - begin);
    const uint64_t end = begin + n;
    const float* x = concurrent ? nullptr : table.rows_f32(begin, n);
    const uint64_t first_chunk = begin / kChunkRows;
    const uint64_t chunk_count = (end - 1) / kChunkRows - first_chunk + 1;
    chunks.assign(chunk_count, ChunkTotals{});
    chunks[0] = carry;
    std::exception_ptr failure;
#pragma omp parallel
    {
      std::vector<float> piece(concurrent ? piece_rows * dim : 0);
#pragma omp for schedule(dynamic, 4)
      for (int64_t c = 0; c < static_cast<int64_t>(chunk_count); ++c) {
        const uint64_t chunk = first_chunk + static_cast<uint64_t>(c);
        try {
          scan_chunk(table, x, begin, std::max(begin, chunk * kChunkRows), std::min(end, (chunk + 1) * kChunkRows),
                     piece_rows, near, piece, chunks[static_cast<uint64_t>(c)], out);
        } catch (...) {
#pragma omp critical(edo_profile_failure)
          if (!failure) failure = std::current_exception();
        }
      }
    }
    if (failure) std::rethrow_exception(failure);
    const bool last_open = end % kChunkRows != 0 && end < last;
    for (uint64_t c = 0; c + (last_open ? 1 : 0) < chunk_count; ++c) {
      out.total.merge(chunks[c]);
      if (chunks_out) chunks_out->push_back(chunks[c]);
    }
    carry = last_open ? chunks[chunk_count - 1] : ChunkTotals{};
    if (options.progress) options.progress(end - first, last - first);
  }
  return out;
}

// Step 3. Value statistics from the totals, then row norms (one histogram
// pass) and duplicates (buckets sorted in parallel).
void summarise(TableProfile& p, StreamResult& s) {
  const ChunkTotals& total = s.total;
  p.nan_count = total.nan;
  p.inf_count = total.inf;
  p.zero_count = total.zeros;
  p.near_zero_count = total.near_zero;
  p.first_nonfinite_row = total.first_nonfinite;
  const uint64_t finite = p.values - p.nan_count - p.inf_count;
  if (finite > 0) {
    p.min = total.min;
    p.max = total.max;
    p.mean = total.sum / static_cast<double>(finite);
    p.rms = std::sqrt(total.sumsq / static_cast<double>(finite));
    p.stddev = std::sqrt(std::max(0.0, total.sumsq / static_cast<double>(finite) - p.mean * p.mean));
  }
  if (total.finite_rows > 0) {
    p.zero_rows = total.zero_rows;
    p.norm_mean = total.norm_sum / static_cast<double>(total.finite_rows);
    p.norm_min = total.norm_min;
    p.norm_max = total.norm_max;
    p.norm_percentiles = nonneg_percentiles(s.norms, {1, 5, 25, 50, 75, 95, 99});
  }
  s.norms = {};
  std::tie(p.duplicate_rows, p.duplicate_groups) = count_duplicates(s.hashes);
}

}  // namespace

TableProfile profile_table(io::TableReader& table, const ProfileOptions& options) {
  require_device(options.device);
  TableProfile p;
  p.path = table.path();
  p.format = table.format();
  p.dtype = io::dtype_name(table.dtype());
  p.rows = table.rows();
  p.dim = table.dim();
  p.payload_bytes = table.payload_bytes();
  p.values = p.rows * p.dim;
  std::vector<uint64_t> sample_ids;
  std::vector<float> sample = read_sample(table, options, sample_ids);
  sample_figures(p, sample, options);
  StreamResult streamed = stream_rows(table, options, p, 0, p.rows, nullptr);
  summarise(p, streamed);
  return p;
}

// ---- shards: a part of a profile, and the merge ------------------------------------------

namespace {

constexpr const char* kPartKey = "edo_profile_part";

// Binary arrays in a part travel as base64 (RFC 4648, padded): exact where
// JSON numbers are not (infinities, NaN rows' norms) and a third of the text.
constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string to_base64(const void* data, size_t size) {
  const auto* b = static_cast<const uint8_t*>(data);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    const uint32_t v = (uint32_t{b[i]} << 16) | (i + 1 < size ? uint32_t{b[i + 1]} << 8 : 0u) |
                       (i + 2 < size ? uint32_t{b[i + 2]} : 0u);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < size ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < size ? kBase64[v & 63] : '=';
  }
  return out;
}

template <class T>
std::vector<T> from_base64(const nlohmann::json& j, const char* key, const std::string& name) {
  if (!j.contains(key) || !j[key].is_string()) EDO_FAIL("{}: the profile part has no \"{}\"", name, key);
  const std::string& text = j[key].get_ref<const std::string&>();
  if (text.size() % 4 != 0) EDO_FAIL("{}: \"{}\" is not base64", name, key);
  std::vector<uint8_t> bytes;
  bytes.reserve(text.size() / 4 * 3);
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      const char* at = c == '=' ? nullptr : std::strchr(kBase64, c);
      if (c == '=' && i + 4 == text.size() && k >= 2) {
        ++pad;
      } else if (!at || c == '\0' || pad) {
        EDO_FAIL("{}: \"{}\" is not base64", name, key);
      }
      v = (v << 6) | (at ? static_cast<uint32_t>(at - kBase64) : 0u);
    }
    bytes.push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) bytes.push_back(static_cast<uint8_t>(v >> 8));
    if (pad < 1) bytes.push_back(static_cast<uint8_t>(v));
  }
  if (bytes.size() % sizeof(T) != 0) EDO_FAIL("{}: \"{}\" is not an array of {}-byte items", name, key, sizeof(T));
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A chunk's totals as fixed little-endian fields (FORMAT-free: only --merge reads them).
struct PackedChunk {
  double sum, sumsq, min, max, norm_sum;
  uint64_t nan, inf, zeros, near_zero, finite_rows, zero_rows;
  int64_t first_nonfinite;
  float norm_min, norm_max;
};

PackedChunk pack_chunk(const ChunkTotals& c) {
  return {c.sum,   c.sumsq,     c.min,         c.max,       c.norm_sum,        c.nan,      c.inf,
          c.zeros, c.near_zero, c.finite_rows, c.zero_rows, c.first_nonfinite, c.norm_min, c.norm_max};
}

ChunkTotals unpack_chunk(const PackedChunk& p) {
  ChunkTotals c;
  c.sum = p.sum;
  c.sumsq = p.sumsq;
  c.min = p.min;
  c.max = p.max;
  c.norm_sum = p.norm_sum;
  c.nan = p.nan;
  c.inf = p.inf;
  c.zeros = p.zeros;
  c.near_zero = p.near_zero;
  c.finite_rows = p.finite_rows;
  c.zero_rows = p.zero_rows;
  c.first_nonfinite = p.first_nonfinite;
  c.norm_min = p.norm_min;
  c.norm_max = p.norm_max;
  return c;
}

nlohmann::json options_json(const ProfileOptions& o) {
  return {{"seed", o.seed}, {"sample_rows", o.sample_rows}, {"near_zero", o.near_zero}, {"max_pca_dim", o.max_pca_dim}};
}

uint64_t part_number(const nlohmann::json& j, const char* key, const std::string& name) {
  if (!j.contains(key) || !j[key].is_number_unsigned()) EDO_FAIL("{}: the profile part has no \"{}\"", name, key);
  return j[key].get<uint64_t>();
}

}  // namespace

nlohmann::json profile_part(io::TableReader& table, const ProfileOptions& options, uint64_t first, uint64_t last,
                            const nlohmann::json& shard) {
  TableProfile p;
  p.rows = table.rows();
  p.dim = table.dim();
  p.values = p.rows * p.dim;
  // The whole table's sample: every shard finds the same near-zero threshold.
  std::vector<uint64_t> ids;
  std::vector<float> sample = read_sample(table, options, ids);
  std::vector<float> mine;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] >= first && ids[i] < last)
      mine.insert(mine.end(), sample.begin() + static_cast<int64_t>(i * p.dim),
                  sample.begin() + static_cast<int64_t>((i + 1) * p.dim));
  const uint64_t sample_total = ids.size();
  sample_figures(p, sample, options, false);  // the merge measures the codecs' gaps, once
  std::vector<ChunkTotals> chunks;
  StreamResult s = stream_rows(table, options, p, first, last, &chunks);
  std::vector<PackedChunk> packed;
  for (const ChunkTotals& c : chunks) packed.push_back(pack_chunk(c));
  return {{kPartKey, 1},
          {"shard", shard},
          {"path", table.path()},
          {"format", table.format()},
          {"dtype", io::dtype_name(table.dtype())},
          {"rows", p.rows},
          {"dim", p.dim},
          {"payload_bytes", table.payload_bytes()},
          {"options", options_json(options)},
          {"near_zero_threshold", p.near_zero_threshold},
          {"sample_rows_total", sample_total},
          {"sample", to_base64(mine.data(), mine.size() * sizeof(float))},
          {"chunks", to_base64(packed.data(), packed.size() * sizeof(PackedChunk))},
          {"norms", to_base64(s.norms.data(), s.norms.size() * sizeof(float))},
          {"hashes", to_base64(s.hashes.data(), s.hashes.size() * sizeof(uint64_t))}};
}

bool is_profile_part(const nlohmann::json& j) { return j.is_object() && j.contains(kPartKey); }

TableProfile merge_profile_parts(std::vector<nlohmann::json> parts, const std::vector<std::string>& names,
                                 const ProfileOptions& options) {
  if (parts.empty()) EDO_USAGE_FAIL("--merge: no profile parts given");
  std::vector<size_t> order(parts.size());
  std::iota(order.begin(), order.end(), size_t{0});
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!is_profile_part(parts[i]) || !parts[i].contains("shard") || !parts[i]["shard"].is_object())
      EDO_FAIL("{}: not a profile part (edo-profile --shard I/N --json writes one)", names[i]);
    part_number(parts[i]["shard"], "index", names[i]);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return parts[a]["shard"]["index"].get<uint64_t>() < parts[b]["shard"]["index"].get<uint64_t>();
  });
  const nlohmann::json& head = parts[order[0]];
  TableProfile p;
  const auto text = [&](const char* key) {
    if (!head.contains(key) || !head[key].is_string())
      EDO_FAIL("{}: the profile part has no \"{}\"", names[order[0]], key);
    return head[key].get<std::string>();
  };
  p.path = text("path");
  p.format = text("format");
  p.dtype = text("dtype");
  p.rows = part_number(head, "rows", names[order[0]]);
  p.dim = part_number(head, "dim", names[order[0]]);
  if (p.dim == 0 || p.dim > io::kMaxDim) EDO_FAIL("{}: \"dim\" {} is out of range", names[order[0]], p.dim);
  p.payload_bytes = part_number(head, "payload_bytes", names[order[0]]);
  p.values = p.rows * p.dim;
  const uint64_t count = part_number(head["shard"], "count", names[order[0]]);
  if (count != parts.size())
    EDO_USAGE_FAIL("{}: part of a profile in {} shards, but {} parts given", names[order[0]], count, parts.size());
  std::vector<float> sample;
  // Nothing is sized by a claim the parts' own bytes do not back: a norm is
  // four bytes, about five characters of base64.
  uint64_t described = 0;
  for (const nlohmann::json& j : parts)
    if (j.contains("norms") && j["norms"].is_string())
      described += j["norms"].get_ref<const std::string&>().size() / 4 * 3 / 4;
  if (p.rows > described)
    EDO_FAIL("{}: a table of {} rows, where the parts hold norms of {}", names[order[0]], p.rows, described);
  if (!head.contains("near_zero_threshold") || !head["near_zero_threshold"].is_number())
    EDO_FAIL("{}: the profile part has no \"near_zero_threshold\"", names[order[0]]);
  StreamResult s{ChunkTotals{}, detail::BigArray<float>(p.rows), detail::BigArray<uint64_t>(p.rows), 0};
  uint64_t next = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const nlohmann::json& j = parts[order[k]];
    const std::string& name = names[order[k]];
    for (const char* key : {"path", "format", "dtype", "rows", "dim", "options", "near_zero_threshold",
                            "sample_rows_total", "payload_bytes"})
      if (!j.contains(key) || j[key] != head[key])
        EDO_FAIL("{}: \"{}\" differs from {}'s: parts of another table or another command", name, key, names[order[0]]);
    if (part_number(j["shard"], "index", name) != k || part_number(j["shard"], "count", name) != count)
      EDO_FAIL("{}: shard {} of {} where shard {} of {} belongs (a part missing or given twice)", name,
               j["shard"]["index"].dump(), j["shard"]["count"].dump(), k, count);
    if (part_number(j["shard"], "first_row", name) != next)
      EDO_FAIL("{}: starts at row {}, where the parts before it end at row {}", name, j["shard"]["first_row"].dump(),
               next);
    const auto mine = from_base64<float>(j, "sample", name);
    sample.insert(sample.end(), mine.begin(), mine.end());
    const auto norms = from_base64<float>(j, "norms", name);
    const auto hashes = from_base64<uint64_t>(j, "hashes", name);
    const auto chunks = from_base64<PackedChunk>(j, "chunks", name);
    const uint64_t n = norms.size();
    if (hashes.size() != n || next + n > p.rows || chunks.size() != (n + kChunkRows - 1) / kChunkRows)
      EDO_FAIL("{}: {} norms, {} hashes and {} chunks do not describe one row range of the table", name, n,
               hashes.size(), chunks.size());
    std::copy(norms.begin(), norms.end(), s.norms.begin() + static_cast<int64_t>(next));
    std::copy(hashes.begin(), hashes.end(), s.hashes.begin() + static_cast<int64_t>(next));
    for (const PackedChunk& c : chunks) s.total.merge(unpack_chunk(c));
    next += n;
  }
  if (next != p.rows) EDO_FAIL("{}: the parts hold {} of the table's {} rows", names[order.back()], next, p.rows);
  if (sample.size() != part_number(head, "sample_rows_total", names[order[0]]) * p.dim)
    EDO_FAIL("{}: the parts' sample rows do not add up to the table's sample", names[order[0]]);
  sample_figures(p, sample, options);
  if (p.near_zero_threshold != head["near_zero_threshold"].get<double>())
    EDO_FAIL("{}: the merged sample does not give the parts' near-zero threshold", names[order[0]]);
  summarise(p, s);
  p.merged_parts = static_cast<uint32_t>(parts.size());
  return p;
}

ProfileOptions profile_part_options(const nlohmann::json& part, ProfileOptions base) {
  if (!part.contains("options") || !part["options"].is_object()) return base;
  const nlohmann::json& o = part["options"];
  const auto whole = [&](const char* key, uint64_t fallback) {
    return o.contains(key) && o[key].is_number_unsigned() ? o[key].get<uint64_t>() : fallback;
  };
  base.seed = whole("seed", base.seed);
  base.sample_rows = whole("sample_rows", base.sample_rows);
  base.max_pca_dim = whole("max_pca_dim", base.max_pca_dim);
  if (o.contains("near_zero") && o["near_zero"].is_number()) base.near_zero = o["near_zero"].get<double>();
  return base;
}

}  // namespace edo
