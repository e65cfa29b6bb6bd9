// The reader library: tiers from the manifest, the row map, and batch lookup
// by gather (codes of the asked rows, grouped by tier) + decode + scatter.
#include <edo/checked.hpp>
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/parallel.hpp>
#include <edo/reader.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/codec_math.hpp>
#include <edo/cuda/lookup.cuh>
#endif

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>

namespace edo {

namespace {

constexpr const char* kDefaultCodec = "default";

struct Tier {
  TierStats stats;
  std::unique_ptr<Codec> codec;  // null for a default tier
  const uint8_t* codes = nullptr;
  std::vector<float> vector;  // the default tier's shared vector
#ifdef EDO_HAVE_CUDA
  std::optional<math::ScalarLayout> layout;
  std::unique_ptr<DeviceBuffer> device_codes;
#endif
};

std::string tier_error(const std::string& path, const std::string& tier, const std::string& what) {
  return fmt::format("{}: tier '{}': {}", path, tier, what);
}

// The fp32 blobs a trained codec needs, from the sections the tier names.
std::vector<NamedBlob> load_state_blobs(const io::Container& c, const io::TierInfo& tier, const nlohmann::json& jt) {
  const std::string& path = c.path();
  std::vector<NamedBlob> blobs;
  const nlohmann::json shapes = jt.value("state_shapes", nlohmann::json::object());
  if (!shapes.is_object()) EDO_FAIL("{}", tier_error(path, tier.name, "state_shapes is not an object"));
  for (const auto& [role, section] : tier.sections) {
    if (role == "codes") continue;
    NamedBlob blob;
    blob.name = role;
    if (!shapes.contains(role) || !shapes[role].is_array() || shapes[role].size() > 8)
      EDO_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' has no valid shape", role)));
    uint64_t count = 1;
    for (const auto& d : shapes[role]) {
      if (!d.is_number_unsigned())
        EDO_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' has a bad shape", role)));
      const auto m = checked_mul(count, d.get<uint64_t>());
      if (!m) EDO_FAIL("{}", tier_error(path, tier.name, fmt::format("state '{}' shape overflows", role)));
      count = *m;
      blob.shape.push_back(d.get<uint64_t>());
    }
    const io::SectionView view = c.section(section);
    const auto bytes = checked_mul(count, sizeof(float));
    if (!bytes || *bytes != view.size)
      EDO_FAIL("{}: section '{}' holds {} bytes, its shape needs {}", path, section, view.size, bytes ? *bytes : 0);
    blob.values.resize(count);
    std::memcpy(blob.values.data(), view.data, view.size);
    blobs.push_back(std::move(blob));
  }
  return blobs;
}

Tier load_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt) {
  const std::string& path = c.path();
  const uint64_t dim = c.dim();
  Tier tier;
  tier.stats.name = info.name;
  tier.stats.residency = info.residency;
  tier.stats.rows = info.rows;
  if (info.codec == kDefaultCodec) {
    tier.stats.codec = kDefaultCodec;
    const auto it = info.sections.find("vector");
    if (it == info.sections.end() || info.sections.size() != 1)
      EDO_FAIL("{}", tier_error(path, info.name, "a default tier has exactly one section, 'vector'"));
    const io::SectionView v = c.section(it->second);
    if (v.size != dim * sizeof(float))
      EDO_FAIL("{}: section '{}' holds {} bytes, a vector of {} floats needs {}", path, it->second, v.size, dim,
               dim * sizeof(float));
    tier.vector.resize(dim);
    std::memcpy(tier.vector.data(), v.data, v.size);
    tier.stats.bytes = v.size;
    return tier;
  }
  try {
    tier.codec = make_codec(info.codec, dim);
  } catch (const Error& e) {
    EDO_FAIL("{}", tier_error(path, info.name, e.what()));
  }
  tier.stats.codec = tier.codec->spec();
  tier.stats.code_size = tier.codec->code_size();
  if (!jt.contains("code_size") || !jt["code_size"].is_number_unsigned() ||
      jt["code_size"].get<uint64_t>() != tier.stats.code_size)
    EDO_FAIL("{}", tier_error(path, info.name,
                              fmt::format("code_size does not match codec '{}' ({} bytes a row)", info.codec,
                                          tier.stats.code_size)));
  const auto codes_it = info.sections.find("codes");
  if (codes_it == info.sections.end()) EDO_FAIL("{}", tier_error(path, info.name, "no codes section"));
  const io::SectionView codes = c.section(codes_it->second);
  const auto need = checked_mul(info.rows, tier.stats.code_size);
  if (!need || *need != codes.size)
    EDO_FAIL("{}: section '{}' holds {} bytes, {} rows of {} bytes need {}", path, codes_it->second, codes.size,
             info.rows, tier.stats.code_size, need ? *need : 0);
  tier.codes = codes.data;
  tier.stats.bytes = codes.size;
  std::vector<NamedBlob> blobs = load_state_blobs(c, info, jt);
  for (const auto& b : blobs) tier.stats.bytes += b.values.size() * sizeof(float);
  try {
    tier.codec->load_state(blobs);
  } catch (const Error& e) {
    EDO_FAIL("{}", tier_error(path, info.name, e.what()));
  }
  return tier;
}

}  // namespace

struct Reader::Impl {
  io::Container container;
  ReaderOptions options;
  std::vector<Tier> tiers;
  std::vector<TierStats> stats;
  bool identity = false;  // one tier holding every row in order, no row map
  io::RowMap rowmap;
  uint64_t rowmap_bytes = 0;
  std::vector<float> default_vector;
  uint64_t rows = 0, dim = 0;

  explicit Impl(io::Container c, const ReaderOptions& opt) : container(std::move(c)), options(opt) {}

  // Unknown ids take tier index tiers.size().
  uint32_t unknown_slot() const { return static_cast<uint32_t>(tiers.size()); }

  bool locate(uint64_t row, uint32_t& tier, uint64_t& index) const {
    if (identity) {
      tier = 0;
      index = row;
      return true;
    }
    io::RowMap::Location loc;
    if (!rowmap.try_locate(row, loc)) return false;
    tier = loc.tier;
    index = loc.index;
    return true;
  }

  // Tier and index of every id; throws on the first (lowest position) bad id.
  void locate_ids(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* index) const {
    int64_t bad = -1;
    const int64_t count = static_cast<int64_t>(n);
#pragma omp parallel for schedule(static) if (parallel_worth(n * dim))
    for (int64_t i = 0; i < count; ++i) {
      const int64_t id = ids[i];
      bool ok = true;
      if (id < 0 || static_cast<uint64_t>(id) >= rows) {
        tier[i] = unknown_slot();
        index[i] = 0;
        ok = options.unknown_ids == UnknownIdPolicy::default_vector;
      } else {
        ok = locate(static_cast<uint64_t>(id), tier[i], index[i]);
      }
      if (!ok) {
#pragma omp critical(edo_reader_bad_id)
        if (bad < 0 || i < bad) bad = i;
      }
    }
    if (bad >= 0) {
      const int64_t id = ids[bad];
      if (id < 0 || static_cast<uint64_t>(id) >= rows)
        EDO_FAIL("{}: id {} (batch position {}) is outside the table ({} rows)", container.path(), id, bad, rows);
      EDO_FAIL("{}: row map is corrupt at row {}", container.path(), id);
    }
  }

  // Positions grouped by tier (stable): positions of tier t are
  // order[start[t] .. start[t+1]).
  static void group_by_tier(const uint32_t* tier, size_t n, uint32_t slots, std::vector<uint64_t>& start,
                            std::vector<uint64_t>& order) {
    start.assign(slots + 1, 0);
    for (size_t i = 0; i < n; ++i) ++start[tier[i] + 1];
    for (uint32_t t = 0; t < slots; ++t) start[t + 1] += start[t];
    std::vector<uint64_t> next(start.begin(), start.end() - 1);
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[next[tier[i]]++] = i;
  }

  const std::vector<float>& vector_of(uint32_t t) const {
    return t < tiers.size() && !tiers[t].codec ? tiers[t].vector : default_vector;
  }

  // Decodes the m rows of tier t at positions order[0..m) into `rows` (m * dim floats).
  void decode_group(uint32_t t, const uint64_t* order, size_t m, const uint64_t* index, float* rows_out) const {
    if (t == unknown_slot() || !tiers[t].codec) {
      const std::vector<float>& v = vector_of(t);
      for (size_t k = 0; k < m; ++k) std::memcpy(rows_out + k * dim, v.data(), dim * sizeof(float));
      return;
    }
    const Tier& tier = tiers[t];
    const uint64_t cs = tier.stats.code_size;
    std::vector<uint8_t> codes(m * cs);
    for (size_t k = 0; k < m; ++k) std::memcpy(codes.data() + k * cs, tier.codes + index[order[k]] * cs, cs);
    tier.codec->decode(codes.data(), m, rows_out);
  }

  // Decodes located rows into out (row i at out + i * dim). Work is cut into
  // chunks of one tier's rows that threads take whole: each gathers its code
  // rows, decodes them (a codec's own OpenMP loop runs as a team of one
  // inside this region) and scatters them into place.
  void decode_located(const uint32_t* tier, const uint64_t* index, size_t n, float* out) const {
    // Up to 256 rows a chunk, fewer for wide rows: a thread's buffer stays
    // near 1 MiB, whatever dim a file declares.
    const size_t kChunk = std::clamp<size_t>((size_t{1} << 18) / dim, 1, 256);
    std::vector<uint64_t> start, order;
    group_by_tier(tier, n, unknown_slot() + 1, start, order);
    std::vector<std::pair<uint32_t, uint64_t>> chunks;  // (tier, first position in order)
    for (uint32_t t = 0; t <= unknown_slot(); ++t)
      for (uint64_t k = start[t]; k < start[t + 1]; k += kChunk) chunks.emplace_back(t, k);
    const int64_t nchunks = static_cast<int64_t>(chunks.size());
#pragma omp parallel if (parallel_worth(n * dim))
    {
      std::vector<float> rows_buf(kChunk * dim);
#pragma omp for schedule(dynamic)
      for (int64_t c = 0; c < nchunks; ++c) {
        const auto [t, k] = chunks[static_cast<size_t>(c)];
        const size_t m = std::min<uint64_t>(kChunk, start[t + 1] - k);
        const uint64_t* group = order.data() + k;
        decode_group(t, group, m, index, rows_buf.data());
        for (size_t i = 0; i < m; ++i)
          std::memcpy(out + group[i] * dim, rows_buf.data() + i * dim, dim * sizeof(float));
      }
    }
  }

  // Tier and index of rows [begin, begin + count), walking the row map once.
  void locate_range(uint64_t begin, uint64_t count, uint32_t* tier, uint64_t* index) const {
    if (identity) {
      std::fill(tier, tier + count, 0u);
      for (uint64_t i = 0; i < count; ++i) index[i] = begin + i;
      return;
    }
    std::vector<uint64_t> next(tiers.size());
    for (uint32_t t = 0; t < tiers.size(); ++t)
      if (!rowmap.try_index_at(begin, t, next[t]))
        EDO_FAIL("{}: row map is corrupt at row {}", container.path(), begin);
    const uint8_t* bytes = tier_bytes();
    for (uint64_t i = 0; i < count; ++i) {
      const uint32_t t = bytes[begin + i];
      if (t >= tiers.size() || next[t] >= tiers[t].stats.rows)
        EDO_FAIL("{}: row map is corrupt at row {}", container.path(), begin + i);
      tier[i] = t;
      index[i] = next[t]++;
    }
  }

  const uint8_t* tier_bytes() const {
    return container.section(container.manifest()["rowmap"]["tier"].get<std::string>()).data;
  }

  void load();
  void upload_gpu_tiers();
};

void Reader::Impl::load() {
  const std::string& path = container.path();
  rows = container.rows();
  dim = container.dim();
  const nlohmann::json& manifest = container.manifest();
  const auto& infos = container.tiers();
  if (infos.size() > io::kMaxTiers) EDO_FAIL("{}: {} tiers (at most {})", path, infos.size(), io::kMaxTiers);
  for (size_t t = 0; t < infos.size(); ++t) {
    tiers.push_back(load_tier(container, infos[t], manifest["tiers"][t]));
    if (!tiers.back().codec) default_vector = tiers.back().vector;
  }
  // Sized only now that a tier's sections have vouched for dim.
  if (default_vector.empty()) default_vector.assign(dim, 0.0f);
  std::vector<uint64_t> tier_rows;
  for (const Tier& t : tiers) tier_rows.push_back(t.stats.rows);
  if (!manifest.contains("rowmap")) {
    if (tiers.size() != 1) EDO_FAIL("{}: {} tiers but no row map", path, tiers.size());
    if (tier_rows[0] != rows)
      EDO_FAIL("{}: tier '{}' has {} rows, the table {}", path, infos[0].name, tier_rows[0], rows);
    identity = true;
  } else {
    const nlohmann::json& rm = manifest["rowmap"];
    if (!rm.is_object() || !rm.contains("tier") || !rm["tier"].is_string() || !rm.contains("rank") ||
        !rm["rank"].is_string() || !rm.contains("block") || !rm["block"].is_number_unsigned())
      EDO_FAIL("{}: rowmap needs string 'tier' and 'rank' sections and an integer 'block'", path);
    if (rm["block"].get<uint64_t>() != io::kRowMapBlock)
      EDO_FAIL("{}: rowmap block {} (this reader knows {})", path, rm["block"].get<uint64_t>(), io::kRowMapBlock);
    const io::SectionView tier = container.section(rm["tier"].get<std::string>());
    const io::SectionView rank = container.section(rm["rank"].get<std::string>());
    rowmap = io::RowMap(tier.data, tier.size, rank.data, rank.size, rows, tier_rows, path);
    rowmap_bytes = tier.size + rank.size;
  }
  for (const Tier& t : tiers) stats.push_back(t.stats);
  if (options.device == Device::cuda) upload_gpu_tiers();
}

void Reader::Impl::upload_gpu_tiers() {
#ifdef EDO_HAVE_CUDA
  require_device(Device::cuda);
  for (size_t t = 0; t < tiers.size(); ++t) {
    Tier& tier = tiers[t];
    if (tier.stats.residency != "gpu" || !tier.codec) continue;
    tier.layout = scalar_layout(*tier.codec);
    if (!tier.layout) continue;
    tier.device_codes = std::make_unique<DeviceBuffer>(std::max<uint64_t>(1, tier.stats.rows * tier.stats.code_size));
    tier.device_codes->upload(tier.codes, tier.stats.rows * tier.stats.code_size);
    tier.stats.on_device = stats[t].on_device = true;
  }
#else
  require_device(Device::cuda);
#endif
}

Reader::Reader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Reader::~Reader() = default;
Reader::Reader(Reader&&) noexcept = default;
Reader& Reader::operator=(Reader&&) noexcept = default;

Reader Reader::open(const std::string& path, const ReaderOptions& options) {
  return from_container(io::Container::open(path, options.verify), options);
}

Reader Reader::from_container(io::Container container, const ReaderOptions& options) {
  auto impl = std::make_unique<Impl>(std::move(container), options);
  impl->load();
  return Reader(std::move(impl));
}

const std::string& Reader::path() const { return impl_->container.path(); }
uint64_t Reader::rows() const { return impl_->rows; }
uint64_t Reader::dim() const { return impl_->dim; }
const std::vector<TierStats>& Reader::tiers() const { return impl_->stats; }
uint64_t Reader::file_bytes() const { return impl_->container.file_size(); }
const std::vector<float>& Reader::default_vector() const { return impl_->default_vector; }
const io::Container& Reader::container() const { return impl_->container; }

ResidencyBytes Reader::residency_bytes() const {
  ResidencyBytes b;
  b.host = impl_->rowmap_bytes;
  for (const TierStats& t : impl_->stats)
    (t.residency == "gpu" ? b.gpu : t.residency == "disk" ? b.disk : b.host) += t.bytes;
  return b;
}

const Codec* Reader::single_tier_codec() const { return impl_->identity ? impl_->tiers[0].codec.get() : nullptr; }

const uint8_t* Reader::single_tier_codes() const {
  return impl_->identity && impl_->tiers[0].codec ? impl_->tiers[0].codes : nullptr;
}

void Reader::lookup(const int64_t* ids, size_t n, float* out) const {
  std::vector<uint32_t> tier(n);
  std::vector<uint64_t> index(n);
  impl_->locate_ids(ids, n, tier.data(), index.data());
  impl_->decode_located(tier.data(), index.data(), n, out);
}

void Reader::decode_rows(uint64_t begin, uint64_t count, float* out) const {
  const auto end = checked_add(begin, count);
  if (!end || *end > impl_->rows)
    EDO_FAIL("{}: rows [{}, {}+{}) are outside the table ({} rows)", path(), begin, begin, count, impl_->rows);
  if (impl_->identity) {
    const Tier& t = impl_->tiers[0];
    if (!t.codec) {
      for (uint64_t i = 0; i < count; ++i)
        std::memcpy(out + i * impl_->dim, t.vector.data(), impl_->dim * sizeof(float));
      return;
    }
    t.codec->decode(t.codes + begin * t.stats.code_size, count, out);
    return;
  }
  std::vector<uint32_t> tier(count);
  std::vector<uint64_t> index(count);
  impl_->locate_range(begin, count, tier.data(), index.data());
  impl_->decode_located(tier.data(), index.data(), count, out);
}

void Reader::decode_all(float* out) const {
  validate_row_map();
  constexpr uint64_t kBlock = 65536;
  for (uint64_t begin = 0; begin < impl_->rows; begin += kBlock)
    decode_rows(begin, std::min(kBlock, impl_->rows - begin), out + begin * impl_->dim);
}

void Reader::validate_row_map() const {
  if (!impl_->identity) impl_->rowmap.validate();
}

uint32_t Reader::tier_of(uint64_t row) const {
  if (row >= impl_->rows) EDO_FAIL("{}: row {} is outside the table ({} rows)", path(), row, impl_->rows);
  uint32_t t = 0;
  uint64_t index = 0;
  if (!impl_->locate(row, t, index)) EDO_FAIL("{}: row map is corrupt at row {}", path(), row);
  return t;
}

void Reader::lookup_device(const int64_t* ids, size_t n, float* out_device) const {
#ifdef EDO_HAVE_CUDA
  if (impl_->options.device != Device::cuda)
    EDO_USAGE_FAIL("{}: lookup_device needs a reader opened with device = cuda", path());
  if (n == 0) return;
  const uint64_t dim = impl_->dim;
  std::vector<uint32_t> tier(n);
  std::vector<uint64_t> index(n);
  impl_->locate_ids(ids, n, tier.data(), index.data());
  std::vector<uint64_t> start, order;
  Impl::group_by_tier(tier.data(), n, impl_->unknown_slot() + 1, start, order);
  std::vector<float> rows_buf;
  std::vector<uint64_t> gather_index, dst;
  for (uint32_t t = 0; t <= impl_->unknown_slot(); ++t) {
    const size_t m = start[t + 1] - start[t];
    if (m == 0) continue;
    const uint64_t* group = order.data() + start[t];
    dst.assign(group, group + m);
    DeviceBuffer d_dst(m * sizeof(uint64_t));
    d_dst.upload(dst.data(), d_dst.bytes());
    const Tier* resident = t < impl_->tiers.size() && impl_->tiers[t].device_codes ? &impl_->tiers[t] : nullptr;
    if (resident) {
      gather_index.resize(m);
      for (size_t k = 0; k < m; ++k) gather_index[k] = index[group[k]];
      DeviceBuffer d_index(m * sizeof(uint64_t));
      d_index.upload(gather_index.data(), d_index.bytes());
      cuda::gather_decode_scalar(*resident->layout, resident->device_codes->as<uint8_t>(), d_index.as<uint64_t>(),
                                 d_dst.as<uint64_t>(), m, out_device);
      check_cuda_launch("gather_decode_scalar");
    } else {
      rows_buf.resize(m * dim);
      impl_->decode_group(t, group, m, index.data(), rows_buf.data());
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
