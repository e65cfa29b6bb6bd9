// SPDX-License-Identifier: Apache-2.0
// One size budget over a model's tables: per-table frontiers of (bytes,
// access-weighted error) and a greedy allocation by loss per byte
// (docs/PACK.md, "One budget for a model").
#include "pack_impl.hpp"

#include <edo/codec_chooser.hpp>
#include <edo/error.hpp>
#include <edo/joint_plan.hpp>
#include <edo/make_codec.hpp>
#include <edo/random.hpp>
#include <edo/single_threaded_blas.hpp>
#include <edo/table_writer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <fstream>
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

// A codec's squared error on each sample row.
struct ScoredCodec {
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
};

// One codec's round trip of the sample (trained on it first when it trains,
// as a tier trains on a sample of its rows): nullopt when a default
// candidate refuses the sample; a codec the user named is refused aloud.
std::optional<ScoredCodec> round_trip_sample(const JointTable& jt, const std::string& spec, const std::vector<float>& x,
                                             const std::vector<uint64_t>& ids, const JointPlanOptions& opt,
                                             bool explicit_codec) {
  const uint64_t dim = jt.table->dim(), n = ids.size();
  std::unique_ptr<Codec> codec = make_codec(spec, dim);
  ScoredCodec c{codec->spec(), codec->code_size(), 0, codec->needs_training(), std::vector<double>(n)};
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
  return c;
}

TableSample score_sample(const JointTable& jt, const std::vector<uint64_t>& order, const JointPlanOptions& opt,
                         const std::vector<std::string>& specs, bool explicit_codecs) {
  io::TableReader& table = *jt.table;
  const uint64_t rows = table.rows(), dim = table.dim();
  std::vector<uint64_t> place(rows);
  for (uint64_t k = 0; k < rows; ++k) place[order[k]] = k;
  const std::vector<uint64_t> ids = sample_indices(rows, opt.sample_rows, opt.seed);
  const uint64_t n = ids.size();
  std::vector<float> x(n * dim);
  TableSample s;
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

// The options no other beats in both bytes and error, cheapest first.
std::vector<JointOption> pareto_front(std::vector<JointOption> opts) {
  std::stable_sort(opts.begin(), opts.end(), [](const JointOption& a, const JointOption& b) {
    return a.bytes != b.bytes ? a.bytes < b.bytes : a.objective < b.objective;
  });
  std::vector<JointOption> front;
  for (JointOption& o : opts)
    if (front.empty() || o.objective < front.back().objective) front.push_back(std::move(o));
  return front;
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

// Greedy by loss per byte along each table's hull: on a convex frontier the
// best next step of each table only gets worse, so this is the Lagrangian
// allocation, up to the last step that does not fit. Then what is left is
// spent on the front's points off the hull: each round, the one move (a
// table to a larger option that fits) that lowers the sum most.
void allocate(JointPlan& plan, const std::vector<std::vector<size_t>>& hulls, uint64_t max_bytes) {
  std::vector<size_t> step(plan.tables.size(), 0);
  const auto gain_of = [](const JointTablePlan& tp, const JointOption& to) {
    return tp.weight * tp.share * (tp.choice().objective - to.objective);
  };
  for (;;) {
    size_t best = SIZE_MAX;
    double best_gain = 0;
    for (size_t t = 0; t < plan.tables.size(); ++t) {
      if (step[t] + 1 >= hulls[t].size()) continue;
      const JointTablePlan& tp = plan.tables[t];
      const JointOption& next = tp.frontier[hulls[t][step[t] + 1]];
      const uint64_t more = next.bytes - tp.choice().bytes;
      if (plan.bytes + more > max_bytes) continue;
      const double gain = gain_of(tp, next) / static_cast<double>(more ? more : 1);
      if (best == SIZE_MAX || gain > best_gain) {
        best = t;
        best_gain = gain;
      }
    }
    if (best == SIZE_MAX) break;
    JointTablePlan& tp = plan.tables[best];
    const size_t to = hulls[best][++step[best]];
    plan.bytes += tp.frontier[to].bytes - tp.choice().bytes;
    tp.chosen = to;
  }
  for (;;) {
    size_t best = SIZE_MAX, best_to = 0;
    double best_gain = 0;
    for (size_t t = 0; t < plan.tables.size(); ++t) {
      const JointTablePlan& tp = plan.tables[t];
      for (size_t i = tp.chosen + 1; i < tp.frontier.size(); ++i)
        if (plan.bytes + tp.frontier[i].bytes - tp.choice().bytes <= max_bytes &&
            gain_of(tp, tp.frontier[i]) > best_gain) {
          best = t;
          best_to = i;
          best_gain = gain_of(tp, tp.frontier[i]);
        }
    }
    if (best == SIZE_MAX) break;
    JointTablePlan& tp = plan.tables[best];
    plan.bytes += tp.frontier[best_to].bytes - tp.choice().bytes;
    tp.chosen = best_to;
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
  for (const double pct : opt.cuts) {
    const auto hot = static_cast<uint64_t>(std::llround(static_cast<double>(rows) * pct / 100));
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

// What a user does today, for comparison: every table under the same ratio
// (its share of the cap by fp32 bytes), the least error each can have there.
double uniform_error(const std::vector<JointTablePlan>& tables, uint64_t max_bytes, uint64_t fp32_total) {
  double sum = 0;
  for (size_t t = 0; t < tables.size(); ++t) {
    const double cap = static_cast<double>(max_bytes) * static_cast<double>(tables[t].fp32_bytes) /
                       static_cast<double>(fp32_total ? fp32_total : 1);
    const JointOption* best = &tables[t].frontier.front();  // the cheapest, when nothing fits its share
    for (const JointOption& o : tables[t].frontier)
      if (static_cast<double>(o.bytes) <= cap && o.objective < best->objective) best = &o;
    sum += tables[t].weight * tables[t].share * best->error;
  }
  return sum;
}

}  // namespace

JointPlan plan_joint(const std::vector<JointTable>& tables, const JointPlanOptions& opt) {
  JointPlan plan;
  double lookups = 0;
  for (const JointTable& jt : tables)
    lookups +=
        jt.freq.empty() ? static_cast<double>(jt.table->rows()) : std::accumulate(jt.freq.begin(), jt.freq.end(), 0.0);
  for (const JointTable& jt : tables) {
    const std::vector<uint64_t> order =
        hot_order(!jt.freq.empty() ? jt.freq : detail::digest_and_norms(*jt.table, true, io::kDefaultBlockBytes).norms);
    const std::vector<std::string> specs =
        opt.codecs.empty() ? chooser_candidates(jt.table->rows(), jt.table->dim(), opt.sample_rows) : opt.codecs;
    const TableSample s = score_sample(jt, order, opt, specs, !opt.codecs.empty());
    JointTablePlan tp;
    tp.name = jt.name;
    tp.rows = jt.table->rows();
    tp.dim = jt.table->dim();
    tp.fp32_bytes = tp.rows * tp.dim * 4;
    tp.share = (jt.freq.empty() ? static_cast<double>(tp.rows) : std::accumulate(jt.freq.begin(), jt.freq.end(), 0.0)) /
               (lookups > 0 ? lookups : 1);
    tp.weight = jt.weight;
    tp.frontier = table_options(s, order, opt);
    plan.tables.push_back(std::move(tp));
  }
  plan.cold_weight = opt.cold_weight;
  replan_joint(plan, opt.max_bytes, opt.header_bytes);
  return plan;
}

void replan_joint(JointPlan& plan, uint64_t max_bytes, uint64_t header_bytes) {
  std::vector<std::vector<size_t>> hulls;  // each front's lower convex hull, as indices into it
  uint64_t fp32_total = 0;
  plan.max_bytes = max_bytes;
  plan.bytes = 0;
  for (JointTablePlan& tp : plan.tables) {
    tp.chosen = 0;
    tp.recall.reset();
    hulls.push_back(hull_indices(tp.frontier));
    plan.bytes += tp.frontier.front().bytes;
    fp32_total += tp.fp32_bytes;
  }
  if (plan.bytes > max_bytes)
    EDO_FAIL(
        "joint plan: the cheapest option of every table takes {} bytes of data together, over the {} the "
        "budget leaves them: the smallest reachable model file is about bytes<={} (ratio {:.3g})",
        plan.bytes, max_bytes, plan.bytes + header_bytes,
        static_cast<double>(fp32_total) / static_cast<double>(plan.bytes + header_bytes));
  allocate(plan, hulls, max_bytes);
  plan.error = plan.objective = 0;
  for (const JointTablePlan& tp : plan.tables) {
    plan.error += tp.weight * tp.share * tp.choice().error;
    plan.objective += tp.weight * tp.share * tp.choice().objective;
  }
  plan.uniform_error = uniform_error(plan.tables, max_bytes, fp32_total);
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
                      {"tiers", plan_to_json(tp.choice().tiers)["tiers"]}});
    if (tp.recall) tables.back()["w.recall@10"] = *tp.recall;
  }
  return {{"max_data_bytes", plan.max_bytes},
          {"data_bytes", plan.bytes},
          {"weighted_error", plan.error},
          {"objective", plan.objective},
          {"cold_weight", plan.cold_weight},
          {"uniform_error", plan.uniform_error},
          {"tables", tables}};
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

std::string to_text(const JointPlan& plan) {
  std::string out = fmt::format(
      "  joint plan: {} of {} data bytes, access-weighted error sum s_t E_t {:.4g} (every table at the same ratio: "
      "{:.4g})\n",
      plan.bytes, plan.max_bytes, plan.error, plan.uniform_error);
  out += fmt::format("  {:<28} {:>10} {:>6} {:>7} {:>12} {:>12} {:>10} {:>9}  {}\n", "table", "rows", "dim", "share",
                     "fp32", "planned", "E_t", "w.rec@10", "tiers");
  for (const JointTablePlan& tp : plan.tables) {
    std::string tiers;
    for (const TierSpec& t : tp.choice().tiers) tiers += (tiers.empty() ? "" : " ") + format_tier_spec(t);
    out += fmt::format("  {:<28} {:>10} {:>6} {:>6.2f}% {:>12} {:>12} {:>10.4g} {:>9}  {}\n", tp.name, tp.rows, tp.dim,
                       100 * tp.share, tp.fp32_bytes, tp.choice().bytes, tp.choice().error,
                       tp.recall ? fmt::format("{:.4f}", *tp.recall) : "-", tiers);
  }
  return out;
}

}  // namespace edo
