// SPDX-License-Identifier: Apache-2.0
// Launch geometry shared by the kernels: a grid-stride loop over `items`
// with kThreads per block and a bounded number of blocks.
#pragma once

#include <cstddef>

namespace edo::cuda {

inline constexpr int kThreads = 256;

inline int grid_blocks(size_t items) {
  constexpr size_t kMaxBlocks = 65535 * 8;
  const size_t b = (items + kThreads - 1) / kThreads;
  return static_cast<int>(b == 0 ? 1 : b < kMaxBlocks ? b : kMaxBlocks);
}

}  // namespace edo::cuda
