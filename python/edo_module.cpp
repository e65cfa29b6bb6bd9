// The `edo` Python module: the reader library (edo::reader) for Python.
//
//   import edo
//   r = edo.open("table.edo")
//   rows = r.lookup(ids)        # numpy float32 (len(ids), r.dim); the GIL is released meanwhile
//   table = r.decode_all()      # numpy float32 (r.rows, r.dim)
//   r.manifest, r.tiers         # the manifest as a dict; per tier: name, kind, codec, residency, rows, bytes
//
// Errors are edo.Error (a RuntimeError) with edo's one-line message.
#include <edo/error.hpp>
#include <edo/reader.hpp>
#include <edo/threads.hpp>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

namespace py = pybind11;

namespace {

edo::UnknownIdPolicy policy_of(const std::string& unknown) {
  if (unknown == "error") return edo::UnknownIdPolicy::error;
  if (unknown == "default") return edo::UnknownIdPolicy::default_vector;
  if (unknown == "hash") return edo::UnknownIdPolicy::hash;
  throw edo::Error("unknown='" + unknown + "': expected 'error', 'default' or 'hash'", __FILE__, __LINE__,
                   edo::ExitCode::usage);
}

const char* kind_name(edo::TierKind kind) {
  switch (kind) {
    case edo::TierKind::codec:
      return "codec";
    case edo::TierKind::shared_vector:
      return "default";
    case edo::TierKind::sparse:
      return "sparse";
    case edo::TierKind::zero:
      return "zero";
    case edo::TierKind::centroids:
      return "centroids";
    case edo::TierKind::nearest:
      return "nearest";
    case edo::TierKind::hashed:
      return "hashed";
    case edo::TierKind::grouped:
      return "grouped";
  }
  return "codec";
}

std::unique_ptr<edo::Reader> open_reader(const std::string& path, const std::string& unknown, bool verify,
                                         uint64_t max_resident) {
  // A C path ends at the first NUL: "a.edo\0x" would open a.edo.
  if (path.find('\0') != std::string::npos)
    throw edo::Error("open: the path holds a NUL character", __FILE__, __LINE__, edo::ExitCode::usage);
  edo::ReaderOptions opt;
  opt.unknown_ids = policy_of(unknown);
  opt.verify = verify ? edo::io::Verify::all : edo::io::Verify::structure;
  opt.max_resident = max_resident;
  return std::make_unique<edo::Reader>(edo::Reader::open(path, opt));
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

py::array_t<float> lookup(const edo::Reader& r, const py::object& given) {
  const auto ids = integer_ids(given);
  if (ids.ndim() != 1)
    throw edo::Error("lookup: ids must be one-dimensional", __FILE__, __LINE__, edo::ExitCode::usage);
  const auto n = static_cast<size_t>(ids.shape(0));
  py::array_t<float> out({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(r.dim())});
  const int64_t* id = ids.data();
  // No policy serves a negative id (edo-lookup refuses them too): it is a
  // wrapped index or a bug in the caller, not an unknown row.
  for (size_t i = 0; i < n; ++i)
    if (id[i] < 0)
      throw edo::Error("lookup: id " + std::to_string(id[i]) + " at position " + std::to_string(i) + " is negative",
                       __FILE__, __LINE__, edo::ExitCode::usage);
  float* rows = out.mutable_data();
  {
    py::gil_scoped_release free;  // lookups decode in parallel and never touch Python objects
    r.lookup(id, n, rows);
  }
  return out;
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
    d["kind"] = kind_name(t.kind);
    d["codec"] = t.codec;
    d["residency"] = edo::residency_name(t.residency);
    d["rows"] = t.rows;
    d["code_size"] = t.code_size;
    d["bytes"] = t.bytes;
    out.append(d);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(edo, m) {
  m.doc() = "Read .edo files (edo's compressed embedding tables): lookups by id into numpy arrays.";
  // OMP_NUM_THREADS is checked as the tools check it (1 to 1024, capped at
  // the cores) before any lookup can start a team of its size.
  edo::limit_threads(0);
  static py::exception<edo::Error> error(m, "Error", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const edo::Error& e) {
      error(e.what());
    }
  });
  py::class_<edo::Reader, std::unique_ptr<edo::Reader>>(m, "Reader")
      .def_property_readonly("path", &edo::Reader::path)
      .def_property_readonly("rows", &edo::Reader::rows)
      .def_property_readonly("dim", &edo::Reader::dim)
      .def_property_readonly("file_bytes", &edo::Reader::file_bytes)
      .def_property_readonly("tiers", &tiers, "Per tier: name, kind, codec, residency, rows, code_size, bytes")
      .def_property_readonly(
          "manifest",
          [](const edo::Reader& r) {
            return py::module_::import("json").attr("loads")(r.container().manifest().dump());
          },
          "The file's manifest (docs/FORMAT.md) as a dict")
      .def("lookup", &lookup, py::arg("ids"),
           "Rows of `ids` (integers, any shape (n,)) as a float32 array (n, dim), in the ids' order")
      .def("decode_all", &decode_all, "Every row as a float32 array (rows, dim)")
      .def("__len__", &edo::Reader::rows)
      .def("__repr__", [](const edo::Reader& r) {
        return "<edo.Reader " + r.path() + ": " + std::to_string(r.rows()) + " x " + std::to_string(r.dim()) + ">";
      });
  m.def("open", &open_reader, py::arg("path"), py::arg("unknown") = "error", py::arg("verify") = false,
        py::arg("max_resident") = 0,
        "Open a .edo file (mapped; header and manifest read). unknown: what ids beyond the table get ('error',\n"
        "'default', 'hash'); verify: check every section checksum; max_resident: bound resident bytes (bytes).");
}
