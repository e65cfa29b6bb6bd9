// SPDX-License-Identifier: Apache-2.0
#include "first_read_check.hpp"

#include "page_cache.hpp"

#include <edo/error.hpp>

#include <fmt/format.h>

namespace edo::detail {

FirstReadCheck::FirstReadCheck(const io::Container& container, std::vector<io::SectionInfo> sections)
    : container_(container), sections_(std::move(sections)) {}

void FirstReadCheck::run(PageCache* cache, size_t owner) const {
  const std::lock_guard lock(mu_);
  if (!failure_.empty()) throw Error(failure_, __FILE__, __LINE__);
  if (passed_.load(std::memory_order_relaxed)) return;  // checked by another thread meanwhile
  try {
    if (cache) {
      for (const io::SectionInfo& s : sections_) {
        const uint64_t actual = cache->checksum(owner, container_.backing_offset() + s.offset, s.length);
        if (actual != s.xxh64)
          EDO_CORRUPT_FAIL("{}: section '{}' checksum mismatch (manifest {:016x}, data {:016x})", container_.path(),
                           s.name, s.xxh64, actual);
      }
    } else {
      container_.verify([this](const io::SectionInfo& s) {
        for (const io::SectionInfo& mine : sections_)
          if (mine.name == s.name) return true;
        return false;
      });
    }
  } catch (const Error& e) {
    failure_ = e.what();
    throw;
  }
  passed_.store(true, std::memory_order_release);
}

}  // namespace edo::detail
