// SPDX-License-Identifier: Apache-2.0
// libFuzzer round-trip target for shards (docs/SCALE.md; run by
// test/cli/fuzz_roundtrip.sh): the input becomes a table just big enough for
// N shards (2 to 4: shards split at multiples of 2048 rows, so 2048 (N - 1)
// rows plus 1 to 300, 1 to 8 columns, values from a seeded generator with
// zero, tiny, huge and repeated rows where the input puts them), which is
// written whole by one process and as N shards merged back, either as
// edo-quantize writes it (quantize_to_edo: one tier, a codec that trains
// nothing) or as edo-pack does (pack_to_edo: 1 to 3 tiers by access counts
// from the input: plain codecs, zero, csr/bitmap with k= or threshold=, and
// tiers that train or fit -- default, centroids:C, csr density=, pq -- whose
// state a --train-only run (pack_trained_state) writes once and each shard
// loads, as edo-pack --trained does), with or without a vocabulary. What
// must hold, else abort() with a message:
//  - the whole write fails (edo::Error) exactly when some shard's does;
//  - merge_shards() of the parts, given in a shuffled order, writes every
//    row, and its file is byte for byte the one-process file;
//  - a shard set of the parts (write_shard_set, ShardSet::open) decodes every
//    row to the bits the one-process file decodes.
// Files go to a directory from mkdtemp under $TMPDIR (else /tmp), emptied
// after each input and removed at exit; a finding leaves them there with the
// table as table.npy and the counts as freq.txt, for the tools to rerun.
//
// What it found, fixed since, and kept as seeds: merges wrote the packed row
// map where one process writes runs (merge_runs_map.bin); a centroids tier
// read past its centroids for a row whose float distances all overflow.
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/reader.hpp>
#include <edo/shard.hpp>
#include <edo/shard_set.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

// A table held in memory, read as any input is.
class MemoryTable final : public edo::io::TableReader {
 public:
  MemoryTable(std::vector<float> values, uint64_t rows, uint64_t dim)
      : TableReader("fuzz-table.npy", "npy"), values_(std::move(values)) {
    rows_ = rows;
    dim_ = dim;
  }
  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    return values_.data() + begin * dim_;
  }

 private:
  std::vector<float> values_;
};

std::string make_work_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/edo-roundtrip-shards-XXXXXX";
  if (!::mkdtemp(pattern.data())) {
    std::perror("roundtrip_shards: mkdtemp");
    std::abort();
  }
  return pattern;
}

const std::string& work_dir() {
  static const std::string dir = make_work_dir();
  static const bool cleanup = [] {
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(work_dir(), ec);
    });
    return true;
  }();
  (void)cleanup;
  return dir;
}

void clear_work_dir() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(work_dir(), ec)) fs::remove_all(entry.path(), ec);
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

struct Case {
  std::string description;  // printed with a finding
  MemoryTable* table = nullptr;
  const std::vector<double>* freq = nullptr;
};

// The table (table.npy) and access counts (freq.txt) beside the files a
// finding leaves in the work folder, for the tools to run on.
void save_inputs(const Case& c) {
  if (!c.table) return;
  try {
    const std::string dir = work_dir();
    auto out = edo::io::create_table(dir + "/table.npy", c.table->rows(), c.table->dim());
    out->write_f32(c.table->rows_f32(0, c.table->rows()), c.table->rows());
    out->commit();
    if (c.freq && !c.freq->empty()) {
      std::ofstream f(dir + "/freq.txt");
      for (size_t r = 0; r < c.freq->size(); ++r) f << r << ' ' << (*c.freq)[r] << '\n';
    }
    std::fprintf(stderr, "roundtrip_shards: the table, counts and files are in %s\n", dir.c_str());
  } catch (const edo::Error& e) {
    std::fprintf(stderr, "roundtrip_shards: cannot save the table: %s\n", e.what());
  }
}

[[noreturn]] void fail(const Case& c, const std::string& what) {
  std::fprintf(stderr, "roundtrip_shards: %s\nroundtrip_shards: %s\n", c.description.c_str(), what.c_str());
  save_inputs(c);
  std::abort();
}

uint64_t next(uint64_t& s) {  // xorshift64*
  s ^= s >> 12, s ^= s << 25, s ^= s >> 27;
  return s * 0x2545f4914f6cdd1dULL;
}

// Values near 1 from the seed, then rows the input makes special: scaled by
// 2^-140 up to 2^max_exp, or a value from the input's bits (at most 2^max_exp).
std::vector<float> make_values(FuzzedDataProvider& in, uint64_t rows, uint64_t dim, uint64_t seed, int max_exp) {
  std::vector<float> v(rows * dim);
  uint64_t s = seed | 1;
  for (float& x : v) x = static_cast<float>(static_cast<int64_t>(next(s) >> 40) - (int64_t{1} << 23)) * 0x1p-23f;
  const int specials = in.ConsumeIntegralInRange<int>(0, 12);
  for (int k = 0; k < specials && in.remaining_bytes() > 0; ++k) {
    const uint64_t r = in.ConsumeIntegralInRange<uint64_t>(0, rows - 1);
    float* row = v.data() + r * dim;
    switch (in.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:  // zeros
        std::fill(row, row + dim, 0.0f);
        break;
      case 1:  // tiny (subnormal) or huge, scaled by a power of two
        for (uint64_t j = 0; j < dim; ++j) row[j] = std::ldexp(row[j], in.ConsumeIntegralInRange<int>(-140, max_exp));
        break;
      case 2: {  // a copy of another row (duplicates)
        const uint64_t from = in.ConsumeIntegralInRange<uint64_t>(0, rows - 1);
        std::copy(v.begin() + static_cast<int64_t>(from * dim), v.begin() + static_cast<int64_t>((from + 1) * dim),
                  row);
        break;
      }
      case 3:  // a constant row
        std::fill(row, row + dim, row[0]);
        break;
      case 4:  // one value set from the input's bits (finite)
      {
        uint32_t bits = in.ConsumeIntegral<uint32_t>();
        if ((bits & 0x7f800000u) == 0x7f800000u) bits &= ~0x00800000u;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        if (std::fabs(f) > std::ldexp(1.0f, max_exp)) f = std::copysign(std::ldexp(1.0f, max_exp), f);
        row[in.ConsumeIntegralInRange<uint64_t>(0, dim - 1)] = f;
        break;
      }
      default:  // the row scaled by a factor near 1
        for (uint64_t j = 0; j < dim; ++j) row[j] *= 1.0f + static_cast<float>(k);
        break;
    }
  }
  return v;
}

// A codec that trains nothing, from the registry's plain codecs.
std::string plain_codec(FuzzedDataProvider& in, uint64_t dim) {
  std::vector<std::string> names;
  for (const edo::CodecTraits& t : edo::codec_list())
    if (!t.trainable && !t.transform) names.push_back(t.name);
  std::string spec = names[in.ConsumeIntegralInRange<size_t>(0, names.size() - 1)];
  const std::string grammar = edo::find_codec(spec)->grammar;
  if (spec == "fp8") spec += in.ConsumeBool() ? ":e4m3" : ":e5m2";
  if (grammar.find("group=") != std::string::npos && in.ConsumeBool())
    spec += ":group=" + std::to_string(in.ConsumeIntegralInRange<uint64_t>(1, dim));
  if (grammar.find("scale=fp16") != std::string::npos && in.ConsumeBool()) spec += ",scale=fp16";
  return spec;
}

// A tier codec for edo-pack: plain codecs mostly, then the other kinds.
std::string tier_codec(FuzzedDataProvider& in, uint64_t dim, bool coldest) {
  const std::string values[] = {"fp32", "fp16", "bf16", "int8", "int4"};
  const std::string v = values[in.ConsumeIntegralInRange<size_t>(0, std::size(values) - 1)];
  const std::string form = in.ConsumeBool() ? "csr" : "bitmap";
  switch (in.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      return coldest ? "zero" : plain_codec(in, dim);
    case 1:
      return form + ":k=" + std::to_string(in.ConsumeIntegralInRange<uint64_t>(1, dim)) + ",values=" + v;
    case 2:
      return form + ":threshold=" + std::to_string(in.ConsumeIntegralInRange<int>(1, 9) / 10.0) + ",values=" + v;
    case 3:  // trains on a sample
      return form + ":density=" + std::to_string(in.ConsumeIntegralInRange<int>(1, 9) / 10.0) + ",values=" + v;
    case 4:  // fits on every row of its tier
      return coldest ? "default" : plain_codec(in, dim);
    case 5:
      return coldest ? "centroids:" + std::to_string(in.ConsumeIntegralInRange<int>(1, 8)) : plain_codec(in, dim);
    case 6:
      return dim >= 2 && dim % 2 == 0 ? "pq:m=2,nbits=4" : plain_codec(in, dim);
    default:
      return plain_codec(in, dim);
  }
}

std::string share(FuzzedDataProvider& in, uint64_t rows) {
  switch (in.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      return "rows=" + std::to_string(in.ConsumeIntegralInRange<int>(1, 60)) + "%";
    case 1:
      return "rows=" + std::to_string(in.ConsumeIntegralInRange<uint64_t>(1, rows / 3));
    default:
      return "mass=" + std::to_string(in.ConsumeIntegralInRange<int>(1, 60)) + "%";
  }
}

bool same_decoded(const std::string& whole, const std::string& set_path, uint64_t rows, uint64_t dim) {
  const edo::Reader one = edo::Reader::open(whole);
  const edo::ShardSet set = edo::ShardSet::open(set_path);
  if (set.rows() != one.rows() || one.rows() != rows) return false;
  std::vector<float> a(rows * dim), b(rows * dim);
  one.decode_rows(0, rows, a.data());
  set.decode_rows(0, rows, b.data());
  return std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// One input's table and options: what every run of it shares.
struct Run {
  Case c;
  uint32_t count = 0;
  uint64_t rows = 0, dim = 0;
  bool pack = false;
  std::unique_ptr<MemoryTable> table;
  std::vector<double> freq;
  std::vector<std::string> words;  // empty: no vocabulary
  edo::QuantizeOptions qopt;
  edo::PackOptions popt;
  std::string dir, whole, merged, set_path;
};

// The table and the tool's options from the input; false when the tiers do
// not fit the table (shares past its rows, k above dim: not this target's subject).
bool make_run(FuzzedDataProvider& in, Run& run, uint64_t& shuffle_seed) {
  run.count = in.ConsumeIntegralInRange<uint32_t>(2, 4);
  run.rows = edo::kShardChunkRows * (run.count - 1) + in.ConsumeIntegralInRange<uint64_t>(1, 300);
  run.dim = in.ConsumeIntegralInRange<uint64_t>(1, 8);
  run.pack = in.ConsumeBool();
  const bool with_words = in.ConsumeIntegralInRange<int>(0, 3) == 0;
  const bool allow_underflow = in.ConsumeBool();
  const uint64_t seed = in.ConsumeIntegral<uint64_t>();
  shuffle_seed = in.ConsumeIntegral<uint64_t>();
  const uint64_t rows = run.rows, dim = run.dim;

  std::vector<std::string> tiers;
  std::string spec;
  if (run.pack) {
    const int ntiers = in.ConsumeIntegralInRange<int>(1, 3);
    const int rest = in.ConsumeIntegralInRange<int>(0, ntiers - 1);
    for (int t = 0; t < ntiers; ++t)
      tiers.push_back("t" + std::to_string(t) + ":" + (t == rest ? "rest" : share(in, rows)) + ":" +
                      tier_codec(in, dim, t == ntiers - 1) + ":" + (in.ConsumeBool() ? "host" : "disk"));
    // Access counts: small integers (many ties), a Zipf-like head where the input says.
    uint64_t s = seed ^ 0x9e3779b97f4a7c15ULL;
    const int skew = in.ConsumeIntegralInRange<int>(0, 3);
    run.freq.resize(rows);
    for (uint64_t r = 0; r < rows; ++r)
      run.freq[r] = static_cast<double>(next(s) % 8) + (skew && r % 97 == 0 ? 1000.0 * skew : 0.0);
  } else {
    spec = plain_codec(in, dim);
  }
  run.table = std::make_unique<MemoryTable>(make_values(in, rows, dim, seed, 120), rows, dim);
  run.c.table = run.table.get();
  run.c.freq = &run.freq;
  if (with_words)
    for (uint64_t r = 0; r < rows; ++r) run.words.push_back("w" + std::to_string(r));
  run.c.description = fmt::format("{} rows x {} columns in {} shards, {}{} --seed {} --train-rows 1024{}{}", rows, dim,
                                  run.count, run.pack ? "edo-pack --tier " : "edo-quantize --codec ",
                                  run.pack ? fmt::format("{}", fmt::join(tiers, " --tier ")) : spec, seed % 1000,
                                  with_words ? ", with words" : "", allow_underflow ? ", --allow-underflow" : "");
  run.dir = work_dir();
  run.whole = run.dir + "/whole.edo";
  run.merged = run.dir + "/merged.edo";
  run.set_path = run.dir + "/parts.edoset";

  // The options of every run: the tool's, as its command line would set them.
  edo::WriteOptions& wopt = run.pack ? static_cast<edo::WriteOptions&>(run.popt) : run.qopt;
  wopt.seed = seed % 1000;
  wopt.train_rows = 1024;
  wopt.allow_underflow = allow_underflow;
  wopt.allow_larger_sparse = true;
  wopt.vocabulary = with_words ? &run.words : nullptr;
  wopt.parameters = {{"fuzz", run.c.description}};
  run.qopt.spec = spec;
  run.popt.freq = run.freq;
  try {
    for (const std::string& t : tiers) run.popt.tiers.push_back(edo::parse_tier_spec(t));
    if (run.pack) edo::check_tier_specs(run.popt.tiers, rows, dim);
  } catch (const edo::Error&) {
    return false;
  }
  return true;
}

// edo-pack --train-only when a tier trains or fits; nullopt when none does.
// Throws what pack_trained_state() throws.
std::optional<edo::TrainedState> train_once(const Run& run) {
  bool trains = false;
  for (const edo::TierSpec& t : run.popt.tiers) {
    const auto need = edo::make_tier_builder(t.codec, run.dim, {})->shard_need();
    trains = trains || need == edo::ShardNeed::sample || need == edo::ShardNeed::tier;
  }
  if (!run.pack || !trains) return std::nullopt;
  edo::pack_trained_state(*run.table, run.dir + "/model.edo", run.popt);
  return edo::read_trained_state(run.dir + "/model.edo");
}

// Shard i of the table, as its own run of the tool would write it (with
// the trained state, as --trained loads it).
void write_shard(Run& run, uint32_t i, const std::optional<edo::TrainedState>& trained, const std::string& path) {
  const edo::RowRange range = edo::shard_rows(run.rows, i, run.count);
  nlohmann::json entry = edo::shard_entry(i, run.count, range, run.rows);
  entry[edo::kSourceSampleKey] = fmt::format("{:016x}", edo::source_digest(*run.table, edo::SourceHash::sampled));
  std::vector<std::string> words;
  if (!run.words.empty())
    words.assign(run.words.begin() + static_cast<int64_t>(range.begin),
                 run.words.begin() + static_cast<int64_t>(range.end));
  if (run.pack) {
    edo::PackOptions o = run.popt;
    if (trained) {
      o.parameters = trained->parameters;
      if (trained->parameters.contains("train_rows") && trained->parameters["train_rows"].is_number_unsigned())
        o.train_rows = trained->parameters["train_rows"].get<uint64_t>();
      o.seed = trained->seed;
      o.trained = &trained->tiers;
    }
    o.shard = entry;
    o.first_row = range.begin;
    o.shard_rows = range.size();
    if (!words.empty()) o.vocabulary = &words;
    edo::pack_to_edo(*run.table, path, o);
  } else {
    edo::QuantizeOptions o = run.qopt;
    o.shard = entry;
    o.first_row = range.begin;
    if (!words.empty()) o.vocabulary = &words;
    auto view = edo::row_range_view(*run.table, range);
    edo::quantize_to_edo(*view, path, o);
  }
}

// The merge of the parts (in a shuffled order) against the one-process file,
// and the parts read in place as one table.
void check_merge(const Run& run, std::vector<std::string> order, uint64_t shuffle_seed) {
  const Case& c = run.c;
  uint64_t s = shuffle_seed | 1;
  for (size_t k = order.size(); k > 1; --k) std::swap(order[k - 1], order[next(s) % k]);
  uint64_t merged_rows = 0;
  try {
    merged_rows = edo::merge_shards(order, run.merged);
  } catch (const edo::Error& e) {
    fail(c, std::string("merge_shards refused the parts: ") + e.what());
  }
  if (merged_rows != run.rows) fail(c, fmt::format("merge_shards wrote {} rows of {}", merged_rows, run.rows));
  const std::vector<char> a = file_bytes(run.whole), b = file_bytes(run.merged);
  if (a != b) {
    const auto at = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
    fail(c, fmt::format("the merged file ({} bytes) differs from the one-process file ({} bytes) from byte {}",
                        b.size(), a.size(), at.first - a.begin()));
  }
  try {
    edo::write_shard_set(order, run.set_path);
    if (!same_decoded(run.whole, run.set_path, run.rows, run.dim))
      fail(c, "the shard set decodes differently from the one-process file");
  } catch (const edo::Error& e) {
    // Hashed and nearest tiers need the merge; this target makes neither.
    fail(c, std::string("the shard set of the parts was refused: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  Run run;
  uint64_t shuffle_seed = 0;
  if (!make_run(in, run, shuffle_seed)) return 0;
  const Case& c = run.c;

  // One process.
  std::optional<std::string> whole_error;
  try {
    if (run.pack)
      edo::pack_to_edo(*run.table, run.whole, run.popt);
    else
      edo::quantize_to_edo(*run.table, run.whole, run.qopt);
  } catch (const edo::Error& e) {
    whole_error = e.what();
  }

  std::optional<edo::TrainedState> trained;
  try {
    trained = train_once(run);
  } catch (const edo::Error& e) {
    if (!whole_error) fail(c, std::string("--train-only failed where the one-process pack did not: ") + e.what());
    clear_work_dir();
    return 0;
  }

  // N shards; the first that fails stops them.
  std::vector<std::string> parts;
  std::optional<std::string> shard_error;
  for (uint32_t i = 0; i < run.count && !shard_error; ++i) {
    parts.push_back(run.dir + "/part-" + std::to_string(i) + ".edo");
    try {
      write_shard(run, i, trained, parts.back());
    } catch (const edo::Error& e) {
      shard_error = e.what();
    }
  }
  if (whole_error.has_value() != shard_error.has_value())
    fail(c, whole_error ? "the one-process run failed (" + *whole_error + ") but every shard was written"
                        : "a shard failed (" + *shard_error + ") where the one-process run did not");
  if (!whole_error) check_merge(run, parts, shuffle_seed);
  clear_work_dir();
  return 0;
}
