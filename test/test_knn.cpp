// SPDX-License-Identifier: Apache-2.0
// Exact k-NN against the brute-force reference, against the published BIGANN
// ground truth, and under exact ties, short tables, blocking and threads.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/random.hpp>

#include <omp.h>
#include <edo/device.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace edo;

namespace {

std::vector<float> gaussian(uint64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) {  // Box-Muller
    const double u1 = rng.uniform() + 1e-12, u2 = rng.uniform();
    x = static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
  }
  return v;
}

// Small integers: every dot product and norm is exact in fp32, so the GEMM and
// the reference agree bit for bit and ties are real ties.
std::vector<float> small_integers(uint64_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(rng.below(7)) - 3);
  return v;
}

void write_npy(const std::string& path, const std::vector<float>& data, uint64_t rows, uint64_t dim) {
  auto w = io::create_table(path, rows, dim);
  w->write_f32(data.data(), rows);
  w->commit();
}

// The fast result must be a correct top-k: each id's score is its true score,
// the scores are the reference's within float tolerance, and the ids are the
// reference's wherever neighbouring reference scores are not nearly tied.
void check_close(const KnnResult& got, const KnnResult& ref, float tol) {
  REQUIRE(got.nq == ref.nq);
  REQUIRE(got.k == ref.k);
  for (uint64_t q = 0; q < got.nq; ++q) {
    auto gi = got.ids_of(q), ri = ref.ids_of(q);
    auto gs = got.scores_of(q), rs = ref.scores_of(q);
    for (uint64_t i = 0; i < got.k; ++i) {
      CHECK(std::fabs(gs[i] - rs[i]) <= tol * (1 + std::fabs(rs[i])));
      const bool near_tie = (i > 0 && std::fabs(rs[i] - rs[i - 1]) <= tol * (1 + std::fabs(rs[i]))) ||
                            (i + 1 < got.k && std::fabs(rs[i + 1] - rs[i]) <= tol * (1 + std::fabs(rs[i])));
      if (!near_tie) CHECK(gi[i] == ri[i]);
    }
  }
}

void check_identical(const KnnResult& a, const KnnResult& b) {
  REQUIRE(a.ids.size() == b.ids.size());
  CHECK(a.ids == b.ids);
  CHECK(std::memcmp(a.scores.data(), b.scores.data(), a.scores.size() * sizeof(float)) == 0);
}

std::vector<int32_t> read_ivecs(const std::string& path, uint64_t& rows, uint64_t& dim) {
  const std::string bytes = test::read_bytes(path);
  REQUIRE(bytes.size() >= 4);
  int32_t d;
  std::memcpy(&d, bytes.data(), 4);
  REQUIRE(d > 0);
  dim = static_cast<uint64_t>(d);
  const uint64_t stride = 4 * (dim + 1);
  REQUIRE(bytes.size() % stride == 0);
  rows = bytes.size() / stride;
  std::vector<int32_t> out(rows * dim);
  for (uint64_t r = 0; r < rows; ++r) {
    int32_t rd;
    std::memcpy(&rd, bytes.data() + r * stride, 4);
    REQUIRE(rd == d);
    std::memcpy(out.data() + r * dim, bytes.data() + r * stride + 4, 4 * dim);
  }
  return out;
}

constexpr Metric kMetrics[] = {Metric::ip, Metric::l2, Metric::cos};

// Runs `fn` with k-NN options for each metric, the metric named in failures.
template <class Fn>
void for_each_metric(uint64_t k, Fn&& fn) {
  for (Metric m : kMetrics) {
    const std::string metric = metric_name(m);
    CAPTURE(metric);
    KnnOptions o;
    o.metric = m;
    o.k = k;
    fn(o);
  }
}

}  // namespace

TEST_CASE("knn: matches the brute-force reference on random data, every metric") {
  const uint64_t rows = 2500, dim = 19, nq = 37;  // > one row tile, odd sizes
  const auto db = gaussian(rows * dim, 1);
  const auto qs = gaussian(nq * dim, 2);
  const MatrixView d{db.data(), rows, dim}, q{qs.data(), nq, dim};
  for_each_metric(15, [&](KnnOptions o) { check_close(knn(q, d, o), knn_reference(q, d, o), 1e-5f); });
}

TEST_CASE("knn: exact ties rank the lower row id first and match the reference exactly") {
  const uint64_t dim = 6, base = 400;
  auto db = small_integers(base * dim, 3);
  // Append copies of earlier rows: duplicates tie exactly with their originals.
  for (uint64_t r = 0; r < 200; ++r) {
    const uint64_t src = (r * 7) % base;
    db.insert(db.end(), db.begin() + static_cast<int64_t>(src * dim),
              db.begin() + static_cast<int64_t>((src + 1) * dim));
  }
  const uint64_t rows = db.size() / dim;
  const uint64_t nq = 50;
  const auto qs = small_integers(nq * dim, 4);
  const MatrixView d{db.data(), rows, dim}, q{qs.data(), nq, dim};
  for_each_metric(40, [&](KnnOptions o) {
    const KnnResult got = knn(q, d, o), ref = knn_reference(q, d, o);
    check_identical(got, ref);
    uint64_t ties = 0;
    for (uint64_t qi = 0; qi < nq; ++qi) {
      auto ids = got.ids_of(qi);
      auto s = got.scores_of(qi);
      for (uint64_t i = 1; i < o.k; ++i) {
        if (s[i] == s[i - 1]) {
          ++ties;
          CHECK(ids[i] > ids[i - 1]);
        }
        // Best first: descending similarity, ascending distance.
        if (o.metric == Metric::l2)
          CHECK(s[i] >= s[i - 1]);
        else
          CHECK(s[i] <= s[i - 1]);
      }
    }
    CHECK(ties > 100);
  });
}

TEST_CASE("knn: results do not depend on block size, tiling or thread count") {
  const uint64_t rows = 5000, dim = 33, nq = 600;  // > one query tile and several row tiles
  const auto db = gaussian(rows * dim, 5);
  const auto qs = gaussian(nq * dim, 6);
  test::TempDir dir;
  write_npy(dir.file("db.npy"), db, rows, dim);
  const MatrixView d{db.data(), rows, dim}, q{qs.data(), nq, dim};
  for_each_metric(12, [&](KnnOptions o) {
    const int threads = omp_get_max_threads();
    omp_set_num_threads(1);
    const KnnResult one = knn(q, d, o);
    omp_set_num_threads(3);
    const KnnResult three = knn(q, d, o);
    omp_set_num_threads(threads);
    check_identical(one, three);
    auto table = io::open_table(dir.file("db.npy"));
    o.block_rows = 777;
    check_identical(one, knn(q, *table, o));
    // Uneven blocks, some smaller than a tile, give the same lists.
    KnnSearch s(q, o);
    uint64_t done = 0;
    for (uint64_t n : {1u, 2047u, 3000u, 5u, 1u}) {
      const uint64_t take = std::min(n, rows - done);
      s.add(db.data() + done * dim, take);
      done += take;
    }
    REQUIRE(done == rows);
    check_identical(one, s.finish());
  });
}

TEST_CASE("knn: excluded rows, k beyond the table, zero vectors") {
  // 5 rows; each query is a row of the table and excludes itself.
  const std::vector<float> db = {1, 0, 0, 1, 1, 1, 0, 0, 2, 0};
  const MatrixView d{db.data(), 5, 2};
  for_each_metric(8, [&](KnnOptions o) {
    o.exclude = {0, 1, 2, 3, 4};
    const KnnResult r = knn(d, d, o);
    const KnnResult ref = knn_reference(d, d, o);
    check_identical(r, ref);
    for (uint64_t qi = 0; qi < 5; ++qi) {
      auto ids = r.ids_of(qi);
      auto s = r.scores_of(qi);
      for (uint64_t i = 0; i < 4; ++i) {
        CHECK(ids[i] >= 0);
        CHECK(ids[i] != static_cast<int64_t>(qi));
        CHECK(!std::isnan(s[i]));
      }
      for (uint64_t i = 4; i < 8; ++i) {
        CHECK(ids[i] == -1);
        CHECK(std::isnan(s[i]));
      }
    }
  });
  // Query 0 = (1,0): l2 distances to rows 1..4 are 2, 1, 1, 1 -> ties by id.
  KnnOptions o;
  o.metric = Metric::l2;
  o.k = 4;
  o.exclude = {0};
  const std::vector<float> q0 = {1, 0};
  const KnnResult r = knn(MatrixView{q0.data(), 1, 2}, d, o);
  CHECK(r.ids == std::vector<int64_t>{2, 3, 4, 1});
  CHECK(r.scores == std::vector<float>{1, 1, 1, 2});
  // cos: the zero row (3) scores 0; a zero query scores 0 against everything.
  o.metric = Metric::cos;
  o.k = 5;
  o.exclude.clear();
  const KnnResult c = knn(MatrixView{q0.data(), 1, 2}, d, o);
  CHECK(c.ids[0] == 0);
  CHECK(c.ids[1] == 4);  // (2,0): cos 1, after row 0 by id
  CHECK(c.scores[0] == doctest::Approx(1.0));
  CHECK(c.scores[2] == doctest::Approx(1.0 / std::sqrt(2.0)));
  CHECK(c.ids[3] == 1);  // (0,1) and the zero row both score 0; lower id first
  CHECK(c.ids[4] == 3);
  CHECK(c.scores[4] == 0.0f);
  const std::vector<float> zero = {0, 0};
  const KnnResult z = knn(MatrixView{zero.data(), 1, 2}, d, o);
  CHECK(z.ids == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(z.scores == std::vector<float>(5, 0.0f));
}

TEST_CASE("knn: NaN scores rank last") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> db = {nan, 1, 1, 1, 2, 2};
  const std::vector<float> q = {1, 1};
  KnnOptions o;
  o.metric = Metric::ip;
  o.k = 3;
  const KnnResult r = knn(MatrixView{q.data(), 1, 2}, MatrixView{db.data(), 3, 2}, o);
  CHECK(r.ids == std::vector<int64_t>{2, 1, 0});
}

TEST_CASE("knn: ground truth matches the published BIGANN 10k ground truth") {
  auto table = io::open_table(test::shared_data("bigann10k_base.npy"));
  REQUIRE(table->dim() == 128);
  uint64_t gt_rows = 0, gt_dim = 0;
  const auto gt = read_ivecs(test::shared_data("bigann10k_groundtruth.ivecs"), gt_rows, gt_dim);
  REQUIRE(gt_rows == 100);
  REQUIRE(gt_dim == 100);
  std::vector<float> qs(100 * 128);
  table->read_f32(0, 100, qs.data());
  KnnOptions o;
  o.metric = Metric::l2;
  o.k = 99;
  for (int64_t i = 0; i < 100; ++i) o.exclude.push_back(i);
  o.block_rows = 3000;
  const KnnResult r = knn(MatrixView{qs.data(), 100, 128}, *table, o);
  // SIFT values are integers below 256, so every distance is exact in fp32.
  // The lists agree id for id except inside groups of exactly equal
  // distances: the published file orders 4 such tied pairs (queries 1, 56,
  // 82, 86) higher id first, where edo ranks the lower id first.
  uint64_t tie_swaps = 0;
  for (uint64_t q = 0; q < 100; ++q) {
    std::vector<int64_t> expected;
    for (uint64_t i = 0; i < 100; ++i) {
      const int32_t id = gt[q * 100 + i];
      if (id != static_cast<int32_t>(q)) expected.push_back(id);
    }
    REQUIRE(expected.size() == 99);
    auto got = r.ids_of(q);
    auto score = r.scores_of(q);
    for (uint64_t i = 0; i < 99; ++i) {
      if (got[i] == expected[i]) continue;
      ++tie_swaps;
      CAPTURE(q);
      CAPTURE(i);
      const auto at = std::find(got.begin(), got.end(), expected[i]);
      REQUIRE(at != got.end());
      CHECK(score[static_cast<uint64_t>(at - got.begin())] == score[i]);
      CHECK(std::fabs(static_cast<double>(at - got.begin()) - static_cast<double>(i)) == 1.0);
    }
  }
  CHECK(tie_swaps == 8);
}

TEST_CASE("knn: bad arguments are usage errors") {
  const std::vector<float> db(20, 1.0f);
  const MatrixView d{db.data(), 10, 2};
  KnnOptions o;
  o.k = 0;
  CHECK(test::error_of([&] { knn(d, d, o); }).find("k must be at least 1") != std::string::npos);
  o.k = 3;
  o.exclude = {1, 2};
  CHECK(test::error_of([&] { knn(d, d, o); }).find("2 excluded ids given for 10 queries") != std::string::npos);
  o.exclude.clear();
  CHECK(test::error_of([&] { knn(MatrixView{db.data(), 5, 4}, d, o); }).find("dimension") != std::string::npos);
  CHECK(test::error_of([] { parse_metric("dot"); }).find("unknown metric 'dot'") != std::string::npos);
  CHECK(parse_metric("cos") == Metric::cos);
  test::TempDir dir;
  write_npy(dir.file("t.npy"), db, 10, 2);
  auto t = io::open_table(dir.file("t.npy"));
  const std::string msg = test::error_of([&] { knn(MatrixView{db.data(), 5, 4}, *t, o); });
  CHECK(msg.find("t.npy: dimension 2 does not match") != std::string::npos);
}

TEST_CASE("knn cuda: --device cuda without a GPU is an error, never a fallback") {
  const std::vector<float> db(20, 1.0f);
  const MatrixView d{db.data(), 10, 2};
  KnnOptions o;
  o.k = 3;
  if (!cuda_available()) {
    // Never a silent fallback to the CPU: a clean error naming the reason.
    o.device = Device::cuda;
    const std::string why = test::error_of([&] { knn(d, d, o); });
    CHECK(why.rfind("device cuda: ", 0) == 0);  // the library names no flag; a tool's --device says "--device cuda"
    CHECK((why.find("no CUDA GPU") != std::string::npos || why.find("without CUDA") != std::string::npos));
  }
}

TEST_CASE("knn cuda: cuBLAS path matches the CPU") {
  if (!cuda_available()) {
    MESSAGE("no CUDA device: GPU k-NN test skipped");
    return;
  }
  const uint64_t rows = 9000, dim = 40, nq = 700;
  const auto db = gaussian(rows * dim, 7);
  const auto qs = gaussian(nq * dim, 8);
  const MatrixView d{db.data(), rows, dim}, q{qs.data(), nq, dim};
  const auto ints = small_integers(rows * dim, 9);
  const auto int_qs = small_integers(nq * dim, 10);
  const MatrixView di{ints.data(), rows, dim}, qi{int_qs.data(), nq, dim};
  for_each_metric(20, [&](KnnOptions o) {
    KnnOptions g = o;
    g.device = Device::cuda;
    check_close(knn(q, d, g), knn(q, d, o), 1e-5f);
    // Integer data: exact on both sides, so identical lists, ties included.
    check_identical(knn(qi, di, g), knn(qi, di, o));
  });
}

TEST_CASE("knn: the ranking does not move with the table's units, and scores come back in them") {
  const uint64_t nq = 40, n = 3000, dim = 24;
  const std::vector<float> q = gaussian(nq * dim, 11), x = gaussian(n * dim, 12);
  for (const Metric metric : {Metric::l2, Metric::ip, Metric::cos}) {
    KnnOptions opt;
    opt.metric = metric;
    opt.k = 10;
    const KnnResult base = knn(MatrixView{q.data(), nq, dim}, MatrixView{x.data(), n, dim}, opt);
    // Powers of two: the scaled tables hold exactly the same numbers, so the
    // neighbours must be the same ones. At 2^70 squares overflow float, at
    // 2^-80 they underflow it.
    for (const int e : {70, -80, 20}) {
      std::vector<float> qs(q), xs(x);
      for (float& v : qs) v = std::ldexp(v, e);
      for (float& v : xs) v = std::ldexp(v, e);
      const KnnResult r = knn(MatrixView{qs.data(), nq, dim}, MatrixView{xs.data(), n, dim}, opt);
      CAPTURE(metric_name(metric));
      CAPTURE(e);
      CHECK(r.ids == base.ids);
      for (size_t i = 0; i < r.scores.size(); ++i) {
        const double want = metric == Metric::cos ? base.scores[i] : std::ldexp(double{base.scores[i]}, 2 * e);
        if (std::fabs(want) > std::numeric_limits<float>::max())
          REQUIRE(std::isinf(r.scores[i]));  // in the table's units the score is beyond float
        else
          REQUIRE(std::fabs(r.scores[i] - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
      }
    }
    // Subnormal rows (small integers times 2^-140 are exact there): the same neighbours too.
    const std::vector<float> qi = small_integers(nq * dim, 21), xi = small_integers(n * dim, 22);
    const KnnResult exact = knn(MatrixView{qi.data(), nq, dim}, MatrixView{xi.data(), n, dim}, opt);
    std::vector<float> qt(qi), xt(xi);
    for (float& v : qt) v = std::ldexp(v, -140);
    for (float& v : xt) v = std::ldexp(v, -140);
    CHECK(knn(MatrixView{qt.data(), nq, dim}, MatrixView{xt.data(), n, dim}, opt).ids == exact.ids);
  }
}
