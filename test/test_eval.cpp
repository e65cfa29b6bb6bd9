// SPDX-License-Identifier: Apache-2.0
// evaluate(): exact values on constructed tables, consistency with knn(),
// reproducibility, weighting and error handling.
#include "test_util.hpp"

#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

using namespace edo;
using doctest::Approx;

namespace {

void write_npy(const std::string& path, const std::vector<float>& data, uint64_t rows, uint64_t dim) {
  auto w = io::create_table(path, rows, dim);
  w->write_f32(data.data(), rows);
  w->commit();
}

std::vector<float> glove() {
  auto t = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  std::vector<float> v(t->rows() * t->dim());
  t->read_f32(0, t->rows(), v.data());
  return v;
}

// x.npy and y.npy in `dir`: an original and its "compressed" version.
void write_pair(const test::TempDir& dir, const std::vector<float>& x, const std::vector<float>& y, uint64_t rows,
                uint64_t dim) {
  write_npy(dir.file("x.npy"), x, rows, dim);
  write_npy(dir.file("y.npy"), y, rows, dim);
}

EvalResult evaluate_files(const std::string& a, const std::string& b, const EvalOptions& o) {
  auto ta = io::open_table(a);
  auto tb = io::open_table(b);
  return evaluate(*ta, *tb, o);
}

}  // namespace

TEST_CASE("eval: an identical table has recall 1 and zero error") {
  const std::string path = test::shared_data("glove.6B.50d.10k.npy");
  EvalOptions o;
  o.metric = Metric::cos;
  o.queries = 200;
  o.seed = 7;
  o.block_rows = 3333;
  auto a = io::open_table(path);
  auto b = io::open_table(path);
  for (io::TableReader* other : {b.get(), a.get()}) {  // a second reader, then the same reader twice
    const EvalResult r = evaluate(*a, *other, o);
    CHECK(r.at("rows") == 10000);
    CHECK(r.at("dim") == 50);
    CHECK(r.at("queries") == 200);
    for (const char* k : {"1", "10", "100"}) {
      CHECK(r.at(std::string("recall@") + k) == 1.0);
      CHECK(r.at(std::string("r1@") + k) == 1.0);
      CHECK(r.at(std::string("1-recall@") + k) == 1.0);  // the 0.1 name still answers
      CHECK(r.at(std::string("recall_drop@") + k) == 0.0);
    }
    CHECK(r.at("rel_fro") == 0.0);
    CHECK(r.at("mse") == 0.0);
    CHECK(r.at("max_abs") == 0.0);
    CHECK(r.at("cos.mean") == Approx(1.0).epsilon(1e-12));
    CHECK(r.at("cos.min") == Approx(1.0).epsilon(1e-12));
    CHECK(r.at("cos.p1") == Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("eval: X^ = 1.1 X gives relative error 0.1, cosine 1") {
  test::TempDir dir;
  const auto x = glove();
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = 1.1f * x[i];
  // The exact figures for the stored fp32 values, computed independently in double.
  double err2 = 0, norm2 = 0, max_abs = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double d = static_cast<double>(x[i]) - static_cast<double>(y[i]);
    err2 += d * d;
    norm2 += static_cast<double>(x[i]) * x[i];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  write_pair(dir, x, y, 10000, 50);
  EvalOptions o;
  o.metric = Metric::ip;
  o.queries = 100;
  o.ks = {10};
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK(r.at("rel_fro") == Approx(0.1).epsilon(1e-6));
  CHECK(r.at("rel_fro") == Approx(std::sqrt(err2 / norm2)).epsilon(1e-12));
  CHECK(r.at("mse") == Approx(err2 / 500000.0).epsilon(1e-12));
  CHECK(r.at("mse") == Approx(0.01 * norm2 / 500000.0).epsilon(1e-5));
  CHECK(r.at("max_abs") == Approx(max_abs).epsilon(1e-12));
  CHECK(r.at("cos.mean") == Approx(1.0).epsilon(1e-9));
  CHECK(r.at("cos.min") == Approx(1.0).epsilon(1e-9));
  // Scaling the database by 1.1 keeps every inner-product ranking (up to fp32 rounding of near ties).
  CHECK(r.at("recall@10") >= 0.99);
  CHECK_FALSE(r.has("recall@1"));
}

TEST_CASE("eval: recalls match a hand computation from knn()") {
  test::TempDir dir;
  const auto x = glove();
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::round(x[i] * 2.0f) / 2.0f;  // a coarse grid
  write_pair(dir, x, y, 10000, 50);
  EvalOptions o;
  o.metric = Metric::l2;
  o.ks = {1, 10, 50};
  o.query_ids = {0, 5, 17, 123, 999, 4242, 9999};
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);

  std::vector<float> qs;
  KnnOptions ko;
  ko.metric = Metric::l2;
  ko.k = 50;
  for (uint64_t id : o.query_ids) {
    qs.insert(qs.end(), x.begin() + static_cast<int64_t>(id * 50), x.begin() + static_cast<int64_t>((id + 1) * 50));
    ko.exclude.push_back(static_cast<int64_t>(id));
  }
  const MatrixView q{qs.data(), o.query_ids.size(), 50};
  const KnnResult truth = knn(q, MatrixView{x.data(), 10000, 50}, ko);
  const KnnResult approx = knn(q, MatrixView{y.data(), 10000, 50}, ko);
  for (uint64_t k : o.ks) {
    double recall = 0, one = 0;
    for (uint64_t i = 0; i < q.rows; ++i) {
      auto t = truth.ids_of(i).first(k);
      auto a = approx.ids_of(i).first(k);
      uint64_t common = 0;
      for (int64_t id : t) common += std::count(a.begin(), a.end(), id) > 0;
      recall += static_cast<double>(common) / static_cast<double>(k);
      one += std::count(a.begin(), a.end(), t[0]) > 0;
    }
    CAPTURE(k);
    CHECK(r.at("recall@" + std::to_string(k)) == Approx(recall / 7.0).epsilon(1e-12));
    CHECK(r.at("r1@" + std::to_string(k)) == Approx(one / 7.0).epsilon(1e-12));
    CHECK(r.at("recall_drop@" + std::to_string(k)) == Approx(1.0 - recall / 7.0).epsilon(1e-12));
  }
  // The grid is coarse enough to lose neighbours, not so coarse as to lose all.
  CHECK(r.at("recall@10") < 1.0);
  CHECK(r.at("recall@10") > 0.1);
  CHECK(r.at("rel_fro") > 0.05);
}

TEST_CASE("eval: cosine percentiles use the nearest rank") {
  // Row i is x = (1, 0) against x^ = (c_i, sqrt(1 - c_i^2)), so cos = c_i.
  test::TempDir dir;
  const uint64_t rows = 200;
  std::vector<float> x, y;
  std::vector<double> c(rows);
  for (uint64_t i = 0; i < rows; ++i) {
    c[i] = static_cast<double>((i * 37) % rows) / static_cast<double>(rows);  // a permutation of 0, 0.005, ...
    const float ci = static_cast<float>(c[i]);
    x.insert(x.end(), {1.0f, 0.0f});
    y.insert(y.end(), {ci, std::sqrt(1.0f - ci * ci)});
  }
  write_pair(dir, x, y, rows, 2);
  EvalOptions o;
  o.queries = 10;
  o.ks = {1};
  o.block_rows = 17;
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  // ceil(0.01 * 200) = 2nd smallest, ceil(0.05 * 200) = 10th smallest.
  CHECK(r.at("cos.min") == Approx(0.0).epsilon(1e-6));
  CHECK(r.at("cos.p1") == Approx(0.005).epsilon(1e-6));
  CHECK(r.at("cos.p5") == Approx(0.045).epsilon(1e-6));
  double mean = 0;
  for (double v : c) mean += v;
  CHECK(r.at("cos.mean") == Approx(mean / rows).epsilon(1e-6));
}

TEST_CASE("eval: k-NN classification, ties going to the smallest label") {
  // Five rows and every row a query: each query's 4 other rows all vote.
  // Labels 1,1,1,2,2: rows 0-2 see {1,1,2,2} -> tie -> 1 (right); rows 3-4
  // see a majority of 1 (wrong). Accuracy 3/5; had ties gone to the larger
  // label it would be 0.
  test::TempDir dir;
  const std::vector<float> x = {0, 0, 1, 0, 2, 0, 3, 0, 4, 0};
  write_npy(dir.file("x.npy"), x, 5, 2);
  const std::vector<float> y(10, 0.0f);  // everything collapsed: all distances tie
  write_npy(dir.file("y.npy"), y, 5, 2);
  EvalOptions o;
  o.ks = {1};
  o.labels = {1, 1, 1, 2, 2};
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK(r.at("queries") == 5);
  CHECK(r.at("accuracy.original") == Approx(0.6));
  CHECK(r.at("accuracy.compressed") == Approx(0.6));
  CHECK(r.at("accuracy_drop") == Approx(0.0));
  // Only the votes of the 10 nearest count: labels by cluster survive mild noise, not destruction.
  const auto g = glove();
  std::vector<float> noise(g.size(), 0.0f);
  for (size_t i = 0; i < g.size(); ++i) noise[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.0f;
  write_npy(dir.file("g.npy"), g, 10000, 50);
  write_npy(dir.file("n.npy"), noise, 10000, 50);
  EvalOptions go;
  go.metric = Metric::cos;
  go.ks = {10};
  go.queries = 300;
  go.labels.resize(10000);
  for (uint64_t i = 0; i < 10000; ++i) go.labels[i] = g[i * 50] > 0 ? 1 : 0;  // sign of component 0
  const EvalResult gr = evaluate_files(dir.file("g.npy"), dir.file("n.npy"), go);
  CHECK(gr.at("accuracy.original") > 0.7);
  CHECK(gr.at("accuracy_drop") > 0.1);
  CHECK(gr.at("accuracy_drop") == Approx(gr.at("accuracy.original") - gr.at("accuracy.compressed")));
}

TEST_CASE("eval: access-weighted metrics follow the frequencies") {
  test::TempDir dir;
  const auto x = glove();
  std::vector<float> y = x;
  for (size_t i = 5000 * 50; i < y.size(); ++i) y[i] = 0.0f;  // rows 5000.. are lost
  write_pair(dir, x, y, 10000, 50);
  EvalOptions o;
  o.metric = Metric::cos;
  o.ks = {10};
  o.queries = 500;
  o.seed = 3;
  o.freq.assign(10000, 0.0);
  for (uint64_t i = 0; i < 5000; ++i) o.freq[i] = 1.0 / static_cast<double>(i + 1);  // Zipf on the kept rows
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK(r.at("w.queries") == 500);
  CHECK(r.at("w.rel_fro") == 0.0);
  CHECK(r.at("w.mse") == 0.0);
  CHECK(r.at("w.cos.mean") == Approx(1.0).epsilon(1e-12));
  CHECK(r.at("w.cos.min") == Approx(1.0).epsilon(1e-12));
  CHECK(r.at("cos.min") == 0.0);
  CHECK(r.at("cos.mean") == Approx(0.5).epsilon(1e-9));
  CHECK(r.at("rel_fro") > 0.5);
  // Weighted queries are kept rows, but their neighbours include lost rows.
  CHECK(r.at("w.recall@10") < 1.0);
  CHECK(r.has("w.r1@10"));
  CHECK(r.has("w.1-recall@10"));
  CHECK(r.has("w.recall_drop@10"));

  // Draws follow the weights: with frequencies 1 and 3, about 3/4 of the draws are row 1.
  const auto ids = sample_weighted_ids({1.0, 3.0, 0.0}, 20000, 11);
  const auto ones = std::count(ids.begin(), ids.end(), uint64_t{1});
  CHECK(std::count(ids.begin(), ids.end(), uint64_t{2}) == 0);
  CHECK(static_cast<double>(ones) / 20000.0 == Approx(0.75).epsilon(0.03));
  CHECK(ids == sample_weighted_ids({1.0, 3.0, 0.0}, 20000, 11));
  CHECK(ids != sample_weighted_ids({1.0, 3.0, 0.0}, 20000, 12));
}

TEST_CASE("eval: same inputs and seed give identical numbers at any thread count") {
  test::TempDir dir;
  const auto x = glove();
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = std::round(x[i] * 8.0f) / 8.0f;
  write_pair(dir, x, y, 10000, 50);
  EvalOptions o;
  o.metric = Metric::cos;
  o.queries = 300;
  o.seed = 42;
  o.freq.resize(10000);
  for (uint64_t i = 0; i < 10000; ++i) o.freq[i] = 1.0 / static_cast<double>(i + 1);
  o.labels.resize(10000);
  for (uint64_t i = 0; i < 10000; ++i) o.labels[i] = static_cast<int64_t>(i % 3);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const EvalResult one = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  omp_set_num_threads(4);
  o.block_rows = 1234;
  const EvalResult four = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  omp_set_num_threads(threads);
  REQUIRE(one.metrics().size() == four.metrics().size());
  for (size_t i = 0; i < one.metrics().size(); ++i) {
    CAPTURE(one.metrics()[i].first);
    CHECK(one.metrics()[i].first == four.metrics()[i].first);
    CHECK(one.metrics()[i].second == four.metrics()[i].second);  // bit-identical, not approximately
  }
  o.seed = 43;
  const EvalResult other = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK(sample_query_ids(10000, o) != sample_query_ids(10000, EvalOptions{}));
  CHECK(other.at("rel_fro") == one.at("rel_fro"));  // independent of the queries
}

TEST_CASE("eval: result map keeps insertion order, set() replaces") {
  EvalResult r;
  r.set("b", 1);
  r.set("a", 2);
  r.set("b", 3);
  REQUIRE(r.metrics().size() == 2);
  CHECK(r.metrics()[0].first == "b");
  CHECK(r.metrics()[0].second == 3);
  CHECK(r.names() == "b, a");
  CHECK_FALSE(r.get("c").has_value());
  const std::string msg = test::error_of([&] { (void)r.at("c"); });
  CHECK(msg.find("unknown metric 'c' (available: b, a)") != std::string::npos);
}

TEST_CASE("eval: mismatched or bad inputs are reported") {
  test::TempDir dir;
  const std::vector<float> x(40, 1.0f);
  write_npy(dir.file("a.npy"), x, 10, 4);
  write_npy(dir.file("b.npy"), x, 20, 2);
  write_npy(dir.file("c.npy"), x, 10, 4);
  write_npy(dir.file("one.npy"), x, 1, 40);
  EvalOptions o;
  CHECK(test::error_of([&] {
          evaluate_files(dir.file("a.npy"), dir.file("b.npy"), o);
        }).find("b.npy: shape 20x2 does not match the original") != std::string::npos);
  CHECK(test::error_of([&] { evaluate_files(dir.file("one.npy"), dir.file("one.npy"), o); }).find("at least 2 rows") !=
        std::string::npos);
  auto usage = [&](const EvalOptions& bad) {
    try {
      evaluate_files(dir.file("a.npy"), dir.file("c.npy"), bad);
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::usage);
      return std::string(e.what());
    }
    FAIL("expected a usage error");
    return std::string();
  };
  EvalOptions b = o;
  b.ks = {0};
  CHECK(usage(b).find("k >= 1") != std::string::npos);
  b = o;
  b.query_ids = {3, 10};
  CHECK(usage(b).find("query row 10 is outside") != std::string::npos);
  b = o;
  b.labels = {1, 2};
  CHECK(usage(b).find("2 labels given for 10 rows") != std::string::npos);
  b = o;
  b.freq.assign(10, 1.0);
  b.freq[4] = -1;
  CHECK(usage(b).find("frequency of row 4") != std::string::npos);
  b.freq.assign(10, 0.0);
  CHECK(usage(b).find("sum to 0") != std::string::npos);
  // Everything valid but k beyond the table: lists are shorter, recall uses what exists.
  b = o;
  b.ks = {50};
  const EvalResult r = evaluate_files(dir.file("a.npy"), dir.file("c.npy"), b);
  CHECK(r.at("recall@50") == 1.0);
}

// ---- RowErrorStats: the one reconstruction-statistics implementation -----------------------------

TEST_CASE("eval: RowErrorStats gives evaluate()'s numbers, by rows, by blocks or merged") {
  const auto x = glove();
  const uint64_t rows = 10000, dim = 50;
  std::vector<float> y(x);
  for (uint64_t i = 0; i < y.size(); ++i) y[i] = std::round(y[i] * 8.0f) / 8.0f;
  test::TempDir dir;
  write_pair(dir, x, y, rows, dim);
  EvalOptions o;
  o.queries = 10;
  o.ks = {1};
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);

  RowErrorStats by_rows(dim, rows), by_blocks(dim, rows), first(dim, rows), second(dim, rows);
  for (uint64_t i = 0; i < rows; ++i) by_rows.add(row_error(x.data() + i * dim, y.data() + i * dim, dim));
  for (uint64_t b = 0; b < rows; b += 999) {
    const uint64_t n = std::min<uint64_t>(999, rows - b);
    by_blocks.add(x.data() + b * dim, y.data() + b * dim, n);
  }
  first.add(x.data(), y.data(), 4000);
  second.add(x.data() + 4000 * dim, y.data() + 4000 * dim, rows - 4000);
  first.merge(second);
  const RowErrorSummary s = by_rows.finish(), sb = by_blocks.finish(), sm = first.finish();
  CHECK(s.rows == rows);
  CHECK(s.rel_fro == r.at("rel_fro"));
  CHECK(s.mse == r.at("mse"));
  CHECK(s.cos_mean == r.at("cos.mean"));
  CHECK(s.cos_min == r.at("cos.min"));
  CHECK(s.cos_p1 == r.at("cos.p1"));
  CHECK(s.cos_p5 == r.at("cos.p5"));
  CHECK(s.max_abs == r.at("max_abs"));
  CHECK(sb.cos_mean == s.cos_mean);  // the same order of additions: the same bits
  CHECK(sb.cos_p1 == s.cos_p1);
  CHECK(sb.mse == s.mse);
  CHECK(sm.rows == rows);
  CHECK(sm.cos_min == s.cos_min);
  CHECK(sm.cos_p1 == s.cos_p1);
  CHECK(sm.cos_p5 == s.cos_p5);
  CHECK(sm.max_abs == s.max_abs);
  CHECK(sm.cos_mean == Approx(s.cos_mean).epsilon(1e-12));
  CHECK(sm.rel_fro == Approx(s.rel_fro).epsilon(1e-12));
}

TEST_CASE("eval: RowErrorStats ranks a NaN cosine below every number") {
  const uint64_t dim = 2;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  // Rows: exact, a NaN in the original, an Inf in the decoded row, a zero row, orthogonal.
  const std::vector<float> x = {1, 0, nan, 1, 1, 1, 0, 0, 1, 0};
  const std::vector<float> y = {1, 0, 1, 1, inf, 1, 0, 0, 0, 1};
  RowErrorStats st(dim, 5);
  st.add(x.data(), y.data(), 5);
  const RowErrorSummary s = st.finish();
  CHECK(s.rows == 5);
  CHECK(std::isnan(s.cos_min));  // NaN beats the orthogonal row's 0
  CHECK(std::isnan(s.cos_p1));   // rank 1 of 5: the lowest, NaN
  CHECK(std::isnan(s.cos_p5));
  CHECK(std::isnan(s.cos_mean));  // sums propagate NaN
  CHECK(std::isnan(s.max_abs));
  // Without the broken rows, the lowest is the orthogonal row; a zero row
  // matched by a zero row has cosine 1.
  RowErrorStats clean(dim, 3);
  for (uint64_t i : {0u, 3u, 4u}) clean.add(row_error(x.data() + i * dim, y.data() + i * dim, dim));
  const RowErrorSummary c = clean.finish();
  CHECK(c.cos_min == 0.0);
  CHECK(c.cos_mean == Approx(2.0 / 3.0));
  CHECK(c.max_abs == 1.0);
  // The same rule whichever part a NaN row lands in when merging.
  RowErrorStats a(dim, 5), b(dim, 5);
  a.add(row_error(x.data(), y.data(), dim));
  b.add(row_error(x.data() + 2, y.data() + 2, dim));
  a.merge(b);
  CHECK(std::isnan(a.finish().cos_min));
  b.merge(RowErrorStats(dim, 5));
  CHECK(std::isnan(b.finish().cos_min));
}

TEST_CASE("eval: RowErrorStats weights, empty sets and sizing") {
  const std::vector<float> x = {1, 0, 0, 1}, y = {1, 0, 1, 0};
  RowErrorStats w(2);
  w.add(row_error(x.data(), y.data(), 2), 3.0);
  w.add(row_error(x.data() + 2, y.data() + 2, 2), 0.0);  // weight 0: left out
  RowErrorSummary s = w.finish();
  CHECK(s.rows == 1);
  CHECK(s.cos_min == 1.0);
  CHECK(s.cos_mean == 1.0);
  CHECK(s.mse == 0.0);
  CHECK(std::isnan(s.cos_p1));  // no percentiles asked for
  const RowErrorSummary e = RowErrorStats(2).finish();
  CHECK(e.rows == 0);
  CHECK(std::isnan(e.cos_min));
  RowErrorStats small(2, 1);
  small.add(x.data(), y.data(), 2);
  CHECK(test::error_of([&] { small.finish(); }).find("sized for") != std::string::npos);
  CHECK(test::error_of([&] { small.merge(RowErrorStats(3)); }).find("dimension 3") != std::string::npos);
}

TEST_CASE("eval: probes by row or word, and their neighbours before and after") {
  const std::vector<std::string> vocab = {"a", "king", "b", "water", "c", "d", "e"};
  CHECK(probe_rows({}, vocab, 7, "v.txt") == std::vector<uint64_t>{1, 3});
  CHECK(probe_rows({}, {}, 3, "") == std::vector<uint64_t>{0, 1, 2});
  CHECK(probe_rows({"e", "a"}, vocab, 7, "v.txt") == std::vector<uint64_t>{6, 0});
  CHECK(probe_rows({"6", "0"}, {}, 7, "") == std::vector<uint64_t>{6, 0});
  CHECK(test::error_of([&] { probe_rows({"queen"}, vocab, 7, "v.txt"); }).find("v.txt: probe 'queen'") !=
        std::string::npos);
  CHECK(test::error_of([&] { probe_rows({"7"}, {}, 7, ""); }).find("outside the table (7 rows)") != std::string::npos);
  CHECK(test::error_of([&] { probe_rows({"2x"}, {}, 7, ""); }).find("a row id") != std::string::npos);

  test::TempDir dir;
  const uint64_t rows = 40, dim = 3;
  std::vector<float> x(rows * dim), y(rows * dim);
  for (uint64_t r = 0; r < rows; ++r) x[r * dim] = static_cast<float>(r);        // rows on a line, 1 apart
  for (uint64_t i = 0; i < y.size(); ++i) y[i] = i / dim == 5 ? 1000.0f : x[i];  // row 5 moved far away
  write_npy(dir.file("x.npy"), x, rows, dim);
  write_npy(dir.file("y.npy"), y, rows, dim);
  auto original = io::open_table(dir.file("x.npy"));
  auto compressed = io::open_table(dir.file("y.npy"));
  const std::vector<uint64_t> probes = {4, 6};
  const ProbeNeighbours nb = probe_neighbours(*original, *compressed, probes, Metric::l2, Device::cpu, 2);
  CHECK(nb.probes == probes);
  for (uint64_t q = 0; q < probes.size(); ++q) {
    const auto before = nb.original.ids_of(q), after = nb.compressed.ids_of(q);
    CHECK(std::find(before.begin(), before.end(), static_cast<int64_t>(probes[q])) == before.end());
    CHECK(std::find(before.begin(), before.end(), 5) != before.end());
    CHECK(std::find(after.begin(), after.end(), 5) == after.end());
  }
}

TEST_CASE("eval: recommender proxies on a hand-made table") {
  // 2000 rows of dim 4; Zipf counts 1/(i+1). Rows from 1000 on are scaled by
  // 1.1 in the "compressed" copy, row 1999 is negated.
  const uint64_t rows = 2000, dim = 4;
  std::vector<float> x(rows * dim), y(rows * dim);
  std::vector<double> freq(rows);
  for (uint64_t i = 0; i < rows; ++i) {
    freq[i] = 1.0 / static_cast<double>(i + 1);
    for (uint64_t j = 0; j < dim; ++j) {
      x[i * dim + j] = static_cast<float>(std::sin(static_cast<double>(i * dim + j)) + 0.25);
      y[i * dim + j] = i >= 1000 ? x[i * dim + j] * 1.1f : x[i * dim + j];
    }
  }
  for (uint64_t j = 0; j < dim; ++j) y[1999 * dim + j] = -x[1999 * dim + j];
  test::TempDir dir;
  write_pair(dir, x, y, rows, dim);
  EvalOptions o;
  o.queries = 50;
  o.freq = freq;
  o.groups.assign(rows, 0);
  for (uint64_t i = 1500; i < rows; ++i) o.groups[i] = 1;
  o.group_names = {"kept", "dropped"};
  o.fallback_groups = {1};
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);

  // The buckets by hand: a row is in the head while the lookups before it are under 50%.
  double total = 0;
  for (double f : freq) total += f;
  uint64_t head = 0, torso = 0;
  double before = 0;
  for (uint64_t i = 0; i < rows; before += freq[i], ++i) {
    if (before / total < 0.5)
      ++head;
    else if (before / total < 0.9)
      ++torso;
  }
  CHECK(r.at("head.rows") == static_cast<double>(head));
  CHECK(r.at("torso.rows") == static_cast<double>(torso));
  CHECK(r.at("tail.rows") == static_cast<double>(rows - head - torso));
  REQUIRE(head + torso < 1000);  // the head and torso are untouched
  CHECK(r.at("head.rel_fro") == 0);
  CHECK(r.at("torso.rel_err.p99.9") == 0);
  CHECK(r.at("head.cos.p0.1") == Approx(1.0));
  // The tail: 1200 rows, so its worst 0.1% is the 2nd worst row: a scaled
  // row (relative error 0.1, cosine 1), the negated row being the worst.
  CHECK(r.at("tail.rel_err.p99.9") == Approx(0.1).epsilon(1e-6));
  CHECK(r.at("tail.cos.p0.1") == Approx(1.0));
  double tail_lookups = 0, dropped = 0;
  for (uint64_t i = head + torso; i < rows; ++i) tail_lookups += freq[i];
  for (uint64_t i = 1500; i < rows; ++i) dropped += freq[i];
  CHECK(r.at("tail.lookups") == Approx(tail_lookups / total));
  CHECK(r.at("head.lookups") + r.at("torso.lookups") + r.at("tail.lookups") == Approx(1.0));
  CHECK(r.at("dropped.lookups") == Approx(dropped / total));
  CHECK(r.at("fallback.lookups") == Approx(dropped / total));
  CHECK(r.at("kept.lookups") == Approx(1 - dropped / total));
  // Weighted tail error by hand.
  double err2 = 0, norm2 = 0;
  for (uint64_t i = head + torso; i < rows; ++i)
    for (uint64_t j = 0; j < dim; ++j) {
      const double a = x[i * dim + j], d = a - y[i * dim + j];
      err2 += freq[i] * d * d;
      norm2 += freq[i] * a * a;
    }
  CHECK(r.at("tail.rel_fro") == Approx(std::sqrt(err2 / norm2)).epsilon(1e-9));
  CHECK(r.has("bag.rel_err.mean"));
  CHECK(r.at("bag.rel_err.p99") >= r.at("bag.rel_err.mean"));
  CHECK(r.has("dot.rho"));
  // The per-row cosine histogram counts every row once: all in the first bin but the negated row.
  REQUIRE(r.cos_histogram.counts.size() == CosHistogram::edges().size() + 1);
  CHECK(r.cos_histogram.counts.front() == rows - 1);
  CHECK(r.cos_histogram.counts.back() == 1);
}

TEST_CASE("eval: a uniform scale gives exact bag and dot proxies") {
  // y = 1.25 x: every pooled bag is off by 0.25 and every dot product by
  // 1.25^2 - 1, ranks unchanged; with no frequencies there are no buckets.
  const uint64_t rows = 300, dim = 8;
  std::vector<float> x(rows * dim), y(rows * dim);
  for (uint64_t i = 0; i < x.size(); ++i) {
    x[i] = static_cast<float>(std::cos(0.37 * static_cast<double>(i)));
    y[i] = x[i] * 1.25f;
  }
  test::TempDir dir;
  write_pair(dir, x, y, rows, dim);
  EvalOptions o;
  o.queries = 20;
  o.bags = 64;
  o.bag_size = 7;
  o.dot_pairs = 100;
  const EvalResult r = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK(r.at("bag.rel_err.mean") == Approx(0.25).epsilon(1e-6));
  CHECK(r.at("bag.rel_err.p99") == Approx(0.25).epsilon(1e-6));
  CHECK(r.at("dot.rel_err") == Approx(0.5625).epsilon(1e-6));
  CHECK(r.at("dot.rho") == Approx(1.0));
  CHECK_FALSE(r.has("head.rows"));
  CHECK_FALSE(r.has("fallback.lookups"));
  o.bags = 0;
  o.dot_pairs = 0;
  const EvalResult none = evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o);
  CHECK_FALSE(none.has("bag.rel_err.mean"));
  CHECK_FALSE(none.has("dot.rho"));
  o.bags = kMaxProxyDraws + 1;
  CHECK(test::error_of([&] { evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o); }).find("at most 100000") !=
        std::string::npos);
  // A tier named as a bucket is refused rather than reported under a mixed name.
  o.bags = 10;
  o.freq.assign(rows, 1.0);
  o.groups.assign(rows, 0);
  o.group_names = {"head"};
  CHECK(test::error_of([&] { evaluate_files(dir.file("x.npy"), dir.file("y.npy"), o); }).find("rename the tier") !=
        std::string::npos);
}
