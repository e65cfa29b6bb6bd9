// SPDX-License-Identifier: Apache-2.0
#include "test_container_edit.hpp"
#include "test_util.hpp"

#include <edo/codec.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/io/vocab.hpp>
#include <edo/tier.hpp>

#include <sys/wait.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numeric>
#include <set>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::header_of;
using edo::test::read_bytes;
using edo::test::TempDir;
using edo::test::with_header;
using edo::test::with_manifest;
using edo::test::with_manifest_text;
using edo::test::write_bytes;
using json = nlohmann::json;

namespace {

const std::string kSourceRoot = std::string(EDO_TEST_DATA_DIR) + "/../..";
const std::string kGoldenPath = std::string(EDO_TEST_DATA_DIR) + "/container/golden_v1_1.edo";
// Written by the 1.0 writer: kept to show this reader still reads it.
const std::string kGolden10Path = std::string(EDO_TEST_DATA_DIR) + "/container/golden_v1_0.edo";
const std::string kCorpusDir = kSourceRoot + "/fuzz/corpus/container";

json one_tier_manifest(uint64_t rows, uint64_t dim, json sections) {
  return {{"rows", rows},
          {"dim", dim},
          {"tiers", json::array({{{"name", "all"}, {"codec", "fp32"}, {"rows", rows}, {"sections", sections}}})},
          {"provenance", {{"tool", "test_container"}, {"seed", 7}}}};
}

// 4 x 2 fp32 values, an empty section and a 5-byte one: small enough to flip
// every byte, with every kind of region (header, section, pad, manifest).
void write_small(const std::string& path) {
  const float values[8] = {0.5f, -1.f, 2.f, 3.25f, 4.f, -5.f, 6.f, 7.5f};
  const uint8_t scales[5] = {1, 2, 3, 4, 5};
  ContainerWriter w(path);
  w.add_section("codes", values, sizeof values);
  w.add_section("empty", nullptr, 0);
  w.add_section("tier.0/scales", scales, sizeof scales);
  w.finish(one_tier_manifest(4, 2, {{"values", "codes"}, {"scales", "tier.0/scales"}}));
}

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(x >> 24);
  }
  return v;
}

// Streams `data` in chunks of the given sizes, cycling through them.
void append_in_chunks(ContainerWriter& w, const std::vector<uint8_t>& data, const std::vector<size_t>& chunks) {
  size_t at = 0;
  for (size_t i = 0; at < data.size(); ++i) {
    const size_t n = std::min(chunks[i % chunks.size()], data.size() - at);
    w.append(data.data() + at, n);
    at += n;
  }
}

void write_large(const std::string& path, const std::vector<size_t>& chunks) {
  const auto big = pattern(3 * 1024 * 1024 + 13, 1);
  const auto ids = pattern(999, 2);
  ContainerWriter w(path);
  w.begin_section("codes");
  append_in_chunks(w, big, chunks);
  w.end_section();
  w.add_section("empty", nullptr, 0);
  w.begin_section("ids");
  append_in_chunks(w, ids, chunks);
  w.end_section();
  json m = one_tier_manifest(1000, 64, {{"codes", "codes"}, {"ids", "ids"}});
  m["tiers"][0]["residency"] = "gpu";
  m["row_map"] = {{"kind", "identity"}};
  w.finish(m);
}

struct Corrupt {
  TempDir dir;
  std::string valid_path = dir.file("valid.edo");
  std::string valid;
  Corrupt() {
    write_small(valid_path);
    valid = read_bytes(valid_path);
  }
  // The error opening `bytes` (with every checksum verified); it must name the file.
  std::string open_error(const std::string& bytes) {
    const std::string path = dir.file("bad.edo");
    write_bytes(path, bytes);
    const std::string message = error_of([&] { Container::open(path, Verify::all); });
    CHECK(message.find(path) != std::string::npos);
    return message;
  }
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("container: round trip of empty, small and large sections streamed in chunks") {
  TempDir dir;
  const std::string path = dir.file("t.edo");
  write_large(path, {1, 7, 4096, 2 * 1024 * 1024 + 1});
  const auto c = Container::open(path, Verify::all);
  CHECK(c.file_size() == std::filesystem::file_size(path));
  CHECK(c.file_size() % 64 == 0);
  CHECK(c.rows() == 1000);
  CHECK(c.dim() == 64);
  CHECK(c.minor_version() == kContainerMinor);
  REQUIRE(c.sections().size() == 3);
  for (const SectionInfo& s : c.sections()) {
    CAPTURE(s.name);
    CHECK(s.offset % 64 == 0);
    // The mapping starts on a page, so in-file alignment is in-memory alignment.
    CHECK(reinterpret_cast<uintptr_t>(c.section(s.name).data) % 64 == 0);
  }
  const SectionView codes = c.section("codes");
  const auto big = pattern(3 * 1024 * 1024 + 13, 1);
  REQUIRE(codes.size == big.size());
  CHECK(std::memcmp(codes.data, big.data(), big.size()) == 0);
  const auto ids = pattern(999, 2);
  REQUIRE(c.section("ids").size == ids.size());
  CHECK(std::memcmp(c.section("ids").data, ids.data(), ids.size()) == 0);
  CHECK(c.has_section("empty"));
  CHECK(c.section("empty").size == 0);
  CHECK_FALSE(c.has_section("nope"));

  CHECK(c.manifest()["format"] == "edo");
  CHECK(c.manifest()["row_map"]["kind"] == "identity");
  CHECK(c.manifest()["provenance"]["seed"] == 7);
  REQUIRE(c.tiers().size() == 1);
  const TierInfo& tier = c.tiers()[0];
  CHECK(tier.name == "all");
  CHECK(tier.codec == "fp32");
  CHECK(tier.rows == 1000);
  CHECK(tier.residency == edo::Residency::gpu);
  CHECK(tier.sections == std::map<std::string, std::string>{{"codes", "codes"}, {"ids", "ids"}});
}

TEST_CASE("container: same calls give byte-identical files, whatever the append chunking") {
  TempDir dir;
  write_large(dir.file("a.edo"), {1, 7, 4096, 2 * 1024 * 1024 + 1});
  write_large(dir.file("b.edo"), {1, 7, 4096, 2 * 1024 * 1024 + 1});
  write_large(dir.file("c.edo"), {3 * 1024 * 1024 + 13});
  const std::string a = read_bytes(dir.file("a.edo"));
  CHECK(a == read_bytes(dir.file("b.edo")));
  CHECK(a == read_bytes(dir.file("c.edo")));
}

TEST_CASE("container: the committed 1.0 file still opens, its sections and checksums intact") {
  const auto old = Container::open(kGolden10Path, Verify::all);
  CHECK(old.minor_version() == 0);
  CHECK(old.section("tier.0/scales").size == 5);
  CHECK(old.rows() == 4);
}

TEST_CASE("container: the committed 1.1 golden file matches the writer byte for byte") {
  TempDir dir;
  write_small(dir.file("small.edo"));
  const std::string fresh = read_bytes(dir.file("small.edo"));
  if (std::getenv("EDO_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(std::filesystem::path(kGoldenPath).parent_path());
    write_bytes(kGoldenPath, fresh);
  }
  const auto golden = Container::open(kGoldenPath, Verify::all);
  CHECK(golden.section("tier.0/scales").size == 5);
  // A change here is a format change: bump the version and keep the old file.
  CHECK(read_bytes(kGoldenPath) == fresh);
}

TEST_CASE("container: fuzz seed corpus files are valid containers") {
  if (std::getenv("EDO_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(kCorpusDir);
    write_small(kCorpusDir + "/small.edo");
    ContainerWriter w(kCorpusDir + "/two_tiers.edo");
    const auto hot = pattern(6 * 16 * 2, 3), cold = pattern(10 * 4, 4), ids = pattern(16 * 4, 5);
    w.add_section("hot/codes", hot.data(), hot.size());
    w.add_section("cold/codes", cold.data(), cold.size());
    w.add_section("row_ids", ids.data(), ids.size());
    json m = {{"rows", 16},
              {"dim", 16},
              {"provenance", {{"tool", "edo-pack"}, {"seed", 1}}},
              {"tiers", json::array({{{"name", "hot"},
                                      {"codec", "fp16"},
                                      {"rows", 6},
                                      {"residency", "gpu"},
                                      {"sections", {{"codes", "hot/codes"}, {"ids", "row_ids"}}}},
                                     {{"name", "cold"},
                                      {"codec", "pq:m=4,nbits=8"},
                                      {"rows", 10},
                                      {"residency", "disk"},
                                      {"sections", {{"codes", "cold/codes"}}}}})}};
    w.finish(m);
  }
  // Named, not listed: a fuzzer run may add (invalid) inputs to the directory.
  for (const char* seed : {"small.edo", "two_tiers.edo"}) {
    CAPTURE(seed);
    const auto c = Container::open(kCorpusDir + "/" + seed, Verify::all);
    CHECK(c.tiers().size() >= 1);
    for (const SectionInfo& s : c.sections()) CHECK(c.section(s.name).size == s.length);
  }
}

TEST_CASE("container: a newer minor version opens, an unknown major does not") {
  Corrupt t;
  const std::string newer = with_header(t.valid, [](ContainerHeader& h) { h.minor = 7; });
  const std::string path = t.dir.file("newer.edo");
  write_bytes(path, newer);
  CHECK(Container::open(path, Verify::all).minor_version() == 7);
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.major = 2; })),
                 "version 2." + std::to_string(kContainerMinor) + " is not supported"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.major = 0; })), "not supported"));
}

TEST_CASE("container: each refusal says its kind: corrupt, I/O or unsupported (edo::ErrorKind)") {
  Corrupt t;
  const auto kind_of = [&](const std::string& bytes) {
    const std::string path = t.dir.file("kind.edo");
    write_bytes(path, bytes);
    try {
      Container::open(path, Verify::all);
    } catch (const edo::Error& e) {
      CHECK(e.code() == edo::ExitCode::runtime);
      return e.kind();
    }
    FAIL("opened");
    return edo::ErrorKind::other;
  };
  std::string bad_magic = t.valid, bad_section = t.valid;
  bad_magic[1] = 'X';
  bad_section[70] ^= 1;  // a section's payload: its checksum fails
  CHECK(kind_of(bad_magic) == edo::ErrorKind::corrupt);
  CHECK(kind_of(t.valid.substr(0, 10)) == edo::ErrorKind::corrupt);
  CHECK(kind_of(bad_section) == edo::ErrorKind::corrupt);
  CHECK(kind_of(with_header(t.valid, [](ContainerHeader& h) { h.major = 2; })) == edo::ErrorKind::unsupported);
  try {
    Container::open(t.dir.file("missing.edo"), Verify::all);
    FAIL("opened");
  } catch (const edo::Error& e) {
    CHECK(e.kind() == edo::ErrorKind::io);
  }
}

TEST_CASE("container: corrupt headers are rejected with a message naming the file") {
  Corrupt t;
  std::string bad_magic = t.valid;
  bad_magic[1] = 'X';
  CHECK(contains(t.open_error(bad_magic), "bad magic"));
  CHECK(contains(t.open_error(t.valid.substr(0, 10)), "too short"));
  CHECK(contains(t.open_error(""), "too short"));

  std::string bad_checksum = t.valid;
  bad_checksum[20] ^= 1;
  CHECK(contains(t.open_error(bad_checksum), "header checksum mismatch"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.flags = 1; })), "flags"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.reserved = 1; })), "reserved"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.file_size += 64; })),
                 "header says the file is"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.section_count = 2; })),
                 "the header says 2"));
}

TEST_CASE("container: manifest bounds, size cap and checksum") {
  Corrupt t;
  CHECK(contains(
      t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_length = kMaxManifestBytes + 1; })),
      "byte limit"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_length = ~uint64_t{0}; })),
                 "byte limit"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_length = 0; })),
                 "manifest is empty"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_offset = ~uint64_t{0} - 63; })),
                 "runs past the end"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_offset += 64 * 100; })),
                 "runs past the end"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_offset += 1; })),
                 "not a multiple of 64"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_offset = 0; })),
                 "not a multiple of 64"));
  CHECK(contains(t.open_error(with_header(t.valid, [](ContainerHeader& h) { h.manifest_length -= 1; })),
                 "manifest checksum mismatch"));
  // A file longer than its padded manifest.
  std::string longer = t.valid + std::string(64, '\0');
  CHECK(contains(t.open_error(with_header(longer, [&](ContainerHeader& h) { h.file_size = longer.size(); })),
                 "the manifest, padded to 64 bytes, ends the file"));

  const ContainerHeader h = header_of(t.valid);
  std::string flipped = t.valid;
  flipped[h.manifest_offset + 3] ^= 0x20;
  CHECK(contains(t.open_error(flipped), "manifest checksum mismatch"));

  // The writer refuses to produce a manifest the reader would refuse.
  TempDir dir;
  {
    ContainerWriter w(dir.file("huge.edo"));
    w.add_section("codes", "x", 1);
    json m = one_tier_manifest(1, 1, {{"values", "codes"}});
    m["provenance"]["blob"] = std::string(kMaxManifestBytes, 'a');
    CHECK(contains(error_of([&] { w.finish(m); }), "byte limit"));
  }
  CHECK(dir.entries() == 0);
}

TEST_CASE("container: manifest text that is not JSON, not an object, too deep or ambiguous") {
  Corrupt t;
  CHECK(contains(t.open_error(with_manifest_text(t.valid, "not json at all")), "not valid JSON"));
  CHECK(contains(t.open_error(with_manifest_text(t.valid, "{\"rows\": 1")), "not valid JSON"));
  CHECK(contains(t.open_error(with_manifest_text(t.valid, std::string("{\"a\":\"\xff\"}"))), "not valid JSON"));
  CHECK(contains(t.open_error(with_manifest_text(t.valid, "[1,2]")), "not a JSON object"));
  CHECK(contains(t.open_error(with_manifest_text(t.valid, std::string(100000, '[') + std::string(100000, ']'))),
                 "nests deeper than 64"));
  // Brackets inside strings do not count as nesting: this fails on schema, not depth.
  CHECK(contains(t.open_error(with_manifest_text(t.valid, "{\"x\":\"" + std::string(1000, '[') + "\\\"\"}")),
                 "no \"sections\" array"));
  const json deep = json::parse(std::string(70, '[') + std::string(70, ']'));
  CHECK(contains(t.open_error(with_manifest(t.valid, [&](json& m) { m["deep"] = deep; })), "nests deeper"));
  std::string many = "{\"x\":[0";
  for (uint64_t i = 0; i < kMaxManifestValues; ++i) many += ",0";
  CHECK(contains(t.open_error(with_manifest_text(t.valid, many + "]}")), "more than 1048576 JSON values"));
  const ContainerHeader h = header_of(t.valid);
  std::string text = t.valid.substr(h.manifest_offset, h.manifest_length);
  text.insert(1, "\"rows\":99,");
  CHECK(contains(t.open_error(with_manifest_text(t.valid, text)), "duplicate key \"rows\""));
}

TEST_CASE("container: hostile sections tables") {
  Corrupt t;
  auto edit = [&](const std::function<void(json&)>& f) { return t.open_error(with_manifest(t.valid, f)); };
  CHECK(contains(edit([](json& m) { m.erase("sections"); }), "no \"sections\" array"));
  CHECK(contains(edit([](json& m) { m["sections"][0] = 5; }), "sections[0] is not an object"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["offset"] = 65; }), "offset 65 is not a multiple of 64"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["offset"] = -64; }), "non-negative integer"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["offset"] = 64.0; }), "non-negative integer"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["offset"] = "64"; }), "non-negative integer"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["offset"] = 0; }), "overlaps the header"));
  CHECK(contains(edit([](json& m) { m["sections"][2]["length"] = ~uint64_t{0} - 10; }), "overflows"));
  CHECK(contains(edit([](json& m) {
                   m["sections"][2]["offset"] = ~uint64_t{0} - 63;
                   m["sections"][2]["length"] = 128;
                 }),
                 "offset 18446744073709551552 + length 128 overflows"));
  CHECK(contains(edit([](json& m) { m["sections"][2]["length"] = uint64_t{1} << 40; }), "runs past the manifest"));
  CHECK(contains(edit([](json& m) { m["sections"][2]["offset"] = uint64_t{1} << 40; }), "runs past the manifest"));
  // "empty" sits where "tier.0/scales" starts; give it a byte so they overlap.
  CHECK(contains(edit([](json& m) {
                   m["sections"][1]["offset"] = m["sections"][0]["offset"];
                   m["sections"][1]["length"] = 64;
                 }),
                 "section 'empty' overlaps section 'codes'"));
  CHECK(contains(edit([](json& m) { m["sections"][2]["offset"] = 64; }), "not sorted by offset"));
  CHECK(contains(edit([](json& m) { m["sections"][1]["offset"] = m["sections"][1]["offset"].get<uint64_t>() + 64; }),
                 "section 'empty' starts at 192, expected 128"));
  CHECK(contains(edit([](json& m) { m["sections"][1]["name"] = "codes"; }), "appears twice"));
  CHECK(contains(edit([](json& m) { m["sections"][1]["name"] = "bad name"; }), "not a valid section name"));
  CHECK(contains(edit([](json& m) { m["sections"][1]["name"] = std::string(129, 'a'); }), "not a valid section name"));
  CHECK(contains(edit([](json& m) { m["sections"][1]["name"] = ""; }), "not a valid section name"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["xxh64"] = "0123"; }), "16 lowercase hex digits"));
  CHECK(contains(edit([](json& m) { m["sections"][0]["xxh64"] = "0123456789ABCDEF"; }), "16 lowercase hex digits"));
  CHECK(contains(edit([](json& m) { m["sections"][0].erase("length"); }), "sections[0].\"length\""));
  CHECK(contains(edit([](json& m) { m["sections"].erase(2); }), "manifest lists 2 sections, the header says 3"));
}

TEST_CASE("container: generic manifest schema") {
  Corrupt t;
  auto edit = [&](const std::function<void(json&)>& f) { return t.open_error(with_manifest(t.valid, f)); };
  CHECK(contains(edit([](json& m) { m["format"] = "npy"; }), "\"format\" must be \"edo\""));
  CHECK(contains(edit([](json& m) { m.erase("format"); }), "\"format\" must be \"edo\""));
  CHECK(contains(edit([](json& m) { m["rows"] = 0; }), "\"rows\" must be positive"));
  CHECK(contains(edit([](json& m) { m["dim"] = -3; }), "\"dim\" must be a non-negative integer"));
  // A resealed manifest declaring a huge dim fails here, before a reader can size anything by it.
  for (const uint64_t dim : {uint64_t{2000000000}, uint64_t{1} << 40, edo::io::kMaxDim + 1})
    CHECK(contains(edit([&](json& m) { m["dim"] = dim; }), "columns a table may have"));
  CHECK(contains(edit([](json& m) { m.erase("provenance"); }), "\"provenance\" must be an object"));
  CHECK(contains(edit([](json& m) { m["tiers"] = json::array(); }), "non-empty array"));
  CHECK(contains(edit([](json& m) { m["tiers"][0].erase("codec"); }), "tiers[0].\"codec\" must be a string"));
  CHECK(contains(edit([](json& m) { m["tiers"][0]["rows"] = 5; }), "more than the table's 4"));
  CHECK(contains(edit([](json& m) { m["tiers"][0]["residency"] = "cloud"; }), "residency"));
  CHECK(contains(edit([](json& m) { m["tiers"].push_back(m["tiers"][0]); }), "tier name 'all' appears twice"));
  CHECK(contains(edit([](json& m) { m["tiers"][0]["sections"]["values"] = "nope"; }),
                 "tier 'all' refers to missing section 'nope' (role 'values')"));
  CHECK(contains(edit([](json& m) { m["tiers"][0]["sections"]["values"] = 3; }), "must be a string"));

  // A missing section asked for by name.
  const auto c = Container::open(t.valid_path);
  const std::string message = error_of([&] { c.section("nope"); });
  CHECK(contains(message, t.valid_path));
  CHECK(contains(message, "no section named 'nope'"));
}

TEST_CASE("container: section checksums and zero padding") {
  Corrupt t;
  const auto c = Container::open(t.valid_path);
  const SectionInfo codes = c.sections()[0];
  const SectionInfo scales = c.sections()[2];
  std::string flipped = t.valid;
  flipped[scales.offset + 4] ^= 0x40;
  {
    const std::string path = t.dir.file("flipped.edo");
    write_bytes(path, flipped);
    // Structure is intact, so the cheap open succeeds; verify() does not.
    const auto opened = Container::open(path);
    const std::string message = error_of([&] { opened.verify(); });
    CHECK(contains(message, path));
    CHECK(contains(message, "section 'tier.0/scales' checksum mismatch"));
  }
  CHECK(contains(t.open_error(flipped), "section 'tier.0/scales' checksum mismatch"));

  std::string padded = t.valid;
  padded[codes.offset + codes.length] = 1;
  CHECK(contains(t.open_error(padded), "non-zero byte at offset 96 in the padding before section 'empty'"));
  padded = t.valid;
  padded[scales.offset + scales.length + 10] = 1;
  CHECK(contains(t.open_error(padded), "padding before the manifest"));
  padded = t.valid;
  padded.back() = 1;
  CHECK(contains(t.open_error(padded), "padding after the manifest"));
}

TEST_CASE("container: truncation at every section boundary") {
  Corrupt t;
  const auto c = Container::open(t.valid_path);
  const ContainerHeader h = header_of(t.valid);
  std::vector<uint64_t> cuts = {
      0, 1, 63, 64, h.manifest_offset, h.manifest_offset + h.manifest_length, t.valid.size() - 1};
  for (const SectionInfo& s : c.sections()) {
    cuts.push_back(s.offset);
    cuts.push_back(s.offset + s.length);
  }
  for (uint64_t cut : cuts) {
    CAPTURE(cut);
    t.open_error(t.valid.substr(0, cut));
  }
}

TEST_CASE("container: every single-byte change of a valid file is detected") {
  Corrupt t;
  const std::string path = t.dir.file("flip.edo");
  size_t rejected = 0, total = 0;
  for (size_t i = 0; i < t.valid.size(); ++i) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xff}}) {
      std::string bytes = t.valid;
      bytes[i] = static_cast<char>(bytes[i] ^ mask);
      write_bytes(path, bytes);
      ++total;
      try {
        Container::open(path, Verify::all);
        FAIL_CHECK("byte " << i << " ^ " << int(mask) << " was not detected");
      } catch (const edo::Error& e) {
        if (contains(e.what(), path)) ++rejected;
      }
    }
  }
  CHECK(total == 3 * t.valid.size());
  CHECK(rejected == total);
}

TEST_CASE("container: writer misuse and failure leave no file behind") {
  TempDir dir;
  const std::string path = dir.file("w.edo");
  {
    ContainerWriter w(path);
    w.add_section("codes", "abc", 3);
    CHECK(contains(error_of([&] { w.append("x", 1); }), "append() outside a section"));
    CHECK(contains(error_of([&] { w.end_section(); }), "without begin_section"));
    CHECK(contains(error_of([&] { w.begin_section("codes"); }), "written twice"));
    CHECK(contains(error_of([&] { w.begin_section("a b"); }), "not a valid section name"));
    w.begin_section("open");
    CHECK(contains(error_of([&] { w.begin_section("other"); }), "while section 'open' is open"));
    CHECK(contains(error_of([&] { w.finish(one_tier_manifest(1, 1, {{"v", "codes"}})); }), "is open"));
    CHECK(contains(error_of([&] { w.finish(one_tier_manifest(1, 1, {{"v", "codes"}})); }), path));
  }
  CHECK(dir.entries() == 0);  // destroyed without finish: nothing published, no temporary left
  {
    ContainerWriter w(path);
    w.add_section("codes", "abc", 3);
    CHECK(contains(error_of([&] {
                     w.finish(one_tier_manifest(1, 1, {{"v", "missing"}}));
                   }),
                   "refers to missing section 'missing'"));
    CHECK(contains(error_of([&] { w.add_section("late", "x", 1); }), "after finish()"));
  }
  CHECK(dir.entries() == 0);
  {
    ContainerWriter w(path);
    json m = one_tier_manifest(1, 1, json::object());
    m["sections"] = json::array();
    CHECK(contains(error_of([&] { w.finish(m); }), "must not set \"sections\""));
  }
  {
    ContainerWriter w(path);
    json m = one_tier_manifest(1, 1, json::object());
    m["provenance"]["note"] = std::string("\xff\xfe");
    CHECK(contains(error_of([&] { w.finish(m); }), "cannot serialise the manifest"));
  }
  CHECK(dir.entries() == 0);
  {
    // A file with no sections at all is valid (a tier may need none).
    ContainerWriter w(path);
    w.finish(one_tier_manifest(1, 1, json::object()));
  }
  const auto c = Container::open(path, Verify::all);
  CHECK(c.sections().empty());
  CHECK(c.file_size() == 64 + (header_of(read_bytes(path)).manifest_length + 63) / 64 * 64);
}

TEST_CASE("container: view() reads bytes in memory with the same checks") {
  Corrupt t;
  const auto c = Container::view(reinterpret_cast<const uint8_t*>(t.valid.data()), t.valid.size(), "in-memory");
  CHECK(c.section("codes").size == 32);
  std::string bad = t.valid;
  bad[0] = 0;
  CHECK(contains(
      error_of([&] { Container::view(reinterpret_cast<const uint8_t*>(bad.data()), bad.size(), "in-memory"); }),
      "in-memory: not an .edo file"));
}

TEST_CASE("container: header encoding is little-endian at the documented offsets") {
  ContainerHeader h;
  std::memcpy(h.magic, kContainerMagic, 8);
  h.major = 0x0102;
  h.minor = 0x0304;
  h.flags = 0x05060708;
  h.file_size = 0x1112131415161718;
  h.manifest_offset = 0x2122232425262728;
  h.manifest_length = 0x3132333435363738;
  h.manifest_xxh64 = 0x4142434445464748;
  h.section_count = 0x51525354;
  h.reserved = 0x61626364;
  h.header_xxh64 = 0x7172737475767778;
  uint8_t b[64];
  h.encode(b);
  CHECK(std::memcmp(b,
                    "\x89"
                    "EDO\r\n\x1a\n",
                    8) == 0);
  CHECK(b[8] == 0x02);
  CHECK(b[9] == 0x01);
  CHECK(b[12] == 0x08);
  CHECK(b[16] == 0x18);
  CHECK(b[23] == 0x11);
  CHECK(b[24] == 0x28);
  CHECK(b[32] == 0x38);
  CHECK(b[40] == 0x48);
  CHECK(b[48] == 0x54);
  CHECK(b[52] == 0x64);
  CHECK(b[56] == 0x78);
  CHECK(b[63] == 0x71);
  const ContainerHeader back = ContainerHeader::decode(b);
  CHECK(back.file_size == h.file_size);
  CHECK(back.section_count == h.section_count);
  CHECK(back.header_xxh64 == h.header_xxh64);
  CHECK(h.compute_checksum() == checksum64(b, 56));
  // XXH64 of the empty input with seed 0 (the xxHash reference value).
  CHECK(checksum64("", 0) == 0xef46db3751d8e999ULL);
}

TEST_CASE("container: the independent Python reader (scripts/edo_reader.py) agrees with the C++ one") {
  const std::string python = "/usr/bin/python3";
  if (::access(python.c_str(), X_OK) != 0) {
    MESSAGE("skipped: no " << python);
    return;
  }
  Corrupt t;
  auto python_accepts = [&](const std::string& bytes) {
    const std::string path = t.dir.file("py.edo");
    write_bytes(path, bytes);
    const std::string command = python + " " + kSourceRoot + "/scripts/edo_reader.py " + path + " >/dev/null 2>&1";
    const int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    return WEXITSTATUS(status) == 0;
  };
  CHECK(python_accepts(t.valid));
  const auto c = Container::open(t.valid_path);
  std::string bad = t.valid;
  bad[c.sections()[0].offset + 31] ^= 1;
  CHECK_FALSE(python_accepts(bad));
  CHECK_FALSE(python_accepts(with_header(t.valid, [](ContainerHeader& h) { h.major = 2; })));
  CHECK(python_accepts(with_header(t.valid, [](ContainerHeader& h) { h.minor = 3; })));
}

TEST_CASE("container: a vocabulary section reads back, and malformed ones are named") {
  test::TempDir dir;
  const float values[8] = {0.5f, -1.f, 2.f, 3.25f, 4.f, -5.f, 6.f, 7.5f};
  // write(bytes, words): a 4 x 2 table with a vocab section holding `bytes`, declared as `words` words.
  const auto write = [&](const std::string& name, const std::string& bytes, json vocab) {
    ContainerWriter w(dir.file(name));
    w.add_section("codes", values, sizeof values);
    w.add_section("vocab", bytes.data(), bytes.size());
    json m = one_tier_manifest(4, 2, {{"codes", "codes"}});
    m["vocab"] = std::move(vocab);
    w.finish(m);
    return Container::open(dir.file(name));
  };
  const json ok = {{"section", "vocab"}, {"words", 4}};
  const auto words = read_vocab_section(write("ok.edo", "the\nof\n\nking\n", ok));
  REQUIRE(words.has_value());
  CHECK(*words == std::vector<std::string>{"the", "of", "", "king"});
  CHECK(vocab_section_bytes(*words) == "the\nof\n\nking\n");
  CHECK_FALSE(read_vocab_section(Container::open(kGoldenPath)).has_value());
  const auto error = [&](const std::string& name, const std::string& bytes, json vocab) {
    return test::error_of([&] { read_vocab_section(write(name, bytes, vocab)); });
  };
  CHECK(error("count.edo", "a\nb\nc\nd\n", {{"section", "vocab"}, {"words", 3}}).find("3 words for 4 rows") !=
        std::string::npos);
  CHECK(error("short.edo", "a\nb\nc\n", ok).find("3 words for 4 rows") != std::string::npos);
  CHECK(error("long.edo", "a\nb\nc\nd\ne\n", ok).find("more than 4 words") != std::string::npos);
  CHECK(error("open.edo", "a\nb\nc\nd", ok).find("ending in newlines") != std::string::npos);
  CHECK(error("key.edo", "a\nb\nc\nd\n", "vocab").find("manifest 'vocab' must be") != std::string::npos);
  CHECK(error("none.edo", "a\nb\nc\nd\n", {{"section", "words"}, {"words", 4}}).find("words") != std::string::npos);
  CHECK(error("huge.edo", std::string(5000, 'x') + "\nb\nc\nd\n", ok).find("longer than 4096") != std::string::npos);
  CHECK(test::error_of([] { vocab_section_bytes({"a\nb"}); }).find("line break") != std::string::npos);
}

TEST_CASE("required features: every name a codec spec yields is one the container accepts, and each is yielded") {
  // The writer's names (spec_format_features) and the reader's list (io::kFormatFeatures) are kept in two
  // layers; this ties them: a name written that a reader refused would make edo's own files unreadable.
  std::set<std::string> yielded;
  for (const char* spec : {"int3", "int5:group=16", "int6:scale=fp16", "rot,int4:scale=fp16", "tc:bits=3",
                           "pq:m=8,codebooks=fp16", "rq:m=4,codebooks=int8", "group:groups=8:residual=[int3:group=8]",
                           "int8", "fp16", "pq:m=8", "csr:density=0.5,values=int8", "hash:buckets=64"})
    for (const std::string& f : edo::spec_format_features(spec)) yielded.insert(f);
  yielded.insert("rowmap:runs");  // from the row map, not a spec
  for (const edo::TierKindTraits& t : edo::tier_kinds())
    if (t.feature) yielded.insert(t.feature);  // from a tier kind's row
  std::set<std::string> accepted(std::begin(edo::io::kFormatFeatures), std::end(edo::io::kFormatFeatures));
  CHECK(yielded == accepted);
  CHECK(edo::spec_format_features("int8").empty());
  CHECK(edo::spec_format_features("rot,int4:scale=fp16") == std::vector<std::string>{"codec:rot", "scale=fp16"});
  CHECK(edo::spec_format_features("group:groups=8:residual=[int3:group=8]") == std::vector<std::string>{"codec:int3"});
}
