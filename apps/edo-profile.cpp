// SPDX-License-Identifier: Apache-2.0
// edo-profile: what is this matrix, and where do its bytes go?
#include "eval_cli.hpp"
#include "joint_budget_cli.hpp"
#include "model_cli.hpp"
#include "shard_cli.hpp"

#include <edo/io/safetensors.hpp>

#include <edo/budget.hpp>
#include <edo/edo_file.hpp>
#include <edo/io/files.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/table.hpp>
#include <edo/model_evaluate.hpp>
#include <edo/model_profile.hpp>
#include <edo/pack.hpp>
#include <edo/profile.hpp>
#include <edo/report_html.hpp>
#include <edo/reports.hpp>
#include <edo/shard.hpp>

#include <cmath>
#include <optional>

namespace {

// The 2-D tensors of a safetensors file (or sharded model), largest first.
// Plus the groups of codes edo-unpack --codes wrote (a NAME.codec in __metadata__).
int list_tensors(const std::string& path, bool json) {
  const auto tables = edo::io::list_safetensors_tables(path);
  // Which of them a model run takes by default, and by which rule.
  std::vector<std::string> floating;
  try {
    for (const edo::io::ModelTable& t : edo::io::select_model_tables(path, {"*"}).tables) floating.push_back(t.name);
  } catch (const edo::Error&) {  // no 2-D floating tensor: nothing is taken by default
  }
  const auto default_reason = [&](const std::string& name) {
    return std::find(floating.begin(), floating.end(), name) == floating.end()
               ? std::string()
               : edo::io::default_table_reason(name, floating);
  };
  std::vector<std::pair<std::string, std::string>> codes;  // name, codec
  if (!path.ends_with(".index.json"))
    for (const auto& [key, value] : edo::io::open_safetensors_file(path).header.metadata)
      if (key.ends_with(".codec")) codes.emplace_back(key.substr(0, key.size() - 6), value);
  if (json) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& t : tables)
      list.push_back({{"name", t.name},
                      {"file", t.file},
                      {"dtype", edo::io::dtype_name(t.dtype)},
                      {"shape", {t.rows, t.dim}},
                      {"bytes", t.bytes},
                      {"default", !default_reason(t.name).empty()},
                      {"why", default_reason(t.name)}});
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& [name, codec] : codes) groups.push_back({{"name", name}, {"codec", codec}});
    std::puts(nlohmann::json{{"input", path}, {"tables", list}, {"codes", groups}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s: %zu 2-D tensors, largest first (profile one as %s:NAME; * a model run's default tables)\n",
              path.c_str(), tables.size(), path.c_str());
  for (const auto& t : tables) {
    const std::string why = default_reason(t.name);
    std::printf("%s %-60s %12llu x %-7llu %-14s %14llu bytes%s\n", why.empty() ? " " : "*", t.name.c_str(),
                static_cast<unsigned long long>(t.rows), static_cast<unsigned long long>(t.dim),
                edo::io::dtype_name(t.dtype), static_cast<unsigned long long>(t.bytes),
                why.empty() ? "" : ("  (" + why + ")").c_str());
  }
  for (const auto& [name, codec] : codes)
    std::printf("codes %s (%s, edo-unpack --codes): %s:%s reads them decoded\n", name.c_str(), codec.c_str(),
                path.c_str(), name.c_str());
  return 0;
}

// Whether a safetensors file holds groups of codes (edo-unpack --codes): it
// is listed, as before models, rather than profiled as a model.
bool holds_code_groups(const std::string& path) {
  if (path.ends_with(".index.json")) return false;
  for (const auto& [key, value] : edo::io::open_safetensors_file(path).header.metadata)
    if (key.ends_with(".codec")) return true;
  return false;
}

// --list-tables of a model that is not a safetensors file: the tables it
// would take and the tensors it would skip.
int list_model_tables(const std::string& path, const std::vector<std::string>& globs, bool json) {
  if (edo::is_model_file(path)) {
    const std::vector<std::string> names = edo::Reader::open(path).tables();
    if (json) {
      std::puts(nlohmann::json{{"input", path}, {"tables", names}}.dump(2).c_str());
    } else {
      std::printf("%s: a model file of %zu tables\n", path.c_str(), names.size());
      for (const auto& n : names) std::printf("  %s\n", n.c_str());
    }
    return 0;
  }
  const edo::io::ModelSelection sel = edo::io::select_model_tables(path, globs);
  if (json) {
    nlohmann::json list = nlohmann::json::array(), skipped = nlohmann::json::array();
    for (const auto& t : sel.tables) list.push_back({{"name", t.name}, {"shape", {t.rows, t.dim}}});
    for (const auto& [name, why] : sel.skipped) skipped.push_back({{"name", name}, {"why", why}});
    std::puts(nlohmann::json{{"input", path}, {"tables", list}, {"skipped", skipped}}.dump(2).c_str());
    return 0;
  }
  std::printf("%s (%s): %zu tables%s\n", path.c_str(), sel.format.c_str(), sel.tables.size(),
              globs.empty() ? ", the default choice" : ", those --tables names");
  std::vector<std::string> taken;
  for (const auto& t : sel.tables) taken.push_back(t.name);
  for (const auto& t : sel.tables) {
    const std::string why = globs.empty() ? "  (" + edo::io::default_table_reason(t.name, taken) + ")" : "";
    std::printf("  %-60s %12llu x %llu%s\n", t.name.c_str(), static_cast<unsigned long long>(t.rows),
                static_cast<unsigned long long>(t.dim), why.c_str());
  }
  for (const auto& [name, why] : sel.skipped) std::printf("  skipped %s: %s\n", name.c_str(), why.c_str());
  return 0;
}

// Whether INPUT is profiled as a model: a .edo model file, a safetensors file
// (or sharded model) without a tensor named, or another model input
// (npz, HDF5, folder of .npy) of more than one table.
bool profiled_as_model(const std::string& input, const std::vector<std::string>& globs) {
  if (edo::is_model_file(input)) return true;
  if (!edo::io::is_model_spec(input)) return false;
  if (edo::io::is_safetensors_path(input) || !globs.empty()) return true;
  return edo::io::select_model_tables(input, globs).tables.size() > 1;
}

// --merge: the parts' profile, with the access skew of --freq.
int merge_parts(const std::vector<std::string>& files, const std::string& freq, bool json, edo::ProfileOptions opt) {
  std::vector<nlohmann::json> parts;
  for (const std::string& f : files) {
    const edo::io::MappedFile m(f);
    nlohmann::json j = nlohmann::json::parse(m.data(), m.data() + m.size(), nullptr, false);
    if (j.is_discarded() || !edo::is_profile_part(j))
      EDO_FAIL("{}: not a profile part (edo-profile --shard I/N --json writes one)", f);
    parts.push_back(std::move(j));
  }
  edo::TableProfile p = edo::merge_profile_parts(parts, files, edo::profile_part_options(parts[0], opt));
  if (!freq.empty()) {
    p.skew = edo::access_skew(edo::io::read_frequencies(freq, p.rows));
    p.has_skew = true;
  }
  if (json) {
    std::fputs((edo::profile_report_json(p, nullptr, nullptr).dump(2) + "\n").c_str(), stdout);
  } else {
    std::fputs(edo::profile_report_text(p, nullptr, nullptr, "").c_str(), stdout);
  }
  return 0;
}

}  // namespace

namespace {

// edo-profile's flags and its run.
struct Profile {
  std::string input, freq, device = "auto";
  bool json = false, quiet = false;
  int threads = 0;
  edo::ProfileOptions opt;
  std::string shard;
  uint32_t shard_count = 0;
  std::vector<std::string> merge;
  bool plan = false;
  std::vector<std::string> budget;
  std::string plan_config, plan_metric = "cos", report_html, freq_dir;
  std::vector<std::string> table_weights;
  std::optional<double> cold_weight;
  edo::PlanOptions plan_opt;
  edo::cli::ModelFlags model;
  bool list_tables = false;

  void add_to(CLI::App& app) {
    app.add_option("INPUT", input, "Table to profile");
    edo::cli::add_shard_options(app, shard, shard_count, "into a part (with --json) for edo-profile --merge");
    app.add_option("--merge", merge,
                   "Parts written by --shard I/N --json (any order): the report one process gives for the whole\n"
                   "table, exactly (--freq adds the access skew)")
        ->expected(1, -1);
    app.add_option("--freq", freq, "Per-row lookup counts: a 1-D .npy (one count per row) or text lines 'id count'");
    app.add_flag("--json", json, "Print the profile as JSON on stdout");
    app.add_option("--seed", opt.seed, "Seed of the row sample (default 0)");
    app.add_option("--sample-rows", opt.sample_rows, "Rows sampled for percentiles and PCA (default 10000)")
        ->check(CLI::PositiveNumber);
    app.add_option("--near-zero", opt.near_zero, "Absolute near-zero threshold (default: 1% of the sample's RMS value)")
        ->check(CLI::PositiveNumber);
    edo::cli::add_device_option(
        app, device, "auto (GPU when present), cpu or cuda (an error without a GPU), for the PCA covariance");
    app.add_flag(
        "--plan", plan,
        "Choose tiers for edo-pack under --budget: candidate plans are evaluated on a seeded sample, cheapest\n"
        "first, and the smallest that meets the budget wins (the most accurate under --max-bytes). With\n"
        "--freq the budget's metrics are the access-weighted ones (recall@10 means w.recall@10). A model\n"
        "(a size --budget; --freq-dir, --table-weight, --seed, --plan-codecs as edo-pack's): the joint plan\n"
        "edo-pack MODEL --budget packs, its rounds written to a temporary model file beside --plan-config and\n"
        "measured; edo-pack MODEL --config of the plan file writes the same bytes");
    app.add_option("--budget", budget,
                   "What the plan must keep, repeatable: an accuracy gate such as 'recall@10>=0.98', or a size,\n"
                   "'bytes<=2G' (the whole file edo-pack --config writes; 2G = 2GiB, 2GB = 2e9) or 'ratio>=8' (fp32\n"
                   "bytes over the file's), under which the most accurate plan wins (never access-weighted)");
    app.add_option("--max-bytes", plan_opt.max_bytes, "Plan: total bytes cap; the most accurate plan under it wins");
    app.add_option("--gpu-bytes", plan_opt.gpu_bytes, "Plan: cap on the bytes of gpu-resident tiers");
    app.add_option("--plan-config", plan_config,
                   "Plan: write the chosen plan here (JSON for edo-pack --config; a model's: each table's tiers,\n"
                   "E_t, recall@10 measured, bytes and share of lookups, the budget, its cap and the file's bytes)");
    app.add_option("--report-html", report_html,
                   "Plan: write an HTML report of the candidates (the budget's metric against bytes, inline SVG)");
    app.add_option(
        "--plan-codecs", plan_opt.codecs,
        "Plan: codecs tiers may use, repeatable (default lossless in the input's own type, fp16, int8, int4,\n"
        "int2, int8/int6/int5/int4 with scale=fp16 (left out when the sample reaches 65520), pq:m=d/2, d/4,\n"
        "d/8 and rq:m=d/4, d/8 in its fast setting (beam=4,train_beam=1,refine=1; only where m x d x\n"
        "training rows <= 6e7, about 10 s of training), both with codebooks=int8, tc:bits=10, 7 and 4.75\n"
        "(only where training rows x d^2 <= 1e9; each trained on its tier's own rows, as edo-pack trains\n"
        "it), csr:density=0.3,values=int8 and hash:buckets=rows/4,k=2). Codecs rank by their error on the\n"
        "sample: a plan no more precise than one that failed is skipped. Tiers start and end at 1, 2, 5, 10,\n"
        "20, 30 or 40% of the hot order; a lossless tier holds a whole table or the coldest tier only.\n"
        "Also other sparse tiers (bitmap:k=8, ...: bytes estimated from the sample's density), hashed and\n"
        "group tiers (hash:buckets=B,k=K, qr:buckets=B, group:clusters=C,residual=R: fitted to the sample,\n"
        "a hash's buckets scaled to it) and, as the coldest of two or three tiers only, the dropped rows'\n"
        "fallbacks default, zero, centroids:C and nearest[:cos|l2] (never by default: they drop rows), e.g.\n"
        "--plan-codecs int8 --plan-codecs centroids:64. A model's joint plan: codecs only; default each table's\n"
        "candidates of --codec auto, as edo-pack --help says");
    app.add_option("--plan-sample-rows", plan_opt.sample_rows, "Plan: rows of the evaluation sample (default 10000)")
        ->check(CLI::PositiveNumber);
    app.add_option("--plan-queries", plan_opt.queries, "Plan: evaluation queries (default 1000)")
        ->check(CLI::PositiveNumber);
    app.add_option("--plan-metric", plan_metric, "Plan: k-NN metric cos, ip or l2 (default cos)")
        ->check(CLI::IsMember({"cos", "ip", "l2"}));
    app.add_option("--freq-dir", freq_dir,
                   "A model's --plan: DIR/NAME.npy counts table NAME ('/' in a name written '__'), as edo-pack's");
    edo::cli::add_joint_weight_options(app, table_weights, cold_weight, "A model's --plan");
    model.add_to(app);
    app.add_flag("--list-tables", list_tables,
                 "List a model's tables instead of profiling them (a safetensors file: its 2-D tensors, largest\n"
                 "first, and the codes edo-unpack --codes wrote; a model file: its tables)");
    edo::cli::add_run_options(app, threads, quiet);
  }

  // A model's --plan under a size budget: the joint plan edo-pack MODEL
  // --budget packs, made by the same rounds (each written to a temporary
  // model file beside --plan-config and measured), so that edo-pack --config
  // of the plan file writes the file the one-run pack writes.
  int run_model_plan(const edo::Budget& parsed) {
    if (edo::is_model_file(input)) EDO_USAGE_FAIL("--plan: {} is a packed model file; plan its source", input);
    if (!parsed.gates.empty() || parsed.sizes.empty())
      EDO_USAGE_FAIL("a model's --plan takes a size --budget ('bytes<=2G' or 'ratio>=8'), not '{}'",
                     parsed.gates.front().expression);
    if (!freq.empty() || !shard.empty() || plan_opt.max_bytes || plan_opt.gpu_bytes || !report_html.empty())
      EDO_USAGE_FAIL(
          "a model's --plan: counts by --freq-dir; --freq, --shard, --max-bytes, --gpu-bytes and "
          "--report-html take one table");
    const edo::io::ModelSelection sel = edo::io::select_model_tables(input, model.tables);
    if (!quiet) std::fprintf(stderr, "edo-profile: %s\n", edo::model_selection_text(sel, model.verbose).c_str());
    edo::cli::PathGuard().input(freq_dir).check();
    const auto freq_files = edo::cli::model_freq_files(sel, {}, freq_dir);
    const auto weights = edo::cli::parse_table_weights(sel, input, table_weights);
    edo::PackOptions base;
    base.seed = opt.seed;
    base.device = opt.device;
    base.note = edo::cli::stderr_note("edo-profile", quiet);
    base.extra_manifest = model.manifest_entry();
    base.parameters = {{"freq_tables", freq_files.size()}};
    edo::TemporaryTables trial(plan_config.empty() ? input : plan_config);
    const std::string& trial_path = trial.add("plan");
    edo::cli::StageProgress stages("edo-profile", quiet);
    edo::ModelBudgetRun run = edo::plan_model_budget(
        sel, parsed,
        {freq_files, weights, opt.seed, plan_opt.codecs, edo::cli::checked_cold_weight(cold_weight), stages.callback()},
        [&](const std::map<std::string, std::vector<edo::TierSpec>>& planned, bool) {
          edo::write_model_tables(
              sel, trial_path,
              [&](edo::io::TableReader& table, const edo::io::ModelTable& t, const std::string& out) {
                edo::PackOptions one = base;
                one.tiers = planned.at(t.name);
                one.note = {};
                one.freq = edo::cli::model_table_freq(freq_files, t);
                const auto file = freq_files.find(t.name);
                one.parameters = {
                    {"freq", file == freq_files.end() ? "" : file->second.substr(file->second.find_last_of('/') + 1)}};
                return edo::pack_report_json(edo::pack_to_edo(table, out, one));
              },
              edo::model_provenance(base));
          return static_cast<uint64_t>(std::filesystem::file_size(trial_path));
        });
    if (run.written > run.cap)
      EDO_FAIL("{}: the planned model file takes {} bytes, {} over the budget's {}", input, run.written,
               run.written - run.cap, run.cap);
    // The last round's file holds the plan: its recall before it goes.
    edo::measure_model_budget_recall(run, sel, trial_path, freq_files, opt.seed, plan_opt.queries, opt.device);
    const nlohmann::json j = edo::model_budget_json(run, parsed);
    if (!plan_config.empty()) edo::cli::write_text_file(plan_config, j.dump(2) + "\n");
    if (json) {
      std::fputs((j.dump(2) + "\n").c_str(), stdout);
      return 0;
    }
    std::printf("%s: a joint plan of %zu tables%s\n", input.c_str(), run.plan.tables.size(),
                plan_config.empty() ? "" : (" -> " + plan_config).c_str());
    std::fputs(edo::to_text(run.plan).c_str(), stdout);
    std::fputs(edo::model_budget_text(run, parsed).c_str(), stdout);
    return 0;
  }

  // A model: every chosen table, one section each, and the total.
  int run_model() {
    if (!freq.empty() || !shard.empty())
      EDO_USAGE_FAIL(
          "--freq and --shard take one table: name it as FILE:tensor or with --tables (a model's counts: --plan "
          "--freq-dir)");
    if (!freq_dir.empty() || !table_weights.empty() || cold_weight)
      EDO_USAGE_FAIL("--freq-dir, --table-weight and --cold-weight go with a model's --plan");
    edo::cli::Progress progress("edo-profile", quiet);
    opt.progress = progress.callback();
    edo::ModelProfile m;
    if (edo::is_model_file(input)) {
      if (!model.tables.empty()) EDO_USAGE_FAIL("--tables: {} is a model file; it is profiled whole", input);
      m = edo::profile_model_file(input, opt);
    } else {
      const edo::io::ModelSelection sel = edo::io::select_model_tables(input, model.tables);
      if (!quiet) std::fprintf(stderr, "edo-profile: %s\n", edo::model_selection_text(sel, model.verbose).c_str());
      m = edo::profile_model(sel, opt);
    }
    std::fputs(json ? (edo::model_profile_json(m).dump(2) + "\n").c_str() : edo::model_profile_text(m).c_str(), stdout);
    return 0;
  }

  int run() {
    edo::cli::apply_threads(threads);
    if (!merge.empty() || input.empty()) {
      if (merge.empty() || !input.empty() || plan || !shard.empty())
        EDO_USAGE_FAIL("INPUT is required, or --merge PARTS... alone (no INPUT, --plan or --shard)");
      opt.device = edo::select_device(device);
      return merge_parts(merge, freq, json, opt);
    }
    if (!plan &&
        (!budget.empty() || plan_opt.max_bytes || plan_opt.gpu_bytes || !plan_config.empty() || !report_html.empty()))
      EDO_USAGE_FAIL("--budget, --max-bytes, --gpu-bytes, --plan-config and --report-html go with --plan");
    edo::cli::PathGuard()
        .input(input)
        .input(freq)
        .output("--plan-config", plan_config)
        .output("--report-html", report_html)
        .check();
    if (plan && budget.empty()) EDO_USAGE_FAIL("--plan needs --budget, e.g. --budget 'recall@10>=0.98'");
    const edo::Budget parsed = edo::parse_budget(budget);
    opt.device = edo::select_device(device);
    const bool whole_safetensors =
        edo::io::is_safetensors_path(input) && edo::io::split_table_spec(input).member.empty();
    if (list_tables || (whole_safetensors && model.tables.empty() && holds_code_groups(input))) {
      if (whole_safetensors) return list_tensors(input, json);
      if (!edo::io::is_model_spec(input) && !edo::is_model_file(input))
        EDO_USAGE_FAIL("--list-tables: {} is one table, not a model", input);
      return list_model_tables(input, model.tables, json);
    }
    if (profiled_as_model(input, model.tables)) return plan ? run_model_plan(parsed) : run_model();
    if (!freq_dir.empty() || !table_weights.empty() || cold_weight)
      EDO_USAGE_FAIL("--freq-dir, --table-weight and --cold-weight go with a model's --plan; {} is one table", input);
    if (!model.tables.empty()) EDO_USAGE_FAIL("--tables: {} is one table, not a model", input);
    auto table = edo::open_any_table(input, edo::io::Verify::all);
    nlohmann::json container;
    if (const auto* edo_table = dynamic_cast<const edo::EdoTable*>(table.get()))
      container = edo::container_summary(edo_table->container());
    edo::cli::Progress progress("edo-profile", quiet);
    opt.progress = progress.callback();
    if (const edo::cli::ShardChoice choice = edo::cli::resolve_shard(shard, shard_count); choice.active()) {
      if (!json || plan || !freq.empty())
        EDO_USAGE_FAIL("a shard's profile is a part for --merge: give --json, and --freq or --plan to the merge");
      nlohmann::json entry;
      const edo::RowRange r = edo::cli::take_shard("edo-profile", choice, table->rows(), entry);
      const nlohmann::json part = edo::profile_part(*table, opt, r.begin, r.end, entry);
      std::fputs((part.dump() + "\n").c_str(), stdout);
      return 0;
    }
    edo::TableProfile p = edo::profile_table(*table, opt);
    if (!freq.empty()) {
      p.skew = edo::access_skew(edo::io::read_frequencies(freq, p.rows));
      p.has_skew = true;
    }
    std::optional<edo::PlanResult> result;
    if (plan) {
      if (!freq.empty()) plan_opt.freq = edo::io::read_frequencies(freq, p.rows);
      plan_opt.seed = opt.seed;
      plan_opt.metric = edo::parse_metric(plan_metric);
      edo::cli::Progress plan_progress("edo-profile: plan candidates", quiet);
      auto plan_report = plan_progress.callback();
      if (plan_report) plan_opt.progress = [&](uint64_t done, uint64_t total) { plan_report(done, total); };
      plan_opt.note = edo::cli::stderr_note("edo-profile", quiet);
      edo::PackOptions probe;
      probe.freq = plan_opt.freq;
      probe.seed = opt.seed;
      const edo::BudgetCap cap = edo::apply_budget(*table, parsed, probe, plan_opt);
      if (cap.cap != UINT64_MAX && !quiet)
        std::fprintf(stderr,
                     "edo-profile: size budget: a file of at most %llu bytes, so plans of at most %llu bytes of data "
                     "(the rest: header, manifest, vocabulary); the most accurate by %s%s wins\n",
                     static_cast<unsigned long long>(cap.cap), static_cast<unsigned long long>(plan_opt.max_bytes),
                     plan_opt.budget.front().metric.c_str(), plan_opt.freq.empty() ? "" : " (access-weighted)");
      result = edo::plan_tiers(*table, plan_opt);
      edo::check_budget_reached(*table, parsed, cap, *result);
      if (result->chosen >= 0 && !plan_config.empty()) {
        const std::string text = edo::plan_config(*result).dump(2) + "\n";
        edo::io::AtomicFile f(plan_config);
        f.write(text.data(), text.size());
        f.commit();
      }
      if (!report_html.empty())
        edo::cli::write_text_file(report_html, edo::plan_html(*result, fmt::format("edo-profile {} --plan", input)));
    }
    const edo::PlanResult* chosen = result ? &*result : nullptr;
    if (json) {
      std::fputs((edo::profile_report_json(p, container, chosen).dump(2) + "\n").c_str(), stdout);
    } else {
      std::fputs(edo::profile_report_text(p, container, chosen, plan_config).c_str(), stdout);
    }
    if (result && result->chosen < 0) {
      std::fprintf(stderr, "edo-profile: %s\n",
                   result->unmet_on_table ? "no candidate plan met the budget on the whole table (packed and measured)"
                                          : "no candidate plan met the budget");
      return static_cast<int>(edo::ExitCode::gate);
    }
    return 0;
  }
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Profile an embedding table: shape, dtype, non-finite values, zeros, value and row-norm statistics,\n"
      "duplicate rows, PCA spectrum, the Gaussian rate-distortion bound, the footprint under every codec (with\n"
      "each codec's MSE on the sample and its gap to the bound, docs/EVAL.md), and (with --freq) the access skew.\n\n"
      "INPUT is x.npy, x.npz[:member], x.h5:/group/dataset, model.safetensors:tensor (or a sharded model's\n"
      "model.safetensors.index.json:tensor), word vectors x.vec|.txt|.bin (word2vec, fastText),\n"
      "x.fvecs|.bvecs|.ivecs, - (npy on stdin), or a .edo file: its tiers, sections and provenance, then\n"
      "the statistics of its decoded rows. A model (a safetensors file without a tensor named, its .index.json,\n"
      "an npz, HDF5 file or folder of .npy of several tables, or a .edo model file) is profiled table by table,\n"
      "--tables choosing them, with a total line: bytes now and each codec's footprint of the whole model.\n"
      "--list-tables lists a model's tables instead (a safetensors file: its 2-D tensors, largest first, and\n"
      "the groups of codes edo-unpack --codes wrote, which x.safetensors:NAME decodes).\n\n"
      "Examples:\n"
      "  edo-profile glove.npy\n"
      "  edo-profile glove.npy --freq counts.npy --plan --budget 'recall@10>=0.98' --plan-config plan.json\n"
      "  edo-profile glove.npy --freq counts.npy --plan --budget 'recall@10>=0.95' --gpu-bytes 100000000\n"
      "  edo-profile table.h5:/emb/weight --freq counts.txt --json > profile.json\n"
      "  edo-profile emb.npy --shard 3/8 --json > part-3.json; edo-profile --merge part-*.json  (docs/SCALE.md)\n"
      "  edo-profile model.safetensors                  (every embedding table, then the total)\n"
      "  edo-profile model.safetensors --list-tables\n"
      "  edo-profile model.safetensors:embeddings.word_embeddings.weight\n"
      "  edo-profile model.safetensors --freq-dir counts/ --plan --budget 'ratio>=8' --plan-config plan.json\n"
      "  python -c 'import numpy,sys; numpy.save(sys.stdout.buffer, numpy.eye(4, dtype=\"f4\"))' | edo-profile -",
      "edo-profile"};
  Profile tool;
  tool.add_to(app);
  edo::cli::add_version_flag(app, "edo-profile");

  return edo::cli::run_tool("edo-profile", app, argc, argv, [&] { return tool.run(); });
}
