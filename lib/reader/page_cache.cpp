// SPDX-License-Identifier: Apache-2.0
#include "page_cache.hpp"

#include <edo/error.hpp>
#include <edo/io/container.hpp>

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace edo::detail {

PageCache::PageCache(const std::string& path, uint64_t file_size, uint64_t capacity, uint64_t page_bytes, size_t owners,
                     CacheIo io)
    : path_(path),
      io_(io),
      file_size_(file_size),
      page_bytes_(page_bytes),
      slots_(capacity / page_bytes),
      counts_(owners) {
  if (page_bytes == 0 || (page_bytes & (page_bytes - 1)) != 0 || slots_ < 2)
    EDO_FAIL("{}: a page cache of {} bytes in pages of {} holds fewer than two pages", path, capacity, page_bytes);
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) EDO_IO_FAIL("{}: cannot open for reading: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) != file_size) {
    ::close(fd_);
    EDO_IO_FAIL("{}: the file changed size since it was opened ({} bytes, then {})", path, file_size,
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
    if (got < 0) EDO_IO_FAIL("{}: read at byte {} failed: {}", path_, offset + done, std::strerror(errno));
    if (got == 0)
      EDO_IO_FAIL(
          "{}: the file ends at byte {}, before the {} bytes it had when opened (truncated while being served?)", path_,
          offset + done, file_size_);
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
  read_spans(owner, &offset, 1, size, dst);
}

void PageCache::read_direct(size_t owner, uint64_t offset, uint64_t size, uint8_t* dst) {
  if (offset > file_size_ || size > file_size_ - offset)
    EDO_CORRUPT_FAIL("{}: bytes [{}, +{}) are outside the file ({} bytes)", path_, offset, size, file_size_);
  pread_exact(offset, size, dst);
  const std::lock_guard lock(mu_);
  counts_[owner].bytes_read += size;
}

uint64_t PageCache::checksum(size_t owner, uint64_t offset, uint64_t size) {
  if (offset > file_size_ || size > file_size_ - offset)
    EDO_CORRUPT_FAIL("{}: bytes [{}, +{}) are outside the file ({} bytes)", path_, offset, size, file_size_);
  constexpr uint64_t kPiece = uint64_t{1} << 20;
  std::vector<uint8_t> piece(std::min(kPiece, size));
  io::Checksum64Stream hash;
  for (uint64_t at = 0; at < size; at += kPiece) {
    const uint64_t n = std::min(kPiece, size - at);
    pread_exact(offset + at, n, piece.data());
    hash.update(piece.data(), n);
  }
  const std::lock_guard lock(mu_);
  counts_[owner].bytes_checked += size;
  return hash.digest();
}

namespace {

// One ring a thread, made on first use: lookups run on OpenMP threads.
struct Ring {
  io_uring ring{};
  bool ready = false;
  static constexpr unsigned kDepth = 64;
  ~Ring() {
    if (ready) io_uring_queue_exit(&ring);
  }
  int error = 0;  // of the first init, kept: a thread does not retry
  // The thread's ring; null when io_uring cannot be set up and `required` is false.
  io_uring* get(const std::string& path, bool required) {
    if (!ready && error == 0) {
      error = io_uring_queue_init(kDepth, &ring, 0);
      ready = error == 0;  // else -errno
    }
    if (ready) return &ring;
    if (required) EDO_IO_FAIL("{}: io_uring is not available here: {} (use pread)", path, std::strerror(-error));
    return nullptr;
  }
};

}  // namespace

bool PageCache::uring_pages(const uint64_t* index, size_t n, uint8_t* buf) const {
  thread_local Ring holder;
  io_uring* ring = holder.get(path_, io_ == CacheIo::io_uring);
  if (!ring) return false;
  for (size_t begin = 0; begin < n; begin += Ring::kDepth) {
    const size_t m = std::min<size_t>(Ring::kDepth, n - begin);
    for (size_t k = begin; k < begin + m; ++k) {
      io_uring_sqe* sqe = io_uring_get_sqe(ring);
      const uint64_t start = index[k] * page_bytes_;
      io_uring_prep_read(sqe, fd_, buf + k * page_bytes_,
                         static_cast<unsigned>(std::min(page_bytes_, file_size_ - start)), start);
      io_uring_sqe_set_data64(sqe, k);
    }
    if (const int e = io_uring_submit_and_wait(ring, static_cast<unsigned>(m)); e < 0)
      EDO_IO_FAIL("{}: io_uring submit failed: {}", path_, std::strerror(-e));
    for (size_t done = 0; done < m; ++done) {
      io_uring_cqe* cqe = nullptr;
      if (const int e = io_uring_wait_cqe(ring, &cqe); e < 0)
        EDO_IO_FAIL("{}: io_uring wait failed: {}", path_, std::strerror(-e));
      const uint64_t k = io_uring_cqe_get_data64(cqe);
      const int res = cqe->res;
      io_uring_cqe_seen(ring, cqe);
      const uint64_t start = index[k] * page_bytes_, want = std::min(page_bytes_, file_size_ - start);
      if (res < 0) EDO_IO_FAIL("{}: read at byte {} failed: {}", path_, start, std::strerror(-res));
      // A short read: the rest by pread, which names a truncated file.
      if (static_cast<uint64_t>(res) < want)
        pread_exact(start + static_cast<uint64_t>(res), want - static_cast<uint64_t>(res),
                    buf + k * page_bytes_ + static_cast<uint64_t>(res));
    }
  }
  return true;
}

void PageCache::read_spans(size_t owner, const uint64_t* offsets, size_t n, uint64_t size, uint8_t* dst) {
  for (size_t k = 0; k < n; ++k)
    if (offsets[k] > file_size_ || size > file_size_ - offsets[k])
      EDO_CORRUPT_FAIL("{}: bytes [{}, +{}) are outside the file ({} bytes)", path_, offsets[k], size, file_size_);
  if (size == 0) return;
  // Spans go in chunks whose missing pages fill one io_uring submission at
  // most, so a lookup's read buffer stays at kBatchPages pages a thread.
  constexpr size_t kBatchPages = 64;
  thread_local std::vector<uint64_t> missing;
  thread_local std::vector<uint8_t> fresh;
  for (size_t begin = 0, end = 0; begin < n; begin = end) {
    missing.clear();
    {
      const std::lock_guard lock(mu_);
      for (; end < n; ++end) {
        const size_t before = missing.size();
        for (uint64_t p = offsets[end] / page_bytes_; p <= (offsets[end] + size - 1) / page_bytes_; ++p)
          if (pages_.count(p) == 0 && std::find(missing.begin(), missing.end(), p) == missing.end())
            missing.push_back(p);
        if (missing.size() > kBatchPages && end > begin) {
          missing.resize(before);
          break;
        }
      }
    }
    std::sort(missing.begin(), missing.end());
    // Read without the lock: the chunk's missing pages at once.
    fresh.resize((missing.size() + 1) * page_bytes_);
    if (io_ == CacheIo::pread || !uring_pages(missing.data(), missing.size(), fresh.data())) {
      for (size_t k = 0; k < missing.size(); ++k) {
        const uint64_t start = missing[k] * page_bytes_;
        pread_exact(start, std::min(page_bytes_, file_size_ - start), fresh.data() + k * page_bytes_);
      }
    }
    const std::lock_guard lock(mu_);
    for (uint64_t p : missing) {
      ++counts_[owner].misses;
      counts_[owner].bytes_read += std::min(page_bytes_, file_size_ - p * page_bytes_);
    }
    uint8_t* spare = fresh.data() + missing.size() * page_bytes_;  // one page for a page lost meanwhile
    for (size_t k = begin; k < end; ++k) {
      uint64_t offset = offsets[k], left = size;
      uint8_t* out = dst + k * size;
      while (left > 0) {
        const uint64_t index = offset / page_bytes_, within = offset % page_bytes_;
        const uint64_t take = std::min(left, page_bytes_ - within);
        // A page this chunk read may have been evicted by the chunk's own
        // later pages: it is re-inserted from the bytes read.
        const auto it = std::lower_bound(missing.begin(), missing.end(), index);
        const uint8_t* bytes = it != missing.end() && *it == index
                                   ? fresh.data() + static_cast<uint64_t>(it - missing.begin()) * page_bytes_
                                   : nullptr;
        if (!bytes) {
          ++counts_[owner].hits;
          if (pages_.count(index) == 0) {  // evicted by another thread since the first look (rare)
            const uint64_t start = index * page_bytes_;
            pread_exact(start, std::min(page_bytes_, file_size_ - start), spare);
            bytes = spare;
          }
        }
        const uint32_t slot = slot_of(index, bytes);
        std::memcpy(out, slab_.get() + uint64_t{slot} * page_bytes_ + within, take);
        out += take;
        offset += take;
        left -= take;
      }
    }
  }
}

PageCacheCounts PageCache::counts(size_t owner) const {
  const std::lock_guard lock(mu_);
  return counts_[owner];
}

}  // namespace edo::detail
