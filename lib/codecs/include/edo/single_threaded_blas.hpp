// SPDX-License-Identifier: Apache-2.0
// OpenBLAS's result depends on its thread count, and its threads fight edo's
// OpenMP threads for the cores: while edo's own threads each run one GEMM,
// OpenBLAS is pinned to one thread, and the setting is put back afterwards.
// The setting is global, so only code outside any parallel region changes
// it: two threads saving and restoring it at once could leave it at one.
#pragma once

#include <cblas.h>
#include <omp.h>

namespace edo::detail {

class SingleThreadedBlas {
 public:
  SingleThreadedBlas() : owner_(omp_in_parallel() == 0), saved_(owner_ ? openblas_get_num_threads() : 0) {
    if (owner_) openblas_set_num_threads(1);
  }
  ~SingleThreadedBlas() {
    if (owner_) openblas_set_num_threads(saved_);
  }
  SingleThreadedBlas(const SingleThreadedBlas&) = delete;
  SingleThreadedBlas& operator=(const SingleThreadedBlas&) = delete;

 private:
  bool owner_;
  int saved_;
};

}  // namespace edo::detail
