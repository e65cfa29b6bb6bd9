// SPDX-License-Identifier: Apache-2.0
// Id lists (edo-lookup --ids): text and .npy from memory, and the file reader.
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/ids.hpp>

#include <cstdlib>
#include <string_view>

namespace {

// The reader's promise: ids >= 0, one line number per text id.
void check_ids(const edo::io::IdList& list) {
  for (int64_t id : list.ids)
    if (id < 0) std::abort();
  if (!list.lines.empty() && list.lines.size() != list.ids.size()) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    check_ids(edo::io::parse_ids(std::string_view(reinterpret_cast<const char*>(data), size), "<fuzz>"));
  } catch (const edo::Error&) {
  }
  try {
    check_ids(edo::io::read_ids(edo::fuzz::input_file(data, size)));
  } catch (const edo::Error&) {
  }
  return 0;
}
