// SPDX-License-Identifier: Apache-2.0
// What the benchmark programs share: best-of-N wall-clock timing, seeded
// Gaussian test data, peak resident memory, and the result table, which shows
// every figure as a ratio to the ceiling measured in the same run.
#pragma once

#include <edo/random.hpp>

#include <fmt/core.h>
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <string>
#include <vector>

namespace edo::bench {

// The fastest of `repeat` runs: on a shared machine the best run is the one
// least disturbed by other work, so it is the figure that reproduces.
template <class Fn>
double best_seconds(int repeat, Fn&& fn) {
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < repeat; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

// n standard normal floats from `seed`, filled in parallel; chunk c always
// draws from seed + c, so the data does not depend on the thread count.
inline std::vector<float> gaussian(uint64_t n, uint64_t seed) {
  std::vector<float> x(n);
  constexpr uint64_t kChunk = uint64_t{1} << 16;
  const int64_t chunks = static_cast<int64_t>((n + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    Rng rng(seed * 0x9e3779b97f4a7c15ull + static_cast<uint64_t>(c));
    const uint64_t end = std::min(n, static_cast<uint64_t>(c + 1) * kChunk);
    // Box-Muller, two values per pair of uniforms.
    for (uint64_t i = static_cast<uint64_t>(c) * kChunk; i < end; i += 2) {
      const double u1 = 1.0 - rng.uniform(), u2 = rng.uniform();
      const double r = std::sqrt(-2.0 * std::log(u1));
      x[i] = static_cast<float>(r * std::cos(2.0 * std::numbers::pi * u2));
      if (i + 1 < end) x[i + 1] = static_cast<float>(r * std::sin(2.0 * std::numbers::pi * u2));
    }
  }
  return x;
}

// Peak resident set of this process so far, in bytes.
inline uint64_t peak_rss_bytes() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<uint64_t>(ru.ru_maxrss) * 1024;
}

// A table of rates (GB/s or GFLOP/s) printed against one reference rate.
class RateTable {
 public:
  RateTable(std::string unit, std::string ratio_label) : unit_(std::move(unit)), ratio_label_(std::move(ratio_label)) {}
  // Also reports the figure on stderr at once: long runs show their progress.
  void add(std::string name, double seconds, double rate) {
    fmt::print(stderr, "  {}: {:.3f} s, {:.2f} {}\n", name, seconds, rate, unit_);
    rows_.push_back({std::move(name), seconds, rate});
  }
  void print(double reference_rate) const {
    size_t width = 4;
    for (const Row& r : rows_) width = std::max(width, r.name.size());
    fmt::print("{:<{}}  {:>9}  {:>9}  {:>10}\n", "what", width, "best s", unit_, ratio_label_);
    for (const Row& r : rows_) {
      const std::string secs = r.seconds > 0 ? fmt::format("{:9.3f}", r.seconds) : fmt::format("{:>9}", "-");
      fmt::print("{:<{}}  {}  {:9.2f}  {:9.2f}x\n", r.name, width, secs, r.rate, r.rate / reference_rate);
    }
  }

 private:
  struct Row {
    std::string name;
    double seconds;
    double rate;
  };
  std::string unit_, ratio_label_;
  std::vector<Row> rows_;
};

// The 1-minute load average: on a shared machine it says how much other work
// the figures competed with.
inline double load_average() {
  double load = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1) load = -1;
    std::fclose(f);
  }
  return load;
}

inline std::string cpu_model() {
  std::FILE* f = std::fopen("/proc/cpuinfo", "r");
  std::string model = "unknown CPU";
  if (!f) return model;
  char line[512];
  while (std::fgets(line, sizeof line, f)) {
    std::string s(line);
    if (s.rfind("model name", 0) == 0) {
      const size_t colon = s.find(':');
      model = s.substr(colon + 2);
      while (!model.empty() && (model.back() == '\n' || model.back() == ' ')) model.pop_back();
      break;
    }
  }
  std::fclose(f);
  return model;
}

}  // namespace edo::bench
