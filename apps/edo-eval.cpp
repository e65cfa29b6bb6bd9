// edo-eval: what did the compression cost? Recall, reconstruction error,
// memory, optional label accuracy, with gates that fail a CI job (exit 3).
#include "cli_common.hpp"
#include "eval_cli.hpp"

#include <edo/edo_file.hpp>

int main(int argc, char** argv) {
  CLI::App app{
      "Compare an original table with a compressed one (.edo, or a decoded npy/HDF5 table).\n"
      "Metrics and the JSON report schema: docs/EVAL.md. A failed --gate exits 3.\n\n"
      "Examples:\n"
      "  edo-eval glove.npy glove.int8.edo\n"
      "  edo-eval glove.npy glove.int4.edo --gate 'recall@10>=0.9' --gate 'cos.min>=0.95' --report-md summary.md\n"
      "  edo-eval sift.npy sift.edo --metric l2 --k 1,10 --queries 500 --json",
      "edo-eval"};
  std::string original_path, compressed_path;
  bool json = false;
  int threads = 0;
  edo::cli::EvalFlags flags;
  app.add_option("ORIGINAL", original_path, "The uncompressed table")->required();
  app.add_option("COMPRESSED", compressed_path, "The compressed table (.edo) or its decoded copy")->required();
  flags.add_to(app, true);
  app.add_flag("--json", json, "Print the report as JSON on stdout");
  edo::cli::add_threads_option(app, threads);
  edo::cli::add_version_flag(app, "edo-eval");

  return edo::cli::run_tool("edo-eval", app, argc, argv, [&] {
    edo::cli::apply_threads(threads);
    const auto gates = flags.parsed_gates();
    auto original = edo::open_any_table(original_path);
    auto compressed = edo::open_any_table(compressed_path);
    if (original->rows() != compressed->rows() || original->dim() != compressed->dim())
      EDO_FAIL("{}: shape {} x {} does not match {} ({} x {})", compressed_path, compressed->rows(), compressed->dim(),
               original_path, original->rows(), original->dim());
    edo::EvalResult result = edo::evaluate(*original, *compressed, flags.options(original->rows(), flags.seed));
    edo::add_memory_metrics(result, *original, *compressed);
    const auto outcomes = edo::check_gates(gates, result);
    if (json) {
      std::puts(edo::to_json(result, outcomes).dump(2).c_str());
    } else {
      std::printf("%s vs %s (%s)\n", original_path.c_str(), compressed_path.c_str(), edo::metric_name(result.metric));
      edo::cli::print_metrics(result);
      for (const auto& o : outcomes) std::printf("  gate %s\n", o.message.c_str());
    }
    return edo::cli::finish_gates("edo-eval", flags, result, outcomes);
  });
}
