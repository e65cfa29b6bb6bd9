// SPDX-License-Identifier: Apache-2.0
// pq, opq and rq: codebooks trained with FAISS (or edo's k-means), encoded
// and decoded by edo (pq.hpp), stored as float blobs that decode without
// FAISS. docs/FORMAT.md ("Codec payloads: pq, opq, rq") has the layouts.
#include "pq_codecs.hpp"

#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/pq.hpp>

#include <faiss/impl/ProductQuantizer.h>
#include <faiss/impl/ResidualQuantizer.h>
#include <faiss/utils/random.h>
#include <faiss/utils/utils.h>

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

extern "C" void sgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, float* a, const int* lda,
                        float* s, float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
                        int* info);
extern "C" void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
                        const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork,
                        int* info);

namespace edo::detail {
namespace {

// FAISS's default is 50 outer OPQ iterations; the rotation's gain flattens
// well before (docs/BENCHMARKS.md), at half the training time.
constexpr int kOpqIterations = 25;
// k-means iterations of the inner PQ in OPQ's first round and in each later
// (hot-started) round: OPQMatrix's defaults.
constexpr int kOpqNiterPq0 = 40, kOpqNiterPq = 4;

// Rows the rotation is fitted on (FAISS's default is 65,536). Each outer
// iteration encodes them and multiplies them by the rotation twice, so this
// sets the training time: 16,384 rows train opq:m=96 on a 384-wide table in
// well under half the time of 65,536, for a somewhat higher error there
// (docs/BENCHMARKS.md, "Training time", has today's figure). Samples this small or smaller are used whole, as before;
// the codebooks still train on the whole sample.
constexpr size_t kOpqTrainRows = 16384;

// Rows rq trains on at most: its greedy levels (a full-width k-means and a
// beam search of the rows each) and its refit rounds (a beam-search encode
// of the rows each) all scale with them. A larger sample gives an even
// stride of its rows (they come in table order, so the stride spans the
// table); samples this small or smaller are used whole, as before
// (docs/BENCHMARKS.md, "Training time").
constexpr size_t kRqTrainRows = 16384;

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

// Counts the k-means assignment passes of a training run against the total
// it makes, and reports (pass, the pass's mean squared distance, time left)
// through the codec's training note, at most every few seconds. With
// `passes_per_level` (rq's greedy levels), the level too, and the width a
// progressive-dimension pass measures its error in.
class TrainingMeter {
 public:
  TrainingMeter(std::string what, uint64_t total, const std::function<void(const std::string&)>& note,
                uint64_t passes_per_level = 0, size_t dim = 0)
      : what_(std::move(what)),
        total_(total),
        per_level_(passes_per_level),
        dim_(dim),
        note_(note),
        start_(std::chrono::steady_clock::now()),
        last_(start_) {}

  void pass(double mean_distance, size_t width = 0) {
    ++done_;
    if (!note_ || total_ < 2) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::seconds(3)) return;
    last_ = now;
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const uint64_t shown = std::min(done_, total_ - 1);  // the count is FAISS's: never claim the end early
    const double left = elapsed * static_cast<double>(total_ - shown) / static_cast<double>(shown);
    std::string where = fmt::format("k-means pass {} of {}", shown, total_);
    if (per_level_ > 0)
      where = fmt::format("level {} of {}, {}", (shown - 1) / per_level_ + 1, total_ / per_level_, where);
    std::string error = fmt::format("error {:.4g}", mean_distance);
    if (width > 0 && width < dim_) error += fmt::format(" in the first {} of {} dimensions", width, dim_);
    note_(
        fmt::format("{}: training, {}, {}, {:.0f} s so far, about {:.0f} s left", what_, where, error, elapsed, left));
  }

 private:
  std::string what_;
  uint64_t total_, per_level_;
  size_t dim_;
  uint64_t done_ = 0;
  const std::function<void(const std::string&)>& note_;
  std::chrono::steady_clock::time_point start_, last_;
};

// A FAISS Index over the vectors added to it, searched by edo, each search
// counted by the training meter: FAISS's k-means and greedy rq levels call
// search once a pass.
class MeteredIndex : public faiss::Index {
 public:
  MeteredIndex(idx_t width, TrainingMeter& meter) : faiss::Index(width, faiss::METRIC_L2), meter_(meter) {
    is_trained = true;
  }

  void add(idx_t n, const float* x) override {
    vectors_.insert(vectors_.end(), x, x + static_cast<size_t>(n) * static_cast<size_t>(d));
    ntotal += n;
  }
  void reset() override {
    vectors_.clear();
    ntotal = 0;
  }

 protected:
  std::vector<float> vectors_;
  TrainingMeter& meter_;
};

// edo's exact nearest codeword (nearest_centroids, the lower id on ties),
// for PQ's k-means. On narrow sub-spaces that is several times faster than
// IndexFlatL2's distance products, and float rounding never makes it pick a
// farther codeword.
class ExactAssignIndex final : public MeteredIndex {
 public:
  ExactAssignIndex(size_t width, Device device, TrainingMeter& meter)
      : MeteredIndex(static_cast<idx_t>(width), meter), device_(device) {}

  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* /*params*/) const override {
    if (k != 1 || ntotal == 0) EDO_FAIL("k-means assignment: {} neighbours of {} codewords asked", k, ntotal);
    const auto rows = static_cast<size_t>(n), width = static_cast<size_t>(d);
    std::vector<uint32_t> nearest(rows);
    nearest_centroids(x, rows, width, vectors_.data(), static_cast<size_t>(ntotal), nearest.data(), device_);
    double sum = 0;
    for (size_t r = 0; r < rows; ++r) {
      labels[r] = nearest[r];
      const double dist =
          math::pq_sub_distance(x + r * width, vectors_.data() + nearest[r] * width, static_cast<uint32_t>(width));
      distances[r] = static_cast<float>(dist);
      sum += dist;
    }
    meter_.pass(rows ? sum / static_cast<double>(rows) : 0.0);
  }

 private:
  Device device_;
};

// FAISS's IndexFlatL2, searched by flat_l2_knn (the same labels and
// distances, on one thread pool), for rq's greedy levels: FAISS builds one
// per progressive-dimension k-means step and one for each level's beam
// step, through the factory below.
class PooledFlatL2Index final : public MeteredIndex {
 public:
  using MeteredIndex::MeteredIndex;

  void search(idx_t n, const float* x, idx_t k, float* distances, idx_t* labels,
              const faiss::SearchParameters* /*params*/) const override {
    const auto rows = static_cast<size_t>(n);
    flat_l2_knn(x, rows, vectors_.data(), static_cast<size_t>(ntotal), static_cast<size_t>(d), static_cast<size_t>(k),
                distances, labels);
    double sum = 0;
    for (size_t r = 0; r < rows; ++r) sum += distances[r * static_cast<size_t>(k)];
    meter_.pass(rows ? sum / static_cast<double>(rows) : 0.0, static_cast<size_t>(d));
  }
};

class PooledFlatL2Factory final : public faiss::ProgressiveDimIndexFactory {
 public:
  explicit PooledFlatL2Factory(TrainingMeter& meter) : meter_(meter) {}
  faiss::Index* operator()(int width) override { return new PooledFlatL2Index(width, meter_); }

 private:
  TrainingMeter& meter_;
};

// From this width up, OPQ's SVD is LAPACK's divide-and-conquer sgesdd: at
// 768 wide sgesvd's QR sweeps were a quarter of opq's training, and sgesdd
// is about four times faster there. Narrower tables keep sgesvd, which costs
// them a few seconds at most: on a rank-deficient cross-product the two
// choose different (equally optimal) rotations in its null space, and
// BIGANN (128 wide) lost 0.005 recall@10 with sgesdd at opq:m=32 over four
// seeds (docs/BENCHMARKS.md, "Training time"), while its files stay the
// bytes they were.
constexpr size_t kOpqDivideAndConquerWidth = 512;

// OPQ's rotation, FAISS's OPQMatrix::train step for step (same sample,
// centring, random start, sgemm calls and hot-started inner PQ), with the
// SVD chosen by width (above). Returns A, d_out x d_in row-major, as
// OPQMatrix::A.
std::vector<float> fit_opq_rotation(const float* x_in, size_t n, size_t d_in, size_t d_out, int niter,
                                    faiss::ProductQuantizer& pq, const std::string& spec) {
  const float* x = faiss::fvecs_maybe_subsample(d_in, &n, kOpqTrainRows, x_in);
  const std::unique_ptr<const float[]> subsample(x != x_in ? x : nullptr);
  const size_t d = std::max(d_in, d_out), d2 = d_out;  // rows are padded with zeros to d_out

  std::vector<float> xtrain(n * d);
  {
    std::vector<float> mean(d);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < d_in; ++j) mean[j] += x[i * d_in + j];
    for (size_t j = 0; j < d; ++j) mean[j] /= static_cast<float>(n);
    for (size_t i = 0; i < n; ++i)
      for (size_t j = 0; j < d_in; ++j) xtrain[i * d + j] = x[i * d_in + j] - mean[j];
  }
  std::vector<float> a(d * d);
  faiss::float_randn(a.data(), d * d, 1234);
  faiss::matrix_qr(static_cast<int>(d), static_cast<int>(d), a.data());
  a.resize(d * d2);  // its first d2 columns (column-major, leading dimension d)

  std::vector<float> xproj(d2 * n), recons(d2 * n), xxr(d * d2), u(d * d), vt(d2 * d2), sv(std::min(d, d2));
  std::vector<uint8_t> codes(pq.code_size * n);
  std::vector<int> iwork(8 * std::min(d, d2));
  const int di = static_cast<int>(d), d2i = static_cast<int>(d2), ni = static_cast<int>(n);
  const bool divide_and_conquer = d >= kOpqDivideAndConquerWidth;
  // xxr holds the transpose of X^T recons, so U and V^T come out swapped, as in FAISS.
  const auto svd = [&](float* work, int lwork) {
    int info = 0;
    if (divide_and_conquer) {
      sgesdd_("A", &d2i, &di, xxr.data(), &d2i, sv.data(), vt.data(), &d2i, u.data(), &di, work, &lwork, iwork.data(),
              &info);
    } else {
      sgesvd_("A", "A", &d2i, &di, xxr.data(), &d2i, sv.data(), vt.data(), &d2i, u.data(), &di, work, &lwork, &info);
    }
    if (info != 0) {
      EDO_FAIL("{}: the rotation's SVD failed (LAPACK {} info {})", spec, divide_and_conquer ? "sgesdd" : "sgesvd",
               info);
    }
  };
  float lwork_query = 0;
  svd(&lwork_query, -1);
  const int lwork = static_cast<int>(lwork_query);
  std::vector<float> work(static_cast<size_t>(lwork));
  for (int iter = 0; iter < niter; ++iter) {
    cblas_sgemm(CblasColMajor, CblasTrans, CblasNoTrans, d2i, ni, di, 1.0f, a.data(), di, xtrain.data(), di, 0.0f,
                xproj.data(), d2i);
    pq.cp.max_points_per_centroid = 1000;
    pq.cp.niter = iter == 0 ? kOpqNiterPq0 : kOpqNiterPq;
    pq.train(n, xproj.data());
    pq.compute_codes_with_assign_index(xproj.data(), codes.data(), static_cast<int64_t>(n));
    pq.decode(codes.data(), recons.data(), n);
    cblas_sgemm(CblasColMajor, CblasNoTrans, CblasTrans, d2i, di, ni, 1.0f, recons.data(), d2i, xtrain.data(), di, 0.0f,
                xxr.data(), d2i);
    svd(work.data(), lwork);
    cblas_sgemm(CblasColMajor, CblasTrans, CblasTrans, di, d2i, d2i, 1.0f, u.data(), di, vt.data(), d2i, 0.0f, a.data(),
                di);
    pq.train_type = faiss::ProductQuantizer::Train_hot_start;
  }
  if (d > d_in) {
    for (size_t i = 0; i < d_out; ++i) std::memmove(&a[i * d_in], &a[i * d], sizeof(float) * d_in);
    a.resize(d_in * d_out);
  }
  return a;
}

void check_training_rows(const std::string& spec, size_t n, size_t ksub) {
  if (n < ksub) {
    EDO_FAIL(
        "{}: the training sample has {} rows, fewer than the {} centroids to train (give more rows or a "
        "smaller nbits)",
        spec, n, ksub);
  }
}

// ---- pq and opq: training and encoding over PqDecoder -------------------------------------

class PqCodec final : public PqDecoder {
 public:
  using PqDecoder::PqDecoder;

  void train(const float* x, size_t n, uint64_t seed) override {
    check_training_rows(spec(), n, g_.ksub);
    EncodeOptions opt;
    opt.input = "training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    // Callers name the input's rows first; this keeps FAISS from ever
    // asserting on sums that overflow, whoever calls.
    opt.allow_underflow = true;
    check_trainable_norms(x, n, dim_, spec(), opt);
    // FAISS's assignment passes, a sub-space each: its k-means iterations
    // for the codebooks; OPQ's first round runs niter_pq_0 of them, each
    // later round niter_pq, and every round ends with one pass to encode.
    const faiss::ClusteringParameters clustering;
    const uint64_t passes =
        static_cast<uint64_t>(g_.m) *
        static_cast<uint64_t>((trainer_ == PqTrainer::edo ? 0 : clustering.niter) +
                              (rotate_ ? kOpqNiterPq0 + 1 + (kOpqIterations - 1) * (kOpqNiterPq + 1) : 0));
    TrainingMeter meter(spec(), passes, training_.note);
    std::vector<float> rotated;
    if (rotate_) {
      faiss::ProductQuantizer inner(g_.dim, g_.m, g_.nbits);
      configure_clustering(inner.cp, seed);
      ExactAssignIndex inner_assign(inner.dsub, training_.device, meter);
      inner.assign_index = &inner_assign;
      inner.verbose = false;
      rotation_ = fit_opq_rotation(x, n, dim_, g_.dim, kOpqIterations, inner, spec());
      rotated.resize(n * g_.dim);
      rotate(x, n, rotated.data());
      x = rotated.data();
    }
    if (trainer_ == PqTrainer::edo) {
      KmeansOptions ko;
      ko.seed = seed;
      ko.iterations = 40;
      ko.device = training_.device;
      store_codebooks(spec(), books_, train_pq_codebooks(g_, x, n, ko), g_.dsub, codebooks_);
      return;
    }
    const std::vector<float> padded = pq_pad_rows(g_, x, n);
    faiss::ProductQuantizer pq(static_cast<size_t>(g_.m) * g_.dsub, g_.m, g_.nbits);
    configure_clustering(pq.cp, seed);
    ExactAssignIndex assign(g_.dsub, training_.device, meter);
    pq.assign_index = &assign;
    pq.verbose = false;
    pq.train(n, padded.data());
    store_codebooks(spec(), books_, pq.centroids, g_.dsub, codebooks_);
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
};

// ---- rq -------------------------------------------------------------------------------------

// FAISS trains the codebooks greedily, level by level, with a beam of
// `train_beam`; edo then refines them (`refine` rounds of: encode the
// sample, then re-fit every codebook to the residual it sees with the others
// fixed, two sweeps). Encoding is edo's own beam search of width `beam`
// (rq_encode, CPU or GPU), and decoding RqDecoder's: files decode without FAISS.
class RqCodec final : public RqDecoder {
 public:
  using RqDecoder::RqDecoder;

  void train(const float* x, size_t n, uint64_t seed) override {
    check_training_rows(spec(), n, ksub_);
    EncodeOptions opt;
    opt.input = "training sample";
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    // Callers name the input's rows first; this keeps FAISS from ever
    // asserting on sums that overflow, whoever calls.
    opt.allow_underflow = true;
    check_trainable_norms(x, n, dim_, spec(), opt);
    std::vector<float> subset;
    if (n > kRqTrainRows) {
      subset.resize(kRqTrainRows * dim_);
      for (size_t i = 0; i < kRqTrainRows; ++i)
        std::memcpy(subset.data() + i * dim_, x + (i * n / kRqTrainRows) * dim_, dim_ * sizeof(float));
      x = subset.data();
      n = kRqTrainRows;
    }
    faiss::ResidualQuantizer rq(dim_, p_.m, p_.nbits);
    rq.max_beam_size = static_cast<int>(p_.train_beam);
    // FAISS's lookup tables for its own searches (levels x 2^nbits squared
    // floats: 604 MB at m=48) serve nothing here: edo encodes and decodes.
    rq.train_type |= faiss::ResidualQuantizer::Skip_codebook_tables;
    rq.verbose = false;
    configure_clustering(rq.cp, seed);
    const auto start = std::chrono::steady_clock::now();
    const auto note = [&](const std::string& what) {
      if (!training_.note) return;
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      training_.note(fmt::format("{}: training, {}, {:.0f} s so far", spec(), what, elapsed));
    };
    note(fmt::format("greedy codebooks of {} levels at beam {} (FAISS)", p_.m, p_.train_beam));
    // Each level: progressive_dim_steps k-means of niter passes, then one beam step.
    const uint64_t per_level = static_cast<uint64_t>(rq.cp.progressive_dim_steps) * rq.cp.niter + 1;
    TrainingMeter meter(spec(), uint64_t{p_.m} * per_level, training_.note, per_level, dim_);
    PooledFlatL2Factory pooled(meter);
    rq.assign_index_factory = &pooled;
    rq.train(n, x);
    rq.assign_index_factory = nullptr;
    codebooks_ = rq.codebooks;
    std::vector<uint8_t> codes(n * code_size_);
    for (uint32_t round = 0; round < p_.refine; ++round) {
      note(fmt::format("refit round {} of {}: encoding {} rows at beam {}", round + 1, p_.refine, n, p_.beam));
      rq_encode(shape(), codebooks_.data(), x, n, codes.data(), training_.device);
      refit_codebooks(x, n, codes.data(), 2);
    }
    store_codebooks(spec(), p_.books, std::move(codebooks_), dim_, codebooks_);
  }

  void encode(const float* x, size_t n, uint8_t* codes, const EncodeOptions& opt) const override {
    require_trained();
    require_device(opt.device);
    check_finite(x, n, dim_, 0x7f800000u, spec(), opt, false);
    rq_encode(shape(), codebooks_.data(), x, n, codes, opt.device);
  }

 private:
  // Block coordinate descent on |X - sum_j C_j[code_j]|^2 with the codes
  // fixed: codebook j becomes the mean residual of each of its codes' rows
  // with the other codebooks' contributions removed (the exact minimiser for
  // C_j given the rest). Sums run in row order in double, so the result does
  // not depend on threads. A code no row uses keeps its vector.
  void refit_codebooks(const float* x, size_t n, const uint8_t* codes, int sweeps) {
    std::vector<float> residual(n * dim_);
    std::vector<uint32_t> unpacked(n * p_.m);
    for (size_t r = 0; r < n; ++r) {
      for (uint32_t j = 0; j < p_.m; ++j)
        unpacked[r * p_.m + j] = math::pq_get_code(codes + r * code_size_, j, p_.nbits);
      decode_row(codes + r * code_size_, residual.data() + r * dim_);
      for (size_t i = 0; i < dim_; ++i) residual[r * dim_ + i] = x[r * dim_ + i] - residual[r * dim_ + i];
    }
    std::vector<double> sums(static_cast<size_t>(ksub_) * dim_);
    std::vector<size_t> counts(ksub_);
    for (int sweep = 0; sweep < sweeps; ++sweep) {
      for (uint32_t j = 0; j < p_.m; ++j) {
        std::fill(sums.begin(), sums.end(), 0.0);
        std::fill(counts.begin(), counts.end(), 0);
        for (size_t r = 0; r < n; ++r) {
          const uint32_t c = unpacked[r * p_.m + j];
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
          const uint32_t c = unpacked[r * p_.m + j];
          for (size_t i = 0; i < dim_; ++i) residual[r * dim_ + i] += old[c * dim_ + i] - cb[c * dim_ + i];
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Codec> make_pq(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<PqCodec>(dim, parse_pq_params(stage, dim));
}

std::unique_ptr<Codec> make_rq(const SpecStage& stage, size_t dim, std::unique_ptr<Codec>) {
  return std::make_unique<RqCodec>(dim, parse_rq_params(stage));
}

}  // namespace edo::detail
