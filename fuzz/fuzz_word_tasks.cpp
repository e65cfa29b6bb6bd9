// SPDX-License-Identifier: Apache-2.0
// Word-task files (edo-eval --analogies, --similarity): both parsers on the
// bytes, strict and skipping bad lines.
#include <edo/error.hpp>
#include <edo/io/word_tasks.hpp>

#include <cmath>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const bool skip : {false, true}) {
    try {
      const edo::io::AnalogySet a = edo::io::parse_analogies(text, "<fuzz>", skip);
      for (const auto& q : a.questions)
        if (q.section >= a.sections.size() || q.a.empty() || q.d.empty()) std::abort();
    } catch (const edo::Error&) {
    }
    try {
      const edo::io::WordPairSet p = edo::io::parse_word_pairs(text, "<fuzz>", skip);
      for (const auto& w : p.pairs)
        if (!std::isfinite(w.score) || w.a.empty() || w.b.empty()) std::abort();
    } catch (const edo::Error&) {
    }
  }
  return 0;
}
