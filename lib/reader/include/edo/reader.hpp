// SPDX-License-Identifier: Apache-2.0
// Reading a .edo file for serving: open by mmap, look up batches of row ids
// into fp32, decode everything, per-tier statistics. Works on every .edo:
// one tier (edo-quantize) or many (edo-pack). docs/PACK.md is the guide.
//
//   edo::Reader r = edo::Reader::open("table.edo");
//   std::vector<float> out(ids.size() * r.dim());
//   r.lookup(ids.data(), ids.size(), out.data());
//
// open() costs time proportional to the header, the manifest and the small
// sections it checks (ReaderOptions::verify), never to the tiers' per-row
// payload: sections stay in the mapping and a lookup decodes only the rows
// it is asked for (the first read of a tier checks its payload once). A
// Reader is immutable after open(); lookups may run from any number of
// threads at once.
#pragma once

#include <edo/device.hpp>
#include <edo/io/container.hpp>
#include <edo/pool_math.hpp>
#include <edo/tier.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

class Codec;

// What a lookup does with an id outside [0, rows): throw edo::Error naming
// the file and the id, return the file's default vector (the vector of its
// `default` tier when it has one, else all zeros), or hash it: a file with a
// hashed tier (hash.hpp) answers every id >= 0 from its shared tables, as
// for a row of that tier (opening such a reader on a file without one is an
// error; negative ids stay errors).
enum class UnknownIdPolicy : uint8_t { error, default_vector, hash };
// "error", "default" or "hash" (edo-lookup's --unknown, the Python module's
// unknown=); anything else is a usage error naming the choices.
UnknownIdPolicy parse_unknown_id_policy(std::string_view name);
const char* unknown_id_policy_name(UnknownIdPolicy policy);

// How lookup_device() reaches the codes of tiers marked "host" whose codec
// has a GPU decoder (the scalar codecs); the others are always decoded on
// the host and copied in.
enum class HostTierAccess : uint8_t {
  copy,     // decoded on the host, the rows copied to the device (the default)
  mapped,   // the codes stay in host memory, pinned and mapped: the GPU gathers and decodes them over the bus
  managed,  // the codes copied to unified memory, prefetched to the GPU, advised read-mostly; only when
            // they fit in the GPU's free memory (an error otherwise, at open)
};
// "copy", "mapped", "managed"; anything else is a usage error naming them.
HostTierAccess parse_host_tier_access(std::string_view name);
const char* host_tier_access_name(HostTierAccess access);

// How the bounded cache reads a lookup block's missing pages: io_uring, all
// of them in one submission, where the kernel allows it (automatic, the
// default), or always pread (one page a call), or always io_uring (an error
// where it is not available).
enum class CacheIo : uint8_t { automatic, pread, io_uring };
// "auto", "pread" or "io_uring" (edo-lookup's --cache-io); usage error otherwise.
CacheIo parse_cache_io(std::string_view name);
const char* cache_io_name(CacheIo io);

const char* pool_mode_name(PoolMode mode);
// "sum", "mean" or "max"; anything else is a usage error.
PoolMode parse_pool_mode(std::string_view name);

// A set of bags of ids, as torch.nn.EmbeddingBag takes them with
// include_last_offset=False: bag b holds ids[offsets[b], offsets[b + 1]),
// the last one to the end of `ids`; offsets[0] is 0 and offsets never
// decrease. `weights`, one per id (sum only, as there), scale each row;
// null for none.
struct Bags {
  const int64_t* offsets = nullptr;
  size_t count = 0;
  const int64_t* ids = nullptr;
  size_t ids_count = 0;
  const float* weights = nullptr;
};

// Checks bags before any is pooled (lookup_bags does): an edo::Error naming
// `what` (the file) and "offsets" for offsets not starting at 0, decreasing,
// or past the ids (exit 1); a usage error for weights with a mode but sum.
void check_bags(const Bags& bags, PoolMode mode, std::string_view what);

// One table's bags in a call over several tables of a model file (as an
// EmbeddingBagCollection's forward takes a bag set per feature): the table's
// name, its bags, and where its pooled rows go (bags.count * its dim floats).
struct TableBags {
  std::string_view table;
  Bags bags;
  float* out = nullptr;
};

struct ReaderOptions {
  // What open() checks against the file's checksums (docs/PACK.md, "Integrity
  // modes"): small (the default) every section but the tiers' per-row payload
  // at open, and that payload the first time a lookup reads its tier; all:
  // every section at open (reads the whole file); structure: no checksum of
  // a section, lookups trust the payload bytes.
  io::Verify verify = io::Verify::small;
  UnknownIdPolicy unknown_ids = UnknownIdPolicy::error;
  // mapped (the default): served from a mapping of the file, open costs the
  // header. memory: the file read into private memory with transparent huge
  // pages at open, for lookups of random rows of a big table that would
  // otherwise walk the page tables on most reads (docs/PACK.md, "Serving").
  io::Placement placement = io::Placement::mapped;
  // cuda: tiers whose residency is "gpu" are copied to device memory at open
  // and lookup_device() gathers and decodes them there (an error without a GPU).
  Device device = Device::cpu;
  // Where decode_rows() and decode_all() decode (edo-unpack --device): cuda
  // decodes each tier's slice of a block on the GPU. Lookups stay on the CPU.
  Device decode_device = Device::cpu;
  // With device = cuda: how lookup_device() serves host tiers.
  HostTierAccess host_access = HostTierAccess::copy;
  // Bounded memory (docs/PACK.md, "Bounded memory"): when > 0, the bytes of
  // the file kept resident. Codec tiers marked "disk" are then read with
  // io_uring or pread (cache_io) through a cache of `cache_page_bytes` pages that gets what the
  // other tiers and the id map (resident through the mapping) leave of the
  // budget; too small a budget for those is an error saying what is needed.
  uint64_t max_resident = 0;
  uint64_t cache_page_bytes = 4096;  // a power of two, 4096 to 2^24
  CacheIo cache_io = CacheIo::automatic;
  // A shard (FORMAT.md 9.8) is refused as a table unless set: ShardSet
  // (shard_set.hpp) opens its shards so.
  bool allow_shard = false;
};

// A disk tier's reads through the bounded cache (Reader::cache_counts).
struct CacheCounts {
  bool cached = false;  // the tier is served through the cache
  uint64_t hits = 0, misses = 0;
  uint64_t bytes_read = 0;  // from the file, by io_uring or pread
  // Read by pread to check the tier's sections on their first read
  // (io::Verify::small), apart from bytes_read: one read of the tier's codes.
  uint64_t bytes_checked = 0;
};

// Bytes of the file's sections by residency; the id map counts as host.
struct ResidencyBytes {
  uint64_t gpu = 0, host = 0, disk = 0;
  uint64_t total() const { return gpu + host + disk; }
};

// The manifest key a one-table file written from a model's table records its
// name under, and the name of a table that records none.
inline constexpr const char* kTableNameKey = io::manifest_key::table_name_of_file;
inline constexpr const char* kUnnamedTable = "table";

class Reader {
 public:
  // Throws edo::Error naming the file on anything malformed (docs/FORMAT.md).
  static Reader open(const std::string& path, const ReaderOptions& options = {});
  // A container already open (e.g. a view over memory, for fuzzing).
  static Reader from_container(io::Container container, const ReaderOptions& options = {});
  ~Reader();
  Reader(Reader&&) noexcept;
  Reader& operator=(Reader&&) noexcept;

  const std::string& path() const;
  // What the file was opened with.
  const ReaderOptions& options() const;
  // A model file (docs/FORMAT.md, section 10) holds several tables: tables()
  // names them in file order and table(name) reads one, as a Reader of its
  // own (sharing the mapping). A one-table file is the table named by its
  // manifest's "table_name" ("table" when it has none), and table() of that
  // name is the file itself. Every other call on a model file of several
  // tables is an error naming them; rows() and dim() are 0 there.
  bool is_model() const;
  std::vector<std::string> tables() const;
  const Reader& table(std::string_view name) const;
  uint64_t rows() const;
  uint64_t dim() const;
  const std::vector<TierStats>& tiers() const;
  ResidencyBytes residency_bytes() const;
  uint64_t file_bytes() const;
  const std::vector<float>& default_vector() const;  // dim floats
  const io::Container& container() const;
  // For a file whose one tier holds every row in order: its codec and its
  // code rows (row i at i * code_size). Null otherwise, or for a default tier.
  const Codec* single_tier_codec() const;
  const uint8_t* single_tier_codes() const;

  // Rows `ids[0..n)` as fp32 into `out` (n * dim floats, row i at out + i*dim).
  // Multithreaded (OpenMP) for large batches; decodes only those rows.
  void lookup(const int64_t* ids, size_t n, float* out) const;
  // Each bag's rows pooled into `out` (bags.count * dim floats): summed
  // (times their weights), averaged, or their element-wise max; an empty
  // bag pools to zeros in every mode. Ids follow lookup()'s rules (the
  // unknown-id policy, every tier kind). Rows are decoded a few at a time
  // into a small buffer and folded into the bag's output at once, never a
  // buffer of every id's row; each bag is folded by one thread in its ids'
  // order, in float, so the result does not depend on the thread count.
  // Usage error on malformed offsets or weights with another mode.
  void lookup_bags(const Bags& bags, PoolMode mode, float* out) const;
  // The same, one row at a time on the calling thread: the reference the
  // tests hold lookup_bags() to (bit for bit: the same rows, summed in the
  // same order).
  void lookup_bags_reference(const Bags& bags, PoolMode mode, float* out) const;
  // The same with `out_device` in device memory (bags in host memory), for
  // a reader opened with device = cuda: rows gathered as lookup_device()
  // gathers them, a window of bags at a time, and pooled by a kernel that
  // folds them in the same order with the same operations (pool_math.hpp),
  // so the result is lookup_bags()'s bit for bit.
  void lookup_bags_device(const Bags& bags, PoolMode mode, float* out_device) const;
  // Every table's bags pooled in one call, each as table(name).lookup_bags()
  // pools them, in the order given; a table the file does not have is a
  // usage error naming the tables, before any bag is pooled.
  void lookup_bags(std::span<const TableBags> sets, PoolMode mode) const;
  // Rows [begin, begin + count) into `out`: each tier decodes its slice of
  // the range in one batch (on ReaderOptions::decode_device).
  void decode_rows(uint64_t begin, uint64_t count, float* out) const;
  // Every row (rows * dim floats); checks the whole row map first.
  void decode_all(float* out) const;
  // Index of the tier that stores `row` (row < rows()).
  uint32_t tier_of(uint64_t row) const;
  // Tier `t`'s reads through the bounded cache (all zero and not `cached`
  // without ReaderOptions::max_resident); the cache's capacity in bytes.
  CacheCounts cache_counts(size_t t) const;
  uint64_t cache_capacity() const;
  // How ids resolve to tiers (identity for one tier in table order).
  IdMapKind id_map_kind() const;
  // Reads the whole id map (O(rows)); decode_all does it too.
  void validate_row_map() const;

  // Like lookup(), with `ids` in host memory and `out_device` in device
  // memory: GPU-resident tiers are gathered and decoded by kernels, the
  // others decoded on the host and copied in. Needs ReaderOptions::device = cuda.
  void lookup_device(const int64_t* ids, size_t n, float* out_device) const;

  struct Impl;

 private:
  explicit Reader(std::unique_ptr<Impl> impl);
  // A usage error naming the tables when this is a model file.
  void require_table(const char* what) const;
  std::unique_ptr<Impl> impl_;
};

}  // namespace edo
