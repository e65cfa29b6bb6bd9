// SPDX-License-Identifier: Apache-2.0
// The one writer of .edo tables: edo-quantize (one tier) and edo-pack (many)
// both write through write_table(), which streams the input block by block
// through one TierBuilder per tier and writes the manifest, provenance and
// id map in one place (docs/FORMAT.md). A tier kind's builder is the
// writing half of its TierView (tier.hpp).
#pragma once

#include <edo/codec.hpp>
#include <edo/device.hpp>
#include <edo/eval.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/tier.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace edo {

// How a writer runs: shared by edo-quantize's and edo-pack's options.
// Hashed tiers' least-squares fits and group-shared tiers' labels (hash.hpp).
struct HashFitOptions {
  // Stop when the relative residual of the normal equations (for qr op=mul:
  // the relative improvement of a round) falls to `tolerance`, or after
  // `max_iterations`; stopping short of it is an error unless allow_partial
  // (then the best fit reached is written, and its manifest entry says so).
  double tolerance = 1e-4;
  uint32_t max_iterations = 200;
  bool allow_partial = false;
  std::function<void(const std::string&)> note;  // set by make_tier_builder from its `note`
  // Group-shared tiers' group:labels: one label >= 0 per table row (not owned).
  const std::vector<int64_t>* group_labels = nullptr;
  // On a GPU, the rows one product pass holds (0: as many as 256 MB of
  // values take); a test sets it small to cross block boundaries.
  uint64_t gpu_block_rows = 0;
};

struct TableLayout;

// A tier's trained state (--train-only / --trained, FORMAT.md 9.8): what a
// shard's run loads instead of training or fitting it.
struct TrainedTier {
  std::string name;
  std::string spec;                                // canonical, or the tier kind's word
  std::vector<NamedBlob> blobs;                    // the state's arrays; empty for a tier that keeps none
  nlohmann::json info = nlohmann::json::object();  // what its fit reports in the manifest (hashed tiers)
  bool holds_state() const { return !blobs.empty() || !info.empty(); }  // else the tier trains nothing
};

// How a tier's rows depend on rows outside a shard (docs/SCALE.md).
enum class ShardNeed : uint8_t {
  none,         // each row is encoded alone: a codec that trains nothing, zero, sparse k= or threshold=
  sample,       // a state trained on a seeded sample of the tier's rows: trained codecs, centroids, density=
  tier,         // a state fitted over every row of the tier: default's mean, hashed tiers' fits
  table,        // encoding reads the stored rows of the whole table: nearest
  unshardable,  // group tiers (each row's group from a fit of the whole tier), lossless tiers (segment codes)
};

struct WriteOptions {
  uint64_t seed = 0;
  uint64_t train_rows = 65536;  // seeded sample of a tier's own rows for trainable codecs
  Device device = Device::cpu;
  bool allow_nonfinite = false;
  bool allow_underflow = false;  // see EncodeOptions
  // Write a sparse tier even when it takes more bytes than its rows stored
  // dense at the same value precision (otherwise an error: --force).
  bool allow_larger_sparse = false;
  size_t block_bytes = io::kDefaultBlockBytes;
  std::string tool;
  // The words of the rows, stored as the file's vocabulary section (FORMAT.md
  // 9.7); null: those of the input when it carries them (word2vec, fastText).
  const std::vector<std::string>* vocabulary = nullptr;
  nlohmann::json parameters = nlohmann::json::object();  // recorded in the provenance
  // Extra manifest entries (e.g. "eval"), merged in before the file is written.
  nlohmann::json extra_manifest = nlohmann::json::object();
  std::function<void(uint64_t, uint64_t)> progress;  // (rows written, rows)
  HashFitOptions hash_fit;
  // Progress lines of a tier's long steps (a codec's training passes, a
  // hashed fit's iterations), for a tool to show on stderr; empty for none.
  std::function<void(const std::string&)> note;
  // Sharded runs (shard.hpp): the table row number of the input's first row
  // (for the source digest and the row ids builders see), the manifest's
  // "shard" entry (null: a whole table), per tier the state it loads instead
  // of training or fitting (a tier with no blobs and no info: the tier
  // trains as usual, or trains nothing), and the whole table with its layout
  // (what prepare() sees; null: the input and layout written).
  uint64_t first_row = 0;
  nlohmann::json shard;
  const std::vector<TrainedTier>* trained = nullptr;
  io::TableReader* whole_table = nullptr;
  const TableLayout* whole_layout = nullptr;
};

// Writes one tier of one kind. The writer calls, in this order:
// load_trained() when given a trained state, prepare(), train() when
// needs_training() and nothing was loaded, begin(), add() for every block
// holding the tier's rows (in table order), finish().
class TierBuilder {
 public:
  virtual ~TierBuilder() = default;
  virtual std::string codec() const = 0;  // the manifest's "codec": canonical spec or the kind's word
  virtual uint64_t code_size() const { return 0; }
  virtual bool needs_training() const { return false; }
  virtual ShardNeed shard_need() const { return needs_training() ? ShardNeed::sample : ShardNeed::none; }
  // Sees the whole input and layout, for kinds whose rows depend on rows
  // outside their tier (nearest) or that fit on all of them (hashed, unless
  // a state was loaded); `self` is this tier's index. Default: nothing.
  virtual void prepare(io::TableReader& input, const TableLayout& layout, uint8_t self);
  // Fits on a seeded sample of the tier's own rows, named row_ids[i] in errors.
  virtual void train(const float* x, size_t n, const uint64_t* row_ids, uint64_t seed);
  // What a --train-only run stores of a tier whose shard_need() is sample
  // or tier, after train() or after add() has seen every row of the tier;
  // and, instead of training or fitting, that state loaded (kinds that keep
  // none refuse).
  virtual std::vector<NamedBlob> trained_state() const { return {}; }
  virtual nlohmann::json trained_info() const { return nlohmann::json::object(); }
  virtual void load_trained(const TrainedTier& state);
  // Opens what the tier streams; sections are named prefix + role.
  virtual void begin(io::ContainerWriter& writer, const std::string& prefix);
  // n rows of the tier (row_ids: their table rows, ascending, counted from
  // the table's first row in a shard too; weights: their access counts, or
  // null to weigh rows equally).
  virtual void add(const float* x, size_t n, const uint64_t* row_ids, const double* weights) = 0;
  // Closes streamed sections, writes the others and fills the manifest
  // entry's "codec", "code_size", "sections" and kind-specific keys. Returns
  // the tier's bytes (every section).
  virtual uint64_t finish(io::ContainerWriter& writer, const std::string& prefix, nlohmann::json& entry) = 0;
  // Reconstruction of the rows added, as edo-eval measures it (RowErrorStats,
  // rows in table order); empty for kinds that do not decode rows one by one.
  RowErrorSummary recon() const { return recon_ ? recon_->finish() : RowErrorSummary{}; }
  double encode_seconds() const { return encode_seconds_; }
  // Bytes of each section written (role, bytes), after finish(); empty for
  // kinds that do not itemise them.
  const std::vector<std::pair<std::string, uint64_t>>& section_bytes() const { return section_bytes_; }
  // Bytes the tier's rows would take stored dense at the same value
  // precision (sparse kinds, after finish()); 0 when the comparison does not apply.
  virtual uint64_t dense_bytes() const { return 0; }
  // What the tool's summary says of the tier beside its bytes, after
  // finish() (a lossless tier's bits a value and entropy; that its values
  // did not compress).
  virtual std::vector<std::string> report_notes() const { return {}; }

 protected:
  std::unique_ptr<RowErrorStats> recon_;
  double encode_seconds_ = 0;
  std::vector<std::pair<std::string, uint64_t>> section_bytes_;
};

// The builder for a manifest "codec" field (a kind's word or a codec spec)
// at `dim`; usage error on a bad spec. `enc` names the input in errors and
// gives the device; `note` receives progress lines (WriteOptions::note).
std::unique_ptr<TierBuilder> make_tier_builder(const std::string& codec_field, uint64_t dim, const EncodeOptions& enc,
                                               const HashFitOptions& fit = {},
                                               const std::function<void(const std::string&)>& note = {});

// The builder of a sparse tier (sparse.hpp) for `spec` at `dim`; usage
// error on a bad spec.
std::unique_ptr<TierBuilder> make_sparse_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc);

// The builder of a hashed tier (hash.hpp), fitted in prepare().
std::unique_ptr<TierBuilder> make_hash_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc,
                                                    const HashFitOptions& fit);

// The builder of a group-shared tier (hash.hpp, GroupSpec).
std::unique_ptr<TierBuilder> make_group_tier_builder(const std::string& spec, uint64_t dim, const EncodeOptions& enc,
                                                     const HashFitOptions& fit);

// The builder of a lossless tier (lossless.hpp).
std::unique_ptr<TierBuilder> make_lossless_tier_builder(const std::string& spec, uint64_t dim,
                                                        const EncodeOptions& enc);
// A tier's "codec" field as written for an input of `input_dtype`: a bare
// `lossless` names the input's own precision (lossless.hpp); any other field
// is returned as it is.
std::string resolve_tier_field(const std::string& field, io::DType input_dtype);

// The builder of a "zero" or "centroids:C" tier (the dropped rows' fallbacks).
std::unique_ptr<TierBuilder> make_fallback_tier_builder(TierKind kind, const std::string& spec, uint64_t dim,
                                                        const EncodeOptions& enc);

// One tier of a table to write.
struct TierPlan {
  std::string name;
  std::string codec;  // codec spec, or a kind's word ("default")
  Residency residency = Residency::host;
  std::string share;  // the share as given ("rows=5%", "rest"), recorded in the manifest
};

struct TableLayout {
  std::vector<TierPlan> tiers;
  // The tier of each table row; empty: one tier holding every row in table
  // order, which needs no id map.
  std::vector<uint8_t> tier_of_row;
  std::vector<double> freq;  // access counts by row, or empty
  std::string row_order;     // recorded when set: "frequency" or "norm"
  // The source digest (FORMAT.md 5.1), when the caller has read every row
  // already; computed here otherwise.
  std::optional<uint64_t> source_digest;
  // Each tier's share of the accesses, when the caller computed it over the
  // whole table (a shard's layout covers only its rows); else from freq.
  std::vector<double> tier_mass;
};

// Each tier's share of the accesses: for each tier, freq[r] / sum(freq)
// summed over its rows in table order (the one computation of the "mass" a
// manifest records).
std::vector<double> tier_masses(const std::vector<double>& freq, const std::vector<uint8_t>& tier_of_row,
                                size_t ntiers);

struct TierWriteReport {
  std::string name;
  std::string codec;  // canonical
  Residency residency = Residency::host;
  uint64_t rows = 0, code_size = 0;
  uint64_t bytes = 0;  // every section of the tier
  double mass = 0;     // share of accesses (0 without frequencies)
  double train_seconds = 0, encode_seconds = 0;
  RowErrorSummary recon;  // empty (rows 0) for kinds that do not reconstruct rows one by one
  std::vector<std::pair<std::string, uint64_t>> sections;  // (role, bytes), for kinds that itemise them
  std::vector<std::string> notes;                          // TierBuilder::report_notes()
};

struct TableWriteReport {
  uint64_t rows = 0, dim = 0;
  uint64_t fp32_bytes = 0;  // rows * dim * 4
  uint64_t data_bytes = 0;  // every section (tiers and id map): the file less header, manifest and padding
  uint64_t map_bytes = 0;   // the id map's sections
  // The file less its vocabulary section (as written_file_bytes(): what the
  // compression ratio divides by); the words' bytes, padding included, apart.
  uint64_t file_bytes = 0, vocab_bytes = 0;
  uint64_t gpu_bytes = 0, host_bytes = 0, disk_bytes = 0;  // data bytes by residency; the id map counts as host
  double ratio = 0;                                        // compression_ratio(fp32_bytes, file_bytes)
  double train_seconds = 0, encode_seconds = 0;
  std::vector<TierWriteReport> tiers;
};

// Bytes of the packed row map for `rows` rows in `tiers` tiers (more than
// one): a tier byte per row, rank checkpoints, and a u32 index within the
// tier per row when the table has fewer than 2^32 rows.
uint64_t row_map_bytes(uint64_t rows, size_t tiers);
// The runs of rows (io::RowRuns) write_table() stores for rows in the given
// tiers instead of the packed map, or none when it stores the packed map:
// at most kMaxWrittenRuns of them (a lookup's search stays in one cache
// line's worth of levels, as fast as the packed map's two loads) taking at
// most a byte a row. write_table() never stores runs in a shard (shards'
// maps concatenate).
inline constexpr uint64_t kMaxWrittenRuns = 64;
std::vector<uint64_t> written_row_runs(const uint8_t* tier_of_row, uint64_t rows);
// Bytes of the id map write_table() writes for rows in `tiers` tiers (more
// than one), outside a shard: the runs' or the packed map's.
uint64_t id_map_bytes(const uint8_t* tier_of_row, uint64_t rows, size_t tiers);

// The compression ratio everywhere edo prints one: the table's bytes as
// fp32 over the bytes of the whole file (docs/EVAL.md).
double compression_ratio(uint64_t fp32_bytes, uint64_t file_bytes);

// Writes `input` as a .edo at `out_path` (temporary name, renamed on
// success): one pass per tier over the blocks that hold its rows (one pass
// in all for a single tier). Memory: a block, its codes and a training
// sample, plus the layout's per-row arrays.
TableWriteReport write_table(io::TableReader& input, const std::string& out_path, const TableLayout& layout,
                             const WriteOptions& opt);

// --train-only (FORMAT.md 9.8): trains every tier of `layout` that trains,
// on the sample write_table() would draw, and writes a file of their states
// and no rows. Usage error when no tier trains.
void write_trained_layout(io::TableReader& input, const std::string& out_path, const TableLayout& layout,
                          const WriteOptions& opt);

// Sets the manifest's "requires" (FORMAT.md 8.1) to the format features its
// tiers' codecs and its row map use (spec_format_features, "rowmap:runs"), or
// removes it when they use none: every writer calls it before finish().
void set_required_features(nlohmann::json& manifest);

}  // namespace edo
