// SPDX-License-Identifier: Apache-2.0
// The same bytes as .fvecs, .bvecs and .ivecs tables, and through read_ivecs().
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/readers.hpp>
#include <edo/io/vecs.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = edo::fuzz::input_file(data, size);
  for (edo::io::DType element : {edo::io::DType::f32, edo::io::DType::u8, edo::io::DType::i32}) {
    try {
      auto t = edo::io::open_vecs(path, element, "<fuzz>");
      edo::fuzz::read_table(*t);
    } catch (const edo::Error&) {
    }
  }
  try {
    uint64_t rows = 0, dim = 0;
    const auto ids = edo::io::read_ivecs(path, &rows, &dim);
    if (ids.size() != rows * dim) std::abort();
  } catch (const edo::Error&) {
  }
  return 0;
}
