// SPDX-License-Identifier: Apache-2.0
#include <edo/cuda/knn.cuh>
#include <edo/cuda_check.hpp>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <climits>
#include <string>

namespace edo::detail {
namespace {

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
      return "unknown cuBLAS status";
  }
}

}  // namespace

// Beside the cudaError_t overload of edo/cuda_check.hpp, so that EDO_CUDA_TRY
// checks cuBLAS calls too.
inline void cuda_check(cublasStatus_t s, const char* call, const char* file, int line) {
  if (s != CUBLAS_STATUS_SUCCESS) cuda_fail("cublas", cublas_status_name(s), call, file, line);
}

}  // namespace edo::detail

namespace edo::cuda {

namespace {

// cuBLAS is opened on first use rather than linked: loading it (with
// cublasLt) costs every process about 0.17 s and 220 MB of resident memory at
// start-up, whether or not it ever touches a GPU.
struct Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};

const Cublas& cublas() {
  static const Cublas api = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef EDO_CUDA_LIBRARY_DIR
    if (!lib) lib = dlopen((std::string(EDO_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) EDO_CUDA_FAIL("cublas: cannot load " + name + ": " + dlerror());
    Cublas a;
    auto symbol = [&](const char* sym) {
      void* f = dlsym(lib, sym);
      if (!f) EDO_CUDA_FAIL("cublas: " + name + " has no " + sym);
      return f;
    };
    a.create = reinterpret_cast<decltype(a.create)>(symbol("cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(symbol("cublasDestroy_v2"));
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(symbol("cublasSgemm_v2"));
    return a;  // the library stays loaded for the life of the process
  }();
  return api;
}

int as_blas_int(uint64_t v, const char* what) {
  if (v > static_cast<uint64_t>(INT_MAX))
    EDO_CUDA_FAIL(std::string("cublas: ") + what + " " + std::to_string(v) + " exceeds the int range");
  return static_cast<int>(v);
}

// Grows `buffer` to at least `bytes` (its contents are not kept).
void reserve(std::unique_ptr<DeviceBuffer>& buffer, size_t bytes) {
  if (!buffer || buffer->bytes() < bytes) {
    buffer.reset();  // free first: the old and new buffers need not fit together
    buffer = std::make_unique<DeviceBuffer>(bytes);
  }
}

}  // namespace

class CublasHandle {
 public:
  CublasHandle() { EDO_CUDA_TRY(cublas().create(&h_)); }
  ~CublasHandle() {
    if (h_) (void)cublas().destroy(h_);
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

DeviceDots::DeviceDots(const float* queries, uint64_t nq, uint64_t dim) : nq_(nq), dim_(dim) {
  require_device(Device::cuda);
  EDO_CUDA_TRY(cudaSetDevice(0));
  handle_ = std::make_unique<CublasHandle>();
  queries_ = std::make_unique<DeviceBuffer>(nq * dim * sizeof(float));
  queries_->upload(queries, queries_->bytes());
}

DeviceDots::~DeviceDots() = default;

void DeviceDots::upload_rows(const float* rows, uint64_t count) {
  const size_t bytes = count * dim_ * sizeof(float);
  reserve(rows_buffer_, bytes);
  rows_buffer_->upload(rows, bytes);
  rows_ = count;
}

void DeviceDots::dots(uint64_t q_begin, uint64_t q_count, uint64_t row_begin, uint64_t row_count, float* out) {
  if (q_begin + q_count > nq_ || row_begin + row_count > rows_)
    EDO_CUDA_FAIL("cuda: dot tile outside the resident data");
  if (q_count == 0 || row_count == 0) return;
  const size_t bytes = q_count * row_count * sizeof(float);
  reserve(scores_, bytes);
  // Row-major X (rows x d) is column-major d x rows, likewise Q; the
  // column-major product X^T Q (rows x q) is row-major q x rows: out's layout.
  const float one = 1.0f, zero = 0.0f;
  const int m = as_blas_int(row_count, "rows");
  const int n = as_blas_int(q_count, "queries");
  const int kd = as_blas_int(dim_, "dim");
  EDO_CUDA_TRY(cublas().sgemm(handle_->get(), CUBLAS_OP_T, CUBLAS_OP_N, m, n, kd, &one,
                              rows_buffer_->as<float>() + row_begin * dim_, kd, queries_->as<float>() + q_begin * dim_,
                              kd, &zero, scores_->as<float>(), m));
  scores_->download(out, bytes);
}

}  // namespace edo::cuda
