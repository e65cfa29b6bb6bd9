// SPDX-License-Identifier: Apache-2.0
// edo-unpack's FAISS output: faiss::read_index opens the file and its top-10
// agrees with edo's exact search over the file's decoded rows (ties by score), for every
// index kind (flat, QT_fp16 over the codes, IndexPQ with even and padded
// sub-spaces, OPQ, residual, PCA over flat and fp16 codes) and metric (l2, ip, cos over unit rows).
#include "test_util.hpp"

#include <edo/edo_file.hpp>
#include <edo/faiss_export.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>

#include <faiss/Index.h>
#include <faiss/index_io.h>

#include <algorithm>
#include <cmath>
#include <memory>

using namespace edo;

namespace {

// Query q's score of decoded row r in the ranking's own terms (knn.hpp), in double.
double exact_score(const float* query, const float* row, uint64_t dim, Metric metric) {
  double dot = 0, qq = 0, rr = 0, d2 = 0;
  for (uint64_t j = 0; j < dim; ++j) {
    dot += static_cast<double>(query[j]) * row[j];
    qq += static_cast<double>(query[j]) * query[j];
    rr += static_cast<double>(row[j]) * row[j];
    d2 += (static_cast<double>(query[j]) - row[j]) * (static_cast<double>(query[j]) - row[j]);
  }
  switch (metric) {
    case Metric::l2:
      return -d2;  // larger is better throughout
    case Metric::ip:
      return dot;
    case Metric::cos:
      return qq > 0 && rr > 0 ? dot / std::sqrt(qq * rr) : 0;
  }
  return 0;
}

// Mean share of FAISS's top-k ids that belong in an exact top-k over the
// decoded rows: an id counts when its exact score is no worse than edo's k-th
// best, within float rounding. Codecs with few bytes per row map many rows to
// one decoded vector, and which of those equal rows fill the last places is
// a matter of summation order (FAISS's lookup tables against edo's SGEMM),
// not of the exported index; comparing scores instead of ids keeps such ties
// from reading as disagreement.
double agreement(const std::vector<float>& queries, const std::vector<float>& decoded, uint64_t dim,
                 const std::vector<int64_t>& mine, const std::vector<faiss::Index::idx_t>& theirs, uint64_t nq,
                 uint64_t k, Metric metric) {
  double shared = 0;
  for (uint64_t q = 0; q < nq; ++q) {
    const float* query = queries.data() + q * dim;
    const double kth =
        exact_score(query, decoded.data() + static_cast<uint64_t>(mine[q * k + k - 1]) * dim, dim, metric);
    const double slack = 1e-5 * std::max(1.0, std::abs(kth));
    for (uint64_t i = 0; i < k; ++i) {
      const faiss::Index::idx_t id = theirs[q * k + i];
      if (id < 0) continue;
      if (exact_score(query, decoded.data() + static_cast<uint64_t>(id) * dim, dim, metric) >= kth - slack) shared += 1;
    }
  }
  return shared / static_cast<double>(nq * k);
}

}  // namespace

TEST_CASE("faiss export: read_index opens every kind and its top-10 is edo's over the decoded rows") {
  test::TempDir dir;
  auto glove = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  const uint64_t nq = 200, k = 10, dim = glove->dim();
  std::vector<float> queries(nq * dim);
  for (uint64_t q = 0; q < nq; ++q) glove->read_f32(q * 37, 1, queries.data() + q * dim);
  const std::pair<const char*, FaissIndexKind> codecs[] = {
      {"int8", FaissIndexKind::flat},  {"fp16", FaissIndexKind::scalar_fp16}, {"pq:m=10", FaissIndexKind::pq},
      {"pq:m=16", FaissIndexKind::pq}, {"opq:m=10", FaissIndexKind::opq},     {"rq:m=4", FaissIndexKind::rq},
      {"pca:24", FaissIndexKind::pca}, {"pca:24,fp16", FaissIndexKind::pca},  {"pca:24,int8", FaissIndexKind::flat}};
  for (const auto& [spec, kind_under_l2] : codecs) {
    QuantizeOptions qo;
    qo.spec = spec;
    qo.train_rows = 4000;
    const std::string edo_path = dir.file(std::string(spec) + ".edo");
    quantize_to_edo(*glove, edo_path, qo);
    auto table = EdoTable::open(edo_path);
    std::vector<float> decoded(table->rows() * dim);
    std::copy_n(table->rows_f32(0, table->rows()), decoded.size(), decoded.data());
    for (const Metric metric : {Metric::l2, Metric::ip, Metric::cos}) {
      CAPTURE(spec);
      CAPTURE(metric_name(metric));
      const std::string path = dir.file(std::string(spec) + "." + metric_name(metric) + ".faiss");
      const FaissIndexKind kind = export_faiss_index(*table, path, metric);
      CHECK(kind == (metric == Metric::cos ? FaissIndexKind::flat : kind_under_l2));
      std::unique_ptr<faiss::Index> index(faiss::read_index(path.c_str()));
      REQUIRE(index->ntotal == static_cast<faiss::Index::idx_t>(table->rows()));
      std::vector<float> q = queries;
      if (metric == Metric::cos)  // the index holds unit rows: unit queries rank by cosine
        for (uint64_t i = 0; i < nq; ++i) {
          double n2 = 0;
          for (uint64_t j = 0; j < dim; ++j) n2 += static_cast<double>(q[i * dim + j]) * q[i * dim + j];
          for (uint64_t j = 0; j < dim; ++j) q[i * dim + j] = static_cast<float>(q[i * dim + j] / std::sqrt(n2));
        }
      std::vector<float> distances(nq * k);
      std::vector<faiss::Index::idx_t> ids(nq * k);
      index->search(static_cast<faiss::Index::idx_t>(nq), q.data(), static_cast<faiss::Index::idx_t>(k),
                    distances.data(), ids.data());
      KnnOptions ko;
      ko.metric = metric;
      ko.k = k;
      const KnnResult mine = knn({queries.data(), nq, dim}, {decoded.data(), table->rows(), dim}, ko);
      const double shared = agreement(queries, decoded, dim, mine.ids, ids, nq, k, metric);
      const std::string what = std::string(spec) + " " + metric_name(metric) + ": top-10 agreement ";
      MESSAGE(what << shared);
      CHECK(shared >= 0.995);
    }
  }
}
