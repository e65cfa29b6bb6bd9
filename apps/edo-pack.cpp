// SPDX-License-Identifier: Apache-2.0
// edo-pack: a tiered .edo file, each slice of the rows (hottest first) in its
// own codec and residency, with a row-to-tier map for O(1) lookups.
#include "cli_common.hpp"
#include "eval_cli.hpp"
#include "joint_budget_cli.hpp"
#include "model_cli.hpp"
#include "shard_cli.hpp"

#include <edo/budget.hpp>
#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/io/files.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/vocab.hpp>
#include <edo/joint_plan.hpp>
#include <edo/pack.hpp>
#include <edo/shard.hpp>
#include <edo/tier.hpp>

#include <unistd.h>

#include <filesystem>
#include <map>
#include <optional>

namespace {

// edo-pack's flags and its run.
struct Pack {
  std::string input, output, freq_path, freq_dir, config, device = "auto";
  std::vector<std::string> freq_args;
  edo::cli::ModelFlags model_flags;
  std::vector<std::string> tier_texts, budget_texts, plan_codecs, table_weights;
  uint64_t plan_queries = 1000;
  std::optional<double> cold_weight;
  bool json = false, quiet = false, allow_nonfinite = false, allow_underflow = false, run_eval = false, force = false;
  int threads = 0;
  uint64_t seed = 0, train_rows = 65536;
  edo::cli::EvalFlags eval_flags;
  std::string vocab_path;
  edo::cli::ShardFlags shard_flags;
  std::vector<std::string> merge;
  std::vector<std::string> shard_set;
  edo::ModelReport model_report_;  // a joint plan's write, printed with the plan

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input,
                   "Table to pack (npy, npz, HDF5, model.safetensors:tensor, word vectors, vecs, a .edo (decoded),\n"
                   "codes edo-unpack --codes wrote, or - for npy on stdin), or a model: each table chosen by\n"
                   "--tables packed with the same tiers, into one model file");
    app.add_option("-o,--output", output, "Output .edo file");
    app.add_option("--tier", tier_texts, "Tier spec NAME:SHARE:CODEC[:RESIDENCY]; repeat, hottest first");
    app.add_option("--config", config,
                   "Plan file (JSON, as edo-profile --plan-config writes) instead of --tier; a model's plan\n"
                   "(edo-profile MODEL --plan --budget SIZE) gives each table its tiers, and names every chosen\n"
                   "table, no other");
    app.add_option("--budget", budget_texts,
                   "Plan and pack in one run, instead of --tier or --config: 'bytes<=2G' (the whole file; 2G = 2GiB,\n"
                   "2GB = 2e9: docs/CLI.md, \"Sizes\"), 'ratio>=8' (fp32 bytes over the file's) or an accuracy gate\n"
                   "('recall@10>=0.98', access-weighted with --freq); repeatable, all must hold. One table: the\n"
                   "most accurate plan under a size, packed and filled to within 1% of the cap, or the summary says\n"
                   "why not. A model under a size: every table's tiers chosen together to minimise the\n"
                   "access-weighted error sum_t s_t E_t (rows weighed by --cold-weight too), the file within 1% of\n"
                   "the cap or the summary says why (each table's recall@10 then measured on the file and\n"
                   "printed); under accuracy gates (no size): each table planned alone and packed at its smallest\n"
                   "plan that meets them (a table without counts: w.* read as the plain metric) (docs/PACK.md,\n"
                   "'One budget for a model')");
    app.add_option("--plan-codecs", plan_codecs,
                   "--budget: codecs the plan's tiers may use, repeatable (default: one table, edo-profile --plan's\n"
                   "ladder, see edo-profile --help; a model, each table's candidates of --codec auto (edo-quantize\n"
                   "--help): scalar and grouped codecs with fp16 scales, rot chains, tc, pq and rq with int8\n"
                   "codebooks, a trained codec trained on 2048 sample rows and only on tiers of 256 rows or more)");
    app.add_option("--plan-queries", plan_queries,
                   "--budget: the plan's evaluation queries (default 1000; under a model's size\n"
                   "budget, those of each table's recall@10 measured on the file)")
        ->check(CLI::PositiveNumber);
    edo::cli::add_joint_weight_options(app, table_weights, cold_weight, "A model's size --budget");
    app.add_option("--freq", freq_args,
                   "Per-row access counts (npy or 'id count' text): the hot order and mass shares. A model's tables:\n"
                   "--freq NAME=counts.npy, repeated (NAME= is read as a table name only when it names a chosen table)")
        ->allow_extra_args(false);
    app.add_option("--freq-dir", freq_dir,
                   "A model's counts: DIR/NAME.npy for table NAME ('/' in a name written '__'); tables without a\n"
                   "file are ordered by row norm");
    model_flags.add_to(app);
    edo::cli::add_device_option(app, device, "auto (GPU when present), cpu or cuda, for encoding");
    app.add_option("--seed", seed, "Seed for training samples and evaluation queries (default 0)");
    app.add_option("--train-rows", train_rows, "Rows of a tier sampled to train its codec (default 65536)")
        ->check(CLI::PositiveNumber);
    app.add_flag("--allow-nonfinite", allow_nonfinite, "Pass NaN/Inf through where the codec can store them");
    app.add_flag("--force", force,
                 "Write csr/bitmap tiers even when larger than their rows stored dense at the same precision");
    app.add_flag("--allow-underflow", allow_underflow,
                 "Store rows whose values are too small for their tier's codec instead of refusing (docs/CLI.md)");
    app.add_option("--vocab", vocab_path,
                   "The word of each row, one a line: stored in the file, so edo-eval and word2vec exports have it\n"
                   "(word2vec and fastText inputs store their own words)");
    app.add_flag("--json", json, "Print the summary as JSON on stdout");
    app.add_flag("--eval", run_eval,
                 "Evaluate the file: metrics overall, per tier (<tier>.*) and access-weighted (w.*, from --freq),\n"
                 "bytes per residency; stored in the manifest");
    eval_flags.add_to(app, false);
    edo::cli::add_run_options(app, threads, quiet);
    edo::cli::add_shard_flags(
        app, shard_flags,
        "Write only what the whole table decides, for --trained in each shard's run (a .edo with no rows):\n"
        "trained codecs, centroids and density= thresholds from the sample a whole-table run draws, default\n"
        "tiers' means and hashed tiers' fits from their rows (docs/SCALE.md, global phases)",
        "A --train-only file of the same tiers: encode with its states, training nothing (its seed and\n"
        "training parameters are the run's)");
    app.add_option("--merge", merge,
                   "Shard files (of edo-quantize, edo-pack, edo-sparsify or edo-hash --shard, in any order):\n"
                   "concatenated without decoding into -o, the file one process writes from the same command and\n"
                   "seed, byte for byte; every shard once")
        ->expected(1, -1);
    app.add_option(
           "--shard-set", shard_set,
           "Shard files (as --merge takes them): checked as --merge checks them, then a small shard-set\n"
           "file -o names them with their rows, sizes and manifest checksums; edo-unpack, edo-eval, the tools'\n"
           "INPUT and the reader library's ShardSet read it as the whole table, without copying (shards\n"
           "with hashed or nearest tiers, which answer ids across shards, are refused: merge them)")
        ->expected(1, -1);
  }

  edo::PackOptions options(const std::vector<edo::TierSpec>& tiers) const {
    edo::PackOptions opt;
    opt.tiers = tiers;
    opt.seed = seed;
    opt.train_rows = train_rows;
    opt.device = edo::select_device(device);
    opt.allow_nonfinite = allow_nonfinite;
    opt.allow_underflow = allow_underflow;
    opt.note = edo::cli::stderr_note("edo-pack", quiet);  // training and fit progress
    opt.allow_larger_sparse = force;
    opt.extra_manifest = model_flags.manifest_entry();
    return opt;
  }

  std::vector<edo::TierSpec> tier_specs() const {
    std::vector<edo::TierSpec> tiers;
    for (const auto& t : tier_texts) tiers.push_back(edo::parse_tier_spec(t));
    if (!config.empty()) tiers = edo::read_plan_file(config);
    return tiers;
  }

  // Every table of the model with the same tiers, or each with its own (a
  // joint plan's, by table name), each by its own counts.
  int run_model(const edo::io::ModelSelection& model,
                const std::map<std::string, std::vector<edo::TierSpec>>& planned = {}, bool keep_report = false) {
    if (run_eval || !eval_flags.gates.empty() || !vocab_path.empty())
      EDO_USAGE_FAIL(
          "a model input: --eval and --gate (use edo-eval MODEL model.edo) and --vocab take one table "
          "(FILE:tensor)");
    edo::cli::PathGuard().input(config).check();
    const auto freq_files = edo::cli::checked_model_counts(model, input, output, freq_args, freq_dir);
    const std::vector<edo::TierSpec> tiers = planned.empty() ? tier_specs() : std::vector<edo::TierSpec>{};
    edo::cli::apply_threads(threads);
    for (const edo::io::ModelTable& t : model.tables)
      edo::check_tier_specs(planned.empty() ? tiers : planned.at(t.name), t.rows, t.dim);
    edo::PackOptions base = options(tiers);
    base.parameters = {{"freq_tables", freq_files.size()}};
    const edo::cli::ModelShards shards(shard_flags, model, output);
    const edo::ModelReport rep = edo::write_model_tables(
        model, output,
        [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
          edo::PackOptions opt = base;
          if (!planned.empty()) opt.tiers = planned.at(t.name);
          opt.freq = edo::cli::model_table_freq(freq_files, t);
          const auto file = freq_files.find(t.name);
          opt.parameters = {
              {"freq", file == freq_files.end() ? "" : file->second.substr(file->second.find_last_of('/') + 1)}};
          return edo::cli::pack_model_table("edo-pack", shards.for_table(t), table, out, opt, quiet);
        },
        shards.provenance(edo::model_provenance(base)), edo::cli::stderr_note("edo-pack", quiet));
    if (keep_report)
      model_report_ = rep;
    else
      edo::cli::print_model_summary(json, rep, input, output);
    return 0;
  }

  // A model under one size budget: every table's tiers chosen together
  // (edo/joint_plan.hpp), then packed as run_model packs given tiers.
  int run_model_budget(const edo::io::ModelSelection& model, const edo::Budget& budget) {
    if (budget.sizes.empty()) return run_model_floor(model, budget);
    if (!budget.gates.empty())
      EDO_USAGE_FAIL(
          "a model's --budget is a size ('bytes<=2G' or 'ratio>=8') or accuracy floors ('w.recall@10>=0.98'), "
          "not both ('{}' with '{}')",
          budget.sizes.front().expression, budget.gates.front().expression);
    check_budget_flags(budget);
    const auto freq_files = edo::cli::checked_model_counts(model, input, output, freq_args, freq_dir);
    const auto weights = edo::cli::parse_table_weights(model, input, table_weights);
    edo::cli::apply_threads(threads);
    edo::cli::StageProgress stages("edo-pack", quiet);
    edo::ModelBudgetRun run = edo::plan_model_budget(
        model, budget,
        {freq_files, weights, seed, plan_codecs, edo::cli::checked_cold_weight(cold_weight), stages.callback()},
        [&](const std::map<std::string, std::vector<edo::TierSpec>>& planned, bool quiet_round) {
          const bool quiet_before = quiet;
          quiet = quiet || quiet_round;
          run_model(model, planned, true);
          quiet = quiet_before;
          return static_cast<uint64_t>(std::filesystem::file_size(output));
        });
    if (run.written > run.cap)
      EDO_FAIL("{}: the model file took {} bytes, {} over the budget's {}", output, run.written, run.written - run.cap,
               run.cap);
    edo::measure_model_budget_recall(run, model, output, freq_files, seed, plan_queries, edo::select_device(device));
    if (json) {
      nlohmann::json j = edo::model_report_json(model_report_);
      j["input"] = input;
      j["output"] = output;
      j["written"] = true;
      j["joint_plan"] = edo::model_budget_json(run, budget);
      std::puts(j.dump(2).c_str());
      return 0;
    }
    std::printf("%s -> %s: a model of %zu tables\n", input.c_str(), output.c_str(), model_report_.tables.size());
    std::fputs(edo::to_text(run.plan).c_str(), stdout);
    std::fputs(edo::model_report_text(model_report_).c_str(), stdout);
    std::fputs(edo::model_budget_text(run, budget).c_str(), stdout);
    return 0;
  }

  // A model under accuracy floors: each table planned alone by the
  // one-table planner (its own counts; a table without counts weighs each
  // row once, so its w.* metrics are the plain ones) and packed, so every
  // table meets the floors at the smallest plan of the ladder that does.
  int run_model_floor(const edo::io::ModelSelection& model, const edo::Budget& budget) {
    check_budget_flags(budget);
    if (!table_weights.empty() || cold_weight)
      EDO_USAGE_FAIL(
          "--table-weight and --cold-weight weigh errors against each other under a size budget; a floor holds on "
          "each table");
    const auto freq_files = edo::cli::checked_model_counts(model, input, output, freq_args, freq_dir);
    edo::cli::apply_threads(threads);
    edo::PackOptions base = options({});
    base.parameters = {{"freq_tables", freq_files.size()}};
    nlohmann::json floors = nlohmann::json::array();
    std::string floors_text;
    const edo::ModelReport rep = edo::write_model_tables(
        model, output,
        [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
          edo::PackOptions opt = base;
          opt.freq = edo::cli::model_table_freq(freq_files, t);
          const auto file = freq_files.find(t.name);
          opt.parameters = {
              {"freq", file == freq_files.end() ? "" : file->second.substr(file->second.find_last_of('/') + 1)}};
          edo::Budget floor = budget;
          for (edo::Gate& g : floor.gates)
            if (opt.freq.empty() && g.metric.starts_with("w.")) g = edo::parse_gate(g.expression.substr(2));
          edo::PlanOptions table_plan = plan_options(opt.freq);
          table_plan.refuse_k_beyond_rows = false;  // the floor holds for every table, tiny ones included
          const edo::BudgetPackReport r = edo::pack_to_budget(table, out, floor, table_plan, opt);
          floors.push_back({{"name", t.name}, {"budget", edo::budget_report_json(r, floor)}});
          floors_text += fmt::format("  {}:\n{}", t.name, edo::budget_report_text(r, floor));
          return edo::pack_report_json(r.pack);
        },
        edo::model_provenance(base), edo::cli::stderr_note("edo-pack", quiet));
    if (json) {
      nlohmann::json j = edo::model_report_json(rep);
      j["input"] = input;
      j["output"] = output;
      j["written"] = true;
      j["floor"] = floors;
      std::puts(j.dump(2).c_str());
      return 0;
    }
    edo::cli::print_model_summary(false, rep, input, output);
    std::fputs(floors_text.c_str(), stdout);
    return 0;
  }

  // --budget's planner options (edo-profile --plan's search) for a table of these counts.
  edo::PlanOptions plan_options(const std::vector<double>& freq) const {
    edo::PlanOptions plan_opt;
    plan_opt.freq = freq;
    plan_opt.seed = seed;
    plan_opt.train_rows = train_rows;
    plan_opt.codecs = plan_codecs;
    plan_opt.queries = plan_queries;
    plan_opt.note = edo::cli::stderr_note("edo-pack", quiet);
    return plan_opt;
  }

  // --config of a model: a joint plan file (edo-profile MODEL --plan
  // --plan-config) gives each table its tiers, every chosen table once;
  // a one-table plan gives every table the same tiers.
  int run_model_config(const edo::io::ModelSelection& model) {
    edo::cli::PathGuard().input(config).check();
    const auto planned = edo::read_joint_plan_file(config);
    if (!planned) return run_model(model);
    for (const edo::io::ModelTable& t : model.tables)
      if (!planned->count(t.name))
        EDO_USAGE_FAIL("--config {}: the plan has no table '{}' of {}", config, t.name, input);
    for (const auto& [name, tiers] : *planned)
      if (std::none_of(model.tables.begin(), model.tables.end(), [&](const auto& t) { return t.name == name; }))
        EDO_USAGE_FAIL("--config {}: the plan's table '{}' is not a chosen table of {}", config, name, input);
    return run_model(model, *planned);
  }

  // --budget is a whole run's plan: not a shard's, and no --eval record past a size cap.
  void check_budget_flags(const edo::Budget& budget) const {
    if (!shard_flags.shard.empty() || shard_flags.shard_count || shard_flags.train_only || !shard_flags.trained.empty())
      EDO_USAGE_FAIL("--budget plans the whole table in one run: it takes no --shard, --train-only or --trained");
    if (!budget.sizes.empty() && (run_eval || !eval_flags.gates.empty()))
      EDO_USAGE_FAIL(
          "--budget '{}': --eval stores its record in the file, past the size budget; evaluate with edo-eval "
          "TABLE OUTPUT",
          budget.sizes.front().expression);
  }

  // --budget: plan (edo-profile --plan's search) and pack in one run.
  int pack_budget(edo::io::TableReader& table, const edo::PackOptions& opt, const edo::Budget& budget,
                  const std::string& target, bool eval_wanted, const std::vector<edo::Gate>& gates) {
    edo::PlanOptions plan_opt = plan_options(opt.freq);
    edo::cli::Progress plan_progress("edo-pack: plan candidates", quiet);
    auto plan_report = plan_progress.callback();
    if (plan_report) plan_opt.progress = [&](uint64_t done, uint64_t total) { plan_report(done, total); };
    const edo::BudgetPackReport rep = edo::pack_to_budget(table, target, budget, plan_opt, opt);
    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted)
      code = edo::cli::evaluate_packed("edo-pack", eval_flags, gates, table, target, output, opt.freq, seed, opt.device,
                                       &rep.pack, result, outcomes);
    nlohmann::json report = edo::pack_report_json(rep.pack);
    report["budget"] = edo::budget_report_json(rep, budget);
    edo::cli::print_write_summary(json, report, edo::budget_report_text(rep, budget) + edo::pack_report_text(rep.pack),
                                  input, output, code, eval_wanted, result, outcomes);
    return code;
  }

  int run() {
    if (!merge.empty() || !shard_set.empty()) {
      if (!input.empty() || !tier_texts.empty() || !config.empty() || !budget_texts.empty() || run_eval ||
          output.empty() || (!merge.empty() && !shard_set.empty()))
        EDO_USAGE_FAIL("--merge or --shard-set SHARDS... -o OUTPUT takes no INPUT, tiers or --eval");
      const std::vector<std::string>& shards = merge.empty() ? shard_set : merge;
      edo::cli::PathGuard paths;
      for (const std::string& m : shards) paths.input(m);
      paths.output("-o", output).check();
      if (!merge.empty()) {
        const uint64_t rows = edo::merge_shards(merge, output);
        if (!quiet)
          std::fprintf(stderr, "edo-pack: %zu shards -> %s (%llu rows)\n", merge.size(), output.c_str(),
                       static_cast<unsigned long long>(rows));
      } else {
        edo::write_shard_set(shard_set, output);
        if (!quiet) std::fprintf(stderr, "edo-pack: %zu shards -> shard set %s\n", shard_set.size(), output.c_str());
      }
      return 0;
    }
    if (input.empty() || output.empty()) EDO_USAGE_FAIL("INPUT and -o OUTPUT are required (see --help)");
    if (int(!tier_texts.empty()) + int(!config.empty()) + int(!budget_texts.empty()) != 1)
      EDO_USAGE_FAIL("give the tiers with --tier ..., --config FILE or --budget ... (one of them)");
    if (output == "-") EDO_USAGE_FAIL("-o -: a .edo file is written to a named file, not stdout");
    const edo::Budget budget = edo::parse_budget(budget_texts);
    if (const auto model = edo::cli::model_input(input, model_flags, quiet, "edo-pack")) {
      if (!budget_texts.empty()) return run_model_budget(*model, budget);
      if (!table_weights.empty() || cold_weight)
        EDO_USAGE_FAIL("--table-weight and --cold-weight go with a model's --budget");
      return config.empty() ? run_model(*model) : run_model_config(*model);
    }
    if (!budget_texts.empty()) check_budget_flags(budget);
    if (!table_weights.empty() || cold_weight)
      EDO_USAGE_FAIL("--table-weight and --cold-weight go with a model's --budget");
    if (budget_texts.empty() && (!plan_codecs.empty() || plan_queries != 1000))
      EDO_USAGE_FAIL("--plan-codecs and --plan-queries go with --budget");
    if (freq_args.size() > 1) EDO_USAGE_FAIL("--freq: one count file for one table ({} given)", freq_args.size());
    if (!freq_dir.empty()) EDO_USAGE_FAIL("--freq-dir: counts per table of a model; {} is one table", input);
    if (!freq_args.empty()) freq_path = freq_args.front();
    edo::cli::PathGuard paths;
    paths.input(input).input(freq_path).input(config).input(vocab_path).input(shard_flags.trained).output("-o", output);
    eval_flags.add_paths(paths);
    paths.check();
    const bool eval_wanted = run_eval || !eval_flags.gates.empty();
    const auto gates = eval_flags.parsed_gates();
    const std::vector<edo::TierSpec> tiers = tier_specs();
    edo::cli::apply_threads(threads);
    auto table = edo::open_any_table(input, edo::io::Verify::all);
    if (budget_texts.empty()) edo::check_tier_specs(tiers, table->rows(), table->dim());

    edo::PackOptions opt = options(tiers);
    if (!freq_path.empty()) opt.freq = edo::io::read_frequencies(freq_path, table->rows());
    std::vector<std::string> given_words;
    if (!vocab_path.empty()) {
      given_words = edo::io::read_vocab(vocab_path, table->rows());
      opt.vocabulary = &given_words;
    }
    opt.parameters = {{"freq", freq_path.empty() ? "" : freq_path.substr(freq_path.find_last_of('/') + 1)}};
    edo::cli::PackShards shards;
    if (shards.train_only("edo-pack", shard_flags, *table, output, opt, eval_wanted, quiet)) return 0;
    shards.apply("edo-pack", shard_flags, *table, opt, eval_wanted);
    edo::cli::Progress progress("edo-pack", quiet);
    opt.progress = progress.callback();
    if (freq_path.empty() && !quiet)
      std::fprintf(stderr, "edo-pack: no --freq: rows are ordered by row L2 norm as a proxy for access frequency\n");

    const edo::cli::EvalTarget eval_target(output, eval_wanted);
    const std::string& target = eval_target.path();
    if (!budget_texts.empty()) return pack_budget(*table, opt, budget, target, eval_wanted, gates);
    const edo::PackReport rep = edo::pack_to_edo(*table, target, opt);

    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted)
      code = edo::cli::evaluate_packed("edo-pack", eval_flags, gates, *table, target, output, opt.freq, seed,
                                       opt.device, &rep, result, outcomes);

    edo::cli::print_write_summary(json, edo::pack_report_json(rep), edo::pack_report_text(rep), input, output, code,
                                  eval_wanted, result, outcomes);
    return code;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Pack an embedding table into a tiered .edo file: rows ordered hottest first (by --freq counts, else by\n"
      "row L2 norm), each tier a slice of that order with its own codec and a residency hint. Guide: docs/PACK.md.\n\n"
      "Tier spec: NAME:SHARE:CODEC[:gpu|host|disk], SHARE = rows=P% | rows=N | mass=P% | rest,\n"
      "CODEC = any codec spec (edo-quantize --list); 'default' (one shared vector: the frequency-weighted mean),\n"
      "'zero' (rows read as zeros), 'centroids:C' (C k-means centroids, each row mapped to its nearest) or\n"
      "'nearest[:cos|l2]' (each row answered by its nearest row of the codec tiers), the fallbacks for dropped\n"
      "rows; or a sparse form csr|bitmap:density=D|k=K|threshold=T[,values=fp32|fp16|bf16|\n"
      "int8|int4] (edo-sparsify --help); or 'lossless[:values=bf16|fp16|fp32]', the values bit for bit,\n"
      "entropy-coded (bare: the input's own type; docs/PACK.md, 'Lossless tiers').\n\n"
      "Examples:\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy \\\n"
      "      --tier hot:rows=5%:fp16:gpu --tier warm:rows=25%:int8:host --tier cold:rest:int4:disk\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy --tier hot:mass=80%:fp16:gpu --tier "
      "cold:rest:pq:m=16,nbits=8:disk\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy --tier keep:rows=90%:int8 --tier drop:rest:default\n"
      "  edo-pack model.safetensors:embed -o e.edo --tier hot:rows=5%:bf16 --tier cold:rest:lossless\n"
      "  edo-profile emb.npy --freq counts.npy --plan --budget 'recall@10>=0.98' --plan-config plan.json\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy --config plan.json --eval --gate 'w.recall@10>=0.98'\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy --budget 'bytes<=64M'    (plan and pack in one run)\n"
      "  edo-pack emb.npy -o emb.edo --freq counts.npy --budget 'ratio>=8' --budget 'recall@10>=0.9'\n"
      "  edo-pack model.safetensors -o model.edo --freq-dir counts/ --budget 'bytes<=2G'   (one budget, all tables)\n"
      "  edo-profile model.safetensors --freq-dir counts/ --plan --budget 'bytes<=2G' --plan-config plan.json\n"
      "  edo-pack model.safetensors -o model.edo --freq-dir counts/ --config plan.json   (the plan reviewed)\n"
      "  edo-pack model.safetensors -o model.edo --freq-dir counts/ --budget 'w.recall@10>=0.98'   (each table)\n"
      "  edo-pack --merge part-*.edo -o emb.edo    (shards of any tool's --shard; docs/SCALE.md)\n"
      "  edo-pack --shard-set part-*.edo -o emb.edoset    (read as one table where they lie, nothing copied)",
      "edo-pack"};
  Pack tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-pack");

  return edo::cli::run_tool("edo-pack", app, argc, argv, [&] { return tool.run(); });
}
