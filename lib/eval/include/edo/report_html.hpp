// SPDX-License-Identifier: Apache-2.0
// The HTML report (--report-html): one self-contained page, charts drawn as
// inline SVG, no scripts, nothing fetched. What it shows and why: docs/EVAL.md,
// "HTML report".
#pragma once

#include <edo/eval.hpp>
#include <edo/gates.hpp>
#include <edo/residency.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace edo {

// One compressed form on the recall-against-bytes chart: a file compared, a
// swept codec or a plan candidate.
struct ReportPoint {
  std::string label;
  double bytes = 0;
  double recall = NAN;   // HtmlReport::recall_name
  double analogy = NAN;  // compressed analogy accuracy (3CosAdd), when the word tasks ran
  bool front = false;    // on the Pareto front of bytes against recall
  bool chosen = false;   // the file written, the plan chosen
};

// One tier of a file, for the bytes-by-tier-and-residency chart.
struct ReportTier {
  std::string name, codec;
  Residency residency = Residency::host;
  uint64_t rows = 0, bytes = 0;
};

// A probe's nearest words (or rows) in the original and the compressed table.
struct ReportNeighbours {
  std::string probe;
  std::vector<std::string> before, after;
};

// One table of a model (edo-eval MODEL model.edo), for the table-by-table section.
struct ReportModelTable {
  std::string name;
  uint64_t rows = 0;
  double bytes_before = 0, bytes_after = 0;  // fp32, as stored
  double ratio = NAN, recall = NAN;          // recall: HtmlReport::recall_name
  double share = NAN;                        // of the model's lookups
};

struct HtmlReport {
  std::string title;    // e.g. "edo-pack glove.npy -> glove.edo"
  std::string subject;  // the file evaluated: its point's label when the caller gives no points
  std::string recall_name = "recall@10";
  double fp32_bytes = 0;            // the uncompressed table: the reference point (recall 1)
  double fp32_analogy = NAN;        // the original's analogy accuracy, when known
  std::vector<ReportPoint> points;  // any order; drawn by bytes
  std::vector<ReportTier> tiers;
  // The evaluation shown in detail (metrics table, cosine distribution,
  // head/torso/tail), or null (a comparison without one file in focus).
  const EvalResult* result = nullptr;
  std::vector<GateOutcome> gates;
  std::vector<ReportNeighbours> neighbours;
  // Extra tables shown as they are: {caption, header cells, rows of cells}.
  struct Table {
    std::string caption;
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
  };
  std::vector<Table> tables;
  // A model's tables, one row each (a "Table by table" section), the last
  // row the whole model when its name is "model".
  std::vector<ReportModelTable> model_tables;
};

// The page. Each chart is one <svg> with an id: "recall-bytes" (when there
// are points), "tier-bytes" (tiers), "cos-hist" (a result with a cosine
// histogram) and "buckets" (a result with head/torso/tail figures).
std::string to_html(const HtmlReport& report);

}  // namespace edo
