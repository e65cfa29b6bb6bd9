// Per-format reader and writer factories behind open_table()/create_table().
// `display` is the name used in messages (the spec as the user wrote it).
#pragma once

#include <edo/io/table.hpp>

#include <memory>
#include <string>

namespace edo::io {

// Converts n little-endian values of type t to fp32.
void widen_to_f32(DType t, const uint8_t* src, uint64_t n, float* out);

std::unique_ptr<TableReader> open_npy(const std::string& path, const std::string& display);
std::unique_ptr<TableWriter> create_npy(const std::string& path, uint64_t rows, uint64_t dim, DType dtype);

}  // namespace edo::io
