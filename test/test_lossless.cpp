// SPDX-License-Identifier: Apache-2.0
// Lossless tiers (lossless.hpp): the spec, the code, bit-exact round trips
// of every value type (NaN payloads, signed zeros, subnormals, infinities),
// incompressible values stored raw, and hostile sections.
#include "test_container_edit.hpp"
#include "test_util.hpp"

#include <edo/float16.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/lossless.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <numeric>
#include <thread>

using edo::test::error_of;

namespace {

// Each value type's special bit patterns, as the fp32 the reader sees.
std::vector<uint32_t> special_bits(edo::LosslessValues v) {
  switch (v) {
    case edo::LosslessValues::bf16:  // quiet and signalling NaNs with payloads, -0, subnormals, infinities
      return {0x7fc10000u, 0xff810000u, 0x7f820000u, 0x80000000u, 0x00010000u, 0x80050000u, 0x7f800000u, 0xff800000u};
    case edo::LosslessValues::f16: {
      std::vector<uint32_t> out;
      for (const uint32_t h : {0x7e01u, 0xfc03u, 0x7c01u, 0x8000u, 0x0001u, 0x83ffu, 0x7c00u, 0xfc00u})
        out.push_back(edo::float_bits(edo::half_bits_to_float(static_cast<uint16_t>(h))));
      return out;
    }
    case edo::LosslessValues::f32:
      break;
  }
  return {0x7fc00123u, 0xff800001u, 0x7f812345u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f800000u, 0xff800000u};
}

// `rows` x `dim` values of type v: Gaussian, rounded to v, with v's
// special patterns in row 3 and at the start of the last row.
std::vector<float> table_of(edo::LosslessValues v, uint64_t rows, uint64_t dim, uint64_t seed) {
  edo::Rng rng(seed);
  std::vector<float> x(rows * dim);
  for (auto& e : x) {
    const double u = 1.0 - rng.uniform();  // Box-Muller: a Gaussian's heavy exponents
    const auto g =
        static_cast<float>(0.3 * std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * rng.uniform()));
    if (v == edo::LosslessValues::bf16) e = edo::bits_float(edo::float_bits(g) & 0xffff0000u);
    if (v == edo::LosslessValues::f16) e = edo::half_bits_to_float(edo::float_to_half_bits(g));
    if (v == edo::LosslessValues::f32) e = g;
  }
  const std::vector<uint32_t> sp = special_bits(v);
  for (size_t k = 0; k < sp.size() && k < dim; ++k) {
    x[3 * dim + k] = edo::bits_float(sp[k]);
    x[(rows - 1) * dim + k] = edo::bits_float(sp[sp.size() - 1 - k]);
  }
  return x;
}

struct LosslessFile {
  edo::test::TempDir dir;
  uint64_t rows, dim;
  std::vector<float> x;
  std::string path = dir.file("l.edo");
  std::vector<std::string> notes;  // the summary's notes of the lossless tier

  LosslessFile(const std::vector<float>& values, uint64_t r, uint64_t d, const std::string& spec,
               bool two_tiers = false)
      : rows(r), dim(d), x(values) {
    auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(x.data(), rows);
    w->commit();
    auto table = edo::io::open_table(dir.file("t.npy"));
    edo::PackOptions opt;
    opt.allow_nonfinite = true;
    if (two_tiers) opt.tiers.push_back(edo::parse_tier_spec("hot:rows=10:fp32"));
    opt.tiers.push_back(edo::parse_tier_spec("all:rest:" + spec));
    notes = edo::pack_to_edo(*table, path, opt).tiers.back().notes;
  }
  bool decodes_exactly(const edo::Reader& r) const {
    std::vector<float> all(rows * dim);
    r.decode_all(all.data());
    return std::memcmp(all.data(), x.data(), all.size() * sizeof(float)) == 0;
  }
};

}  // namespace

TEST_CASE("lossless: specs parse, print canonically and refuse what they cannot mean") {
  CHECK_FALSE(edo::parse_lossless_spec("lossless").values_given);
  CHECK(edo::parse_lossless_spec("lossless:values=fp16").values == edo::LosslessValues::f16);
  CHECK(edo::format_lossless_spec(edo::LosslessValues::bf16) == "lossless:values=bf16");
  CHECK(edo::tier_kind_of("lossless") == edo::TierKind::lossless);
  CHECK(edo::tier_kind_of("lossless:values=bf16") == edo::TierKind::lossless);
  for (const char* bad :
       {"lossless:values=int8", "lossless:level=3", "lossless:values=bf16,values=fp16", "lossless:values=fp16,rot"})
    CHECK(error_of([&] { edo::parse_lossless_spec(bad); }).find("lossless spec") != std::string::npos);
}

TEST_CASE("lossless: the split and join of a value's bits are inverse for every pattern of each width") {
  for (uint32_t width : {16u, 32u}) {
    edo::Rng rng(width);
    for (int k = 0; k < 100000; ++k) {
      const uint32_t bits = width == 16 ? static_cast<uint32_t>(k % 65536) : static_cast<uint32_t>(rng.next());
      CHECK(edo::lossless_join(edo::lossless_symbol(bits, width), edo::lossless_raw(bits, width), width) == bits);
      if (width == 32 && k > 100) break;
    }
  }
}

TEST_CASE("lossless: code lengths are prefix-free, within the limit, and canonical codes decode") {
  // Fibonacci counts give the deepest Huffman tree: the limit must bite.
  std::vector<uint64_t> counts(256, 0);
  uint64_t a = 1, b = 1;
  for (int s = 0; s < 40; ++s) counts[s] = a, b = a + b, a = b - a;
  for (const std::vector<uint64_t>& c : {counts, std::vector<uint64_t>(256, 7), std::vector<uint64_t>{}}) {
    std::vector<uint64_t> h = c;
    h.resize(256, 0);
    if (c.empty()) h[77] = 5;  // one symbol: one bit
    uint8_t len[256];
    edo::lossless_code_lengths(h.data(), len);
    uint64_t kraft = 0;
    for (int s = 0; s < 256; ++s) {
      CHECK((len[s] > 0) == (h[s] > 0));
      CHECK(len[s] <= edo::kLosslessMaxCodeBits);
      if (len[s]) kraft += uint64_t{1} << (edo::kLosslessMaxCodeBits - len[s]);
    }
    CHECK(kraft <= (uint64_t{1} << edo::kLosslessMaxCodeBits));
    uint16_t codes[256];
    REQUIRE(edo::lossless_canonical_codes(len, codes));
    for (int s = 0; s < 256; ++s)  // no code is a prefix of another (low bits first)
      for (int t = 0; t < 256; ++t)
        if (s != t && len[s] && len[t] && len[s] <= len[t]) CHECK((codes[t] & ((1u << len[s]) - 1u)) != codes[s]);
  }
  uint8_t over[256] = {};
  for (int s = 0; s < 3; ++s) over[s] = 1;  // three one-bit codes
  uint16_t codes[256];
  CHECK_FALSE(edo::lossless_canonical_codes(over, codes));
  over[0] = 12, over[1] = over[2] = 0;
  CHECK_FALSE(edo::lossless_canonical_codes(over, codes));
}

TEST_CASE("lossless: every value type round-trips bit for bit through every read path") {
  for (const auto v : {edo::LosslessValues::bf16, edo::LosslessValues::f16, edo::LosslessValues::f32}) {
    for (const uint64_t dim : {1ull, 37ull, 130ull}) {
      CAPTURE(edo::lossless_values_name(v));
      CAPTURE(dim);
      const uint64_t rows = 700;
      const LosslessFile f(table_of(v, rows, dim, dim), rows, dim, edo::format_lossless_spec(v), dim == 37);
      const edo::Reader r = edo::Reader::open(f.path);
      CHECK(r.tiers().back().kind == edo::TierKind::lossless);
      CHECK(r.tiers().back().codec == edo::format_lossless_spec(v));
      CHECK(f.decodes_exactly(r));
      std::vector<int64_t> ids(rows);
      std::iota(ids.begin(), ids.end(), 0);
      std::reverse(ids.begin(), ids.end());
      std::vector<float> got(rows * dim);
      r.lookup(ids.data(), ids.size(), got.data());
      for (uint64_t i = 0; i < rows; ++i)
        REQUIRE(std::memcmp(got.data() + i * dim, f.x.data() + (rows - 1 - i) * dim, dim * 4) == 0);
      // Bags pool as the reference does (finite rows only: NaN sums compare unequal).
      std::vector<int64_t> finite, starts;
      for (int64_t i = 0; i < static_cast<int64_t>(rows); ++i) finite.push_back((i * 7) % static_cast<int64_t>(rows));
      std::erase_if(finite, [&](int64_t i) { return i == 3 || i == static_cast<int64_t>(rows) - 1; });
      for (size_t at = 0; at < finite.size(); at += 9) starts.push_back(static_cast<int64_t>(at));
      const edo::Bags bags{starts.data(), starts.size(), finite.data(), finite.size(), nullptr};
      std::vector<float> want(starts.size() * dim), pooled(want.size());
      r.lookup_bags_reference(bags, edo::PoolMode::sum, want.data());
      r.lookup_bags(bags, edo::PoolMode::sum, pooled.data());
      CHECK(std::memcmp(want.data(), pooled.data(), want.size() * 4) == 0);
    }
  }
}

TEST_CASE("lossless: segments of their own code, rows read at once from many threads") {
  // 4,000 wide: blocks of 10 rows, segments of 1,040, so three segments.
  const uint64_t rows = 2100, dim = 4000;
  std::vector<float> x = table_of(edo::LosslessValues::bf16, rows, dim, 5);
  for (uint64_t i = 1040 * dim; i < 2080 * dim; ++i) x[i] *= 1024.0f;  // the middle segment's exponents differ
  const LosslessFile f(x, rows, dim, "lossless:values=bf16");
  const edo::io::Container c = edo::io::Container::open(f.path);
  const nlohmann::json& t = c.manifest()["tiers"][0];
  CHECK(t["block_rows"] == edo::lossless_block_rows(dim));
  CHECK(t["segment_rows"] == 1040);
  CHECK(t["coded_segments"] == 3);
  CHECK(t["bits_per_value"].get<double>() < 12.0);
  CHECK(c.manifest()["requires"] == nlohmann::json::array({"tier:lossless"}));
  const edo::Reader r = edo::Reader::open(f.path);
  std::vector<std::thread> threads;
  std::vector<int> exact(4, 0);
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&, k] {
      std::vector<int64_t> ids;
      for (int64_t i = k; i < static_cast<int64_t>(rows); i += 37) ids.push_back(i);
      std::vector<float> got(ids.size() * dim);
      r.lookup(ids.data(), ids.size(), got.data());
      bool same = true;
      for (size_t i = 0; i < ids.size(); ++i)
        same =
            same && std::memcmp(got.data() + i * dim, f.x.data() + static_cast<uint64_t>(ids[i]) * dim, dim * 4) == 0;
      exact[static_cast<size_t>(k)] = same;
    });
  for (auto& th : threads) th.join();
  CHECK(exact == std::vector<int>(4, 1));
}

TEST_CASE("lossless: values that do not compress are stored raw, the file no larger than them and the index") {
  const uint64_t rows = 500, dim = 64;
  std::vector<float> x(rows * dim);
  edo::Rng rng(3);
  for (auto& e : x) {  // every exponent but the non-finite one, evenly: 8 bits of entropy a symbol
    const auto u = static_cast<uint32_t>(rng.next());
    e = edo::bits_float((u & 0x807fffffu) | ((u >> 8) % 255u) << 23);
  }
  const LosslessFile f(x, rows, dim, "lossless");
  const edo::io::Container c = edo::io::Container::open(f.path);
  const nlohmann::json& t = c.manifest()["tiers"][0];
  CHECK(t["codec"] == "lossless:values=fp32");
  CHECK(t["coded_segments"] == 0);
  const uint64_t index = rows * 2 + ((rows + 63) / 64 + 1) * 8 + edo::kLosslessTableBytes + edo::kLosslessCodePad;
  CHECK(t["bits_per_value"].get<double>() * rows * dim / 8 <= static_cast<double>(rows * dim * 4 + index));
  REQUIRE(f.notes.size() == 2);
  CHECK(f.notes[0].find("0 of 1 segments coded") != std::string::npos);
  CHECK(f.notes[1].find("do not compress") != std::string::npos);
  CHECK(f.decodes_exactly(edo::Reader::open(f.path)));
}

TEST_CASE("lossless: a value the type cannot hold is an error, never rounded; bare lossless keeps the input's type") {
  edo::test::TempDir dir;
  std::vector<float> x(40 * 8);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 0.01f + 0.1f * static_cast<float>(i);  // 0.01 is no bf16
  auto w = edo::io::create_table(dir.file("t.npy"), 40, 8);
  w->write_f32(x.data(), 40);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  edo::PackOptions opt;
  opt.tiers = {edo::parse_tier_spec("all:rest:lossless:values=bf16")};
  const std::string msg = error_of([&] { edo::pack_to_edo(*table, dir.file("o.edo"), opt); });
  CHECK(msg.find("row 0, column 0") != std::string::npos);
  CHECK(msg.find("is not exactly a bf16 value") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(dir.file("o.edo")));
  // NaN and Inf are refused unless allowed, as every codec refuses them.
  x[3] = std::nanf("");
  auto w2 = edo::io::create_table(dir.file("n.npy"), 40, 8);
  w2->write_f32(x.data(), 40);
  w2->commit();
  table = edo::io::open_table(dir.file("n.npy"));
  opt.tiers = {edo::parse_tier_spec("all:rest:lossless")};
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("o.edo"), opt); }).find("--allow-nonfinite") !=
        std::string::npos);
  // A bf16 and an fp16 input keep their type.
  for (const auto& [dtype, want] : {std::pair{edo::io::DType::bf16, "lossless:values=bf16"},
                                    std::pair{edo::io::DType::f16, "lossless:values=fp16"}}) {
    std::vector<float> g(30 * 8);
    for (size_t i = 0; i < g.size(); ++i) g[i] = std::sin(static_cast<float>(i)) * 3.0f;
    auto sw = edo::io::create_table(dir.file("h.safetensors"), 30, 8, dtype);
    sw->write_f32(g.data(), 30);
    sw->commit();
    auto in = edo::io::open_table(dir.file("h.safetensors"));
    edo::pack_to_edo(*in, dir.file("h.edo"), opt);
    const edo::Reader r = edo::Reader::open(dir.file("h.edo"));
    CHECK(r.tiers()[0].codec == want);
    std::vector<float> back(30 * 8), src(30 * 8);
    r.decode_all(back.data());
    in->read_f32(0, 30, src.data());
    CHECK(std::memcmp(back.data(), src.data(), src.size() * 4) == 0);
  }
}

TEST_CASE("lossless: hostile tables, offsets and codes are errors, never reads out of bounds") {
  // 20 wide: a byte a row holds its code's length; 200 wide: a u16 its offset.
  for (const uint64_t dim : {20ull, 200ull}) {
    CAPTURE(dim);
    const uint64_t rows = 300;
    const LosslessFile f(table_of(edo::LosslessValues::bf16, rows, dim, 4), rows, dim, "lossless:values=bf16");
    const std::string bytes = edo::test::read_bytes(f.path);
    const edo::io::Container c = edo::io::Container::open(f.path);
    std::map<std::string, uint64_t> at;
    for (const auto& s : c.sections()) at[s.name] = s.offset;
    const auto expect_corrupt = [&](const std::string& hostile, const char* what, const char* says) {
      CAPTURE(what);
      edo::test::write_bytes(f.dir.file("h.edo"), hostile);
      std::string msg;
      edo::ErrorKind kind = edo::ErrorKind::io;
      try {
        const edo::Reader r = edo::Reader::open(f.dir.file("h.edo"), {.verify = edo::io::Verify::structure});
        std::vector<float> all(rows * dim);
        r.decode_all(all.data());
      } catch (const edo::Error& e) {
        msg = e.what();  // at open or at decode
        kind = e.kind();
      }
      CHECK(msg.find("tier 'all'") != std::string::npos);
      CHECK(kind == edo::ErrorKind::corrupt);
      CHECK_MESSAGE(msg.find(says) != std::string::npos, msg);
    };
    const bool lengths = edo::lossless_row_lengths(dim);
    const uint64_t index = at["all/rows"];
    std::string h = bytes;
    h[at["all/tables"]] = static_cast<char>(0xcc);  // symbols 0 and 1 at 12 bits
    expect_corrupt(h, "a length beyond the limit", "code lengths");
    h = bytes;
    for (int k = 0; k < 128; ++k) h[at["all/tables"] + k] = 0x11;  // 256 one-bit codes
    expect_corrupt(h, "lengths overflowing the code space", "code lengths");
    h = bytes;
    if (lengths)
      h[index + 4] = static_cast<char>(0xff);
    else
      h[index + 2 * 5] = static_cast<char>(0xff), h[index + 2 * 5 + 1] = static_cast<char>(0xff);
    expect_corrupt(h, "a row running beyond its block", "row 4");
    h = bytes;
    if (lengths)
      h[index + 1] = 0;
    else
      h[index + 2 * 2] = h[index + 2 * 1], h[index + 2 * 2 + 1] = h[index + 2 * 1 + 1];
    expect_corrupt(h, "a row with no bytes", "row 1");
    h = bytes;
    for (uint64_t k = 0; k < 4; ++k) h[at["all/codes"] + k] = static_cast<char>(0xff);  // codes that are no row's
    expect_corrupt(h, "code bits that do not decode", "row 0");
    h = bytes;
    const uint64_t huge = 1ull << 40;
    std::memcpy(h.data() + at["all/blocks"] + 8, &huge, 8);
    expect_corrupt(h, "a block offset beyond the section", "row 0:");
    if (lengths) {
      // Row 61's code spoilt and block 0's end moved (row 63's offsets then corrupt): four rows are decoded
      // at once, but the error names row 61, the first, as a decode row by row does.
      h = bytes;
      uint64_t start = 0;
      for (uint64_t k = 0; k < 61; ++k) start += static_cast<uint8_t>(h[index + k]);
      for (uint64_t k = 0; k < 3; ++k) h[at["all/codes"] + start + k] = static_cast<char>(0xff);
      uint64_t end0;
      std::memcpy(&end0, h.data() + at["all/blocks"] + 8, 8);
      end0 += 1;
      std::memcpy(h.data() + at["all/blocks"] + 8, &end0, 8);
      expect_corrupt(h, "the first of two corrupt rows", "row 61:");
    }
    for (const auto& [key, value] : {std::pair<const char*, int>{"block_rows", 0}, {"segment_rows", 7}}) {
      h = edo::test::with_manifest(bytes, [&](nlohmann::json& m) { m["tiers"][0][key] = value; });
      expect_corrupt(h, key, key);
    }
  }
}

TEST_CASE("lossless: the reference row decode (the GPU's) equals the reader's four-row loop on every row") {
  for (const auto v : {edo::LosslessValues::bf16, edo::LosslessValues::f16, edo::LosslessValues::f32})
    for (const uint64_t dim : {3ull, 50ull, 200ull}) {
      CAPTURE(edo::lossless_values_name(v));
      CAPTURE(dim);
      const uint64_t rows = 333;
      const LosslessFile f(table_of(v, rows, dim, dim + 1), rows, dim, edo::format_lossless_spec(v));
      std::vector<float> want(rows * dim);
      edo::Reader::open(f.path).decode_all(want.data());
      // The sections as FORMAT.md 9.10 lays them out, read here without the reader.
      const edo::io::Container c = edo::io::Container::open(f.path);
      const nlohmann::json& t = c.manifest()["tiers"][0];
      const uint64_t b_rows = t["block_rows"], s_rows = t["segment_rows"];
      auto section = [&](const char* role) { return c.section(t["sections"][role].get<std::string>()).data; };
      const uint8_t *raw = section("raw"), *codes = section("codes"), *index = section("rows"),
                    *tables = section("tables"), *blocks = section("blocks");
      std::vector<float> got(rows * dim);
      for (uint64_t r = 0; r < rows; ++r) {
        uint8_t lengths[256];
        for (int k = 0; k < 256; ++k) lengths[k] = (tables[(r / s_rows) * 128 + k / 2] >> (4 * (k % 2))) & 0xf;
        uint16_t code[256];
        REQUIRE(edo::lossless_canonical_codes(lengths, code));
        std::vector<uint16_t> entry(2048, 0);
        bool coded = false;
        for (int k = 0; k < 256; ++k)
          if (lengths[k]) {
            coded = true;
            for (uint32_t at = code[k]; at < 2048; at += 1u << lengths[k])
              entry[at] = static_cast<uint16_t>(k | lengths[k] << 8);
          }
        uint64_t base;
        std::memcpy(&base, blocks + 8 * (r / b_rows), 8);
        uint64_t start = base, end;
        if (edo::lossless_row_lengths(dim)) {
          for (uint64_t k = r / b_rows * b_rows; k < r; ++k) start += index[k];
          end = start + index[r];
        } else {
          uint16_t off;
          std::memcpy(&off, index + 2 * r, 2);
          start = base + off;
          if (r + 1 < rows && (r + 1) % b_rows != 0) {
            std::memcpy(&off, index + 2 * (r + 1), 2);
            end = base + off;
          } else {
            std::memcpy(&end, blocks + 8 * (r / b_rows + 1), 8);
          }
        }
        REQUIRE(edo::lossless_decode_row(coded ? entry.data() : nullptr, codes + start, codes + end,
                                         raw + r * dim * edo::lossless_raw_bytes(v), v, dim, got.data() + r * dim));
      }
      CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
    }
}

TEST_CASE("lossless: the planner sizes a lossless tier on its sample in the input's own type, within 2% of the file") {
  edo::test::TempDir dir;
  const uint64_t rows = 3000, dim = 40;
  std::vector<float> x = table_of(edo::LosslessValues::f32, rows, dim, 8);
  for (uint64_t j = 0; j < dim; ++j) x[3 * dim + j] = x[(rows - 1) * dim + j] = 0.5f;  // no NaN in a plan
  auto w = edo::io::create_table(dir.file("t.safetensors"), rows, dim, edo::io::DType::bf16);
  w->write_f32(x.data(), rows);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.safetensors"));
  edo::PlanOptions opt;
  opt.budget = {edo::parse_gate("recall@10>=0.999")};
  opt.queries = 200;
  opt.codecs = {"int8", "lossless"};
  const edo::PlanResult plan = edo::plan_tiers(*table, opt);
  REQUIRE(plan.chosen >= 0);
  const edo::PlanCandidate& chosen = plan.tried[static_cast<size_t>(plan.chosen)];
  CHECK(chosen.tiers.size() == 1);
  CHECK(chosen.tiers[0].codec == "lossless:values=bf16");
  edo::PackOptions po;
  po.tiers = chosen.tiers;
  const edo::PackReport rep = edo::pack_to_edo(*table, dir.file("p.edo"), po);
  CHECK(static_cast<double>(chosen.bytes) == doctest::Approx(static_cast<double>(rep.data_bytes)).epsilon(0.02));
}

TEST_CASE("lossless: the default check reads a tier's row payload at its first lookup, its index at open") {
  const uint64_t rows = 200, dim = 16;
  const LosslessFile f(table_of(edo::LosslessValues::bf16, rows, dim, 6), rows, dim, "lossless:values=bf16");
  const std::string bytes = edo::test::read_bytes(f.path);
  const edo::io::Container c = edo::io::Container::open(f.path);
  for (const auto& s : c.sections()) {
    if (s.name.rfind("all/", 0) != 0) continue;
    CAPTURE(s.name);
    std::string h = bytes;
    h[s.offset] = static_cast<char>(h[s.offset] ^ 1);
    edo::test::write_bytes(f.dir.file("h.edo"), h);
    const bool payload = s.name != "all/blocks" && s.name != "all/tables";
    if (!payload) {
      CHECK(error_of([&] { edo::Reader::open(f.dir.file("h.edo")); }).find(s.name) != std::string::npos);
      continue;
    }
    const edo::Reader r = edo::Reader::open(f.dir.file("h.edo"));  // opens: the payload is not read yet
    std::vector<float> row(dim);
    const int64_t id = 7;
    CHECK(error_of([&] { r.lookup(&id, 1, row.data()); }).find(s.name) != std::string::npos);
  }
}
