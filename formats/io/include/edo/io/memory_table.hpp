// SPDX-License-Identifier: Apache-2.0
// Rows already in memory, read as a table: a seeded sample scored by the
// evaluation engine (evaluate() takes tables) without writing it to a file.
#pragma once

#include <edo/io/table.hpp>
#include <edo/matrix.hpp>

#include <cstdint>
#include <string>

namespace edo::io {

class MemoryTable final : public TableReader {
 public:
  // `rows` must outlive the table; `name` names it in messages.
  MemoryTable(std::string name, MatrixView rows);
  const float* rows_f32(uint64_t begin, uint64_t count) override;

 private:
  const float* data_;
};

}  // namespace edo::io
