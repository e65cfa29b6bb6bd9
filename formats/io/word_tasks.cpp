// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/word_tasks.hpp>
#include "text_lines.hpp"

#include <charconv>
#include <cmath>

namespace edo::io {

namespace {

// Longest word kept (longer lines are malformed): the vocabulary's limit.
constexpr size_t kMaxWordBytes = 4096;

std::vector<std::string_view> split_fields(std::string_view line, bool commas) {
  std::vector<std::string_view> out;
  const auto sep = [&](char c) { return is_text_space(c) || (commas && c == ','); };
  size_t i = 0;
  for (std::string_view f = next_text_field(line, i, sep); !f.empty(); f = next_text_field(line, i, sep))
    out.push_back(f);
  return out;
}

bool parse_score(std::string_view s, double& v) {
  if (s.size() > 1 && s.front() == '+') s.remove_prefix(1);
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(v);
}

// The whole of a small text file (word-task files are kilobytes).
std::string_view file_text(const MappedFile& f) { return {reinterpret_cast<const char*>(f.data()), f.size()}; }

}  // namespace

AnalogySet parse_analogies(std::string_view text, const std::string& display, bool skip_bad) {
  AnalogySet out;
  uint32_t section = 0;
  bool have_section = false;
  for_each_text_line(text, [&](uint64_t line_no, std::string_view line) {
    const auto fields = split_fields(line, false);
    if (fields.empty()) return;
    if (fields[0].starts_with(':')) {
      std::string name(trim_text(line.substr(line.find(':') + 1)));
      if (name.empty()) name = "(unnamed)";
      out.sections.push_back(name);
      section = static_cast<uint32_t>(out.sections.size() - 1);
      have_section = true;
      return;
    }
    bool long_word = false;
    for (std::string_view f : fields) long_word |= f.size() > kMaxWordBytes;
    if (fields.size() != 4 || long_word) {
      if (skip_bad) {
        ++out.bad_lines;
        return;
      }
      if (long_word) EDO_FAIL("{}: line {}: a word longer than {} bytes", display, line_no, kMaxWordBytes);
      EDO_FAIL("{}: line {}: expected four words 'a b c d' or ': section', got {} fields", display, line_no,
               fields.size());
    }
    if (!have_section) {
      out.sections.push_back("(none)");
      section = static_cast<uint32_t>(out.sections.size() - 1);
      have_section = true;
    }
    out.questions.push_back(
        {std::string(fields[0]), std::string(fields[1]), std::string(fields[2]), std::string(fields[3]), section});
  });
  if (out.questions.empty()) EDO_FAIL("{}: no analogy questions ('a b c d' lines)", display);
  return out;
}

WordPairSet parse_word_pairs(std::string_view text, const std::string& display, bool skip_bad) {
  WordPairSet out;
  size_t score_column = 2;
  bool first = true;
  for_each_text_line(text, [&](uint64_t line_no, std::string_view line) {
    const auto fields = split_fields(line, true);
    if (fields.empty()) return;
    double score = 0;
    if (first && (fields.size() < 3 || !parse_score(fields[2], score))) {
      first = false;
      for (size_t i = 2; i < fields.size(); ++i)  // the two words come first
        if (fields[i] == "SimLex999") score_column = i;
      return;  // a header
    }
    first = false;
    bool long_word = fields[0].size() > kMaxWordBytes || (fields.size() > 1 && fields[1].size() > kMaxWordBytes);
    if (fields.size() <= score_column || long_word || !parse_score(fields[score_column], score)) {
      if (skip_bad) {
        ++out.bad_lines;
        return;
      }
      if (long_word) EDO_FAIL("{}: line {}: a word longer than {} bytes", display, line_no, kMaxWordBytes);
      if (fields.size() <= score_column)
        EDO_FAIL("{}: line {}: expected 'word1 word2 score', got {} fields", display, line_no, fields.size());
      EDO_FAIL("{}: line {}: score {} is not a finite number", display, line_no, quoted(fields[score_column]));
    }
    out.pairs.push_back({std::string(fields[0]), std::string(fields[1]), score});
  });
  if (out.pairs.empty()) EDO_FAIL("{}: no word pairs ('word1 word2 score' lines)", display);
  return out;
}

AnalogySet read_analogies(const std::string& path, bool skip_bad) {
  const MappedFile f(path);
  return parse_analogies(file_text(f), path, skip_bad);
}

WordPairSet read_word_pairs(const std::string& path, bool skip_bad) {
  const MappedFile f(path);
  return parse_word_pairs(file_text(f), path, skip_bad);
}

}  // namespace edo::io
