// SPDX-License-Identifier: Apache-2.0
// word2vec and fastText vector files: a table plus its vocabulary.
//
// Text (word2vec's text form, fastText's .vec): a header line "ROWS DIM",
// then ROWS lines "word v1 ... vDIM" separated by spaces or tabs. Without
// the header (GloVe's own text files: the first line has more than two
// fields) DIM is the first line's fields minus one and ROWS its lines.
// Binary (word2vec's -binary 1): the header line "ROWS DIM\n", then for each
// row the word, one space, DIM little-endian float32 and (usually) '\n'.
//
// Read as x.vec or x.txt (text: checked to start like word2vec or GloVe
// text) and x.bin (binary; fastText's .bin models are refused by their
// magic). Opening reads the file once to find where each row starts and to
// keep the words (the table's vocabulary); rows are then parsed a block at a
// time from the mapping. Errors name the file and line (text) or row
// (binary): a row count or width that disagrees with the header, a bad
// number, an empty word. A word written twice is kept (the table is still a
// table); the word tasks refuse such a vocabulary when they run.
#pragma once

#include <edo/io/table.hpp>

#include <memory>
#include <string>
#include <vector>

namespace edo::io {

bool is_word2vec_path(const std::string& path);
// Binary when `path` ends in .bin, text otherwise.
std::unique_ptr<TableReader> open_word2vec(const std::string& path, const std::string& display);
std::unique_ptr<TableReader> open_word2vec(const std::string& path, const std::string& display, bool binary);
// Writes rows with `words` (one a row: 1 to 4096 bytes, no spaces or line
// breaks, else an error naming the word) as word2vec text or binary, through
// a temporary name renamed by commit(). Text values are the shortest decimal
// that reads back to the same float32.
std::unique_ptr<TableWriter> create_word2vec(const std::string& path, uint64_t rows, uint64_t dim,
                                             std::vector<std::string> words, bool binary);

}  // namespace edo::io
