// SPDX-License-Identifier: Apache-2.0
// safetensors: the header parser on the raw bytes, then the bytes as a file:
// every readable 2-D tensor opened and read through in bounded blocks, and
// every group of edo's stored codes (a "NAME.codec" in __metadata__) decoded.
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/safetensors.hpp>
#include <edo/safetensors_codes.hpp>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const edo::io::SafetensorsHeader h = edo::io::parse_safetensors_header(data, size, size, "<fuzz>");
    for (const auto& t : h.tensors)
      if (t.begin > t.end || t.end > size) std::abort();
  } catch (const edo::Error&) {
  }
  try {
    const std::string& path = edo::fuzz::input_file(data, size);
    for (const auto& t : edo::io::list_safetensors_tables(path)) {
      auto table = edo::io::open_safetensors(path, t.name, "<fuzz>");
      if (table->rows() != t.rows || table->dim() != t.dim) std::abort();
      edo::fuzz::read_table(*table);
    }
  } catch (const edo::Error&) {
  }
  try {
    const std::string& path = edo::fuzz::input_file(data, size);
    for (const auto& [key, value] : edo::io::open_safetensors_file(path).header.metadata) {
      if (!key.ends_with(".codec")) continue;
      try {
        if (auto table = edo::open_safetensors_codes(path, key.substr(0, key.size() - 6), "<fuzz>"))
          edo::fuzz::read_table(*table);
      } catch (const edo::Error&) {
      }
    }
  } catch (const edo::Error&) {
  }
  return 0;
}
