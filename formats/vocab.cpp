#include <edo/error.hpp>
#include <edo/io/vocab.hpp>

#include <fstream>

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
    words.push_back(std::move(line));
  }
  if (words.size() != rows) EDO_FAIL("{}: {} lines for {} rows", path, words.size(), rows);
  return words;
}

}  // namespace edo::io
