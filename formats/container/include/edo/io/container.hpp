// SPDX-License-Identifier: Apache-2.0
// The .edo container: a 64-byte header, 64-byte-aligned named binary sections
// and a JSON manifest. The byte-level specification is docs/FORMAT.md; this
// header is its C++ face. Reading validates every offset, length and count
// before any section byte is handed out; writing streams sections to a
// temporary file that only appears under its final name when complete.
#pragma once

#include <edo/residency.hpp>

#include <edo/io/files.hpp>

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct XXH64_state_s;

namespace edo::io {

// "\x89EDO\r\n\x1a\n": a high byte first (catches 7-bit transfers), then
// CR LF, ^Z and LF (catch text-mode line-ending conversion), as in PNG.
inline constexpr uint8_t kContainerMagic[8] = {0x89, 'E', 'D', 'O', '\r', '\n', 0x1a, '\n'};
inline constexpr uint16_t kContainerMajor = 1;  // incompatible changes
inline constexpr uint16_t kContainerMinor = 1;  // additive changes
inline constexpr uint64_t kContainerAlignment = 64;
// `x` rounded up to the alignment: the bytes a section or the manifest takes in the file.
inline constexpr uint64_t align_up(uint64_t x) {
  return (x + kContainerAlignment - 1) / kContainerAlignment * kContainerAlignment;
}
inline constexpr uint64_t kContainerHeaderSize = 64;
inline constexpr uint64_t kMaxManifestBytes = uint64_t{64} << 20;
inline constexpr int kMaxManifestDepth = 64;
// Bulk data (row sets, ID maps) belongs in sections, not in the manifest.
inline constexpr uint64_t kMaxManifestValues = uint64_t{1} << 20;
inline constexpr size_t kMaxSectionNameLength = 128;

// The header as fields. Its in-memory layout mirrors the file (asserted
// below), but encode()/decode() go byte by byte, so reading never depends on
// the host's struct layout or byte order.
struct ContainerHeader {
  uint8_t magic[8] = {};
  uint16_t major = 0;
  uint16_t minor = 0;
  uint32_t flags = 0;
  uint64_t file_size = 0;
  uint64_t manifest_offset = 0;
  uint64_t manifest_length = 0;
  uint64_t manifest_xxh64 = 0;
  uint32_t section_count = 0;
  uint32_t reserved = 0;
  uint64_t header_xxh64 = 0;  // over bytes [0, 56) of the encoded header

  // Writes the 64 little-endian bytes; header_xxh64 is written as stored.
  void encode(uint8_t out[kContainerHeaderSize]) const;
  static ContainerHeader decode(const uint8_t in[kContainerHeaderSize]);
  // The checksum the header_xxh64 field must hold for these field values.
  uint64_t compute_checksum() const;
};
static_assert(sizeof(ContainerHeader) == kContainerHeaderSize);
static_assert(offsetof(ContainerHeader, file_size) == 16);
static_assert(offsetof(ContainerHeader, section_count) == 48);
static_assert(offsetof(ContainerHeader, header_xxh64) == 56);

// XXH64 with seed 0: the checksum every part of the container uses.
uint64_t checksum64(const void* data, size_t size);
// The same over bytes given in pieces (a section read a piece at a time).
class Checksum64Stream {
 public:
  Checksum64Stream();
  ~Checksum64Stream();
  Checksum64Stream(const Checksum64Stream&) = delete;
  Checksum64Stream& operator=(const Checksum64Stream&) = delete;
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  XXH64_state_s* state_;
};

// Manifest keys the container validates generically (docs/FORMAT.md, "The
// manifest"). Codec names and per-codec section roles are lib/'s business.
namespace manifest_key {
inline constexpr const char* format = "format";          // the string "edo"
inline constexpr const char* rows = "rows";              // positive integer
inline constexpr const char* dim = "dim";                // positive integer
inline constexpr const char* tiers = "tiers";            // non-empty array of tier objects
inline constexpr const char* provenance = "provenance";  // object
inline constexpr const char* sections = "sections";      // written by ContainerWriter::finish
// Inside a tier:
inline constexpr const char* tier_name = "name";
inline constexpr const char* tier_codec = "codec";
inline constexpr const char* tier_rows = "rows";
inline constexpr const char* tier_sections = "sections";    // role -> section name
inline constexpr const char* tier_residency = "residency";  // optional: gpu | host | disk
// Inside a sections-table entry:
inline constexpr const char* section_name = "name";
inline constexpr const char* section_offset = "offset";
inline constexpr const char* section_length = "length";
inline constexpr const char* section_xxh64 = "xxh64";  // 16 lowercase hex digits
}  // namespace manifest_key
inline constexpr const char* kManifestFormat = "edo";

// A model file (docs/FORMAT.md, section 10): a container whose manifest has a
// "model" object instead of rows, dim and tiers, and whose sections are each
// a whole one-table .edo file, named in the table directory.
namespace manifest_key {
inline constexpr const char* model = "model";          // object: {"tables": [...]}
inline constexpr const char* model_tables = "tables";  // non-empty array of {"name", "section"}
inline constexpr const char* table_name = "name";
inline constexpr const char* table_section = "section";
// A one-table file's own name, when taken from a model (FORMAT.md 5.1).
inline constexpr const char* table_name_of_file = "table_name";
// Optional: the format features (kFormatFeatures) a reader must implement to
// decode the file, by name (FORMAT.md 8.1).
inline constexpr const char* required_features = "requires";
}  // namespace manifest_key
// The format features a file may require (FORMAT.md 8.1), each an addition
// within a minor version that a reader without it must refuse: what this
// reader implements. A file naming any other is refused, naming it.
inline constexpr std::string_view kFormatFeatures[] = {
    "codec:int3", "codec:int5",     "codec:int6",     "codec:rot",   "codec:tc",
    "scale=fp16", "codebooks=fp16", "codebooks=int8", "rowmap:runs", "tier:lossless"};
// Most names "requires" may hold: refused before anything is read by more.
inline constexpr size_t kMaxRequiredFeatures = 64;
// Most tables a model file may list: the directory is refused before
// anything is sized by a larger count.
inline constexpr uint64_t kMaxModelTables = 65536;
// A table name: 1 to 256 bytes, printable ASCII without spaces, quotes or
// backslashes (the names models give their tensors: "emb.words.weight",
// "/group/ds", "lm_head.weight").
bool valid_table_name(std::string_view name);
// The minor version model files are written with (section 10).
inline constexpr uint16_t kModelMinor = 2;

struct ModelTableInfo {
  std::string name;
  std::string section;  // the section holding the table's .edo file
};

// True for names matching [A-Za-z0-9_.:/-]{1,128}.
bool valid_section_name(std::string_view name);

struct SectionInfo {
  std::string name;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t xxh64 = 0;
};

struct TierInfo {
  std::string name;
  std::string codec;  // a codec spec string, interpreted by lib/
  uint64_t rows = 0;
  std::map<std::string, std::string> sections;  // role -> section name
  std::optional<Residency> residency;           // none: no hint
};

// Checks the generic schema (format, rows, dim, tiers, provenance) of a
// manifest, including that every section a tier names is in its "sections"
// table (whose layout the reader checks separately). Returns the tiers.
// Throws naming `path`.
std::vector<TierInfo> validate_manifest_schema(const nlohmann::json& manifest, const std::string& path);
// Checks a model file's directory (section 10): names valid and unique, each
// naming a distinct existing section, at most kMaxModelTables. Returns it.
std::vector<ModelTableInfo> validate_model_schema(const nlohmann::json& manifest, const std::string& path);

struct SectionView {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// How much of a file is checked against its checksums when opened
// (docs/PACK.md, "Integrity modes").
enum class Verify {
  structure,  // header, manifest and layout checks only (cost independent of section sizes)
  // The container checks structure, as above; edo::Reader then checks every
  // section but its tiers' per-row payload at open, and that payload the
  // first time a lookup reads the tier (lib/reader). The reader's default.
  small,
  all,  // also every section checksum, at open (reads the whole file)
};
// "structure", "small" or "all" (edo-lookup's --verify, the Python module's
// verify=); anything else is a usage error naming the choices.
Verify parse_verify(std::string_view name);
const char* verify_name(Verify verify);

// A validated container. open() maps the file; view() reads bytes the caller
// keeps alive (fuzzing, embedded data). Movable, not copyable.
class Container {
 public:
  // `placement`: mapped, or read into private memory with huge pages (files.hpp).
  static Container open(const std::string& path, Verify verify = Verify::structure,
                        Placement placement = Placement::mapped);
  // `name` is used in error messages in place of a path.
  static Container view(const uint8_t* data, uint64_t size, const std::string& name, Verify verify = Verify::structure);

  const std::string& path() const { return path_; }
  uint64_t file_size() const { return size_; }
  // A model file's table directory (empty for a one-table file); each table
  // opens as a container of its own, sharing this one's mapping.
  bool is_model() const { return !model_tables_.empty(); }
  const std::vector<ModelTableInfo>& model_tables() const { return model_tables_; }
  // Table i of a model file, validated as a file of its own; errors name
  // it "PATH:NAME".
  Container model_table(size_t i, Verify verify = Verify::structure) const;
  // Where this container's bytes are: the file mapped (a model file's for a
  // table of it; empty for a view()) and the offset of byte 0 in it.
  const std::string& backing_path() const { return backing_path_; }
  uint64_t backing_offset() const { return backing_offset_; }
  uint64_t backing_size() const { return file_ ? file_->size() : size_; }
  uint16_t minor_version() const { return header_.minor; }
  uint64_t manifest_offset() const { return header_.manifest_offset; }
  // The header's XXH64 of the manifest, which lists every section's checksum:
  // a fingerprint of the whole file's content, read in constant time.
  uint64_t manifest_checksum() const { return header_.manifest_xxh64; }
  const nlohmann::json& manifest() const { return manifest_; }
  uint64_t rows() const { return rows_; }
  uint64_t dim() const { return dim_; }
  const std::vector<TierInfo>& tiers() const { return tiers_; }
  // In file order.
  const std::vector<SectionInfo>& sections() const { return sections_; }
  bool has_section(std::string_view name) const;
  // Throws naming the file and the section when there is no such section.
  SectionView section(std::string_view name) const;
  // Checks every section checksum; throws naming the first bad section.
  // The pages it reads are let go again, so verifying keeps no file resident.
  void verify() const;
  // The same, over the sections `which` selects (in file order).
  void verify(const std::function<bool(const SectionInfo&)>& which) const;
  // Lets the kernel drop the mapped pages of [data, data + size) (bytes of
  // this container): a stream through big sections stays bounded in memory.
  // Nothing for a view().
  void release(const uint8_t* data, uint64_t size) const;

 private:
  Container() = default;
  void validate(Verify verify);
  const SectionInfo* find(std::string_view name) const;

  std::string path_;
  std::string backing_path_;
  uint64_t backing_offset_ = 0;
  std::shared_ptr<const MappedFile> file_;
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  ContainerHeader header_;
  nlohmann::json manifest_;
  std::vector<SectionInfo> sections_;
  std::vector<uint32_t> sections_by_name_;  // indices into sections_, in name order: find() is a binary search
  std::vector<TierInfo> tiers_;
  std::vector<ModelTableInfo> model_tables_;
  uint64_t rows_ = 0;
  uint64_t dim_ = 0;
};

// Streams a container: begin_section(name), append(...) any number of
// times, end_section(), ... then finish(manifest). Same calls => the same
// bytes. Destroying the writer before finish() leaves no file behind.
class ContainerWriter {
 public:
  explicit ContainerWriter(const std::string& path);
  ~ContainerWriter();
  ContainerWriter(const ContainerWriter&) = delete;
  ContainerWriter& operator=(const ContainerWriter&) = delete;

  void begin_section(std::string_view name);
  void append(const void* data, size_t size);
  void end_section();
  // begin_section + append + end_section.
  void add_section(std::string_view name, const void* data, size_t size);
  // Adds "format" (when absent) and the "sections" table to `manifest`,
  // checks it with the reader's rules, writes it and the header, and renames
  // the file into place. `manifest` must not contain "sections". `check`,
  // when given, is called with the finished temporary's path before the
  // rename: what it throws leaves no file behind.
  void finish(nlohmann::json manifest, const std::function<void(const std::string&)>& check = {});

  const std::string& path() const { return file_.path(); }

 private:
  struct HashStateDeleter {
    void operator()(XXH64_state_s* state) const;
  };
  void write(const void* data, size_t size);
  void flush();
  void pad_to_alignment();
  void require_open(const char* operation) const;

  AtomicFile file_;
  std::unique_ptr<XXH64_state_s, HashStateDeleter> hash_;
  std::vector<uint8_t> buffer_;  // coalesces small appends into large writes
  uint64_t position_ = 0;        // logical end of the file, buffer included
  std::vector<SectionInfo> sections_;
  bool in_section_ = false;
  bool finished_ = false;
};

// Writes a model file at `path` from one-table .edo files, each named: their
// bytes copied whole, in the order given, into sections "tables/0", ...,
// with `provenance` (an object) in the manifest. Every table is opened as a
// reader would before anything is written; the file is read back before it
// is renamed into place. Same inputs => the same bytes.
struct ModelTableFile {
  std::string name;
  std::string path;
};
void write_model(const std::string& path, const std::vector<ModelTableFile>& tables, const nlohmann::json& provenance);

}  // namespace edo::io
