// SPDX-License-Identifier: Apache-2.0
// Model files (docs/FORMAT.md, section 10): several one-table files under
// their names in one container, read in place.
#include "test_container_edit.hpp"
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/edo_file.hpp>
#include <edo/io/container.hpp>
#include <edo/io/model.hpp>
#include <edo/reader.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <tuple>
#include <vector>

using edo::test::Packed;
using edo::test::TempDir;

namespace {

std::vector<float> all_rows(const edo::Reader& r) {
  std::vector<float> out(r.rows() * r.dim());
  r.decode_all(out.data());
  return out;
}

bool throws_with(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
  } catch (const edo::Error& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return true;
    MESSAGE("error was: " << e.what());
    return false;
  }
  return false;
}

}  // namespace

TEST_CASE("model: tables written whole read back under their names, byte for byte the files they were") {
  const Packed a({"hot:rows=20%:fp16", "cold:rest:int8"});
  const Packed b({"all:rest:int4:group=4"});
  TempDir dir;
  const std::string model = dir.file("m.edo");
  edo::io::write_model(model, {{"emb.a", a.path}, {"/group/b", b.path}}, {{"tool", "test"}});
  const edo::Reader m = edo::Reader::open(model, {edo::io::Verify::all});
  CHECK(m.is_model());
  CHECK(m.tables() == std::vector<std::string>{"emb.a", "/group/b"});
  const edo::Reader ra = edo::Reader::open(a.path), rb = edo::Reader::open(b.path);
  CHECK(all_rows(m.table("emb.a")) == all_rows(ra));
  CHECK(all_rows(m.table("/group/b")) == all_rows(rb));
  CHECK(m.table("emb.a").path() == model + ":emb.a");
  // A table's section is its file, whole.
  const edo::io::Container c = edo::io::Container::open(model);
  const auto bytes = c.section(c.model_tables()[1].section);
  CHECK(std::string(reinterpret_cast<const char*>(bytes.data), bytes.size) == edo::test::read_bytes(b.path));
  CHECK(c.minor_version() == edo::io::kModelMinor);
  // Row calls on the model name its tables; a missing table names them too.
  std::vector<float> row(m.table("emb.a").dim());
  const int64_t id = 0;
  CHECK(throws_with([&] { m.lookup(&id, 1, row.data()); }, "emb.a, /group/b"));
  CHECK(throws_with([&] { (void)m.table("nope"); }, "no table 'nope'"));
  // The same inputs give the same bytes.
  edo::io::write_model(dir.file("again.edo"), {{"emb.a", a.path}, {"/group/b", b.path}}, {{"tool", "test"}});
  CHECK(edo::test::read_bytes(dir.file("again.edo")) == edo::test::read_bytes(model));
  // A one-table file is its own one table.
  CHECK(ra.tables() == std::vector<std::string>{"table"});
  CHECK(&ra.table("table") == &ra);
}

TEST_CASE("model: one call pools bags of several tables, each as its table alone pools them") {
  const Packed a({"hot:rows=20%:fp16", "cold:rest:int8"});
  const Packed b({"all:rest:int4:group=4"});
  TempDir dir;
  const std::string model = dir.file("m.edo");
  edo::io::write_model(model, {{"users", a.path}, {"items", b.path}}, {{"tool", "test"}});
  const edo::Reader m = edo::Reader::open(model);
  const std::vector<int64_t> offsets_a = {0, 3, 3}, ids_a = {1, 5, 599, 7, 8};
  const std::vector<int64_t> offsets_b = {0, 1}, ids_b = {42, 0, 17};
  std::vector<float> out_a(offsets_a.size() * a.dim), out_b(offsets_b.size() * b.dim);
  const std::vector<edo::TableBags> sets = {
      {"items", {offsets_b.data(), offsets_b.size(), ids_b.data(), ids_b.size(), nullptr}, out_b.data()},
      {"users", {offsets_a.data(), offsets_a.size(), ids_a.data(), ids_a.size(), nullptr}, out_a.data()}};
  m.lookup_bags(sets, edo::PoolMode::sum);
  for (const auto& [name, set, out, dim] :
       {std::tuple{"users", sets[1], &out_a, a.dim}, std::tuple{"items", sets[0], &out_b, b.dim}}) {
    std::vector<float> want(set.bags.count * dim);
    m.table(name).lookup_bags_reference(set.bags, edo::PoolMode::sum, want.data());
    CHECK(*out == want);
  }
  CHECK(out_a[1 * a.dim] == 0.0f);  // bag 1 is empty: it pools to zeros
  // A table the file lacks: refused before anything is pooled.
  std::fill(out_a.begin(), out_a.end(), -1.0f);
  const std::vector<edo::TableBags> bad = {
      {"users", {offsets_a.data(), offsets_a.size(), ids_a.data(), ids_a.size(), nullptr}, out_a.data()},
      {"nope", {offsets_b.data(), offsets_b.size(), ids_b.data(), ids_b.size(), nullptr}, out_b.data()}};
  CHECK(throws_with([&] { m.lookup_bags(bad, edo::PoolMode::sum); }, "no table 'nope'"));
  CHECK(out_a[0] == -1.0f);
}

TEST_CASE("model: bounded memory reads a model's disk tier where it lies in the model file") {
  const Packed a({"hot:rows=10%:fp16", "cold:rest:int8:disk"});
  TempDir dir;
  const std::string model = dir.file("m.edo");
  edo::io::write_model(model, {{"x", a.path}, {"y", a.path}}, {{"tool", "test"}});
  edo::ReaderOptions ro;
  ro.max_resident = 1 << 20;
  const edo::Reader m = edo::Reader::open(model, ro);
  const edo::Reader plain = edo::Reader::open(a.path);
  std::vector<int64_t> ids(a.rows);
  std::iota(ids.begin(), ids.end(), 0);
  std::vector<float> got(a.rows * a.dim), want(got.size());
  m.table("y").lookup(ids.data(), ids.size(), got.data());
  plain.lookup(ids.data(), ids.size(), want.data());
  CHECK(got == want);
  CHECK(m.table("y").cache_counts(1).cached);
}

TEST_CASE("model: hostile table directories are refused before anything is sized by them") {
  const Packed a({"all:rest:int8"});
  TempDir dir;
  const std::string model = dir.file("m.edo");
  edo::io::write_model(model, {{"a", a.path}, {"b", a.path}}, {{"tool", "test"}});
  const std::string bytes = edo::test::read_bytes(model);
  const edo::io::ContainerHeader h = edo::test::header_of(bytes);
  const std::string text = bytes.substr(h.manifest_offset, h.manifest_length);
  auto edited = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = nlohmann::json::parse(text);
    edit(m);
    const std::string path = dir.file("bad.edo");
    edo::test::write_bytes(path, edo::test::with_manifest_text(bytes, m.dump()));
    return path;
  };
  auto refused = [&](const std::string& path, const std::string& needle) {
    return throws_with([&] { (void)edo::Reader::open(path); }, needle);
  };
  CHECK(refused(edited([](auto& m) { m["model"]["tables"][1]["name"] = "a"; }), "two model tables are named 'a'"));
  CHECK(refused(edited([](auto& m) { m["model"]["tables"][1]["section"] = "tables/0"; }), "share section"));
  CHECK(refused(edited([](auto& m) { m["model"]["tables"][0]["section"] = "nowhere"; }), "missing section"));
  CHECK(refused(edited([](auto& m) { m["model"]["tables"][0]["name"] = "has space"; }), "not a table name"));
  CHECK(refused(edited([](auto& m) { m["model"]["tables"] = nlohmann::json::array(); }), "non-empty"));
  CHECK(refused(edited([](auto& m) { m["rows"] = 5; }), "no \"rows\" of its own"));
  CHECK(refused(edited([](auto& m) {
                  auto& t = m["model"]["tables"];
                  while (t.size() <= edo::io::kMaxModelTables) t.push_back(t[0]);
                }),
                "more than the 65536"));
  // A table whose bytes are not a table file.
  CHECK(throws_with(
      [&] {
        std::string b = bytes;
        const edo::io::Container c = edo::io::Container::open(model);
        // The table's magic; the model's section checksum is left stale on purpose.
        b[static_cast<size_t>(c.sections()[0].offset)] = 'X';
        edo::test::write_bytes(dir.file("x.edo"), b);
        (void)edo::Reader::open(dir.file("x.edo"));
      },
      "x.edo:a: not an .edo file (bad magic)"));
  // A model inside a model is refused at write and at read.
  CHECK(throws_with(
      [&] {
        edo::io::write_model(dir.file("mm.edo"), {{"m", model}}, {{"tool", "test"}});
      },
      "is itself a model file"));
}

TEST_CASE("model: inputs choose tables by name, skip what is no table, and say why") {
  CHECK(edo::io::glob_match("emb.*", "emb.words.weight"));
  CHECK(edo::io::glob_match("C?", "C3"));
  CHECK_FALSE(edo::io::glob_match("C?", "C13"));
  CHECK(edo::io::glob_match("*", ""));
  CHECK(edo::io::glob_match("a*b*c", "aXbYbZc"));
  CHECK_FALSE(edo::io::glob_match("a*b", "aXbYc"));
  // --tables: the whole name or any run of its '.'/'/' parts.
  CHECK(edo::io::table_glob_match("word*", "embeddings.word_embeddings.weight"));
  CHECK(edo::io::table_glob_match("position_embeddings", "bert.embeddings.position_embeddings.weight"));
  CHECK(edo::io::table_glob_match("embeddings.word_embeddings", "bert.embeddings.word_embeddings.weight"));
  CHECK(edo::io::table_glob_match("C1", "sparse/C1"));
  CHECK_FALSE(edo::io::table_glob_match("C1", "C10"));
  CHECK_FALSE(edo::io::table_glob_match("ord*", "embeddings.word_embeddings.weight"));  // parts start at a separator
  CHECK_FALSE(edo::io::table_glob_match("word", "embeddings.word_embeddings.weight"));  // and end at one
  CHECK(edo::io::is_literal_glob("C1"));
  CHECK_FALSE(edo::io::is_literal_glob("C?"));
  const std::vector<std::string> names = {"a", "a=b", "c"};
  CHECK(edo::io::split_named_argument("a=b=x.npy", names)->first == "a=b");
  CHECK(edo::io::split_named_argument("a=x.npy", names)->second == "x.npy");
  CHECK_FALSE(edo::io::split_named_argument("counts=x.npy", names).has_value());

  TempDir dir;
  edo::test::write_random_npy(dir.file("emb_users.npy"), 40, 8, 1);
  edo::test::write_random_npy(dir.file("emb_items.npy"), 30, 8, 2);
  edo::test::write_random_npy(dir.file("dense.npy"), 5, 8, 3);
  CHECK(edo::io::is_model_spec(dir.path().string()));
  CHECK_FALSE(edo::io::is_model_spec(dir.file("dense.npy")));
  const edo::io::ModelSelection sel = edo::io::select_model_tables(dir.path().string(), {});
  REQUIRE(sel.tables.size() == 2);
  CHECK(sel.tables[0].name == "emb_items");
  CHECK(sel.tables[0].rows == 30);
  REQUIRE(sel.skipped.size() == 1);
  CHECK(sel.skipped[0].first == "dense");
  CHECK(edo::io::select_model_tables(dir.path().string(), {"dense", "emb_u*"}).tables.size() == 2);
  CHECK(
      throws_with([&] { (void)edo::io::select_model_tables(dir.path().string(), {"nothing*"}); }, "matches no tensor"));
  // A wildcard reaching a tensor that is no table skips it with its reason; naming it exactly is an error.
  {
    // A 1-D .npy of 5 floats, written by hand: version 1.0, header padded to 128 bytes.
    std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }";
    header.append(128 - 10 - header.size() - 1, ' ');
    header += '\n';
    std::ofstream f(dir.file("bias.npy"), std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const char len[2] = {static_cast<char>(header.size()), 0};
    f.write(len, 2);
    f << header;
    const float v[5] = {1, 1, 1, 1, 1};
    f.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  const edo::io::ModelSelection all = edo::io::select_model_tables(dir.path().string(), {"*"});
  CHECK(all.tables.size() == 3);
  REQUIRE(all.skipped.size() == 1);
  CHECK(all.skipped[0].first == "bias");
  CHECK(throws_with([&] { (void)edo::io::select_model_tables(dir.path().string(), {"bias"}); }, "not 2-D"));
  CHECK(edo::io::default_table_reason("emb_items", {"emb_items", "dense"}) == "its name holds 'emb'");
  CHECK(edo::io::default_table_reason("dense", {"emb_items", "dense"}).empty());
  CHECK(edo::io::default_table_reason("dense", {"dense", "w"}).find("every 2-D one") != std::string::npos);
}
