// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/model.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/safetensors.hpp>
#include <edo/io/table.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>

namespace edo::io {
namespace {

namespace fs = std::filesystem;

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  std::string lower = s;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::any_of(suffixes.begin(), suffixes.end(), [&](const char* x) { return lower.ends_with(x); });
}

bool is_integer(DType t) {
  return t == DType::i8 || t == DType::u8 || t == DType::i16 || t == DType::u16 || t == DType::i32 || t == DType::u32 ||
         t == DType::i64 || t == DType::u64;
}

// Names with numbers in their numeric order: C2 before C10.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (std::isdigit(static_cast<unsigned char>(a[i])) && std::isdigit(static_cast<unsigned char>(b[j]))) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string_view x = std::string_view(a).substr(i, ie - i), y = std::string_view(b).substr(j, je - j);
      const size_t xs = x.find_first_not_of('0'), ys = y.find_first_not_of('0');
      const std::string_view xt = xs == std::string_view::npos ? "" : x.substr(xs);
      const std::string_view yt = ys == std::string_view::npos ? "" : y.substr(ys);
      if (xt.size() != yt.size()) return xt.size() < yt.size();
      if (xt != yt) return xt < yt;
      i = ie, j = je;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i, ++j;
    }
  }
  return a.size() - i < b.size() - j || (a.size() - i == b.size() - j && a < b);
}

// Every tensor of the model as (name, open_table spec).
std::vector<std::pair<std::string, std::string>> model_tensors(const std::string& path, std::string& format) {
  std::vector<std::pair<std::string, std::string>> out;
  if (fs::is_directory(path)) {
    format = "npy directory";
    std::vector<std::string> files;
    for (const fs::directory_entry& e : fs::directory_iterator(path)) {
      if (e.path().extension() != ".npy" || e.is_directory()) continue;  // a folder named x.npy is no table
      check_link_beside(e.path().string(), path, path, hdf5_input_policy().allow_external);
      files.push_back(e.path().filename().string());
    }
    std::sort(files.begin(), files.end(), natural_less);
    for (const std::string& f : files) {
      // "a__b.npy" is table "a/b" (HDF5 names written as files, --freq-dir's rule).
      std::string name = f.substr(0, f.size() - 4);
      for (size_t at = name.find("__"); at != std::string::npos; at = name.find("__", at + 1)) name.replace(at, 2, "/");
      out.emplace_back(name, (fs::path(path) / f).string());
    }
    return out;
  }
  if (ends_with_any(path, {".safetensors", ".safetensors.index.json"})) {
    format = "safetensors";
    for (const std::string& n : safetensors_tensor_names(path)) out.emplace_back(n, path + ":" + n);
  } else if (ends_with_any(path, {".npz"})) {
    format = "npz";
    for (const std::string& n : npz_member_names(path)) out.emplace_back(n, path + ":" + n);
  } else {
    format = "hdf5";
    for (const std::string& n : hdf5_dataset_names(path)) out.emplace_back(n, path + ":" + n);
  }
  return out;
}

std::string table_listing(const std::vector<std::pair<std::string, std::string>>& tensors) {
  std::vector<std::string> names;
  for (size_t i = 0; i < tensors.size() && i < 20; ++i) names.push_back(tensors[i].first);
  std::string s = tensors.empty() ? "it holds no tensors" : fmt::format("its tensors: {}", fmt::join(names, ", "));
  if (tensors.size() > 20) s += fmt::format(", and {} more", tensors.size() - 20);
  return s;
}

}  // namespace

bool glob_match(const std::string& glob, const std::string& name) {
  // Iterative matcher with one backtrack point: linear in practice, no recursion.
  size_t g = 0, n = 0, star = std::string::npos, mark = 0;
  while (n < name.size()) {
    if (g < glob.size() && (glob[g] == '?' || glob[g] == name[n])) {
      ++g, ++n;
    } else if (g < glob.size() && glob[g] == '*') {
      star = g++, mark = n;
    } else if (star != std::string::npos) {
      g = star + 1, n = ++mark;
    } else {
      return false;
    }
  }
  while (g < glob.size() && glob[g] == '*') ++g;
  return g == glob.size();
}

bool table_glob_match(const std::string& glob, const std::string& name) {
  const auto separator = [](char c) { return c == '.' || c == '/'; };
  for (size_t a = 0; a <= name.size(); ++a) {
    if (a > 0 && !separator(name[a - 1])) continue;
    for (size_t b = name.size() + 1; b-- > a;)
      if ((b == name.size() || separator(name[b])) && glob_match(glob, name.substr(a, b - a))) return true;
  }
  return false;
}

bool is_literal_glob(const std::string& glob) { return glob.find_first_of("*?") == std::string::npos; }

std::string default_table_reason(const std::string& name, const std::vector<std::string>& tables) {
  const auto by_name = [](const std::string& n) {
    return n.find("emb") != std::string::npos || n.starts_with("lm_head");
  };
  if (by_name(name)) return name.starts_with("lm_head") ? "its name starts with 'lm_head'" : "its name holds 'emb'";
  if (std::none_of(tables.begin(), tables.end(), by_name)) return "no table's name holds 'emb': every 2-D one taken";
  return "";
}

bool is_model_spec(const std::string& spec) {
  if (spec.empty() || spec == "-") return false;
  std::error_code ec;
  if (fs::is_directory(spec, ec)) return true;
  if (!fs::is_regular_file(spec, ec)) return false;  // "FILE:member" or missing: not a whole model
  return ends_with_any(spec, {".safetensors", ".safetensors.index.json", ".npz", ".h5", ".hdf5", ".he5"});
}

ModelSelection select_model_tables(const std::string& spec, const std::vector<std::string>& globs) {
  ModelSelection sel;
  sel.path = spec;
  const auto tensors = model_tensors(spec, sel.format);
  std::set<std::string> seen;
  for (const auto& [name, tensor_spec] : tensors)
    if (!seen.insert(name).second) EDO_FAIL("{}: two tensors are named '{}'", spec, name);
  for (const std::string& glob : globs) {
    const bool any =
        std::any_of(tensors.begin(), tensors.end(), [&](const auto& t) { return table_glob_match(glob, t.first); });
    if (!any) EDO_USAGE_FAIL("{}: --tables '{}' matches no tensor ({})", spec, glob, table_listing(tensors));
  }
  // Opening a tensor as a table reads its header only: shape and dtype.
  struct Candidate {
    ModelTable table;
    std::string why_not;  // empty: a 2-D floating table
  };
  std::vector<Candidate> candidates;
  for (const auto& [name, tensor_spec] : tensors) {
    Candidate c{{name, tensor_spec, 0, 0}, {}};
    try {
      const auto t = open_table(tensor_spec);
      c.table.rows = t->rows();
      c.table.dim = t->dim();
      if (is_integer(t->dtype())) c.why_not = "an integer tensor";
    } catch (const NotATableError& e) {
      // A well-formed tensor of another shape, dtype or layout is no table,
      // and is passed over; any other error (a damaged, missing or
      // unreadable tensor) is the input's, said as a one-table run says it.
      c.why_not = not_a_table_reason_text(e.reason());
    }
    candidates.push_back(std::move(c));
  }
  auto named = [&](const std::string& name) {
    return std::any_of(globs.begin(), globs.end(), [&](const std::string& g) { return table_glob_match(g, name); });
  };
  auto named_exactly = [&](const std::string& name) {
    return std::any_of(globs.begin(), globs.end(),
                       [&](const std::string& g) { return is_literal_glob(g) && g == name; });
  };
  std::vector<std::string> two_d;
  for (const Candidate& c : candidates)
    if (c.why_not.empty()) two_d.push_back(c.table.name);
  for (Candidate& c : candidates) {
    if (!globs.empty()) {
      if (!named(c.table.name)) {
        sel.skipped.emplace_back(c.table.name, "not named by --tables");
        sel.passed_over_tables = sel.passed_over_tables || c.why_not.empty();
      } else if (!c.why_not.empty()) {
        if (named_exactly(c.table.name))
          EDO_USAGE_FAIL("{}: tensor '{}' is {}, not a table edo compresses", spec, c.table.name, c.why_not);
        sel.skipped.emplace_back(c.table.name, c.why_not);
      } else {
        sel.tables.push_back(std::move(c.table));
      }
    } else if (!c.why_not.empty()) {
      sel.skipped.emplace_back(c.table.name, c.why_not);
    } else if (default_table_reason(c.table.name, two_d).empty()) {
      sel.skipped.emplace_back(c.table.name, "not a default table (no 'emb' in its name, no 'lm_head' at its start)");
      sel.passed_over_tables = true;
    } else {
      sel.tables.push_back(std::move(c.table));
    }
  }
  if (sel.tables.empty())
    EDO_USAGE_FAIL("{}: no 2-D floating tensor to take as a table ({})", spec, table_listing(tensors));
  return sel;
}

std::optional<std::pair<std::string, std::string>> split_named_argument(const std::string& arg,
                                                                        const std::vector<std::string>& names) {
  // The longest table name that prefixes the argument before a '=' wins:
  // "a=b=c.npy" with tables "a" and "a=b" is table "a=b".
  std::optional<std::pair<std::string, std::string>> best;
  for (const std::string& name : names)
    if (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 && arg[name.size()] == '=' &&
        (!best || name.size() > best->first.size()))
      best = std::pair{name, arg.substr(name.size() + 1)};
  return best;
}

}  // namespace edo::io
