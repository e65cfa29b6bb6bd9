// SPDX-License-Identifier: Apache-2.0
// share_work (lib/core/include/edo/work_share.hpp): every chunk runs once,
// the caller never waits for a helper that has not started, errors come from
// the lowest failing chunk, and lookups through it give the same rows with
// helpers free or held back.
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/reader.hpp>
#include <edo/work_share.hpp>

#include <omp.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

// Helpers held back for the scope of one test, released however it ends.
struct HeldHelpers {
  HeldHelpers() { edo::detail::hold_helpers(true); }
  ~HeldHelpers() { edo::detail::hold_helpers(false); }
};

}  // namespace

TEST_CASE("work share: every chunk runs exactly once, at any thread count") {
  for (const int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (const size_t chunks : {size_t{0}, size_t{1}, size_t{7}, size_t{5000}}) {
      std::vector<std::atomic<int>> runs(chunks);
      edo::share_work(chunks, [&](size_t c) { runs[c].fetch_add(1); });
      for (size_t c = 0; c < chunks; ++c) REQUIRE(runs[c].load() == 1);
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST_CASE("work share: a helper held back does not stall the call; the caller does every chunk") {
  omp_set_num_threads(omp_get_num_procs());
  if (edo::share_threads() < 2) {
    MESSAGE("one core: no helper to hold back");
    return;
  }
  const HeldHelpers held;
  const size_t before = edo::detail::helper_chunks_run();
  const std::thread::id caller = std::this_thread::get_id();
  std::atomic<size_t> on_caller{0};
  const auto t0 = std::chrono::steady_clock::now();
  edo::share_work(2000, [&](size_t) {
    if (std::this_thread::get_id() == caller) on_caller.fetch_add(1);
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(on_caller.load() == 2000);
  CHECK(edo::detail::helper_chunks_run() == before);
  CHECK(seconds < 5.0);  // not a timing claim: a call that waited for the held helper would never return
}

TEST_CASE("work share: free helpers take part in long calls") {
  omp_set_num_threads(omp_get_num_procs());
  if (edo::share_threads() < 2) {
    MESSAGE("one core: no helper");
    return;
  }
  const size_t before = edo::detail::helper_chunks_run();
  // Chunks long enough (1 ms each) that a woken helper claims some of them.
  edo::share_work(200, [](size_t) { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
  WARN(edo::detail::helper_chunks_run() > before);  // a busy machine may never run the helper
}

TEST_CASE("work share: the lowest failing chunk's error is rethrown after the rest ran") {
  omp_set_num_threads(omp_get_num_procs());
  std::atomic<size_t> ran{0};
  const auto call = [&] {
    edo::share_work(300, [&](size_t c) {
      ran.fetch_add(1);
      if (c == 41 || c == 250) throw std::runtime_error("chunk " + std::to_string(c));
    });
  };
  CHECK_THROWS_WITH(call(), "chunk 41");
  CHECK(ran.load() == 300);
}

TEST_CASE("work share: calls from several threads at once each get all their chunks run") {
  omp_set_num_threads(omp_get_num_procs());
  std::vector<std::thread> callers;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round) {
        std::vector<int> runs(100 + static_cast<size_t>(t));
        edo::share_work(runs.size(), [&](size_t c) { ++runs[c]; });
        for (int r : runs) wrong += r != 1;
      }
    });
  for (auto& c : callers) c.join();
  CHECK(wrong.load() == 0);
}

TEST_CASE("work share: lookups and pooled bags are the same with helpers free or held back") {
  const edo::test::Packed p({"hot:rows=10%:fp16", "warm:rows=40%:int8", "cold:rest:int4"});
  const edo::Reader r = edo::Reader::open(p.path);
  std::vector<int64_t> ids(20000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7919) % p.rows);
  std::vector<int64_t> offsets;
  for (size_t at = 0; at < ids.size(); at += 1 + (at % 37)) offsets.push_back(static_cast<int64_t>(at));
  const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), ids.size(), nullptr};
  omp_set_num_threads(omp_get_num_procs());
  std::vector<float> rows_free(ids.size() * p.dim), rows_held(rows_free.size());
  std::vector<float> bags_free(offsets.size() * p.dim), bags_held(bags_free.size());
  r.lookup(ids.data(), ids.size(), rows_free.data());
  r.lookup_bags(bags, edo::PoolMode::sum, bags_free.data());
  {
    const HeldHelpers held;
    r.lookup(ids.data(), ids.size(), rows_held.data());
    r.lookup_bags(bags, edo::PoolMode::sum, bags_held.data());
  }
  CHECK(std::memcmp(rows_free.data(), rows_held.data(), rows_free.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(bags_free.data(), bags_held.data(), bags_free.size() * sizeof(float)) == 0);
}

TEST_CASE("reader: placement memory serves the rows and bags of the mapping; a resident bound with it is refused") {
  const edo::test::Packed p({"hot:rows=10%:fp16", "warm:rows=40%:int8", "cold:rest:int4"});
  edo::ReaderOptions in_memory;
  in_memory.placement = edo::io::Placement::memory;
  const edo::Reader mapped = edo::Reader::open(p.path), copied = edo::Reader::open(p.path, in_memory);
  std::vector<int64_t> ids(3000);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 31) % p.rows);
  const int64_t offsets[3] = {0, 10, 10};
  const edo::Bags bags{offsets, 3, ids.data(), ids.size(), nullptr};
  std::vector<float> a(ids.size() * p.dim), b(a.size());
  mapped.lookup(ids.data(), ids.size(), a.data());
  copied.lookup(ids.data(), ids.size(), b.data());
  CHECK(a == b);
  mapped.lookup_bags(bags, edo::PoolMode::mean, a.data());
  copied.lookup_bags(bags, edo::PoolMode::mean, b.data());
  CHECK(std::memcmp(a.data(), b.data(), 3 * p.dim * sizeof(float)) == 0);
  CHECK(edo::io::parse_placement("memory") == edo::io::Placement::memory);
  CHECK_THROWS_AS(edo::io::parse_placement("huge"), edo::Error);
  in_memory.max_resident = 1 << 20;
  CHECK_THROWS_WITH_AS(edo::Reader::open(p.path, in_memory), doctest::Contains("choose one"), edo::Error);
}

TEST_CASE("reader: pooled bags of a wide table (a few rows at once) equal the reference bit for bit") {
  // 3,000 values a row: the buffer holds 21 rows, so bags of up to 60 ids are folded in pieces.
  const edo::test::TempDir dir;
  const uint64_t rows = 50, dim = 3000;
  std::vector<float> values(rows * dim);
  edo::Rng rng(3);
  for (auto& v : values) v = static_cast<float>(rng.uniform() - 0.5);
  auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
  w->write_f32(values.data(), rows);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PackOptions opt;
  for (const char* t : {"hot:rows=20%:fp16", "cold:rest:int4"}) opt.tiers.push_back(edo::parse_tier_spec(t));
  opt.freq.assign(rows, 1.0);
  edo::pack_to_edo(*table, dir.file("w.edo"), opt);
  const edo::Reader r = edo::Reader::open(dir.file("w.edo"));
  std::vector<int64_t> ids, offsets;
  std::vector<float> weights;
  for (size_t b = 0; b < 40; ++b) {
    offsets.push_back(static_cast<int64_t>(ids.size()));
    for (uint64_t k = 0, n = (b * 37) % 61; k < n; ++k) {
      ids.push_back(static_cast<int64_t>(rng.below(rows)));
      weights.push_back(static_cast<float>(rng.uniform()));
    }
  }
  for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::mean, edo::PoolMode::max}) {
    const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), ids.size(),
                         mode == edo::PoolMode::sum ? weights.data() : nullptr};
    std::vector<float> want(offsets.size() * dim), got(want.size());
    r.lookup_bags_reference(bags, mode, want.data());
    r.lookup_bags(bags, mode, got.data());
    CHECK(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)) == 0);
  }
}
