// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/vocab.hpp>

#include <cstring>
#include <fstream>
#include <string_view>
#include <unordered_map>

namespace edo::io {

std::vector<std::string> read_vocab(const std::string& path, uint64_t rows) {
  std::ifstream f(path, std::ios::binary);
  if (!f) EDO_FAIL("{}: cannot open", path);
  std::vector<std::string> words;
  words.reserve(rows);
  std::string line;
  while (std::getline(f, line)) {
    if (words.size() == rows) EDO_FAIL("{}: more than {} lines (one token a row)", path, rows);
    if (line.size() > 4096) EDO_FAIL("{}:{}: line longer than 4096 bytes", path, words.size() + 1);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (words.empty() && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);  // a UTF-8 byte order mark
    words.push_back(std::move(line));
  }
  if (words.size() != rows) EDO_FAIL("{}: {} lines for {} rows", path, words.size(), rows);
  check_unique_words(words, path);
  return words;
}

void check_unique_words(const std::vector<std::string>& words, const std::string& display) {
  std::unordered_map<std::string_view, uint64_t> seen;
  seen.reserve(words.size());
  for (uint64_t r = 0; r < words.size(); ++r) {
    const auto [it, fresh] = seen.emplace(words[r], r);
    if (!fresh)
      EDO_FAIL("{}: line {} repeats '{}' of line {} (a vocabulary names each row once)", display, r + 1, words[r],
               it->second + 1);
  }
}

namespace {
constexpr uint64_t kMaxWordBytes = 4096;
}

std::optional<std::vector<std::string>> read_vocab_section(const Container& c) {
  const nlohmann::json& m = c.manifest();
  if (!m.contains("vocab")) return std::nullopt;
  const nlohmann::json& v = m["vocab"];
  if (!v.is_object() || !v.contains("section") || !v["section"].is_string() || !v.contains("words") ||
      !v["words"].is_number_unsigned())
    EDO_FAIL("{}: manifest 'vocab' must be {{\"section\": NAME, \"words\": COUNT}}", c.path());
  if (v["words"].get<uint64_t>() != c.rows())
    EDO_FAIL("{}: the vocabulary holds {} words for {} rows", c.path(), v["words"].get<uint64_t>(), c.rows());
  const SectionView bytes = c.section(v["section"].get<std::string>());
  // Each word ends in '\n', so a table of N rows has N newlines and at least N bytes.
  if (bytes.size < c.rows() || (bytes.size > 0 && bytes.data[bytes.size - 1] != '\n'))
    EDO_FAIL("{}: vocabulary section: {} bytes cannot hold {} words ending in newlines", c.path(), bytes.size,
             c.rows());
  std::vector<std::string> words;
  words.reserve(c.rows());
  const char* at = reinterpret_cast<const char*>(bytes.data);
  const char* end = at + bytes.size;
  while (at < end) {
    const char* eol = static_cast<const char*>(std::memchr(at, '\n', static_cast<size_t>(end - at)));
    if (words.size() == c.rows()) EDO_FAIL("{}: vocabulary section: more than {} words", c.path(), c.rows());
    if (static_cast<uint64_t>(eol - at) > kMaxWordBytes)
      EDO_FAIL("{}: vocabulary section: word {} is longer than {} bytes", c.path(), words.size() + 1, kMaxWordBytes);
    words.emplace_back(at, eol);
    at = eol + 1;
  }
  if (words.size() != c.rows())
    EDO_FAIL("{}: vocabulary section: {} words for {} rows", c.path(), words.size(), c.rows());
  return words;
}

std::string vocab_section_bytes(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    if (words[i].size() > kMaxWordBytes || words[i].find('\n') != std::string::npos)
      EDO_FAIL("vocabulary: word {} cannot be stored (more than {} bytes, or a line break)", i + 1, kMaxWordBytes);
    out += words[i];
    out += '\n';
  }
  return out;
}

}  // namespace edo::io
