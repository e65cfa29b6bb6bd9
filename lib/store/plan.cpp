// The planner: candidate tier plans, cheapest first, evaluated on a seeded
// sample of rows until one meets the budget (docs/PACK.md, "Planning").
#include "pack_impl.hpp"

#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>

namespace edo {

namespace {

// A sample held in memory, read as a table by the evaluation engine.
class MatrixTable final : public io::TableReader {
 public:
  MatrixTable(std::string name, const float* data, uint64_t rows, uint64_t dim)
      : TableReader(std::move(name), "memory"), data_(data) {
    rows_ = rows;
    dim_ = dim;
  }
  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    return data_ + begin * dim_;
  }

 private:
  const float* data_;
};

struct LadderCodec {
  std::string spec;  // canonical, or a tier kind's word ("default", "zero")
  uint64_t code_size = 0;
  uint64_t state_bytes = 0;
  bool trainable = false;
  std::shared_ptr<Codec> trained;  // trainable codecs: trained on the sample, reused to decode it
};

// `rows`: the table row of each sample row, `table`: its name, for errors.
std::vector<LadderCodec> build_ladder(const PlanOptions& opt, uint64_t dim, const float* sample, uint64_t n,
                                      const uint64_t* rows, const std::string& table) {
  std::vector<std::string> specs = opt.codecs;
  if (specs.empty()) {
    specs = {"fp16", "int8", "int4", "int2"};
    for (const char* family : {"pq"}) {
      if (!find_codec(family)) continue;
      for (uint64_t div : {2, 4, 8})
        if (dim / div >= 1) specs.push_back(fmt::format("{}:m={}", family, dim / div));
    }
  }
  std::vector<LadderCodec> ladder;
  for (const std::string& s : specs) {
    LadderCodec c;
    if (tier_kind_of(s) == TierKind::shared_vector || tier_kind_of(s) == TierKind::zero) {
      c.spec = s;
      c.state_bytes = tier_kind_of(s) == TierKind::zero ? 0 : dim * sizeof(float);
    } else {
      std::unique_ptr<Codec> codec;
      try {
        codec = make_codec(s, dim);
      } catch (const Error& e) {
        if (!opt.codecs.empty()) throw;  // the user's list: report it
        continue;                        // a default setting this table cannot take
      }
      c.spec = codec->spec();
      c.code_size = codec->code_size();
      c.trainable = codec->needs_training();
      if (c.trainable) {
        // State sizes do not depend on the data: train once on the sample to learn them.
        try {
          const uint64_t train_n = std::min<uint64_t>(n, opt.train_rows);
          // Rows whose sums overflow float are named by their table row (a
          // default codec that cannot train is left out instead). Tiny rows
          // only cost recall, which the plan measures.
          EncodeOptions named;
          named.input = table;
          named.allow_underflow = true;
          check_trainable_norms(sample, train_n, dim, c.spec, named, rows);
          codec->train(sample, train_n, opt.seed);
        } catch (const Error&) {
          if (!opt.codecs.empty()) throw;
          continue;
        }
        for (const NamedBlob& b : codec->state()) c.state_bytes += b.values.size() * sizeof(float);
        c.trained = std::move(codec);
      }
    }
    if (std::none_of(ladder.begin(), ladder.end(), [&](const LadderCodec& l) { return l.spec == c.spec; }))
      ladder.push_back(c);
  }
  std::stable_sort(ladder.begin(), ladder.end(),
                   [](const LadderCodec& a, const LadderCodec& b) { return a.code_size > b.code_size; });
  if (ladder.empty()) EDO_USAGE_FAIL("plan: no codec to try");
  return ladder;
}

struct Candidate {
  std::vector<TierSpec> tiers;
  std::vector<size_t> codec;   // ladder index per tier
  std::vector<uint64_t> cuts;  // positions in the hot order, tiers + 1
  uint64_t bytes = 0, gpu_bytes = 0;
};

// Candidate plans: one tier per codec, and two or three tiers with strictly
// less precise codecs further down the hot order, cut at opt.cuts.
std::vector<Candidate> generate(const std::vector<LadderCodec>& ladder, const std::vector<double>& cut_percents) {
  const std::vector<std::string> names = {"hot", "warm", "cold"};
  std::vector<Candidate> out;
  const size_t L = ladder.size();
  auto tier = [&](size_t slot, size_t ntiers, double share, size_t c) {
    TierSpec t;
    t.name = ntiers == 1 ? "all" : names[ntiers == 2 && slot == 1 ? 2 : slot];
    t.share = slot + 1 == ntiers ? ShareKind::rest : ShareKind::rows_percent;
    t.value = slot + 1 == ntiers ? 0 : share;
    t.codec = ladder[c].spec;
    t.residency = ntiers == 1                         ? Residency::host
                  : slot == 0                         ? Residency::gpu
                  : slot + 1 == ntiers && ntiers == 3 ? Residency::disk
                                                      : Residency::host;
    return t;
  };
  for (size_t i = 0; i < L; ++i) out.push_back({{tier(0, 1, 0, i)}, {i}, {}, 0, 0});
  for (size_t i = 0; i < L; ++i)
    for (size_t j = i + 1; j < L; ++j)
      for (double a : cut_percents) out.push_back({{tier(0, 2, a, i), tier(1, 2, 0, j)}, {i, j}, {}, 0, 0});
  for (size_t i = 0; i < L; ++i)
    for (size_t j = i + 1; j < L; ++j)
      for (size_t k = j + 1; k < L; ++k)
        for (size_t a = 0; a < cut_percents.size(); ++a)
          for (size_t b = a + 1; b < cut_percents.size(); ++b)
            out.push_back(
                {{tier(0, 3, cut_percents[a], i), tier(1, 3, cut_percents[b] - cut_percents[a], j), tier(2, 3, 0, k)},
                 {i, j, k},
                 {},
                 0,
                 0});
  return out;
}

// True when `c` is nowhere more precise than `f` (ladder index >= at every position).
bool no_more_precise(const Candidate& c, const Candidate& f) {
  size_t ti = 0, fi = 0;
  uint64_t pos = 0;
  const uint64_t end = c.cuts.back();
  while (pos < end) {
    while (c.cuts[ti + 1] <= pos) ++ti;
    while (f.cuts[fi + 1] <= pos) ++fi;
    if (c.codec[ti] < f.codec[fi]) return false;
    pos = std::min(c.cuts[ti + 1], f.cuts[fi + 1]);
  }
  return true;
}

std::vector<uint64_t> ks_of(const std::vector<Gate>& budget) {
  std::vector<uint64_t> ks = {10};
  for (const Gate& g : budget) {
    const size_t at = g.metric.rfind('@');
    if (at == std::string::npos) continue;
    try {
      ks.push_back(std::stoull(g.metric.substr(at + 1)));
    } catch (const std::exception&) {
    }
  }
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

// Decodes the sample as one candidate stores it. Each codec's decoded sample
// is computed once: trainable codecs (pq, opq, pca...) train once on the
// whole sample rather than on each candidate's tier, an approximation that
// keeps planning to seconds (training per slice took minutes with PQ in the
// ladder); edo-pack trains on the tier's own rows and --eval measures the
// file it writes.
class SampleCodecs {
 public:
  SampleCodecs(const std::vector<LadderCodec>& ladder, const std::vector<float>& x, const std::vector<double>& freq,
               uint64_t dim, const PlanOptions& opt)
      : ladder_(ladder), x_(x), freq_(freq), dim_(dim), opt_(opt) {}

  // `members`: sample rows of the tier, ascending; writes their rows into y.
  void decode(size_t c, const std::vector<uint64_t>& members, float* y) {
    const LadderCodec& lc = ladder_[c];
    if (members.empty()) return;
    if (tier_kind_of(lc.spec) == TierKind::zero) {
      for (uint64_t s : members) std::fill_n(y + s * dim_, dim_, 0.0f);
      return;
    }
    if (tier_kind_of(lc.spec) == TierKind::shared_vector) {
      std::vector<double> sum(dim_, 0.0);
      double w = 0;
      double mass = 0;
      for (uint64_t s : members) mass += freq_.empty() ? 0 : freq_[s];
      for (uint64_t s : members) {
        const double ws = mass > 0 ? freq_[s] : 1.0;
        for (uint64_t j = 0; j < dim_; ++j) sum[j] += ws * x_[s * dim_ + j];
        w += ws;
      }
      for (uint64_t s : members)
        for (uint64_t j = 0; j < dim_; ++j) y[s * dim_ + j] = static_cast<float>(sum[j] / w);
      return;
    }
    auto& full = row_local_[c];
    if (full.empty()) {
      const uint64_t n = x_.size() / dim_;
      if (lc.trained) {
        full = round_trip(*lc.trained, x_.data(), n);
        for (uint64_t s : members) std::copy_n(full.data() + s * dim_, dim_, y + s * dim_);
        return;
      }
      auto codec = make_codec(lc.spec, dim_);
      if (lc.trainable) {
        const std::vector<uint64_t> pick = sample_indices(n, opt_.train_rows, opt_.seed);
        std::vector<float> train(pick.size() * dim_);
        for (size_t k = 0; k < pick.size(); ++k) std::copy_n(x_.data() + pick[k] * dim_, dim_, train.data() + k * dim_);
        codec->train(train.data(), pick.size(), opt_.seed);
      }
      full = round_trip(*codec, x_.data(), n);
    }
    for (uint64_t s : members) std::copy_n(full.data() + s * dim_, dim_, y + s * dim_);
  }

 private:
  std::vector<float> round_trip(const Codec& codec, const float* x, uint64_t n) const {
    std::vector<uint8_t> codes(n * codec.code_size());
    std::vector<float> y(n * dim_);
    EncodeOptions enc;
    enc.input = "plan sample";
    codec.encode(x, n, codes.data(), enc);
    codec.decode(codes.data(), n, y.data());
    return y;
  }

  const std::vector<LadderCodec>& ladder_;
  const std::vector<float>& x_;
  const std::vector<double>& freq_;
  uint64_t dim_;
  const PlanOptions& opt_;
  std::map<size_t, std::vector<float>> row_local_;
};

}  // namespace

namespace {

// With frequencies, a budget metric without "w." is read as its access-weighted form.
std::vector<Gate> weighted_budget(const PlanOptions& opt) {
  std::vector<Gate> budget;
  for (Gate g : opt.budget) {
    if (!opt.freq.empty() && !g.metric.starts_with("w.")) {
      g.metric = "w." + g.metric;
      g.expression = fmt::format("{} {} {}", g.metric, gate_op_text(g.op), g.threshold);
    }
    budget.push_back(g);
  }
  return budget;
}

// The seeded rows candidates are evaluated on, each with its position in the
// hot order of the whole table and its access count.
struct PlanSample {
  std::vector<uint64_t> ids;
  std::vector<float> x;
  std::vector<double> freq;
  std::vector<uint64_t> position;
};

PlanSample draw_sample(io::TableReader& table, const PlanOptions& opt, const std::vector<uint64_t>& order) {
  const uint64_t rows = table.rows(), dim = table.dim();
  std::vector<uint64_t> position(rows);
  for (uint64_t k = 0; k < rows; ++k) position[order[k]] = k;
  PlanSample s;
  s.ids = sample_indices(rows, opt.sample_rows, opt.seed);
  const uint64_t n = s.ids.size();
  s.x.resize(n * dim);
  s.position.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    table.read_f32(s.ids[i], 1, s.x.data() + i * dim);
    s.position[i] = position[s.ids[i]];
    if (!opt.freq.empty()) s.freq.push_back(opt.freq[s.ids[i]]);
  }
  if (!opt.freq.empty() && !(std::accumulate(s.freq.begin(), s.freq.end(), 0.0) > 0))
    EDO_FAIL("plan: every sampled row has frequency 0; raise --sample-rows");
  return s;
}

// Every candidate with its cuts and bytes; those within the caps, cheapest
// first (with a byte cap, most bytes first: the best under the cap wins).
std::vector<Candidate> eligible_candidates(const std::vector<LadderCodec>& ladder, const std::vector<uint64_t>& order,
                                           const PlanOptions& opt, PlanResult& res) {
  std::vector<Candidate> cands = generate(ladder, opt.cuts);
  const uint64_t rows = order.size();
  const std::vector<double> no_weights;
  for (Candidate& c : cands) {
    c.cuts = tier_cuts(c.tiers, order, no_weights);
    const size_t ntiers = c.tiers.size();
    c.bytes = ntiers > 1 ? row_map_bytes(rows, ntiers) : 0;
    for (size_t t = 0; t < ntiers; ++t) {
      const LadderCodec& lc = ladder[c.codec[t]];
      const uint64_t b = (c.cuts[t + 1] - c.cuts[t]) * lc.code_size + lc.state_bytes;
      c.bytes += b;
      if (c.tiers[t].residency == Residency::gpu) c.gpu_bytes += b;
    }
  }
  res.candidates = cands.size();
  std::vector<Candidate> eligible;
  for (Candidate& c : cands) {
    if ((opt.max_bytes && c.bytes > opt.max_bytes) || (opt.gpu_bytes && c.gpu_bytes > opt.gpu_bytes))
      ++res.over_cap;
    else
      eligible.push_back(std::move(c));
  }
  std::stable_sort(eligible.begin(), eligible.end(), [&](const Candidate& a, const Candidate& b) {
    return opt.max_bytes ? a.bytes > b.bytes : a.bytes < b.bytes;
  });
  return eligible;
}

// Evaluates candidates on the sample, skipping those no more precise than
// one that failed, and keeps the best that passes in `res`.
class CandidateSearch {
 public:
  CandidateSearch(const std::vector<Candidate>& eligible, const std::vector<LadderCodec>& ladder,
                  const PlanSample& sample, uint64_t dim, const PlanOptions& opt, PlanResult& res)
      : eligible_(eligible),
        sample_(sample),
        dim_(dim),
        opt_(opt),
        res_(res),
        codecs_(ladder, sample.x, sample.freq, dim, opt),
        original_("plan sample", sample.x.data(), sample.ids.size(), dim),
        y_(sample.x.size()),
        seen_(eligible.size(), false) {
    eo_.metric = opt.metric;
    eo_.ks = ks_of(res.budget);
    eo_.queries = opt.queries;
    eo_.seed = opt.seed;
    eo_.freq = sample.freq;
  }

  // Probes first: for each codec as the coldest, its most precise candidate.
  // A probe that fails rules out every plan no more precise than it, which in
  // practice is most of the plans that end in that codec. Then the rest,
  // cheapest first, until nothing cheaper than the best remains.
  void run(size_t ladder_size) {
    if (!opt_.max_bytes) {
      for (size_t last = ladder_size; last-- > 0;) {
        std::optional<size_t> probe;
        for (size_t i = 0; i < eligible_.size(); ++i)
          if (eligible_[i].codec.back() == last && (!probe || eligible_[i].bytes > eligible_[*probe].bytes)) probe = i;
        if (probe) try_candidate(*probe);
      }
    }
    for (size_t i = 0; i < eligible_.size(); ++i) {
      if (!opt_.max_bytes && eligible_[i].bytes >= best_bytes_) break;
      if (!seen_[i]) try_candidate(i);
    }
  }

 private:
  void try_candidate(size_t i) {
    const Candidate& c = eligible_[i];
    seen_[i] = true;
    if (opt_.progress) opt_.progress(++done_, eligible_.size());
    if (std::any_of(failed_.begin(), failed_.end(), [&](const Candidate* f) { return no_more_precise(c, *f); })) {
      ++res_.dominated;
      return;
    }
    PlanCandidate pc;
    pc.tiers = c.tiers;
    pc.bytes = c.bytes;
    pc.gpu_bytes = c.gpu_bytes;
    try {
      evaluate_candidate(c, pc);
    } catch (const Error& e) {
      if (e.code() == ExitCode::usage) throw;  // a budget naming an unknown metric
      pc.error = e.what();
    }
    res_.tried.push_back(std::move(pc));
  }

  void evaluate_candidate(const Candidate& c, PlanCandidate& pc) {
    const uint64_t n = sample_.ids.size();
    std::vector<std::vector<uint64_t>> members(c.tiers.size());
    for (uint64_t s = 0; s < n; ++s)
      members[static_cast<size_t>(std::upper_bound(c.cuts.begin(), c.cuts.end(), sample_.position[s]) - c.cuts.begin() -
                                  1)]
          .push_back(s);
    for (size_t t = 0; t < c.tiers.size(); ++t) codecs_.decode(c.codec[t], members[t], y_.data());
    MatrixTable decoded("plan candidate", y_.data(), n, dim_);
    const EvalResult r = evaluate(original_, decoded, eo_);
    const std::vector<GateOutcome> outcomes = check_gates(res_.budget, r);
    pc.evaluated = true;
    pc.passed = all_passed(outcomes);
    double margin = HUGE_VAL;
    for (const GateOutcome& o : outcomes) {
      pc.metrics.emplace_back(o.gate.metric, o.value);
      margin = std::min(margin, o.margin);
    }
    if (!pc.passed) failed_.push_back(&c);
    const bool better = opt_.max_bytes ? margin > best_margin_ : c.bytes < best_bytes_;
    if (pc.passed && (res_.chosen < 0 || better)) {
      res_.chosen = static_cast<int>(res_.tried.size());
      best_margin_ = margin;
      best_bytes_ = c.bytes;
    }
  }

  const std::vector<Candidate>& eligible_;
  const PlanSample& sample_;
  uint64_t dim_;
  const PlanOptions& opt_;
  PlanResult& res_;
  SampleCodecs codecs_;
  MatrixTable original_;
  EvalOptions eo_;
  std::vector<float> y_;
  std::vector<const Candidate*> failed_;
  std::vector<bool> seen_;
  double best_margin_ = -HUGE_VAL;
  uint64_t best_bytes_ = UINT64_MAX;
  uint64_t done_ = 0;
};

}  // namespace

PlanResult plan_tiers(io::TableReader& table, const PlanOptions& opt) {
  const uint64_t rows = table.rows(), dim = table.dim();
  if (opt.budget.empty()) EDO_USAGE_FAIL("plan: no budget given (e.g. --budget 'recall@10>=0.98')");
  if (!opt.freq.empty() && opt.freq.size() != rows)
    EDO_USAGE_FAIL("plan: {} frequencies for {} rows of {}", opt.freq.size(), rows, table.path());
  if (rows < 2) EDO_USAGE_FAIL("{}: planning needs at least 2 rows", table.path());
  PlanResult res;
  res.rows = rows;
  res.dim = dim;
  res.fp32_bytes = rows * dim * 4;
  res.order = opt.freq.empty() ? "norm" : "frequency";
  res.budget = weighted_budget(opt);
  const std::vector<uint64_t> order =
      hot_order(opt.freq.empty() ? detail::digest_and_norms(table, true, io::kDefaultBlockBytes).norms : opt.freq);
  const PlanSample sample = draw_sample(table, opt, order);
  res.sample_rows = sample.ids.size();
  const std::vector<LadderCodec> ladder =
      build_ladder(opt, dim, sample.x.data(), sample.ids.size(), sample.ids.data(), table.path());
  const std::vector<Candidate> eligible = eligible_candidates(ladder, order, opt, res);
  CandidateSearch(eligible, ladder, sample, dim, opt, res).run(ladder.size());
  return res;
}

nlohmann::json plan_config(const PlanResult& plan) {
  if (plan.chosen < 0) EDO_FAIL("plan: no candidate met the budget");
  const PlanCandidate& c = plan.tried[static_cast<size_t>(plan.chosen)];
  nlohmann::json j = plan_to_json(c.tiers);
  nlohmann::json budget = nlohmann::json::array();
  for (const Gate& g : plan.budget) budget.push_back(g.expression);
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : c.metrics) metrics[name] = value;
  j["budget"] = budget;
  j["estimate"] = {{"bytes", c.bytes},
                   {"gpu_bytes", c.gpu_bytes},
                   {"fp32_bytes", plan.fp32_bytes},
                   {"data_ratio", static_cast<double>(plan.fp32_bytes) / static_cast<double>(c.bytes)},
                   {"sample_rows", plan.sample_rows},
                   {"row_order", plan.order},
                   {"metrics", metrics}};
  return j;
}

nlohmann::json to_json(const PlanResult& plan) {
  nlohmann::json tried = nlohmann::json::array();
  for (const PlanCandidate& c : plan.tried) {
    nlohmann::json specs = nlohmann::json::array();
    for (const TierSpec& t : c.tiers) specs.push_back(format_tier_spec(t));
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [name, value] : c.metrics)
      metrics[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
    nlohmann::json jc = {
        {"tiers", specs}, {"bytes", c.bytes}, {"gpu_bytes", c.gpu_bytes}, {"passed", c.passed}, {"metrics", metrics}};
    if (!c.error.empty()) jc["error"] = c.error;
    tried.push_back(jc);
  }
  nlohmann::json budget = nlohmann::json::array();
  for (const Gate& g : plan.budget) budget.push_back(g.expression);
  nlohmann::json j = {{"row_order", plan.order},
                      {"rows", plan.rows},
                      {"dim", plan.dim},
                      {"fp32_bytes", plan.fp32_bytes},
                      {"sample_rows", plan.sample_rows},
                      {"budget", budget},
                      {"candidates", plan.candidates},
                      {"over_cap", plan.over_cap},
                      {"dominated", plan.dominated},
                      {"tried", tried}};
  j["chosen"] = plan.chosen >= 0 ? nlohmann::json(plan.chosen) : nlohmann::json();
  if (plan.chosen >= 0) j["config"] = plan_config(plan);
  return j;
}

std::string to_text(const PlanResult& plan) {
  std::string budget;
  for (const Gate& g : plan.budget) budget += (budget.empty() ? "" : ", ") + g.expression;
  std::string out = fmt::format(
      "plan: {} candidate plans, rows ordered by {}{}; evaluated on a {}-row seeded sample\n"
      "  budget: {}\n",
      plan.candidates, plan.order, plan.order == "norm" ? " (no --freq: row L2 norm is the proxy for access)" : "",
      plan.sample_rows, budget);
  out += fmt::format("  {:>3}  {:>12}  {:>6}  {:>6}  {:>10}  {:<4}  {}\n", "#", "bytes", "data x", "gpu%", "value",
                     "pass", "tiers");
  const double fp32 = static_cast<double>(plan.fp32_bytes);
  for (size_t i = 0; i < plan.tried.size(); ++i) {
    const PlanCandidate& c = plan.tried[i];
    std::string tiers;
    for (const TierSpec& t : c.tiers) tiers += (tiers.empty() ? "" : " ") + format_tier_spec(t);
    const std::string value = c.metrics.empty() ? "-" : fmt::format("{:.4f}", c.metrics.front().second);
    out += fmt::format("  {:>3}  {:>12}  {:>5.2f}x  {:>5.1f}%  {:>10}  {:<4}  {}{}\n", i + 1, c.bytes,
                       fp32 / static_cast<double>(c.bytes), 100.0 * static_cast<double>(c.gpu_bytes) / fp32, value,
                       !c.error.empty() ? "err"
                       : c.passed       ? "yes"
                                        : "no",
                       tiers, c.error.empty() ? "" : "  (" + c.error + ")");
  }
  out += fmt::format("  skipped: {} no more precise than a plan that failed, {} over the byte caps\n", plan.dominated,
                     plan.over_cap);
  if (plan.chosen < 0) {
    out += "  chosen: none met the budget\n";
  } else {
    const PlanCandidate& c = plan.tried[static_cast<size_t>(plan.chosen)];
    out +=
        fmt::format("  chosen: #{}: {} bytes ({:.2f}x smaller than fp32, GPU part {:.1f}% of fp32)\n", plan.chosen + 1,
                    c.bytes, fp32 / static_cast<double>(c.bytes), 100.0 * static_cast<double>(c.gpu_bytes) / fp32);
    for (const TierSpec& t : c.tiers) out += "    --tier " + format_tier_spec(t) + "\n";
  }
  return out;
}

}  // namespace edo
