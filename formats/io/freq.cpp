// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/io/files.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/npy.hpp>
#include <edo/io/readers.hpp>
#include "text_lines.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace edo::io {
namespace {

bool ends_with_npy(const std::string& path) {
  if (path.size() < 4) return false;
  std::string ext = path.substr(path.size() - 4);
  for (auto& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".npy";
}

// Why a count is unusable, or nullptr when it is fine.
const char* count_problem(double v) {
  if (std::isnan(v)) return "is NaN";
  if (std::isinf(v)) return "is infinite";
  if (v < 0) return "is negative";
  return nullptr;
}

template <class T>
double element_as_double(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return static_cast<double>(v);
}

double load_as_double(DType t, const uint8_t* p) {
  switch (t) {
    case DType::bf16:
    case DType::f8_e4m3:
    case DType::f8_e5m2: {  // not in .npy files; kept for completeness
      float f;
      widen_to_f32(t, p, 1, &f);
      return static_cast<double>(f);
    }
    case DType::f16: {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return static_cast<double>(half_bits_to_float(h));
    }
    case DType::f32:
      return element_as_double<float>(p);
    case DType::f64:
      return element_as_double<double>(p);
    case DType::i8:
      return element_as_double<int8_t>(p);
    case DType::u8:
      return element_as_double<uint8_t>(p);
    case DType::i16:
      return element_as_double<int16_t>(p);
    case DType::u16:
      return element_as_double<uint16_t>(p);
    case DType::i32:
      return element_as_double<int32_t>(p);
    case DType::u32:
      return element_as_double<uint32_t>(p);
    case DType::i64:
      return element_as_double<int64_t>(p);
    case DType::u64:
      return element_as_double<uint64_t>(p);
  }
  return 0;
}

// What a one-column .npy holds and how its errors word it.
struct ColumnNames {
  const char* kind;    // "frequency": "frequency .npy must have shape ..."
  const char* letter;  // "R": "(R,) or (R, 1)"
  const char* per;     // "counts for a table of": "5 counts for a table of 6 rows"
  const char* whole;   // "rows"
};

// The `count` values of a .npy of shape (N,) or (N, 1), any numeric dtype, as doubles.
std::vector<double> npy_column(const MappedFile& file, uint64_t count, const std::string& path, const ColumnNames& n) {
  const NpyHeader h = parse_npy_header(file.data(), file.size(), file.size(), path);
  const bool column = h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[1] == 1);
  if (!column)
    EDO_FAIL("{}: {} .npy must have shape ({},) or ({}, 1), got {} dimensions", path, n.kind, n.letter, n.letter,
             h.shape.size());
  if (h.shape[0] != count) EDO_FAIL("{}: {} {} {} {}", path, h.shape[0], n.per, count, n.whole);
  std::vector<double> values(count);
  const size_t width = dtype_size(h.dtype);
  for (uint64_t i = 0; i < count; ++i) values[i] = load_as_double(h.dtype, file.data() + h.data_offset + i * width);
  return values;
}

std::vector<double> read_npy_counts(const MappedFile& file, uint64_t rows, const std::string& path) {
  std::vector<double> counts = npy_column(file, rows, path, {"frequency", "R", "counts for a table of", "rows"});
  for (uint64_t i = 0; i < rows; ++i)
    if (const char* why = count_problem(counts[i])) EDO_FAIL("{}: entry {}: count {}", path, i, why);
  return counts;
}

}  // namespace

std::vector<double> parse_frequency_text(std::string_view text, uint64_t rows, const std::string& display) {
  std::vector<double> counts(rows, 0.0);
  std::vector<bool> seen(rows, false);
  uint64_t entries = 0;
  for_each_text_line(text, [&](uint64_t line_no, std::string_view line) {
    std::string_view tokens[3];
    size_t n = 0;
    for (size_t i = 0;; ++n) {
      const std::string_view t = next_text_field(line, i);
      if (t.empty()) break;
      if (n < 3) tokens[n] = t;
    }
    if (n == 0) return;
    if (n != 2) EDO_FAIL("{}: line {}: expected 'id count', got {} fields", display, line_no, n);

    uint64_t id = 0;
    const std::string_view id_text = tokens[0];
    const auto id_result = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
    if (id_result.ec == std::errc::invalid_argument || id_result.ptr != id_text.data() + id_text.size())
      EDO_FAIL("{}: line {}: id {} is not a non-negative integer", display, line_no, quoted(id_text));
    if (id_result.ec == std::errc::result_out_of_range || id >= rows)
      EDO_FAIL("{}: line {}: id {} is out of range (the table has {} rows)", display, line_no, quoted(id_text), rows);

    std::string_view count_text = tokens[1];
    // from_chars takes no '+'; counts written as "+3" are still plain numbers.
    if (count_text.size() > 1 && count_text[0] == '+' && count_text[1] != '-') count_text.remove_prefix(1);
    double count = 0;
    const auto count_result = std::from_chars(count_text.data(), count_text.data() + count_text.size(), count);
    if (count_result.ec == std::errc::result_out_of_range)
      EDO_FAIL("{}: line {}: count {} is out of range", display, line_no, quoted(tokens[1]));
    if (count_result.ec != std::errc() || count_result.ptr != count_text.data() + count_text.size())
      EDO_FAIL("{}: line {}: count {} is not a number", display, line_no, quoted(tokens[1]));
    if (const char* why = count_problem(count)) EDO_FAIL("{}: line {}: count {}", display, line_no, why);

    if (seen[id]) EDO_FAIL("{}: line {}: id {} appears a second time", display, line_no, id);
    seen[id] = true;
    counts[id] = count;
    ++entries;
  });
  if (entries == 0) EDO_FAIL("{}: no 'id count' lines; the frequency file is empty", display);
  return counts;
}

std::vector<double> read_frequencies(const std::string& path, uint64_t rows) {
  if (rows == 0) EDO_FAIL("{}: frequencies for a table of 0 rows", path);
  const MappedFile file(path);
  const bool npy_magic = file.size() >= 6 && std::memcmp(file.data(), kNpyMagic, 6) == 0;
  if (npy_magic || ends_with_npy(path)) return read_npy_counts(file, rows, path);
  const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  return parse_frequency_text(text, rows, path);
}

std::vector<float> read_weights(const std::string& path, uint64_t count) {
  const MappedFile file(path);
  const std::vector<double> values = npy_column(file, count, path, {"weights", "N", "weights for", "ids"});
  std::vector<float> weights(count);
  for (uint64_t i = 0; i < count; ++i) {
    if (!std::isfinite(values[i]) || std::fabs(values[i]) > std::numeric_limits<float>::max())
      EDO_FAIL("{}: entry {}: weight {} is not a finite float32", path, i, values[i]);
    weights[i] = static_cast<float>(values[i]);
  }
  return weights;
}

}  // namespace edo::io
