// SPDX-License-Identifier: Apache-2.0
// Budgets in bytes and ratios (edo/budget.hpp): the grammar, the file cap
// they set, and edo-pack --budget's plan packed and filled toward the cap.
#include "test_util.hpp"

#include <edo/budget.hpp>
#include <edo/byte_count.hpp>
#include <edo/io/table.hpp>

#include <filesystem>
#include <memory>

using edo::test::code_of;
using edo::test::error_of;

TEST_CASE(
    "budget: sizes in bytes, K/KiB powers of 1024 and KB of 1000, fractions rounded down, anything else refused") {
  CHECK(edo::parse_size("1000") == 1000);
  CHECK(edo::parse_size("2K") == 2048);
  CHECK(edo::parse_size("2k") == 2048);
  CHECK(edo::parse_size("1.5M") == 1572864);
  CHECK(edo::parse_size(" 2G ") == 2147483648ull);
  CHECK(edo::parse_size("1T") == 1099511627776ull);
  CHECK(edo::parse_size("1.0009") == 1);
  // One grammar with edo-lookup --max-resident (edo::parse_byte_count), dd's
  // and numfmt's: iB after the unit keeps 1024, B after it makes it 1000.
  CHECK(edo::parse_size("2GiB") == 2147483648ull);
  CHECK(edo::parse_size("2GB") == 2000000000ull);
  CHECK(edo::parse_size("2MB") == 2000000ull);
  CHECK(edo::parse_size("1.5kB") == 1500ull);
  CHECK(edo::parse_size("1TB") == 1000000000000ull);
  CHECK(edo::parse_size("3MiB") == 3145728ull);
  CHECK(edo::parse_size("512B") == 512);
  CHECK(edo::parse_byte_count("0") == 0u);
  CHECK_FALSE(edo::parse_byte_count("8E"));
  CHECK_FALSE(edo::parse_byte_count("9000000T"));
  for (const char* bad :
       {"", "K", "B", "iB", "-1", "+5", "0", "0.5", "1Q", "2GBB", "1e30", "nan", "inf", "1 K", "1KK"}) {
    INFO(std::string(bad));
    CHECK(code_of([&] { edo::parse_size(bad); }) == edo::ExitCode::usage);
  }
  CHECK(error_of([] { edo::parse_size("2GBB"); }).find("size '2GBB'") != std::string::npos);
}

TEST_CASE("budget: bytes and ratio are size caps, everything else an accuracy gate") {
  const edo::Budget b = edo::parse_budget({"bytes<=2G", "bytes < 1000", "ratio>=8", "ratio>2.5", "recall@10>=0.9"});
  REQUIRE(b.sizes.size() == 4);
  CHECK(b.sizes[0].kind == edo::SizeBudgetKind::bytes);
  CHECK(b.sizes[0].max_bytes == 2147483648ull);
  CHECK(b.sizes[1].max_bytes == 999);
  CHECK(b.sizes[2].kind == edo::SizeBudgetKind::ratio);
  CHECK(b.sizes[2].min_ratio == 8);
  CHECK(!b.sizes[2].strict);
  CHECK(b.sizes[3].strict);
  REQUIRE(b.gates.size() == 1);
  CHECK(b.gates[0].metric == "recall@10");
  for (const char* bad : {"bytes>=1G", "bytes==1G", "ratio<=4", "ratio>=0", "ratio>=-1", "ratio>=x", "w.bytes<=1G",
                          "w.ratio>=8", "bytes<=1Q", "bytes<1", "bytes", "recall@10>=x"}) {
    INFO(std::string(bad));
    CHECK(code_of([&] { edo::parse_budget({bad}); }) == edo::ExitCode::usage);
  }
  CHECK(error_of([] { edo::parse_budget({"w.ratio>=8"}); }).find("never access-weighted") != std::string::npos);
}

TEST_CASE("budget: the file cap is the tightest size, a ratio's counted without the vocabulary") {
  CHECK(edo::budget_file_cap(edo::parse_budget({"recall@10>=0.9"}), 1000, 0) == UINT64_MAX);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>=8"}), 8000, 0) == 1000);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>8"}), 8000, 0) == 999);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>=3"}), 8000, 0) == 2666);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>=8"}), 8000, 50) == 1050);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>=8", "bytes<=1K"}), 8000, 50) == 1024);
  CHECK(edo::budget_file_cap(edo::parse_budget({"ratio>=8", "bytes<=1K"}), 80000, 0) == 1024);
}

namespace {

// A random table with Zipf counts by id (hottest rows first by id, so the id map stays runs).
struct SmallTable {
  edo::test::TempDir dir;
  std::unique_ptr<edo::io::TableReader> table;
  std::vector<double> freq;
  edo::PackOptions po;

  SmallTable(uint64_t rows, uint64_t dim, uint64_t seed) : freq(edo::test::zipf_counts(rows)) {
    edo::test::write_random_npy(dir.file("t.npy"), rows, dim, seed);
    table = edo::io::open_table(dir.file("t.npy"));
    po.freq = freq;
  }
};

edo::PlanOptions small_plan(const std::vector<double>& freq) {
  edo::PlanOptions opt;
  opt.freq = freq;
  opt.queries = 200;
  opt.cuts = {5, 20, 50};
  opt.codecs = {"fp16", "int8", "int4", "int2"};
  return opt;
}

}  // namespace

TEST_CASE("budget: edo-pack --budget packs a file at most the cap and within 1% of it") {
  const uint64_t rows = 3000, dim = 32;
  SmallTable t(rows, dim, 7);
  for (const char* text : {"ratio>=5", "ratio>=3", "bytes<=100000", "ratio>=5.5"}) {
    INFO(std::string(text));
    const edo::Budget budget = edo::parse_budget({text});
    const std::string out = t.dir.file("b.edo");
    const edo::BudgetPackReport rep = edo::pack_to_budget(*t.table, out, budget, small_plan(t.freq), t.po);
    CHECK(rep.cap == edo::budget_file_cap(budget, rows * dim * 4, 0));
    CHECK(rep.file_bytes == std::filesystem::file_size(out));
    CHECK(rep.file_bytes <= rep.cap);
    CHECK(static_cast<double>(rep.file_bytes) >= 0.99 * static_cast<double>(rep.cap));
    CHECK(rep.fill.find("not filled") == std::string::npos);
    CHECK(rep.plan.budget.size() == 1);
    CHECK(rep.plan.budget[0].metric == "w.recall@10");  // the ranking metric, weighted; the size never is
  }
}

TEST_CASE("budget: a plan of one tier is filled with the ladder's next codec, and an accuracy budget packs its plan") {
  const uint64_t rows = 2000;
  SmallTable t(rows, 32, 8);
  edo::PlanOptions opt = small_plan(t.freq);
  opt.codecs = {"int8", "int4"};
  opt.cuts = {50};
  // 24 bytes a row of int4 with a little room: one tier of int4, then int8 for the hottest rows.
  const edo::Budget size = edo::parse_budget({"bytes<=" + std::to_string(rows * 24 + 4000)});
  const edo::BudgetPackReport rep = edo::pack_to_budget(*t.table, t.dir.file("one.edo"), size, opt, t.po);
  CHECK(rep.file_bytes <= rep.cap);
  CHECK(static_cast<double>(rep.file_bytes) >= 0.99 * static_cast<double>(rep.cap));
  REQUIRE(rep.pack.tiers.size() == 2);
  CHECK(rep.pack.tiers[0].codec == "int8");
  CHECK(rep.pack.tiers[1].codec == "int4");

  const edo::Budget accuracy = edo::parse_budget({"recall@10>=0.5"});
  opt.check_on_table = false;
  const edo::BudgetPackReport a = edo::pack_to_budget(*t.table, t.dir.file("a.edo"), accuracy, opt, t.po);
  CHECK(a.cap == UINT64_MAX);
  CHECK(a.packs == 1);
  CHECK(a.tiers == a.plan.tried[static_cast<size_t>(a.plan.chosen)].tiers);
}

TEST_CASE("budget: a cap below the headers or the cheapest plan fails naming the smallest reachable size") {
  SmallTable t(1000, 16, 9);
  for (const char* text : {"bytes<=100", "bytes<=2000"}) {
    INFO(std::string(text));
    const auto fail = [&] {
      edo::pack_to_budget(*t.table, t.dir.file("x.edo"), edo::parse_budget({text}), small_plan(t.freq), t.po);
    };
    CHECK(code_of(fail) == edo::ExitCode::runtime);
    const std::string why = error_of(fail);
    // Under the headers: refused before any sample, with a floor; under the cheapest plan: its size.
    CHECK(why.find(std::string(text) == "bytes<=100"
                       ? "most compact codec takes about bytes<="
                       : "smallest reachable file is about bytes<=") != std::string::npos);
    CHECK(why.find(std::string(text) == "bytes<=100" ? "no rows stored" : "smallest plan") != std::string::npos);
  }
  CHECK(!std::filesystem::exists(t.dir.file("x.edo")));
}
