// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/limits.hpp>

#include <xxhash.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <unordered_set>

namespace edo::io {
namespace {

using json = nlohmann::json;

// Appends that are at least this large skip the buffer.
constexpr size_t kWriteBufferBytes = size_t{1} << 20;
constexpr uint8_t kZeros[kContainerAlignment] = {};

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

std::string hex64(uint64_t v) { return fmt::format("{:016x}", v); }

std::optional<uint64_t> parse_hex64(const std::string& s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9')
      d = c - '0';
    else if (c >= 'a' && c <= 'f')
      d = c - 'a' + 10;
    else
      return std::nullopt;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return v;
}

// JSON integers built in memory may be signed; parsed ones are unsigned.
std::optional<uint64_t> as_u64(const json& v) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  return std::nullopt;
}

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string& string_member(const json& object, const char* key, const std::string& where,
                                 const std::string& path) {
  const json* v = member(object, key);
  if (!v || !v->is_string()) EDO_CORRUPT_FAIL("{}: manifest: {}\"{}\" must be a string", path, where, key);
  return v->get_ref<const std::string&>();
}

uint64_t unsigned_member(const json& object, const char* key, const std::string& where, const std::string& path) {
  const json* v = member(object, key);
  const auto value = v ? as_u64(*v) : std::nullopt;
  if (!value) EDO_CORRUPT_FAIL("{}: manifest: {}\"{}\" must be a non-negative integer", path, where, key);
  return *value;
}

// Bracket depth of the JSON text, counted outside strings. Checked before
// parsing so that hostile nesting costs one linear scan and nothing more.
int json_depth(std::string_view text) {
  int depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      max_depth = std::max(max_depth, ++depth);
      if (max_depth > kMaxManifestDepth) break;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return max_depth;
}

// Parses the manifest, rejecting duplicate object keys: nlohmann would keep
// the last silently, and other readers might keep the first.
json parse_manifest(std::string_view text, const std::string& path) {
  if (json_depth(text) > kMaxManifestDepth)
    EDO_CORRUPT_FAIL("{}: manifest nests deeper than {} levels", path, kMaxManifestDepth);
  std::vector<std::set<std::string>> keys_by_object;
  uint64_t values = 0;
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::key:
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        break;
      default:
        // Parsed JSON takes 10-30 times the bytes of its text: bound what a
        // manifest within the size cap can cost in memory.
        if (++values > kMaxManifestValues)
          EDO_CORRUPT_FAIL("{}: manifest has more than {} JSON values", path, kMaxManifestValues);
    }
    switch (event) {
      case json::parse_event_t::object_start:
        keys_by_object.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys_by_object.pop_back();
        break;
      case json::parse_event_t::key:
        if (!keys_by_object.back().insert(parsed.get<std::string>()).second)
          EDO_CORRUPT_FAIL("{}: manifest has a duplicate key \"{}\"", path, parsed.get<std::string>());
        break;
      default:
        break;
    }
    return true;
  };
  try {
    json manifest = json::parse(text.begin(), text.end(), on_event);
    if (!manifest.is_object()) EDO_CORRUPT_FAIL("{}: manifest is not a JSON object", path);
    return manifest;
  } catch (const json::exception& e) {
    EDO_CORRUPT_FAIL("{}: manifest is not valid JSON: {}", path, e.what());
  }
}

void check_zero(const uint8_t* base, uint64_t from, uint64_t to, const char* what, const std::string& path) {
  for (uint64_t i = from; i < to; ++i)
    if (base[i] != 0) EDO_CORRUPT_FAIL("{}: non-zero byte at offset {} in the padding {}", path, i, what);
}

std::vector<SectionInfo> parse_sections_table(const json& manifest, const ContainerHeader& header, const uint8_t* base,
                                              const std::string& path) {
  const json* table = member(manifest, manifest_key::sections);
  if (!table || !table->is_array()) EDO_CORRUPT_FAIL("{}: manifest has no \"sections\" array", path);
  if (table->size() != header.section_count)
    EDO_CORRUPT_FAIL("{}: manifest lists {} sections, the header says {}", path, table->size(), header.section_count);

  std::vector<SectionInfo> sections;
  sections.reserve(table->size());
  std::unordered_set<std::string> names;
  uint64_t previous_end = kContainerHeaderSize;
  std::string previous = "the header";
  for (size_t i = 0; i < table->size(); ++i) {
    const json& entry = (*table)[i];
    const std::string where = fmt::format("sections[{}].", i);
    if (!entry.is_object()) EDO_CORRUPT_FAIL("{}: manifest: sections[{}] is not an object", path, i);
    SectionInfo s;
    s.name = string_member(entry, manifest_key::section_name, where, path);
    if (!valid_section_name(s.name))
      EDO_CORRUPT_FAIL("{}: manifest: {}name is not a valid section name (want [A-Za-z0-9_.:/-]{{1,128}})", path,
                       where);
    s.offset = unsigned_member(entry, manifest_key::section_offset, where, path);
    s.length = unsigned_member(entry, manifest_key::section_length, where, path);
    const auto digest = parse_hex64(string_member(entry, manifest_key::section_xxh64, where, path));
    if (!digest) EDO_CORRUPT_FAIL("{}: manifest: {}xxh64 must be 16 lowercase hex digits", path, where);
    s.xxh64 = *digest;

    if (s.offset % kContainerAlignment != 0)
      EDO_CORRUPT_FAIL("{}: section '{}': offset {} is not a multiple of {}", path, s.name, s.offset,
                       kContainerAlignment);
    const auto end = checked_add(s.offset, s.length);
    if (!end) EDO_CORRUPT_FAIL("{}: section '{}': offset {} + length {} overflows", path, s.name, s.offset, s.length);
    if (*end > header.manifest_offset)
      EDO_CORRUPT_FAIL("{}: section '{}' [{}, {}) runs past the manifest at offset {}", path, s.name, s.offset, *end,
                       header.manifest_offset);
    if (!sections.empty() && s.offset < sections.back().offset)
      EDO_CORRUPT_FAIL("{}: sections are not sorted by offset ('{}' comes after '{}')", path, s.name, previous);
    if (s.offset < previous_end) EDO_CORRUPT_FAIL("{}: section '{}' overlaps {}", path, s.name, previous);
    // One valid layout only: each section at the first aligned offset after
    // the previous one, so the only bytes outside checksums are < 64-byte pads.
    if (s.offset != align_up(previous_end))
      EDO_CORRUPT_FAIL("{}: section '{}' starts at {}, expected {} (sections are packed in order)", path, s.name,
                       s.offset, align_up(previous_end));
    if (!names.insert(s.name).second) EDO_CORRUPT_FAIL("{}: section name '{}' appears twice", path, s.name);
    check_zero(base, previous_end, s.offset, fmt::format("before section '{}'", s.name).c_str(), path);
    previous_end = *end;
    previous = fmt::format("section '{}'", s.name);
    sections.push_back(std::move(s));
  }
  if (header.manifest_offset != align_up(previous_end))
    EDO_CORRUPT_FAIL("{}: manifest starts at {}, expected {} (right after the last section)", path,
                     header.manifest_offset, align_up(previous_end));
  check_zero(base, previous_end, header.manifest_offset, "before the manifest", path);
  return sections;
}

std::vector<TierInfo> parse_tiers(const json& manifest, const std::string& path) {
  std::unordered_set<std::string> section_names;
  const json* table = member(manifest, manifest_key::sections);
  if (!table || !table->is_array()) EDO_CORRUPT_FAIL("{}: manifest has no \"sections\" array", path);
  for (const json& s : *table) {
    const json* name = s.is_object() ? member(s, manifest_key::section_name) : nullptr;
    if (name && name->is_string()) section_names.insert(name->get<std::string>());
  }
  const uint64_t rows = unsigned_member(manifest, manifest_key::rows, "", path);

  const json* tiers = member(manifest, manifest_key::tiers);
  if (!tiers || !tiers->is_array() || tiers->empty())
    EDO_CORRUPT_FAIL("{}: manifest: \"tiers\" must be a non-empty array", path);
  std::vector<TierInfo> out;
  std::unordered_set<std::string> tier_names;
  for (size_t i = 0; i < tiers->size(); ++i) {
    const json& t = (*tiers)[i];
    const std::string where = fmt::format("tiers[{}].", i);
    if (!t.is_object()) EDO_CORRUPT_FAIL("{}: manifest: tiers[{}] is not an object", path, i);
    TierInfo tier;
    tier.name = string_member(t, manifest_key::tier_name, where, path);
    tier.codec = string_member(t, manifest_key::tier_codec, where, path);
    if (tier.name.empty() || tier.codec.empty())
      EDO_CORRUPT_FAIL("{}: manifest: {}name and codec must not be empty", path, where);
    if (!tier_names.insert(tier.name).second)
      EDO_CORRUPT_FAIL("{}: manifest: tier name '{}' appears twice", path, tier.name);
    tier.rows = unsigned_member(t, manifest_key::tier_rows, where, path);
    if (tier.rows > rows)
      EDO_CORRUPT_FAIL("{}: manifest: tier '{}' has {} rows, more than the table's {}", path, tier.name, tier.rows,
                       rows);
    const json* roles = member(t, manifest_key::tier_sections);
    if (!roles || !roles->is_object()) EDO_CORRUPT_FAIL("{}: manifest: {}sections must be an object", path, where);
    for (const auto& [role, name] : roles->items()) {
      if (!name.is_string())
        EDO_CORRUPT_FAIL("{}: manifest: tier '{}': section for role '{}' must be a string", path, tier.name, role);
      const auto& section = name.get_ref<const std::string&>();
      if (!section_names.count(section))
        EDO_CORRUPT_FAIL("{}: tier '{}' refers to missing section '{}' (role '{}')", path, tier.name, section, role);
      tier.sections.emplace(role, section);
    }
    if (const json* residency = member(t, manifest_key::tier_residency)) {
      tier.residency =
          residency->is_string() ? parse_residency(residency->get_ref<const std::string&>()) : std::nullopt;
      if (!tier.residency)
        EDO_CORRUPT_FAIL("{}: manifest: tier '{}': residency must be \"gpu\", \"host\" or \"disk\"", path, tier.name);
    }
    out.push_back(std::move(tier));
  }
  return out;
}

}  // namespace

// ---- header ------------------------------------------------------------------

void ContainerHeader::encode(uint8_t out[kContainerHeaderSize]) const {
  std::memcpy(out, magic, 8);
  put_le(out + 8, major, 2);
  put_le(out + 10, minor, 2);
  put_le(out + 12, flags, 4);
  put_le(out + 16, file_size, 8);
  put_le(out + 24, manifest_offset, 8);
  put_le(out + 32, manifest_length, 8);
  put_le(out + 40, manifest_xxh64, 8);
  put_le(out + 48, section_count, 4);
  put_le(out + 52, reserved, 4);
  put_le(out + 56, header_xxh64, 8);
}

ContainerHeader ContainerHeader::decode(const uint8_t in[kContainerHeaderSize]) {
  ContainerHeader h;
  std::memcpy(h.magic, in, 8);
  h.major = static_cast<uint16_t>(get_le(in + 8, 2));
  h.minor = static_cast<uint16_t>(get_le(in + 10, 2));
  h.flags = static_cast<uint32_t>(get_le(in + 12, 4));
  h.file_size = get_le(in + 16, 8);
  h.manifest_offset = get_le(in + 24, 8);
  h.manifest_length = get_le(in + 32, 8);
  h.manifest_xxh64 = get_le(in + 40, 8);
  h.section_count = static_cast<uint32_t>(get_le(in + 48, 4));
  h.reserved = static_cast<uint32_t>(get_le(in + 52, 4));
  h.header_xxh64 = get_le(in + 56, 8);
  return h;
}

uint64_t ContainerHeader::compute_checksum() const {
  uint8_t bytes[kContainerHeaderSize];
  encode(bytes);
  return checksum64(bytes, 56);
}

uint64_t checksum64(const void* data, size_t size) { return XXH64(data, size, 0); }

bool valid_section_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSectionNameLength) return false;
  for (char c : name) {
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
                    c == '.' || c == ':' || c == '/' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// "requires" (FORMAT.md 8.1): an array of the names of features this reader
// implements; any other name is refused, by name, before anything is decoded.
void check_required_features(const json& manifest, const std::string& path) {
  const json* names = member(manifest, manifest_key::required_features);
  if (!names) return;
  if (!names->is_array() || names->size() > kMaxRequiredFeatures)
    EDO_CORRUPT_FAIL("{}: manifest: \"requires\" must be an array of at most {} feature names", path,
                     kMaxRequiredFeatures);
  for (const json& name : *names) {
    if (!name.is_string()) EDO_CORRUPT_FAIL("{}: manifest: \"requires\" holds a value that is no feature name", path);
    const std::string& feature = name.get_ref<const std::string&>();
    if (std::find(std::begin(kFormatFeatures), std::end(kFormatFeatures), feature) == std::end(kFormatFeatures))
      EDO_UNSUPPORTED_FAIL(
          "{}: the file requires format feature '{}', which this reader does not implement (FORMAT.md 8.1): "
          "read it with a newer edo",
          path, feature.size() > 64 ? feature.substr(0, 64) + "..." : feature);
  }
}

std::vector<TierInfo> validate_manifest_schema(const json& manifest, const std::string& path) {
  const json* format = member(manifest, manifest_key::format);
  if (!format || *format != kManifestFormat)
    EDO_CORRUPT_FAIL("{}: manifest: \"format\" must be \"{}\"", path, kManifestFormat);
  // A trained state (FORMAT.md 9.8) is the one file with no rows.
  const bool trained_only = manifest.contains("trained_only");
  for (const char* key : {manifest_key::rows, manifest_key::dim})
    if (unsigned_member(manifest, key, "", path) == 0 && !(trained_only && key == manifest_key::rows))
      EDO_CORRUPT_FAIL("{}: manifest: \"{}\" must be positive", path, key);
  if (const uint64_t dim = unsigned_member(manifest, manifest_key::dim, "", path); dim > kMaxDim)
    EDO_CORRUPT_FAIL("{}: manifest: \"dim\" {} is more than the {} columns a table may have", path, dim, kMaxDim);
  const json* provenance = member(manifest, manifest_key::provenance);
  if (!provenance || !provenance->is_object()) EDO_CORRUPT_FAIL("{}: manifest: \"provenance\" must be an object", path);
  if (const json* name = member(manifest, manifest_key::table_name_of_file);
      name && !(name->is_string() && valid_table_name(name->get_ref<const std::string&>())))
    EDO_CORRUPT_FAIL("{}: manifest: \"{}\" must be a table name (1 to 256 printable characters, no spaces or quotes)",
                     path, manifest_key::table_name_of_file);
  return parse_tiers(manifest, path);
}

bool valid_table_name(std::string_view name) {
  if (name.empty() || name.size() > 256) return false;
  for (const char c : name)
    if (c <= ' ' || c > '~' || c == '"' || c == '\\' || c == '\'') return false;
  return true;
}

std::vector<ModelTableInfo> validate_model_schema(const json& manifest, const std::string& path,
                                                  const std::vector<SectionInfo>& sections) {
  const json* format = member(manifest, manifest_key::format);
  if (!format || *format != kManifestFormat)
    EDO_CORRUPT_FAIL("{}: manifest: \"format\" must be \"{}\"", path, kManifestFormat);
  for (const char* key : {manifest_key::rows, manifest_key::dim, manifest_key::tiers})
    if (manifest.contains(key))
      EDO_CORRUPT_FAIL("{}: manifest: a model file has no \"{}\" of its own (its tables do)", path, key);
  const json* provenance = member(manifest, manifest_key::provenance);
  if (!provenance || !provenance->is_object()) EDO_CORRUPT_FAIL("{}: manifest: \"provenance\" must be an object", path);
  const json& model = manifest[manifest_key::model];
  const json* tables = model.is_object() ? member(model, manifest_key::model_tables) : nullptr;
  if (!tables || !tables->is_array() || tables->empty())
    EDO_CORRUPT_FAIL("{}: manifest: \"model\" must be an object with a non-empty \"tables\" array", path);
  if (tables->size() > kMaxModelTables)
    EDO_CORRUPT_FAIL("{}: manifest: the model lists {} tables, more than the {} a model file may hold", path,
                     tables->size(), kMaxModelTables);
  std::set<std::string> names, used;
  std::set<std::string> section_names;
  for (const SectionInfo& s : sections) section_names.insert(s.name);
  std::vector<ModelTableInfo> out;
  out.reserve(tables->size());
  for (size_t i = 0; i < tables->size(); ++i) {
    const json& t = (*tables)[i];
    if (!t.is_object()) EDO_CORRUPT_FAIL("{}: manifest: model table {} must be an object", path, i);
    const std::string where = fmt::format("model table {}", i);
    ModelTableInfo info;
    info.name = string_member(t, manifest_key::table_name, where, path);
    info.section = string_member(t, manifest_key::table_section, where, path);
    if (!valid_table_name(info.name))
      EDO_CORRUPT_FAIL(
          "{}: manifest: model table {}: '{}' is not a table name (1 to 256 printable characters, no spaces or "
          "quotes)",
          path, i, info.name.substr(0, 300));
    if (!names.insert(info.name).second)
      EDO_CORRUPT_FAIL("{}: manifest: two model tables are named '{}'", path, info.name);
    if (!section_names.count(info.section))
      EDO_CORRUPT_FAIL("{}: manifest: model table '{}' refers to missing section '{}'", path, info.name, info.section);
    if (!used.insert(info.section).second)
      EDO_CORRUPT_FAIL("{}: manifest: model tables share section '{}'", path, info.section);
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ModelTableInfo> validate_model_schema(const json& manifest, const std::string& path) {
  std::vector<SectionInfo> sections;
  if (const json* table = member(manifest, manifest_key::sections); table && table->is_array())
    for (const json& s : *table)
      if (s.is_object() && s.contains(manifest_key::section_name) && s[manifest_key::section_name].is_string())
        sections.push_back({s[manifest_key::section_name].get<std::string>(), 0, 0, 0});
  return validate_model_schema(manifest, path, sections);
}

// ---- reader ------------------------------------------------------------------

Container Container::open(const std::string& path, Verify verify, Placement placement) {
  Container c;
  c.path_ = path;
  c.backing_path_ = path;
  c.file_ = std::make_shared<const MappedFile>(path, placement);
  c.data_ = c.file_->data();
  c.size_ = c.file_->size();
  c.validate(verify);
  return c;
}

Container Container::view(const uint8_t* data, uint64_t size, const std::string& name, Verify verify) {
  Container c;
  c.path_ = name;
  c.data_ = data;
  c.size_ = size;
  c.validate(verify);
  return c;
}

void Container::validate(Verify verify) {
  const std::string& path = path_;
  if (size_ < kContainerHeaderSize)
    EDO_CORRUPT_FAIL("{}: file is {} bytes, too short for the {}-byte .edo header", path, size_, kContainerHeaderSize);
  header_ = ContainerHeader::decode(data_);
  const ContainerHeader& h = header_;
  if (std::memcmp(h.magic, kContainerMagic, sizeof kContainerMagic) != 0)
    EDO_CORRUPT_FAIL("{}: not an .edo file (bad magic)", path);
  // The version comes before the checksum: a future major version may
  // checksum its header differently.
  if (h.major != kContainerMajor)
    EDO_UNSUPPORTED_FAIL("{}: .edo format version {}.{} is not supported (this reader reads {}.x)", path, h.major,
                         h.minor, kContainerMajor);
  if (h.compute_checksum() != h.header_xxh64) EDO_CORRUPT_FAIL("{}: header checksum mismatch", path);
  if (h.flags != 0) EDO_UNSUPPORTED_FAIL("{}: header flags {:#x} are not supported (must be 0)", path, h.flags);
  if (h.reserved != 0) EDO_CORRUPT_FAIL("{}: header reserved field is not zero", path);
  if (h.file_size != size_)
    EDO_CORRUPT_FAIL("{}: header says the file is {} bytes, it is {} (truncated or extended?)", path, h.file_size,
                     size_);

  if (h.manifest_length == 0) EDO_CORRUPT_FAIL("{}: manifest is empty", path);
  if (h.manifest_length > kMaxManifestBytes)
    EDO_CORRUPT_FAIL("{}: manifest is {} bytes, more than the {} byte limit", path, h.manifest_length,
                     kMaxManifestBytes);
  if (h.manifest_offset < kContainerHeaderSize || h.manifest_offset % kContainerAlignment != 0)
    EDO_CORRUPT_FAIL("{}: manifest offset {} is not a multiple of {} after the header", path, h.manifest_offset,
                     kContainerAlignment);
  const auto manifest_end = checked_add(h.manifest_offset, h.manifest_length);
  if (!manifest_end || *manifest_end > size_)
    EDO_CORRUPT_FAIL("{}: manifest [{}, +{}) runs past the end of the file ({} bytes)", path, h.manifest_offset,
                     h.manifest_length, size_);
  if (align_up(*manifest_end) != size_)
    EDO_CORRUPT_FAIL("{}: file is {} bytes, expected {} (the manifest, padded to {} bytes, ends the file)", path, size_,
                     align_up(*manifest_end), kContainerAlignment);
  const std::string_view text(reinterpret_cast<const char*>(data_ + h.manifest_offset), h.manifest_length);
  if (checksum64(text.data(), text.size()) != h.manifest_xxh64)
    EDO_CORRUPT_FAIL("{}: manifest checksum mismatch", path);
  check_zero(data_, *manifest_end, size_, "after the manifest", path);

  manifest_ = parse_manifest(text, path);
  check_required_features(manifest_, path);
  sections_ = parse_sections_table(manifest_, h, data_, path);
  sections_by_name_.resize(sections_.size());
  for (uint32_t i = 0; i < sections_by_name_.size(); ++i) sections_by_name_[i] = i;
  std::sort(sections_by_name_.begin(), sections_by_name_.end(),
            [&](uint32_t a, uint32_t b) { return sections_[a].name < sections_[b].name; });
  if (manifest_.contains(manifest_key::model)) {
    // A model file: its tables are validated as files of their own when opened.
    model_tables_ = validate_model_schema(manifest_, path, sections_);
  } else {
    tiers_ = validate_manifest_schema(manifest_, path);
    rows_ = manifest_[manifest_key::rows].get<uint64_t>();
    dim_ = manifest_[manifest_key::dim].get<uint64_t>();
  }
  if (verify == Verify::all) this->verify();
}

Container Container::model_table(size_t i, Verify verify) const {
  if (i >= model_tables_.size()) EDO_CORRUPT_FAIL("{}: no model table {}", path_, i);
  const ModelTableInfo& t = model_tables_[i];
  const SectionView bytes = section(t.section);
  Container c;
  c.path_ = path_ + ":" + t.name;
  c.backing_path_ = backing_path_;
  c.backing_offset_ = backing_offset_ + static_cast<uint64_t>(bytes.data - data_);
  c.file_ = file_;
  c.data_ = bytes.data;
  c.size_ = bytes.size;
  c.validate(verify);
  if (c.is_model()) EDO_CORRUPT_FAIL("{}: a model table is itself a model file", c.path_);
  return c;
}

const SectionInfo* Container::find(std::string_view name) const {
  // A model of many tables looks up a section per table: no linear search.
  const auto it = std::lower_bound(sections_by_name_.begin(), sections_by_name_.end(), name,
                                   [&](uint32_t i, std::string_view n) { return sections_[i].name < n; });
  return it != sections_by_name_.end() && sections_[*it].name == name ? &sections_[*it] : nullptr;
}

bool Container::has_section(std::string_view name) const { return find(name) != nullptr; }

SectionView Container::section(std::string_view name) const {
  const SectionInfo* s = find(name);
  if (!s) EDO_CORRUPT_FAIL("{}: no section named '{}'", path_, name);
  return {data_ + s->offset, s->length};
}

void Container::release(const uint8_t* data, uint64_t size) const {
  if (file_ && data >= data_ && data + size <= data_ + size_)
    file_->release(static_cast<uint64_t>(data - file_->data()), size);
}

Checksum64Stream::Checksum64Stream() : state_(XXH64_createState()) {
  if (!state_) EDO_FAIL("out of memory for a checksum state");
  XXH64_reset(state_, 0);
}

Checksum64Stream::~Checksum64Stream() { XXH64_freeState(state_); }

void Checksum64Stream::update(const void* data, size_t size) { XXH64_update(state_, data, size); }

uint64_t Checksum64Stream::digest() const { return XXH64_digest(state_); }

// In Verify's order.
constexpr const char* kVerifyNames[] = {"structure", "small", "all"};

Verify parse_verify(std::string_view name) {
  for (size_t i = 0; i < std::size(kVerifyNames); ++i)
    if (name == kVerifyNames[i]) return static_cast<Verify>(i);
  EDO_USAGE_FAIL("verify '{}': expected structure, small or all", name);
}

const char* verify_name(Verify verify) {
  const auto i = static_cast<size_t>(verify);
  return i < std::size(kVerifyNames) ? kVerifyNames[i] : "structure";
}

void Container::verify() const {
  verify([](const SectionInfo&) { return true; });
}

void Container::verify(const std::function<bool(const SectionInfo&)>& which) const {
  // Hashed in pieces, each let go once read: verifying a table larger than
  // memory keeps no more than a piece of it resident.
  constexpr uint64_t kPiece = uint64_t{16} << 20;
  std::unique_ptr<XXH64_state_t, XXH_errorcode (*)(XXH64_state_t*)> state(XXH64_createState(), XXH64_freeState);
  for (const SectionInfo& s : sections_) {
    if (!which(s)) continue;
    XXH64_reset(state.get(), 0);
    for (uint64_t at = 0; at < s.length; at += kPiece) {
      const uint64_t n = std::min(kPiece, s.length - at);
      XXH64_update(state.get(), data_ + s.offset + at, n);
      if (file_) file_->release(backing_offset_ + s.offset + at, n);
    }
    const uint64_t actual = XXH64_digest(state.get());
    if (actual != s.xxh64)
      EDO_CORRUPT_FAIL("{}: section '{}' checksum mismatch (manifest {}, data {})", path_, s.name, hex64(s.xxh64),
                       hex64(actual));
  }
}

// ---- writer ------------------------------------------------------------------

void ContainerWriter::HashStateDeleter::operator()(XXH64_state_s* state) const { XXH64_freeState(state); }

ContainerWriter::ContainerWriter(const std::string& path) : file_(path), hash_(XXH64_createState()) {
  if (!hash_) EDO_FAIL("{}: out of memory for the checksum state", path);
  buffer_.reserve(kWriteBufferBytes);
  // The header is patched in by finish(), once its fields are known.
  write(kZeros, kContainerHeaderSize);
}

ContainerWriter::~ContainerWriter() = default;

void ContainerWriter::require_open(const char* operation) const {
  if (finished_) EDO_FAIL("{}: {}() after finish()", path(), operation);
}

void ContainerWriter::write(const void* data, size_t size) {
  if (size >= kWriteBufferBytes) {
    flush();
    file_.write(data, size);
  } else {
    if (buffer_.size() + size > kWriteBufferBytes) flush();
    const auto* p = static_cast<const uint8_t*>(data);
    buffer_.insert(buffer_.end(), p, p + size);
  }
  position_ += size;
}

void ContainerWriter::flush() {
  if (buffer_.empty()) return;
  file_.write(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void ContainerWriter::pad_to_alignment() { write(kZeros, align_up(position_) - position_); }

void ContainerWriter::begin_section(std::string_view name) {
  require_open("begin_section");
  if (in_section_) EDO_FAIL("{}: begin_section('{}') while section '{}' is open", path(), name, sections_.back().name);
  if (!valid_section_name(name))
    EDO_FAIL("{}: '{}' is not a valid section name (want [A-Za-z0-9_.:/-]{{1,128}})", path(), name);
  for (const SectionInfo& s : sections_)
    if (s.name == name) EDO_FAIL("{}: section '{}' written twice", path(), name);
  pad_to_alignment();
  XXH64_reset(hash_.get(), 0);
  sections_.push_back({std::string(name), position_, 0, 0});
  in_section_ = true;
}

void ContainerWriter::append(const void* data, size_t size) {
  require_open("append");
  if (!in_section_) EDO_FAIL("{}: append() outside a section", path());
  XXH64_update(hash_.get(), data, size);
  write(data, size);
  sections_.back().length += size;
}

void ContainerWriter::end_section() {
  require_open("end_section");
  if (!in_section_) EDO_FAIL("{}: end_section() without begin_section()", path());
  sections_.back().xxh64 = XXH64_digest(hash_.get());
  in_section_ = false;
}

void ContainerWriter::add_section(std::string_view name, const void* data, size_t size) {
  begin_section(name);
  append(data, size);
  end_section();
}

void ContainerWriter::finish(nlohmann::json manifest, const std::function<void(const std::string&)>& check) {
  require_open("finish");
  if (in_section_) EDO_FAIL("{}: finish() while section '{}' is open", path(), sections_.back().name);
  finished_ = true;
  if (!manifest.is_object()) EDO_FAIL("{}: the manifest must be a JSON object", path());
  if (manifest.contains(manifest_key::sections))
    EDO_FAIL("{}: the manifest must not set \"sections\" (the writer does)", path());
  if (!manifest.contains(manifest_key::format)) manifest[manifest_key::format] = kManifestFormat;
  json table = json::array();
  for (const SectionInfo& s : sections_)
    table.push_back({{manifest_key::section_name, s.name},
                     {manifest_key::section_offset, s.offset},
                     {manifest_key::section_length, s.length},
                     {manifest_key::section_xxh64, hex64(s.xxh64)}});
  manifest[manifest_key::sections] = std::move(table);
  const bool model = manifest.contains(manifest_key::model);
  if (model)
    validate_model_schema(manifest, path(), sections_);
  else
    validate_manifest_schema(manifest, path());

  std::string text;
  try {
    text = manifest.dump();
  } catch (const json::exception& e) {
    EDO_FAIL("{}: cannot serialise the manifest: {}", path(), e.what());
  }
  if (text.size() > kMaxManifestBytes)
    EDO_FAIL("{}: manifest is {} bytes, more than the {} byte limit", path(), text.size(), kMaxManifestBytes);
  if (sections_.size() > UINT32_MAX) EDO_FAIL("{}: too many sections ({})", path(), sections_.size());

  pad_to_alignment();
  ContainerHeader h;
  std::memcpy(h.magic, kContainerMagic, sizeof kContainerMagic);
  h.major = kContainerMajor;
  h.minor = model ? kModelMinor : kContainerMinor;
  h.manifest_offset = position_;
  h.manifest_length = text.size();
  h.manifest_xxh64 = checksum64(text.data(), text.size());
  h.section_count = static_cast<uint32_t>(sections_.size());
  write(text.data(), text.size());
  pad_to_alignment();
  h.file_size = position_;
  h.header_xxh64 = h.compute_checksum();
  flush();
  uint8_t bytes[kContainerHeaderSize];
  h.encode(bytes);
  file_.pwrite(bytes, sizeof bytes, 0);
  if (check) check(file_.temp_path());
  file_.commit();
}

void write_model(const std::string& path, const std::vector<ModelTableFile>& tables, const json& provenance) {
  if (tables.empty()) EDO_FAIL("{}: a model file needs at least one table", path);
  if (tables.size() > kMaxModelTables)
    EDO_FAIL("{}: {} tables, more than the {} a model file may hold", path, tables.size(), kMaxModelTables);
  json directory = json::array();
  std::set<std::string> names;
  for (size_t i = 0; i < tables.size(); ++i) {
    const ModelTableFile& t = tables[i];
    if (!valid_table_name(t.name)) EDO_FAIL("{}: '{}' is not a table name", path, t.name);
    if (!names.insert(t.name).second) EDO_FAIL("{}: two tables are named '{}'", path, t.name);
    const Container table = Container::open(t.path);
    if (table.is_model()) EDO_FAIL("{}: table '{}' ({}) is itself a model file", path, t.name, t.path);
    directory.push_back(
        {{manifest_key::table_name, t.name}, {manifest_key::table_section, fmt::format("tables/{}", i)}});
  }
  ContainerWriter writer(path);
  constexpr uint64_t kPiece = uint64_t{16} << 20;
  for (size_t i = 0; i < tables.size(); ++i) {
    const MappedFile file(tables[i].path);
    writer.begin_section(fmt::format("tables/{}", i));
    for (uint64_t at = 0; at < file.size(); at += kPiece) {
      const uint64_t n = std::min(kPiece, file.size() - at);
      writer.append(file.data() + at, n);
      file.release(at, n);
    }
    writer.end_section();
  }
  json manifest = {{manifest_key::model, {{manifest_key::model_tables, std::move(directory)}}},
                   {manifest_key::provenance, provenance}};
  writer.finish(std::move(manifest), [&](const std::string& written) {
    const Container model = Container::open(written, Verify::all);
    for (size_t i = 0; i < model.model_tables().size(); ++i) model.model_table(i);
  });
}

}  // namespace edo::io
