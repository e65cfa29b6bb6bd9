// SPDX-License-Identifier: Apache-2.0
// Verify::small's deferred half: a tier's per-row payload sections checked
// against their manifest checksums the first time a lookup reads the tier
// (docs/PACK.md, "Integrity modes"). Internal to lib/reader.
#pragma once

#include <edo/io/container.hpp>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace edo::detail {

class PageCache;

class FirstReadCheck {
 public:
  // `sections` of `container`, which must outlive the check (the Reader's own).
  FirstReadCheck(const io::Container& container, std::vector<io::SectionInfo> sections);

  // Checks the sections once, by the first caller (the others wait for it);
  // throws edo::Error naming the file and the section that does not match,
  // and goes on throwing it at every later call. With a cache, the bytes are
  // read from the file by it (counted for `owner`), so that checking keeps
  // the tier's memory bounded; else from the mapping, each piece let go once
  // hashed.
  void ensure(PageCache* cache = nullptr, size_t owner = 0) const {
    if (!passed_.load(std::memory_order_acquire)) run(cache, owner);
  }
  const std::vector<io::SectionInfo>& sections() const { return sections_; }

 private:
  void run(PageCache* cache, size_t owner) const;

  const io::Container& container_;
  std::vector<io::SectionInfo> sections_;
  mutable std::mutex mu_;
  mutable std::atomic<bool> passed_{false};
  mutable std::string failure_;  // set once a section failed: the message every later call throws
};

}  // namespace edo::detail
