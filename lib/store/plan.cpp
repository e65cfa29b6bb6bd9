// SPDX-License-Identifier: Apache-2.0
// The planner: candidate tier plans, cheapest first, evaluated on a seeded
// sample of rows until one meets the budget (docs/PACK.md, "Planning").
#include "pack_impl.hpp"

#include <edo/codec.hpp>
#include <edo/codec_chooser.hpp>
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/hash.hpp>
#include <edo/io/files.hpp>
#include <edo/io/memory_table.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/knn.hpp>
#include <edo/lossless.hpp>
#include <edo/make_codec.hpp>
#include <edo/pack.hpp>
#include <edo/pq.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>
#include <edo/sparse_writer.hpp>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <tuple>

#include <unistd.h>

namespace edo {

namespace {

struct LadderCodec {
  std::string spec;  // canonical, or a tier kind's word ("default", "zero")
  TierKind kind = TierKind::codec;
  uint64_t dim = 0;
  uint64_t code_size = 0;    // bytes a row: a codec's code, a centroid index, a nearest target
  uint64_t state_bytes = 0;  // codec state, the default vector, the centroids
  bool trainable = false;
  std::shared_ptr<Codec> trained;  // trainable codecs: trained on the sample, reused to decode it
  // Trained on each tier's own rows in the plan, as the writer trains it,
  // where training takes well under a second (tc); other trainable codecs
  // are trained once on the whole sample (SampleCodecs).
  bool tier_trained = false;
  // Codecs: ||X - decoded X|| / ||X|| over the sample, which ranks them by
  // precision (no_more_precise); infinite when the codec refuses a sample row.
  double sample_error = 0;
  // Codecs but tc: the sample as the codec (trained on the sample) stores
  // it, decoded once here and reused by every plan (SampleCodecs).
  std::vector<float> sample_decoded;
  SparseSpec sparse;
  double values_per_row = 0;     // sparse: expected from the sample's density
  uint64_t dense_row_bytes = 0;  // sparse: a row stored dense at the same value precision
  uint64_t centroids = 0;        // centroids:C
  Metric metric = Metric::cos;   // nearest
  HashSpec hash;                 // hashed
  uint64_t groups = 0;           // grouped: C

  // The dropped rows' kinds: only ever a plan's coldest tier, less precise
  // than every codec, and not ordered among themselves.
  bool fallback() const { return edo::is_fallback(kind); }

  // Bytes a row, which orders the ladder (a sparse tier's from its expected density).
  double row_bytes() const {
    if (kind != TierKind::sparse) return static_cast<double>(code_size);
    const bool csr = sparse.form == SparseForm::csr;
    const double per_value =
        static_cast<double>(sparse_value_bytes(sparse.values, 2)) / 2 + (csr ? sparse_index_bytes(dim) : 0);
    return values_per_row * per_value + static_cast<double>(csr ? 0 : sparse_mask_bytes(dim)) + 4 +
           sparse_param_bytes(sparse.values);
  }

  // Bytes of a tier of `rows` rows: exact but for sparse tiers, whose values
  // the sample's density estimates. The sections are sparse_builder.cpp's:
  // values, offsets (rows + 1 of them), column indices or masks, row params.
  uint64_t tier_bytes(uint64_t rows) const {
    if (kind != TierKind::sparse) return rows * code_size + state_bytes;
    auto nnz = static_cast<uint64_t>(std::llround(values_per_row * static_cast<double>(rows)));
    if (sparse.values == SparseValues::int4) nnz += nnz % 2;
    const uint64_t where =
        sparse.form == SparseForm::csr ? nnz * sparse_index_bytes(dim) : rows * sparse_mask_bytes(dim);
    return sparse_value_bytes(sparse.values, nnz) + (rows + 1) * (nnz <= UINT32_MAX ? 4 : 8) + where +
           rows * sparse_param_bytes(sparse.values);
  }
};

// The seeded rows candidates are evaluated on, each with its position in the
// hot order of the whole table and its access count.
struct PlanSample {
  std::vector<uint64_t> ids;
  std::vector<float> x;
  std::vector<double> freq;
  std::vector<uint64_t> position;
};

// A hashed tier: its shared tables (sized by the table's rows, not the
// tier's) and, with weights, K fp16 weights a row.
void hashed_entry(LadderCodec& c, const std::string& s, uint64_t table_rows) {
  c.hash = parse_hash_spec(s);
  c.spec = format_hash_spec(c.hash);
  if (c.hash.buckets >= table_rows)
    EDO_USAGE_FAIL("plan: {} has as many buckets as the table has rows ({}): B must be below them", c.spec, table_rows);
  const uint64_t table_rows_of_params =
      c.hash.scheme == HashScheme::qr ? qr_quotient_rows(table_rows, c.hash.buckets) + c.hash.buckets : c.hash.buckets;
  c.code_size = c.hash.weights ? 2 * c.hash.k : 0;
  c.state_bytes = table_rows_of_params * c.dim * sizeof(float);
}

// A group tier: a group index and the residual's code a row, the base rows
// and the residual codec's state (a trainable residual trained on the
// sample's rows to learn its size, which does not depend on the data).
void grouped_entry(LadderCodec& c, const std::string& s, const PlanSample& sample) {
  const GroupSpec g = parse_group_spec(s, c.dim);
  if (g.from_labels) EDO_USAGE_FAIL("plan: '{}': the planner draws groups by k-means (group:clusters=C)", s);
  c.groups = g.groups;
  c.spec = fmt::format("group:clusters={},residual={}", g.groups,
                       g.residual.find_first_of(",:") == std::string::npos ? g.residual : "[" + g.residual + "]");
  c.code_size = centroid_index_bytes(g.groups);
  c.state_bytes = g.groups * c.dim * sizeof(float);
  if (g.residual == "none") return;
  std::unique_ptr<Codec> residual = make_codec(g.residual, c.dim);
  c.code_size += residual->code_size();
  if (!residual->needs_training()) return;
  residual->train(sample.x.data(), std::min<uint64_t>(sample.ids.size(), 4096), 0);
  for (const NamedBlob& b : residual->state()) c.state_bytes += state_stored_bytes(b);
}

// A sparse tier, a hashed or group tier, or a fallback for dropped rows as a ladder entry.
LadderCodec tier_kind_entry(const std::string& s, TierKind kind, const PlanSample& sample, uint64_t dim,
                            uint64_t table_rows) {
  LadderCodec c;
  c.kind = kind;
  c.dim = dim;
  c.spec = s;
  switch (kind) {
    case TierKind::zero:
    case TierKind::codec:
      break;
    case TierKind::hashed:
      hashed_entry(c, s, table_rows);
      break;
    case TierKind::grouped:
      grouped_entry(c, s, sample);
      break;
    case TierKind::shared_vector:
      c.state_bytes = dim * sizeof(float);
      break;
    case TierKind::lossless: {
      // Sized on the sample in the type the writer keeps (build_ladder
      // resolves a bare `lossless` to the input's).
      const LosslessSpec spec = parse_lossless_spec(s);
      c.spec = format_lossless_spec(spec.values);
      c.code_size =
          static_cast<uint64_t>(std::ceil(lossless_row_bytes(spec.values, sample.x.data(), sample.ids.size(), dim)));
      break;
    }
    case TierKind::centroids:
      c.centroids = centroid_count(s);
      c.spec = fmt::format("centroids:{}", c.centroids);
      c.code_size = centroid_index_bytes(c.centroids);
      c.state_bytes = c.centroids * dim * sizeof(float);
      break;
    case TierKind::nearest:
      c.metric = nearest_metric(s);
      c.spec = c.metric == Metric::l2 ? "nearest:l2" : "nearest:cos";
      c.code_size = table_rows <= UINT32_MAX ? 4 : 8;  // the writer's target width
      break;
    case TierKind::sparse: {
      c.sparse = parse_sparse_spec(s, dim);
      c.spec = format_sparse_spec(c.sparse);
      const uint64_t n = sample.ids.size();
      io::MemoryTable t("plan sample", {sample.x.data(), n, dim});
      c.values_per_row = sparse_expected_density(c.sparse, t, n) * static_cast<double>(dim);
      // An int4 row keeps an even count: one more value for about half the rows.
      if (c.sparse.values == SparseValues::int4) c.values_per_row += 0.5;
      // edo-pack refuses a sparse tier larger than its rows stored dense
      // (SparseTierBuilder::dense_bytes): a plan holding one could not be written.
      c.dense_row_bytes =
          (c.sparse.values == SparseValues::int4 ? (dim + 1) / 2 : sparse_value_bytes(c.sparse.values, dim)) +
          sparse_param_bytes(c.sparse.values);
      if (c.row_bytes() > static_cast<double>(c.dense_row_bytes))
        EDO_USAGE_FAIL(
            "plan: {} takes about {:.1f} bytes a row at this table's density, more than the {} bytes of a row stored "
            "dense at the same precision, which edo-pack refuses (try bitmap or a lower density)",
            c.spec, c.row_bytes(), c.dense_row_bytes);
      break;
    }
  }
  return c;
}

// n rows of x as `codec` stores them.
std::vector<float> round_trip(const Codec& codec, const float* x, uint64_t n) {
  std::vector<uint8_t> codes(n * codec.code_size());
  std::vector<float> y(n * codec.dim());
  EncodeOptions enc;
  enc.input = "plan sample";
  codec.encode(x, n, codes.data(), enc);
  codec.decode(codes.data(), n, y.data());
  return y;
}

// The entry's sample_decoded and sample_error. A codec that refuses a sample
// row ranks last; each plan using it then reports the refusal.
void decode_sample(LadderCodec& c, const Codec& codec, const PlanSample& sample) {
  std::vector<float> y;
  try {
    y = round_trip(codec, sample.x.data(), sample.ids.size());
  } catch (const Error&) {
    c.sample_error = HUGE_VAL;
    return;
  }
  double err = 0, norm = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const double d = static_cast<double>(sample.x[i]) - y[i];
    err += d * d;
    norm += static_cast<double>(sample.x[i]) * sample.x[i];
  }
  c.sample_error = norm > 0 ? std::sqrt(err / norm) : std::sqrt(err);
  if (!c.tier_trained) c.sample_decoded = std::move(y);
}

// A codec as a ladder entry; nullopt for a default setting this table cannot take.
std::optional<LadderCodec> codec_entry(const std::string& s, const PlanOptions& opt, const PlanSample& sample,
                                       uint64_t dim, const std::string& table) {
  LadderCodec c;
  c.dim = dim;
  std::unique_ptr<Codec> codec;
  try {
    codec = make_codec(s, dim);
  } catch (const Error& e) {
    if (!opt.codecs.empty()) throw;  // the user's list: report it
    return std::nullopt;
  }
  c.spec = codec->spec();
  c.code_size = codec->code_size();
  c.trainable = codec->needs_training();
  // A default with fp16 group parameters is left out of a table whose sample
  // reaches fp16's limit: its values could not be stored.
  if (const std::optional<math::ScalarLayout> L = scalar_layout(*codec); L && L->half_params && opt.codecs.empty()) {
    for (const float v : sample.x)
      if ((float_bits(v) & 0x7fffffffu) >= kHalfOverflowBits) return std::nullopt;
  }
  const uint64_t train_n = std::min<uint64_t>(sample.ids.size(), opt.train_rows);
  if (!c.trainable) {
    decode_sample(c, *codec, sample);
    return c;
  }
  // State sizes do not depend on the data: train once on the sample to learn them.
  try {
    // Rows whose sums overflow float are named by their table row (a
    // default codec that cannot train is left out instead). Tiny rows
    // only cost recall, which the plan measures.
    EncodeOptions named;
    named.input = table;
    named.allow_underflow = true;
    check_trainable_norms(sample.x.data(), train_n, dim, c.spec, named, sample.ids.data());
    codec->train(sample.x.data(), train_n, opt.seed);
  } catch (const Error&) {
    if (!opt.codecs.empty()) throw;
    return std::nullopt;
  }
  for (const NamedBlob& b : codec->state()) c.state_bytes += state_stored_bytes(b);
  const CodecTraits* last = find_codec(parse_spec(c.spec).back().name);
  c.tier_trained = last && last->plan_fits_per_tier;
  decode_sample(c, *codec, sample);
  c.trained = std::move(codec);
  return c;
}

// The default ladder's rq entries: levels x width x training rows at most
// this (about 10 s of training on two cores).
constexpr uint64_t kPlanRqWork = 60'000'000;
// The default ladder's tc entries: training rows x dim^2 at most this (GloVe's
// 10,000 x 50 is 2.5e7, fitted in about 0.05 s; 65,536 x 384 would be 1e10).
constexpr uint64_t kPlanTcWork = 1'000'000'000;

// The ladder, most precise first: codecs and sparse tiers by bytes a row,
// then the fallbacks. `table`: the table's name, for errors.
std::vector<LadderCodec> build_ladder(const PlanOptions& opt, const PlanSample& sample, uint64_t dim,
                                      uint64_t table_rows, const std::string& table, io::DType input_dtype) {
  std::vector<std::string> specs = opt.codecs;
  if (specs.empty()) {
    // fp16 group parameters (scale=fp16) cost 4 bytes a row instead of 8
    // and hardly any accuracy, so the 5-, 6- and 8-bit steps use them.
    // lossless (the input's own type, bit for bit): the most precise step of
    // every ladder, about 11 bits a value on bf16 tables, 26 on fp32 ones.
    specs = {"lossless",        "fp16", "int8", "int8:scale=fp16", "int6:scale=fp16", "int5:scale=fp16", "int4",
             "int4:scale=fp16", "int2"};
    // Codebooks in int8 under a power of two a codeword: about a quarter of
    // fp32's state bytes at the same recall (docs/BENCHMARKS.md), and no
    // range limit, as fp16 has.
    const char* books = ",codebooks=int8";
    if (find_codec("pq"))
      for (uint64_t div : {2, 4, 8})
        if (dim / div >= 1) specs.push_back(fmt::format("pq:m={}{}", dim / div, books));
    // rq in its fast setting, where it trains on the sample in seconds: its
    // training counts in the plan's time (about m x dim x rows / 6e6 s on
    // two cores: rq:m=12 on GloVe's 10,000 x 50 about 1 s, rq:m=48 on
    // 16,384 x 384 about 50 s; docs/BENCHMARKS.md, "Training time"), so
    // levels past kPlanRqWork are left to --plan-codecs; its m x 256 x dim
    // codebooks count in each plan's bytes.
    const uint64_t train_rows = std::min<uint64_t>(sample.ids.size(), opt.train_rows);
    if (find_codec("rq"))
      for (uint64_t div : {4, 8}) {
        const uint64_t m = dim / div;
        if (m >= 1 && m <= math::kRqMaxLevels && m * dim * train_rows <= kPlanRqWork)
          specs.push_back(fmt::format("rq:m={},beam=4,train_beam=1,refine=1{}", m, books));
      }
    // Transform coding at three rates (tc_codec.hpp): no per-row scales and
    // bits by variance, so on GloVe it keeps more neighbours than the integer
    // codecs at fewer bytes. Its fit projects every sample row through a
    // d x d basis (training rows x d^2 multiply-adds), so wide tables leave it
    // to --plan-codecs past kPlanTcWork.
    if (find_codec("tc") && train_rows * dim * dim <= kPlanTcWork)
      for (const char* bits : {"10", "7", "4.75"}) specs.push_back(fmt::format("tc:bits={}", bits));
    // The pruned and shared tier kinds: a 30%-dense CSR tier of int8
    // values and a hashed tier of a bucket per four table rows (two a row).
    // On GloVe they add 2,700 candidates and 3 to 6 s to a budget's plan and
    // 9 s to a --max-bytes one. The dropped rows' fallbacks are left to
    // --plan-codecs: they added another 30 s to the --max-bytes plan, no
    // plan ending in one came near the chosen plan's recall on GloVe
    // (docs/BENCHMARKS.md, "Packed files"), and dropping rows is the user's call.
    specs.push_back("csr:density=0.3,values=int8");
    if (table_rows >= 8) specs.push_back(fmt::format("hash:buckets={},k=2", table_rows / 4));
  }
  std::vector<LadderCodec> ladder;
  for (const std::string& s : specs) {
    const TierKind kind = tier_kind_of(s);
    std::optional<LadderCodec> c;
    if (kind == TierKind::codec) {
      c = codec_entry(s, opt, sample, dim, table);
    } else {
      try {
        c = tier_kind_entry(resolve_tier_field(s, input_dtype), kind, sample, dim, table_rows);
      } catch (const Error&) {
        // A default entry this table cannot hold (a sparse tier no smaller than its dense rows) is left out.
        if (!opt.codecs.empty()) throw;
      }
    }
    if (c && std::none_of(ladder.begin(), ladder.end(), [&](const LadderCodec& l) { return l.spec == c->spec; }))
      ladder.push_back(std::move(*c));
  }
  std::stable_sort(ladder.begin(), ladder.end(), [](const LadderCodec& a, const LadderCodec& b) {
    return a.fallback() != b.fallback() ? !a.fallback() : a.row_bytes() > b.row_bytes();
  });
  if (ladder.empty()) EDO_USAGE_FAIL("plan: no codec to try");
  if (ladder.front().fallback())
    EDO_USAGE_FAIL("plan: '{}' only answers dropped rows below a kept tier; give a codec or sparse tier too",
                   ladder.front().spec);
  return ladder;
}

struct Candidate {
  std::vector<TierSpec> tiers;
  std::vector<size_t> codec;   // ladder index per tier
  std::vector<uint64_t> cuts;  // positions in the hot order, tiers + 1
  uint64_t bytes = 0, gpu_bytes = 0;
};

// Candidate plans: one tier per codec, and two or three tiers with strictly
// less precise codecs further down the hot order, cut at opt.cuts. A
// fallback is only ever the coldest of two or three tiers: it answers rows a
// plan drops, and nearest points at rows a kept tier stores.
std::vector<Candidate> generate(const std::vector<LadderCodec>& ladder, const std::vector<double>& cut_percents) {
  const std::vector<std::string> names = {"hot", "warm", "cold"};
  std::vector<Candidate> out;
  const size_t L = ladder.size();
  auto tier = [&](size_t slot, size_t ntiers, double share, size_t c) {
    TierSpec t;
    t.name = ntiers == 1 ? "all" : names[ntiers == 2 && slot == 1 ? 2 : slot];
    t.share = slot + 1 == ntiers ? ShareKind::rest : ShareKind::rows_percent;
    t.value = slot + 1 == ntiers ? 0 : share;
    t.codec = ladder[c].spec;
    t.residency = ntiers == 1                         ? Residency::host
                  : slot == 0                         ? Residency::gpu
                  : slot + 1 == ntiers && ntiers == 3 ? Residency::disk
                                                      : Residency::host;
    return t;
  };
  const auto kept = [&](size_t c) { return !ladder[c].fallback(); };
  // A lossless tier decodes the slowest of all and on the host only: it may
  // hold a whole table or the coldest rows, never the hot or warm ones.
  const auto hot_capable = [&](size_t c) { return kept(c) && ladder[c].kind != TierKind::lossless; };
  for (size_t i = 0; i < L; ++i)
    if (kept(i)) out.push_back({{tier(0, 1, 0, i)}, {i}, {}, 0, 0});
  for (size_t i = 0; i < L; ++i)
    for (size_t j = i + 1; j < L && hot_capable(i); ++j)
      for (double a : cut_percents) out.push_back({{tier(0, 2, a, i), tier(1, 2, 0, j)}, {i, j}, {}, 0, 0});
  for (size_t i = 0; i < L; ++i)
    for (size_t j = i + 1; j < L && kept(j); ++j)
      for (size_t k = j + 1; k < L && hot_capable(i) && hot_capable(j); ++k)
        for (size_t a = 0; a < cut_percents.size(); ++a)
          for (size_t b = a + 1; b < cut_percents.size(); ++b)
            out.push_back(
                {{tier(0, 3, cut_percents[a], i), tier(1, 3, cut_percents[b] - cut_percents[a], j), tier(2, 3, 0, k)},
                 {i, j, k},
                 {},
                 0,
                 0});
  return out;
}

// True when ladder entry `a` is known to be no more precise than `b`. Codecs
// are ranked by the ladder (bytes a row). Fallbacks are below every other
// entry but not ranked among themselves (zero is not known to lose to
// nearest). A sparse tier's bytes say little of its accuracy (on GloVe a
// 30%-dense int8 CSR tier, between int8 and int4 in bytes, loses to int4 and
// to PQ), so it ranks only below a codec that stores every value in at least
// the bytes its rows would take stored dense (int8 and up for int8 values),
// and with no other sparse tier. Hashed and group tiers are not ranked
// either way, but fallbacks stay below them. Codecs rank by their relative
// error on the sample (then by bytes), not by bytes alone: at fewer bytes
// tc is often the more precise (on GloVe tc:bits=4.75, 32 bytes a row, errs
// less than int5:scale=fp16's 36), and ranked by bytes its plans were
// skipped after a scalar plan failed.
bool no_more_precise(const std::vector<LadderCodec>& ladder, size_t a, size_t b) {
  if (a == b) return true;
  const LadderCodec &la = ladder[a], &lb = ladder[b];
  if (la.fallback() || lb.fallback()) return la.fallback() && !lb.fallback();
  // Shared tables' accuracy depends on how rows collide or cluster, not on bytes: unranked.
  const auto shared = [](const LadderCodec& l) { return l.kind == TierKind::hashed || l.kind == TierKind::grouped; };
  if (shared(la) || shared(lb)) return false;
  if (lb.kind == TierKind::sparse) return false;
  if (la.kind == TierKind::sparse) return lb.code_size >= la.dense_row_bytes;
  return la.sample_error != lb.sample_error ? la.sample_error > lb.sample_error : a > b;
}

// True when `c` is nowhere more precise than `f`: at every position of the
// hot order, c's entry is no more precise than f's.
bool no_more_precise(const std::vector<LadderCodec>& ladder, const Candidate& c, const Candidate& f) {
  size_t ti = 0, fi = 0;
  uint64_t pos = 0;
  const uint64_t end = c.cuts.back();
  while (pos < end) {
    while (c.cuts[ti + 1] <= pos) ++ti;
    while (f.cuts[fi + 1] <= pos) ++fi;
    if (!no_more_precise(ladder, c.codec[ti], f.codec[fi])) return false;
    pos = std::min(c.cuts[ti + 1], f.cuts[fi + 1]);
  }
  return true;
}

// The k of a budget gate's recall@k; nullopt for a gate without one.
std::optional<uint64_t> gate_k(const Gate& g) {
  const size_t at = g.metric.rfind('@');
  if (at == std::string::npos) return std::nullopt;
  try {
    return std::stoull(g.metric.substr(at + 1));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The ks of the budget's recall@k, and 10.
std::vector<uint64_t> ks_of(const std::vector<Gate>& budget) {
  std::vector<uint64_t> ks = {10};
  for (const Gate& g : budget)
    if (const auto k = gate_k(g)) ks.push_back(*k);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

// A tier's slice [begin, end) of the hot order: with the sample it fixes
// the tier's rows, so it keys what is computed from them.
using Slice = std::pair<uint64_t, uint64_t>;

// Decodes the sample as one candidate stores it. Each codec's decoded sample
// is computed once: trainable codecs (pq, opq, pca...) train once on the
// whole sample rather than on each candidate's tier, an approximation that
// keeps planning to seconds (training per slice took minutes with PQ in the
// ladder); edo-pack trains on the tier's own rows and --eval measures the
// file it writes. Sparse density rules, centroids and nearest depend on the
// tier's rows as the writer's do: fitted on the tier's sample rows, the
// costly part (k-means, the nearest-row search) cached by slice.
class SampleCodecs {
 public:
  SampleCodecs(const std::vector<LadderCodec>& ladder, const std::vector<float>& x, const std::vector<double>& freq,
               uint64_t dim, const PlanOptions& opt)
      : ladder_(ladder), x_(x), freq_(freq), dim_(dim), opt_(opt) {}

  // `members`: sample rows of the tier, ascending, the tier taking `slice`;
  // writes their rows into y. Tiers are decoded hottest first, so a fallback
  // (the coldest) finds the kept tiers' rows in y already.
  void decode(size_t c, const std::vector<uint64_t>& members, Slice slice, float* y) {
    if (members.empty()) return;
    switch (ladder_[c].kind) {
      case TierKind::zero:
        for (uint64_t s : members) std::fill_n(y + s * dim_, dim_, 0.0f);
        return;
      case TierKind::shared_vector:
        decode_mean(members, y);
        return;
      case TierKind::sparse:
        decode_sparse(ladder_[c].sparse, members, y);
        return;
      case TierKind::centroids:
        decode_centroids(c, members, slice, y);
        return;
      case TierKind::nearest:
        decode_nearest(c, members, slice, y);
        return;
      case TierKind::hashed:
      case TierKind::grouped:
        decode_shared(c, members, slice, y);
        return;
      case TierKind::lossless:
        for (uint64_t s : members) std::copy_n(x_.data() + s * dim_, dim_, y + s * dim_);
        return;
      case TierKind::codec:
        break;
    }
    if (ladder_[c].tier_trained) {
      auto it = tier_trained_.find({c, slice});
      if (it == tier_trained_.end())
        it = tier_trained_.emplace(std::pair{c, slice}, fit_tier_codec(ladder_[c], members)).first;
      for (size_t k = 0; k < members.size(); ++k)
        std::copy_n(it->second.data() + k * dim_, dim_, y + members[k] * dim_);
      return;
    }
    // Decoded by build_ladder (trainable codecs trained on the sample there);
    // a codec that refused a sample row reports it here, for this plan.
    const LadderCodec& lc = ladder_[c];
    const std::vector<float>* full = &lc.sample_decoded;
    std::vector<float> again;
    if (full->empty()) {
      std::unique_ptr<Codec> fresh;
      again = round_trip(lc.trained ? *lc.trained : *(fresh = make_codec(lc.spec, dim_)), x_.data(), x_.size() / dim_);
      full = &again;
    }
    for (uint64_t s : members) std::copy_n(full->data() + s * dim_, dim_, y + s * dim_);
  }

 private:
  std::vector<float> gather(const std::vector<uint64_t>& rows) const {
    std::vector<float> out(rows.size() * dim_);
    for (size_t k = 0; k < rows.size(); ++k) std::copy_n(x_.data() + rows[k] * dim_, dim_, out.data() + k * dim_);
    return out;
  }

  // The rows a tier trains on, as the writer picks them: a seeded sample of
  // up to train_rows of its rows.
  std::vector<uint64_t> training_rows(const std::vector<uint64_t>& members) const {
    if (members.size() <= opt_.train_rows) return members;
    std::vector<uint64_t> pick = sample_indices(members.size(), opt_.train_rows, opt_.seed);
    for (uint64_t& p : pick) p = members[p];
    return pick;
  }

  // The access-weighted mean (the plain mean without counts), as the writer's default tier.
  void decode_mean(const std::vector<uint64_t>& members, float* y) const {
    std::vector<double> sum(dim_, 0.0);
    double w = 0;
    double mass = 0;
    for (uint64_t s : members) mass += freq_.empty() ? 0 : freq_[s];
    for (uint64_t s : members) {
      const double ws = mass > 0 ? freq_[s] : 1.0;
      for (uint64_t j = 0; j < dim_; ++j) sum[j] += ws * x_[s * dim_ + j];
      w += ws;
    }
    for (uint64_t s : members)
      for (uint64_t j = 0; j < dim_; ++j) y[s * dim_ + j] = static_cast<float>(sum[j] / w);
  }

  // A density rule's threshold is fitted on the tier's own rows, as the writer's.
  void decode_sparse(const SparseSpec& spec, const std::vector<uint64_t>& members, float* y) const {
    const auto dim = static_cast<uint32_t>(dim_);
    float threshold = spec.threshold;
    if (spec.rule == SparseRule::density) {
      const std::vector<float> train = gather(training_rows(members));
      threshold = sparse_fit_threshold(spec.density, train.data(), train.size() / dim_, dim, opt_.seed);
    }
    const std::vector<float> x = gather(members);
    std::vector<float> out(x.size());
    sparse_round_trip(spec, threshold, x.data(), members.size(), dim, out.data());
    for (size_t k = 0; k < members.size(); ++k) std::copy_n(out.data() + k * dim_, dim_, y + members[k] * dim_);
  }

  struct Fitted {
    std::vector<float> centroids;
    std::vector<uint32_t> assign;  // per member
  };

  // The writer's k-means of the tier's training rows, each row mapped to its nearest centroid.
  Fitted fit_centroids(uint64_t count, const std::vector<uint64_t>& members) const {
    const std::vector<uint64_t> train = training_rows(members);
    if (train.size() < count)
      EDO_FAIL("centroids:{} needs at least {} rows to fit, the tier has {} sample rows (raise --plan-sample-rows)",
               count, count, train.size());
    KmeansOptions ko;
    ko.seed = opt_.seed;
    Fitted f;
    f.centroids = kmeans(gather(train).data(), train.size(), dim_, count, ko);
    f.assign.resize(members.size());
    nearest_centroids(gather(members).data(), members.size(), dim_, f.centroids.data(), count, f.assign.data());
    return f;
  }

  void decode_centroids(size_t c, const std::vector<uint64_t>& members, Slice slice, float* y) {
    auto it = centroids_.find({c, slice});
    if (it == centroids_.end())
      it = centroids_.emplace(std::pair{c, slice}, fit_centroids(ladder_[c].centroids, members)).first;
    const Fitted& f = it->second;
    for (size_t k = 0; k < members.size(); ++k)
      std::copy_n(f.centroids.data() + f.assign[k] * dim_, dim_, y + members[k] * dim_);
  }

  // For each member, the nearest sample row outside the tier (the writer's
  // exact search over the original rows). A fallback is only ever the
  // coldest tier, so every other sample row is in a kept tier.
  std::vector<uint64_t> nearest_targets(Metric metric, const std::vector<uint64_t>& members) const {
    std::vector<uint64_t> kept;
    for (uint64_t s = 0, m = 0; s < x_.size() / dim_; ++s) {
      if (m < members.size() && members[m] == s)
        ++m;
      else
        kept.push_back(s);
    }
    if (kept.empty()) EDO_FAIL("nearest: no sample row is in a kept tier (raise --plan-sample-rows)");
    KnnOptions ko;
    ko.metric = metric;
    ko.k = 1;
    const std::vector<float> queries = gather(members);
    KnnSearch search(MatrixView{queries.data(), members.size(), dim_}, ko);
    const std::vector<float> rows = gather(kept);
    search.add(rows.data(), kept.size());
    const KnnResult r = search.finish();
    std::vector<uint64_t> targets(members.size());
    for (size_t i = 0; i < members.size(); ++i) {
      const int64_t k = r.ids_of(i)[0];
      targets[i] = kept[k >= 0 ? static_cast<size_t>(k) : 0];  // NaN scores: the first kept row, as the writer
    }
    return targets;
  }

  // Each member answered by its target as the target's tier decoded it.
  void decode_nearest(size_t c, const std::vector<uint64_t>& members, Slice slice, float* y) {
    auto it = targets_.find({c, slice});
    if (it == targets_.end())
      it = targets_.emplace(std::pair{c, slice}, nearest_targets(ladder_[c].metric, members)).first;
    for (size_t k = 0; k < members.size(); ++k) std::copy_n(y + it->second[k] * dim_, dim_, y + members[k] * dim_);
  }

  // A hashed or group tier fitted by its writer to the tier's sample rows,
  // written to a temporary file and read back. A hash's buckets are scaled
  // by the share of the tier's rows in the sample, so that a bucket holds
  // as many rows as it will in the file (collisions set a hash's error); a
  // group tier keeps its C clusters, fitted to the sample rows as
  // centroids:C is (optimistic when the sample has few rows a group).
  std::vector<float> fit_shared(const LadderCodec& lc, const std::vector<uint64_t>& members, Slice slice) const {
    const uint64_t n = members.size();
    std::string spec = lc.spec;
    if (lc.kind == TierKind::hashed) {
      if (n < 2) EDO_FAIL("{}: the tier has {} sample rows, a fit needs 2 (raise --plan-sample-rows)", lc.spec, n);
      HashSpec h = lc.hash;
      const double share = static_cast<double>(n) / static_cast<double>(slice.second - slice.first);
      h.buckets =
          std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(static_cast<double>(h.buckets) * share)), 1, n - 1);
      spec = format_hash_spec(h);
    } else if (n < lc.groups) {
      EDO_FAIL("{} needs at least {} rows to fit, the tier has {} sample rows (raise --plan-sample-rows)", lc.spec,
               lc.groups, n);
    }
    const std::vector<float> x = gather(members);
    io::MemoryTable table("plan sample", {x.data(), n, dim_});
    PackOptions po;
    po.tool = "edo-pack --plan";
    po.seed = opt_.seed;
    po.train_rows = opt_.train_rows;
    po.hash_fit.allow_partial = true;  // the sample's fit, not the file's: its error is what the plan measures
    po.tiers = {parse_tier_spec("all:rest:" + spec)};
    if (!freq_.empty())
      for (uint64_t m : members) po.freq.push_back(freq_[m]);
    static std::atomic<uint64_t> serial{0};
    const std::filesystem::path path =
        std::filesystem::temp_directory_path() / fmt::format("edo-plan-{}-{}.edo", ::getpid(), serial++);
    struct Remove {
      const std::filesystem::path& p;
      ~Remove() {
        std::error_code ec;
        std::filesystem::remove(p, ec);
      }
    } remove{path};
    try {
      pack_to_edo(table, path.string(), po);
    } catch (const Error& e) {
      EDO_FAIL("{}: {}", lc.spec, e.what());  // a candidate's failure, not the plan's (usage errors included)
    }
    std::vector<float> y(n * dim_);
    Reader::open(path.string()).decode_all(y.data());
    return y;
  }

  // The members decoded by the codec trained on the tier's training rows, as the writer trains it.
  std::vector<float> fit_tier_codec(const LadderCodec& lc, const std::vector<uint64_t>& members) const {
    const std::vector<float> train = gather(training_rows(members));
    const std::unique_ptr<Codec> codec = make_codec(lc.spec, dim_);
    codec->train(train.data(), train.size() / dim_, opt_.seed);
    const std::vector<float> rows = gather(members);
    return round_trip(*codec, rows.data(), members.size());
  }

  void decode_shared(size_t c, const std::vector<uint64_t>& members, Slice slice, float* y) {
    auto it = shared_.find({c, slice});
    if (it == shared_.end()) it = shared_.emplace(std::pair{c, slice}, fit_shared(ladder_[c], members, slice)).first;
    for (size_t k = 0; k < members.size(); ++k) std::copy_n(it->second.data() + k * dim_, dim_, y + members[k] * dim_);
  }

  const std::vector<LadderCodec>& ladder_;
  const std::vector<float>& x_;
  const std::vector<double>& freq_;
  uint64_t dim_;
  const PlanOptions& opt_;
  std::map<std::pair<size_t, Slice>, std::vector<float>> shared_;
  std::map<std::pair<size_t, Slice>, std::vector<float>> tier_trained_;
  std::map<std::pair<size_t, Slice>, Fitted> centroids_;
  std::map<std::pair<size_t, Slice>, std::vector<uint64_t>> targets_;
};

// With frequencies, a budget metric without "w." is read as its access-weighted form.
std::vector<Gate> weighted_budget(const PlanOptions& opt) {
  std::vector<Gate> budget;
  for (Gate g : opt.budget) {
    if (!opt.freq.empty() && !g.metric.starts_with("w.")) {
      g.metric = "w." + g.metric;
      g.expression = fmt::format("{} {} {}", g.metric, gate_op_text(g.op), g.threshold);
    }
    budget.push_back(g);
  }
  return budget;
}

PlanSample draw_sample(io::TableReader& table, const PlanOptions& opt, const std::vector<uint64_t>& order) {
  const uint64_t rows = table.rows(), dim = table.dim();
  std::vector<uint64_t> position(rows);
  for (uint64_t k = 0; k < rows; ++k) position[order[k]] = k;
  PlanSample s;
  s.ids = sample_indices(rows, opt.sample_rows, opt.seed);
  const uint64_t n = s.ids.size();
  s.x.resize(n * dim);
  s.position.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    table.read_f32(s.ids[i], 1, s.x.data() + i * dim);
    s.position[i] = position[s.ids[i]];
    if (!opt.freq.empty()) s.freq.push_back(opt.freq[s.ids[i]]);
  }
  if (!opt.freq.empty() && !(std::accumulate(s.freq.begin(), s.freq.end(), 0.0) > 0))
    EDO_FAIL("plan: every sampled row has frequency 0; raise --sample-rows");
  return s;
}

// Every candidate with its cuts and bytes; those within the caps, cheapest
// first (with a byte cap, most bytes first: the best under the cap wins).
std::vector<Candidate> eligible_candidates(const std::vector<LadderCodec>& ladder, const std::vector<uint64_t>& order,
                                           const PlanOptions& opt, PlanResult& res) {
  std::vector<Candidate> cands = generate(ladder, opt.cuts);
  const uint64_t rows = order.size();
  const std::vector<double> no_weights;
  // The id map the writer would store for each set of cuts (runs when the
  // tiers fall in few runs of ids, else the packed map), shared by every
  // candidate with those cuts.
  std::map<std::vector<uint64_t>, uint64_t> map_bytes;
  for (Candidate& c : cands) {
    c.cuts = tier_cuts(c.tiers, order, no_weights);
    const size_t ntiers = c.tiers.size();
    c.bytes = 0;
    if (ntiers > 1) {
      auto [it, fresh] = map_bytes.try_emplace(c.cuts, 0);
      if (fresh) it->second = id_map_bytes(tier_of_rows(order, c.cuts).data(), rows, ntiers);
      c.bytes = it->second;
    }
    for (size_t t = 0; t < ntiers; ++t) {
      const uint64_t b = ladder[c.codec[t]].tier_bytes(c.cuts[t + 1] - c.cuts[t]);
      c.bytes += b;
      if (c.tiers[t].residency == Residency::gpu) c.gpu_bytes += b;
    }
  }
  res.candidates = cands.size();
  res.smallest_bytes = UINT64_MAX;
  for (const Candidate& c : cands) res.smallest_bytes = std::min(res.smallest_bytes, c.bytes);
  std::vector<Candidate> eligible;
  for (Candidate& c : cands) {
    if ((opt.max_bytes && c.bytes > opt.max_bytes) || (opt.gpu_bytes && c.gpu_bytes > opt.gpu_bytes))
      ++res.over_cap;
    else
      eligible.push_back(std::move(c));
  }
  std::stable_sort(eligible.begin(), eligible.end(), [&](const Candidate& a, const Candidate& b) {
    return opt.max_bytes ? a.bytes > b.bytes : a.bytes < b.bytes;
  });
  return eligible;
}

// Evaluates candidates on the sample, skipping those no more precise than
// one ruled out, and keeps the best that passes in `res`. Under a budget a
// plan is ruled out when it fails (a plan no more precise fails too); under
// a byte cap every evaluated plan is (one no more precise cannot have a
// larger margin, and the best so far has at least its margin).
// Plans evaluated at most under a byte cap (CandidateSearch::run).
constexpr size_t kCapEvaluations = 256;

class CandidateSearch {
 public:
  CandidateSearch(const std::vector<Candidate>& eligible, const std::vector<LadderCodec>& ladder,
                  const PlanSample& sample, uint64_t dim, const PlanOptions& opt, PlanResult& res,
                  std::vector<Gate> budget)
      : budget_(std::move(budget)),
        eligible_(eligible),
        sample_(sample),
        dim_(dim),
        opt_(opt),
        res_(res),
        ladder_(ladder),
        codecs_(ladder, sample.x, sample.freq, dim, opt),
        original_("plan sample", {sample.x.data(), sample.ids.size(), dim}),
        y_(sample.x.size()),
        seen_(eligible.size(), false) {
    eo_.metric = opt.metric;
    eo_.ks = ks_of(budget_);
    eo_.queries = opt.queries;
    eo_.seed = opt.seed;
    eo_.freq = sample.freq;
  }

  // Under a budget, probes first: for each codec as the coldest, its most
  // precise candidate. A probe that fails rules out every plan no more
  // precise than it, which in practice is most of the plans that end in that
  // codec. Then the rest, cheapest first, until nothing cheaper than the best
  // remains. Under a byte cap, the largest plans first: each evaluated plan
  // rules out the cheaper plans no more precise than it (on GloVe with the
  // default ladder and --max-bytes 250000: 4,147 evaluations in 108 s before,
  // 1,353 in 41 s, the chosen plan's w.recall@10 0.9467 against 0.9472).
  //
  // Under a byte cap only the kCapEvaluations plans of least estimated error
  // are evaluated (least_estimated_error(): each sample row's squared norm times
  // its tier's codec's squared relative error on the sample, by the row's
  // count): a loose cap admits thousands of plans (a 5,000 x 32 table at
  // ratio>=2: 18,225, of which 5,831 were evaluated in 100 s), nearly all of
  // them far from the cap's most precise end.
  void run(size_t ladder_size) {
    if (opt_.max_bytes) {
      for (const size_t i : least_estimated_error(kCapEvaluations)) try_candidate(i);
      rescore_near_ties();
      return;
    }
    for (size_t last = ladder_size; last-- > 0;) {
      std::optional<size_t> probe;
      for (size_t i = 0; i < eligible_.size(); ++i)
        if (eligible_[i].codec.back() == last && (!probe || eligible_[i].bytes > eligible_[*probe].bytes)) probe = i;
      if (probe) try_candidate(*probe);
    }
    for (size_t i = 0; i < eligible_.size(); ++i) {
      if (eligible_[i].bytes >= best_bytes_) break;
      if (!seen_[i]) try_candidate(i);
    }
  }

 private:
  // The indices of the `limit` eligible plans of least estimated error
  // (ties: the larger plan), in the order the search has always taken them
  // under a cap: from the end of eligible_, the smallest plan first.
  std::vector<size_t> least_estimated_error(size_t limit) const {
    const uint64_t n = sample_.ids.size();
    std::vector<double> weight(n);
    for (uint64_t s = 0; s < n; ++s) {
      double norm2 = 0;
      for (uint64_t j = 0; j < dim_; ++j)
        norm2 += static_cast<double>(sample_.x[s * dim_ + j]) * sample_.x[s * dim_ + j];
      weight[s] = norm2 * (sample_.freq.empty() ? 1.0 : sample_.freq[s]);
    }
    std::vector<double> estimate(eligible_.size(), 0.0);
    for (size_t i = 0; i < eligible_.size(); ++i) {
      const Candidate& c = eligible_[i];
      for (uint64_t s = 0; s < n; ++s) {
        const auto t = static_cast<size_t>(std::upper_bound(c.cuts.begin(), c.cuts.end(), sample_.position[s]) -
                                           c.cuts.begin() - 1);
        const double e = ladder_[c.codec[t]].sample_error;
        estimate[i] += weight[s] * e * e;
      }
      // A codec that refused the sample (error HUGE_VAL) on a zero row, or a
      // non-finite value: last, and never a NaN in the sort.
      if (!(estimate[i] < HUGE_VAL)) estimate[i] = HUGE_VAL;
    }
    std::vector<size_t> order(eligible_.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return estimate[a] < estimate[b]; });
    order.resize(std::min(limit, order.size()));
    std::sort(order.begin(), order.end(), std::greater<>());
    return order;
  }

  void try_candidate(size_t i) {
    const Candidate& c = eligible_[i];
    seen_[i] = true;
    if (opt_.progress) opt_.progress(++done_, eligible_.size());
    if (std::any_of(ruled_out_.begin(), ruled_out_.end(),
                    [&](const Candidate* f) { return no_more_precise(ladder_, c, *f); })) {
      ++res_.dominated;
      return;
    }
    PlanCandidate pc;
    pc.tiers = c.tiers;
    pc.bytes = c.bytes;
    pc.gpu_bytes = c.gpu_bytes;
    try {
      evaluate_candidate(c, pc);
    } catch (const Error& e) {
      if (e.code() == ExitCode::usage) throw;  // a budget naming an unknown metric
      pc.error = e.what();
    }
    res_.tried.push_back(std::move(pc));
    tried_index_.push_back(i);
  }

  // Under a cap the plan of the largest margin wins; plans within the
  // sample's confidence interval of it (two standard errors of its recall
  // over the queries' k neighbours, at least 0.001) are evaluated again with
  // four times the queries (the sample's rows at most; the 16 closest), and
  // the largest margin there wins, the smaller plan on a tie
  // (PlanCandidate::rescored).
  static constexpr size_t kMaxRescored = 16;
  void rescore_near_ties() {
    if (res_.chosen < 0 || eo_.ks.empty()) return;
    const PlanCandidate& best = res_.tried[static_cast<size_t>(res_.chosen)];
    if (best.metrics.empty()) return;
    const double found =
        static_cast<double>(std::min<uint64_t>(eo_.queries, sample_.ids.size())) * static_cast<double>(eo_.ks.front());
    const double window = recall_tie_window(best.metrics.front().second, found);
    std::vector<size_t> tied;
    for (size_t k = 0; k < res_.tried.size(); ++k)
      if (res_.tried[k].passed && !res_.tried[k].metrics.empty() &&
          res_.tried[k].metrics.front().second >= best.metrics.front().second - window)
        tied.push_back(k);
    if (tied.size() < 2 || eo_.queries >= sample_.ids.size()) return;
    // The closest kMaxRescored of them: each is a k-NN search over the sample.
    std::stable_sort(tied.begin(), tied.end(), [&](size_t a, size_t b) {
      return res_.tried[a].metrics.front().second > res_.tried[b].metrics.front().second;
    });
    if (tied.size() > kMaxRescored) tied.resize(kMaxRescored);
    const uint64_t queries_before = eo_.queries;
    eo_.queries = std::min<uint64_t>(queries_before * 4, sample_.ids.size());
    std::optional<size_t> pick;
    for (const size_t k : tied) {
      PlanCandidate again;
      evaluate_candidate(eligible_[tried_index_[k]], again, false);
      res_.tried[k].rescored = again.metrics.front().second;
      if (!pick || *res_.tried[k].rescored > *res_.tried[*pick].rescored ||
          (*res_.tried[k].rescored == *res_.tried[*pick].rescored && res_.tried[k].bytes < res_.tried[*pick].bytes))
        pick = k;
    }
    eo_.queries = queries_before;
    res_.chosen = static_cast<int>(*pick);
    res_.rescored_queries = std::min<uint64_t>(queries_before * 4, sample_.ids.size());
  }

  // `choose`: false to score only (a near-tie's second evaluation).
  void evaluate_candidate(const Candidate& c, PlanCandidate& pc, bool choose = true) {
    const uint64_t n = sample_.ids.size();
    std::vector<std::vector<uint64_t>> members(c.tiers.size());
    for (uint64_t s = 0; s < n; ++s)
      members[static_cast<size_t>(std::upper_bound(c.cuts.begin(), c.cuts.end(), sample_.position[s]) - c.cuts.begin() -
                                  1)]
          .push_back(s);
    for (size_t t = 0; t < c.tiers.size(); ++t)
      codecs_.decode(c.codec[t], members[t], {c.cuts[t], c.cuts[t + 1]}, y_.data());
    io::MemoryTable decoded("plan candidate", {y_.data(), n, dim_});
    const EvalResult r = evaluate(original_, decoded, eo_);
    const std::vector<GateOutcome> outcomes = check_gates(budget_, r);
    pc.evaluated = true;
    pc.passed = all_passed(outcomes);
    double margin = HUGE_VAL;
    for (const GateOutcome& o : outcomes) {
      pc.metrics.emplace_back(o.gate.metric, o.value);
      margin = std::min(margin, o.margin);
    }
    if (!choose) return;
    if (!pc.passed || opt_.max_bytes) ruled_out_.push_back(&c);
    // Under a cap the larger margin wins, the smaller plan on a tie.
    const bool better = opt_.max_bytes ? margin > best_margin_ || (margin == best_margin_ && c.bytes < best_bytes_)
                                       : c.bytes < best_bytes_;
    if (pc.passed && (res_.chosen < 0 || better)) {
      res_.chosen = static_cast<int>(res_.tried.size());
      best_margin_ = margin;
      best_bytes_ = c.bytes;
    }
  }

  std::vector<Gate> budget_;  // the sample's budget: the user's, tightened by whole-table checks
  const std::vector<Candidate>& eligible_;
  const PlanSample& sample_;
  uint64_t dim_;
  const PlanOptions& opt_;
  PlanResult& res_;
  const std::vector<LadderCodec>& ladder_;
  SampleCodecs codecs_;
  io::MemoryTable original_;
  EvalOptions eo_;
  std::vector<float> y_;
  std::vector<const Candidate*> ruled_out_;
  std::vector<bool> seen_;
  std::vector<size_t> tried_index_;  // each res_.tried entry's index in eligible_
  double best_margin_ = -HUGE_VAL;
  uint64_t best_bytes_ = UINT64_MAX;
  uint64_t done_ = 0;
};

// The range a metric's values lie in, where it has one: recall in [0, 1],
// cosines in [-1, 1]. A budget outside it can never be met.
std::optional<std::pair<double, double>> metric_range(std::string_view metric) {
  if (metric.starts_with("w.")) metric.remove_prefix(2);
  if (metric.starts_with("recall@")) return std::pair{0.0, 1.0};
  if (metric.starts_with("cos.")) return std::pair{-1.0, 1.0};
  return std::nullopt;
}

// Usage error for a budget no plan can meet ('recall@10>=3'), before any
// candidate is evaluated.
void check_reachable(const std::vector<Gate>& budget) {
  for (const Gate& g : budget) {
    const auto range = metric_range(g.metric);
    if (!range) continue;
    const auto [lo, hi] = *range;
    const bool never = (g.op == GateOp::ge && g.threshold > hi) || (g.op == GateOp::gt && g.threshold >= hi) ||
                       (g.op == GateOp::le && g.threshold < lo) || (g.op == GateOp::lt && g.threshold <= lo) ||
                       (g.op == GateOp::eq && (g.threshold < lo || g.threshold > hi));
    if (never)
      EDO_USAGE_FAIL("budget '{}': {} lies between {} and {}, so no plan can meet it", g.expression, g.metric, lo, hi);
  }
}

// The chosen plan packed on the whole table (a temporary file) and evaluated
// there as edo-pack --eval evaluates it: what the plan promises is what the
// packed file delivers.
PlanCheck check_on_table(io::TableReader& table, const PlanOptions& opt, const PlanResult& res,
                         const PlanCandidate& chosen) {
  PlanCheck check;
  check.tiers = chosen.tiers;
  check.planned = chosen.metrics;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path =
      fmt::format("{}/.edo-plan-check-{}-{}.edo", tmp && *tmp ? tmp : "/tmp", ::getpid(), res.checks.size());
  const io::CleanupOnSignal cleanup(path);
  struct Remove {
    const std::string& path;
    ~Remove() { ::unlink(path.c_str()); }
  } remove{path};
  PackOptions po;
  po.tool = "edo-profile --plan";
  po.tiers = chosen.tiers;
  po.freq = opt.freq;
  po.seed = opt.seed;
  po.train_rows = opt.train_rows;
  (void)pack_to_edo(table, path, po);
  const std::unique_ptr<io::TableReader> packed = open_any_table(path);
  EvalOptions eo;
  eo.metric = opt.metric;
  eo.ks = ks_of(res.budget);
  eo.queries = opt.queries;
  eo.seed = opt.seed;
  eo.freq = opt.freq;
  const std::vector<GateOutcome> outcomes = check_gates(res.budget, evaluate(table, *packed, eo));
  for (const GateOutcome& o : outcomes) check.measured.emplace_back(o.gate.metric, o.value);
  check.passed = all_passed(outcomes);
  return check;
}

// The sample's budget after a whole-table check that fell short: each gate
// the packed file missed moves by what the sample overstated it by (and a
// little more), so the next search asks the sample for that much more.
std::vector<Gate> tightened(const std::vector<Gate>& search, const PlanCheck& check) {
  std::vector<Gate> out = search;
  for (size_t j = 0; j < out.size() && j < check.planned.size() && j < check.measured.size(); ++j) {
    const double planned = check.planned[j].second, measured = check.measured[j].second;
    if (!std::isfinite(planned) || !std::isfinite(measured)) continue;
    const double gap = std::fabs(planned - measured) + 1e-4;
    Gate& g = out[j];
    const bool higher = g.op == GateOp::ge || g.op == GateOp::gt;
    const bool lower = g.op == GateOp::le || g.op == GateOp::lt;
    if (higher && planned > measured) g.threshold += gap;
    if (lower && planned < measured) g.threshold -= gap;
    g.expression = fmt::format("{} {} {}", g.metric, gate_op_text(g.op), g.threshold);
  }
  return out;
}

}  // namespace

PlanResult plan_tiers(io::TableReader& table, const PlanOptions& opt) {
  const uint64_t rows = table.rows(), dim = table.dim();
  if (opt.budget.empty()) EDO_USAGE_FAIL("plan: no budget given (e.g. --budget 'recall@10>=0.98')");
  if (!opt.freq.empty() && opt.freq.size() != rows)
    EDO_USAGE_FAIL("plan: {} frequencies for {} rows of {}", opt.freq.size(), rows, table.path());
  if (rows < 2) EDO_USAGE_FAIL("{}: planning needs at least 2 rows", table.path());
  PlanResult res;
  res.rows = rows;
  res.dim = dim;
  res.fp32_bytes = rows * dim * 4;
  res.order = opt.freq.empty() ? "norm" : "frequency";
  res.budget = weighted_budget(opt);
  check_reachable(res.budget);
  if (opt.size_only && opt.max_bytes) {
    const std::string stored = detail::stored_codec(table.dtype());
    const uint64_t bytes = rows * code_size(stored, dim);
    if (bytes <= opt.max_bytes) {
      PlanCandidate c;
      c.tiers = {parse_tier_spec("all:rest:" + stored)};
      c.bytes = bytes;
      c.passed = true;
      res.tried.push_back(std::move(c));
      res.chosen = 0;
      res.candidates = 1;
      res.smallest_bytes = bytes;
      res.as_stored = true;
      return res;
    }
  }
  const std::vector<uint64_t> order =
      hot_order(opt.freq.empty() ? detail::digest_and_norms(table, true, io::kDefaultBlockBytes).norms : opt.freq);
  const PlanSample sample = draw_sample(table, opt, order);
  res.sample_rows = sample.ids.size();
  // A k the budget names at or beyond the sample's rows (the whole table's
  // are no fewer) counts every row as found, and any plan would pass:
  // refused before any work.
  for (const Gate& g : res.budget)
    if (const auto k = gate_k(g); k && opt.refuse_k_beyond_rows && *k >= sample.ids.size())
      EDO_USAGE_FAIL(
          "{}: budget '{}': k={} is not below the {} rows it is scored on (every row would count as found); give "
          "a smaller k",
          table.path(), g.expression, *k, sample.ids.size());
  const std::vector<LadderCodec> ladder = build_ladder(opt, sample, dim, rows, table.path(), table.dtype());
  for (const LadderCodec& l : ladder)
    res.ladder.push_back({l.spec, l.kind == TierKind::codec, l.code_size, l.state_bytes, l.sample_error});
  const std::vector<Candidate> eligible = eligible_candidates(ladder, order, opt, res);
  // The sample flatters: its neighbours are easier to find and trained
  // codecs fit the rows they are scored on. So the chosen plan is packed and
  // measured on the whole table, and while it falls short the sample's
  // budget is tightened by the shortfall and the search runs again.
  std::vector<Gate> search_budget = res.budget;
  const PlanResult before_search = res;
  for (uint32_t round = 0;; ++round) {
    PlanResult attempt = before_search;
    attempt.checks = res.checks;
    attempt.search_budget = search_budget;
    CandidateSearch(eligible, ladder, sample, dim, opt, attempt, search_budget).run(ladder.size());
    res = std::move(attempt);
    // After a check fell short, a search that finds nothing is the whole table's verdict.
    if (res.chosen < 0) res.unmet_on_table = round > 0;
    if (res.chosen < 0 || !opt.check_on_table) return res;
    res.checks.push_back(check_on_table(table, opt, res, res.tried[static_cast<size_t>(res.chosen)]));
    if (res.checks.back().passed) return res;
    if (round + 1 >= opt.max_check_rounds || opt.max_bytes) {
      // Under a byte cap the most accurate plan is already chosen: nothing tighter fits.
      res.unmet_on_table = true;
      res.chosen = -1;
      return res;
    }
    search_budget = tightened(search_budget, res.checks.back());
    if (opt.note) {
      std::string asked;
      for (const Gate& g : search_budget) asked += (asked.empty() ? "" : ", ") + g.expression;
      opt.note("plan: the chosen plan missed the budget on the whole table; searching the sample again for " + asked);
    }
  }
}

nlohmann::json plan_config(const PlanResult& plan) {
  if (plan.chosen < 0) EDO_FAIL("plan: no candidate met the budget");
  const PlanCandidate& c = plan.tried[static_cast<size_t>(plan.chosen)];
  nlohmann::json j = plan_to_json(c.tiers);
  nlohmann::json budget = nlohmann::json::array();
  for (const Gate& g : plan.budget) budget.push_back(g.expression);
  nlohmann::json metrics = nlohmann::json::object();
  for (const auto& [name, value] : c.metrics) metrics[name] = value;
  j["budget"] = budget;
  j["estimate"] = {{"bytes", c.bytes},
                   {"gpu_bytes", c.gpu_bytes},
                   {"fp32_bytes", plan.fp32_bytes},
                   {"data_ratio", static_cast<double>(plan.fp32_bytes) / static_cast<double>(c.bytes)},
                   {"sample_rows", plan.sample_rows},
                   {"row_order", plan.order},
                   {"metrics", metrics}};
  if (!plan.checks.empty() && plan.checks.back().passed) {
    nlohmann::json measured = nlohmann::json::object();
    for (const auto& [name, value] : plan.checks.back().measured) measured[name] = value;
    j["estimate"]["measured_on_table"] = measured;
  }
  return j;
}

namespace {

nlohmann::json metrics_json(const std::vector<std::pair<std::string, double>>& metrics) {
  nlohmann::json m = nlohmann::json::object();
  for (const auto& [name, value] : metrics) m[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
  return m;
}

std::string metrics_text(const std::vector<std::pair<std::string, double>>& metrics) {
  std::string out;
  for (const auto& [name, value] : metrics) out += fmt::format("{}{} {:.4f}", out.empty() ? "" : ", ", name, value);
  return out;
}

}  // namespace

nlohmann::json to_json(const PlanResult& plan) {
  nlohmann::json tried = nlohmann::json::array();
  for (const PlanCandidate& c : plan.tried) {
    nlohmann::json specs = nlohmann::json::array();
    for (const TierSpec& t : c.tiers) specs.push_back(format_tier_spec(t));
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [name, value] : c.metrics)
      metrics[name] = std::isfinite(value) ? nlohmann::json(value) : nlohmann::json();
    nlohmann::json jc = {
        {"tiers", specs}, {"bytes", c.bytes}, {"gpu_bytes", c.gpu_bytes}, {"passed", c.passed}, {"metrics", metrics}};
    if (!c.error.empty()) jc["error"] = c.error;
    if (c.rescored) jc["rescored"] = *c.rescored;
    tried.push_back(jc);
  }
  nlohmann::json budget = nlohmann::json::array();
  for (const Gate& g : plan.budget) budget.push_back(g.expression);
  nlohmann::json j = {{"row_order", plan.order},
                      {"rows", plan.rows},
                      {"dim", plan.dim},
                      {"fp32_bytes", plan.fp32_bytes},
                      {"sample_rows", plan.sample_rows},
                      {"budget", budget},
                      {"candidates", plan.candidates},
                      {"over_cap", plan.over_cap},
                      {"dominated", plan.dominated},
                      {"rescored_queries", plan.rescored_queries},
                      {"as_stored", plan.as_stored},
                      {"tried", tried}};
  j["chosen"] = plan.chosen >= 0 ? nlohmann::json(plan.chosen) : nlohmann::json();
  nlohmann::json search = nlohmann::json::array();
  for (const Gate& g : plan.search_budget) search.push_back(g.expression);
  j["sample_budget"] = search;
  nlohmann::json checks = nlohmann::json::array();
  for (const PlanCheck& c : plan.checks) {
    nlohmann::json specs = nlohmann::json::array();
    for (const TierSpec& t : c.tiers) specs.push_back(format_tier_spec(t));
    checks.push_back({{"tiers", specs},
                      {"planned", metrics_json(c.planned)},
                      {"measured", metrics_json(c.measured)},
                      {"passed", c.passed}});
  }
  j["checks_on_table"] = checks;
  j["unmet_on_table"] = plan.unmet_on_table;
  if (plan.chosen >= 0) j["config"] = plan_config(plan);
  return j;
}

std::string to_text(const PlanResult& plan) {
  if (plan.as_stored)
    return fmt::format("plan: the byte cap holds the table as stored, {} bytes of data: {} (no search)\n",
                       plan.tried.front().bytes, format_tier_spec(plan.tried.front().tiers.front()));
  std::string budget;
  for (const Gate& g : plan.budget) budget += (budget.empty() ? "" : ", ") + g.expression;
  std::string out = fmt::format(
      "plan: {} candidate plans, rows ordered by {}{}; evaluated on a {}-row seeded sample\n"
      "  budget: {}\n",
      plan.candidates, plan.order, plan.order == "norm" ? " (no --freq: row L2 norm is the proxy for access)" : "",
      plan.sample_rows, budget);
  out += fmt::format("  {:>3}  {:>12}  {:>6}  {:>6}  {:>10}  {:<4}  {}\n", "#", "bytes", "data x", "gpu%", "value",
                     "pass", "tiers");
  const double fp32 = static_cast<double>(plan.fp32_bytes);
  for (size_t i = 0; i < plan.tried.size(); ++i) {
    const PlanCandidate& c = plan.tried[i];
    std::string tiers;
    for (const TierSpec& t : c.tiers) tiers += (tiers.empty() ? "" : " ") + format_tier_spec(t);
    std::string value = c.metrics.empty() ? "-" : fmt::format("{:.4f}", c.metrics.front().second);
    if (c.rescored) value += fmt::format(" ({:.4f}*)", *c.rescored);
    out += fmt::format("  {:>3}  {:>12}  {:>5.2f}x  {:>5.1f}%  {:>10}  {:<4}  {}{}\n", i + 1, c.bytes,
                       fp32 / static_cast<double>(c.bytes), 100.0 * static_cast<double>(c.gpu_bytes) / fp32, value,
                       !c.error.empty() ? "err"
                       : c.passed       ? "yes"
                                        : "no",
                       tiers, c.error.empty() ? "" : "  (" + c.error + ")");
  }
  out += fmt::format(
      "  skipped: {} no more precise than a plan ruled out (failed, or under a byte cap evaluated), {} "
      "over the byte caps\n",
      plan.dominated, plan.over_cap);
  if (plan.rescored_queries)
    out += fmt::format("  * near-ties of the best, evaluated again with {} queries: the best there chosen\n",
                       plan.rescored_queries);
  for (size_t i = 0; i < plan.checks.size(); ++i) {
    const PlanCheck& c = plan.checks[i];
    std::string tiers;
    for (const TierSpec& t : c.tiers) tiers += (tiers.empty() ? "" : " ") + format_tier_spec(t);
    out += fmt::format("  whole-table check {}: {} -- sample {}; packed and measured {}: {}\n", i + 1, tiers,
                       metrics_text(c.planned), metrics_text(c.measured), c.passed ? "meets the budget" : "misses it");
  }
  if (plan.checks.size() > 1 || plan.unmet_on_table) {
    std::string asked;
    for (const Gate& g : plan.search_budget) asked += (asked.empty() ? "" : ", ") + g.expression;
    out += fmt::format("  the sample's budget was tightened to {}\n", asked);
  }
  if (plan.chosen < 0) {
    out +=
        plan.unmet_on_table ? "  chosen: none met the budget on the whole table\n" : "  chosen: none met the budget\n";
  } else {
    const PlanCandidate& c = plan.tried[static_cast<size_t>(plan.chosen)];
    out +=
        fmt::format("  chosen: #{}: {} bytes ({:.2f}x smaller than fp32, GPU part {:.1f}% of fp32)\n", plan.chosen + 1,
                    c.bytes, fp32 / static_cast<double>(c.bytes), 100.0 * static_cast<double>(c.gpu_bytes) / fp32);
    for (const TierSpec& t : c.tiers) out += "    --tier " + format_tier_spec(t) + "\n";
  }
  return out;
}

}  // namespace edo
