// SPDX-License-Identifier: Apache-2.0
// The codec chooser on a model (edo/model_choice.hpp).
#include <edo/model_choice.hpp>

#include <edo/error.hpp>
#include <edo/joint_plan.hpp>
#include <edo/pack.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace edo {

namespace {

// A table's scored candidates as a joint plan's front: (file bytes, 1 -
// recall), a relative error's thousandth breaking near-ties, cheapest
// first, none beaten in both; each option's one tier names its candidate.
std::vector<JointOption> candidate_front(const CodecChoice& c) {
  std::vector<JointOption> opts;
  for (const ChooserRow& r : c.candidates) {
    if (r.outcome != CandidateOutcome::tried) continue;
    const double loss = 1 - r.recall + 1e-3 * r.rel_error;
    TierSpec t;
    t.name = "all";
    t.share = ShareKind::rest;
    t.codec = r.spec;
    opts.push_back({{t}, r.file_bytes, loss, loss});
  }
  return pareto_front(std::move(opts));
}

size_t row_of(const CodecChoice& c, const std::string& spec) {
  for (size_t i = 0; i < c.candidates.size(); ++i)
    if (c.candidates[i].spec == spec) return i;
  return 0;
}

}  // namespace

ModelCodecChoice choose_model_codecs(const std::vector<JointTable>& tables, const ChooseBudget& budget,
                                     const ChooseOptions& opt) {
  ModelCodecChoice m;
  m.budget = budget;
  bool by_counts = false;
  m.shares = lookup_shares(tables, by_counts);
  for (const JointTable& t : tables) m.values += t.table->rows() * t.table->dim();
  const double model_bytes = budget.bits * static_cast<double>(m.values) / 8;
  JointPlan plan;
  for (size_t t = 0; t < tables.size(); ++t) {
    const double table_values = static_cast<double>(tables[t].table->rows() * tables[t].table->dim());
    // The whole model's bytes on this table: no candidate above that can be part of a choice.
    m.tables.push_back(score_codec_candidates(*tables[t].table, budget, opt, model_bytes * 8 / table_values));
    JointTablePlan tp;
    tp.name = tables[t].name;
    tp.rows = tables[t].table->rows();
    tp.dim = tables[t].table->dim();
    tp.fp32_bytes = tp.rows * tp.dim * 4;
    tp.share = m.shares[t];
    tp.frontier = candidate_front(m.tables.back());
    if (tp.frontier.empty())
      EDO_FAIL("{}: {}: every candidate refused the table's sample", tables[t].table->path(), budget.text);
    plan.tables.push_back(std::move(tp));
  }
  uint64_t least = 0, most = 0;
  const JointTablePlan* largest = &plan.tables.front();
  for (const JointTablePlan& tp : plan.tables) {
    least += tp.frontier.front().bytes;
    most += tp.frontier.back().bytes;
    if (tp.frontier.front().bytes > largest->frontier.front().bytes) largest = &tp;
  }
  if (budget.goal == ChooseGoal::best_recall_within_bits) {
    const auto cap = static_cast<uint64_t>(std::floor(model_bytes));
    if (least > cap)
      EDO_FAIL(
          "{}: {}: no choice fits {} bits a value over the model's {} values; the smallest is {:.3f} bits a value "
          "(each table's smallest candidate), {} taking the most ({} at {} bytes): give auto:bits={:.2f} or more",
          tables[static_cast<size_t>(largest - plan.tables.data())].table->path(), budget.text, budget.bits, m.values,
          static_cast<double>(least) * 8 / static_cast<double>(m.values), largest->name,
          largest->frontier.front().tiers.front().codec, largest->frontier.front().bytes,
          std::ceil(static_cast<double>(least) * 800 / static_cast<double>(m.values)) / 100);
    replan_joint(plan, cap, 0);
  } else {
    // The fewest bytes whose weighted loss is within 1 - R: the least cap
    // whose exact allocation reaches it, by bisection on the cap.
    const auto weighted_recall = [&] {
      double sum = 0;
      for (size_t t = 0; t < plan.tables.size(); ++t)
        sum += plan.tables[t].share *
               m.tables[t].candidates[row_of(m.tables[t], plan.tables[t].choice().tiers.front().codec)].recall;
      return sum;
    };
    replan_joint(plan, most, 0);
    if (weighted_recall() < budget.recall) {
      // The table that holds the model back most: the largest share of recall lost at its best candidate.
      size_t worst = 0;
      double worst_loss = -1, worst_recall = 0;
      for (size_t t = 0; t < plan.tables.size(); ++t) {
        const double r =
            m.tables[t].candidates[row_of(m.tables[t], plan.tables[t].choice().tiers.front().codec)].recall;
        if (plan.tables[t].share * (1 - r) > worst_loss) {
          worst_loss = plan.tables[t].share * (1 - r);
          worst = t;
          worst_recall = r;
        }
      }
      EDO_FAIL(
          "{}: {}: no choice reaches recall@{} >= {} over the model's lookups; the best is {:.4f}, table {} losing "
          "the most (recall@{} {:.4f} at its best candidate, share {:.2f}%)",
          tables[worst].table->path(), budget.text, budget.k, budget.recall, weighted_recall(), plan.tables[worst].name,
          budget.k, worst_recall, 100 * plan.tables[worst].share);
    }
    uint64_t lo = least, hi = most;
    while (lo < hi) {
      const uint64_t mid = lo + (hi - lo) / 2;
      replan_joint(plan, mid, 0);
      if (weighted_recall() >= budget.recall)
        hi = mid;
      else
        lo = mid + 1;
    }
    replan_joint(plan, hi, 0);
  }
  for (size_t t = 0; t < plan.tables.size(); ++t) {
    CodecChoice& c = m.tables[t];
    c.winner = row_of(c, plan.tables[t].choice().tiers.front().codec);
    const ChooserRow& w = c.candidates[c.winner];
    m.bytes += w.file_bytes;
    m.recall += m.shares[t] * w.recall;
    c.reason = fmt::format("the model's {}: recall@{} {:.4f} at {:.3f} bits a value on this table, its share {:.2f}%",
                           budget.text, budget.goal == ChooseGoal::best_recall_within_bits ? 10 : budget.k, w.recall,
                           w.bits, 100 * m.shares[t]);
  }
  m.bits = static_cast<double>(m.bytes) * 8 / static_cast<double>(m.values);
  m.reason = fmt::format(
      "{} over the model: {:.3f} bits a value, share-weighted recall@{} {:.4f} (by {}), exact over each table's "
      "scored candidates",
      budget.text, m.bits, budget.goal == ChooseGoal::best_recall_within_bits ? 10 : budget.k, m.recall,
      by_counts ? "counts" : "rows");
  return m;
}

std::string model_codec_choice_text(const ModelCodecChoice& m) {
  std::string out;
  size_t width = 5;
  for (const CodecChoice& c : m.tables) width = std::max(width, c.spec().size());
  for (size_t t = 0; t < m.tables.size(); ++t) {
    const CodecChoice& c = m.tables[t];
    const ChooserRow& w = c.candidates[c.winner];
    out += fmt::format("  {:<{}}  {:>8.3f} bits  recall {:.4f}  share {:6.2f}%  ({} x {}, {} candidates scored)\n",
                       c.spec(), width, w.bits, w.recall, 100 * m.shares[t], c.rows, c.dim,
                       std::count_if(c.candidates.begin(), c.candidates.end(),
                                     [](const ChooserRow& r) { return r.outcome == CandidateOutcome::tried; }));
  }
  return out + "  chosen: " + m.reason + "\n";
}

}  // namespace edo
