// SPDX-License-Identifier: Apache-2.0
// HDF5 datasets as tables: "file.h5:/group/dataset".
//
// Rows are read as hyperslabs that HDF5 itself converts to native float, so
// any element type, byte order, chunking or filter the library understands is
// read without edo knowing about it. HDF5 prints its error stack to stderr by
// default; that is switched off and the innermost message is folded into
// edo's one-line error instead.
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/io/files.hpp>
#include <edo/io/readers.hpp>

#include <hdf5.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace edo::io {
namespace {

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  using Closer = herr_t (*)(hid_t);
  Handle() = default;
  Handle(hid_t id, Closer closer) : id_(id), closer_(closer) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), closer_(o.closer_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      closer_ = o.closer_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  hid_t get() const { return id_; }
  explicit operator bool() const { return id_ >= 0; }
  // Closes now and reports whether HDF5 accepted it (a close flushes).
  bool close() {
    const hid_t id = std::exchange(id_, H5I_INVALID_HID);
    return id < 0 || closer_(id) >= 0;
  }

 private:
  void reset() {
    if (id_ >= 0) closer_(id_);
    id_ = H5I_INVALID_HID;
  }
  hid_t id_ = H5I_INVALID_HID;
  Closer closer_ = nullptr;
};

void silence_hdf5_errors() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

// The most specific message on HDF5's error stack, for the one-line error.
std::string hdf5_error() {
  std::string msg;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        if (n == 0 && e->desc) *static_cast<std::string*>(out) = e->desc;
        return 0;
      },
      &msg);
  H5Eclear2(H5E_DEFAULT);
  if (msg.empty()) return "HDF5 error";
  // The file driver's messages span lines and dump its state ("time = ...,
  // filename = ..., errno = 28, error message = 'No space left on device',
  // buf = ..."): keep the operation and the system's reason, on one line.
  const std::string quoted = "error message = '";
  if (const size_t at = msg.find(quoted); at != std::string::npos) {
    const size_t begin = at + quoted.size(), end = msg.find('\'', begin);
    const std::string operation = msg.substr(0, std::min(msg.find(','), msg.find(':')));
    if (end != std::string::npos) msg = operation + ": " + msg.substr(begin, end - begin);
  }
  for (char& c : msg)
    if (c == '\n' || c == '\r') c = ' ';
  return msg;
}

struct DatasetEntry {
  std::string name;  // absolute, "/group/dataset"
  int ndims = -1;    // -1 when the dataspace could not be read
};

// Caps the walk of a hostile file with millions of objects.
constexpr size_t kMaxListedDatasets = 10000;

std::vector<DatasetEntry> list_datasets(hid_t file) {
  std::vector<DatasetEntry> out;
  auto visit = [](hid_t obj, const char* name, const H5O_info_t* info, void* data) -> herr_t {
    auto* list = static_cast<std::vector<DatasetEntry>*>(data);
    if (info->type != H5O_TYPE_DATASET) return 0;
    DatasetEntry e{std::string("/") + name, -1};
    Handle ds(H5Dopen2(obj, name, H5P_DEFAULT), H5Dclose);
    if (ds) {
      Handle space(H5Dget_space(ds.get()), H5Sclose);
      if (space) e.ndims = H5Sget_simple_extent_ndims(space.get());
    }
    list->push_back(std::move(e));
    return list->size() >= kMaxListedDatasets ? 1 : 0;
  };
  H5Ovisit2(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &out, H5O_INFO_BASIC);
  H5Eclear2(H5E_DEFAULT);
  return out;
}

std::string describe_datasets(const std::vector<DatasetEntry>& list) {
  if (list.empty()) return "the file has no datasets";
  std::string s = "datasets:";
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < list.size() && i < kShown; ++i) {
    s += (i ? ", " : " ") + list[i].name;
    if (list[i].ndims >= 0) s += fmt::format(" ({}-D)", list[i].ndims);
  }
  if (list.size() > kShown) s += fmt::format(", and {} more", list.size() - kShown);
  return s;
}

std::atomic<bool> g_allow_external{false};
std::atomic<bool> g_allow_fill{false};

// Whether `name` (as HDF5 stored it: a file name, relative to the input's
// directory) stays in that directory: no absolute path, no "..".
bool stays_beside(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  size_t pos = 0;
  while (pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string::npos) slash = name.size();
    if (name.compare(pos, slash - pos, "..") == 0 && slash - pos == 2) return false;
    pos = slash + 1;
  }
  return true;
}

// Refuses a link to another file (or, with --allow-external, one that leaves
// the input's directory) before anything follows it.
void check_link(hid_t file, const std::string& prefix, const std::string& display) {
  H5L_info_t info{};
  if (H5Lget_info(file, prefix.c_str(), &info, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return;
  }
  if (info.type == H5L_TYPE_SOFT || info.type == H5L_TYPE_HARD) return;
  std::string target = "?";
  if (info.type == H5L_TYPE_EXTERNAL && info.u.val_size > 0 && info.u.val_size < (1u << 20)) {
    std::vector<char> value(info.u.val_size);
    const char* file_name = nullptr;
    const char* object = nullptr;
    if (H5Lget_val(file, prefix.c_str(), value.data(), value.size(), H5P_DEFAULT) >= 0 &&
        H5Lunpack_elink_val(value.data(), value.size(), nullptr, &file_name, &object) >= 0 && file_name)
      target = file_name;
    H5Eclear2(H5E_DEFAULT);
  }
  if (info.type == H5L_TYPE_EXTERNAL && g_allow_external && stays_beside(target)) return;
  EDO_FAIL("{}: '{}' is a link to another file ({}); refused: {}", display, prefix, target,
           info.type != H5L_TYPE_EXTERNAL ? "not a link type edo follows"
           : g_allow_external             ? "--allow-external reads only files in the input's directory"
                                          : "pass --allow-external to read files in the input's directory");
}

// True when every link along `name` exists (H5Lexists fails on a missing
// intermediate group instead of answering false). Links to other files are
// checked before they are followed.
bool link_path_exists(hid_t file, const std::string& name, const std::string& display) {
  size_t pos = name[0] == '/' ? 1 : 0;
  while (pos <= name.size()) {
    size_t slash = name.find('/', pos);
    if (slash == std::string::npos) slash = name.size();
    if (slash > pos) {
      const std::string prefix = name.substr(0, slash);
      if (H5Lexists(file, prefix.c_str(), H5P_DEFAULT) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return false;
      }
      check_link(file, prefix, display);
    }
    pos = slash + 1;
  }
  return true;
}

const char* class_name(H5T_class_t c) {
  switch (c) {
    case H5T_TIME:
      return "time";
    case H5T_STRING:
      return "string";
    case H5T_BITFIELD:
      return "bitfield";
    case H5T_OPAQUE:
      return "opaque";
    case H5T_COMPOUND:
      return "compound";
    case H5T_REFERENCE:
      return "reference";
    case H5T_ENUM:
      return "enum";
    case H5T_VLEN:
      return "variable-length";
    case H5T_ARRAY:
      return "array";
    default:
      return "unknown";
  }
}

// The DType that describes a stored element, or an error for what edo cannot widen.
DType classify(hid_t type, const std::string& display) {
  const H5T_class_t cls = H5Tget_class(type);
  const size_t size = H5Tget_size(type);
  if (cls == H5T_FLOAT) {
    // Any 2-byte float (IEEE half, or a bfloat16 layout) reports f16: the
    // stored size is what dtype() tells callers, HDF5 does the widening.
    if (size == 2) return DType::f16;
    if (size == 4) return DType::f32;
    if (size == 8) return DType::f64;
    EDO_NOT_A_TABLE(NotATableReason::dtype, "{}: unsupported HDF5 element type: {}-byte float", display, size);
  }
  if (cls == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
    switch (size) {
      case 1:
        return is_signed ? DType::i8 : DType::u8;
      case 2:
        return is_signed ? DType::i16 : DType::u16;
      case 4:
        return is_signed ? DType::i32 : DType::u32;
      case 8:
        return is_signed ? DType::i64 : DType::u64;
      default:
        EDO_NOT_A_TABLE(NotATableReason::dtype, "{}: unsupported HDF5 element type: {}-byte integer", display, size);
    }
  }
  EDO_NOT_A_TABLE(NotATableReason::dtype, "{}: unsupported HDF5 element type: {} (expected a float or integer dataset)",
                  display, class_name(cls));
}

// IEEE 754 binary16, little-endian: HDF5 1.10 has no predefined half type.
Handle make_half_type() {
  Handle t(H5Tcopy(H5T_IEEE_F32LE), H5Tclose);
  if (!t || H5Tset_fields(t.get(), 15, 10, 5, 0, 10) < 0 || H5Tset_precision(t.get(), 16) < 0 ||
      H5Tset_size(t.get(), 2) < 0 || H5Tset_ebias(t.get(), 15) < 0)
    EDO_FAIL("cannot build the HDF5 float16 type: {}", hdf5_error());
  return t;
}

Handle file_type_of(DType t) {
  hid_t base = H5T_IEEE_F32LE;
  switch (t) {
    case DType::f16:
      return make_half_type();
    case DType::f32:
      base = H5T_IEEE_F32LE;
      break;
    case DType::f64:
      base = H5T_IEEE_F64LE;
      break;
    case DType::i8:
      base = H5T_STD_I8LE;
      break;
    case DType::u8:
      base = H5T_STD_U8LE;
      break;
    case DType::i16:
      base = H5T_STD_I16LE;
      break;
    case DType::u16:
      base = H5T_STD_U16LE;
      break;
    case DType::i32:
      base = H5T_STD_I32LE;
      break;
    case DType::u32:
      base = H5T_STD_U32LE;
      break;
    case DType::i64:
      base = H5T_STD_I64LE;
      break;
    case DType::u64:
      base = H5T_STD_U64LE;
      break;
    case DType::bf16:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
      EDO_FAIL("tables are not written to HDF5 as {}", dtype_name(t));
  }
  return Handle(H5Tcopy(base), H5Tclose);
}

class Hdf5Reader final : public TableReader {
 public:
  Hdf5Reader(const std::string& path, const std::string& dataset, const std::string& display)
      : TableReader(display, "hdf5") {
    silence_hdf5_errors();
    if (H5Fis_hdf5(path.c_str()) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      EDO_FAIL("{}: not an HDF5 file", display);
    }
    // Locking fails on file systems without flock (NFS, some containers);
    // a reader does not need it there.
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_file_locking(fapl.get(), true, true);
    file_ = Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    if (!file_) EDO_FAIL("{}: cannot open HDF5 file: {}", display, hdf5_error());

    const std::string name = dataset.empty() ? only_2d_dataset(display) : absolute(dataset);
    if (name == "/" || !link_path_exists(file_.get(), name, display))
      EDO_FAIL("{}: no dataset '{}' in the file ({})", display, name, describe_datasets(list_datasets(file_.get())));
    H5O_info_t info{};
    if (H5Oget_info_by_name2(file_.get(), name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0)
      EDO_FAIL("{}: cannot inspect '{}': {}", display, name, hdf5_error());
    if (info.type != H5O_TYPE_DATASET)
      EDO_FAIL("{}: '{}' is not a dataset ({})", display, name, describe_datasets(list_datasets(file_.get())));
    dataset_ = Handle(H5Dopen2(file_.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    if (!dataset_) EDO_FAIL("{}: cannot open dataset '{}': {}", display, name, hdf5_error());
    // Reopened, when it must be, with what this open needs: external and
    // virtual files resolved against the input's directory (never the
    // working directory), and chunks bigger than HDF5's 1 MiB chunk cache
    // (read and inflated again for every row read from them otherwise) in
    // a cache that holds two of them, up to 256 MiB. Only then: HDF5 will
    // not open one dataset twice with two file prefixes.
    Handle dapl(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
    bool reopen = false;
    if (check_storage(display, name)) {
      const auto slash = path.find_last_of('/');
      const std::string dir = slash == std::string::npos ? "./" : path.substr(0, slash + 1);
      H5Pset_efile_prefix(dapl.get(), dir.c_str());
      H5Pset_virtual_prefix(dapl.get(), dir.c_str());
      reopen = true;
    }
    if (read_chunk_shape() && chunk_bytes_ > (uint64_t{1} << 20) && chunk_bytes_ <= kMaxChunkCache / 2) {
      H5Pset_chunk_cache(dapl.get(), H5D_CHUNK_CACHE_NSLOTS_DEFAULT, 2 * chunk_bytes_, H5D_CHUNK_CACHE_W0_DEFAULT);
      reopen = true;
    }
    if (reopen) {
      dataset_.close();
      dataset_ = Handle(H5Dopen2(file_.get(), name.c_str(), dapl.get()), H5Dclose);
      if (!dataset_) EDO_FAIL("{}: cannot open dataset '{}': {}", display, name, hdf5_error());
    }

    Handle type(H5Dget_type(dataset_.get()), H5Tclose);
    if (!type) EDO_FAIL("{}: cannot read the element type: {}", display, hdf5_error());
    dtype_ = classify(type.get(), display);

    file_space_ = Handle(H5Dget_space(dataset_.get()), H5Sclose);
    if (!file_space_) EDO_FAIL("{}: cannot read the dataspace: {}", display, hdf5_error());
    const int ndims =
        H5Sget_simple_extent_type(file_space_.get()) == H5S_SIMPLE ? H5Sget_simple_extent_ndims(file_space_.get()) : 0;
    if (ndims != 2)
      EDO_NOT_A_TABLE(NotATableReason::shape, "{}: expected a 2-D dataset (rows, dim), got {} dimensions", display,
                      ndims);
    hsize_t dims[2] = {0, 0};
    H5Sget_simple_extent_dims(file_space_.get(), dims, nullptr);
    rows_ = dims[0];
    dim_ = dims[1];
    if (rows_ == 0 || dim_ == 0) EDO_FAIL("{}: empty table ({} x {})", display, rows_, dim_);
    const auto values = checked_mul(rows_, dim_);
    if (!values || !checked_mul(*values, sizeof(double)))
      EDO_FAIL("{}: dataset of {} x {} is too large", display, rows_, dim_);
    // (Too many columns is open_table()'s error to give, the more precise one.)
    if (dim_ <= kMaxDim) check_declared_size(display, *values * H5Tget_size(type.get()));
    if (chunk_rows_ > 0) chunk_cols_ = std::min<uint64_t>(chunk_cols_, dim_);
  }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    buffer_.resize(count * dim_);
    if (count == 0) return buffer_.data();
    // HDF5 keeps a few KB of bookkeeping for every chunk one read touches:
    // with tiny chunks (1 x 1), a block of rows is read a few chunk rows at
    // a time, so that stays bounded.
    uint64_t step = count;
    if (chunk_rows_ > 0) {
      const uint64_t chunks_across = (dim_ + chunk_cols_ - 1) / chunk_cols_;
      step = std::max<uint64_t>(1, kMaxChunksPerRead / chunks_across) * chunk_rows_;
    }
    for (uint64_t done = 0; done < count; done += step) {
      const uint64_t n = std::min(step, count - done);
      const hsize_t start[2] = {begin + done, 0};
      const hsize_t extent[2] = {n, dim_};
      Handle memory(H5Screate_simple(2, extent, nullptr), H5Sclose);
      if (!memory || H5Sselect_hyperslab(file_space_.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0 ||
          H5Dread(dataset_.get(), H5T_NATIVE_FLOAT, memory.get(), file_space_.get(), H5P_DEFAULT,
                  buffer_.data() + done * dim_) < 0)
        EDO_FAIL("{}: cannot read rows [{}, {}): {}", path_, begin + done, begin + done + n, hdf5_error());
    }
    return buffer_.data();
  }

 private:
  std::string only_2d_dataset(const std::string& display) {
    const auto list = list_datasets(file_.get());
    const DatasetEntry* found = nullptr;
    size_t n2d = 0;
    for (const auto& e : list) {
      if (e.ndims == 2) {
        found = &e;
        ++n2d;
      }
    }
    if (n2d != 1)
      EDO_FAIL("{}: {} 2-D datasets in the file; name one as {}:/path ({})", display, n2d == 0 ? "no" : "several",
               display, describe_datasets(list));
    return found->name;
  }

  static std::string absolute(const std::string& name) { return name[0] == '/' ? name : "/" + name; }

  static constexpr uint64_t kMaxChunkCache = uint64_t{256} << 20;
  static constexpr uint64_t kMaxChunksPerRead = 4096;

  // The chunk shape of a chunked dataset; false for contiguous storage.
  bool read_chunk_shape() {
    Handle dcpl(H5Dget_create_plist(dataset_.get()), H5Pclose);
    hsize_t dims[2] = {0, 0};
    if (!dcpl || H5Pget_layout(dcpl.get()) != H5D_CHUNKED || H5Pget_chunk(dcpl.get(), 2, dims) != 2 || dims[0] == 0 ||
        dims[1] == 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    chunk_rows_ = dims[0];
    chunk_cols_ = dims[1];
    Handle type(H5Dget_type(dataset_.get()), H5Tclose);
    const auto bytes = checked_mul(dims[0], dims[1]);
    chunk_bytes_ = bytes && type ? *bytes * H5Tget_size(type.get()) : 0;
    return true;
  }

  // A dataset that stores almost nothing of what it declares is its fill
  // value repeated: refused from 1 GiB declared, unless --allow-fill.
  void check_declared_size(const std::string& display, uint64_t declared) {
    if (g_allow_fill || declared < (uint64_t{1} << 30)) return;
    const uint64_t stored = H5Dget_storage_size(dataset_.get());
    if (stored >= declared / 64) return;
    EDO_FAIL(
        "{}: declares {} x {} values ({} bytes) but stores {} bytes: the rest would be its fill value; refused "
        "(--allow-fill reads it)",
        display, rows_, dim_, declared, stored);
  }

  // Refuses bytes kept in other files: external storage (raw bytes of any
  // file) and virtual datasets, unless allowed and beside the input. True
  // when the dataset (allowed) keeps values in such files.
  bool check_storage(const std::string& display, const std::string& name) {
    Handle dcpl(H5Dget_create_plist(dataset_.get()), H5Pclose);
    if (!dcpl) EDO_FAIL("{}: cannot read the storage of '{}': {}", display, name, hdf5_error());
    std::vector<std::string> files;
    const int external = H5Pget_external_count(dcpl.get());
    for (int i = 0; i < external; ++i) {
      char file[4096] = {0};
      off_t offset = 0;
      hsize_t size = 0;
      if (H5Pget_external(dcpl.get(), static_cast<unsigned>(i), sizeof file, file, &offset, &size) < 0)
        EDO_FAIL("{}: cannot read the external storage of '{}': {}", display, name, hdf5_error());
      files.emplace_back(file);
    }
    if (H5Pget_layout(dcpl.get()) == H5D_VIRTUAL) {
      size_t count = 0;
      if (H5Pget_virtual_count(dcpl.get(), &count) < 0)
        EDO_FAIL("{}: cannot read '{}': {}", display, name, hdf5_error());
      for (size_t i = 0; i < count; ++i) {
        char file[4096] = {0};
        if (H5Pget_virtual_filename(dcpl.get(), i, file, sizeof file) < 0)
          EDO_FAIL("{}: cannot read the virtual sources of '{}': {}", display, name, hdf5_error());
        if (std::string_view(file) != ".") files.emplace_back(file);
      }
    }
    for (const std::string& f : files) {
      if (g_allow_external && stays_beside(f)) continue;
      EDO_FAIL("{}: '{}' keeps its values in another file ({}); refused: {}", display, name, f,
               g_allow_external ? "--allow-external reads only files in the input's directory"
                                : "pass --allow-external to read files in the input's directory");
    }
    return !files.empty();
  }

  Handle file_;
  Handle dataset_;
  Handle file_space_;
  std::vector<float> buffer_;
  uint64_t chunk_rows_ = 0, chunk_cols_ = 0, chunk_bytes_ = 0;  // 0: contiguous
};

// Creates the file anew at a temporary name (HDF5 opens it by name, beside the
// descriptor AtomicFile keeps), then renames it over the target on commit. An
// existing file at the target is replaced, never extended with a new dataset.
class Hdf5Writer final : public TableWriter {
 public:
  Hdf5Writer(const std::string& path, const std::string& dataset, uint64_t rows, uint64_t dim, DType dtype)
      : TableWriter(rows, dim), display_(path + ":" + dataset), dtype_(dtype), output_(path) {
    silence_hdf5_errors();
    if (dataset.empty() || dataset.find_first_not_of('/') == std::string::npos)
      EDO_FAIL("{}: name the dataset to write, as {}:/embeddings", display_, path);
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_file_locking(fapl.get(), true, true);
    file_ = Handle(H5Fcreate(output_.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    if (!file_) EDO_FAIL("{}: cannot create HDF5 file: {}", display_, hdf5_error());
    file_type_ = file_type_of(dtype);
    const hsize_t dims[2] = {rows, dim};
    file_space_ = Handle(H5Screate_simple(2, dims, nullptr), H5Sclose);
    Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    dataset_ = Handle(H5Dcreate2(file_.get(), dataset.c_str(), file_type_.get(), file_space_.get(), lcpl.get(),
                                 H5P_DEFAULT, H5P_DEFAULT),
                      H5Dclose);
    if (!dataset_) EDO_FAIL("{}: cannot create dataset: {}", display_, hdf5_error());
  }

  void write_f32(const float* rows, uint64_t count) override {
    if (count > rows_ - written_) EDO_FAIL("{}: more rows written than the declared {}", display_, rows_);
    if (count == 0) return;
    const hsize_t start[2] = {written_, 0};
    const hsize_t extent[2] = {count, dim_};
    Handle memory(H5Screate_simple(2, extent, nullptr), H5Sclose);
    // HDF5 converts float to every stored type but float16, which edo rounds
    // itself (RNE, the same bits as the .npy writer).
    hid_t memory_type = H5T_NATIVE_FLOAT;
    const void* data = rows;
    if (dtype_ == DType::f16) {
      half_.resize(count * dim_);
      for (size_t i = 0; i < half_.size(); ++i) half_[i] = float_to_half_bits(rows[i]);
      memory_type = file_type_.get();
      data = half_.data();
    }
    if (!memory || H5Sselect_hyperslab(file_space_.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0 ||
        H5Dwrite(dataset_.get(), memory_type, memory.get(), file_space_.get(), H5P_DEFAULT, data) < 0)
      EDO_FAIL("{}: cannot write rows [{}, {}): {}", display_, written_, written_ + count, hdf5_error());
    written_ += count;
  }

  void commit() override {
    if (written_ != rows_) EDO_FAIL("{}: {} rows written, {} declared", display_, written_, rows_);
    dataset_.close();
    file_space_.close();
    file_type_.close();
    if (!file_.close()) EDO_FAIL("{}: cannot finish HDF5 file: {}", display_, hdf5_error());
    output_.commit();
  }

 private:
  std::string display_;
  DType dtype_;
  AtomicFile output_;  // declared before the handles: removed after HDF5 has closed the file
  Handle file_;
  Handle file_type_;
  Handle file_space_;
  Handle dataset_;
  uint64_t written_ = 0;
  std::vector<uint16_t> half_;
};

}  // namespace

std::unique_ptr<TableReader> open_hdf5(const std::string& path, const std::string& dataset,
                                       const std::string& display) {
  return std::make_unique<Hdf5Reader>(path, dataset, display);
}

std::unique_ptr<TableWriter> create_hdf5(const std::string& path, const std::string& dataset, uint64_t rows,
                                         uint64_t dim, DType dtype) {
  return std::make_unique<Hdf5Writer>(path, dataset, rows, dim, dtype);
}

namespace {

// A dataset a table in one new file, each at "/NAME" (intermediate groups
// created), all created at once; rows written by hyperslab as they come.
class Hdf5TablesWriter final : public MultiTableWriter {
 public:
  Hdf5TablesWriter(const std::string& path, const std::vector<NamedTableShape>& tables, DType dtype)
      : path_(path), dtype_(dtype), tables_(tables), written_(tables.size(), 0), output_(path) {
    silence_hdf5_errors();
    Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
    H5Pset_file_locking(fapl.get(), true, true);
    file_ = Handle(H5Fcreate(output_.temp_path().c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    if (!file_) EDO_FAIL("{}: cannot create HDF5 file: {}", path_, hdf5_error());
    file_type_ = file_type_of(dtype);
    Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    for (const NamedTableShape& t : tables_) {
      const std::string name = t.name.starts_with('/') ? t.name : "/" + t.name;
      const hsize_t dims[2] = {t.rows, t.dim};
      Handle space(H5Screate_simple(2, dims, nullptr), H5Sclose);
      Handle ds(
          H5Dcreate2(file_.get(), name.c_str(), file_type_.get(), space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
          H5Dclose);
      if (!ds) EDO_FAIL("{}: cannot create dataset {} for table '{}': {}", path_, name, t.name, hdf5_error());
      spaces_.push_back(std::move(space));
      datasets_.push_back(std::move(ds));
    }
  }

  void write_f32(size_t table, const float* rows, uint64_t count) override {
    const NamedTableShape& t = tables_.at(table);
    if (count > t.rows - written_[table])
      EDO_FAIL("{}: more rows written to '{}' than the declared {}", path_, t.name, t.rows);
    if (count == 0) return;
    const hsize_t start[2] = {written_[table], 0};
    const hsize_t extent[2] = {count, t.dim};
    Handle memory(H5Screate_simple(2, extent, nullptr), H5Sclose);
    hid_t memory_type = H5T_NATIVE_FLOAT;  // float16 rounded by edo, as Hdf5Writer does
    const void* data = rows;
    if (dtype_ == DType::f16) {
      half_.resize(count * t.dim);
      for (size_t i = 0; i < half_.size(); ++i) half_[i] = float_to_half_bits(rows[i]);
      memory_type = file_type_.get();
      data = half_.data();
    }
    const hid_t space = spaces_[table].get();
    if (!memory || H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0 ||
        H5Dwrite(datasets_[table].get(), memory_type, memory.get(), space, H5P_DEFAULT, data) < 0)
      EDO_FAIL("{}: '{}': cannot write rows [{}, {}): {}", path_, t.name, written_[table], written_[table] + count,
               hdf5_error());
    written_[table] += count;
  }

  void commit() override {
    for (size_t i = 0; i < tables_.size(); ++i)
      if (written_[i] != tables_[i].rows)
        EDO_FAIL("{}: '{}': {} rows written, {} declared", path_, tables_[i].name, written_[i], tables_[i].rows);
    datasets_.clear();
    spaces_.clear();
    file_type_.close();
    if (!file_.close()) EDO_FAIL("{}: cannot finish HDF5 file: {}", path_, hdf5_error());
    output_.commit();
  }

 private:
  std::string path_;
  DType dtype_;
  std::vector<NamedTableShape> tables_;
  std::vector<uint64_t> written_;
  AtomicFile output_;  // declared before the handles: removed after HDF5 has closed the file
  Handle file_;
  Handle file_type_;
  std::vector<Handle> spaces_, datasets_;
  std::vector<uint16_t> half_;
};

}  // namespace

std::unique_ptr<MultiTableWriter> create_hdf5_tables(const std::string& path,
                                                     const std::vector<NamedTableShape>& tables, DType dtype) {
  return std::make_unique<Hdf5TablesWriter>(path, tables, dtype);
}

void set_hdf5_input_policy(const Hdf5InputPolicy& policy) {
  g_allow_external = policy.allow_external;
  g_allow_fill = policy.allow_fill;
}
Hdf5InputPolicy hdf5_input_policy() { return {g_allow_external, g_allow_fill}; }

std::vector<std::string> hdf5_dataset_names(const std::string& path) {
  silence_hdf5_errors();
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_file_locking(fapl.get(), true, true);
  Handle file(H5Fis_hdf5(path.c_str()) > 0 ? H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()) : -1, H5Fclose);
  if (!file) {
    H5Eclear2(H5E_DEFAULT);
    EDO_FAIL("{}: not an HDF5 file", path);
  }
  std::vector<std::string> names;
  for (const DatasetEntry& e : list_datasets(file.get())) names.push_back(e.name);
  return names;
}

std::vector<std::string> hdf5_object_names(const std::string& path) {
  silence_hdf5_errors();
  std::vector<std::string> names;
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return names;
  }
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_file_locking(fapl.get(), true, true);
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  if (!file) {
    H5Eclear2(H5E_DEFAULT);
    return names;
  }
  auto visit = [](hid_t, const char* name, const H5O_info_t*, void* data) -> herr_t {
    auto* list = static_cast<std::vector<std::string>*>(data);
    if (std::string_view(name) != ".") list->push_back(std::string("/") + name);
    return list->size() >= kMaxListedDatasets ? 1 : 0;
  };
  H5Ovisit2(file.get(), H5_INDEX_NAME, H5_ITER_NATIVE, visit, &names, H5O_INFO_BASIC);
  H5Eclear2(H5E_DEFAULT);
  return names;
}

}  // namespace edo::io
