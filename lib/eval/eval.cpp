// SPDX-License-Identifier: Apache-2.0
#include "rec_proxies.hpp"

#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/parallel.hpp>
#include <edo/pca.hpp>
#include <edo/pq.hpp>
#include <edo/random.hpp>
#include <edo/rate_distortion.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>

namespace edo {

void EvalResult::set(const std::string& name, double value) {
  for (auto& [n, v] : metrics_) {
    if (n == name) {
      v = value;
      return;
    }
  }
  metrics_.emplace_back(name, value);
}

std::optional<double> EvalResult::get(std::string_view name) const {
  for (const auto& [n, v] : metrics_)
    if (n == name) return v;
  // "1-recall@k", the name of edo 0.1 (read as one minus recall@k), is r1@k.
  if (const size_t at = name.find(kOldR1Name); at != std::string_view::npos) {
    std::string renamed(name);
    renamed.replace(at, kOldR1Name.size(), "r1@");
    return get(renamed);
  }
  return std::nullopt;
}

double EvalResult::at(std::string_view name) const {
  if (auto v = get(name)) return *v;
  EDO_USAGE_FAIL("unknown metric '{}' (available: {})", name, names());
}

std::string EvalResult::names() const {
  std::string out;
  for (const auto& [n, v] : metrics_) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

const std::vector<double>& CosHistogram::edges() {
  static const std::vector<double> e = [] {
    std::vector<double> v;
    for (double decade = 1e-6; decade < 1.5; decade *= 10)
      for (double step : {1.0, 2.0, 5.0})
        if (decade * step <= 1.0) v.push_back(decade * step);
    return v;
  }();
  return e;
}

void CosHistogram::add(double cos) {
  if (counts.empty()) counts.assign(edges().size() + 1, 0);
  if (std::isnan(cos)) {
    ++nan;
    return;
  }
  const auto& e = edges();
  ++counts[static_cast<size_t>(std::lower_bound(e.begin(), e.end(), 1.0 - cos) - e.begin())];
}

namespace {

// NaN propagates: a NaN anywhere in a row makes that row's max NaN.
inline double nan_max(double m, double a) { return (std::isnan(a) || a > m) ? a : m; }

// NaN counts as the lowest cosine, so a broken row shows in min and p1.
inline bool cos_less(double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a < b; }

// Nearest rank: the ceil(p/100 * n)-th smallest value (1-based), at least 1.
uint64_t percentile_rank(uint64_t n, uint64_t p) {
  return std::max<uint64_t>(1, n / 100 * p + ((n % 100) * p + 99) / 100);
}

// |X - X^|_F / |X|_F; an all-zero original counts as 0 when reproduced exactly.
double relative(double err2, double norm2) {
  if (norm2 == 0) return err2 == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  return std::sqrt(err2 / norm2);
}

}  // namespace

RowError row_error(const float* x, const float* y, uint64_t dim) {
  double err2 = 0, nx = 0, ny = 0, dot = 0, max_abs = 0;
  for (uint64_t j = 0; j < dim; ++j) {
    const double a = x[j], b = y[j], diff = a - b;
    err2 += diff * diff;
    nx += a * a;
    ny += b * b;
    dot += a * b;
    max_abs = nan_max(max_abs, std::fabs(diff));
  }
  double cos;
  if (nx == 0 && ny == 0)
    cos = 1;
  else if (nx == 0 || ny == 0)
    cos = 0;
  else
    cos = dot / (std::sqrt(nx) * std::sqrt(ny));
  return {err2, nx, ny, cos, max_abs};
}

RowErrorStats::RowErrorStats(uint64_t dim, uint64_t percentile_rows)
    : dim_(dim), percentile_rows_(percentile_rows), cos_min_(std::numeric_limits<double>::infinity()) {
  if (percentile_rows > 0) keep_ = percentile_rank(percentile_rows, 5);
}

void RowErrorStats::add(const RowError& e, double weight) {
  if (!(weight > 0)) return;
  ++rows_;
  weight_ += weight;
  err2_ += weight * e.err2;
  norm2_ += weight * e.norm2;
  cos_ += weight * e.cos;
  max_abs_ = nan_max(max_abs_, e.max_abs);
  if (cos_less(e.cos, cos_min_)) cos_min_ = e.cos;
  if (keep_ == 0) return;
  // A max-heap of the lowest cosines seen so far.
  if (lowest_.size() < keep_) {
    lowest_.push_back(e.cos);
    std::push_heap(lowest_.begin(), lowest_.end(), cos_less);
  } else if (cos_less(e.cos, lowest_.front())) {
    std::pop_heap(lowest_.begin(), lowest_.end(), cos_less);
    lowest_.back() = e.cos;
    std::push_heap(lowest_.begin(), lowest_.end(), cos_less);
  }
}

void RowErrorStats::add(const float* x, const float* y, uint64_t rows) {
  scratch_.resize(rows);
#pragma omp parallel for schedule(static) if (parallel_worth(rows * dim_))
  for (int64_t i = 0; i < static_cast<int64_t>(rows); ++i) {
    const uint64_t off = static_cast<uint64_t>(i) * dim_;
    scratch_[static_cast<uint64_t>(i)] = row_error(x + off, y + off, dim_);
  }
  for (uint64_t i = 0; i < rows; ++i) add(scratch_[i]);
}

void RowErrorStats::merge(const RowErrorStats& other) {
  if (other.dim_ != dim_) EDO_FAIL("RowErrorStats: merging rows of dimension {} into {}", other.dim_, dim_);
  rows_ += other.rows_;
  weight_ += other.weight_;
  err2_ += other.err2_;
  norm2_ += other.norm2_;
  cos_ += other.cos_;
  max_abs_ = nan_max(max_abs_, other.max_abs_);
  if (cos_less(other.cos_min_, cos_min_)) cos_min_ = other.cos_min_;
  if (keep_ == 0) return;
  for (double c : other.lowest_) {
    if (lowest_.size() < keep_) {
      lowest_.push_back(c);
      std::push_heap(lowest_.begin(), lowest_.end(), cos_less);
    } else if (cos_less(c, lowest_.front())) {
      std::pop_heap(lowest_.begin(), lowest_.end(), cos_less);
      lowest_.back() = c;
      std::push_heap(lowest_.begin(), lowest_.end(), cos_less);
    }
  }
}

RowErrorSummary RowErrorStats::finish() const {
  if (keep_ > 0 && rows_ > percentile_rows_)
    EDO_FAIL("RowErrorStats: {} rows added, more than the {} its percentiles were sized for", rows_, percentile_rows_);
  constexpr double nan = std::numeric_limits<double>::quiet_NaN();
  RowErrorSummary s;
  s.rows = rows_;
  s.rel_fro = relative(err2_, norm2_);
  s.mse = err2_ / (weight_ * static_cast<double>(dim_));
  s.cos_mean = cos_ / weight_;
  s.cos_min = rows_ ? cos_min_ : nan;
  s.max_abs = rows_ ? max_abs_ : nan;
  s.cos_p1 = s.cos_p5 = nan;
  if (keep_ > 0 && rows_ > 0) {
    std::vector<double> sorted = lowest_;
    std::sort(sorted.begin(), sorted.end(), cos_less);
    s.cos_p1 = sorted[percentile_rank(rows_, 1) - 1];
    s.cos_p5 = sorted[percentile_rank(rows_, 5) - 1];
  }
  return s;
}

namespace {

// The label most frequent among the first `votes` valid neighbours; ties go
// to the smallest label. nullopt when the list is empty.
std::optional<int64_t> majority_label(std::span<const int64_t> ids, const std::vector<int64_t>& labels,
                                      uint64_t votes) {
  std::map<int64_t, uint64_t> counts;
  for (uint64_t i = 0; i < std::min<uint64_t>(votes, ids.size()) && ids[i] >= 0; ++i)
    ++counts[labels[static_cast<uint64_t>(ids[i])]];
  std::optional<int64_t> best;
  uint64_t best_count = 0;
  for (const auto& [label, count] : counts) {  // ascending labels: strict > keeps the smallest
    if (count > best_count) {
      best = label;
      best_count = count;
    }
  }
  return best;
}

constexpr uint64_t kClassifierVotes = 10;

struct QueryWeight {
  uint64_t index;  // into the searched query set
  double weight;
};

// Query-based metrics over one weighted query set, names prefixed by `prefix`.
void report_queries(EvalResult& r, const std::string& prefix, const std::vector<QueryWeight>& set,
                    const std::vector<uint64_t>& query_rows, const KnnResult& truth, const KnnResult& approx,
                    const EvalOptions& opts) {
  double total = 0;
  for (const auto& qw : set) total += qw.weight;
  std::vector<int64_t> t, a;
  for (uint64_t k : opts.ks) {
    double recall = 0, one_recall = 0;
    for (const auto& qw : set) {
      auto truth_ids = truth.ids_of(qw.index).first(k);
      auto approx_ids = approx.ids_of(qw.index).first(k);
      t.assign(truth_ids.begin(), std::find(truth_ids.begin(), truth_ids.end(), int64_t{-1}));
      a.assign(approx_ids.begin(), std::find(approx_ids.begin(), approx_ids.end(), int64_t{-1}));
      if (std::find(a.begin(), a.end(), t.front()) != a.end()) one_recall += qw.weight;
      std::sort(t.begin(), t.end());
      std::sort(a.begin(), a.end());
      std::vector<int64_t> common;
      std::set_intersection(t.begin(), t.end(), a.begin(), a.end(), std::back_inserter(common));
      recall += qw.weight * static_cast<double>(common.size()) / static_cast<double>(t.size());
    }
    recall /= total;
    r.set(fmt::format("{}recall@{}", prefix, k), recall);
    r.set(fmt::format("{}r1@{}", prefix, k), one_recall / total);
    r.set(fmt::format("{}recall_drop@{}", prefix, k), 1.0 - recall);
  }
  if (!opts.labels.empty()) {
    double right_truth = 0, right_approx = 0;
    for (const auto& qw : set) {
      const int64_t label = opts.labels[query_rows[qw.index]];
      if (majority_label(truth.ids_of(qw.index), opts.labels, kClassifierVotes) == label) right_truth += qw.weight;
      if (majority_label(approx.ids_of(qw.index), opts.labels, kClassifierVotes) == label) right_approx += qw.weight;
    }
    r.set(prefix + "accuracy.original", right_truth / total);
    r.set(prefix + "accuracy.compressed", right_approx / total);
    r.set(prefix + "accuracy_drop", (right_truth - right_approx) / total);
  }
}

void report_reconstruction(EvalResult& r, const RowErrorSummary& s) {
  r.set("rel_fro", s.rel_fro);
  r.set("mse", s.mse);
  r.set("cos.mean", s.cos_mean);
  r.set("cos.p1", s.cos_p1);
  r.set("cos.p5", s.cos_p5);
  r.set("cos.min", s.cos_min);
  r.set("max_abs", s.max_abs);
}

void report_weighted(EvalResult& r, const RowErrorSummary& s) {
  r.set("w.rel_fro", s.rel_fro);
  r.set("w.mse", s.mse);
  r.set("w.cos.mean", s.cos_mean);
  r.set("w.cos.min", s.cos_min);
}

void report_group(EvalResult& r, const std::string& name, const RowErrorSummary& s) {
  r.set(name + ".rows", static_cast<double>(s.rows));
  if (s.rows == 0) return;
  r.set(name + ".rel_fro", s.rel_fro);
  r.set(name + ".mse", s.mse);
  r.set(name + ".cos.mean", s.cos_mean);
  r.set(name + ".cos.min", s.cos_min);
}

void check_inputs(io::TableReader& original, io::TableReader& compressed, const EvalOptions& opts) {
  if (original.rows() != compressed.rows() || original.dim() != compressed.dim())
    EDO_FAIL("{}: shape {}x{} does not match the original {} ({}x{})", compressed.path(), compressed.rows(),
             compressed.dim(), original.path(), original.rows(), original.dim());
  if (original.rows() < 2) EDO_FAIL("{}: evaluation needs at least 2 rows, the table has 1", original.path());
  if (opts.ks.empty()) EDO_USAGE_FAIL("evaluate: no k given for recall@k");
  for (uint64_t k : opts.ks)
    if (k == 0) EDO_USAGE_FAIL("evaluate: recall@k needs k >= 1");
  if (opts.query_ids.empty() && opts.queries == 0) EDO_USAGE_FAIL("evaluate: the number of queries must be >= 1");
  for (uint64_t id : opts.query_ids)
    if (id >= original.rows())
      EDO_USAGE_FAIL("evaluate: query row {} is outside {} ({} rows)", id, original.path(), original.rows());
  if (!opts.labels.empty() && opts.labels.size() != original.rows())
    EDO_USAGE_FAIL("evaluate: {} labels given for {} rows of {}", opts.labels.size(), original.rows(), original.path());
  if (!opts.groups.empty()) {
    if (opts.groups.size() != original.rows())
      EDO_USAGE_FAIL("evaluate: {} group ids given for {} rows of {}", opts.groups.size(), original.rows(),
                     original.path());
    for (uint64_t i = 0; i < opts.groups.size(); ++i)
      if (opts.groups[i] >= opts.group_names.size())
        EDO_USAGE_FAIL("evaluate: row {} is in group {}, only {} are named", i, opts.groups[i],
                       opts.group_names.size());
  }
  for (uint32_t g : opts.fallback_groups)
    if (g >= opts.group_names.size()) EDO_USAGE_FAIL("evaluate: fallback group {} is not a named group", g);
  // The proxies hold their bags' sums and their pairs' rows: bounded here.
  if (opts.bags > kMaxProxyDraws || opts.bag_size > kMaxProxyDraws || opts.dot_pairs > kMaxProxyDraws)
    EDO_USAGE_FAIL("evaluate: bags, bag size and id pairs must each be at most {} (given {}, {}, {})", kMaxProxyDraws,
                   opts.bags, opts.bag_size, opts.dot_pairs);
  if (!opts.freq.empty()) {
    for (const std::string& g : opts.group_names)
      for (const char* bucket : detail::RecProxies::kBucketNames)
        if (g == bucket)
          EDO_FAIL(
              "evaluate: a tier is named '{}', as a frequency bucket is; rename the tier (edo-pack reserves "
              "head, torso and tail)",
              g);
    if (opts.freq.size() != original.rows())
      EDO_USAGE_FAIL("evaluate: {} frequencies given for {} rows of {}", opts.freq.size(), original.rows(),
                     original.path());
    double sum = 0;
    for (uint64_t i = 0; i < opts.freq.size(); ++i) {
      if (!std::isfinite(opts.freq[i]) || opts.freq[i] < 0)
        EDO_USAGE_FAIL("evaluate: frequency of row {} is {} (must be finite and >= 0)", i, opts.freq[i]);
      sum += opts.freq[i];
    }
    if (!(sum > 0) || !std::isfinite(sum)) EDO_USAGE_FAIL("evaluate: the frequencies sum to {} (must be > 0)", sum);
    double query_sum = 0;
    for (uint64_t id : opts.query_ids) query_sum += opts.freq[id];
    if (!opts.query_ids.empty() && !(query_sum > 0))
      EDO_USAGE_FAIL("evaluate: every explicit query row has frequency 0, so weighted metrics are undefined");
  }
}

}  // namespace

std::vector<uint64_t> sample_query_ids(uint64_t rows, const EvalOptions& opts) {
  if (!opts.query_ids.empty()) return opts.query_ids;
  return sample_indices(rows, opts.queries, opts.seed);
}

std::vector<uint64_t> sample_weighted_ids(const std::vector<double>& freq, uint64_t count, uint64_t seed) {
  std::vector<double> cumulative(freq.size());
  double sum = 0;
  for (uint64_t i = 0; i < freq.size(); ++i) cumulative[i] = sum += freq[i];
  Rng rng(seed);
  std::vector<uint64_t> ids(count);
  for (auto& id : ids) {
    const double u = rng.uniform() * sum;
    const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), u);
    // u < sum keeps `it` in range, except when rounding lands u on the
    // total; then the draw falls to the last row with positive frequency.
    id = static_cast<uint64_t>(std::min(it, cumulative.end() - 1) - cumulative.begin());
    while (freq[id] == 0) --id;
  }
  return ids;
}

namespace {

// Every stride-th finite row of the original, at most kSpectrumRows of them:
// the covariance whose eigenvalues give the rate-distortion bound (rd.*,
// rate_distortion.hpp). Skipped above kSpectrumMaxDim columns.
constexpr uint64_t kSpectrumRows = 10000, kSpectrumMaxDim = 4096;
class SpectrumSample {
 public:
  SpectrumSample(uint64_t rows, uint64_t dim)
      : dim_(dim), stride_(std::max<uint64_t>(1, (rows + kSpectrumRows - 1) / kSpectrumRows)) {}
  void add(uint64_t begin, uint64_t n, const float* x) {
    if (dim_ > kSpectrumMaxDim) return;
    for (uint64_t r = (begin + stride_ - 1) / stride_ * stride_; r < begin + n; r += stride_) {
      const float* row = x + (r - begin) * dim_;
      if (std::all_of(row, row + dim_, [](float v) { return std::isfinite(v); }))
        rows_.insert(rows_.end(), row, row + dim_);
    }
  }
  std::vector<double> eigenvalues(Device device) const {
    const uint64_t n = dim_ ? rows_.size() / dim_ : 0;
    if (n < 2) return {};
    return covariance_eigen(rows_.data(), n, dim_, {}, false, device).values;
  }

 private:
  uint64_t dim_, stride_;
  std::vector<float> rows_;
};

}  // namespace

EvalResult evaluate(io::TableReader& original, io::TableReader& compressed, const EvalOptions& opts,
                    KnnResult* truth_cache) {
  check_inputs(original, compressed, opts);
  const uint64_t rows = original.rows(), dim = original.dim();

  // The searched set is the union of the uniform queries and, with
  // frequencies, the weighted draw; each row is searched once.
  const std::vector<uint64_t> uniform = sample_query_ids(rows, opts);
  std::vector<uint64_t> weighted;
  std::vector<double> weighted_w;
  if (!opts.freq.empty()) {
    if (!opts.query_ids.empty()) {
      weighted = opts.query_ids;
      for (uint64_t id : weighted) weighted_w.push_back(opts.freq[id]);
    } else {
      // A seed of its own, so the weighted draw does not depend on --queries' uniform sample.
      weighted = sample_weighted_ids(opts.freq, opts.queries, opts.seed ^ 0x9e3779b97f4a7c15ULL);
      weighted_w.assign(weighted.size(), 1.0);
    }
  }
  std::vector<uint64_t> query_rows(uniform);
  query_rows.insert(query_rows.end(), weighted.begin(), weighted.end());
  std::sort(query_rows.begin(), query_rows.end());
  query_rows.erase(std::unique(query_rows.begin(), query_rows.end()), query_rows.end());
  auto index_of = [&](uint64_t row) {
    return static_cast<uint64_t>(std::lower_bound(query_rows.begin(), query_rows.end(), row) - query_rows.begin());
  };

  std::vector<float> query_vectors(query_rows.size() * dim);
  for (uint64_t i = 0; i < query_rows.size(); ++i) original.read_f32(query_rows[i], 1, query_vectors.data() + i * dim);

  KnnOptions ko;
  ko.metric = opts.metric;
  ko.k = *std::max_element(opts.ks.begin(), opts.ks.end());
  if (!opts.labels.empty()) ko.k = std::max(ko.k, kClassifierVotes);
  ko.device = opts.device;
  ko.exclude.assign(query_rows.begin(), query_rows.end());
  const MatrixView queries{query_vectors.data(), query_rows.size(), dim};
  const bool reuse = truth_cache && !truth_cache->ids.empty();
  if (reuse && (truth_cache->nq != query_rows.size() || truth_cache->k != ko.k || truth_cache->metric != ko.metric))
    EDO_FAIL("evaluate: the ground truth given was searched for other queries or options");
  KnnSearch truth_search(queries, ko);
  KnnSearch approx_search(queries, ko);
  // Asymmetric distance ranking, when the compressed rows are ADC codes.
  auto* coded = dynamic_cast<CodedRows*>(&compressed);
  std::unique_ptr<AdcSearch> adc_search;
  if (coded && coded->codes_codec() && coded->codes_codec()->adc())
    adc_search = std::make_unique<AdcSearch>(*coded->codes_codec(), queries, ko);

  RowErrorStats stats(dim, rows);
  CosHistogram histogram;
  detail::RecProxies proxies(rows, dim, opts);
  RowErrorStats weighted_stats(dim);
  std::vector<RowErrorStats> group_stats(opts.group_names.size(), RowErrorStats(dim));
  const uint64_t block = opts.block_rows ? opts.block_rows : std::min(original.block_rows(), compressed.block_rows());
  // The original block is copied: the two readers may be one object, and a
  // reader's block pointer only lives until its next call.
  std::vector<float> original_block(std::min(block, rows) * dim);
  std::vector<RowError> errors(std::min(block, rows));
  SpectrumSample spectrum(rows, dim);
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    original.read_f32(begin, n, original_block.data());
    const float* x = original_block.data();
    spectrum.add(begin, n, x);
    const float* y = compressed.rows_f32(begin, n);
    if (!reuse) truth_search.add(x, n);
    approx_search.add(y, n);
    if (adc_search) adc_search->add(coded->codes_of(begin, n), y, n);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i) {
      const uint64_t off = static_cast<uint64_t>(i) * dim;
      errors[static_cast<uint64_t>(i)] = row_error(x + off, y + off, dim);
    }
    proxies.add(begin, n, x, y, errors.data());
    for (uint64_t i = 0; i < n; ++i) {
      stats.add(errors[i]);
      histogram.add(errors[i].cos);
      if (!opts.freq.empty()) weighted_stats.add(errors[i], opts.freq[begin + i]);
      if (!opts.groups.empty()) group_stats[opts.groups[begin + i]].add(errors[i]);
    }
  }
  const KnnResult truth = reuse ? *truth_cache : truth_search.finish();
  if (truth_cache && !reuse) *truth_cache = truth;
  const KnnResult approx = approx_search.finish();

  EvalResult r;
  r.groups = opts.group_names;
  r.metric = opts.metric;
  r.covariance_eigenvalues = spectrum.eigenvalues(opts.device);
  r.cos_histogram = std::move(histogram);
  r.set("rows", static_cast<double>(rows));
  r.set("dim", static_cast<double>(dim));
  r.set("queries", static_cast<double>(uniform.size()));
  std::vector<QueryWeight> set;
  for (uint64_t row : uniform) set.push_back({index_of(row), 1.0});
  report_queries(r, "", set, query_rows, truth, approx, opts);
  if (adc_search) report_queries(r, "adc.", set, query_rows, truth, adc_search->finish(), opts);
  report_reconstruction(r, stats.finish());
  for (uint32_t g = 0; g < opts.group_names.size() && !opts.groups.empty(); ++g) {
    std::vector<QueryWeight> in_group;
    for (const QueryWeight& qw : set)
      if (opts.groups[query_rows[qw.index]] == g) in_group.push_back(qw);
    r.set(opts.group_names[g] + ".queries", static_cast<double>(in_group.size()));
    if (!in_group.empty()) report_queries(r, opts.group_names[g] + ".", in_group, query_rows, truth, approx, opts);
  }
  for (size_t g = 0; g < group_stats.size(); ++g) report_group(r, opts.group_names[g], group_stats[g].finish());
  if (!opts.freq.empty()) {
    set.clear();
    for (uint64_t i = 0; i < weighted.size(); ++i) set.push_back({index_of(weighted[i]), weighted_w[i]});
    r.set("w.queries", static_cast<double>(weighted.size()));
    report_queries(r, "w.", set, query_rows, truth, approx, opts);
    report_weighted(r, weighted_stats.finish());
    for (const char* bucket : detail::RecProxies::kBucketNames) r.groups.push_back(bucket);
  }
  proxies.report(r);
  return r;
}

void set_rate_gap(EvalResult& r, double bits_per_value) {
  const std::optional<double> mse = r.get("mse");
  if (r.covariance_eigenvalues.empty() || !mse) return;
  const double bound = gaussian_distortion(r.covariance_eigenvalues, bits_per_value);
  r.set("rd.bound", bound);
  if (*mse > 0) r.set("rd.gap_bits", rate_gap_bits(*mse, bound));  // a lossless file has no gap to show
}

}  // namespace edo
