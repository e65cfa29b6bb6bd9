// SPDX-License-Identifier: Apache-2.0
// Word tasks (edo/word_tasks.hpp): Spearman's rho with ties, analogies on
// hand-made tables whose answers are known, and the two file parsers.
#include "test_util.hpp"

#include <edo/io/table.hpp>
#include <edo/word_tasks.hpp>

#include <cmath>

using edo::test::error_of;

TEST_CASE("word tasks: Spearman's rho uses average ranks for ties") {
  CHECK(edo::spearman_rho({1, 2, 3, 4}, {10, 20, 30, 40}) == doctest::Approx(1.0));
  CHECK(edo::spearman_rho({1, 2, 3, 4}, {4, 3, 2, 1}) == doctest::Approx(-1.0));
  // x ranks 1, 2.5, 2.5, 4; y ranks 1, 2, 3, 4: r = 4.5 / sqrt(4.5 * 5).
  CHECK(edo::spearman_rho({1, 2, 2, 3}, {1, 2, 3, 4}) == doctest::Approx(4.5 / std::sqrt(4.5 * 5.0)).epsilon(1e-12));
  CHECK(std::isnan(edo::spearman_rho({1, 1, 1}, {1, 2, 3})));
  CHECK(std::isnan(edo::spearman_rho({1}, {1})));
}

TEST_CASE("word tasks: analogies over a hand-made table, 3CosAdd and 3CosMul, question words excluded") {
  edo::test::TempDir dir;
  // man -> woman as king -> queen along the second axis; "king" itself is
  // nearest to b - a + c but is a question word, so queen must win.
  const std::vector<std::string> vocab = {"man", "woman", "King", "queen", "apple", "king"};
  const std::vector<float> x = {1, 0, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 0, 0, -1, 1, 0, 0.9f};
  auto w = edo::io::create_table(dir.file("t.npy"), 6, 3);
  w->write_f32(x.data(), 6);
  w->commit();
  auto table = edo::io::open_table(dir.file("t.npy"));
  const edo::WordIndex index(vocab);
  CHECK(*index.find("KING") == 2);  // the first of "King" and "king", case folded
  CHECK_FALSE(index.find("pear").has_value());
  edo::io::AnalogySet set = edo::io::parse_analogies(
      ": family\nman woman king queen\nman woman king apple\n"
      "man woman pear queen\n",
      "q.txt", false);
  const edo::AnalogyRows rows = edo::resolve_analogies(set, index);
  CHECK(rows.a.size() == 2);
  CHECK(rows.skipped == 1);
  const edo::AnalogyScore s = edo::score_analogies(*table, rows);
  CHECK(s.total_answered == 2);
  CHECK(s.total_add == 1);  // queen right, apple wrong
  CHECK(s.total_mul == 1);
  CHECK(s.add_accuracy() == doctest::Approx(0.5));
}

TEST_CASE("word tasks: parsers take both layouts and name bad lines") {
  const auto pairs = edo::io::parse_word_pairs("# c\nWord 1\tWord 2\tHuman (mean)\nlove\tsex\t6.77\ntiger cat 7.35\n",
                                               "ws.tsv", false);
  REQUIRE(pairs.pairs.size() == 2);
  CHECK(pairs.pairs[1].b == "cat");
  CHECK(pairs.pairs[0].score == doctest::Approx(6.77));
  // The original SimLex-999 layout: the score in the SimLex999 column.
  const auto simlex = edo::io::parse_word_pairs("word1\tword2\tPOS\tSimLex999\tconc(w1)\nold\tnew\tA\t1.58\t2.72\n",
                                                "simlex.txt", false);
  REQUIRE(simlex.pairs.size() == 1);
  CHECK(simlex.pairs[0].score == doctest::Approx(1.58));
  CHECK(error_of([] { edo::io::parse_word_pairs("a b 1\nc d nan\n", "p.txt", false); }) ==
        "p.txt: line 2: score 'nan' is not a finite number");
  CHECK(edo::io::parse_word_pairs("a b 1\nc d\n", "p.txt", true).bad_lines == 1);
  CHECK(error_of([] { edo::io::parse_word_pairs("# nothing\n", "p.txt", false); }) ==
        "p.txt: no word pairs ('word1 word2 score' lines)");
  const auto q = edo::io::parse_analogies("a b c d\n: second one \ne f g h\n", "q.txt", false);
  REQUIRE(q.sections.size() == 2);
  CHECK(q.sections[0] == "(none)");
  CHECK(q.sections[1] == "second one");
  CHECK(q.questions[1].section == 1);
  CHECK(error_of([] { edo::io::parse_analogies("a b c d e\n", "q.txt", false); }) ==
        "q.txt: line 1: expected four words 'a b c d' or ': section', got 5 fields");
}
