// SPDX-License-Identifier: Apache-2.0
// edo-quantize: scalar and vector quantization of a table into a .edo file.
#include "cli_common.hpp"
#include "eval_cli.hpp"
#include "model_cli.hpp"
#include "shard_cli.hpp"

#include <edo/codec.hpp>
#include <edo/codec_chooser.hpp>
#include <edo/device.hpp>
#include <edo/edo_file.hpp>
#include <edo/io/files.hpp>
#include <edo/io/vocab.hpp>
#include <edo/make_codec.hpp>
#include <edo/model_choice.hpp>
#include <edo/pack.hpp>
#include <edo/shard.hpp>
#include <edo/sweep.hpp>
#include <edo/tier.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace {

void print_codec_list() {
  // Columns as wide as their longest entry, so every row lines up.
  int spec_width = 4, bits_width = 10;
  for (const auto& t : edo::codec_list()) {
    spec_width = std::max(spec_width, static_cast<int>(std::strlen(t.grammar)));
    bits_width = std::max(bits_width, static_cast<int>(std::strlen(t.bits_formula)));
  }
  std::printf("%-8s %-*s %-*s %s\n", "codec", spec_width, "spec", bits_width, "bits/value", "description");
  for (const auto& t : edo::codec_list())
    std::printf("%-8s %-*s %-*s %s\n", t.name, spec_width, t.grammar, bits_width, t.bits_formula, t.description);
  std::printf(
      "\nbits/value: d = dimension, G = group size; fp16: with scale=fp16. Specs chain: pca:K,CODEC, rot,CODEC, "
      "dims:K,CODEC.\n");
}

}  // namespace

namespace {

// A bad spec is a usage error before any work; a tier kind's field
// (lossless, csr:..., hash:...) is no codec, and the error names the tool
// that writes it.
void check_codec_spec(const std::string& spec, uint64_t dim) {
  if (const edo::TierKind kind = edo::tier_kind_of(spec); kind != edo::TierKind::codec)
    EDO_USAGE_FAIL("codec spec '{}': a {} tier, not a codec: edo-pack writes it (--tier all:rest:{})", spec,
                   edo::tier_kind_traits(kind).name, spec);
  edo::make_codec(spec, dim);
}

// --sweep: each codec as a one-tier file (the bytes edo-quantize writes),
// evaluated, smallest first, the Pareto front of bytes and recall marked.
int run_codec_sweep(const std::string& text, edo::io::TableReader& table, const edo::PackOptions& opt,
                    const edo::cli::EvalFlags& flags, bool json) {
  std::vector<edo::SweepItem> items;
  for (const std::string& codec : edo::parse_sweep(text)) {
    check_codec_spec(codec, table.dim());
    items.push_back({codec, {edo::parse_tier_spec("all:rest:" + codec)}, false});
  }
  const edo::EvalOptions eval = flags.options(table.rows(), opt.seed, opt.device);
  const char* tmp = std::getenv("TMPDIR");
  std::vector<edo::SweepPoint> points = edo::run_sweep(table, items, opt, eval, tmp && *tmp ? tmp : "/tmp");
  std::stable_sort(points.begin(), points.end(),
                   [](const auto& a, const auto& b) { return a.file_bytes < b.file_bytes; });
  const std::string recall = edo::cli::front_recall(eval.ks);
  std::vector<const edo::EvalResult*> results;
  for (const auto& p : points) results.push_back(&p.eval);
  const std::vector<bool> front = edo::cli::pareto_front(results, recall);
  std::vector<std::string> metrics;
  for (uint64_t k : eval.ks) metrics.push_back(fmt::format("recall@{}", k));
  metrics.insert(metrics.end(), {"cos.mean", "rel_fro"});
  edo::cli::write_sweep_html(flags, points, metrics, table);
  for (size_t i = 0; i < points.size() && !json; ++i)
    if (front[i]) points[i].spec += " *";
  if (json) {
    std::puts(nlohmann::json{{"input", table.path()}, {"sweep", edo::sweep_json(points)}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %llu x %llu, %zu codecs, smallest first (* on the front of bytes against %s)\n",
              table.path().c_str(), static_cast<unsigned long long>(table.rows()),
              static_cast<unsigned long long>(table.dim()), points.size(), recall.c_str());
  std::fputs(edo::sweep_text(points, metrics).c_str(), stdout);
  return 0;
}

}  // namespace

namespace {

using edo::cli::ShardFlags;

// --trained (the codec, its state, and the training run's parameters and
// seed, so the provenance is a whole-table run's) and --shard (the rows of
// one shard, marked as one in the manifest): returns the table to encode.
edo::io::TableReader& apply_shard_flags(const ShardFlags& f, edo::io::TableReader& table, edo::QuantizeOptions& opt,
                                        std::optional<edo::TrainedState>& trained,
                                        std::unique_ptr<edo::io::TableReader>& view, bool eval_wanted) {
  if (!f.trained.empty()) {
    trained = edo::read_trained_state(f.trained);
    if (trained->tiers.size() != 1)
      EDO_USAGE_FAIL("--trained {}: a state of {} tiers (edo-pack --train-only); edo-quantize writes one", f.trained,
                     trained->tiers.size());
    if (trained->dim != table.dim())
      EDO_USAGE_FAIL("--trained {}: a state for {} columns, {} has {}", f.trained, trained->dim, table.path(),
                     table.dim());
    const std::string& held = trained->tiers[0].spec;
    if (!opt.spec.empty() && edo::canonical_spec(opt.spec, table.dim()) != held)
      EDO_USAGE_FAIL("--codec {}: --trained {} holds {} (drop --codec: the state implies it)", opt.spec, f.trained,
                     held);
    opt.spec = held;
    opt.trained = &trained->tiers;
    opt.parameters = trained->parameters;
    opt.seed = trained->seed;
  }
  const edo::cli::ShardChoice choice = edo::cli::resolve_shard(f.shard, f.shard_count);
  if (!choice.active() && f.source_hash != "sampled")
    EDO_USAGE_FAIL("--source-hash {}: it names the table a shard was cut from; give --shard I/N", f.source_hash);
  if (!choice.active()) return table;
  if (eval_wanted) EDO_USAGE_FAIL("--eval and --gate evaluate a whole table: run them on the merged file");
  if (!trained && edo::make_codec(opt.spec, table.dim())->needs_training())
    EDO_USAGE_FAIL(
        "codec {} trains, and every shard must share one state: run edo-quantize INPUT --train-only -o "
        "MODEL.edo --codec {} once, then each shard with --trained MODEL.edo",
        opt.spec, opt.spec);
  const edo::RowRange range = edo::cli::take_shard("edo-quantize", choice, table.rows(), opt.shard);
  edo::cli::sample_source(opt.shard, table, f.source_hash);
  view = edo::row_range_view(table, range);
  opt.first_row = range.begin;
  return *view;
}

}  // namespace

namespace {

// edo-quantize's flags and its run.
struct Quantize {
  std::string input, output, spec, device = "auto", sweep;
  bool list = false, json = false, quiet = false, allow_nonfinite = false, allow_underflow = false, run_eval = false;
  int threads = 0;
  uint64_t seed = 0, train_rows = 65536;
  edo::cli::EvalFlags eval_flags;
  std::string vocab_path;
  ShardFlags shard_flags;
  edo::cli::ModelFlags model_flags;

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input,
                   "Table to quantize, or a model: every table chosen by --tables, into one model file");
    app.add_option("-o,--output", output, "Output .edo file");
    app.add_option("--codec", spec,
                   "Codec spec, e.g. fp16, bf16, fp8:e4m3, int8, int5:scale=fp16, int4:group=32, bin, pca:128,int8,\n"
                   "rot,int4:scale=fp16, tc:bits=5.5, pq:m=16, opq:m=16,nbits=8, rq:m=8,nbits=8,beam=8 (see --list).\n"
                   "The scalar codecs need no training (GloVe 10k x 50 in int8: under a second); pq, opq and rq\n"
                   "train k-means on up to --train-rows rows first, m x 2^nbits centroids: the time grows with m\n"
                   "(docs/BENCHMARKS.md, \"Training time\"; pq:m=50 on 10,000 x 50 makes 3.6x where int8 makes\n"
                   "3.4x); start with --sweep on a sample to see what pays.\n"
                   "auto:bits=B picks the best recall@10 within B bits a value, auto:recall=R[,k=K] the smallest\n"
                   "file with recall@K >= R (k 10 by default), from about thirty spellings (see \"Choosing a codec\"\n"
                   "above); the file holds the chosen codec's own spelling");
    app.add_flag("--list", list, "List every codec with its bits per value, then exit");
    app.add_option("--sweep", sweep,
                   "Try several codecs in one run, nothing written: 'SPEC;SPEC;...'; prints each one's bytes, ratio,\n"
                   "recall, cosine and error (the evaluation flags apply), smallest first, '*' marking the files no\n"
                   "other beats on both bytes and the first recall");
    model_flags.add_to(app);
    edo::cli::add_device_option(app, device, "auto (GPU when present), cpu or cuda (an error without a GPU)");
    app.add_option("--seed", seed, "Seed for training samples and evaluation queries (default 0)");
    app.add_option("--train-rows", train_rows, "Rows sampled to train trainable codecs (default 65536)")
        ->check(CLI::PositiveNumber);
    app.add_flag("--allow-nonfinite", allow_nonfinite,
                 "Pass NaN/Inf through where the codec can store them (fp32, fp16, bf16) instead of refusing");
    app.add_flag("--allow-underflow", allow_underflow,
                 "Store rows whose values are too small for the codec (decoded to zeros or beyond its error bound,\n"
                 "docs/CLI.md) instead of refusing");
    app.add_option("--vocab", vocab_path,
                   "The word of each row, one a line: stored in the file, so edo-eval and word2vec exports have it\n"
                   "(word2vec and fastText inputs store their own words)");
    edo::cli::add_shard_flags(
        app, shard_flags,
        "Write only the trained codec state (a .edo with no rows), trained on the sample a whole-table\n"
        "run draws (--seed, --train-rows): for --trained in each shard's run",
        "A --train-only file: encode with its state, training nothing (implies --codec, --seed and the\n"
        "training parameters)");
    app.add_flag("--json", json, "Print the summary as JSON on stdout");
    app.add_flag("--eval", run_eval,
                 "Evaluate the result (edo-eval's engine), print and store the metrics in the manifest");
    eval_flags.add_to(app, false);
    edo::cli::add_run_options(app, threads, quiet);
  }

  // --codec auto:...: usage errors before any work. The choice is made
  // once, by a whole-table run; a shard's run reads it from --trained.
  void check_auto() const {
    edo::parse_auto_spec(spec);
    if (!shard_flags.trained.empty())
      EDO_USAGE_FAIL("--codec {}: --trained {} holds the codec its --train-only run chose (drop --codec)", spec,
                     shard_flags.trained);
    if (edo::cli::resolve_shard(shard_flags.shard, shard_flags.shard_count).active())
      EDO_USAGE_FAIL(
          "--codec {} in a shard's run: choose once with edo-quantize INPUT --train-only -o STATE.edo --codec {}, "
          "then run each shard with --trained STATE.edo",
          spec, spec);
  }

  // Runs the chooser on `table` (a model's: `in_model`) and prints its candidate table on stderr.
  edo::ChooseOptions chooser_options(bool in_model) const {
    edo::ChooseOptions o;
    o.refuse_k_beyond_rows = !in_model;  // a model's tiny tables meet a recall goal trivially
    o.metric = edo::parse_metric(eval_flags.metric);
    o.queries = eval_flags.queries;
    o.seed = seed;
    o.device = edo::select_device(device);
    o.allow_nonfinite = allow_nonfinite;
    o.allow_underflow = allow_underflow;
    o.note = edo::cli::stderr_note("edo-quantize", quiet);
    return o;
  }

  edo::CodecChoice choose(edo::io::TableReader& table) const {
    edo::CodecChoice c = edo::choose_codec(table, edo::parse_auto_spec(spec), chooser_options(false));
    if (!quiet) std::fprintf(stderr, "edo-quantize: %s: %s", table.path().c_str(), edo::codec_choice_text(c).c_str());
    if (shard_flags.train_only && !edo::make_codec(c.spec(), table.dim())->needs_training())
      EDO_USAGE_FAIL(
          "--train-only --codec {}: the chooser picked {}, which trains nothing, so there is no state to share: run "
          "each shard with --codec {}",
          spec, c.spec(), c.spec());
    return c;
  }

  // The options of one table's run with the codec `chosen` (the chooser's
  // pick for --codec auto:..., else --codec), which the manifest records.
  edo::QuantizeOptions options_for(const std::optional<edo::CodecChoice>& chosen) const {
    edo::QuantizeOptions opt = options();
    if (!chosen) return opt;
    opt.spec = chosen->spec();
    opt.parameters["codec"] = opt.spec;
    opt.parameters["chosen_by"] = spec;
    return opt;
  }

  edo::QuantizeOptions options() const {
    edo::QuantizeOptions opt;
    opt.spec = spec;
    opt.seed = seed;
    opt.train_rows = train_rows;
    opt.device = edo::select_device(device);
    opt.allow_nonfinite = allow_nonfinite;
    opt.allow_underflow = allow_underflow;
    opt.note = edo::cli::stderr_note("edo-quantize", quiet);  // training progress
    opt.parameters = {{"codec", spec}, {"train_rows", train_rows}, {"allow_nonfinite", allow_nonfinite}};
    if (allow_underflow) opt.parameters["allow_underflow"] = true;
    opt.extra_manifest = model_flags.manifest_entry();
    return opt;
  }

  // Every table of the model with the one codec, into one model file.
  int run_model(const edo::io::ModelSelection& model) {
    if (shard_flags.train_only && (!shard_flags.trained.empty() || !shard_flags.shard.empty()))
      EDO_USAGE_FAIL("--train-only trains on the whole table's sample: no --trained or --shard");
    const bool choosing = edo::is_auto_spec(spec);
    if (choosing)
      check_auto();
    else if (!spec.empty())
      for (const edo::io::ModelTable& t : model.tables) check_codec_spec(spec, t.dim);  // usage errors first
    const edo::QuantizeOptions opt = options();
    // auto:... on a model: one budget over the model's values, each table's pick from its own candidates.
    std::map<std::string, edo::CodecChoice> picks;
    if (choosing) {
      std::vector<std::unique_ptr<edo::io::TableReader>> readers;
      std::vector<edo::JointTable> tables;
      for (const edo::io::ModelTable& t : model.tables) {
        readers.push_back(edo::open_any_table(t.spec, edo::io::Verify::all));
        tables.push_back({t.name, readers.back().get(), {}, 1});
      }
      const edo::ModelCodecChoice m =
          edo::choose_model_codecs(tables, edo::parse_auto_spec(spec), chooser_options(true));
      if (!quiet)
        std::fprintf(stderr, "edo-quantize: %s: one choice for the model\n%s", input.c_str(),
                     edo::model_codec_choice_text(m).c_str());
      for (size_t t = 0; t < model.tables.size(); ++t) picks.emplace(model.tables[t].name, m.tables[t]);
    }
    const edo::cli::ModelShards shards(shard_flags, model, output);
    const edo::ModelReport rep = edo::write_model_tables(
        model, output,
        [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
          std::optional<edo::CodecChoice> chosen;
          if (choosing) chosen = picks.at(t.name);
          if (chosen && shard_flags.train_only && !edo::make_codec(chosen->spec(), table.dim())->needs_training())
            EDO_USAGE_FAIL(
                "--train-only --codec {}: the chooser picked {} for table {}, which trains nothing, so there is no "
                "state to share: run each shard with --codec {}",
                spec, chosen->spec(), t.name, chosen->spec());
          edo::QuantizeOptions o = options_for(chosen);
          nlohmann::json choice_json =
              chosen ? nlohmann::json{{"codec_choice", edo::codec_choice_json(*chosen)}} : nlohmann::json::object();
          if (shard_flags.train_only) {
            edo::write_trained_state(table, out, o.spec, o);
            choice_json["trained_state"] = o.spec;
            return choice_json;
          }
          const std::optional<edo::cli::ShardFlags> flags = shards.for_table(t);
          if (!flags) return nlohmann::json();  // this shard holds none of the table's rows
          std::optional<edo::TrainedState> trained;
          std::unique_ptr<edo::io::TableReader> view;
          edo::io::TableReader& source = apply_shard_flags(*flags, table, o, trained, view, false);
          choice_json.update(edo::quantize_report_json(edo::quantize_to_edo(source, out, o)));
          return choice_json;
        },
        shards.provenance(edo::model_provenance(opt)), edo::cli::stderr_note("edo-quantize", quiet));
    edo::cli::print_model_summary(json, rep, input, output);
    return 0;
  }

  int run(const CLI::App& app) {
    if (list) {
      print_codec_list();
      return 0;
    }
    if (!sweep.empty()) {
      if (!output.empty() || !spec.empty())
        EDO_USAGE_FAIL("--sweep writes nothing and takes its codecs from its items: drop -o and --codec");
      if (input.empty()) EDO_USAGE_FAIL("INPUT is required (see --help)");
      edo::cli::PathGuard paths;
      paths.input(input);
      eval_flags.add_paths(paths);
      paths.check();
      edo::cli::apply_threads(threads);
      if (edo::cli::model_input(input, model_flags, quiet, "edo-quantize"))
        EDO_USAGE_FAIL("--sweep takes one table: name one with --tables or as FILE:tensor");
      auto table = edo::open_any_table(input, edo::io::Verify::all);
      edo::PackOptions opt;
      opt.tool = "edo-quantize";
      opt.seed = seed;
      opt.train_rows = train_rows;
      opt.device = edo::select_device(device);
      opt.allow_nonfinite = allow_nonfinite;
      opt.allow_underflow = allow_underflow;
      return run_codec_sweep(sweep, *table, opt, eval_flags, json);
    }
    if (input.empty() || output.empty() || (spec.empty() && shard_flags.trained.empty()))
      EDO_USAGE_FAIL("INPUT, -o OUTPUT and --codec SPEC (or --trained MODEL) are required (see --help)");
    if (output == "-") EDO_USAGE_FAIL("-o -: a .edo file is written to a named file, not stdout");
    if (shard_flags.train_only && (!shard_flags.trained.empty() || !shard_flags.shard.empty() || run_eval))
      EDO_USAGE_FAIL("--train-only trains on the whole table's sample: no --trained, --shard or --eval");
    edo::cli::PathGuard paths;
    paths.input(input).input(vocab_path).input(shard_flags.trained).output("-o", output);
    eval_flags.add_paths(paths);
    paths.check();
    const bool eval_wanted = run_eval || !eval_flags.gates.empty();
    const auto gates = eval_flags.parsed_gates();  // usage errors before any work
    if (edo::is_auto_spec(spec)) check_auto();
    edo::cli::apply_threads(threads);
    if (const auto model = edo::cli::model_input(input, model_flags, quiet, "edo-quantize")) {
      if (eval_wanted || !vocab_path.empty())
        EDO_USAGE_FAIL(
            "a model input: --eval and --gate (use edo-eval MODEL model.edo) and --vocab take one table "
            "(FILE:tensor)");
      return run_model(*model);
    }
    auto table = edo::open_any_table(input, edo::io::Verify::all);
    std::optional<edo::CodecChoice> chosen;
    if (edo::is_auto_spec(spec))
      chosen = choose(*table);
    else if (!spec.empty())
      check_codec_spec(spec, table->dim());

    edo::QuantizeOptions opt = options_for(chosen);
    std::vector<std::string> given_words;
    if (!vocab_path.empty()) {
      given_words = edo::io::read_vocab(vocab_path, table->rows());
      opt.vocabulary = &given_words;
    }
    if (shard_flags.train_only) {
      edo::write_trained_state(*table, output, opt.spec, opt);
      if (!quiet)
        std::fprintf(stderr, "edo-quantize: %s -> %s: the trained state of %s\n", input.c_str(), output.c_str(),
                     opt.spec.c_str());
      return 0;
    }
    std::optional<edo::TrainedState> trained;
    std::unique_ptr<edo::io::TableReader> shard_view;
    edo::io::TableReader& source = apply_shard_flags(shard_flags, *table, opt, trained, shard_view, eval_wanted);
    if (trained && ((app.count("--seed") > 0 && seed != trained->seed) || app.count("--train-rows") > 0))
      EDO_USAGE_FAIL("--trained {} was trained with --seed {}: its state sets the seed and the training rows",
                     shard_flags.trained, trained->seed);
    if (shard_view && opt.vocabulary) {  // --vocab names every row of the table; the shard stores its own
      const auto first = given_words.begin() + static_cast<int64_t>(opt.first_row);
      given_words = std::vector<std::string>(first, first + static_cast<int64_t>(source.rows()));
    }
    edo::cli::Progress progress("edo-quantize", quiet);
    opt.progress = progress.callback();

    const edo::cli::EvalTarget eval_target(output, eval_wanted);
    const std::string& target = eval_target.path();
    const edo::QuantizeReport rep = edo::quantize_to_edo(source, target, opt);

    edo::EvalResult result;
    std::vector<edo::GateOutcome> outcomes;
    int code = 0;
    if (eval_wanted) {
      auto decoded = edo::EdoTable::open(target);
      result = edo::evaluate(*table, *decoded, eval_flags.options(table->rows(), seed, opt.device));
      edo::add_memory_metrics(result, *table, *decoded);
      outcomes = edo::check_gates(gates, result);
      edo::HtmlReport page;
      page.title = fmt::format("edo-quantize {} -> {} ({})", input, output, opt.spec);
      page.subject = output;
      page.tiers = edo::cli::report_tiers(decoded->reader());
      if (const auto* words = decoded->vocabulary(); words && !eval_flags.report_html.empty())
        page.neighbours = edo::cli::report_neighbours(*table, *decoded, result.metric, opt.device, *words, input);
      code = edo::cli::finish_gates("edo-quantize", eval_flags, result, outcomes, page);
      if (code == 0) edo::republish_with_manifest(target, output, {{"eval", edo::to_json(result, outcomes)}});
    }

    nlohmann::json summary = edo::quantize_report_json(rep);
    if (chosen) summary["codec_choice"] = edo::codec_choice_json(*chosen);
    edo::cli::print_write_summary(json, summary, edo::quantize_report_text(rep), input, output, code, eval_wanted,
                                  result, outcomes);
    return code;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Quantize an embedding table into a one-tier .edo file, streaming it in row blocks.\n\n"
      "INPUT is x.npy, x.npz[:member], x.h5:/group/dataset, model.safetensors:tensor (a sharded model:\n"
      "model.safetensors.index.json:tensor), word vectors x.vec|.txt|.bin (word2vec, fastText),\n"
      "x.fvecs|.bvecs|.ivecs, a .edo (its decoded rows) or the codes edo-unpack --codes wrote to\n"
      "x.safetensors:NAME (decoded), or - (npy on stdin).\n\n"
      "Trained codecs (pq, opq, rq, pca, tc) also store a state whose size does not depend on the rows\n"
      "(rq: levels x 2^nbits x dim floats): the summary's 'state' line gives its bytes and says when it\n"
      "outweighs the codes for the table at hand, where a scalar codec may make a smaller file;\n"
      "codebooks=fp16 (pq, opq, rq) stores the codebooks in half the bytes at about the same recall, and\n"
      "codebooks=int8 in a byte a value and one a codeword (rq on GloVe: 1.5x smaller files, the same recall).\n"
      "Training prints its progress on stderr (k-means pass, error, time left; rq: its level too, then its refit "
      "rounds) unless -q.\n\n"
      "Integer codecs int8, int6, int5, int4, int3 and int2 keep an fp32 scale and offset a row or a group;\n"
      "scale=fp16 stores them in half the bytes (int4:group=32,scale=fp16 is 5 bits a value, as llama.cpp's\n"
      "Q4_1) and refuses values from 65520 on.\n\n"
      "tc:bits=B (transform coding) stores a row's length (fp16) and its direction in the sample's principal\n"
      "basis, round(B x d) bits a row shared out by variance, no per-row scales: on GloVe tc:bits=4 (27 bytes\n"
      "a row) errs 24% less than int4:scale=fp16 (29). Its d x d basis (fp16) costs 2 d^2 bytes of state and\n"
      "d^2 flops a row each way, so it suits tables of at most a few hundred dimensions (d <= 2048).\n\n"
      "Choosing a codec: --codec auto:bits=4.5 (the best recall@10 within 4.5 bits a value) or\n"
      "auto:recall=0.95 (the fewest bytes with recall@10 >= 0.95; auto:recall=0.95,k=100 for recall@100)\n"
      "sizes each candidate for the table (codes, trained state and 4096 bytes of container, over the rows),\n"
      "drops those over a bits budget before any trial, then trains, encodes and scores the rest on a seeded\n"
      "10,000-row sample as edo-eval does (--metric, --queries, --seed; a recall budget tries them smallest\n"
      "first and stops at the first that meets it; under a bits budget, recalls within the sample's\n"
      "confidence interval of the best are scored again on four times the queries, the best there winning).\n"
      "The candidates: bin, int2, int3, int3-int8 with fp16 scales (int4 also in groups of 128, 64 and 32,\n"
      "int5 of 32, int8 of 64 and 32), int8, fp8:e4m3, fp16, rot,intN:scale=fp16, tc:bits=1 to 8, pq at 1,\n"
      "1.5, 2, 3 and 4 bits a value with int8 codebooks, and rq:m=8 and 16 where they train in seconds.\n"
      "The candidate table and why the winner won go to stderr (unless -q; --json adds them as\n"
      "codec_choice); no candidate within the budget is an error (exit 1) naming the smallest or the best.\n"
      "On a model the budget is the model's: bits a value over all its values, recall over its lookups\n"
      "(tables weighed by rows, or by counts), each table's pick from its own candidates so that the model\n"
      "meets it (a tiny table takes the bits it needs).\n"
      "Under --shard, choose once: --train-only --codec auto:... writes the winner's state, and each shard\n"
      "runs with --trained (a winner that trains nothing is named, to pass as --codec to every shard).\n\n"
      "Examples:\n"
      "  edo-quantize --list\n"
      "  edo-quantize glove.npy -o glove.auto.edo --codec auto:bits=4.5\n"
      "  edo-quantize glove.npy -o glove.int8.edo --codec int8\n"
      "  edo-quantize glove.npy -o glove.i4.edo --codec int4:group=32 --eval --gate 'recall@10>=0.9'\n"
      "  edo-quantize glove.npy -o glove.i5.edo --codec int5:scale=fp16 --eval\n"
      "  edo-quantize glove.npy -o glove.r4.edo --codec rot,int4:scale=fp16 --eval\n"
      "  edo-quantize glove.npy -o glove.tc.edo --codec tc:bits=5.5 --eval\n"
      "  edo-quantize emb.h5:/weight -o emb.edo --codec pca:128,fp16 --seed 7 --json\n"
      "  edo-quantize glove.npy -o glove.pq.edo --codec pq:m=16 --train-rows 10000 --eval\n"
      "  edo-quantize glove.npy --sweep 'int8;int4:group=32;pq:m=16;rq:m=8'",
      "edo-quantize"};
  Quantize tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-quantize");

  return edo::cli::run_tool("edo-quantize", app, argc, argv, [&] { return tool.run(app); });
}
