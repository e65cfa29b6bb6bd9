// SPDX-License-Identifier: Apache-2.0
// Rows in memory as a table (edo/io/memory_table.hpp).
#include <edo/io/memory_table.hpp>

namespace edo::io {

MemoryTable::MemoryTable(std::string name, MatrixView rows) : TableReader(std::move(name), "memory"), data_(rows.data) {
  rows_ = rows.rows;
  dim_ = rows.dim;
}

const float* MemoryTable::rows_f32(uint64_t begin, uint64_t count) {
  check_range(begin, count);
  return data_ + begin * dim_;
}

}  // namespace edo::io
