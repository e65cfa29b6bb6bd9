// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/io/files.hpp>
#include <edo/io/word2vec.hpp>
#include "text_lines.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace edo::io {

namespace {

// fastText's binary model files start with this int32.
constexpr uint32_t kFastTextMagic = 793712314;
// Words longer than this are a broken file (the vocabulary's own limit).
constexpr uint64_t kMaxWordBytes = 4096;

uint64_t count_fields(std::string_view line) {
  uint64_t n = 0;
  for (size_t i = 0; !next_text_field(line, i).empty();) ++n;
  return n;
}

bool parse_u64(std::string_view s, uint64_t& v) {
  const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

class Word2VecReader final : public TableReader {
 public:
  Word2VecReader(const std::string& path, const std::string& display, bool binary)
      : TableReader(display, binary ? "word2vec-bin" : "word2vec"), file_(path), binary_(binary) {
    text_ = std::string_view(reinterpret_cast<const char*>(file_.data()), file_.size());
    if (text_.size() >= 4) {
      uint32_t magic = 0;
      std::memcpy(&magic, file_.data(), 4);
      if (magic == kFastTextMagic)
        EDO_FAIL(
            "{}: a fastText model (.bin), not word vectors: export them with fastText's print-word-vectors or "
            "use the .vec file",
            display);
    }
    if (!binary) text_ = skip_utf8_bom(text_);
    const size_t eol = text_.find('\n');
    const std::string_view first = text_.substr(0, eol == std::string_view::npos ? text_.size() : eol);
    size_t i = 0;
    const std::string_view a = next_text_field(first, i), b = next_text_field(first, i);
    const uint64_t first_fields = count_fields(first);
    uint64_t rows = 0, dim = 0;
    const bool header = first_fields == 2 && parse_u64(a, rows) && parse_u64(b, dim);
    if (binary && !header) EDO_FAIL("{}: line 1: expected the header 'ROWS DIM'", display);
    if (!header && (text_.empty() || first_fields < 2))
      EDO_FAIL("{}: line 1: neither a 'ROWS DIM' header nor 'word v1 v2 ...'", display);
    if (header && (rows == 0 || dim == 0 || dim > kMaxDim))
      EDO_FAIL("{}: line 1: header '{} {}': rows and dim must be at least 1 (dim at most {})", display, rows, dim,
               kMaxDim);
    if (!header) dim = first_fields - 1;
    dim_ = dim;
    dtype_ = DType::f32;
    if (binary)
      index_binary(rows, eol + 1);
    else
      index_text(header ? rows : 0, header ? eol + 1 : 0, header);
    rows_ = starts_.size();
  }

  const std::vector<std::string>* vocabulary() const override { return &words_; }

  const float* rows_f32(uint64_t begin, uint64_t count) override {
    check_range(begin, count);
    buffer_.resize(count * dim_);
    for (uint64_t r = 0; r < count; ++r) {
      const uint64_t row = begin + r;
      float* out = buffer_.data() + r * dim_;
      if (binary_) {
        std::memcpy(out, file_.data() + starts_[row], dim_ * sizeof(float));
        continue;
      }
      parse_text_row(row, out);
    }
    return buffer_.data();
  }

 private:
  // Rows of text from byte `pos`: each line's start, its word kept and its
  // field count checked; `rows` > 0 is the header's promise.
  void index_text(uint64_t rows, size_t pos, bool header) {
    uint64_t line_no = header ? 1 : 0;
    while (pos < text_.size()) {
      size_t end = text_.find('\n', pos);
      if (end == std::string_view::npos) end = text_.size();
      const std::string_view line = text_.substr(pos, end - pos);
      ++line_no;
      const uint64_t fields = count_fields(line);
      if (fields == 0) {
        pos = end + 1;
        continue;
      }
      if (rows > 0 && starts_.size() == rows)
        EDO_FAIL("{}: line {}: more rows than the header's {}", path_, line_no, rows);
      size_t i = 0;
      const std::string_view word = next_text_field(line, i);
      if (word.size() > kMaxWordBytes)
        EDO_FAIL("{}: line {}: a word longer than {} bytes", path_, line_no, kMaxWordBytes);
      const uint64_t values = fields - 1;
      if (values != dim_)
        EDO_FAIL("{}: line {}: {} values after the word, where the {} has {}", path_, line_no, values,
                 header ? "header" : "first line", dim_);
      starts_.push_back(pos);
      lines_.push_back(line_no);
      words_.emplace_back(word);
      pos = end + 1;
    }
    if (rows > 0 && starts_.size() != rows)
      EDO_FAIL("{}: {} rows, where the header promises {}", path_, starts_.size(), rows);
    if (starts_.empty()) EDO_FAIL("{}: no rows", path_);
  }

  void index_binary(uint64_t rows, size_t pos) {
    const uint64_t row_bytes = dim_ * sizeof(float);
    for (uint64_t r = 0; r < rows; ++r) {
      while (pos < text_.size() && (text_[pos] == '\n' || text_[pos] == '\r')) ++pos;
      const size_t space = text_.find(' ', pos);
      if (space == std::string_view::npos || space - pos > kMaxWordBytes)
        EDO_FAIL("{}: row {}: no word ending in a space (the header promises {} rows)", path_, r, rows);
      if (space == pos) EDO_FAIL("{}: row {}: an empty word", path_, r);
      if (text_.size() - (space + 1) < row_bytes)
        EDO_FAIL("{}: row {}: {} bytes left for its {} float32 values (the header promises {} rows)", path_, r,
                 text_.size() - (space + 1), dim_, rows);
      words_.emplace_back(text_.substr(pos, space - pos));
      starts_.push_back(space + 1);
      pos = space + 1 + row_bytes;
    }
    while (pos < text_.size() && (text_[pos] == '\n' || text_[pos] == '\r')) ++pos;
    if (pos != text_.size())
      EDO_FAIL("{}: {} bytes after the header's {} rows of {} values", path_, text_.size() - pos, rows, dim_);
  }

  void parse_text_row(uint64_t row, float* out) const {
    size_t end = text_.find('\n', starts_[row]);
    if (end == std::string_view::npos) end = text_.size();
    const std::string_view line = text_.substr(starts_[row], end - starts_[row]);
    size_t i = 0;
    next_text_field(line, i);  // the word
    for (uint64_t j = 0; j < dim_; ++j) {
      std::string_view f = next_text_field(line, i);
      if (f.size() > 1 && f.front() == '+') f.remove_prefix(1);
      const auto r = std::from_chars(f.data(), f.data() + f.size(), out[j]);
      if (r.ec == std::errc::result_out_of_range && r.ptr == f.data() + f.size()) {
        // A number, but not a float32 one: below its range it rounds to
        // zero (or the nearest subnormal), as the values a file stores in
        // float64 do; above it is refused.
        const double wide = std::strtod(std::string(f).c_str(), nullptr);
        if (std::isfinite(wide) && std::fabs(wide) < 1.0) {
          out[j] = static_cast<float>(wide);
          continue;
        }
        EDO_FAIL("{}: line {}: value {} {} is beyond float32's range", path_, lines_[row], j + 1, quoted(f));
      }
      if (r.ec != std::errc() || r.ptr != f.data() + f.size())
        EDO_FAIL("{}: line {}: value {} {} is not a number", path_, lines_[row], j + 1, quoted(f));
    }
  }

  MappedFile file_;
  bool binary_;
  std::string_view text_;
  std::vector<uint64_t> starts_;  // each row's first byte (text: its line; binary: its values)
  std::vector<uint64_t> lines_;   // text: each row's line number
  std::vector<std::string> words_;
  std::vector<float> buffer_;
};

// Rows out with their words, as word2vec writes them: text values in the
// shortest form that reads back to the same float32, binary values as
// little-endian float32 followed by '\n'.
class Word2VecWriter final : public TableWriter {
 public:
  Word2VecWriter(const std::string& path, uint64_t rows, uint64_t dim, std::vector<std::string> words, bool binary)
      : TableWriter(rows, dim), file_(path), words_(std::move(words)), binary_(binary) {
    if (words_.size() != rows) EDO_FAIL("{}: {} words for {} rows (one word a row)", path, words_.size(), rows);
    for (uint64_t r = 0; r < rows; ++r) {
      const std::string& w = words_[r];
      if (w.empty() || w.size() > kMaxWordBytes || w.find_first_of(" \t\r\n") != std::string::npos)
        EDO_FAIL("{}: word {} {} cannot be written: a word2vec word is 1-{} bytes without spaces or line breaks", path,
                 r + 1, quoted(w), kMaxWordBytes);
    }
    const std::string header = fmt::format("{} {}\n", rows, dim);
    file_.write(header.data(), header.size());
  }

  void write_f32(const float* rows, uint64_t count) override {
    if (count > rows_ - written_) EDO_FAIL("{}: more than {} rows written", file_.path(), rows_);
    std::string out;
    for (uint64_t r = 0; r < count; ++r) {
      const float* row = rows + r * dim_;
      out += words_[written_ + r];
      if (binary_) {
        out += ' ';
        out.append(reinterpret_cast<const char*>(row), dim_ * sizeof(float));  // x86-64 and ARM64: little-endian
      } else {
        for (uint64_t j = 0; j < dim_; ++j) fmt::format_to(std::back_inserter(out), " {}", row[j]);
      }
      out += '\n';
      if (out.size() >= (1u << 20)) {
        file_.write(out.data(), out.size());
        out.clear();
      }
    }
    file_.write(out.data(), out.size());
    written_ += count;
  }

  void commit() override {
    if (written_ != rows_) EDO_FAIL("{}: {} rows written of {}", file_.path(), written_, rows_);
    file_.commit();
  }

 private:
  AtomicFile file_;
  std::vector<std::string> words_;
  bool binary_;
  uint64_t written_ = 0;
};

}  // namespace

std::unique_ptr<TableWriter> create_word2vec(const std::string& path, uint64_t rows, uint64_t dim,
                                             std::vector<std::string> words, bool binary) {
  return std::make_unique<Word2VecWriter>(path, rows, dim, std::move(words), binary);
}

bool is_word2vec_path(const std::string& path) {
  return path.ends_with(".vec") || path.ends_with(".bin") || path.ends_with(".txt");
}

std::unique_ptr<TableReader> open_word2vec(const std::string& path, const std::string& display) {
  return open_word2vec(path, display, path.ends_with(".bin"));
}

std::unique_ptr<TableReader> open_word2vec(const std::string& path, const std::string& display, bool binary) {
  return std::make_unique<Word2VecReader>(path, display, binary);
}

}  // namespace edo::io
