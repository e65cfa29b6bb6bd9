// pq, opq and rq: codebooks trained with FAISS (or edo's k-means), encoded
// and decoded by edo (pq.hpp), stored as float blobs that decode without
// FAISS. docs/FORMAT.md ("Codec payloads: pq, opq, rq") has the layouts.
#include "codec_impl.hpp"

#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pq.hpp>

#include <faiss/VectorTransform.h>
#include <faiss/impl/ProductQuantizer.h>
#include <faiss/impl/ResidualQuantizer.h>

#include <cmath>
#include <cstring>

namespace edo::detail {
namespace {

constexpr size_t kMinBits = 4, kMaxBits = 8;
// FAISS's default is 50 outer OPQ iterations; the rotation's gain flattens
// well before (docs/BENCHMARKS.md), at half the training time.
constexpr int kOpqIterations = 25;

// FAISS takes an int seed; fold the 64 bits in.
int faiss_seed(uint64_t seed) { return static_cast<int>((seed ^ (seed >> 31) ^ (seed >> 62)) & 0x7fffffffu); }

// Quiet, seeded FAISS clustering. min_points_per_centroid = 1: the row
// count is checked by the codec (n >= ksub), and FAISS would otherwise
// print a warning for every sub-space of a small sample.
void configure_clustering(faiss::ClusteringParameters& cp, uint64_t seed) {
  cp.seed = faiss_seed(seed);
  cp.min_points_per_centroid = 1;
  cp.verbose = false;
}

void check_blob(const std::string& spec, const NamedBlob& b, const std::vector<uint64_t>& shape) {
  if (b.shape != shape) {
    EDO_FAIL("{}: state blob '{}' has shape ({}), expected ({})", spec, b.name, fmt::join(b.shape, ", "),
             fmt::join(shape, ", "));
  }
  uint64_t count = 1;
  for (uint64_t d : shape) count *= d;
  if (b.values.size() != count) {
    EDO_FAIL("{}: state blob '{}' holds {} values, its shape needs {}", spec, b.name, b.values.size(), count);
  }
  for (size_t i = 0; i < b.values.size(); ++i) {
    if (!std::isfinite(b.values[i])) EDO_FAIL("{}: state blob '{}' value {} is not finite", spec, b.name, i);
  }
}

// The blobs named in `names`, in that order; anything missing, repeated or
// extra is an error.
std::vector<const NamedBlob*> take_blobs(const std::string& spec, const std::vector<NamedBlob>& blobs,
                                         std::initializer_list<const char*> names) {
  std::vector<const NamedBlob*> out(names.size(), nullptr);
  for (const NamedBlob& b : blobs) {
    size_t i = 0;
    for (const char* name : names) {
      if (b.name == name) break;
      ++i;
    }
    if (i == names.size()) EDO_FAIL("{}: unexpected state blob '{}'", spec, b.name);
    if (out[i]) EDO_FAIL("{}: state blob '{}' appears twice", spec, b.name);
    out[i] = &b;
  }
  size_t i = 0;
  for (const char* name : names) {
    if (!out[i++]) EDO_FAIL("{}: state lacks '{}'", spec, name);
  }
  return out;
}

void check_training_rows(const std::string& spec, size_t n, size_t ksub) {
  if (n < ksub) {
    EDO_FAIL(
        "{}: the training sample has {} rows, fewer than the {} centroids to train (give more rows or a "
        "smaller nbits)",
        spec, n, ksub);
  }
}

// ---- pq and opq ------------------------------------------------------------------------

enum class Trainer { faiss, edo };

class PqCodec final : public Codec, public AdcCodec {
 public:
  // opq: rows are rotated into m * ceil(dim / m) columns, so every
  // sub-space has the same width.
  PqCodec(bool rotate, size_t dim, uint32_t m, uint32_t nbits, Trainer trainer)
      : rotate_(rotate), dim_(dim), trainer_(trainer) {
    const uint32_t d = static_cast<uint32_t>(dim);
    g_ = math::pq_geometry(rotate ? m * ((d + m - 1) / m) : d, m, nbits);
  }

  std::string spec() const override {
    return fmt::format("{}:m={},nbits={}{}", rotate_ ? "opq" : "pq", g_.m, g_.nbits,
                       trainer_ == Trainer::edo ? ",train=edo" : "");
  }
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return g_.code_size; }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !codebooks_.empty(); }
  const AdcCodec* adc() const override { return this; }

  void train(const float* x, size_t n, uint64_t seed) override {
    check_training_rows(spec(), n, g_.ksub);
    EncodeOptions opt;
    opt.input = "training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    // Callers name the input's rows first; this keeps FAISS from ever
    // asserting on sums that overflow, whoever calls.
    opt.allow_underflow = true;
    check_trainable_norms(x, n, dim_, spec(), opt);
    std::vector<float> rotated;
    if (rotate_) {
      faiss::OPQMatrix opq(static_cast<int>(dim_), static_cast<int>(g_.m), static_cast<int>(g_.dim));
      opq.verbose = false;
      opq.niter = kOpqIterations;
      faiss::ProductQuantizer inner(g_.dim, g_.m, g_.nbits);
      configure_clustering(inner.cp, seed);
      opq.pq = &inner;
      opq.train(static_cast<faiss::Index::idx_t>(n), x);
      rotation_ = opq.A;
      rotated.resize(n * g_.dim);
      rotate(x, n, rotated.data());
      x = rotated.data();
    }
    if (trainer_ == Trainer::edo) {
      KmeansOptions ko;
      ko.seed = seed;
      ko.iterations = 40;
      codebooks_ = train_pq_codebooks(g_, x, n, ko);
      return;
    }
    const std::vector<float> padded = pq_pad_rows(g_, x, n);
    faiss::ProductQuantizer pq(static_cast<size_t>(g_.m) * g_.dsub, g_.m, g_.nbits);
    configure_clustering(pq.cp, seed);
    pq.verbose = false;
    pq.train(n, padded.data());
    codebooks_ = pq.centroids;
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    require_device(opt.device);
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    if (!rotate_) return pq_encode(g_, codebooks_.data(), x, n, codes, opt.device);
    std::vector<float> y(n * g_.dim);
    rotate(x, n, y.data());
    pq_encode(g_, codebooks_.data(), y.data(), n, codes, opt.device);
  }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    require_trained();
    require_device(opt.device);
    if (!rotate_) return pq_decode(g_, codebooks_.data(), codes, n, x, opt.device);
    std::vector<float> y(n * g_.dim);
    pq_decode(g_, codebooks_.data(), codes, n, y.data(), opt.device);
    unrotate(y.data(), n, x);
  }

  std::vector<NamedBlob> state() const override {
    require_trained();
    std::vector<NamedBlob> out = {{"pq.codebooks", {g_.m, g_.ksub, g_.dsub}, codebooks_}};
    if (rotate_) out.push_back({"opq.rotation", {g_.dim, dim_}, rotation_});
    return out;
  }

  void load_state(const std::vector<NamedBlob>& blobs) override {
    const std::string s = spec();
    std::vector<const NamedBlob*> b =
        rotate_ ? take_blobs(s, blobs, {"pq.codebooks", "opq.rotation"}) : take_blobs(s, blobs, {"pq.codebooks"});
    check_blob(s, *b[0], {g_.m, g_.ksub, g_.dsub});
    if (rotate_) {
      check_blob(s, *b[1], {g_.dim, dim_});
      rotation_ = b[1]->values;
    }
    codebooks_ = b[0]->values;
  }

  // ---- AdcCodec ----
  size_t adc_table_size() const override { return static_cast<size_t>(g_.m) * g_.ksub; }

  void adc_tables(const float* queries, size_t nq, float* tables) const override {
    require_trained();
    std::vector<float> rotated;
    if (rotate_) {
      rotated.resize(nq * g_.dim);
      rotate(queries, nq, rotated.data());
      queries = rotated.data();
    }
#pragma omp parallel for schedule(static) if (parallel_worth(nq * adc_table_size()))
    for (int64_t qi = 0; qi < static_cast<int64_t>(nq); ++qi) {
      const float* q = queries + static_cast<size_t>(qi) * g_.dim;
      float* t = tables + static_cast<size_t>(qi) * adc_table_size();
      for (uint32_t j = 0; j < g_.m; ++j) {
        const float* qs = q + math::pq_sub_begin(g_, j);
        const uint32_t w = math::pq_sub_width(g_, j);
        for (uint32_t k = 0; k < g_.ksub; ++k) {
          const float* c = codebooks_.data() + (static_cast<size_t>(j) * g_.ksub + k) * g_.dsub;
          float s = 0;
          for (uint32_t c_i = 0; c_i < w; ++c_i) s = std::fma(qs[c_i], c[c_i], s);
          t[static_cast<size_t>(j) * g_.ksub + k] = s;
        }
      }
    }
  }

  void adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const override {
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* code = codes + r * g_.code_size;
      float s = 0;
      for (uint32_t j = 0; j < g_.m; ++j)
        s += table[static_cast<size_t>(j) * g_.ksub + math::pq_get_code(code, j, g_.nbits)];
      ip[r] = s;
    }
  }

 private:
  void require_trained() const {
    if (codebooks_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
  }

  // y (n x g_.dim) = x A^T, each output a fixed-order fma chain.
  void rotate(const float* x, size_t n, float* y) const {
    const size_t d2 = g_.dim;
#pragma omp parallel for schedule(static) if (n * d2 * dim_ > 1000000)
    for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
      const float* xr = x + static_cast<size_t>(ri) * dim_;
      for (size_t i = 0; i < d2; ++i) {
        const float* a = rotation_.data() + i * dim_;
        float s = 0;
        for (size_t j = 0; j < dim_; ++j) s = std::fma(a[j], xr[j], s);
        y[static_cast<size_t>(ri) * d2 + i] = s;
      }
    }
  }

  // x (n x dim) = y A: A's columns are orthonormal, so A^T inverts it.
  void unrotate(const float* y, size_t n, float* x) const {
    const size_t d2 = g_.dim;
#pragma omp parallel for schedule(static) if (n * d2 * dim_ > 1000000)
    for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
      const float* yr = y + static_cast<size_t>(ri) * d2;
      float* xr = x + static_cast<size_t>(ri) * dim_;
      for (size_t j = 0; j < dim_; ++j) xr[j] = 0;
      for (size_t i = 0; i < d2; ++i) {
        const float* a = rotation_.data() + i * dim_;
        for (size_t j = 0; j < dim_; ++j) xr[j] = std::fma(a[j], yr[i], xr[j]);
      }
    }
  }

  bool rotate_;
  size_t dim_;
  Trainer trainer_;
  math::PqGeometry g_;
  std::vector<float> codebooks_;  // (m, ksub, dsub)
  std::vector<float> rotation_;   // opq: (g_.dim, dim_)
};

// ---- rq ---------------------------------------------------------------------------------

// Residual quantizer: m codebooks of ksub full-dimension vectors; a row
// decodes to the sum of one vector from each. FAISS trains the codebooks
// greedily, level by level, with a beam of `train_beam`; edo then refines
// them (`refine` rounds of: encode the sample, then re-fit every codebook to
// the residual it sees with the others fixed, two sweeps). Encoding is
// edo's own beam search of width `beam` (rq_encode, CPU or GPU), and so is
// decoding: files decode without FAISS.
class RqCodec final : public Codec, public AdcCodec {
 public:
  RqCodec(size_t dim, uint32_t m, uint32_t nbits, uint32_t beam, uint32_t train_beam, uint32_t refine)
      : dim_(dim),
        m_(m),
        nbits_(nbits),
        ksub_(1u << nbits),
        beam_(beam),
        train_beam_(train_beam),
        refine_(refine),
        code_size_((m * nbits + 7) / 8) {}

  std::string spec() const override {
    return fmt::format("rq:m={},nbits={},beam={},train_beam={},refine={}", m_, nbits_, beam_, train_beam_, refine_);
  }
  size_t dim() const override { return dim_; }
  size_t code_size() const override { return code_size_; }
  bool needs_training() const override { return true; }
  bool is_trained() const override { return !codebooks_.empty(); }
  const AdcCodec* adc() const override { return this; }

  void train(const float* x, size_t n, uint64_t seed) override {
    check_training_rows(spec(), n, ksub_);
    EncodeOptions opt;
    opt.input = "training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    // Callers name the input's rows first; this keeps FAISS from ever
    // asserting on sums that overflow, whoever calls.
    opt.allow_underflow = true;
    check_trainable_norms(x, n, dim_, spec(), opt);
    faiss::ResidualQuantizer rq(dim_, m_, nbits_);
    rq.max_beam_size = static_cast<int>(train_beam_);
    rq.verbose = false;
    configure_clustering(rq.cp, seed);
    rq.train(n, x);
    codebooks_ = rq.codebooks;
    std::vector<uint8_t> codes(n * code_size_);
    for (uint32_t round = 0; round < refine_; ++round) {
      rq_encode(shape(), codebooks_.data(), x, n, codes.data());
      refit_codebooks(x, n, codes.data(), 2);
    }
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    require_device(opt.device);
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    rq_encode(shape(), codebooks_.data(), x, n, codes, opt.device);
  }

  void decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const override {
    require_trained();
    require_device(opt.device);
#pragma omp parallel for schedule(static) if (n > 4096)
    for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
      const size_t r = static_cast<size_t>(ri);
      decode_row(codes + r * code_size_, x + r * dim_);
    }
  }

  std::vector<NamedBlob> state() const override {
    require_trained();
    return {{"rq.codebooks", {m_, ksub_, dim_}, codebooks_}};
  }

  void load_state(const std::vector<NamedBlob>& blobs) override {
    const std::vector<const NamedBlob*> b = take_blobs(spec(), blobs, {"rq.codebooks"});
    check_blob(spec(), *b[0], {m_, ksub_, dim_});
    codebooks_ = b[0]->values;
  }

  size_t adc_table_size() const override { return static_cast<size_t>(m_) * ksub_; }

  void adc_tables(const float* queries, size_t nq, float* tables) const override {
    require_trained();
#pragma omp parallel for schedule(static) if (parallel_worth(nq * adc_table_size()))
    for (int64_t qi = 0; qi < static_cast<int64_t>(nq); ++qi) {
      const float* q = queries + static_cast<size_t>(qi) * dim_;
      float* t = tables + static_cast<size_t>(qi) * adc_table_size();
      for (size_t e = 0; e < adc_table_size(); ++e) {
        const float* c = codebooks_.data() + e * dim_;
        float s = 0;
        for (size_t i = 0; i < dim_; ++i) s = std::fma(q[i], c[i], s);
        t[e] = s;
      }
    }
  }

  void adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const override {
    for (size_t r = 0; r < n; ++r) {
      const uint8_t* code = codes + r * code_size_;
      float s = 0;
      for (uint32_t j = 0; j < m_; ++j) s += table[static_cast<size_t>(j) * ksub_ + math::pq_get_code(code, j, nbits_)];
      ip[r] = s;
    }
  }

 private:
  void require_trained() const {
    if (codebooks_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
  }

  RqShape shape() const { return {static_cast<uint32_t>(dim_), m_, nbits_, beam_}; }

  const float* codeword(uint32_t j, uint32_t c) const {
    return codebooks_.data() + (static_cast<size_t>(j) * ksub_ + c) * dim_;
  }

  void decode_row(const uint8_t* code, float* x) const {
    const float* c0 = codeword(0, math::pq_get_code(code, 0, nbits_));
    for (size_t i = 0; i < dim_; ++i) x[i] = c0[i];
    for (uint32_t j = 1; j < m_; ++j) {
      const float* c = codeword(j, math::pq_get_code(code, j, nbits_));
      for (size_t i = 0; i < dim_; ++i) x[i] += c[i];
    }
  }

  // Block coordinate descent on |X - sum_j C_j[code_j]|^2 with the codes
  // fixed: codebook j becomes the mean residual of each of its codes' rows
  // with the other codebooks' contributions removed (the exact minimiser for
  // C_j given the rest). Sums run in row order in double, so the result does
  // not depend on threads. A code no row uses keeps its vector.
  void refit_codebooks(const float* x, size_t n, const uint8_t* codes, int sweeps) {
    std::vector<float> residual(n * dim_);
    std::vector<uint32_t> unpacked(n * m_);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t j = 0; j < m_; ++j) unpacked[r * m_ + j] = math::pq_get_code(codes + r * code_size_, j, nbits_);
      decode_row(codes + r * code_size_, residual.data() + r * dim_);
      for (size_t i = 0; i < dim_; ++i) residual[r * dim_ + i] = x[r * dim_ + i] - residual[r * dim_ + i];
    }
    std::vector<double> sums(static_cast<size_t>(ksub_) * dim_);
    std::vector<size_t> counts(ksub_);
    for (int sweep = 0; sweep < sweeps; ++sweep) {
      for (uint32_t j = 0; j < m_; ++j) {
        std::fill(sums.begin(), sums.end(), 0.0);
        std::fill(counts.begin(), counts.end(), 0);
        for (size_t r = 0; r < n; ++r) {
          const uint32_t c = unpacked[r * m_ + j];
          const float* cw = codeword(j, c);
          ++counts[c];
          for (size_t i = 0; i < dim_; ++i) sums[c * dim_ + i] += static_cast<double>(residual[r * dim_ + i]) + cw[i];
        }
        std::vector<float> old(codeword(j, 0), codeword(j, 0) + static_cast<size_t>(ksub_) * dim_);
        float* cb = codebooks_.data() + static_cast<size_t>(j) * ksub_ * dim_;
        for (uint32_t c = 0; c < ksub_; ++c) {
          if (counts[c] == 0) continue;
          for (size_t i = 0; i < dim_; ++i)
            cb[c * dim_ + i] = static_cast<float>(sums[c * dim_ + i] / static_cast<double>(counts[c]));
        }
        for (size_t r = 0; r < n; ++r) {
          const uint32_t c = unpacked[r * m_ + j];
          for (size_t i = 0; i < dim_; ++i) residual[r * dim_ + i] += old[c * dim_ + i] - cb[c * dim_ + i];
        }
      }
    }
  }

  size_t dim_;
  uint32_t m_, nbits_, ksub_, beam_, train_beam_, refine_;
  size_t code_size_;
  std::vector<float> codebooks_;  // (m, ksub, dim)
};

// ---- factories -----------------------------------------------------------------------------

uint32_t read_m(const StageParams& p, const SpecStage& stage, size_t dim) {
  const std::string* m = p.get("m");
  if (!m) EDO_USAGE_FAIL("codec '{}': needs m=M, the number of sub-codes", stage.name);
  const size_t v = p.get_size(*m, "m", 4096);
  if (v > dim) {
    EDO_USAGE_FAIL("codec '{}': m={} is more sub-spaces than the {} input dimensions (use m <= {})", stage.name, v, dim,
                   dim);
  }
  return static_cast<uint32_t>(v);
}

uint32_t read_nbits(const StageParams& p, const SpecStage& stage) {
  const std::string* b = p.get("nbits");
  if (!b) return 8;
  const size_t v = p.get_size(*b, "nbits", 64);
  if (v < kMinBits || v > kMaxBits) {
    EDO_USAGE_FAIL("codec '{}': nbits={} is out of range (4 to 8 bits per sub-code)", stage.name, v);
  }
  return static_cast<uint32_t>(v);
}

}  // namespace

std::unique_ptr<Codec> make_pq(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  const bool rotate = stage.name == "opq";
  const char* grammar = rotate ? "opq:m=M[,nbits=B][,train=faiss|edo]" : "pq:m=M[,nbits=B][,train=faiss|edo]";
  StageParams p(stage, grammar, false, {"m", "nbits", "train"});
  const uint32_t m = read_m(p, stage, dim);
  const uint32_t nbits = read_nbits(p, stage);
  Trainer trainer = Trainer::faiss;
  if (const std::string* t = p.get("train")) {
    if (*t == "edo") {
      trainer = Trainer::edo;
    } else if (*t != "faiss") {
      EDO_USAGE_FAIL("codec '{}': train={} is not 'faiss' or 'edo' (expected {})", stage.name, *t, grammar);
    }
  }
  if (rotate && static_cast<uint64_t>(m) * ((dim + m - 1) / m) > kMaxCodecDim) {
    EDO_USAGE_FAIL("codec 'opq': dimension {} is too large", dim);
  }
  return std::make_unique<PqCodec>(rotate, dim, m, nbits, trainer);
}

std::unique_ptr<Codec> make_rq(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  const char* grammar = "rq:m=M[,nbits=B][,beam=W][,train_beam=T][,refine=R]";
  StageParams p(stage, grammar, false, {"m", "nbits", "beam", "train_beam", "refine"});
  const uint32_t m = static_cast<uint32_t>(p.get("m") ? p.get_size(*p.get("m"), "m", 64) : 0);
  if (m == 0) EDO_USAGE_FAIL("codec 'rq': needs m=M, the number of codebooks (expected {})", grammar);
  const uint32_t nbits = read_nbits(p, stage);
  const uint32_t beam = static_cast<uint32_t>(p.get("beam") ? p.get_size(*p.get("beam"), "beam", 256) : kRqDefaultBeam);
  const uint32_t train_beam = p.get("train_beam")
                                  ? static_cast<uint32_t>(p.get_size(*p.get("train_beam"), "train_beam", 256))
                                  : std::min(beam, kRqDefaultTrainBeam);
  uint32_t refine = kRqDefaultRefine;
  if (const std::string* r = p.get("refine"))
    refine = *r == "0" ? 0 : static_cast<uint32_t>(p.get_size(*r, "refine", 50));
  return std::make_unique<RqCodec>(dim, m, nbits, beam, train_beam, refine);
}

}  // namespace edo::detail
