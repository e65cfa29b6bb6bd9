// cuBLAS inner products for exact k-NN (lib/knn.cpp does the selection on
// the host). Host launchers only, so g++ can include this header. Failures
// throw std::runtime_error (this file's .cu cannot include fmt).
#pragma once

#include <cstdint>

namespace edo::cuda {

// Number of CUDA devices the driver reports; 0 when there is no driver, no
// device, or the runtime fails to initialise.
int knn_device_count();

// Holds the query set on the GPU and computes query x row dot products for
// one uploaded block of database rows at a time.
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
  uint64_t row_capacity_ = 0;
  uint64_t rows_ = 0;
  uint64_t out_capacity_ = 0;
  float* d_queries_ = nullptr;
  float* d_rows_ = nullptr;
  float* d_out_ = nullptr;
  void* handle_ = nullptr;  // cublasHandle_t
};

}  // namespace edo::cuda
