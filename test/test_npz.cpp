// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <edo/io/npy.hpp>
#include <edo/io/table.hpp>

#include <zip.h>

#include <cstring>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::TempDir;

namespace {

struct Member {
  std::string name;
  std::string bytes;
  bool deflate = true;
};

// Builds a zip with libzip, the way numpy.savez / savez_compressed lay it out.
void write_zip(const std::string& path, const std::vector<Member>& members) {
  int code = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code);
  REQUIRE(z != nullptr);
  for (const auto& m : members) {
    if (m.name.back() == '/') {
      REQUIRE(zip_dir_add(z, m.name.c_str(), 0) >= 0);
      continue;
    }
    zip_source_t* src = zip_source_buffer(z, m.bytes.data(), m.bytes.size(), 0);
    REQUIRE(src != nullptr);
    const zip_int64_t idx = zip_file_add(z, m.name.c_str(), src, ZIP_FL_OVERWRITE);
    REQUIRE(idx >= 0);
    zip_set_file_compression(z, static_cast<zip_uint64_t>(idx), m.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
  }
  REQUIRE(zip_close(z) == 0);
}

std::string npy_of(DType t, std::vector<uint64_t> shape, const std::string& payload) {
  return make_npy_header(t, shape) + payload;
}

std::vector<float> read_all(TableReader& t, uint64_t block) {
  std::vector<float> out(t.rows() * t.dim());
  for (uint64_t r = 0; r < t.rows(); r += block) t.read_f32(r, std::min(block, t.rows() - r), out.data() + r * t.dim());
  return out;
}

}  // namespace

TEST_CASE("npz: GloVe in stored and deflated members, streamed forwards and backwards") {
  TempDir dir;
  const std::string glove = test::read_bytes(test::shared_data("glove.6B.50d.10k.npy"));
  auto ref = open_table(test::shared_data("glove.6B.50d.10k.npy"));
  const std::vector<float> values = read_all(*ref, 10000);
  const std::string path = dir.file("glove.npz");
  write_zip(path, {{"deflated.npy", glove, true}, {"stored.npy", glove, false}});

  for (const char* member : {"deflated", "deflated.npy", "stored", "stored.npy"}) {
    CAPTURE(member);
    const std::string spec = path + ":" + member;
    auto t = open_table(spec);
    CHECK(t->format() == "npz");
    CHECK(t->path() == spec);
    CHECK(t->rows() == 10000);
    CHECK(t->dim() == 50);
    CHECK(read_all(*t, 999) == values);
    // Backwards (a deflated member is reopened), then a forward skip.
    CHECK(std::memcmp(t->rows_f32(10, 3), values.data() + 10 * 50, 3 * 50 * sizeof(float)) == 0);
    CHECK(std::memcmp(t->rows_f32(0, 1), values.data(), 50 * sizeof(float)) == 0);
    CHECK(std::memcmp(t->rows_f32(7000, 2), values.data() + 7000 * 50, 2 * 50 * sizeof(float)) == 0);
  }
  const std::string msg = error_of([&] { open_table(path); });
  CAPTURE(msg);
  CHECK(msg.find("several members") != std::string::npos);
  CHECK(msg.find("deflated.npy, stored.npy") != std::string::npos);
}

TEST_CASE("npz: the only member is used, other dtypes are widened, unknown names are sniffed") {
  TempDir dir;
  const std::vector<int8_t> small = {-128, -1, 0, 1, 2, 127};
  write_zip(dir.file("one.npz"), {{"arr_0.npy", npy_of(DType::i8, {3, 2}, test::as_bytes(small))}});
  auto t = open_table(dir.file("one.npz"));
  CHECK(t->dtype() == DType::i8);
  CHECK(read_all(*t, 2) == std::vector<float>{-128, -1, 0, 1, 2, 127});
  // savez's zip under another name is still found by its "PK\3\4" magic.
  write_zip(dir.file("one.zip"), {{"arr_0.npy", npy_of(DType::i8, {3, 2}, test::as_bytes(small)), false}});
  CHECK(open_table(dir.file("one.zip") + ":arr_0")->rows_f32(2, 1)[1] == 127.f);
}

TEST_CASE("npz: hostile archives and members get one clear line") {
  TempDir dir;
  const std::string f = dir.file("bad.npz");
  auto expect_error = [&](const std::string& spec, const std::string& needle) {
    const std::string msg = error_of([&] {
      auto t = open_table(spec);
      read_all(*t, 1);
    });
    CAPTURE(msg);
    CHECK(msg.find(f) == 0);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  };
  test::write_bytes(f, "this is not a zip file at all");
  expect_error(f, "not a readable .npz");
  test::write_bytes(f, std::string("PK\x03\x04", 4) + std::string(40, '\0'));
  expect_error(f, "not a readable .npz");

  const std::string payload(3 * 2 * 4, '\x01');
  write_zip(f, {{"a.npy", npy_of(DType::f32, {3, 2}, payload)}, {"b.npy", npy_of(DType::f32, {3, 2}, payload)}});
  expect_error(f + ":c", "no member 'c'");
  expect_error(f + ":c", "a.npy, b.npy");

  write_zip(f, {{"x.npy", "hello, not an array"}});
  expect_error(f + ":x", "wrong magic");
  // The member's size disagrees with the shape its header declares.
  write_zip(f, {{"x.npy", npy_of(DType::f32, {3, 2}, payload.substr(4))}});
  expect_error(f + ":x", "does not match the header");
  write_zip(f, {{"x.npy", npy_of(DType::f32, {3, 2}, payload + "extra")}});
  expect_error(f + ":x", "does not match the header");
  write_zip(f, {{"x.npy", npy_of(DType::f32, {6}, payload)}});
  expect_error(f, "2-D");
  write_zip(f, {{"x.npy", npy_of(DType::f32, {0, 2}, "")}});
  expect_error(f, "empty table");
  write_zip(f, {{"x.npy", std::string("\x93NUMPY\x01\x00\xff\x7f", 10)}});
  expect_error(f, "truncated");
  write_zip(f, {{"dir/", "", false}});
  expect_error(f, "no members");

  // A valid archive cut short: the central directory is gone.
  const std::string glove = test::read_bytes(test::shared_data("glove.6B.50d.10k.npy"));
  write_zip(f, {{"g.npy", glove}});
  const std::string whole = test::read_bytes(f);
  test::write_bytes(f, whole.substr(0, whole.size() / 2));
  expect_error(f, "not a readable .npz");
}

TEST_CASE("npz: a member whose bytes do not match its CRC-32 is refused at open") {
  TempDir dir;
  std::vector<float> values(64 * 8);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i) * 0.25f;
  const std::string member = npy_of(DType::f32, {64, 8}, test::as_bytes(values));
  for (const bool deflate : {false, true}) {
    CAPTURE(deflate);
    const std::string path = dir.file(deflate ? "d.npz" : "s.npz");
    write_zip(path, {{"emb.npy", member, deflate}});
    CHECK(open_table(path)->rows() == 64);  // intact: opens
    // One bit of one value, as a bad disk or a bad copy would flip it: the
    // stored member's data lies in the file as is; in the deflated one the
    // bit is flipped in a value of the archive's CRC field instead.
    std::string bytes = test::read_bytes(path);
    if (!deflate) {
      const std::string needle = member.substr(member.size() - 64, 16);
      const size_t at = bytes.find(needle);
      REQUIRE(at != std::string::npos);
      bytes[at + 5] = static_cast<char>(bytes[at + 5] ^ 0x40);
    } else {
      // Local header: signature, version, flags, method, time, date, then CRC-32 at byte 14.
      REQUIRE(bytes.compare(0, 4, "PK\x03\x04") == 0);
      bytes[14] = static_cast<char>(bytes[14] ^ 0x01);
      // The central directory holds the CRC libzip reads: flip it there too.
      const size_t cd = bytes.find("PK\x01\x02");
      REQUIRE(cd != std::string::npos);
      bytes[cd + 16] = static_cast<char>(bytes[cd + 16] ^ 0x01);
    }
    test::write_bytes(path, bytes);
    const std::string message = error_of([&] { open_table(path); });
    CHECK(message.find(path) != std::string::npos);
    CHECK(message.find("CRC") != std::string::npos);
  }
}
