// edo-profile: what is this matrix, and where do its bytes go?
#include "cli_common.hpp"

#include <edo/edo_file.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/table.hpp>
#include <edo/profile.hpp>

int main(int argc, char** argv) {
  CLI::App app{
      "Profile an embedding table: shape, dtype, non-finite values, zeros, value and row-norm statistics,\n"
      "duplicate rows, PCA spectrum, the footprint under every codec, and (with --freq) the access skew.\n\n"
      "INPUT is x.npy, x.npz[:member], x.h5:/group/dataset, x.fvecs|.bvecs|.ivecs, - (npy on stdin),\n"
      "or a .edo file: its tiers, sections and provenance, then the statistics of its decoded rows.\n\n"
      "Examples:\n"
      "  edo-profile glove.npy\n"
      "  edo-profile table.h5:/emb/weight --freq counts.txt --json > profile.json\n"
      "  python -c 'import numpy,sys; numpy.save(sys.stdout.buffer, numpy.eye(4, dtype=\"f4\"))' | edo-profile -",
      "edo-profile"};
  std::string input, freq;
  bool json = false, quiet = false;
  int threads = 0;
  edo::ProfileOptions opt;
  app.add_option("INPUT", input, "Table to profile")->required();
  app.add_option("--freq", freq,
                 "Per-row lookup counts: a 1-D .npy (one count per row) or text lines 'id count'");
  app.add_flag("--json", json, "Print the profile as JSON on stdout");
  app.add_option("--seed", opt.seed, "Seed of the row sample (default 0)");
  app.add_option("--sample-rows", opt.sample_rows, "Rows sampled for percentiles and PCA (default 10000)")
      ->check(CLI::PositiveNumber);
  app.add_option("--near-zero", opt.near_zero,
                 "Absolute near-zero threshold (default: 1% of the sample's RMS value)")
      ->check(CLI::PositiveNumber);
  edo::cli::add_threads_option(app, threads);
  app.add_flag("-q,--quiet", quiet, "No progress on stderr");
  edo::cli::add_version_flag(app, "edo-profile");

  return edo::cli::run_tool("edo-profile", app, argc, argv, [&] {
    edo::cli::apply_threads(threads);
    auto table = edo::open_any_table(input);
    nlohmann::json container;
    if (const auto* edo_table = dynamic_cast<const edo::EdoTable*>(table.get()))
      container = edo::container_summary(edo_table->container());
    edo::cli::Progress progress("edo-profile", quiet);
    opt.progress = progress.callback();
    edo::TableProfile p = edo::profile_table(*table, opt);
    if (!freq.empty()) {
      p.skew = edo::access_skew(edo::io::read_frequencies(freq, p.rows));
      p.has_skew = true;
    }
    if (json) {
      nlohmann::json j = edo::to_json(p);
      if (!container.is_null()) j["container"] = container;
      std::puts(j.dump(2).c_str());
    } else {
      if (!container.is_null()) std::fputs((edo::container_summary_text(container) + "\ndecoded rows: ").c_str(), stdout);
      std::fputs(edo::to_text(p).c_str(), stdout);
    }
    return 0;
  });
}
