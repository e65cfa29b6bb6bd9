// SPDX-License-Identifier: Apache-2.0
// Neighbours of a few probe rows before and after compression, the side by
// side view edo-eval --show-neighbours prints.
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/table.hpp>

#include <algorithm>
#include <charconv>

namespace edo {

std::vector<uint64_t> probe_rows(const std::vector<std::string>& probes, const std::vector<std::string>& vocab,
                                 uint64_t rows, const std::string& vocab_name) {
  std::vector<std::string> names = probes;
  if (names.empty()) {
    for (const char* w : {"king", "france", "computer", "water", "run"})
      if (std::find(vocab.begin(), vocab.end(), w) != vocab.end()) names.push_back(w);
    if (names.empty()) {
      std::vector<uint64_t> first(std::min<uint64_t>(5, rows));
      for (uint64_t r = 0; r < first.size(); ++r) first[r] = r;
      return first;
    }
  }
  std::vector<uint64_t> ids;
  for (const std::string& p : names) {
    if (!vocab.empty()) {
      const auto it = std::find(vocab.begin(), vocab.end(), p);
      if (it == vocab.end()) EDO_FAIL("{}: probe '{}' is not in the vocabulary", vocab_name, p);
      ids.push_back(static_cast<uint64_t>(it - vocab.begin()));
      continue;
    }
    uint64_t id = 0;
    const auto [end, ec] = std::from_chars(p.data(), p.data() + p.size(), id);
    if (ec != std::errc() || end != p.data() + p.size() || p.empty())
      EDO_USAGE_FAIL("--probe '{}': a row id (or a word, with --vocab)", p);
    if (id >= rows) EDO_USAGE_FAIL("--probe {}: outside the table ({} rows)", id, rows);
    ids.push_back(id);
  }
  return ids;
}

ProbeNeighbours probe_neighbours(io::TableReader& original, io::TableReader& compressed,
                                 const std::vector<uint64_t>& probes, Metric metric, Device device, uint64_t k) {
  const uint64_t dim = original.dim();
  std::vector<float> queries(probes.size() * dim);
  for (size_t i = 0; i < probes.size(); ++i) original.read_f32(probes[i], 1, queries.data() + i * dim);
  KnnOptions opt;
  opt.metric = metric;
  opt.k = k;
  opt.device = device;
  opt.exclude.assign(probes.begin(), probes.end());
  const MatrixView q{queries.data(), probes.size(), dim};
  ProbeNeighbours out;
  out.probes = probes;
  out.original = knn(q, original, opt);
  out.compressed = knn(q, compressed, opt);
  return out;
}

}  // namespace edo
