// SPDX-License-Identifier: Apache-2.0
// The evaluation flags shared by edo-eval and the tools' --eval: one set of
// options, one way to run the engine, gates and reports.
#pragma once

#include "cli_common.hpp"

#include <edo/edo_file.hpp>
#include <edo/eval.hpp>
#include <edo/gates.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/report_html.hpp>
#include <edo/reports.hpp>
#include <edo/sweep.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace edo::cli {

struct EvalFlags {
  std::string metric = "cos";
  std::vector<uint64_t> ks = {1, 10, 100};
  uint64_t queries = 1000;
  std::string query_file;  // text: one row id a line
  std::string labels;      // text: one integer class a line, one line a row
  std::string freq;
  std::vector<std::string> gates;
  uint64_t bags = 1000, bag_size = 20, dot_pairs = 2000;
  std::string report_json, report_md, report_html;
  uint64_t seed = 0;
  CLI::Option* k_option_ = nullptr;  // --k, to tell a given k from the default

  // `with_seed`: edo-eval owns --seed; the tools share theirs.
  void add_to(CLI::App& app, bool with_seed) {
    app.add_option("--metric", metric, "k-NN metric: cos, ip or l2 (default cos)")
        ->check(CLI::IsMember({"cos", "ip", "l2"}));
    k_option_ = app.add_option("--k", ks,
                               "Neighbour counts for recall@k, comma separated (default 1,10,100); each below the\n"
                               "table's rows")
                    ->delimiter(',')
                    ->check(CLI::PositiveNumber);
    app.add_option("--queries", queries, "Query rows sampled with the seed (default 1000)")->check(CLI::PositiveNumber);
    app.add_option("--query-file", query_file, "Query row ids, one a line (replaces --queries)");
    app.add_option("--labels", labels, "One integer class a line, one line a row: adds k-NN accuracy");
    app.add_option("--eval-freq", freq,
                   "Per-row lookup counts (npy or 'id count' text): adds access-weighted w.* metrics");
    app.add_option("--bag-size", bag_size,
                   "Ids in each sum-pooled bag of the bag.* proxies, drawn by --eval-freq or uniformly (default 20)")
        ->check(CLI::Range(uint64_t{1}, kMaxProxyDraws));
    app.add_option("--bags", bags, "Bags for the bag.* proxies; 0 leaves them out (default 1000)")
        ->check(CLI::Range(uint64_t{0}, kMaxProxyDraws));
    app.add_option("--dot-pairs", dot_pairs, "Id pairs for the dot.* proxies; 0 leaves them out (default 2000)")
        ->check(CLI::Range(uint64_t{0}, kMaxProxyDraws));
    app.add_option("--gate", gates,
                   "Quality gate, e.g. 'recall@10>=0.95', 'recall_drop@10<=0.01', 'cos.min>=0.98', 'ratio>=4';\n"
                   "repeatable; any failure exits 3");
    app.add_option("--report-json", report_json, "Write the metrics and gates as JSON to this file");
    app.add_option("--report-md", report_md, "Write a Markdown report (for a CI job summary) to this file");
    app.add_option("--report-html", report_html,
                   "Write a self-contained HTML report (charts as inline SVG, nothing fetched) to this file");
    if (with_seed) app.add_option("--seed", seed, "Seed of the query sample (default 0)");
  }

  // The files these flags read and the reports they write.
  void add_paths(PathGuard& paths) const {
    paths.input(query_file).input(labels).input(freq);
    paths.output("--report-json", report_json).output("--report-md", report_md).output("--report-html", report_html);
  }

  std::vector<Gate> parsed_gates() const {
    std::vector<Gate> out;
    for (const auto& g : gates) out.push_back(parse_gate(g));
    return out;
  }

  // `device`: where the k-NN scores are computed; a tool passes its own
  // --device, so that its --eval gives what edo-eval --device gives.
  EvalOptions options(uint64_t rows, uint64_t seed_value, Device device = Device::cpu) const {
    EvalOptions o;
    o.device = device;
    o.metric = parse_metric(metric);
    o.ks = ks;
    // A k the user gave that reaches the rows finds every row: recall 1 for
    // any file, and any gate on it passes.
    if (k_option_ && k_option_->count() > 0)
      for (const uint64_t k : ks)
        if (k >= rows)
          EDO_USAGE_FAIL("--k {}: the table has {} rows; recall@k needs k below them (every row would count as found)",
                         k, rows);
    o.queries = queries;
    o.seed = seed_value;
    o.bags = bags;
    o.bag_size = bag_size;
    o.dot_pairs = dot_pairs;
    if (!query_file.empty()) o.query_ids = read_id_lines(query_file, rows);
    if (!labels.empty()) o.labels = read_labels(labels, rows);
    if (!freq.empty()) {
      o.freq = io::read_frequencies(freq, rows);
      if (std::none_of(o.freq.begin(), o.freq.end(), [](double f) { return f > 0; }))
        EDO_FAIL("{}: every count is 0; access-weighted metrics need at least one lookup", freq);
    }
    return o;
  }

  static std::vector<uint64_t> read_id_lines(const std::string& path, uint64_t rows) {
    std::ifstream f(path);
    if (!f) EDO_FAIL("{}: cannot open", path);
    std::vector<uint64_t> ids;
    std::string line;
    uint64_t lineno = 0;
    while (std::getline(f, line)) {
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
      size_t used = 0;
      unsigned long long v = 0;
      try {
        v = std::stoull(line, &used);
      } catch (const std::exception&) {
        EDO_FAIL("{}:{}: not a row id: '{}'", path, lineno, line);
      }
      if (v >= rows) EDO_FAIL("{}:{}: row id {} is outside the table ({} rows)", path, lineno, v, rows);
      ids.push_back(v);
    }
    if (ids.empty()) EDO_FAIL("{}: no query ids", path);
    return ids;
  }

  static std::vector<int64_t> read_labels(const std::string& path, uint64_t rows) {
    std::ifstream f(path);
    if (!f) EDO_FAIL("{}: cannot open", path);
    std::vector<int64_t> out;
    out.reserve(rows);
    std::string line;
    while (std::getline(f, line)) {
      if (out.size() == rows) EDO_FAIL("{}: more than {} labels (one a row)", path, rows);
      size_t used = 0;
      long long v = 0;
      try {
        v = std::stoll(line, &used);
      } catch (const std::exception&) {
        EDO_FAIL("{}:{}: not an integer label: '{}'", path, out.size() + 1, line);
      }
      out.push_back(v);
    }
    if (out.size() != rows) EDO_FAIL("{}: {} labels for {} rows", path, out.size(), rows);
    return out;
  }
};

// Where a tool writes its output before --eval has passed: the output itself
// without evaluation, else an intermediate beside it that is removed when
// this goes out of scope (the evaluated file is republished from it).
class EvalTarget {
 public:
  EvalTarget(const std::string& output, bool evaluate)
      : path_(evaluate ? output + ".unevaluated-" + std::to_string(::getpid()) : output), owned_(evaluate) {
    if (owned_) cleanup_.arm(path_);
  }
  ~EvalTarget() {
    if (owned_) ::unlink(path_.c_str());
  }
  EvalTarget(const EvalTarget&) = delete;
  EvalTarget& operator=(const EvalTarget&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_;
  io::CleanupOnSignal cleanup_;
};

// Reports appear whole or not at all, like every other output.
inline void write_text_file(const std::string& path, const std::string& text) {
  io::AtomicFile f(path);
  f.write(text.data(), text.size());
  f.commit();
}

// The front of bytes against recall (edo/reports.hpp), as the tools name it.
using edo::front_recall;
using edo::pareto_front;

// Prints the metrics table (metrics_text) to stdout.
inline void print_metrics(const EvalResult& r) { std::fputs(metrics_text(r).c_str(), stdout); }

// The summary a tool that writes a .edo prints: with `json`, its report plus
// input, output, whether it was written and the evaluation; else a header
// line, `text` (the report) and the evaluation with its gates.
inline void print_write_summary(bool json, nlohmann::json report, const std::string& text, const std::string& input,
                                const std::string& output, int code, bool evaluated, const EvalResult& result,
                                const std::vector<GateOutcome>& outcomes) {
  // The size on disk: the file's figures leave out the --eval record that
  // the manifest gains once the gates pass (written_file_bytes()), so that
  // the ratio a file records is the one edo-eval measures on it later.
  struct stat st {};
  const bool published = code == 0 && !io::is_special_output(output) && ::stat(output.c_str(), &st) == 0;
  const uint64_t on_disk = published ? static_cast<uint64_t>(st.st_size) : 0;
  if (json) {
    report["input"] = input;
    report["output"] = output;
    report["written"] = code == 0;
    if (published) report["file_bytes_on_disk"] = on_disk;
    if (evaluated) report["eval"] = to_json(result, outcomes);
    std::puts(report.dump(2).c_str());
    return;
  }
  std::printf("%s -> %s%s\n", input.c_str(), output.c_str(), code == 0 ? "" : " (not written: a gate failed)");
  std::fputs(text.c_str(), stdout);
  if (!evaluated) return;
  if (published)
    std::printf("  on disk    %llu bytes: the sizes above leave out the evaluation record in its manifest\n",
                static_cast<unsigned long long>(on_disk));
  std::printf("  evaluation (%s)\n", metric_name(result.metric));
  print_metrics(result);
  for (const auto& o : outcomes) std::printf("  gate %s\n", o.message.c_str());
}

// The HTML report's neighbour table from a probe search (probe_neighbours),
// by word.
inline std::vector<ReportNeighbours> report_neighbours(const ProbeNeighbours& nb,
                                                       const std::vector<std::string>& vocab) {
  std::vector<ReportNeighbours> out;
  for (size_t i = 0; i < nb.probes.size(); ++i) {
    ReportNeighbours r{vocab[nb.probes[i]], {}, {}};
    for (int64_t id : nb.original.ids_of(i))
      if (id >= 0) r.before.push_back(vocab[static_cast<size_t>(id)]);
    for (int64_t id : nb.compressed.ids_of(i))
      if (id >= 0) r.after.push_back(vocab[static_cast<size_t>(id)]);
    out.push_back(std::move(r));
  }
  return out;
}

// The same for the well-known probe words (probe_rows) and their 8 nearest.
inline std::vector<ReportNeighbours> report_neighbours(io::TableReader& original, io::TableReader& compressed,
                                                       Metric metric, Device device,
                                                       const std::vector<std::string>& vocab,
                                                       const std::string& vocab_path) {
  const std::vector<uint64_t> ids = probe_rows({}, vocab, original.rows(), vocab_path);
  return report_neighbours(probe_neighbours(original, compressed, ids, metric, device, 8), vocab);
}

// The tiers of an open .edo file, for the HTML report's bytes chart.
inline std::vector<ReportTier> report_tiers(const Reader& reader) {
  std::vector<ReportTier> out;
  for (const TierStats& t : reader.tiers()) out.push_back({t.name, t.codec, t.residency, t.rows, t.bytes});
  return out;
}

// The HTML page of one evaluation, `page` holding what the caller knows
// beyond the result (title, tiers, neighbours): the file is one point on the
// recall chart, next to fp32.
inline std::string html_of_result(HtmlReport page, const EvalFlags& flags, const EvalResult& result,
                                  const std::vector<GateOutcome>& outcomes) {
  page.recall_name = front_recall(flags.ks);
  page.result = &result;
  page.gates = outcomes;
  page.fp32_bytes = result.get("bytes_before").value_or(0);
  page.fp32_analogy = result.get("analogy.3cosadd.original").value_or(NAN);
  if (page.points.empty() && result.has("bytes_after"))
    page.points.push_back({page.subject.empty() ? page.title : page.subject, result.at("bytes_after"),
                           result.get(page.recall_name).value_or(NAN), result.get("analogy.3cosadd").value_or(NAN),
                           true, true});
  return to_html(page);
}

// Markdown's pointer to the charts: the HTML file's name, relative to the
// Markdown file when they share a folder.
inline std::string markdown_chart_link(const EvalFlags& flags) {
  if (flags.report_html.empty() || flags.report_md.empty()) return "";
  const std::filesystem::path html(flags.report_html), md(flags.report_md);
  const std::string target = html.parent_path() == md.parent_path() ? html.filename().string() : flags.report_html;
  return fmt::format("\nCharts: [{}]({})\n", target, target);
}

// --report-html of a sweep: every item on the recall-against-bytes chart,
// and as a table of `metrics`. Written when the flags ask for it.
inline void write_sweep_html(const EvalFlags& flags, const std::vector<SweepPoint>& points,
                             const std::vector<std::string>& metrics, io::TableReader& table) {
  if (flags.report_html.empty()) return;
  const std::string title =
      fmt::format("sweep of {} ({} x {}), {} items", table.path(), table.rows(), table.dim(), points.size());
  write_text_file(flags.report_html, sweep_html(points, metrics, title, front_recall(flags.ks),
                                                static_cast<double>(table.rows() * table.dim() * sizeof(float))));
}

// Writes the requested reports, prints failed gates on stderr, returns the
// exit code (0 or 3). `page`: the HTML report's context (title, tiers).
inline int finish_gates(const char* tool, const EvalFlags& flags, const EvalResult& result,
                        const std::vector<GateOutcome>& outcomes, const HtmlReport& page = {}) {
  if (!flags.report_json.empty()) write_text_file(flags.report_json, to_json(result, outcomes).dump(2) + "\n");
  if (!flags.report_md.empty())
    write_text_file(flags.report_md, to_markdown(result, outcomes) + markdown_chart_link(flags));
  if (!flags.report_html.empty()) {
    HtmlReport named = page;
    if (named.title.empty()) named.title = std::string(tool) + " evaluation";
    write_text_file(flags.report_html, html_of_result(std::move(named), flags, result, outcomes));
  }
  int code = 0;
  for (const auto& o : outcomes) {
    if (!o.pass) {
      std::fprintf(stderr, "%s: gate failed: %s\n", tool, o.message.c_str());
      code = static_cast<int>(ExitCode::gate);
    }
  }
  return code;
}

// --eval of a tool that packs (edo-pack, edo-sparsify, edo-hash): the file
// at `target` measured against `table` (per-tier metrics, memory, residency
// when `rep` is given), its gates checked and reports written, and on a pass
// republished to `output` with the evaluation in its manifest. Returns the
// exit code (0 or 3).
inline int evaluate_packed(const char* tool, const EvalFlags& flags, const std::vector<Gate>& gates,
                           io::TableReader& table, const std::string& target, const std::string& output,
                           const std::vector<double>& freq, uint64_t seed, Device device, const PackReport* rep,
                           EvalResult& result, std::vector<GateOutcome>& outcomes) {
  auto packed = EdoTable::open(target);
  EvalOptions eo = flags.options(table.rows(), seed, device);
  if (eo.freq.empty()) eo.freq = freq;
  group_by_tier(eo, packed->reader());
  result = evaluate(table, *packed, eo);
  add_memory_metrics(result, table, *packed);
  if (rep) add_residency_metrics(result, *rep);
  outcomes = check_gates(gates, result);
  HtmlReport page;
  page.title = fmt::format("{} {} -> {}", tool, table.path(), output);
  page.subject = output;
  page.tiers = report_tiers(packed->reader());
  if (const auto* words = packed->vocabulary(); words && !flags.report_html.empty())
    page.neighbours = report_neighbours(table, *packed, eo.metric, device, *words, table.path());
  const int code = finish_gates(tool, flags, result, outcomes, page);
  if (code == 0) republish_with_manifest(target, output, {{"eval", to_json(result, outcomes)}});
  return code;
}

}  // namespace edo::cli
