// SPDX-License-Identifier: Apache-2.0
// The one check of a CUDA runtime or cuBLAS call: EDO_CUDA_TRY(expr) throws
// edo::Error naming the call, the library's error text and the caller's
// file and line. Only for code built with CUDA (.cu files, and .cpp files
// inside #ifdef EDO_HAVE_CUDA).
//
// fmt does not compile under nvcc, so this header cannot include
// edo/error.hpp: the message is built and thrown out of line, in
// lib/core/device.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace edo::detail {

// Throws edo::Error("LIBRARY: CALL failed: STATUS (FILE:LINE)") recording
// file and line; CALL is the called function, its arguments left out.
[[noreturn]] void cuda_fail(const char* library, const char* status, const char* call, const char* file, int line);
// Throws edo::Error(message) recording file and line: a failure of .cu code
// that is not a library status.
[[noreturn]] void cuda_error(const std::string& message, const char* file, int line);

inline void cuda_check(cudaError_t e, const char* call, const char* file, int line) {
  if (e == cudaSuccess) return;
  // Clear a non-sticky error (say, a failed allocation) so that the next
  // check_cuda_launch does not report it again as a kernel's failure.
  (void)cudaGetLastError();
  cuda_fail("cuda", cudaGetErrorString(e), call, file, line);
}

}  // namespace edo::detail

// Runs a CUDA call returning cudaError_t (or cublasStatus_t, where
// edo/cuda/cublas.cuh is included) and throws edo::Error unless it succeeded.
#define EDO_CUDA_TRY(expr) ::edo::detail::cuda_check((expr), #expr, __FILE__, __LINE__)
// Throws edo::Error(message) from .cu code, naming the caller's file and line.
#define EDO_CUDA_FAIL(message) ::edo::detail::cuda_error((message), __FILE__, __LINE__)
