// SPDX-License-Identifier: Apache-2.0
// Per-row arrays of a streaming pass (row norms, row hashes): one value a
// row of a table that may have billions, filled in parallel.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>
#include <vector>

namespace edo::detail {

// Allocates from fresh anonymous mappings, which the kernel hands out
// zero-filled, with transparent huge pages requested: tens of thousands
// fewer page faults and TLB misses on arrays of tens of MB. Elements are
// default-initialised, so a vector of n trivial values costs no serial
// clearing pass: its pages are touched first by the threads that fill them.
template <class T>
struct BigArrayAllocator {
  using value_type = T;
  BigArrayAllocator() = default;
  template <class U>
  BigArrayAllocator(const BigArrayAllocator<U>&) {}

  static size_t mapped_bytes(size_t n) {
    constexpr size_t kHuge = size_t{2} << 20;
    return (n * sizeof(T) + kHuge - 1) / kHuge * kHuge;
  }
  // Beyond this, the array lives in an unlinked file under $TMPDIR: its
  // pages are the kernel's to write back and drop, so a table that declares
  // billions of rows (a few MB of npz inflating to 4 GiB) does not hold
  // gigabytes of memory for them.
  static constexpr size_t kSpillBytes = size_t{256} << 20;

  T* allocate(size_t n) {
    if (n == 0) return nullptr;
    const size_t bytes = mapped_bytes(n);
    if (bytes > kSpillBytes) return spill(bytes);
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: fine if refused
    return static_cast<T*>(p);
  }

  static T* spill(size_t bytes) {
    const char* dir = std::getenv("TMPDIR");
    std::string name = std::string(dir && *dir ? dir : "/tmp") + "/.edo-rows-XXXXXX";
    const int fd = ::mkstemp(name.data());
    if (fd < 0) throw std::bad_alloc();
    ::unlink(name.c_str());
    void* p = ::ftruncate(fd, static_cast<off_t>(bytes)) == 0
                  ? ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    ::close(fd);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (p) ::munmap(p, mapped_bytes(n));
  }

  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) {
      ::new (static_cast<void*>(p)) U;
    } else {
      ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
  }
  template <class U>
  bool operator==(const BigArrayAllocator<U>&) const {
    return true;
  }
};

template <class T>
using BigArray = std::vector<T, BigArrayAllocator<T>>;

}  // namespace edo::detail
