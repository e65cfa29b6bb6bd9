// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz targets: hands the fuzzer's bytes to code that opens
// files by path, and reads a whole table back in bounded blocks.
#pragma once

#include <edo/io/table.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace edo::fuzz {

// The input as a file: an in-memory file (no disk traffic per run), rewritten
// for every input and opened by its /proc/self/fd path.
inline const std::string& input_file(const uint8_t* data, size_t size) {
  static const int fd = ::memfd_create("edo-fuzz-input", MFD_CLOEXEC);
  static const std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::pwrite(fd, data + done, size - done, static_cast<off_t>(done));
    if (n <= 0) std::abort();
    done += static_cast<size_t>(n);
  }
  return path;
}

// Reads the table forwards in small blocks, then its first rows again (a
// backwards step), stopping after a few million values so one input stays fast.
inline void read_table(io::TableReader& t) {
  constexpr uint64_t kMaxValues = uint64_t{1} << 22;
  const uint64_t block = std::max<uint64_t>(1, std::min<uint64_t>(t.rows(), 4096 / t.dim()));
  volatile float sink = 0;
  uint64_t values = 0;
  for (uint64_t r = 0; r < t.rows() && values < kMaxValues; r += block) {
    const uint64_t n = std::min(block, t.rows() - r);
    const float* p = t.rows_f32(r, n);
    sink = sink + p[0] + p[n * t.dim() - 1];
    values += n * t.dim();
  }
  sink = sink + t.rows_f32(0, 1)[0];
}

}  // namespace edo::fuzz
