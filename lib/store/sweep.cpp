// --sweep: one table, several codecs, one comparison (sweep.hpp).
#include <edo/edo_file.hpp>
#include <edo/error.hpp>
#include <edo/sweep.hpp>

#include <unistd.h>

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

std::vector<SweepPoint> run_sweep(io::TableReader& table, const std::vector<std::string>& specs,
                                  const std::vector<std::string>& baselines, const WriteOptions& write,
                                  const EvalOptions& eval_opt, const std::string& dir) {
  std::vector<SweepPoint> points;
  const std::string path = fmt::format("{}/edo-sweep-{}.edo", dir, ::getpid());
  const auto one = [&](const std::string& spec, bool baseline) {
    QuantizeOptions q;
    static_cast<WriteOptions&>(q) = write;
    q.spec = spec;
    const QuantizeReport rep = quantize_to_edo(table, path, q);
    SweepPoint p;
    p.baseline = baseline;
    p.spec = rep.spec;
    p.file_bytes = rep.file_bytes;
    p.ratio = rep.ratio;
    {
      auto decoded = EdoTable::open(path);
      const TierStats& tier = decoded->reader().tiers()[0];
      if (tier.kind == TierKind::sparse) {
        const nlohmann::json& entry = decoded->reader().container().manifest()["tiers"][0];
        p.density = entry.value("density", 1.0);
      }
      p.eval = evaluate(table, *decoded, eval_opt);
    }
    std::remove(path.c_str());
    points.push_back(std::move(p));
  };
  try {
    for (const std::string& s : specs) one(s, false);
    for (const std::string& s : baselines) one(s, true);
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
                   {"file_bytes", p.file_bytes},
                   {"ratio", p.ratio},
                   {"eval", metrics}});
  }
  return arr;
}

std::string sweep_text(const std::vector<SweepPoint>& points, const std::vector<std::string>& metrics) {
  std::string s = fmt::format("  {:<34} {:>8} {:>11} {:>7}", "codec", "density", "bytes", "ratio");
  for (const std::string& m : metrics) s += fmt::format(" {:>12}", m);
  s += '\n';
  for (const SweepPoint& p : points) {
    s += fmt::format("  {:<34} {:>8.3f} {:>11} {:>6.2f}x", p.spec + (p.baseline ? " (dense)" : ""), p.density,
                     p.file_bytes, p.ratio);
    for (const std::string& m : metrics) {
      const std::optional<double> v = p.eval.get(m);
      s += v ? fmt::format(" {:>12.4f}", *v) : fmt::format(" {:>12}", "-");
    }
    s += '\n';
  }
  return s;
}

}  // namespace edo
