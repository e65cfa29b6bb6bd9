// SPDX-License-Identifier: Apache-2.0
// One size budget over a model's tables: per-table frontiers of (bytes,
// access-weighted error) and a greedy allocation by loss per byte
// (docs/PACK.md, "One budget for a model").
#include "pack_impl.hpp"

#include <edo/codec.hpp>
#include <edo/codec_chooser.hpp>
#include <edo/error.hpp>
#include <edo/joint_plan.hpp>
#include <edo/make_codec.hpp>
#include <edo/random.hpp>
#include <edo/single_threaded_blas.hpp>
#include <edo/table_writer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <functional>
#include <numeric>
#include <optional>

namespace edo {

namespace {

// A tier trains a codec on its own rows: pq and rq fit 256 centroids a
// subspace or level, so fewer rows than that cannot train them.
constexpr uint64_t kJointMinTrainedRows = 256;
// A trained candidate trains on a seeded draw of this many rows of the
// sample and is scored on all of it: rq and tc train in time linear in the
// rows, and a model has many tables. Fewer rows than a tier's writer trains
// on (PackOptions::train_rows) make the estimate of its error, if anything,
// too high.
constexpr uint64_t kJointTrainRows = 2048;

std::string tiers_text(const std::vector<TierSpec>& tiers) {
  std::string out;
  for (const TierSpec& t : tiers) out += (out.empty() ? "" : " ") + format_tier_spec(t);
  return out;
}

// A codec's squared error on each sample row.
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct ScoredCodec {
  double seconds = 0;  // training, encoding and decoding the sample
  std::string spec;
  uint64_t code_size = 0;
  uint64_t state_bytes = 0;  // its trained state in the file (each tier that uses it trains its own)
  bool trained = false;
  std::vector<double> row_error;
};

struct TableSample {
  std::vector<uint64_t> position;   // each sample row's place in the hot order
  std::vector<double> count;        // its count (1 without counts): E_t's weight
  std::vector<double> weight;       // count + cold_weight x the table's mean count: the objective's
  double count_norm = 0;            // sum of count ||x||^2
  double weight_norm = 0;           // sum of weight ||x||^2
  std::vector<ScoredCodec> codecs;  // most bytes a row first
  double read_seconds = 0;          // reading the sample
};

// One codec's round trip of the sample (trained on it first when it trains,
// as a tier trains on a sample of its rows): nullopt when a default
// candidate refuses the sample; a codec the user named is refused aloud.
std::optional<ScoredCodec> round_trip_sample(const JointTable& jt, const std::string& spec, const std::vector<float>& x,
                                             const std::vector<uint64_t>& ids, const JointPlanOptions& opt,
                                             bool explicit_codec) {
  const auto t0 = Clock::now();
  const uint64_t dim = jt.table->dim(), n = ids.size();
  std::unique_ptr<Codec> codec = make_codec(spec, dim);
  ScoredCodec c{0, codec->spec(), codec->code_size(), 0, codec->needs_training(), std::vector<double>(n)};
  EncodeOptions enc;
  enc.input = jt.name;
  enc.allow_underflow = true;
  enc.row_ids = ids.data();
  std::vector<float> y(n * dim);
  try {
    if (c.trained) {
      if (n < kJointMinTrainedRows) return std::nullopt;
      std::vector<uint64_t> pick = sample_indices(n, kJointTrainRows, opt.seed);  // places in the sample
      std::vector<float> train(pick.size() * dim);
      for (size_t k = 0; k < pick.size(); ++k) {
        std::copy_n(x.data() + pick[k] * dim, dim, train.data() + k * dim);
        pick[k] = ids[pick[k]];
      }
      check_trainable_norms(train.data(), pick.size(), dim, c.spec, enc, pick.data());
      codec->train(train.data(), pick.size(), opt.seed);
      for (const NamedBlob& b : codec->state()) c.state_bytes += state_stored_bytes(b);
    }
    std::vector<uint8_t> codes(n * codec->code_size());
    codec->encode(x.data(), n, codes.data(), enc);
    codec->decode(codes.data(), n, y.data());
  } catch (const Error& e) {
    if (explicit_codec) EDO_FAIL("--plan-codecs {}: table {}: {}", spec, jt.name, e.what());
    return std::nullopt;
  }
  for (uint64_t i = 0; i < n; ++i) {
    double sq = 0;
    for (uint64_t d = 0; d < dim; ++d) {
      const double e = static_cast<double>(x[i * dim + d]) - y[i * dim + d];
      sq += e * e;
    }
    c.row_error[i] = sq;
  }
  c.seconds = seconds_since(t0);
  return c;
}

// Candidates scored so far over the whole plan, for JointPlanOptions::progress.
struct ScoringProgress {
  std::function<void(const std::string&, uint64_t, uint64_t)> report;
  uint64_t done = 0, total = 0;
  std::string stage;
};

TableSample score_sample(const JointTable& jt, const std::vector<uint64_t>& order, const JointPlanOptions& opt,
                         const std::vector<std::string>& specs, bool explicit_codecs, ScoringProgress& progress) {
  io::TableReader& table = *jt.table;
  const uint64_t rows = table.rows(), dim = table.dim();
  std::vector<uint64_t> place(rows);
  for (uint64_t k = 0; k < rows; ++k) place[order[k]] = k;
  const std::vector<uint64_t> ids = sample_indices(rows, opt.sample_rows, opt.seed);
  const uint64_t n = ids.size();
  std::vector<float> x(n * dim);
  TableSample s;
  const auto t0 = Clock::now();
  const double mean_count =
      jt.freq.empty() ? 1.0 : std::accumulate(jt.freq.begin(), jt.freq.end(), 0.0) / static_cast<double>(rows);
  for (uint64_t i = 0; i < n; ++i) {
    table.read_f32(ids[i], 1, x.data() + i * dim);
    s.position.push_back(place[ids[i]]);
    s.count.push_back(jt.freq.empty() ? 1.0 : jt.freq[ids[i]]);
    s.weight.push_back(s.count.back() + opt.cold_weight * mean_count);
    double sq = 0;
    for (uint64_t d = 0; d < dim; ++d) sq += static_cast<double>(x[i * dim + d]) * x[i * dim + d];
    s.count_norm += s.count.back() * sq;
    s.weight_norm += s.weight.back() * sq;
  }
  s.read_seconds = seconds_since(t0);
  // Candidates are independent: one a thread (codecs' own loops and BLAS then
  // run on it alone, so scores do not depend on the thread count), the
  // chooser's costliest (listed last) first.
  const detail::SingleThreadedBlas one_blas_thread_each;
  const auto count = static_cast<int64_t>(specs.size());
  std::vector<std::optional<ScoredCodec>> scored(specs.size());
  std::vector<std::exception_ptr> failed(specs.size());
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t k = count - 1; k >= 0; --k) {
    const auto i = static_cast<size_t>(k);
    try {
      scored[i] = round_trip_sample(jt, specs[i], x, ids, opt, explicit_codecs);
    } catch (...) {
      failed[i] = std::current_exception();
    }
#pragma omp critical(edo_joint_progress)
    {
      ++progress.done;
      if (progress.report) progress.report(progress.stage, progress.done, progress.total);
    }
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (failed[i]) std::rethrow_exception(failed[i]);
    if (scored[i]) s.codecs.push_back(std::move(*scored[i]));
  }
  if (s.codecs.empty())
    EDO_FAIL("table {}: no codec of the plan's list takes its sample ({} rows; a trained codec needs {})", jt.name, n,
             kJointMinTrainedRows);
  std::stable_sort(s.codecs.begin(), s.codecs.end(),
                   [](const ScoredCodec& a, const ScoredCodec& b) { return a.code_size > b.code_size; });
  return s;
}

// The indices of the front's points on its lower convex hull, cheapest first.
std::vector<size_t> hull_indices(const std::vector<JointOption>& front) {
  std::vector<size_t> hull;
  for (size_t i = 0; i < front.size(); ++i) {
    const JointOption& o = front[i];
    // Drop the last point while it lies on or above the segment from the one before it to o.
    while (hull.size() >= 2) {
      const JointOption &a = front[hull[hull.size() - 2]], &b = front[hull.back()];
      const double cross = (static_cast<double>(b.bytes) - static_cast<double>(a.bytes)) * (o.objective - a.objective) -
                           (b.objective - a.objective) * (static_cast<double>(o.bytes) - static_cast<double>(a.bytes));
      if (cross > 0) break;
      hull.pop_back();
    }
    hull.push_back(i);
  }
  return hull;
}

// What a user does today, for comparison: every table under the same ratio
// (its share of the cap by fp32 bytes), the option of least objective each
// can have there (its cheapest when none fits its share).
std::vector<size_t> same_ratio_choice(const std::vector<JointTablePlan>& tables, uint64_t max_bytes,
                                      uint64_t fp32_total) {
  std::vector<size_t> chosen;
  for (const JointTablePlan& tp : tables) {
    const double cap = static_cast<double>(max_bytes) * static_cast<double>(tp.fp32_bytes) /
                       static_cast<double>(fp32_total ? fp32_total : 1);
    size_t best = 0;
    for (size_t i = 0; i < tp.frontier.size(); ++i)
      if (static_cast<double>(tp.frontier[i].bytes) <= cap && tp.frontier[i].objective < tp.frontier[best].objective)
        best = i;
    chosen.push_back(best);
  }
  return chosen;
}

// Sum over tables of w_t s_t times `field` of each chosen option.
double weighted_sum(const std::vector<JointTablePlan>& tables, const std::vector<size_t>& chosen,
                    double JointOption::*field) {
  double sum = 0;
  for (size_t t = 0; t < tables.size(); ++t)
    sum += tables[t].weight * tables[t].share * (tables[t].frontier[chosen[t]].*field);
  return sum;
}

// Greedy by loss per byte along each table's hull: on a convex frontier the
// best next step of each table only gets worse, so this is the Lagrangian
// allocation, up to the last step that does not fit. Then what is left is
// spent on the front's points off the hull: each round, the one move (a
// table to a larger option that fits) that lowers the sum most. Returns each
// table's option: allocate()'s fallback when the exact allocation was thinned.
std::vector<size_t> allocate_greedy(const JointPlan& plan, uint64_t max_bytes) {
  const size_t T = plan.tables.size();
  std::vector<size_t> chosen(T, 0), step(T, 0);
  std::vector<std::vector<size_t>> hulls;
  uint64_t bytes = 0;
  for (const JointTablePlan& tp : plan.tables) {
    hulls.push_back(hull_indices(tp.frontier));
    bytes += tp.frontier.front().bytes;
  }
  const auto gain_of = [&](size_t t, size_t to) {
    const JointTablePlan& tp = plan.tables[t];
    return tp.weight * tp.share * (tp.frontier[chosen[t]].objective - tp.frontier[to].objective);
  };
  for (;;) {
    size_t best = SIZE_MAX;
    double best_gain = 0;
    for (size_t t = 0; t < T; ++t) {
      if (step[t] + 1 >= hulls[t].size()) continue;
      const size_t next = hulls[t][step[t] + 1];
      const uint64_t more = plan.tables[t].frontier[next].bytes - plan.tables[t].frontier[chosen[t]].bytes;
      if (bytes + more > max_bytes) continue;
      const double gain = gain_of(t, next) / static_cast<double>(more ? more : 1);
      if (best == SIZE_MAX || gain > best_gain) {
        best = t;
        best_gain = gain;
      }
    }
    if (best == SIZE_MAX) break;
    const size_t to = hulls[best][++step[best]];
    bytes += plan.tables[best].frontier[to].bytes - plan.tables[best].frontier[chosen[best]].bytes;
    chosen[best] = to;
  }
  for (;;) {
    size_t best = SIZE_MAX, best_to = 0;
    double best_gain = 0;
    for (size_t t = 0; t < T; ++t) {
      const JointTablePlan& tp = plan.tables[t];
      for (size_t i = chosen[t] + 1; i < tp.frontier.size(); ++i)
        if (bytes + tp.frontier[i].bytes - tp.frontier[chosen[t]].bytes <= max_bytes && gain_of(t, i) > best_gain) {
          best = t;
          best_to = i;
          best_gain = gain_of(t, i);
        }
    }
    if (best == SIZE_MAX) break;
    bytes += plan.tables[best].frontier[best_to].bytes - plan.tables[best].frontier[chosen[best]].bytes;
    chosen[best] = best_to;
  }
  return chosen;
}

// Partial plans kept a table at most: beyond this the Pareto set of the
// tables so far is thinned to the best plan a slice of the cap (a model of
// 26 tables with fronts of 60 options stays far below it in practice).
constexpr size_t kMaxPartialPlans = 1 << 15;

// The least sum_t w_t s_t objective_t under max_bytes, exactly: the Pareto
// set of (bytes, objective) over the tables taken so far, extended by each
// option of the next table, pruned to what no other partial plan beats in
// both and to what leaves room for the remaining tables' cheapest options.
// `exact` is cleared when the set had to be thinned.
std::vector<size_t> allocate_exact(const JointPlan& plan, uint64_t max_bytes, bool& exact) {
  const size_t T = plan.tables.size();
  std::vector<uint64_t> rest_min(T + 1, 0);  // the cheapest bytes of tables t..T-1
  for (size_t t = T; t-- > 0;) rest_min[t] = rest_min[t + 1] + plan.tables[t].frontier.front().bytes;
  struct Partial {
    uint64_t bytes = 0;
    double objective = 0;
    uint32_t from = 0, option = 0;  // the partial plan of the tables before and this table's option
  };
  std::vector<std::vector<Partial>> layers(T + 1);
  layers[0].push_back({});
  exact = true;
  for (size_t t = 0; t < T; ++t) {
    const JointTablePlan& tp = plan.tables[t];
    std::vector<Partial> next;
    for (size_t p = 0; p < layers[t].size(); ++p)
      for (size_t i = 0; i < tp.frontier.size(); ++i) {
        const JointOption& o = tp.frontier[i];
        const uint64_t bytes = layers[t][p].bytes + o.bytes;
        if (bytes + rest_min[t + 1] > max_bytes) break;  // the front is cheapest first
        next.push_back({bytes, layers[t][p].objective + tp.weight * tp.share * o.objective, static_cast<uint32_t>(p),
                        static_cast<uint32_t>(i)});
      }
    std::sort(next.begin(), next.end(), [](const Partial& a, const Partial& b) {
      return a.bytes != b.bytes ? a.bytes < b.bytes : a.objective < b.objective;
    });
    std::vector<Partial>& front = layers[t + 1];
    for (const Partial& q : next)
      if (front.empty() || q.objective < front.back().objective) front.push_back(q);
    if (front.size() > kMaxPartialPlans) {
      exact = false;
      const double slice = static_cast<double>(max_bytes) / static_cast<double>(kMaxPartialPlans);
      std::vector<Partial> thinned;
      for (const Partial& q : front) {
        const auto bucket = [&](const Partial& x) { return std::floor(static_cast<double>(x.bytes) / slice); };
        if (!thinned.empty() && bucket(thinned.back()) == bucket(q))
          thinned.back() = q;  // the front falls: the later point of a slice is the better one
        else
          thinned.push_back(q);
      }
      front = std::move(thinned);
    }
  }
  std::vector<size_t> chosen(T, 0);
  if (layers[T].empty()) return chosen;
  // The last point of the final front has the least objective of all that fit.
  uint32_t at = static_cast<uint32_t>(layers[T].size() - 1);
  for (size_t t = T; t-- > 0;) {
    const Partial& q = layers[t + 1][at];
    chosen[t] = q.option;
    at = q.from;
  }
  return chosen;
}

void allocate(JointPlan& plan, uint64_t max_bytes) {
  const auto t0 = Clock::now();
  bool exact = true;
  std::vector<size_t> chosen = allocate_exact(plan, max_bytes, exact);
  if (!exact) {
    const std::vector<size_t> greedy = allocate_greedy(plan, max_bytes);
    if (weighted_sum(plan.tables, greedy, &JointOption::objective) <
        weighted_sum(plan.tables, chosen, &JointOption::objective))
      chosen = greedy;
  }
  plan.exact = exact;
  plan.allocate_seconds = seconds_since(t0);
  plan.bytes = 0;
  for (size_t t = 0; t < plan.tables.size(); ++t) {
    plan.tables[t].chosen = chosen[t];
    plan.bytes += plan.tables[t].choice().bytes;
  }
}

TierSpec tier(const char* name, ShareKind share, double value, const std::string& codec) {
  TierSpec t;
  t.name = name;
  t.share = share;
  t.value = value;
  t.codec = codec;
  return t;
}

// The most rows at the head of the hot order whose ids form at most
// kMaxWrittenRuns runs of one tier (the others the second's).
uint64_t largest_run_slice(const std::vector<uint64_t>& order) {
  const uint64_t rows = order.size();
  std::vector<uint8_t> hot(rows, 0);
  uint64_t changes = 0;  // places where a row's tier differs from the next row's
  const auto differs = [&](uint64_t id) { return id + 1 < rows && hot[id] != hot[id + 1] ? 1 : 0; };
  for (uint64_t k = 0; k < rows; ++k) {
    const uint64_t id = order[k];
    const uint64_t before = (id > 0 ? differs(id - 1) : 0) + differs(id);
    hot[id] = 1;
    const uint64_t after = (id > 0 ? differs(id - 1) : 0) + differs(id);
    changes = changes + after - before;
    if (changes + 1 > kMaxWrittenRuns) return k;
  }
  return rows;
}

// One codec for every row, or the hottest slice in a more precise codec over the rest.
std::vector<JointOption> table_options(const TableSample& s, const std::vector<uint64_t>& order,
                                       const JointPlanOptions& opt) {
  const uint64_t rows = order.size();
  const size_t n = s.position.size(), L = s.codecs.size();
  std::vector<JointOption> out;
  const double count_norm = s.count_norm > 0 ? s.count_norm : 1, weight_norm = s.weight_norm > 0 ? s.weight_norm : 1;
  // E_t and the objective's error of the rows whose codec `pick(i)` gives.
  const auto errors = [&](const auto& pick) {
    double by_count = 0, by_weight = 0;
    for (size_t i = 0; i < n; ++i) {
      const double sq = pick(i).row_error[i];
      by_count += s.count[i] * sq;
      by_weight += s.weight[i] * sq;
    }
    return std::pair{by_count / count_norm, by_weight / weight_norm};
  };
  // A trained codec trains on its tier's rows: it needs enough of them.
  const auto takes = [](const ScoredCodec& c, uint64_t tier_rows) {
    return !c.trained || tier_rows >= kJointMinTrainedRows;
  };
  for (const ScoredCodec& c : s.codecs)
    if (takes(c, rows)) {
      const auto [error, objective] = errors([&](size_t) -> const ScoredCodec& { return c; });
      out.push_back({{tier("all", ShareKind::rest, 0, c.spec)}, rows * c.code_size + c.state_bytes, error, objective});
    }
  // Hot slices: the percent cuts, and the largest slice whose id map stays
  // runs (kMaxWrittenRuns; a few hundred bytes where a scattered 1% slice
  // takes a map of every row, 5 KB a thousand rows), with its half and quarter:
  // the few rows of largest norm or count in a precise codec, as a one-table
  // budget's fill puts them.
  std::vector<uint64_t> hot_rows;
  for (const double pct : opt.cuts)
    hot_rows.push_back(static_cast<uint64_t>(std::llround(static_cast<double>(rows) * pct / 100)));
  const uint64_t run_cut = largest_run_slice(order);
  for (const uint64_t h : {run_cut, run_cut / 2, run_cut / 4}) hot_rows.push_back(h);
  std::sort(hot_rows.begin(), hot_rows.end());
  hot_rows.erase(std::unique(hot_rows.begin(), hot_rows.end()), hot_rows.end());
  for (const uint64_t hot : hot_rows) {
    if (hot == 0 || hot >= rows) continue;
    const uint64_t map = id_map_bytes(tier_of_rows(order, {0, hot, rows}).data(), rows, 2);
    for (size_t a = 0; a < L; ++a)
      for (size_t b = a + 1; b < L; ++b) {
        if (!takes(s.codecs[a], hot) || !takes(s.codecs[b], rows - hot)) continue;
        const auto [error, objective] =
            errors([&](size_t i) -> const ScoredCodec& { return s.position[i] < hot ? s.codecs[a] : s.codecs[b]; });
        out.push_back({{tier("hot", ShareKind::rows_count, static_cast<double>(hot), s.codecs[a].spec),
                        tier("cold", ShareKind::rest, 0, s.codecs[b].spec)},
                       hot * s.codecs[a].code_size + (rows - hot) * s.codecs[b].code_size + map +
                           s.codecs[a].state_bytes + s.codecs[b].state_bytes,
                       error,
                       objective});
      }
  }
  return pareto_front(std::move(out));
}

}  // namespace

namespace {

JointTablePlan table_plan(const JointTable& jt, double share) {
  JointTablePlan tp;
  tp.name = jt.name;
  tp.rows = jt.table->rows();
  tp.dim = jt.table->dim();
  tp.fp32_bytes = tp.rows * tp.dim * 4;
  tp.share = share;
  tp.weight = jt.weight;
  return tp;
}

}  // namespace

std::vector<JointOption> pareto_front(std::vector<JointOption> opts) {
  std::stable_sort(opts.begin(), opts.end(), [](const JointOption& a, const JointOption& b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.objective < b.objective;
  });
  std::vector<JointOption> front;
  for (JointOption& o : opts)
    if (front.empty() || o.objective < front.back().objective) front.push_back(std::move(o));
  return front;
}

std::vector<double> lookup_shares(const std::vector<JointTable>& tables, bool& by_counts) {
  by_counts = std::all_of(tables.begin(), tables.end(), [](const JointTable& jt) { return !jt.freq.empty(); });
  std::vector<double> shares;
  double lookups = 0;
  for (const JointTable& jt : tables) {
    shares.push_back(by_counts ? std::accumulate(jt.freq.begin(), jt.freq.end(), 0.0)
                               : static_cast<double>(jt.table->rows()));
    lookups += shares.back();
  }
  for (double& s : shares) s /= lookups > 0 ? lookups : 1;
  return shares;
}

std::optional<JointPlan> plan_as_stored(const std::vector<JointTable>& tables, uint64_t max_bytes) {
  JointPlan plan;
  const std::vector<double> shares = lookup_shares(tables, plan.shares_by_counts);
  uint64_t bytes = 0;
  for (size_t t = 0; t < tables.size(); ++t) {
    JointTablePlan tp = table_plan(tables[t], shares[t]);
    const char* codec = detail::stored_codec(tables[t].table->dtype());
    const uint64_t table_bytes = tp.rows * code_size(codec, tp.dim);
    tp.frontier.push_back({{tier("all", ShareKind::rest, 0, codec)}, table_bytes, 0, 0});
    bytes += table_bytes;
    plan.tables.push_back(std::move(tp));
  }
  if (bytes > max_bytes) return std::nullopt;
  plan.max_bytes = max_bytes;
  plan.bytes = bytes;
  return plan;
}

std::optional<uint64_t> smallest_codes_bytes(const std::vector<JointTable>& tables, const JointPlanOptions& opt,
                                             std::string& largest) {
  uint64_t total = 0, most = 0;
  for (const JointTable& jt : tables) {
    const uint64_t rows = jt.table->rows(), dim = jt.table->dim();
    const std::vector<std::string> specs =
        opt.codecs.empty() ? chooser_candidates(rows, dim, opt.sample_rows) : opt.codecs;
    std::optional<uint64_t> least;
    for (const std::string& s : specs) {
      try {
        const uint64_t b = rows * code_size(s, dim);
        if (!least || b < *least) least = b;
      } catch (const Error&) {  // a spelling the plan itself will refuse, aloud
        return std::nullopt;
      }
    }
    if (!least) return std::nullopt;
    total += *least;
    if (*least >= most) {
      most = *least;
      largest = fmt::format("{} (at least {} bytes)", jt.name, *least);
    }
  }
  return total;
}

JointPlan plan_joint(const std::vector<JointTable>& tables, const JointPlanOptions& opt) {
  JointPlan plan;
  const std::vector<double> shares = lookup_shares(tables, plan.shares_by_counts);
  uint64_t fp32_total = 0;
  for (const JointTable& jt : tables) fp32_total += jt.table->rows() * jt.table->dim() * 4;
  std::vector<std::vector<std::string>> table_specs;
  ScoringProgress progress{opt.progress, 0, 0, {}};
  for (const JointTable& jt : tables) {
    std::vector<std::string> specs =
        opt.codecs.empty() ? chooser_candidates(jt.table->rows(), jt.table->dim(), opt.sample_rows) : opt.codecs;
    // Sampling by need: a table of under 2% of the model's bytes moves the
    // plan by little, so it skips rq, the costliest candidate to score (3 s
    // of a 512 x 384 position table's 9).
    if (opt.codecs.empty() && jt.table->rows() * jt.table->dim() * 4 * 50 < fp32_total)
      std::erase_if(specs, [](const std::string& s) { return s.starts_with("rq:"); });
    progress.total += specs.size();
    table_specs.push_back(std::move(specs));
  }
  for (size_t t = 0; t < tables.size(); ++t) {
    const JointTable& jt = tables[t];
    const auto t0 = Clock::now();
    progress.stage =
        fmt::format("joint plan: scoring candidates on table {} ({} of {})", jt.name, t + 1, tables.size());
    const std::vector<uint64_t> order =
        hot_order(!jt.freq.empty() ? jt.freq : detail::digest_and_norms(*jt.table, true, io::kDefaultBlockBytes).norms);
    const double order_seconds = seconds_since(t0);
    const TableSample s = score_sample(jt, order, opt, table_specs[t], !opt.codecs.empty(), progress);
    JointTablePlan tp = table_plan(jt, shares[t]);
    const auto t1 = Clock::now();
    tp.frontier = table_options(s, order, opt);
    tp.seconds.emplace_back("hot order", order_seconds);
    tp.seconds.emplace_back("sample read", s.read_seconds);
    for (const ScoredCodec& c : s.codecs) tp.seconds.emplace_back(c.spec, c.seconds);
    tp.seconds.emplace_back("options", seconds_since(t1));
    plan.tables.push_back(std::move(tp));
  }
  plan.cold_weight = opt.cold_weight;
  replan_joint(plan, opt.max_bytes, opt.header_bytes);
  return plan;
}

void replan_joint(JointPlan& plan, uint64_t max_bytes, uint64_t header_bytes) {
  uint64_t fp32_total = 0, cheapest = 0;
  const JointTablePlan* largest = nullptr;  // the table whose cheapest option takes the most
  plan.max_bytes = max_bytes;
  for (JointTablePlan& tp : plan.tables) {
    tp.chosen = 0;
    tp.recall.reset();
    cheapest += tp.frontier.front().bytes;
    fp32_total += tp.fp32_bytes;
    if (!largest || tp.frontier.front().bytes > largest->frontier.front().bytes) largest = &tp;
  }
  if (cheapest > max_bytes)
    EDO_FAIL(
        "joint plan: the cheapest option of every table takes {} bytes of data together, over the {} the "
        "budget leaves them: the smallest reachable model file is about bytes<={} (ratio {:.3g}); table {} "
        "alone takes {} at its smallest ({})",
        cheapest, max_bytes, cheapest + header_bytes,
        static_cast<double>(fp32_total) / static_cast<double>(cheapest + header_bytes), largest->name,
        largest->frontier.front().bytes, tiers_text(largest->frontier.front().tiers));
  allocate(plan, max_bytes);
  std::vector<size_t> chosen;
  for (const JointTablePlan& tp : plan.tables) chosen.push_back(tp.chosen);
  plan.error = weighted_sum(plan.tables, chosen, &JointOption::error);
  plan.objective = weighted_sum(plan.tables, chosen, &JointOption::objective);
  const std::vector<size_t> same_ratio = same_ratio_choice(plan.tables, max_bytes, fp32_total);
  plan.same_ratio_objective = weighted_sum(plan.tables, same_ratio, &JointOption::objective);
  plan.same_ratio_error = weighted_sum(plan.tables, same_ratio, &JointOption::error);
  plan.same_ratio_bytes = 0;
  for (size_t t = 0; t < plan.tables.size(); ++t) plan.same_ratio_bytes += plan.tables[t].frontier[same_ratio[t]].bytes;
}

std::optional<JointStep> cheapest_step(const JointPlan& plan) {
  std::optional<JointStep> best;
  for (const JointTablePlan& tp : plan.tables)
    for (size_t i = tp.chosen + 1; i < tp.frontier.size(); ++i) {
      const uint64_t more = tp.frontier[i].bytes - tp.choice().bytes;
      if (!best || more < best->more_bytes) best = JointStep{tp.name, i, more};
    }
  return best;
}

namespace {

// Each option of a table's front as [bytes, objective, tiers]: what the plan chose among.
// Where the table's time went, costliest first, and its sum.
nlohmann::json seconds_json(const JointTablePlan& tp) {
  std::vector<std::pair<std::string, double>> parts = tp.seconds;
  std::stable_sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  double total = 0;
  for (const auto& [what, s] : parts) total += s;
  nlohmann::json j = {{"total", total}, {"parts", nlohmann::json::array()}};
  for (const auto& [what, s] : parts) j["parts"].push_back({what, s});
  return j;
}

nlohmann::json frontier_json(const JointTablePlan& tp) {
  nlohmann::json out = nlohmann::json::array();
  for (const JointOption& o : tp.frontier) out.push_back({o.bytes, o.objective, tiers_text(o.tiers)});
  return out;
}

}  // namespace

nlohmann::json to_json(const JointPlan& plan) {
  nlohmann::json tables = nlohmann::json::array();
  for (const JointTablePlan& tp : plan.tables) {
    tables.push_back({{"name", tp.name},
                      {"rows", tp.rows},
                      {"dim", tp.dim},
                      {"bytes_before", tp.fp32_bytes},
                      {"bytes_after", tp.choice().bytes},
                      {"share", tp.share},
                      {"weight", tp.weight},
                      {"error", tp.choice().error},
                      {"objective", tp.choice().objective},
                      {"frontier_options", tp.frontier.size()},
                      {"frontier", frontier_json(tp)},
                      {"seconds", seconds_json(tp)},
                      {"tiers", plan_to_json(tp.choice().tiers)["tiers"]}});
    if (tp.recall) tables.back()["w.recall@10"] = *tp.recall;
  }
  nlohmann::json j = {{"max_data_bytes", plan.max_bytes},
                      {"data_bytes", plan.bytes},
                      {"weighted_error", plan.error},
                      {"objective", plan.objective},
                      {"objective_name", objective_name(plan)},
                      {"cold_weight", plan.cold_weight},
                      {"shares", plan.shares_by_counts ? "counts" : "rows"},
                      {"allocation", plan.exact ? "exact" : "thinned"},
                      {"same_ratio_objective", plan.same_ratio_objective},
                      {"same_ratio_error", plan.same_ratio_error},
                      {"same_ratio_data_bytes", plan.same_ratio_bytes},
                      {"allocate_seconds", plan.allocate_seconds},
                      {"tables", tables}};
  return j;
}

std::optional<std::map<std::string, std::vector<TierSpec>>> read_joint_plan_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) EDO_FAIL("{}: cannot open", path);
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) EDO_FAIL("{}: not valid JSON", path);
  if (j.is_object() && j.contains("tiers")) return std::nullopt;
  if (!j.is_object() || !j.contains("tables") || !j["tables"].is_array() || j["tables"].empty())
    EDO_FAIL("{}: a plan is an object with a non-empty 'tiers' array (one table) or 'tables' array (a model)", path);
  std::map<std::string, std::vector<TierSpec>> tiers;
  for (const nlohmann::json& t : j["tables"]) {
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      EDO_FAIL("{}: table {} of the plan has no string 'name'", path, tiers.size());
    const std::string name = t["name"].get<std::string>();
    if (tiers.count(name)) EDO_FAIL("{}: the plan names table '{}' twice", path, name);
    tiers[name] = plan_from_json(t, path + " (table " + name + ")");
  }
  return tiers;
}

std::string objective_name(const JointPlan& plan) {
  return plan.cold_weight > 0 ? fmt::format("sum w_t s_t E_t with cold weight {:g}", plan.cold_weight)
                              : "sum w_t s_t E_t";
}

std::string to_text(const JointPlan& plan) {
  std::string out =
      fmt::format("  joint plan: {} of {} data bytes, objective {} = {:.4g}; every table at the same ratio: {:.4g}\n",
                  plan.bytes, plan.max_bytes, objective_name(plan), plan.objective, plan.same_ratio_objective);
  if (plan.cold_weight > 0)
    out += fmt::format("  access-weighted error sum s_t E_t {:.4g} (same ratio: {:.4g})\n", plan.error,
                       plan.same_ratio_error);
  out += fmt::format("  {:<28} {:>10} {:>6} {:>7} {:>12} {:>12} {:>10} {:>9}  {}\n", "table", "rows", "dim", "share",
                     "fp32", "planned", "E_t", "w.rec@10", "tiers");
  for (const JointTablePlan& tp : plan.tables) {
    const std::string tiers = tiers_text(tp.choice().tiers);
    out += fmt::format("  {:<28} {:>10} {:>6} {:>6.2f}% {:>12} {:>12} {:>10.4g} {:>9}  {}\n", tp.name, tp.rows, tp.dim,
                       100 * tp.share, tp.fp32_bytes, tp.choice().bytes, tp.choice().error,
                       tp.recall ? fmt::format("{:.4f}", *tp.recall) : "-", tiers);
  }
  return out;
}

}  // namespace edo
