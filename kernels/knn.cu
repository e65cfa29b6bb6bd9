#include <edo/cuda/knn.cuh>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <climits>
#include <stdexcept>
#include <string>

namespace edo::cuda {

namespace {

// fmt 9's headers do not compile under nvcc, so edo/error.hpp cannot be
// included here: failures leave as std::runtime_error and lib/knn.cpp turns
// them into edo::Error.
[[noreturn]] void fail(const std::string& message, int line) {
  throw std::runtime_error(message + " (" + __FILE__ + ":" + std::to_string(line) + ")");
}

void check_cuda(cudaError_t err, const char* what) {
  if (err != cudaSuccess) fail(std::string("cuda: ") + what + ": " + cudaGetErrorString(err), __LINE__);
}

void check_cublas(cublasStatus_t st, const char* what) {
  if (st != CUBLAS_STATUS_SUCCESS)
    fail(std::string("cublas: ") + what + ": status " + std::to_string(static_cast<int>(st)), __LINE__);
}

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
    if (!lib) fail("cublas: cannot load " + name + ": " + dlerror(), __LINE__);
    Cublas a;
    auto symbol = [&](const char* sym) {
      void* f = dlsym(lib, sym);
      if (!f) fail(std::string("cublas: ") + name + " has no " + sym, __LINE__);
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
    fail(std::string("cublas: ") + what + " " + std::to_string(v) + " exceeds the int range", __LINE__);
  return static_cast<int>(v);
}

}  // namespace

int knn_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();  // clear the sticky error so later calls start clean
    return 0;
  }
  return n;
}

DeviceDots::DeviceDots(const float* queries, uint64_t nq, uint64_t dim) : nq_(nq), dim_(dim) {
  if (knn_device_count() == 0) fail("cuda: no CUDA device is available", __LINE__);
  check_cuda(cudaSetDevice(0), "cudaSetDevice");
  cublasHandle_t h = nullptr;
  check_cublas(cublas().create(&h), "cublasCreate");
  handle_ = h;
  const size_t bytes = nq * dim * sizeof(float);
  if (bytes > 0) {
    check_cuda(cudaMalloc(&d_queries_, bytes), "cudaMalloc(queries)");
    check_cuda(cudaMemcpy(d_queries_, queries, bytes, cudaMemcpyHostToDevice), "upload queries");
  }
}

DeviceDots::~DeviceDots() {
  cudaFree(d_queries_);
  cudaFree(d_rows_);
  cudaFree(d_out_);
  if (handle_) cublas().destroy(static_cast<cublasHandle_t>(handle_));
}

void DeviceDots::upload_rows(const float* rows, uint64_t count) {
  if (count > row_capacity_) {
    cudaFree(d_rows_);
    d_rows_ = nullptr;
    check_cuda(cudaMalloc(&d_rows_, count * dim_ * sizeof(float)), "cudaMalloc(rows)");
    row_capacity_ = count;
  }
  if (count > 0)
    check_cuda(cudaMemcpy(d_rows_, rows, count * dim_ * sizeof(float), cudaMemcpyHostToDevice), "upload rows");
  rows_ = count;
}

void DeviceDots::dots(uint64_t q_begin, uint64_t q_count, uint64_t row_begin, uint64_t row_count, float* out) {
  if (q_begin + q_count > nq_ || row_begin + row_count > rows_)
    fail("cuda: dot tile outside the resident data", __LINE__);
  if (q_count == 0 || row_count == 0) return;
  const uint64_t elems = q_count * row_count;
  if (elems > out_capacity_) {
    cudaFree(d_out_);
    d_out_ = nullptr;
    check_cuda(cudaMalloc(&d_out_, elems * sizeof(float)), "cudaMalloc(scores)");
    out_capacity_ = elems;
  }
  // Row-major X (rows x d) is column-major d x rows, likewise Q; the
  // column-major product X^T Q (rows x q) is row-major q x rows: out's layout.
  const float one = 1.0f, zero = 0.0f;
  const int m = as_blas_int(row_count, "rows");
  const int n = as_blas_int(q_count, "queries");
  const int kd = as_blas_int(dim_, "dim");
  check_cublas(cublas().sgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, m, n, kd, &one,
                              d_rows_ + row_begin * dim_, kd, d_queries_ + q_begin * dim_, kd, &zero, d_out_, m),
               "cublasSgemm");
  check_cuda(cudaMemcpy(out, d_out_, elems * sizeof(float), cudaMemcpyDeviceToHost), "download scores");
}

}  // namespace edo::cuda
