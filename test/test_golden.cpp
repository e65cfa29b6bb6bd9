// SPDX-License-Identifier: Apache-2.0
// Files written by older tools keep decoding to the same bytes
// (test/data/golden/README.md says how each was made).
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

const std::string kGoldenDir = std::string(EDO_TEST_DATA_DIR) + "/golden/";

std::vector<float> expected_rows(const std::string& name) {
  auto t = edo::io::open_table(kGoldenDir + name + ".decoded.npy");
  std::vector<float> x(t->rows() * t->dim());
  t->read_f32(0, t->rows(), x.data());
  return x;
}

bool same_bytes(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("golden: files of the 0.1 tools decode to the bytes they decoded to then, whole and by id") {
  for (const char* name : {"q_int8", "q_int4g", "q_pca_pq", "packed"}) {
    CAPTURE(name);
    const edo::Reader r = edo::Reader::open(kGoldenDir + name + ".edo", {.verify = edo::io::Verify::all});
    const std::vector<float> want = expected_rows(name);
    REQUIRE(want.size() == r.rows() * r.dim());
    std::vector<float> all(want.size());
    r.decode_all(all.data());
    CHECK(same_bytes(all, want));
    // Every id once, in a shuffled order, through the batch lookup.
    std::vector<uint64_t> perm = edo::sample_indices(r.rows(), r.rows(), 3);
    edo::Rng rng(5);
    for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[rng.next() % i]);
    const std::vector<int64_t> ids(perm.begin(), perm.end());
    std::vector<float> got(want.size());
    r.lookup(ids.data(), ids.size(), got.data());
    std::vector<float> expect(want.size());
    for (size_t i = 0; i < ids.size(); ++i)
      std::memcpy(expect.data() + i * r.dim(), want.data() + ids[i] * r.dim(), r.dim() * sizeof(float));
    CHECK(same_bytes(got, expect));
  }
}

TEST_CASE("golden: the packed file keeps its tiers, kinds and residencies") {
  const edo::Reader r = edo::Reader::open(kGoldenDir + "packed.edo");
  REQUIRE(r.tiers().size() == 4);
  CHECK(r.id_map_kind() == edo::IdMapKind::row_map);
  CHECK(r.tiers()[0].residency == edo::Residency::gpu);
  CHECK(r.tiers()[2].residency == edo::Residency::disk);
  CHECK(r.tiers()[3].kind == edo::TierKind::shared_vector);
  CHECK(r.tiers()[3].codec == "default");
  const edo::Reader q = edo::Reader::open(kGoldenDir + "q_int8.edo");
  CHECK(q.id_map_kind() == edo::IdMapKind::identity);
  CHECK(q.tiers()[0].residency == edo::Residency::host);  // 0.1 one-tier files record none
}
