// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <edo/io/npy.hpp>
#include <edo/io/table.hpp>

#include <cmath>
#include <cstring>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::TempDir;

namespace {

std::string npy_bytes(const std::string& dict, int version = 1, const std::string& payload = {}) {
  std::string d = dict;
  const size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + d.size() + 1) % 64 != 0) d.push_back(' ');
  d.push_back('\n');
  std::string out("\x93NUMPY", 6);
  out.push_back(static_cast<char>(version));
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(d.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>(len >> 8));
  if (version != 1) {
    out.push_back(0);
    out.push_back(0);
  }
  return out + d + payload;
}

}  // namespace

TEST_CASE("npy: reads the shared GloVe sample") {
  auto t = open_table(test::shared_data("glove.6B.50d.10k.npy"));
  CHECK(t->rows() == 10000);
  CHECK(t->dim() == 50);
  CHECK(t->dtype() == DType::f32);
  const float* r = t->rows_f32(0, 1);
  // Row 0 is "the": its first GloVe component is 0.418.
  CHECK(r[0] == doctest::Approx(0.418f).epsilon(1e-6));
}

TEST_CASE("npy: round trip of every dtype, versions 1 to 3") {
  TempDir dir;
  const std::vector<float> values = {0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 100.f, 7.f};
  for (DType t : {DType::f16, DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32,
                  DType::u32, DType::i64, DType::u64}) {
    CAPTURE(dtype_name(t));
    const std::string path = dir.file(std::string(dtype_name(t)) + ".npy");
    auto w = create_table(path, 4, 2, t);
    w->write_f32(values.data(), 4);
    w->commit();
    auto r = open_table(path);
    CHECK(r->dtype() == t);
    std::vector<float> back(8);
    r->read_f32(0, 4, back.data());
    CHECK(back == values);
  }
  // Versions 2 and 3 differ from 1 only in the 4-byte header length.
  for (int version : {2, 3}) {
    const std::vector<float> p = {1.5f, -2.f};
    const std::string path = dir.file("v" + std::to_string(version) + ".npy");
    test::write_bytes(
        path, npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", version, test::as_bytes(p)));
    auto r = open_table(path);
    CHECK(r->rows_f32(0, 1)[1] == -2.f);
  }
}

TEST_CASE("npy: header writer pads to 64 bytes") {
  const std::string h = make_npy_header(DType::f32, {3, 5});
  CHECK(h.size() % 64 == 0);
  CHECK(h.back() == '\n');
}

TEST_CASE("npy: hostile and unsupported headers get a clear error") {
  TempDir dir;
  const std::string f = dir.file("bad.npy");
  const std::string ok_payload(4 * 2 * 3, '\0');
  auto expect_error = [&](const std::string& bytes, const std::string& needle) {
    test::write_bytes(f, bytes);
    const std::string msg = error_of([&] { open_table(f); });
    CAPTURE(msg);
    CHECK(msg.find(f) != std::string::npos);
    CHECK(msg.find(needle) != std::string::npos);
  };
  expect_error("", "too short");
  expect_error("PK\x03\x04 not npy at all", "wrong magic");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }").substr(0, 40), "truncated");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", 1, ok_payload.substr(1)),
               "does not match");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }"), "overflows");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 4), }"),
               "overflows");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }", 1, ok_payload), "Fortran");
  expect_error(npy_bytes("{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }", 1, ok_payload), "big-endian");
  expect_error(npy_bytes("{'descr': '<c8', 'fortran_order': False, 'shape': (3, 1), }", 1, ok_payload),
               "unsupported .npy dtype");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 2), }"), "empty table");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 1, ok_payload.substr(0, 24)),
               "2-D");
  expect_error(npy_bytes("{'descr': '<f4', 'shape': (3, 2), }", 1, ok_payload), "needs descr");
  expect_error(npy_bytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2 }", 1, ok_payload), "malformed");
  std::string big_len("\x93NUMPY\x02\x00\xff\xff\xff\x7f", 12);
  expect_error(big_len, "too large");
  std::string bad_version("\x93NUMPY\x09\x00\x10\x00", 10);
  expect_error(bad_version + std::string(16, ' '), "version");
}

TEST_CASE("npy: writer leaves nothing behind without commit") {
  TempDir dir;
  {
    auto w = create_table(dir.file("x.npy"), 10, 3);
    const float row[3] = {1, 2, 3};
    w->write_f32(row, 1);
  }
  CHECK(dir.entries() == 0);
  auto w = create_table(dir.file("y.npy"), 2, 3);
  const float row[3] = {1, 2, 3};
  w->write_f32(row, 1);
  CHECK_THROWS_AS(w->commit(), edo::Error);
}

TEST_CASE("table: range checks and block sizes") {
  auto t = open_table(test::shared_data("glove.6B.50d.10k.npy"));
  CHECK_THROWS_AS(t->rows_f32(9999, 2), edo::Error);
  CHECK(t->block_rows(50 * 4 * 100) == 100);
  CHECK(t->block_rows(1) == 1);
  CHECK_THROWS_AS(open_table("/nonexistent/x.npy"), edo::Error);
}

TEST_CASE("npy: concurrent reads equal block reads, from many threads at once") {
  TempDir dir;
  const uint64_t rows = 3000, dim = 7;
  std::vector<float> values(rows * dim);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(static_cast<int>(i % 241) - 120);  // exact in every dtype below
  for (DType t : {DType::f32, DType::f16, DType::i8}) {
    const std::string name = dtype_name(t);
    CAPTURE(name);
    const std::string path = dir.file(std::string("c_") + dtype_name(t) + ".npy");
    auto w = create_table(path, rows, dim, t);
    w->write_f32(values.data(), rows);
    w->commit();
    auto r = open_table(path);
    REQUIRE(r->concurrent_reads());
    std::vector<float> back(rows * dim, -1.f);
    const int64_t pieces = 61;
#pragma omp parallel for schedule(dynamic, 1) num_threads(4)
    for (int64_t k = 0; k < pieces; ++k) {
      const uint64_t b = rows * static_cast<uint64_t>(k) / pieces, e = rows * static_cast<uint64_t>(k + 1) / pieces;
      r->read_f32_concurrent(b, e - b, back.data() + b * dim);
    }
    CHECK(back == values);
    CHECK_THROWS_AS(r->read_f32_concurrent(rows - 1, 2, back.data()), edo::Error);
  }
}
