// SPDX-License-Identifier: Apache-2.0
// edo-eval: what did the compression cost? Recall, reconstruction error,
// memory, optional label accuracy, with gates that fail a CI job (exit 3).
#include "cli_common.hpp"
#include "eval_cli.hpp"
#include "model_cli.hpp"

#include <edo/edo_file.hpp>
#include <edo/io/vocab.hpp>
#include <edo/knn.hpp>
#include <edo/model_evaluate.hpp>
#include <edo/reports.hpp>
#include <edo/word_tasks.hpp>

#include <algorithm>
#include <optional>

namespace {

// Nearest neighbours of a few probe rows in the original and the compressed
// table, side by side, by word when a vocabulary is given.
void show_neighbours(const edo::ProbeNeighbours& nb, uint64_t n, const std::vector<std::string>& vocab) {
  const edo::KnnResult& before = nb.original;
  const edo::KnnResult& after = nb.compressed;
  auto name = [&](int64_t id) {
    if (id < 0) return std::string("-");
    return vocab.empty() ? std::to_string(id) : vocab[static_cast<size_t>(id)];
  };
  for (size_t i = 0; i < nb.probes.size(); ++i) {
    std::printf("\n  %s\n  %-24s %s\n", name(static_cast<int64_t>(nb.probes[i])).c_str(), "original", "compressed");
    for (uint64_t r = 0; r < n; ++r) {
      const int64_t a = before.ids_of(i)[r], b = after.ids_of(i)[r];
      const auto& truth = before.ids_of(i);
      const bool kept = std::find(truth.begin(), truth.end(), b) != truth.end();
      std::printf("  %-24s %s%s\n", name(a).c_str(), name(b).c_str(), kept ? "" : "  *");
    }
  }
  std::printf("\n  * not among the original's %llu nearest\n", static_cast<unsigned long long>(n));
}

}  // namespace

// A compressed table of the original's shape.
std::unique_ptr<edo::io::TableReader> open_matching(edo::io::TableReader& original, const std::string& original_path,
                                                    const std::string& path) {
  auto t = edo::open_any_table(path, edo::io::Verify::all);
  if (original.rows() != t->rows() || original.dim() != t->dim())
    EDO_FAIL("{}: shape {} x {} does not match {} ({} x {})", path, t->rows(), t->dim(), original_path, original.rows(),
             original.dim());
  return t;
}

struct WordTasks {
  bool wanted;
  const std::vector<std::string>& words;
  const std::string& vocab_name;
  const edo::WordTaskFiles& files;
};

// Several files against one original: each evaluated (the original's k-NN
// searched once), one table smallest first with the front of bytes against
// the first recall marked, every gate on every file (exit 3 if any fails).
int compare_files(edo::io::TableReader& original, const std::string& original_path,
                  const std::vector<std::string>& paths, const edo::cli::EvalFlags& flags,
                  const std::vector<edo::Gate>& gates, edo::Device dev, const WordTasks& wt, bool json) {
  const edo::EvalOptions eo = flags.options(original.rows(), flags.seed, dev);
  edo::KnnResult truth;
  std::vector<edo::ComparedFile> files;
  for (const std::string& path : paths) {
    auto compressed = open_matching(original, original_path, path);
    edo::ComparedFile f{path, edo::evaluate(original, *compressed, eo, &truth), {}};
    edo::add_memory_metrics(f.result, original, *compressed);
    if (wt.wanted)
      edo::add_word_task_metrics(edo::run_word_tasks(original, *compressed, wt.words, wt.vocab_name, wt.files),
                                 f.result);
    f.outcomes = edo::check_gates(gates, f.result);
    files.push_back(std::move(f));
  }
  const edo::Comparison c =
      edo::compare_files_report(std::move(files), original_path, original.rows(), original.dim(), eo);
  for (const edo::ComparedFile& f : c.files)
    for (const auto& o : f.outcomes)
      if (!o.pass) std::fprintf(stderr, "edo-eval: gate failed: %s: %s\n", f.path.c_str(), o.message.c_str());
  if (!flags.report_json.empty()) edo::cli::write_text_file(flags.report_json, c.json.dump(2) + "\n");
  if (!flags.report_md.empty())
    edo::cli::write_text_file(flags.report_md, "```\n" + c.text + "```\n" + edo::cli::markdown_chart_link(flags));
  if (!flags.report_html.empty()) edo::cli::write_text_file(flags.report_html, edo::comparison_html(c, original_path));
  std::fputs(json ? (c.json.dump(2) + "\n").c_str() : c.text.c_str(), stdout);
  return c.passed ? 0 : static_cast<int>(edo::ExitCode::gate);
}

// MODEL against a model file: each table and the whole, gates per table
// ("NAME:metric>=x") and on the whole; reports as for one table.
int evaluate_model_files(const std::string& original_path, const std::string& compressed_path,
                         const edo::cli::EvalFlags& flags, const edo::cli::ModelFlags& model,
                         const std::vector<std::string>& freq_args, const std::string& freq_dir, edo::Device dev,
                         bool json, bool quiet) {
  if (!flags.query_file.empty() || !flags.labels.empty() || !flags.freq.empty())
    EDO_USAGE_FAIL(
        "--query-file, --labels and --eval-freq take one table; a model takes --freq NAME=counts.npy or "
        "--freq-dir DIR");
  const edo::io::ModelSelection sel = edo::model_eval_selection(original_path, compressed_path, model.tables);
  std::vector<std::string> names;
  for (const auto& t : sel.tables) names.push_back(t.name);
  const std::vector<edo::ModelGate> gates = edo::parse_model_gates(flags.gates, names);
  const auto freq_files = edo::cli::model_freq_files(sel, freq_args, freq_dir);
  if (!quiet && !model.tables.empty())
    std::fprintf(stderr, "edo-eval: %s\n", edo::model_selection_text(sel, model.verbose).c_str());
  // A --k at or beyond the largest table's rows is refused; a smaller table's
  // recall@k at or beyond its own rows counts every row as found.
  uint64_t largest = 0;
  for (const auto& t : sel.tables) largest = std::max(largest, t.rows);
  const edo::EvalOptions eo = flags.options(largest, flags.seed, dev);
  const edo::ModelEval e = edo::evaluate_model(sel, compressed_path, freq_files, eo, gates);
  const std::string recall = edo::cli::front_recall(flags.ks);
  const nlohmann::json j = edo::model_eval_json(e);
  std::fputs(json ? (j.dump(2) + "\n").c_str() : edo::model_eval_text(e, recall).c_str(), stdout);
  if (!flags.report_json.empty()) edo::cli::write_text_file(flags.report_json, j.dump(2) + "\n");
  if (!flags.report_md.empty())
    edo::cli::write_text_file(flags.report_md,
                              edo::model_eval_markdown(e, recall) + edo::cli::markdown_chart_link(flags));
  if (!flags.report_html.empty()) {
    edo::HtmlReport page;
    page.title = fmt::format("edo-eval {} vs {}: {} tables", original_path, compressed_path, e.tables.size());
    page.subject = compressed_path;
    page.model_tables = edo::report_model_tables(e, recall);
    std::vector<edo::GateOutcome> outcomes;
    for (const auto& t : e.tables) outcomes.insert(outcomes.end(), t.outcomes.begin(), t.outcomes.end());
    outcomes.insert(outcomes.end(), e.outcomes.begin(), e.outcomes.end());
    edo::cli::write_text_file(flags.report_html, edo::cli::html_of_result(page, flags, e.model, outcomes));
  }
  bool passed = true;
  for (const auto& t : e.tables)
    for (const auto& o : t.outcomes)
      if (!o.pass) passed = false, std::fprintf(stderr, "edo-eval: gate failed: %s\n", o.message.c_str());
  for (const auto& o : e.outcomes)
    if (!o.pass) passed = false, std::fprintf(stderr, "edo-eval: gate failed: model: %s\n", o.message.c_str());
  return passed ? 0 : static_cast<int>(edo::ExitCode::gate);
}

namespace {

// edo-eval's flags and its run.
struct Eval {
  std::string original_path, device = "auto";
  std::vector<std::string> compressed_paths;
  bool json = false;
  int threads = 0;
  edo::cli::EvalFlags flags;
  uint64_t show = 0;
  std::string vocab;
  std::vector<std::string> probes;
  edo::WordTaskFiles word_tasks;
  bool quiet = false;
  edo::cli::ModelFlags model;
  std::vector<std::string> model_freq;
  std::string model_freq_dir;

  void add_to(CLI::App& app) {
    app.add_option("ORIGINAL", original_path, "The uncompressed table")->required();
    app.add_option("COMPRESSED", compressed_paths,
                   "The compressed table (.edo) or its decoded copy; several: one table comparing them (the\n"
                   "original searched once), smallest first, gates applied to every file")
        ->required();
    flags.add_to(app, true);
    app.add_flag("--json", json, "Print the report as JSON on stdout");
    edo::cli::add_device_option(app, device,
                                "auto (GPU when present), cpu or cuda (an error without a GPU), for the k-NN scores");
    app.add_option("--show-neighbours", show, "Also print the N nearest neighbours of each probe, before and after")
        ->check(CLI::Range(1, 1000));
    app.add_option("--vocab", vocab,
                   "Token of each row, one a line (names neighbours; lets probes be words; the word tasks' words);\n"
                   "word2vec and fastText originals carry their own, and so does a .edo that stores its words");
    app.add_option("--analogies", word_tasks.analogies,
                   "Analogy questions (word2vec's questions-words.txt layout): accuracy by 3CosAdd and 3CosMul over\n"
                   "the whole vocabulary, original and compressed (needs a vocabulary; docs/EVAL.md)");
    app.add_option("--similarity", word_tasks.similarity,
                   "Word pairs with human scores (WordSim-353, SimLex-999 layouts): Spearman rho of cosine,\n"
                   "original and compressed, named by the file's stem; repeatable (needs a vocabulary)");
    app.add_flag("--skip-bad-lines", word_tasks.skip_bad_lines,
                 "Count and leave out malformed lines of the word-task files instead of failing");
    app.add_option("--probe", probes,
                   "Row (or word, with a vocabulary) to show neighbours of; repeatable (default: rows 0-4, or\n"
                   "'king', 'france', 'computer', 'water', 'run' when they are in the vocabulary)");
    model.add_to(app);
    app.add_option("--freq", model_freq,
                   "A model's lookup counts of one table, NAME=counts.npy (repeatable): per-table w.* metrics and the\n"
                   "table's share of the model's lookups (a table without counts: one lookup a row)");
    app.add_option("--freq-dir", model_freq_dir, "A model's counts as DIR/NAME.npy ('/' in a name written '__')");
    edo::cli::add_run_options(
        app, threads, quiet,
        "Taken as every tool takes it; edo-eval prints no progress (a failed gate always prints its line)");
  }

  int run() {
    edo::cli::apply_threads(threads);
    if (show > 0 && json) EDO_USAGE_FAIL("--show-neighbours prints a table; use it without --json");
    const bool words = !word_tasks.analogies.empty() || !word_tasks.similarity.empty();
    edo::cli::PathGuard paths;
    paths.input(original_path);
    for (const std::string& f : compressed_paths) paths.input(f);
    paths.input(vocab).input(word_tasks.analogies);
    for (const std::string& f : word_tasks.similarity) paths.input(f);
    paths.input(model_freq_dir);
    flags.add_paths(paths);
    paths.check();
    const edo::Device dev = edo::select_device(device);
    if (compressed_paths.size() == 1 && edo::is_model_file(compressed_paths.front())) {
      if (show > 0 || words || !vocab.empty() || !probes.empty())
        EDO_USAGE_FAIL("--show-neighbours, --vocab, --probe and the word tasks take one table, not a model");
      if (!edo::io::is_model_spec(original_path))
        EDO_USAGE_FAIL(
            "{} is a model file: give the model it was made from as ORIGINAL (a .safetensors, .npz, HDF5 "
            "file or folder of .npy)",
            compressed_paths.front());
      return evaluate_model_files(original_path, compressed_paths.front(), flags, model, model_freq, model_freq_dir,
                                  dev, json, quiet);
    }
    if (!model.tables.empty() || !model_freq.empty() || !model_freq_dir.empty())
      EDO_USAGE_FAIL("--tables, --freq and --freq-dir go with a model file as COMPRESSED");
    const auto gates = flags.parsed_gates();
    auto original = edo::open_any_table(original_path, edo::io::Verify::all);
    // The words: --vocab, else those the original table carries (word2vec, fastText).
    std::vector<std::string> words_of_rows;
    std::string vocab_name = vocab;
    if (!vocab.empty()) {
      words_of_rows = edo::io::read_vocab(vocab, original->rows());
    } else if (const auto* own = original->vocabulary()) {
      words_of_rows = *own;
      vocab_name = original_path + " (its words)";
    } else if (auto first = edo::open_any_table(compressed_paths.front()); first->vocabulary()) {
      // A .edo that stores the words of its rows (FORMAT.md 9.7).
      if (first->rows() == original->rows()) words_of_rows = *first->vocabulary();
      vocab_name = compressed_paths.front() + " (its words)";
    }
    if (words && words_of_rows.empty())
      EDO_USAGE_FAIL("--analogies and --similarity match words: give --vocab (or a word2vec/fastText original)");
    if (compressed_paths.size() > 1) {
      if (show > 0) EDO_USAGE_FAIL("--show-neighbours compares one file; give one COMPRESSED");
      const WordTasks wt{words, words_of_rows, vocab_name, word_tasks};
      return compare_files(*original, original_path, compressed_paths, flags, gates, dev, wt, json);
    }
    const std::string& compressed_path = compressed_paths.front();
    auto compressed = open_matching(*original, original_path, compressed_path);
    edo::EvalOptions eo = flags.options(original->rows(), flags.seed, dev);
    const auto* edo_file = dynamic_cast<const edo::EdoTable*>(compressed.get());
    if (edo_file && edo_file->reader().tiers().size() > 1) edo::group_by_tier(eo, edo_file->reader());
    edo::EvalResult result = edo::evaluate(*original, *compressed, eo);
    edo::add_memory_metrics(result, *original, *compressed);
    edo::WordTaskReport word_report;
    if (words) {
      word_report = edo::run_word_tasks(*original, *compressed, words_of_rows, vocab_name, word_tasks);
      edo::add_word_task_metrics(word_report, result);
    }
    const auto outcomes = edo::check_gates(gates, result);
    std::string report;
    if (json) {
      nlohmann::json j = edo::to_json(result, outcomes);
      if (words) j["word_tasks"] = edo::word_task_json(word_report);
      report = j.dump(2) + "\n";
    } else {
      report = edo::to_text(result, outcomes, original_path, compressed_path);
      if (words) report += edo::word_task_text(word_report);
    }
    std::fputs(report.c_str(), stdout);
    // One probe search serves the printed neighbours and the HTML report's.
    const bool html_words = !flags.report_html.empty() && !words_of_rows.empty();
    std::optional<edo::ProbeNeighbours> nb;
    if (show > 0 || html_words)
      nb = edo::probe_neighbours(*original, *compressed,
                                 edo::probe_rows(probes, words_of_rows, original->rows(), vocab_name), result.metric,
                                 dev, show > 0 ? show : 8);
    if (show > 0) show_neighbours(*nb, show, words_of_rows);
    edo::HtmlReport page;
    if (!flags.report_html.empty()) {
      page.title = fmt::format("edo-eval {} vs {}", original_path, compressed_path);
      page.subject = compressed_path;
      if (edo_file) page.tiers = edo::cli::report_tiers(edo_file->reader());
      if (html_words) page.neighbours = edo::cli::report_neighbours(*nb, words_of_rows);
    }
    return edo::cli::finish_gates("edo-eval", flags, result, outcomes, page);
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Compare an original table with a compressed one (.edo, or a decoded npy/HDF5 table), or a model with a\n"
      "model file (FORMAT.md 10) table by table.\n"
      "Metrics and the JSON report schema: docs/EVAL.md. A failed --gate exits 3.\n\n"
      "Examples:\n"
      "  edo-eval glove.npy glove.int8.edo\n"
      "  edo-eval glove.npy glove.int4.edo --gate 'recall@10>=0.9' --gate 'cos.min>=0.95' --report-md summary.md\n"
      "  edo-eval sift.npy sift.edo --metric l2 --k 1,10 --queries 500 --json\n"
      "  edo-eval glove.npy glove.bin.edo --show-neighbours 8 --vocab glove.vocab.txt --probe king --probe paris\n"
      "  edo-eval glove.npy int8.edo int4.edo pq.edo --gate 'recall@10>=0.9'    (one table; every file gated)\n"
      "  edo-eval glove.npy glove.int4.edo --vocab glove.vocab.txt --analogies questions-words.txt \\\n"
      "      --similarity wordsim353.tsv --similarity simlex999.txt --gate 'analogy.3cosadd.drop<=0.01'\n"
      "  edo-eval model.safetensors model.edo --gate 'emb.words.weight:recall@10>=0.95' --gate 'recall@10>=0.9'\n"
      "      (a model: each table and the whole, weighted by shares of lookups; --freq NAME=counts.npy, --freq-dir)",
      "edo-eval"};
  Eval tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-eval");

  return edo::cli::run_tool("edo-eval", app, argc, argv, [&] { return tool.run(); });
}
