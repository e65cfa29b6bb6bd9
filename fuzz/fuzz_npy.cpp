// SPDX-License-Identifier: Apache-2.0
// The .npy header parser on raw bytes, then the reader on the same bytes as a file.
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/npy.hpp>
#include <edo/io/readers.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    edo::io::parse_npy_header(data, size, size, "<fuzz>");
  } catch (const edo::Error&) {
  }
  try {
    auto t = edo::io::open_npy(edo::fuzz::input_file(data, size), "<fuzz>");
    edo::fuzz::read_table(*t);
  } catch (const edo::Error&) {
  }
  return 0;
}
