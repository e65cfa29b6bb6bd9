// safetensors: the header parser on the raw bytes, then the bytes as a file:
// every readable 2-D tensor opened and read through in bounded blocks.
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/safetensors.hpp>

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
  return 0;
}
