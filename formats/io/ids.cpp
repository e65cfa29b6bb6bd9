// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/ids.hpp>
#include <edo/io/npy.hpp>
#include "text_lines.hpp"

#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <type_traits>

namespace edo::io {

namespace {

template <class T>
int64_t load_id(const uint8_t* p, uint64_t entry, const std::string& display) {
  T v;
  std::memcpy(&v, p, sizeof v);
  if constexpr (std::is_signed_v<T>) {
    if (v < 0) EDO_FAIL("{}: entry {}: id {} is negative", display, entry, static_cast<int64_t>(v));
  } else if constexpr (sizeof(T) == 8) {
    if (v > static_cast<T>(std::numeric_limits<int64_t>::max()))
      EDO_FAIL("{}: entry {}: id {} is above 2^63 - 1", display, entry, v);
  }
  return static_cast<int64_t>(v);
}

IdList parse_npy_ids(std::string_view bytes, const std::string& display) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const NpyHeader h = parse_npy_header(data, bytes.size(), bytes.size(), display);
  const bool column = h.shape.size() == 1 || (h.shape.size() == 2 && h.shape[1] == 1);
  if (!column) EDO_FAIL("{}: ids .npy must have shape (N,) or (N, 1), got {} dimensions", display, h.shape.size());
  IdList out;
  const uint64_t n = h.shape[0], width = dtype_size(h.dtype);
  out.ids.reserve(n);
  const uint8_t* p = data + h.data_offset;
  for (uint64_t i = 0; i < n; ++i, p += width) {
    switch (h.dtype) {
      case DType::i8:
        out.ids.push_back(load_id<int8_t>(p, i, display));
        break;
      case DType::u8:
        out.ids.push_back(load_id<uint8_t>(p, i, display));
        break;
      case DType::i16:
        out.ids.push_back(load_id<int16_t>(p, i, display));
        break;
      case DType::u16:
        out.ids.push_back(load_id<uint16_t>(p, i, display));
        break;
      case DType::i32:
        out.ids.push_back(load_id<int32_t>(p, i, display));
        break;
      case DType::u32:
        out.ids.push_back(load_id<uint32_t>(p, i, display));
        break;
      case DType::i64:
        out.ids.push_back(load_id<int64_t>(p, i, display));
        break;
      case DType::u64:
        out.ids.push_back(load_id<uint64_t>(p, i, display));
        break;
      default:
        EDO_FAIL("{}: ids .npy holds {}, not integers", display, dtype_name(h.dtype));
    }
  }
  return out;
}

IdList parse_text_ids(std::string_view text, const std::string& display) {
  IdList out;
  for_each_text_line(text, [&](uint64_t line_no, std::string_view line) {
    line = trim_text(line);
    if (line.empty()) return;
    uint64_t id = 0;
    const auto r = std::from_chars(line.data(), line.data() + line.size(), id);
    if (r.ptr != line.data() + line.size() || r.ec == std::errc::invalid_argument) {
      if (line.front() == '-') EDO_FAIL("{}: line {}: id {} is negative", display, line_no, quoted(line));
      EDO_FAIL("{}: line {}: {} is not an id (one integer >= 0 a line)", display, line_no, quoted(line));
    }
    if (r.ec == std::errc::result_out_of_range || id > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      EDO_FAIL("{}: line {}: id {} is above 2^63 - 1", display, line_no, quoted(line));
    out.ids.push_back(static_cast<int64_t>(id));
    out.lines.push_back(line_no);
  });
  return out;
}

std::string read_stdin() {
  std::string bytes;
  char buf[1 << 16];
  for (;;) {
    const ssize_t got = ::read(STDIN_FILENO, buf, sizeof buf);
    if (got == 0) return bytes;
    if (got < 0) {
      if (errno == EINTR) continue;
      EDO_FAIL("<stdin>: read failed: {}", std::strerror(errno));
    }
    bytes.append(buf, static_cast<size_t>(got));
  }
}

}  // namespace

std::string IdList::where(size_t i) const {
  return lines.empty() ? "entry " + std::to_string(i) : "line " + std::to_string(lines.at(i));
}

IdList parse_ids(std::string_view bytes, const std::string& display) {
  if (bytes.size() >= 6 && std::memcmp(bytes.data(), kNpyMagic, 6) == 0) return parse_npy_ids(bytes, display);
  return parse_text_ids(bytes, display);
}

IdList read_ids(const std::string& path) {
  if (path == "-") {
    const std::string bytes = read_stdin();
    return parse_ids(bytes, "<stdin>");
  }
  const MappedFile file(path);
  return parse_ids(std::string_view(reinterpret_cast<const char*>(file.data()), file.size()), path);
}

}  // namespace edo::io
