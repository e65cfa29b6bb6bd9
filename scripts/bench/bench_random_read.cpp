// SPDX-License-Identifier: Apache-2.0
// The memory ceiling of a pooled lookup (scripts/bench/pooled_peers.py):
// random reads of ROW_BYTES-byte rows from a table of ROWS rows held in
// anonymous memory with transparent huge pages (beyond the caches), in the
// order of the ids given, each row's every cache line loaded and folded into
// one word (so nothing is decoded, summed per value or written), the rows 8,
// 16 or 32 ahead prefetched as the fastest kernels do (the best of the three). What any reader of rows that
// size from that table can at best reach on this machine, one thread.
// Prints one JSON object: {"mids": million ids a second, "gbs": GB/s of rows}.
//
//   edo_bench_random_read ROWS ROW_BYTES IDS.npy [--passes N]
#include <edo/io/ids.hpp>

#include <sys/mman.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>

int main(int argc, char** argv) {
  CLI::App app{"Random reads of rows from a table in memory: the ceiling of a pooled lookup"};
  uint64_t rows = 0, row_bytes = 0;
  std::string ids_path;
  int passes = 5;
  app.add_option("ROWS", rows)->required()->check(CLI::PositiveNumber);
  app.add_option("ROW_BYTES", row_bytes)->required()->check(CLI::Range(uint64_t{8}, uint64_t{1} << 16));
  app.add_option("IDS", ids_path, "ids (.npy or text), each below ROWS")->required();
  app.add_option("--passes", passes, "best of this many passes")->check(CLI::Range(1, 100));
  CLI11_PARSE(app, argc, argv);
  const std::vector<int64_t> ids = edo::io::read_ids(ids_path).ids;
  for (const int64_t id : ids)
    if (id < 0 || static_cast<uint64_t>(id) >= rows) {
      std::fprintf(stderr, "edo_bench_random_read: %s: id %lld is not below %llu\n", ids_path.c_str(),
                   static_cast<long long>(id), static_cast<unsigned long long>(rows));
      return 2;
    }
  const size_t bytes = rows * row_bytes;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "edo_bench_random_read: mmap of %zu bytes failed\n", bytes);
    return 1;
  }
  ::madvise(p, bytes, MADV_HUGEPAGE);
  auto* table = static_cast<uint8_t*>(p);
  for (size_t i = 0; i < bytes; ++i) table[i] = static_cast<uint8_t>(i * 131u + 7u);
  const size_t lines = (row_bytes + 63) / 64;
  uint64_t fold = 0;
  double best = 1e30;
  for (int pass = 0; pass < 3 * passes; ++pass) {
    const size_t kAhead = size_t{8} << (pass % 3);
    const auto t0 = std::chrono::steady_clock::now();
    for (size_t i = 0; i < ids.size(); ++i) {
      if (i + kAhead < ids.size()) {
        const uint8_t* ahead = table + static_cast<uint64_t>(ids[i + kAhead]) * row_bytes;
        for (size_t l = 0; l < lines; ++l) __builtin_prefetch(ahead + std::min(l * 64, row_bytes - 8), 0, 2);
      }
      const uint8_t* row = table + static_cast<uint64_t>(ids[i]) * row_bytes;
      for (size_t l = 0; l < lines; ++l) {
        uint64_t word = 0;
        std::memcpy(&word, row + std::min(l * 64, row_bytes - 8), sizeof word);
        fold ^= word;
      }
    }
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double n = static_cast<double>(ids.size());
  std::printf("{\"mids\": %.6g, \"gbs\": %.6g, \"fold\": %llu}\n", n / best / 1e6,
              n * static_cast<double>(row_bytes) / best / 1e9, static_cast<unsigned long long>(fold));
  ::munmap(p, bytes);
  return 0;
}
