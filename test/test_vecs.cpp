// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/io/vecs.hpp>

#include <cstring>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::TempDir;

namespace {

// One TEXMEX record: the dimension word, then the values' bytes.
template <class T>
std::string record(int32_t dim, const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(&dim), 4) + test::as_bytes(values);
}

}  // namespace

TEST_CASE("vecs: the SIFT query .fvecs matches an independent parse") {
  const std::string path = test::shared_data("siftsmall_query.fvecs");
  const std::string bytes = test::read_bytes(path);
  auto t = open_table(path);
  CHECK(t->format() == "fvecs");
  CHECK(t->dtype() == DType::f32);
  REQUIRE(t->rows() == 100);
  REQUIRE(t->dim() == 128);
  std::vector<float> all(100 * 128);
  t->read_f32(0, 100, all.data());
  for (uint64_t r : {uint64_t{0}, uint64_t{37}, uint64_t{99}}) {
    int32_t d;
    std::memcpy(&d, bytes.data() + r * (4 + 128 * 4), 4);
    CHECK(d == 128);
    CHECK(std::memcmp(all.data() + r * 128, bytes.data() + r * (4 + 128 * 4) + 4, 128 * 4) == 0);
  }
  // SIFT descriptors are non-negative integers stored as floats.
  for (float v : all) REQUIRE((v >= 0 && v == static_cast<float>(static_cast<int>(v))));
}

TEST_CASE("vecs: BIGANN ground truth as ids and as a table") {
  const std::string path = test::shared_data("bigann10k_groundtruth.ivecs");
  uint64_t rows = 0, dim = 0;
  const std::vector<int32_t> ids = read_ivecs(path, &rows, &dim);
  REQUIRE(rows == 100);
  REQUIRE(dim == 100);
  for (uint64_t i = 0; i < rows; ++i) CHECK(ids[i * dim] == static_cast<int32_t>(i));  // each query finds itself
  for (int32_t id : ids) REQUIRE((id >= 0 && id < 10000));
  auto t = open_table(path);
  CHECK(t->dtype() == DType::i32);
  CHECK(t->rows_f32(42, 1)[0] == 42.f);
  CHECK(t->rows_f32(42, 1)[99] == static_cast<float>(ids[42 * 100 + 99]));
}

TEST_CASE("vecs: .bvecs rows are widened from uint8") {
  TempDir dir;
  const std::string path = dir.file("x.bvecs");
  test::write_bytes(path, record<uint8_t>(3, {0, 1, 255}) + record<uint8_t>(3, {7, 8, 9}));
  auto t = open_table(path);
  CHECK(t->format() == "bvecs");
  CHECK(t->rows() == 2);
  std::vector<float> all(6);
  t->read_f32(0, 2, all.data());
  CHECK(all == std::vector<float>{0, 1, 255, 7, 8, 9});
}

TEST_CASE("vecs: hostile files get one clear line and are never read past their end") {
  TempDir dir;
  auto expect_error = [&](const std::string& name, const std::string& bytes, const std::string& needle) {
    const std::string path = dir.file(name);
    test::write_bytes(path, bytes);
    const std::string msg = error_of([&] {
      auto t = open_table(path);
      std::vector<float> all(t->rows() * t->dim());
      t->read_f32(0, t->rows(), all.data());
    });
    CAPTURE(msg);
    CHECK(msg.find(path) == 0);
    CHECK(msg.find(needle) != std::string::npos);
  };
  expect_error("empty.fvecs", "", "too short");
  expect_error("short.fvecs", "\x02\x00", "too short");
  expect_error("zero.fvecs", record<float>(0, {}), "dimension 0");
  expect_error("negative.ivecs", record<int32_t>(-4, {1, 2, 3, 4}), "dimension -4");
  expect_error("huge.fvecs", record<float>(1 << 24, {1.f}), "dimension 16777216");
  expect_error("ragged.fvecs", record<float>(2, {1, 2}) + record<float>(2, {3, 4}) + "\x02\x00", "not a multiple");
  // Same total size, but the second record claims another width.
  expect_error("mixed.fvecs", record<float>(2, {1, 2}) + record<float>(1, {3, 4}), "record 1 has dimension 1");
  expect_error("mixed.bvecs", record<uint8_t>(4, {1, 2, 3, 4}) + record<uint8_t>(-1, {5, 6, 7, 8}),
               "record 1 has dimension -1");

  const std::string bad = dir.file("bad.ivecs");
  test::write_bytes(bad, record<int32_t>(2, {1, 2}) + record<int32_t>(3, {4, 5}));
  uint64_t rows = 0, dim = 0;
  CHECK(error_of([&] { read_ivecs(bad, &rows, &dim); }).find("record 1 has dimension 3") != std::string::npos);
  test::write_bytes(bad, "");
  CHECK(error_of([&] { read_ivecs(bad, &rows, &dim); }).find("too short") != std::string::npos);
  CHECK_THROWS_AS(open_table(bad + ":member"), edo::Error);
}
