// One size budget planned jointly over several tables (edo/joint_plan.hpp):
// the bytes go to the table whose error falls fastest with them.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/joint_plan.hpp>
#include <edo/random.hpp>

#include <memory>

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
  CHECK(plan.error < 0.5 * plan.uniform_error);
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

  opt.max_bytes = 1000;
  opt.header_bytes = 500;
  CHECK(code_of([&] { edo::plan_joint(t.tables, opt); }) == edo::ExitCode::runtime);
  CHECK(error_of([&] { edo::plan_joint(t.tables, opt); }).find("smallest reachable model file is about bytes<=") !=
        std::string::npos);
  opt.codecs = {"pq:m=4"};
  CHECK(code_of([&] { edo::plan_joint(t.tables, opt); }) == edo::ExitCode::usage);
}
