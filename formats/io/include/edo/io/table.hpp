// SPDX-License-Identifier: Apache-2.0
// Reading and writing dense tables (rows x dim), whatever the file format.
//
// A table is addressed by a spec string:
//   x.npy                 NumPy .npy (versions 1-3, C order, little-endian)
//   x.npz[:member]        a member of a NumPy .npz (the only member if omitted)
//   x.h5:/group/dataset   an HDF5 dataset (the only 2-D dataset if omitted)
//   x.safetensors:name    a 2-D safetensors tensor (the only one if omitted);
//   x.safetensors.index.json:name  the same in a sharded model (safetensors.hpp)
//   x.fvecs x.bvecs x.ivecs  TEXMEX vector files
//   x.vec x.txt x.bin     word2vec / fastText vectors, text or binary, with
//                         their words as the table's vocabulary (word2vec.hpp)
//   -                     .npy on stdin (spooled to a temporary file)
// Readers hand out row blocks widened to fp32; memory stays bounded by the
// block size, never by the table.
#pragma once

#include <edo/error.hpp>
#include <edo/io/limits.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace edo::io {

// bf16, f8_e4m3 (float8_e4m3fn: no infinities, NaN at 0x7f) and f8_e5m2 are read (safetensors),
// never written.
enum class DType : uint8_t { f16, f32, f64, i8, u8, i16, u16, i32, u32, i64, u64, bf16, f8_e4m3, f8_e5m2 };

const char* dtype_name(DType t);  // numpy-style: "float32", "uint8", ...

// Why a well-formed tensor is no table edo reads: a value, so that a model's
// reader can pass such tensors over by kind (never by the text of a message,
// which holds the path) and treat every other error as the input's.
enum class NotATableReason : uint8_t {
  shape,   // not 2-D (rows x dim)
  dtype,   // an element type edo does not read (bool, structured, big-endian, ...)
  layout,  // stored in an order edo does not read (Fortran order)
};
const char* not_a_table_reason_text(NotATableReason reason);  // "not 2-D (rows x dim)", ...

class NotATableError : public Error {
 public:
  NotATableError(NotATableReason reason, const std::string& message, const char* source_file, int source_line)
      : Error(message, source_file, source_line), reason_(reason) {}
  NotATableReason reason() const noexcept { return reason_; }

 private:
  NotATableReason reason_;
};

}  // namespace edo::io

// EDO_NOT_A_TABLE(NotATableReason::shape, "{}: ...", path) throws edo::io::NotATableError (exit code 1).
#define EDO_NOT_A_TABLE(reason, ...) \
  throw ::edo::io::NotATableError((reason), ::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

namespace edo::io {
size_t dtype_size(DType t);

// Default block: 32 MiB of fp32 values.
inline constexpr size_t kDefaultBlockBytes = size_t{32} << 20;

class TableReader {
 public:
  virtual ~TableReader() = default;
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  const std::string& path() const { return path_; }  // as the user wrote it, for messages
  uint64_t rows() const { return rows_; }
  uint64_t dim() const { return dim_; }
  DType dtype() const { return dtype_; }                 // element type on disk
  const std::string& format() const { return format_; }  // "npy", "hdf5", "fvecs", ...
  // Bytes the table's values take in the file (rows * dim * element size;
  // a table of codes, the bytes of its codes and parameters).
  virtual uint64_t payload_bytes() const;

  // Rows [begin, begin + count) as row-major fp32. The pointer is valid until
  // the next call on this reader; it may point into a read-only mapping.
  // Throws edo::Error on a range outside the table or an I/O error.
  virtual const float* rows_f32(uint64_t begin, uint64_t count) = 0;

  // Copies rows [begin, begin + count) as fp32 into `out` (count * dim floats).
  void read_f32(uint64_t begin, uint64_t count, float* out);

  // True when read_f32_concurrent() is available: npy files, read by pread.
  virtual bool concurrent_reads() const { return false; }
  // As read_f32(), but callable from many threads at once and leaving the
  // block of rows_f32() alone. Copying small pieces into a cache-sized buffer
  // per thread costs less than faulting in and dropping mapped pages.
  // Throws edo::Error where concurrent_reads() is false.
  virtual void read_f32_concurrent(uint64_t begin, uint64_t count, float* out) const;

  // The word of each row when the format carries one (word2vec, fastText),
  // else null: tools take it where they would take --vocab.
  virtual const std::vector<std::string>* vocabulary() const { return nullptr; }

  // Rows per block so that one fp32 block is about `block_bytes` (at least 1).
  uint64_t block_rows(size_t block_bytes = kDefaultBlockBytes) const;

 protected:
  TableReader(std::string path, std::string format) : path_(std::move(path)), format_(std::move(format)) {}
  void check_range(uint64_t begin, uint64_t count) const;
  std::string path_;
  std::string format_;
  uint64_t rows_ = 0;
  uint64_t dim_ = 0;
  DType dtype_ = DType::f32;
};

// What HDF5 inputs may do beyond holding their values (docs/CLI.md). HDF5
// can place a dataset's bytes in other files: external storage (raw bytes of
// any local file), external links and virtual datasets; a table read that
// way could copy /etc/passwd into an output, so they are refused unless
// `allow_external` (a tool's --allow-external), and even then only files in
// the input's own directory are read. A dataset can also declare far more
// than it stores (a few KB declaring 10^12 rows of its fill value): one
// that declares at least 1 GiB and stores less than 1/64 of it is refused
// unless `allow_fill` (--allow-fill). Process-wide: set once, after parsing
// the command line.
struct Hdf5InputPolicy {
  bool allow_external = false;
  bool allow_fill = false;
};
void set_hdf5_input_policy(const Hdf5InputPolicy& policy);
Hdf5InputPolicy hdf5_input_policy();

// Opens a table by spec (see the top of this file). Rejects empty tables.
std::unique_ptr<TableReader> open_table(const std::string& spec);

// Splits "file.h5:/ds" or "file.npz:member" into file and member; the member
// is empty when the spec has none. A spec naming an existing file is never split.
struct TableSpec {
  std::string file;
  std::string member;
};
TableSpec split_table_spec(const std::string& spec);

// Appends rows to a new table. Output goes to a temporary name beside the
// target and is renamed into place by commit(); destroying a writer without
// commit() removes the temporary, so a failed run leaves nothing behind.
class TableWriter {
 public:
  virtual ~TableWriter() = default;
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;
  // Appends `count` rows of dim() fp32 values, converted to the writer's dtype.
  virtual void write_f32(const float* rows, uint64_t count) = 0;
  // Appends `count` rows already in the writer's dtype (dim() elements each,
  // little-endian): npy and safetensors writers; others refuse.
  virtual void write_raw(const void* rows, uint64_t count);
  // Checks that exactly rows() rows were written, then publishes the file.
  virtual void commit() = 0;
  uint64_t rows() const { return rows_; }
  uint64_t dim() const { return dim_; }

 protected:
  TableWriter(uint64_t rows, uint64_t dim) : rows_(rows), dim_(dim) {}
  uint64_t rows_;
  uint64_t dim_;
};

// Creates x.npy (or "-" for stdout, written straight through),
// x.h5:/group/dataset, or x.safetensors[:tensor] (one tensor, named
// "embeddings" unless given; float32, float16, bfloat16, or uint8 rows
// written by write_raw). npy and HDF5
// take every DType but bfloat16 and the fp8 types.
//
// Writing x.h5:/ds or x.safetensors:name creates the whole file anew. When
// an existing file there holds anything else (other datasets or groups,
// other tensors), that would be lost: `others` = refuse makes it a usage
// error naming what the file holds, before anything is written; replace
// (a tool's --force) replaces the file whole. An existing file holding only
// the named dataset or tensor, or that is not of that format, is replaced.
enum class OtherContents { refuse, replace };
std::unique_ptr<TableWriter> create_table(const std::string& spec, uint64_t rows, uint64_t dim,
                                          DType dtype = DType::f32, OtherContents others = OtherContents::refuse);
// The same check alone, for writers of several tensors (stored codes:
// "member.codes", "member.scales", ... are not counted as others).
void check_existing_container(const std::string& file, const std::string& member, OtherContents others);

// Several named tables in one new file (a model's tables, edo-unpack MODEL):
// x.safetensors (a tensor a table, under its name) or x.h5 / x.hdf5 (a
// dataset a table, at "/NAME": a '/' in a name makes groups). Every table
// is declared up front; write_f32(t, ...) appends rows to table t (any
// order of tables, each one's rows in order); commit() checks every row was
// written and publishes the file. An existing file holding anything but
// these tables is refused unless `others` is replace, as create_table().
struct NamedTableShape {
  std::string name;
  uint64_t rows = 0, dim = 0;
};
class MultiTableWriter {
 public:
  virtual ~MultiTableWriter() = default;
  virtual void write_f32(size_t table, const float* rows, uint64_t count) = 0;
  virtual void commit() = 0;
};
std::unique_ptr<MultiTableWriter> create_tables(const std::string& path, const std::vector<NamedTableShape>& tables,
                                                DType dtype = DType::f32, OtherContents others = OtherContents::refuse);
// Whether create_tables() writes this path's format (by its extension).
bool writes_several_tables(const std::string& path);

}  // namespace edo::io
