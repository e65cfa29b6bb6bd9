// SPDX-License-Identifier: Apache-2.0
// Product quantization building blocks shared by the pq, opq and rq codecs
// (docs/FORMAT.md, "Codec payloads: pq, opq, rq"): our own encoder, decoder
// and k-means over FAISS-compatible codebooks, on the CPU or a GPU.
//
// Codebooks are (m, ksub, dsub) float32, row-major, in the geometry of
// pq_math.hpp. Given the same codebooks, every path returns the same codes:
// the CPU narrows candidates with BLAS distance products, then decides among
// the near-best with math::pq_sub_distance (the function the GPU kernel runs
// on every centroid), ties to the lower id.
#pragma once

#include <edo/codec.hpp>
#include <edo/device.hpp>
#include <edo/matrix.hpp>
#include <edo/pq_decode.hpp>
#include <edo/pq_math.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace edo {

// n rows of g.dim floats -> n * g.code_size bytes.
void pq_encode(const math::PqGeometry& g, const float* codebooks, const float* x, size_t n, uint8_t* codes,
               Device device = Device::cpu);

// Rows of g.dim columns rearranged into the padded layout (n x m*dsub), as
// FAISS's ProductQuantizer sees them.
std::vector<float> pq_pad_rows(const math::PqGeometry& g, const float* x, size_t n);

// Nearest of k centroids (k x d) for each of n rows (n x d), by
// math::pq_sub_distance, ties to the lower id: the k-means assignment step.
void nearest_centroids(const float* x, size_t n, size_t d, const float* centroids, size_t k, uint32_t* assign,
                       Device device = Device::cpu);

// FAISS's exhaustive L2 search (IndexFlatL2::search: |x|^2 + |y|^2 - 2 x.y
// from one distance product, negatives set to zero, the k smallest by its
// heap, the first of equal distances on top), the same labels and distances
// bit for bit, with each block of rows multiplied, measured and selected in
// one of edo's threads. FAISS's own k-means and greedy rq levels search
// through it (test "pq: flat_l2_knn is IndexFlatL2's search").
void flat_l2_knn(const float* x, size_t n, const float* y, size_t ny, size_t d, size_t k, float* distances,
                 int64_t* labels);

// Whether narrow sub-spaces (width 16 or less) may be assigned with AVX-512
// where the CPU has it (the default); tests turn it off to check the AVX2
// path gives the same answer on such a CPU.
void set_pq_avx512(bool allowed);

struct KmeansOptions {
  size_t iterations = 25;
  uint64_t seed = 0;
  Device device = Device::cpu;  // where the assignment step runs
};

// Lloyd's k-means of n rows (n x d) into k centroids (k x d): k-means++
// seeding from `seed`, assignment by nearest_centroids, update by sums in
// row order (double), so the result is the same bits on the CPU and a GPU
// and for any thread count. An empty cluster takes the row farthest from
// its centroid (lowest row id on ties), so duplicate-heavy data never leaves
// a NaN or an unused centroid while distinct rows remain. Needs n >= k.
std::vector<float> kmeans(const float* x, size_t n, size_t d, size_t k, const KmeansOptions& opt);

// Per-sub-space k-means over the padded rows: an edo-trained codebook
// (m, ksub, dsub) for the geometry. Needs n >= g.ksub.
std::vector<float> train_pq_codebooks(const math::PqGeometry& g, const float* x, size_t n, const KmeansOptions& opt);

// ---- residual quantizer encoding ----------------------------------------------------

using math::RqShape;

// Beam-search encode (math::rq_ranks_before and the comment above it in
// pq_math.hpp): n rows of s.dim floats -> n rows of ceil(m * nbits / 8)
// bytes, given codebooks (m, ksub, dim); x must be finite (the codec checks
// it). The CPU narrows each level's
// candidates with BLAS distance products and scores the near-best exactly;
// the GPU scores every candidate exactly; both keep the same beams, so the
// codes are the same bytes on either device and for any thread count.
void rq_encode(const RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes,
               Device device = Device::cpu);
// The plain reference the fast paths are tested against: every candidate
// scored exactly, each level's beam by a full sort.
void rq_encode_reference(const RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes);

// ---- asymmetric distance search ------------------------------------------------------

// Exact k-NN of full-precision queries over PQ-family codes, scored through
// per-query inner-product lookup tables (AdcCodec) and the decoded rows'
// squared norms. Same ranking rules, score definitions and -1/NaN padding as
// knn.hpp; rows are added in blocks, in order.
class AdcSearch {
 public:
  // `codec` must offer adc() (usage error otherwise).
  AdcSearch(const Codec& codec, MatrixView queries, const KnnOptions& opts);
  // `codes`: count rows of the codec's code_size; `decoded`: the same rows
  // decoded (count x dim), for their norms.
  void add(const uint8_t* codes, const float* decoded, uint64_t count);
  KnnResult finish();

 private:
  const AdcCodec& adc_;
  KnnOptions opts_;
  uint64_t nq_, dim_, next_row_ = 0;
  std::vector<float> tables_, query_norms_;
  std::vector<std::vector<std::pair<float, int64_t>>> heaps_;  // per query: (key, id), worst on top
  std::vector<float> ip_;
};

}  // namespace edo
