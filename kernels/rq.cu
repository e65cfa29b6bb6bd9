// SPDX-License-Identifier: Apache-2.0
// Residual-quantizer beam search on the GPU: one thread block per row, every
// candidate of a level scored exactly with math::pq_sub_distance (the
// function the CPU decides with), the next beam picked by block-wide
// (score, id) minimum searches. The same beams as the CPU encoder, so the
// same codes.
#include <edo/cuda/grid.cuh>
#include <edo/cuda/rq.cuh>

namespace edo::cuda {
namespace {

constexpr uint32_t kNone = 0xffffffffu;

struct Slot {       // one block's scratch
  float* residual;  // 2 x beam x dim: current and next beams
  uint8_t* path;    // 2 x beam x m: codeword ids chosen so far
  double* score;    // beam x ksub candidate scores
  uint8_t* taken;   // beam x ksub: already in the next beam
};

__host__ __device__ size_t slot_bytes(const math::RqShape& s) {
  const size_t ksub = size_t{1} << s.nbits;
  const size_t bytes = 2 * size_t{s.beam} * s.dim * sizeof(float) + size_t{s.beam} * ksub * sizeof(double) +
                       size_t{s.beam} * ksub + 2 * size_t{s.beam} * s.m;
  return (bytes + 15) / 16 * 16;
}

__device__ Slot slot_of(const math::RqShape& s, void* scratch, size_t block) {
  const size_t ksub = size_t{1} << s.nbits;
  auto* base = static_cast<uint8_t*>(scratch) + block * slot_bytes(s);
  Slot sl;
  sl.score = reinterpret_cast<double*>(base);
  sl.residual = reinterpret_cast<float*>(base + size_t{s.beam} * ksub * sizeof(double));
  sl.taken = reinterpret_cast<uint8_t*>(sl.residual + 2 * size_t{s.beam} * s.dim);
  sl.path = sl.taken + size_t{s.beam} * ksub;
  return sl;
}

__global__ void rq_encode_kernel(math::RqShape s, const float* __restrict__ codebooks, const float* __restrict__ x,
                                 size_t n, uint8_t* __restrict__ codes, void* scratch) {
  __shared__ double best_score[kThreads];
  __shared__ uint32_t best_id[kThreads];
  __shared__ uint32_t chosen[math::kRqMaxBeam];
  const uint32_t ksub = 1u << s.nbits, dim = s.dim, tid = threadIdx.x;
  const Slot sl = slot_of(s, scratch, blockIdx.x);
  const uint32_t code_size = math::rq_code_size(s);
  for (size_t row = blockIdx.x; row < n; row += gridDim.x) {
    float* res = sl.residual;
    float* res_next = sl.residual + size_t{s.beam} * dim;
    uint8_t* path = sl.path;
    uint8_t* path_next = sl.path + size_t{s.beam} * s.m;
    for (uint32_t i = tid; i < dim; i += blockDim.x) res[i] = x[row * dim + i];
    for (uint32_t i = tid; i < s.m; i += blockDim.x) path[i] = 0;
    __syncthreads();
    uint32_t cur = 1;
    for (uint32_t level = 0; level < s.m; ++level) {
      const uint32_t next = math::rq_beams_after(level, ksub, s.beam);
      const float* cw = codebooks + size_t{level} * ksub * dim;
      const uint32_t count = cur * ksub;
      for (uint32_t i = tid; i < count; i += blockDim.x) {
        sl.score[i] = math::pq_sub_distance(res + size_t{i / ksub} * dim, cw + size_t{i % ksub} * dim, dim);
        sl.taken[i] = 0;
      }
      __syncthreads();
      for (uint32_t t = 0; t < next; ++t) {
        double bs = 0;
        uint32_t bi = kNone;
        for (uint32_t i = tid; i < count; i += blockDim.x) {
          if (!sl.taken[i] && (bi == kNone || math::rq_ranks_before(sl.score[i], i, bs, bi))) {
            bs = sl.score[i];
            bi = i;
          }
        }
        best_score[tid] = bs;
        best_id[tid] = bi;
        __syncthreads();
        for (uint32_t half = blockDim.x / 2; half > 0; half /= 2) {
          if (tid < half) {
            const uint32_t oi = best_id[tid + half];
            if (oi != kNone && (best_id[tid] == kNone ||
                                math::rq_ranks_before(best_score[tid + half], oi, best_score[tid], best_id[tid]))) {
              best_score[tid] = best_score[tid + half];
              best_id[tid] = oi;
            }
          }
          __syncthreads();
        }
        if (tid == 0) {
          chosen[t] = best_id[0];
          sl.taken[best_id[0]] = 1;
        }
        __syncthreads();
      }
      for (uint32_t e = tid; e < next * dim; e += blockDim.x) {
        const uint32_t t = e / dim, i = e % dim, id = chosen[t];
        res_next[e] = res[size_t{id / ksub} * dim + i] - cw[size_t{id % ksub} * dim + i];
      }
      for (uint32_t e = tid; e < next * s.m; e += blockDim.x) {
        const uint32_t t = e / s.m, l = e % s.m, id = chosen[t];
        path_next[e] = l == level ? static_cast<uint8_t>(id % ksub) : path[size_t{id / ksub} * s.m + l];
      }
      __syncthreads();
      float* rt = res;
      res = res_next;
      res_next = rt;
      uint8_t* pt = path;
      path = path_next;
      path_next = pt;
      cur = next;
    }
    if (tid == 0) {
      uint8_t* out = codes + row * code_size;
      for (uint32_t b = 0; b < code_size; ++b) out[b] = 0;
      for (uint32_t l = 0; l < s.m; ++l) math::pq_put_code(out, l, s.nbits, path[l]);
    }
    __syncthreads();
  }
}

}  // namespace

size_t rq_scratch_bytes(const math::RqShape& s, uint32_t blocks) { return slot_bytes(s) * blocks; }

void rq_encode(const math::RqShape& s, const float* codebooks, const float* x, size_t n, uint8_t* codes, void* scratch,
               uint32_t blocks, cudaStream_t stream) {
  if (n == 0 || blocks == 0) return;
  rq_encode_kernel<<<blocks, kThreads, 0, stream>>>(s, codebooks, x, n, codes, scratch);
}

}  // namespace edo::cuda
