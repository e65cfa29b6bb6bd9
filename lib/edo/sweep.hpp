// Sweeps: several codecs tried on one table in one run, each written to a
// temporary .edo, evaluated and compared, then removed; the tools' --sweep.
//
// Grammar (every tool's --sweep): items separated by ';', each a tier codec
// the tool accepts (edo-sparsify: a sparse spec, whose form may be `auto`).
#pragma once

#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/table_writer.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace edo {

// The items of a sweep text; usage error on an empty list or item.
std::vector<std::string> parse_sweep(std::string_view text);

struct SweepPoint {
  std::string spec;       // the codec as written to the file (canonical)
  bool baseline = false;  // one of the dense codecs added for comparison
  uint64_t file_bytes = 0;
  double ratio = 0;    // compression_ratio(fp32 bytes, file bytes)
  double density = 1;  // stored values / (rows * dim): 1 for dense codecs
  EvalResult eval;
};

// Writes `table` once per spec (one tier, every row) to a temporary file
// in `dir`, evaluates it against the table with `eval_opt`, and removes it.
// `baselines` are evaluated the same way and marked as such.
std::vector<SweepPoint> run_sweep(io::TableReader& table, const std::vector<std::string>& specs,
                                  const std::vector<std::string>& baselines, const WriteOptions& write,
                                  const EvalOptions& eval_opt, const std::string& dir);

nlohmann::json sweep_json(const std::vector<SweepPoint>& points);
// A table: spec, density, bytes, ratio, then `metrics` (the names of
// EvalResult values; "-" where a point lacks one).
std::string sweep_text(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics);

}  // namespace edo
