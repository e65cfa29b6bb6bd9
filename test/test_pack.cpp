// SPDX-License-Identifier: Apache-2.0
// Tier specs, tier slices, packing and planning.
#include "test_util.hpp"

#include <edo/codec.hpp>
#include <edo/io/table.hpp>
#include <edo/make_codec.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cmath>
#include <filesystem>

using edo::ShareKind;
using edo::TierSpec;
using edo::test::error_of;

namespace {

std::vector<float> round_trip(const std::string& spec, const float* x, uint64_t n, uint64_t dim) {
  auto codec = edo::make_codec(spec, dim);
  std::vector<uint8_t> codes(n * codec->code_size());
  std::vector<float> y(n * dim);
  codec->encode(x, n, codes.data());
  codec->decode(codes.data(), n, y.data());
  return y;
}

}  // namespace

TEST_CASE("pack: tier specs parse, with the codec running up to a trailing residency") {
  TierSpec t = edo::parse_tier_spec("hot:rows=5%:fp16:gpu");
  CHECK(t.name == "hot");
  CHECK(t.share == ShareKind::rows_percent);
  CHECK(t.value == 5);
  CHECK(t.codec == "fp16");
  CHECK(t.residency == edo::Residency::gpu);

  t = edo::parse_tier_spec("cold:rest:pq:m=16,nbits=8:disk");
  CHECK(t.share == ShareKind::rest);
  CHECK(t.codec == "pq:m=16,nbits=8");
  CHECK(t.residency == edo::Residency::disk);

  t = edo::parse_tier_spec("w:mass=80%:int4:group=32");  // no residency: host, and group=32 stays in the codec
  CHECK(t.share == ShareKind::mass_percent);
  CHECK(t.codec == "int4:group=32");
  CHECK(t.residency == edo::Residency::host);

  t = edo::parse_tier_spec("drop:rows=1000:default");
  CHECK(t.share == ShareKind::rows_count);
  CHECK(t.value == 1000);
  CHECK(t.codec == "default");

  t = edo::parse_tier_spec("p:rows=2.5%:pca:8,int8:host");
  CHECK(t.codec == "pca:8,int8");
  CHECK(edo::parse_tier_spec(edo::format_tier_spec(t)) == t);
}

TEST_CASE("pack: malformed tier specs are usage errors naming the spec") {
  for (const char* bad : {"hot:rows=5%", "hot:rows=5%:gpu", "hot:rows=120%:fp16", "hot:rows=-1%:fp16", "hot:many:fp16",
                          "hot:mass=50:fp16", "hot:rows=1.5:fp16", "rowmap:rest:fp16", "bad name:rest:fp16",
                          ":rest:fp16", "d:rest:default:x"}) {
    CAPTURE(bad);
    try {
      edo::parse_tier_spec(bad);
      FAIL("accepted");
    } catch (const edo::Error& e) {
      CHECK(e.code() == edo::ExitCode::usage);
      CHECK(std::string(e.what()).find("tier") != std::string::npos);
    }
  }
}

TEST_CASE("pack: a tier's codec may hold a nested spec in brackets") {
  TierSpec t = edo::parse_tier_spec("cold:rest:csr:density=0.25,values=[int4:group=32]:disk");
  CHECK(t.name == "cold");
  CHECK(t.share == ShareKind::rest);
  CHECK(t.codec == "csr:density=0.25,values=[int4:group=32]");
  CHECK(t.residency == edo::Residency::disk);
  CHECK(edo::parse_tier_spec(edo::format_tier_spec(t)) == t);

  // A residency word inside brackets is the codec's; the last field outside them decides.
  t = edo::parse_tier_spec("w:rows=10%:a:x=[b:y=[c:z=1,w=2]]:gpu");
  CHECK(t.codec == "a:x=[b:y=[c:z=1,w=2]]");
  CHECK(t.residency == edo::Residency::gpu);
  t = edo::parse_tier_spec("w:rows=10%:a:x=[b:disk]");
  CHECK(t.codec == "a:x=[b:disk]");
  CHECK(t.residency == edo::Residency::host);

  std::vector<TierSpec> plan = {t, edo::parse_tier_spec("c:rest:csr:values=[int4:group=32]:disk")};
  CHECK(edo::plan_from_json(edo::plan_to_json(plan), "x") == plan);

  for (const char* bad : {"cold:rest:csr:values=[int4:group=32:disk", "cold:rest:csr:values=int4]:disk",
                          "cold:[rest]:int8", "cold:rest:[int8:disk"}) {
    CAPTURE(bad);
    try {
      edo::parse_tier_spec(bad);
      FAIL("accepted");
    } catch (const edo::Error& e) {
      CHECK(e.code() == edo::ExitCode::usage);
      CHECK(std::string(e.what()).find(std::string("tier '") + bad + "'") != std::string::npos);
    }
  }
  // The codec's own bracket errors surface in the plan check, naming the tier.
  for (const char* codec : {"int8:x=[]", "int8:x=[b]c", "int4:group=3[2]"}) {
    CAPTURE(codec);
    const std::string msg =
        error_of([&] { edo::check_tier_specs({edo::parse_tier_spec(std::string("t:rest:") + codec)}, 100, 8); });
    CHECK(msg.find("tier 't'") != std::string::npos);
    CHECK(msg.find("codec spec") != std::string::npos);
  }
}

TEST_CASE("pack: plan checks name the tier: duplicates, two rests, codecs the dimension cannot take") {
  auto tiers = [](std::initializer_list<const char*> specs) {
    std::vector<TierSpec> out;
    for (const char* s : specs) out.push_back(edo::parse_tier_spec(s));
    return out;
  };
  CHECK(error_of([&] {
          edo::check_tier_specs(tiers({"a:rows=5%:fp16", "a:rest:int8"}), 100, 8);
        }).find("twice") != std::string::npos);
  CHECK(error_of([&] {
          edo::check_tier_specs(tiers({"a:rest:fp16", "b:rest:int8"}), 100, 8);
        }).find("rest") != std::string::npos);
  const std::string msg = error_of([&] { edo::check_tier_specs(tiers({"a:rows=5%:fp16", "b:rest:pca:64"}), 100, 8); });
  CHECK(msg.find("tier 'b'") != std::string::npos);
  CHECK(error_of([&] {
          edo::check_tier_specs(tiers({"a:rows=500:fp16", "b:rest:int8"}), 100, 8);
        }).find("500") != std::string::npos);
  CHECK_NOTHROW(edo::check_tier_specs(tiers({"a:rows=5%:fp16:gpu", "b:rest:int8", "c:rows=1%:default"}), 100, 8));
}

TEST_CASE("pack: hot order is by key descending, ties by row id") {
  const std::vector<uint64_t> order = edo::hot_order({1, 5, 5, NAN, 2});
  CHECK(order == std::vector<uint64_t>{1, 2, 4, 0, 3});
}

TEST_CASE("pack: tier slices by rows, counts and mass, with rest in the middle") {
  const uint64_t rows = 100;
  std::vector<uint64_t> order(rows);
  for (uint64_t i = 0; i < rows; ++i) order[i] = i;
  auto plan = [](std::initializer_list<const char*> specs) {
    std::vector<TierSpec> out;
    for (const char* s : specs) out.push_back(edo::parse_tier_spec(s));
    return out;
  };
  CHECK(edo::tier_cuts(plan({"a:rows=5%:fp16", "b:rows=25%:int8", "c:rest:int4", "d:rows=10%:default"}), order, {}) ==
        std::vector<uint64_t>{0, 5, 30, 90, 100});
  CHECK(edo::tier_cuts(plan({"a:rows=30%:fp16", "b:rows=70%:int8"}), order, {}) == std::vector<uint64_t>{0, 30, 100});
  CHECK(edo::tier_cuts(plan({"a:rows=7:fp16", "b:rest:int8"}), order, {}) == std::vector<uint64_t>{0, 7, 100});
  // Mass: weights 1/(r+1), H(100) = 5.19; 4 rows hold 40.2%, 5 rows 44%.
  const std::vector<double> w = edo::test::zipf_counts(rows);
  const auto cuts = edo::tier_cuts(plan({"hot:mass=42%:fp16", "rest:rest:int8"}), order, w);
  CHECK(cuts[1] == 5);
  CHECK(edo::tier_cuts(plan({"a:mass=100%:fp16"}), order, w) == std::vector<uint64_t>{0, 100});

  CHECK(error_of([&] {
          edo::tier_cuts(plan({"a:rows=60%:fp16", "b:rows=50%:int8"}), order, {});
        }).find("more than") != std::string::npos);
  CHECK(error_of([&] {
          edo::tier_cuts(plan({"a:rows=60%:fp16", "b:rows=30%:int8"}), order, {});
        }).find("add up") != std::string::npos);
  CHECK(error_of([&] {
          edo::tier_cuts(plan({"a:mass=60%:fp16", "b:rest:int8"}), order, {});
        }).find("--freq") != std::string::npos);
}

TEST_CASE("pack: plan JSON round trip and bad plan files") {
  std::vector<TierSpec> tiers = {edo::parse_tier_spec("hot:rows=5%:fp16:gpu"),
                                 edo::parse_tier_spec("cold:rest:pca:4,int8:disk")};
  CHECK(edo::plan_from_json(edo::plan_to_json(tiers), "x") == tiers);
  edo::test::TempDir dir;
  edo::test::write_bytes(dir.file("bad.json"), "{\"tiers\": [{\"name\": \"a\"}]}");
  CHECK(error_of([&] { edo::read_plan_file(dir.file("bad.json")); }).find("bad.json") != std::string::npos);
  edo::test::write_bytes(dir.file("junk.json"), "{not json");
  CHECK(error_of([&] { edo::read_plan_file(dir.file("junk.json")); }).find("not valid JSON") != std::string::npos);
}

TEST_CASE("pack: a packed file reads back tier by tier, deterministically") {
  edo::test::TempDir dir;
  const uint64_t rows = 1000, dim = 16;
  const std::vector<float> x = edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 3);
  // Frequencies: a permutation of Zipf weights, so the hot order is not the row order.
  std::vector<double> freq(rows);
  for (uint64_t r = 0; r < rows; ++r) freq[(r * 389) % rows] = 1.0 / static_cast<double>(r + 1);
  edo::PackOptions opt;
  for (const char* s :
       {"hot:rows=5%:fp32:gpu", "warm:rows=25%:int8", "cold:rest:pca:4,int8:disk", "drop:rows=10%:default"})
    opt.tiers.push_back(edo::parse_tier_spec(s));
  opt.freq = freq;
  opt.seed = 5;
  auto table = edo::io::open_table(dir.file("t.npy"));
  const edo::PackReport rep = edo::pack_to_edo(*table, dir.file("p.edo"), opt);
  CHECK(rep.order == "frequency");
  REQUIRE(rep.tiers.size() == 4);
  CHECK(rep.tiers[0].rows == 50);
  CHECK(rep.tiers[1].rows == 250);
  CHECK(rep.tiers[2].rows == 600);
  CHECK(rep.tiers[3].rows == 100);
  CHECK(rep.gpu_bytes == 50 * dim * 4);
  CHECK(rep.map_bytes == rows + 4 * 4 * 8 + 4 * rows);  // tier bytes, rank checkpoints, local indices
  CHECK(rep.tiers[0].mass > 0.5);

  const edo::Reader reader = edo::Reader::open(dir.file("p.edo"));
  CHECK(reader.rows() == rows);
  CHECK(reader.dim() == dim);
  REQUIRE(reader.tiers().size() == 4);
  CHECK(reader.tiers()[2].codec == "pca:4,int8");
  CHECK(reader.residency_bytes().gpu == rep.gpu_bytes);
  CHECK(reader.residency_bytes().total() == rep.data_bytes);
  reader.validate_row_map();

  const std::vector<uint64_t> order = edo::hot_order(freq);
  std::vector<float> all(rows * dim);
  reader.decode_all(all.data());
  const std::vector<float> int8 = round_trip("int8", x.data(), rows, dim);
  std::vector<double> mean(dim, 0.0);
  double wsum = 0;
  for (uint64_t k = 900; k < rows; ++k) {
    for (uint64_t j = 0; j < dim; ++j) mean[j] += freq[order[k]] * x[order[k] * dim + j];
    wsum += freq[order[k]];
  }
  for (uint64_t k = 0; k < rows; ++k) {
    const uint64_t r = order[k];
    const uint32_t t = k < 50 ? 0 : k < 300 ? 1 : k < 900 ? 2 : 3;
    CHECK(reader.tier_of(r) == t);
    for (uint64_t j = 0; j < dim; ++j) {
      const float got = all[r * dim + j];
      if (t == 0) CHECK(got == x[r * dim + j]);
      if (t == 1) CHECK(got == int8[r * dim + j]);
      if (t == 2) CHECK(std::fabs(got - x[r * dim + j]) < 1.5f);
      if (t == 3) CHECK(got == doctest::Approx(mean[j] / wsum).epsilon(1e-5));
    }
  }
  // Lookup of any batch equals the decoded table, rows in the order asked, repeats included.
  std::vector<int64_t> ids = {999, 0, 17, 17, 512, 3};
  std::vector<float> out(ids.size() * dim);
  reader.lookup(ids.data(), ids.size(), out.data());
  for (size_t i = 0; i < ids.size(); ++i)
    for (uint64_t j = 0; j < dim; ++j) CHECK(out[i * dim + j] == all[static_cast<uint64_t>(ids[i]) * dim + j]);
  std::vector<float> range(100 * dim);
  reader.decode_rows(450, 100, range.data());
  CHECK(std::equal(range.begin(), range.end(), all.begin() + 450 * dim));

  // Same input, same options: the same bytes.
  edo::pack_to_edo(*table, dir.file("q.edo"), opt);
  CHECK(edo::test::read_bytes(dir.file("p.edo")) == edo::test::read_bytes(dir.file("q.edo")));
}

TEST_CASE("pack: a value a tier cannot store is named by its table row, whatever the hot order") {
  edo::test::TempDir dir;
  const uint64_t rows = 200, dim = 6;
  std::vector<float> x = edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 4);
  std::vector<double> freq(rows);
  for (uint64_t r = 0; r < rows; ++r) freq[(r * 73) % rows] = 1.0 / static_cast<double>(r + 1);
  const auto pack_with = [&](float value, const char* cold) {
    std::vector<float> y = x;
    y[150 * dim + 4] = value;
    auto w = edo::io::create_table(dir.file("bad.npy"), rows, dim);
    w->write_f32(y.data(), rows);
    w->commit();
    auto table = edo::io::open_table(dir.file("bad.npy"));
    edo::PackOptions opt;
    opt.tiers = {edo::parse_tier_spec("hot:rows=10%:fp32"), edo::parse_tier_spec(std::string("cold:rest:") + cold)};
    opt.freq = freq;
    return edo::test::error_of([&] { edo::pack_to_edo(*table, dir.file("p.edo"), opt); });
  };
  const std::string nan = pack_with(std::nanf(""), "int8");
  CHECK(nan.find("row 150, column 4: value is nan") != std::string::npos);
  const std::string overflow = pack_with(1e6f, "fp16");
  CHECK(overflow.find("row 150, column 4: value 1000000 overflows fp16") != std::string::npos);
  const std::string kept = pack_with(std::nanf(""), "fp16");
  CHECK(kept.find("row 150, column 4: value is nan (pass --allow-nonfinite") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("p.edo")));
}

TEST_CASE("pack: without frequencies rows are ordered by norm, and bad shares or codecs fail before writing") {
  edo::test::TempDir dir;
  const uint64_t rows = 300, dim = 8;
  std::vector<float> x = edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 9);
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PackOptions opt;
  opt.tiers = {edo::parse_tier_spec("big:rows=10%:fp32"), edo::parse_tier_spec("small:rest:int4")};
  const edo::PackReport rep = edo::pack_to_edo(*table, dir.file("n.edo"), opt);
  CHECK(rep.order == "norm");
  const edo::Reader reader = edo::Reader::open(dir.file("n.edo"));
  double min_big = HUGE_VAL, max_small = 0;
  for (uint64_t r = 0; r < rows; ++r) {
    double n2 = 0;
    for (uint64_t j = 0; j < dim; ++j) n2 += double{x[r * dim + j]} * x[r * dim + j];
    if (reader.tier_of(r) == 0) {
      min_big = std::min(min_big, n2);
    } else {
      max_small = std::max(max_small, n2);
    }
  }
  CHECK(min_big >= max_small);

  opt.tiers = {edo::parse_tier_spec("a:rows=50%:fp32"), edo::parse_tier_spec("b:rows=20%:int8")};
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("bad.edo"), opt); }).find("add up") != std::string::npos);
  opt.tiers = {edo::parse_tier_spec("a:rows=10%:fp32"), edo::parse_tier_spec("b:rest:int4:group=0")};
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("bad.edo"), opt); }).find("tier 'b'") != std::string::npos);
  opt.tiers = {edo::parse_tier_spec("a:rest:fp32"), edo::parse_tier_spec("b:rows=0:pca:2")};
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("bad.edo"), opt); }).find("no rows") != std::string::npos);
  CHECK(!std::filesystem::exists(dir.file("bad.edo")));
}

TEST_CASE("pack: the planner finds the smallest plan that meets the budget, and none when it cannot") {
  edo::test::TempDir dir;
  const uint64_t rows = 2000, dim = 16;
  edo::test::write_random_npy(dir.file("t.npy"), rows, dim, 11);
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PlanOptions opt;
  opt.freq = edo::test::zipf_counts(rows);
  opt.budget = {edo::parse_gate("recall@10>=0.9")};
  opt.queries = 200;
  opt.codecs = {"fp32", "int8", "int4"};
  opt.cuts = {5, 20};
  const edo::PlanResult plan = edo::plan_tiers(*table, opt);
  CHECK(plan.budget[0].metric == "w.recall@10");
  REQUIRE(plan.chosen >= 0);
  const edo::PlanCandidate& chosen = plan.tried[static_cast<size_t>(plan.chosen)];
  CHECK(chosen.passed);
  CHECK(chosen.metrics[0].second >= 0.9);
  // Nothing evaluated that passed is smaller.
  for (const auto& c : plan.tried)
    if (c.passed) CHECK(c.bytes >= chosen.bytes);
  CHECK(chosen.bytes < rows * dim * 4);
  const nlohmann::json config = edo::plan_config(plan);
  CHECK(edo::plan_from_json(config, "plan") == chosen.tiers);
  CHECK(edo::to_text(plan).find("chosen: #") != std::string::npos);

  // The whole plan packs, and a byte cap below every candidate leaves none.
  edo::PackOptions po;
  po.tiers = chosen.tiers;
  po.freq = opt.freq;
  CHECK(edo::pack_to_edo(*table, dir.file("plan.edo"), po).data_bytes == chosen.bytes);
  opt.max_bytes = 1000;
  const edo::PlanResult none = edo::plan_tiers(*table, opt);
  CHECK(none.chosen < 0);
  CHECK(none.over_cap == none.candidates);
  CHECK_THROWS_AS(edo::plan_config(none), edo::Error);

  // A zero tier is a candidate like any other: no bytes, and what its rows cost measured.
  opt.max_bytes = 0;
  opt.codecs = {"fp32", "zero"};
  opt.budget = {edo::parse_gate("recall@10>=0.5")};
  const edo::PlanResult z = edo::plan_tiers(*table, opt);
  bool saw_zero = false;
  for (const auto& c : z.tried) {
    if (c.tiers.size() < 2 || c.tiers.back().codec != "zero") continue;
    saw_zero = true;
    const uint64_t fp32_rows = (c.bytes - edo::row_map_bytes(rows, 2)) / (dim * 4);
    CHECK(fp32_rows < rows);
    CHECK(c.metrics[0].second < 1.0);
  }
  CHECK(saw_zero);
}
