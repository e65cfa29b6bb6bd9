// SPDX-License-Identifier: Apache-2.0
// The NumPy .npy header: parsing (strict, bounded) and writing.
#pragma once

#include <edo/io/table.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace edo::io {

struct NpyHeader {
  int major_version = 1;
  DType dtype = DType::f32;
  std::vector<uint64_t> shape;
  uint64_t data_offset = 0;    // bytes from the start of the file to the first value
  uint64_t element_count = 0;  // product of shape
};

// The first six bytes of every .npy file.
inline constexpr char kNpyMagic[] = "\x93NUMPY";

// Headers longer than this are rejected (numpy writes a few hundred bytes).
inline constexpr uint64_t kMaxNpyHeaderBytes = 1u << 20;

// Parses the header at the start of `bytes` (`size` bytes available, which
// may be the whole file or just a prefix). `file_size` is the size of the
// whole file; the payload size implied by the shape must match it exactly.
// Throws edo::Error naming `path` on anything malformed or unsupported.
NpyHeader parse_npy_header(const uint8_t* bytes, uint64_t size, uint64_t file_size, const std::string& path);

// Checks that a parsed header describes a non-empty 2-D table (rows, dim);
// throws naming `path` otherwise.
void require_npy_table(const NpyHeader& h, const std::string& path);

// The header bytes (magic through padding) for a C-order little-endian array.
std::string make_npy_header(DType dtype, const std::vector<uint64_t>& shape);

}  // namespace edo::io
