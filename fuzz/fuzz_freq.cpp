// SPDX-License-Identifier: Apache-2.0
// Frequency files: the text form from memory, and the file reader (which also
// takes .npy counts when the input starts with the .npy magic).
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/freq.hpp>

#include <cmath>
#include <string_view>

namespace {

// Checks the promise the reader makes about what it returns.
void check_counts(const std::vector<double>& counts, uint64_t rows) {
  if (counts.size() != rows) std::abort();
  for (double c : counts)
    if (!(c >= 0) || std::isinf(c)) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  constexpr uint64_t kRows = 64;
  try {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    check_counts(edo::io::parse_frequency_text(text, kRows, "<fuzz>"), kRows);
  } catch (const edo::Error&) {
  }
  try {
    check_counts(edo::io::read_frequencies(edo::fuzz::input_file(data, size), kRows), kRows);
  } catch (const edo::Error&) {
  }
  return 0;
}
