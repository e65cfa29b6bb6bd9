// SPDX-License-Identifier: Apache-2.0
// edo-sparsify: prune what a table does not need, small values inside rows
// (a sparse tier: csr or bitmap) and the rarest rows (answered by a fallback
// tier), written as a .edo file every reader serves.
#include "cli_common.hpp"
#include "eval_cli.hpp"
#include "model_cli.hpp"
#include "shard_cli.hpp"

#include <edo/device.hpp>

#include <edo/edo_file.hpp>
#include <edo/io/freq.hpp>
#include <edo/pack.hpp>
#include <edo/sparse_writer.hpp>
#include <edo/sweep.hpp>
#include <edo/tier.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>

namespace {

struct ValueRule {
  double density = 0;
  uint32_t per_row_k = 0;
  double threshold = 0;
  uint64_t drop_dims = 0;
  std::string values = "fp32", form = "auto";
};

// The kept rows' codec: a sparse spec from the value rule (its form chosen
// when auto), `dims:K` ahead of `codec` for --drop-dims, else `codec`.
std::string kept_codec(const ValueRule& v, const std::string& codec, edo::io::TableReader& table, bool& chose) {
  const int rules = (v.density > 0) + (v.per_row_k > 0) + (v.threshold > 0);
  if (rules + (v.drop_dims > 0) > 1)
    EDO_USAGE_FAIL("give one of --density, --per-row-k, --threshold and --drop-dims (one way to prune values)");
  if (v.drop_dims > 0) {
    if (v.drop_dims >= table.dim())
      EDO_USAGE_FAIL("--drop-dims {}: {} has {} dimensions; at least one must stay", v.drop_dims, table.path(),
                     table.dim());
    const std::string spec = fmt::format("dims:{},{}", table.dim() - v.drop_dims, codec.empty() ? "fp32" : codec);
    return edo::canonical_spec(spec, table.dim());  // usage errors (a second transform, a bad codec) first
  }
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

bool is_drop_share(const std::string& item) {
  return item.starts_with("rows=") || item.starts_with("mass=") || item.starts_with("count<");
}

// The dropped rows' tier for `drop` (a share, or count<N), or nullopt when
// count<N names no row.
std::optional<edo::TierSpec> dropped_tier(std::string drop, const std::string& fallback, const edo::PackOptions& opt,
                                          uint64_t rows) {
  if (drop.starts_with("count<")) drop = rows_below_count(drop, opt.freq);
  if (drop.empty()) return std::nullopt;
  // "mean" is the shared-vector tier's word for users; the others are tier kinds' own.
  const std::string kind = fallback == "mean" ? edo::tier_kind_word(edo::TierKind::shared_vector) : fallback;
  if (fallback == edo::tier_kind_word(edo::TierKind::shared_vector) || !edo::is_fallback(edo::tier_kind_of(kind)))
    EDO_USAGE_FAIL("--fallback {}: mean, zero, centroids:C or nearest[:cos|l2]", fallback);
  edo::TierSpec dropped = edo::parse_tier_spec("dropped:" + drop + ":" + kind);
  if (dropped.share == edo::ShareKind::rest)
    EDO_USAGE_FAIL("--drop {}: give rows=P%, rows=N, mass=P% or count<N", drop);
  const double all = dropped.share == edo::ShareKind::rows_count ? static_cast<double>(rows) : 100.0;
  if (dropped.value >= all) EDO_USAGE_FAIL("--drop {}: dropping every row leaves nothing to serve", drop);
  return dropped;
}

// A sweep's items: codecs and sparse specs as one tier each; drop shares
// as the kept rows (`kept`) plus the dropped rows answered by `fallback`.
std::vector<edo::SweepItem> sweep_items(const std::string& text, edo::io::TableReader& table,
                                        const edo::PackOptions& opt, const std::string& kept,
                                        const std::string& fallback) {
  std::vector<edo::SweepItem> items;
  for (std::string item : edo::parse_sweep(text)) {
    edo::SweepItem point;
    if (is_drop_share(item)) {
      if (opt.freq.empty()) EDO_USAGE_FAIL("--sweep item '{}': a drop share needs --freq", item);
      const std::optional<edo::TierSpec> dropped = dropped_tier(item, fallback, opt, table.rows());
      point.tiers = {edo::parse_tier_spec("kept:rest:" + kept)};
      if (dropped) point.tiers.push_back(*dropped);
      point.label = fmt::format("drop {} ({}), kept {}", item, fallback, kept);
    } else {
      item = resolve_auto_form(item, table);
      if (edo::is_sparse_spec(item))
        edo::parse_sparse_spec(item, table.dim());
      else
        edo::canonical_spec(item, table.dim());  // a registry codec, else the usage error naming it
      point.tiers = {edo::parse_tier_spec("all:rest:" + item)};
    }
    edo::check_tier_specs(point.tiers, table.rows(), table.dim());
    items.push_back(std::move(point));
  }
  for (const char* dense : {"int8", "int4", "int4:group=32"})
    items.push_back({"", {edo::parse_tier_spec(std::string("all:rest:") + dense)}, true});
  return items;
}

int run_sweep(const std::vector<edo::SweepItem>& items, edo::io::TableReader& table, const edo::PackOptions& opt,
              const edo::cli::EvalFlags& flags, bool json, edo::Device eval_device) {
  const char* tmp = std::getenv("TMPDIR");
  edo::EvalOptions eval = flags.options(table.rows(), opt.seed, eval_device);
  if (eval.freq.empty()) eval.freq = opt.freq;
  const std::vector<edo::SweepPoint> points = edo::run_sweep(table, items, opt, eval, tmp && *tmp ? tmp : "/tmp");
  std::vector<std::string> metrics;
  for (uint64_t k : eval.ks) metrics.push_back(fmt::format("recall@{}", k));
  if (!eval.freq.empty())
    for (uint64_t k : eval.ks) metrics.push_back(fmt::format("w.recall@{}", k));
  metrics.push_back("cos.mean");
  edo::cli::write_sweep_html(flags, points, metrics, table);
  if (json) {
    std::puts(nlohmann::json{{"input", table.path()}, {"sweep", edo::sweep_json(points)}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %llu x %llu, sweep of %zu items next to dense int8 and int4\n", table.path().c_str(),
              static_cast<unsigned long long>(table.rows()), static_cast<unsigned long long>(table.dim()),
              items.size() - 3);
  std::fputs(edo::sweep_text(points, metrics).c_str(), stdout);
  return 0;
}

}  // namespace

namespace {

// edo-sparsify's flags and its run.
struct Sparsify {
  std::string input, output, freq_path, freq_dir, codec, drop, fallback = "mean", sweep, device = "auto";
  std::vector<std::string> freq_args;
  edo::cli::ModelFlags model_flags;
  bool json = false, quiet = false, force = false, run_eval = false;
  int threads = 0;
  uint64_t seed = 0, train_rows = 65536;
  edo::cli::EvalFlags eval_flags;
  edo::cli::ShardFlags shard_flags;

  ValueRule v;

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input,
                   "Table to prune (npy, npz, HDF5, model.safetensors:tensor, word vectors, vecs, a .edo (decoded),\n"
                   "codes edo-unpack --codes wrote, or - for npy on stdin)");
    app.add_option("-o,--output", output, "Output .edo file");
    app.add_option("--density", v.density, "Keep this share of the values, the largest in magnitude (0 < D <= 1)")
        ->check(CLI::Range(0.0, 1.0));
    app.add_option("--per-row-k", v.per_row_k, "Keep each row's K largest values")->check(CLI::PositiveNumber);
    app.add_option("--threshold", v.threshold, "Keep values whose magnitude is at least T (T > 0)")
        ->check(CLI::PositiveNumber);
    app.add_option("--drop-dims", v.drop_dims,
                   "Structured pruning: drop the N dimensions of least variance (on the training sample), stored\n"
                   "once as their mean; the rest kept by --codec (codec dims:K,CODEC, K = dim - N)")
        ->check(CLI::PositiveNumber);
    app.add_option("--values", v.values, "Precision of the kept values: fp32 (default), fp16, bf16, int8, int4")
        ->check(CLI::IsMember({"fp32", "fp16", "bf16", "int8", "int4"}));
    app.add_option("--form", v.form, "auto (the smaller for the expected density, default), csr or bitmap")
        ->check(CLI::IsMember({"auto", "csr", "bitmap"}));
    app.add_option("--freq", freq_args,
                   "Per-row access counts (npy or 'id count' text): which rows are rarest. A model's tables:\n"
                   "--freq NAME=counts.npy, repeated")
        ->allow_extra_args(false);
    app.add_option("--freq-dir", freq_dir,
                   "A model's counts: DIR/NAME.npy for table NAME ('/' in a name written '__')");
    model_flags.add_to(app);
    app.add_option("--drop", drop,
                   "Rows to drop, rarest first: rows=P%, rows=N, mass=P% or count<N (looked up fewer than N times);\n"
                   "needs --freq");
    app.add_option(
        "--fallback", fallback,
        "What dropped ids answer: mean (default: one vector, the access-weighted mean of the dropped rows),\n"
        "zero, centroids:C (C k-means centroids of the dropped rows, each mapped to its nearest), or\n"
        "nearest[:cos|l2] (each dropped id answered by its nearest kept row; cos by default)");
    app.add_option("--codec", codec, "Codec of the kept rows when values are not pruned (default fp32)");
    app.add_option("--sweep", sweep,
                   "Try several prunings in one run, nothing written: 'ITEM;ITEM;...', each a sparse spec\n"
                   "csr|bitmap|auto:density=D|k=K|threshold=T[,values=V], a codec (e.g. dims:40,int8), or a drop\n"
                   "share rows=P%|rows=N|mass=P%|count<N (needs --freq; kept rows as --codec, --drop-dims or the\n"
                   "value rule say, dropped ones answered by --fallback). Prints density, bytes, ratio, the share of\n"
                   "lookups a fallback answers, recall and cosine of each next to dense int8, int4 and int4:group=32\n"
                   "(--json: the same as JSON)");
    app.add_flag("--force", force, "Write a sparse tier even when it is larger than the dense codec at its precision");
    app.add_option("--seed", seed, "Seed for the density fit's sample and evaluation queries (default 0)");
    app.add_option(
           "--train-rows", train_rows,
           "Rows sampled to fit --density's threshold, --drop-dims' variances and trained codecs (default 65536)")
        ->check(CLI::PositiveNumber);
    app.add_flag("--json", json, "Print the summary as JSON on stdout");
    app.add_flag("--eval", run_eval, "Evaluate the result (edo-eval's engine), print and store the metrics");
    eval_flags.add_to(app, false);
    edo::cli::add_device_option(
        app, device,
        "auto (GPU when present), cpu or cuda (an error without a GPU): where --eval's and --sweep's\n"
        "k-NN scores run (pruning and fallbacks run on the CPU: the file is the same either way)");
    edo::cli::add_run_options(app, threads, quiet);
    edo::cli::add_shard_flags(
        app, shard_flags,
        "Write only what the whole table decides, for --trained in each shard's run (a .edo with no\n"
        "rows): --density's threshold, trained codecs' states and --fallback centroids from the sample a\n"
        "whole-table run draws, and --fallback mean's vector from one pass over the dropped rows",
        "A --train-only file of the same options: prune with its threshold and states, fitting nothing\n"
        "(its seed and training parameters are the run's)");
  }

  // The tiers of one table (its kept rows' codec, and the dropped rows' tier
  // from its counts), with `drop_said` the --drop as the report gives it.
  void plan_table(edo::io::TableReader& table, edo::PackOptions& opt, const CLI::App& app, std::string& kept,
                  bool& chose_form, std::string& drop_said) const {
    kept = kept_codec(v, codec, table, chose_form);
    drop_said = drop;
    if (drop.empty() && app.count("--fallback")) EDO_USAGE_FAIL("--fallback is for rows dropped with --drop");
    opt.tiers = {edo::parse_tier_spec("kept:rest:" + kept)};
    if (!drop.empty())
      if (const std::optional<edo::TierSpec> dropped = dropped_tier(drop, fallback, opt, table.rows())) {
        opt.tiers.push_back(*dropped);
        drop_said = dropped->share == edo::ShareKind::rows_count && drop.starts_with("count<")
                        ? fmt::format("{} (rows={})", drop, dropped->value)
                        : drop;
      }
    edo::check_tier_specs(opt.tiers, table.rows(), table.dim());
    opt.parameters = {{"kept", kept}, {"drop", drop_said}, {"fallback", fallback}, {"force", force}};
  }

  // Every table of the model pruned with the same options, each by its own counts.
  int run_model(const edo::io::ModelSelection& model, const CLI::App& app) {
    if (!sweep.empty() || run_eval || !eval_flags.gates.empty())
      EDO_USAGE_FAIL(
          "a model input: --sweep, --eval and --gate (use edo-eval MODEL model.edo) take one table "
          "(FILE:tensor)");
    const auto freq_files = edo::cli::checked_model_counts(model, input, output, freq_args, freq_dir);
    if (!drop.empty())
      for (const edo::io::ModelTable& t : model.tables)
        if (!freq_files.count(t.name))
          EDO_USAGE_FAIL("--drop needs counts for every table: table '{}' has none", t.name);
    edo::cli::apply_threads(threads);
    edo::PackOptions base;
    base.tool = "edo-sparsify";
    base.seed = seed;
    base.train_rows = train_rows;
    base.allow_larger_sparse = force;
    const edo::cli::ModelShards shards(shard_flags, model, output);
    const edo::ModelReport rep = edo::write_model_tables(
        model, output,
        [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
          edo::PackOptions opt = base;
          opt.freq = edo::cli::model_table_freq(freq_files, t);
          std::string kept, drop_said;
          bool chose_form = false;
          plan_table(table, opt, app, kept, chose_form, drop_said);
          return edo::cli::pack_model_table("edo-sparsify", shards.for_table(t), table, out, opt, quiet);
        },
        shards.provenance(edo::model_provenance(base)), edo::cli::stderr_note("edo-sparsify", quiet));
    edo::cli::print_model_summary(json, rep, input, output);
    return 0;
  }

  int run(const CLI::App& app) {
    const bool sweeping = !sweep.empty();
    if (!input.empty() && (sweeping || !output.empty()) && output != "-")
      if (const auto model = edo::cli::model_input(input, model_flags, quiet, "edo-sparsify"))
        return run_model(*model, app);
    if (freq_args.size() > 1) EDO_USAGE_FAIL("--freq: one count file for one table ({} given)", freq_args.size());
    if (!freq_dir.empty()) EDO_USAGE_FAIL("--freq-dir: counts per table of a model; {} is one table", input);
    if (!freq_args.empty()) freq_path = freq_args.front();
    if (sweeping && (!output.empty() || !drop.empty()))
      EDO_USAGE_FAIL("--sweep writes nothing and takes its drop shares from its items: drop -o and --drop");
    if (sweeping && (shard_flags.train_only || !shard_flags.trained.empty() || !shard_flags.shard.empty()))
      EDO_USAGE_FAIL("--sweep evaluates a whole table: no --shard, --train-only or --trained");
    if (!sweeping && (input.empty() || output.empty())) EDO_USAGE_FAIL("INPUT and -o OUTPUT are required (see --help)");
    if (output == "-") EDO_USAGE_FAIL("-o -: a .edo file is written to a named file, not stdout");
    if (input.empty()) EDO_USAGE_FAIL("INPUT is required (see --help)");
    if (app.count("--density") && !(v.density > 0)) EDO_USAGE_FAIL("--density {} is outside (0, 1]", v.density);
    if (!drop.empty() && freq_path.empty()) EDO_USAGE_FAIL("--drop needs --freq (which rows are rarest)");
    edo::cli::PathGuard paths;
    paths.input(input).input(freq_path).input(shard_flags.trained);
    if (!sweeping) paths.output("-o", output);
    eval_flags.add_paths(paths);
    paths.check();
    const bool eval_wanted = run_eval || !eval_flags.gates.empty();
    const auto gates = eval_flags.parsed_gates();
    edo::cli::apply_threads(threads);
    auto table = edo::open_any_table(input, edo::io::Verify::all);

    edo::PackOptions opt;
    opt.tool = "edo-sparsify";
    opt.seed = seed;
    const edo::Device eval_device = edo::select_device(device);
    opt.train_rows = train_rows;
    opt.extra_manifest = model_flags.manifest_entry();
    opt.allow_larger_sparse = force || sweeping;  // a sweep shows the sizes, larger or not
    if (!freq_path.empty()) opt.freq = edo::io::read_frequencies(freq_path, table->rows());
    bool chose_form = false;
    if (sweeping) {
      const std::string kept = kept_codec(v, codec, *table, chose_form);
      const std::vector<edo::SweepItem> items = sweep_items(sweep, *table, opt, kept, fallback);
      const bool shares = std::any_of(items.begin(), items.end(), [](const auto& i) { return i.tiers.size() > 1; });
      if (!shares && kept != "fp32")
        EDO_USAGE_FAIL("--sweep: the kept rows' codec ({}) is for drop-share items, and the sweep has none", kept);
      if (!shares && app.count("--fallback"))
        EDO_USAGE_FAIL("--fallback is for drop-share items, and the sweep has none");
      return run_sweep(items, *table, opt, eval_flags, json, eval_device);
    }
    std::string kept, drop_said;
    plan_table(*table, opt, app, kept, chose_form, drop_said);
    edo::cli::PackShards shards;
    if (shards.train_only("edo-sparsify", shard_flags, *table, output, opt, eval_wanted, quiet)) return 0;
    shards.apply("edo-sparsify", shard_flags, *table, opt, eval_wanted);
    edo::cli::Progress progress("edo-sparsify", quiet);
    opt.progress = progress.callback();

    const edo::cli::EvalTarget eval_target(output, eval_wanted);
    const edo::PackReport rep = edo::pack_to_edo(*table, eval_target.path(), opt);
    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted)
      code = edo::cli::evaluate_packed("edo-sparsify", eval_flags, gates, *table, eval_target.path(), output, opt.freq,
                                       seed, eval_device, nullptr, result, outcomes);
    const std::string form =
        chose_form ? fmt::format("  form       {} (--form auto: the smaller at the expected density)\n", kept) : "";
    edo::cli::print_write_summary(json, edo::pack_report_json(rep), form + edo::pack_report_text(rep), input, output,
                                  code, eval_wanted, result, outcomes);
    return code;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Prune an embedding table: small values inside rows (kept as a sparse tier, csr or bitmap), whole\n"
      "dimensions (those of least variance, answered by their mean), and/or the rarest rows (answered by a\n"
      "fallback: the access-weighted mean of the rows dropped, zeros, the nearest of C centroids, or the\n"
      "nearest kept row). Layout and which form is smaller: docs/FORMAT.md 9.3-9.4; guide: docs/PACK.md.\n\n"
      "Examples:\n"
      "  edo-sparsify glove.npy -o glove.sp.edo --density 0.25 --values int8 --eval\n"
      "  edo-sparsify emb.npy -o emb.edo --per-row-k 16 --form bitmap --values fp16\n"
      "  edo-sparsify emb.npy -o emb.edo --drop-dims 10 --codec int8\n"
      "  edo-sparsify glove.npy --sweep 'auto:density=0.1,values=int8;auto:density=0.3,values=int8;csr:k=8'\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop rows=30% --codec int8\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop rows=50% --fallback centroids:256 --eval\n"
      "  edo-sparsify emb.npy --freq counts.npy --sweep 'rows=30%;rows=50%;rows=70%' --fallback zero --codec int8\n"
      "  edo-sparsify emb.npy -o emb.edo --freq counts.npy --drop mass=1% --threshold 0.05 --gate 'w.recall@10>=0.95'",
      "edo-sparsify"};
  Sparsify tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-sparsify");

  return edo::cli::run_tool("edo-sparsify", app, argc, argv, [&] { return tool.run(app); });
}
