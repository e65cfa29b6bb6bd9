// SPDX-License-Identifier: Apache-2.0
// Serving throughput of one .edo next to its ceiling, in the same run: rows
// (Reader::lookup) against a plain fp32 gather of the same rows from the
// table in memory, and pooled bags (Reader::lookup_bags, sum) against an fp32
// gather-and-sum of the same bags. The ids are a long stream walked batch by
// batch (so the rows come from memory, not from a cache warmed by repeating
// one batch); each figure is the best of several passes, in ids a second,
// the reader's at one thread and at the default threads, the passes of every
// figure alternating.
// Prints one JSON object (scripts/bench/serve_bench.py reads it).
//
//   edo_bench_serve FILE.edo FP32.npy IDS.npy OFFSETS.npy [--batch N] [--passes N] [--skip-fp32]
#include "bench_util.hpp"

#include <edo/io/ids.hpp>
#include <edo/io/table.hpp>
#include <edo/reader.hpp>
#include <edo/work_share.hpp>

#include <sys/mman.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <omp.h>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>

namespace {

// The fp32 table in anonymous memory with transparent huge pages, as numpy
// holds a big array: the ceiling a reader of the file is measured against.
struct HugeTable {
  float* data = nullptr;
  size_t bytes = 0;
  explicit HugeTable(size_t floats) : bytes(floats * sizeof(float)) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error("mmap of the fp32 table failed");
    ::madvise(p, bytes, MADV_HUGEPAGE);
    data = static_cast<float*>(p);
  }
  ~HugeTable() { ::munmap(data, bytes); }
};

// kB of a /proc/self/status field (VmHWM, RssFile, ...).
uint64_t status_kb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(field + ":", 0) == 0) return std::strtoull(line.c_str() + field.size() + 1, nullptr, 10);
  return 0;
}

// Consecutive bags holding about `batch` ids each: [first bag, end bag) pairs.
std::vector<std::pair<size_t, size_t>> bag_batches(const std::vector<int64_t>& offsets, size_t batch) {
  std::vector<std::pair<size_t, size_t>> out;
  for (size_t b = 0; b < offsets.size();) {
    size_t e = b + 1;
    while (e < offsets.size() && static_cast<size_t>(offsets[e] - offsets[b]) < batch) ++e;
    out.emplace_back(b, e);
    b = e;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Serving throughput of a .edo next to an fp32 gather of the same rows and bags"};
  std::string file, fp32_path, ids_path, offsets_path;
  size_t batch = 4096;
  int passes = 5;
  bool skip_fp32 = false;
  std::string placement = "mapped";
  app.add_option("file", file)->required();
  app.add_option("fp32", fp32_path)->required();
  app.add_option("ids", ids_path)->required();
  app.add_option("offsets", offsets_path)->required();
  app.add_option("--batch", batch);
  app.add_option("--passes", passes);
  app.add_option("--placement", placement, "mapped or memory (ReaderOptions::placement)");
  app.add_flag("--skip-fp32", skip_fp32, "no fp32 peers (for the reader's own resident memory)");
  CLI11_PARSE(app, argc, argv);

  edo::ReaderOptions options;
  options.placement = edo::io::parse_placement(placement);
  const auto opened = std::chrono::steady_clock::now();
  const edo::Reader reader = edo::Reader::open(file, options);
  const double open_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - opened).count();
  const uint64_t dim = reader.dim();
  const std::vector<int64_t> ids = edo::io::read_ids(ids_path).ids;
  const std::vector<int64_t> offsets = edo::io::read_ids(offsets_path).ids;
  const auto bag_sets = bag_batches(offsets, batch);
  const size_t row_batches = (ids.size() + batch - 1) / batch;
  std::vector<float> out(std::max(batch, offsets.size()) * dim);
  const auto bag_end = [&](size_t b) {
    return b + 1 < offsets.size() ? static_cast<size_t>(offsets[b + 1]) : ids.size();
  };
  const auto edo_rows = [&] {
    for (size_t b = 0; b < row_batches; ++b) {
      const size_t begin = b * batch, n = std::min(batch, ids.size() - begin);
      reader.lookup(ids.data() + begin, n, out.data());
    }
  };
  const auto edo_bags = [&] {
    for (const auto& [first, last] : bag_sets) {
      const int64_t base = offsets[first];
      std::vector<int64_t> local(offsets.begin() + static_cast<ptrdiff_t>(first),
                                 offsets.begin() + static_cast<ptrdiff_t>(last));
      for (auto& o : local) o -= base;
      const edo::Bags bags{local.data(), local.size(), ids.data() + base, bag_end(last - 1) - static_cast<size_t>(base),
                           nullptr};
      reader.lookup_bags(bags, edo::PoolMode::sum, out.data());
    }
  };
  std::unique_ptr<HugeTable> table;
  if (!skip_fp32) {
    auto source = edo::io::open_table(fp32_path);
    table = std::make_unique<HugeTable>(source->rows() * dim);
    source->read_f32(0, source->rows(), table->data);
  }
  const auto fp32_rows = [&] {
    const float* t = table->data;
    for (size_t i = 0; i < ids.size(); i += batch) {
      const size_t n = std::min(batch, ids.size() - i);
      for (size_t k = 0; k < n; ++k)
        std::memcpy(out.data() + k * dim, t + static_cast<uint64_t>(ids[i + k]) * dim, dim * sizeof(float));
    }
  };
  const auto fp32_bags = [&] {
    const float* t = table->data;
    for (size_t b = 0; b < offsets.size(); ++b) {
      float* o = out.data() + (b % batch) * dim;
      std::fill(o, o + dim, 0.0f);
      for (size_t at = static_cast<size_t>(offsets[b]); at < bag_end(b); ++at) {
        const float* row = t + static_cast<uint64_t>(ids[at]) * dim;
        for (uint64_t c = 0; c < dim; ++c) o[c] += row[c];
      }
    }
  };
  // Every figure is the best of `passes`, and the passes of all of them
  // alternate (one thread, the default threads, the fp32 peers), so a
  // disturbance of the shared machine falls on all alike rather than on one.
  const int all_threads = edo::share_threads();
  std::map<std::string, double> best;
  const auto timed = [&](const std::string& name, auto&& pass) {
    const auto t0 = std::chrono::steady_clock::now();
    pass();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best[name] = std::max(best[name], static_cast<double>(ids.size()) / s);
  };
  for (int p = 0; p < passes; ++p) {
    omp_set_num_threads(1);
    timed("edo_rows_1", edo_rows);
    timed("edo_bags_1", edo_bags);
    omp_set_num_threads(all_threads);
    timed("edo_rows_n", edo_rows);
    timed("edo_bags_n", edo_bags);
    if (table) timed("fp32_rows", fp32_rows), timed("fp32_bags", fp32_bags);
  }
  nlohmann::json j;
  j["file"] = file;
  j["rows"] = reader.rows();
  j["dim"] = dim;
  j["file_bytes"] = reader.file_bytes();
  j["placement"] = placement;
  j["open_s"] = open_seconds;
  j["ids"] = ids.size();
  j["bags"] = offsets.size();
  for (const auto& [name, rate] : best) j[name] = rate;
  j["threads"] = all_threads;
  j["rss_file_mb"] = static_cast<double>(status_kb("RssFile")) / 1024;
  j["rss_anon_mb"] =
      static_cast<double>(status_kb("RssAnon")) / 1024 - (table ? static_cast<double>(table->bytes) / 1048576.0 : 0.0);
  j["peak_rss_mb"] = static_cast<double>(status_kb("VmHWM")) / 1024;
  std::printf("%s\n", j.dump().c_str());
}
