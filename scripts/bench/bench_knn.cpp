// SPDX-License-Identifier: Apache-2.0
// Exact k-NN throughput against its ceiling (the sgemm rate OpenBLAS reaches
// on this machine, measured here) and its peer (FAISS IndexFlatIP/L2 search),
// on one seeded in-memory database and query set.
//
// A search does 2 * queries * rows * dim flops of dot products, plus the
// top-k selection; its rate below counts only the dot products, so the
// selection's cost shows as a lower GFLOP/s.
#include "bench_util.hpp"

#include <edo/knn.hpp>

#include <cblas.h>
#include <faiss/IndexFlat.h>
#include <CLI/CLI.hpp>

#include <memory>
#include <unordered_set>

namespace {

using edo::bench::best_seconds;
using faiss_idx = faiss::Index::idx_t;  // int64_t in FAISS 1.7

// Fraction of the k ids per query that two searches share: with exact search
// on continuous random data it is 1 up to ties broken by float rounding.
double id_agreement(const std::vector<int64_t>& a, const std::vector<faiss_idx>& b, uint64_t nq, uint64_t k) {
  uint64_t same = 0;
  for (uint64_t q = 0; q < nq; ++q) {
    const std::unordered_set<int64_t> ids(a.begin() + static_cast<int64_t>(q * k),
                                          a.begin() + static_cast<int64_t>((q + 1) * k));
    for (uint64_t j = 0; j < k; ++j) same += ids.count(b[q * k + j]);
  }
  return static_cast<double>(same) / static_cast<double>(nq * k);
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 1'000'000, nq = 10'000, dim = 128, k = 10;
  int repeat = 2;
  CLI::App app{"edo exact k-NN vs OpenBLAS sgemm and FAISS IndexFlat search"};
  app.add_option("--rows", rows, "Database rows (default 1000000)");
  app.add_option("--queries", nq, "Queries (default 10000)");
  app.add_option("--dim", dim, "Dimension (default 128)");
  app.add_option("-k", k, "Neighbours per query (default 10)");
  app.add_option("--repeat", repeat, "Runs per measurement; the best is kept (default 2)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const int threads = omp_get_max_threads();
  fmt::print("machine: {}, {} OpenMP threads, load average {:.1f}\nOpenBLAS: {} threads, {}\n", edo::bench::cpu_model(),
             threads, edo::bench::load_average(), openblas_get_num_threads(), openblas_get_config());
  fmt::print("{} queries x {} rows x {} fp32, k = {}, best of {} runs\n\n", nq, rows, dim, k, repeat);

  const std::vector<float> base = edo::bench::gaussian(rows * dim, 1);
  const std::vector<float> queries = edo::bench::gaussian(nq * dim, 2);
  const double flops = 2.0 * static_cast<double>(nq) * static_cast<double>(rows) * static_cast<double>(dim);
  const int d = static_cast<int>(dim);
  edo::bench::RateTable table("GFLOP/s", "x sgemm");

  // The ceilings: OpenBLAS on all its threads over a large slice of the same
  // matrices, and the sgemm work edo::knn does, alone: every tile of edo's
  // shape (256 queries x 1024 rows for 10,000 queries: kQuerySubTile x
  // kRowTile, one single-threaded sgemm per OpenMP thread, as knn.cpp runs
  // it) over the whole table, the same sustained work as a search.
  const uint64_t slice = std::min<uint64_t>(rows, 8192);
  std::vector<float> slice_out;  // sized after edo's runs: not part of their peak RSS
  constexpr uint64_t kTileQ = 256, kTileRows = 1024;
  const uint64_t tiles_q = nq / kTileQ, tiles_rows = rows / kTileRows;
  std::vector<std::vector<float>> tile_out(static_cast<size_t>(threads), std::vector<float>(kTileQ * kTileRows));
  const auto run_slice = [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(nq), static_cast<int>(slice), d, 1.0f,
                queries.data(), d, base.data(), d, 0.0f, slice_out.data(), static_cast<int>(slice));
  };
  const auto run_tiles = [&] {
    const int saved = openblas_get_num_threads();
    openblas_set_num_threads(1);
#pragma omp parallel for schedule(dynamic)
    for (int64_t i = 0; i < static_cast<int64_t>(tiles_q * tiles_rows); ++i) {
      const uint64_t tq = static_cast<uint64_t>(i) % tiles_q, tr = static_cast<uint64_t>(i) / tiles_q;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, kTileQ, kTileRows, d, 1.0f,
                  queries.data() + tq * kTileQ * dim, d, base.data() + tr * kTileRows * dim, d, 0.0f,
                  tile_out[static_cast<size_t>(omp_get_thread_num())].data(), kTileRows);
    }
    openblas_set_num_threads(saved);
  };

  // edo's searches and the tile sgemm take turns within each run, so a
  // neighbour's load on this shared machine falls on all of them alike; the
  // peak RSS edo::knn adds over the data (and the tiles' 1 MiB per thread)
  // is its working memory.
  const uint64_t rss_data = edo::bench::peak_rss_bytes();
  std::vector<int64_t> edo_ids[2];
  const edo::Metric metrics[2] = {edo::Metric::ip, edo::Metric::l2};
  double edo_best[2] = {HUGE_VAL, HUGE_VAL}, tiles_best = HUGE_VAL;
  for (int r = 0; r < repeat; ++r) {
    for (int m = 0; m < 2; ++m) {
      edo::KnnOptions opts;
      opts.metric = metrics[m];
      opts.k = k;
      edo_best[m] = std::min(edo_best[m], best_seconds(1, [&] {
                               edo_ids[m] = edo::knn({queries.data(), nq, dim}, {base.data(), rows, dim}, opts).ids;
                             }));
    }
    tiles_best = std::min(tiles_best, best_seconds(1, run_tiles));
  }
  const uint64_t rss_edo = edo::bench::peak_rss_bytes();
  slice_out.resize(nq * slice);
  for (int m = 0; m < 2; ++m)
    table.add(fmt::format("edo::knn {}", edo::metric_name(metrics[m])), edo_best[m], flops / edo_best[m] / 1e9);
  const double slice_t = best_seconds(repeat, run_slice);
  const double slice_rate = 2.0 * static_cast<double>(nq * slice * dim) / slice_t / 1e9;
  table.add(fmt::format("sgemm {}x{}x{}, OpenBLAS threads", nq, slice, dim), slice_t, slice_rate);
  const double tile_rate =
      2.0 * static_cast<double>(tiles_q * tiles_rows * kTileQ * kTileRows * dim) / tiles_best / 1e9;
  table.add(fmt::format("sgemm {}x{}x{} tiles over the table, 1 thread each", kTileQ, kTileRows, dim), tiles_best,
            tile_rate);
  const double ceiling = std::max(slice_rate, tile_rate);

  double agreement[2] = {0, 0};
  for (int m = 0; m < 2; ++m) {
    std::unique_ptr<faiss::IndexFlat> index;
    if (metrics[m] == edo::Metric::ip)
      index = std::make_unique<faiss::IndexFlatIP>(dim);
    else
      index = std::make_unique<faiss::IndexFlatL2>(dim);
    index->add(static_cast<faiss_idx>(rows), base.data());
    std::vector<float> dist(nq * k);
    std::vector<faiss_idx> ids(nq * k);
    const double t = best_seconds(repeat, [&] {
      index->search(static_cast<faiss_idx>(nq), queries.data(), static_cast<faiss_idx>(k), dist.data(), ids.data());
    });
    table.add(fmt::format("faiss IndexFlat{} search", metrics[m] == edo::Metric::ip ? "IP" : "L2"), t, flops / t / 1e9);
    agreement[m] = id_agreement(edo_ids[m], ids, nq, k);
  }

  fmt::print("load average at the end: {:.1f}\n\n", edo::bench::load_average());
  table.print(ceiling);
  fmt::print("\nratios are to the faster sgemm ({:.1f} GFLOP/s); top-{} ids shared with FAISS: ip {:.5f}, l2 {:.5f}\n",
             ceiling, k, agreement[0], agreement[1]);
  const double full_matrix = static_cast<double>(nq) * static_cast<double>(rows) * sizeof(float);
  fmt::print("memory: data {:.0f} MB; edo::knn added {:.0f} MB of peak RSS (a whole score matrix would be {:.0f} MB)\n",
             static_cast<double>(rss_data) / 1e6, static_cast<double>(rss_edo - rss_data) / 1e6, full_matrix / 1e6);
  return 0;
}
