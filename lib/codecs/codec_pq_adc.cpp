// SPDX-License-Identifier: Apache-2.0
// Asymmetric distance search (pq.hpp): queries in full precision, rows as
// codes, scored through per-query lookup tables.
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pq.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace edo {
namespace {

using Entry = std::pair<float, int64_t>;  // (ranking key, row id): smaller is better

// Ranking order of knn.hpp: NaN keys last, then smaller key, then lower id.
bool better(const Entry& a, const Entry& b) {
  const bool an = std::isnan(a.first), bn = std::isnan(b.first);
  if (an != bn) return bn;
  if (!an && a.first != b.first) return a.first < b.first;
  return a.second < b.second;
}

}  // namespace

namespace {
const AdcCodec& adc_of(const Codec& codec) {
  if (!codec.adc()) EDO_USAGE_FAIL("adc search: codec {} has no asymmetric distance tables", codec.spec());
  return *codec.adc();
}
}  // namespace

AdcSearch::AdcSearch(const Codec& codec, MatrixView queries, const KnnOptions& opts)
    : adc_(adc_of(codec)), opts_(opts), nq_(queries.rows), dim_(queries.dim) {
  if (opts_.k == 0) EDO_USAGE_FAIL("adc search: k must be >= 1");
  if (!opts_.exclude.empty() && opts_.exclude.size() != nq_)
    EDO_USAGE_FAIL("adc search: {} exclusions for {} queries", opts_.exclude.size(), nq_);
  tables_.resize(nq_ * adc_.adc_table_size());
  adc_.adc_tables(queries.data, nq_, tables_.data());
  query_norms_.resize(nq_);
  for (uint64_t q = 0; q < nq_; ++q) {
    double s = 0;
    for (uint64_t i = 0; i < dim_; ++i)
      s += static_cast<double>(queries.data[q * dim_ + i]) * queries.data[q * dim_ + i];
    query_norms_[q] = static_cast<float>(s);
  }
  heaps_.resize(nq_);
}

void AdcSearch::add(const uint8_t* codes, const float* decoded, uint64_t count) {
  std::vector<float> norms(count);
  for (uint64_t r = 0; r < count; ++r) {
    double s = 0;
    for (uint64_t i = 0; i < dim_; ++i) s += static_cast<double>(decoded[r * dim_ + i]) * decoded[r * dim_ + i];
    norms[r] = static_cast<float>(s);
  }
  const uint64_t first = next_row_;
#pragma omp parallel if (parallel_worth(count * nq_))
  {
    std::vector<float> ip(count);
#pragma omp for schedule(static)
    for (int64_t qi = 0; qi < static_cast<int64_t>(nq_); ++qi) {
      const uint64_t q = static_cast<uint64_t>(qi);
      adc_.adc_inner_products(tables_.data() + q * adc_.adc_table_size(), codes, count, ip.data());
      auto& heap = heaps_[q];
      const int64_t skip = opts_.exclude.empty() ? -1 : opts_.exclude[q];
      const float qn = std::sqrt(query_norms_[q]);
      for (uint64_t r = 0; r < count; ++r) {
        const int64_t id = static_cast<int64_t>(first + r);
        if (id == skip) continue;
        float key = 0.0f;
        switch (opts_.metric) {
          case Metric::l2:
            key = norms[r] - 2.0f * ip[r];
            break;
          case Metric::ip:
            key = -ip[r];
            break;
          case Metric::cos: {
            const float denom = qn * std::sqrt(norms[r]);
            key = denom > 0 ? -(ip[r] / denom) : 0.0f;
            break;
          }
        }
        const Entry e{key, id};
        if (heap.size() < opts_.k) {
          heap.push_back(e);
          std::push_heap(heap.begin(), heap.end(), better);
        } else if (better(e, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), better);
          heap.back() = e;
          std::push_heap(heap.begin(), heap.end(), better);
        }
      }
    }
  }
  next_row_ += count;
}

KnnResult AdcSearch::finish() {
  KnnResult res;
  res.nq = nq_;
  res.k = opts_.k;
  res.metric = opts_.metric;
  res.ids.assign(nq_ * opts_.k, -1);
  res.scores.assign(nq_ * opts_.k, std::numeric_limits<float>::quiet_NaN());
  for (uint64_t q = 0; q < nq_; ++q) {
    auto& heap = heaps_[q];
    std::sort_heap(heap.begin(), heap.end(), better);
    for (size_t i = 0; i < heap.size(); ++i) {
      res.ids[q * opts_.k + i] = heap[i].second;
      const float key = heap[i].first;
      res.scores[q * opts_.k + i] = opts_.metric == Metric::l2 ? key + query_norms_[q] : -key;
    }
    heap.clear();
    heap.shrink_to_fit();
  }
  return res;
}

}  // namespace edo
