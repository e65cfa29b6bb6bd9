// SPDX-License-Identifier: Apache-2.0
// Word tasks in users' terms (edo-eval --analogies, --similarity; defined in
// docs/EVAL.md, "Word tasks"): analogy accuracy by 3CosAdd and 3CosMul and
// Spearman's rho of cosine against human similarity scores, each for one
// table; edo-eval runs them on the original and the compressed table.
#pragma once

#include <edo/io/word_tasks.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace edo {

namespace io {
class TableReader;
}

// Words to rows, matched case-insensitively (ASCII letters folded; other
// bytes compared as they are): the first row holding a word wins.
class WordIndex {
 public:
  explicit WordIndex(const std::vector<std::string>& vocab);
  std::optional<uint64_t> find(std::string_view word) const;

 private:
  std::unordered_map<std::string, uint64_t> rows_;
};

// Questions whose four words are all in the vocabulary, as rows, and how
// many were left out.
struct AnalogyRows {
  std::vector<uint64_t> a, b, c, d;
  std::vector<uint32_t> section;
  std::vector<std::string> sections;
  uint64_t skipped = 0;
};
AnalogyRows resolve_analogies(const io::AnalogySet& set, const WordIndex& index);

struct AnalogyScore {
  std::vector<uint64_t> answered, add_correct, mul_correct;  // per section
  uint64_t total_answered = 0, total_add = 0, total_mul = 0;
  double add_accuracy() const;  // 0 when nothing was answered
  double mul_accuracy() const;
};

// The answer of each question over every row of `table` (the three
// question words excluded), by 3CosAdd and by 3CosMul (Levy and Goldberg
// 2014: cosines shifted to (cos + 1) / 2, epsilon 0.001). Scores come from
// one matrix product per block of questions and rows (BLAS, float); the
// best few candidates of each question are then scored again in double, so
// the answer is the exact argmax (ties to the lower row). Memory: the table,
// normalised (rows x dim floats), and one block of scores.
AnalogyScore score_analogies(io::TableReader& table, const AnalogyRows& questions);

// Pairs whose two words are in the vocabulary: their rows and human scores.
struct PairRows {
  std::vector<uint64_t> a, b;
  std::vector<double> human;
  uint64_t skipped = 0;
};
PairRows resolve_pairs(const io::WordPairSet& set, const WordIndex& index);

// Spearman's rho of the pairs' cosines (double) against their human scores.
double similarity_rho(io::TableReader& table, const PairRows& pairs);

// Spearman's rank correlation: Pearson's r of the ranks, tied values taking
// their average rank. NaN when either side is constant or has < 2 values.
double spearman_rho(const std::vector<double>& x, const std::vector<double>& y);

// ---- both tables, as edo-eval runs them --------------------------------------------

class EvalResult;

struct WordTaskFiles {
  std::string analogies;                // one file, or empty
  std::vector<std::string> similarity;  // word-pair files, each named by its stem (e.g. "simlex999")
  bool skip_bad_lines = false;          // malformed lines counted and left out, else an error
};

struct SimilarityOutcome {
  std::string name, path;
  uint64_t pairs = 0, skipped = 0, bad_lines = 0;
  double rho_original = 0, rho_compressed = 0;
};

struct WordTaskReport {
  std::string analogies_path;  // empty: no analogy task
  std::vector<std::string> sections;
  AnalogyScore original, compressed;
  uint64_t questions_skipped = 0, bad_lines = 0;
  std::vector<SimilarityOutcome> similarity;
  double seconds = 0;
};

// The word tasks of `files` on both tables, words matched through `vocab`
// (one word a row, `vocab_path` names it in errors). Errors: a word-pair
// stem given twice, exact duplicate words in the vocabulary, a task none of
// whose questions or pairs the vocabulary covers.
WordTaskReport run_word_tasks(io::TableReader& original, io::TableReader& compressed,
                              const std::vector<std::string>& vocab, const std::string& vocab_path,
                              const WordTaskFiles& files);
// Gate-able metrics (docs/EVAL.md): analogy.3cosadd[.original|.drop],
// analogy.3cosmul[...], analogy.answered, sim.NAME.rho[.original|.drop], sim.NAME.pairs.
void add_word_task_metrics(const WordTaskReport& report, EvalResult& result);
// Per-section accuracy and per-file rho, original against compressed.
std::string word_task_text(const WordTaskReport& report);
nlohmann::json word_task_json(const WordTaskReport& report);

}  // namespace edo
