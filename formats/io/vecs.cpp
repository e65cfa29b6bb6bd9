// SPDX-License-Identifier: Apache-2.0
// TEXMEX .fvecs / .bvecs / .ivecs tables, read from a mapping.
//
// Every record repeats its dimension. The first one fixes the table's width;
// the others are checked as their rows are read (one pass over a block that is
// about to be copied anyway), so opening a big file stays O(1).
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/vecs.hpp>

#include <cstring>

namespace edo::io {
namespace {

int32_t load_i32le(const uint8_t* p) {
  const uint32_t u = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                     (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
  int32_t v;
  std::memcpy(&v, &u, sizeof v);
  return v;
}

const char* vecs_name(DType element) {
  switch (element) {
    case DType::f32:
      return "fvecs";
    case DType::u8:
      return "bvecs";
    case DType::i32:
      return "ivecs";
    default:
      return "vecs";
  }
}

// Shape of a vecs file: validates the first record's dimension and the size.
struct VecsLayout {
  uint64_t rows = 0;
  uint64_t dim = 0;
  uint64_t record_bytes = 0;
};

VecsLayout vecs_layout(const MappedFile& file, DType element, const std::string& display) {
  const char* kind = vecs_name(element);
  if (file.size() < 4) EDO_FAIL("{}: not a .{} file: {} bytes, too short for a record", display, kind, file.size());
  const int32_t d = load_i32le(file.data());
  if (d <= 0 || static_cast<uint64_t>(d) >= kMaxVecsDim)
    EDO_FAIL("{}: not a .{} file: first record's dimension {} is not in [1, {})", display, kind, d, kMaxVecsDim);
  VecsLayout l;
  l.dim = static_cast<uint64_t>(d);
  l.record_bytes = 4 + l.dim * dtype_size(element);
  if (file.size() % l.record_bytes != 0)
    EDO_FAIL("{}: file size {} is not a multiple of the record size {} (dimension {}); truncated or corrupt", display,
             file.size(), l.record_bytes, l.dim);
  l.rows = file.size() / l.record_bytes;
  return l;
}

void check_record_dim(const uint8_t* record, uint64_t row, uint64_t dim, const std::string& display) {
  const int32_t d = load_i32le(record);
  if (d < 0 || static_cast<uint64_t>(d) != dim)
    EDO_FAIL("{}: record {} has dimension {}, the first has {}; records must all have the same dimension", display, row,
             d, dim);
}

class VecsReader final : public TableReader {
 public:
  VecsReader(const std::string& path, DType element, const std::string& display)
      : TableReader(display, vecs_name(element)), file_(path) {
    const VecsLayout l = vecs_layout(file_, element, display);
    rows_ = l.rows;
    dim_ = l.dim;
    dtype_ = element;
    record_bytes_ = l.record_bytes;
  }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    if (last_length_ > 0) file_.release(last_offset_, last_length_);
    last_offset_ = begin * record_bytes_;
    last_length_ = count * record_bytes_;
    buffer_.resize(count * dim_);
    for (uint64_t r = 0; r < count; ++r) {
      const uint8_t* record = file_.data() + (begin + r) * record_bytes_;
      check_record_dim(record, begin + r, dim_, path_);
      widen_to_f32(dtype_, record + 4, dim_, buffer_.data() + r * dim_);
    }
    return buffer_.data();
  }

 private:
  MappedFile file_;
  uint64_t record_bytes_ = 0;
  uint64_t last_offset_ = 0;
  uint64_t last_length_ = 0;
  std::vector<float> buffer_;
};

}  // namespace

std::unique_ptr<TableReader> open_vecs(const std::string& path, DType element, const std::string& display) {
  if (element != DType::f32 && element != DType::u8 && element != DType::i32)
    EDO_FAIL("{}: vecs files hold float32, uint8 or int32, not {}", display, dtype_name(element));
  return std::make_unique<VecsReader>(path, element, display);
}

std::vector<int32_t> read_ivecs(const std::string& path, uint64_t* rows, uint64_t* dim) {
  const MappedFile file(path);
  if (file.size() > kMaxIvecsBytes)
    EDO_FAIL("{}: .ivecs file of {} bytes is larger than the {} bytes read whole", path, file.size(), kMaxIvecsBytes);
  const VecsLayout l = vecs_layout(file, DType::i32, path);
  std::vector<int32_t> out(l.rows * l.dim);
  for (uint64_t r = 0; r < l.rows; ++r) {
    const uint8_t* record = file.data() + r * l.record_bytes;
    check_record_dim(record, r, l.dim, path);
    for (uint64_t j = 0; j < l.dim; ++j) out[r * l.dim + j] = load_i32le(record + 4 + 4 * j);
  }
  *rows = l.rows;
  *dim = l.dim;
  return out;
}

}  // namespace edo::io
