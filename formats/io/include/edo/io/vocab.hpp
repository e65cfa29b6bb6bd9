// SPDX-License-Identifier: Apache-2.0
// A vocabulary file: one token a line, line i naming row i.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace edo::io {

// Reads exactly `rows` lines (a trailing newline is optional; a UTF-8 byte
// order mark before the first word is dropped); error naming the file when
// the count differs, a line is longer than 4096 bytes or a word repeats.
std::vector<std::string> read_vocab(const std::string& path, uint64_t rows);

// A vocabulary names each row once (words are how rows are found): an error
// naming `display`, the line that repeats a word and the line it repeats.
void check_unique_words(const std::vector<std::string>& words, const std::string& display);

class Container;
// The words a .edo stores (docs/FORMAT.md 9.7): manifest "vocab" names a
// section of `rows` words, each followed by '\n'. nullopt when the file has
// none; an error naming the file when the key or section is malformed (a
// word count other than the table's rows, a missing final newline, a word of
// more than 4096 bytes).
std::optional<std::vector<std::string>> read_vocab_section(const Container& c);
// The section's bytes for `words`; an error when a word holds '\n' or is
// longer than 4096 bytes (writers check repeats first: check_unique_words).
std::string vocab_section_bytes(const std::vector<std::string>& words);
inline constexpr const char* kVocabSection = "vocab";

}  // namespace edo::io
