// SPDX-License-Identifier: Apache-2.0
// Shards through the library (docs/SCALE.md): the split rule, and a shard
// set read by ShardSet answering lookups and row ranges across shard
// boundaries exactly as the one-process file does.
#include "test_util.hpp"

#include <edo/edo_file.hpp>
#include <edo/reader.hpp>
#include <edo/shard.hpp>
#include <edo/shard_set.hpp>

#include <cstring>
#include <random>

using namespace edo;

TEST_CASE("shards: the split rule cuts at multiples of 2048 rows and covers the table") {
  for (const uint64_t rows : {uint64_t{2048}, uint64_t{10000}, uint64_t{65536}, uint64_t{1000003}}) {
    const uint64_t chunks = (rows + 2047) / 2048;
    for (uint32_t n = 1; n <= std::min<uint64_t>(chunks, 9); ++n) {
      uint64_t next = 0;
      for (uint32_t i = 0; i < n; ++i) {
        const RowRange r = shard_rows(rows, i, n);
        CHECK(r.begin == next);
        CHECK(r.begin % kShardChunkRows == 0);
        CHECK(r.size() > 0);
        next = r.end;
      }
      CHECK(next == rows);
    }
    CHECK_THROWS_WITH(shard_rows(rows, 0, static_cast<uint32_t>(chunks + 1)), doctest::Contains("at most"));
  }
  CHECK_THROWS(shard_rows(10000, 3, 3));
  CHECK_THROWS(shard_rows(10000, 0, 0));
}

TEST_CASE("shards: a shard set answers lookups and ranges across boundaries as the one file does") {
  test::TempDir dir;
  auto glove = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  QuantizeOptions whole;
  whole.spec = "int4:group=16";
  quantize_to_edo(*glove, dir.file("whole.edo"), whole);
  std::vector<std::string> parts;
  for (uint32_t i = 0; i < 3; ++i) {
    const RowRange r = shard_rows(glove->rows(), i, 3);
    auto view = row_range_view(*glove, r);
    QuantizeOptions opt = whole;
    opt.first_row = r.begin;
    opt.shard = shard_entry(i, 3, r, glove->rows());
    parts.push_back(dir.file("part-" + std::to_string(i) + ".edo"));
    quantize_to_edo(*view, parts.back(), opt);
  }
  CHECK_THROWS_WITH(Reader::open(parts[1]), doctest::Contains("shard 1/3 of a table"));
  write_shard_set(parts, dir.file("t.edoset"));
  REQUIRE(is_shard_set_file(dir.file("t.edoset")));
  CHECK_FALSE(is_shard_set_file(dir.file("whole.edo")));
  const ShardSet set = ShardSet::open(dir.file("t.edoset"));
  const Reader one = Reader::open(dir.file("whole.edo"));
  REQUIRE(set.rows() == one.rows());
  REQUIRE(set.shard_count() == 3);
  const uint64_t dim = one.dim();
  std::vector<int64_t> ids = {0, 2047, 2048, 6143, 6144, 9999, 2048, 0};
  std::mt19937_64 rng(5);
  for (int i = 0; i < 3000; ++i) ids.push_back(static_cast<int64_t>(rng() % one.rows()));
  std::vector<float> a(ids.size() * dim), b(ids.size() * dim);
  set.lookup(ids.data(), ids.size(), a.data());
  one.lookup(ids.data(), ids.size(), b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  std::vector<float> ra(5000 * dim), rb(5000 * dim);
  set.decode_rows(1500, 5000, ra.data());
  one.decode_rows(1500, 5000, rb.data());
  CHECK(std::memcmp(ra.data(), rb.data(), ra.size() * sizeof(float)) == 0);
  const int64_t outside[] = {3, 10000};
  CHECK_THROWS_WITH(set.lookup(outside, 2, a.data()), doctest::Contains("id 10000 is outside"));
  ReaderOptions zeros;
  zeros.unknown_ids = UnknownIdPolicy::default_vector;
  const ShardSet lenient = ShardSet::open(dir.file("t.edoset"), zeros);
  lenient.lookup(outside, 2, a.data());
  one.lookup(outside, 1, b.data());
  CHECK(std::memcmp(a.data(), b.data(), dim * sizeof(float)) == 0);  // row 3 as the one file has it
  for (uint64_t j = 0; j < dim; ++j) CHECK(a[dim + j] == 0.0f);      // the default vector: zeros
  CHECK(set.file_bytes() > 0);
}
