// SPDX-License-Identifier: Apache-2.0
#include <edo/device.hpp>
#include <edo/error.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda_check.hpp>
#endif

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace edo {

namespace detail {

namespace {

// "kernels/knn.cu" rather than the build's absolute path.
const char* source_path(const char* file) {
  const char* best = file;
  for (const char* root : {"/lib/", "/kernels/", "/apps/", "/formats/", "/test/"}) {
    if (const char* at = std::strstr(file, root)) {
      if (best == file || at < best) best = at + 1;
    }
  }
  return best;
}

// "cudaMemcpy" from "cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice)":
// the arguments say nothing to a user, and a cuBLAS call has thirteen.
std::string callee(const char* call) {
  std::string s(call);
  if (s.empty() || s.back() != ')') return s;
  int depth = 0;
  for (size_t i = s.size(); i-- > 0;) {
    depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
    if (depth == 0) return s.substr(0, i);
  }
  return s;
}

}  // namespace

void cuda_fail(const char* library, const char* status, const char* call, const char* file, int line) {
  throw Error(fmt::format("{}: {} failed: {} ({}:{})", library, callee(call), status, source_path(file), line), file,
              line);
}

void cuda_error(const std::string& message, const char* file, int line) {
  throw Error(fmt::format("{} ({}:{})", message, source_path(file), line), file, line);
}

}  // namespace detail

const char* device_name(Device d) { return d == Device::cuda ? "cuda" : "cpu"; }

int cuda_device_count() {
#ifdef EDO_HAVE_CUDA
  // Asked once: the answer cannot change within a process and the first call
  // initialises the runtime, which is slow.
  static const int count = [] {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
      cudaGetLastError();  // clear the sticky error so later calls start clean
      return 0;
    }
    return n;
  }();
  return count;
#else
  return 0;
#endif
}

void require_device(Device d, std::string_view asked) {
  if (d != Device::cuda) return;
#ifdef EDO_HAVE_CUDA
  if (cuda_device_count() == 0) EDO_FAIL("{}: no CUDA GPU is available (the driver reports none)", asked);
#else
  EDO_FAIL("{}: this edo was built without CUDA", asked);
#endif
}

#ifdef EDO_HAVE_CUDA
DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  require_device(Device::cuda);
  if (bytes) EDO_CUDA_TRY(cudaMalloc(&ptr_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  // A destructor cannot throw; a failed free leaves nothing to undo.
  if (ptr_) (void)cudaFree(ptr_);
}
void DeviceBuffer::upload(const void* host, size_t bytes) {
  EDO_CHECK(bytes <= bytes_, "cuda: upload of {} bytes into a buffer of {}", bytes, bytes_);
  if (bytes) EDO_CUDA_TRY(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice));
}
void DeviceBuffer::download(void* host, size_t bytes) const {
  EDO_CHECK(bytes <= bytes_, "cuda: download of {} bytes from a buffer of {}", bytes, bytes_);
  if (bytes) EDO_CUDA_TRY(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost));
}
PinnedHostView::PinnedHostView(const void* host, size_t bytes) {
  require_device(Device::cuda);
  // Whole pages: a mapping's section starts anywhere in a page.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<uintptr_t>(host) & ~(page - 1);
  const auto end = (reinterpret_cast<uintptr_t>(host) + std::max<size_t>(bytes, 1) + page - 1) & ~(page - 1);
  base_ = reinterpret_cast<void*>(begin);
  EDO_CUDA_TRY(cudaHostRegister(base_, end - begin, cudaHostRegisterMapped | cudaHostRegisterReadOnly));
  void* device_base = nullptr;
  try {
    EDO_CUDA_TRY(cudaHostGetDevicePointer(&device_base, base_, 0));
  } catch (...) {
    (void)cudaHostUnregister(base_);
    throw;
  }
  device_ = static_cast<const uint8_t*>(device_base) + (reinterpret_cast<uintptr_t>(host) - begin);
}
PinnedHostView::~PinnedHostView() {
  if (base_) (void)cudaHostUnregister(base_);
}

ManagedCopy::ManagedCopy(const void* host, size_t bytes) {
  require_device(Device::cuda);
  size_t free_bytes = 0, total = 0;
  EDO_CUDA_TRY(cudaMemGetInfo(&free_bytes, &total));
  // A tenth of the free memory left for the kernels and other allocations.
  if (bytes > free_bytes / 10 * 9)
    EDO_FAIL(
        "cuda: a managed copy of {} bytes does not fit in the {} bytes free on the GPU (of {}); serve the tier by "
        "copies or mapped memory instead",
        bytes, free_bytes, total);
  int device = 0;
  EDO_CUDA_TRY(cudaGetDevice(&device));
  EDO_CUDA_TRY(cudaMallocManaged(&ptr_, std::max<size_t>(bytes, 1)));
  try {
    std::memcpy(ptr_, host, bytes);
    cudaMemLocation gpu{};
    gpu.type = cudaMemLocationTypeDevice;
    gpu.id = device;
    EDO_CUDA_TRY(cudaMemAdvise(ptr_, bytes, cudaMemAdviseSetReadMostly, gpu));
    EDO_CUDA_TRY(cudaMemAdvise(ptr_, bytes, cudaMemAdviseSetPreferredLocation, gpu));
    EDO_CUDA_TRY(cudaMemPrefetchAsync(ptr_, bytes, gpu, 0, 0));
    EDO_CUDA_TRY(cudaDeviceSynchronize());
  } catch (...) {
    (void)cudaFree(ptr_);
    throw;
  }
}
ManagedCopy::~ManagedCopy() {
  if (ptr_) (void)cudaFree(ptr_);
}

void check_cuda_launch(const char* what, std::source_location where) {
  detail::cuda_check(cudaGetLastError(), (std::string("kernel ") + what).c_str(), where.file_name(),
                     static_cast<int>(where.line()));
}
#else
DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { require_device(Device::cuda); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const void*, size_t) { require_device(Device::cuda); }
void DeviceBuffer::download(void*, size_t) const { require_device(Device::cuda); }
void check_cuda_launch(const char*, std::source_location) { require_device(Device::cuda); }
PinnedHostView::PinnedHostView(const void*, size_t) { require_device(Device::cuda); }
PinnedHostView::~PinnedHostView() = default;
ManagedCopy::ManagedCopy(const void*, size_t) { require_device(Device::cuda); }
ManagedCopy::~ManagedCopy() = default;
#endif

Device select_device(std::string_view request) {
  if (request == "cpu") return Device::cpu;
  if (request == "auto") return cuda_available() ? Device::cuda : Device::cpu;
  if (request == "cuda") {
    require_device(Device::cuda, "--device cuda");
    return Device::cuda;
  }
  EDO_USAGE_FAIL("--device '{}': expected auto, cpu or cuda", request);
}

}  // namespace edo
