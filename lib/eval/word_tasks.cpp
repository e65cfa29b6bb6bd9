// SPDX-License-Identifier: Apache-2.0
#include <edo/single_threaded_blas.hpp>

#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/io/vocab.hpp>
#include <edo/word_tasks.hpp>

#include <cblas.h>
#include <omp.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <unordered_map>

namespace edo {

namespace {

std::string fold_case(std::string_view w) {
  std::string s(w);
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return s;
}

// Every row scaled to unit length (norm in double; zero rows stay zero).
std::vector<float> normalised_rows(io::TableReader& table) {
  const uint64_t n = table.rows(), d = table.dim();
  std::vector<float> e(n * d);
  table.read_f32(0, n, e.data());
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < static_cast<int64_t>(n); ++r) {
    float* row = e.data() + static_cast<uint64_t>(r) * d;
    double s = 0;
    for (uint64_t j = 0; j < d; ++j) s += static_cast<double>(row[j]) * row[j];
    if (s > 0)
      for (uint64_t j = 0; j < d; ++j) row[j] = static_cast<float>(row[j] / std::sqrt(s));
  }
  return e;
}

double dot(const float* x, const float* y, uint64_t d) {
  double s = 0;
  for (uint64_t j = 0; j < d; ++j) s += static_cast<double>(x[j]) * y[j];
  return s;
}

constexpr double kMulEpsilon = 0.001;
double shifted(double cos) { return (cos + 1) / 2; }
double cos_add(double ca, double cb, double cc) { return cb - ca + cc; }
double cos_mul(double ca, double cb, double cc) { return shifted(cb) * shifted(cc) / (shifted(ca) + kMulEpsilon); }

// The best kKeep candidates of one question by a float score, kept sorted.
constexpr int kKeep = 4;
struct Shortlist {
  std::array<float, kKeep> score;
  std::array<uint64_t, kKeep> row;
  int size = 0;
  void offer(float s, uint64_t r) {
    if (size == kKeep && !(s > score[kKeep - 1])) return;
    int i = size < kKeep ? size++ : kKeep - 1;
    for (; i > 0 && s > score[i - 1]; --i) score[i] = score[i - 1], row[i] = row[i - 1];
    score[i] = s, row[i] = r;
  }
};

}  // namespace

WordIndex::WordIndex(const std::vector<std::string>& vocab) {
  rows_.reserve(vocab.size());
  for (uint64_t r = 0; r < vocab.size(); ++r) rows_.emplace(fold_case(vocab[r]), r);  // keeps the first
}

std::optional<uint64_t> WordIndex::find(std::string_view word) const {
  const auto it = rows_.find(fold_case(word));
  if (it == rows_.end()) return std::nullopt;
  return it->second;
}

AnalogyRows resolve_analogies(const io::AnalogySet& set, const WordIndex& index) {
  AnalogyRows out;
  out.sections = set.sections;
  for (const io::AnalogyQuestion& q : set.questions) {
    const auto a = index.find(q.a), b = index.find(q.b), c = index.find(q.c), d = index.find(q.d);
    if (!a || !b || !c || !d) {
      ++out.skipped;
      continue;
    }
    out.a.push_back(*a), out.b.push_back(*b), out.c.push_back(*c), out.d.push_back(*d);
    out.section.push_back(q.section);
  }
  return out;
}

double AnalogyScore::add_accuracy() const {
  return total_answered ? static_cast<double>(total_add) / static_cast<double>(total_answered) : 0.0;
}
double AnalogyScore::mul_accuracy() const {
  return total_answered ? static_cast<double>(total_mul) / static_cast<double>(total_answered) : 0.0;
}

namespace {

// Whether questions [q0, q0 + nq) are right by 3CosAdd and by 3CosMul, into
// add_ok and mul_ok: one GEMM of their a, b, c rows against each chunk of
// rows (on the calling thread), shortlists, then the shortlists in double.
struct AnalogyTile {
  static constexpr uint64_t kQuestions = 32, kRows = 8192;
  std::vector<float> queries, scores;
  Shortlist add[kQuestions], mul[kQuestions];

  void run(const float* e, uint64_t n, uint64_t d, const AnalogyRows& q, uint64_t q0, uint64_t nq, uint8_t* add_ok,
           uint8_t* mul_ok) {
    queries.resize(3 * kQuestions * d);
    scores.resize(3 * kQuestions * kRows);
    for (uint64_t i = 0; i < nq; ++i) {
      std::copy_n(e + q.a[q0 + i] * d, d, queries.data() + (3 * i) * d);
      std::copy_n(e + q.b[q0 + i] * d, d, queries.data() + (3 * i + 1) * d);
      std::copy_n(e + q.c[q0 + i] * d, d, queries.data() + (3 * i + 2) * d);
      add[i] = mul[i] = Shortlist{};
    }
    for (uint64_t r0 = 0; r0 < n; r0 += kRows) {
      const uint64_t nr = std::min(kRows, n - r0);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(3 * nq), static_cast<int>(nr),
                  static_cast<int>(d), 1.0f, queries.data(), static_cast<int>(d), e + r0 * d, static_cast<int>(d), 0.0f,
                  scores.data(), static_cast<int>(nr));
      for (uint64_t i = 0; i < nq; ++i) {
        const uint64_t qi = q0 + i;
        const float* sa = scores.data() + (3 * i) * nr;
        const float *sb = sa + nr, *sc = sb + nr;
        for (uint64_t x = 0; x < nr; ++x) {
          const uint64_t r = r0 + x;
          if (r == q.a[qi] || r == q.b[qi] || r == q.c[qi]) continue;
          add[i].offer(sb[x] - sa[x] + sc[x], r);
          mul[i].offer((sb[x] + 1) * (sc[x] + 1) / (2 * (sa[x] + 1) + 4 * static_cast<float>(kMulEpsilon)), r);
        }
      }
    }
    for (uint64_t i = 0; i < nq; ++i) {
      const uint64_t qi = q0 + i;
      const float *a = e + q.a[qi] * d, *b = e + q.b[qi] * d, *c = e + q.c[qi] * d;
      // The shortlist again in double: the exact argmax, ties to the lower row.
      const auto best = [&](const Shortlist& s, auto&& score) {
        uint64_t arg = 0;
        double top = -HUGE_VAL;
        for (int k = 0; k < s.size; ++k) {
          const float* x = e + s.row[k] * d;
          const double v = score(dot(x, a, d), dot(x, b, d), dot(x, c, d));
          if (v > top || (v == top && s.row[k] < arg)) top = v, arg = s.row[k];
        }
        return arg;
      };
      add_ok[qi] = best(add[i], cos_add) == q.d[qi];
      mul_ok[qi] = best(mul[i], cos_mul) == q.d[qi];
    }
  }
};

}  // namespace

AnalogyScore score_analogies(io::TableReader& table, const AnalogyRows& q) {
  const uint64_t n = table.rows(), d = table.dim(), count = q.a.size();
  AnalogyScore out;
  out.answered.assign(q.sections.size(), 0);
  out.add_correct.assign(q.sections.size(), 0);
  out.mul_correct.assign(q.sections.size(), 0);
  if (count == 0) return out;
  const std::vector<float> e = normalised_rows(table);
  std::vector<uint8_t> add_ok(count), mul_ok(count);
  const int64_t tiles = static_cast<int64_t>((count + AnalogyTile::kQuestions - 1) / AnalogyTile::kQuestions);
  const detail::SingleThreadedBlas one_thread_each;
#pragma omp parallel
  {
    AnalogyTile tile;
#pragma omp for schedule(dynamic)
    for (int64_t t = 0; t < tiles; ++t) {
      const uint64_t q0 = static_cast<uint64_t>(t) * AnalogyTile::kQuestions;
      tile.run(e.data(), n, d, q, q0, std::min(AnalogyTile::kQuestions, count - q0), add_ok.data(), mul_ok.data());
    }
  }
  for (uint64_t i = 0; i < count; ++i) {
    ++out.answered[q.section[i]];
    out.add_correct[q.section[i]] += add_ok[i];
    out.mul_correct[q.section[i]] += mul_ok[i];
  }
  out.total_answered = count;
  out.total_add = std::accumulate(add_ok.begin(), add_ok.end(), uint64_t{0});
  out.total_mul = std::accumulate(mul_ok.begin(), mul_ok.end(), uint64_t{0});
  return out;
}

PairRows resolve_pairs(const io::WordPairSet& set, const WordIndex& index) {
  PairRows out;
  for (const io::WordPair& p : set.pairs) {
    const auto a = index.find(p.a), b = index.find(p.b);
    if (!a || !b) {
      ++out.skipped;
      continue;
    }
    out.a.push_back(*a), out.b.push_back(*b);
    out.human.push_back(p.score);
  }
  return out;
}

double similarity_rho(io::TableReader& table, const PairRows& pairs) {
  const uint64_t d = table.dim();
  std::vector<float> x(d), y(d);
  std::vector<double> cos(pairs.a.size());
  for (size_t i = 0; i < cos.size(); ++i) {
    table.read_f32(pairs.a[i], 1, x.data());
    table.read_f32(pairs.b[i], 1, y.data());
    const double xx = dot(x.data(), x.data(), d), yy = dot(y.data(), y.data(), d);
    cos[i] = xx > 0 && yy > 0 ? dot(x.data(), y.data(), d) / std::sqrt(xx * yy) : 0.0;
  }
  return spearman_rho(pairs.human, cos);
}

namespace {

// Ranks from 1, tied values sharing their average rank.
std::vector<double> average_ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    const double r = (static_cast<double>(i) + static_cast<double>(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = r;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double spearman_rho(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return std::nan("");
  const std::vector<double> rx = average_ranks(x), ry = average_ranks(y);
  const double n = static_cast<double>(x.size()), mean = (n + 1) / 2;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mean) * (ry[i] - mean);
    sxx += (rx[i] - mean) * (rx[i] - mean);
    syy += (ry[i] - mean) * (ry[i] - mean);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : std::nan("");
}

namespace {

// A word-pair file's name in metric names: its stem, other than [A-Za-z0-9_-] as '_'.
std::string task_name(const std::string& path) {
  std::string s = std::filesystem::path(path).stem().string();
  for (char& c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-')) c = '_';
  return s.empty() ? "pairs" : s;
}

}  // namespace

WordTaskReport run_word_tasks(io::TableReader& original, io::TableReader& compressed,
                              const std::vector<std::string>& vocab, const std::string& vocab_path,
                              const WordTaskFiles& files) {
  const auto t0 = std::chrono::steady_clock::now();
  io::check_unique_words(vocab, vocab_path);
  const WordIndex index(vocab);
  WordTaskReport rep;
  if (!files.analogies.empty()) {
    const io::AnalogySet set = io::read_analogies(files.analogies, files.skip_bad_lines);
    const AnalogyRows rows = resolve_analogies(set, index);
    if (rows.a.empty())
      EDO_FAIL("{}: none of its {} questions has all four words in {}", files.analogies, set.questions.size(),
               vocab_path);
    rep.analogies_path = files.analogies;
    rep.sections = rows.sections;
    rep.questions_skipped = rows.skipped;
    rep.bad_lines = set.bad_lines;
    rep.original = score_analogies(original, rows);
    rep.compressed = score_analogies(compressed, rows);
  }
  for (const std::string& path : files.similarity) {
    const io::WordPairSet set = io::read_word_pairs(path, files.skip_bad_lines);
    const PairRows rows = resolve_pairs(set, index);
    if (rows.a.size() < 2)
      EDO_FAIL("{}: {} of its {} pairs have both words in {}; a correlation needs at least 2", path, rows.a.size(),
               set.pairs.size(), vocab_path);
    SimilarityOutcome o;
    o.name = task_name(path);
    o.path = path;
    for (const SimilarityOutcome& other : rep.similarity)
      if (other.name == o.name)
        EDO_USAGE_FAIL("--similarity {}: its name '{}' is taken by {} (rename one file)", path, o.name, other.path);
    o.pairs = rows.a.size();
    o.skipped = rows.skipped;
    o.bad_lines = set.bad_lines;
    o.rho_original = similarity_rho(original, rows);
    o.rho_compressed = similarity_rho(compressed, rows);
    rep.similarity.push_back(o);
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

void add_word_task_metrics(const WordTaskReport& rep, EvalResult& result) {
  if (!rep.analogies_path.empty()) {
    const double add_o = rep.original.add_accuracy(), add_c = rep.compressed.add_accuracy();
    const double mul_o = rep.original.mul_accuracy(), mul_c = rep.compressed.mul_accuracy();
    result.set("analogy.3cosadd", add_c);
    result.set("analogy.3cosadd.original", add_o);
    result.set("analogy.3cosadd.drop", add_o - add_c);
    result.set("analogy.3cosmul", mul_c);
    result.set("analogy.3cosmul.original", mul_o);
    result.set("analogy.3cosmul.drop", mul_o - mul_c);
    result.set("analogy.answered", static_cast<double>(rep.compressed.total_answered));
  }
  for (const SimilarityOutcome& o : rep.similarity) {
    result.set("sim." + o.name + ".rho", o.rho_compressed);
    result.set("sim." + o.name + ".rho.original", o.rho_original);
    result.set("sim." + o.name + ".rho.drop", o.rho_original - o.rho_compressed);
    result.set("sim." + o.name + ".pairs", static_cast<double>(o.pairs));
  }
}

std::string word_task_text(const WordTaskReport& rep) {
  std::string s;
  if (!rep.analogies_path.empty()) {
    s += fmt::format("\nanalogies {}: {} questions answered, {} with a word outside the vocabulary skipped{}\n",
                     rep.analogies_path, rep.compressed.total_answered, rep.questions_skipped,
                     rep.bad_lines ? fmt::format(", {} malformed lines skipped", rep.bad_lines) : "");
    s += fmt::format("  {:<30} {:>9} {:>9} {:>9} {:>9} {:>9}\n", "section", "questions", "3CosAdd", "drop", "3CosMul",
                     "drop");
    const auto line = [&](const std::string& name, uint64_t n, double ao, double ac, double mo, double mc) {
      s += fmt::format("  {:<30} {:>9} {:>9.4f} {:>+9.4f} {:>9.4f} {:>+9.4f}\n", name, n, ac, ao - ac, mc, mo - mc);
    };
    for (size_t i = 0; i < rep.sections.size(); ++i) {
      const uint64_t n = rep.compressed.answered[i];
      if (n == 0) continue;
      const auto frac = [&](uint64_t k) { return static_cast<double>(k) / static_cast<double>(n); };
      line(rep.sections[i], n, frac(rep.original.add_correct[i]), frac(rep.compressed.add_correct[i]),
           frac(rep.original.mul_correct[i]), frac(rep.compressed.mul_correct[i]));
    }
    line("all", rep.compressed.total_answered, rep.original.add_accuracy(), rep.compressed.add_accuracy(),
         rep.original.mul_accuracy(), rep.compressed.mul_accuracy());
  }
  for (const SimilarityOutcome& o : rep.similarity)
    s += fmt::format("\nsimilarity {}: {} pairs ({} skipped{}): Spearman rho {:.4f} (original {:.4f}, drop {:+.4f})\n",
                     o.path, o.pairs, o.skipped, o.bad_lines ? fmt::format(", {} malformed", o.bad_lines) : "",
                     o.rho_compressed, o.rho_original, o.rho_original - o.rho_compressed);
  s += fmt::format("word tasks: {:.2f} s\n", rep.seconds);
  return s;
}

nlohmann::json word_task_json(const WordTaskReport& rep) {
  nlohmann::json j = nlohmann::json::object();
  if (!rep.analogies_path.empty()) {
    nlohmann::json sections = nlohmann::json::array();
    for (size_t i = 0; i < rep.sections.size(); ++i)
      sections.push_back(
          {{"section", rep.sections[i]},
           {"questions", rep.compressed.answered[i]},
           {"3cosadd_correct",
            {{"original", rep.original.add_correct[i]}, {"compressed", rep.compressed.add_correct[i]}}},
           {"3cosmul_correct",
            {{"original", rep.original.mul_correct[i]}, {"compressed", rep.compressed.mul_correct[i]}}}});
    j["analogies"] = {{"file", rep.analogies_path},
                      {"answered", rep.compressed.total_answered},
                      {"skipped", rep.questions_skipped},
                      {"malformed_lines", rep.bad_lines},
                      {"sections", sections}};
  }
  nlohmann::json sim = nlohmann::json::array();
  for (const SimilarityOutcome& o : rep.similarity)
    sim.push_back({{"name", o.name},
                   {"file", o.path},
                   {"pairs", o.pairs},
                   {"skipped", o.skipped},
                   {"malformed_lines", o.bad_lines},
                   {"rho", {{"original", o.rho_original}, {"compressed", o.rho_compressed}}}});
  j["similarity"] = sim;
  j["seconds"] = rep.seconds;
  return j;
}

}  // namespace edo
