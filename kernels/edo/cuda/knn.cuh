// SPDX-License-Identifier: Apache-2.0
// cuBLAS inner products for exact k-NN (lib/eval/knn.cpp does the selection
// on the host). Host launchers only, so g++ can include this header.
// Failures throw edo::Error (EDO_CUDA_TRY, edo/cuda_check.hpp).
#pragma once

#include <edo/device.hpp>

#include <cstdint>
#include <memory>

namespace edo::cuda {

class CublasHandle;  // kernels/knn.cu

// Holds the query set on the GPU and computes query x row dot products for
// one uploaded block of database rows at a time. Every device allocation and
// the cuBLAS handle are owned members, so nothing leaks when a step throws.
class DeviceDots {
 public:
  // Uploads nq x dim queries to device 0. Throws without a GPU.
  DeviceDots(const float* queries, uint64_t nq, uint64_t dim);
  ~DeviceDots();
  DeviceDots(const DeviceDots&) = delete;
  DeviceDots& operator=(const DeviceDots&) = delete;

  // Replaces the resident database block with `count` rows of dim floats.
  void upload_rows(const float* rows, uint64_t count);
  // out[i * row_count + j] = query[q_begin + i] . row[row_begin + j] (of the
  // resident block), for i < q_count, j < row_count; `out` is host memory.
  void dots(uint64_t q_begin, uint64_t q_count, uint64_t row_begin, uint64_t row_count, float* out);

 private:
  uint64_t nq_ = 0;
  uint64_t dim_ = 0;
  uint64_t rows_ = 0;
  std::unique_ptr<CublasHandle> handle_;
  std::unique_ptr<DeviceBuffer> queries_;
  std::unique_ptr<DeviceBuffer> rows_buffer_;  // grows, never shrinks
  std::unique_ptr<DeviceBuffer> scores_;       // likewise
};

}  // namespace edo::cuda
