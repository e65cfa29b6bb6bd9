// SPDX-License-Identifier: Apache-2.0
// edo_bench_gpu: every GPU figure of edo next to its ceiling or its CPU
// counterpart, measured in the same run (scripts/gpu-check.sh runs it;
// docs/BENCHMARKS.md, "GPU", shows the figures).
//
//   scalar  encode/decode kernels (device-resident data) as a share of the
//           device-to-device copy bandwidth (bytes read + written per second)
//   upload  host-to-device copy: pinned and pageable (the ceilings), and the
//           reader's upload of its gpu tiers at open
//   pq, rq  encode rows/s on the GPU (from host memory, and the kernels alone)
//           next to the CPU path on the same data and codebooks
//   kmeans  k-means wall time, GPU assignment step, next to the CPU
//   knn     exact k-NN (cuBLAS scores, host selection) as a share of one
//           cuBLAS sgemm of the same shape on resident data
//   lookup  the reader's lookup_device rows/s (all tiers gpu-resident) next
//           to a plain device gather of fp32 rows, and lookup_bags_device (the
//           pooling kernel) next to the CPU reader's lookup_bags
//   residency  lookup_device with a host tier served by copies, mapped pinned
//           memory and managed memory (ReaderOptions::host_access), next to
//           the same plain gather
//
// Without a GPU it says so and exits 0 (3 with --require-gpu or --info).
// Exit codes: 0 ok, 1 error, 2 usage, 3 no GPU, 4 the binary has no code for
// this GPU's architecture, 5 a GPU result differed from the CPU.
#include "../bench_util.hpp"
#include "gpu_baselines.hpp"

#include <edo/build_info.hpp>
#include <edo/codec.hpp>
#include <edo/cuda/pq.cuh>
#include <edo/cuda/rq.cuh>
#include <edo/cuda/scalar_codecs.cuh>
#include <edo/device.hpp>
#include <edo/error.hpp>
#include <edo/eval.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/make_codec.hpp>
#include <edo/pack.hpp>
#include <edo/pq.hpp>
#include <edo/reader.hpp>

#include <cuda_runtime_api.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef EDO_BENCH_CUDA_ARCHITECTURES
#define EDO_BENCH_CUDA_ARCHITECTURES "unknown"
#endif

namespace {

using edo::bench::gpu::check;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Device memory for the benchmark's own buffers (RAII, any size).
class Dev {
 public:
  explicit Dev(size_t bytes) : bytes_(bytes) { check(cudaMalloc(&p_, std::max<size_t>(bytes, 1)), "cudaMalloc"); }
  ~Dev() { cudaFree(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  void upload(const void* h, size_t n) { check(cudaMemcpy(p_, h, n, cudaMemcpyHostToDevice), "upload"); }
  void download(void* h, size_t n) const { check(cudaMemcpy(h, p_, n, cudaMemcpyDeviceToHost), "download"); }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

// Best of `repeat` runs of `fn` (device work, timed with CUDA events), after
// one untimed warm-up run.
template <class Fn>
double best_device_seconds(int repeat, Fn&& fn) {
  cudaEvent_t a, b;
  check(cudaEventCreate(&a), "event");
  check(cudaEventCreate(&b), "event");
  fn();
  check(cudaDeviceSynchronize(), "warm-up");
  float best = 1e30f;
  for (int r = 0; r < repeat; ++r) {
    check(cudaEventRecord(a), "event record");
    fn();
    check(cudaEventRecord(b), "event record");
    check(cudaEventSynchronize(b), "event sync");
    check(cudaGetLastError(), "timed launch");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, a, b), "elapsed");
    best = std::min(best, ms);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  return static_cast<double>(best) / 1e3;
}

// Best of `repeat` wall-clock runs of host code (which may use the GPU).
template <class Fn>
double best_host_seconds(int repeat, Fn&& fn) {
  return edo::bench::best_seconds(repeat, [&] {
    fn();
    check(cudaDeviceSynchronize(), "sync");
  });
}

// Rows/s of `run(n)` with n chosen so one run lasts about `target` seconds:
// a calibration run on `probe` rows, then the best of `repeat` sized runs.
struct Rate {
  double rows_per_s = 0;
  size_t rows = 0;
  double seconds = 0;
};
Rate rows_per_second(size_t probe, size_t max_rows, double target, int repeat, const std::function<void(size_t)>& run) {
  probe = std::min(probe, max_rows);
  const auto t0 = Clock::now();
  run(probe);
  const double t = std::max(seconds_since(t0), 1e-6);
  const double est = static_cast<double>(probe) / t;
  size_t n = static_cast<size_t>(std::clamp(est * target, static_cast<double>(probe), static_cast<double>(max_rows)));
  n = std::max<size_t>(n, 1);
  const double best = edo::bench::best_seconds(repeat, [&] { run(n); });
  return {static_cast<double>(n) / best, n, best};
}

// One figure of the report: a value next to what it is compared with.
struct Figure {
  std::string section, name;
  double value = 0;
  std::string unit;
  std::string ref_name;  // the ceiling or the CPU figure
  double ref_value = 0;
  std::string ratio_meaning;  // e.g. "share of the copy bandwidth", "x the CPU"
  json detail = json::object();
};

class Report {
 public:
  void add(Figure f) {
    const double ratio = f.ref_value > 0 ? f.value / f.ref_value : 0;
    fmt::print(stderr, "  [{}] {}: {:.4g} {}  ({} {:.4g} {}; {:.3f} {})\n", f.section, f.name, f.value, f.unit,
               f.ref_name, f.ref_value, f.unit, ratio, f.ratio_meaning);
    figures_.push_back(std::move(f));
  }
  void ceiling(const std::string& name, double value, const std::string& unit, json detail = json::object()) {
    fmt::print(stderr, "  [ceiling] {}: {:.4g} {}\n", name, value, unit);
    detail["value"] = value;
    detail["unit"] = unit;
    ceilings_[name] = std::move(detail);
  }
  void check_result(const std::string& what, bool ok, json detail = json::object()) {
    if (!ok) fmt::print(stderr, "  CHECK FAILED: {}\n", what);
    detail["what"] = what;
    detail["ok"] = ok;
    checks_.push_back(std::move(detail));
    if (!ok) ++failed_;
  }
  int failed() const { return failed_; }
  json to_json() const {
    json figs = json::array();
    for (const Figure& f : figures_) {
      figs.push_back({{"section", f.section},
                      {"name", f.name},
                      {"value", f.value},
                      {"unit", f.unit},
                      {"reference", f.ref_name},
                      {"reference_value", f.ref_value},
                      {"ratio", f.ref_value > 0 ? f.value / f.ref_value : 0},
                      {"ratio_meaning", f.ratio_meaning},
                      {"detail", f.detail}});
    }
    return {{"ceilings", ceilings_}, {"figures", figs}, {"checks", checks_}, {"checks_failed", failed_}};
  }
  // The table of docs/BENCHMARKS.md, "GPU", filled in.
  std::string markdown(const json& run) const {
    std::string md;
    const json& g = run["gpu"];
    md += fmt::format(
        "Measured by `scripts/gpu-check.sh` ({} mode) on {} (sm_{}, {} SMs), driver for CUDA {}, "
        "runtime {}; "
        "host {} with {} threads; edo {}, built for sm_{}.\n\n",
        run["mode"].get<std::string>(), g["name"].get<std::string>(), g["sm"].get<int>(),
        g["multiprocessors"].get<int>(), g["driver_cuda_version"].get<std::string>(),
        g["runtime_version"].get<std::string>(), run["host"]["cpu"].get<std::string>(),
        run["host"]["threads"].get<int>(), run["edo_version"].get<std::string>(),
        run["build"]["cuda_architectures"].get<std::string>());
    md += "| section | figure | value | reference | reference value | ratio |\n";
    md += "| --- | --- | ---: | --- | ---: | ---: |\n";
    for (const Figure& f : figures_) {
      const double ratio = f.ref_value > 0 ? f.value / f.ref_value : 0;
      md += fmt::format("| {} | {} | {:.4g} {} | {} | {:.4g} {} | {:.3f} ({}) |\n", f.section, f.name, f.value, f.unit,
                        f.ref_name, f.ref_value, f.unit, ratio, f.ratio_meaning);
    }
    md += "\n| ceiling | value |\n| --- | ---: |\n";
    for (const auto& [name, c] : ceilings_.items())
      md += fmt::format("| {} | {:.4g} {} |\n", name, c["value"].get<double>(), c["unit"].get<std::string>());
    md += fmt::format("\nChecks against the CPU: {} run, {} failed.\n", checks_.size(), failed_);
    return md;
  }
  void print_table() const {
    size_t w = 10;
    for (const Figure& f : figures_) w = std::max(w, f.section.size() + f.name.size() + 1);
    fmt::print("\n{:<{}}  {:>12} {:<6}  {:>12}  {:>8}  {}\n", "figure", w, "value", "unit", "reference", "ratio",
               "reference is");
    for (const Figure& f : figures_) {
      const double ratio = f.ref_value > 0 ? f.value / f.ref_value : 0;
      fmt::print("{:<{}}  {:>12.4g} {:<6}  {:>12.4g}  {:>8.3f}  {} ({})\n", f.section + " " + f.name, w, f.value,
                 f.unit, f.ref_value, ratio, f.ref_name, f.ratio_meaning);
    }
    fmt::print("\nceilings:\n");
    for (const auto& [name, c] : ceilings_.items())
      fmt::print("  {:<34} {:>12.4g} {}\n", name, c["value"].get<double>(), c["unit"].get<std::string>());
    fmt::print("checks: {} run, {} failed\n", checks_.size(), failed_);
  }

 private:
  std::vector<Figure> figures_;
  json ceilings_ = json::object();
  json checks_ = json::array();
  int failed_ = 0;
};

struct Config {
  bool quick = false;
  int repeat = 5;
  std::string data_dir;
  std::string tmp_dir;
  std::set<std::string> sections;
  // "train" (minutes) runs only when named.
  bool wants(const std::string& s) const { return sections.empty() ? s != "train" : sections.count(s) > 0; }
};

// A real table (the data-samples .npy) as fp32.
struct Table {
  size_t rows = 0, dim = 0;
  std::vector<float> x;
};
Table load_table(const std::string& path) {
  auto t = edo::io::open_table(path);
  Table m;
  m.rows = t->rows();
  m.dim = t->dim();
  m.x.resize(m.rows * m.dim);
  t->read_f32(0, m.rows, m.x.data());
  return m;
}

// n rows drawn from the real rows in turn, each plus Gaussian noise of
// `sigma` (so no two rows are equal): realistic values at any size.
std::vector<float> tile_with_noise(const Table& t, size_t n, float sigma, uint64_t seed) {
  std::vector<float> out = edo::bench::gaussian(n * t.dim, seed);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < static_cast<int64_t>(n); ++r) {
    const float* src = t.x.data() + (static_cast<size_t>(r) % t.rows) * t.dim;
    float* dst = out.data() + static_cast<size_t>(r) * t.dim;
    for (size_t j = 0; j < t.dim; ++j) dst[j] = src[j] + sigma * dst[j];
  }
  return out;
}

json device_info(int dev) {
  cudaDeviceProp p{};
  check(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0, mem_khz = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev);
  auto ver = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  // Double data rate: two transfers per clock on each bus line.
  const double peak = 2.0 * mem_khz * 1e3 * (p.memoryBusWidth / 8.0) / 1e9;
  return {{"name", p.name},
          {"compute_capability", fmt::format("{}.{}", p.major, p.minor)},
          {"sm", p.major * 10 + p.minor},
          {"multiprocessors", p.multiProcessorCount},
          {"memory_bytes", p.totalGlobalMem},
          {"l2_bytes", p.l2CacheSize},
          {"memory_bus_bits", p.memoryBusWidth},
          {"memory_clock_khz", mem_khz},
          {"nominal_memory_GBps", peak},
          {"driver_cuda_version", ver(driver)},
          {"runtime_version", ver(runtime)}};
}

// ---- sections ------------------------------------------------------------------------------------

// Device-to-device copy of `bytes`: the bandwidth ceiling, as bytes read + written per second.
double copy_bandwidth(Report& rep, size_t bytes, int repeat) {
  Dev a(bytes), b(bytes);
  check(cudaMemset(a.as<void>(), 1, bytes), "memset");
  const double t = best_device_seconds(
      repeat, [&] { check(cudaMemcpyAsync(b.as<void>(), a.as<void>(), bytes, cudaMemcpyDeviceToDevice), "d2d copy"); });
  const double gbps = 2.0 * static_cast<double>(bytes) / t / 1e9;
  rep.ceiling("d2d_copy", gbps, "GB/s", {{"bytes", bytes}, {"seconds", t}, {"counts", "bytes read + written"}});
  return gbps;
}

void section_scalar(Report& rep, const Config& cfg, double copy_gbps) {
  const size_t dim = 128, n = cfg.quick ? (size_t{1} << 20) : (size_t{1} << 21);
  std::vector<std::string> specs = {"fp16", "bf16", "fp8:e4m3", "int8", "int4"};
  if (!cfg.quick) specs.insert(specs.end(), {"fp8:e5m2", "int8:group=16", "int4:group=32"});
  const std::vector<float> host = edo::bench::gaussian(n * dim, 1);
  Dev x(n * dim * sizeof(float)), codes(n * dim * sizeof(float)), y(n * dim * sizeof(float));
  x.upload(host.data(), x.bytes());
  const size_t check_rows = 4096;
  for (const std::string& spec : specs) {
    const auto codec = edo::make_codec(spec, dim);
    const auto L = edo::scalar_layout(*codec);
    if (!L) throw std::runtime_error(spec + ": no scalar layout");
    const double in_bytes = static_cast<double>(n * dim * sizeof(float));
    const double code_bytes = static_cast<double>(n) * L->code_size;
    const double te =
        best_device_seconds(cfg.repeat, [&] { edo::cuda::encode_scalar(*L, x.as<float>(), n, codes.as<uint8_t>()); });
    const double td =
        best_device_seconds(cfg.repeat, [&] { edo::cuda::decode_scalar(*L, codes.as<uint8_t>(), n, y.as<float>()); });
    // The kernels' bytes against the CPU reference on the first rows.
    std::vector<uint8_t> gpu_codes(check_rows * L->code_size), cpu_codes(gpu_codes.size());
    codes.download(gpu_codes.data(), gpu_codes.size());
    edo::EncodeOptions ref;
    ref.impl = edo::Impl::reference;
    codec->encode(host.data(), check_rows, cpu_codes.data(), ref);
    rep.check_result(fmt::format("scalar {} encode equals the CPU on {} rows", spec, check_rows),
                     gpu_codes == cpu_codes);
    const double moved = in_bytes + code_bytes;
    for (const auto& [what, t] : {std::pair{"encode", te}, std::pair{"decode", td}}) {
      rep.add({"scalar",
               fmt::format("{} {}", spec, what),
               moved / t / 1e9,
               "GB/s",
               "d2d copy",
               copy_gbps,
               "share of the copy bandwidth",
               {{"rows", n},
                {"dim", dim},
                {"code_size", L->code_size},
                {"seconds", t},
                {"fp32_GBps", in_bytes / t / 1e9},
                {"counts", "fp32 bytes + code bytes, read + written"}}});
    }
  }
}

void section_upload(Report& rep, const Config& cfg) {
  const size_t bytes = cfg.quick ? (size_t{256} << 20) : (size_t{1} << 30);
  Dev d(bytes);
  void* pinned = nullptr;
  check(cudaMallocHost(&pinned, bytes), "cudaMallocHost");
  std::memset(pinned, 1, bytes);
  std::vector<uint8_t> pageable(bytes, 1);
  const double tp = best_device_seconds(
      cfg.repeat, [&] { check(cudaMemcpyAsync(d.as<void>(), pinned, bytes, cudaMemcpyHostToDevice), "h2d pinned"); });
  const double tdh = best_device_seconds(
      cfg.repeat, [&] { check(cudaMemcpyAsync(pinned, d.as<void>(), bytes, cudaMemcpyDeviceToHost), "d2h pinned"); });
  const double tq = best_host_seconds(cfg.repeat, [&] {
    check(cudaMemcpy(d.as<void>(), pageable.data(), bytes, cudaMemcpyHostToDevice), "h2d pageable");
  });
  cudaFreeHost(pinned);
  const double gb = static_cast<double>(bytes) / 1e9;
  rep.ceiling("h2d_pinned", gb / tp, "GB/s", {{"bytes", bytes}, {"seconds", tp}});
  rep.ceiling("d2h_pinned", gb / tdh, "GB/s", {{"bytes", bytes}, {"seconds", tdh}});
  rep.add({"upload",
           "h2d pageable (cudaMemcpy)",
           gb / tq,
           "GB/s",
           "h2d pinned",
           gb / tp,
           "share of pinned",
           {{"bytes", bytes}, {"seconds", tq}}});
}

void section_pq(Report& rep, const Config& cfg, const Table& bigann) {
  const size_t dim = bigann.dim, n = cfg.quick ? (size_t{1} << 18) : (size_t{1} << 20);
  const std::vector<float> x = tile_with_noise(bigann, n, 2.0f, 21);
  std::vector<std::pair<uint32_t, uint32_t>> configs = {{16, 8}};
  if (!cfg.quick) configs.insert(configs.end(), {{32, 8}, {64, 4}});
  for (const auto& [m, nbits] : configs) {
    const auto g = edo::math::pq_geometry(static_cast<uint32_t>(dim), m, nbits);
    edo::KmeansOptions ko;
    ko.iterations = cfg.quick ? 5 : 10;
    ko.seed = 3;
    ko.device = edo::Device::cuda;
    const std::vector<float> cb = edo::train_pq_codebooks(g, bigann.x.data(), bigann.rows, ko);
    std::vector<uint8_t> codes(n * g.code_size), cpu_codes(n * g.code_size);
    const double tg = best_host_seconds(
        cfg.repeat, [&] { edo::pq_encode(g, cb.data(), x.data(), n, codes.data(), edo::Device::cuda); });
    // The kernels alone on resident data.
    Dev dx(n * dim * sizeof(float)), dcb(cb.size() * sizeof(float)), da(n * m * sizeof(uint32_t)), dc(codes.size());
    dx.upload(x.data(), dx.bytes());
    dcb.upload(cb.data(), dcb.bytes());
    const double tk = best_device_seconds(cfg.repeat, [&] {
      edo::cuda::pq_assign(g, dcb.as<float>(), dx.as<float>(), n, da.as<uint32_t>());
      edo::cuda::pq_pack(g, da.as<uint32_t>(), n, dc.as<uint8_t>());
    });
    const Rate cpu = rows_per_second(4096, n, cfg.quick ? 0.3 : 1.0, cfg.quick ? 1 : 2, [&](size_t rows) {
      edo::pq_encode(g, cb.data(), x.data(), rows, cpu_codes.data(), edo::Device::cpu);
    });
    rep.check_result(
        fmt::format("pq m={} nbits={} GPU codes equal the CPU on {} rows", m, nbits, cpu.rows),
        std::equal(cpu_codes.begin(), cpu_codes.begin() + static_cast<long>(cpu.rows * g.code_size), codes.begin()));
    const std::string name = fmt::format("pq:m={},nbits={} encode", m, nbits);
    const json detail = {{"rows", n}, {"dim", dim}, {"cpu_rows", cpu.rows}, {"cpu_threads", omp_get_max_threads()}};
    rep.add({"pq", name + " (host memory)", static_cast<double>(n) / tg, "rows/s", "CPU", cpu.rows_per_s, "x the CPU",
             detail});
    rep.add({"pq", name + " (kernels, resident)", static_cast<double>(n) / tk, "rows/s", "CPU", cpu.rows_per_s,
             "x the CPU", detail});
  }
}

// Residual codebooks (m, 2^nbits, dim) trained greedily: level l is k-means
// of the residuals left by levels < l (the library's k-means and assignment).
std::vector<float> train_rq_codebooks(const Table& t, uint32_t m, uint32_t nbits, size_t iterations) {
  const size_t ksub = size_t{1} << nbits, d = t.dim, n = t.rows;
  std::vector<float> residual = t.x, books;
  std::vector<uint32_t> assign(n);
  for (uint32_t l = 0; l < m; ++l) {
    edo::KmeansOptions ko;
    ko.iterations = iterations;
    ko.seed = 100 + l;
    ko.device = edo::Device::cuda;
    const std::vector<float> c = edo::kmeans(residual.data(), n, d, ksub, ko);
    edo::nearest_centroids(residual.data(), n, d, c.data(), ksub, assign.data(), edo::Device::cuda);
    for (size_t r = 0; r < n; ++r)
      for (size_t j = 0; j < d; ++j) residual[r * d + j] -= c[assign[r] * d + j];
    books.insert(books.end(), c.begin(), c.end());
  }
  return books;
}

void section_rq(Report& rep, const Config& cfg, const Table& bigann) {
  const size_t dim = bigann.dim, n = cfg.quick ? (size_t{1} << 16) : (size_t{1} << 18);
  const std::vector<float> x = tile_with_noise(bigann, n, 2.0f, 31);
  std::vector<std::pair<uint32_t, uint32_t>> configs = {{8, 4}};  // (m, beam), nbits 8
  if (!cfg.quick) configs.push_back({8, 16});
  const std::vector<float> cb = train_rq_codebooks(bigann, 8, 8, cfg.quick ? 4 : 8);
  for (const auto& [m, beam] : configs) {
    const edo::RqShape s{static_cast<uint32_t>(dim), m, 8, beam};
    const size_t cs = edo::math::rq_code_size(s);
    std::vector<uint8_t> codes(n * cs), cpu_codes(n * cs);
    const Rate gpu = rows_per_second(8192, n, cfg.quick ? 0.3 : 1.0, cfg.quick ? 1 : 2, [&](size_t rows) {
      edo::rq_encode(s, cb.data(), x.data(), rows, codes.data(), edo::Device::cuda);
    });
    const Rate cpu = rows_per_second(512, n, cfg.quick ? 0.3 : 1.0, 1, [&](size_t rows) {
      edo::rq_encode(s, cb.data(), x.data(), rows, cpu_codes.data(), edo::Device::cpu);
    });
    // The kernel alone on resident data, with the library's launch shape
    // (enough blocks to fill the GPU within 256 MiB of scratch).
    const size_t kn = gpu.rows;
    const auto blocks = static_cast<uint32_t>(
        std::clamp<size_t>((size_t{256} << 20) / edo::cuda::rq_scratch_bytes(s, 1), 1, std::min<size_t>(kn, 8192)));
    Dev dx(kn * dim * sizeof(float)), dcb(cb.size() * sizeof(float)), dc(kn * cs),
        scratch(edo::cuda::rq_scratch_bytes(s, blocks));
    dx.upload(x.data(), dx.bytes());
    dcb.upload(cb.data(), dcb.bytes());
    const double tk = best_device_seconds(cfg.quick ? 1 : 2, [&] {
      edo::cuda::rq_encode(s, dcb.as<float>(), dx.as<float>(), kn, dc.as<uint8_t>(), scratch.as<void>(), blocks);
    });
    const size_t common = std::min(gpu.rows, cpu.rows);
    rep.check_result(fmt::format("rq m={} beam={} GPU codes equal the CPU on {} rows", m, beam, common),
                     std::equal(cpu_codes.begin(), cpu_codes.begin() + static_cast<long>(common * cs), codes.begin()));
    rep.add({"rq",
             fmt::format("rq:m={},nbits=8,beam={} encode (host memory)", m, beam),
             gpu.rows_per_s,
             "rows/s",
             "CPU",
             cpu.rows_per_s,
             "x the CPU",
             {{"gpu_rows", gpu.rows},
              {"cpu_rows", cpu.rows},
              {"dim", dim},
              {"cpu_threads", omp_get_max_threads()},
              {"codebooks", "greedy residual k-means on bigann10k"}}});
    rep.add({"rq",
             fmt::format("rq:m={},nbits=8,beam={} encode (kernel, resident)", m, beam),
             static_cast<double>(kn) / tk,
             "rows/s",
             "CPU",
             cpu.rows_per_s,
             "x the CPU",
             {{"gpu_rows", kn}, {"blocks", blocks}, {"cpu_rows", cpu.rows}, {"dim", dim}}});
  }
}

// Issue 15, item 2: each trainable codec's default training on a seeded
// synthetic 65,536-row table (as scripts/bench/make_synthetic.py draws
// them: column j scaled by 1/sqrt(1 + j), each row by a log-normal norm),
// with its assignment steps on the GPU against the same training on this
// machine's CPU; the trained states must be the same bits. rq's greedy
// levels run on the CPU either way (FAISS's k-means over flat_l2_knn), its
// refit encodes on the device.
void section_train(Report& rep, const Config& cfg) {
  struct T {
    size_t dim;
    std::vector<std::string> specs;
  };
  std::vector<T> tables = {{384, {"pca:96", "pq:m=96", "opq:m=96", "rq:m=48"}}};
  if (!cfg.quick) tables.push_back({768, {"pca:192", "pq:m=192", "opq:m=96", "rq:m=64"}});
  const size_t n = 65536;
  for (const T& t : tables) {
    std::vector<float> x = edo::bench::gaussian(n * t.dim, 61);
    const std::vector<float> norms = edo::bench::gaussian(n, 62);
    for (size_t r = 0; r < n; ++r) {
      const float row = std::exp(0.3f * norms[r]);
      for (size_t j = 0; j < t.dim; ++j) x[r * t.dim + j] *= row / std::sqrt(1.0f + static_cast<float>(j));
    }
    for (const std::string& spec : t.specs) {
      const auto train_on = [&](edo::Device device, std::vector<edo::NamedBlob>& state) {
        auto codec = edo::make_codec(spec, t.dim);
        edo::TrainingContext context;
        context.device = device;
        codec->set_training_context(context);
        codec->train(x.data(), n, 1);
        state = codec->state();
      };
      std::vector<edo::NamedBlob> gpu_state, cpu_state;
      const double tg = best_host_seconds(1, [&] { train_on(edo::Device::cuda, gpu_state); });
      const double tc = best_host_seconds(1, [&] { train_on(edo::Device::cpu, cpu_state); });
      bool same = gpu_state.size() == cpu_state.size();
      for (size_t b = 0; same && b < gpu_state.size(); ++b) same = gpu_state[b].values == cpu_state[b].values;
      rep.check_result(fmt::format("train {} on {} x {}: the GPU's state is the CPU's bits", spec, n, t.dim), same);
      // As speed (1/s), so the ratio reads "x the CPU"; seconds in the detail (goal: 60 s on two cores).
      rep.add({"train",
               fmt::format("{} on {} x {}", spec, n, t.dim),
               1.0 / tg,
               "runs/s",
               "CPU",
               1.0 / tc,
               "x the CPU",
               {{"gpu_seconds", tg}, {"cpu_seconds", tc}, {"cpu_threads", omp_get_max_threads()}}});
    }
  }
}

void section_kmeans(Report& rep, const Config& cfg, const Table& bigann) {
  struct K {
    size_t n, k, iterations;
  };
  // Sized so that the k-means++ seeding (sequential on the host for either
  // device: n * k * d distance terms) stays a few seconds.
  std::vector<K> configs = {cfg.quick ? K{50000, 256, 5} : K{100000, 256, 10}};
  if (!cfg.quick) configs.push_back({50000, 1024, 10});
  for (const K& c : configs) {
    const std::vector<float> x = tile_with_noise(bigann, c.n, 2.0f, 41);
    edo::KmeansOptions ko;
    ko.iterations = c.iterations;
    ko.seed = 5;
    std::vector<float> gpu_c, cpu_c;
    ko.device = edo::Device::cuda;
    const double tg = best_host_seconds(1, [&] { gpu_c = edo::kmeans(x.data(), c.n, bigann.dim, c.k, ko); });
    ko.device = edo::Device::cpu;
    const double tc = best_host_seconds(1, [&] { cpu_c = edo::kmeans(x.data(), c.n, bigann.dim, c.k, ko); });
    // The seeding alone (no Lloyd iteration): the part no device changes.
    ko.iterations = 0;
    const double tseed = best_host_seconds(1, [&] { (void)edo::kmeans(x.data(), c.n, bigann.dim, c.k, ko); });
    rep.check_result(
        fmt::format("kmeans n={} k={}: GPU centroids are the CPU's bits", c.n, c.k),
        gpu_c.size() == cpu_c.size() && std::memcmp(gpu_c.data(), cpu_c.data(), gpu_c.size() * sizeof(float)) == 0);
    // Reported as speed (1/s) so that the ratio reads "x the CPU"; seconds in the detail.
    rep.add({"kmeans",
             fmt::format("n={} d={} k={} iterations={}", c.n, bigann.dim, c.k, c.iterations),
             1.0 / tg,
             "runs/s",
             "CPU",
             1.0 / tc,
             "x the CPU",
             {{"gpu_seconds", tg},
              {"cpu_seconds", tc},
              {"seeding_seconds", tseed},
              {"gpu_lloyd_seconds", tg - tseed},
              {"cpu_lloyd_seconds", tc - tseed},
              {"cpu_threads", omp_get_max_threads()}}});
  }
}

void section_knn(Report& rep, const Config& cfg) {
  const size_t dim = 128, rows = cfg.quick ? 200000 : 1000000, nq = cfg.quick ? 500 : 1000, k = 10;
  const std::vector<float> db = edo::bench::gaussian(rows * dim, 51), qs = edo::bench::gaussian(nq * dim, 52);
  edo::KnnOptions o;
  o.k = k;
  o.metric = edo::Metric::l2;
  o.device = edo::Device::cuda;
  const edo::MatrixView d{db.data(), rows, dim}, q{qs.data(), nq, dim};
  // Warm-up: loads cuBLAS and creates its handle.
  (void)edo::knn(edo::MatrixView{qs.data(), 1, dim}, edo::MatrixView{db.data(), 1024, dim}, o);
  edo::KnnResult gpu;
  const double tg = best_host_seconds(cfg.quick ? 1 : 2, [&] { gpu = edo::knn(q, d, o); });
  o.device = edo::Device::cpu;
  edo::KnnResult cpu;
  const double tc = best_host_seconds(1, [&] { cpu = edo::knn(q, d, o); });
  size_t same = 0;
  for (size_t i = 0; i < gpu.ids.size(); ++i) same += gpu.ids[i] == cpu.ids[i];
  const double agree = static_cast<double>(same) / static_cast<double>(std::max<size_t>(1, gpu.ids.size()));
  rep.check_result("knn: GPU ids agree with the CPU on >= 99% of places", agree >= 0.99, {{"agreement", agree}});

  edo::bench::gpu::Sgemm sgemm;
  Dev da(db.size() * sizeof(float)), dq(qs.size() * sizeof(float)), dc(rows * nq * sizeof(float));
  da.upload(db.data(), da.bytes());
  dq.upload(qs.data(), dq.bytes());
  const double ts = best_device_seconds(cfg.repeat, [&] {
    sgemm.run(static_cast<int>(rows), static_cast<int>(nq), static_cast<int>(dim), da.as<float>(), dq.as<float>(),
              dc.as<float>());
  });
  const double flop = 2.0 * static_cast<double>(rows) * static_cast<double>(nq) * static_cast<double>(dim);
  rep.ceiling("sgemm", flop / ts / 1e12, "TFLOP/s",
              {{"m", rows}, {"n", nq}, {"k", dim}, {"seconds", ts}, {"library", sgemm.library()}});
  const json detail = {{"rows", rows},
                       {"queries", nq},
                       {"dim", dim},
                       {"k", k},
                       {"metric", "l2"},
                       {"gpu_seconds", tg},
                       {"sgemm_seconds", ts},
                       {"cpu_seconds", tc},
                       {"counts", "2 * rows * queries * dim flops per search"}};
  rep.add({"knn", fmt::format("exact k-NN {} x {} rows, d={}, k={}", nq, rows, dim, k), flop / tg / 1e12, "TFLOP/s",
           "sgemm", flop / ts / 1e12, "share of sgemm", detail});
  rep.add({"knn", "exact k-NN, GPU next to the CPU", 1.0 / tg, "runs/s", "CPU", 1.0 / tc, "x the CPU", detail});
}

// A seeded Gaussian table packed with Zipf counts (in a shuffled order: an
// odd multiplier permutes ids modulo a power of two) into `tiers`, in a
// temporary folder removed with it.
struct PackedTable {
  fs::path dir;
  std::vector<float> x;
  std::vector<double> freq;
  std::string path;
  PackedTable(const Config& cfg, const char* name, size_t rows, size_t dim, uint64_t seed,
              std::initializer_list<const char*> tiers)
      : dir(fs::path(cfg.tmp_dir) / fmt::format("edo-bench-gpu-{}-{}", name, ::getpid())),
        x(edo::bench::gaussian(rows * dim, seed)),
        freq(rows),
        path((dir / "p.edo").string()) {
    fs::create_directories(dir);
    {
      auto w = edo::io::create_table((dir / "t.npy").string(), rows, dim);
      w->write_f32(x.data(), rows);
      w->commit();
    }
    for (size_t r = 0; r < rows; ++r) freq[r] = 1.0 / static_cast<double>((r * 2654435761u) % rows + 1);
    edo::PackOptions po;
    for (const char* t : tiers) po.tiers.push_back(edo::parse_tier_spec(t));
    po.freq = freq;
    auto table = edo::io::open_table((dir / "t.npy").string());
    edo::pack_to_edo(*table, path, po);
  }
  ~PackedTable() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  PackedTable(const PackedTable&) = delete;
  PackedTable& operator=(const PackedTable&) = delete;
};

void section_lookup(Report& rep, const Config& cfg) {
  const size_t rows = cfg.quick ? (size_t{1} << 18) : (size_t{1} << 20), dim = 128;
  const PackedTable packed(cfg, "lookup", rows, dim, 61,
                           {"hot:rows=10%:fp16:gpu", "warm:rows=40%:int8:gpu", "cold:rest:int4:gpu"});
  const std::vector<float>& x = packed.x;
  const std::vector<double>& freq = packed.freq;
  const std::string& path = packed.path;
  edo::ReaderOptions gpu_opt;
  gpu_opt.device = edo::Device::cuda;
  const double t_cpu_open = edo::bench::best_seconds(3, [&] { (void)edo::Reader::open(path); });
  const double t_gpu_open = best_host_seconds(3, [&] { (void)edo::Reader::open(path, gpu_opt); });
  const edo::Reader cpu_reader = edo::Reader::open(path);
  const edo::Reader reader = edo::Reader::open(path, gpu_opt);
  uint64_t up_bytes = 0;
  for (const edo::TierStats& t : reader.tiers())
    if (t.on_device) up_bytes += t.rows * t.code_size;  // the code rows the reader copies
  // Pinned host-to-device copy of the same bytes: the ceiling of the upload.
  double pinned_gbps = 0;
  {
    Dev d(up_bytes);
    void* pinned = nullptr;
    check(cudaMallocHost(&pinned, up_bytes), "cudaMallocHost");
    std::memset(pinned, 1, up_bytes);
    const double t = best_device_seconds(
        cfg.repeat, [&] { check(cudaMemcpyAsync(d.as<void>(), pinned, up_bytes, cudaMemcpyHostToDevice), "h2d"); });
    cudaFreeHost(pinned);
    pinned_gbps = static_cast<double>(up_bytes) / t / 1e9;
  }
  const double upload_s = std::max(t_gpu_open - t_cpu_open, 1e-9);
  rep.add({"upload",
           "reader gpu tiers at open",
           static_cast<double>(up_bytes) / upload_s / 1e9,
           "GB/s",
           "h2d pinned, same bytes",
           pinned_gbps,
           "share of pinned",
           {{"bytes", up_bytes},
            {"open_gpu_seconds", t_gpu_open},
            {"open_cpu_seconds", t_cpu_open},
            {"counts", "gpu-resident tier bytes / (open with cuda - open on cpu)"}}});

  Dev table(x.size() * sizeof(float));
  table.upload(x.data(), table.bytes());
  std::vector<size_t> batches = {65536};
  if (!cfg.quick) batches.insert(batches.begin(), 4096);
  for (const size_t batch : batches) {
    const std::vector<uint64_t> drawn = edo::sample_weighted_ids(freq, batch, 7);
    const std::vector<int64_t> ids(drawn.begin(), drawn.end());
    Dev d_ids(batch * sizeof(uint64_t)), out(batch * dim * sizeof(float)), plain(batch * dim * sizeof(float));
    d_ids.upload(drawn.data(), d_ids.bytes());
    const double tl =
        best_host_seconds(cfg.repeat * 4, [&] { reader.lookup_device(ids.data(), batch, out.as<float>()); });
    const double tp = best_device_seconds(cfg.repeat * 4, [&] {
      edo::bench::gpu::gather_rows(table.as<float>(), d_ids.as<uint64_t>(), batch, dim, plain.as<float>());
    });
    std::vector<float> got(batch * dim), want(batch * dim);
    const double tc = edo::bench::best_seconds(cfg.repeat, [&] { cpu_reader.lookup(ids.data(), batch, want.data()); });
    out.download(got.data(), got.size() * sizeof(float));
    cpu_reader.lookup(ids.data(), batch, want.data());
    rep.check_result(fmt::format("lookup_device equals the CPU lookup on {} ids", batch),
                     std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    const json detail = {{"rows", rows},
                         {"dim", dim},
                         {"batch", batch},
                         {"tiers", "hot 10% fp16, warm 40% int8, cold rest int4, all gpu"},
                         {"lookup_seconds", tl},
                         {"gather_seconds", tp},
                         {"cpu_lookup_rows_per_s", static_cast<double>(batch) / tc},
                         {"counts", "lookup_device from host ids (ids uploaded per call); gather from device ids"}};
    rep.add({"lookup", fmt::format("lookup_device batch {}", batch), static_cast<double>(batch) / tl, "rows/s",
             "plain device gather (fp32)", static_cast<double>(batch) / tp, "share of the gather", detail});
    rep.add({"lookup", fmt::format("lookup_device batch {}, next to the CPU reader", batch),
             static_cast<double>(batch) / tl, "rows/s", "CPU lookup", static_cast<double>(batch) / tc, "x the CPU",
             detail});
    // The same ids as bags of 1 to 100 (sum): the pooling kernel against the CPU's lookup_bags.
    std::vector<int64_t> offsets;
    for (size_t at = 0; at < batch; at += 1 + (at * 7919 % 100)) offsets.push_back(static_cast<int64_t>(at));
    const edo::Bags bags{offsets.data(), offsets.size(), ids.data(), batch, nullptr};
    Dev pooled(offsets.size() * dim * sizeof(float));
    const double tb = best_host_seconds(
        cfg.repeat * 4, [&] { reader.lookup_bags_device(bags, edo::PoolMode::sum, pooled.as<float>()); });
    std::vector<float> got_bags(offsets.size() * dim), want_bags(got_bags.size());
    const double tcb = edo::bench::best_seconds(
        cfg.repeat, [&] { cpu_reader.lookup_bags(bags, edo::PoolMode::sum, want_bags.data()); });
    pooled.download(got_bags.data(), got_bags.size() * sizeof(float));
    rep.check_result(fmt::format("lookup_bags_device equals the CPU's lookup_bags on {} ids", batch),
                     std::memcmp(got_bags.data(), want_bags.data(), got_bags.size() * sizeof(float)) == 0);
    rep.add({"lookup", fmt::format("lookup_bags_device batch {} ids, bags of 1-100 (sum)", batch),
             static_cast<double>(batch) / tb, "ids/s", "CPU lookup_bags", static_cast<double>(batch) / tcb, "x the CPU",
             detail});
  }
}

// Host tiers served to the GPU three ways (ReaderOptions::host_access):
// decoded on the host and copied in, read in place from mapped pinned host
// memory, or from a managed copy prefetched to the GPU; next to a plain
// device gather of fp32 rows, on the same Zipf ids.
void section_residency(Report& rep, const Config& cfg) {
  const size_t rows = cfg.quick ? (size_t{1} << 18) : (size_t{1} << 21), dim = 128, batch = 65536;
  const PackedTable packed(cfg, "residency", rows, dim, 67, {"hot:rows=5%:fp16:gpu", "cold:rest:int8:host"});
  const std::vector<float>& x = packed.x;
  const std::vector<double>& freq = packed.freq;
  const std::string& path = packed.path;
  const std::vector<uint64_t> drawn = edo::sample_weighted_ids(freq, batch, 9);
  const std::vector<int64_t> ids(drawn.begin(), drawn.end());
  std::vector<float> want(batch * dim), got(batch * dim);
  edo::Reader::open(path).lookup(ids.data(), batch, want.data());
  Dev table(x.size() * sizeof(float)), d_ids(batch * sizeof(uint64_t)), plain(batch * dim * sizeof(float));
  table.upload(x.data(), table.bytes());
  d_ids.upload(drawn.data(), d_ids.bytes());
  const double tp = best_device_seconds(cfg.repeat * 4, [&] {
    edo::bench::gpu::gather_rows(table.as<float>(), d_ids.as<uint64_t>(), batch, dim, plain.as<float>());
  });
  const std::pair<edo::HostTierAccess, const char*> modes[] = {{edo::HostTierAccess::copy, "copy"},
                                                               {edo::HostTierAccess::mapped, "mapped"},
                                                               {edo::HostTierAccess::managed, "managed"}};
  for (const auto& [access, name] : modes) {
    edo::ReaderOptions opt;
    opt.device = edo::Device::cuda;
    opt.host_access = access;
    const double t_open = best_host_seconds(1, [&] { (void)edo::Reader::open(path, opt); });
    const edo::Reader reader = edo::Reader::open(path, opt);
    Dev out(batch * dim * sizeof(float));
    const double tl =
        best_host_seconds(cfg.repeat * 4, [&] { reader.lookup_device(ids.data(), batch, out.as<float>()); });
    out.download(got.data(), got.size() * sizeof(float));
    rep.check_result(fmt::format("lookup_device with host tiers by {} equals the CPU lookup", name),
                     std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    rep.add({"residency",
             fmt::format("host tier by {}: lookup_device batch {}", name, batch),
             static_cast<double>(batch) / tl,
             "rows/s",
             "plain device gather (fp32)",
             static_cast<double>(batch) / tp,
             "share of the gather",
             {{"rows", rows},
              {"dim", dim},
              {"tiers", "hot 5% fp16 gpu, cold rest int8 host"},
              {"open_seconds", t_open},
              {"lookup_seconds", tl},
              {"counts", "lookup_device from host ids, Zipf ids drawn by frequency"}}});
  }
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  std::string json_path, markdown_path;
  bool info = false, require_gpu = false;
  std::vector<std::string> sections;
  CLI::App app{
      "edo_bench_gpu: edo's GPU figures next to their ceilings (device copy, cuBLAS sgemm, plain gather, "
      "pinned upload) and the CPU, measured in one run. Run by scripts/gpu-check.sh."};
  app.add_flag("--quick", cfg.quick, "Smaller sizes, one figure per kernel (about a minute on an H200)");
  app.add_option("--json", json_path, "Write every figure as JSON to this file");
  app.add_option("--markdown", markdown_path, "Write the figures as the Markdown table of docs/BENCHMARKS.md, \"GPU\"");
  app.add_option("--data", cfg.data_dir, "Folder holding bigann10k_base.npy (data-samples/)")->required(false);
  app.add_option("--tmp", cfg.tmp_dir, "Folder for the packed file of the lookup section (default: the system's)");
  app.add_option("--repeat", cfg.repeat, "Timed runs per figure; the best is kept (default 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--sections", sections,
                 "Only these: scalar upload pq rq kmeans knn lookup residency; train (the trainable codecs' default "
                 "training on 65,536 x 384 and x 768 tables, GPU and CPU: minutes) runs only when named")
      ->check(CLI::IsMember({"scalar", "upload", "pq", "rq", "kmeans", "knn", "lookup", "residency", "train"}));
  app.add_flag("--info", info,
               "Print the GPU, driver, runtime and this binary's architectures, then exit "
               "(3 without a GPU, 4 when this binary has no code for it)");
  app.add_flag("--require-gpu", require_gpu, "Exit 3 (not 0) when there is no GPU");
  CLI11_PARSE(app, argc, argv);
  cfg.sections.insert(sections.begin(), sections.end());
  if (cfg.tmp_dir.empty()) cfg.tmp_dir = fs::temp_directory_path().string();
#ifdef EDO_SAMPLES_DIR
  if (cfg.data_dir.empty()) cfg.data_dir = EDO_SAMPLES_DIR;
#endif

  json out = {{"schema", "edo-bench-gpu/1"},
              {"mode", cfg.quick ? "quick" : "full"},
              {"edo_version", EDO_VERSION_STRING},
              {"build", {{"cuda_architectures", EDO_BENCH_CUDA_ARCHITECTURES}, {"cpu_flags", EDO_BUILD_MARCH_STRING}}},
              {"host", {{"cpu", edo::bench::cpu_model()}, {"threads", omp_get_max_threads()}}}};
  // Written to a temporary name and renamed, so a run stopped by a time
  // limit never leaves half a file.
  auto write_json = [&] {
    if (json_path.empty()) return;
    const std::string temp = json_path + ".tmp";
    {
      std::ofstream f(temp);
      f << out.dump(2) << "\n";
      if (!f) throw std::runtime_error("cannot write " + temp);
    }
    fs::rename(temp, json_path);
  };
  fmt::print("edo_bench_gpu {}: built for CUDA architectures {}\n", EDO_VERSION_STRING, EDO_BENCH_CUDA_ARCHITECTURES);
  try {
    int count = 0;
    const cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count == 0) {
      const std::string why = ce != cudaSuccess ? cudaGetErrorString(ce) : "the driver reports no device";
      fmt::print("no CUDA GPU ({}): nothing to measure\n", why);
      out["gpu"] = nullptr;
      out["skipped"] = "no CUDA GPU: " + why;
      write_json();
      return (info || require_gpu) ? 3 : 0;
    }
    check(cudaSetDevice(0), "cudaSetDevice");
    out["gpu"] = device_info(0);
    out["gpu"]["count"] = count;
    const auto& g = out["gpu"];
    const auto probe = edo::bench::gpu::probe_kernel_image();
    out["build"]["kernel_binary_version"] = probe.binary_version;
    out["build"]["kernel_ptx_version"] = probe.ptx_version;
    fmt::print("gpu: {} (compute capability {}, {} SMs, {:.1f} GiB), driver supports CUDA {}, runtime {}\n",
               g["name"].get<std::string>(), g["compute_capability"].get<std::string>(),
               g["multiprocessors"].get<int>(), static_cast<double>(g["memory_bytes"].get<uint64_t>()) / (1u << 30),
               g["driver_cuda_version"].get<std::string>(), g["runtime_version"].get<std::string>());
    if (!probe.ok) {
      fmt::print(
          "ERROR: this binary has no code this GPU can run: built for CUDA architectures {}, the GPU is sm_{} "
          "({}). Rebuild with -DCMAKE_CUDA_ARCHITECTURES={}.\n",
          EDO_BENCH_CUDA_ARCHITECTURES, g["sm"].get<int>(), probe.error, g["sm"].get<int>());
      out["error"] = "architecture mismatch: " + probe.error;
      write_json();
      return 4;
    }
    fmt::print("kernel image in use: sm_{} (ptx {})\n", probe.binary_version, probe.ptx_version);
    if (info) {
      write_json();
      return 0;
    }
    fmt::print("host: {}, {} OpenMP threads; mode {}\n", edo::bench::cpu_model(), omp_get_max_threads(),
               cfg.quick ? "quick" : "full");

    Report rep;
    const auto t0 = Clock::now();
    json timings = json::object(), section_errors = json::object();
    // The JSON is rewritten after every section, so a run stopped by a
    // time limit still leaves the figures it measured.
    auto timed = [&](const std::string& name, const std::function<void()>& fn) {
      if (!cfg.wants(name)) return;
      fmt::print(stderr, "{}...\n", name);
      const auto s0 = Clock::now();
      try {
        fn();
      } catch (const std::exception& e) {
        // One broken section must not cost the others their figures.
        fmt::print(stderr, "  ERROR in {}: {}\n", name, e.what());
        section_errors[name] = e.what();
        (void)cudaGetLastError();
      }
      timings[name] = seconds_since(s0);
      out["section_errors"] = section_errors;
      for (const auto& [key, value] : rep.to_json().items()) out[key] = value;
      out["section_seconds"] = timings;
      out["seconds"] = seconds_since(t0);
      write_json();
    };
    std::unique_ptr<Table> bigann;
    auto need_bigann = [&]() -> const Table& {
      if (!bigann) bigann = std::make_unique<Table>(load_table(cfg.data_dir + "/bigann10k_base.npy"));
      return *bigann;
    };
    double copy_gbps = 0;
    timed("scalar", [&] {
      copy_gbps = copy_bandwidth(rep, cfg.quick ? (size_t{512} << 20) : (size_t{1} << 30), cfg.repeat);
      section_scalar(rep, cfg, copy_gbps);
    });
    timed("upload", [&] { section_upload(rep, cfg); });
    timed("pq", [&] { section_pq(rep, cfg, need_bigann()); });
    timed("rq", [&] { section_rq(rep, cfg, need_bigann()); });
    timed("kmeans", [&] { section_kmeans(rep, cfg, need_bigann()); });
    timed("knn", [&] { section_knn(rep, cfg); });
    timed("lookup", [&] { section_lookup(rep, cfg); });
    timed("residency", [&] { section_residency(rep, cfg); });
    timed("train", [&] { section_train(rep, cfg); });
    rep.print_table();
    if (!markdown_path.empty()) {
      std::ofstream md(markdown_path);
      md << rep.markdown(out);
      if (!md) throw std::runtime_error("cannot write " + markdown_path);
    }
    for (const auto& [name, what] : section_errors.items())
      fmt::print("ERROR in section {}: {}\n", name, what.get<std::string>());
    fmt::print("total {:.1f} s\n", seconds_since(t0));
    if (!section_errors.empty()) return 1;
    return rep.failed() ? 5 : 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "edo_bench_gpu: {}\n", e.what());
    out["error"] = e.what();
    try {
      write_json();
    } catch (...) {
    }
    return 1;
  }
}
