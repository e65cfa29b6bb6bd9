// SPDX-License-Identifier: Apache-2.0
// Choosing a codec for the user: edo-quantize's `--codec auto:bits=B` (the
// best recall@10 within B bits a value) and `--codec auto:recall=R[,k=K]`
// (the fewest bytes with recall@K >= R). A fixed list of codec spellings,
// those on the frontier of some real table in docs/BENCHMARKS.md, is sized
// for the table at hand (codes, trained state and the container, amortized
// over the rows), filtered by the budget before any trial, and each
// survivor is trained on a seeded sample of the table, encoded, decoded and
// scored as edo-eval scores a file: recall@k of the sample's query rows
// against the fp32 sample's own neighbours, the query row excluded.
#pragma once

#include <edo/device.hpp>
#include <edo/matrix.hpp>

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace edo {

namespace io {
class TableReader;
}

enum class ChooseGoal : uint8_t {
  best_recall_within_bits,  // auto:bits=B
  fewest_bytes_reaching,    // auto:recall=R[,k=K]
};

struct ChooseBudget {
  ChooseGoal goal = ChooseGoal::best_recall_within_bits;
  double bits = 0;    // best_recall_within_bits: bits a value at most (>= 1)
  double recall = 0;  // fewest_bytes_reaching: recall@k at least (in (0, 1])
  uint64_t k = 10;    // the recall's k
  std::string text;   // as the user wrote it, for messages
};

// Whether a codec spec asks the chooser ("auto" or "auto:...").
bool is_auto_spec(std::string_view spec);
// Parses "auto:bits=B" or "auto:recall=R[,k=K]". Usage error on no budget,
// two budgets, a bits budget under 1, a recall outside (0, 1], a k of 0 or
// a k with a bits budget (which always ranks by recall@10).
ChooseBudget parse_auto_spec(std::string_view spec);

// Bytes a codec's trained state takes in the file (codebooks, bases, means:
// what Codec::state() returns after training, in its storage), from the
// spec alone, with no training; 0 for codecs that train nothing.
uint64_t codec_state_bytes(std::string_view spec, uint64_t dim);

// What the container adds to a one-tier file beyond codes and state
// (header, manifest, section table and alignment): an upper bound, so a
// file the chooser sized within a budget is within it on disk.
inline constexpr uint64_t kContainerAllowanceBytes = 4096;

// Bytes of a one-tier file of `rows` rows in `spec`: codes, state and the
// container allowance.
uint64_t chosen_file_bytes(std::string_view spec, uint64_t rows, uint64_t dim);

// The candidate spellings for a table of `rows` x `dim` (canonical specs),
// smallest code first: the scalar and grouped codecs with fp16 scales, rot
// chains, tc, pq and rq with int8 codebooks; the spellings a width cannot
// take are left out, and so are the trained codecs whose training on a
// `sample_rows` sample would take more than about ten seconds.
std::vector<std::string> chooser_candidates(uint64_t rows, uint64_t dim, uint64_t sample_rows);

struct ChooseOptions {
  Metric metric = Metric::cos;
  uint64_t sample_rows = 10000;  // seeded sample the candidates train and are scored on
  uint64_t queries = 1000;       // query rows of the sample (edo-eval's --queries)
  uint64_t seed = 0;
  Device device = Device::cpu;  // the k-NN's device
  bool allow_nonfinite = false, allow_underflow = false;
  // Empty: chooser_candidates(). Given: these specs (usage error on a bad one).
  std::vector<std::string> candidates;
  // A recall goal's k at or beyond the sample's rows is a usage error (every
  // row would count as found); false: allowed (a model's tiny tables).
  bool refuse_k_beyond_rows = true;
  // Progress lines ("trying tc:bits=4 (3/12)"); empty for none.
  std::function<void(const std::string&)> note;
};

enum class CandidateOutcome : uint8_t {
  over_budget,     // more bits than the budget: never tried
  tried,           // trained, encoded and scored
  refused,         // the codec refused the sample's rows (the reason in `why`)
  larger_not_run,  // recall goal: a smaller candidate already reached it
};
const char* candidate_outcome_name(CandidateOutcome o);

struct ChooserRow {
  std::string spec;
  uint64_t file_bytes = 0;  // chosen_file_bytes() for the whole table
  uint64_t state_bytes = 0;
  double bits = 0;  // file_bytes * 8 / (rows * dim)
  CandidateOutcome outcome = CandidateOutcome::over_budget;
  double recall = 0;     // recall@k on the sample, when tried
  double rel_error = 0;  // relative Frobenius error on the sample (edo-eval's rel_fro), when tried
  double seconds = 0;    // training, encoding, decoding and scoring
  std::string why;       // a refusal's message
  // Within kRecallTie of the best on the sample, so scored again on a sample
  // four times larger (rescore_recall, rescore_rel_error) before choosing.
  bool rescored = false;
  double rescore_recall = 0, rescore_rel_error = 0;
};

struct CodecChoice {
  ChooseBudget budget;
  uint64_t rows = 0, dim = 0, sample_rows = 0, queries = 0;
  Metric metric = Metric::cos;
  std::vector<ChooserRow> candidates;  // smallest file first
  size_t winner = 0;                   // index into candidates
  std::string reason;                  // one sentence: why the winner won
  double seconds = 0;                  // the whole choice, sample read included
  uint64_t rescored_rows = 0;          // the larger sample near-ties were scored on (0: none)
  double tie_window = 0;               // recalls this close to the best were near-ties (rescore_ties)
  const std::string& spec() const { return candidates[winner].spec; }
};

// A bits budget ranks by recall@10, but recalls this close to the best are
// ties, broken by the smaller relative error (then the smaller file): over
// 1000 query rows two codecs' recall@10 differ by about this much from the
// draw of the queries alone, while their errors over every sample row do not.
inline constexpr double kRecallTie = 0.001;

// How close to the best a recall p over `found` neighbours (queries x k) is a
// near-tie that more queries must decide: two standard errors of it,
// 2 sqrt(p (1 - p) / found), and at least kRecallTie. The chooser and the
// planner's search rescore such candidates.
double recall_tie_window(double p, double found);

// The fewest bytes `rows` rows take in any of `specs` (codes only, no
// trained state): a floor under a plan's data before any training. Usage
// error on a spec that is no codec.
uint64_t least_code_bytes(const std::vector<std::string>& specs, uint64_t rows, uint64_t dim);

// Chooses a codec for `table` within `budget`. Error (exit 1) when no
// candidate fits a bits budget (naming the smallest) or none reaches a
// recall budget on the sample (naming the best). Same table, budget and
// options give the same choice whatever the thread count.
CodecChoice choose_codec(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt);

// The candidates of `table` scored as choose_codec scores them, none chosen
// (winner 0): a bits budget, every candidate of at most `max_bits` bits a
// value and the smallest whatever its bits; a recall budget, in size order
// up to the first that reaches it.
// What a model's choice (edo/model_choice.hpp) chooses among.
CodecChoice score_codec_candidates(io::TableReader& table, const ChooseBudget& budget, const ChooseOptions& opt,
                                   double max_bits);

// The candidate table and the reason, one line a candidate, for stderr.
std::string codec_choice_text(const CodecChoice& choice);
nlohmann::json codec_choice_json(const CodecChoice& choice);

}  // namespace edo
