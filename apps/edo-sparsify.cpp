// edo-sparsify: prune what a table does not need, small values inside rows
// (a sparse tier: csr or bitmap) and the rarest rows (answered by a fallback
// tier), written as a .edo file every reader serves.
#include "cli_common.hpp"
#include "eval_cli.hpp"

#include <edo/edo_file.hpp>
#include <edo/io/freq.hpp>
#include <edo/pack.hpp>
#include <edo/sparse.hpp>
#include <edo/sweep.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace {

struct ValueRule {
  double density = 0;
  uint32_t per_row_k = 0;
  double threshold = 0;
  std::string values = "fp32", form = "auto";
};

// The kept rows' codec: a sparse spec from the value rule (its form chosen
// when auto), else `codec`.
std::string kept_codec(const ValueRule& v, const std::string& codec, edo::io::TableReader& table, bool& chose) {
  const int rules = (v.density > 0) + (v.per_row_k > 0) + (v.threshold > 0);
  if (rules > 1) EDO_USAGE_FAIL("give one of --density, --per-row-k and --threshold");
  if (rules == 0) return codec.empty() ? "fp32" : codec;
  if (!codec.empty()) EDO_USAGE_FAIL("--codec is for kept rows without value pruning; with it use --values");
  const std::string rule = v.density > 0     ? fmt::format("density={}", v.density)
                           : v.per_row_k > 0 ? fmt::format("k={}", v.per_row_k)
                                             : fmt::format("threshold={}", v.threshold);
  std::string form = v.form;
  const std::string probe = "csr:" + rule + ",values=" + v.values;
  const edo::SparseSpec spec = edo::parse_sparse_spec(probe, table.dim());  // usage errors first
  if (form == "auto") {
    chose = true;
    const double d = edo::sparse_expected_density(spec, table, 4096);
    form = edo::smaller_sparse_form(d, table.dim()) == edo::SparseForm::csr ? "csr" : "bitmap";
  }
  return form + ":" + rule + ",values=" + v.values;
}

// `count<N` as the share it names, `rows=M`: the M rows looked up fewer than
// N times, which are the coldest M of the hot order. Empty (nothing to drop,
// said on stderr) when there are none.
std::string rows_below_count(const std::string& drop, const std::vector<double>& freq) {
  const std::string n_text = drop.substr(6);
  double n = 0;
  const auto [end, ec] = std::from_chars(n_text.data(), n_text.data() + n_text.size(), n);
  if (ec != std::errc() || end != n_text.data() + n_text.size() || !(n > 0))
    EDO_USAGE_FAIL("--drop {}: count<N takes a number N > 0", drop);
  const auto m = static_cast<uint64_t>(std::count_if(freq.begin(), freq.end(), [&](double f) { return f < n; }));
  if (m == 0) {
    std::fprintf(stderr, "edo-sparsify: --drop %s: no row is looked up fewer than %g times; nothing dropped\n",
                 drop.c_str(), n);
    return "";
  }
  return fmt::format("rows={}", m);
}

// A sweep item's form `auto` replaced by the smaller form for its expected density.
std::string resolve_auto_form(const std::string& item, edo::io::TableReader& table) {
  if (!item.starts_with("auto:")) return item;
  const std::string rest = item.substr(5);
  const edo::SparseSpec spec = edo::parse_sparse_spec("csr:" + rest, table.dim());
  const double d = edo::sparse_expected_density(spec, table, 4096);
  return (edo::smaller_sparse_form(d, table.dim()) == edo::SparseForm::csr ? "csr:" : "bitmap:") + rest;
}

int run_sweep(const std::string& text, edo::io::TableReader& table, const edo::WriteOptions& write,
              const edo::cli::EvalFlags& flags, uint64_t seed, bool json) {
  std::vector<std::string> items = edo::parse_sweep(text);
  for (std::string& item : items) {
    item = resolve_auto_form(item, table);
    if (!edo::is_sparse_spec(item))
      EDO_USAGE_FAIL("--sweep item '{}': a sparse spec csr|bitmap|auto:density=D|k=K|threshold=T[,values=V]", item);
    edo::parse_sparse_spec(item, table.dim());
  }
  const char* tmp = std::getenv("TMPDIR");
  const edo::EvalOptions eval = flags.options(table.rows(), seed, edo::Device::cpu);
  const std::vector<edo::SweepPoint> points =
      edo::run_sweep(table, items, {"int8", "int4", "int4:group=32"}, write, eval, tmp && *tmp ? tmp : "/tmp");
  if (json) {
    std::puts(nlohmann::json{{"input", table.path()}, {"sweep", edo::sweep_json(points)}}.dump(2).c_str());
    return 0;
  }
  std::vector<std::string> metrics;
  for (uint64_t k : eval.ks) metrics.push_back(fmt::format("recall@{}", k));
  if (!eval.freq.empty())
    for (uint64_t k : eval.ks) metrics.push_back(fmt::format("w.recall@{}", k));
  metrics.push_back("cos.mean");
  std::printf("%s: %llu x %llu, sweep of %zu specs next to dense int8 and int4\n", table.path().c_str(),
              static_cast<unsigned long long>(table.rows()), static_cast<unsigned long long>(table.dim()),
              items.size());
  std::fputs(edo::sweep_text(points, metrics).c_str(), stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Prune an embedding table: small values inside rows (kept as a sparse tier, csr or bitmap) and/or the\n"
      "rarest rows (answered by a fallback: the access-weighted mean of the rows dropped, zeros, the nearest of\n"
      "C centroids, or the nearest kept row). Layout and which form is smaller: docs/FORMAT.md 9.3-9.4; guide:\n"
      "docs/PACK.md.\n\n"
      "Examples:\n"
      "  edo-sparsify glove.npy -o glove.sp.edo --density 0.25 --values int8 --eval\n"
      "  edo-sparsify emb.npy -o emb.edo --per-row-k 16 --form bitmap --values fp16\n"
      "  edo-sparsify glove.npy --sweep 'auto:density=0.1,values=int8;auto:density=0.3,values=int8;csr:k=8'\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop rows=30% --codec int8\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop rows=50% --fallback centroids:256 --eval\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop mass=1% --threshold 0.05 --gate 'w.recall@10>=0.95'",
      "edo-sparsify"};
  std::string input, output, freq_path, codec, drop, fallback = "mean", sweep;
  ValueRule v;
  bool json = false, quiet = false, force = false, run_eval = false;
  int threads = 0;
  uint64_t seed = 0, train_rows = 65536;
  edo::cli::EvalFlags eval_flags;
  app.add_option("INPUT", input, "Table to prune (npy, npz, HDF5, vecs, or - for npy on stdin)");
  app.add_option("-o,--output", output, "Output .edo file");
  app.add_option("--density", v.density, "Keep this share of the values, the largest in magnitude (0 < D <= 1)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--per-row-k", v.per_row_k, "Keep each row's K largest values")->check(CLI::PositiveNumber);
  app.add_option("--threshold", v.threshold, "Keep values whose magnitude is at least T (T > 0)")
      ->check(CLI::PositiveNumber);
  app.add_option("--values", v.values, "Precision of the kept values: fp32 (default), fp16, bf16, int8, int4")
      ->check(CLI::IsMember({"fp32", "fp16", "bf16", "int8", "int4"}));
  app.add_option("--form", v.form, "auto (the smaller for the expected density, default), csr or bitmap")
      ->check(CLI::IsMember({"auto", "csr", "bitmap"}));
  app.add_option("--freq", freq_path, "Per-row access counts (npy or 'id count' text): which rows are rarest");
  app.add_option("--drop", drop,
                 "Rows to drop, rarest first: rows=P%, rows=N, mass=P% or count<N (looked up fewer than N times);\n"
                 "needs --freq");
  app.add_option("--fallback", fallback,
                 "What dropped ids answer: mean (default: one vector, the access-weighted mean of the dropped rows),\n"
                 "zero, centroids:C (C k-means centroids of the dropped rows, each mapped to its nearest), or\n"
                 "nearest[:cos|l2] (each dropped id answered by its nearest kept row; cos by default)");
  app.add_option("--codec", codec, "Codec of the kept rows when values are not pruned (default fp32)");
  app.add_option("--sweep", sweep,
                 "Try several value prunings in one run, nothing written: 'SPEC;SPEC;...', each csr|bitmap|auto:\n"
                 "density=D|k=K|threshold=T[,values=V]; prints density, bytes, ratio, recall and cosine of each\n"
                 "next to dense int8, int4 and int4:group=32 (--json: the same as JSON)");
  app.add_flag("--force", force, "Write a sparse tier even when it is larger than the dense codec at its precision");
  app.add_option("--seed", seed, "Seed for the density fit's sample and evaluation queries (default 0)");
  app.add_option("--train-rows", train_rows, "Rows sampled to fit --density's threshold (default 65536)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--json", json, "Print the summary as JSON on stdout");
  app.add_flag("--eval", run_eval, "Evaluate the result (edo-eval's engine), print and store the metrics");
  eval_flags.add_to(app, false);
  edo::cli::add_threads_option(app, threads);
  app.add_flag("-q,--quiet", quiet, "No progress on stderr");
  edo::cli::add_version_flag(app, "edo-sparsify");

  return edo::cli::run_tool("edo-sparsify", app, argc, argv, [&] {
    if (!sweep.empty()) {
      if (!output.empty() || !drop.empty() || v.density > 0 || v.per_row_k > 0 || v.threshold > 0)
        EDO_USAGE_FAIL("--sweep writes nothing and takes its prunings from its specs: drop -o, --drop and the rules");
      edo::cli::PathGuard paths;
      paths.input(input);
      eval_flags.add_paths(paths);
      paths.check();
      edo::cli::apply_threads(threads);
      auto table = edo::io::open_table(input);
      edo::WriteOptions write;
      write.tool = "edo-sparsify";
      write.seed = seed;
      write.train_rows = train_rows;
      write.allow_larger_sparse = true;  // a sweep shows the sizes, larger or not
      return run_sweep(sweep, *table, write, eval_flags, seed, json);
    }
    if (input.empty() || output.empty()) EDO_USAGE_FAIL("INPUT and -o OUTPUT are required (see --help)");
    if (output == "-") EDO_USAGE_FAIL("-o -: a .edo file is written to a named file, not stdout");
    if (app.count("--density") && !(v.density > 0)) EDO_USAGE_FAIL("--density {} is outside (0, 1]", v.density);
    if (!drop.empty() && freq_path.empty()) EDO_USAGE_FAIL("--drop needs --freq (which rows are rarest)");
    if (drop.empty() && app.count("--fallback")) EDO_USAGE_FAIL("--fallback is for rows dropped with --drop");
    edo::cli::PathGuard paths;
    paths.input(input).input(freq_path).output("-o", output);
    eval_flags.add_paths(paths);
    paths.check();
    const bool eval_wanted = run_eval || !eval_flags.gates.empty();
    const auto gates = eval_flags.parsed_gates();
    edo::cli::apply_threads(threads);
    auto table = edo::io::open_table(input);

    edo::PackOptions opt;
    opt.tool = "edo-sparsify";
    bool chose_form = false;
    const std::string kept = kept_codec(v, codec, *table, chose_form);
    opt.tiers = {edo::parse_tier_spec("kept:rest:" + kept)};
    if (!freq_path.empty()) opt.freq = edo::io::read_frequencies(freq_path, table->rows());
    if (drop.starts_with("count<")) drop = rows_below_count(drop, opt.freq);
    if (!drop.empty()) {
      if (fallback != "mean" && fallback != "zero" && !fallback.starts_with("centroids") &&
          !fallback.starts_with("nearest"))
        EDO_USAGE_FAIL("--fallback {}: mean, zero, centroids:C or nearest[:cos|l2]", fallback);
      const std::string kind = fallback == "mean" ? "default" : fallback;
      edo::TierSpec dropped = edo::parse_tier_spec("dropped:" + drop + ":" + kind);
      if (dropped.share == edo::ShareKind::rest)
        EDO_USAGE_FAIL("--drop {}: give rows=P%, rows=N, mass=P% or count<N", drop);
      const double all = dropped.share == edo::ShareKind::rows_count ? static_cast<double>(table->rows()) : 100.0;
      if (dropped.value >= all) EDO_USAGE_FAIL("--drop {}: dropping every row leaves nothing to serve", drop);
      opt.tiers.push_back(dropped);
    }
    edo::check_tier_specs(opt.tiers, table->rows(), table->dim());
    opt.seed = seed;
    opt.train_rows = train_rows;
    opt.allow_larger_sparse = force;
    opt.parameters = {{"kept", kept}, {"drop", drop}, {"fallback", fallback}, {"force", force}};
    edo::cli::Progress progress("edo-sparsify", quiet);
    opt.progress = progress.callback();

    const edo::cli::EvalTarget eval_target(output, eval_wanted);
    const edo::PackReport rep = edo::pack_to_edo(*table, eval_target.path(), opt);
    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted) {
      auto decoded = edo::EdoTable::open(eval_target.path());
      edo::EvalOptions eo = eval_flags.options(table->rows(), seed, edo::Device::cpu);
      if (eo.freq.empty()) eo.freq = opt.freq;
      edo::group_by_tier(eo, decoded->reader());
      result = edo::evaluate(*table, *decoded, eo);
      edo::add_memory_metrics(result, *table, *decoded);
      outcomes = edo::check_gates(gates, result);
      code = edo::cli::finish_gates("edo-sparsify", eval_flags, result, outcomes);
      if (code == 0)
        edo::republish_with_manifest(eval_target.path(), output, {{"eval", edo::to_json(result, outcomes)}});
    }
    const std::string form =
        chose_form ? fmt::format("  form       {} (--form auto: the smaller at the expected density)\n", kept) : "";
    edo::cli::print_write_summary(json, edo::pack_report_json(rep), form + edo::pack_report_text(rep), input, output,
                                  code, eval_wanted, result, outcomes);
    return code;
  });
}
