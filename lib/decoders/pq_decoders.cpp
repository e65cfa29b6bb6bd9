// SPDX-License-Identifier: Apache-2.0
// The decoding half of pq, opq and rq (pq_codecs.hpp): no FAISS, no BLAS.
#include "pq_codecs.hpp"

#include <edo/error.hpp>
#include <edo/float16.hpp>
#include <edo/parallel.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/pq.cuh>
#endif

#ifdef __AVX2__
#include <immintrin.h>
#endif

#include <cmath>
#include <cstring>
#include <utility>

namespace edo {

void pq_decode_row(const math::PqGeometry& g, const float* codebooks, const uint8_t* code, float* x) {
  // The geometry in locals, sub-spaces walked in order: pq_sub_begin and
  // pq_sub_width's divisions, redone a sub-space (the copies may alias g),
  // took most of a row's time.
  const uint32_t m = g.m, nbits = g.nbits, ksub = g.ksub, dsub = g.dsub;
  const uint32_t base = g.dim / m, extra = g.dim % m;
  float* out = x;
  for (uint32_t j = 0; j < m; ++j) {
    const uint32_t c = math::pq_get_code(code, j, nbits);
    const float* cent = codebooks + (static_cast<size_t>(j) * ksub + c) * dsub;
    const uint32_t w = base + (j < extra ? 1u : 0u);  // math::pq_sub_width
    // The usual widths as copies of a constant size (moves, where a copy of
    // a width known only now was a call to the library's memmove a centroid).
    switch (w) {
      case 2:
        std::memcpy(out, cent, 2 * sizeof(float));
        break;
      case 4:
        std::memcpy(out, cent, 4 * sizeof(float));
        break;
      case 8:
        std::memcpy(out, cent, 8 * sizeof(float));
        break;
      case 16:
        std::memcpy(out, cent, 16 * sizeof(float));
        break;
      default:
        std::memcpy(out, cent, w * sizeof(float));
    }
    out += w;
  }
}

void pq_decode(const math::PqGeometry& g, const float* codebooks, const uint8_t* codes, size_t n, float* x,
               Device device) {
  if (n == 0) return;
  if (device == Device::cuda) {
    require_device(device);
#ifdef EDO_HAVE_CUDA
    const size_t cb_bytes = static_cast<size_t>(g.m) * g.ksub * g.dsub * sizeof(float);
    DeviceBuffer dc(n * g.code_size), dcb(cb_bytes), dx(n * g.dim * sizeof(float));
    dc.upload(codes, dc.bytes());
    dcb.upload(codebooks, cb_bytes);
    cuda::pq_decode(g, dcb.as<float>(), dc.as<uint8_t>(), n, dx.as<float>());
    check_cuda_launch("pq_decode");
    dx.download(x, dx.bytes());
#endif
    return;
  }
#pragma omp parallel for schedule(static) if (n > 4096)
  for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
    const size_t r = static_cast<size_t>(ri);
    pq_decode_row(g, codebooks, codes + r * g.code_size, x + r * g.dim);
  }
}

}  // namespace edo

namespace edo::detail {

namespace {
constexpr size_t kMinBits = 4, kMaxBits = 8;

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

void decode_only(const std::string& spec, const char* what) {
  EDO_FAIL("{}: this program links the reader library only, which decodes; {} needs edo::edo", spec, what);
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

namespace {

// codebooks=NAME: each storage's spelling in a spec.
constexpr std::pair<StateStorage, const char*> kBookStorages[] = {
    {StateStorage::f32, "fp32"}, {StateStorage::f16, "fp16"}, {StateStorage::i8, "int8"}};

StateStorage read_books(const StageParams& p, const std::string& codec, const char* grammar) {
  const std::string* b = p.get("codebooks");
  if (!b) return StateStorage::f32;
  for (const auto& [storage, name] : kBookStorages)
    if (*b == name) return storage;
  EDO_USAGE_FAIL("codec '{}': codebooks={} is not 'fp32', 'fp16' or 'int8' (expected {})", codec, *b, grammar);
}

// The canonical spec spells out any storage but the default, fp32.
std::string books_suffix(StateStorage s) {
  for (const auto& [storage, name] : kBookStorages)
    if (storage == s && s != StateStorage::f32) return fmt::format(",codebooks={}", name);
  return "";
}

}  // namespace

void store_codebooks(const std::string& spec, StateStorage storage, std::vector<float> values, uint64_t codeword,
                     std::vector<float>& codebooks) {
  if (storage == StateStorage::i8) round_to_int8_exp2(values, codeword);
  if (storage == StateStorage::f16) {
    for (float& v : values) {
      const float h = half_bits_to_float(float_to_half_bits(v));
      if (std::isinf(h) && !std::isinf(v))
        EDO_FAIL("{}: a codeword value ({:g}) is beyond fp16's range (65504): use codebooks=fp32", spec, v);
      v = h;
    }
  }
  codebooks = std::move(values);
}

PqParams parse_pq_params(const SpecStage& stage, size_t dim) {
  PqParams out;
  out.rotate = stage.name == "opq";
  const char* grammar = out.rotate ? "opq:m=M[,nbits=B][,train=faiss|edo][,codebooks=fp32|fp16|int8]"
                                   : "pq:m=M[,nbits=B][,train=faiss|edo][,codebooks=fp32|fp16|int8]";
  StageParams p(stage, grammar, false, {"m", "nbits", "train", "codebooks"});
  out.books = read_books(p, stage.name, grammar);
  out.m = read_m(p, stage, dim);
  out.nbits = read_nbits(p, stage);
  if (const std::string* t = p.get("train")) {
    if (*t == "edo") {
      out.trainer = PqTrainer::edo;
    } else if (*t != "faiss") {
      EDO_USAGE_FAIL("codec '{}': train={} is not 'faiss' or 'edo' (expected {})", stage.name, *t, grammar);
    }
  }
  if (out.rotate && static_cast<uint64_t>(out.m) * ((dim + out.m - 1) / out.m) > kMaxCodecDim) {
    EDO_USAGE_FAIL("codec 'opq': dimension {} is too large", dim);
  }
  return out;
}

RqParams parse_rq_params(const SpecStage& stage) {
  const char* grammar = "rq:m=M[,nbits=B][,beam=W][,train_beam=T][,refine=R][,codebooks=fp32|fp16|int8]";
  StageParams p(stage, grammar, false, {"m", "nbits", "beam", "train_beam", "refine", "codebooks"});
  RqParams out;
  out.books = read_books(p, stage.name, grammar);
  out.m = static_cast<uint32_t>(p.get("m") ? p.get_size(*p.get("m"), "m", math::kRqMaxLevels) : 0);
  if (out.m == 0) EDO_USAGE_FAIL("codec 'rq': needs m=M, the number of codebooks (expected {})", grammar);
  out.nbits = read_nbits(p, stage);
  out.beam =
      static_cast<uint32_t>(p.get("beam") ? p.get_size(*p.get("beam"), "beam", math::kRqMaxBeam) : kRqDefaultBeam);
  out.train_beam = p.get("train_beam")
                       ? static_cast<uint32_t>(p.get_size(*p.get("train_beam"), "train_beam", math::kRqMaxBeam))
                       : std::min(out.beam, kRqDefaultTrainBeam);
  out.refine = kRqDefaultRefine;
  if (const std::string* r = p.get("refine"))
    out.refine = *r == "0" ? 0 : static_cast<uint32_t>(p.get_size(*r, "refine", 50));
  return out;
}

// ---- pq and opq ----------------------------------------------------------------------------

PqDecoder::PqDecoder(size_t dim, const PqParams& p)
    : rotate_(p.rotate), dim_(dim), trainer_(p.trainer), books_(p.books) {
  const uint32_t d = static_cast<uint32_t>(dim);
  g_ = math::pq_geometry(p.rotate ? p.m * ((d + p.m - 1) / p.m) : d, p.m, p.nbits);
}

std::string PqDecoder::spec() const {
  return fmt::format("{}:m={},nbits={}{}{}", rotate_ ? "opq" : "pq", g_.m, g_.nbits,
                     trainer_ == PqTrainer::edo ? ",train=edo" : "", books_suffix(books_));
}

void PqDecoder::train(const float*, size_t, uint64_t) { decode_only(spec(), "training"); }

void PqDecoder::encode(const float*, size_t, uint8_t*, const EncodeOptions&) const { decode_only(spec(), "encoding"); }

void PqDecoder::decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const {
  require_trained();
  require_device(opt.device);
  if (!rotate_) return pq_decode(g_, codebooks_.data(), codes, n, x, opt.device);
  std::vector<float> y(n * g_.dim);
  pq_decode(g_, codebooks_.data(), codes, n, y.data(), opt.device);
  unrotate(y.data(), n, x);
}

// pq rows decoded where they lie, no copies (opq: the default, which rotates a batch).
void PqDecoder::decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n,
                              float* x) const {
  if (rotate_) return Codec::decode_gather(codes, rows, dst, n, x);
  require_trained();
  for (size_t k = 0; k < n; ++k)
    pq_decode_row(g_, codebooks_.data(), codes + rows[k] * g_.code_size, x + dst[k] * dim_);
}

std::optional<PqLayout> PqDecoder::layout() const {
  if (rotate_ || codebooks_.empty()) return std::nullopt;
  return PqLayout{g_, codebooks_.data()};
}

std::vector<NamedBlob> PqDecoder::state() const {
  require_trained();
  std::vector<NamedBlob> out = {{"pq.codebooks", {g_.m, g_.ksub, g_.dsub}, codebooks_, books_}};
  if (rotate_) out.push_back({"opq.rotation", {g_.dim, dim_}, rotation_});
  return out;
}

void PqDecoder::load_state(const std::vector<NamedBlob>& blobs) {
  const std::string s = spec();
  std::vector<const NamedBlob*> b =
      rotate_ ? take_blobs(s, blobs, {"pq.codebooks", "opq.rotation"}) : take_blobs(s, blobs, {"pq.codebooks"});
  check_blob(s, *b[0], {g_.m, g_.ksub, g_.dsub});
  if (rotate_) {
    check_blob(s, *b[1], {g_.dim, dim_});
    rotation_ = b[1]->values;
  }
  store_codebooks(s, books_, b[0]->values, g_.dsub, codebooks_);
}

void PqDecoder::adc_tables(const float* queries, size_t nq, float* tables) const {
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

void PqDecoder::adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const {
  for (size_t r = 0; r < n; ++r) {
    const uint8_t* code = codes + r * g_.code_size;
    float s = 0;
    for (uint32_t j = 0; j < g_.m; ++j)
      s += table[static_cast<size_t>(j) * g_.ksub + math::pq_get_code(code, j, g_.nbits)];
    ip[r] = s;
  }
}

void PqDecoder::require_trained() const {
  if (codebooks_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
}

// y (n x g_.dim) = x A^T, each output a fixed-order fma chain.
// y[i] = sum_j A[i][j] x[j], one fma a step in j order (the definition
// every path follows). The scalar form is one long dependency chain an
// output; here 32 outputs advance together, lane i of a register carrying
// output i's chain through A's transpose, so each output gets the same fmas
// in the same order and the same bits, at the core's fma rate instead of
// its fma latency.
void PqDecoder::rotate(const float* x, size_t n, float* y) const {
  const size_t d2 = g_.dim;
  std::vector<float> at(dim_ * d2);  // at[j * d2 + i] = A[i][j]
  for (size_t i = 0; i < d2; ++i)
    for (size_t j = 0; j < dim_; ++j) at[j * d2 + i] = rotation_[i * dim_ + j];
#pragma omp parallel for schedule(static) if (n * d2 * dim_ > 1000000)
  for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
    const float* xr = x + static_cast<size_t>(ri) * dim_;
    float* yr = y + static_cast<size_t>(ri) * d2;
    size_t i = 0;
#ifdef __AVX2__
    for (; i + 32 <= d2; i += 32) {
      __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
      for (size_t j = 0; j < dim_; ++j) {
        const __m256 xv = _mm256_set1_ps(xr[j]);
        const float* col = at.data() + j * d2 + i;
        for (int k = 0; k < 4; ++k) acc[k] = _mm256_fmadd_ps(_mm256_loadu_ps(col + 8 * k), xv, acc[k]);
      }
      for (int k = 0; k < 4; ++k) _mm256_storeu_ps(yr + i + 8 * k, acc[k]);
    }
    for (; i + 8 <= d2; i += 8) {
      __m256 acc = _mm256_setzero_ps();
      for (size_t j = 0; j < dim_; ++j)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(at.data() + j * d2 + i), _mm256_set1_ps(xr[j]), acc);
      _mm256_storeu_ps(yr + i, acc);
    }
#endif
    for (; i < d2; ++i) {
      float s = 0;
      for (size_t j = 0; j < dim_; ++j) s = std::fma(at[j * d2 + i], xr[j], s);
      yr[i] = s;
    }
  }
}

// x (n x dim) = y A: A's columns are orthonormal, so A^T inverts it.
void PqDecoder::unrotate(const float* y, size_t n, float* x) const {
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

// ---- rq ------------------------------------------------------------------------------------

RqDecoder::RqDecoder(size_t dim, const RqParams& p)
    : dim_(dim), p_(p), ksub_(1u << p.nbits), code_size_((p.m * p.nbits + 7) / 8) {}

std::string RqDecoder::spec() const {
  return fmt::format("rq:m={},nbits={},beam={},train_beam={},refine={}{}", p_.m, p_.nbits, p_.beam, p_.train_beam,
                     p_.refine, books_suffix(p_.books));
}

void RqDecoder::train(const float*, size_t, uint64_t) { decode_only(spec(), "training"); }

void RqDecoder::encode(const float*, size_t, uint8_t*, const EncodeOptions&) const { decode_only(spec(), "encoding"); }

void RqDecoder::decode(const uint8_t* codes, size_t n, float* x, const DecodeOptions& opt) const {
  require_trained();
  require_device(opt.device);
#pragma omp parallel for schedule(static) if (n > 4096)
  for (int64_t ri = 0; ri < static_cast<int64_t>(n); ++ri) {
    const size_t r = static_cast<size_t>(ri);
    decode_row(codes + r * code_size_, x + r * dim_);
  }
}

void RqDecoder::decode_gather(const uint8_t* codes, const uint64_t* rows, const uint64_t* dst, size_t n,
                              float* x) const {
  require_trained();
  for (size_t k = 0; k < n; ++k) decode_row(codes + rows[k] * code_size_, x + dst[k] * dim_);
}

std::vector<NamedBlob> RqDecoder::state() const {
  require_trained();
  return {{"rq.codebooks", {p_.m, ksub_, dim_}, codebooks_, p_.books}};
}

void RqDecoder::load_state(const std::vector<NamedBlob>& blobs) {
  const std::vector<const NamedBlob*> b = take_blobs(spec(), blobs, {"rq.codebooks"});
  check_blob(spec(), *b[0], {p_.m, ksub_, dim_});
  store_codebooks(spec(), p_.books, b[0]->values, dim_, codebooks_);
}

void RqDecoder::adc_tables(const float* queries, size_t nq, float* tables) const {
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

void RqDecoder::adc_inner_products(const float* table, const uint8_t* codes, size_t n, float* ip) const {
  for (size_t r = 0; r < n; ++r) {
    const uint8_t* code = codes + r * code_size_;
    float s = 0;
    for (uint32_t j = 0; j < p_.m; ++j)
      s += table[static_cast<size_t>(j) * ksub_ + math::pq_get_code(code, j, p_.nbits)];
    ip[r] = s;
  }
}

void RqDecoder::require_trained() const {
  if (codebooks_.empty()) EDO_FAIL("{}: codec is not trained (train it or load its state first)", spec());
}

void RqDecoder::decode_row(const uint8_t* code, float* x) const {
  const float* c0 = codeword(0, math::pq_get_code(code, 0, p_.nbits));
  for (size_t i = 0; i < dim_; ++i) x[i] = c0[i];
  for (uint32_t j = 1; j < p_.m; ++j) {
    const float* c = codeword(j, math::pq_get_code(code, j, p_.nbits));
    for (size_t i = 0; i < dim_; ++i) x[i] += c[i];
  }
}

std::unique_ptr<Codec> make_pq_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<PqDecoder>(dim, parse_pq_params(stage, dim));
}

std::unique_ptr<Codec> make_rq_decoder(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<RqDecoder>(dim, parse_rq_params(stage));
}

}  // namespace edo::detail

namespace edo {

std::optional<PqLayout> pq_layout(const Codec& codec) {
  if (const auto* pq = dynamic_cast<const detail::PqDecoder*>(&codec)) return pq->layout();
  return std::nullopt;
}

}  // namespace edo
