// SPDX-License-Identifier: Apache-2.0
// The codec chooser on a model (edo-quantize MODEL --codec auto:bits=B or
// auto:recall=R; docs/QUANTIZE.md, "Choosing a codec"): the budget is the
// model's, not each table's. auto:bits=B: the file's bits a value over all
// the model's values at most B, each table's codec chosen so that the
// share-weighted recall@10 is as high as it can be (a tiny table may take
// more bits, stored whole when that is cheapest). auto:recall=R: the
// fewest bytes whose share-weighted recall@K reaches R. Shares as the joint
// plan's (lookup_shares): by counts when every table has them, else by rows.
#pragma once

#include <edo/codec_chooser.hpp>
#include <edo/joint_plan.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace edo {

struct ModelCodecChoice {
  ChooseBudget budget;
  std::vector<CodecChoice> tables;  // each table's scored candidates; winner: the model's pick
  std::vector<double> shares;       // each table's share of the model's lookups
  uint64_t values = 0;              // rows x dim over the tables
  uint64_t bytes = 0;               // the chosen files' bytes together (codes, state, container)
  double bits = 0;                  // bytes x 8 / values
  double recall = 0;                // sum of shares x each winner's recall on its sample
  std::string reason;
};

// Scores every table's candidates (score_codec_candidates: for a bits budget
// those within the whole model's bytes, for a recall budget up to the first
// that reaches it) and picks one a table by an exact allocation over their
// (bytes, share x (1 - recall)) fronts. Runtime error when no choice meets
// the budget, naming the smallest reachable bits a value (or the best
// recall) and the table that takes the most of it.
// The tables' weights are not used: shares alone weigh them (lookup_shares).
ModelCodecChoice choose_model_codecs(const std::vector<JointTable>& tables, const ChooseBudget& budget,
                                     const ChooseOptions& opt);

// One line a table (its pick, bits and recall) and the model's line, for stderr.
std::string model_codec_choice_text(const ModelCodecChoice& choice);

}  // namespace edo
