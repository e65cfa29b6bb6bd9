// SPDX-License-Identifier: Apache-2.0
// The one .edo writer: tier builders by kind, the streaming passes, the
// manifest, provenance and id map.
#include "pack_impl.hpp"

#include <edo/build_info.hpp>
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/io/vocab.hpp>
#include <edo/make_codec.hpp>
#include <edo/parallel.hpp>
#include <edo/random.hpp>
#include <edo/table_writer.hpp>

#include <sys/stat.h>
#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <numeric>

namespace edo {

uint64_t row_map_bytes(uint64_t rows, size_t tiers) {
  const uint64_t rank = (rows + io::kRowMapBlock - 1) / io::kRowMapBlock * tiers * sizeof(uint64_t);
  return rows + rank + (rows <= UINT32_MAX ? rows * sizeof(uint32_t) : 0);
}

std::vector<uint64_t> written_row_runs(const uint8_t* tier_of_row, uint64_t rows) {
  std::vector<uint64_t> runs = io::rowmap_runs(tier_of_row, rows, kMaxWrittenRuns);
  if (runs.empty() || runs.size() / 3 * io::kRowRunBytes > rows) return {};
  return runs;
}

uint64_t id_map_bytes(const uint8_t* tier_of_row, uint64_t rows, size_t tiers) {
  const std::vector<uint64_t> runs = written_row_runs(tier_of_row, rows);
  return runs.empty() ? row_map_bytes(rows, tiers) : runs.size() * sizeof(uint64_t);
}

double compression_ratio(uint64_t fp32_bytes, uint64_t file_bytes) {
  return file_bytes ? static_cast<double>(fp32_bytes) / static_cast<double>(file_bytes) : 0.0;
}

void TierBuilder::prepare(io::TableReader&, const TableLayout&, uint8_t) {}
void TierBuilder::train(const float*, size_t, const uint64_t*, uint64_t) {}

void TierBuilder::load_trained(const TrainedTier&) {
  EDO_USAGE_FAIL("--trained: tier kind '{}' keeps no trained state to load", codec());
}
void TierBuilder::begin(io::ContainerWriter&, const std::string&) {}

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A state array as a section in its storage; a non-float32 one is named in
// the tier's "state_dtypes" (FORMAT.md 9.8).
void add_state_section(io::ContainerWriter& writer, const std::string& name, const NamedBlob& blob,
                       nlohmann::json& dtypes) {
  const std::vector<uint8_t> bytes = state_section_bytes(blob);
  writer.add_section(name, bytes.data(), bytes.size());
  if (blob.storage != StateStorage::f32) dtypes[blob.name] = state_dtype_name(blob.storage);
}

std::string basename_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Where a file came from (FORMAT.md 5.1): the one provenance object of a
// table's file and of its trained state (which has no rows, so no digest).
nlohmann::json provenance(const io::TableReader& input, const WriteOptions& opt, std::optional<uint64_t> digest) {
  nlohmann::json p = {{"tool", opt.tool},
                      {"version", EDO_VERSION_STRING},
                      {"source", basename_of(input.path())},
                      {"source_dtype", io::dtype_name(input.dtype())},
                      {"parameters", opt.parameters},
                      {"seed", opt.seed}};
  if (digest) p["source_fp32_rows_xxh3"] = fmt::format("{:016x}", *digest);
  return p;
}

uint64_t file_size_of(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

EncodeOptions encode_options(const io::TableReader& input, const WriteOptions& opt) {
  EncodeOptions enc;
  enc.device = opt.device;
  enc.allow_nonfinite = opt.allow_nonfinite;
  enc.allow_underflow = opt.allow_underflow;
  enc.input = input.path();
  return enc;
}

// ---- codec tiers: one fixed-size code per row ---------------------------------------------

class CodecTierBuilder final : public TierBuilder {
 public:
  CodecTierBuilder(const std::string& spec, uint64_t dim, const EncodeOptions& enc,
                   const std::function<void(const std::string&)>& note)
      : codec_(make_codec(spec, dim)), dim_(dim), enc_(enc) {
    codec_->set_training_context({note, enc.device});
  }

  std::string codec() const override { return codec_->spec(); }
  uint64_t code_size() const override { return codec_->code_size(); }
  bool needs_training() const override { return codec_->needs_training(); }

  void train(const float* x, size_t n, const uint64_t* row_ids, uint64_t seed) override {
    check_trainable_norms(x, n, dim_, codec_->spec(), enc_, row_ids);
    codec_->train(x, n, seed);
  }

  std::vector<NamedBlob> trained_state() const override { return codec_->state(); }
  void load_trained(const TrainedTier& state) override { codec_->load_state(state.blobs); }

  void begin(io::ContainerWriter& writer, const std::string& prefix) override {
    rule_ = std::make_unique<MagnitudeRule>(*codec_, enc_);
    recon_ = std::make_unique<RowErrorStats>(dim_);
    writer_ = &writer;
    writer.begin_section(prefix + "codes");
  }

  void add(const float* x, size_t n, const uint64_t* row_ids, const double*) override {
    codes_.resize(n * codec_->code_size());
    decoded_.resize(n * dim_);
    EncodeOptions enc = enc_;
    enc.row_ids = row_ids;  // errors name table rows
    const auto t0 = Clock::now();
    codec_->encode(x, n, codes_.data(), enc);
    encode_seconds_ += seconds_since(t0);
    codec_->decode(codes_.data(), n, decoded_.data());
    add_recon(x, decoded_.data(), n, row_ids);
    rows_ += n;
    writer_->append(codes_.data(), codes_.size());
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    writer.end_section();
    uint64_t bytes = rows_ * codec_->code_size();
    nlohmann::json sections = {{"codes", prefix + "codes"}};
    nlohmann::json shapes = nlohmann::json::object(), dtypes = nlohmann::json::object();
    for (const NamedBlob& blob : codec_->state()) {
      const std::string name = prefix + blob.name;
      add_state_section(writer, name, blob, dtypes);
      sections[blob.name] = name;
      shapes[blob.name] = blob.shape;
      bytes += state_stored_bytes(blob);
    }
    entry.update({{"codec", codec_->spec()},
                  {"code_size", codec_->code_size()},
                  {"sections", sections},
                  {"state_shapes", shapes}});
    if (!dtypes.empty()) entry["state_dtypes"] = dtypes;
    return bytes;
  }

 private:
  // Row errors in parallel, added in row order; the magnitude rule judges
  // each row from the same sums (no pass of its own).
  void add_recon(const float* x, const float* y, size_t n, const uint64_t* row_ids) {
    errors_.resize(n);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim_))
    for (int64_t i = 0; i < static_cast<int64_t>(n); ++i)
      errors_[static_cast<size_t>(i)] =
          row_error(x + static_cast<uint64_t>(i) * dim_, y + static_cast<uint64_t>(i) * dim_, dim_);
    for (size_t i = 0; i < n; ++i) {
      const RowError& e = errors_[i];
      if (rule_->refuses(e.norm2, e.err2, e.decoded_norm2)) rule_->fail(row_ids[i], e.norm2, e.err2, e.decoded_norm2);
      recon_->add(e);
    }
  }

  std::unique_ptr<Codec> codec_;
  uint64_t dim_;
  EncodeOptions enc_;
  std::unique_ptr<MagnitudeRule> rule_;
  io::ContainerWriter* writer_ = nullptr;
  uint64_t rows_ = 0;
  std::vector<uint8_t> codes_;
  std::vector<float> decoded_;
  std::vector<RowError> errors_;
};

// ---- shared-vector tiers ("default"): the weighted mean of the tier's rows ----------------

class SharedVectorTierBuilder final : public TierBuilder {
 public:
  SharedVectorTierBuilder(uint64_t dim, const EncodeOptions& enc) : sum_(dim, 0.0), enc_(enc) {}

  std::string codec() const override { return tier_kind_word(TierKind::shared_vector); }
  // The mean is a sum over every row of the tier, in table order: a shard
  // loads the one a --train-only pass summed.
  ShardNeed shard_need() const override { return ShardNeed::tier; }

  void add(const float* x, size_t n, const uint64_t*, const double* weights) override {
    if (loaded_) return;
    const size_t dim = sum_.size();
    for (size_t i = 0; i < n; ++i) {
      const double w = weights ? weights[i] : 1.0;
      for (size_t j = 0; j < dim; ++j) sum_[j] += w * x[i * dim + j];
      weight_ += w;
    }
  }

  std::vector<NamedBlob> trained_state() const override { return {{"vector", {sum_.size()}, mean()}}; }

  void load_trained(const TrainedTier& state) override {
    if (state.blobs.size() != 1 || state.blobs[0].name != "vector" || state.blobs[0].values.size() != sum_.size())
      EDO_USAGE_FAIL("--trained: tier '{}' holds no vector of {} values", state.name, sum_.size());
    loaded_ = state.blobs[0].values;
  }

  uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) override {
    const std::vector<float> vec = loaded_ ? *loaded_ : mean();
    if (!std::all_of(vec.begin(), vec.end(), [](float v) { return std::isfinite(v); }))
      EDO_FAIL("{}: the mean of the tier's rows is not finite (the rows hold NaN/Inf)", enc_.input);
    writer.add_section(prefix + "vector", vec.data(), vec.size() * sizeof(float));
    entry.update({{"codec", codec()}, {"code_size", 0}, {"sections", {{"vector", prefix + "vector"}}}});
    return vec.size() * sizeof(float);
  }

 private:
  std::vector<float> mean() const {
    std::vector<float> vec(sum_.size(), 0.0f);
    for (size_t j = 0; j < vec.size(); ++j) vec[j] = weight_ > 0 ? static_cast<float>(sum_[j] / weight_) : 0.0f;
    return vec;
  }

  std::vector<double> sum_;
  double weight_ = 0;
  EncodeOptions enc_;
  std::optional<std::vector<float>> loaded_;
};

// ---- the passes --------------------------------------------------------------------------

// Calls fn(begin, n, x, mine) for each block [begin, begin + n) holding rows
// of tier t (every block when tier_of_row is empty), with `mine` the
// block-relative positions of those rows.
template <class Fn>
void for_tier_blocks(io::TableReader& input, const std::vector<uint8_t>& tier_of_row, uint8_t t, uint64_t block,
                     Fn&& fn) {
  const uint64_t rows = input.rows();
  std::vector<uint64_t> mine;
  for (uint64_t begin = 0; begin < rows; begin += block) {
    const uint64_t n = std::min(block, rows - begin);
    mine.clear();
    for (uint64_t i = 0; i < n; ++i)
      if (tier_of_row.empty() || tier_of_row[begin + i] == t) mine.push_back(i);
    if (!mine.empty()) fn(begin, n, input.rows_f32(begin, n), mine);
  }
}

// A seeded sample of tier t's rows (ranks within the tier mapped to table
// rows by one walk of the tier ids), read one row at a time.
std::vector<float> tier_sample(io::TableReader& input, const std::vector<uint8_t>& tier_of_row, uint8_t t,
                               uint64_t tier_rows, uint64_t want, uint64_t seed, std::vector<uint64_t>& sample_rows) {
  const uint64_t dim = input.dim();
  const std::vector<uint64_t> ranks = sample_indices(tier_rows, want, seed);
  std::vector<float> sample(ranks.size() * dim);
  sample_rows.assign(ranks.size(), 0);
  if (tier_of_row.empty()) {
    for (size_t i = 0; i < ranks.size(); ++i) {
      sample_rows[i] = ranks[i];
      input.read_f32(ranks[i], 1, sample.data() + i * dim);
    }
    return sample;
  }
  uint64_t rank = 0;
  size_t next = 0;
  for (uint64_t r = 0; r < input.rows() && next < ranks.size(); ++r) {
    if (tier_of_row[r] != t) continue;
    if (rank++ == ranks[next]) {
      sample_rows[next] = r;
      input.read_f32(r, 1, sample.data() + dim * next++);
    }
  }
  return sample;
}

struct PassState {
  io::TableReader& input;
  const TableLayout& layout;
  const WriteOptions& opt;
  io::ContainerWriter& writer;
  uint64_t* digest = nullptr;  // summing the rows' digest in this pass (one tier), or null
  std::vector<double> masses;  // each tier's share of the accesses
  uint64_t written = 0;
};

// The state tier t loads instead of training or fitting (--trained), or null.
const TrainedTier* loaded_state(const WriteOptions& opt, uint8_t t) {
  if (!opt.trained || t >= opt.trained->size()) return nullptr;
  const TrainedTier& s = (*opt.trained)[t];
  return s.holds_state() ? &s : nullptr;
}

// Loads tier t's state when given one, then prepare(), with the whole table
// and layout when the pass writes a shard.
void load_and_prepare(PassState& ps, uint8_t t, TierBuilder& builder, const TrainedTier* loaded) {
  if (loaded) builder.load_trained(*loaded);
  builder.prepare(ps.opt.whole_table ? *ps.opt.whole_table : ps.input,
                  ps.opt.whole_layout ? *ps.opt.whole_layout : ps.layout, t);
}

// Trains tier t's builder on the seeded sample of the tier's rows; returns the seconds.
double train_tier(PassState& ps, uint8_t t, TierBuilder& builder, uint64_t tier_rows) {
  const TierPlan& plan = ps.layout.tiers[t];
  if (tier_rows == 0)
    EDO_USAGE_FAIL("tier '{}': codec '{}' needs training but the tier has no rows", plan.name, builder.codec());
  const auto t0 = Clock::now();
  std::vector<uint64_t> sample_rows;
  const std::vector<float> sample =
      tier_sample(ps.input, ps.layout.tier_of_row, t, tier_rows, ps.opt.train_rows, ps.opt.seed, sample_rows);
  try {
    builder.train(sample.data(), sample_rows.size(), sample_rows.data(), ps.opt.seed);
  } catch (const Error& e) {
    if (ps.layout.tiers.size() == 1) throw;
    EDO_FAIL("tier '{}': codec '{}' cannot train on the tier's {} rows: {}", plan.name, builder.codec(),
             sample_rows.size(), e.what());
  }
  return seconds_since(t0);
}

// Streams tier t's rows through builder.add(), block by block in table
// order, weighted by their access counts when the tier is looked up at all.
void stream_tier(PassState& ps, uint8_t t, TierBuilder& builder) {
  const TierPlan& plan = ps.layout.tiers[t];
  const bool many = ps.layout.tiers.size() > 1;
  const uint64_t dim = ps.input.dim(), block = ps.input.block_rows(ps.opt.block_bytes);
  const std::vector<double>& freq = ps.layout.freq;
  const bool weighted = ps.masses[t] > 0;  // the table's counts sum above 0 and reach this tier
  std::vector<float> gathered;
  std::vector<uint64_t> row_ids;
  std::vector<double> weights;
  for_tier_blocks(ps.input, ps.layout.tier_of_row, t, block,
                  [&](uint64_t begin, uint64_t n, const float* x, const std::vector<uint64_t>& mine) {
                    if (ps.digest) *ps.digest += detail::rows_digest(x, n, dim, ps.opt.first_row + begin);
                    const float* src = x;
                    if (mine.size() != n) {
                      gathered.resize(mine.size() * dim);
                      for (size_t k = 0; k < mine.size(); ++k)
                        std::copy_n(x + mine[k] * dim, dim, gathered.data() + k * dim);
                      src = gathered.data();
                    }
                    row_ids.clear();
                    weights.clear();
                    for (uint64_t i : mine) {
                      row_ids.push_back(ps.opt.first_row + begin + i);
                      if (weighted) weights.push_back(freq[begin + i]);
                    }
                    try {
                      builder.add(src, mine.size(), row_ids.data(), weighted ? weights.data() : nullptr);
                    } catch (const Error& e) {
                      if (!many) throw;
                      EDO_FAIL("{} (tier '{}')", e.what(), plan.name);
                    }
                    ps.written += mine.size();
                    if (ps.opt.progress) ps.opt.progress(ps.written, ps.input.rows());
                  });
}

uint64_t rows_of_tier(const TableLayout& layout, uint64_t rows, uint8_t t) {
  return layout.tier_of_row.empty()
             ? rows
             : static_cast<uint64_t>(std::count(layout.tier_of_row.begin(), layout.tier_of_row.end(), t));
}

// Trains (when the kind needs it and no state was loaded) and streams tier t through its builder.
TierWriteReport write_tier(PassState& ps, uint8_t t, TierBuilder& builder, nlohmann::json& entry) {
  const TierPlan& plan = ps.layout.tiers[t];
  TierWriteReport tr;
  tr.name = plan.name;
  tr.residency = plan.residency;
  tr.codec = builder.codec();
  tr.code_size = builder.code_size();
  tr.rows = rows_of_tier(ps.layout, ps.input.rows(), t);
  const TrainedTier* loaded = loaded_state(ps.opt, t);
  load_and_prepare(ps, t, builder, loaded);
  if (!checked_mul(tr.rows, tr.code_size))
    EDO_FAIL("{}: {} rows of {} bytes overflow", ps.writer.path(), tr.rows, tr.code_size);
  if (!loaded && builder.needs_training()) tr.train_seconds = train_tier(ps, t, builder, tr.rows);
  tr.mass = ps.masses[t];
  const std::string prefix = plan.name + "/";
  builder.begin(ps.writer, prefix);
  stream_tier(ps, t, builder);
  entry = {{"name", plan.name}, {"rows", tr.rows}, {"residency", residency_name(plan.residency)}};
  if (!plan.share.empty()) entry["share"] = plan.share;
  // Masses sum to 1 when the whole table's counts sum above 0 (a shard's own may not).
  if (std::any_of(ps.masses.begin(), ps.masses.end(), [](double m) { return m > 0; })) entry["mass"] = tr.mass;
  tr.bytes = builder.finish(ps.writer, prefix, entry);
  tr.sections = builder.section_bytes();
  tr.notes = builder.report_notes();
  if (const uint64_t dense = builder.dense_bytes(); dense > 0 && tr.bytes > dense && !ps.opt.allow_larger_sparse)
    EDO_FAIL(
        "tier '{}': {} takes {} bytes, more than the {} bytes of the same rows stored dense at the same value "
        "precision; nothing written (--force writes it anyway)",
        plan.name, tr.codec, tr.bytes, dense);
  tr.encode_seconds = builder.encode_seconds();
  tr.recon = builder.recon();
  return tr;
}

}  // namespace

std::vector<float> detail::training_sample(io::TableReader& input, uint64_t want, uint64_t seed,
                                           std::vector<uint64_t>& sample_rows) {
  return tier_sample(input, {}, 0, input.rows(), want, seed, sample_rows);
}

// Each row's index within its tier, u32 little-endian, streamed in 64 KiB pieces.
void detail::write_local_indices(io::ContainerWriter& writer, const std::vector<uint8_t>& tier_of_row, size_t ntiers) {
  static_assert(std::endian::native == std::endian::little, "the local section is little-endian u32");
  std::vector<uint32_t> next(ntiers, 0), piece;
  writer.begin_section("rowmap/local");
  for (uint64_t r0 = 0; r0 < tier_of_row.size(); r0 += 16384) {
    const uint64_t m = std::min<uint64_t>(16384, tier_of_row.size() - r0);
    piece.resize(m);
    for (uint64_t i = 0; i < m; ++i) piece[i] = next[tier_of_row[r0 + i]]++;
    writer.append(piece.data(), m * sizeof(uint32_t));
  }
  writer.end_section();
}

std::vector<double> tier_masses(const std::vector<double>& freq, const std::vector<uint8_t>& tier_of_row,
                                size_t ntiers) {
  std::vector<double> mass(ntiers, 0.0);
  const double total = std::accumulate(freq.begin(), freq.end(), 0.0);
  if (!(total > 0)) return mass;
  for (size_t t = 0; t < ntiers; ++t)
    for (uint64_t r = 0; r < freq.size(); ++r)
      if (tier_of_row.empty() || tier_of_row[r] == t) mass[t] += freq[r] / total;
  return mass;
}

void write_trained_layout(io::TableReader& input, const std::string& out_path, const TableLayout& layout,
                          const WriteOptions& opt) {
  const EncodeOptions enc = encode_options(input, opt);
  io::ContainerWriter writer(out_path);
  PassState ps{input, layout, opt, writer, nullptr, tier_masses(layout.freq, layout.tier_of_row, layout.tiers.size())};
  nlohmann::json tiers = nlohmann::json::array();
  bool any = false;
  for (uint8_t t = 0; t < layout.tiers.size(); ++t) {
    const TierPlan& plan = layout.tiers[t];
    auto builder =
        make_tier_builder(resolve_tier_field(plan.codec, input.dtype()), input.dim(), enc, opt.hash_fit, opt.note);
    const ShardNeed need = builder->shard_need();
    if (need == ShardNeed::unshardable)
      EDO_USAGE_FAIL(
          "tier '{}' ({}): its rows depend on the whole tier (a group tier's groups, a lossless tier's segment "
          "codes), so it does not shard",
          plan.name, plan.codec);
    const bool keeps_state = need == ShardNeed::sample || need == ShardNeed::tier;
    if (keeps_state) {
      load_and_prepare(ps, t, *builder, nullptr);
      if (need == ShardNeed::sample)
        train_tier(ps, t, *builder, rows_of_tier(layout, input.rows(), t));
      else
        stream_tier(ps, t, *builder);  // the global phase: every row of the tier, once
      any = true;
    }
    // Each state array as a section of its own, its shape beside it (FORMAT.md 9.8).
    const std::string prefix = plan.name + "/";
    nlohmann::json sections = nlohmann::json::object(), shapes = nlohmann::json::object(),
                   dtypes = nlohmann::json::object();
    if (keeps_state)
      for (const NamedBlob& blob : builder->trained_state()) {
        add_state_section(writer, prefix + blob.name, blob, dtypes);
        sections[blob.name] = prefix + blob.name;
        shapes[blob.name] = blob.shape;
      }
    nlohmann::json entry = {{"name", plan.name},         {"rows", 0},
                            {"codec", builder->codec()}, {"residency", residency_name(plan.residency)},
                            {"sections", sections},      {"state_shapes", shapes}};
    if (!dtypes.empty()) entry["state_dtypes"] = dtypes;
    if (!plan.share.empty()) entry["share"] = plan.share;
    if (const nlohmann::json info = builder->trained_info(); !info.empty()) entry["trained"] = info;
    tiers.push_back(entry);
  }
  if (!any)
    EDO_USAGE_FAIL(
        "--train-only: no tier trains or fits a state (each encodes its rows alone, or reads the table itself): "
        "run each shard without --trained");
  nlohmann::json manifest = {{"rows", 0},
                             {"dim", input.dim()},
                             {"tiers", tiers},
                             {"trained_only", true},
                             {"provenance", provenance(input, opt, std::nullopt)}};
  set_required_features(manifest);
  writer.finish(manifest);
}

void set_required_features(nlohmann::json& manifest) {
  std::vector<std::string> names;
  for (const nlohmann::json& tier : manifest.value("tiers", nlohmann::json::array()))
    if (tier.contains("codec") && tier["codec"].is_string()) {
      const std::string& codec = tier["codec"].get_ref<const std::string&>();
      for (std::string& f : spec_format_features(codec)) names.push_back(std::move(f));
      if (const char* f = tier_kind_traits(tier_kind_of(codec)).feature) names.emplace_back(f);
    }
  if (manifest.contains("rowmap") && manifest["rowmap"].contains("runs")) names.emplace_back("rowmap:runs");
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  if (names.empty())
    manifest.erase(io::manifest_key::required_features);
  else
    manifest[io::manifest_key::required_features] = names;
}

namespace {

using TierMaker = std::unique_ptr<TierBuilder> (*)(const std::string& field, uint64_t dim, const EncodeOptions& enc,
                                                   const HashFitOptions& fit);

// The writer's column of the tier-kind traits (edo/tier.hpp): how each kind
// is built, in TierKind's order.
constexpr TierMaker kTierMakers[] = {
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions& fit)
        -> std::unique_ptr<TierBuilder> { return std::make_unique<CodecTierBuilder>(field, dim, enc, fit.note); },
    [](const std::string&, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&)
        -> std::unique_ptr<TierBuilder> { return std::make_unique<SharedVectorTierBuilder>(dim, enc); },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&) {
      return make_sparse_tier_builder(field, dim, enc);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&) {
      return make_fallback_tier_builder(TierKind::zero, field, dim, enc);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&) {
      return make_fallback_tier_builder(TierKind::centroids, field, dim, enc);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&) {
      return make_fallback_tier_builder(TierKind::nearest, field, dim, enc);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions& fit) {
      return make_hash_tier_builder(field, dim, enc, fit);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions& fit) {
      return make_group_tier_builder(field, dim, enc, fit);
    },
    [](const std::string& field, uint64_t dim, const EncodeOptions& enc, const HashFitOptions&) {
      return make_lossless_tier_builder(field, dim, enc);
    },
};
static_assert(std::size(kTierMakers) == kTierKindCount);

}  // namespace

std::unique_ptr<TierBuilder> make_tier_builder(const std::string& codec_field, uint64_t dim, const EncodeOptions& enc,
                                               const HashFitOptions& fit,
                                               const std::function<void(const std::string&)>& note) {
  HashFitOptions fit_with_note = fit;
  fit_with_note.note = note;
  return kTierMakers[static_cast<size_t>(tier_kind_of(codec_field))](codec_field, dim, enc, fit_with_note);
}

TableWriteReport write_table(io::TableReader& input, const std::string& out_path, const TableLayout& layout,
                             const WriteOptions& opt) {
  const uint64_t rows = input.rows(), dim = input.dim();
  const size_t ntiers = layout.tiers.size();
  if (ntiers == 0 || ntiers > io::kMaxTiers) EDO_USAGE_FAIL("{} tiers (1 to {} allowed)", ntiers, io::kMaxTiers);
  if (layout.tier_of_row.empty() ? ntiers != 1 : layout.tier_of_row.size() != rows)
    EDO_FAIL("{}: the layout assigns {} rows to {} tiers, the table has {}", out_path, layout.tier_of_row.size(),
             ntiers, rows);
  // Words name rows: a repeated one would be stored and then refused by
  // every reader that looks words up, so it is refused before any work
  // (a --vocab file was checked when it was read).
  if (!opt.vocabulary && input.vocabulary()) io::check_unique_words(*input.vocabulary(), input.path() + " (its words)");
  const EncodeOptions enc = encode_options(input, opt);
  std::vector<std::unique_ptr<TierBuilder>> builders;
  for (const TierPlan& plan : layout.tiers)
    builders.push_back(
        make_tier_builder(resolve_tier_field(plan.codec, input.dtype()), dim, enc, opt.hash_fit, opt.note));

  TableWriteReport rep;
  rep.rows = rows;
  rep.dim = dim;
  rep.fp32_bytes = rows * dim * sizeof(float);
  std::optional<uint64_t> digest = layout.source_digest;
  if (!digest && ntiers > 1) digest = detail::digest_and_norms(input, false, opt.block_bytes, opt.first_row).digest;
  uint64_t pass_digest = 0;

  // A table that declares far more rows than its file stores (an HDF5 fill
  // value) would otherwise find out when the disk is full.
  std::vector<uint64_t> tier_rows(ntiers, layout.tier_of_row.empty() ? rows : 0);
  for (uint8_t t : layout.tier_of_row) ++tier_rows[t];
  uint64_t code_bytes = 0;
  for (size_t t = 0; t < ntiers; ++t) code_bytes += tier_rows[t] * builders[t]->code_size();
  io::check_free_space(out_path, code_bytes);

  io::ContainerWriter writer(out_path);
  PassState ps{
      input,
      layout,
      opt,
      writer,
      digest ? nullptr : &pass_digest,
      layout.tier_mass.size() == ntiers ? layout.tier_mass : tier_masses(layout.freq, layout.tier_of_row, ntiers)};
  nlohmann::json tiers_json = nlohmann::json::array();
  for (uint8_t t = 0; t < ntiers; ++t) {
    nlohmann::json entry;
    rep.tiers.push_back(write_tier(ps, t, *builders[t], entry));
    tiers_json.push_back(entry);
    rep.train_seconds += rep.tiers.back().train_seconds;
    rep.encode_seconds += rep.tiers.back().encode_seconds;
  }
  if (!digest) digest = pass_digest;

  nlohmann::json manifest = {{"rows", rows}, {"dim", dim}, {"tiers", tiers_json}};
  if (!layout.row_order.empty()) manifest["row_order"] = layout.row_order;
  const std::vector<uint64_t> runs = layout.tier_of_row.empty() || !opt.shard.is_null()
                                         ? std::vector<uint64_t>{}
                                         : written_row_runs(layout.tier_of_row.data(), rows);
  if (!runs.empty()) {
    writer.add_section("rowmap/runs", runs.data(), runs.size() * sizeof(uint64_t));
    manifest["rowmap"] = {{"runs", "rowmap/runs"}};
    rep.map_bytes = runs.size() * sizeof(uint64_t);
  } else if (!layout.tier_of_row.empty()) {
    const std::vector<uint64_t> rank = io::rowmap_rank(layout.tier_of_row.data(), rows, static_cast<uint32_t>(ntiers));
    writer.add_section("rowmap/tier", layout.tier_of_row.data(), rows);
    writer.add_section("rowmap/rank", rank.data(), rank.size() * sizeof(uint64_t));
    manifest["rowmap"] = {{"tier", "rowmap/tier"}, {"rank", "rowmap/rank"}, {"block", io::kRowMapBlock}};
    if (rows <= UINT32_MAX) {
      detail::write_local_indices(writer, layout.tier_of_row, ntiers);
      manifest["rowmap"]["local"] = "rowmap/local";
    }
    rep.map_bytes = row_map_bytes(rows, ntiers);
  }
  if (const std::vector<std::string>* words = opt.vocabulary ? opt.vocabulary : input.vocabulary()) {
    if (words->size() != rows) EDO_FAIL("{}: {} words for {} rows (one word a row)", out_path, words->size(), rows);
    const std::string bytes = io::vocab_section_bytes(*words);
    writer.add_section(io::kVocabSection, bytes.data(), bytes.size());
    rep.vocab_bytes = io::align_up(bytes.size());
    manifest["vocab"] = {{"section", io::kVocabSection}, {"words", rows}};
  }
  manifest["provenance"] = provenance(input, opt, digest);
  if (!opt.shard.is_null()) manifest["shard"] = opt.shard;
  for (const auto& [key, value] : opt.extra_manifest.items()) manifest[key] = value;
  set_required_features(manifest);
  writer.finish(manifest);

  rep.host_bytes = rep.map_bytes;
  for (const TierWriteReport& t : rep.tiers)
    (t.residency == Residency::gpu    ? rep.gpu_bytes
     : t.residency == Residency::disk ? rep.disk_bytes
                                      : rep.host_bytes) += t.bytes;
  rep.data_bytes = rep.gpu_bytes + rep.host_bytes + rep.disk_bytes;
  rep.file_bytes = file_size_of(out_path) - rep.vocab_bytes;
  rep.ratio = compression_ratio(rep.fp32_bytes, rep.file_bytes);
  return rep;
}

}  // namespace edo
