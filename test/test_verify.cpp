// SPDX-License-Identifier: Apache-2.0
// io::Verify's three integrity modes on hand-made corrupt files: one byte
// flipped in each section of a file with every kind of section a lookup
// reads (a codec tier's codes and trained state, sparse rows, a hashed
// tier's tables, a default vector, the row map). small refuses a flipped
// small section at open and a flipped per-row payload at the first lookup
// that reads its tier; all refuses every flip at open; structure opens.
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/io/container.hpp>
#include <edo/reader.hpp>
#include <edo/tier.hpp>

#include <numeric>
#include <string>
#include <vector>

using edo::test::error_of;
using edo::test::Packed;

namespace {

edo::ReaderOptions verifying(edo::io::Verify verify) {
  edo::ReaderOptions o;
  o.verify = verify;
  return o;
}

// Whether the section is a tier's per-row payload, which small checks on its
// tier's first read (the row sections of kinds that are not fallbacks).
bool is_payload(const edo::io::Container& c, const std::string& section) {
  for (const edo::io::TierInfo& t : c.tiers()) {
    const edo::TierKind kind = edo::tier_kind_of(t.codec);
    for (const auto& [role, name] : t.sections)
      if (name == section) return !edo::is_fallback(kind) && edo::is_row_section(kind, role);
  }
  return false;
}

// Every row, in one batch: reads every tier.
void read_every_row(const edo::Reader& r) {
  std::vector<int64_t> ids(r.rows());
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<float> out(ids.size() * r.dim());
  r.lookup(ids.data(), ids.size(), out.data());
}

}  // namespace

TEST_CASE("verify: small refuses small sections at open and payload at first read, all refuses all") {
  const Packed p({"hot:rows=15%:int8", "pca:rows=25%:pca:4,int8", "sp:rows=20%:bitmap:density=0.25,values=fp16",
                  "hashed:rows=30%:hash:buckets=64,k=2", "drop:rest:default"});
  const edo::io::Container c = edo::io::Container::open(p.path, edo::io::Verify::all);
  const std::string bytes = edo::test::read_bytes(p.path);
  // The clean file: every mode opens and reads, small's first read included.
  for (const auto v : {edo::io::Verify::structure, edo::io::Verify::small, edo::io::Verify::all})
    CHECK_NOTHROW(read_every_row(edo::Reader::open(p.path, verifying(v))));
  size_t payload = 0, small = 0;
  for (const edo::io::SectionInfo& s : c.sections()) {
    CAPTURE(s.name);
    if (s.length == 0) continue;
    std::string bad = bytes;
    bad[s.offset + s.length / 2] = static_cast<char>(bad[s.offset + s.length / 2] ^ 0x10);
    const std::string path = p.dir.file("bad.edo");
    edo::test::write_bytes(path, bad);
    const std::string named = "bad.edo: section '" + s.name + "' checksum mismatch";
    CHECK(error_of([&] { edo::Reader::open(path, verifying(edo::io::Verify::all)); }).find(named) != std::string::npos);
    if (!is_payload(c, s.name)) {
      ++small;
      const std::string e = error_of([&] { edo::Reader::open(path, verifying(edo::io::Verify::small)); });
      CHECK(e.find(named) != std::string::npos);
      CHECK(e.find('\n') == std::string::npos);
      continue;
    }
    ++payload;
    // Opens (the payload is not read), then the first read is refused, and so is every later one.
    const edo::Reader r = edo::Reader::open(path);
    CHECK(error_of([&] { read_every_row(r); }).find(named) != std::string::npos);
    CHECK(error_of([&] { read_every_row(r); }).find(named) != std::string::npos);
    std::vector<float> out(p.rows * p.dim);
    CHECK(error_of([&] { r.decode_all(out.data()); }).find(named) != std::string::npos);
  }
  // The file holds both kinds: codes and sparse rows; codebooks, tables, the map.
  CHECK(payload >= 4);
  CHECK(small >= 4);
}

TEST_CASE("verify: structure opens flipped small sections and serves them unchecked (documented)") {
  const Packed p({"hot:rows=40%:int8", "hashed:rest:hash:buckets=64,k=2"});
  const edo::io::Container c = edo::io::Container::open(p.path);
  std::string bad = edo::test::read_bytes(p.path);
  std::string tables;
  for (const auto& [role, name] : c.tiers()[1].sections) tables = name;
  for (const edo::io::SectionInfo& s : c.sections())
    if (s.name == tables) bad[s.offset + s.length / 2] = static_cast<char>(bad[s.offset + s.length / 2] ^ 0x10);
  const std::string path = p.dir.file("bad.edo");
  edo::test::write_bytes(path, bad);
  CHECK_NOTHROW(read_every_row(edo::Reader::open(path, verifying(edo::io::Verify::structure))));
  CHECK(error_of([&] { edo::Reader::open(path); }).find("section '" + tables + "' checksum mismatch") !=
        std::string::npos);
}

TEST_CASE("verify: names parse, and anything else is a usage error naming the choices") {
  for (const auto v : {edo::io::Verify::structure, edo::io::Verify::small, edo::io::Verify::all})
    CHECK(edo::io::parse_verify(edo::io::verify_name(v)) == v);
  CHECK(edo::ReaderOptions{}.verify == edo::io::Verify::small);
  try {
    edo::io::parse_verify("full");
    FAIL("no error");
  } catch (const edo::Error& e) {
    CHECK(e.code() == edo::ExitCode::usage);
    CHECK(std::string(e.what()).find("structure, small or all") != std::string::npos);
  }
}

TEST_CASE("verify: a disk tier's codes are checked on their first read through the bounded cache") {
  const Packed p({"hot:rows=10%:fp16:host", "cold:rest:int8:disk"});
  edo::ReaderOptions o;
  o.max_resident = uint64_t{8} << 20;
  const edo::io::Container c = edo::io::Container::open(p.path);
  const std::string codes = c.tiers()[1].sections.at("codes");
  uint64_t codes_bytes = 0, at = 0;
  for (const edo::io::SectionInfo& s : c.sections())
    if (s.name == codes) codes_bytes = s.length, at = s.offset + s.length / 3;
  {
    const edo::Reader r = edo::Reader::open(p.path, o);
    REQUIRE(r.cache_counts(1).cached);
    CHECK(r.cache_counts(1).bytes_checked == 0);
    read_every_row(r);
    CHECK(r.cache_counts(1).bytes_checked == codes_bytes);
    read_every_row(r);  // once
    CHECK(r.cache_counts(1).bytes_checked == codes_bytes);
  }
  std::string bad = edo::test::read_bytes(p.path);
  bad[at] = static_cast<char>(bad[at] ^ 0x01);
  edo::test::write_bytes(p.dir.file("bad.edo"), bad);
  const edo::Reader r = edo::Reader::open(p.dir.file("bad.edo"), o);
  const int64_t hot_and_cold[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  std::vector<float> out(16 * p.dim);
  CHECK(error_of([&] { r.lookup(hot_and_cold, 16, out.data()); }).find("section '" + codes + "' checksum mismatch") !=
        std::string::npos);
}

TEST_CASE("verify: a model file's tables are each checked as a file of their own") {
  const Packed a({"hot:rows=30%:int8", "cold:rest:fp16"});
  const std::string model = a.dir.file("m.edo");
  edo::io::write_model(model, {{"a", a.path}, {"b", a.path}}, {{"tool", "test"}});
  const edo::io::Container c = edo::io::Container::open(model);
  const edo::io::Container table = c.model_table(1);
  const std::string bytes = edo::test::read_bytes(model);
  // The middle byte of table b's section `name` flipped, into bad.edo.
  const auto flipped = [&](const std::string& name) {
    std::string bad = bytes;
    for (const edo::io::SectionInfo& s : table.sections())
      if (s.name == name) {
        const uint64_t at = table.backing_offset() + s.offset + s.length / 2;
        bad[at] = static_cast<char>(bad[at] ^ 0x10);
      }
    edo::test::write_bytes(a.dir.file("bad.edo"), bad);
    return a.dir.file("bad.edo");
  };
  const std::string map = flipped(table.manifest()["rowmap"]["tier"].get<std::string>());
  CHECK(error_of([&] { edo::Reader::open(map); }).find("bad.edo:b: section 'rowmap/tier' checksum mismatch") !=
        std::string::npos);
  const std::string codes = flipped(table.tiers()[0].sections.at("codes"));
  const edo::Reader r = edo::Reader::open(codes);
  CHECK_NOTHROW(read_every_row(r.table("a")));
  CHECK(error_of([&] { read_every_row(r.table("b")); }).find("bad.edo:b: section 'hot/codes' checksum mismatch") !=
        std::string::npos);
  CHECK(error_of([&] { edo::Reader::open(codes, verifying(edo::io::Verify::all)); }).find("checksum mismatch") !=
        std::string::npos);
  CHECK_NOTHROW(read_every_row(edo::Reader::open(codes, verifying(edo::io::Verify::structure)).table("b")));
}
