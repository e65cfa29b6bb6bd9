// SPDX-License-Identifier: Apache-2.0
// word2vec / fastText vector files: the bytes as text and as binary, every
// row read back in bounded blocks, the vocabulary one word a row.
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/word2vec.hpp>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  for (const bool binary : {false, true}) {
    try {
      auto table = edo::io::open_word2vec(edo::fuzz::input_file(data, size), "<fuzz>", binary);
      const auto* words = table->vocabulary();
      if (!words || words->size() != table->rows()) std::abort();
      edo::fuzz::read_table(*table);
    } catch (const edo::Error&) {
    }
  }
  return 0;
}
