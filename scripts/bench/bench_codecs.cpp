// Scalar codec throughput against its ceiling (memcpy of the same bytes) and
// its peers (FAISS ScalarQuantizer, and numpy when the script passes its
// figure in with --peer), all on one in-memory fp32 table of >= 1 GB.
//
// Every rate is GB/s of fp32 data: the bytes read by an encode, the bytes
// written by a decode, so all rows compare like for like with memcpy.
#include "bench_util.hpp"

#include <edo/codec.hpp>

#include <faiss/impl/ScalarQuantizer.h>
#include <CLI/CLI.hpp>

#include <cstring>
#include <memory>

namespace {

using edo::bench::best_seconds;

// memcpy split into fixed chunks over the OpenMP threads: the ceiling for
// code that, like edo's fast path, streams memory on every core.
void parallel_memcpy(uint8_t* dst, const uint8_t* src, size_t bytes) {
  constexpr size_t kChunk = size_t{1} << 20;
  const int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < chunks; ++c) {
    const size_t off = static_cast<size_t>(c) * kChunk;
    std::memcpy(dst + off, src + off, std::min(kChunk, bytes - off));
  }
}

}  // namespace

int main(int argc, char** argv) {
  uint64_t rows = 2'097'152, dim = 128;
  int repeat = 3;
  std::vector<std::string> peers, specs = {"fp16", "bf16", "int8", "int4", "int4:group=32", "int2", "int2:group=32"};
  CLI::App app{"edo scalar codec throughput vs memcpy and FAISS ScalarQuantizer"};
  app.add_option("--rows", rows, "Rows of the table (default 2097152: 1 GiB at dim 128)");
  app.add_option("--dim", dim, "Dimension (default 128)");
  app.add_option("--repeat", repeat, "Runs per measurement; the best is kept (default 3)")->check(CLI::PositiveNumber);
  app.add_option("--codecs", specs, "Codecs timed (default fp16 bf16 int8 int4 int4:group=32 int2 int2:group=32)");
  app.add_option("--peer", peers, "NAME=GBPS: a rate measured outside this program, shown in the table");
  CLI11_PARSE(app, argc, argv);

  const size_t n = rows, d = dim, bytes = n * d * sizeof(float);
  const double gb = static_cast<double>(bytes) / 1e9;
  fmt::print("machine: {}, {} OpenMP threads, load average {:.1f}\n", edo::bench::cpu_model(), omp_get_max_threads(),
             edo::bench::load_average());
  fmt::print("table: {} x {} fp32 = {:.2f} GB (seeded Gaussian, in memory), best of {} runs\n\n", n, d, gb, repeat);

  const std::vector<float> x = edo::bench::gaussian(n * d, 1);
  // Zero-initialised, so every output page is touched before timing starts.
  std::vector<float> out(n * d);
  std::vector<uint8_t> codes(n * d * sizeof(float));
  const auto* src = reinterpret_cast<const uint8_t*>(x.data());
  auto* dst = reinterpret_cast<uint8_t*>(out.data());

  edo::bench::RateTable table("GB/s", "x memcpy");
  const double t_copy1 = best_seconds(repeat, [&] { std::memcpy(dst, src, bytes); });
  table.add("memcpy, 1 thread", t_copy1, gb / t_copy1);
  const double t_copyn = best_seconds(repeat, [&] { parallel_memcpy(dst, src, bytes); });
  table.add(fmt::format("memcpy, {} threads", omp_get_max_threads()), t_copyn, gb / t_copyn);
  const double ceiling = std::max(gb / t_copy1, gb / t_copyn);

  for (const auto& [name, qtype] :
       {std::pair{"fp16", faiss::ScalarQuantizer::QT_fp16}, std::pair{"8bit", faiss::ScalarQuantizer::QT_8bit}}) {
    faiss::ScalarQuantizer sq(d, qtype);
    sq.train(std::min<size_t>(n, 65536), x.data());  // per-dimension ranges for QT_8bit; untimed
    const double te = best_seconds(repeat, [&] { sq.compute_codes(x.data(), codes.data(), n); });
    table.add(fmt::format("faiss SQ QT_{} encode", name), te, gb / te);
    const double td = best_seconds(repeat, [&] { sq.decode(codes.data(), out.data(), n); });
    table.add(fmt::format("faiss SQ QT_{} decode", name), td, gb / td);
  }

  for (const std::string& spec : specs) {
    const std::unique_ptr<edo::Codec> codec = edo::make_codec(spec, d);
    const double te = best_seconds(repeat, [&] { codec->encode(x.data(), n, codes.data()); });
    table.add(fmt::format("edo {} encode", spec), te, gb / te);
    const double td = best_seconds(repeat, [&] { codec->decode(codes.data(), n, out.data()); });
    table.add(fmt::format("edo {} decode", spec), td, gb / td);
  }
  {
    // fp16 can skip the NaN/Inf scan that precedes every encode; the
    // difference from "edo fp16 encode" is what that extra pass costs.
    const std::unique_ptr<edo::Codec> codec = edo::make_codec("fp16", d);
    edo::EncodeOptions keep;
    keep.allow_nonfinite = true;
    const double te = best_seconds(repeat, [&] { codec->encode(x.data(), n, codes.data(), keep); });
    table.add("edo fp16 encode, no NaN/Inf scan", te, gb / te);
  }

  for (const std::string& peer : peers) {
    const size_t eq = peer.rfind('=');
    if (eq == std::string::npos) {
      fmt::print(stderr, "--peer '{}': expected NAME=GBPS\n", peer);
      return 2;
    }
    table.add(peer.substr(0, eq), 0.0, std::stod(peer.substr(eq + 1)));
  }
  fmt::print("load average at the end: {:.1f}\n\n", edo::bench::load_average());
  table.print(ceiling);
  fmt::print("\nratios are to the faster memcpy ({:.2f} GB/s)\n", ceiling);
  return 0;
}
