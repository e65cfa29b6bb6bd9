// SPDX-License-Identifier: Apache-2.0
// The pooled lookup's kernels on every CPU path this machine runs, against
// the reference (lookup_bags_reference) bit for bit: every scalar codec the
// kernels decode (and the widths they leave to a row buffer), every tier
// kind, row widths that fill no register, every pooling mode.
#include "test_packed.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>

#include <edo/cpu_path.hpp>
#include <edo/reader.hpp>
#include <edo/tier.hpp>

#include <cstring>
#include <string>
#include <vector>

using edo::test::Packed;

namespace {

// The CPU paths this machine runs, portable first.
std::vector<edo::CpuPath> runnable_paths() {
  std::vector<edo::CpuPath> paths;
  for (const edo::CpuPath p : {edo::CpuPath::portable, edo::CpuPath::avx2, edo::CpuPath::avx512})
    if (static_cast<uint8_t>(p) <= static_cast<uint8_t>(edo::cpu_path_supported())) paths.push_back(p);
  return paths;
}

// Restores the process's path when a check fails half-way.
struct PathGuard {
  edo::CpuPath saved = edo::cpu_path();
  ~PathGuard() { edo::set_cpu_path(saved); }
};

struct Bags {
  std::vector<int64_t> offsets, ids;
  std::vector<float> weights;
  // Bags of 0 to 160 ids (one of 5,000, longer than a stream's piece), some repeated ids.
  Bags(uint64_t rows, uint64_t seed) {
    edo::Rng rng(seed);
    for (size_t b = 0; b < 60; ++b) {
      offsets.push_back(static_cast<int64_t>(ids.size()));
      const uint64_t n = b == 17 ? 5000 : b % 9 == 4 ? 0 : rng.below(160);
      for (uint64_t k = 0; k < n; ++k) {
        ids.push_back(static_cast<int64_t>(rng.below(rows)));
        weights.push_back(static_cast<float>(rng.uniform() * 3 - 1));
      }
    }
  }
  edo::Bags bags(bool weighted) const {
    return {offsets.data(), offsets.size(), ids.data(), ids.size(), weighted ? weights.data() : nullptr};
  }
};

// lookup_bags on every path equals the reference, every mode, bit for bit;
// so do lookup()'s rows, against the rows decode_rows() decodes (the
// codecs' own decoders, no pooling kernel).
void check_every_path(const edo::Reader& r, const Bags& b) {
  PathGuard guard;
  const uint64_t dim = r.dim();
  std::vector<float> table(r.rows() * dim);
  r.decode_rows(0, r.rows(), table.data());
  std::vector<int64_t> ids;
  for (const int64_t id : b.ids)
    if (id >= 0 && static_cast<uint64_t>(id) < r.rows()) ids.push_back(id);
  std::vector<float> want_rows(ids.size() * dim), got_rows(want_rows.size());
  for (size_t k = 0; k < ids.size(); ++k)
    std::memcpy(want_rows.data() + k * dim, table.data() + static_cast<uint64_t>(ids[k]) * dim, dim * sizeof(float));
  for (const edo::CpuPath path : runnable_paths()) {
    const std::string path_name = edo::cpu_path_name(path);
    CAPTURE(path_name);
    edo::set_cpu_path(path);
    std::fill(got_rows.begin(), got_rows.end(), -7.0f);
    r.lookup(ids.data(), ids.size(), got_rows.data());
    CHECK(std::memcmp(got_rows.data(), want_rows.data(), want_rows.size() * sizeof(float)) == 0);
  }
  for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::mean, edo::PoolMode::max}) {
    for (const bool weighted : {false, true}) {
      if (weighted && mode != edo::PoolMode::sum) continue;
      const std::string mode_name = edo::pool_mode_name(mode);
      CAPTURE(mode_name);
      CAPTURE(weighted);
      std::vector<float> want(b.offsets.size() * dim), got(want.size());
      r.lookup_bags_reference(b.bags(weighted), mode, want.data());
      for (const edo::CpuPath path : runnable_paths()) {
        const std::string path_name = edo::cpu_path_name(path);
        CAPTURE(path_name);
        edo::set_cpu_path(path);
        std::fill(got.begin(), got.end(), -7.0f);
        r.lookup_bags(b.bags(weighted), mode, got.data());
        CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
      }
    }
  }
}

}  // namespace

TEST_CASE("pool kernels: every scalar codec, on every CPU path, pools and looks up the reference's bits") {
  MESSAGE("CPU paths run here: up to " << edo::cpu_path_name(edo::cpu_path_supported()));
  // Kernels for every scalar kind (row-wise, grouped, fp16 scales); groups no register fits (int8:group=12)
  // and codecs of other families (rot) go through a row buffer. Widths: 17 (a tail of one value past a register of
  // 16), 40 (groups of 8 that a register of 16 straddles), 128, 200 (a block of 128, then 64, then 8).
  const std::vector<std::string> codecs = {"fp32",
                                           "fp16",
                                           "bf16",
                                           "fp8",
                                           "fp8:e5m2",
                                           "int8",
                                           "int8:scale=fp16",
                                           "int8:group=8",
                                           "int8:group=32,scale=fp16",
                                           "int8:group=12",
                                           "int4",
                                           "int4:group=8,scale=fp16",
                                           "int4:group=32",
                                           "int6",
                                           "int5:group=16,scale=fp16",
                                           "int3",
                                           "int3:group=32",
                                           "int2",
                                           "bin",
                                           "rot,int4"};
  for (const uint64_t dim : {17u, 40u, 128u, 200u}) {
    for (const std::string& codec : codecs) {
      if (dim % 8 != 0 && codec.find("group") != std::string::npos) continue;
      CAPTURE(dim);
      CAPTURE(codec);
      const Packed p({"all:rest:" + codec}, false, dim, 700);
      const edo::Reader r = edo::Reader::open(p.path);
      check_every_path(r, Bags(p.rows, dim));
    }
  }
}

TEST_CASE("pool kernels: a row 3,000 wide (sweeps, a buffer of one row) on every CPU path") {
  for (const std::string codec : {"fp16", "int8:group=32,scale=fp16", "int4", "int3", "fp8", "pq:m=300,nbits=4"}) {
    CAPTURE(codec);
    const Packed p({"all:rest:" + codec}, false, 3000, 300);
    check_every_path(edo::Reader::open(p.path), Bags(p.rows, 8));
  }
}

TEST_CASE("pool kernels: pq rows folded from the codebooks, every width, on every CPU path") {
  // Sub-spaces of 4, 8 and 16 columns with 8-bit codes are swept in registers (m a multiple of the sweep's
  // sub-spaces or not: 40 / 4 = 10 sub-spaces, a sweep of 8 then two alone); 2 columns, uneven widths (17 / 5)
  // and 4- or 6-bit codes row by row; opq (a rotation) through a row buffer.
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {128, "pq:m=32"}, {128, "pq:m=16"},       {128, "pq:m=8"},        {40, "pq:m=10"},
      {64, "pq:m=32"},  {17, "pq:m=5,nbits=4"}, {48, "pq:m=8,nbits=6"}, {32, "opq:m=8"}};
  for (const auto& [dim, codec] : cases) {
    CAPTURE(dim);
    CAPTURE(codec);
    const Packed p({"all:rest:" + codec}, false, dim, 600);
    check_every_path(edo::Reader::open(p.path), Bags(p.rows, dim + 1));
  }
}

TEST_CASE("pool kernels: every tier kind and mixed tiers, on every CPU path, equal the reference bit for bit") {
  // Iterates edo::tier_kinds(), so a new kind is covered without a new test.
  for (const edo::TierKindTraits& t : edo::tier_kinds()) {
    CAPTURE(t.name);
    const Packed p({"hot:rows=30%:int8:group=16,scale=fp16", std::string("cold:rest:") + t.example}, false, 24, 500);
    check_every_path(edo::Reader::open(p.path), Bags(p.rows, 3));
  }
  // Hashed tiers beyond the traits table's example: several weighted buckets a row, quotient-remainder.
  for (const std::string hashed : {"hash:buckets=32", "hash:buckets=32,k=2,weights=1", "qr:buckets=16"}) {
    CAPTURE(hashed);
    const Packed p({"hot:rows=30%:int8", "cold:rest:" + hashed}, false, 24, 500);
    check_every_path(edo::Reader::open(p.path), Bags(p.rows, 5));
  }
  const Packed p({"hot:rows=10%:fp16", "warm:rows=30%:int4", "csr:rows=20%:csr:density=0.5,values=fp16",
                  "pq:rows=30%:pq:m=8,nbits=4", "cold:rest:centroids:4"},
                 false, 32, 900);
  check_every_path(edo::Reader::open(p.path), Bags(p.rows, 4));
  // Unknown ids answered by the default vector, pooled in the same stream.
  edo::ReaderOptions opt;
  opt.unknown_ids = edo::UnknownIdPolicy::default_vector;
  const edo::Reader r = edo::Reader::open(p.path, opt);
  Bags outside(p.rows + 50, 6);
  check_every_path(r, outside);
}

TEST_CASE("pool kernels: sparse rows (bitmap folded from the mask, csr placed), every value kind, on every CPU path") {
  // Widths below, at and past a register, one over 256 (csr columns of two bytes); dense and sparse rows.
  const std::vector<std::pair<uint64_t, std::string>> cases = {
      {17, "bitmap:density=0.5"}, {24, "csr:density=0.2"},  {24, "bitmap:density=0.3"}, {41, "bitmap:density=0.9"},
      {128, "csr:density=0.25"},  {300, "csr:density=0.1"}, {300, "bitmap:density=0.3"}};
  for (const auto& [dim, form] : cases) {
    for (const char* values : {"fp32", "fp16", "bf16", "int8", "int4"}) {
      const std::string spec = form + ",values=" + values;
      CAPTURE(dim);
      CAPTURE(spec);
      const Packed p({"hot:rows=20%:fp16", "cold:rest:" + spec}, false, dim, 300);
      check_every_path(edo::Reader::open(p.path), Bags(p.rows, dim));
      const Packed alone({"all:rest:" + spec}, false, dim, 200);
      check_every_path(edo::Reader::open(alone.path), Bags(alone.rows, dim + 1));
    }
  }
}

TEST_CASE("pool kernels: the CPU path is chosen at run time and named; one the CPU lacks is refused") {
  PathGuard guard;
  CHECK(edo::parse_cpu_path("avx2") == edo::CpuPath::avx2);
  CHECK(edo::test::error_of([] { (void)edo::parse_cpu_path("sse9"); }).find("expected portable, avx2 or avx512") !=
        std::string::npos);
  edo::set_cpu_path(edo::CpuPath::portable);
  CHECK(edo::cpu_path() == edo::CpuPath::portable);
  if (edo::cpu_path_supported() != edo::CpuPath::avx512)
    CHECK(edo::test::error_of([] { edo::set_cpu_path(edo::CpuPath::avx512); }).find("this CPU runs") !=
          std::string::npos);
}
