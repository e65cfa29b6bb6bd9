// SPDX-License-Identifier: Apache-2.0
// The `edo` Python module: the reader library (edo::reader) for Python.
//
//   import edo
//   with edo.open("table.edo") as f:   # or f = edo.open(...); ...; f.close()
//       rows = f.lookup(ids)           # numpy float32 (len(ids), f.dim); the GIL is released meanwhile
//       rows = f[ids]; rows = f[10:20] # the same by indexing: integer arrays, lists, ints, slices
//       table = f.decode_all()         # numpy float32 (f.rows, f.dim)
//       f.shape, f.dtype, len(f)       # (rows, dim), float32 (what rows decode to), rows
//       f.manifest, f.tiers            # the manifest as a dict; per tier: name, kind, codec, residency, rows, bytes
//       f.tables, f.table("name")      # a model file's table names; one table as a File (f["name"] too)
//
// Ids must be integers (a float or bool array is a TypeError). Errors are
// edo.Error (a RuntimeError) with edo's one-line message; a closed file
// raises ValueError, as Python's own files do. Stubs: python/edo/_edo.pyi.
#include <edo/build_info.hpp>
#include <edo/cpu_path.hpp>
#include <edo/error.hpp>
#include <edo/reader.hpp>
#include <edo/threads.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace py = pybind11;

namespace {

edo::UnknownIdPolicy policy_of(const std::string& unknown) {
  try {
    return edo::parse_unknown_id_policy(unknown);
  } catch (const edo::Error&) {
    throw edo::Error("unknown='" + unknown + "': expected 'error', 'default' or 'hash'", __FILE__, __LINE__,
                     edo::ExitCode::usage);
  }
}

// verify=: a mode's name, or a bool as before the modes (True: all, False: structure).
edo::io::Verify verify_of(const py::object& verify) {
  if (py::isinstance<py::bool_>(verify)) return verify.cast<bool>() ? edo::io::Verify::all : edo::io::Verify::structure;
  if (!py::isinstance<py::str>(verify))
    throw py::type_error("verify must be 'structure', 'small', 'all' or a bool, not " +
                         py::str(py::type::of(verify)).cast<std::string>());
  const std::string name = verify.cast<std::string>();
  try {
    return edo::io::parse_verify(name);
  } catch (const edo::Error&) {
    throw edo::Error("verify='" + name + "': expected 'structure', 'small' or 'all'", __FILE__, __LINE__,
                     edo::ExitCode::usage);
  }
}

std::shared_ptr<edo::Reader> open_reader(const std::string& path, const std::string& unknown, edo::io::Verify verify,
                                         uint64_t max_resident, const std::string& placement, const std::string& device,
                                         const std::string& host_access) {
  // A C path ends at the first NUL: "a.edo\0x" would open a.edo.
  if (path.find('\0') != std::string::npos)
    throw edo::Error("open: the path holds a NUL character", __FILE__, __LINE__, edo::ExitCode::usage);
  edo::ReaderOptions opt;
  opt.unknown_ids = policy_of(unknown);
  opt.verify = verify;
  opt.max_resident = max_resident;
  opt.placement = edo::io::parse_placement(placement);
  if (device != "cpu" && device != "cuda")
    throw edo::Error("device='" + device + "': expected 'cpu' or 'cuda'", __FILE__, __LINE__, edo::ExitCode::usage);
  opt.device = device == "cuda" ? edo::Device::cuda : edo::Device::cpu;
  opt.host_access = edo::parse_host_tier_access(host_access);
  return std::make_shared<edo::Reader>(edo::Reader::open(path, opt));
}

// Ids as numpy holds them: integers only. Floats were truncated ([1.5, 2.9]
// gave rows 1 and 2) and bools taken as 0 and 1: both are a caller's bug.
py::array_t<int64_t, py::array::c_style | py::array::forcecast> integer_ids(const py::object& given) {
  const py::array any = py::module_::import("numpy").attr("asarray")(given);
  const char kind = any.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw py::type_error("lookup: ids must be integers, not " + py::str(any.dtype()).cast<std::string>());
  return py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(any);
}

// out=: the caller's float32 array of `rows` x dim, C-contiguous and writable,
// filled in place (a serving loop reuses one buffer: no allocation and no
// page faults a call); None: a new array.
py::array_t<float> output_rows(const py::object& given, size_t rows, uint64_t dim) {
  if (given.is_none()) return py::array_t<float>({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(dim)});
  const auto shape = std::to_string(rows) + " x " + std::to_string(dim);
  if (!py::isinstance<py::array_t<float>>(given))
    throw py::value_error("out: a float32 numpy array of " + shape + " wanted");
  auto out = given.cast<py::array_t<float>>();
  if (out.ndim() != 2 || static_cast<size_t>(out.shape(0)) != rows || static_cast<uint64_t>(out.shape(1)) != dim ||
      !(out.flags() & py::array::c_style) || !out.writeable())
    throw py::value_error("out: a writable C-contiguous float32 array of " + shape + " wanted");
  return out;
}

// out= in device memory: an object with __cuda_array_interface__ (a torch
// CUDA tensor, a CuPy array) of `rows` x dim float32, C-contiguous and
// writable; nothing when `given` is no such object (host memory or None).
std::optional<float*> device_rows(const py::object& given, size_t rows, uint64_t dim) {
  if (given.is_none() || !py::hasattr(given, "__cuda_array_interface__")) return std::nullopt;
  const py::dict cai = given.attr("__cuda_array_interface__");
  const auto shape = std::to_string(rows) + " x " + std::to_string(dim);
  const py::object want = py::make_tuple(rows, dim);
  const py::object strides = cai.contains("strides") ? py::object(cai["strides"]) : py::none();
  const bool contiguous = strides.is_none() || strides.equal(py::make_tuple(dim * sizeof(float), sizeof(float)));
  if (cai.contains("mask") && !cai["mask"].is_none())
    throw py::value_error("out: a device array with a mask: every value of " + shape + " is written");
  const py::tuple data = cai["data"];
  if (!py::object(cai["shape"]).equal(want) || cai["typestr"].cast<std::string>() != "<f4" || !contiguous ||
      data[1].cast<bool>())
    throw py::value_error("out: a writable C-contiguous float32 device array of " + shape + " wanted");
  return reinterpret_cast<float*>(data[0].cast<uintptr_t>());
}

// A copy of a caller's 1-D array, taken under the GIL: while the GIL is
// released another thread may change the caller's array, so what was checked
// is what is used (docs/PACK.md, "Python").
// The copy goes to a buffer of this thread's that keeps its memory from call
// to call (slot: one per argument of a call): a fresh vector of a batch's
// ids was a fresh mapping each call, and the kernel's zeroing of its pages
// took a tenth of a pooled lookup's time. Every argument is converted to an
// array before the first copy, so no Python code (an __array__ calling back
// into this module on this thread) runs between the copies and their use.
template <class T, int Slot, class Array>
std::span<const T> owned_copy(const Array& a) {
  thread_local std::vector<T> buffer;
  const T* p = a.data();
  buffer.assign(p, p + a.shape(0));
  return buffer;
}

py::object lookup(const edo::Reader& r, const py::object& given, const py::object& out_given) {
  const auto given_ids = integer_ids(given);
  if (given_ids.ndim() != 1)
    throw edo::Error("lookup: ids must be one-dimensional", __FILE__, __LINE__, edo::ExitCode::usage);
  const std::span<const int64_t> ids = owned_copy<int64_t, 0>(given_ids);
  const size_t n = ids.size();
  const std::optional<float*> on_device = device_rows(out_given, n, r.dim());
  py::array_t<float> out = on_device ? py::array_t<float>() : output_rows(out_given, n, r.dim());
  const int64_t* id = ids.data();
  // No policy serves a negative id (edo-lookup refuses them too): it is a
  // wrapped index or a bug in the caller, not an unknown row.
  for (size_t i = 0; i < n; ++i)
    if (id[i] < 0)
      throw edo::Error("lookup: id " + std::to_string(id[i]) + " at position " + std::to_string(i) + " is negative",
                       __FILE__, __LINE__, edo::ExitCode::usage);
  if (on_device) {
    {
      py::gil_scoped_release free;
      r.lookup_device(id, n, *on_device);  // refuses a file not opened with device='cuda'
    }
    return out_given;
  }
  float* rows = out.mutable_data();
  {
    py::gil_scoped_release free;  // lookups decode in parallel and never touch Python objects
    r.lookup(id, n, rows);
  }
  return std::move(out);
}

// f.lookup_bags(offsets, ids, mode, weights): EmbeddingBag's pooling.
py::object lookup_bags(const edo::Reader& r, const py::object& offsets_given, const py::object& ids_given,
                       const std::string& mode_name, const py::object& weights_given, const py::object& out_given) {
  const auto given_offsets = integer_ids(offsets_given);
  const auto given_ids = integer_ids(ids_given);
  if (given_offsets.ndim() != 1 || given_ids.ndim() != 1)
    throw edo::Error("lookup_bags: offsets and ids must be one-dimensional", __FILE__, __LINE__, edo::ExitCode::usage);
  const edo::PoolMode mode = edo::parse_pool_mode(mode_name);
  py::array_t<float, py::array::c_style | py::array::forcecast> given_weights;
  if (!weights_given.is_none()) {
    given_weights = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(
        py::module_::import("numpy").attr("asarray")(weights_given));
    if (!given_weights || given_weights.ndim() != 1 || given_weights.shape(0) != given_ids.shape(0))
      throw py::value_error("lookup_bags: weights: one number per id wanted (" + std::to_string(given_ids.shape(0)) +
                            " ids)");
  }
  // Copies: the checks below and the pooling read the same numbers.
  const std::span<const int64_t> offsets = owned_copy<int64_t, 1>(given_offsets);
  const std::span<const int64_t> ids = owned_copy<int64_t, 2>(given_ids);
  const std::span<const float> weights =
      weights_given.is_none() ? std::span<const float>() : owned_copy<float, 3>(given_weights);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0)
      throw edo::Error(
          "lookup_bags: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) + " is negative", __FILE__,
          __LINE__, edo::ExitCode::usage);
  const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), ids.size(),
                       weights_given.is_none() ? nullptr : weights.data()};
  // Malformed offsets are a ValueError naming them, as numpy's own argument errors are.
  try {
    edo::check_bags(bags, mode, "lookup_bags");
  } catch (const edo::Error& e) {
    if (e.code() == edo::ExitCode::usage) throw;
    throw py::value_error(e.what());
  }
  if (const std::optional<float*> on_device = device_rows(out_given, bags.count, r.dim())) {
    {
      py::gil_scoped_release free;
      r.lookup_bags_device(bags, mode, *on_device);  // refuses a file not opened with device='cuda'
    }
    return out_given;
  }
  py::array_t<float> out = output_rows(out_given, bags.count, r.dim());
  float* rows = out.mutable_data();
  {
    py::gil_scoped_release free;  // pools on the reader's threads, never touching Python objects
    r.lookup_bags(bags, mode, rows);
  }
  return std::move(out);
}

py::array_t<float> decode_all(const edo::Reader& r) {
  py::array_t<float> out({static_cast<py::ssize_t>(r.rows()), static_cast<py::ssize_t>(r.dim())});
  float* rows = out.mutable_data();
  {
    py::gil_scoped_release free;
    r.decode_all(rows);
  }
  return out;
}

py::list tiers(const edo::Reader& r) {
  py::list out;
  for (const edo::TierStats& t : r.tiers()) {
    py::dict d;
    d["name"] = t.name;
    d["kind"] = edo::tier_kind_traits(t.kind).name;
    d["codec"] = t.codec;
    d["residency"] = edo::residency_name(t.residency);
    d["rows"] = t.rows;
    d["code_size"] = t.code_size;
    d["bytes"] = t.bytes;
    out.append(d);
  }
  return out;
}

// An open file as Python holds it: closed by close() or a `with` block's
// end, after which every use is a ValueError. A table of a model file is a
// File too, sharing the model's Reader: it keeps the mapping alive after
// the model's File is closed or gone, until it is closed or gone itself.
class File {
 public:
  explicit File(std::shared_ptr<edo::Reader> file, const edo::Reader* table = nullptr)
      : file_(std::move(file)), reader_(table ? table : file_.get()) {}
  const edo::Reader& reader() const {
    if (!reader_) throw py::value_error("I/O operation on a closed edo file");
    return *reader_;
  }
  // The reader of one table: a model file of several is an edo.Error naming them.
  const edo::Reader& table_reader() const {
    const edo::Reader& r = reader();
    if (r.is_model() && r.tables().size() != 1) {
      const std::vector<std::string> names = r.tables();
      std::string listed;
      for (size_t i = 0; i < names.size() && i < 20; ++i) listed += (i ? ", " : "") + names[i];
      throw edo::Error(r.path() + ": a model file of " + std::to_string(names.size()) + " tables (" + listed +
                           (names.size() > 20 ? ", ..." : "") + "): f.table(name) or f[name] opens one",
                       __FILE__, __LINE__, edo::ExitCode::usage);
    }
    return r.is_model() ? r.table(r.tables().front()) : r;
  }
  // table_reader() kept alive for a call that releases the GIL: close() on
  // another thread then drops this File's hold, never the Reader under the
  // running decode, which is freed when the last call using it returns.
  std::shared_ptr<const edo::Reader> table_lease() const {
    const edo::Reader& r = table_reader();
    return std::shared_ptr<const edo::Reader>(file_, &r);
  }
  // Table `name` (a one-table file's own name, or a model's): KeyError when there is none.
  File table(const std::string& name) const {
    const edo::Reader& r = reader();
    for (const std::string& t : r.tables())
      if (t == name) return File(file_, &r.table(name));
    const std::vector<std::string> names = r.tables();
    std::string listed;
    for (size_t i = 0; i < names.size() && i < 20; ++i) listed += (i ? ", " : "") + names[i];
    throw py::key_error(r.path() + ": no table '" + name + "' (it holds " + std::to_string(names.size()) + ": " +
                        listed + (names.size() > 20 ? ", ..." : "") + ")");
  }
  void close() {
    reader_ = nullptr;
    file_.reset();
  }
  bool closed() const { return !reader_; }

 private:
  std::shared_ptr<edo::Reader> file_;  // the file's Reader, shared by its tables' Files
  const edo::Reader* reader_;          // this File's: *file_, or one of its model tables
};

File open_file(const std::string& path, const std::string& unknown, const py::object& verify, uint64_t max_resident,
               const std::string& placement, const std::string& device, const std::string& host_access) {
  return File(open_reader(path, unknown, verify_of(verify), max_resident, placement, device, host_access));
}

// f[i], f[ids], f[a:b:c]: an int gives one row (dim,), anything else rows (n, dim);
// f["name"]: a table of the file (File.table).
py::object get_item(const File& f, const py::object& key) {
  if (py::isinstance<py::str>(key)) return py::cast(f.table(key.cast<std::string>()));
  const std::shared_ptr<const edo::Reader> lease = f.table_lease();
  const edo::Reader& r = *lease;
  if (py::isinstance<py::slice>(key)) {
    py::ssize_t start = 0, stop = 0, step = 0, length = 0;
    if (!key.cast<py::slice>().compute(static_cast<py::ssize_t>(r.rows()), &start, &stop, &step, &length))
      throw py::error_already_set();
    std::vector<int64_t> ids(static_cast<size_t>(length));
    for (py::ssize_t i = 0; i < length; ++i) ids[static_cast<size_t>(i)] = start + i * step;
    return lookup(r, py::cast(ids), py::none());
  }
  if (py::isinstance<py::bool_>(key)) throw py::type_error("edo file indices must be integers, not bool");
  if (py::isinstance<py::int_>(key)) {
    int64_t id = key.cast<int64_t>();
    if (id < 0) id += static_cast<int64_t>(r.rows());  // as a sequence: -1 is the last row
    if (id < 0 || static_cast<uint64_t>(id) >= r.rows()) throw py::index_error("edo file index out of range");
    py::array_t<float> rows = lookup(r, py::cast(std::vector<int64_t>{id}), py::none());
    return rows.reshape({static_cast<py::ssize_t>(r.dim())});
  }
  return lookup(r, key, py::none());
}

// A new exception class edo.NAME deriving from `bases`, documented by `doc`.
py::object exception_class(py::module_& m, const char* name, const char* doc, const py::tuple& bases) {
  const std::string qualified = std::string("edo.") + name;
  py::object cls =
      py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(qualified.c_str(), doc, bases.ptr(), nullptr));
  if (!cls) throw py::error_already_set();
  m.attr(name) = cls;
  return cls;
}

}  // namespace

PYBIND11_MODULE(_edo, m) {
  m.doc() =
      "The compiled part of the edo package (python/_edo_module.cpp): read .edo files (edo's compressed\n"
      "embedding tables), lookups by id into numpy arrays. Use it through `import edo`. Built "
      "for " EDO_PYTHON_EXECUTABLE ".";
  m.attr("__version__") = EDO_VERSION_STRING;
  // OMP_NUM_THREADS is checked as the tools check it (1 to 1024, capped at
  // the cores) before any lookup can start a team of its size.
  edo::limit_threads(0);
  // edo.Error, and a subclass for each kind of problem (edo::ErrorKind) a
  // caller may answer apart. A usage mistake (a mode, placement or policy
  // edo does not have, ids of the wrong shape) is both an edo.Error and a
  // ValueError, as Python's own functions answer a bad argument; a file
  // that cannot be opened or read both an edo.Error and an OSError.
  static py::exception<edo::Error> error(m, "Error", PyExc_RuntimeError);
  error.doc() = "edo's error: one line naming the file and the problem.";
  static const py::object usage_error =
      exception_class(m, "UsageError", "A usage mistake: an edo.Error that is also a ValueError.",
                      py::make_tuple(error, py::handle(PyExc_ValueError)));
  static const py::object corrupt_error =
      exception_class(m, "CorruptFileError",
                      "A file that is not what it claims: bad structure, a checksum mismatch, a row out of its bounds.",
                      py::make_tuple(error));
  static const py::object io_error =
      exception_class(m, "FileIOError", "A file that cannot be opened, read or mapped: an edo.Error and an OSError.",
                      py::make_tuple(error, py::handle(PyExc_OSError)));
  static const py::object unsupported_error = exception_class(
      m, "UnsupportedError",
      "A well-formed file this build cannot serve: a newer format version, a format feature it lacks, a\n"
      "shard or trained state given as a table.",
      py::make_tuple(error));
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const edo::Error& e) {
      if (e.code() == edo::ExitCode::usage) return PyErr_SetString(usage_error.ptr(), e.what());
      switch (e.kind()) {
        case edo::ErrorKind::corrupt:
          return PyErr_SetString(corrupt_error.ptr(), e.what());
        case edo::ErrorKind::io:
          return PyErr_SetString(io_error.ptr(), e.what());
        case edo::ErrorKind::unsupported:
          return PyErr_SetString(unsupported_error.ptr(), e.what());
        case edo::ErrorKind::other:
          break;
      }
      error(e.what());
    }
  });
  py::class_<File>(m, "File",
                   "An open .edo file (memory-mapped): rows by id decode only those rows. Use as a context\n"
                   "manager or call close(); a closed file raises ValueError.")
      .def_property_readonly(
          "path", [](const File& f) { return f.reader().path(); }, "The file's path")
      .def_property_readonly(
          "rows", [](const File& f) { return f.table_reader().rows(); }, "Rows of the table")
      .def_property_readonly(
          "dim", [](const File& f) { return f.table_reader().dim(); }, "Values a row")
      .def_property_readonly(
          "shape", [](const File& f) { return py::make_tuple(f.table_reader().rows(), f.table_reader().dim()); },
          "(rows, dim)")
      .def_property_readonly(
          "dtype", [](const File&) { return py::dtype::of<float>(); }, "numpy.float32: what rows decode to")
      .def_property_readonly(
          "file_bytes", [](const File& f) { return f.reader().file_bytes(); }, "The file's size in bytes")
      .def_property_readonly(
          "tiers", [](const File& f) { return tiers(f.table_reader()); },
          "Per tier, a dict: name, kind, codec, residency, rows, code_size, bytes")
      .def_property_readonly(
          "manifest",
          [](const File& f) {
            return py::module_::import("json").attr("loads")(f.reader().container().manifest().dump());
          },
          "The file's manifest (docs/FORMAT.md) as a dict")
      .def_property_readonly("closed", &File::closed, "True after close()")
      .def_property_readonly(
          "tables", [](const File& f) { return f.reader().tables(); },
          "The names of the file's tables: a model file's, in file order; a one-table file's own name\n"
          "(its manifest's table_name, else 'table')")
      .def("table", &File::table, py::arg("name"),
           "Table `name` of a model file as an edo.File (every method works on it); it keeps the file\n"
           "mapped while it lives, even after this File is closed. KeyError naming the tables when absent")
      .def(
          "lookup",
          [](const File& f, const py::object& ids, const py::object& out) {
            return lookup(*f.table_lease(), ids, out);
          },
          py::arg("ids"), py::arg("out") = py::none(),
          "Rows of `ids` (integers: a 1-D array or a list; not floats or bools) as a float32 array\n"
          "(len(ids), dim), in the ids' order. Ids beyond the table follow the file's `unknown` policy;\n"
          "negative ids are an edo.Error. out: a float32 C-contiguous array of that shape to fill and\n"
          "return instead of a new one (a serving loop reuses it), or such an array in device memory for a\n"
          "file opened with device='cuda' (see open). The GIL is released while rows decode.")
      .def(
          "lookup_bags",
          [](const File& f, const py::object& offsets, const py::object& ids, const std::string& mode,
             const py::object& weights,
             const py::object& out) { return lookup_bags(*f.table_lease(), offsets, ids, mode, weights, out); },
          py::arg("offsets"), py::arg("ids"), py::arg("mode") = "sum", py::arg("weights") = py::none(),
          py::arg("out") = py::none(),
          "Bags of ids pooled, as torch.nn.EmbeddingBag(mode=...) with include_last_offset=False: bag b holds\n"
          "ids[offsets[b]:offsets[b+1]] (the last to the end; offsets[0] is 0). mode: 'sum', 'mean' or 'max';\n"
          "weights (one per id, with 'sum' only) scale each row. Returns float32 (len(offsets), dim); an\n"
          "empty bag gives zeros; out: an array of that shape to fill instead (as lookup's, device memory\n"
          "included: the bags pooled by the GPU kernel, bit for bit the CPU's result). Malformed\n"
          "offsets or weights are a ValueError naming them. The GIL is released while it runs.")
      .def(
          "decode_all", [](const File& f) { return decode_all(*f.table_lease()); },
          "Every row as a float32 array (rows, dim)")
      .def("close", &File::close,
           "Unmap the file; later uses raise ValueError. A call running on another thread finishes on\n"
           "the reader it started with (unmapped when it returns). Closing twice is allowed.")
      .def("__getitem__", &get_item, py::arg("key"),
           "f[i] (one row, (dim,); negative from the end), f[ids] (rows, as lookup()), f[a:b:c] (rows of the slice),\n"
           "f['name'] (the table of that name, as table())")
      .def("__len__", [](const File& f) { return f.table_reader().rows(); })
      .def("__enter__", [](File& f) -> File& { return f; })
      .def("__exit__", [](File& f, const py::object&, const py::object&, const py::object&) { f.close(); })
      .def("__repr__", [](const File& f) {
        if (f.closed()) return std::string("<edo.File (closed)>");
        const edo::Reader& r = f.reader();
        if (r.is_model())
          return "<edo.File " + r.path() + ": a model of " + std::to_string(r.tables().size()) + " tables>";
        return "<edo.File " + r.path() + ": " + std::to_string(r.rows()) + " x " + std::to_string(r.dim()) + ">";
      });
  m.attr("Reader") = m.attr("File");  // the name of 0.1
  m.def("open", &open_file, py::arg("path"), py::arg("unknown") = "error", py::arg("verify") = "small",
        py::arg("max_resident") = 0, py::arg("placement") = "mapped", py::arg("device") = "cpu",
        py::arg("host_access") = "copy",
        "Open a .edo file (mapped; header and manifest read) as an edo.File. unknown: what ids beyond the\n"
        "table get ('error', 'default', 'hash'); verify: the checksums checked, 'small' (every section but\n"
        "the tiers' per-row codes at open, a tier's codes at its first lookup), 'all' (every section at\n"
        "open; True too) or 'structure' (none; False too); max_resident: bound the resident bytes (bytes;\n"
        "0: no bound); placement: 'mapped' (the file mapped) or 'memory' (read at open into private memory\n"
        "with huge pages: faster random rows of a big table; docs/PACK.md, \"Serving\"); device: 'cuda'\n"
        "copies the tiers marked 'gpu' to device memory at open (an edo.Error without a GPU), and then\n"
        "lookup and lookup_bags given an out= in device memory (a torch CUDA tensor, a CuPy array: any\n"
        "__cuda_array_interface__) gather, decode and pool there; host_access: how such lookups reach the\n"
        "other tiers: 'copy' (decoded on the host, copied in), 'mapped' (pinned, read over the bus) or\n"
        "'managed' (copied to unified memory at open, prefetched to the GPU).");
  m.def(
      "set_threads", [](int threads) { return edo::limit_threads(threads); }, py::arg("threads"),
      "Threads a lookup may use from now on (the calling one and helpers; 0: OMP_NUM_THREADS when set,\n"
      "else every usable core), capped at the usable cores; returns the count in effect.");
  m.def(
      "cpu_path", [] { return std::string(edo::cpu_path_name(edo::cpu_path())); },
      "The instruction set the pooled lookups' kernels use: 'avx512', 'avx2' or 'portable', the most\n"
      "this CPU runs unless the environment's EDO_CPU_PATH asks for less.");
  m.def(
      "build_info",
      [] {
        py::dict d;
        d["version"] = EDO_VERSION_STRING;
        d["commit"] = EDO_BUILD_COMMIT_STRING;
        d["build_type"] = EDO_BUILD_TYPE_STRING;
        d["cpu_target"] = EDO_BUILD_MARCH_STRING;
        d["cpu_path"] = std::string(edo::cpu_path_name(edo::cpu_path()));
        d["cuda_architectures"] = EDO_BUILD_CUDA_ARCHS_STRING;
        d["faiss"] = EDO_BUILD_FAISS_STRING;
        return d;
      },
      "What the tools' --version says: the version, the commit it was built from ('unknown' outside git,\n"
      "'+' after it when the tree had changes), the build type, the CPU target, the kernels' path in use,\n"
      "the CUDA architectures ('no CUDA') and FAISS's version at build time.");
}
