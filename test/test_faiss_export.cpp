// edo-unpack's FAISS output: faiss::read_index opens the file and its top-10
// agrees with edo's exact search over the file's decoded rows, for every
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

// Mean share of the top-k ids the two lists have in common.
double overlap(const std::vector<int64_t>& a, const std::vector<faiss::Index::idx_t>& b, uint64_t nq, uint64_t k) {
  double shared = 0;
  for (uint64_t q = 0; q < nq; ++q) {
    std::vector<int64_t> x(a.begin() + static_cast<int64_t>(q * k), a.begin() + static_cast<int64_t>((q + 1) * k));
    std::vector<int64_t> y(b.begin() + static_cast<int64_t>(q * k), b.begin() + static_cast<int64_t>((q + 1) * k));
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    std::vector<int64_t> common;
    std::set_intersection(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(common));
    shared += static_cast<double>(common.size()) / static_cast<double>(k);
  }
  return shared / static_cast<double>(nq);
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
      const double shared = overlap(mine.ids, ids, nq, k);
      const std::string what = std::string(spec) + " " + metric_name(metric) + ": top-10 overlap ";
      MESSAGE(what << shared);
      CHECK(shared >= 0.99);
    }
  }
}
