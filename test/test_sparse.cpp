// SPDX-License-Identifier: Apache-2.0
// Sparse tiers (sparse.hpp): the spec, what each rule keeps, exact and
// bounded round trips through the reader, and hostile sections.
#include "test_util.hpp"

#include <edo/cpu_path.hpp>
#include <edo/float16.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/sparse.hpp>

#include <cmath>
#include <cstring>

using edo::test::error_of;

namespace {

struct SparseFile {
  edo::test::TempDir dir;
  uint64_t rows = 300, dim;
  std::vector<float> x;
  std::string path = dir.file("s.edo");

  // One sparse tier holding every row (a packed file with a single "rest" tier).
  SparseFile(const std::string& spec, uint64_t d = 20) : dim(d), x(rows * d) {
    edo::Rng rng(11);
    for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
    for (uint64_t j = 0; j < dim; ++j) x[5 * dim + j] = 0.0f;  // an all-zero row
    x[6 * dim + 3] = 0.0f;
    auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(x.data(), rows);
    w->commit();
    auto table = edo::io::open_table(dir.file("t.npy"));
    edo::PackOptions opt;
    opt.tiers = {edo::parse_tier_spec("hot:rows=10:fp32"), edo::parse_tier_spec("all:rest:" + spec)};
    opt.allow_larger_sparse = true;  // narrow rows: some forms here are larger than dense
    edo::pack_to_edo(*table, path, opt);
  }
  std::vector<float> decoded() const {
    const edo::Reader r = edo::Reader::open(path);
    std::vector<float> all(rows * dim);
    r.decode_all(all.data());
    return all;
  }
  const float* row(uint64_t r) const { return x.data() + r * dim; }
};

size_t stored(const float* y, uint64_t dim) {
  return static_cast<size_t>(std::count_if(y, y + dim, [](float v) { return v != 0.0f; }));
}

}  // namespace

TEST_CASE("sparse: specs parse, print canonically and refuse what they cannot mean") {
  const edo::SparseSpec s = edo::parse_sparse_spec("csr:density=0.25,values=int8", 50);
  CHECK(s.form == edo::SparseForm::csr);
  CHECK(s.rule == edo::SparseRule::density);
  CHECK(s.density == 0.25);
  CHECK(s.values == edo::SparseValues::int8);
  CHECK(edo::format_sparse_spec(s) == "csr:density=0.25:values=int8");
  CHECK(edo::format_sparse_spec(edo::parse_sparse_spec("bitmap:k=8", 50)) == "bitmap:k=8:values=fp32");
  CHECK(edo::is_sparse_spec("csr:k=3"));
  CHECK(!edo::is_sparse_spec("int8"));
  for (const char* bad :
       {"csr", "csr:density=0", "csr:density=1.5", "csr:k=0", "csr:k=51", "csr:threshold=-1", "csr:threshold=nan",
        "csr:k=3,density=0.5", "csr:k=3,values=int2", "csr:k=3,group=2", "bitmap:density=x", "csr:3"}) {
    CAPTURE(bad);
    edo::ExitCode code = edo::ExitCode::ok;
    try {
      edo::parse_sparse_spec(bad, 50);
    } catch (const edo::Error& e) {
      code = e.code();
    }
    CHECK(code == edo::ExitCode::usage);
  }
}

TEST_CASE("sparse: fp32 values come back exactly, the others dropped, in both forms") {
  for (const char* spec : {"csr:threshold=0.5", "bitmap:threshold=0.5"}) {
    CAPTURE(spec);
    const SparseFile f(spec);
    const std::vector<float> y = f.decoded();
    const edo::Reader r = edo::Reader::open(f.path);
    for (uint64_t i = 0; i < f.rows; ++i) {
      if (r.tier_of(i) == 0) continue;  // the 10 hottest rows stay fp32 dense
      for (uint64_t j = 0; j < f.dim; ++j) {
        const float v = f.row(i)[j];
        CHECK(y[i * f.dim + j] == (std::fabs(v) >= 0.5f ? v : 0.0f));
      }
    }
  }
}

TEST_CASE("sparse: k per row, int4 rows even, values within half a step") {
  for (const char* spec :
       {"csr:k=5,values=int4", "bitmap:k=6,values=int8", "csr:k=6,values=fp16", "bitmap:k=20,values=bf16"}) {
    CAPTURE(spec);
    const SparseFile f(spec);
    const edo::SparseSpec s = edo::parse_sparse_spec(spec, f.dim);
    const std::vector<float> y = f.decoded();
    const edo::Reader r = edo::Reader::open(f.path);
    for (uint64_t i = 0; i < f.rows; ++i) {
      if (r.tier_of(i) == 0) continue;
      const float* yi = y.data() + i * f.dim;
      const size_t nz = static_cast<size_t>(std::count_if(f.row(i), f.row(i) + f.dim, [](float v) { return v != 0; }));
      const size_t want =
          s.values == edo::SparseValues::int4 ? std::min<size_t>(nz, s.k + 1) & ~size_t{1} : std::min<size_t>(nz, s.k);
      // int8/int4 may decode a kept value to 0 only when the step allows; count kept columns by the original.
      float lo = 0, hi = 0;
      for (uint64_t j = 0; j < f.dim; ++j) lo = std::min(lo, f.row(i)[j]), hi = std::max(hi, f.row(i)[j]);
      const float step = (hi - lo) / static_cast<float>(s.values == edo::SparseValues::int4 ? 15 : 255);
      size_t kept = 0;
      for (uint64_t j = 0; j < f.dim; ++j) {
        const float v = f.row(i)[j], got = yi[j];
        if (got == 0.0f && s.values != edo::SparseValues::int8 && s.values != edo::SparseValues::int4) continue;
        if (s.values == edo::SparseValues::f16)
          CHECK(got == edo::half_bits_to_float(edo::float_to_half_bits(v)));
        else if (s.values == edo::SparseValues::bf16)
          CHECK(got == edo::bf16_bits_to_float(edo::float_to_bf16_bits(v)));
        else if (got != 0.0f)
          CHECK(std::fabs(got - v) <= 0.5f * step * 1.001f + 1e-7f);
        kept += got != 0.0f;
      }
      if (s.values == edo::SparseValues::f16 || s.values == edo::SparseValues::bf16) CHECK(kept == want);
      CHECK(kept <= want);
      CHECK(stored(yi, f.dim) <= want);
    }
  }
}

TEST_CASE("sparse: density keeps about that share, and lookups equal the decoded rows") {
  const SparseFile f("csr:density=0.3,values=fp32", 40);
  const std::vector<float> y = f.decoded();
  const edo::Reader r = edo::Reader::open(f.path);
  size_t nz = 0;
  for (uint64_t i = 0; i < f.rows; ++i)
    if (r.tier_of(i) == 1) nz += stored(y.data() + i * f.dim, f.dim);
  const double density = static_cast<double>(nz) / static_cast<double>((f.rows - 10) * f.dim);
  CHECK(density == doctest::Approx(0.3).epsilon(0.1));
  std::vector<int64_t> ids = {299, 0, 5, 6, 6, 150};
  std::vector<float> out(ids.size() * f.dim);
  r.lookup(ids.data(), ids.size(), out.data());
  for (size_t k = 0; k < ids.size(); ++k)
    CHECK(std::equal(out.begin() + static_cast<long>(k * f.dim), out.begin() + static_cast<long>((k + 1) * f.dim),
                     y.begin() + ids[k] * static_cast<long>(f.dim)));
}

TEST_CASE("sparse: hostile offsets, indices and masks are errors at decode, never reads out of bounds") {
  for (const char* spec : {"csr:k=4,values=int8", "bitmap:k=4,values=fp32"}) {
    CAPTURE(spec);
    const SparseFile f(spec);
    const std::string bytes = edo::test::read_bytes(f.path);
    const edo::io::Container c = edo::io::Container::open(f.path);
    uint64_t offsets = 0, where = 0;
    for (const auto& s : c.sections()) {
      if (s.name == "all/offsets") offsets = s.offset;
      if (s.name == "all/indices" || s.name == "all/masks") where = s.offset;
    }
    REQUIRE(offsets > 0);
    REQUIRE(where > 0);
    const auto expect_corrupt = [&](const std::string& hostile, const char* what) {
      CAPTURE(what);
      edo::test::write_bytes(f.dir.file("h.edo"), hostile);
      const edo::Reader r = edo::Reader::open(f.dir.file("h.edo"), {.verify = edo::io::Verify::structure});
      std::vector<float> all(f.rows * f.dim);
      const std::string msg = error_of([&] { r.decode_all(all.data()); });
      CHECK(msg.find("tier 'all'") != std::string::npos);
      CHECK(msg.find("is corrupt") != std::string::npos);
      // Pooled, the rows staged ahead of the one being folded: the first corrupt row in the stream's order is
      // the error, wherever it falls in its bag (`shift` good rows, the last, before every row in order), on
      // the portable path and the CPU's own.
      const edo::CpuPath own = edo::cpu_path();
      for (const edo::CpuPath path : {edo::CpuPath::portable, own}) {
        edo::set_cpu_path(path);
        for (int64_t shift = 0; shift < 5; ++shift) {
          CAPTURE(shift);
          std::vector<int64_t> ids(static_cast<size_t>(shift), static_cast<int64_t>(f.rows) - 1), starts;
          for (int64_t id = 0; id < static_cast<int64_t>(f.rows); ++id) ids.push_back(id);
          for (size_t at = 0; at < ids.size(); at += 5) starts.push_back(static_cast<int64_t>(at));
          std::vector<float> pooled(starts.size() * f.dim);
          const std::string pooled_msg = error_of([&] {
            r.lookup_bags({starts.data(), starts.size(), ids.data(), ids.size(), nullptr}, edo::PoolMode::sum,
                          pooled.data());
          });
          CHECK(pooled_msg == msg);
        }
      }
      edo::set_cpu_path(own);
    };
    std::string h = bytes;
    const uint32_t huge = 0x7ffffff0u;
    std::memcpy(h.data() + offsets + 4 * 3, &huge, 4);  // row 3's end beyond the values
    expect_corrupt(h, "offset beyond nnz");
    h = bytes;
    h[where] = static_cast<char>(std::string(spec).starts_with("csr") ? 200 : 0xff);  // column 200 / five more bits
    expect_corrupt(h, "index or mask");
    // The declared value count disagreeing with the offsets fails at open.
    h = bytes;
    const uint32_t zero = 1;
    std::memcpy(h.data() + offsets, &zero, 4);
    edo::test::write_bytes(f.dir.file("o.edo"), h);
    CHECK(error_of([&] { edo::Reader::open(f.dir.file("o.edo")); }).find("offsets run from 1") != std::string::npos);
  }
}

TEST_CASE("fallbacks: zero and centroids tiers answer dropped rows, hostile indices are errors") {
  edo::test::TempDir dir;
  const uint64_t rows = 400, dim = 6;
  std::vector<float> x(rows * dim);
  edo::Rng rng(21);
  for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  std::vector<double> freq(rows);
  for (uint64_t r = 0; r < rows; ++r) freq[r] = 1.0 / static_cast<double>(r + 1);  // rows 280.. are the rarest 30%
  const auto pack = [&](const std::string& fallback, const std::string& name) {
    edo::PackOptions opt;
    opt.tiers = {edo::parse_tier_spec("kept:rest:fp32"), edo::parse_tier_spec("dropped:rows=30%:" + fallback)};
    opt.freq = freq;
    const edo::PackReport rep = edo::pack_to_edo(*table, dir.file(name), opt);
    const edo::Reader r = edo::Reader::open(dir.file(name));
    std::vector<float> all(rows * dim);
    r.decode_all(all.data());
    return std::make_pair(rep, all);
  };
  const auto [zrep, zero] = pack("zero", "z.edo");
  CHECK(zrep.tiers[1].bytes == 0);
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t j = 0; j < dim; ++j) CHECK(zero[r * dim + j] == (r < 280 ? x[r * dim + j] : 0.0f));

  const auto [crep, cent] = pack("centroids:8", "c.edo");
  CHECK(crep.tiers[1].codec == "centroids:8");
  CHECK(crep.tiers[1].bytes == 120 * 1 + 8 * dim * 4);
  // Every dropped row decodes to one of 8 vectors, and to the nearest of them.
  std::vector<std::vector<float>> seen;
  for (uint64_t r = 280; r < rows; ++r) {
    std::vector<float> v(cent.begin() + static_cast<long>(r * dim), cent.begin() + static_cast<long>((r + 1) * dim));
    if (std::find(seen.begin(), seen.end(), v) == seen.end()) seen.push_back(v);
  }
  CHECK(seen.size() <= 8);
  CHECK(seen.size() >= 2);
  for (uint64_t r = 280; r < rows; ++r) {
    const auto d2 = [&](const std::vector<float>& c) {
      double s = 0;
      for (uint64_t j = 0; j < dim; ++j) s += (x[r * dim + j] - c[j]) * (x[r * dim + j] - c[j]);
      return s;
    };
    const std::vector<float> mine(cent.begin() + static_cast<long>(r * dim),
                                  cent.begin() + static_cast<long>((r + 1) * dim));
    for (const auto& c : seen) CHECK(d2(mine) <= d2(c) + 1e-6);
  }
  // An index past C is an error at decode.
  const edo::io::Container c = edo::io::Container::open(dir.file("c.edo"));
  uint64_t assign = 0;
  for (const auto& s : c.sections())
    if (s.name == "dropped/assign") assign = s.offset;
  REQUIRE(assign > 0);
  std::string bytes = edo::test::read_bytes(dir.file("c.edo"));
  bytes[assign + 5] = static_cast<char>(8);
  edo::test::write_bytes(dir.file("h.edo"), bytes);
  const edo::Reader h = edo::Reader::open(dir.file("h.edo"), {.verify = edo::io::Verify::structure});
  std::vector<float> all(rows * dim);
  CHECK(error_of([&] { h.decode_all(all.data()); }).find("is assigned centroid 8 of 8") != std::string::npos);
  // More centroids than the tier has rows to fit: a usage error, nothing written.
  edo::PackOptions opt;
  opt.tiers = {edo::parse_tier_spec("kept:rest:fp32"), edo::parse_tier_spec("dropped:rows=5:centroids:8")};
  opt.freq = freq;
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("few.edo"), opt); }).find("at least 8 rows") !=
        std::string::npos);
  for (const char* bad : {"centroids", "centroids:0", "centroids:x", "centroids:k=3", "zero:1"}) {
    CAPTURE(bad);
    opt.tiers[1] = edo::parse_tier_spec(std::string("dropped:rows=50:") + bad);
    CHECK_THROWS_AS(edo::check_tier_specs(opt.tiers, rows, dim), edo::Error);
  }
}

TEST_CASE("fallbacks: nearest answers a dropped row with its nearest kept row, and refuses chains") {
  edo::test::TempDir dir;
  const uint64_t rows = 300, dim = 5;
  std::vector<float> x(rows * dim);
  edo::Rng rng(31);
  for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  std::vector<double> freq(rows);
  for (uint64_t r = 0; r < rows; ++r) freq[r] = 1.0 / static_cast<double>(r + 1);  // rows 200.. dropped
  for (const char* metric : {"cos", "l2"}) {
    CAPTURE(metric);
    edo::PackOptions opt;
    opt.tiers = {edo::parse_tier_spec("kept:rest:fp32"),
                 edo::parse_tier_spec(std::string("dropped:rows=100:nearest:") + metric)};
    opt.freq = freq;
    const edo::PackReport rep = edo::pack_to_edo(*table, dir.file("n.edo"), opt);
    CHECK(rep.tiers[1].codec == std::string("nearest:") + metric);
    CHECK(rep.tiers[1].bytes == 100 * 4);
    const edo::Reader r = edo::Reader::open(dir.file("n.edo"));
    std::vector<float> all(rows * dim);
    r.decode_all(all.data());
    std::vector<int64_t> ids(rows);
    for (uint64_t i = 0; i < rows; ++i) ids[i] = static_cast<int64_t>(rows - 1 - i);
    std::vector<float> looked(rows * dim);
    r.lookup(ids.data(), rows, looked.data());
    const edo::MatrixView kept{x.data(), 200, dim};
    edo::KnnOptions ko;
    ko.metric = edo::parse_metric(metric);
    ko.k = 1;
    for (uint64_t d = 200; d < rows; ++d) {
      const edo::KnnResult nn = edo::knn_reference(edo::MatrixView{x.data() + d * dim, 1, dim}, kept, ko);
      const auto want = static_cast<uint64_t>(nn.ids[0]);
      CHECK(std::equal(all.begin() + static_cast<long>(d * dim), all.begin() + static_cast<long>((d + 1) * dim),
                       x.begin() + static_cast<long>(want * dim)));
      CHECK(std::equal(looked.begin() + static_cast<long>((rows - 1 - d) * dim),
                       looked.begin() + static_cast<long>((rows - d) * dim),
                       x.begin() + static_cast<long>(want * dim)));
    }
  }
  // A target that is itself a dropped row, or outside the table: an error, never a loop.
  const edo::io::Container c = edo::io::Container::open(dir.file("n.edo"));
  uint64_t target = 0;
  for (const auto& s : c.sections())
    if (s.name == "dropped/target") target = s.offset;
  REQUIRE(target > 0);
  for (const uint32_t bad : {250u, 5000u}) {
    std::string bytes = edo::test::read_bytes(dir.file("n.edo"));
    std::memcpy(bytes.data() + target + 4 * 7, &bad, 4);  // dropped row 207
    edo::test::write_bytes(dir.file("h.edo"), bytes);
    const edo::Reader h = edo::Reader::open(dir.file("h.edo"), {.verify = edo::io::Verify::structure});
    const int64_t id[] = {207};
    std::vector<float> out(dim);
    CHECK(error_of([&] { h.lookup(id, 1, out.data()); }).find("row 207 is answered by row " + std::to_string(bad)) !=
          std::string::npos);
    std::vector<float> all(rows * dim);
    CHECK_THROWS_AS(h.decode_all(all.data()), edo::Error);
  }
  // Nothing kept to point at.
  edo::PackOptions opt;
  opt.tiers = {edo::parse_tier_spec("a:rest:nearest")};
  CHECK(error_of([&] { edo::pack_to_edo(*table, dir.file("x.edo"), opt); }).find("nearest needs rows") !=
        std::string::npos);
}
