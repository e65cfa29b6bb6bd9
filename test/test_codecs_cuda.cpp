// SPDX-License-Identifier: Apache-2.0
// GPU results must equal the CPU reference bit for bit. Skips (passes with a
// message) when no GPU is present.
#include <edo/make_codec.hpp>
#include "test_codecs_util.hpp"

using namespace edo;
using edo::test::Matrix;
using edo::test::skip_without_gpu;

namespace {

void check_cuda_matches_cpu(const Matrix& m, const std::string& spec) {
  CAPTURE(spec);
  CAPTURE(m.dim);
  auto codec = make_codec(spec, m.dim);
  codec->train(m.values.data(), m.rows, 11);
  EncodeOptions cpu, gpu;
  cpu.impl = Impl::reference;
  gpu.device = Device::cuda;
  const auto cpu_codes = test::encode_all(*codec, m, cpu);
  const auto gpu_codes = test::encode_all(*codec, m, gpu);
  CHECK(cpu_codes == gpu_codes);
  DecodeOptions cpu_dec, gpu_dec;
  cpu_dec.impl = Impl::reference;
  gpu_dec.device = Device::cuda;
  CHECK(test::same_bits(test::decode_all(*codec, cpu_codes, m.rows, cpu_dec),
                        test::decode_all(*codec, cpu_codes, m.rows, gpu_dec)));
}

}  // namespace

TEST_CASE("codecs cuda: GPU encode/decode is byte-identical to the CPU reference") {
  if (skip_without_gpu()) return;
  const Matrix glove = test::load_shared("glove.6B.50d.10k.npy");
  const Matrix odd = test::first_columns(glove, 37);
  const Matrix bigann = test::load_shared("bigann10k_base.npy", 3000);
  std::vector<std::string> specs = test::scalar_specs();
  specs.insert(specs.end(), {"pca:20,int8", "pca:37,fp16", "pca:8,int4:group=3"});
  for (const std::string& spec : specs) {
    check_cuda_matches_cpu(glove, spec);
    check_cuda_matches_cpu(odd, spec);
  }
  for (const std::string& spec : test::scalar_specs()) check_cuda_matches_cpu(bigann, spec);
}

TEST_CASE("codecs cuda: GPU keeps NaN/Inf like the CPU for fp16/bf16") {
  if (skip_without_gpu()) return;
  Matrix m;
  m.rows = 3;
  m.dim = 5;
  m.values = {1.f, NAN, -INFINITY, 70000.f, -0.f, 0x1p-20f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 9.f, 1e-40f};
  EncodeOptions cpu, gpu;
  cpu.allow_nonfinite = gpu.allow_nonfinite = true;
  gpu.device = Device::cuda;
  for (const char* spec : {"fp16", "bf16", "fp32"}) {
    CAPTURE(spec);
    auto c = make_codec(spec, 5);
    CHECK(test::encode_all(*c, m, cpu) == test::encode_all(*c, m, gpu));
  }
}
