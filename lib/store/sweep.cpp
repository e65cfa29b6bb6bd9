// SPDX-License-Identifier: Apache-2.0
// --sweep: one table, several codecs, one comparison (sweep.hpp).
#include <edo/codec.hpp>
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/sweep.hpp>
#include <edo/tier.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace edo {

std::vector<std::string> parse_sweep(std::string_view text) {
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    const size_t end = text.find(';', begin);
    const std::string_view item = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    if (item.empty()) EDO_USAGE_FAIL("--sweep '{}': an empty item (items are separated by ';')", text);
    items.emplace_back(item);
    if (end == std::string_view::npos) break;
    begin = end + 1;
  }
  return items;
}

namespace {

// The share of a tier's values it stores (SweepPoint::density).
double stored_share(const nlohmann::json& entry, TierKind kind, uint64_t dim) {
  if (kind == TierKind::sparse) return entry.value("density", 1.0);
  if (is_fallback(kind)) return 0.0;
  const std::vector<SpecStage> stages = parse_spec(entry.value("codec", ""));
  // A transform that keeps fewer columns (pca:K, dims:K) stores that share of them; rot keeps them all.
  if (const CodecTraits* t = stages.empty() ? nullptr : find_codec(stages[0].name); t && t->transform)
    return static_cast<double>(t->output_dim(stages[0], dim)) / static_cast<double>(dim);
  return 1.0;
}

}  // namespace

std::vector<SweepPoint> run_sweep(io::TableReader& table, const std::vector<SweepItem>& items, const PackOptions& pack,
                                  const EvalOptions& eval_opt, const std::string& dir) {
  std::vector<SweepPoint> points;
  const std::string path = fmt::format("{}/edo-sweep-{}.edo", dir, ::getpid());
  const auto one = [&](const SweepItem& item) {
    PackOptions opt = pack;
    opt.tiers = item.tiers;
    const PackReport rep = pack_to_edo(table, path, opt);
    SweepPoint p;
    p.baseline = item.baseline;
    p.spec = item.label.empty() ? rep.tiers.at(0).codec : item.label;
    p.file_bytes = rep.file_bytes;
    p.ratio = rep.ratio;
    p.seconds = rep.train_seconds + rep.encode_seconds;
    {
      auto decoded = EdoTable::open(path);
      const std::vector<TierStats>& tiers = decoded->reader().tiers();
      const nlohmann::json& entries = decoded->reader().container().manifest()["tiers"];
      double stored = 0;
      for (size_t t = 0; t < tiers.size(); ++t) {
        stored += static_cast<double>(tiers[t].rows) * stored_share(entries[t], tiers[t].kind, table.dim());
        if (is_fallback(tiers[t].kind)) p.fallback_share += rep.tiers[t].mass;
      }
      p.density = table.rows() ? stored / static_cast<double>(table.rows()) : 1.0;
      p.eval = evaluate(table, *decoded, eval_opt);
    }
    std::remove(path.c_str());
    points.push_back(std::move(p));
  };
  try {
    for (const SweepItem& item : items) one(item);
  } catch (...) {
    std::remove(path.c_str());
    throw;
  }
  return points;
}

nlohmann::json sweep_json(const std::vector<SweepPoint>& points) {
  nlohmann::json arr = nlohmann::json::array();
  for (const SweepPoint& p : points) {
    nlohmann::json metrics = nlohmann::json::object();
    for (const auto& [name, value] : p.eval.metrics()) metrics[name] = value;
    arr.push_back({{"spec", p.spec},
                   {"baseline", p.baseline},
                   {"density", p.density},
                   {"fallback_share", p.fallback_share},
                   {"seconds", p.seconds},
                   {"file_bytes", p.file_bytes},
                   {"ratio", p.ratio},
                   {"eval", metrics}});
  }
  return arr;
}

std::string sweep_text(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics) {
  const bool fallbacks =
      std::any_of(points.begin(), points.end(), [](const SweepPoint& p) { return p.fallback_share > 0; });
  std::string s = fmt::format("  {:<40} {:>8} {:>11} {:>7}", "codec", "density", "bytes", "ratio");
  if (fallbacks) s += fmt::format(" {:>9}", "fallback");
  for (const std::string& m : metrics) s += fmt::format(" {:>12}", m);
  s += '\n';
  for (const SweepPoint& p : points) {
    s += fmt::format("  {:<40} {:>8.3f} {:>11} {:>6.2f}x", p.spec + (p.baseline ? " (dense)" : ""), p.density,
                     p.file_bytes, p.ratio);
    if (fallbacks) s += fmt::format(" {:>8.2f}%", 100.0 * p.fallback_share);
    for (const std::string& m : metrics) {
      const std::optional<double> v = p.eval.get(m);
      s += v ? fmt::format(" {:>12.4f}", *v) : fmt::format(" {:>12}", "-");
    }
    s += '\n';
  }
  return s;
}

}  // namespace edo
