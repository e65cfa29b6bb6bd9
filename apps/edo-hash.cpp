// SPDX-License-Identifier: Apache-2.0
// edo-hash: fit hashed or quotient-remainder tables to a trained table (the
// rows answered by a few shared vectors addressed from their id), optionally
// keeping the most frequent rows whole, written as a .edo every reader serves.
#include "cli_common.hpp"
#include "eval_cli.hpp"
#include "model_cli.hpp"
#include "shard_cli.hpp"

#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/hash.hpp>
#include <edo/io/container.hpp>
#include <edo/io/freq.hpp>
#include <edo/pack.hpp>
#include <edo/sweep.hpp>

#include <cstdlib>

namespace {

// The tiers of one file: the kept rows (when --keep-top) and the hashed rest.
std::vector<edo::TierSpec> hash_tiers(const std::string& scheme, const std::string& keep_top,
                                      const std::string& keep_codec) {
  std::string canonical;
  if (edo::is_hash_spec(scheme))
    canonical = edo::format_hash_spec(edo::parse_hash_spec(scheme));
  else if (edo::is_group_spec(scheme))
    canonical = scheme;  // checked against the table's dim by check_tier_specs; labels are counted when read
  else
    EDO_USAGE_FAIL(
        "--scheme {}: expected hash:buckets=B[,k=K][,weights=1][,fit=ls|none][,seed=S], "
        "qr:buckets=B[,op=sum|mul] or group:clusters=C|labels[,residual=CODEC|none]",
        scheme);
  std::vector<edo::TierSpec> tiers;
  if (!keep_top.empty()) {
    edo::TierSpec top = edo::parse_tier_spec("top:" + keep_top + ":" + keep_codec);
    if (top.share == edo::ShareKind::rest) EDO_USAGE_FAIL("--keep-top {}: give rows=P%, rows=N or mass=P%", keep_top);
    tiers.push_back(top);
  }
  tiers.push_back(edo::parse_tier_spec("hashed:rest:" + canonical));
  return tiers;
}

// The fit and collision lines of a written file's hashed tier.
std::string fit_text(const std::string& path, const edo::PackReport& rep) {
  const edo::io::Container c = edo::io::Container::open(path);
  std::string s;
  const nlohmann::json& tiers = c.manifest()["tiers"];
  for (size_t t = 0; t < tiers.size(); ++t) {
    if (!tiers[t].contains("fit")) continue;
    const nlohmann::json& f = tiers[t]["fit"];
    const nlohmann::json& col = tiers[t]["collisions"];
    const bool groups = edo::tier_kind_of(tiers[t]["codec"].get<std::string>()) == edo::TierKind::grouped;
    const std::string solver =
        groups ? ""
               : fmt::format("{} iterations, relative residual {:.3g}{}, ", f["iterations"].get<uint64_t>(),
                             f["residual"].get<double>(),
                             f["converged"].get<bool>() ? "" : " (partial: short of the tolerance)");
    s += fmt::format("  fit        {}: {}weighted relative error {:.4f}, {:.2f} s\n", f["method"].get<std::string>(),
                     solver, f["weighted_relative_error"].get<double>(), rep.tiers.at(t).encode_seconds);
    s += fmt::format(
        "  {}    {} for {} rows: {:.2f} rows a {} on average, at most {}, {} empty; the busiest holds "
        "{:.2f}% of the lookups\n",
        groups ? "groups " : "buckets", col["buckets"].get<uint64_t>(), col["rows"].get<uint64_t>(),
        col["mean_rows"].get<double>(), groups ? "group" : "bucket", col["max_rows"].get<uint64_t>(),
        col["empty"].get<uint64_t>(), 100.0 * col["max_mass"].get<double>());
  }
  return s;
}

int run_hash_sweep(const std::string& text, const std::string& keep_top, const std::string& keep_codec,
                   edo::io::TableReader& table, const edo::PackOptions& opt, const edo::cli::EvalFlags& flags,
                   bool json) {
  std::vector<edo::SweepItem> items;
  for (const std::string& scheme : edo::parse_sweep(text)) {
    edo::SweepItem item;
    item.tiers = hash_tiers(scheme, keep_top, keep_codec);
    edo::check_tier_specs(item.tiers, table.rows(), table.dim());
    item.label = item.tiers.back().codec + (keep_top.empty() ? "" : ", top " + keep_top + " " + keep_codec);
    items.push_back(std::move(item));
  }
  for (const char* dense : {"int8", "int4", "int4:group=32"})
    items.push_back({"", {edo::parse_tier_spec(std::string("all:rest:") + dense)}, true});
  edo::EvalOptions eval = flags.options(table.rows(), opt.seed, opt.device);
  if (eval.freq.empty()) eval.freq = opt.freq;
  const char* tmp = std::getenv("TMPDIR");
  const std::vector<edo::SweepPoint> points = edo::run_sweep(table, items, opt, eval, tmp && *tmp ? tmp : "/tmp");
  std::vector<std::string> metrics;
  for (uint64_t k : eval.ks) metrics.push_back(fmt::format("recall@{}", k));
  if (!eval.freq.empty())
    for (uint64_t k : eval.ks) metrics.push_back(fmt::format("w.recall@{}", k));
  metrics.insert(metrics.end(), {"cos.mean", "rel_fro"});
  edo::cli::write_sweep_html(flags, points, metrics, table);
  if (json) {
    std::puts(nlohmann::json{{"input", table.path()}, {"sweep", edo::sweep_json(points)}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %llu x %llu, sweep of %zu schemes next to dense int8 and int4\n", table.path().c_str(),
              static_cast<unsigned long long>(table.rows()), static_cast<unsigned long long>(table.dim()),
              items.size() - 3);
  std::fputs(edo::sweep_text(points, metrics).c_str(), stdout);
  return 0;
}

}  // namespace

namespace {

// edo-hash's flags and its run.
struct Hash {
  std::string input, output, freq_path, freq_dir, scheme, keep_top, keep_codec = "fp16", sweep, export_dir, labels_path;
  std::vector<std::string> freq_args;
  edo::cli::ModelFlags model_flags;
  std::string device = "auto";
  bool json = false, quiet = false, run_eval = false;
  int threads = 0;
  uint64_t seed = 0;
  edo::HashFitOptions fit;
  edo::cli::EvalFlags eval_flags;
  edo::cli::ShardFlags shard_flags;

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input,
                   "Table to fit (npy, npz, HDF5, model.safetensors:tensor, word vectors, vecs, a .edo (decoded),\n"
                   "codes edo-unpack --codes wrote, or - for npy on stdin), or a model: each table chosen by --tables\n"
                   "fitted with the same scheme, into one model file")
        ->required();
    app.add_option("-o,--output", output, "Output .edo file");
    app.add_option(
        "--scheme", scheme,
        "hash:buckets=B[,k=K][,weights=1][,fit=ls|none][,seed=S]: each row the sum of K (1-8, default 1)\n"
        "of B buckets, with K fp16 weights a row when weights=1; fit=none is the naive baseline (each bucket\n"
        "the highest-id row hashed to it; K=1). qr:buckets=B[,op=sum|mul]: row i = Q[i / B] + (or *) R[i % B].\n"
        "group:clusters=C|labels[,residual=CODEC|none]: rows of a group (C k-means clusters, or the labels of\n"
        "--group-labels) share their weighted mean, each keeping its residual in CODEC (none by default;\n"
        "e.g. residual=int4, residual=[pq:m=8])");
    app.add_option("--group-labels", labels_path, "group:labels' groups: one integer >= 0 a line, one line a row");
    app.add_option("--freq", freq_args,
                   "Per-row access counts (npy or 'id count' text): the fit's weights, and which\n"
                   "rows --keep-top keeps. A model's tables: --freq NAME=counts.npy, repeated")
        ->allow_extra_args(false);
    app.add_option("--freq-dir", freq_dir,
                   "A model's counts: DIR/NAME.npy for table NAME ('/' in a name written '__')");
    model_flags.add_to(app);
    app.add_option("--keep-top", keep_top, "The most frequent rows keep their own vectors: rows=P%, rows=N or mass=P%");
    app.add_option("--keep-codec", keep_codec, "Codec of the rows --keep-top keeps (default fp16)");
    app.add_option("--tolerance", fit.tolerance,
                   "Stop the fit at this relative residual (qr op=mul: relative improvement a round; default 1e-4)")
        ->check(CLI::Range(1e-12, 1.0));
    app.add_option("--max-iterations", fit.max_iterations, "Iterations (rounds) the fit may take (default 200)")
        ->check(CLI::Range(1, 100000));
    app.add_flag("--allow-partial", fit.allow_partial,
                 "Write the best fit reached when the tolerance is not (recorded in the manifest); else exit 1");
    app.add_option("--export", export_dir,
                   "Also write the fitted tables as npy files and hash.json (scheme, B, K, seed, the hash) into DIR");
    app.add_option("--sweep", sweep,
                   "Fit several schemes in one run, nothing written: 'SCHEME;SCHEME;...' (with --keep-top, each so);\n"
                   "prints bytes, ratio, recall, cosine and error of each next to dense int8, int4 and int4:group=32");
    edo::cli::add_device_option(app, device,
                                "auto (GPU when present), cpu or cuda: where the least-squares solver's products and\n"
                                "group:clusters' k-means run (the same bits either way; the evaluation's k-NN too)");
    app.add_option("--seed", seed, "Seed for evaluation queries (the hash's seed is the scheme's seed=)");
    app.add_flag("--json", json, "Print the summary as JSON on stdout");
    app.add_flag("--eval", run_eval, "Evaluate the result (edo-eval's engine), print and store the metrics");
    eval_flags.add_to(app, false);
    edo::cli::add_run_options(app, threads, quiet);
    edo::cli::add_shard_flags(
        app, shard_flags,
        "Fit once, for --trained in each shard's run: the hashed tier's tables (the least-squares fit\n"
        "reads every row of the tier) and --keep-top's trained codec, written as a .edo with no rows",
        "A --train-only file of the same options: each shard stores its tables, fitting nothing");
  }

  // Every table of the model fitted with the same scheme, each by its own counts.
  int run_model(const edo::io::ModelSelection& model) {
    if (run_eval || !eval_flags.gates.empty() || !labels_path.empty() || !export_dir.empty())
      EDO_USAGE_FAIL(
          "a model input: --eval and --gate (use edo-eval MODEL model.edo), --group-labels and --export "
          "take one table (FILE:tensor)");
    const auto freq_files = edo::cli::checked_model_counts(model, input, output, freq_args, freq_dir);
    edo::cli::apply_threads(threads);
    edo::PackOptions base;
    base.tool = "edo-hash";
    base.seed = seed;
    base.device = edo::select_device(device);
    base.hash_fit = fit;
    base.note = edo::cli::stderr_note("edo-hash", quiet);
    base.tiers = hash_tiers(scheme, keep_top, keep_codec);
    base.parameters = parameters(base);
    for (const edo::io::ModelTable& t : model.tables) edo::check_tier_specs(base.tiers, t.rows, t.dim);
    const edo::cli::ModelShards shards(shard_flags, model, output);
    const edo::ModelReport rep = edo::write_model_tables(
        model, output,
        [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
          edo::PackOptions opt = base;
          opt.freq = edo::cli::model_table_freq(freq_files, t);
          return edo::cli::pack_model_table("edo-hash", shards.for_table(t), table, out, opt, quiet);
        },
        shards.provenance(edo::model_provenance(base)), edo::cli::stderr_note("edo-hash", quiet));
    edo::cli::print_model_summary(json, rep, input, output);
    return 0;
  }

  nlohmann::json parameters(const edo::PackOptions& opt) const {
    return {{"scheme", opt.tiers.back().codec},
            {"keep_top", keep_top},
            {"keep_codec", keep_codec},
            {"tolerance", fit.tolerance},
            {"max_iterations", fit.max_iterations},
            {"allow_partial", fit.allow_partial}};
  }

  int run() {
    const bool sweeping = !sweep.empty();
    if (!sweeping && !output.empty() && output != "-" && !scheme.empty())
      if (const auto model = edo::cli::model_input(input, model_flags, quiet, "edo-hash")) return run_model(*model);
    if (freq_args.size() > 1) EDO_USAGE_FAIL("--freq: one count file for one table ({} given)", freq_args.size());
    if (!freq_dir.empty()) EDO_USAGE_FAIL("--freq-dir: counts per table of a model; {} is one table", input);
    if (!freq_args.empty()) freq_path = freq_args.front();
    if (sweeping && (!output.empty() || !scheme.empty() || !export_dir.empty()))
      EDO_USAGE_FAIL("--sweep writes nothing and takes its schemes from its items: drop -o, --scheme and --export");
    if (!sweeping && (output.empty() || scheme.empty()))
      EDO_USAGE_FAIL("-o OUTPUT and --scheme are required (see --help)");
    if (sweeping && (shard_flags.train_only || !shard_flags.trained.empty() || !shard_flags.shard.empty()))
      EDO_USAGE_FAIL("--sweep evaluates a whole table: no --shard, --train-only or --trained");
    if (output == "-") EDO_USAGE_FAIL("-o -: a .edo file is written to a named file, not stdout");
    edo::cli::PathGuard paths;
    paths.input(input).input(freq_path).input(labels_path).input(shard_flags.trained);
    if (!sweeping) paths.output("-o", output);
    eval_flags.add_paths(paths);
    paths.check();
    const bool eval_wanted = run_eval || !eval_flags.gates.empty();
    const auto gates = eval_flags.parsed_gates();
    edo::cli::apply_threads(threads);
    auto table = edo::open_any_table(input, edo::io::Verify::all);

    edo::PackOptions opt;
    opt.tool = "edo-hash";
    opt.seed = seed;
    opt.device = edo::select_device(device);
    if (!freq_path.empty()) opt.freq = edo::io::read_frequencies(freq_path, table->rows());
    std::vector<int64_t> labels;
    if (!labels_path.empty()) labels = edo::cli::EvalFlags::read_labels(labels_path, table->rows());
    fit.group_labels = &labels;
    opt.extra_manifest = model_flags.manifest_entry();
    opt.hash_fit = fit;
    opt.note = edo::cli::stderr_note("edo-hash", quiet);
    if (sweeping) return run_hash_sweep(sweep, keep_top, keep_codec, *table, opt, eval_flags, json);
    opt.tiers = hash_tiers(scheme, keep_top, keep_codec);
    edo::check_tier_specs(opt.tiers, table->rows(), table->dim());
    opt.parameters = parameters(opt);
    if (!export_dir.empty() && shard_flags.train_only)
      EDO_USAGE_FAIL("--export writes the fitted tables of a file: export from the run that writes the table");
    edo::cli::PackShards shards;
    if (shards.train_only("edo-hash", shard_flags, *table, output, opt, eval_wanted, quiet)) return 0;
    shards.apply("edo-hash", shard_flags, *table, opt, eval_wanted);
    if (!opt.shard.is_null() && !export_dir.empty())
      EDO_USAGE_FAIL("--export writes the whole table's tables: export from the merged file");
    edo::cli::Progress progress("edo-hash", quiet);
    opt.progress = progress.callback();

    const edo::cli::EvalTarget eval_target(output, eval_wanted);
    const edo::PackReport rep = edo::pack_to_edo(*table, eval_target.path(), opt);
    const std::string fit_lines = fit_text(eval_target.path(), rep);
    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted)
      code = edo::cli::evaluate_packed("edo-hash", eval_flags, gates, *table, eval_target.path(), output, opt.freq,
                                       seed, opt.device, nullptr, result, outcomes);
    nlohmann::json report = edo::pack_report_json(rep);
    if (code == 0 && !export_dir.empty()) report["export"] = edo::export_hash_tables(output, export_dir);
    edo::cli::print_write_summary(json, report, fit_lines + edo::pack_report_text(rep), input, output, code,
                                  eval_wanted, result, outcomes);
    return code;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Fit shared tables to a trained embedding table: each row becomes the sum of K of B hashed bucket vectors\n"
      "(optionally with K per-row weights), or a quotient-remainder pair, fitted by least squares (weighted by\n"
      "--freq), or its group's shared vector plus a small residual. The most frequent rows may keep their own\n"
      "vectors (--keep-top). With hashing every id, even one beyond the table, has its buckets: readers can\n"
      "serve new ids by the hash. Layout and the hash: docs/FORMAT.md 9.5-9.6; guide: docs/PACK.md.\n\n"
      "Examples:\n"
      "  edo-hash emb.npy -o emb.edo --scheme hash:buckets=1000 --eval\n"
      "  edo-hash emb.npy -o emb.edo --freq counts.npy --scheme hash:buckets=1000,k=2,weights=1 --keep-top rows=1%\n"
      "  edo-hash emb.npy -o emb.edo --scheme qr:buckets=100,op=mul --export fitted/\n"
      "  edo-hash emb.npy -o emb.edo --scheme group:clusters=256,residual=int4 --eval\n"
      "  edo-hash emb.npy -o emb.edo --scheme group:labels,residual=int2 --group-labels category.txt\n"
      "  edo-hash emb.npy --freq counts.npy --sweep "
      "'hash:buckets=1000,fit=none;hash:buckets=1000;hash:buckets=500,k=2'",
      "edo-hash"};
  Hash tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-hash");

  return edo::cli::run_tool("edo-hash", app, argc, argv, [&] { return tool.run(); });
}
