// SPDX-License-Identifier: Apache-2.0
// The codec chooser behind `--codec auto:...` (edo/codec_chooser.hpp).
#include <edo/codec_chooser.hpp>

#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/memory_table.hpp>
#include <edo/io/table.hpp>
#include <edo/make_codec.hpp>
#include <edo/random.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>

namespace edo {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::optional<double> parse_number(std::string_view text) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

[[noreturn]] void fail_budget_count(const std::string& text) {
  EDO_USAGE_FAIL(
      "--codec {}: give one budget: auto:bits=B (best recall@10 within B bits a value) or auto:recall=R (fewest "
      "bytes with recall@10 >= R)",
      text);
}

}  // namespace

bool is_auto_spec(std::string_view spec) { return spec == "auto" || spec.starts_with("auto:"); }

ChooseBudget parse_auto_spec(std::string_view spec) {
  const std::string text(spec);
  if (spec == "auto" || spec == "auto:") fail_budget_count(text);
  const std::vector<SpecStage> stages = parse_spec(spec);
  if (stages.size() != 1 || stages[0].name != "auto")
    EDO_USAGE_FAIL("--codec {}: auto takes one budget, auto:bits=B or auto:recall=R[,k=K]", text);
  ChooseBudget b;
  b.text = text;
  bool bits = false, recall = false, k = false;
  for (const SpecParam& p : stages[0].params) {
    const std::optional<double> v = parse_number(p.value);
    if (p.key == "bits" && v && !bits) {
      if (*v < 1)
        EDO_USAGE_FAIL("--codec {}: a bits budget is at least 1 bit a value (bin's 1 bit and its scale)", text);
      b.bits = *v;
      bits = true;
    } else if (p.key == "recall" && v && !recall) {
      if (!(*v > 0 && *v <= 1)) EDO_USAGE_FAIL("--codec {}: a recall budget is in (0, 1]", text);
      b.recall = *v;
      recall = true;
    } else if (p.key == "k" && v && !k && *v >= 1 && *v == std::floor(*v) && *v <= 1e6) {
      b.k = static_cast<uint64_t>(*v);
      k = true;
    } else {
      EDO_USAGE_FAIL("--codec {}: '{}{}{}' is not bits=B, recall=R or k=K (each once, numbers)", text, p.key,
                     p.key.empty() ? "" : "=", p.value);
    }
  }
  if (bits == recall) fail_budget_count(text);
  if (bits && k) EDO_USAGE_FAIL("--codec {}: k goes with a recall budget (auto:recall=R,k=K)", text);
  b.goal = bits ? ChooseGoal::best_recall_within_bits : ChooseGoal::fewest_bytes_reaching;
  return b;
}

uint64_t codec_state_bytes(std::string_view spec, uint64_t dim) {
  const std::vector<SpecStage> stages = parse_spec(canonical_spec(spec, dim));
  uint64_t bytes = 0, width = dim;
  for (const SpecStage& s : stages) {
    const CodecTraits* t = find_codec(s.name);
    if (t && t->state_bytes) bytes += t->state_bytes(s, width);
    if (t && t->transform) width = t->output_dim(s, width);
  }
  return bytes;
}

uint64_t chosen_file_bytes(std::string_view spec, uint64_t rows, uint64_t dim) {
  return rows * code_size(spec, dim) + codec_state_bytes(spec, dim) + kContainerAllowanceBytes;
}

std::vector<std::string> chooser_candidates(uint64_t rows, uint64_t dim, uint64_t sample_rows) {
  const uint64_t n = std::min(rows, sample_rows);
  // Scalar and grouped codecs (fp16 scales from 3 bits up; int4 in groups
  // of 128 and 64 as llama.cpp's Q4_0 is in 32; int8 in groups of 64 and 32,
  // Q8_0's: on a transformer token table int8:group=64,scale=fp16 reached
  // recall@10 0.9953 at 8.5 bits where the pick without it had 0.9941), their rotated forms where a
  // random rotation pays (GloVe, docs/BENCHMARKS.md), and tc, the frontier
  // from 3.5 to 8.5 bits on GloVe and BIGANN, in quarter bits around 4.5
  // (a 256-wide token table: tc:bits=4.25 0.953 at 4.45 bits, the next
  // candidate under 4.5 bits 0.944), and from 1 bit on the recommender
  // tables of scripts/make_models.py (tc:bits=1 for every table of the
  // Criteo-like model at 20.8x: recall@10 0.89, the joint plan's pq and rq
  // cold tiers 0.76 at 16x; docs/BENCHMARKS.md, "Joint budget").
  std::vector<std::string> specs = {"bin",
                                    "int2",
                                    "int3",
                                    "int3:scale=fp16",
                                    "int4:scale=fp16",
                                    "int4:group=128,scale=fp16",
                                    "int4:group=64,scale=fp16",
                                    "int4:group=32,scale=fp16",
                                    "int5:scale=fp16",
                                    "int5:group=32,scale=fp16",
                                    "int6:scale=fp16",
                                    "int8:scale=fp16",
                                    "int8:group=64,scale=fp16",
                                    "int8:group=32,scale=fp16",
                                    "int8",
                                    "fp8:e4m3",
                                    "fp16"};
  // tc and rot cost d^2 flops a row each way and a d x d fit: about 3e9
  // on the sample is seconds.
  if (n * dim * dim <= 3'000'000'000ull) {
    for (const char* s : {"rot,int3:scale=fp16", "rot,int4:scale=fp16", "rot,int5:scale=fp16", "rot,int6:scale=fp16",
                          "rot,int8:scale=fp16"})
      specs.emplace_back(s);
    for (const char* b : {"1", "1.5", "2", "2.5", "3", "3.5", "4", "4.25", "4.5", "4.75", "5", "5.5", "6", "7", "8"})
      specs.push_back(fmt::format("tc:bits={}", b));
  }
  // pq at 1, 1.5, 2, 3 and 4 bits a value (the steps between tc's, whose
  // d x d state a narrow table pays in full: without them a joint plan's
  // table jumps from 1 bit to 2 and its neighbours take the bytes between)
  // and rq at 8 and 16 levels, int8 codebooks
  // (a quarter of fp32's state at the same recall); rq in its fast training
  // (half the time for a little recall) and only where that (levels x width
  // x rows) stays within seconds: it is the frontier under 4 bits a value on
  // narrow tables, and at 10,000 x 128 its two trials took 3x all the others.
  for (const double bits : {1.0, 1.5, 2.0, 3.0, 4.0}) {
    const auto m = static_cast<uint64_t>(std::llround(bits * static_cast<double>(dim) / 8));
    if (m >= 1 && m <= dim && n >= 256) specs.push_back(fmt::format("pq:m={},codebooks=int8", m));
  }
  for (uint64_t m : {8, 16})
    if (n >= 256 && m * dim * n <= 10'000'000ull)
      specs.push_back(fmt::format("rq:m={},beam=4,train_beam=1,refine=1,codebooks=int8", m));
  std::vector<std::string> out;
  for (const std::string& s : specs) {
    try {
      const std::string c = canonical_spec(s, dim);
      if (std::find(out.begin(), out.end(), c) == out.end()) out.push_back(c);
    } catch (const Error&) {  // a spelling this width cannot take
    }
  }
  return out;
}

double recall_tie_window(double p, double found) {
  p = std::clamp(p, 0.0, 1.0);
  return std::max(kRecallTie, 2 * std::sqrt(p * (1 - p) / std::max(found, 1.0)));
}

uint64_t least_code_bytes(const std::vector<std::string>& specs, uint64_t rows, uint64_t dim) {
  uint64_t least = UINT64_MAX;
  for (const std::string& s : specs) least = std::min<uint64_t>(least, rows * code_size(s, dim));
  return least;
}

const char* candidate_outcome_name(CandidateOutcome o) {
  switch (o) {
    case CandidateOutcome::over_budget:
      return "over budget";
    case CandidateOutcome::tried:
      return "tried";
    case CandidateOutcome::refused:
      return "refused";
    case CandidateOutcome::larger_not_run:
      return "not run";
  }
  return "?";
}

namespace {

// The sample, its fp32 neighbours (filled by the first trial) and the
// options every trial shares.
struct Trial {
  const ChooseOptions& opt;
  io::TableReader* table;
  std::string input;
  std::vector<uint64_t> ids;
  std::vector<float> x;
  uint64_t dim = 0;
  EvalOptions eval;
  KnnResult truth;

  // Trains, encodes, decodes and scores one candidate on the sample.
  void run(ChooserRow& row) {
    const auto t0 = Clock::now();
    const uint64_t n = ids.size();
    EncodeOptions enc;
    enc.allow_nonfinite = opt.allow_nonfinite;
    enc.allow_underflow = opt.allow_underflow;
    enc.input = input;
    enc.row_ids = ids.data();
    try {
      std::unique_ptr<Codec> codec = make_codec(row.spec, dim);
      if (codec->needs_training()) {
        check_trainable_norms(x.data(), n, dim, row.spec, enc, ids.data());
        codec->train(x.data(), n, opt.seed);
        uint64_t state = 0;
        for (const NamedBlob& b : codec->state()) state += state_stored_bytes(b);
        if (state != row.state_bytes)
          EDO_FAIL("{}: its trained state is {} bytes where the chooser sized it at {} (a bug in edo)", row.spec, state,
                   row.state_bytes);
      }
      std::vector<uint8_t> codes(n * codec->code_size());
      std::vector<float> y(n * dim);
      codec->encode(x.data(), n, codes.data(), enc);
      codec->decode(codes.data(), n, y.data());
      check_magnitudes(*codec, x.data(), y.data(), n, enc, ids.data());
      io::MemoryTable original(input, {x.data(), n, dim}), decoded(row.spec, {y.data(), n, dim});
      const EvalResult scored = evaluate(original, decoded, eval, &truth);
      row.recall = scored.at(fmt::format("recall@{}", eval.ks[0]));
      row.rel_error = scored.at("rel_fro");
      row.outcome = CandidateOutcome::tried;
    } catch (const Error& e) {
      if (e.code() == ExitCode::usage && !opt.candidates.empty()) throw;
      row.outcome = CandidateOutcome::refused;
      row.why = e.what();
    }
    row.seconds = seconds_since(t0);
  }
};

Trial draw_trial(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt) {
  Trial t{opt, &table, table.path(), sample_indices(table.rows(), opt.sample_rows, opt.seed), {}, table.dim(), {}, {}};
  // recall@k of the sample's rows finds every row once k reaches them: any candidate would pass.
  if (opt.refuse_k_beyond_rows && budget.goal != ChooseGoal::best_recall_within_bits && budget.k >= t.ids.size())
    EDO_USAGE_FAIL(
        "{}: auto:{}: k={} is not below the {} rows the candidates are scored on (every row would "
        "count as found); give a smaller k",
        table.path(), budget.text, budget.k, t.ids.size());
  t.x.resize(t.ids.size() * t.dim);
  for (size_t i = 0; i < t.ids.size(); ++i) table.read_f32(t.ids[i], 1, t.x.data() + i * t.dim);
  t.eval.metric = opt.metric;
  t.eval.ks = {budget.goal == ChooseGoal::best_recall_within_bits ? uint64_t{10} : budget.k};
  t.eval.queries = opt.queries;
  t.eval.seed = opt.seed;
  t.eval.bags = 0;
  t.eval.dot_pairs = 0;
  t.eval.device = opt.device;
  return t;
}

// Candidate rows sized for the whole table, smallest file first.
std::vector<ChooserRow> sized_candidates(uint64_t rows, uint64_t dim, const ChooseOptions& opt) {
  std::vector<std::string> specs = opt.candidates;
  if (specs.empty()) specs = chooser_candidates(rows, dim, opt.sample_rows);
  std::vector<ChooserRow> out;
  for (const std::string& s : specs) {
    ChooserRow r;
    r.spec = canonical_spec(s, dim);
    r.state_bytes = codec_state_bytes(r.spec, dim);
    r.file_bytes = chosen_file_bytes(r.spec, rows, dim);
    r.bits = static_cast<double>(r.file_bytes) * 8.0 / static_cast<double>(rows * dim);
    out.push_back(std::move(r));
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.file_bytes < b.file_bytes; });
  return out;
}

void note(const ChooseOptions& opt, const std::string& line) {
  if (opt.note) opt.note(line);
}

// The first refusal's message, when every tried candidate was refused.
[[noreturn]] void fail_all_refused(const CodecChoice& c, const std::string& path) {
  for (const ChooserRow& r : c.candidates)
    if (r.outcome == CandidateOutcome::refused)
      EDO_FAIL("{}: {}: every candidate refused the sample's rows; {}: {}", path, c.budget.text, r.spec, r.why);
  EDO_FAIL("{}: {}: no candidate was tried", path, c.budget.text);
}

// The winner among the tried candidates `fit` (smallest file first): the
// best recall, a tie within kRecallTie going to the smaller relative error.
size_t pick_within_bits(const std::vector<ChooserRow>& rows, const std::vector<size_t>& fit) {
  double top = -1;
  for (size_t i : fit)
    if (rows[i].outcome == CandidateOutcome::tried) top = std::max(top, rows[i].recall);
  std::optional<size_t> best;
  for (size_t i : fit)
    if (rows[i].outcome == CandidateOutcome::tried && rows[i].recall >= top - kRecallTie &&
        (!best || rows[i].rel_error < rows[*best].rel_error))
      best = i;
  return *best;
}

// Candidates within the sample's confidence interval of the best recall
// (two standard errors of a recall@10 over its queries' 10 neighbours each,
// at least kRecallTie) are told apart on a sample four times larger (the
// whole table when that is fewer rows) with four times the queries: the best
// recall there wins, a tie within half kRecallTie going to the smaller
// relative error.
void rescore_ties(CodecChoice& c, Trial& trial, const std::vector<size_t>& fit) {
  double best = -1;
  for (size_t i : fit)
    if (c.candidates[i].outcome == CandidateOutcome::tried) best = std::max(best, c.candidates[i].recall);
  c.tie_window = recall_tie_window(best, static_cast<double>(c.queries) * 10);
  std::vector<size_t> tied;
  for (size_t i : fit)
    if (c.candidates[i].outcome == CandidateOutcome::tried && c.candidates[i].recall >= best - c.tie_window)
      tied.push_back(i);
  if (tied.size() < 2) return;
  ChooseOptions larger = trial.opt;
  larger.sample_rows = trial.opt.sample_rows * 4;
  larger.queries = trial.opt.queries * 4;
  Trial wide = draw_trial(*trial.table, c.budget, larger);
  for (size_t i : tied) {
    ChooserRow copy = c.candidates[i];
    wide.run(copy);
    ChooserRow& r = c.candidates[i];
    r.rescored = copy.outcome == CandidateOutcome::tried;
    r.rescore_recall = copy.recall;
    r.rescore_rel_error = copy.rel_error;
  }
  double wide_top = -1;
  for (size_t i : tied)
    if (c.candidates[i].rescored) wide_top = std::max(wide_top, c.candidates[i].rescore_recall);
  std::optional<size_t> pick;
  for (size_t i : tied)
    if (c.candidates[i].rescored && c.candidates[i].rescore_recall >= wide_top - kRecallTie / 2 &&
        (!pick || c.candidates[i].rescore_rel_error < c.candidates[*pick].rescore_rel_error))
      pick = i;
  if (pick) c.winner = *pick;
  c.rescored_rows = wide.ids.size();
}

void choose_within_bits(CodecChoice& c, Trial& trial, const std::string& path) {
  std::vector<size_t> fit;
  bool any = false;
  for (size_t i = 0; i < c.candidates.size(); ++i)
    if (c.candidates[i].bits <= c.budget.bits) fit.push_back(i);
  for (size_t n = 0; n < fit.size(); ++n) {
    ChooserRow& r = c.candidates[fit[n]];
    note(trial.opt, fmt::format("trying {} ({}/{}, {:.3f} bits a value)", r.spec, n + 1, fit.size(), r.bits));
    trial.run(r);
    any = any || r.outcome == CandidateOutcome::tried;
  }
  if (!any) fail_all_refused(c, path);
  c.winner = pick_within_bits(c.candidates, fit);
  rescore_ties(c, trial, fit);
  const ChooserRow& w = c.candidates[c.winner];
  std::optional<size_t> other;  // the best recall but the winner's
  for (size_t i : fit)
    if (i != c.winner && c.candidates[i].outcome == CandidateOutcome::tried &&
        (!other || c.candidates[i].recall > c.candidates[*other].recall))
      other = i;
  c.reason = fmt::format("the best recall@10 ({:.4f}) of the {} candidates within {} bits a value", w.recall,
                         fit.size(), c.budget.bits);
  if (!other) return;
  const ChooserRow& o = c.candidates[*other];
  if (w.rescored) {
    c.reason = fmt::format(
        "recall@10 {:.4f} on a {}-row sample, the best of the {} candidates within {:.4f} (the first sample's "
        "confidence interval) of its best recall ({:.4f}), scored again there; among the {} candidates within {} "
        "bits a value",
        w.rescore_recall, c.rescored_rows,
        std::count_if(c.candidates.begin(), c.candidates.end(), [](const ChooserRow& r) { return r.rescored; }),
        c.tie_window, std::max(w.recall, o.recall), fit.size(), c.budget.bits);
    return;
  }
  if (o.recall > w.recall)
    c.reason = fmt::format(
        "recall@10 {:.4f}, within {} of the best ({}, {:.4f}: a tie on this sample) with less relative error "
        "({:.5f} against {:.5f}), among the {} candidates within {} bits a value",
        w.recall, kRecallTie, o.spec, o.recall, w.rel_error, o.rel_error, fit.size(), c.budget.bits);
  else
    c.reason += fmt::format("; the next best, {}, {:.4f} at {:.3f} bits", o.spec, o.recall, o.bits);
}

void choose_reaching_recall(CodecChoice& c, Trial& trial, const std::string& path) {
  std::optional<size_t> best;
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    ChooserRow& r = c.candidates[i];
    if (best && r.file_bytes > c.candidates[*best].file_bytes) {
      r.outcome = CandidateOutcome::larger_not_run;
      continue;
    }
    note(trial.opt, fmt::format("trying {} ({}/{}, {:.3f} bits a value)", r.spec, i + 1, c.candidates.size(), r.bits));
    trial.run(r);
    if (r.outcome == CandidateOutcome::tried && r.recall >= c.budget.recall &&
        (!best || r.recall > c.candidates[*best].recall))
      best = i;
  }
  const std::string metric = fmt::format("recall@{}", c.budget.k);
  if (!best) {
    std::optional<size_t> top;
    for (size_t i = 0; i < c.candidates.size(); ++i)
      if (c.candidates[i].outcome == CandidateOutcome::tried &&
          (!top || c.candidates[i].recall > c.candidates[*top].recall))
        top = i;
    if (!top) fail_all_refused(c, path);
    EDO_FAIL("{}: {}: no candidate reaches {} >= {} on a {}-row sample; the best is {} at {:.4f}", path, c.budget.text,
             metric, c.budget.recall, c.sample_rows, c.candidates[*top].spec, c.candidates[*top].recall);
  }
  c.winner = *best;
  const ChooserRow& w = c.candidates[c.winner];
  double below = -1;
  size_t smaller = 0;
  for (const ChooserRow& r : c.candidates)
    if (r.file_bytes < w.file_bytes && r.outcome == CandidateOutcome::tried) {
      below = std::max(below, r.recall);
      ++smaller;
    }
  c.reason = fmt::format("the smallest file with {} >= {} on the sample ({:.4f} at {:.3f} bits a value)", metric,
                         c.budget.recall, w.recall, w.bits);
  if (smaller > 0) c.reason += fmt::format("; the {} smaller candidates reach at most {:.4f}", smaller, below);
}

// A choice with its candidates sized for `table`, none scored yet.
CodecChoice sized_choice(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt) {
  if (table.rows() < 2)
    EDO_FAIL("{}: {}: the chooser needs at least 2 rows to score neighbours", table.path(), budget.text);
  CodecChoice c;
  c.budget = budget;
  c.rows = table.rows();
  c.dim = table.dim();
  c.metric = opt.metric;
  c.candidates = sized_candidates(c.rows, c.dim, opt);
  if (c.candidates.empty()) EDO_FAIL("{}: {}: no candidate codec takes {} columns", table.path(), budget.text, c.dim);
  return c;
}

}  // namespace

CodecChoice choose_codec(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt) {
  const auto t0 = Clock::now();
  CodecChoice c = sized_choice(table, budget, opt);  // the budget filters these before any trial
  if (budget.goal == ChooseGoal::best_recall_within_bits && c.candidates.front().bits > budget.bits)
    EDO_FAIL("{}: {}: no candidate fits {} bits a value on {} x {} rows; the smallest is {} at {:.3f}", table.path(),
             budget.text, budget.bits, c.rows, c.dim, c.candidates.front().spec, c.candidates.front().bits);
  Trial trial = draw_trial(table, budget, opt);
  c.sample_rows = trial.ids.size();
  c.queries = std::min(opt.queries, c.sample_rows);
  if (budget.goal == ChooseGoal::best_recall_within_bits)
    choose_within_bits(c, trial, table.path());
  else
    choose_reaching_recall(c, trial, table.path());
  c.seconds = seconds_since(t0);
  return c;
}

CodecChoice score_codec_candidates(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt,
                                   double max_bits) {
  const auto t0 = Clock::now();
  CodecChoice c = sized_choice(table, budget, opt);
  Trial trial = draw_trial(table, budget, opt);
  c.sample_rows = trial.ids.size();
  c.queries = std::min(opt.queries, c.sample_rows);
  const bool bits = budget.goal == ChooseGoal::best_recall_within_bits;
  size_t n = 0;
  for (ChooserRow& r : c.candidates) {
    ++n;
    if (bits && r.bits > max_bits && n > 1) continue;  // the smallest always: what the model's floor needs
    note(opt, fmt::format("trying {} ({}/{}, {:.3f} bits a value)", r.spec, n, c.candidates.size(), r.bits));
    trial.run(r);
    if (!bits && r.outcome == CandidateOutcome::tried && r.recall >= budget.recall) break;
  }
  for (ChooserRow& r : c.candidates)
    if (!bits && r.outcome == CandidateOutcome::over_budget) r.outcome = CandidateOutcome::larger_not_run;
  c.seconds = seconds_since(t0);
  return c;
}

std::string codec_choice_text(const CodecChoice& c) {
  const uint64_t k = c.budget.goal == ChooseGoal::best_recall_within_bits ? 10 : c.budget.k;
  std::string out = fmt::format(
      "{}: {} x {}, {} recall@{} of {} query rows of a {}-row sample, bits a value of the whole file (codes, "
      "state, {} bytes of container)\n",
      c.budget.text, c.rows, c.dim, metric_name(c.metric), k, c.queries, c.sample_rows, kContainerAllowanceBytes);
  size_t width = 4;
  for (const ChooserRow& r : c.candidates) width = std::max(width, r.spec.size());
  out += fmt::format("{:<{}}  {:>10}  {:>9}  {:>9}  {:>8}  {}\n", "spec", width, "bits/value",
                     fmt::format("recall@{}", k), "rel.error", "seconds", "outcome");
  for (size_t i = 0; i < c.candidates.size(); ++i) {
    const ChooserRow& r = c.candidates[i];
    const bool scored = r.outcome == CandidateOutcome::tried;
    std::string outcome = i == c.winner ? "chosen" : candidate_outcome_name(r.outcome);
    if (r.outcome == CandidateOutcome::refused) outcome += ": " + r.why;
    if (r.rescored)
      outcome += fmt::format(" (a near-tie: rescored on {} rows, recall {:.4f}, rel.error {:.5f})", c.rescored_rows,
                             r.rescore_recall, r.rescore_rel_error);
    out +=
        fmt::format("{:<{}}  {:>10.3f}  {:>9}  {:>9}  {:>8}  {}\n", r.spec, width, r.bits,
                    scored ? fmt::format("{:.4f}", r.recall) : "-", scored ? fmt::format("{:.5f}", r.rel_error) : "-",
                    r.outcome == CandidateOutcome::tried || r.outcome == CandidateOutcome::refused
                        ? fmt::format("{:.2f}", r.seconds)
                        : "-",
                    outcome);
  }
  out += fmt::format("chosen: {}: {} ({:.1f} s)\n", c.spec(), c.reason, c.seconds);
  return out;
}

nlohmann::json codec_choice_json(const CodecChoice& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const ChooserRow& r : c.candidates) {
    nlohmann::json j = {{"spec", r.spec},
                        {"bits_per_value", r.bits},
                        {"file_bytes", r.file_bytes},
                        {"state_bytes", r.state_bytes},
                        {"outcome", candidate_outcome_name(r.outcome)}};
    if (r.outcome == CandidateOutcome::tried) {
      j["recall"] = r.recall;
      j["rel_error"] = r.rel_error;
    }
    if (r.outcome == CandidateOutcome::tried || r.outcome == CandidateOutcome::refused) j["seconds"] = r.seconds;
    if (!r.why.empty()) j["why"] = r.why;
    if (r.rescored) j["rescored"] = {{"recall", r.rescore_recall}, {"rel_error", r.rescore_rel_error}};
    rows.push_back(std::move(j));
  }
  return {{"budget", c.budget.text},
          {"chosen", c.spec()},
          {"reason", c.reason},
          {"metric", metric_name(c.metric)},
          {"k", c.budget.goal == ChooseGoal::best_recall_within_bits ? 10 : c.budget.k},
          {"sample_rows", c.sample_rows},
          {"queries", c.queries},
          {"seconds", c.seconds},
          {"rescored_rows", c.rescored_rows},
          {"candidates", rows}};
}

}  // namespace edo
