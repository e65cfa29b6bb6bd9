// SPDX-License-Identifier: Apache-2.0
// Line-oriented text inputs (frequency files, id lists): the one way they
// split lines, drop comments and quote a token in an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace edo::io {

inline bool is_text_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// A token quoted for an error message: short, and printable whatever the file holds.
inline std::string quoted(std::string_view token) {
  constexpr size_t kMax = 32;
  std::string s = "'";
  for (size_t i = 0; i < token.size() && i < kMax; ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    s.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  if (token.size() > kMax) s += "...";
  return s + "'";
}

// The field of `line` that starts at or after `i` (empty when none is
// left), `i` moved past it; fields are separated by runs of `is_sep`.
template <class Sep = bool (*)(char)>
std::string_view next_text_field(std::string_view line, size_t& i, Sep is_sep = is_text_space) {
  while (i < line.size() && is_sep(line[i])) ++i;
  const size_t start = i;
  while (i < line.size() && !is_sep(line[i])) ++i;
  return line.substr(start, i - start);
}

// `s` without leading and trailing spaces.
inline std::string_view trim_text(std::string_view s) {
  while (!s.empty() && is_text_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_text_space(s.back())) s.remove_suffix(1);
  return s;
}

// `text` without the UTF-8 byte order mark some editors put first: it is
// not part of the first token.
inline std::string_view skip_utf8_bom(std::string_view text) {
  return text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text;
}

// fn(line number from 1, the line up to its first '#') for every line of `text`.
template <class Fn>
void for_each_text_line(std::string_view text, Fn&& fn) {
  text = skip_utf8_bom(text);
  uint64_t line_no = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (const auto hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    fn(line_no, line);
  }
}

}  // namespace edo::io
