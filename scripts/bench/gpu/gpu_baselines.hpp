// SPDX-License-Identifier: Apache-2.0
// The ceilings edo_bench_gpu measures its figures against, in raw CUDA
// (gpu_baselines.cu): a plain row gather, cuBLAS sgemm (opened with dlopen,
// like kernels/knn.cu) and a probe of the kernel image this build carries.
// Host functions only, so g++ can include this header; device pointers;
// failures throw std::runtime_error.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace edo::bench::gpu {

// Throws std::runtime_error("cuda: WHAT: CUDA's message") unless e is cudaSuccess.
void check(cudaError_t e, const char* what);

// What the device and the binary say about each other.
struct ProbeResult {
  bool ok = false;         // a kernel of this binary ran on device 0
  std::string error;       // why not (CUDA's message), when !ok
  int binary_version = 0;  // cudaFuncAttributes::binaryVersion of the probe (90 = sm_90), 0 when unknown
  int ptx_version = 0;     // cudaFuncAttributes::ptxVersion
};
// Launches a trivial kernel on the current device and reports whether this
// binary holds code it can run (no "no kernel image" error).
ProbeResult probe_kernel_image();

// out[i * dim + j] = table[ids[i] * dim + j] for i < n: the plain gather a
// lookup is compared with. Vectorised (16-byte) when dim % 4 == 0.
void gather_rows(const float* table, const uint64_t* ids, size_t n, size_t dim, float* out);

// Column-major C (m x n) = A^T (A: k x m) * B (k x n), fp32, through
// libcublas.so.<major> opened with dlopen; the shape kernels/knn.cu runs
// (rows x dim database against dim x queries). Synchronous.
class Sgemm {
 public:
  Sgemm();
  ~Sgemm();
  Sgemm(const Sgemm&) = delete;
  Sgemm& operator=(const Sgemm&) = delete;
  void run(int m, int n, int k, const float* a, const float* b, float* c);
  const std::string& library() const { return library_; }  // the file dlopen found

 private:
  void* handle_ = nullptr;
  std::string library_;
};

}  // namespace edo::bench::gpu
