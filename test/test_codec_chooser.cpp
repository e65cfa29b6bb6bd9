// SPDX-License-Identifier: Apache-2.0
// The codec chooser (edo/codec_chooser.hpp): budgets, sizes, and its pick
// against an exhaustive trial of every candidate through the real writer.
#include "test_codecs_util.hpp"
#include "test_util.hpp"

#include <doctest/doctest.h>
#include <edo/codec_chooser.hpp>
#include <edo/edo_file.hpp>
#include <edo/eval.hpp>
#include <edo/make_codec.hpp>
#include <edo/shard.hpp>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

TEST_CASE("codec traits: every row has an example that encodes; a trained row sizes its state from the spec") {
  // A new codec row without an encoder, an example or a state size fails here, not in a user's plan.
  const edo::test::Matrix m = edo::test::load_shared("bigann10k_base.npy", 1500);
  std::vector<float> x(m.rows * 64);
  for (uint64_t r = 0; r < m.rows; ++r) std::copy_n(m.values.data() + r * m.dim, 64, x.data() + r * 64);
  for (const edo::CodecTraits& t : edo::codec_list()) {
    CAPTURE(t.name);
    REQUIRE(t.example != nullptr);
    CHECK(edo::parse_spec(t.example).front().name == t.name);
    CHECK((t.state_bytes != nullptr) == t.trainable);
    auto codec = edo::make_codec(t.example, 64);
    CHECK(codec->needs_training() == t.trainable);
    uint64_t stored = 0;
    if (codec->needs_training()) {
      codec->train(x.data(), m.rows, 0);
      for (const edo::NamedBlob& b : codec->state()) stored += edo::state_stored_bytes(b);
    }
    CHECK(edo::codec_state_bytes(t.example, 64) == stored);
    std::vector<uint8_t> codes(codec->code_size() * 4);
    codec->encode(x.data(), 4, codes.data(), {});
    const std::vector<std::string> features = edo::spec_format_features(t.example);
    CHECK((std::find(features.begin(), features.end(), "codec:" + std::string(t.name)) != features.end()) ==
          t.format_feature);
  }
}

namespace {

edo::ExitCode code_of(const std::string& spec) {
  try {
    edo::parse_auto_spec(spec);
  } catch (const edo::Error& e) {
    return e.code();
  }
  return edo::ExitCode::ok;
}

}  // namespace

TEST_CASE("codec chooser: auto specs parse, and a missing, double or tiny budget is a usage error") {
  CHECK(edo::is_auto_spec("auto:bits=4.5"));
  CHECK(edo::is_auto_spec("auto"));
  CHECK_FALSE(edo::is_auto_spec("autox"));
  CHECK_FALSE(edo::is_auto_spec("int8"));
  const edo::ChooseBudget b = edo::parse_auto_spec("auto:bits=4.5");
  CHECK(b.goal == edo::ChooseGoal::best_recall_within_bits);
  CHECK(b.bits == 4.5);
  CHECK(b.k == 10);
  const edo::ChooseBudget r = edo::parse_auto_spec("auto:recall=0.95,k=20");
  CHECK(r.goal == edo::ChooseGoal::fewest_bytes_reaching);
  CHECK(r.recall == 0.95);
  CHECK(r.k == 20);
  CHECK(edo::parse_auto_spec("auto:bits=1").bits == 1);
  for (const char* bad :
       {"auto", "auto:", "auto:bits=4,recall=0.9", "auto:bits=4,bits=5", "auto:bits=0.99", "auto:bits=-3",
        "auto:bits=nan", "auto:bits=4x", "auto:recall=0", "auto:recall=1.5", "auto:k=5", "auto:bits=4,k=5",
        "auto:recall=0.9,k=0", "auto:recall=0.9,k=2.5", "auto:size=3", "auto:4", "auto,int8"}) {
    CAPTURE(bad);
    CHECK(code_of(bad) == edo::ExitCode::usage);
  }
}

TEST_CASE("codec chooser: every candidate's state size, from its spec alone, is the trained state's") {
  for (const char* name : {"glove.6B.50d.10k.npy", "bigann10k_base.npy"}) {
    const edo::test::Matrix m = edo::test::load_shared(name, 2000);
    CAPTURE(name);
    const std::vector<std::string> specs = edo::chooser_candidates(m.rows, m.dim, m.rows);
    CHECK(specs.size() >= 20);
    for (const std::string& spec : specs) {
      CAPTURE(spec);
      auto codec = edo::make_codec(spec, m.dim);
      uint64_t stored = 0;
      if (codec->needs_training()) {
        codec->train(m.values.data(), m.rows, 0);
        for (const edo::NamedBlob& b : codec->state()) stored += edo::state_stored_bytes(b);
        CHECK(stored > 0);
      }
      CHECK(edo::codec_state_bytes(spec, m.dim) == stored);
      CHECK(edo::chosen_file_bytes(spec, m.rows, m.dim) ==
            m.rows * codec->code_size() + stored + edo::kContainerAllowanceBytes);
    }
  }
}

namespace {

struct Measured {
  double recall = 0, rel_error = 0;
  uint64_t file_bytes = 0;  // on disk, vocabulary aside
};

// Every candidate written by edo-quantize's writer and scored by
// evaluate() as edo-eval does, each on the whole (small) table.
std::map<std::string, Measured> exhaustive_trial(edo::io::TableReader& table, const std::vector<std::string>& specs,
                                                 const edo::test::TempDir& dir) {
  std::map<std::string, Measured> out;
  edo::EvalOptions eval;
  eval.metric = edo::Metric::cos;
  eval.ks = {10};
  eval.bags = 0;
  eval.dot_pairs = 0;
  for (const std::string& spec : specs) {
    edo::QuantizeOptions q;
    q.spec = spec;
    const std::string path = dir.file("t.edo");
    const edo::QuantizeReport rep = edo::quantize_to_edo(table, path, q);
    auto decoded = edo::EdoTable::open(path);
    const edo::EvalResult r = edo::evaluate(table, *decoded, eval);
    out[spec] = {r.at("recall@10"), r.at("rel_fro"), rep.file_bytes};
  }
  return out;
}

}  // namespace

TEST_CASE("codec chooser: its pick on GloVe 2k rows is an exhaustive trial's, for a bits and a recall budget") {
  auto whole = edo::io::open_table(edo::test::shared_data("glove.6B.50d.10k.npy"));
  auto table = edo::row_range_view(*whole, {0, 2000});
  edo::test::TempDir dir;
  const std::vector<std::string> specs = edo::chooser_candidates(2000, 50, 10000);
  const std::map<std::string, Measured> all = exhaustive_trial(*table, specs, dir);
  edo::ChooseOptions opt;  // cos, 1000 queries, seed 0: edo-eval's defaults

  std::vector<std::string> by_size = specs;  // the chooser's order: smallest file first
  std::stable_sort(by_size.begin(), by_size.end(), [](const std::string& a, const std::string& b) {
    return edo::chosen_file_bytes(a, 2000, 50) < edo::chosen_file_bytes(b, 2000, 50);
  });
  for (const double bits : {3.0, 4.5, 6.0, 8.5}) {
    CAPTURE(bits);
    const edo::CodecChoice c = edo::choose_codec(*table, edo::parse_auto_spec(fmt::format("auto:bits={}", bits)), opt);
    std::vector<std::string> fit;
    double top = 0;
    for (const std::string& s : by_size) {
      CHECK(all.at(s).file_bytes <= edo::chosen_file_bytes(s, 2000, 50));  // the allowance bounds the file
      if (static_cast<double>(edo::chosen_file_bytes(s, 2000, 50)) * 8 / (2000.0 * 50) > bits) continue;
      fit.push_back(s);
      top = std::max(top, all.at(s).recall);
    }
    // The best recall; within kRecallTie of it, the least error; then the smaller file.
    std::optional<std::string> best;
    for (const std::string& s : fit)
      if (all.at(s).recall >= top - edo::kRecallTie && (!best || all.at(s).rel_error < all.at(*best).rel_error))
        best = s;
    const uint64_t fit_count = fit.size();
    REQUIRE(best);
    CHECK(c.spec() == *best);
    CHECK(c.candidates[c.winner].recall == doctest::Approx(all.at(*best).recall).epsilon(1e-12));
    uint64_t tried = 0;
    for (const edo::ChooserRow& r : c.candidates) {
      CHECK((r.outcome == edo::CandidateOutcome::over_budget) == (r.bits > bits));
      if (r.outcome == edo::CandidateOutcome::tried) ++tried;
    }
    CHECK(tried == fit_count);
  }

  for (const double floor : {0.8, 0.95}) {
    CAPTURE(floor);
    const edo::CodecChoice c =
        edo::choose_codec(*table, edo::parse_auto_spec(fmt::format("auto:recall={}", floor)), opt);
    std::optional<std::string> best;
    for (const std::string& s : specs) {
      const Measured& m = all.at(s);
      if (m.recall < floor) continue;
      const uint64_t bytes = edo::chosen_file_bytes(s, 2000, 50);
      if (!best || bytes < edo::chosen_file_bytes(*best, 2000, 50) ||
          (bytes == edo::chosen_file_bytes(*best, 2000, 50) && m.recall > all.at(*best).recall))
        best = s;
    }
    REQUIRE(best);
    CHECK(c.spec() == *best);
    CHECK(c.candidates[c.winner].recall >= floor);
  }
}

TEST_CASE("codec chooser: a budget no candidate meets fails with the smallest or the best figure") {
  auto whole = edo::io::open_table(edo::test::shared_data("glove.6B.50d.10k.npy"));
  auto table = edo::row_range_view(*whole, {0, 1000});
  edo::ChooseOptions opt;
  try {
    edo::choose_codec(*table, edo::parse_auto_spec("auto:bits=1.5"), opt);
    FAIL("a budget under bin's bits was met");
  } catch (const edo::Error& e) {
    CHECK(e.code() == edo::ExitCode::runtime);
    CHECK(std::string(e.what()).find("the smallest is bin at ") != std::string::npos);
  }
  opt.candidates = {"int2", "int3"};
  try {
    edo::choose_codec(*table, edo::parse_auto_spec("auto:recall=0.99"), opt);
    FAIL("int2 and int3 reached recall@10 0.99 on GloVe");
  } catch (const edo::Error& e) {
    CHECK(e.code() == edo::ExitCode::runtime);
    CHECK(std::string(e.what()).find("no candidate reaches recall@10 >= 0.99") != std::string::npos);
    CHECK(std::string(e.what()).find("the best is int3 at 0.") != std::string::npos);
  }
  // A recall budget stops at the first (smallest) candidate that meets it.
  opt.candidates = {"int8", "fp16", "int2"};
  const edo::CodecChoice c = edo::choose_codec(*table, edo::parse_auto_spec("auto:recall=0.9"), opt);
  CHECK(c.spec() == "int8");
  CHECK(c.candidates.back().spec == "fp16");
  CHECK(c.candidates.back().outcome == edo::CandidateOutcome::larger_not_run);
}
