// SPDX-License-Identifier: Apache-2.0
// .npz archives: the only member, then a member named "a" (the seeds use it).
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/io/readers.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = edo::fuzz::input_file(data, size);
  for (const char* member : {"", "a"}) {
    try {
      auto t = edo::io::open_npz(path, member, "<fuzz>");
      edo::fuzz::read_table(*t);
    } catch (const edo::Error&) {
    }
  }
  return 0;
}
