// SPDX-License-Identifier: Apache-2.0
// Tier kinds and id maps: the two seams every kind of table plugs into
// (docs/FORMAT.md, "Tier kinds" and "Id maps").
//
// A .edo table answers an id in two steps. Its id map resolves the id to a
// tier and a local id within that tier; the tier's kind then decodes the
// local ids it is handed into fp32 rows. The reader's lookup loop knows
// neither step's details: a new kind of tier (pruned rows in CSR, hashed
// rows) or of map joins by implementing TierView or IdMap, adding its enum
// value and one case where the kind is opened, with no change to that loop.
// A kind may expand a local id into several stored rows (K hash buckets
// summed, two quotient-remainder tables combined): that happens inside its
// gather().
#pragma once

#include <edo/device.hpp>
#include <edo/io/container.hpp>
#include <edo/pool_math.hpp>
#include <edo/residency.hpp>

#include <nlohmann/json.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

class Codec;

// What a tier stores. The manifest's "codec" field names the kind: a kind's
// own word, or else a codec spec (codec.hpp).
enum class TierKind : uint8_t {
  codec,          // one code of a fixed size per row, from any registry codec
  shared_vector,  // "default": one vector that every row of the tier shares
  sparse,         // "csr:..." or "bitmap:...": rows pruned to their largest values (sparse.hpp)
  zero,           // "zero": every row of the tier decodes to zeros (dropped rows' fallback)
  centroids,      // "centroids:C": C shared vectors, each row mapped to one (dropped rows' fallback)
  nearest,        // "nearest:cos|l2": each row answered by another row of the table (dropped rows' fallback)
  hashed,         // "hash:..." or "qr:...": rows answered by shared tables addressed from the id (hash.hpp)
  grouped,        // "group:...": a base vector per group plus each row's residual (hash.hpp)
  lossless,       // "lossless:values=V": bf16/fp16/fp32 values bit for bit, entropy-coded (lossless.hpp)
};
inline constexpr size_t kTierKindCount = 9;

// A tier kind's row in the traits table (tier_kinds(), in enum order): what
// every layer asks of a kind, so that a new kind is one row here, its
// TierView (lib/reader) and its TierBuilder (lib/store), each found by the
// kind (docs/ARCHITECTURE.md, "Adding a tier kind").
struct TierKindTraits {
  TierKind kind;
  // Its name in reports, JSON and the Python module ("codec", "default", "sparse", ...).
  const char* name;
  // The first stage names of a manifest "codec" field that select the kind
  // (the part before ':' or ','); no two rows share one, so the kind of a
  // field never depends on the order rows are tried. None for codec: every
  // other field is a codec spec.
  std::array<const char*, 2> stages;
  // The field is the word alone ("default", "zero"), with no parameters.
  bool bare_word;
  // A fallback for dropped rows: never precise, counted apart by sweeps,
  // plans and reports.
  bool fallback;
  // Answers reach rows outside a shard of the table (hashed tiers key by the
  // table's row, nearest tiers answer with other rows): a shard of them is
  // read only once merged (FORMAT.md 9.9).
  bool answers_across_shards;
  // The shard rule: the roles of the kind's sections that hold one entry
  // per row and are split with the rows; every other section is trained
  // state that shards share byte for byte (FORMAT.md 9.8).
  std::array<const char*, 5> row_sections;
  // A field of this kind, as edo-pack's --tier takes it: the tests build a
  // file with one tier of every kind from it.
  const char* example;
  // The format feature (FORMAT.md 8.1) a file with a tier of this kind
  // requires, for kinds added after readers began checking features; null
  // for the kinds every reader of the format knows.
  const char* feature = nullptr;
};
std::span<const TierKindTraits> tier_kinds();
const TierKindTraits& tier_kind_traits(TierKind kind);
// The kind a manifest "codec" field names (a codec spec when no row claims it).
TierKind tier_kind_of(std::string_view codec_field);
// The manifest word of a kind whose field is not a spec ("default", "zero",
// "centroids", "nearest"; nullptr for the kinds whose field is a spec).
const char* tier_kind_word(TierKind kind);
inline bool is_fallback(TierKind kind) { return tier_kind_traits(kind).fallback; }
inline bool answers_across_shards(TierKind kind) { return tier_kind_traits(kind).answers_across_shards; }
// Whether a section role of a tier of this kind is split with its rows.
bool is_row_section(TierKind kind, std::string_view role);
// C of a "centroids:C" field (1 <= C <= kMaxCentroids); usage error otherwise.
inline constexpr uint64_t kMaxCentroids = uint64_t{1} << 24;
uint64_t centroid_count(std::string_view codec_field);
// Bytes of a row's index into C centroids: 1 up to 256, 2 up to 65536, else 4.
uint32_t centroid_index_bytes(uint64_t centroids);
// The metric of a "nearest[:cos|l2]" field (cos when none); usage error otherwise.
enum class Metric : uint8_t;
Metric nearest_metric(std::string_view codec_field);

struct TierStats {
  std::string name;
  TierKind kind = TierKind::codec;
  std::string codec;  // canonical codec spec, or the kind's word ("default")
  Residency residency = Residency::host;
  uint64_t rows = 0;       // local ids are [0, rows)
  uint64_t code_size = 0;  // bytes per row (0 when rows share their storage)
  uint64_t bytes = 0;      // every section of the tier
  bool on_device = false;  // resident in GPU memory (ReaderOptions::device = cuda and a GPU decoder)
};

namespace detail {
class PageCache;
class FirstReadCheck;
}  // namespace detail

// One bag's rows that lie in one tier, as a pooled lookup
// (Reader::lookup_bags) hands them to the tier, in the bag's order.
struct TierRows {
  const uint64_t* local;  // local ids (table ids for a tier keyed by id), local[0..n)
  const float* weights;   // per row (mode sum only), or null
  size_t n = 0;
  // Where each row's bytes begin (TierView::row_address), codes[0 .. n +
  // ahead): the rows after the n are the ones the lookup pools next, in
  // this tier or others (null where none), there to be prefetched.
  const uint8_t* const* codes = nullptr;
  size_t ahead = 0;
  uint32_t prefetch_bytes = 0;          // the most bytes a row of the lookup's tiers takes (how far ahead to prefetch)
  const uint32_t* row_bytes = nullptr;  // each row's bytes, beside codes, when its tiers' rows differ
  uint64_t dim = 0;                     // the table's
};

// One tier of an open file: a view into the file's mapping, immutable after
// opening, so any number of threads may decode from it at once.
class TierView {
 public:
  virtual ~TierView() = default;
  const TierStats& stats() const { return stats_; }
  // Local rows local[k] into out + dst[k] * dim, for k < n. Local ids are the
  // caller's to check (< stats().rows).
  virtual void gather(const uint64_t* local, const uint64_t* dst, size_t n, float* out) const = 0;
  // Local rows [begin, begin + count) into out, one after another, decoded
  // on `device` (cuda: codes copied in, rows copied out; an error without a GPU).
  virtual void decode_range(uint64_t begin, uint64_t count, float* out, Device device = Device::cpu) const = 0;
  // Folds the rows into `acc` (one bag's dim sums) in order, each as
  // pool_math.hpp folds a decoded row (mode max: `first` says acc holds no
  // row yet, and the first row is taken as it is): lookup_bags_reference()'s
  // bits. Kinds decode straight into the sums where they can (scalar codecs:
  // the CPU path's kernels, pool_kernels.hpp; one shared vector; centroids);
  // the default decodes a few rows at a time (gather) into a buffer that
  // stays in the L1 cache and folds them.
  virtual void pool(const TierRows& rows, PoolMode mode, bool first, float* acc) const;
  // Where local row `local`'s bytes begin in memory (a scalar codec tier's
  // code row), for prefetching; null where a row has no one place.
  virtual const uint8_t* row_address(uint64_t /*local*/) const { return nullptr; }
  // The bytes from row_address() a prefetch should cover (a code row's).
  virtual uint64_t fetch_bytes() const { return stats_.code_size; }
  // row_address() of local[k] into out[k], for k < n.
  virtual void row_addresses(const uint64_t* local, size_t n, const uint8_t** out) const {
    for (size_t k = 0; k < n; ++k) out[k] = row_address(local[k]);
  }
  // A codec tier's codec and its code rows (local row i at codes() + i *
  // code_size); null for the other kinds.
  virtual const Codec* codec() const { return nullptr; }
  virtual const uint8_t* codes() const { return nullptr; }
  // The vector a shared-vector tier gives its rows, which is also what a
  // file answers for unknown ids when asked to; null for the other kinds.
  virtual const float* shared_vector() const { return nullptr; }
  // A redirecting tier (nearest) stores no rows: each of its local rows is
  // answered by another table row, which the reader resolves in its place
  // (that row must not be in a redirecting tier). gather() and
  // decode_range() are then never called.
  virtual bool redirects() const { return false; }
  // The table row local row `local` (< stats().rows) is answered by; not
  // checked against the table (the reader does that).
  virtual uint64_t redirect(uint64_t /*local*/) const { return 0; }
  // A tier keyed by id (hashed) is handed table ids wherever the others get
  // local ids (gather's `local`, decode_range's range), and answers any id
  // >= 0, inside the table or beyond it.
  virtual bool keyed_by_id() const { return false; }
  // Serve this tier's rows by reading the file through `cache` (counted as
  // `owner`) instead of the mapping, when the kind can (codec tiers):
  // returns whether it will. Called once, before any lookup
  // (ReaderOptions::max_resident).
  virtual bool read_through(detail::PageCache& /*cache*/, size_t /*owner*/) { return false; }
  // io::Verify::small: check the tier's per-row payload sections (`check`)
  // the first time gather() or decode_range() reads them, when the kind can
  // (codec and sparse tiers): returns whether it will; the reader checks them
  // at open otherwise. Called once, before any lookup.
  virtual bool check_on_first_read(std::shared_ptr<const detail::FirstReadCheck> /*check*/) { return false; }

 protected:
  TierStats stats_;
};

// Opens one tier (its container entry and manifest object `jt`) as its kind.
// Throws edo::Error naming the file and the tier on anything malformed.
std::unique_ptr<TierView> open_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);

// ---- id maps ----------------------------------------------------------------------

enum class IdMapKind : uint8_t {
  identity,  // one tier holding every row in table order: local id = id
  row_map,   // the packed row map: a tier byte per row, rank checkpoints (io/rowmap.hpp)
  row_runs,  // runs of consecutive rows in one tier (io/rowmap.hpp, RowRuns)
};

// Resolves table ids to (tier, local id), O(1) per id (O(log runs) for row runs).
class IdMap {
 public:
  virtual ~IdMap() = default;
  virtual IdMapKind kind() const = 0;
  // For each ids[k]: its tier and local id; an id outside [0, rows) gets
  // tier `tiers` (the count of tiers: the unknown slot) and local id 0.
  // Returns n, or the position of the first id the map cannot resolve (a
  // corrupt map; the outputs from there on are unspecified).
  virtual size_t resolve(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local) const = 0;
  // Rows [begin, begin + count) (inside the table: the caller's); throws
  // naming the file and the row where the map is corrupt.
  virtual void resolve_range(uint64_t begin, uint64_t count, uint32_t* tier, uint64_t* local) const = 0;
  // Reads the whole map; throws naming the first fault.
  virtual void validate() const {}
  // Bytes of the file the map takes (its sections).
  virtual uint64_t bytes() const { return 0; }
};

// The map a file declares (manifest "rowmap", else identity), checked
// against the tiers' row counts. Cost independent of the table's rows.
std::unique_ptr<IdMap> open_id_map(const io::Container& c, const std::vector<uint64_t>& tier_rows);

}  // namespace edo
