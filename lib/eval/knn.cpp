// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/unit_scale.hpp>

#include <edo/single_threaded_blas.hpp>

#include <cblas.h>
#include <omp.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <limits>

#if EDO_HAVE_CUDA
#include <edo/cuda/knn.cuh>
#endif

namespace edo {

namespace {

// The CPU tile: kRowTile rows at fixed row ids, scored against the queries
// up to kQuerySubTile at a time by one thread: 256 x 1024 fp32 scores = 1 MiB.
// Measured (docs/BENCHMARKS.md, "Exact k-NN"): 256 queries a GEMM keep
// OpenBLAS near its peak where 64 lost a tenth of it, and 1024 rows (512
// KiB of them at 128 columns) stay in cache beside the scores.
constexpr uint64_t kRowTile = 1024;
constexpr uint64_t kQuerySubTile = 256;

// Fewer queries take smaller sub-tiles, so that a search of 1000 queries
// still gives 16 cores a sub-tile each: 1/16 of the queries rounded up to a
// multiple of 32, from 32 to kQuerySubTile. A function of the query count
// alone, so no result depends on the thread count.
uint64_t query_sub_tile(uint64_t nq) { return std::clamp<uint64_t>((nq / 16 + 31) / 32 * 32, 32, kQuerySubTile); }
// On a GPU, bigger tiles amortise the transfers; scores come back
// kDeviceQueryTile queries at a time (256 x 32768 fp32 = 32 MiB).
constexpr uint64_t kDeviceRowTile = 32768;
constexpr uint64_t kDeviceQueryTile = 256;

using detail::SingleThreadedBlas;

struct Candidate {
  float key;  // larger is better
  int64_t id;
};

// The total order of candidates: higher key, then lower id. NaN keys never
// reach here (they become -inf), so the order is strict and the selected set
// does not depend on the order rows arrive in.
inline bool better(const Candidate& a, const Candidate& b) { return a.key > b.key || (a.key == b.key && a.id < b.id); }

// What a row contributes besides the dot product: |x|^2 for l2, 1/|x| (or 0
// for a zero row) for cos. Summed in double so the value is the same however
// the caller blocks the table.
inline float row_aux(Metric metric, const float* x, uint64_t dim) {
  if (metric == Metric::ip) return 0.0f;
  double s = 0.0;
  for (uint64_t j = 0; j < dim; ++j) s += static_cast<double>(x[j]) * x[j];
  if (metric == Metric::l2) return static_cast<float>(s);
  return s > 0.0 ? static_cast<float>(1.0 / std::sqrt(s)) : 0.0f;
}

// The ranking key of a row for one query, from their dot product. For l2 the
// query's |q|^2 is left out: it is the same for every row of the query, and
// adding it first would round distinct distances together.
inline float rank_key(Metric metric, float dot, float q_aux, float x_aux) {
  float key;
  switch (metric) {
    case Metric::ip:
      key = dot;
      break;
    case Metric::l2:
      key = 2.0f * dot - x_aux;
      break;
    case Metric::cos:
      key = dot * q_aux * x_aux;
      break;
    default:
      key = dot;
      break;
  }
  return std::isnan(key) ? -std::numeric_limits<float>::infinity() : key;
}

inline float reported_score(Metric metric, float key, float q_aux) {
  if (metric != Metric::l2) return key;
  return std::max(0.0f, q_aux - key);
}

// A bounded max-heap under `better`: the root is the worst kept candidate.
inline void offer(std::vector<Candidate>& heap, uint64_t k, Candidate c) {
  if (heap.size() < k) {
    heap.push_back(c);
    std::push_heap(heap.begin(), heap.end(), better);
  } else if (better(c, heap.front())) {
    std::pop_heap(heap.begin(), heap.end(), better);
    heap.back() = c;
    std::push_heap(heap.begin(), heap.end(), better);
  }
}

void check_options(MatrixView queries, const KnnOptions& opts) {
  if (opts.k == 0) EDO_USAGE_FAIL("k-NN: k must be at least 1");
  if (opts.k > static_cast<uint64_t>(INT64_MAX) || !checked_mul(queries.rows, opts.k))
    EDO_USAGE_FAIL("k-NN: k = {} is too large", opts.k);
  if (queries.dim == 0) EDO_USAGE_FAIL("k-NN: the queries have dimension 0");
  if (!opts.exclude.empty() && opts.exclude.size() != queries.rows)
    EDO_USAGE_FAIL("k-NN: {} excluded ids given for {} queries", opts.exclude.size(), queries.rows);
}

KnnResult make_result(const std::vector<std::vector<Candidate>>& heaps, const std::vector<float>& q_aux,
                      const KnnOptions& opts) {
  KnnResult r;
  r.nq = heaps.size();
  r.k = opts.k;
  r.metric = opts.metric;
  r.ids.assign(r.nq * r.k, -1);
  r.scores.assign(r.nq * r.k, std::numeric_limits<float>::quiet_NaN());
  for (uint64_t q = 0; q < r.nq; ++q) {
    std::vector<Candidate> sorted = heaps[q];
    std::sort(sorted.begin(), sorted.end(), better);
    for (uint64_t i = 0; i < sorted.size(); ++i) {
      r.ids[q * r.k + i] = sorted[i].id;
      r.scores[q * r.k + i] = reported_score(opts.metric, sorted[i].key, q_aux[q]);
    }
  }
  return r;
}

std::vector<float> query_aux(MatrixView queries, Metric metric) {
  std::vector<float> aux(queries.rows);
  for (uint64_t q = 0; q < queries.rows; ++q) aux[q] = row_aux(metric, queries.data + q * queries.dim, queries.dim);
  return aux;
}

// The largest finite magnitude of `values` (unit_scale_shift's peak).
float peak_magnitude(const float* values, uint64_t n) {
  float peak = 0.0f;
  for (uint64_t i = 0; i < n; ++i)
    if (std::isfinite(values[i])) peak = std::max(peak, std::fabs(values[i]));
  return peak;
}

}  // namespace

struct KnnSearch::Impl {
  KnnOptions opts;
  int shift = 0;              // unit_scale_shift() of the queries: every row is times 2^shift
  std::vector<float> scaled;  // a chunk of added rows, shifted
  uint64_t nq = 0;
  uint64_t dim = 0;
  uint64_t tile_rows = kRowTile;
  uint64_t next_id = 0;  // id of the first row of the current tile
  std::vector<float> queries;
  std::vector<float> q_aux;
  std::vector<float> x_aux;    // per row of the current tile
  std::vector<float> pending;  // rows of a partly filled tile
  uint64_t pending_rows = 0;
  std::vector<std::vector<Candidate>> heaps;
  std::vector<std::vector<float>> thread_scores;  // per OpenMP thread
#if EDO_HAVE_CUDA
  std::unique_ptr<cuda::DeviceDots> device;
  std::vector<float> device_scores;
#endif

  // Which of 32 rows (scores s, row terms xa) have a key, as rank_key gives
  // it, not below `worst`; a NaN key counts as one (it ranks -inf, which a
  // heap of -inf keys still takes by id).
  template <Metric metric>
  static uint32_t contender_mask(const float* s, const float* xa, float qa, float worst) {
    uint32_t mask = 0;
#ifdef __AVX2__
    const __m256 w = _mm256_set1_ps(worst), vq = _mm256_set1_ps(qa);
    for (int g = 0; g < 4; ++g) {
      __m256 key = _mm256_loadu_ps(s + 8 * g);
      if constexpr (metric == Metric::l2) key = _mm256_sub_ps(_mm256_add_ps(key, key), _mm256_loadu_ps(xa + 8 * g));
      if constexpr (metric == Metric::cos) key = _mm256_mul_ps(_mm256_mul_ps(key, vq), _mm256_loadu_ps(xa + 8 * g));
      mask |= static_cast<uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(key, w, _CMP_NLT_UQ))) << (8 * g);
    }
#else
    for (uint32_t t = 0; t < 32; ++t) {
      const float key = metric == Metric::ip ? s[t] : metric == Metric::l2 ? 2.0f * s[t] - xa[t] : s[t] * qa * xa[t];
      mask |= static_cast<uint32_t>(!(key < worst)) << t;
    }
#endif
    return mask;
  }

  // Offers `row_count` scores s[j] of rows next_id + j to query q.
  template <Metric metric>
  void select_metric(uint64_t q, const float* s, uint64_t row_count) {
    const uint64_t k = opts.k;
    const int64_t skip = opts.exclude.empty() ? -1 : opts.exclude[q];
    std::vector<Candidate>& heap = heaps[q];
    const float qa = q_aux[q];
    // A row's key from its score, as rank_key computes it (ip: the score).
    const auto key_of = [&](uint64_t j) { return rank_key(metric, s[j], qa, metric == Metric::ip ? 0.0f : x_aux[j]); };
    auto consider = [&](uint64_t j) {
      const int64_t id = static_cast<int64_t>(next_id + j);
      if (id != skip) offer(heap, k, Candidate{key_of(j), id});
    };
    uint64_t j = 0;
    for (; j < row_count && heap.size() < k; ++j) consider(j);
    // Once the heap is full, a row with a key below the worst kept one can
    // never enter it (equal keys still compete on id): test whole blocks of
    // rows against that bound at vector speed, their keys computed in the
    // test from the scores (one pass, no key array), and offer rows one by
    // one only in blocks that hold a contender. A NaN key (a NaN score,
    // ranked -inf) counts as a contender here, so the heap is the one
    // offering every row gives.
    constexpr uint64_t kBlock = 32;
    for (; j + kBlock <= row_count; j += kBlock) {
      // Bit t: row j + t may enter. Rows below the bound at the block's
      // start never can (offers only raise it), so only set bits are offered.
      uint32_t contenders = contender_mask<metric>(s + j, x_aux.data() + j, qa, heap.front().key);
      for (; contenders != 0; contenders &= contenders - 1)
        consider(j + static_cast<uint64_t>(std::countr_zero(contenders)));
    }
    for (; j < row_count; ++j) consider(j);
  }

  void select(uint64_t q, const float* s, uint64_t row_count) {
    switch (opts.metric) {
      case Metric::ip:
        select_metric<Metric::ip>(q, s, row_count);
        break;
      case Metric::l2:
        select_metric<Metric::l2>(q, s, row_count);
        break;
      case Metric::cos:
        select_metric<Metric::cos>(q, s, row_count);
        break;
    }
  }

  // Scores one tile (rows next_id .. next_id + row_count) against every query.
  void process_tile(const float* rows, uint64_t row_count) {
#pragma omp parallel for schedule(static)
    for (int64_t j = 0; j < static_cast<int64_t>(row_count); ++j)
      x_aux[static_cast<uint64_t>(j)] = row_aux(opts.metric, rows + static_cast<uint64_t>(j) * dim, dim);
#if EDO_HAVE_CUDA
    if (device) {
      process_tile_on_device(rows, row_count);
      next_id += row_count;
      return;
    }
#endif
    // Sub-tiles have fixed bounds and each is one GEMM on one thread, so no
    // score depends on how many threads share the work.
    const uint64_t sub = query_sub_tile(nq);
    const int64_t sub_tiles = static_cast<int64_t>((nq + sub - 1) / sub);
    const int n = static_cast<int>(row_count), d = static_cast<int>(dim);
    thread_scores.resize(std::max<uint64_t>(thread_scores.size(), static_cast<uint64_t>(omp_get_max_threads())));
#pragma omp parallel
    {
      // One score buffer per thread, kept across tiles: allocating 512 KiB
      // per tile costs page faults comparable to the GEMM itself.
      std::vector<float>& scores = thread_scores[static_cast<uint64_t>(omp_get_thread_num())];
      scores.resize(sub * row_count);
#pragma omp for schedule(dynamic)
      for (int64_t t = 0; t < sub_tiles; ++t) {
        const uint64_t q0 = static_cast<uint64_t>(t) * sub;
        const uint64_t qn = std::min(sub, nq - q0);
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(qn), n, d, 1.0f,
                    queries.data() + q0 * dim, d, rows, d, 0.0f, scores.data(), n);
        for (uint64_t i = 0; i < qn; ++i) select(q0 + i, scores.data() + i * row_count, row_count);
      }
    }
    next_id += row_count;
  }

#if EDO_HAVE_CUDA
  void process_tile_on_device(const float* rows, uint64_t row_count) {
    device->upload_rows(rows, row_count);
    device_scores.resize(std::min(kDeviceQueryTile, nq) * row_count);
    for (uint64_t q0 = 0; q0 < nq; q0 += kDeviceQueryTile) {
      const uint64_t qn = std::min(kDeviceQueryTile, nq - q0);
      device->dots(q0, qn, 0, row_count, device_scores.data());
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < static_cast<int64_t>(qn); ++i)
        select(q0 + static_cast<uint64_t>(i), device_scores.data() + static_cast<uint64_t>(i) * row_count, row_count);
    }
  }
#endif
};

KnnSearch::KnnSearch(MatrixView queries, const KnnOptions& opts) : impl_(std::make_unique<Impl>()) {
  check_options(queries, opts);
  if (queries.dim > static_cast<uint64_t>(INT_MAX)) EDO_USAGE_FAIL("k-NN: dimension {} is too large", queries.dim);
  Impl& s = *impl_;
  s.opts = opts;
  s.nq = queries.rows;
  s.dim = queries.dim;
  s.queries.assign(queries.data, queries.data + queries.rows * queries.dim);
  s.shift = unit_scale_shift(peak_magnitude(s.queries.data(), s.queries.size()));
  if (s.shift != 0)
    for (float& v : s.queries) v = std::ldexp(v, s.shift);
  s.q_aux = query_aux(MatrixView{s.queries.data(), s.nq, s.dim}, opts.metric);
  s.heaps.resize(s.nq);
  if (opts.device == Device::cuda) {
#if EDO_HAVE_CUDA
    s.device = std::make_unique<cuda::DeviceDots>(s.queries.data(), s.nq, s.dim);
    s.tile_rows = kDeviceRowTile;
#else
    require_device(Device::cuda);  // throws: this build has no CUDA
#endif
  }
  s.x_aux.resize(s.tile_rows);
}

KnnSearch::~KnnSearch() = default;

void KnnSearch::add(const float* rows, uint64_t count) {
  Impl& s = *impl_;
  if (s.shift != 0 && s.nq > 0) {
    // Scaled as the queries were, a tile at a time (bounded memory).
    for (uint64_t done = 0; done < count;) {
      const uint64_t n = std::min(s.tile_rows, count - done);
      s.scaled.assign(rows + done * s.dim, rows + (done + n) * s.dim);
      for (float& v : s.scaled) v = std::ldexp(v, s.shift);
      add_rows(s.scaled.data(), n);
      done += n;
    }
    return;
  }
  add_rows(rows, count);
}

void KnnSearch::add_rows(const float* rows, uint64_t count) {
  Impl& s = *impl_;
  const auto end = checked_add(checked_add(s.next_id, s.pending_rows).value_or(UINT64_MAX), count);
  if (!end || *end > static_cast<uint64_t>(INT64_MAX)) EDO_FAIL("k-NN: more than 2^63 database rows");
  if (s.nq == 0) {
    s.next_id = *end;
    return;
  }
  SingleThreadedBlas blas_guard;
  while (count > 0) {
    if (s.pending_rows == 0 && count >= s.tile_rows) {
      // A whole tile straight from the caller's memory.
      s.process_tile(rows, s.tile_rows);
      rows += s.tile_rows * s.dim;
      count -= s.tile_rows;
      continue;
    }
    const uint64_t take = std::min(count, s.tile_rows - s.pending_rows);
    s.pending.resize(s.tile_rows * s.dim);
    std::copy(rows, rows + take * s.dim, s.pending.begin() + static_cast<int64_t>(s.pending_rows * s.dim));
    s.pending_rows += take;
    rows += take * s.dim;
    count -= take;
    if (s.pending_rows == s.tile_rows) {
      s.process_tile(s.pending.data(), s.tile_rows);
      s.pending_rows = 0;
    }
  }
}

KnnResult KnnSearch::finish() {
  Impl& s = *impl_;
  if (s.pending_rows > 0) {
    SingleThreadedBlas blas_guard;
    s.process_tile(s.pending.data(), s.pending_rows);
    s.pending_rows = 0;
  }
  KnnResult r = make_result(s.heaps, s.q_aux, s.opts);
  s.heaps.clear();
  if (s.shift != 0 && s.opts.metric != Metric::cos) {
    // ip and squared l2 scores grew by 2^(2 shift): back in the table's units.
    for (float& v : r.scores) v = static_cast<float>(std::ldexp(static_cast<double>(v), -2 * s.shift));
  }
  return r;
}

KnnResult knn(MatrixView queries, io::TableReader& database, const KnnOptions& opts) {
  if (database.dim() != queries.dim)
    EDO_FAIL("{}: dimension {} does not match the queries' dimension {}", database.path(), database.dim(), queries.dim);
  KnnSearch search(queries, opts);
  const uint64_t block = opts.block_rows ? opts.block_rows : database.block_rows();
  for (uint64_t begin = 0; begin < database.rows(); begin += block) {
    const uint64_t n = std::min(block, database.rows() - begin);
    search.add(database.rows_f32(begin, n), n);
  }
  return search.finish();
}

KnnResult knn(MatrixView queries, MatrixView database, const KnnOptions& opts) {
  if (database.dim != queries.dim)
    EDO_USAGE_FAIL("k-NN: database dimension {} does not match the queries' dimension {}", database.dim, queries.dim);
  KnnSearch search(queries, opts);
  search.add(database.data, database.rows);
  return search.finish();
}

KnnResult knn_reference(MatrixView queries, MatrixView database, const KnnOptions& opts) {
  check_options(queries, opts);
  if (database.dim != queries.dim)
    EDO_USAGE_FAIL("k-NN: database dimension {} does not match the queries' dimension {}", database.dim, queries.dim);
  const uint64_t d = queries.dim;
  const std::vector<float> q_aux = query_aux(queries, opts.metric);
  std::vector<std::vector<Candidate>> best(queries.rows);
  for (uint64_t q = 0; q < queries.rows; ++q) {
    std::vector<Candidate> all;
    for (uint64_t i = 0; i < database.rows; ++i) {
      if (!opts.exclude.empty() && opts.exclude[q] == static_cast<int64_t>(i)) continue;
      const float* x = database.data + i * d;
      float dot = 0.0f;
      for (uint64_t j = 0; j < d; ++j) dot += queries.data[q * d + j] * x[j];
      all.push_back({rank_key(opts.metric, dot, q_aux[q], row_aux(opts.metric, x, d)), static_cast<int64_t>(i)});
    }
    std::sort(all.begin(), all.end(), better);
    all.resize(std::min<uint64_t>(all.size(), opts.k));
    best[q] = std::move(all);
  }
  return make_result(best, q_aux, opts);
}

}  // namespace edo
