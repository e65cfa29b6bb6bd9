// SPDX-License-Identifier: Apache-2.0
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/float8.hpp>
#include <edo/io/files.hpp>
#include <edo/io/npy.hpp>
#include <edo/io/readers.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string_view>

namespace edo::io {
namespace {

struct DescrEntry {
  const char* descr;
  DType dtype;
};
// Little-endian (or byte-order-free) descriptors edo reads.
constexpr DescrEntry kDescrs[] = {
    {"<f2", DType::f16}, {"<f4", DType::f32}, {"<f8", DType::f64}, {"|i1", DType::i8},  {"<i1", DType::i8},
    {"|u1", DType::u8},  {"<u1", DType::u8},  {"<i2", DType::i16}, {"<u2", DType::u16}, {"<i4", DType::i32},
    {"<u4", DType::u32}, {"<i8", DType::i64}, {"<u8", DType::u64},
};

const char* descr_of(DType t) {
  switch (t) {
    case DType::f16:
      return "<f2";
    case DType::f32:
      return "<f4";
    case DType::f64:
      return "<f8";
    case DType::i8:
      return "|i1";
    case DType::u8:
      return "|u1";
    case DType::i16:
      return "<i2";
    case DType::u16:
      return "<u2";
    case DType::i32:
      return "<i4";
    case DType::u32:
      return "<u4";
    case DType::i64:
      return "<i8";
    case DType::u64:
      return "<u8";
    case DType::bf16:
    case DType::f8_e4m3:
    case DType::f8_e5m2:
      break;  // no numpy descriptor: never written (the writers take the others)
  }
  EDO_FAIL(".npy has no {} type", dtype_name(t));
}

// A tiny cursor over the header's Python dict literal. Only the subset numpy
// writes is accepted: string keys, string / bool / tuple-of-int values.
class DictParser {
 public:
  DictParser(std::string_view text, const std::string& path) : s_(text), path_(path) {}

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool peek(char c) {
    skip_ws();
    return i_ < s_.size() && s_[i_] == c;
  }
  void expect(char c) {
    if (!peek(c)) EDO_FAIL("{}: malformed .npy header: expected '{}' at byte {}", path_, c, i_);
    ++i_;
  }
  std::string string_literal() {
    skip_ws();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"'))
      EDO_FAIL("{}: malformed .npy header: expected a string at byte {}", path_, i_);
    const char q = s_[i_++];
    const auto end = s_.find(q, i_);
    if (end == std::string_view::npos) EDO_FAIL("{}: malformed .npy header: unterminated string", path_);
    std::string out(s_.substr(i_, end - i_));
    i_ = end + 1;
    return out;
  }
  bool bool_literal() {
    skip_ws();
    if (s_.substr(i_, 4) == "True") {
      i_ += 4;
      return true;
    }
    if (s_.substr(i_, 5) == "False") {
      i_ += 5;
      return false;
    }
    EDO_FAIL("{}: malformed .npy header: expected True or False at byte {}", path_, i_);
  }
  uint64_t integer() {
    skip_ws();
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9')
      EDO_FAIL("{}: malformed .npy header: expected a non-negative integer at byte {}", path_, i_);
    uint64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      auto m = checked_mul(v, 10);
      if (!m) EDO_FAIL("{}: .npy header: shape value overflows 64 bits", path_);
      auto a = checked_add(*m, static_cast<uint64_t>(s_[i_] - '0'));
      if (!a) EDO_FAIL("{}: .npy header: shape value overflows 64 bits", path_);
      v = *a;
      ++i_;
    }
    if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
    return v;
  }
  std::vector<uint64_t> int_tuple() {
    expect('(');
    std::vector<uint64_t> out;
    while (!peek(')')) {
      if (out.size() >= 32) EDO_FAIL("{}: .npy header: too many dimensions", path_);
      out.push_back(integer());
      if (peek(',')) {
        ++i_;
      } else if (!peek(')')) {
        EDO_FAIL("{}: malformed .npy header: expected ',' or ')' in shape", path_);
      }
    }
    ++i_;
    return out;
  }
  bool at_end() {
    skip_ws();
    return i_ >= s_.size();
  }

 private:
  std::string_view s_;
  const std::string& path_;
  size_t i_ = 0;
};

uint16_t load_u16le(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t load_u32le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

template <class T>
void widen(const uint8_t* src, uint64_t n, float* out) {
  for (uint64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, src + i * sizeof(T), sizeof(T));
    out[i] = static_cast<float>(v);
  }
}

}  // namespace

void widen_to_f32(DType t, const uint8_t* src, uint64_t n, float* out) {
  switch (t) {
    case DType::f16:
      for (uint64_t i = 0; i < n; ++i) out[i] = half_bits_to_float(load_u16le(src + 2 * i));
      return;
    case DType::f32:
      std::memcpy(out, src, n * 4);
      return;
    case DType::f64:
      widen<double>(src, n, out);
      return;
    case DType::i8:
      widen<int8_t>(src, n, out);
      return;
    case DType::u8:
      widen<uint8_t>(src, n, out);
      return;
    case DType::i16:
      widen<int16_t>(src, n, out);
      return;
    case DType::u16:
      widen<uint16_t>(src, n, out);
      return;
    case DType::i32:
      widen<int32_t>(src, n, out);
      return;
    case DType::u32:
      widen<uint32_t>(src, n, out);
      return;
    case DType::i64:
      widen<int64_t>(src, n, out);
      return;
    case DType::u64:
      widen<uint64_t>(src, n, out);
      return;
    case DType::bf16:
      for (uint64_t i = 0; i < n; ++i) out[i] = bf16_bits_to_float(load_u16le(src + 2 * i));
      return;
    case DType::f8_e4m3:
      for (uint64_t i = 0; i < n; ++i) out[i] = math::fp8_to_float(src[i], math::Fp8Format::e4m3);
      return;
    case DType::f8_e5m2:
      for (uint64_t i = 0; i < n; ++i) out[i] = math::fp8_to_float(src[i], math::Fp8Format::e5m2);
      return;
  }
}

NpyHeader parse_npy_header(const uint8_t* bytes, uint64_t size, uint64_t file_size, const std::string& path) {
  if (size < 10) EDO_FAIL("{}: not a .npy file: too short for the header ({} bytes)", path, file_size);
  if (std::memcmp(bytes, kNpyMagic, 6) != 0) EDO_FAIL("{}: not a .npy file: wrong magic", path);
  NpyHeader h;
  h.major_version = bytes[6];
  uint64_t header_len = 0;
  uint64_t prefix = 0;
  if (h.major_version == 1) {
    header_len = load_u16le(bytes + 8);
    prefix = 10;
  } else if (h.major_version == 2 || h.major_version == 3) {
    if (size < 12) EDO_FAIL("{}: .npy header is truncated", path);
    header_len = load_u32le(bytes + 8);
    prefix = 12;
  } else {
    EDO_FAIL("{}: unsupported .npy format version {}.{}", path, bytes[6], bytes[7]);
  }
  if (header_len > kMaxNpyHeaderBytes)
    EDO_FAIL("{}: .npy header length is too large (more than {} bytes)", path, kMaxNpyHeaderBytes);
  h.data_offset = prefix + header_len;
  if (h.data_offset > size || h.data_offset > file_size) EDO_FAIL("{}: .npy header is truncated", path);

  std::string_view text(reinterpret_cast<const char*>(bytes + prefix), header_len);
  DictParser p(text, path);
  bool have_descr = false, have_order = false, have_shape = false;
  std::string descr;
  bool fortran = false;
  p.expect('{');
  while (!p.peek('}')) {
    const std::string key = p.string_literal();
    p.expect(':');
    if (key == "descr") {
      if (p.peek('[')) EDO_NOT_A_TABLE(NotATableReason::dtype, "{}: structured .npy dtypes are not supported", path);
      descr = p.string_literal();
      have_descr = true;
    } else if (key == "fortran_order") {
      fortran = p.bool_literal();
      have_order = true;
    } else if (key == "shape") {
      h.shape = p.int_tuple();
      have_shape = true;
    } else {
      EDO_FAIL("{}: malformed .npy header: unexpected key '{}'", path, key);
    }
    if (p.peek(','))
      p.expect(',');
    else if (!p.peek('}'))
      EDO_FAIL("{}: malformed .npy header: expected ',' or '}}'", path);
  }
  p.expect('}');
  if (!have_descr || !have_order || !have_shape)
    EDO_FAIL("{}: malformed .npy header: needs descr, fortran_order and shape", path);
  if (fortran)
    EDO_NOT_A_TABLE(NotATableReason::layout,
                    "{}: Fortran-order .npy arrays are not supported; save with np.ascontiguousarray", path);
  bool found = false;
  for (const auto& d : kDescrs) {
    if (descr == d.descr) {
      h.dtype = d.dtype;
      found = true;
    }
  }
  if (!found) {
    if (!descr.empty() && descr[0] == '>')
      EDO_NOT_A_TABLE(
          NotATableReason::dtype,
          "{}: big-endian .npy data ('{}') is not supported; convert with arr.astype(arr.dtype.newbyteorder('<'))",
          path, descr);
    EDO_NOT_A_TABLE(NotATableReason::dtype,
                    "{}: unsupported .npy dtype '{}' (supported: f2 f4 f8 i1 u1 i2 u2 i4 u4 i8 u8)", path, descr);
  }
  uint64_t count = 1;
  for (auto d : h.shape) {
    auto m = checked_mul(count, d);
    if (!m) EDO_FAIL("{}: .npy shape's element count overflows", path);
    count = *m;
  }
  h.element_count = count;
  const auto payload = checked_mul(count, dtype_size(h.dtype));
  if (!payload) EDO_FAIL("{}: .npy shape's byte count overflows", path);
  const auto expected = checked_add(*payload, h.data_offset);
  if (!expected) EDO_FAIL("{}: .npy shape's byte count overflows", path);
  if (*expected != file_size)
    EDO_FAIL("{}: file size {} does not match the header (shape needs {} bytes); truncated or corrupt", path, file_size,
             *expected);
  return h;
}

void require_npy_table(const NpyHeader& h, const std::string& path) {
  if (h.shape.size() != 2)
    EDO_NOT_A_TABLE(NotATableReason::shape, "{}: expected a 2-D array (rows, dim), got {} dimensions", path,
                    h.shape.size());
  if (h.shape[0] == 0 || h.shape[1] == 0) EDO_FAIL("{}: empty table ({} x {})", path, h.shape[0], h.shape[1]);
}

std::string make_npy_header(DType dtype, const std::vector<uint64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    s += std::to_string(shape[i]);
    if (shape.size() == 1 || i + 1 < shape.size()) s += ",";
    if (i + 1 < shape.size()) s += " ";
  }
  s += ")";
  std::string dict = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", descr_of(dtype), s);
  // Pad with spaces so magic + length + dict + '\n' is a multiple of 64 bytes.
  const size_t unpadded = 10 + dict.size() + 1;
  const size_t total = (unpadded + 63) / 64 * 64;
  dict.append(total - unpadded, ' ');
  dict.push_back('\n');
  const bool v2 = dict.size() > 65535;
  std::string out(kNpyMagic, 6);
  out.push_back(static_cast<char>(v2 ? 2 : 1));
  out.push_back(0);
  const uint32_t len = static_cast<uint32_t>(dict.size());
  out.push_back(static_cast<char>(len & 0xff));
  out.push_back(static_cast<char>((len >> 8) & 0xff));
  if (v2) {
    out.push_back(static_cast<char>((len >> 16) & 0xff));
    out.push_back(static_cast<char>((len >> 24) & 0xff));
  }
  return out + dict;
}

namespace {

// Rows stored contiguously, row-major, little-endian, at a fixed offset of a
// mapped file: .npy and safetensors tensors.
class MappedRowsReader final : public TableReader {
 public:
  // A .npy file, its header parsed here.
  MappedRowsReader(const std::string& path, const std::string& display) : TableReader(display, "npy"), file_(path) {
    const NpyHeader h = parse_npy_header(file_.data(), file_.size(), file_.size(), display);
    require_npy_table(h, display);
    set_layout(h.shape[0], h.shape[1], h.dtype, h.data_offset);
  }
  // Any file whose rows the caller has located (and checked to lie inside it).
  MappedRowsReader(MappedFile&& file, const std::string& display, const std::string& format, const RowsLayout& at)
      : TableReader(display, format), file_(std::move(file)) {
    set_layout(at.rows, at.dim, at.dtype, at.offset);
  }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    const uint64_t row_bytes = dim_ * dtype_size(dtype_);
    // Drop the previous block's pages from this process: streaming stays bounded.
    if (last_length_ > 0) file_.release(last_offset_, last_length_);
    last_offset_ = data_offset_ + begin * row_bytes;
    last_length_ = count * row_bytes;
    if (last_length_ <= kSmallRead) {
      // A few scattered rows (a sample): pread them instead of faulting a
      // cluster of mapped pages for each.
      const uint64_t offset = last_offset_;
      last_length_ = 0;
      buffer_.resize(count * dim_);
      if (dtype_ == DType::f32) {
        file_.read_at(offset, buffer_.data(), count * row_bytes);
      } else {
        small_.resize(count * row_bytes);
        file_.read_at(offset, small_.data(), small_.size());
        widen_to_f32(dtype_, small_.data(), count * dim_, buffer_.data());
      }
      return buffer_.data();
    }
    const uint8_t* src = file_.data() + last_offset_;
    if (zero_copy_) return reinterpret_cast<const float*>(src);
    buffer_.resize(count * dim_);
    widen_to_f32(dtype_, src, count * dim_, buffer_.data());
    return buffer_.data();
  }

  bool concurrent_reads() const override { return true; }

  void read_f32_concurrent(uint64_t begin, uint64_t count, float* out) const override {
    check_range(begin, count);
    const uint64_t row_bytes = dim_ * dtype_size(dtype_);
    const uint64_t offset = data_offset_ + begin * row_bytes;
    if (dtype_ == DType::f32) {
      file_.read_at(offset, out, count * row_bytes);
      return;
    }
    thread_local std::vector<uint8_t> raw;
    raw.resize(count * row_bytes);
    file_.read_at(offset, raw.data(), raw.size());
    widen_to_f32(dtype_, raw.data(), count * dim_, out);
  }

 private:
  MappedFile file_;
  uint64_t data_offset_ = 0;
  bool zero_copy_ = false;
  uint64_t last_offset_ = 0;
  uint64_t last_length_ = 0;
  std::vector<float> buffer_;
  std::vector<uint8_t> small_;
  static constexpr uint64_t kSmallRead = 16 << 10;

  void set_layout(uint64_t rows, uint64_t dim, DType dtype, uint64_t offset) {
    rows_ = rows;
    dim_ = dim;
    dtype_ = dtype;
    data_offset_ = offset;
    zero_copy_ = dtype_ == DType::f32 && data_offset_ % alignof(float) == 0;
  }
};

}  // namespace

namespace {

template <class T>
void narrow(const float* src, uint64_t n, uint8_t* out) {
  for (uint64_t i = 0; i < n; ++i) {
    const T v = static_cast<T>(src[i]);
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  }
}

}  // namespace

void narrow_from_f32(DType t, const float* src, uint64_t n, uint8_t* out) {
  switch (t) {
    case DType::f16:
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t h = float_to_half_bits(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::f32:
      std::memcpy(out, src, n * 4);
      return;
    case DType::f64:
      narrow<double>(src, n, out);
      return;
    case DType::i8:
      narrow<int8_t>(src, n, out);
      return;
    case DType::u8:
      narrow<uint8_t>(src, n, out);
      return;
    case DType::i16:
      narrow<int16_t>(src, n, out);
      return;
    case DType::u16:
      narrow<uint16_t>(src, n, out);
      return;
    case DType::i32:
      narrow<int32_t>(src, n, out);
      return;
    case DType::u32:
      narrow<uint32_t>(src, n, out);
      return;
    case DType::i64:
      narrow<int64_t>(src, n, out);
      return;
    case DType::u64:
      narrow<uint64_t>(src, n, out);
      return;
    case DType::bf16:
      for (uint64_t i = 0; i < n; ++i) {
        const uint16_t h = float_to_bf16_bits(src[i]);
        std::memcpy(out + 2 * i, &h, 2);
      }
      return;
    case DType::f8_e4m3:
    case DType::f8_e5m2:
      break;
  }
  EDO_FAIL("tables are not written as {}", dtype_name(t));
}

namespace {

// Writes to a temporary file and renames on commit, or straight to stdout.
class NpyWriter final : public TableWriter {
 public:
  NpyWriter(const std::string& path, uint64_t rows, uint64_t dim, DType dtype)
      : TableWriter(rows, dim), path_(path), dtype_(dtype) {
    if (path != "-") file_.emplace(path);
    const std::string header = make_npy_header(dtype, {rows, dim});
    put(header.data(), header.size());
  }

  void write_f32(const float* rows, uint64_t count) override {
    if (written_ + count > rows_) EDO_FAIL("{}: more rows written than the declared {}", path_, rows_);
    const uint64_t n = count * dim_;
    if (dtype_ == DType::f32) {
      put(rows, n * 4);
    } else {
      scratch_.resize(n * dtype_size(dtype_));
      narrow_from_f32(dtype_, rows, n, scratch_.data());
      put(scratch_.data(), scratch_.size());
    }
    written_ += count;
  }

  void write_raw(const void* rows, uint64_t count) override {
    if (written_ + count > rows_) EDO_FAIL("{}: more rows written than the declared {}", path_, rows_);
    put(rows, count * dim_ * dtype_size(dtype_));
    written_ += count;
  }

  void commit() override {
    if (written_ != rows_) EDO_FAIL("{}: {} rows written, {} declared", path_, written_, rows_);
    if (file_) {
      file_->commit();
    } else if (std::fflush(stdout) != 0) {
      EDO_FAIL("<stdout>: write failed: {}", std::strerror(errno));
    }
  }

 private:
  void put(const void* data, size_t size) {
    if (file_) {
      file_->write(data, size);
      return;
    }
    if (std::fwrite(data, 1, size, stdout) != size) EDO_FAIL("<stdout>: write failed: {}", std::strerror(errno));
  }

  std::string path_;
  DType dtype_;
  std::optional<AtomicFile> file_;
  uint64_t written_ = 0;
  std::vector<uint8_t> scratch_;
};

}  // namespace

std::unique_ptr<TableReader> open_npy(const std::string& path, const std::string& display) {
  return std::make_unique<MappedRowsReader>(path, display);
}

std::unique_ptr<TableReader> open_mapped_rows(MappedFile&& file, const std::string& display, const std::string& format,
                                              const RowsLayout& at) {
  return std::make_unique<MappedRowsReader>(std::move(file), display, format, at);
}

std::unique_ptr<TableWriter> create_npy(const std::string& path, uint64_t rows, uint64_t dim, DType dtype) {
  return std::make_unique<NpyWriter>(path, rows, dim, dtype);
}

}  // namespace edo::io
