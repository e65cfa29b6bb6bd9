// SPDX-License-Identifier: Apache-2.0
// NumPy .npz archives: one .npy member of a zip file, read through libzip.
//
// A deflated member cannot be seeked, so rows are streamed: reading forward
// decompresses and discards up to the requested block, reading backwards
// reopens the member. Stored members seek directly. Memory stays bounded by
// the block, whatever the member's size.
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/npy.hpp>
#include <edo/io/readers.hpp>

#include <zip.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace edo::io {
namespace {

std::string zip_open_error(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string msg = zip_error_strerror(&e);
  zip_error_fini(&e);
  return msg;
}

std::string describe_members(const std::vector<std::string>& names) {
  if (names.empty()) return "the archive is empty";
  std::string s = "members:";
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < names.size() && i < kShown; ++i) s += (i ? ", " : " ") + names[i];
  if (names.size() > kShown) s += fmt::format(", and {} more", names.size() - kShown);
  return s;
}

struct ArchiveCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct MemberCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

class NpzReader final : public TableReader {
 public:
  static constexpr uint64_t kReadPiece = uint64_t{16} << 20;

  NpzReader(const std::string& path, const std::string& member, const std::string& display)
      : TableReader(display, "npz") {
    int code = 0;
    archive_.reset(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
    if (!archive_) EDO_FAIL("{}: not a readable .npz (zip) archive: {}", display, zip_open_error(code));
    index_ = find_member(member, display);

    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(archive_.get(), index_, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
      EDO_FAIL("{}: cannot read the member's size: {}", display, zip_strerror(archive_.get()));
    member_size_ = st.size;
    seekable_ = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE &&
                (!(st.valid & ZIP_STAT_ENCRYPTION_METHOD) || st.encryption_method == ZIP_EM_NONE);
    if (!(st.valid & ZIP_STAT_CRC)) EDO_FAIL("{}: the member has no CRC-32 to check", display);
    verify_crc(st.crc);
    reopen();

    // The .npy header: 10 or 12 fixed bytes that give the length of the rest.
    std::vector<uint8_t> head(std::min<uint64_t>(member_size_, 12));
    read_exact(head.data(), head.size());
    if (head.size() >= 10 && std::memcmp(head.data(), kNpyMagic, 6) == 0) {
      const uint64_t prefix = head[6] == 1 ? 10 : 12;
      uint64_t header_len = uint64_t{head[8]} | uint64_t{head[9]} << 8;
      if (prefix == 12 && head.size() == 12) header_len |= uint64_t{head[10]} << 16 | uint64_t{head[11]} << 24;
      // Oversized lengths are left to parse_npy_header to reject by name.
      const uint64_t want = std::min({prefix + std::min(header_len, kMaxNpyHeaderBytes), member_size_});
      const size_t have = head.size();
      if (want > have) {
        head.resize(want);
        read_exact(head.data() + have, want - have);
      }
    }
    const NpyHeader h = parse_npy_header(head.data(), head.size(), member_size_, display);
    require_npy_table(h, display);
    rows_ = h.shape[0];
    dim_ = h.shape[1];
    dtype_ = h.dtype;
    data_offset_ = h.data_offset;
    // The header was read to its end; when it was read short, seek_to() fixes up.
    position_ = head.size();
  }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    const uint64_t row_bytes = dim_ * dtype_size(dtype_);
    const uint64_t bytes = count * row_bytes;
    seek_to(data_offset_ + begin * row_bytes);
    // The sizes come from the archive, not from data seen: the buffer grows
    // only as bytes actually arrive, so a member that lies about its size
    // fails before it can make the reader allocate for it.
    raw_.clear();
    while (raw_.size() < bytes) {
      const size_t have = raw_.size();
      const size_t piece = static_cast<size_t>(std::min<uint64_t>(bytes - have, kReadPiece));
      raw_.resize(have + piece);
      read_exact(raw_.data() + have, piece);
    }
    floats_.resize(count * dim_);
    widen_to_f32(dtype_, raw_.data(), count * dim_, floats_.data());
    return floats_.data();
  }

 private:
  zip_uint64_t find_member(const std::string& member, const std::string& display) {
    const zip_int64_t n = zip_get_num_entries(archive_.get(), 0);
    std::vector<std::string> names;
    std::vector<zip_uint64_t> indices;
    for (zip_int64_t i = 0; i < n; ++i) {
      const char* name = zip_get_name(archive_.get(), static_cast<zip_uint64_t>(i), 0);
      if (!name) continue;
      std::string s(name);
      if (!s.empty() && s.back() == '/') continue;  // a directory entry
      if (!member.empty() && (s == member || s == member + ".npy")) return static_cast<zip_uint64_t>(i);
      // Keeps a listing of a huge central directory short.
      if (names.size() < 1000) {
        names.push_back(std::move(s));
        indices.push_back(static_cast<zip_uint64_t>(i));
      }
    }
    if (!member.empty()) EDO_FAIL("{}: no member '{}' in the archive ({})", display, member, describe_members(names));
    if (names.size() != 1)
      EDO_FAIL("{}: {}; name one as {}:NAME ({})", display,
               names.empty() ? "the archive has no members" : "the archive has several members", display,
               describe_members(names));
    return indices[0];
  }

  // Reads the member once, start to end, and compares its CRC-32 with the
  // archive's, as numpy does: seeks and partial reads (all that row blocks
  // need) never reach the check libzip makes at the end of a member.
  void verify_crc(uint32_t expected) {
    reopen();
    std::vector<uint8_t> piece(std::min<uint64_t>(member_size_, uint64_t{1} << 20));
    uLong crc = ::crc32(0L, Z_NULL, 0);
    uint64_t left = member_size_;
    while (left > 0) {
      const uint64_t n = std::min<uint64_t>(left, piece.size());
      read_exact(piece.data(), n);
      crc = ::crc32_z(crc, piece.data(), static_cast<z_size_t>(n));
      left -= n;
    }
    if (static_cast<uint32_t>(crc) != expected)
      EDO_FAIL("{}: CRC-32 mismatch in the member (archive {:08x}, data {:08x}): corrupt", path_, expected,
               static_cast<uint32_t>(crc));
  }

  void reopen() {
    member_.reset();
    member_.reset(zip_fopen_index(archive_.get(), index_, 0));
    if (!member_) EDO_FAIL("{}: cannot open the member: {}", path_, zip_strerror(archive_.get()));
    position_ = 0;
  }

  void seek_to(uint64_t offset) {
    if (offset == position_) return;
    if (seekable_) {
      if (zip_fseek(member_.get(), static_cast<zip_int64_t>(offset), SEEK_SET) != 0)
        EDO_FAIL("{}: cannot seek in the member: {}", path_, zip_file_strerror(member_.get()));
      position_ = offset;
      return;
    }
    if (offset < position_) reopen();
    skip_.resize(size_t{1} << 16);
    while (position_ < offset) {
      const uint64_t n = std::min<uint64_t>(skip_.size(), offset - position_);
      read_exact(skip_.data(), n);
    }
  }

  void read_exact(void* out, uint64_t size) {
    auto* p = static_cast<uint8_t*>(out);
    while (size > 0) {
      const zip_int64_t n = zip_fread(member_.get(), p, size);
      if (n < 0) EDO_FAIL("{}: cannot read the member: {}", path_, zip_file_strerror(member_.get()));
      if (n == 0)
        EDO_FAIL("{}: member ends at byte {}, before its declared size {}; truncated or corrupt", path_, position_,
                 member_size_);
      p += n;
      size -= static_cast<uint64_t>(n);
      position_ += static_cast<uint64_t>(n);
    }
  }

  std::unique_ptr<zip_t, ArchiveCloser> archive_;
  std::unique_ptr<zip_file_t, MemberCloser> member_;  // closed before the archive
  zip_uint64_t index_ = 0;
  uint64_t member_size_ = 0;
  bool seekable_ = false;
  uint64_t data_offset_ = 0;
  uint64_t position_ = 0;  // offset of the next byte zip_fread returns
  std::vector<uint8_t> raw_;
  std::vector<float> floats_;
  std::vector<uint8_t> skip_;
};

}  // namespace

std::vector<std::string> npz_member_names(const std::string& path) {
  int code = 0;
  std::unique_ptr<zip_t, ArchiveCloser> archive(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!archive) EDO_FAIL("{}: not a readable .npz (zip) archive: {}", path, zip_open_error(code));
  constexpr zip_int64_t kMaxMembers = 100000;
  const zip_int64_t n = zip_get_num_entries(archive.get(), 0);
  if (n > kMaxMembers) EDO_FAIL("{}: {} members, more than the {} a model may have", path, n, kMaxMembers);
  std::vector<std::string> names;
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(archive.get(), static_cast<zip_uint64_t>(i), 0);
    if (!name) continue;
    std::string s(name);
    if (s.empty() || s.back() == '/') continue;  // a directory entry
    if (s.ends_with(".npy")) s.resize(s.size() - 4);
    names.push_back(std::move(s));
  }
  return names;
}

std::unique_ptr<TableReader> open_npz(const std::string& path, const std::string& member, const std::string& display) {
  return std::make_unique<NpzReader>(path, member, display);
}

}  // namespace edo::io
