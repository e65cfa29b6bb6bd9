// SPDX-License-Identifier: Apache-2.0
// The planner's sparse tiers and dropped-row fallbacks (centroids, nearest,
// zero, default) as ladder entries: plans that pack, sparse byte estimates,
// and what a nearest candidate decodes.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/tier.hpp>

#include <cmath>
#include <fstream>
#include <set>

using edo::TierSpec;
using edo::test::error_of;

namespace {

bool is_fallback(const std::string& codec) {
  const edo::TierKind k = edo::tier_kind_of(codec);
  return k != edo::TierKind::codec && k != edo::TierKind::sparse;
}

// The bytes the planner estimated for the sparse tier of `c`: its total less
// the row map and the other tiers, whose bytes are exact (as packed in `rep`).
uint64_t sparse_estimate(const edo::PlanCandidate& c, const edo::PackReport& rep) {
  uint64_t others = rep.map_bytes;  // the id map written (runs or the packed map)
  for (const auto& t : rep.tiers)
    if (edo::tier_kind_of(t.codec) != edo::TierKind::sparse) others += t.bytes;
  return c.bytes - others;
}

uint64_t sparse_written(const edo::PackReport& rep) {
  for (const auto& t : rep.tiers)
    if (edo::tier_kind_of(t.codec) == edo::TierKind::sparse) return t.bytes;
  return 0;
}

}  // namespace

TEST_CASE("plan kinds: sparse and fallback tier specs survive the tier spec and plan file round trips") {
  for (const char* text : {"cold:rest:csr:density=0.3:values=int8:disk", "c:rows=5%:bitmap:k=4:values=fp16:host",
                           "drop:rest:centroids:64:host", "drop:rest:nearest:l2:disk", "drop:rest:zero:host"}) {
    const TierSpec t = edo::parse_tier_spec(text);
    CHECK(edo::format_tier_spec(t) == text);
    CHECK(edo::parse_tier_spec(edo::format_tier_spec(t)) == t);
    CHECK(edo::plan_from_json(edo::plan_to_json({t}), "x") == std::vector<TierSpec>{t});
  }
  CHECK(edo::parse_tier_spec("cold:rest:csr:density=0.3:values=int8:disk").codec == "csr:density=0.3:values=int8");
}

TEST_CASE("plan kinds: a ladder with a sparse spec and every fallback plans, packs, and estimates sparse bytes") {
  edo::test::TempDir dir;
  const uint64_t rows = 2000, dim = 32;
  edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 5);
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PlanOptions opt;
  opt.freq = edo::test::zipf_counts(rows);
  opt.budget = {edo::parse_gate("recall@10>=0.3")};
  opt.queries = 200;
  opt.cuts = {5, 20};
  opt.codecs = {"fp32", "csr:density=0.3,values=int8", "int4", "centroids:16", "nearest", "zero", "default"};
  const edo::PlanResult plan = edo::plan_tiers(*table, opt);
  REQUIRE(plan.chosen >= 0);

  // Every fallback was evaluated as some plan's coldest tier, and never stood first or alone.
  std::set<std::string> coldest;
  const edo::PlanCandidate* sparse = nullptr;
  for (const auto& c : plan.tried) {
    CHECK(c.error == "");
    CHECK(!is_fallback(c.tiers.front().codec));
    for (size_t t = 0; t + 1 < c.tiers.size(); ++t) CHECK(!is_fallback(c.tiers[t].codec));
    if (c.evaluated) coldest.insert(c.tiers.back().codec);
    for (const auto& t : c.tiers)
      if (t.codec == "csr:density=0.3:values=int8" && !sparse) sparse = &c;
  }
  for (const char* f : {"centroids:16", "nearest:cos", "zero", "default"}) {
    INFO(f);
    CHECK(coldest.count(f) == 1);
  }

  // Each fallback's most precise plan, the chosen plan and one with the sparse tier pack as planned.
  std::vector<const edo::PlanCandidate*> to_pack = {&plan.tried[static_cast<size_t>(plan.chosen)], sparse};
  for (const char* f : {"centroids:16", "nearest:cos", "zero", "default"})
    for (const auto& c : plan.tried)
      if (c.tiers.back().codec == f) {
        to_pack.push_back(&c);
        break;
      }
  REQUIRE(sparse != nullptr);
  for (size_t i = 0; i < to_pack.size(); ++i) {
    const edo::PlanCandidate& c = *to_pack[i];
    INFO(edo::format_tier_spec(c.tiers.back()));
    const std::string config = dir.file("plan" + std::to_string(i) + ".json");
    std::ofstream(config) << edo::plan_to_json(c.tiers).dump(2);
    edo::PackOptions po;
    po.tiers = edo::read_plan_file(config);
    CHECK(po.tiers == c.tiers);
    po.freq = opt.freq;
    const edo::PackReport rep = edo::pack_to_edo(*table, dir.file("p" + std::to_string(i) + ".edo"), po);
    if (sparse_written(rep) == 0) {
      CHECK(rep.data_bytes == c.bytes);  // without a sparse tier the bytes are exact
    } else {
      const auto estimate = static_cast<double>(sparse_estimate(c, rep));
      const auto written = static_cast<double>(sparse_written(rep));
      CHECK(std::fabs(estimate - written) <= 0.1 * written);
    }
  }

  // A plan of the sparse tier alone: the whole estimate against the file.
  opt.codecs = {"csr:density=0.3,values=int8"};
  opt.budget = {edo::parse_gate("recall@10>=0")};
  const edo::PlanResult one = edo::plan_tiers(*table, opt);
  REQUIRE(one.chosen >= 0);
  const edo::PlanCandidate& c = one.tried[static_cast<size_t>(one.chosen)];
  edo::PackOptions po;
  po.tiers = c.tiers;
  po.freq = opt.freq;
  const auto written = static_cast<double>(edo::pack_to_edo(*table, dir.file("one.edo"), po).data_bytes);
  CHECK(std::fabs(static_cast<double>(c.bytes) - written) <= 0.1 * written);
}

TEST_CASE("plan kinds: a nearest candidate answers each dropped sample row with its nearest kept row") {
  edo::test::TempDir dir;
  const uint64_t rows = 600, dim = 12;
  const std::vector<float> x = edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 9);
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PlanOptions opt;  // no frequencies: rows in norm order; the sample is the whole table
  opt.budget = {edo::parse_gate("recall@10>=0"), edo::parse_gate("mse<=1000")};
  opt.queries = 100;
  opt.cuts = {20};
  opt.codecs = {"fp32", "nearest"};
  const edo::PlanResult plan = edo::plan_tiers(*table, opt);
  const edo::PlanCandidate* nearest = nullptr;
  for (const auto& c : plan.tried)
    if (c.tiers.back().codec == "nearest:cos") nearest = &c;
  REQUIRE(nearest != nullptr);
  REQUIRE(nearest->metrics.size() == 2);

  // The writer's layout: which rows the fp32 tier keeps.
  edo::PackOptions po;
  po.tiers = nearest->tiers;
  edo::pack_to_edo(*table, dir.file("n.edo"), po);
  const edo::Reader reader = edo::Reader::open(dir.file("n.edo"));
  std::vector<uint64_t> kept, dropped;
  for (uint64_t r = 0; r < rows; ++r) (reader.tier_of(r) == 0 ? kept : dropped).push_back(r);
  REQUIRE(!kept.empty());
  REQUIRE(!dropped.empty());
  auto gather = [&](const std::vector<uint64_t>& ids) {
    std::vector<float> out;
    for (uint64_t r : ids)
      out.insert(out.end(), x.begin() + static_cast<long>(r * dim), x.begin() + static_cast<long>((r + 1) * dim));
    return out;
  };
  const std::vector<float> q = gather(dropped), db = gather(kept);
  edo::KnnOptions ko;
  ko.metric = edo::Metric::cos;
  ko.k = 1;
  const edo::KnnResult nn = edo::knn_reference({q.data(), dropped.size(), dim}, {db.data(), kept.size(), dim}, ko);

  // Each dropped row decodes to its nearest kept row: the planner's mse is that
  // of those rows, and the packed file answers each with that row.
  double err = 0;
  std::vector<float> got(dim);
  for (size_t i = 0; i < dropped.size(); ++i) {
    const uint64_t target = kept[static_cast<size_t>(nn.ids_of(i)[0])];
    for (uint64_t j = 0; j < dim; ++j) {
      const double d = double{x[dropped[i] * dim + j]} - x[target * dim + j];
      err += d * d;
    }
    const auto id = static_cast<int64_t>(dropped[i]);
    reader.lookup(&id, 1, got.data());
    CHECK(std::equal(got.begin(), got.end(), x.begin() + static_cast<long>(target * dim)));
  }
  CHECK(nearest->metrics[1].first == "mse");
  CHECK(nearest->metrics[1].second == doctest::Approx(err / static_cast<double>(rows * dim)).epsilon(1e-5));
}

TEST_CASE("plan kinds: fallbacks alone, sparse specs larger than dense and unfit centroids are refused") {
  edo::test::TempDir dir;
  edo::test::write_random_npy(dir.file("t.npy"), 300, 32, 3);
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PlanOptions opt;
  opt.budget = {edo::parse_gate("recall@10>=0.5")};
  opt.codecs = {"zero", "nearest"};
  CHECK(error_of([&] { edo::plan_tiers(*table, opt); }).find("only answers dropped rows") != std::string::npos);
  opt.codecs = {"fp32", "csr:density=0.9,values=int8"};
  CHECK(error_of([&] { edo::plan_tiers(*table, opt); }).find("stored dense") != std::string::npos);
  opt.codecs = {"fp32", "centroids:0"};
  CHECK(error_of([&] { edo::plan_tiers(*table, opt); }).find("centroids") != std::string::npos);

  // Too few sample rows for the centroids: that plan reports why, another is chosen.
  opt.codecs = {"fp32", "centroids:256"};
  opt.cuts = {40};
  opt.budget = {edo::parse_gate("recall@10>=0")};
  const edo::PlanResult plan = edo::plan_tiers(*table, opt);
  REQUIRE(plan.chosen >= 0);
  CHECK(plan.tried[static_cast<size_t>(plan.chosen)].tiers.size() == 1);
  bool saw = false;
  for (const auto& c : plan.tried)
    if (c.tiers.back().codec == "centroids:256") saw = c.error.find("needs at least 256 rows") != std::string::npos;
  CHECK(saw);
}
