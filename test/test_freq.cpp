// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <edo/io/freq.hpp>
#include <edo/io/npy.hpp>

#include <cmath>
#include <limits>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::TempDir;

TEST_CASE("freq: text form with comments, blank lines, CRLF and missing ids") {
  TempDir dir;
  const std::string path = dir.file("counts.txt");
  test::write_bytes(path,
                    "# word counts\n"
                    "\n"
                    "0 120\n"
                    "3\t7.5   # trailing comment\r\n"
                    "   4 1e3\n"
                    "1 +2\n"
                    "   \t\n"
                    "5 0");
  const std::vector<double> f = read_frequencies(path, 6);
  CHECK(f == std::vector<double>{120, 2, 0, 7.5, 1000, 0});
}

TEST_CASE("freq: text errors name the line") {
  TempDir dir;
  const std::string path = dir.file("bad.txt");
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    test::write_bytes(path, text);
    const std::string msg = error_of([&] { read_frequencies(path, 10); });
    CAPTURE(msg);
    CHECK(msg.find(path) == 0);
    CHECK(msg.find(needle) != std::string::npos);
  };
  expect_error("0 1\n# c\n2 3\n0 4\n", "line 4: id 0 appears a second time");
  expect_error("0 1\n1 -3\n", "line 2: count is negative");
  expect_error("0 nan\n", "line 1: count is NaN");
  expect_error("0 inf\n", "line 1: count is infinite");
  expect_error("0 1e999\n", "line 1: count '1e999' is out of range");
  expect_error("0 1\n1 many\n", "line 2: count 'many' is not a number");
  expect_error("0 12abc\n", "count '12abc' is not a number");
  expect_error("10 1\n", "line 1: id '10' is out of range (the table has 10 rows)");
  expect_error("99999999999999999999999 1\n", "is out of range");
  expect_error("-1 1\n", "id '-1' is not a non-negative integer");
  expect_error("x1 1\n", "id 'x1' is not");
  expect_error("1 2 3\n", "line 1: expected 'id count', got 3 fields");
  expect_error("\n\n7\n", "line 3: expected 'id count', got 1 fields");
  expect_error("# only comments\n\n", "empty");
  expect_error("", "empty");
  expect_error(std::string("0 \x01\xff") + std::string(100, 'z') + "\n", "count '??zzz");
}

TEST_CASE("freq: .npy counts of integer and float dtypes") {
  TempDir dir;
  const std::string ints = dir.file("ints.npy");
  const std::vector<int64_t> iv = {5, 0, 1LL << 40, 3};
  test::write_bytes(ints, make_npy_header(DType::i64, {4}) + test::as_bytes(iv));
  CHECK(read_frequencies(ints, 4) == std::vector<double>{5, 0, 1099511627776.0, 3});

  // A column vector under a name without .npy: found by its magic.
  const std::string column = dir.file("column.counts");
  const std::vector<float> fv = {0.5f, 2.f, 0.f};
  test::write_bytes(column, make_npy_header(DType::f32, {3, 1}) + test::as_bytes(fv));
  CHECK(read_frequencies(column, 3) == std::vector<double>{0.5, 2, 0});

  auto expect_error = [&](const std::string& bytes, uint64_t rows, const std::string& needle) {
    const std::string path = dir.file("bad.npy");
    test::write_bytes(path, bytes);
    const std::string msg = error_of([&] { read_frequencies(path, rows); });
    CAPTURE(msg);
    CHECK(msg.find(path) == 0);
    CHECK(msg.find(needle) != std::string::npos);
  };
  expect_error(make_npy_header(DType::i64, {4}) + test::as_bytes(iv), 5, "4 counts for a table of 5 rows");
  expect_error(make_npy_header(DType::f32, {1, 3}) + test::as_bytes(fv), 1, "shape (R,) or (R, 1)");
  const std::vector<double> nan = {1, std::numeric_limits<double>::quiet_NaN()};
  expect_error(make_npy_header(DType::f64, {2}) + test::as_bytes(nan), 2, "entry 1: count is NaN");
  const std::vector<int16_t> neg = {1, 2, -3};
  expect_error(make_npy_header(DType::i16, {3}) + test::as_bytes(neg), 3, "entry 2: count is negative");
  expect_error(make_npy_header(DType::i16, {3}) + test::as_bytes(neg).substr(1), 3, "does not match");
  expect_error("garbage, long enough to be a header", 3,
               "wrong magic");  // a .npy name is read as .npy whatever it holds
}
