// SPDX-License-Identifier: Apache-2.0
#include "pack_impl.hpp"

#include <edo/build_info.hpp>
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/files.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/io/vocab.hpp>
#include <edo/model.hpp>
#include <edo/reader.hpp>
#include <edo/shard.hpp>
#include <edo/shard_set.hpp>
#include <edo/sparse.hpp>
#include <edo/table_writer.hpp>
#include <edo/tier.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <xxhash.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>

namespace edo {

RowRange shard_rows(uint64_t rows, uint32_t index, uint32_t count) {
  if (count == 0 || index >= count) EDO_USAGE_FAIL("shard {}/{}: the index runs from 0 to {}", index, count, count - 1);
  const uint64_t chunks = (rows + kShardChunkRows - 1) / kShardChunkRows;
  if (count > chunks)
    EDO_USAGE_FAIL("{} shards of a table of {} rows: shards split at multiples of {} rows, so at most {}", count, rows,
                   kShardChunkRows, chunks);
  const auto edge = [&](uint64_t i) { return std::min(rows, kShardChunkRows * (i * chunks / count)); };
  return {edge(index), index + 1 == count ? rows : edge(index + 1)};
}

namespace {

class RowRangeView final : public io::TableReader {
 public:
  RowRangeView(io::TableReader& table, RowRange range)
      : TableReader(table.path(), table.format()), table_(table), range_(range) {
    rows_ = range.size();
    dim_ = table.dim();
    dtype_ = table.dtype();
    if (const auto* words = table.vocabulary())
      words_.emplace(words->begin() + static_cast<int64_t>(range.begin),
                     words->begin() + static_cast<int64_t>(range.end));
  }
  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    return table_.rows_f32(range_.begin + begin, count);
  }
  const std::vector<std::string>* vocabulary() const override { return words_ ? &*words_ : nullptr; }

 private:
  io::TableReader& table_;
  RowRange range_;
  std::optional<std::vector<std::string>> words_;
};

}  // namespace

std::unique_ptr<io::TableReader> row_range_view(io::TableReader& table, RowRange range) {
  return std::make_unique<RowRangeView>(table, range);
}

nlohmann::json shard_entry(uint32_t index, uint32_t count, RowRange range, uint64_t table_rows) {
  return {{"index", index}, {"count", count}, {"first_row", range.begin}, {"table_rows", table_rows}};
}

SourceHash parse_source_hash(std::string_view name) {
  if (name == "sampled") return SourceHash::sampled;
  if (name == "full") return SourceHash::full;
  EDO_USAGE_FAIL("--source-hash {}: expected sampled or full", name);
}

const char* source_hash_name(SourceHash how) { return how == SourceHash::full ? "full" : "sampled"; }

uint64_t source_digest(io::TableReader& table, SourceHash how) {
  const uint64_t rows = table.rows(), dim = table.dim();
  const uint64_t shape[2] = {rows, dim};
  uint64_t h = XXH3_64bits(shape, sizeof shape);
  const uint64_t row_bytes = dim * sizeof(float);
  if (how == SourceHash::full) {
    const uint64_t block = std::max<uint64_t>(1, io::kDefaultBlockBytes / row_bytes);
    for (uint64_t begin = 0; begin < rows; begin += block) {
      const uint64_t n = std::min(block, rows - begin);
      const float* x = table.rows_f32(begin, n);
      for (uint64_t r = 0; r < n; ++r) h = XXH3_64bits_withSeed(x + r * dim, row_bytes, h);
    }
    return h;
  }
  // Every row of a table of up to 65,536 rows; above, 65,536 rows or one a
  // MiB, whichever is more: two versions that differ in a run of rows as
  // long as the gap between sampled rows are told apart.
  const uint64_t per_mib = (rows * row_bytes + (uint64_t{1} << 20) - 1) >> 20;
  const uint64_t n = std::min<uint64_t>(rows, std::max<uint64_t>(kSourceSampleRows, per_mib));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t row = n == 1 ? 0 : i * (rows - 1) / (n - 1);
    h = XXH3_64bits_withSeed(table.rows_f32(row, 1), row_bytes, h);
  }
  return h;
}

// ---- train once -------------------------------------------------------------------------

void write_trained_state(io::TableReader& input, const std::string& out_path, const std::string& spec,
                         const WriteOptions& opt) {
  TableLayout layout;
  layout.tiers = {{"all", spec, Residency::host, "rest"}};  // edo-quantize's one tier
  write_trained_layout(input, out_path, layout, opt);
}

TrainedState read_trained_state(const std::string& path) {
  const io::Container c = io::Container::open(path, io::Verify::all);
  const nlohmann::json& m = c.manifest();
  if (!m.contains("trained_only")) EDO_FAIL("{}: not a trained state (--train-only writes one)", path);
  TrainedState s;
  s.dim = c.dim();
  const nlohmann::json& prov = m["provenance"];
  s.parameters = prov.contains("parameters") ? prov["parameters"] : nlohmann::json::object();
  s.seed = prov.contains("seed") && prov["seed"].is_number_unsigned() ? prov["seed"].get<uint64_t>() : 0;
  for (size_t t = 0; t < c.tiers().size(); ++t) {
    const io::TierInfo& info = c.tiers()[t];
    const nlohmann::json& entry = m["tiers"][t];
    TrainedTier tier{info.name, info.codec, {}};
    if (entry.contains("trained")) {
      if (!entry["trained"].is_object()) EDO_FAIL("{}: tier '{}': \"trained\" is not an object", path, info.name);
      tier.info = entry["trained"];
    }
    // The state is the sections state_shapes names (a 1.1 codec tier's empty "codes" is not).
    const bool shaped = entry.contains("state_shapes") && entry["state_shapes"].is_object();
    for (const auto& [role, section] : info.sections) {
      if (shaped ? !entry["state_shapes"].contains(role) : role == "codes") continue;
      if (!shaped || !entry["state_shapes"][role].is_array())
        EDO_FAIL("{}: tier '{}': state '{}' has no shape", path, info.name, role);
      const io::SectionView v = c.section(section);
      NamedBlob b;
      b.name = role;
      for (const auto& e : entry["state_shapes"][role]) {
        if (!e.is_number_unsigned()) EDO_FAIL("{}: state '{}': a shape entry is not an integer", path, role);
        b.shape.push_back(e.get<uint64_t>());
      }
      const StateStorage storage = state_storage_in(entry, role, fmt::format("{}: tier '{}'", path, info.name));
      // The shape gives the count, as for a table's tiers; the section must hold it in its dtype.
      std::optional<uint64_t> count = uint64_t{1};
      for (const uint64_t e : b.shape) count = count ? checked_mul(*count, e) : std::nullopt;
      if (!count || !read_state_section(b, storage, v.data, v.size, *count))
        EDO_FAIL("{}: state '{}' is not a {} array", path, role, state_dtype_name(storage));
      tier.blobs.push_back(std::move(b));
    }
    s.tiers.push_back(std::move(tier));
  }
  return s;
}

// ---- merge ------------------------------------------------------------------------------

namespace {

struct Shard {
  std::string path;
  io::Container c;
  uint64_t index = 0, count = 0, first_row = 0, table_rows = 0;
  uint64_t digest = 0;
  std::string source_sample;  // the shard entry's kSourceSampleKey; empty in files written before it
  std::string source_hash;    // the shard entry's kSourceHashKey: "full", or "sampled" when absent
};

constexpr const char* kDigestKey = "source_fp32_rows_xxh3";

Shard open_shard(const std::string& path, io::Verify verify) {
  Shard s{path, io::Container::open(path, verify), 0, 0, 0, 0, 0, {}, "sampled"};
  const nlohmann::json& m = s.c.manifest();
  const std::optional<ShardEntry> e = shard_entry_of(m, path);
  if (!e)
    EDO_FAIL("{}: not a shard (its manifest has no \"shard\" entry): only files written with --shard merge", path);
  s.index = e->index;
  s.count = e->count;
  s.first_row = e->first_row;
  s.table_rows = e->table_rows;
  const nlohmann::json& prov = m["provenance"];
  const std::string hex =
      prov.contains(kDigestKey) && prov[kDigestKey].is_string() ? prov[kDigestKey].get<std::string>() : "";
  if (hex.size() != 16 || std::from_chars(hex.data(), hex.data() + hex.size(), s.digest, 16).ec != std::errc{})
    EDO_FAIL("{}: the provenance has no {} (written by an older edo?)", path, kDigestKey);
  for (const io::TierInfo& t : s.c.tiers())
    if (tier_kind_of(t.codec) == TierKind::grouped)
      EDO_FAIL("{}: tier '{}' ({}) is a group tier, which does not shard (docs/SCALE.md)", path, t.name, t.codec);
  const nlohmann::json& entry = m["shard"];
  if (entry.contains(kSourceSampleKey)) {
    if (!entry[kSourceSampleKey].is_string()) EDO_FAIL("{}: manifest: \"{}\" is not a string", path, kSourceSampleKey);
    s.source_sample = entry[kSourceSampleKey].get<std::string>();
  }
  if (entry.contains(kSourceHashKey)) {
    if (!entry[kSourceHashKey].is_string()) EDO_FAIL("{}: manifest: \"{}\" is not a string", path, kSourceHashKey);
    s.source_hash = source_hash_name(parse_source_hash(entry[kSourceHashKey].get<std::string>()));
  }
  return s;
}

// Opens a shard as a reader would (its tiers' sections against their rows
// and code sizes), where a lone shard can be read: a resealed manifest that
// keeps its checksums but lies about its rows fails here, naming the shard.
void check_readable(const Shard& s) {
  for (const io::TierInfo& t : s.c.tiers())
    if (answers_across_shards(tier_kind_of(t.codec))) return;  // checked on the merged file
  ReaderOptions opt;
  opt.allow_shard = true;
  opt.verify = io::Verify::structure;
  (void)Reader::open(s.path, opt);
}

// Sections holding the tier's rows one after another (FORMAT.md 9.8):
// concatenated in shard order by a merge. The others are the tier's state,
// equal in every shard.

// A sparse tier's entry keys that count its own rows' values (FORMAT.md 9.3).
constexpr const char* kSparseCounts[] = {"nnz", "offset_bytes", "density"};

// What must agree between shards: the manifest without what differs by row range.
nlohmann::json comparable(const io::Container& c) {
  nlohmann::json m = c.manifest();
  // Shards sampled from their table are matched by that sample, not by the
  // input's file name (the same table under two names merges; two tables
  // under one name do not).
  const bool sampled = m["shard"].is_object() && m["shard"].contains(kSourceSampleKey);
  for (const char* key : {"shard", "rows", "sections", "eval", "vocab"}) m.erase(key);
  m["provenance"].erase(kDigestKey);
  if (sampled) m["provenance"].erase("source");
  for (auto& tier : m["tiers"]) {
    tier.erase("rows");
    for (const char* key : kSparseCounts) tier.erase(key);
  }
  return m;
}

uint64_t tier_count(const Shard& s, size_t t, const char* key) {
  const nlohmann::json& e = s.c.manifest()["tiers"][t];
  if (!e.contains(key) || !e[key].is_number_unsigned())
    EDO_FAIL("{}: tier '{}' has no \"{}\" count", s.path, s.c.tiers()[t].name, key);
  return e[key].get<uint64_t>();
}

// Sparse tier t's offsets: each shard's row ends after its first, run on
// from the values of the shards before it, at the merged file's width.
void merge_offsets(io::ContainerWriter& writer, const std::vector<Shard>& shards, size_t t, const std::string& name,
                   uint64_t total_nnz) {
  const uint64_t out_width = sparse_offset_bytes(total_nnz);
  writer.begin_section(name);
  uint64_t base = 0;
  std::vector<uint8_t> piece;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& s = shards[i];
    const uint64_t width = tier_count(s, t, "offset_bytes"), rows = s.c.tiers()[t].rows;
    const io::SectionView v = s.c.section(name);
    if ((width != 4 && width != 8) || v.size != (rows + 1) * width)
      EDO_FAIL("{}: tier '{}': offsets of {} bytes for {} rows", s.path, s.c.tiers()[t].name, v.size, rows);
    for (uint64_t k = i == 0 ? 0 : 1; k <= rows;) {
      const uint64_t n = std::min<uint64_t>(rows + 1 - k, 1 << 20);
      piece.resize(n * out_width);
      for (uint64_t j = 0; j < n; ++j) {
        uint64_t end = 0;
        std::memcpy(&end, v.data + (k + j) * width, width);  // little-endian
        end += base;
        std::memcpy(piece.data() + j * out_width, &end, out_width);
      }
      writer.append(piece.data(), piece.size());
      k += n;
    }
    base += tier_count(s, t, "nnz");
  }
  writer.end_section();
}

void check_set(std::vector<Shard>& shards) {
  std::sort(shards.begin(), shards.end(), [](const Shard& a, const Shard& b) { return a.index < b.index; });
  const Shard& first = shards.front();
  if (first.count != shards.size()) {
    std::vector<uint64_t> missing;
    for (uint64_t i = 0; i < first.count && missing.size() < 8; ++i)
      if (std::none_of(shards.begin(), shards.end(), [&](const Shard& s) { return s.index == i; }))
        missing.push_back(i);
    EDO_USAGE_FAIL("{}: shard {}/{}, but {} shard files given{}", first.path, first.index, first.count, shards.size(),
                   missing.empty() ? std::string() : fmt::format(" (missing: {})", fmt::join(missing, ", ")));
  }
  uint64_t next = 0;
  const nlohmann::json agreed = comparable(first.c);
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& s = shards[i];
    if (s.count != first.count || s.table_rows != first.table_rows)
      EDO_FAIL("{}: shard of {} rows in {} parts, where {} is of {} rows in {}", s.path, s.table_rows, s.count,
               first.path, first.table_rows, first.count);
    if (s.index != i)
      EDO_FAIL("{}: shard {} given {}; shard {} is missing", s.path, s.index,
               i > 0 && shards[i - 1].index == s.index ? "twice" : "out of place", i);
    if (s.first_row != next)
      EDO_FAIL("{}: starts at row {}, where the shards before it end at row {} (overlap or gap)", s.path, s.first_row,
               next);
    next += s.c.rows();
    if (s.source_hash != first.source_hash)
      EDO_FAIL("{}: its source was hashed {} (--source-hash), {}'s {}: cut every shard with the same --source-hash",
               s.path, s.source_hash, first.path, s.source_hash == "full" ? "sampled" : "full");
    if (s.source_sample != first.source_sample)
      EDO_FAIL(
          "{}: cut from another table than {} (their hashed rows differ{}): shards merge only with shards "
          "of the same table",
          s.path, first.path,
          s.source_sample.empty() || first.source_sample.empty() ? ", or one was written by an older edo" : "");
    if (comparable(s.c) != agreed)
      EDO_FAIL(
          "{}: written with another codec, state or parameters than {}: shards must share one trained state "
          "(--trained) and the same command",
          s.path, first.path);
    for (const io::TierInfo& tier : s.c.tiers())
      for (const auto& [role, section] : tier.sections) {
        if (is_row_section(tier_kind_of(tier.codec), role)) continue;
        const io::SectionView a = s.c.section(section), b = first.c.section(section);
        if (a.size != b.size || std::memcmp(a.data, b.data, a.size) != 0)
          EDO_FAIL("{}: its codec state '{}' differs from {}'s: shards must share one trained state (--trained)",
                   s.path, role, first.path);
      }
    if (s.c.has_section(io::kVocabSection) != first.c.has_section(io::kVocabSection))
      EDO_FAIL("{}: {} words where {} {}", s.path, s.c.has_section(io::kVocabSection) ? "has" : "has no", first.path,
               first.c.has_section(io::kVocabSection) ? "has" : "has none");
  }
  if (next != first.table_rows)
    EDO_FAIL("{}: the shards hold {} rows of a table of {}", shards.back().path, next, first.table_rows);
}

}  // namespace

uint64_t merge_shards(const std::vector<std::string>& paths, const std::string& out_path) {
  if (paths.empty()) EDO_USAGE_FAIL("--merge: no shard files given");
  if (io::Container::open(paths.front()).is_model()) return merge_model_shards(paths, out_path);
  std::vector<Shard> shards;
  for (const std::string& p : paths) shards.push_back(open_shard(p, io::Verify::all));
  check_set(shards);
  for (const Shard& s : shards) check_readable(s);
  const Shard& first = shards.front();
  const uint64_t rows = first.table_rows;
  const size_t ntiers = first.c.tiers().size();
  std::map<std::string, size_t> row_sections;  // by name: its tier; concatenated in shard order
  std::vector<uint64_t> nnz(ntiers, 0);        // sparse tiers' values, summed
  for (size_t t = 0; t < ntiers; ++t) {
    const io::TierInfo& info = first.c.tiers()[t];
    for (const auto& [role, name] : info.sections)
      if (is_row_section(tier_kind_of(info.codec), role)) row_sections[name] = t;
    if (tier_kind_of(info.codec) != TierKind::sparse) continue;
    const bool int4 = parse_sparse_spec(info.codec, first.c.dim()).values == SparseValues::int4;
    for (const Shard& s : shards) {
      const uint64_t n = tier_count(s, t, "nnz");
      if (int4 && n % 2 != 0)  // int4 values pair in bytes: an odd count would not concatenate
        EDO_FAIL("{}: tier '{}' holds an odd count of int4 values ({})", s.path, info.name, n);
      nnz[t] += n;
    }
  }
  io::ContainerWriter writer(out_path);
  constexpr uint64_t kPiece = uint64_t{16} << 20;
  // The whole row map, rebuilt from the shards' (each writes the packed map:
  // FORMAT.md 9.8). Where one process would write it as runs (9.2), so does
  // the merge, in the packed map's place.
  std::vector<uint8_t> tier_of_row;
  if (first.c.has_section("rowmap/tier")) {
    for (const Shard& s : shards) {
      const io::SectionView v = s.c.section("rowmap/tier");
      tier_of_row.insert(tier_of_row.end(), v.data, v.data + v.size);
    }
    if (tier_of_row.size() != rows)
      EDO_FAIL("{}: the shards' row maps hold {} of {} rows", first.path, tier_of_row.size(), rows);
  }
  const std::vector<uint64_t> runs =
      tier_of_row.empty() ? std::vector<uint64_t>{} : written_row_runs(tier_of_row.data(), rows);
  for (const io::SectionInfo& section : first.c.sections()) {
    const auto row_tier = row_sections.find(section.name);
    const bool code_rows = row_tier != row_sections.end();
    if (code_rows && section.name.ends_with("/offsets") &&
        tier_kind_of(first.c.tiers()[row_tier->second].codec) == TierKind::sparse) {
      merge_offsets(writer, shards, row_tier->second, section.name, nnz[row_tier->second]);
    } else if (section.name == "rowmap/tier" && !runs.empty()) {
      writer.add_section("rowmap/runs", runs.data(), runs.size() * sizeof(uint64_t));
    } else if ((section.name == "rowmap/rank" || section.name == "rowmap/local") && !runs.empty()) {
      continue;  // the runs stand for the whole packed map
    } else if (code_rows) {
      writer.begin_section(section.name);
      for (const Shard& s : shards) {
        const io::SectionView v = s.c.section(section.name);
        for (uint64_t at = 0; at < v.size; at += kPiece) {
          const uint64_t n = std::min(kPiece, v.size - at);
          writer.append(v.data + at, n);
          s.c.release(v.data + at, n);  // streamed: the shards' pages do not stay resident
        }
      }
      writer.end_section();
    } else if (section.name == "rowmap/tier") {
      writer.add_section(section.name, tier_of_row.data(), tier_of_row.size());
    } else if (section.name == "rowmap/rank") {
      const std::vector<uint64_t> rank = io::rowmap_rank(tier_of_row.data(), rows, static_cast<uint32_t>(ntiers));
      writer.add_section(section.name, rank.data(), rank.size() * sizeof(uint64_t));
    } else if (section.name == "rowmap/local") {
      if (rows <= UINT32_MAX) detail::write_local_indices(writer, tier_of_row, ntiers);
    } else if (section.name == io::kVocabSection) {
      std::vector<std::string> words;
      for (const Shard& s : shards) {
        const auto part = io::read_vocab_section(s.c);
        words.insert(words.end(), part->begin(), part->end());
      }
      const std::string bytes = io::vocab_section_bytes(words);
      writer.add_section(section.name, bytes.data(), bytes.size());
    } else {
      const io::SectionView v = first.c.section(section.name);
      writer.add_section(section.name, v.data, v.size);
    }
  }
  nlohmann::json manifest = first.c.manifest();
  for (const char* key : {"shard", "sections", "eval"}) manifest.erase(key);
  uint64_t digest = 0;
  for (const Shard& s : shards) digest += s.digest;
  manifest["rows"] = rows;
  for (size_t t = 0; t < ntiers; ++t) {
    uint64_t tier_rows = 0;
    for (const Shard& s : shards) tier_rows += s.c.tiers()[t].rows;
    nlohmann::json& entry = manifest["tiers"][t];
    entry["rows"] = tier_rows;
    if (tier_kind_of(first.c.tiers()[t].codec) == TierKind::sparse) {
      entry["nnz"] = nnz[t];
      entry["offset_bytes"] = sparse_offset_bytes(nnz[t]);
      entry["density"] = sparse_density(nnz[t], tier_rows, first.c.dim());
    }
  }
  if (!runs.empty()) manifest["rowmap"] = {{"runs", "rowmap/runs"}};
  if (manifest.contains("rowmap") && rows > UINT32_MAX) manifest["rowmap"].erase("local");
  if (manifest.contains("vocab")) manifest["vocab"]["words"] = rows;
  manifest["provenance"][kDigestKey] = fmt::format("{:016x}", digest);
  set_required_features(manifest);
  // The merged file is read back as a reader would before it is published.
  writer.finish(manifest, [&](const std::string& temp) {
    try {
      (void)Reader::open(temp);
    } catch (const Error& e) {
      std::string why = e.what();
      if (const size_t at = why.find(temp); at != std::string::npos) why.replace(at, temp.size(), out_path);
      EDO_FAIL("{}: the shards do not merge into a readable table: {}", out_path, why);
    }
  });
  return rows;
}

void write_shard_set(const std::vector<std::string>& paths, const std::string& out_path) {
  if (paths.empty()) EDO_USAGE_FAIL("--shard-set: no shard files given");
  if (io::Container::open(paths.front()).is_model())
    EDO_USAGE_FAIL("--shard-set: {} is a model's shard; a shard set names one table's shards: --merge them",
                   paths.front());
  std::vector<Shard> shards;
  // Every section checksum, as --merge checks them: the set is read as one table later.
  for (const std::string& p : paths) shards.push_back(open_shard(p, io::Verify::all));
  check_set(shards);
  for (const Shard& s : shards) check_readable(s);
  for (const io::TierInfo& t : shards.front().c.tiers())
    if (answers_across_shards(tier_kind_of(t.codec)))
      EDO_USAGE_FAIL(
          "--shard-set: tier '{}' ({}) answers ids with rows outside each shard: merge the shards "
          "(--merge) instead",
          t.name, t.codec);
  const std::filesystem::path dir = std::filesystem::absolute(out_path).parent_path();
  nlohmann::json list = nlohmann::json::array();
  for (const Shard& s : shards) {
    // Beside or below the set: relative to it, so the set and its shards move together.
    const std::filesystem::path file = std::filesystem::absolute(s.path).lexically_normal();
    const std::filesystem::path rel = file.lexically_relative(dir.lexically_normal());
    const bool below = !rel.empty() && *rel.begin() != "..";
    list.push_back({{"file", below ? rel.string() : file.string()},
                    {"first_row", s.first_row},
                    {"rows", s.c.rows()},
                    {"file_bytes", s.c.file_size()},
                    {"manifest_xxh64", fmt::format("{:016x}", s.c.manifest_checksum())}});
  }
  const nlohmann::json set = {
      {"edo_shard_set", 1}, {"rows", shards.front().table_rows}, {"dim", shards.front().c.dim()}, {"shards", list}};
  const std::string text = set.dump(2) + "\n";
  io::AtomicFile out(out_path);
  out.write(text.data(), text.size());
  out.commit();
}

}  // namespace edo
