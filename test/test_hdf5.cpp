// SPDX-License-Identifier: Apache-2.0
#include "test_util.hpp"

#include <edo/float16.hpp>
#include <edo/io/table.hpp>

#include <hdf5.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace edo;
using namespace edo::io;
using edo::test::error_of;
using edo::test::TempDir;

namespace {

// A file written straight through the HDF5 C API, for layouts edo's writer
// never produces (chunks, filters, big-endian, odd types).
class RawH5 {
 public:
  explicit RawH5(const std::string& path) {
    file_ = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    REQUIRE(file_ >= 0);
  }
  ~RawH5() { H5Fclose(file_); }
  RawH5(const RawH5&) = delete;
  RawH5& operator=(const RawH5&) = delete;

  // Creates `name` (intermediate groups included) of file type `type` and
  // shape `dims`, writes `data` given as memory type `mem_type`.
  void add(const std::string& name, hid_t type, const std::vector<hsize_t>& dims, hid_t mem_type = -1,
           const void* data = nullptr, hid_t dcpl = H5P_DEFAULT) {
    const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
    const hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
    H5Pset_create_intermediate_group(lcpl, 1);
    const hid_t ds = H5Dcreate2(file_, name.c_str(), type, space, lcpl, dcpl, H5P_DEFAULT);
    REQUIRE(ds >= 0);
    if (data) REQUIRE(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0);
    H5Dclose(ds);
    H5Pclose(lcpl);
    H5Sclose(space);
  }
  void group(const std::string& name) {
    H5Gclose(H5Gcreate2(file_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
  }
  hid_t id() const { return file_; }

 private:
  hid_t file_;
};

std::vector<float> read_all(TableReader& t, uint64_t block) {
  std::vector<float> out(t.rows() * t.dim());
  for (uint64_t r = 0; r < t.rows(); r += block) {
    const uint64_t n = std::min(block, t.rows() - r);
    t.read_f32(r, n, out.data() + r * t.dim());
  }
  return out;
}

}  // namespace

TEST_CASE("hdf5: GloVe npy -> h5 -> read back bit-equal") {
  TempDir dir;
  auto src = open_table(test::shared_data("glove.6B.50d.10k.npy"));
  const std::vector<float> values = read_all(*src, 4096);
  const std::string spec = dir.file("glove.h5") + ":/emb/glove/vectors";
  auto w = create_table(spec, src->rows(), src->dim());
  for (uint64_t r = 0; r < src->rows(); r += 3000) {
    const uint64_t n = std::min<uint64_t>(3000, src->rows() - r);
    w->write_f32(values.data() + r * src->dim(), n);
  }
  w->commit();
  CHECK(dir.entries() == 1);

  auto named = open_table(spec);
  CHECK(named->format() == "hdf5");
  CHECK(named->rows() == 10000);
  CHECK(named->dim() == 50);
  CHECK(named->dtype() == DType::f32);
  CHECK(read_all(*named, 777) == values);
  // HDF5 reads go through the library's one handle: no concurrent reads.
  CHECK_FALSE(named->concurrent_reads());
  std::vector<float> one(50);
  CHECK_THROWS_AS(named->read_f32_concurrent(0, 1, one.data()), edo::Error);
  // The only dataset is found without a name, and ".hdf5" is the same format.
  std::filesystem::copy_file(dir.file("glove.h5"), dir.file("glove.hdf5"));
  auto unnamed = open_table(dir.file("glove.hdf5"));
  CHECK(read_all(*unnamed, 10000) == values);
  CHECK(std::memcmp(unnamed->rows_f32(9999, 1), values.data() + 9999 * 50, 50 * sizeof(float)) == 0);
}

TEST_CASE("hdf5: every dtype round-trips; float16 is stored as IEEE half") {
  TempDir dir;
  // 2^-24 is the smallest half subnormal; 65504 the largest finite half.
  const std::vector<float> values = {0.f, 1.f, 2.f, 3.f, 4.f, 5.f, 100.f, 7.f};
  const std::vector<float> halves = {0.f, -1.5f, 0x1p-24f, 65504.f, 0.333251953125f, -0.f, 1024.f, 3.f};
  for (DType t : {DType::f16, DType::f32, DType::f64, DType::i8, DType::u8, DType::i16, DType::u16, DType::i32,
                  DType::u32, DType::i64, DType::u64}) {
    CAPTURE(dtype_name(t));
    const std::string path = dir.file(std::string(dtype_name(t)) + ".h5");
    const auto& v = t == DType::f16 ? halves : values;
    auto w = create_table(path + ":/x", 4, 2, t);
    w->write_f32(v.data(), 2);
    w->write_f32(v.data() + 4, 2);
    w->commit();
    auto r = open_table(path + ":x");
    CHECK(r->dtype() == t);
    CHECK(read_all(*r, 3) == v);
  }
  // The bits on disk are binary16, as any HDF5 reader sees them.
  const hid_t f = H5Fopen(dir.file("float16.h5").c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  const hid_t ds = H5Dopen2(f, "/x", H5P_DEFAULT);
  const hid_t type = H5Dget_type(ds);
  size_t spos, epos, esize, mpos, msize;
  H5Tget_fields(type, &spos, &epos, &esize, &mpos, &msize);
  CHECK(H5Tget_class(type) == H5T_FLOAT);
  CHECK(H5Tget_size(type) == 2);
  CHECK(H5Tget_ebias(type) == 15);
  CHECK((spos == 15 && epos == 10 && esize == 5 && mpos == 0 && msize == 10));
  std::vector<uint16_t> bits(8);
  H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bits.data());
  for (size_t i = 0; i < 8; ++i) CHECK(bits[i] == float_to_half_bits(halves[i]));
  H5Tclose(type);
  H5Dclose(ds);
  H5Fclose(f);
}

TEST_CASE("hdf5: chunked + gzip, big-endian and nested datasets written by the C API") {
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) return;
  TempDir dir;
  const std::string path = dir.file("chunked.h5");
  std::vector<int16_t> ints(100 * 7);
  for (size_t i = 0; i < ints.size(); ++i) ints[i] = static_cast<int16_t>(static_cast<int>(i * 37 % 2001) - 1000);
  std::vector<double> doubles(5 * 3);
  for (size_t i = 0; i < doubles.size(); ++i) doubles[i] = 0.25 * static_cast<double>(i) - 1.0;
  {
    RawH5 h(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {16, 7};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_shuffle(dcpl);
    H5Pset_deflate(dcpl, 6);
    h.add("/a/b/ints", H5T_STD_I16LE, {100, 7}, H5T_NATIVE_INT16, ints.data(), dcpl);
    H5Pclose(dcpl);
    h.add("/big_endian", H5T_IEEE_F64BE, {5, 3}, H5T_NATIVE_DOUBLE, doubles.data());
  }
  auto t = open_table(path + ":/a/b/ints");
  CHECK(t->dtype() == DType::i16);
  CHECK(t->rows() == 100);
  const std::vector<float> got = read_all(*t, 13);  // blocks that straddle chunks
  for (size_t i = 0; i < ints.size(); ++i) REQUIRE(got[i] == static_cast<float>(ints[i]));
  // Reading backwards across chunks gives the same rows.
  CHECK(t->rows_f32(90, 10)[0] == static_cast<float>(ints[90 * 7]));
  CHECK(t->rows_f32(3, 1)[6] == static_cast<float>(ints[3 * 7 + 6]));

  auto be = open_table(path + ":big_endian");
  CHECK(be->dtype() == DType::f64);
  const std::vector<float> d = read_all(*be, 5);
  for (size_t i = 0; i < doubles.size(); ++i) CHECK(d[i] == static_cast<float>(doubles[i]));

  // Two 2-D datasets: the name is required, and the error lists both.
  const std::string msg = error_of([&] { open_table(path); });
  CAPTURE(msg);
  CHECK(msg.find("several") != std::string::npos);
  CHECK(msg.find("/a/b/ints (2-D)") != std::string::npos);
  CHECK(msg.find("/big_endian") != std::string::npos);
}

TEST_CASE("hdf5: hostile and unsupported files get one clear line") {
  TempDir dir;
  const std::string path = dir.file("bad.h5");
  {
    RawH5 h(path);
    h.add("/one_d", H5T_IEEE_F32LE, {6});
    h.add("/three_d", H5T_IEEE_F32LE, {2, 2, 2});
    h.add("/empty", H5T_IEEE_F32LE, {0, 4});
    const hid_t compound = H5Tcreate(H5T_COMPOUND, 8);
    H5Tinsert(compound, "a", 0, H5T_NATIVE_FLOAT);
    H5Tinsert(compound, "b", 4, H5T_NATIVE_FLOAT);
    h.add("/compound", compound, {3, 2});
    H5Tclose(compound);
    const hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    h.add("/strings", str, {3, 2});
    H5Tclose(str);
    h.group("/just_a_group");
  }
  auto expect_error = [&](const std::string& spec, const std::string& needle) {
    const std::string msg = error_of([&] { open_table(spec); });
    CAPTURE(msg);
    CHECK(msg.find(spec) == 0);
    CHECK(msg.find(needle) != std::string::npos);
    CHECK(msg.find('\n') == std::string::npos);
  };
  expect_error(path + ":/nope", "no dataset '/nope'");
  expect_error(path + ":/nope", "/three_d (3-D)");  // the listing helps the user pick
  expect_error(path + ":/deep/er/nope", "no dataset");
  expect_error(path + ":/one_d", "2-D");
  expect_error(path + ":/three_d", "got 3 dimensions");
  expect_error(path + ":/empty", "empty table");
  expect_error(path + ":/compound", "compound");
  expect_error(path + ":/strings", "string");
  expect_error(path + ":/just_a_group", "not a dataset");
  expect_error(path, "several 2-D datasets");

  const std::string none = dir.file("none.h5");
  { RawH5 h(none); }
  expect_error(none, "no 2-D datasets");

  const std::string fake = dir.file("fake.h5");
  test::write_bytes(fake, "\x89HDF\r\n\x1a\n but nothing that follows is HDF5");
  const std::string fake_msg = error_of([&] { open_table(fake); });
  CHECK(fake_msg.find(fake) == 0);
  const std::string text = dir.file("text.h5");
  test::write_bytes(text, "hello");
  expect_error(text, "not an HDF5 file");

  // A valid file cut short: an error, never a crash.
  const std::string good = dir.file("good.h5");
  {
    auto w = create_table(good + ":/x", 1000, 16);
    std::vector<float> rows(1000 * 16, 1.f);
    w->write_f32(rows.data(), 1000);
    w->commit();
  }
  const std::string bytes = test::read_bytes(good);
  const std::string cut = dir.file("cut.h5");
  test::write_bytes(cut, bytes.substr(0, bytes.size() / 2));
  CHECK_THROWS_AS(
      [&] {
        auto t = open_table(cut + ":/x");
        std::vector<float> all(1000 * 16);
        t->read_f32(0, 1000, all.data());
      }(),
      edo::Error);
}

TEST_CASE("hdf5: writer replaces the file, leaves nothing without commit, needs a dataset name") {
  TempDir dir;
  const std::string path = dir.file("out.h5");
  const float row[3] = {1, 2, 3};
  {
    auto w = create_table(path + ":/x", 2, 3);
    w->write_f32(row, 1);
  }
  CHECK(dir.entries() == 0);
  auto short_w = create_table(path + ":/x", 2, 3);
  short_w->write_f32(row, 1);
  CHECK_THROWS_AS(short_w->commit(), edo::Error);
  CHECK_THROWS_AS(short_w->write_f32(row, 2), edo::Error);
  short_w.reset();
  CHECK(dir.entries() == 0);

  {
    auto w = create_table(path + ":/first", 1, 3);
    w->write_f32(row, 1);
    w->commit();
  }
  // The file is created anew, so another dataset would lose /first: refused
  // (a usage error naming it) unless replacing the whole file is asked for.
  try {
    create_table(path + ":/second", 1, 3);
    FAIL("an existing file's other dataset was about to be dropped");
  } catch (const edo::Error& e) {
    CHECK(e.code() == edo::ExitCode::usage);
    CHECK(std::string(e.what()).find("already holds 1 other object (/first)") != std::string::npos);
  }
  for (const char* name : {"/first", "/second"}) {
    auto w = create_table(path + ":" + name, 1, 3, DType::f32, OtherContents::replace);
    w->write_f32(row, 1);
    w->commit();
  }
  // Replaced whole: only the second dataset is there.
  CHECK(open_table(path)->rows() == 1);
  CHECK(error_of([&] { open_table(path + ":/first"); }).find("no dataset") != std::string::npos);

  CHECK(error_of([&] { create_table(dir.file("y.h5"), 1, 3); }).find("name the dataset") != std::string::npos);
  CHECK(error_of([&] { create_table(dir.file("y.h5") + ":/", 1, 3); }).find("name the dataset") != std::string::npos);
  CHECK(dir.entries() == 1);
}

TEST_CASE("table: formats are sniffed by magic when the extension is unknown") {
  TempDir dir;
  const float row[4] = {1, 2, 3, 4};
  {
    auto w = create_table(dir.file("a.h5") + ":/g/x", 1, 4, DType::f64);
    w->write_f32(row, 1);
    w->commit();
    auto n = create_table(dir.file("a.npy"), 1, 4, DType::u8);
    n->write_f32(row, 1);
    n->commit();
  }
  std::filesystem::copy_file(dir.file("a.h5"), dir.file("h5.bin"));
  std::filesystem::copy_file(dir.file("a.npy"), dir.file("npy.dat"));
  auto h = open_table(dir.file("h5.bin"));
  CHECK(h->format() == "hdf5");
  CHECK(h->rows_f32(0, 1)[3] == 4.f);
  auto n = open_table(dir.file("npy.dat"));
  CHECK(n->format() == "npy");
  CHECK(n->dtype() == DType::u8);
  test::write_bytes(dir.file("junk.dat"), "just some text");
  CHECK(error_of([&] { open_table(dir.file("junk.dat")); }).find("unknown table format") != std::string::npos);
}

namespace {

// Peak resident memory of this process so far (VmHWM), in bytes.
uint64_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string key;
  uint64_t kb = 0;
  while (f >> key) {
    if (key == "VmHWM:" && f >> kb) return kb << 10;
    f.ignore(1 << 20, '\n');
  }
  return 0;
}

}  // namespace

TEST_CASE("hdf5: 1 x 1 chunks read in bounded memory and bit-equal") {
  TempDir dir;
  const std::string path = dir.file("tiny_chunks.h5");
  const uint64_t rows = 4000, dim = 50;
  std::vector<float> values(rows * dim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 977) * 0.25f - 3.0f;
  {
    RawH5 f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {1, 1};
    H5Pset_chunk(dcpl, 2, chunk);
    f.add("/emb", H5T_IEEE_F32LE, {rows, dim}, H5T_NATIVE_FLOAT, values.data(), dcpl);
    H5Pclose(dcpl);
  }
  const uint64_t before = peak_rss_bytes();
  auto t = open_table(path + ":/emb");
  // One block of every row: 200,000 chunks in one read took 6.4 KB each before.
  const std::vector<float> got = read_all(*t, rows);
  CHECK(std::memcmp(got.data(), values.data(), values.size() * sizeof(float)) == 0);
  const uint64_t grown = peak_rss_bytes() - before;
  CHECK_MESSAGE(grown < (uint64_t{256} << 20), "peak RSS grew by ", grown, " bytes");
}

TEST_CASE("hdf5: a dataset that stores almost nothing of what it declares is refused unless allowed") {
  TempDir dir;
  const std::string path = dir.file("fill.h5");
  {
    RawH5 f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {1024, 64};
    H5Pset_chunk(dcpl, 2, chunk);
    f.add("/emb", H5T_IEEE_F32LE, {uint64_t{1} << 24, 64}, -1, nullptr, dcpl);  // 4 GiB declared, nothing stored
    H5Pclose(dcpl);
  }
  const std::string err = error_of([&] { open_table(path + ":/emb"); });
  CHECK(err.find("fill.h5:/emb: declares 16777216 x 64 values (4294967296 bytes) but stores 0 bytes") !=
        std::string::npos);
  CHECK(err.find("--allow-fill") != std::string::npos);
  set_hdf5_input_policy({.allow_external = false, .allow_fill = true});
  auto t = open_table(path + ":/emb");
  CHECK(t->rows() == (uint64_t{1} << 24));
  CHECK(t->rows_f32(12345, 1)[7] == 0.0f);
  set_hdf5_input_policy({});
}

TEST_CASE("hdf5: values kept in other files are refused, and beside the input read only when allowed") {
  TempDir dir;
  const std::string outside = dir.file("outside.bin");
  {
    std::ofstream o(outside, std::ios::binary);
    const float v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    o.write(reinterpret_cast<const char*>(v), sizeof v);
  }
  std::filesystem::create_directory(dir.file("in"));
  const std::string path = dir.file("in/ext.h5");
  {
    RawH5 f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(dcpl, outside.c_str(), 0, 32);  // an absolute path: any local file
    f.add("/abs", H5T_IEEE_F32LE, {4, 2}, -1, nullptr, dcpl);
    H5Pclose(dcpl);
    const hid_t rel = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_external(rel, "../outside.bin", 0, 32);  // leaves the input's directory
    f.add("/up", H5T_IEEE_F32LE, {4, 2}, -1, nullptr, rel);
    H5Pclose(rel);
    REQUIRE(H5Lcreate_external("../elsewhere.h5", "/emb", f.id(), "/link", H5P_DEFAULT, H5P_DEFAULT) >= 0);
  }
  CHECK(error_of([&] { open_table(path + ":/abs"); }).find("keeps its values in another file") != std::string::npos);
  CHECK(error_of([&] { open_table(path + ":/up"); }).find("pass --allow-external") != std::string::npos);
  CHECK(error_of([&] { open_table(path + ":/link"); }).find("is a link to another file (../elsewhere.h5)") !=
        std::string::npos);
  set_hdf5_input_policy({.allow_external = true, .allow_fill = false});
  CHECK(error_of([&] { open_table(path + ":/abs"); }).find("only files in the input's directory") != std::string::npos);
  CHECK(error_of([&] { open_table(path + ":/up"); }).find("only files in the input's directory") != std::string::npos);
  CHECK(error_of([&] { open_table(path + ":/link"); }).find("only files in the input's directory") !=
        std::string::npos);
  set_hdf5_input_policy({});
}

TEST_CASE("hdf5: rows sampled from one big gzip chunk inflate it once, not once a row") {
  if (H5Zfilter_avail(H5Z_FILTER_DEFLATE) <= 0) return;
  TempDir dir;
  const std::string path = dir.file("big_chunk.h5");
  const uint64_t rows = 40000, dim = 50;  // one 8 MB chunk, beyond HDF5's 1 MiB default chunk cache
  std::vector<float> values(rows * dim);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7919) % 10007) * 1e-3f;
  {
    RawH5 f(path);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    const hsize_t chunk[2] = {rows, dim};
    H5Pset_chunk(dcpl, 2, chunk);
    H5Pset_deflate(dcpl, 1);
    f.add("/emb", H5T_IEEE_F32LE, {rows, dim}, H5T_NATIVE_FLOAT, values.data(), dcpl);
    H5Pclose(dcpl);
  }
  auto t = open_table(path + ":/emb");
  // edo-profile's sample: rows in ascending order, one at a time. Inflating
  // the chunk for each of 4,000 rows took minutes; from the cache, well
  // under the test's time limit.
  for (uint64_t r = 3; r < rows; r += 10) {
    const float* got = t->rows_f32(r, 1);
    REQUIRE(std::memcmp(got, values.data() + r * dim, dim * sizeof(float)) == 0);
  }
}
