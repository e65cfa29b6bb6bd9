// SPDX-License-Identifier: Apache-2.0
// Where compute runs. `auto` picks a GPU when the driver reports one; asking
// for `cuda` without one is an error, never a silent fallback to the CPU.
#pragma once

#include <cstddef>
#include <source_location>
#include <string>
#include <string_view>

namespace edo {

enum class Device { cpu, cuda };

const char* device_name(Device d);  // "cpu" / "cuda"

// GPUs the CUDA driver reports; 0 when edo was built without CUDA or the
// driver/runtime is missing or fails.
int cuda_device_count();
inline bool cuda_available() { return cuda_device_count() > 0; }

// Parses "auto", "cpu" or "cuda" (usage error otherwise) and resolves auto.
// "cuda" without a usable GPU throws edo::Error (exit 1) saying why.
Device select_device(std::string_view request);

// Throws unless `d` can run here (cuda: built with CUDA and a GPU present);
// the message starts with `asked`, what the caller asked for.
void require_device(Device d, std::string_view asked = "device cuda");

// GPU memory owned by the host (RAII); every call throws edo::Error on a CUDA
// failure, and constructing one in a build without CUDA throws too. Usable
// from .cu files (this header needs no fmt).
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  void upload(const void* host, size_t bytes);    // host -> device, synchronous
  void download(void* host, size_t bytes) const;  // device -> host, synchronous
  template <class T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Host bytes the GPU reads where they are: the pages holding [host, host +
// bytes) registered as mapped, read-only, pinned memory (cudaHostRegister),
// and the device address of `host` in them. Kernels then read them over the
// bus, with no copy held on the device; pinning keeps them resident.
class PinnedHostView {
 public:
  PinnedHostView(const void* host, size_t bytes);
  ~PinnedHostView();
  PinnedHostView(const PinnedHostView&) = delete;
  PinnedHostView& operator=(const PinnedHostView&) = delete;
  const void* device_pointer() const { return device_; }

 private:
  void* base_ = nullptr;  // the registered, page-aligned range
  const void* device_ = nullptr;
};

// A copy of `bytes` of `host` in unified (managed) memory, advised
// read-mostly with the GPU as its preferred home and prefetched there. Made
// only when it fits in the device's free memory (an edo::Error saying so
// otherwise): oversubscribed managed memory can stall a shared GPU.
class ManagedCopy {
 public:
  ManagedCopy(const void* host, size_t bytes);
  ~ManagedCopy();
  ManagedCopy(const ManagedCopy&) = delete;
  ManagedCopy& operator=(const ManagedCopy&) = delete;
  const void* get() const { return ptr_; }

 private:
  void* ptr_ = nullptr;
};

// Throws edo::Error naming kernel `what` and the caller's file and line when
// the last kernel launch failed. (Calls of the CUDA runtime itself are
// checked with EDO_CUDA_TRY, edo/cuda_check.hpp.)
void check_cuda_launch(const char* what, std::source_location where = std::source_location::current());

}  // namespace edo
