// SPDX-License-Identifier: Apache-2.0
// The reader library in a few lines: open a .edo file, list its tiers, look up rows by id.
//   example_lookup FILE.edo ID [ID ...]
#include <edo/reader.hpp>

#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) return std::fprintf(stderr, "usage: %s FILE.edo ID [ID ...]\n", argv[0]), 2;
  try {
    std::vector<int64_t> ids;
    for (int i = 2; i < argc; ++i) {
      int64_t id = 0;
      const char* end = argv[i] + std::strlen(argv[i]);
      const auto r = std::from_chars(argv[i], end, id);
      if (r.ec != std::errc{} || r.ptr != end || id < 0)
        return std::fprintf(stderr, "error: '%s' is not a row id (a whole number from 0)\n", argv[i]), 2;
      ids.push_back(id);
    }
    const edo::Reader reader = edo::Reader::open(argv[1]);  // mmap; cost independent of the file size
    for (const edo::TierStats& t : reader.tiers())
      std::printf("tier %s: %llu rows, %s, %s\n", t.name.c_str(), static_cast<unsigned long long>(t.rows),
                  t.codec.c_str(), edo::residency_name(t.residency));
    std::vector<float> rows(ids.size() * reader.dim());
    reader.lookup(ids.data(), ids.size(), rows.data());  // decodes only these rows, multithreaded
    for (size_t i = 0; i < ids.size(); ++i) {
      std::printf("%lld:", static_cast<long long>(ids[i]));
      for (uint64_t j = 0; j < reader.dim(); ++j) std::printf(" %.4f", static_cast<double>(rows[i * reader.dim() + j]));
      std::printf("\n");
    }
  } catch (const std::exception& e) {
    return std::fprintf(stderr, "error: %s\n", e.what()), 1;
  }
  // Rows that never reached stdout (a full disk) are a failure.
  if (std::fflush(stdout) != 0 || std::ferror(stdout))
    return std::fprintf(stderr, "error: <stdout>: write failed: %s\n", std::strerror(errno)), 1;
}
