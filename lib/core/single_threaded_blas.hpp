// OpenBLAS's result depends on its thread count, and its threads fight edo's
// OpenMP threads for the cores: while edo's own threads each run one GEMM,
// OpenBLAS is pinned to one thread, and the setting is put back afterwards.
#pragma once

#include <cblas.h>

namespace edo::detail {

class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : saved_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~SingleThreadedBlas() { openblas_set_num_threads(saved_); }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  int saved_;
};

}  // namespace edo::detail
