// SPDX-License-Identifier: Apache-2.0
// The reader library: one-tier and tiered files, the id policy, hostile
// row maps, and the GPU lookup (skipped without a GPU).
#include "test_container_edit.hpp"
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/io/container.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/tier.hpp>

#include "../lib/reader/lookup_group.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>

using edo::test::error_of;

using edo::test::Packed;

TEST_CASE("reader: a one-tier edo-quantize file reads through the same API") {
  edo::test::TempDir dir;
  const uint64_t rows = 300, dim = 10;
  std::vector<float> x(rows * dim);
  for (uint64_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 17) - 8.0f;
  auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::QuantizeOptions q;
  q.spec = "fp16";
  edo::quantize_to_edo(*table, dir.file("q.edo"), q);
  const edo::Reader r = edo::Reader::open(dir.file("q.edo"));
  REQUIRE(r.tiers().size() == 1);
  CHECK(r.tiers()[0].codec == "fp16");
  std::vector<float> all(rows * dim);
  r.decode_all(all.data());
  CHECK(all == x);  // small integers are exact in fp16
  const int64_t ids[] = {299, 5};
  std::vector<float> out(2 * dim);
  r.lookup(ids, 2, out.data());
  CHECK(std::equal(out.begin(), out.begin() + static_cast<long>(dim), x.begin() + 299 * static_cast<long>(dim)));
  auto t = edo::EdoTable::open(dir.file("q.edo"));
  CHECK(t->rows_f32(5, 1)[3] == x[5 * dim + 3]);
}

TEST_CASE("reader: ids outside the table are an error or the default vector, as asked") {
  Packed p({"hot:rows=10%:fp32", "cold:rest:int8", "drop:rows=5%:default"});
  const edo::Reader strict = edo::Reader::open(p.path);
  std::vector<float> out(3 * p.dim);
  const int64_t bad[] = {1, 600, 2};
  const std::string msg = error_of([&] { strict.lookup(bad, 3, out.data()); });
  CHECK(msg.find("p.edo") != std::string::npos);
  CHECK(msg.find("id 600") != std::string::npos);
  const int64_t negative[] = {-1};
  CHECK(error_of([&] { strict.lookup(negative, 1, out.data()); }).find("id -1") != std::string::npos);

  edo::ReaderOptions lenient;
  lenient.unknown_ids = edo::UnknownIdPolicy::default_vector;
  const edo::Reader r = edo::Reader::open(p.path, lenient);
  r.lookup(bad, 3, out.data());
  const std::vector<float>& def = r.default_vector();
  REQUIRE(def.size() == p.dim);
  CHECK(std::equal(def.begin(), def.end(), out.begin() + static_cast<long>(p.dim)));
  CHECK(std::any_of(def.begin(), def.end(), [](float v) { return v != 0; }));
  std::vector<float> one(p.dim);
  const int64_t id1[] = {1};
  r.lookup(id1, 1, one.data());
  CHECK(std::equal(one.begin(), one.end(), out.begin()));
}

TEST_CASE("reader: grouping ids by tier, fast path against the plain one") {
  edo::Rng rng(3);
  for (const size_t m : {size_t{0}, size_t{1}, size_t{3}, size_t{4}, size_t{5}, size_t{64}, size_t{1023}}) {
    for (const uint32_t slots : {1u, 2u, 5u}) {
      std::vector<uint32_t> tier(m);
      std::vector<uint64_t> local(m);
      for (size_t k = 0; k < m; ++k) {
        tier[k] = static_cast<uint32_t>(rng.next() % slots);
        local[k] = rng.next();
      }
      for (uint32_t t = 0; t < slots; ++t) {
        std::vector<uint64_t> want_local(m), want_pos(m), got_local(m + 4), got_pos(m + 4);
        const size_t want =
            edo::detail::group_tier_reference(tier.data(), local.data(), m, t, want_local.data(), want_pos.data());
        const size_t got = edo::detail::group_tier(tier.data(), local.data(), m, t, got_local.data(), got_pos.data());
        REQUIRE(got == want);
        CHECK(std::equal(want_local.begin(), want_local.begin() + static_cast<long>(want), got_local.begin()));
        CHECK(std::equal(want_pos.begin(), want_pos.begin() + static_cast<long>(want), got_pos.begin()));
      }
    }
  }
}

TEST_CASE("reader: batch lookup equals the decoded table for any tier count and batch size") {
  // Two tiers (grouped tier by tier) and six (one counting sort), with
  // unknown ids served the default vector; batches that span several
  // blocks, on one thread and on several.
  for (const auto& tiers : {std::vector<std::string>{"hot:rows=20%:fp16", "cold:rest:int8"},
                            std::vector<std::string>{"a:rows=5%:fp32", "b:rows=10%:fp16", "c:rows=10%:bf16",
                                                     "d:rows=20%:int8", "e:rows=5%:default", "f:rest:int4"}}) {
    Packed p(tiers);
    edo::ReaderOptions opt;
    opt.unknown_ids = edo::UnknownIdPolicy::default_vector;
    const edo::Reader r = edo::Reader::open(p.path, opt);
    std::vector<float> all(p.rows * p.dim);
    r.decode_all(all.data());
    edo::Rng rng(5);
    for (const size_t n : {size_t{7}, size_t{1024}, size_t{3001}}) {
      std::vector<int64_t> ids(n);
      for (auto& id : ids) id = static_cast<int64_t>(rng.next() % (p.rows + 20)) - 10;
      std::vector<float> out(n * p.dim);
      r.lookup(ids.data(), n, out.data());
      for (size_t i = 0; i < n; ++i) {
        const bool known = ids[i] >= 0 && static_cast<uint64_t>(ids[i]) < p.rows;
        const float* want = known ? all.data() + static_cast<uint64_t>(ids[i]) * p.dim : r.default_vector().data();
        REQUIRE(std::equal(want, want + p.dim, out.data() + i * p.dim));
      }
    }
  }
  // The first bad id of a long batch is the one named, whichever block fails first.
  Packed p({"hot:rows=20%:fp16", "cold:rest:int8"});
  const edo::Reader strict = edo::Reader::open(p.path);
  std::vector<int64_t> ids(5000, 1);
  ids[2500] = -4;
  ids[4999] = 100000;
  std::vector<float> out(ids.size() * p.dim);
  CHECK(error_of([&] { strict.lookup(ids.data(), ids.size(), out.data()); }).find("id -4 (batch position 2500)") !=
        std::string::npos);
}

TEST_CASE("reader: a corrupt row map is an error at lookup, never a read out of bounds") {
  Packed p({"a:rows=30%:fp32", "b:rest:int8"});
  std::string bytes = edo::test::read_bytes(p.path);
  const edo::io::Container c = edo::io::Container::open(p.path);
  uint64_t tier_offset = 0, rank_offset = 0;
  for (const auto& s : c.sections()) {
    if (s.name == "rowmap/tier") tier_offset = s.offset;
    if (s.name == "rowmap/rank") rank_offset = s.offset;
  }
  REQUIRE(tier_offset > 0);
  // A tier id beyond the tiers (structure-only open does not read section bytes).
  std::string hostile = bytes;
  hostile[tier_offset + 42] = static_cast<char>(7);
  edo::test::write_bytes(p.dir.file("h1.edo"), hostile);
  const edo::Reader r1 = edo::Reader::open(p.dir.file("h1.edo"), {.verify = edo::io::Verify::structure});
  const int64_t id42[] = {42};
  std::vector<float> out(p.dim);
  CHECK(error_of([&] { r1.lookup(id42, 1, out.data()); }).find("corrupt at row 42") != std::string::npos);
  CHECK(error_of([&] { r1.validate_row_map(); }).find("row 42") != std::string::npos);
  std::vector<float> all(p.rows * p.dim);
  CHECK_THROWS_AS(r1.decode_all(all.data()), edo::Error);
  // Every row of block 1 moved to tier 1: the counts overrun tier b.
  hostile = bytes;
  const uint64_t huge = ~uint64_t{0};
  std::memcpy(hostile.data() + rank_offset + 2 * 8, &huge, 8);
  edo::test::write_bytes(p.dir.file("h2.edo"), hostile);
  const edo::Reader r2 = edo::Reader::open(p.dir.file("h2.edo"), {.verify = edo::io::Verify::structure});
  // Lookups read each row's index from the local section; range decodes and
  // validation walk the checkpoints.
  std::vector<float> block(44 * p.dim);
  CHECK_THROWS_AS(r2.decode_rows(256, 44, block.data()), edo::Error);
  CHECK_THROWS_AS(r2.validate_row_map(), edo::Error);
  // A row's index within its tier (the local section) beyond the tier.
  uint64_t local_offset = 0;
  for (const auto& s : c.sections())
    if (s.name == "rowmap/local") local_offset = s.offset;
  REQUIRE(local_offset > 0);
  hostile = bytes;
  const uint32_t beyond = 0xfffffff0u;
  std::memcpy(hostile.data() + local_offset + 7 * 4, &beyond, 4);
  edo::test::write_bytes(p.dir.file("h3.edo"), hostile);
  const edo::Reader r3 = edo::Reader::open(p.dir.file("h3.edo"), {.verify = edo::io::Verify::structure});
  const int64_t id7[] = {7};
  CHECK(error_of([&] { r3.lookup(id7, 1, out.data()); }).find("corrupt at row 7") != std::string::npos);
  CHECK(error_of([&] { r3.validate_row_map(); }).find("row 7") != std::string::npos);
  // The section checksums catch them all when asked.
  edo::ReaderOptions verify;
  verify.verify = edo::io::Verify::all;
  CHECK_THROWS_AS(edo::Reader::open(p.dir.file("h2.edo"), verify), edo::Error);
  CHECK_THROWS_AS(edo::Reader::open(p.dir.file("h3.edo"), verify), edo::Error);
  // Truncated.
  edo::test::write_bytes(p.dir.file("t.edo"), bytes.substr(0, bytes.size() / 2));
  CHECK(error_of([&] { edo::Reader::open(p.dir.file("t.edo")); }).find("t.edo") != std::string::npos);
}

TEST_CASE("reader: tiers in runs of ids store runs, answer as the packed map, and hostile runs are errors") {
  Packed p({"a:rows=30%:fp32", "b:rows=20%:int8", "c:rest:fp16"}, true);
  const edo::io::Container c = edo::io::Container::open(p.path);
  CHECK(c.manifest()["rowmap"] == nlohmann::json{{"runs", "rowmap/runs"}});
  uint64_t runs_offset = 0;
  for (const auto& s : c.sections()) {
    CHECK(s.name.find("rowmap/tier") == std::string::npos);
    if (s.name == "rowmap/runs") {
      runs_offset = s.offset;
      CHECK(s.length == 3 * edo::io::kRowRunBytes);
    }
  }
  REQUIRE(runs_offset > 0);
  const edo::Reader r = edo::Reader::open(p.path);
  std::vector<float> all(p.rows * p.dim);
  r.decode_all(all.data());
  // Tier a holds ids [0, 180) as fp32: exact.
  CHECK(std::equal(all.begin(), all.begin() + 180 * p.dim, p.values.begin()));
  std::vector<int64_t> ids;
  for (int64_t i = static_cast<int64_t>(p.rows) - 1; i >= 0; i -= 7) ids.push_back(i);
  std::vector<float> got(ids.size() * p.dim);
  r.lookup(ids.data(), ids.size(), got.data());
  for (size_t k = 0; k < ids.size(); ++k)
    CHECK(std::equal(got.begin() + k * p.dim, got.begin() + (k + 1) * p.dim, all.begin() + ids[k] * p.dim));
  std::vector<float> range(200 * p.dim);
  r.decode_rows(170, 200, range.data());  // across both run boundaries
  CHECK(std::equal(range.begin(), range.end(), all.begin() + 170 * p.dim));

  // The runs are (0, a, 0) (180, b, 0) (300, c, 0): three u64 each.
  const std::string bytes = edo::test::read_bytes(p.path);
  const auto with = [&](size_t word, uint64_t value, const char* name) {
    std::string hostile = bytes;
    std::memcpy(hostile.data() + runs_offset + word * 8, &value, 8);
    edo::test::write_bytes(p.dir.file(name), hostile);
    return edo::Reader::open(p.dir.file(name), {.verify = edo::io::Verify::structure});
  };
  const int64_t id200[] = {200};
  std::vector<float> out(p.dim);
  const edo::Reader bad_tier = with(4, 9, "h1.edo");
  CHECK(error_of([&] { bad_tier.lookup(id200, 1, out.data()); }).find("corrupt at row 200") != std::string::npos);
  CHECK(error_of([&] { bad_tier.validate_row_map(); }).find("run 1 names tier 9 of 3") != std::string::npos);
  const edo::Reader overrun = with(5, 110, "h2.edo");  // b's 120 rows from index 110
  CHECK(error_of([&] { overrun.lookup(id200, 1, out.data()); }).find("corrupt at row 200") != std::string::npos);
  CHECK_THROWS_AS(overrun.decode_rows(170, 200, range.data()), edo::Error);
  CHECK(error_of([&] { overrun.validate_row_map(); }).find("starts at index 110 of tier 1") != std::string::npos);
  const edo::Reader unsorted = with(3, 500, "h3.edo");  // run 1 from row 500, after run 2's 300
  CHECK_THROWS_AS(unsorted.decode_all(all.data()), edo::Error);
  CHECK(error_of([&] { unsorted.validate_row_map(); }).find("run 1 ends at row 300") != std::string::npos);
  const edo::Reader late = with(0, 1, "h4.edo");
  const int64_t id0[] = {0};
  CHECK(error_of([&] { late.lookup(id0, 1, out.data()); }).find("corrupt at row 0") != std::string::npos);

  // The manifest's map names its one section and nothing else.
  const std::string extra = edo::test::with_manifest(bytes, [](nlohmann::json& m) { m["rowmap"]["block"] = 256; });
  edo::test::write_bytes(p.dir.file("h5.edo"), extra);
  CHECK(error_of([&] { edo::Reader::open(p.dir.file("h5.edo")); }).find("'runs' holds that section's name") !=
        std::string::npos);

  // Opening checks the section's shape against the tiers.
  const std::vector<uint64_t> three = {180, 120, 300};
  const std::vector<uint8_t> raw(3 * edo::io::kRowRunBytes, 0);
  CHECK(error_of([&] {
          edo::io::RowRuns(raw.data(), raw.size() - 1, 600, three, "m.edo");
        }).find("not a whole number of 24-byte runs") != std::string::npos);
  CHECK(error_of([&] { edo::io::RowRuns(raw.data(), 0, 600, three, "m.edo"); }).find("0 runs") != std::string::npos);
  CHECK(error_of([&] { edo::io::RowRuns(raw.data(), raw.size(), 2, three, "m.edo"); }).find("3 runs for 2 rows") !=
        std::string::npos);
  const std::vector<uint8_t> tiers = {0, 0, 1, 1, 0, 2};
  CHECK(edo::io::rowmap_runs(tiers.data(), tiers.size(), 4) ==
        std::vector<uint64_t>{0, 0, 0, 2, 1, 0, 4, 0, 2, 5, 2, 0});
  CHECK(edo::io::rowmap_runs(tiers.data(), tiers.size(), 3).empty());  // more runs than asked for
}

TEST_CASE("reader: row map checkpoints count each tier per 256-row block") {
  std::vector<uint8_t> tiers(600);
  for (size_t i = 0; i < tiers.size(); ++i) tiers[i] = static_cast<uint8_t>(i % 3 == 0 ? 1 : 0);
  const std::vector<uint64_t> rank = edo::io::rowmap_rank(tiers.data(), tiers.size(), 2);
  REQUIRE(rank.size() == 3 * 2);
  CHECK(rank[0] == 0);
  CHECK(rank[1] == 0);
  CHECK(rank[2] == 170);  // rows 0..255: 86 in tier 1
  CHECK(rank[3] == 86);
  const edo::io::RowMap map(tiers.data(), tiers.size(), reinterpret_cast<const uint8_t*>(rank.data()), rank.size() * 8,
                            600, {400, 200}, "m");
  map.validate();
  CHECK(map.locate(599).tier == 0);
  CHECK(map.locate(599).index == 399);
  CHECK(map.locate(597).tier == 1);
  CHECK(map.locate(597).index == 199);
  CHECK(error_of([&] {
          edo::io::RowMap(tiers.data(), 599, reinterpret_cast<const uint8_t*>(rank.data()), 48, 600, {400, 200}, "m");
        }).find("599 bytes") != std::string::npos);
  CHECK(error_of([&] {
          edo::io::RowMap(tiers.data(), 600, reinterpret_cast<const uint8_t*>(rank.data()), 48, 600, {400, 100}, "m");
        }).find("500 rows") != std::string::npos);
}

namespace {

// Tiers on the GPU, on the host and a fallback, read on the GPU (ids past the table: the default vector).
const std::vector<std::string> kGpuTiers = {"hot:rows=20%:int8:gpu", "warm:rows=30%:fp16:gpu",
                                            "cold:rest:pca:4,int8:host", "drop:rows=5%:default"};
edo::Reader open_on_gpu(const Packed& p) {
  edo::ReaderOptions opt;
  opt.device = edo::Device::cuda;
  opt.unknown_ids = edo::UnknownIdPolicy::default_vector;
  return edo::Reader::open(p.path, opt);
}

}  // namespace

TEST_CASE("reader: GPU lookup matches the CPU (skipped without a GPU)") {
  if (!edo::cuda_available()) {
    MESSAGE("skipped: no GPU");
    return;
  }
  const Packed p(kGpuTiers);
  const edo::Reader r = open_on_gpu(p);
  CHECK(r.tiers()[0].on_device);
  CHECK(r.tiers()[1].on_device);
  CHECK(!r.tiers()[2].on_device);
  std::vector<int64_t> ids;
  edo::Rng rng(4);
  for (int i = 0; i < 5000; ++i) ids.push_back(static_cast<int64_t>(rng.below(p.rows + 10)));
  std::vector<float> cpu(ids.size() * p.dim), gpu(ids.size() * p.dim);
  r.lookup(ids.data(), ids.size(), cpu.data());
  edo::DeviceBuffer out(gpu.size() * sizeof(float));
  r.lookup_device(ids.data(), ids.size(), out.as<float>());
  out.download(gpu.data(), out.bytes());
  CHECK(cpu == gpu);
}

TEST_CASE(
    "reader: GPU lookup of host tiers by copies, mapped and managed memory matches the CPU (skipped without a GPU)") {
  if (!edo::cuda_available()) {
    MESSAGE("skipped: no GPU");
    return;
  }
  Packed p({"hot:rows=20%:fp16:gpu", "warm:rows=30%:int8:host", "cold:rest:int4:host", "drop:rows=5%:default"});
  std::vector<int64_t> ids;
  edo::Rng rng(6);
  for (int i = 0; i < 5000; ++i) ids.push_back(static_cast<int64_t>(rng.below(p.rows)));
  std::vector<float> cpu(ids.size() * p.dim);
  edo::Reader::open(p.path).lookup(ids.data(), ids.size(), cpu.data());
  for (const auto access : {edo::HostTierAccess::copy, edo::HostTierAccess::mapped, edo::HostTierAccess::managed}) {
    CAPTURE(static_cast<int>(access));
    edo::ReaderOptions opt;
    opt.device = edo::Device::cuda;
    opt.host_access = access;
    const edo::Reader r = edo::Reader::open(p.path, opt);
    std::vector<float> gpu(cpu.size());
    edo::DeviceBuffer out(gpu.size() * sizeof(float));
    r.lookup_device(ids.data(), ids.size(), out.as<float>());
    out.download(gpu.data(), out.bytes());
    CHECK(cpu == gpu);
  }
}

namespace {

// Bags of a seeded size (empty ones included) over ids drawn from [0, rows).
struct RandomBags {
  std::vector<int64_t> offsets, ids;
  std::vector<float> weights;
  RandomBags(size_t count, uint64_t rows, uint64_t seed) {
    edo::Rng rng(seed);
    for (size_t b = 0; b < count; ++b) {
      offsets.push_back(static_cast<int64_t>(ids.size()));
      const uint64_t n = b % 7 == 3 ? 0 : rng.below(150);  // some bags longer than a decode batch
      for (uint64_t k = 0; k < n; ++k) {
        ids.push_back(static_cast<int64_t>(rng.below(rows)));
        weights.push_back(static_cast<float>(rng.uniform() * 2 - 0.5));
      }
    }
  }
  edo::Bags bags(bool weighted) const {
    return {offsets.data(), offsets.size(), ids.data(), ids.size(), weighted ? weights.data() : nullptr};
  }
};

}  // namespace

TEST_CASE("reader: every tier kind of the traits table packs, opens, answers its rows and pools its bags") {
  // Iterates edo::tier_kinds(), so a new kind is covered without a new test.
  std::set<std::string> names, stages;
  for (const edo::TierKindTraits& t : edo::tier_kinds()) {
    CAPTURE(t.name);
    CHECK(&edo::tier_kind_traits(t.kind) == &t);
    CHECK(names.insert(t.name).second);
    for (const char* stage : t.stages)
      if (stage) CHECK(stages.insert(stage).second);  // no two kinds claim one stage name
    CHECK(edo::tier_kind_of(t.example) == t.kind);
    CHECK((edo::tier_kind_word(t.kind) != nullptr) == t.fallback);
    const Packed p({"hot:rows=30%:fp16", std::string("cold:rest:") + t.example});
    const edo::Reader r = edo::Reader::open(p.path);
    REQUIRE(r.tiers().size() == 2);
    CHECK(r.tiers()[1].kind == t.kind);
    std::vector<int64_t> ids(p.rows);
    std::iota(ids.begin(), ids.end(), 0);
    std::vector<float> rows(p.rows * p.dim);
    r.lookup(ids.data(), ids.size(), rows.data());
    for (float v : rows) REQUIRE(std::isfinite(v));
    const RandomBags rb(50, p.rows, 4);
    std::vector<float> want(rb.offsets.size() * p.dim), got(want.size());
    r.lookup_bags_reference(rb.bags(false), edo::PoolMode::sum, want.data());
    r.lookup_bags(rb.bags(false), edo::PoolMode::sum, got.data());
    CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
  }
  CHECK(names.size() == edo::kTierKindCount);
  CHECK(edo::tier_kind_of("int4:group=32") == edo::TierKind::codec);
  CHECK(edo::tier_kind_of("zero:1") == edo::TierKind::codec);  // "zero" is a bare word
}

TEST_CASE("reader: pooled bags equal the reference bit for bit, every mode and tier kind, any thread count") {
  for (const auto& tiers : std::vector<std::vector<std::string>>{
           {"all:rest:int8"},
           {"hot:rows=10%:fp16", "warm:rows=40%:int4", "cold:rest:default"},
           {"hot:rows=20%:int8", "csr:rows=40%:csr:density=0.5,values=fp16", "rare:rest:nearest"}}) {
    CAPTURE(tiers.front());
    const Packed p(tiers);
    const edo::Reader r = edo::Reader::open(p.path);
    const RandomBags rb(300, p.rows, 5);
    for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::mean, edo::PoolMode::max}) {
      for (const bool weighted : {false, true}) {
        if (weighted && mode != edo::PoolMode::sum) continue;
        CAPTURE(edo::pool_mode_name(mode));
        CAPTURE(weighted);
        std::vector<float> want(rb.offsets.size() * p.dim), got(want.size(), -1.0f);
        r.lookup_bags_reference(rb.bags(weighted), mode, want.data());
        for (const int threads : {1, 2, 3}) {
          omp_set_num_threads(threads);
          r.lookup_bags(rb.bags(weighted), mode, got.data());
          CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
        }
        omp_set_num_threads(omp_get_num_procs());
        // The reference is what its words say: rows summed (weighted), averaged or max-pooled.
        std::vector<float> row(p.dim);
        for (size_t b = 0; b < rb.offsets.size(); ++b) {
          const size_t begin = static_cast<size_t>(rb.offsets[b]);
          const size_t end = b + 1 < rb.offsets.size() ? static_cast<size_t>(rb.offsets[b + 1]) : rb.ids.size();
          for (uint64_t j = 0; j < p.dim; ++j) {
            double acc = mode == edo::PoolMode::max && end > begin ? -HUGE_VAL : 0.0;
            for (size_t k = begin; k < end; ++k) {
              r.lookup(&rb.ids[k], 1, row.data());
              if (mode == edo::PoolMode::max)
                acc = std::max(acc, static_cast<double>(row[j]));
              else
                acc += (weighted ? rb.weights[k] : 1.0) * row[j];
            }
            if (mode == edo::PoolMode::mean && end > begin) acc /= static_cast<double>(end - begin);
            REQUIRE(want[b * p.dim + j] == doctest::Approx(acc).epsilon(1e-5).scale(1.0));
          }
        }
      }
    }
  }
}

TEST_CASE("reader: malformed bags are errors naming the offsets, unknown ids follow the policy") {
  const Packed p({"all:rest:int8"});
  const edo::Reader r = edo::Reader::open(p.path);
  const int64_t ids[] = {1, 2, 3};
  const float w[] = {1, 1, 1};
  std::vector<float> out(3 * p.dim);
  const auto err = [&](std::vector<int64_t> offsets, const float* weights, edo::PoolMode mode) {
    return error_of([&] { r.lookup_bags({offsets.data(), offsets.size(), ids, 3, weights}, mode, out.data()); });
  };
  // Bad offsets are bad data (exit 1), weights with max or mean a bad call (exit 2).
  const auto code = [&](std::vector<int64_t> offsets, const float* weights, edo::PoolMode mode) {
    try {
      r.lookup_bags({offsets.data(), offsets.size(), ids, 3, weights}, mode, out.data());
    } catch (const edo::Error& e) {
      return e.code();
    }
    return edo::ExitCode::ok;
  };
  CHECK(code({0, 2, 1}, nullptr, edo::PoolMode::sum) == edo::ExitCode::runtime);
  CHECK(code({0}, w, edo::PoolMode::max) == edo::ExitCode::usage);
  CHECK(err({1, 2}, nullptr, edo::PoolMode::sum).find("offsets: the first bag starts at 1, not 0") !=
        std::string::npos);
  CHECK(err({0, 2, 1}, nullptr, edo::PoolMode::sum).find("below the one before it") != std::string::npos);
  CHECK(err({0, 4}, nullptr, edo::PoolMode::sum).find("beyond the 3 ids") != std::string::npos);
  CHECK(err({0}, w, edo::PoolMode::mean).find("mode sum only") != std::string::npos);
  CHECK(error_of([] { edo::parse_pool_mode("avg"); }).find("sum, mean or max") != std::string::npos);
  const int64_t outside[] = {0, static_cast<int64_t>(p.rows)};
  const int64_t one[] = {0};
  CHECK(error_of([&] {
          r.lookup_bags({one, 1, outside, 2, nullptr}, edo::PoolMode::sum, out.data());
        }).find("outside the table") != std::string::npos);
  // Every bag empty: zeros, in every mode.
  const int64_t none[] = {0, 0};
  for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::mean, edo::PoolMode::max}) {
    std::vector<float> zeros(2 * p.dim, 7.0f);
    r.lookup_bags({none, 2, ids, 0, nullptr}, mode, zeros.data());
    for (float v : zeros) CHECK(v == 0.0f);
  }
}

// lookup_bags_device against lookup_bags on the file's ids below `ids_below`.
static void check_gpu_bags(const Packed& p, uint64_t ids_below) {
  const edo::Reader r = open_on_gpu(p);
  const RandomBags rb(400, ids_below, 6);
  // One bag bigger than a GPU window (65,536 ids), folded in pieces.
  std::vector<int64_t> big_ids(70000), big_offsets{0, 3, 3, 69990};
  for (size_t i = 0; i < big_ids.size(); ++i) big_ids[i] = static_cast<int64_t>((i * 7919) % p.rows);
  std::vector<float> big_weights(big_ids.size(), 0.5f);
  for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::mean, edo::PoolMode::max}) {
    for (const bool weighted : {false, true}) {
      if (weighted && mode != edo::PoolMode::sum) continue;
      CAPTURE(edo::pool_mode_name(mode));
      CAPTURE(weighted);
      for (const edo::Bags& bags :
           {rb.bags(weighted), edo::Bags{big_offsets.data(), big_offsets.size(), big_ids.data(), big_ids.size(),
                                         weighted ? big_weights.data() : nullptr}}) {
        std::vector<float> cpu(bags.count * p.dim), gpu(cpu.size());
        r.lookup_bags(bags, mode, cpu.data());
        edo::DeviceBuffer out(gpu.size() * sizeof(float));
        r.lookup_bags_device(bags, mode, out.as<float>());
        out.download(gpu.data(), out.bytes());
        CHECK(std::memcmp(cpu.data(), gpu.data(), cpu.size() * sizeof(float)) == 0);
      }
    }
  }
}

TEST_CASE("reader: GPU pooled bags equal the CPU's bit for bit, every mode (skipped without a GPU)") {
  if (!edo::cuda_available()) {
    MESSAGE("skipped: no GPU");
    return;
  }
  // Rows of host tiers (decoded rows, then pooled), and every tier resident
  // on a table wider than a warp's sweep of 128 columns (pooled straight
  // from the codes; fp8's multiply by its scale must not fuse into the sum).
  const Packed mixed(kGpuTiers);
  const Packed resident({"hot:rows=20%:int8:gpu", "warm:rows=30%:fp16:gpu", "f8:rows=20%:fp8:e5m2:gpu",
                         "cold:rest:int4:group=32,scale=fp16:gpu"},
                        false, 200, 700);
  for (const Packed* file : {&mixed, &resident}) {
    check_gpu_bags(*file, file == &mixed ? file->rows + 10 : file->rows);  // mixed: ids past the table too
  }
}

TEST_CASE("reader: pooled bags into device memory need a reader opened for the GPU") {
  const Packed p({"all:rest:int8"});
  const edo::Reader r = edo::Reader::open(p.path);
  const int64_t offsets[1] = {0}, ids[2] = {1, 2};
  std::vector<float> out(p.dim);
  CHECK_THROWS_AS(r.lookup_bags_device({offsets, 1, ids, 2, nullptr}, edo::PoolMode::sum, out.data()), edo::Error);
}
