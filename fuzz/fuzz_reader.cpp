// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for the reader library (lib/reader): the input opened as
// a .edo file in memory by edo::Reader, which opens every tier by its kind
// (codec tiers and their decoders, "default" shared vectors, csr and bitmap
// sparse tiers, ...) and the id map, then read the ways a server does:
// lookups of a few ids (first, last, middle, unknown ones answered with the
// default vector) in one batch and one by one, a short range through
// decode_rows(), the whole row map validated, and every row decoded when the
// table is small. It is opened again with unknown ids answered by the hash
// (UnknownIdPolicy::hash), an error without a hashed tier; with one, ids
// past the end and far beyond it are looked up, from tables sized for the
// table's rows only. A model file (FORMAT.md section 10) is read table by
// table: tables() listed, each table(name) read as above, and the row calls
// on the model itself (errors naming the tables). Only edo::Error may come out; anything else escaping, a
// crash or a sanitizer report is a finding.
//
// Each step runs on its own, so a corrupt row that fails one still lets the
// others run. Every output buffer is capped (kMaxFloats), so a manifest that
// declares a huge table costs the fuzzer nothing. Like fuzz_container, each
// input is tried as given and with its header and manifest checksums
// recomputed, so mutations reach the tiers; sections are not checksummed on
// open (Verify::structure, asked for: the reader's default checks the small
// ones), so their bytes reach the decoders as mutated.
#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/reader.hpp>

#include "reseal.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace {

// Floats any one step may decode into (4 MiB).
constexpr uint64_t kMaxFloats = uint64_t{1} << 20;
// Rows of the range decode_rows() is asked for.
constexpr uint64_t kRangeRows = 16;

// Reads back what was decoded, so the compiler keeps the decoding.
void consume(const std::vector<float>& v) {
  float sum = 0;
  for (const float x : v) sum += x;
  volatile float sink = sum;
  (void)sink;
}

template <class F>
void step(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const edo::Error&) {
  }
}

// ids of the lookups: first, last and middle rows, then ids outside the table.
std::vector<int64_t> probe_ids(uint64_t rows) {
  std::vector<int64_t> ids;
  if (rows > 0 && rows <= static_cast<uint64_t>(INT64_MAX)) {
    ids.push_back(0);
    ids.push_back(static_cast<int64_t>(rows - 1));
    ids.push_back(static_cast<int64_t>(rows / 2));
    // A stride over the table: a batch that spans several tiers, in mixed order.
    const uint64_t stride = std::max<uint64_t>(1, rows / 13);
    for (uint64_t r = rows - 1, k = 0; k < 24 && r < rows; r -= std::min(r + 1, stride), ++k)
      ids.push_back(static_cast<int64_t>(r));
  }
  if (rows <= static_cast<uint64_t>(INT64_MAX)) ids.push_back(static_cast<int64_t>(rows));
  ids.push_back(-1);
  ids.push_back(INT64_MAX);
  return ids;
}

void read_all(const edo::Reader& r) {
  const uint64_t rows = r.rows(), dim = r.dim();
  uint64_t sum = r.file_bytes() + r.residency_bytes().total() + static_cast<uint64_t>(r.id_map_kind());
  for (const auto& t : r.tiers()) sum += t.rows + t.code_size + t.bytes + t.codec.size();
  if (const edo::Codec* codec = r.single_tier_codec()) sum += codec->code_size();
  sum += r.default_vector().size();
  volatile uint64_t sink = sum;
  (void)sink;
  if (dim == 0 || dim > kMaxFloats) {
    step([&] { r.validate_row_map(); });
    return;
  }

  const std::vector<int64_t> ids = probe_ids(rows);
  step([&] {  // one batch, as many of them as kMaxFloats holds
    const size_t n = std::min<uint64_t>(ids.size(), kMaxFloats / dim);
    std::vector<float> out(n * dim);
    r.lookup(ids.data(), n, out.data());
    consume(out);
  });
  for (const edo::PoolMode mode : {edo::PoolMode::sum, edo::PoolMode::max})
    step([&] {  // the same ids as three pooled bags (the pooling kernels)
      const size_t n = std::min<uint64_t>(ids.size(), kMaxFloats / dim);
      const std::vector<int64_t> offsets = {0, static_cast<int64_t>(n / 3), static_cast<int64_t>(2 * n / 3)};
      std::vector<float> out(offsets.size() * dim);
      r.lookup_bags({offsets.data(), offsets.size(), ids.data(), n, nullptr}, mode, out.data());
      consume(out);
    });
  for (size_t k = 0; k < 3 && k < ids.size(); ++k)  // the first few one at a time
    step([&] {
      std::vector<float> out(dim);
      r.lookup(&ids[k], 1, out.data());
      consume(out);
      if (ids[k] >= 0 && static_cast<uint64_t>(ids[k]) < rows) (void)r.tier_of(static_cast<uint64_t>(ids[k]));
    });

  const uint64_t count = std::min({rows, kRangeRows, kMaxFloats / dim});
  step([&] {  // a range around the middle, then one past the end (an error)
    std::vector<float> out(count * dim);
    const uint64_t begin = std::min(rows / 2, rows - count);
    r.decode_rows(begin, count, out.data());
    consume(out);
    if (count > 0) r.decode_rows(rows - count + 1, count, out.data());
  });

  step([&] { r.validate_row_map(); });

  const auto total = edo::checked_mul(rows, dim);
  if (total && *total <= kMaxFloats)
    step([&] {
      std::vector<float> out(*total);
      r.decode_all(out.data());
      consume(out);
    });
}

// Ids beyond the table, which only a hashed tier answers: its weights and
// quotient rows exist for the table's ids alone. Then a negative id, which
// stays an error.
void read_beyond(const edo::Reader& r) {
  const uint64_t rows = r.rows(), dim = r.dim();
  if (rows >= static_cast<uint64_t>(INT64_MAX) / 4) return;
  const auto end = static_cast<int64_t>(rows);
  const std::vector<int64_t> ids = {end, end + 1, 3 * end + 17, INT64_MAX};
  if (dim == 0 || dim > kMaxFloats / ids.size()) return;
  step([&] {
    std::vector<float> out(ids.size() * dim);
    r.lookup(ids.data(), ids.size(), out.data());
    consume(out);
  });
  for (const int64_t id : {ids[0], ids[3], int64_t{-1}})
    step([&] {
      std::vector<float> out(dim);
      r.lookup(&id, 1, out.data());
      consume(out);
    });
}

void open_and_read(const uint8_t* data, size_t size) {
  for (const auto policy : {edo::UnknownIdPolicy::default_vector, edo::UnknownIdPolicy::hash})
    step([&] {
      auto c = edo::io::Container::view(data, size, "fuzz-input", edo::io::Verify::structure);
      edo::ReaderOptions options;
      options.verify = edo::io::Verify::structure;  // no checksum stops a mutation before the tiers
      options.unknown_ids = policy;
      const edo::Reader r = edo::Reader::from_container(std::move(c), options);
      std::vector<const edo::Reader*> tables = {&r};
      if (r.is_model()) {
        step([&] { read_all(r); });  // usage errors: the model holds several tables
        tables.clear();
        for (const std::string& name : r.tables()) tables.push_back(&r.table(name));
      }
      for (const edo::Reader* t : tables)
        step([&] {
          if (policy == edo::UnknownIdPolicy::hash)
            read_beyond(*t);
          else
            read_all(*t);
        });
    });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  open_and_read(data, size);
  std::vector<uint8_t> sealed(data, data + size);
  if (edo::fuzz::reseal(sealed)) open_and_read(sealed.data(), sealed.size());
  return 0;
}
