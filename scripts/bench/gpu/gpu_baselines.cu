// SPDX-License-Identifier: Apache-2.0
// Ceilings for edo_bench_gpu (see gpu_baselines.hpp). Kept apart from the
// benchmark's host code because fmt does not compile under nvcc.
#include "gpu_baselines.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <stdexcept>
#include <string>

namespace edo::bench::gpu {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string("cuda: ") + what + ": " + cudaGetErrorString(e));
}

namespace {

__global__ void probe(int* out) {
  if (out) *out = 1;
}

// Rows of `width` elements (float, or float4 for 16-byte loads) by id.
template <class T>
__global__ void gather_rows_of(const T* __restrict__ table, const uint64_t* __restrict__ ids, size_t n, size_t width,
                               T* __restrict__ out) {
  const size_t total = n * width;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < total; i += size_t{gridDim.x} * blockDim.x) {
    const size_t r = i / width;
    out[i] = table[ids[r] * width + i % width];
  }
}

int blocks_for(size_t items) {
  constexpr size_t kMax = 65535 * 8;
  const size_t b = (items + 255) / 256;
  return static_cast<int>(b == 0 ? 1 : b < kMax ? b : kMax);
}

struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
  std::string file;
};

// Same search as kernels/knn.cu: the soname of the cuBLAS these headers
// belong to, on the loader's path first, then in the toolkit's library
// directory this was built with.
const CublasApi& cublas() {
  static const CublasApi api = [] {
    const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef EDO_CUDA_LIBRARY_DIR
    if (!lib) lib = dlopen((std::string(EDO_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
#endif
    if (!lib) throw std::runtime_error("cublas: cannot load " + name + ": " + dlerror());
    CublasApi a;
    auto symbol = [&](const char* sym) {
      void* f = dlsym(lib, sym);
      if (!f) throw std::runtime_error("cublas: " + name + " has no " + sym);
      return f;
    };
    a.create = reinterpret_cast<decltype(a.create)>(symbol("cublasCreate_v2"));
    a.destroy = reinterpret_cast<decltype(a.destroy)>(symbol("cublasDestroy_v2"));
    a.sgemm = reinterpret_cast<decltype(a.sgemm)>(symbol("cublasSgemm_v2"));
    Dl_info info{};
    a.file = dladdr(reinterpret_cast<void*>(a.sgemm), &info) && info.dli_fname ? info.dli_fname : name;
    return a;
  }();
  return api;
}

}  // namespace

ProbeResult probe_kernel_image() {
  ProbeResult r;
  cudaFuncAttributes attr{};
  const cudaError_t fe = cudaFuncGetAttributes(&attr, probe);
  if (fe == cudaSuccess) {
    r.binary_version = attr.binaryVersion;
    r.ptx_version = attr.ptxVersion;
  }
  probe<<<1, 1>>>(nullptr);
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  if (e == cudaSuccess && fe != cudaSuccess) e = fe;
  r.ok = e == cudaSuccess;
  if (!r.ok) {
    r.error = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
    (void)cudaGetLastError();
  }
  return r;
}

void gather_rows(const float* table, const uint64_t* ids, size_t n, size_t dim, float* out) {
  if (n == 0) return;
  const bool aligned =
      dim % 4 == 0 && reinterpret_cast<uintptr_t>(table) % 16 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
  if (aligned) {
    gather_rows_of<<<blocks_for(n * dim / 4), 256>>>(reinterpret_cast<const float4*>(table), ids, n, dim / 4,
                                                     reinterpret_cast<float4*>(out));
  } else {
    gather_rows_of<<<blocks_for(n * dim), 256>>>(table, ids, n, dim, out);
  }
  check(cudaGetLastError(), "gather_rows launch");
}

Sgemm::Sgemm() {
  cublasHandle_t h = nullptr;
  if (cublas().create(&h) != CUBLAS_STATUS_SUCCESS) throw std::runtime_error("cublas: cublasCreate failed");
  handle_ = h;
  library_ = cublas().file;
}

Sgemm::~Sgemm() {
  if (handle_) cublas().destroy(static_cast<cublasHandle_t>(handle_));
}

void Sgemm::run(int m, int n, int k, const float* a, const float* b, float* c) {
  const float one = 1.0f, zero = 0.0f;
  const cublasStatus_t st = cublas().sgemm(static_cast<cublasHandle_t>(handle_), CUBLAS_OP_T, CUBLAS_OP_N, m, n, k,
                                           &one, a, k, b, k, &zero, c, m);
  if (st != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error("cublas: cublasSgemm failed: status " + std::to_string(static_cast<int>(st)));
  check(cudaDeviceSynchronize(), "sgemm");
}

}  // namespace edo::bench::gpu
