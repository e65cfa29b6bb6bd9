// SPDX-License-Identifier: Apache-2.0
// One size budget planned jointly over several tables (edo/joint_plan.hpp):
// the bytes go to the table whose error falls fastest with them.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/joint_plan.hpp>
#include <edo/random.hpp>

#include <edo/codec.hpp>

#include <memory>
#include <optional>

using edo::test::code_of;
using edo::test::error_of;

namespace {

// Rows of values in {-1, 1}: bin (a sign a value and the mean |x|) stores them exactly, in 6 bytes a row at 16
// dimensions.
void write_signs_npy(const std::string& path, uint64_t rows, uint64_t dim, uint64_t seed) {
  edo::Rng rng(seed);
  std::vector<float> x(rows * dim);
  for (auto& v : x) v = rng.uniform() < 0.5 ? -1.0f : 1.0f;
  auto w = edo::io::create_table(path, rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
}

struct TwoTables {
  edo::test::TempDir dir;
  std::unique_ptr<edo::io::TableReader> smooth, signs;
  std::vector<edo::JointTable> tables;
  uint64_t fp32 = 0;

  TwoTables() {
    edo::test::write_random_npy(dir.file("a.npy"), 1000, 16, 1);
    write_signs_npy(dir.file("b.npy"), 1000, 16, 2);
    smooth = edo::io::open_table(dir.file("a.npy"));
    signs = edo::io::open_table(dir.file("b.npy"));
    tables = {{"smooth", smooth.get(), {}, 1}, {"signs", signs.get(), {}, 1}};
    fp32 = 2 * 1000 * 16 * 4;
  }
};

}  // namespace

TEST_CASE("joint plan: the table whose error falls with bytes gets them, the one stored exactly cheaply stays cheap") {
  TwoTables t;
  edo::JointPlanOptions opt;
  opt.max_bytes = t.fp32 / 6;
  const edo::JointPlan plan = edo::plan_joint(t.tables, opt);
  REQUIRE(plan.tables.size() == 2);
  const edo::JointTablePlan &a = plan.tables[0], &b = plan.tables[1];
  CHECK(a.share == doctest::Approx(0.5));
  CHECK(plan.bytes <= opt.max_bytes);
  CHECK(b.choice().error == doctest::Approx(0).epsilon(1e-9));
  CHECK(b.choice().bytes < a.choice().bytes);
  CHECK(a.choice().bytes + b.choice().bytes == plan.bytes);
  CHECK(b.choice().bytes == 6000);  // bin
  CHECK(a.choice().bytes > opt.max_bytes / 2);
  // The same ratio on both tables leaves the smooth one half the bytes: a larger weighted error.
  CHECK(plan.error < 0.5 * plan.same_ratio_error);
  CHECK(plan.objective == plan.error);  // no cold weight: the objective is E_t
  CHECK(plan.exact);
  // Each frontier is a Pareto front: more bytes, less error.
  for (const edo::JointTablePlan& tp : plan.tables)
    for (size_t i = 1; i < tp.frontier.size(); ++i) {
      CHECK(tp.frontier[i].bytes > tp.frontier[i - 1].bytes);
      CHECK(tp.frontier[i].error < tp.frontier[i - 1].error);
    }
}

TEST_CASE("joint plan: a table's weight moves the bytes to it, and a budget under every cheapest option fails") {
  TwoTables t;
  edo::JointPlanOptions opt;
  opt.max_bytes = t.fp32 / 4;
  opt.codecs = {"int8", "int4", "int2"};
  const edo::JointPlan even = edo::plan_joint(t.tables, opt);
  t.tables = {{"smooth", t.smooth.get(), {}, 1}, {"signs", t.signs.get(), {}, 1}};
  // Counts: the smooth table looked up 9 times as often as the signs one.
  t.tables[0].freq.assign(1000, 9.0);
  t.tables[1].freq.assign(1000, 1.0);
  const edo::JointPlan counted = edo::plan_joint(t.tables, opt);
  CHECK(counted.tables[0].share == doctest::Approx(0.9));
  CHECK(counted.tables[0].choice().bytes >= even.tables[0].choice().bytes);
  CHECK(counted.shares_by_counts);
  // Counts on one table only: a count file's scale says nothing beside a table without one, so shares go by rows.
  t.tables[1].freq.clear();
  t.tables[0].freq.assign(1000, 1e6);
  const edo::JointPlan mixed = edo::plan_joint(t.tables, opt);
  CHECK_FALSE(mixed.shares_by_counts);
  CHECK(mixed.tables[0].share == doctest::Approx(0.5));

  opt.max_bytes = 1000;
  opt.header_bytes = 500;
  CHECK(code_of([&] { edo::plan_joint(t.tables, opt); }) == edo::ExitCode::runtime);
  CHECK(error_of([&] { edo::plan_joint(t.tables, opt); }).find("smallest reachable model file is about bytes<=") !=
        std::string::npos);
  opt.codecs = {"no-such-codec"};
  CHECK(code_of([&] { edo::plan_joint(t.tables, opt); }) == edo::ExitCode::usage);
}

namespace {

// Rows near one of `kinds` random rows (noise of 1e-4): pq with 256 centroids
// a subspace stores them almost exactly in a byte a subspace, where every
// scalar codec pays bits for every value.
void write_clustered_npy(const std::string& path, uint64_t rows, uint64_t dim, uint64_t kinds, uint64_t seed) {
  edo::Rng rng(seed);
  std::vector<float> centres(kinds * dim), x(rows * dim);
  for (auto& v : centres) v = static_cast<float>(rng.uniform() * 2 - 1);
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t k = rng.below(kinds);
    for (uint64_t d = 0; d < dim; ++d)
      x[r * dim + d] = centres[k * dim + d] + static_cast<float>((rng.uniform() - 0.5) * 2e-4);
  }
  auto w = edo::io::create_table(path, rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
}

}  // namespace

TEST_CASE("joint plan: the chooser's trained candidates are scored and picked where they are on the frontier") {
  edo::test::TempDir dir;
  write_clustered_npy(dir.file("c.npy"), 3000, 32, 16, 3);
  edo::test::write_random_npy(dir.file("a.npy"), 3000, 32, 4);
  edo::test::write_random_npy(dir.file("s.npy"), 200, 32, 5);  // too few rows to train pq or rq
  const auto clustered = edo::io::open_table(dir.file("c.npy"));
  const auto smooth = edo::io::open_table(dir.file("a.npy"));
  const auto small = edo::io::open_table(dir.file("s.npy"));
  const std::vector<edo::JointTable> tables = {
      {"clustered", clustered.get(), {}, 1}, {"smooth", smooth.get(), {}, 1}, {"small", small.get(), {}, 1}};
  edo::JointPlanOptions opt;
  opt.max_bytes = (3000 + 3000 + 200) * 32 * 4 / 10;
  const edo::JointPlan plan = edo::plan_joint(tables, opt);
  REQUIRE(plan.tables.size() == 3);
  const auto codecs_of = [](const edo::JointOption& o) {
    std::string all;
    for (const edo::TierSpec& t : o.tiers) all += t.codec + " ";
    return all;
  };
  const auto trained = [](const std::string& codecs) {
    return codecs.find("pq:") != std::string::npos || codecs.find("rq:") != std::string::npos ||
           codecs.find("tc:") != std::string::npos || codecs.find("rot,") != std::string::npos;
  };
  bool frontier_has_pq = false;
  for (const edo::JointOption& o : plan.tables[0].frontier)
    frontier_has_pq = frontier_has_pq || codecs_of(o).find("pq:") != std::string::npos;
  CHECK(frontier_has_pq);
  INFO("clustered: " << codecs_of(plan.tables[0].choice()));
  CHECK(trained(codecs_of(plan.tables[0].choice())));
  CHECK(plan.tables[0].choice().error < 1e-4);
  CHECK(plan.bytes <= opt.max_bytes);
  // A trained codec's state is counted: an option's bytes are at least its codes'.
  for (const edo::JointOption& o : plan.tables[0].frontier)
    if (o.tiers.size() == 1) CHECK(o.bytes >= 3000 * edo::code_size(o.tiers[0].codec, 32));
  // pq and rq train 256 centroids: a 200-row table never gets them.
  for (const edo::JointOption& o : plan.tables[2].frontier) {
    CHECK(codecs_of(o).find("pq:") == std::string::npos);
    CHECK(codecs_of(o).find("rq:") == std::string::npos);
  }
  // A trained codec the user names for a table too small to train it: no codec left, said so.
  opt.codecs = {"pq:m=8"};
  CHECK(error_of([&] { edo::plan_joint({tables[2]}, opt); }).find("no codec of the plan's list") != std::string::npos);
}

TEST_CASE(
    "joint plan: a second allocation on the same frontiers equals a fresh plan, and says what it could not afford") {
  TwoTables t;
  edo::JointPlanOptions opt;
  opt.codecs = {"int8", "int4", "int2", "bin"};
  opt.max_bytes = t.fp32 / 8;
  edo::JointPlan plan = edo::plan_joint(t.tables, opt);
  opt.max_bytes = t.fp32 / 5;
  const edo::JointPlan fresh = edo::plan_joint(t.tables, opt);
  edo::replan_joint(plan, opt.max_bytes, 0);
  CHECK(plan.bytes == fresh.bytes);
  CHECK(plan.error == fresh.error);
  CHECK(plan.same_ratio_objective == fresh.same_ratio_objective);
  for (size_t i = 0; i < plan.tables.size(); ++i) CHECK(plan.tables[i].chosen == fresh.tables[i].chosen);
  // The cheapest move left costs more than the bytes left.
  const std::optional<edo::JointStep> step = edo::cheapest_step(plan);
  REQUIRE(step);
  CHECK(step->more_bytes > opt.max_bytes - plan.bytes);
  // With room for everything, every table takes its most precise option and no step is left.
  edo::replan_joint(plan, t.fp32, 0);
  CHECK_FALSE(edo::cheapest_step(plan));
}

TEST_CASE("joint plan: the cold weight adds the table's mean count to every row's; at 0 the objective is E_t") {
  TwoTables t;
  t.tables[0].freq = edo::test::zipf_counts(1000);
  edo::JointPlanOptions opt;
  opt.codecs = {"int8", "int4", "int2"};
  opt.max_bytes = t.fp32 / 4;
  opt.cold_weight = 0;
  const edo::JointPlan plain = edo::plan_joint(t.tables, opt);
  for (const edo::JointTablePlan& tp : plain.tables)
    for (const edo::JointOption& o : tp.frontier) CHECK(o.objective == o.error);
  CHECK(plain.objective == plain.error);
  opt.cold_weight = 1;
  const edo::JointPlan weighted = edo::plan_joint(t.tables, opt);
  CHECK(weighted.cold_weight == 1);
  // The counted table: rare rows weigh more than their counts, so the objective of a hot-slice option
  // (rare rows in the cheaper codec) exceeds its E_t; the table without counts weighs every row alike.
  bool hot_slice_seen = false;
  for (const edo::JointOption& o : weighted.tables[0].frontier)
    if (o.tiers.size() == 2) {
      hot_slice_seen = true;
      CHECK(o.objective > o.error);
    }
  CHECK(hot_slice_seen);
  for (const edo::JointOption& o : weighted.tables[1].frontier)
    CHECK(o.objective == doctest::Approx(o.error).epsilon(1e-12));
}

namespace {

// A front of `n` options: bytes rising by random steps, objective falling by
// random steps (not convex: the greedy's hull walk can miss points).
std::vector<edo::JointOption> random_front(edo::Rng& rng, size_t n) {
  std::vector<edo::JointOption> front;
  uint64_t bytes = 1 + rng.below(50);
  double objective = 1.0;
  for (size_t i = 0; i < n; ++i) {
    front.push_back({{}, bytes, objective, objective});
    bytes += 1 + rng.below(60);
    objective *= 0.3 + 0.65 * rng.uniform();
  }
  return front;
}

// The least weighted objective under `cap` by trying every combination.
double brute_force(const edo::JointPlan& plan, uint64_t cap) {
  double best = INFINITY;
  std::vector<size_t> at(plan.tables.size(), 0);
  for (;;) {
    uint64_t bytes = 0;
    double sum = 0;
    for (size_t t = 0; t < at.size(); ++t) {
      bytes += plan.tables[t].frontier[at[t]].bytes;
      sum += plan.tables[t].weight * plan.tables[t].share * plan.tables[t].frontier[at[t]].objective;
    }
    if (bytes <= cap) best = std::min(best, sum);
    size_t t = 0;
    while (t < at.size() && ++at[t] == plan.tables[t].frontier.size()) at[t++] = 0;
    if (t == at.size()) return best;
  }
}

}  // namespace

TEST_CASE(
    "joint plan: the allocation is the least objective any choice of options reaches, never above the same ratio's") {
  edo::Rng rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    edo::JointPlan plan;
    const size_t tables = 2 + rng.below(3);
    double shares = 0;
    for (size_t t = 0; t < tables; ++t) {
      edo::JointTablePlan tp;
      tp.name = "t" + std::to_string(t);
      tp.share = 0.05 + rng.uniform();
      shares += tp.share;
      tp.weight = rng.uniform() < 0.2 ? 2 : 1;
      tp.frontier = random_front(rng, 2 + rng.below(6));
      tp.fp32_bytes = tp.frontier.back().bytes + rng.below(200);
      plan.tables.push_back(std::move(tp));
    }
    for (edo::JointTablePlan& tp : plan.tables) tp.share /= shares;
    uint64_t least = 0, most = 0;
    for (const edo::JointTablePlan& tp : plan.tables) {
      least += tp.frontier.front().bytes;
      most += tp.frontier.back().bytes;
    }
    const uint64_t cap = least + rng.below(most - least + 1);
    edo::replan_joint(plan, cap, 0);
    INFO("trial " << trial << " cap " << cap);
    CHECK(plan.exact);
    CHECK(plan.bytes <= cap);
    CHECK(plan.objective == doctest::Approx(brute_force(plan, cap)).epsilon(1e-12));
    if (plan.same_ratio_bytes <= cap) CHECK(plan.objective <= plan.same_ratio_objective * (1 + 1e-12));
  }
}
