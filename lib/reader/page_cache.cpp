#include "page_cache.hpp"

#include <edo/error.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edo::detail {

PageCache::PageCache(const std::string& path, uint64_t file_size, uint64_t capacity, uint64_t page_bytes, size_t owners)
    : path_(path), file_size_(file_size), page_bytes_(page_bytes), slots_(capacity / page_bytes), counts_(owners) {
  if (page_bytes == 0 || (page_bytes & (page_bytes - 1)) != 0 || slots_ < 2)
    EDO_FAIL("{}: a page cache of {} bytes in pages of {} holds fewer than two pages", path, capacity, page_bytes);
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) EDO_FAIL("{}: cannot open for reading: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) != file_size) {
    ::close(fd_);
    EDO_FAIL("{}: the file changed size since it was opened ({} bytes, then {})", path, file_size,
             static_cast<uint64_t>(st.st_size));
  }
  slab_.reset(new uint8_t[slots_ * page_bytes_]);  // not value-initialised: untouched pages stay unresident
  free_.reserve(slots_);
  for (uint64_t s = slots_; s-- > 0;) free_.push_back(static_cast<uint32_t>(s));
}

PageCache::~PageCache() {
  if (fd_ >= 0) ::close(fd_);
}

void PageCache::pread_exact(uint64_t offset, uint64_t size, uint8_t* dst) const {
  uint64_t done = 0;
  while (done < size) {
    const ssize_t got = ::pread(fd_, dst + done, size - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) EDO_FAIL("{}: read at byte {} failed: {}", path_, offset + done, std::strerror(errno));
    if (got == 0)
      EDO_FAIL("{}: the file ends at byte {}, before the {} bytes it had when opened (truncated while being served?)",
               path_, offset + done, file_size_);
    done += static_cast<uint64_t>(got);
  }
}

void PageCache::keep(uint64_t begin, uint64_t end) {
  if (end <= begin) return;
  const std::lock_guard lock(mu_);
  keep_ranges_.emplace_back(begin / page_bytes_, (end + page_bytes_ - 1) / page_bytes_);
}

bool PageCache::is_kept(uint64_t index) const {
  if (kept_pages_ >= slots_ / 4) return false;
  for (const auto& [first, last] : keep_ranges_)
    if (index >= first && index < last) return true;
  return false;
}

uint32_t PageCache::slot_of(uint64_t index, const uint8_t* fresh) {
  if (const auto it = pages_.find(index); it != pages_.end()) {
    if (!it->second.kept) lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.slot;
  }
  if (free_.empty()) {
    // Every slot in use and none kept free: the least recently used page
    // goes (kept pages are at most a quarter of the slots, so one exists).
    const uint64_t victim = lru_.back();
    lru_.pop_back();
    const auto v = pages_.find(victim);
    free_.push_back(v->second.slot);
    pages_.erase(v);
  }
  const uint32_t slot = free_.back();
  free_.pop_back();
  const uint64_t start = index * page_bytes_;
  std::memcpy(slab_.get() + uint64_t{slot} * page_bytes_, fresh, std::min(page_bytes_, file_size_ - start));
  Page page{slot, is_kept(index), {}};
  if (page.kept) {
    ++kept_pages_;
  } else {
    lru_.push_front(index);
    page.lru = lru_.begin();
  }
  pages_.emplace(index, page);
  return slot;
}

void PageCache::read(size_t owner, uint64_t offset, uint64_t size, uint8_t* dst) {
  if (offset > file_size_ || size > file_size_ - offset)
    EDO_FAIL("{}: bytes [{}, +{}) are outside the file ({} bytes)", path_, offset, size, file_size_);
  thread_local std::vector<uint8_t> fresh;
  while (size > 0) {
    const uint64_t index = offset / page_bytes_, within = offset % page_bytes_;
    const uint64_t take = std::min(size, page_bytes_ - within);
    bool present;
    {
      const std::lock_guard lock(mu_);
      present = pages_.count(index) != 0;
      if (present) {
        const uint32_t slot = slot_of(index, nullptr);
        std::memcpy(dst, slab_.get() + uint64_t{slot} * page_bytes_ + within, take);
        ++counts_[owner].hits;
      }
    }
    if (!present) {
      // Read without the lock, so other threads' hits and reads go on.
      const uint64_t start = index * page_bytes_, length = std::min(page_bytes_, file_size_ - start);
      fresh.resize(page_bytes_);
      pread_exact(start, length, fresh.data());
      const std::lock_guard lock(mu_);
      const uint32_t slot = slot_of(index, fresh.data());
      std::memcpy(dst, slab_.get() + uint64_t{slot} * page_bytes_ + within, take);
      ++counts_[owner].misses;
      counts_[owner].bytes_read += length;
    }
    dst += take;
    offset += take;
    size -= take;
  }
}

void PageCache::read_direct(size_t owner, uint64_t offset, uint64_t size, uint8_t* dst) {
  if (offset > file_size_ || size > file_size_ - offset)
    EDO_FAIL("{}: bytes [{}, +{}) are outside the file ({} bytes)", path_, offset, size, file_size_);
  pread_exact(offset, size, dst);
  const std::lock_guard lock(mu_);
  counts_[owner].bytes_read += size;
}

PageCacheCounts PageCache::counts(size_t owner) const {
  const std::lock_guard lock(mu_);
  return counts_[owner];
}

}  // namespace edo::detail
