// SPDX-License-Identifier: Apache-2.0
// Internal to lib/store: the temporary files tier builders stream their
// per-row sections to while another section is open in the container.
#pragma once

#include <edo/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace edo {

// An anonymous temporary file written once and read back once.
class Spool {
 public:
  // `what` names the writer in errors ("a sparse tier").
  explicit Spool(std::string what) : file_(std::tmpfile(), &std::fclose), what_(std::move(what)) {
    if (!file_) EDO_FAIL("cannot create a temporary file for {} (TMPDIR)", what_);
  }
  void write(const void* data, size_t size) {
    if (size && std::fwrite(data, 1, size, file_.get()) != size)
      EDO_FAIL("writing the temporary file of {} failed", what_);
    bytes_ += size;
  }
  uint64_t bytes() const { return bytes_; }
  // Streams the contents to fn(data, size) in pieces.
  template <class Fn>
  void replay(Fn&& fn) {
    if (std::fflush(file_.get()) != 0 || std::fseek(file_.get(), 0, SEEK_SET) != 0)
      EDO_FAIL("reading the temporary file of {} failed", what_);
    std::vector<uint8_t> piece(1 << 20);
    for (uint64_t left = bytes_; left > 0;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, piece.size()));
      if (std::fread(piece.data(), 1, n, file_.get()) != n) EDO_FAIL("reading the temporary file of {} failed", what_);
      fn(piece.data(), n);
      left -= n;
    }
  }

 private:
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file_;
  std::string what_;
  uint64_t bytes_ = 0;
};

}  // namespace edo
