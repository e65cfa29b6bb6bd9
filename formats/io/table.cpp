// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/npy.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/safetensors.hpp>
#include <edo/io/table.hpp>
#include <edo/io/word2vec.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace edo::io {

const char* not_a_table_reason_text(NotATableReason reason) {
  switch (reason) {
    case NotATableReason::shape:
      return "not 2-D (rows x dim)";
    case NotATableReason::dtype:
      return "of a dtype edo does not read";
    case NotATableReason::layout:
      return "stored in an order edo does not read (Fortran order)";
  }
  return "not a table";
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f16:
      return "float16";
    case DType::f32:
      return "float32";
    case DType::f64:
      return "float64";
    case DType::i8:
      return "int8";
    case DType::u8:
      return "uint8";
    case DType::i16:
      return "int16";
    case DType::u16:
      return "uint16";
    case DType::i32:
      return "int32";
    case DType::u32:
      return "uint32";
    case DType::i64:
      return "int64";
    case DType::u64:
      return "uint64";
    case DType::bf16:
      return "bfloat16";
    case DType::f8_e4m3:
      return "float8_e4m3fn";
    case DType::f8_e5m2:
      return "float8_e5m2";
  }
  return "?";
}

size_t dtype_size(DType t) {
  switch (t) {
    case DType::i8:
    case DType::u8:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
      return 1;
    case DType::bf16:
    case DType::f16:
    case DType::i16:
    case DType::u16:
      return 2;
    case DType::f32:
    case DType::i32:
    case DType::u32:
      return 4;
    case DType::f64:
    case DType::i64:
    case DType::u64:
      return 8;
  }
  return 4;
}

uint64_t TableReader::payload_bytes() const { return rows_ * dim_ * dtype_size(dtype_); }

void TableWriter::write_raw(const void*, uint64_t) { EDO_FAIL("this output format takes float rows only"); }

void TableReader::check_range(uint64_t begin, uint64_t count) const {
  if (begin > rows_ || count > rows_ - begin)
    EDO_FAIL("{}: rows [{}, {}) are outside the table ({} rows)", path_, begin, begin + count, rows_);
}

void TableReader::read_f32(uint64_t begin, uint64_t count, float* out) {
  if (count == 0) return;
  const float* p = rows_f32(begin, count);
  std::memcpy(out, p, count * dim_ * sizeof(float));
}

void TableReader::read_f32_concurrent(uint64_t, uint64_t, float*) const {
  EDO_FAIL("{}: {} tables do not support concurrent reads", path_, format_);
}

uint64_t TableReader::block_rows(size_t block_bytes) const {
  const uint64_t row_bytes = std::max<uint64_t>(1, dim_ * sizeof(float));
  return std::clamp<uint64_t>(block_bytes / row_bytes, 1, std::max<uint64_t>(rows_, 1));
}

namespace {

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

std::string lower_extension(const std::string& file) {
  const auto slash = file.find_last_of('/');
  const auto dot = file.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return {};
  std::string ext = file.substr(dot + 1);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

bool is_known_extension(const std::string& ext) {
  for (const char* known : {"npy", "npz", "h5", "hdf5", "he5", "fvecs", "bvecs", "ivecs"})
    if (ext == known) return true;
  return false;
}

// The format of a file with an unfamiliar name, from its first bytes: "npy",
// "npz" or "h5", or empty when none matches. HDF5 allows a user block before
// its signature, so the signature is looked for at 0, 512, 1024, 2048, ...
std::string sniff_format(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  auto read_at = [fd](uint64_t offset, char* buf, size_t n) {
    return ::pread(fd, buf, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
  };
  std::string format;
  char head[8];
  if (read_at(0, head, 8)) {
    if (std::memcmp(head, kNpyMagic, 6) == 0)
      format = "npy";
    else if (std::memcmp(head, "PK\x03\x04", 4) == 0)
      format = "npz";
    for (uint64_t offset = 0; format.empty() && offset <= (uint64_t{1} << 20); offset = offset ? offset * 2 : 512)
      if (read_at(offset, head, 8) && std::memcmp(head, "\x89HDF\r\n\x1a\n", 8) == 0) format = "h5";
  }
  ::close(fd);
  return format;
}

// A spooled copy of stdin that deletes itself; the reader keeps it mapped.
class StdinSpool {
 public:
  StdinSpool() {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string templ = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/edo-stdin-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const int fd = ::mkstemp(buf.data());
    if (fd < 0) EDO_FAIL("<stdin>: cannot create a temporary file: {}", std::strerror(errno));
    path_.assign(buf.data());
    cleanup_.arm(path_);
    std::vector<char> chunk(size_t{1} << 20);
    for (;;) {
      const ssize_t n = ::read(STDIN_FILENO, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        ::unlink(path_.c_str());
        EDO_FAIL("<stdin>: read failed: {}", std::strerror(err));
      }
      if (n == 0) break;
      const char* p = chunk.data();
      ssize_t left = n;
      while (left > 0) {
        const ssize_t w = ::write(fd, p, static_cast<size_t>(left));
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
          const int err = errno;
          ::close(fd);
          ::unlink(path_.c_str());
          EDO_FAIL("<stdin>: cannot spool to {}: {}", path_, std::strerror(err));
        }
        p += w;
        left -= w;
      }
    }
    ::close(fd);
  }
  ~StdinSpool() { ::unlink(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  CleanupOnSignal cleanup_;
};

}  // namespace

TableSpec split_table_spec(const std::string& spec) {
  if (spec == "-" || file_exists(spec)) return {spec, {}};
  // "file.h5:/a/b" or "file.npz:member": split at the first ':' whose prefix is a file.
  for (size_t pos = spec.find(':'); pos != std::string::npos; pos = spec.find(':', pos + 1)) {
    const std::string file = spec.substr(0, pos);
    if (file_exists(file)) return {file, spec.substr(pos + 1)};
  }
  return {spec, {}};
}

namespace {

std::unique_ptr<TableReader> open_table_of_format(const std::string& spec) {
  if (spec == "-") {
    // stdin cannot seek; a spooled copy gives every tool random access to row
    // blocks at the cost of disk, never memory. The spool is unlinked as soon
    // as it is mapped.
    StdinSpool spool;
    return open_npy(spool.path(), "<stdin>");
  }
  const TableSpec s = split_table_spec(spec);
  if (!file_exists(s.file)) EDO_FAIL("{}: no such file", s.file);
  require_regular_file(s.file);  // before any reader, sniff or library opens it
  std::string ext = lower_extension(s.file);
  if (!is_known_extension(ext)) ext = sniff_format(s.file);
  auto no_member = [&](const char* kind) {
    if (!s.member.empty()) EDO_FAIL("{}: a {} file has no member '{}'", spec, kind, s.member);
  };
  if (ext == "npy") {
    no_member(".npy");
    return open_npy(s.file, spec);
  }
  if (ext == "npz") return open_npz(s.file, s.member, spec);
  if (is_safetensors_path(s.file)) return open_safetensors(s.file, s.member, spec);
  if (ext == "h5" || ext == "hdf5" || ext == "he5") return open_hdf5(s.file, s.member, spec);
  if (ext == "fvecs" || ext == "bvecs" || ext == "ivecs") {
    no_member(".vecs");
    const DType element = ext == "fvecs" ? DType::f32 : ext == "bvecs" ? DType::u8 : DType::i32;
    return open_vecs(s.file, element, spec);
  }
  if (is_word2vec_path(s.file)) {
    no_member("word2vec");
    return open_word2vec(s.file, spec);
  }
  EDO_FAIL(
      "{}: unknown table format (expected .npy, .npz, .h5/.hdf5, .safetensors, .vec/.txt/.bin word vectors, .fvecs, "
      ".bvecs or .ivecs)",
      spec);
}

}  // namespace

std::unique_ptr<TableReader> open_table(const std::string& spec) {
  if (spec.empty()) EDO_USAGE_FAIL("empty input path");
  auto table = open_table_of_format(spec);
  if (table->dim() > kMaxDim)
    EDO_FAIL("{}: {} columns, more than the {} a table may have", spec, table->dim(), kMaxDim);
  return table;
}

namespace {

// What an existing container at `file` holds besides `member` (the groups
// on the way to it, or the tensors "member.*" written with it); empty when
// nothing would be lost.
// (Several members: what is none of them, nor on the way to one.)
std::vector<std::string> other_contents(const std::string& file, const std::vector<std::string>& members, bool hdf5) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::vector<std::string> others;
  if (hdf5) {
    for (const std::string& name : hdf5_object_names(file)) {
      bool ours = false;
      for (const std::string& member : members) {
        const std::string target = member.starts_with('/') ? member : "/" + member;
        ours = ours || name == target || (target.starts_with(name) && target[name.size()] == '/');
      }
      if (!ours) others.push_back(name);
    }
    return others;
  }
  try {
    for (const SafetensorsTensor& t : open_safetensors_file(file).header.tensors) {
      bool ours = false;
      for (const std::string& member : members) ours = ours || t.name == member || t.name.starts_with(member + ".");
      if (!ours) others.push_back(t.name);
    }
  } catch (const Error&) {
    // Not a safetensors file: nothing of that format to keep.
  }
  return others;
}

bool is_hdf5_extension(const std::string& ext) { return ext == "h5" || ext == "hdf5" || ext == "he5"; }

// The refusal of check_existing_container(), for one member or several.
void refuse_other_contents(const std::string& file, const std::vector<std::string>& members, OtherContents others) {
  if (others == OtherContents::replace) return;
  const bool hdf5 = is_hdf5_extension(lower_extension(file));
  if (!hdf5 && !file.ends_with(".safetensors")) return;
  const std::vector<std::string> lost = other_contents(file, members, hdf5);
  if (lost.empty()) return;
  std::string shown;
  for (size_t i = 0; i < lost.size() && i < 5; ++i) shown += (i ? ", " : "") + lost[i];
  if (lost.size() > 5) shown += fmt::format(", and {} more", lost.size() - 5);
  const std::string what = members.size() == 1 ? "'" + members[0] + "'" : fmt::format("{} tables", members.size());
  EDO_USAGE_FAIL(
      "{}: already holds {} other {} ({}); writing {} would replace the whole file: write to a new file, or pass "
      "--force to replace it",
      file, lost.size(), hdf5 ? (lost.size() == 1 ? "object" : "objects") : (lost.size() == 1 ? "tensor" : "tensors"),
      shown, what);
}

}  // namespace

void check_existing_container(const std::string& file, const std::string& member, OtherContents others) {
  refuse_other_contents(file, {member}, others);
}

bool writes_several_tables(const std::string& path) {
  return path.ends_with(".safetensors") || is_hdf5_extension(lower_extension(path));
}

std::unique_ptr<MultiTableWriter> create_tables(const std::string& path, const std::vector<NamedTableShape>& tables,
                                                DType dtype, OtherContents others) {
  if (tables.empty()) EDO_FAIL("{}: no tables to write", path);
  std::vector<std::string> names;
  for (const NamedTableShape& t : tables) {
    if (t.rows == 0 || t.dim == 0)
      EDO_FAIL("{}: refusing to write an empty table '{}' ({} x {})", path, t.name, t.rows, t.dim);
    if (!checked_mul(t.rows, t.dim) || !checked_mul(t.rows * t.dim, dtype_size(dtype)))
      EDO_FAIL("{}: table '{}' of {} x {} is too large", path, t.name, t.rows, t.dim);
    names.push_back(t.name);
  }
  if (!writes_several_tables(path))
    EDO_USAGE_FAIL("{}: several tables go to x.safetensors or x.h5 (one tensor or dataset a table)", path);
  refuse_other_contents(path, names, others);
  if (path.ends_with(".safetensors")) return create_safetensors_tables(path, tables, dtype);
  return create_hdf5_tables(path, tables, dtype);
}

std::unique_ptr<TableWriter> create_table(const std::string& spec, uint64_t rows, uint64_t dim, DType dtype,
                                          OtherContents others) {
  if (rows == 0 || dim == 0) EDO_FAIL("{}: refusing to write an empty table ({} x {})", spec, rows, dim);
  if (!checked_mul(rows, dim) || !checked_mul(rows * dim, dtype_size(dtype)))
    EDO_FAIL("{}: table of {} x {} is too large", spec, rows, dim);
  if (spec == "-") return create_npy("-", rows, dim, dtype);
  // "x.h5:/group/ds": the file is what precedes the first ':' that follows an
  // HDF5 extension, so directories with ':' in their names still work.
  for (size_t colon = spec.find(':'); colon != std::string::npos; colon = spec.find(':', colon + 1)) {
    const std::string ext = lower_extension(spec.substr(0, colon));
    if (ext == "h5" || ext == "hdf5" || ext == "he5") {
      check_existing_container(spec.substr(0, colon), spec.substr(colon + 1), others);
      return create_hdf5(spec.substr(0, colon), spec.substr(colon + 1), rows, dim, dtype);
    }
  }
  // "x.safetensors:name": likewise at the first ':' after the extension.
  for (size_t colon = spec.find(':'); colon != std::string::npos; colon = spec.find(':', colon + 1))
    if (spec.substr(0, colon).ends_with(".safetensors")) {
      check_existing_container(spec.substr(0, colon), spec.substr(colon + 1), others);
      return create_safetensors(spec.substr(0, colon), spec.substr(colon + 1), rows, dim, dtype);
    }
  if (spec.ends_with(".safetensors")) {
    check_existing_container(spec, "embeddings", others);
    return create_safetensors(spec, "embeddings", rows, dim, dtype);
  }
  const std::string ext = lower_extension(spec);
  if (ext == "npy") return create_npy(spec, rows, dim, dtype);
  if (ext == "h5" || ext == "hdf5" || ext == "he5")
    EDO_FAIL("{}: name the dataset to write, as {}:/embeddings", spec, spec);
  EDO_FAIL("{}: cannot write this format (expected x.npy, -, x.h5:/dataset or x.safetensors[:tensor])", spec);
}

}  // namespace edo::io
