// A vocabulary file: one token a line, line i naming row i.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::io {

// Reads exactly `rows` lines (a trailing newline is optional); error naming the
// file when the count differs or a line is longer than 4096 bytes.
std::vector<std::string> read_vocab(const std::string& path, uint64_t rows);

}  // namespace edo::io
