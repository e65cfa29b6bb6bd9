#include <edo/device.hpp>
#include <edo/error.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda_check.hpp>
#endif

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

void require_device(Device d) {
  if (d != Device::cuda) return;
#ifdef EDO_HAVE_CUDA
  if (cuda_device_count() == 0) EDO_FAIL("--device cuda: no CUDA GPU is available (the driver reports none)");
#else
  EDO_FAIL("--device cuda: this edo was built without CUDA");
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
