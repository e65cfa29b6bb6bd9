// SPDX-License-Identifier: Apache-2.0
// pq_bench: recall@10 and training time of edo's pq/opq/rq codecs next to
// FAISS's ProductQuantizer, OPQ+PQ and ResidualQuantizer at the same bytes
// per vector, on one table, in one run; then CPU encode throughput of edo's
// encoder next to FAISS compute_codes on the same codebooks.
//
//   pq_bench --data glove.npy --metric cos --shapes 25x8,25x4,10x5
// prints a Markdown table (scripts/bench/pq_bench.sh runs the documented set).
#include <edo/codec.hpp>
#include <edo/error.hpp>
#include <edo/io/table.hpp>
#include <edo/knn.hpp>
#include <edo/make_codec.hpp>
#include <edo/pq.hpp>
#include <edo/random.hpp>

#include <faiss/VectorTransform.h>
#include <faiss/impl/ProductQuantizer.h>
#include <faiss/impl/ResidualQuantizer.h>
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <omp.h>

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Shape {
  uint32_t m, nbits;
};

struct Result {
  double train_s = 0, encode_s = 0;
  std::vector<float> decoded;
};

double recall_at(const edo::KnnResult& truth, const edo::KnnResult& approx, uint64_t k) {
  double sum = 0;
  for (uint64_t q = 0; q < truth.nq; ++q) {
    auto t = truth.ids_of(q).first(k), a = approx.ids_of(q).first(k);
    size_t common = 0;
    for (int64_t id : a) common += std::find(t.begin(), t.end(), id) != t.end();
    sum += static_cast<double>(common) / static_cast<double>(k);
  }
  return sum / static_cast<double>(truth.nq);
}

Result run_edo(const std::string& spec, const std::vector<float>& x, size_t n, size_t d, uint64_t seed) {
  Result r;
  auto codec = edo::make_codec(spec, d);
  auto t0 = Clock::now();
  codec->train(x.data(), n, seed);
  r.train_s = since(t0);
  std::vector<uint8_t> codes(n * codec->code_size());
  t0 = Clock::now();
  codec->encode(x.data(), n, codes.data());
  r.encode_s = since(t0);
  r.decoded.resize(n * d);
  codec->decode(codes.data(), n, r.decoded.data());
  return r;
}

Result run_faiss_pq(const std::vector<float>& x, size_t n, size_t d, Shape s, bool opq) {
  Result r;
  auto t0 = Clock::now();
  std::vector<float> y = x;
  faiss::OPQMatrix rotation(static_cast<int>(d), static_cast<int>(s.m));
  if (opq) {
    rotation.train(static_cast<faiss::Index::idx_t>(n), x.data());
    rotation.apply_noalloc(static_cast<faiss::Index::idx_t>(n), x.data(), y.data());
  }
  faiss::ProductQuantizer pq(d, s.m, s.nbits);
  pq.train(n, y.data());
  r.train_s = since(t0);
  std::vector<uint8_t> codes(n * pq.code_size);
  t0 = Clock::now();
  pq.compute_codes(y.data(), codes.data(), n);
  r.encode_s = since(t0);
  r.decoded.resize(n * d);
  pq.decode(codes.data(), y.data(), n);
  if (opq) {
    rotation.reverse_transform(static_cast<faiss::Index::idx_t>(n), y.data(), r.decoded.data());
  } else {
    r.decoded = y;
  }
  return r;
}

Result run_faiss_rq(const std::vector<float>& x, size_t n, size_t d, Shape s, int beam) {
  Result r;
  faiss::ResidualQuantizer rq(d, s.m, s.nbits);
  rq.max_beam_size = beam;
  auto t0 = Clock::now();
  rq.train(n, x.data());
  r.train_s = since(t0);
  std::vector<uint8_t> codes(n * rq.code_size);
  t0 = Clock::now();
  rq.compute_codes(x.data(), codes.data(), n);
  r.encode_s = since(t0);
  r.decoded.resize(n * d);
  rq.decode(codes.data(), r.decoded.data(), n);
  return r;
}

// edo's rq encoder and FAISS's on the same (edo-trained) codebooks, both at
// the codec's beam: time (best of 3), identical codes, and the fit of each.
int rq_encode_bench(const std::vector<float>& x, size_t n, size_t d, Shape s, const std::string& rq_params,
                    uint64_t seed) {
  const std::string spec = fmt::format("rq:m={},nbits={}", s.m, s.nbits) + (rq_params.empty() ? "" : "," + rq_params);
  auto codec = edo::make_codec(spec, d);
  auto t0 = Clock::now();
  codec->train(x.data(), n, seed);
  const double train_s = since(t0);
  const auto canonical = codec->spec();
  const std::vector<float> codebooks = codec->state()[0].values;
  const auto beam_at = canonical.find("beam=");
  const int beam = std::atoi(canonical.c_str() + beam_at + 5);
  faiss::ResidualQuantizer frq(d, s.m, s.nbits);
  frq.max_beam_size = beam;
  frq.codebooks = codebooks;
  frq.is_trained = true;
  frq.compute_codebook_tables();
  const size_t bytes = codec->code_size();
  std::vector<uint8_t> ours(n * bytes), theirs(n * bytes);
  double t_edo = 1e30, t_faiss = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    t0 = Clock::now();
    codec->encode(x.data(), n, ours.data());
    t_edo = std::min(t_edo, since(t0));
    t0 = Clock::now();
    frq.compute_codes(x.data(), theirs.data(), n);
    t_faiss = std::min(t_faiss, since(t0));
  }
  size_t same = 0;
  for (size_t r = 0; r < n; ++r)
    same += std::equal(ours.begin() + r * bytes, ours.begin() + (r + 1) * bytes, theirs.begin() + r * bytes);
  auto error = [&](const std::vector<uint8_t>& codes) {
    std::vector<float> dec(n * d);
    codec->decode(codes.data(), n, dec.data());
    double num = 0, den = 0;
    for (size_t i = 0; i < n * d; ++i) {
      num += (static_cast<double>(x[i]) - dec[i]) * (static_cast<double>(x[i]) - dec[i]);
      den += static_cast<double>(x[i]) * x[i];
    }
    return std::sqrt(num / den);
  };
  std::printf(
      "rq encode %s (trained in %.2f s), %zu rows, same codebooks, %d threads:\n"
      "  edo rq_encode        %.3f s  %.1f krows/s  relative error %.5f\n"
      "  FAISS compute_codes  %.3f s  %.1f krows/s  relative error %.5f\n"
      "  edo/FAISS time %.2f; rows with identical codes %.2f%%\n",
      canonical.c_str(), train_s, n, omp_get_max_threads(), t_edo, static_cast<double>(n) / t_edo / 1e3, error(ours),
      t_faiss, static_cast<double>(n) / t_faiss / 1e3, error(theirs), t_edo / t_faiss,
      100.0 * static_cast<double>(same) / static_cast<double>(n));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"edo pq/opq/rq next to FAISS at equal bytes per vector"};
  std::string data, metric_name = "l2", shapes_text = "16x8", rq_params = "", only;
  uint64_t queries = 1000, seed = 0;
  int faiss_beam = 16;
  app.add_option("--data", data, "table (npy, fvecs, ...)")->required();
  app.add_option("--metric", metric_name, "l2, ip or cos");
  app.add_option("--shapes", shapes_text, "comma-separated MxB code shapes, e.g. 25x8,25x4");
  app.add_option("--queries", queries, "query rows sampled with the seed");
  app.add_option("--seed", seed, "seed for queries and edo training");
  app.add_option("--faiss-rq-beam", faiss_beam, "FAISS ResidualQuantizer beam size (0 skips it)");
  app.add_option("--edo-rq", rq_params, "params appended to edo's rq spec");
  std::string rq_encode_shape;
  app.add_option("--rq-encode", rq_encode_shape,
                 "MxB: instead of the table, time edo's rq beam search against FAISS ResidualQuantizer "
                 "compute_codes on the same codebooks (beam from --edo-rq, default 8)");
  app.add_option("--only", only, "run one method only (faiss-pq, faiss-opq, faiss-rq, pq, opq, pq-edo, rq)");
  CLI11_PARSE(app, argc, argv);
  try {
    const edo::Metric metric = edo::parse_metric(metric_name);
    auto table = edo::io::open_table(data);
    const size_t n = table->rows(), d = table->dim();
    std::vector<float> x(n * d);
    table->read_f32(0, n, x.data());
    std::vector<Shape> shapes;
    for (size_t pos = 0; pos < shapes_text.size();) {
      size_t end = shapes_text.find(',', pos);
      if (end == std::string::npos) end = shapes_text.size();
      unsigned m = 0, b = 0;
      if (std::sscanf(shapes_text.substr(pos, end - pos).c_str(), "%ux%u", &m, &b) != 2)
        EDO_USAGE_FAIL("--shapes: '{}' is not MxB", shapes_text.substr(pos, end - pos));
      shapes.push_back({m, b});
      pos = end + 1;
    }
    const std::vector<uint64_t> qids = edo::sample_indices(n, queries, seed);
    std::vector<float> q(qids.size() * d);
    for (size_t i = 0; i < qids.size(); ++i) std::copy_n(x.data() + qids[i] * d, d, q.data() + i * d);
    edo::KnnOptions ko;
    ko.metric = metric;
    ko.k = 10;
    ko.exclude.assign(qids.begin(), qids.end());
    const edo::MatrixView qv{q.data(), qids.size(), d};
    const edo::KnnResult truth = edo::knn(qv, edo::MatrixView{x.data(), n, d}, ko);

    if (!rq_encode_shape.empty()) {
      unsigned m = 0, b = 0;
      if (std::sscanf(rq_encode_shape.c_str(), "%ux%u", &m, &b) != 2)
        EDO_USAGE_FAIL("--rq-encode: '{}' is not MxB", rq_encode_shape);
      return rq_encode_bench(x, n, d, Shape{m, b}, rq_params, seed);
    }
    std::printf("data %s: %zu x %zu, metric %s, %zu queries, %d threads\n\n", data.c_str(), n, d,
                edo::metric_name(metric), qids.size(), omp_get_max_threads());
    std::printf("| bytes/vec | ratio | method | recall@10 | train s | encode s |\n|---|---|---|---|---|---|\n");
    for (const Shape& s : shapes) {
      const size_t bytes = (s.m * s.nbits + 7) / 8;
      const double ratio = static_cast<double>(d * 4 * 8) / static_cast<double>(s.m * s.nbits);
      const std::string pq = fmt::format("m={},nbits={}", s.m, s.nbits);
      std::vector<std::pair<std::string, std::function<Result()>>> methods = {
          {"faiss-pq", [&] { return run_faiss_pq(x, n, d, s, false); }},
          {"faiss-opq", [&] { return run_faiss_pq(x, n, d, s, true); }},
          {"pq", [&] { return run_edo("pq:" + pq, x, n, d, seed); }},
          {"pq-edo", [&] { return run_edo("pq:" + pq + ",train=edo", x, n, d, seed); }},
          {"opq", [&] { return run_edo("opq:" + pq, x, n, d, seed); }},
          {"rq", [&] { return run_edo("rq:" + pq + (rq_params.empty() ? "" : "," + rq_params), x, n, d, seed); }},
      };
      if (faiss_beam > 0)
        methods.insert(methods.begin() + 2, {"faiss-rq", [&] { return run_faiss_rq(x, n, d, s, faiss_beam); }});
      for (auto& [name, fn] : methods) {
        if (!only.empty() && name != only) continue;
        const Result r = fn();
        const edo::KnnResult approx = edo::knn(qv, edo::MatrixView{r.decoded.data(), n, d}, ko);
        std::string label = name;
        if (name == "faiss-rq") label += fmt::format(" (beam {})", faiss_beam);
        if (name == "rq") label += " (" + (rq_params.empty() ? std::string("defaults") : rq_params) + ")";
        std::printf("| %zu | %.1fx | %s %s | %.4f | %.2f | %.3f |\n", bytes, ratio, label.c_str(), pq.c_str(),
                    recall_at(truth, approx, 10), r.train_s, r.encode_s);
        std::fflush(stdout);
      }
    }

    // Encode throughput on identical codebooks: FAISS trains them, both encode.
    const Shape s = shapes.front();
    faiss::ProductQuantizer fpq(d, s.m, s.nbits);
    fpq.train(n, x.data());
    auto codec = edo::make_codec(fmt::format("pq:m={},nbits={}", s.m, s.nbits), d);
    codec->load_state({{"pq.codebooks", {s.m, fpq.ksub, fpq.dsub}, fpq.centroids}});
    std::vector<uint8_t> a(n * fpq.code_size), b(n * fpq.code_size);
    double t_edo = 1e30, t_faiss = 1e30;
    for (int rep = 0; rep < 3; ++rep) {
      auto t0 = Clock::now();
      codec->encode(x.data(), n, a.data());
      t_edo = std::min(t_edo, since(t0));
      t0 = Clock::now();
      fpq.compute_codes(x.data(), b.data(), n);
      t_faiss = std::min(t_faiss, since(t0));
    }
    size_t same = 0;
    for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
    std::printf(
        "\nencode pq:m=%u,nbits=%u, %zu rows, same codebooks: edo %.1f Mrows/s, FAISS compute_codes %.1f "
        "Mrows/s (edo/FAISS time %.2f); identical code bytes %.4f%%\n",
        s.m, s.nbits, n, static_cast<double>(n) / t_edo / 1e6, static_cast<double>(n) / t_faiss / 1e6, t_edo / t_faiss,
        100.0 * static_cast<double>(same) / static_cast<double>(a.size()));
  } catch (const edo::Error& e) {
    std::fprintf(stderr, "pq_bench: %s\n", e.what());
    return static_cast<int>(e.code());
  }
  return 0;
}
