// SPDX-License-Identifier: Apache-2.0
// Exact k-nearest-neighbour search: the ground truth every evaluation is
// measured against.
//
// The query set is held in memory; the database streams through in row blocks.
// Scores come from blocked SGEMM (OpenBLAS on the CPU, cuBLAS on a GPU) over
// tiles of queries x rows, so the full score matrix never exists; each query
// keeps a bounded heap of its k best rows.
//
// Reproducibility: OpenBLAS rounds a dot product differently depending on
// the GEMM's shape, its place in the tile and OpenBLAS's own thread count.
// So the CPU path cuts the table into tiles at fixed row ids (buffering rows
// across block boundaries), cuts the queries into fixed sub-tiles, and runs
// one single-threaded SGEMM per sub-tile on OpenMP threads (OpenBLAS is set
// to one thread for the duration of each call and restored after). Results
// are then bit-identical whatever the OpenMP thread count or block size.
// They can differ in the last bits from knn_reference() and from the GPU.
//
// Ranking, fixed so that results never depend on thread count or block size:
//   ip   score = q.x                               larger is better
//   cos  score = q.x / (|q| |x|), 0 when q or x is all zeros; larger is better
//   l2   score = |q - x|^2 (squared distance)      smaller is better
// Rows are ranked on a key computed identically for every row of a query
// (for l2: |x|^2 - 2 q.x, to which |q|^2 is added only when reporting), and
// equal keys rank the lower row id first. A NaN key ranks after everything.
// When fewer than k rows are eligible (the table is small, or minus the
// excluded row), the tail of a result list holds id -1 and score NaN.
//
// Scale: queries whose largest magnitude is below 2^-32 or from 2^32 are
// searched (with every row) multiplied by the power of two that brings it
// near 1, so the ranking does not move with the table's units (squares of
// 1e19 overflow float, of 1e-22 underflow it); scores are reported back in
// the table's units.
#pragma once

#include <edo/device.hpp>
#include <edo/matrix.hpp>

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace edo {

namespace io {
class TableReader;
}

// Incremental search: add the database's rows in order, in blocks of any
// size, then finish(). Lets one pass over a table feed several searches
// (see eval.hpp).
class KnnSearch {
 public:
  // Copies the queries; `opts.exclude` must be empty or hold queries.rows ids.
  KnnSearch(MatrixView queries, const KnnOptions& opts);
  ~KnnSearch();
  KnnSearch(const KnnSearch&) = delete;
  KnnSearch& operator=(const KnnSearch&) = delete;

  // Adds `count` rows (count x dim fp32); they take the next row ids.
  void add(const float* rows, uint64_t count);
  // The top-k lists, best first. The search cannot be used afterwards.
  KnnResult finish();

  struct Impl;

 private:
  void add_rows(const float* rows, uint64_t count);
  std::unique_ptr<Impl> impl_;
};

// Exact k-NN of `queries` over a whole table, streamed in blocks.
KnnResult knn(MatrixView queries, io::TableReader& database, const KnnOptions& opts);
// Exact k-NN over an in-memory database.
KnnResult knn(MatrixView queries, MatrixView database, const KnnOptions& opts);

// Brute force, one dot product at a time, for tests: same ranking rules and
// the same score formulas as knn(), without BLAS, blocking or threads.
KnnResult knn_reference(MatrixView queries, MatrixView database, const KnnOptions& opts);

}  // namespace edo
