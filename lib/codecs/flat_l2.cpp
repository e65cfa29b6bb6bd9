// SPDX-License-Identifier: Apache-2.0
// flat_l2_knn: FAISS 1.7's exhaustive L2 search (knn_L2sqr through
// exhaustive_L2sqr_blas), float for float, on edo's threads. FAISS runs each
// block's distance product in OpenBLAS's threads, then its distances in
// OpenMP's, then the selection in one thread; on two cores a third of rq's
// training went to the threads handing the cores back and forth
// (docs/BENCHMARKS.md, "Training time"). Here each thread takes whole blocks
// through all three. The blocks are FAISS's own and every product runs on
// one OpenBLAS thread: OpenBLAS rounds a product by where a row falls in the
// call and, with some of its kernels (Haswell's, measured on a Zen 5 that
// OPENBLAS_CORETYPE pins to it: 4% of a 256 x 4096 x 50 product's floats),
// by its thread count too. So the products are those of FAISS's search with
// OpenBLAS at one thread, whatever the thread count, and rq's codebooks do
// not depend on it.
#include <edo/parallel.hpp>
#include <edo/pq.hpp>

#include <edo/single_threaded_blas.hpp>

#include <faiss/utils/Heap.h>
#include <faiss/utils/distances.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

extern "C" void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
                       const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
                       const float* beta, float* c, const int* ldc);

namespace edo {
namespace {

using MaxHeap = faiss::CMax<float, int64_t>;

// FAISS's distance from the norms and the product: (|x|^2 + |y|^2) - 2 x.y,
// negatives (round-off on near-identical vectors) set to zero. 2 x.y is
// exact, so a fused multiply-add rounds the same as the two steps.
inline float flat_distance(float x_norm, float y_norm, float ip) {
  const float dis = x_norm + y_norm - 2.0f * ip;
  return dis < 0.0f ? 0.0f : dis;
}

// The first of the smallest distances of one row (SingleBestResultHandler:
// a strict comparison, from +inf, so NaN is never taken and ties keep the
// lower id), over columns [j0, j0 + ny), from the row's best so far
// (best_io, id_io), as FAISS's handler goes block after block.
void nearest_of_row(float x_norm, const float* y_norms, const float* ip, size_t ny, size_t j0, float& best_io,
                    int64_t& id_io) {
  float best = best_io;
  int64_t id = id_io;
  size_t j = 0;
#ifdef __AVX2__
  if (ny >= 8) {
    const __m256 xn = _mm256_set1_ps(x_norm), two = _mm256_set1_ps(2.0f), zero = _mm256_setzero_ps();
    __m256 lane_best = _mm256_set1_ps(HUGE_VALF);
    __m256i lane_id = _mm256_setzero_si256(), at = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i step = _mm256_set1_epi32(8);
    for (; j + 8 <= ny; j += 8) {
      __m256 dis =
          _mm256_sub_ps(_mm256_add_ps(xn, _mm256_loadu_ps(y_norms + j)), _mm256_mul_ps(two, _mm256_loadu_ps(ip + j)));
      dis = _mm256_blendv_ps(dis, zero, _mm256_cmp_ps(dis, zero, _CMP_LT_OQ));
      const __m256 better = _mm256_cmp_ps(dis, lane_best, _CMP_LT_OQ);
      lane_best = _mm256_blendv_ps(lane_best, dis, better);
      lane_id = _mm256_blendv_epi8(lane_id, at, _mm256_castps_si256(better));
      at = _mm256_add_epi32(at, step);
    }
    alignas(32) float lb[8];
    alignas(32) int32_t li[8];
    _mm256_store_ps(lb, lane_best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(li), lane_id);
    // Each lane holds the first of its smallest; what this block adds is the
    // lowest id among the lanes holding the smallest of all, if it beats the best so far.
    float block_best = HUGE_VALF;
    int64_t block_id = 0;
    for (int l = 0; l < 8; ++l) {
      if (lb[l] < block_best || (lb[l] == block_best && block_best != HUGE_VALF && li[l] < block_id)) {
        block_best = lb[l];
        block_id = li[l];
      }
    }
    if (block_best < best) {
      best = block_best;
      id = static_cast<int64_t>(j0) + block_id;
    }
  }
#endif
  for (; j < ny; ++j) {
    const float dis = flat_distance(x_norm, y_norms[j], ip[j]);
    if (dis < best) {
      best = dis;
      id = static_cast<int64_t>(j0 + j);
    }
  }
  best_io = best;
  id_io = id;
}

// One block of FAISS's search: rows [r0, r0 + bn) of x against all of y,
// y's rows taken block_cols at a time into `ip`; the rows' selection in an
// OpenMP loop when `rows_in_parallel` (the block's product then ran in
// OpenBLAS's threads), else in the calling thread.
void search_block(const float* x, size_t r0, size_t bn, const float* y, const float* y_norms, size_t ny, size_t d,
                  size_t k, size_t block_cols, bool rows_in_parallel, float* ip, float* x_norms, float* distances,
                  int64_t* labels) {
  const int di = static_cast<int>(d), bni = static_cast<int>(bn);
  for (size_t r = 0; r < bn; ++r) {
    x_norms[r] = faiss::fvec_norm_L2sqr(x + (r0 + r) * d, d);
    if (k == 1) {
      distances[r0 + r] = HUGE_VALF;
      labels[r0 + r] = 0;
    } else {
      faiss::heap_heapify<MaxHeap>(k, distances + (r0 + r) * k, labels + (r0 + r) * k);
    }
  }
  for (size_t j0 = 0; j0 < ny; j0 += block_cols) {
    const size_t cols = std::min(block_cols, ny - j0);
    const int ci = static_cast<int>(cols);
    const float one = 1.0f, zero = 0.0f;
    // FAISS's call: y's rows [j0, j0 + cols) against x's block, one row of x per column of ip.
    sgemm_("Transpose", "Not transpose", &ci, &bni, &di, &one, y + j0 * d, &di, x + r0 * d, &di, &zero, ip, &ci);
#pragma omp parallel for schedule(static) if (rows_in_parallel)
    for (int64_t ri = 0; ri < static_cast<int64_t>(bn); ++ri) {
      const auto r = static_cast<size_t>(ri);
      const size_t row = r0 + r;
      const float* line = ip + r * cols;
      if (k == 1) {
        nearest_of_row(x_norms[r], y_norms + j0, line, cols, j0, distances[row], labels[row]);
        continue;
      }
      // HeapResultHandler: a max-heap of k from +inf, a strict comparison with its top.
      float* heap_dis = distances + row * k;
      int64_t* heap_ids = labels + row * k;
      for (size_t j = 0; j < cols; ++j) {
        const float dis = flat_distance(x_norms[r], y_norms[j0 + j], line[j]);
        if (MaxHeap::cmp(heap_dis[0], dis)) faiss::heap_replace_top<MaxHeap>(k, heap_dis, heap_ids, dis, j0 + j);
      }
    }
  }
  if (k > 1)
    for (size_t r = 0; r < bn; ++r) faiss::heap_reorder<MaxHeap>(k, distances + (r0 + r) * k, labels + (r0 + r) * k);
}

}  // namespace

void flat_l2_knn(const float* x, size_t n, const float* y, size_t ny, size_t d, size_t k, float* distances,
                 int64_t* labels) {
  // FAISS's own settings: fewer rows than distance_compute_blas_threshold
  // are searched without BLAS, and k from distance_compute_min_k_reservoir
  // up keep a reservoir, not a heap; those cases are FAISS's to answer.
  if (n < static_cast<size_t>(faiss::distance_compute_blas_threshold) ||
      k >= static_cast<size_t>(faiss::distance_compute_min_k_reservoir) || k > ny) {
    faiss::knn_L2sqr(x, y, d, n, ny, k, distances, labels);
    return;
  }
  if (ny == 0 || k == 0) return;
  const size_t block_rows = static_cast<size_t>(std::max(1, faiss::distance_compute_blas_query_bs));
  const size_t block_cols = std::min(ny, static_cast<size_t>(std::max(1, faiss::distance_compute_blas_database_bs)));
  std::vector<float> y_norms(ny);
  for (size_t j = 0; j < ny; ++j) y_norms[j] = faiss::fvec_norm_L2sqr(y + j * d, d);
  const auto blocks = static_cast<int64_t>((n + block_rows - 1) / block_rows);
  // With a block for every thread, each thread takes whole blocks, the next
  // block to whichever finishes first; with fewer, the blocks go one after
  // another, each product on one thread and its rows' selection in OpenMP's.
  // Either way a row's answer does not depend on which thread computes it.
  const detail::SingleThreadedBlas one_thread_each;
  if (blocks < omp_get_max_threads()) {
    std::vector<float> ip(block_rows * block_cols), x_norms(block_rows);
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t r0 = static_cast<size_t>(b) * block_rows;
      search_block(x, r0, std::min(block_rows, n - r0), y, y_norms.data(), ny, d, k, block_cols,
                   parallel_worth(uint64_t{block_rows} * ny), ip.data(), x_norms.data(), distances, labels);
    }
    return;
  }
#pragma omp parallel
  {
    std::vector<float> ip(block_rows * block_cols), x_norms(block_rows);
#pragma omp for schedule(dynamic, 1)
    for (int64_t b = 0; b < blocks; ++b) {
      const size_t r0 = static_cast<size_t>(b) * block_rows;
      search_block(x, r0, std::min(block_rows, n - r0), y, y_norms.data(), ny, d, k, block_cols, false, ip.data(),
                   x_norms.data(), distances, labels);
    }
  }
}

}  // namespace edo
