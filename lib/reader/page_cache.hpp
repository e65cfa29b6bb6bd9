// SPDX-License-Identifier: Apache-2.0
// A bounded cache of a file's pages, read with io_uring or pread: how the reader serves
// tiers marked "disk" under ReaderOptions::max_resident instead of through
// the unbounded mapping (docs/PACK.md, "Bounded memory"). Internal to lib/reader.
#pragma once

#include <edo/reader.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace edo::detail {

struct PageCacheCounts {
  uint64_t hits = 0, misses = 0, bytes_read = 0;
  uint64_t bytes_checked = 0;  // read by checksum(), apart from bytes_read
};

class PageCache {
 public:
  // Opens `path`, which must be `file_size` bytes long (the size the
  // container was validated at). `capacity` bytes of page slots, each
  // `page_bytes` (a power of two); `owners` the number of counters (tiers).
  PageCache(const std::string& path, uint64_t file_size, uint64_t capacity, uint64_t page_bytes, size_t owners,
            CacheIo io = CacheIo::pread);
  ~PageCache();
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  // Bytes [offset, offset + size) of the file into dst, through the cache;
  // counted for `owner`. Safe from any number of threads (as read_spans).
  void read(size_t owner, uint64_t offset, uint64_t size, uint8_t* dst);
  // n spans of `size` bytes at offsets[0..n) into dst (span k at dst + k *
  // size): the batch's missing pages read at once, by the cache's CacheIo.
  void read_spans(size_t owner, const uint64_t* offsets, size_t n, uint64_t size, uint8_t* dst);
  // The same bytes straight from the file, not cached (sequential scans).
  void read_direct(size_t owner, uint64_t offset, uint64_t size, uint8_t* dst);
  // The container checksum (XXH64) of bytes [offset, offset + size) of the
  // file, read past the cache a piece at a time: checking a section of any
  // size holds one piece of it in memory and evicts no cached page.
  uint64_t checksum(size_t owner, uint64_t offset, uint64_t size);
  // Pages overlapping [begin, end) stay once loaded, while the pages kept so
  // make at most a quarter of the capacity: a tier's first rows, which its
  // frequency order makes the hottest.
  void keep(uint64_t begin, uint64_t end);

  PageCacheCounts counts(size_t owner) const;
  uint64_t capacity() const { return slots_ * page_bytes_; }
  uint64_t page_bytes() const { return page_bytes_; }

 private:
  struct Page {
    uint32_t slot;
    bool kept;
    std::list<uint64_t>::iterator lru;  // valid when !kept
  };
  void pread_exact(uint64_t offset, uint64_t size, uint8_t* dst) const;
  // Pages `index[0..n)` into buf (page k at buf + k * page_bytes_), by
  // io_uring; false (nothing read) when this thread has no ring and io_ is automatic.
  bool uring_pages(const uint64_t* index, size_t n, uint8_t* buf) const;
  // With mu_ held: the slot of page `index`, loading it from `fresh` (the
  // page's bytes, read without the lock) when absent.
  uint32_t slot_of(uint64_t index, const uint8_t* fresh);
  bool is_kept(uint64_t index) const;

  std::string path_;
  CacheIo io_;
  int fd_ = -1;
  uint64_t file_size_, page_bytes_, slots_;
  std::unique_ptr<uint8_t[]> slab_;  // slots_ pages, touched only as used
  mutable std::mutex mu_;
  std::unordered_map<uint64_t, Page> pages_;
  std::list<uint64_t> lru_;  // pages not kept, most recent first
  std::vector<uint32_t> free_;
  std::vector<std::pair<uint64_t, uint64_t>> keep_ranges_;  // page index ranges [first, last)
  uint64_t kept_pages_ = 0;
  std::vector<PageCacheCounts> counts_;
};

}  // namespace edo::detail
