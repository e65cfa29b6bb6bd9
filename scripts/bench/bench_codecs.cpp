// SPDX-License-Identifier: Apache-2.0
// Scalar codec throughput against its ceiling (memcpy of the same bytes) and
// its peers (FAISS ScalarQuantizer, and numpy when the script passes its
// figure in with --peer), all on one in-memory fp32 table of >= 1 GB.
//
// Every rate is GB/s of fp32 data: the bytes read by an encode, the bytes
// written by a decode, so all rows compare like for like with memcpy.
//
// The searched codecs (int6 to int2) get a second ceiling: the float
// operations their MSE search makes a value, counted on the table with the
// library's own search, at the rate this machine runs them (measured in the
// same run), i.e. the fastest any implementation of that search could go.
#include "bench_util.hpp"

#include <edo/codec.hpp>
#include <edo/codec_math.hpp>
#include <edo/make_codec.hpp>

#include <faiss/impl/ScalarQuantizer.h>
#include <CLI/CLI.hpp>

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <cstring>
#include <memory>
#include <optional>

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

// Lane operations a value in one measurement of the search, as the AVX2
// evaluator counts them: a candidate is fma, max, min, add, sub (the
// rounding), add, fma, fma; the group's moments are fma, add, fma.
constexpr double kCandidateOps = 8, kMomentOps = 3;

// math::AffineGroup, counting what the search asks it.
struct CountingGroup {
  edo::math::AffineGroup g;
  edo::math::AffineMoments moments = g.moments;
  mutable double ops = kMomentOps * static_cast<double>(g.n);  // lane operations, all values of the group
  void sums_batch(const edo::math::AffineParams* p, int count, edo::math::AffineCodeSums* out) const {
    ops += kCandidateOps * count * static_cast<double>(g.n);
    g.sums_batch(p, count, out);
  }
};

// Lane operations a value that the codec's MSE search makes on the first
// `rows` rows of x (the library's search, evaluated by the reference).
double search_ops_per_value(const edo::math::ScalarLayout& L, const float* x, size_t rows) {
  const uint32_t qmax = edo::math::affine_qmax(L);
  double ops = 0;
  for (size_t r = 0; r < rows; ++r) {
    for (uint32_t begin = 0; begin < L.dim; begin += L.group) {
      const float* v = x + r * L.dim + begin;
      const size_t len = std::min<size_t>(L.group, L.dim - begin);
      float lo = v[0], hi = v[0];
      for (size_t i = 1; i < len; ++i) {
        lo = std::min(lo, v[i]);
        hi = std::max(hi, v[i]);
      }
      const float unit = edo::math::affine_unit(static_cast<double>(hi) - static_cast<double>(lo));
      const CountingGroup g{edo::math::affine_group(v, len, qmax, lo, unit)};
      edo::math::affine_params_search(g, len, lo, hi, qmax, unit, L.half_params);
      ops += g.ops;
    }
  }
  return ops / static_cast<double>(rows * L.dim);
}

// Lane operations a second that this machine runs of one candidate's
// sequence (kCandidateOps, as above) on eight independent AVX2 register streams
// a thread, on every thread: no memory, no dependency between streams. A
// build without AVX2 has no such kernel (and no bound rows).
std::optional<double> candidate_op_rate(int repeat) {
#ifndef __AVX2__
  (void)repeat;
  return std::nullopt;
#else
  constexpr int64_t kIters = int64_t{1} << 22;
  constexpr int kStreams = 8;
  int threads = 1;
  const double t = best_seconds(repeat, [&] {
#pragma omp parallel
    {
#pragma omp single
      threads = omp_get_num_threads();
      const __m256 bias = _mm256_set1_ps(-1.875f), inv = _mm256_set1_ps(7.5f), q = _mm256_set1_ps(15.0f),
                   zero = _mm256_setzero_ps(), magic = _mm256_set1_ps(12582912.0f);
      __m256 v[kStreams], sq[kStreams], sqq[kStreams], sqx[kStreams];
      for (int k = 0; k < kStreams; ++k) {
        v[k] = _mm256_set1_ps(0.1f * static_cast<float>(k + 1));
        sq[k] = sqq[k] = sqx[k] = zero;
      }
      for (int64_t i = 0; i < kIters; ++i) {
        for (int k = 0; k < kStreams; ++k) {
          asm volatile("" : "+x"(v[k]));  // a new value every step, as far as the compiler knows
          __m256 c = _mm256_min_ps(_mm256_max_ps(_mm256_fmadd_ps(v[k], inv, bias), zero), q);
          c = _mm256_sub_ps(_mm256_add_ps(c, magic), magic);
          sq[k] = _mm256_add_ps(sq[k], c);
          sqq[k] = _mm256_fmadd_ps(c, c, sqq[k]);
          sqx[k] = _mm256_fmadd_ps(c, v[k], sqx[k]);
        }
      }
      __m256 sum = zero;
      for (int k = 0; k < kStreams; ++k) sum = _mm256_add_ps(sum, _mm256_add_ps(sq[k], _mm256_add_ps(sqq[k], sqx[k])));
      asm volatile("" : : "x"(sum));
    }
  });
  return static_cast<double>(threads) * kIters * kStreams * kCandidateOps * 8 / t;
#endif
}

#ifdef __AVX2__
// The same on sixteen-lane AVX-512 registers, the width the integer codecs'
// search takes where the CPU runs AVX-512F (lib/codecs/affine_search_lanes.cpp),
// rounding as that search does (one VRNDSCALEPS for the two operations of
// the AVX2 rounding): still counted as kCandidateOps lane operations a
// candidate and value, so the bound compares candidates with candidates.
#pragma GCC push_options
#pragma GCC target("avx512f")
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
double candidate_op_rate_avx512(int repeat) {
  constexpr int64_t kIters = int64_t{1} << 22;
  constexpr int kStreams = 8;
  int threads = 1;
  const double t = best_seconds(repeat, [&] {
#pragma omp parallel
    {
#pragma omp single
      threads = omp_get_num_threads();
      const __m512 bias = _mm512_set1_ps(-1.875f), inv = _mm512_set1_ps(7.5f), q = _mm512_set1_ps(15.0f),
                   zero = _mm512_setzero_ps();
      __m512 v[kStreams], sq[kStreams], sqq[kStreams], sqx[kStreams];
      for (int k = 0; k < kStreams; ++k) {
        v[k] = _mm512_set1_ps(0.1f * static_cast<float>(k + 1));
        sq[k] = sqq[k] = sqx[k] = zero;
      }
      for (int64_t i = 0; i < kIters; ++i) {
        for (int k = 0; k < kStreams; ++k) {
          asm volatile("" : "+v"(v[k]));  // a new value every step, as far as the compiler knows
          __m512 c = _mm512_min_ps(_mm512_max_ps(_mm512_fmadd_ps(v[k], inv, bias), zero), q);
          c = _mm512_roundscale_ps(c, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
          sq[k] = _mm512_add_ps(sq[k], c);
          sqq[k] = _mm512_fmadd_ps(c, c, sqq[k]);
          sqx[k] = _mm512_fmadd_ps(c, v[k], sqx[k]);
        }
      }
      __m512 sum = zero;
      for (int k = 0; k < kStreams; ++k) sum = _mm512_add_ps(sum, _mm512_add_ps(sq[k], _mm512_add_ps(sqq[k], sqx[k])));
      asm volatile("" : : "v"(sum));
    }
  });
  return static_cast<double>(threads) * kIters * kStreams * kCandidateOps * 16 / t;
}
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif

// The op rate of the widest lanes the search uses on this CPU.
std::optional<double> search_op_rate(int repeat) {
#ifdef __AVX2__
  if (__builtin_cpu_supports("avx512f")) return candidate_op_rate_avx512(repeat);
#endif
  return candidate_op_rate(repeat);
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

  bool op_rate_measured = false;  // once, if a searched codec is timed
  std::optional<double> op_rate;
  for (const std::string& spec : specs) {
    const std::unique_ptr<edo::Codec> codec = edo::make_codec(spec, d);
    const double te = best_seconds(repeat, [&] { codec->encode(x.data(), n, codes.data()); });
    table.add(fmt::format("edo {} encode", spec), te, gb / te);
    const double td = best_seconds(repeat, [&] { codec->decode(codes.data(), n, out.data()); });
    table.add(fmt::format("edo {} decode", spec), td, gb / td);
    const std::optional<edo::math::ScalarLayout> L = edo::scalar_layout(*codec);
    if (L && edo::math::is_affine(L->kind) && L->bits < 8) {
      if (!op_rate_measured) {
        op_rate = search_op_rate(repeat);
        op_rate_measured = true;
      }
      if (const std::optional<double> rate = op_rate) {
        const double ops = search_ops_per_value(*L, x.data(), std::min<size_t>(n, 65536));
        table.add(fmt::format("  {} search bound: {:.1f} lane-ops a value at {:.0f} G/s", spec, ops, *rate / 1e9), 0.0,
                  *rate / ops * sizeof(float) / 1e9);
      }
    }
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
