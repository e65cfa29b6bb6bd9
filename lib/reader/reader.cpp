// SPDX-License-Identifier: Apache-2.0
// The reader library: tiers opened by kind, ids resolved by the file's id
// map, and batch lookup: ids grouped by tier, each tier gathering and
// decoding its rows straight into place (tier.hpp).
#include "first_read_check.hpp"
#include "page_cache.hpp"
#include "reader_impl.hpp"

#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/parallel.hpp>
#include <edo/reader.hpp>
#include <edo/shard_set.hpp>
#include <edo/tier.hpp>
#include <edo/work_share.hpp>
#include "lookup_group.hpp"

#include <fmt/ranges.h>

#ifdef EDO_HAVE_CUDA
#include <edo/codec_math.hpp>
#include <edo/cuda/lookup.cuh>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <optional>
#include <set>

namespace edo {

UnknownIdPolicy parse_unknown_id_policy(std::string_view name) {
  for (const UnknownIdPolicy p : {UnknownIdPolicy::error, UnknownIdPolicy::default_vector, UnknownIdPolicy::hash})
    if (name == unknown_id_policy_name(p)) return p;
  EDO_USAGE_FAIL("unknown-id policy '{}': expected error, default or hash", name);
}

HostTierAccess parse_host_tier_access(std::string_view name) {
  for (const HostTierAccess a : {HostTierAccess::copy, HostTierAccess::mapped, HostTierAccess::managed})
    if (name == host_tier_access_name(a)) return a;
  EDO_USAGE_FAIL("host tier access '{}': expected copy, mapped or managed", name);
}

const char* host_tier_access_name(HostTierAccess access) {
  switch (access) {
    case HostTierAccess::copy:
      return "copy";
    case HostTierAccess::mapped:
      return "mapped";
    case HostTierAccess::managed:
      return "managed";
  }
  return "?";
}

CacheIo parse_cache_io(std::string_view name) {
  for (const CacheIo io : {CacheIo::automatic, CacheIo::pread, CacheIo::io_uring})
    if (name == cache_io_name(io)) return io;
  EDO_USAGE_FAIL("cache reads '{}': expected auto, pread or io_uring", name);
}

const char* cache_io_name(CacheIo io) {
  switch (io) {
    case CacheIo::automatic:
      return "auto";
    case CacheIo::pread:
      return "pread";
    case CacheIo::io_uring:
      return "io_uring";
  }
  return "auto";
}

const char* unknown_id_policy_name(UnknownIdPolicy policy) {
  switch (policy) {
    case UnknownIdPolicy::error:
      return "error";
    case UnknownIdPolicy::default_vector:
      return "default";
    case UnknownIdPolicy::hash:
      return "hash";
  }
  return "error";
}

// Disk codec tiers through a page cache sized by what the rest leaves of the
// budget; the rest (other tiers, the id map) stays resident by the mapping.
void Reader::Impl::bound_memory() {
  const std::string& path = container.path();
  const uint64_t page = options.cache_page_bytes;
  if (page < 4096 || page > (uint64_t{1} << 24) || (page & (page - 1)) != 0)
    EDO_USAGE_FAIL("{}: cache pages of {} bytes: give a power of two from 4096 to 16777216", path, page);
  uint64_t resident = map->bytes();
  for (const auto& t : tiers)
    if (t->stats().residency != Residency::disk || !t->codec()) resident += t->stats().bytes;
  // At least 64 pages of cache, so that a batch's pages do not evict each other at once.
  const uint64_t need = resident + 64 * page;
  if (options.max_resident < need)
    EDO_USAGE_FAIL(
        "{}: a budget of {} resident bytes is too small: the host and gpu tiers and the id map take {} "
        "and the disk cache at least {}; give at least {}",
        path, options.max_resident, resident, 64 * page, need);
  // A budget beyond what the file could ever fill (64G for a small file) is
  // not a slab to allocate: the cache holds at most every page of the file.
  const uint64_t file_pages = container.file_size() / page + 2;
  const uint64_t capacity = std::min(options.max_resident - resident, std::max<uint64_t>(file_pages, 64) * page);
  // A model file's table reads its bytes where they lie in the model file.
  cache = std::make_unique<detail::PageCache>(container.backing_path(), container.backing_size(), capacity, page,
                                              tiers.size(), options.cache_io);
  cached.assign(tiers.size(), false);
  for (size_t t = 0; t < tiers.size(); ++t)
    if (tiers[t]->stats().residency == Residency::disk) cached[t] = tiers[t]->read_through(*cache, t);
}

// io::Verify::small at open: every section of the file but the per-row
// payload of tiers that are not fallbacks (the row sections of the traits
// table: codec tiers' codes, sparse tiers' rows), checked before anything is
// parsed from them. Returns each tier's payload sections, checked later.
std::vector<std::vector<io::SectionInfo>> Reader::Impl::check_small_sections() const {
  const auto& infos = container.tiers();
  std::vector<std::vector<std::string>> payload(infos.size());
  std::set<std::string> at_open;
  for (size_t t = 0; t < infos.size(); ++t) {
    const TierKind kind = tier_kind_of(infos[t].codec);
    for (const auto& [role, name] : infos[t].sections) {
      if (!is_fallback(kind) && is_row_section(kind, role))
        payload[t].push_back(name);
      else
        at_open.insert(name);
    }
  }
  // A section some tier reads as more than payload is checked now for all.
  std::set<std::string> later;
  for (auto& names : payload) {
    std::erase_if(names, [&](const std::string& n) { return at_open.count(n) > 0; });
    later.insert(names.begin(), names.end());
  }
  container.verify([&](const io::SectionInfo& s) { return later.count(s.name) == 0; });
  std::vector<std::vector<io::SectionInfo>> out(infos.size());
  for (size_t t = 0; t < infos.size(); ++t)
    for (const io::SectionInfo& s : container.sections())
      if (std::find(payload[t].begin(), payload[t].end(), s.name) != payload[t].end()) out[t].push_back(s);
  return out;
}

// Each tier's payload checked on its first read where its kind can, else now.
void Reader::Impl::defer_payload_checks(const std::vector<std::vector<io::SectionInfo>>& payload) {
  first_read.assign(tiers.size(), nullptr);
  for (size_t t = 0; t < payload.size() && t < tiers.size(); ++t) {
    if (payload[t].empty()) continue;
    auto check = std::make_shared<const detail::FirstReadCheck>(container, payload[t]);
    if (!tiers[t]->check_on_first_read(check)) check->ensure();
    first_read[t] = std::move(check);
  }
}

void Reader::Impl::load() {
  const std::string& path = container.path();
  rows = container.rows();
  dim = container.dim();
  const nlohmann::json& manifest = container.manifest();
  // A shard or a trained state is part of a table, never one (docs/SCALE.md).
  const std::optional<ShardEntry> shard = shard_entry_of(manifest, path);
  if (shard && !options.allow_shard)
    EDO_UNSUPPORTED_FAIL(
        "{}: shard {}/{} of a table (its rows {} to {} of {}), not a table: merge the shards "
        "(edo-pack --merge) to read it",
        path, shard->index, shard->count, shard->first_row, shard->first_row + rows, shard->table_rows);
  // Hashed and nearest tiers answer ids from the whole table's rows, which
  // a shard's own map and row count cannot place (FORMAT.md 9.9).
  if (shard)
    for (const io::TierInfo& t : container.tiers())
      if (answers_across_shards(tier_kind_of(t.codec)))
        EDO_UNSUPPORTED_FAIL(
            "{}: tier '{}' ({}) answers ids with rows outside this shard: merge the shards (edo-pack --merge) "
            "to read them",
            path, t.name, t.codec);
  if (manifest.contains("trained_only"))
    EDO_UNSUPPORTED_FAIL("{}: a trained codec state with no rows (edo-quantize --train-only): give it to --trained",
                         path);
  const auto& infos = container.tiers();
  if (infos.size() > io::kMaxTiers) EDO_CORRUPT_FAIL("{}: {} tiers (at most {})", path, infos.size(), io::kMaxTiers);
  std::vector<std::vector<io::SectionInfo>> payload;
  if (options.verify == io::Verify::small) payload = check_small_sections();
  std::vector<uint64_t> tier_rows;
  for (size_t t = 0; t < infos.size(); ++t) {
    tiers.push_back(open_tier(container, infos[t], manifest["tiers"][t]));
    if (const float* v = tiers.back()->shared_vector()) default_vector.assign(v, v + dim);
    redirecting_any = redirecting_any || tiers.back()->redirects();
    keyed.push_back(tiers.back()->keyed_by_id());
    if (keyed.back() && !keyed_any) hash_slot = static_cast<uint32_t>(t);
    keyed_any = keyed_any || keyed.back();
    stats.push_back(tiers.back()->stats());
    tier_rows.push_back(infos[t].rows);
  }
  defer_payload_checks(payload);
  // Sized only now that a tier's sections have vouched for dim.
  if (default_vector.empty()) default_vector.assign(dim, 0.0f);
  map = open_id_map(container, tier_rows);
  if (options.unknown_ids == UnknownIdPolicy::hash && !keyed_any)
    EDO_FAIL("{}: unknown ids by hash: the file has no hashed tier", path);
  if (options.max_resident > 0) bound_memory();
  if (options.device == Device::cuda) upload_gpu_tiers();
  for (const auto& t : tiers) {
    fetch_bytes.push_back(static_cast<uint32_t>(std::clamp<uint64_t>(t->fetch_bytes(), 64, uint64_t{1} << 20)));
    widest_fetch = std::max(widest_fetch, fetch_bytes.back());
  }
}

void Reader::Impl::upload_gpu_tiers() {
  require_device(Device::cuda);
#ifdef EDO_HAVE_CUDA
  device_tiers.resize(tiers.size());
  for (size_t t = 0; t < tiers.size(); ++t) {
    const TierView& tier = *tiers[t];
    const Residency where = tier.stats().residency;
    const bool host_on_gpu = where == Residency::host && options.host_access != HostTierAccess::copy;
    if ((where != Residency::gpu && !host_on_gpu) || !tier.codec()) continue;
    const std::optional<math::ScalarLayout> layout = scalar_layout(*tier.codec());
    if (!layout) continue;
    // The GPU reads these codes without the tier: their first read is now.
    if (first_read[t]) first_read[t]->ensure();
    const uint64_t bytes = tier.stats().rows * tier.stats().code_size;
    DeviceTier d{*layout, nullptr, nullptr, nullptr};
    if (where == Residency::gpu) {
      d.codes = std::make_unique<DeviceBuffer>(std::max<uint64_t>(1, bytes));
      d.codes->upload(tier.codes(), bytes);
      stats[t].on_device = true;
    } else if (options.host_access == HostTierAccess::mapped) {
      d.pinned = std::make_unique<PinnedHostView>(tier.codes(), bytes);
    } else {
      try {
        d.managed = std::make_unique<ManagedCopy>(tier.codes(), bytes);
      } catch (const Error& e) {
        EDO_FAIL("{}: tier '{}': {}", container.path(), tier.stats().name, e.what());
      }
    }
    device_tiers[t] = std::move(d);
  }
#endif
}

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

Reader Reader::open(const std::string& path, const ReaderOptions& options) {
  if (options.placement == io::Placement::memory && options.max_resident > 0)
    EDO_USAGE_FAIL(
        "{}: placement memory holds the whole file in memory, a resident bound reads it through a cache: "
        "choose one",
        path);
  return from_container(io::Container::open(path, options.verify, options.placement), options);
}

Reader Reader::from_container(io::Container container, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>(std::move(container), options);
  if (impl->container.is_model()) {
    // The model file's checksums cover its tables' bytes already (all), or
    // each table checks its own sections as a file would (small).
    ReaderOptions& table_options = impl->table_options;
    table_options = options;
    if (options.verify != io::Verify::small) table_options.verify = io::Verify::structure;
    // Every table is opened once here, so that a damaged one fails the
    // open as before; its Reader is dropped and made again at first use.
    for (size_t i = 0; i < impl->container.model_tables().size(); ++i)
      (void)from_container(impl->container.model_table(i, table_options.verify), table_options);
    impl->model_tables.resize(impl->container.model_tables().size());
    const auto& infos = impl->container.model_tables();
    impl->model_tables_by_name.resize(infos.size());
    for (uint32_t i = 0; i < infos.size(); ++i) impl->model_tables_by_name[i] = i;
    std::sort(impl->model_tables_by_name.begin(), impl->model_tables_by_name.end(),
              [&](uint32_t a, uint32_t b) { return infos[a].name < infos[b].name; });
    return Reader(std::move(impl));
  }
  impl->load();
  return Reader(std::move(impl));
}

bool Reader::is_model() const { return impl_->container.is_model(); }

std::vector<std::string> Reader::tables() const {
  std::vector<std::string> names;
  if (!is_model()) return {impl_->container.manifest().value(kTableNameKey, std::string(kUnnamedTable))};
  for (const io::ModelTableInfo& t : impl_->container.model_tables()) names.push_back(t.name);
  return names;
}

const Reader& Reader::table(std::string_view name) const {
  if (!is_model()) {
    if (name == tables().front()) return *this;
  } else {
    const auto& by_name = impl_->model_tables_by_name;
    const auto it = std::lower_bound(by_name.begin(), by_name.end(), name, [&](uint32_t i, std::string_view n) {
      return impl_->container.model_tables()[i].name < n;
    });
    if (it != by_name.end() && impl_->container.model_tables()[*it].name == name) return impl_->model_table(*it);
  }
  const std::vector<std::string> names = tables();
  EDO_USAGE_FAIL("{}: no table '{}' (it holds {}: {})", path(), name, names.size(),
                 fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 20), ", "));
}

void Reader::require_table(const char* what) const {
  if (!is_model()) return;
  const std::vector<std::string> names = tables();
  EDO_USAGE_FAIL("{}: {} needs one table, and this model file holds {} ({}): name one", path(), what, names.size(),
                 fmt::join(names.begin(), names.begin() + std::min<size_t>(names.size(), 20), ", "));
}

const ReaderOptions& Reader::options() const { return impl_->options; }

const std::string& Reader::path() const { return impl_->container.path(); }
uint64_t Reader::rows() const { return impl_->rows; }
uint64_t Reader::dim() const { return impl_->dim; }
const std::vector<TierStats>& Reader::tiers() const { return impl_->stats; }
uint64_t Reader::file_bytes() const { return impl_->container.file_size(); }
const std::vector<float>& Reader::default_vector() const { return impl_->default_vector; }
const io::Container& Reader::container() const { return impl_->container; }

ResidencyBytes Reader::residency_bytes() const {
  require_table("residency_bytes");
  ResidencyBytes b;
  b.host = impl_->map->bytes();
  for (const TierStats& t : impl_->stats)
    (t.residency == Residency::gpu ? b.gpu : t.residency == Residency::disk ? b.disk : b.host) += t.bytes;
  return b;
}

IdMapKind Reader::id_map_kind() const {
  require_table("id_map_kind");
  return impl_->map->kind();
}

CacheCounts Reader::cache_counts(size_t t) const {
  if (!impl_->cache || t >= impl_->cached.size() || !impl_->cached[t]) return {};
  const detail::PageCacheCounts c = impl_->cache->counts(t);
  return {true, c.hits, c.misses, c.bytes_read, c.bytes_checked};
}

uint64_t Reader::cache_capacity() const { return impl_->cache ? impl_->cache->capacity() : 0; }

const Codec* Reader::single_tier_codec() const {
  require_table("single_tier_codec");
  return impl_->map->kind() == IdMapKind::identity ? impl_->tiers[0]->codec() : nullptr;
}

const uint8_t* Reader::single_tier_codes() const {
  require_table("single_tier_codes");
  // The caller reads these codes without the tier: their first read is now.
  if (impl_->map->kind() == IdMapKind::identity && impl_->first_read[0]) impl_->first_read[0]->ensure();
  return impl_->map->kind() == IdMapKind::identity ? impl_->tiers[0]->codes() : nullptr;
}

void Reader::lookup(const int64_t* ids, size_t n, float* out) const {
  require_table("lookup");
  impl_->lookup(ids, n, out);
}

void Reader::decode_rows(uint64_t begin, uint64_t count, float* out) const {
  require_table("decode_rows");
  const auto end = checked_add(begin, count);
  if (!end || *end > impl_->rows)
    EDO_FAIL("{}: rows [{}, {}+{}) are outside the table ({} rows)", path(), begin, begin, count, impl_->rows);
  const Device device = impl_->options.decode_device;
  if (impl_->map->kind() == IdMapKind::identity) return impl_->tiers[0]->decode_range(begin, count, out, device);
  std::vector<uint32_t> tier(count);
  std::vector<uint64_t> local(count);
  impl_->map->resolve_range(begin, count, tier.data(), local.data());
  // A tier's rows keep their table order, so its rows in [begin, end) are
  // consecutive local ids: one batch decode per tier, then a scatter.
  const uint64_t dim = impl_->dim;
  std::vector<uint64_t> start, order;
  Impl::group_by_tier(tier.data(), count, impl_->unknown_slot() + 1, start, order);
  std::vector<float> rows;
  for (uint32_t t = 0; t < impl_->unknown_slot(); ++t) {
    const size_t m = start[t + 1] - start[t];
    if (m == 0) continue;
    const uint64_t* positions = order.data() + start[t];
    rows.resize(m * dim);
    if (impl_->tiers[t]->redirects()) {
      // Rows answered by other rows: looked up by the rows they name.
      std::vector<int64_t> ids(m);
      for (size_t k = 0; k < m; ++k) ids[k] = static_cast<int64_t>(begin + positions[k]);
      lookup(ids.data(), m, rows.data());
    } else if (impl_->keyed[t]) {
      std::vector<uint64_t> ids(m), dst(m);
      for (size_t k = 0; k < m; ++k) ids[k] = begin + positions[k], dst[k] = k;
      impl_->tiers[t]->gather(ids.data(), dst.data(), m, rows.data());
    } else {
      impl_->tiers[t]->decode_range(local[positions[0]], m, rows.data(), device);
    }
    for (size_t k = 0; k < m; ++k) std::memcpy(out + positions[k] * dim, rows.data() + k * dim, dim * sizeof(float));
  }
}

void Reader::decode_all(float* out) const {
  validate_row_map();
  constexpr uint64_t kBlock = 65536;
  for (uint64_t begin = 0; begin < impl_->rows; begin += kBlock)
    decode_rows(begin, std::min(kBlock, impl_->rows - begin), out + begin * impl_->dim);
}

void Reader::validate_row_map() const {
  require_table("validate_row_map");
  impl_->map->validate();
}

uint32_t Reader::tier_of(uint64_t row) const {
  require_table("tier_of");
  if (row >= impl_->rows) EDO_FAIL("{}: row {} is outside the table ({} rows)", path(), row, impl_->rows);
  const int64_t id = static_cast<int64_t>(row);
  uint32_t t = 0;
  uint64_t local = 0;
  if (impl_->map->resolve(&id, 1, &t, &local) != 1) EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", path(), row);
  return t;
}

void Reader::lookup_device(const int64_t* ids, size_t n, float* out_device) const {
  require_table("lookup_device");
  // First, with or without CUDA: a reader opened for the CPU is the caller's mistake.
  if (impl_->options.device != Device::cuda)
    EDO_USAGE_FAIL("{}: lookup_device needs a reader opened with device = cuda", path());
#ifdef EDO_HAVE_CUDA
  if (n == 0) return;
  const uint64_t dim = impl_->dim;
  std::vector<uint32_t> tier(n);
  std::vector<uint64_t> index(n);
  impl_->resolve_ids(ids, n, tier.data(), index.data());
  std::vector<uint64_t> start, order;
  Impl::group_by_tier(tier.data(), n, impl_->unknown_slot() + 1, start, order);
  std::vector<float> rows_buf;
  std::vector<uint64_t> gather_index, packed_dst, dst;
  for (uint32_t t = 0; t <= impl_->unknown_slot(); ++t) {
    const size_t m = start[t + 1] - start[t];
    if (m == 0) continue;
    const uint64_t* group = order.data() + start[t];
    dst.assign(group, group + m);
    DeviceBuffer d_dst(m * sizeof(uint64_t));
    d_dst.upload(dst.data(), d_dst.bytes());
    const Impl::DeviceTier* resident =
        t < impl_->device_tiers.size() && impl_->device_tiers[t] ? &*impl_->device_tiers[t] : nullptr;
    if (resident) {
      gather_index.resize(m);
      for (size_t k = 0; k < m; ++k) gather_index[k] = index[group[k]];
      DeviceBuffer d_index(m * sizeof(uint64_t));
      d_index.upload(gather_index.data(), d_index.bytes());
      cuda::gather_decode_scalar(resident->layout, resident->device_codes(), d_index.as<uint64_t>(),
                                 d_dst.as<uint64_t>(), m, out_device);
      check_cuda_launch("gather_decode_scalar");
    } else {
      rows_buf.resize(m * dim);
      gather_index.resize(m);
      packed_dst.resize(m);
      for (size_t k = 0; k < m; ++k) {
        gather_index[k] = index[group[k]];
        packed_dst[k] = k;
      }
      impl_->gather(t, gather_index.data(), packed_dst.data(), m, rows_buf.data());
      DeviceBuffer d_rows(rows_buf.size() * sizeof(float));
      d_rows.upload(rows_buf.data(), d_rows.bytes());
      cuda::scatter_rows(d_rows.as<float>(), d_dst.as<uint64_t>(), m, dim, out_device);
      check_cuda_launch("scatter_rows");
    }
  }
  if (const cudaError_t e = cuda::synchronize(); e != cudaSuccess)
    EDO_FAIL("{}: GPU lookup failed: {}", path(), cudaGetErrorString(e));
#else
  (void)ids, (void)n, (void)out_device;
  require_device(Device::cuda);
#endif
}

}  // namespace edo
