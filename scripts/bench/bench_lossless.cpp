// SPDX-License-Identifier: Apache-2.0
// A lossless tier next to its fixed-rate twin (the same table stored in its
// own type by the scalar codec: bf16, fp16 or fp32) and next to memcpy of
// the same output, in one run, on one thread: decode of every row (GB/s of
// fp32 rows written), lookups of random rows and pooled bags of them (M ids
// a second), each the best of several passes, the passes alternating.
// Prints one JSON object (scripts/bench/lossless_bench.sh reads it).
//
//   edo_bench_lossless LOSSLESS.edo TWIN.edo [--ids N] [--passes N]
#include "bench_util.hpp"

#include <edo/reader.hpp>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstring>
#include <map>

int main(int argc, char** argv) {
  CLI::App app{"lossless tier against its fixed-rate twin and memcpy"};
  std::string lossless_path, twin_path;
  uint64_t id_count = 1 << 20;
  int passes = 5;
  app.add_option("lossless", lossless_path)->required();
  app.add_option("twin", twin_path)->required();
  app.add_option("--ids", id_count);
  app.add_option("--passes", passes);
  CLI11_PARSE(app, argc, argv);
  omp_set_num_threads(1);

  const edo::Reader lossless = edo::Reader::open(lossless_path), twin = edo::Reader::open(twin_path);
  const uint64_t rows = lossless.rows(), dim = lossless.dim();
  std::vector<float> out(rows * dim), copy(rows * dim), back(rows * dim);
  twin.decode_all(copy.data());
  lossless.decode_all(back.data());
  const bool same = std::memcmp(copy.data(), back.data(), out.size() * sizeof(float)) == 0;

  edo::Rng rng(7);
  std::vector<int64_t> ids(id_count), offsets;
  for (auto& id : ids) id = static_cast<int64_t>(rng.below(rows));
  for (uint64_t at = 0; at < id_count; at += 1 + rng.below(100)) offsets.push_back(static_cast<int64_t>(at));
  std::vector<float> rows_out(id_count * dim), pooled(offsets.size() * dim);
  const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), ids.size(), nullptr};

  std::map<std::string, double> best;
  auto time = [&](const std::string& name, auto&& fn) {
    const double s = edo::bench::best_seconds(1, fn);
    auto [it, fresh] = best.emplace(name, s);
    if (!fresh) it->second = std::min(it->second, s);
  };
  for (int p = 0; p < passes; ++p) {
    time("memcpy", [&] { std::memcpy(out.data(), copy.data(), out.size() * sizeof(float)); });
    time("decode_lossless", [&] { lossless.decode_all(out.data()); });
    time("decode_twin", [&] { twin.decode_all(out.data()); });
    time("lookup_lossless", [&] { lossless.lookup(ids.data(), ids.size(), rows_out.data()); });
    time("lookup_twin", [&] { twin.lookup(ids.data(), ids.size(), rows_out.data()); });
    time("bags_lossless", [&] { lossless.lookup_bags(bags, edo::PoolMode::sum, pooled.data()); });
    time("bags_twin", [&] { twin.lookup_bags(bags, edo::PoolMode::sum, pooled.data()); });
  }
  const double out_gb = static_cast<double>(out.size() * sizeof(float)) / 1e9;
  nlohmann::json j = {{"rows", rows},
                      {"dim", dim},
                      {"lossless_codec", lossless.tiers().back().codec},
                      {"twin_codec", twin.tiers().back().codec},
                      {"lossless_bytes", lossless.tiers().back().bytes},
                      {"twin_bytes", twin.tiers().back().bytes},
                      {"same_rows", same},
                      {"ids", id_count},
                      {"bags", offsets.size()}};
  for (const char* k : {"memcpy", "decode_lossless", "decode_twin"}) j[std::string(k) + "_gbs"] = out_gb / best[k];
  for (const char* k : {"lookup_lossless", "lookup_twin", "bags_lossless", "bags_twin"})
    j[std::string(k) + "_mids"] = static_cast<double>(id_count) / best[k] / 1e6;
  fmt::print("{}\n", j.dump());
  return same ? 0 : 1;
}
