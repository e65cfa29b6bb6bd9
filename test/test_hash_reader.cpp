// SPDX-License-Identifier: Apache-2.0
// Reading hashed tiers: the hash against FORMAT.md 9.5, ids beyond the table
// answered on request (UnknownIdPolicy::hash) with the shared decode, and
// files whose hashed tier is malformed refused when opened.
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/hash.hpp>
#include <edo/io/container.hpp>
#include <edo/reader.hpp>

#include <cstring>

using edo::test::error_of;
using edo::test::Packed;

namespace {

// A hashed tier's tables as hash_decode takes them, copied out of the
// container (whose sections are only 64-byte aligned in the file, but the
// copy keeps this independent of that).
struct Tables {
  edo::HashSpec spec;
  std::vector<float> buckets, quotient;
  std::vector<uint8_t> weights;
  edo::HashTables view;

  Tables(const edo::io::Container& c, const std::string& tier_name) {
    const edo::io::TierInfo* tier = nullptr;
    for (const auto& t : c.tiers())
      if (t.name == tier_name) tier = &t;
    REQUIRE(tier);
    spec = edo::parse_hash_spec(tier->codec);
    const auto floats = [&](const char* role) {
      const edo::io::SectionView v = c.section(tier->sections.at(role));
      std::vector<float> f(v.size / sizeof(float));
      std::memcpy(f.data(), v.data, v.size);
      return f;
    };
    const bool qr = spec.scheme == edo::HashScheme::qr;
    buckets = floats(qr ? "remainder" : "buckets");
    if (qr) quotient = floats("quotient");
    if (spec.weights) {
      const edo::io::SectionView v = c.section(tier->sections.at("weights"));
      weights.assign(v.data, v.data + v.size);
    }
    view = {buckets.data(),
            qr ? quotient.data() : nullptr,
            qr ? edo::qr_quotient_rows(c.rows(), spec.buckets) : 0,
            spec.weights ? weights.data() : nullptr,
            c.rows(),
            c.dim()};
  }

  std::vector<float> row(uint64_t id) const {
    std::vector<float> out(view.dim);
    edo::hash_decode(spec, view, id, out.data());
    return out;
  }
};

edo::ReaderOptions hashing() {
  edo::ReaderOptions o;
  o.unknown_ids = edo::UnknownIdPolicy::hash;
  return o;
}

// `in` rewritten with section `name` cut by `cut` bytes and every checksum
// right, so that only the hashed tier's own length check can object.
void write_with_short_section(const std::string& in, const std::string& out, const std::string& name, uint64_t cut) {
  const edo::io::Container c = edo::io::Container::open(in);
  edo::io::ContainerWriter w(out);
  bool found = false;
  for (const auto& s : c.sections()) {
    const edo::io::SectionView v = c.section(s.name);
    const bool target = s.name == name;
    found = found || target;
    w.add_section(s.name, v.data, target ? v.size - cut : v.size);
  }
  REQUIRE(found);
  nlohmann::json manifest = c.manifest();
  manifest.erase("sections");
  w.finish(manifest);
}

}  // namespace

TEST_CASE("hash reader: hash_bucket gives FORMAT.md 9.5's test vectors, modulo 2^64 throughout") {
  CHECK(edo::splitmix64(0) == 0xe220a8397b1dcdafull);
  CHECK(edo::hash_bucket(0, 0, 0, 1000) == 55);
  CHECK(edo::hash_bucket(1, 0, 0, 1000) == 430);
  CHECK(edo::hash_bucket(12345, 1, 0, 1000) == 752);
  // Computed by scripts/edo_reader.py (Python integers masked to 64 bits): the
  // seed + k that wraps, the largest ids and the largest bucket count.
  CHECK(edo::hash_bucket(~uint64_t{0}, 3, ~uint64_t{0} - 1, edo::kMaxBuckets) == 3358352538u);
  CHECK(edo::hash_bucket(uint64_t{1} << 63, 3, ~uint64_t{0} - 1, edo::kMaxBuckets) == 2769060950u);
  CHECK(edo::hash_bucket(123456789012345, 3, ~uint64_t{0} - 1, edo::kMaxBuckets) == 4216707195u);
}

TEST_CASE("hash reader: UnknownIdPolicy::hash answers ids beyond the table with hash_decode's row") {
  // One hashed tier (weighted: ids beyond the table weigh 1.0), a qr product
  // (the quotient row wraps) behind a kept top tier, and a plain k=3 sum.
  for (const std::vector<std::string>& tiers :
       {std::vector<std::string>{"hashed:rest:hash:buckets=50,k=2,weights=1,seed=5"},
        std::vector<std::string>{"top:rows=10%:fp32", "hashed:rest:qr:buckets=40,op=mul"},
        std::vector<std::string>{"top:rows=5%:int8", "hashed:rest:hash:buckets=64,k=3"}}) {
    CAPTURE(tiers.back());
    const Packed p(tiers);
    const edo::Reader r = edo::Reader::open(p.path, hashing());
    const Tables t(r.container(), "hashed");
    // Inside the table, rows of the hashed tier (those not kept on top), then
    // ids beyond it, in one batch with a row of the other tier between them.
    std::vector<int64_t> ids;
    for (int64_t id = 0; id < static_cast<int64_t>(p.rows) && ids.size() < 8; ++id)
      if (r.tier_of(static_cast<uint64_t>(id)) == r.tiers().size() - 1) ids.push_back(id);
    REQUIRE(ids.size() == 8);
    for (const int64_t id : {int64_t{600}, int64_t{601}, int64_t{12345}, int64_t{1} << 40, INT64_MAX})
      ids.push_back(id);
    std::vector<float> out(ids.size() * p.dim);
    r.lookup(ids.data(), ids.size(), out.data());
    for (size_t k = 0; k < ids.size(); ++k) {
      CAPTURE(ids[k]);
      const std::vector<float> want = t.row(static_cast<uint64_t>(ids[k]));
      CHECK(std::memcmp(out.data() + k * p.dim, want.data(), p.dim * sizeof(float)) == 0);
    }
    // One at a time, as a server asks, the same.
    std::vector<float> one(p.dim);
    const int64_t beyond = 100000;
    r.lookup(&beyond, 1, one.data());
    CHECK(one == t.row(100000));

    // Negative ids stay errors, named with their batch position.
    const int64_t negative[] = {600, -3};
    const std::string msg = error_of([&] { r.lookup(negative, 2, out.data()); });
    CHECK(msg.find("p.edo") != std::string::npos);
    CHECK(msg.find("id -3 (batch position 1)") != std::string::npos);
    CHECK(msg.find("negative") != std::string::npos);
    // Without the policy, an id beyond the table is an error as in every file.
    const edo::Reader strict = edo::Reader::open(p.path);
    CHECK(error_of([&] { strict.lookup(&beyond, 1, one.data()); }).find("id 100000") != std::string::npos);
  }
}

TEST_CASE("hash reader: UnknownIdPolicy::hash on a file without a hashed tier is an error at open") {
  const Packed p({"hot:rows=10%:fp32", "cold:rest:int8", "drop:rows=5%:default"});
  const std::string msg = error_of([&] { edo::Reader::open(p.path, hashing()); });
  CHECK(msg.find("p.edo") != std::string::npos);
  CHECK(msg.find("no hashed tier") != std::string::npos);
}

TEST_CASE("hash reader: a hashed tier's section of the wrong length fails to open, naming the file and tier") {
  struct Case {
    std::vector<std::string> tiers;
    std::string section;
  };
  for (const Case& c : {Case{{"hashed:rest:hash:buckets=50,k=2,weights=1"}, "hashed/buckets"},
                        Case{{"hashed:rest:hash:buckets=50,k=2,weights=1"}, "hashed/weights"},
                        Case{{"top:rows=10%:fp32", "hashed:rest:qr:buckets=40"}, "hashed/quotient"},
                        Case{{"top:rows=10%:fp32", "hashed:rest:qr:buckets=40"}, "hashed/remainder"}}) {
    CAPTURE(c.section);
    const Packed p(c.tiers);
    const std::string bad = p.dir.file("short.edo");
    write_with_short_section(p.path, bad, c.section, 2);
    // A sound container (checksums right), so the container itself opens.
    CHECK_NOTHROW(edo::io::Container::open(bad, edo::io::Verify::all));
    for (const edo::UnknownIdPolicy policy : {edo::UnknownIdPolicy::error, edo::UnknownIdPolicy::hash}) {
      edo::ReaderOptions o;
      o.unknown_ids = policy;
      const std::string msg = error_of([&] { edo::Reader::open(bad, o); });
      CHECK(msg.find("short.edo") != std::string::npos);
      CHECK(msg.find("tier 'hashed'") != std::string::npos);
      CHECK(msg.find("section '" + c.section + "'") != std::string::npos);
    }
  }
}
