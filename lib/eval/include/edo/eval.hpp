// SPDX-License-Identifier: Apache-2.0
// Measures what compressing an embedding table costs: neighbour recall,
// reconstruction error and, with labels, k-NN classification accuracy.
// Every metric is defined in docs/EVAL.md, the record of what each number means.
//
// evaluate() streams both tables once, block by block, so memory is the
// query vectors, one block of each table, the top-k heaps, and the lowest 5%
// of per-row cosines (8 bytes per 20 rows, for the exact percentiles).
#pragma once

#include <edo/device.hpp>
#include <edo/knn.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edo {

namespace io {
class TableReader;
}
class Codec;

// Optional interface of a compressed table whose rows are one codec's codes
// (a one-tier .edo). When its codec offers asymmetric distance tables
// (Codec::adc(), the pq family), evaluate() also ranks the rows by ADC and
// reports those recalls under "adc." names next to the decoded ones.
class CodedRows {
 public:
  virtual ~CodedRows() = default;
  // The codec of every row, or null when the rows are not one codec's codes
  // (a tiered file).
  virtual const Codec* codes_codec() const = 0;
  // Code rows [begin, begin + count) (only when codes_codec() is not null);
  // must not invalidate the pointer the table's last rows_f32() returned.
  virtual const uint8_t* codes_of(uint64_t begin, uint64_t count) = 0;
};

inline constexpr uint64_t kMaxProxyDraws = 100000;

struct EvalOptions {
  Metric metric = Metric::l2;
  std::vector<uint64_t> ks = {1, 10, 100};
  // Query rows drawn uniformly without replacement with `seed`; all rows
  // when the table has no more than this many.
  uint64_t queries = 1000;
  // Explicit query rows (ids into the original table); when non-empty they
  // replace the uniform sample and `queries` is ignored.
  std::vector<uint64_t> query_ids;
  uint64_t seed = 0;
  // Optional, one per row: class labels for k-NN classification accuracy.
  std::vector<int64_t> labels;
  // Optional, one per row: access frequencies (finite, >= 0, not all 0).
  // Adds the access-weighted "w." metrics.
  std::vector<double> freq;
  // Optional, one per row: a group index below group_names.size() (e.g. the
  // tier that stores the row). Adds per-group metrics named
  // "<group_names[g]>.<metric>": the query metrics over the uniform queries
  // in the group, and rows, rel_fro, mse, cos.mean, cos.min over its rows.
  std::vector<uint32_t> groups;
  std::vector<std::string> group_names;
  // Group indices whose tiers answer dropped rows with a stand-in
  // ("default", "zero", "centroids", "nearest"): with frequencies their
  // lookups add up to fallback.lookups.
  std::vector<uint32_t> fallback_groups;
  // Recommender proxies (docs/EVAL.md): `bags` sum-pooled bags of
  // `bag_size` ids and `dot_pairs` pairs of ids, drawn by frequency when
  // given, else uniformly; 0 leaves that proxy out.
  // Each at most kMaxProxyDraws.
  uint64_t bags = 1000, bag_size = 20, dot_pairs = 2000;
  // Rows per streamed block; 0 lets the readers choose.
  uint64_t block_rows = 0;
  // Where the k-NN scores are computed (KnnOptions::device).
  Device device = Device::cpu;
};

// One row's reconstruction numbers, in double.
struct RowError {
  double err2 = 0;           // |x - y|^2
  double norm2 = 0;          // |x|^2 (the original)
  double decoded_norm2 = 0;  // |y|^2
  // cosine(x, y): 1 when both rows are zero, 0 when only one is; NaN when
  // a value of either row is NaN or infinite.
  double cos = 0;
  double max_abs = 0;  // max |x_j - y_j|; NaN when any difference is NaN
};

// The numbers of row x (original) and y (decoded), dim values each.
RowError row_error(const float* x, const float* y, uint64_t dim);

// What RowErrorStats reports (docs/EVAL.md, "NaN and Inf rows").
struct RowErrorSummary {
  uint64_t rows = 0;    // rows added with a positive weight
  double rel_fro = 0;   // sqrt(sum w err2 / sum w norm2); 0 when both sums are 0, +inf when only the norms' is
  double mse = 0;       // sum w err2 / (sum w * dim)
  double cos_mean = 0;  // sum w cos / sum w
  double cos_min = 0;   // lowest cosine (a NaN ranks lowest: the rule below); NaN with no rows
  double cos_p1 = 0;    // nearest-rank 1st and 5th percentiles of the cosines,
  double cos_p5 = 0;    // NaN unless percentiles were asked for
  double max_abs = 0;   // largest |x_j - y_j|, NaN when any difference is NaN
};

// Reconstruction statistics over rows: the one implementation behind
// edo-eval's rel_fro, mse, cos.* and max_abs (and their w.* and per-group
// forms). Rows must be added in table order for sums that do not depend on
// blocking or thread count.
//
// NaN rule: a NaN cosine (a row holding NaN or Inf, in either table) ranks
// below every number, so cos.min is NaN when any row's cosine is NaN and a
// NaN row counts among the lowest for cos.p1 and cos.p5; cos.mean and the
// sums propagate NaN as arithmetic does; max_abs is NaN when any difference
// is NaN. A broken row therefore always shows, never hides.
class RowErrorStats {
 public:
  // `percentile_rows` > 0 keeps the lowest 5% of that many cosines (8 bytes
  // per 20 rows) for cos_p1 and cos_p5: it must be at least the number of
  // rows that will be added (the table's rows). 0 keeps none.
  explicit RowErrorStats(uint64_t dim, uint64_t percentile_rows = 0);

  // Adds one row; a row of weight <= 0 is left out entirely.
  void add(const RowError& e, double weight = 1.0);
  // Adds `rows` rows of original x and decoded y (rows x dim floats each),
  // their numbers computed in parallel and added in order, weight 1.
  void add(const float* x, const float* y, uint64_t rows);
  // Adds `other`'s rows as if they followed this one's (same dim). The sums
  // are then those of the two parts added, which may round differently from
  // adding every row to one accumulator.
  void merge(const RowErrorStats& other);
  RowErrorSummary finish() const;

 private:
  uint64_t dim_;
  uint64_t percentile_rows_;
  uint64_t keep_ = 0;           // lowest cosines kept
  std::vector<double> lowest_;  // a max-heap under the NaN-lowest order
  uint64_t rows_ = 0;
  double weight_ = 0, err2_ = 0, norm2_ = 0, cos_ = 0, max_abs_ = 0;
  double cos_min_;
  std::vector<RowError> scratch_;
};

// The per-row cosine distribution: rows counted by their gap 1 - cos in bins
// of fixed edges (a 1-2-5 ladder from 1e-6 to 1), so it reads the same for
// any table and merges by adding counts.
struct CosHistogram {
  // Bin 0 holds gaps <= edges[0], bin i gaps in (edges[i-1], edges[i]], the
  // last bin gaps above edges.back() (cos < 0).
  static const std::vector<double>& edges();
  std::vector<uint64_t> counts;  // edges().size() + 1 bins; empty: not measured
  uint64_t nan = 0;              // rows whose cosine is NaN
  void add(double cos);
};

// edo 0.1 called r1@k "1-recall@k" (FAISS's R@k, read as one minus
// recall@k): get() and gates still take that name, and JSON reports carry
// both keys, until the next release.
inline constexpr std::string_view kOldR1Name = "1-recall@";

// Named metrics in insertion order. Names are stable: gates and reports
// refer to them (recall@10, cos.min, w.mse, ...).
class EvalResult {
 public:
  Metric metric = Metric::l2;  // the k-NN metric the recalls were measured with
  // Names of the row groups (EvalOptions::group_names, e.g. tiers) whose
  // "<group>.<metric>" entries the text report shows as columns.
  std::vector<std::string> groups;
  // Per-row cosines of the whole table (evaluate() fills it).
  CosHistogram cos_histogram;
  // The original's covariance eigenvalues on a sample of its rows (evaluate()
  // fills it; empty above 4,096 columns): what the rate-distortion metrics
  // rd.bound and rd.gap_bits are measured against once the file's bits a
  // value are known (set_rate_gap).
  std::vector<double> covariance_eigenvalues;

  // Inserts or replaces (keeping the original position).
  void set(const std::string& name, double value);
  std::optional<double> get(std::string_view name) const;
  // The value of `name`; a usage error listing every available name if absent.
  double at(std::string_view name) const;
  bool has(std::string_view name) const { return get(name).has_value(); }
  const std::vector<std::pair<std::string, double>>& metrics() const { return metrics_; }
  // "a, b, c": for error messages.
  std::string names() const;

 private:
  std::vector<std::pair<std::string, double>> metrics_;
};

// Compares `compressed` (the decoded table) with `original`, row for row.
// Both must have the same rows and dim. Queries are ORIGINAL rows searched
// against the original table (ground truth) and against the compressed
// table (the asymmetric setting: what a lookup of a full-precision query
// against compressed storage returns); the query's own row is excluded from
// both. Same inputs and options give identical numbers whatever the thread
// count. `original` and `compressed` may be the same reader. A compressed
// table that is also CodedRows with an ADC codec adds adc.recall@k,
// adc.r1@k and adc.recall_drop@k (uniform queries).
// `truth`, when given, carries the original's k-NN (the ground truth) from
// one call to the next with the same original and options: an empty one is
// filled, a filled one is used as it is (edo-eval comparing several files
// searches the original once).
// rd.bound (the Gaussian bound's MSE a value at `bits_per_value`, the
// compressed file's) and rd.gap_bits (half the log2 of mse over it) from
// r's covariance_eigenvalues and mse (docs/EVAL.md, "Rate-distortion gap");
// nothing where either is missing, no rd.gap_bits where mse is 0 (lossless).
void set_rate_gap(EvalResult& r, double bits_per_value);

EvalResult evaluate(io::TableReader& original, io::TableReader& compressed, const EvalOptions& opts,
                    KnnResult* truth = nullptr);

// The query rows evaluate() uses for the uniform sample: opts.query_ids when
// given, else min(opts.queries, rows) distinct rows drawn with opts.seed,
// ascending.
std::vector<uint64_t> sample_query_ids(uint64_t rows, const EvalOptions& opts);
// `count` rows drawn with replacement with probability freq[i] / sum(freq),
// from a stream seeded by `seed`, in draw order.
std::vector<uint64_t> sample_weighted_ids(const std::vector<double>& freq, uint64_t count, uint64_t seed);

// ---- neighbours of probe rows, before and after (edo-eval --show-neighbours) ----

// The rows `probes` name: row ids, or words of `vocab` when it is not empty
// (`vocab_name` names it in errors). None given: those of a few well-known
// words the vocabulary has ("king", "france", ...), else rows 0-4.
std::vector<uint64_t> probe_rows(const std::vector<std::string>& probes, const std::vector<std::string>& vocab,
                                 uint64_t rows, const std::string& vocab_name);

// The k nearest rows of each probe row (itself excluded) in the original and
// in the compressed table, the probe taken from the original.
struct ProbeNeighbours {
  std::vector<uint64_t> probes;
  KnnResult original, compressed;
};
ProbeNeighbours probe_neighbours(io::TableReader& original, io::TableReader& compressed,
                                 const std::vector<uint64_t>& probes, Metric metric, Device device, uint64_t k);

}  // namespace edo
