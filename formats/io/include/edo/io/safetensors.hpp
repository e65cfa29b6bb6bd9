// SPDX-License-Identifier: Apache-2.0
// safetensors (https://github.com/huggingface/safetensors): an 8-byte
// little-endian header length N, N bytes of JSON, then the tensors' bytes.
// The JSON maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets into the bytes after the header); "__metadata__"
// holds string pairs. Checked as the format's own library checks it: N at
// most 100 MB and inside the file, the header a JSON object, every shape
// times its dtype's size equal to end - begin, and the tensors, sorted by
// offset, tiling the byte buffer exactly (no gap, no overlap, nothing past
// its end). Tensors of a dtype edo does not know are listed but never read.
//
// Tables are 2-D tensors of F32, F16, BF16, F64, F8_E4M3 or F8_E5M2 (and the
// integer dtypes), addressed as "model.safetensors:tensor.name". A sharded
// model is read through its index, "model.safetensors.index.json:name",
// whose "weight_map" names each tensor's shard file (beside the index).
#pragma once

#include <edo/io/files.hpp>
#include <edo/io/table.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace edo::io {

inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;      // as written ("F32", "BF16", ...)
  std::optional<DType> dtype;  // empty: a dtype edo does not read
  std::vector<uint64_t> shape;
  uint64_t begin = 0, end = 0;  // byte offsets into the file
  uint64_t bytes() const { return end - begin; }
};

struct SafetensorsHeader {
  std::vector<SafetensorsTensor> tensors;  // in offset order
  std::map<std::string, std::string> metadata;
};

// Parses and checks the header of a file of `file_size` bytes whose first
// `size` bytes are `bytes`; errors name `path`.
SafetensorsHeader parse_safetensors_header(const uint8_t* bytes, uint64_t size, uint64_t file_size,
                                           const std::string& path);

// The 2-D tensors edo can read as tables, largest first, of a .safetensors
// file or a sharded model's .index.json (each tensor's name then carries its shard).
struct SafetensorsTable {
  std::string name, file;
  DType dtype = DType::f32;
  uint64_t rows = 0, dim = 0, bytes = 0;
};
std::vector<SafetensorsTable> list_safetensors_tables(const std::string& path);
// Every tensor's name, of any shape or dtype, of a .safetensors file or a
// sharded model's .index.json, in file (index: name) order.
std::vector<std::string> safetensors_tensor_names(const std::string& path);

// One file mapped with its header checked, for readers that assemble a table
// from several tensors (edo's stored codes, lib/store/safetensors_codes.cpp).
struct SafetensorsFile {
  MappedFile file;
  SafetensorsHeader header;
  const SafetensorsTensor* find(const std::string& name) const;  // null when absent
  const uint8_t* bytes(const SafetensorsTensor& t) const { return file.data() + t.begin; }
};
SafetensorsFile open_safetensors_file(const std::string& path);

// The size of one element of a dtype named as the format names it ("F32",
// "U8", ...); 0 for a name the format does not have.
uint64_t safetensors_dtype_size(const std::string& dtype_name);

// A new file of several tensors, declared up front (laid out in the order
// given, the header padded with spaces to a multiple of 8 bytes as the
// format's library does), their bytes then written at any offset in any
// order; commit() checks every byte was written and renames the temporary
// onto `path`.
struct SafetensorsTensorSpec {
  std::string name;
  std::string dtype_name;  // "F32", "U8", ...
  std::vector<uint64_t> shape;
};
class SafetensorsFileWriter {
 public:
  SafetensorsFileWriter(const std::string& path, std::vector<SafetensorsTensorSpec> tensors,
                        const std::map<std::string, std::string>& metadata);
  // n bytes of tensor `index`, at byte `offset` of that tensor.
  void write(size_t index, uint64_t offset, const void* data, uint64_t n);
  void commit();

 private:
  std::string path_;
  AtomicFile file_;
  std::vector<SafetensorsTensorSpec> tensors_;
  std::vector<uint64_t> begin_, bytes_, written_;
};

// True for a path ending in .safetensors or .safetensors.index.json.
bool is_safetensors_path(const std::string& path);

}  // namespace edo::io
