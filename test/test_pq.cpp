// SPDX-License-Identifier: Apache-2.0
// Product quantization: pq, opq, rq codecs, edo's encoder against FAISS,
// bit packing, state, determinism, k-means and asymmetric distance search.
#include "test_codecs_util.hpp"
#include "test_container_edit.hpp"

#include <edo/edo_file.hpp>
#include <edo/eval.hpp>
#include <edo/float16.hpp>
#include <edo/make_codec.hpp>
#include <edo/pq.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/shard.hpp>

#include <cblas.h>
#include <faiss/IndexFlat.h>
#include <faiss/impl/ProductQuantizer.h>
#include <faiss/impl/ResidualQuantizer.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

using namespace edo;
using edo::test::Matrix;

namespace {

std::string usage_error_of(const std::string& spec, size_t dim) {
  try {
    make_codec(spec, dim);
  } catch (const Error& e) {
    CHECK(e.code() == ExitCode::usage);
    return e.what();
  }
  FAIL("expected a usage error for " << spec);
  return {};
}

std::unique_ptr<Codec> trained(const std::string& spec, const Matrix& m, uint64_t seed = 7) {
  auto c = make_codec(spec, m.dim);
  c->train(m.values.data(), m.rows, seed);
  return c;
}

std::vector<NamedBlob> state_of(const Codec& c) { return c.state(); }

Matrix duplicates(size_t rows, size_t dim, size_t distinct) {
  Matrix m;
  m.rows = rows;
  m.dim = dim;
  m.values.resize(rows * dim);
  for (size_t r = 0; r < rows; ++r)
    for (size_t j = 0; j < dim; ++j) m.values[r * dim + j] = static_cast<float>((r % distinct) * 3 + j % 5) - 4.0f;
  return m;
}

}  // namespace

TEST_CASE("pq: specs, sizes and usage errors before any work") {
  CHECK(canonical_spec("pq:m=10", 50) == "pq:m=10,nbits=8");
  CHECK(canonical_spec("opq:m=5,nbits=6", 50) == "opq:m=5,nbits=6");
  CHECK(canonical_spec("rq:m=4,nbits=8", 50) == "rq:m=4,nbits=8,beam=8,train_beam=2,refine=2");
  // train_beam defaults to min(beam, 2); an explicit one is kept.
  CHECK(canonical_spec("rq:m=4,beam=1", 50) == "rq:m=4,nbits=8,beam=1,train_beam=1,refine=2");
  CHECK(canonical_spec("rq:m=4,beam=4,train_beam=4,refine=0", 50) == "rq:m=4,nbits=8,beam=4,train_beam=4,refine=0");
  CHECK(canonical_spec("pca:20,pq:m=5,train=edo", 50) == "pca:20,pq:m=5,nbits=8,train=edo");
  CHECK(code_size("pq:m=10", 50) == 10);
  CHECK(code_size("pq:m=25,nbits=4", 50) == 13);  // 100 bits
  CHECK(code_size("pq:m=10,nbits=5", 50) == 7);   // 50 bits
  CHECK(code_size("rq:m=10,nbits=6", 128) == 8);
  CHECK(code_size("pca:32,pq:m=8", 128) == 8);
  CHECK(make_codec("pq:m=7", 50)->needs_training());

  CHECK(usage_error_of("pq", 50).find("needs m=M") != std::string::npos);
  CHECK(usage_error_of("pq:m=51", 50).find("more sub-spaces than the 50 input dimensions") != std::string::npos);
  CHECK(usage_error_of("pq:m=10,nbits=3", 50).find("nbits=3 is out of range") != std::string::npos);
  CHECK(usage_error_of("pq:m=10,nbits=9", 50).find("nbits=9 is out of range") != std::string::npos);
  CHECK(usage_error_of("opq:m=60", 50).find("m=60") != std::string::npos);
  CHECK(usage_error_of("rq:nbits=8", 50).find("needs m=M") != std::string::npos);
  CHECK(usage_error_of("rq:m=4,nbits=12", 50).find("out of range") != std::string::npos);
  CHECK(usage_error_of("rq:m=4,train_beam=0", 50).find("train_beam") != std::string::npos);
  CHECK(usage_error_of("rq:m=4,beam=0", 50).find("beam '0'") != std::string::npos);
  CHECK(usage_error_of("pq:m=4,train=magic", 50).find("train=magic") != std::string::npos);
  CHECK(usage_error_of("pq:m=4,beam=2", 50).find("unknown parameter 'beam'") != std::string::npos);
  CHECK(usage_error_of("pca:10,pq:m=11", 50).find("more sub-spaces than the 10") != std::string::npos);
}

TEST_CASE("pq: fewer training rows than centroids is a runtime error naming the sample") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 200);
  for (const std::string spec : {"pq:m=10", "opq:m=5", "rq:m=2,nbits=8"}) {
    CAPTURE(spec);
    auto c = make_codec(spec, 50);
    try {
      c->train(glove.values.data(), glove.rows, 1);
      FAIL("expected an error");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::runtime);
      CHECK(std::string(e.what()).find("training sample has 200 rows, fewer than the 256 centroids") !=
            std::string::npos);
    }
  }
  // nbits=7 needs 128 rows: 200 is enough.
  CHECK_NOTHROW(trained("pq:m=10,nbits=7", glove));
}

TEST_CASE("pq: bit packing is LSB-first across bytes, as FAISS packs it") {
  uint8_t row[3] = {0, 0, 0};
  math::pq_put_code(row, 0, 4, 0x3);
  math::pq_put_code(row, 1, 4, 0xA);
  CHECK(row[0] == 0xA3);
  uint8_t row5[2] = {0, 0};
  math::pq_put_code(row5, 0, 5, 1);
  math::pq_put_code(row5, 1, 5, 2);
  math::pq_put_code(row5, 2, 5, 3);
  CHECK(row5[0] == 0x41);  // 1 | 2 << 5 | 3 << 10 = 0x0c41
  CHECK(row5[1] == 0x0c);
  Rng rng(5);
  for (uint32_t nbits = 4; nbits <= 8; ++nbits) {
    const math::PqGeometry g = math::pq_geometry(50, 13, nbits);
    std::vector<uint32_t> values(g.m);
    std::vector<uint8_t> code(g.code_size, 0);
    for (uint32_t j = 0; j < g.m; ++j) {
      values[j] = static_cast<uint32_t>(rng.below(g.ksub));
      math::pq_put_code(code.data(), j, nbits, values[j]);
    }
    for (uint32_t j = 0; j < g.m; ++j) CHECK(math::pq_get_code(code.data(), j, nbits) == values[j]);
    // FAISS's encoder writes the same bytes.
    std::vector<uint8_t> theirs(g.code_size, 0);
    {
      faiss::PQEncoderGeneric enc(theirs.data(), static_cast<int>(nbits));
      for (uint32_t j = 0; j < g.m; ++j) enc.encode(values[j]);
    }  // the destructor flushes the last partial byte
    CHECK(code == theirs);
  }
  // Balanced sub-space widths: 50 over 12 = two of 5, ten of 4.
  const math::PqGeometry g = math::pq_geometry(50, 12, 8);
  CHECK(g.dsub == 5);
  CHECK(math::pq_sub_width(g, 0) == 5);
  CHECK(math::pq_sub_width(g, 2) == 4);
  CHECK(math::pq_sub_begin(g, 2) == 10);
  CHECK(math::pq_sub_begin(g, 11) + math::pq_sub_width(g, 11) == 50);
  for (uint32_t col = 0; col < 50; ++col) {
    const uint32_t j = math::pq_sub_of_column(g, col);
    CHECK(col >= math::pq_sub_begin(g, j));
    CHECK(col < math::pq_sub_begin(g, j) + math::pq_sub_width(g, j));
  }
}

TEST_CASE("pq: edo's encoder equals FAISS compute_codes on the same codebooks") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 4000);
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 3000);
  struct Case {
    const Matrix* data;
    uint32_t m, nbits;
  };
  for (const Case& c :
       {Case{&glove, 10, 8}, Case{&glove, 25, 4}, Case{&glove, 12, 6}, Case{&bigann, 16, 8}, Case{&bigann, 8, 5}}) {
    const math::PqGeometry g = math::pq_geometry(static_cast<uint32_t>(c.data->dim), c.m, c.nbits);
    CAPTURE(c.data->dim);
    CAPTURE(c.m);
    CAPTURE(c.nbits);
    const std::vector<float> padded = pq_pad_rows(g, c.data->values.data(), c.data->rows);
    faiss::ProductQuantizer fpq(static_cast<size_t>(g.m) * g.dsub, g.m, g.nbits);
    fpq.cp.niter = 8;
    fpq.cp.min_points_per_centroid = 1;
    fpq.verbose = false;
    fpq.train(c.data->rows, padded.data());
    std::vector<uint8_t> theirs(c.data->rows * g.code_size);
    fpq.compute_codes(padded.data(), theirs.data(), c.data->rows);

    auto codec = make_codec(fmt::format("pq:m={},nbits={}", c.m, c.nbits), c.data->dim);
    codec->load_state({{"pq.codebooks", {g.m, g.ksub, g.dsub}, fpq.centroids}});
    const std::vector<uint8_t> ours = test::encode_all(*codec, *c.data);
    // FAISS sums distances in float: a difference is allowed only where the
    // two centroids are equally near to float precision.
    size_t differ = 0;
    for (size_t r = 0; r < c.data->rows; ++r) {
      for (uint32_t j = 0; j < g.m; ++j) {
        const uint32_t a = math::pq_get_code(ours.data() + r * g.code_size, j, g.nbits);
        const uint32_t b = math::pq_get_code(theirs.data() + r * g.code_size, j, g.nbits);
        if (a == b) continue;
        ++differ;
        const float* xs = c.data->row(r) + math::pq_sub_begin(g, j);
        const uint32_t w = math::pq_sub_width(g, j);
        const double da = math::pq_sub_distance(xs, fpq.get_centroids(j, a), w);
        const double db = math::pq_sub_distance(xs, fpq.get_centroids(j, b), w);
        CHECK(da <= db);
        CHECK(db - da <= 1e-5 * (db + 1e-6));
      }
    }
    CHECK(differ * 1000 <= c.data->rows * g.m);  // near-ties are rare
    // And FAISS decodes our codes to the same vectors we do.
    std::vector<float> fdec(c.data->rows * g.m * g.dsub);
    fpq.decode(ours.data(), fdec.data(), c.data->rows);
    const std::vector<float> odec = test::decode_all(*codec, ours, c.data->rows);
    CHECK(test::same_bits(pq_pad_rows(g, odec.data(), c.data->rows), fdec));
  }
}

TEST_CASE("pq: round trips on GloVe and BIGANN within error bounds, state restores without training") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 2000);
  struct Case {
    const Matrix* data;
    std::string spec;
    double max_rel;  // relative Frobenius error bound
  };
  // Bounds sit above the measured errors (GloVe pq:m=25 ~0.22, m=10 ~0.42;
  // BIGANN m=16 ~0.19) with a margin for seeds, below what would signal a bug.
  for (const Case& c :
       {Case{&glove, "pq:m=25", 0.30}, Case{&glove, "pq:m=10", 0.50}, Case{&glove, "pq:m=12,nbits=6", 0.55},
        Case{&glove, "opq:m=10,nbits=6", 0.55}, Case{&glove, "rq:m=4,nbits=6,beam=2,refine=1", 0.70},
        Case{&glove, "pca:20,pq:m=10,nbits=6", 0.70}, Case{&glove, "pq:m=10,nbits=6,train=edo", 0.55},
        Case{&bigann, "pq:m=16", 0.30}, Case{&bigann, "opq:m=16,nbits=5", 0.45}}) {
    CAPTURE(c.spec);
    auto codec = trained(c.spec, *c.data);
    const auto codes = test::encode_all(*codec, *c.data);
    const auto dec = test::decode_all(*codec, codes, c.data->rows);
    const double rel = test::relative_frobenius_error(c.data->values, dec);
    MESSAGE(c.spec << " rel error " << rel);
    CHECK(rel < c.max_rel);
    CHECK(rel > 0.01);

    auto restored = make_codec(c.spec, c.data->dim);
    restored->load_state(codec->state());
    CHECK(restored->spec() == codec->spec());
    CHECK(test::same_bits(test::decode_all(*restored, codes, c.data->rows), dec));
    CHECK(test::encode_all(*restored, *c.data) == codes);
  }
}

TEST_CASE("pq: hostile or mismatched state is refused with the blob named") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 600);
  auto pq = trained("opq:m=5", glove);
  const std::vector<NamedBlob> good = state_of(*pq);
  auto fresh = [] { return make_codec("opq:m=5", 50); };
  {
    auto s = good;
    s[0].shape = {5, 256, 9};
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("'pq.codebooks' has shape (5, 256, 9)") !=
          std::string::npos);
  }
  {
    auto s = good;
    s[1].values[17] = std::nanf("");
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("'opq.rotation' value 17 is not finite") !=
          std::string::npos);
  }
  {
    auto s = good;
    s[0].values.pop_back();
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("holds") != std::string::npos);
  }
  {
    auto s = good;
    s.pop_back();
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("lacks 'opq.rotation'") != std::string::npos);
  }
  {
    auto s = good;
    s.push_back(s[0]);
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("appears twice") != std::string::npos);
  }
  {
    auto s = good;
    s.push_back({"pq.extra", {1}, {0.0f}});
    CHECK(test::error_of([&] { fresh()->load_state(s); }).find("unexpected state blob 'pq.extra'") !=
          std::string::npos);
  }
  CHECK(test::error_of([] { make_codec("rq:m=2", 50)->load_state({}); }).find("lacks 'rq.codebooks'") !=
        std::string::npos);
  std::vector<uint8_t> codes(10);
  float out[50];
  CHECK(test::error_of([&] { fresh()->decode(codes.data(), 1, out); }).find("not trained") != std::string::npos);
}

TEST_CASE("pq: same seed gives the same bytes, whatever the thread count") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 1500);
  const int saved = omp_get_max_threads();
  for (const std::string spec : {"pq:m=10,nbits=6", "opq:m=5,nbits=6", "rq:m=3,nbits=6,beam=2,refine=1",
                                 "rq:m=3,nbits=5,refine=1", "pq:m=10,nbits=6,train=edo"}) {
    CAPTURE(spec);
    omp_set_num_threads(1);
    auto one = trained(spec, glove, 42);
    const auto codes_one = test::encode_all(*one, glove);
    omp_set_num_threads(2);
    auto two = trained(spec, glove, 42);
    const auto codes_two = test::encode_all(*two, glove);
    omp_set_num_threads(saved);
    const auto s1 = one->state(), s2 = two->state();
    REQUIRE(s1.size() == s2.size());
    for (size_t i = 0; i < s1.size(); ++i) CHECK(test::same_bits(s1[i].values, s2[i].values));
    CHECK(codes_one == codes_two);
    // Another seed trains other codebooks.
    auto other = trained(spec, glove, 43);
    CHECK_FALSE(test::same_bits(other->state()[0].values, s1[0].values));
  }
}

TEST_CASE("pq: duplicate-heavy data trains finite codebooks and reproduces its rows") {
  const Matrix dup = duplicates(600, 20, 3);
  for (const std::string spec : {"pq:m=5", "pq:m=5,train=edo", "opq:m=4", "rq:m=2,nbits=8,beam=2,refine=1"}) {
    CAPTURE(spec);
    auto codec = trained(spec, dup);
    for (const NamedBlob& b : codec->state())
      for (float v : b.values) REQUIRE(std::isfinite(v));
    const auto dec = test::decode_all(*codec, test::encode_all(*codec, dup), dup.rows);
    for (float v : dec) REQUIRE(std::isfinite(v));
    CHECK(test::relative_frobenius_error(dup.values, dec) < 1e-3);
  }
  // All rows identical: every centroid coincides, nothing divides by zero.
  const Matrix same = duplicates(300, 8, 1);
  auto codec = trained("pq:m=4,train=edo", same);
  CHECK(test::relative_frobenius_error(same.values,
                                       test::decode_all(*codec, test::encode_all(*codec, same), same.rows)) == 0.0);
}

TEST_CASE("pq: k-means is deterministic, keeps no empty cluster, and lowers the error") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 2000);
  const Matrix sub = test::first_columns(glove, 5);
  KmeansOptions opt;
  opt.seed = 3;
  opt.iterations = 10;
  const std::vector<float> c = kmeans(sub.values.data(), sub.rows, 5, 64, opt);
  CHECK(test::same_bits(c, kmeans(sub.values.data(), sub.rows, 5, 64, opt)));
  std::vector<uint32_t> assign(sub.rows);
  nearest_centroids(sub.values.data(), sub.rows, 5, c.data(), 64, assign.data());
  std::vector<size_t> counts(64);
  double err = 0, total = 0;
  for (size_t r = 0; r < sub.rows; ++r) {
    ++counts[assign[r]];
    err += math::pq_sub_distance(sub.row(r), c.data() + assign[r] * 5, 5);
    for (size_t j = 0; j < 5; ++j) total += static_cast<double>(sub.row(r)[j]) * sub.row(r)[j];
  }
  CHECK(std::count(counts.begin(), counts.end(), size_t{0}) == 0);
  CHECK(err < 0.35 * total);
  // nearest_centroids agrees with a brute-force scan (ties to the lower id).
  for (size_t r = 0; r < sub.rows; r += 7) CHECK(assign[r] == math::pq_nearest(sub.row(r), c.data(), 64, 5, 5));
  CHECK(test::error_of([&] { kmeans(sub.values.data(), 10, 5, 64, opt); }).find("10 rows cannot train 64") !=
        std::string::npos);
}

TEST_CASE("pq: the CPU's nearest codeword is the exact one, narrow and wide, ties to the lower id") {
  // Widths up to 16 take the direct float path with exact rescoring, wider
  // ones the BLAS narrowing: both must give math::pq_nearest's answer.
  // On an AVX-512 CPU both the 16-lane and the 8-lane kernels run.
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  for (const bool avx512 : {true, false})
    for (const size_t d : {1, 2, 4, 7, 8, 16, 17, 50}) {
      for (const size_t k : {13, 40, 64, 256}) {
        CAPTURE(avx512);
        CAPTURE(d);
        CAPTURE(k);
        set_pq_avx512(avx512);
        const Matrix sub = test::first_columns(glove, d);
        std::vector<float> c(k * d);
        for (size_t i = 0; i < k; ++i) std::copy_n(sub.row(i * 11 % sub.rows), d, c.begin() + i * d);
        std::copy_n(c.begin() + 2 * d, d, c.begin() + 5 * d);  // codewords 2 and 5 tie: 2 must win
        std::vector<uint32_t> assign(sub.rows);
        nearest_centroids(sub.values.data(), sub.rows, d, c.data(), k, assign.data());
        size_t wrong = 0;
        for (size_t r = 0; r < sub.rows; ++r)
          wrong += assign[r] != math::pq_nearest(sub.row(r), c.data(), static_cast<uint32_t>(k),
                                                 static_cast<uint32_t>(d), static_cast<uint32_t>(d));
        CHECK(wrong == 0);
        CHECK(std::count(assign.begin(), assign.end(), 5u) == 0);
      }
    }
  set_pq_avx512(true);
}

TEST_CASE("pq: a row whose every float distance overflows gets a real codeword, never a padding lane") {
  // Found by fuzz/roundtrip_shards: with C not a multiple of the SIMD width,
  // the lanes past the last codeword (+Inf) passed an +Inf bound and were
  // rescored from past the codewords, answering index C.
  for (const bool avx512 : {true, false})
    for (const size_t k : {7, 13, 19, 256}) {
      CAPTURE(avx512);
      CAPTURE(k);
      set_pq_avx512(avx512);
      const size_t d = 3;
      std::vector<float> c(k * d);
      for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<float>(i % 5) - 2.0f;
      const std::vector<float> x = {0x1p70f, -0x1p70f, 0x1p69f, 1.0f, 2.0f, 3.0f};
      std::vector<uint32_t> assign(2, 999);
      nearest_centroids(x.data(), 2, d, c.data(), k, assign.data());
      CHECK(assign[0] < k);
      CHECK(assign[0] == math::pq_nearest(x.data(), c.data(), static_cast<uint32_t>(k), 3, 3));
      CHECK(assign[1] == math::pq_nearest(x.data() + 3, c.data(), static_cast<uint32_t>(k), 3, 3));
    }
  set_pq_avx512(true);
}

TEST_CASE("pq: flat_l2_knn is IndexFlatL2's search, labels and distances bit for bit") {
  // rq's greedy levels search through it in FAISS's place: any other float
  // would change the codebooks. GloVe's columns up to 50 wide, seeded
  // normal values wider; rows that are centroids (distance clamped to 0),
  // tied centroids, fewer rows than FAISS's BLAS threshold, more than one
  // of its 4096-row blocks, and heaps of k > 1. FAISS runs with OpenBLAS at
  // one thread, as flat_l2_knn's products always do: some OpenBLAS kernels
  // (Haswell's) round a product by their thread count. flat_l2_knn runs at
  // one and at two OpenMP threads, which must not change a bit.
  const int saved_blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(1);
  const int saved_omp_threads = omp_get_max_threads();
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 9000);
  std::mt19937 gen(5);
  std::normal_distribution<float> normal;
  for (const size_t d : {1, 3, 19, 50, 116, 384}) {
    Matrix x;
    if (d <= glove.dim) {
      x = test::first_columns(glove, d);
    } else {
      x.rows = 9000;
      x.dim = d;
      x.values.resize(x.rows * d);
      for (float& v : x.values) v = normal(gen);
    }
    for (const size_t ny : {7, 256}) {
      std::vector<float> y(ny * d);
      for (size_t i = 0; i < ny; ++i) std::copy_n(x.row((i * 13 + 1) % x.rows), d, y.begin() + i * d);
      std::copy_n(y.begin() + 2 * d, d, y.begin() + 5 * d);  // centroids 2 and 5 tie
      faiss::IndexFlatL2 flat(static_cast<faiss::Index::idx_t>(d));
      flat.add(static_cast<faiss::Index::idx_t>(ny), y.data());
      for (const size_t n : {5, 19, 20, 257, 1100, 9000})  // 9000: three of FAISS's blocks, two threads
        for (const size_t k : {1, 2, 5}) {
          CAPTURE(d);
          CAPTURE(ny);
          CAPTURE(n);
          CAPTURE(k);
          std::vector<float> want_d(n * k), got_d(n * k);
          std::vector<faiss::Index::idx_t> want_l(n * k), got_l(n * k);
          flat.search(static_cast<faiss::Index::idx_t>(n), x.values.data(), static_cast<faiss::Index::idx_t>(k),
                      want_d.data(), want_l.data());
          for (const int threads : {1, 2}) {
            CAPTURE(threads);
            omp_set_num_threads(threads);
            flat_l2_knn(x.values.data(), n, y.data(), ny, d, k, got_d.data(), got_l.data());
            CHECK(std::memcmp(want_d.data(), got_d.data(), want_d.size() * sizeof(float)) == 0);
            CHECK(want_l == got_l);
          }
          omp_set_num_threads(saved_omp_threads);
        }
    }
  }
  openblas_set_num_threads(saved_blas_threads);
}

TEST_CASE("opq: the encoder's rotation is the scalar fma chain, output by output, at every width") {
  // GloVe's 50 rotated outputs take the 32-wide, the 8-wide and the scalar
  // steps; each must equal y[i] = fma chain over j of A[i][j] x[j].
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 1500);
  auto codec = make_codec("opq:m=10,nbits=5", glove.dim);
  codec->train(glove.values.data(), glove.rows, 5);
  const std::vector<NamedBlob> st = codec->state();
  const auto blob = [&](const std::string& name) {
    const auto it = std::find_if(st.begin(), st.end(), [&](const NamedBlob& b) { return b.name == name; });
    REQUIRE(it != st.end());
    return it->values;
  };
  const std::vector<float> a = blob("opq.rotation"), books = blob("pq.codebooks");
  const size_t d2 = a.size() / glove.dim, dsub = 5, ksub = 32;
  REQUIRE(d2 == 50);
  const auto codes = test::encode_all(*codec, glove);
  size_t wrong = 0;
  std::vector<float> y(d2);
  for (size_t r = 0; r < glove.rows; ++r) {
    for (size_t i = 0; i < d2; ++i) {
      float s = 0;
      for (size_t j = 0; j < glove.dim; ++j) s = std::fma(a[i * glove.dim + j], glove.row(r)[j], s);
      y[i] = s;
    }
    for (uint32_t j = 0; j < 10; ++j) {
      const uint32_t want = math::pq_nearest(y.data() + j * dsub, books.data() + j * ksub * dsub, ksub, dsub, dsub);
      wrong += math::pq_get_code(codes.data() + r * codec->code_size(), j, 5) != want;
    }
  }
  CHECK(wrong == 0);
}

TEST_CASE("opq: both SVD paths give an orthonormal rotation that beats plain pq, the same bits every time") {
  // 50 wide trains through sgesvd; GloVe's columns repeated to 550 wide
  // (rank 50: a cross-product with a large null space) through sgesdd.
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 800);
  for (const size_t repeats : {1, 11}) {
    CAPTURE(repeats);
    Matrix wide;
    wide.rows = glove.rows;
    wide.dim = glove.dim * repeats;
    wide.values.resize(wide.rows * wide.dim);
    for (size_t r = 0; r < wide.rows; ++r)
      for (size_t j = 0; j < wide.dim; ++j) wide.values[r * wide.dim + j] = glove.row(r)[j % glove.dim];
    const std::string m = std::to_string(wide.dim / 5);
    auto opq = trained("opq:m=" + m + ",nbits=4", wide);
    const std::vector<NamedBlob> st = opq->state();
    const auto it = std::find_if(st.begin(), st.end(), [](const NamedBlob& b) { return b.name == "opq.rotation"; });
    REQUIRE(it != st.end());
    const std::vector<float>& a = it->values;
    REQUIRE(a.size() == wide.dim * wide.dim);
    double worst = 0;
    for (size_t i = 0; i < wide.dim; ++i)
      for (size_t k = 0; k < wide.dim; ++k) {
        double dot = 0;
        for (size_t j = 0; j < wide.dim; ++j)
          dot += static_cast<double>(a[i * wide.dim + j]) * static_cast<double>(a[k * wide.dim + j]);
        worst = std::max(worst, std::fabs(dot - (i == k ? 1.0 : 0.0)));
      }
    CHECK(worst < 1e-4);
    const auto err = [&](const Codec& c) {
      return test::relative_frobenius_error(wide.values, test::decode_all(c, test::encode_all(c, wide), wide.rows));
    };
    auto plain = trained("pq:m=" + m + ",nbits=4", wide);
    CHECK(err(*opq) < err(*plain));
    auto again = trained("opq:m=" + m + ",nbits=4", wide);
    CHECK(test::same_bits(again->state().front().values, st.front().values));
    CHECK(test::same_bits(again->state().back().values, st.back().values));
  }
}

TEST_CASE("rq: codebook refits lower the training error at equal bytes") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  auto plain = trained("rq:m=4,nbits=6,beam=2,refine=0", glove);
  auto refined = trained("rq:m=4,nbits=6,beam=2,refine=2", glove);
  const double e0 = test::relative_frobenius_error(
      glove.values, test::decode_all(*plain, test::encode_all(*plain, glove), glove.rows));
  const double e2 = test::relative_frobenius_error(
      glove.values, test::decode_all(*refined, test::encode_all(*refined, glove), glove.rows));
  MESSAGE("rq refine 0: " << e0 << ", refine 2: " << e2);
  CHECK(e2 < e0 * 0.995);
}

TEST_CASE("pq: ADC scores equal brute-force distances to the decoded rows") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  Matrix queries;
  queries.rows = 40;
  queries.dim = glove.dim;
  queries.values.assign(glove.values.begin(), glove.values.begin() + 40 * 50);
  for (const std::string spec :
       {"pq:m=10,nbits=6", "pq:m=12,nbits=5", "opq:m=10,nbits=5", "rq:m=3,nbits=6,beam=2,refine=1"}) {
    auto codec = trained(spec, glove);
    const auto codes = test::encode_all(*codec, glove);
    const auto dec = test::decode_all(*codec, codes, glove.rows);
    for (Metric metric : {Metric::l2, Metric::ip, Metric::cos}) {
      CAPTURE(spec);
      CAPTURE(metric_name(metric));
      KnnOptions ko;
      ko.metric = metric;
      ko.k = 10;
      for (int64_t q = 0; q < 40; ++q) ko.exclude.push_back(q);
      AdcSearch adc(*codec, {queries.values.data(), queries.rows, queries.dim}, ko);
      // Blocks of uneven size: results must not depend on them.
      adc.add(codes.data(), dec.data(), 1000);
      adc.add(codes.data() + 1000 * codec->code_size(), dec.data() + 1000 * 50, 2000);
      const KnnResult a = adc.finish();
      const KnnResult b = knn_reference({queries.values.data(), queries.rows, 50}, {dec.data(), glove.rows, 50}, ko);
      size_t same_ids = 0;
      for (size_t i = 0; i < a.ids.size(); ++i) {
        same_ids += a.ids[i] == b.ids[i];
        CHECK(a.scores[i] == doctest::Approx(b.scores[i]).epsilon(1e-4).scale(1.0));
        CHECK(a.ids[i] != static_cast<int64_t>(i / 10));  // the query's own row is excluded
      }
      CHECK(same_ids >= a.ids.size() * 97 / 100);  // only near-equal scores may swap
    }
  }
}

TEST_CASE("pq, opq, rq: codebooks=fp16 and int8 files store fewer codebook bytes and decode as the codec did") {
  test::TempDir dir;
  auto input = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  // (spec, codebook values, codeword width): opq's rotation stays fp32.
  const std::vector<std::tuple<std::string, uint64_t, uint64_t>> cases = {
      {"pq:m=10,nbits=6", 10 * 64 * 5, 5},
      {"opq:m=10,nbits=6", 10 * 64 * 5, 5},
      {"rq:m=3,nbits=6,beam=2,refine=1", 3 * 64 * 50, 50}};
  for (const auto& [base, values, width] : cases) {
    QuantizeOptions qo;
    qo.seed = 3;
    qo.train_rows = 2000;
    qo.spec = base;
    const QuantizeReport wide = quantize_to_edo(*input, dir.file("f32.edo"), qo);
    for (const auto& [books, storage] :
         {std::pair{std::string("fp16"), StateStorage::f16}, std::pair{std::string("int8"), StateStorage::i8}}) {
      CAPTURE(base);
      CAPTURE(books);
      qo.spec = base + ",codebooks=" + books;
      qo.trained = nullptr;
      const QuantizeReport small = quantize_to_edo(*input, dir.file("small.edo"), qo);
      CHECK(small.spec == wide.spec + ",codebooks=" + books);
      // fp16: two bytes a value; int8: a byte a value and one a codeword.
      const uint64_t stored = storage == StateStorage::f16 ? values * 2 : values / width * (width + 1);
      CHECK(wide.state_bytes - small.state_bytes == values * 4 - stored);
      // The rounding costs (almost) nothing next to the quantization error.
      CHECK(small.rel_frobenius < wide.rel_frobenius * (storage == StateStorage::f16 ? 1.01 : 1.02));
      // The file holds the codebooks the codes were chosen against: its rows
      // give the write's error to the last bit, and its state is exactly
      // what the storage holds.
      auto file = EdoTable::open(dir.file("small.edo"));
      std::vector<float> x(input->rows() * input->dim()), y(x.size());
      input->read_f32(0, input->rows(), x.data());
      std::memcpy(y.data(), file->rows_f32(0, input->rows()), y.size() * sizeof(float));
      RowErrorStats stats(input->dim());
      stats.add(x.data(), y.data(), input->rows());
      CHECK(stats.finish().mse == small.mse);
      REQUIRE(file->codes_codec());
      CHECK(file->codes_codec()->spec() == small.spec);
      for (const NamedBlob& b : file->codes_codec()->state()) {
        if (b.name == "opq.rotation") continue;
        CHECK(b.storage == storage);
        std::vector<float> again = b.values;
        if (storage == StateStorage::i8) {
          round_to_int8_exp2(again, width);
        } else {
          for (float& v : again) v = half_bits_to_float(float_to_half_bits(v));
        }
        CHECK(again == b.values);
      }
      // A trained state keeps the storage: encoding with it gives the same error.
      WriteOptions wo;
      wo.seed = 3;
      wo.train_rows = 2000;
      wo.tool = "edo-quantize";
      write_trained_state(*input, dir.file("state.edo"), qo.spec, wo);
      const TrainedState ts = read_trained_state(dir.file("state.edo"));
      REQUIRE(ts.tiers.size() == 1);
      for (const NamedBlob& b : ts.tiers[0].blobs)
        CHECK(b.storage == (b.name == "opq.rotation" ? StateStorage::f32 : storage));
      qo.trained = &ts.tiers;
      CHECK(quantize_to_edo(*input, dir.file("again.edo"), qo).mse == small.mse);
    }
    qo.trained = nullptr;
  }
}

TEST_CASE("state: int8_exp2 rows hold their rounding exactly, from zeros and subnormals to float's largest") {
  const float big = std::numeric_limits<float>::max(), tiny = std::numeric_limits<float>::denorm_min();
  std::vector<float> v = {0.0f, -0.0f,    0.0f,  0.0f,    // a row of zeros
                          1.0f, -127.0f,  63.5f, 0.25f,   // already on the grid of 2^0
                          big,  -big,     1.0f,  0.0f,    // float's largest: exponent 121
                          tiny, 3 * tiny, -tiny, 1e-39f,  // subnormals: below 2^-129 they round to zero
                          0.1f, -0.3f,    0.77f, 1e-3f};  // everyday values
  std::vector<float> once = v;
  round_to_int8_exp2(once, 4);
  std::vector<float> twice = once;
  round_to_int8_exp2(twice, 4);
  CHECK(std::memcmp(once.data(), twice.data(), once.size() * sizeof(float)) == 0);
  CHECK(once[5] == -127.0f);
  CHECK(once[6] == 64.0f);                    // 63.5 ties to even
  CHECK(once[8] == std::ldexp(127.0f, 121));  // saturated, finite
  CHECK(once[9] == -std::ldexp(127.0f, 121));
  CHECK(once[12] == 0.0f);
  CHECK(std::fabs(once[16] - 0.1f) <= 0.77f / 254.0f * 2.0f);
  // The section holds an exponent a row and the codes, and reads back to the same values.
  NamedBlob blob{"t", {5, 4}, once, StateStorage::i8};
  const std::vector<uint8_t> bytes = state_section_bytes(blob);
  REQUIRE(bytes.size() == 5 * 5);
  CHECK(static_cast<int8_t>(bytes[10]) == 121);
  NamedBlob back{"t", {5, 4}, {}, StateStorage::f32};
  REQUIRE(read_state_section(back, StateStorage::i8, bytes.data(), bytes.size(), 20));
  CHECK(std::memcmp(back.values.data(), once.data(), once.size() * sizeof(float)) == 0);
  // Values not so rounded cannot be written; hostile rows cannot be read.
  NamedBlob raw{"t", {5, 4}, v, StateStorage::i8};
  CHECK(test::error_of([&] { state_section_bytes(raw); }).find("not one int8_exp2 storage holds") != std::string::npos);
  std::vector<uint8_t> bad = bytes;
  bad[10] = 122;  // 127 x 2^122 is beyond float
  CHECK_FALSE(read_state_section(back, StateStorage::i8, bad.data(), bad.size(), 20));
  bad = bytes;
  bad[1] = 0x80;  // a code of -128
  CHECK_FALSE(read_state_section(back, StateStorage::i8, bad.data(), bad.size(), 20));
  CHECK_FALSE(read_state_section(back, StateStorage::i8, bytes.data(), bytes.size() - 1, 20));
  CHECK(state_section_size(StateStorage::i8, 20, 3) == std::nullopt);
}

TEST_CASE("pq: a state section's dtype is float32, float16 or int8_exp2 and must fit its shape") {
  test::TempDir dir;
  auto input = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  QuantizeOptions qo;
  qo.spec = "pq:m=5,nbits=4,codebooks=fp16";
  qo.train_rows = 1000;
  quantize_to_edo(*input, dir.file("ok.edo"), qo);
  const std::string valid = test::read_bytes(dir.file("ok.edo"));
  const auto open_error = [&](const std::function<void(nlohmann::json&)>& edit) {
    test::write_bytes(dir.file("bad.edo"), test::with_manifest(valid, edit));
    return test::error_of([&] { Reader::open(dir.file("bad.edo")); });
  };
  CHECK_NOTHROW(Reader::open(dir.file("ok.edo")));
  CHECK(open_error([](nlohmann::json& m) {
          m["tiers"][0]["state_dtypes"]["pq.codebooks"] = "float64";
        }).find("state 'pq.codebooks' has an unknown dtype") != std::string::npos);
  CHECK(open_error([](nlohmann::json& m) {
          m["tiers"][0]["state_dtypes"] = 5;
        }).find("state_dtypes is not an object") != std::string::npos);
  // Without its dtype the section is half the float32 bytes its shape needs.
  CHECK(open_error([](nlohmann::json& m) {
          m["tiers"][0].erase("state_dtypes");
        }).find("holds 1600 bytes, its shape needs 3200 as float32") != std::string::npos);
  // As int8_exp2 its 80 codewords of 10 values would take 80 x 11 bytes.
  CHECK(open_error([](nlohmann::json& m) {
          m["tiers"][0]["state_dtypes"]["pq.codebooks"] = "int8_exp2";
        }).find("holds 1600 bytes, its shape needs 880 as int8_exp2") != std::string::npos);
  // A codeword beyond fp16's range cannot be stored so, and says what to do.
  Matrix huge = test::load_shared("glove.6B.50d.10k.npy", 300);
  for (float& v : huge.values) v *= 1e5f;
  CHECK(test::error_of([&] { trained("pq:m=5,nbits=4,codebooks=fp16", huge); }).find("use codebooks=fp32") !=
        std::string::npos);
  CHECK(usage_error_of("pq:m=5,codebooks=fp8", 50).find("codebooks=fp8 is not 'fp32', 'fp16' or 'int8'") !=
        std::string::npos);
}

TEST_CASE("pq: evaluate() reports adc. recalls for a .edo of PQ codes") {
  test::TempDir dir;
  auto input = io::open_table(test::shared_data("glove.6B.50d.10k.npy"));
  QuantizeOptions qo;
  qo.spec = "pq:m=10,nbits=6";
  qo.seed = 1;
  qo.train_rows = 3000;
  const std::string out = dir.file("g.edo");
  quantize_to_edo(*input, out, qo);
  auto edo = EdoTable::open(out);
  EvalOptions eo;
  eo.metric = Metric::cos;
  eo.queries = 100;
  eo.ks = {10};
  const EvalResult r = evaluate(*input, *edo, eo);
  REQUIRE(r.has("adc.recall@10"));
  CHECK(r.at("adc.recall@10") == doctest::Approx(r.at("recall@10")).epsilon(0.02));
  CHECK(r.at("recall@10") > 0.3);
  // A scalar codec has no ADC: no adc. names.
  qo.spec = "int8";
  quantize_to_edo(*input, dir.file("s.edo"), qo);
  auto scalar = EdoTable::open(dir.file("s.edo"));
  CHECK_FALSE(evaluate(*input, *scalar, eo).has("adc.recall@10"));
}

TEST_CASE("rq: the fast beam search keeps the reference's beams, for any thread count") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 1500);
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 600);
  const Matrix few = test::load_shared("glove.6B.50d.10k.npy", 81);  // blocks of 41 and 40 rows on two threads
  struct Case {
    const Matrix* data;
    uint32_t m, nbits, beam;
  };
  for (const Case& c : {Case{&glove, 6, 4, 1}, Case{&glove, 6, 4, 8}, Case{&glove, 4, 8, 5}, Case{&glove, 5, 4, 40},
                        Case{&bigann, 4, 6, 8}, Case{&few, 3, 6, 8}}) {
    CAPTURE(c.data->dim);
    CAPTURE(c.m);
    CAPTURE(c.nbits);
    CAPTURE(c.beam);
    // Trained codebooks (greedy, no refits), so near-ties are as common as in use.
    auto codec = trained(fmt::format("rq:m={},nbits={},beam=2,refine=0", c.m, c.nbits), *c.data);
    const std::vector<float> codebooks = codec->state()[0].values;
    const RqShape s{static_cast<uint32_t>(c.data->dim), c.m, c.nbits, c.beam};
    const size_t bytes = math::rq_code_size(s);
    std::vector<uint8_t> ref(c.data->rows * bytes), one(ref.size()), two(ref.size());
    rq_encode_reference(s, codebooks.data(), c.data->values.data(), c.data->rows, ref.data());
    omp_set_num_threads(1);
    rq_encode(s, codebooks.data(), c.data->values.data(), c.data->rows, one.data());
    omp_set_num_threads(2);
    rq_encode(s, codebooks.data(), c.data->values.data(), c.data->rows, two.data());
    CHECK(one == ref);
    CHECK(two == ref);
  }
  // Ties: identical codewords; the lower (beam, codeword) id wins everywhere.
  const std::vector<float> cb = {1, 0, 1, 0, 0, 1, 0, 1,   // level 0: codewords 0 and 1 equal, 2 and 3 equal
                                 0, 0, 0, 0, 0, 0, 0, 0};  // level 1: all zero
  const std::vector<float> rows = {1, 0, 0, 1};
  const RqShape s{2, 2, 2, 3};
  std::vector<uint8_t> ref(2), fast(2);
  rq_encode_reference(s, cb.data(), rows.data(), 2, ref.data());
  rq_encode(s, cb.data(), rows.data(), 2, fast.data());
  CHECK(ref == fast);
  CHECK(math::pq_get_code(ref.data(), 0, 2) == 0);
  CHECK(math::pq_get_code(ref.data() + 1, 0, 2) == 2);
  CHECK(math::pq_get_code(ref.data(), 1, 2) == 0);
}

TEST_CASE("rq: edo's beam search does as well as FAISS compute_codes on the same codebooks") {
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 2000);
  auto codec = trained("rq:m=8,nbits=5,beam=4,train_beam=4,refine=0", glove);
  const std::vector<float> codebooks = codec->state()[0].values;
  faiss::ResidualQuantizer frq(glove.dim, 8, 5);
  frq.max_beam_size = 4;
  frq.codebooks = codebooks;
  frq.is_trained = true;
  frq.compute_codebook_tables();
  std::vector<uint8_t> theirs(glove.rows * frq.code_size);
  frq.compute_codes(glove.values.data(), theirs.data(), glove.rows);
  const std::vector<uint8_t> ours = test::encode_all(*codec, glove);
  REQUIRE(ours.size() == theirs.size());
  size_t same_rows = 0;
  for (size_t r = 0; r < glove.rows; ++r)
    same_rows += std::equal(ours.begin() + r * 5, ours.begin() + (r + 1) * 5, theirs.begin() + r * 5);
  const double e_ours = test::relative_frobenius_error(glove.values, test::decode_all(*codec, ours, glove.rows));
  const double e_theirs = test::relative_frobenius_error(glove.values, test::decode_all(*codec, theirs, glove.rows));
  MESSAGE("rq codes equal to FAISS's: " << same_rows << " of " << glove.rows << "; error " << e_ours << " vs "
                                        << e_theirs);
  // The same search: mostly the same codes (FAISS scores in float, so
  // near-ties may go either way), and never a worse fit overall.
  CHECK(same_rows * 10 >= glove.rows * 9);
  CHECK(e_ours <= e_theirs * (1 + 1e-4));
}
