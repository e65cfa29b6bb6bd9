#include <edo/device.hpp>
#include <edo/error.hpp>

#ifdef EDO_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

namespace edo {

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

void require_device(Device d) {
  if (d != Device::cuda) return;
#ifdef EDO_HAVE_CUDA
  if (cuda_device_count() == 0) EDO_FAIL("--device cuda: no CUDA GPU is available (the driver reports none)");
#else
  EDO_FAIL("--device cuda: this edo was built without CUDA");
#endif
}

#ifdef EDO_HAVE_CUDA
static void check_cuda(cudaError_t e, const char* what, size_t bytes) {
  if (e != cudaSuccess) EDO_FAIL("cuda: {} of {} bytes failed: {}", what, bytes, cudaGetErrorString(e));
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  require_device(Device::cuda);
  if (bytes) check_cuda(cudaMalloc(&ptr_, bytes), "cudaMalloc", bytes);
}
DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}
void DeviceBuffer::upload(const void* host, size_t bytes) {
  EDO_CHECK(bytes <= bytes_, "cuda: upload of {} bytes into a buffer of {}", bytes, bytes_);
  if (bytes) check_cuda(cudaMemcpy(ptr_, host, bytes, cudaMemcpyHostToDevice), "upload", bytes);
}
void DeviceBuffer::download(void* host, size_t bytes) const {
  EDO_CHECK(bytes <= bytes_, "cuda: download of {} bytes from a buffer of {}", bytes, bytes_);
  if (bytes) check_cuda(cudaMemcpy(host, ptr_, bytes, cudaMemcpyDeviceToHost), "download", bytes);
}
void check_cuda_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) EDO_FAIL("cuda: kernel {} failed: {}", what, cudaGetErrorString(e));
}
#else
DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) { require_device(Device::cuda); }
DeviceBuffer::~DeviceBuffer() = default;
void DeviceBuffer::upload(const void*, size_t) { require_device(Device::cuda); }
void DeviceBuffer::download(void*, size_t) const { require_device(Device::cuda); }
void check_cuda_launch(const char*) { require_device(Device::cuda); }
#endif

Device select_device(std::string_view request) {
  if (request == "cpu") return Device::cpu;
  if (request == "auto") return cuda_available() ? Device::cuda : Device::cpu;
  if (request == "cuda") {
    require_device(Device::cuda);
    return Device::cuda;
  }
  EDO_USAGE_FAIL("--device '{}': expected auto, cpu or cuda", request);
}

}  // namespace edo
