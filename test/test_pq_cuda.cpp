// SPDX-License-Identifier: Apache-2.0
// GPU PQ and RQ paths must give the CPU's codes, vectors and k-means bits. Skips
// (passes with a message) when no GPU is present.
#include "test_codecs_util.hpp"

#include <edo/make_codec.hpp>
#include <edo/pq.hpp>

using namespace edo;
using edo::test::Matrix;
using edo::test::skip_without_gpu;

TEST_CASE("pq cuda: GPU encode, decode and codec paths equal the CPU") {
  if (skip_without_gpu()) return;
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 5000);
  for (const auto& [data, spec] :
       std::vector<std::pair<const Matrix*, std::string>>{{&glove, "pq:m=10"},
                                                          {&glove, "pq:m=12,nbits=5"},
                                                          {&glove, "pq:m=25,nbits=4"},
                                                          {&glove, "opq:m=10,nbits=6"},
                                                          {&glove, "pca:20,pq:m=7,nbits=7"},
                                                          {&bigann, "pq:m=16"},
                                                          {&bigann, "pq:m=32,nbits=6"},
                                                          {&glove, "rq:m=6,nbits=6"},
                                                          {&bigann, "rq:m=8,nbits=8,beam=4,refine=1"}}) {
    CAPTURE(spec);
    auto codec = make_codec(spec, data->dim);
    codec->train(data->values.data(), data->rows, 5);
    EncodeOptions cpu, gpu;
    gpu.device = Device::cuda;
    const auto cpu_codes = test::encode_all(*codec, *data, cpu);
    const auto gpu_codes = test::encode_all(*codec, *data, gpu);
    CHECK(cpu_codes == gpu_codes);
    DecodeOptions gpu_dec;
    gpu_dec.device = Device::cuda;
    CHECK(test::same_bits(test::decode_all(*codec, cpu_codes, data->rows),
                          test::decode_all(*codec, cpu_codes, data->rows, gpu_dec)));
  }
}

TEST_CASE("pq cuda: k-means with the GPU assignment step gives the CPU's centroids") {
  if (skip_without_gpu()) return;
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  const math::PqGeometry g = math::pq_geometry(50, 10, 8);
  KmeansOptions cpu, gpu;
  cpu.seed = gpu.seed = 9;
  cpu.iterations = gpu.iterations = 15;
  gpu.device = Device::cuda;
  CHECK(test::same_bits(train_pq_codebooks(g, glove.values.data(), glove.rows, cpu),
                        train_pq_codebooks(g, glove.values.data(), glove.rows, gpu)));
  const Matrix bigann = test::load_shared("bigann10k_base.npy");
  std::vector<float> centroids(bigann.values.begin(), bigann.values.begin() + 1024 * 128);
  std::vector<uint32_t> a(bigann.rows), b(bigann.rows);
  nearest_centroids(bigann.values.data(), bigann.rows, 128, centroids.data(), 1024, a.data(), Device::cpu);
  nearest_centroids(bigann.values.data(), bigann.rows, 128, centroids.data(), 1024, b.data(), Device::cuda);
  CHECK(a == b);
}

TEST_CASE("pq cuda: training on the GPU (FAISS's k-means through edo's assignment, rq refits) gives the CPU's state") {
  if (skip_without_gpu()) return;
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 4000);
  for (const std::string spec : {"pq:m=10", "pq:m=10,train=edo", "opq:m=10,nbits=6", "rq:m=4,nbits=6"}) {
    CAPTURE(spec);
    auto cpu = make_codec(spec, glove.dim), gpu = make_codec(spec, glove.dim);
    gpu->set_training_context({{}, Device::cuda});
    cpu->train(glove.values.data(), glove.rows, 3);
    gpu->train(glove.values.data(), glove.rows, 3);
    const auto a = cpu->state(), b = gpu->state();
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) CHECK(test::same_bits(a[i].values, b[i].values));
  }
}

TEST_CASE("rq cuda: GPU beam search keeps the reference's beams, ties included") {
  if (skip_without_gpu()) return;
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy", 3000);
  auto codec = make_codec("rq:m=5,nbits=4,beam=2,refine=0", glove.dim);
  codec->train(glove.values.data(), glove.rows, 3);
  const std::vector<float> codebooks = codec->state()[0].values;
  for (uint32_t beam : {1u, 7u, 40u, 256u}) {
    CAPTURE(beam);
    const RqShape s{static_cast<uint32_t>(glove.dim), 5, 4, beam};
    std::vector<uint8_t> ref(glove.rows * math::rq_code_size(s)), gpu(ref.size());
    rq_encode_reference(s, codebooks.data(), glove.values.data(), glove.rows, ref.data());
    rq_encode(s, codebooks.data(), glove.values.data(), glove.rows, gpu.data(), Device::cuda);
    CHECK(gpu == ref);
  }
  const std::vector<float> cb = {1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0};  // equal codewords: ties
  const std::vector<float> rows = {1, 0, 0, 1};
  const RqShape s{2, 2, 2, 3};
  std::vector<uint8_t> ref(2), gpu(2);
  rq_encode_reference(s, cb.data(), rows.data(), 2, ref.data());
  rq_encode(s, cb.data(), rows.data(), 2, gpu.data(), Device::cuda);
  CHECK(gpu == ref);
}
