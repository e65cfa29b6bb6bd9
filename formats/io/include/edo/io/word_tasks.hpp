// SPDX-License-Identifier: Apache-2.0
// Word-task files for edo-eval (docs/EVAL.md, "Word tasks").
//
// Analogies, word2vec's questions-words.txt layout: lines ": SECTION" open a
// section; every other non-blank line holds four words "a b c d" (a is to b
// as c is to d), separated by spaces or tabs. Questions before the first
// section header belong to a section named "(none)".
//
// Word pairs (WordSim-353, SimLex-999): '#' starts a comment; each line
// holds "word1 word2 score" separated by tabs, spaces or commas. A first
// line whose score field is not a number is a header: when one of its
// columns is named SimLex999 (the original SimLex-999 file) the score is
// read from that column, else from the third.
//
// A malformed line is an error naming the file and line, or, with
// `skip_bad`, counted in bad_lines and left out. Words are kept as written.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edo::io {

struct AnalogyQuestion {
  std::string a, b, c, d;
  uint32_t section = 0;
};

struct AnalogySet {
  std::vector<std::string> sections;
  std::vector<AnalogyQuestion> questions;
  uint64_t bad_lines = 0;
};

struct WordPair {
  std::string a, b;
  double score = 0;
};

struct WordPairSet {
  std::vector<WordPair> pairs;
  uint64_t bad_lines = 0;
};

AnalogySet parse_analogies(std::string_view text, const std::string& display, bool skip_bad);
AnalogySet read_analogies(const std::string& path, bool skip_bad);
WordPairSet parse_word_pairs(std::string_view text, const std::string& display, bool skip_bad);
WordPairSet read_word_pairs(const std::string& path, bool skip_bad);

}  // namespace edo::io
