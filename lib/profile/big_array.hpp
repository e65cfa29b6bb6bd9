// Per-row arrays of a streaming pass (row norms, row hashes): one value a
// row of a table that may have billions, filled in parallel.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <new>
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
  T* allocate(size_t n) {
    if (n == 0) return nullptr;
    void* p = ::mmap(nullptr, mapped_bytes(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::madvise(p, mapped_bytes(n), MADV_HUGEPAGE);  // a hint: fine if refused
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
