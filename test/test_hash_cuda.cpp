// SPDX-License-Identifier: Apache-2.0
// Hashed tier fits on the GPU (kernels/hash_fit.cu) must be the CPU's fits
// bit for bit: the solver's products use hash_normal_row() and
// hash_normal_add() in the same order on both. The GPU half skips (passes
// with a message) when no GPU is present.
#include "test_util.hpp"

#include <edo/device.hpp>
#include <edo/hash.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

using edo::test::skip_without_gpu;

namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("hash_normal_row and hash_normal_add are fused multiply-adds in term order") {
  // Values where a separate multiply and add round differently from one fma.
  const float e = std::ldexp(1.0f, -12);
  const float coef[2] = {1.0f + e, 1.0f - e}, v[4] = {0.5f, 1.0f + e, -1.0f, 3.0f};
  const uint64_t slot[2] = {0, 1};
  // dim 2: column 1 of slots 0 and 1 is v[1] and v[3].
  const float expect = std::fma(coef[1], v[3], std::fma(coef[0], v[1], 0.0f)) * 2.0f;
  CHECK(edo::hash_normal_row(coef, slot, 2, 2.0f, v, 2, 1) == expect);
  const float sum = 1.0f;
  CHECK(edo::hash_normal_add(sum, coef[0], v[1]) == std::fma(coef[0], v[1], sum));
}

TEST_CASE("hashed fits on the GPU are the CPU's bits") {
  if (skip_without_gpu()) return;
  edo::test::TempDir dir;
  const uint64_t rows = 3000, dim = 40;
  edo::Rng rng(41);
  std::vector<float> x(rows * dim);
  for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
  w->write_f32(x.data(), rows);
  w->commit();
  std::vector<double> freq(rows);
  for (uint64_t r = 0; r < rows; ++r) freq[r] = 1000.0 / static_cast<double>(r + 1);
  for (const char* spec : {"hash:buckets=300,k=2", "hash:buckets=200,k=3,weights=1", "qr:buckets=60"}) {
    for (const uint64_t block_rows : {uint64_t{0}, uint64_t{257}}) {
      CAPTURE(spec);
      CAPTURE(block_rows);
      std::string bytes[2];
      for (const edo::Device device : {edo::Device::cpu, edo::Device::cuda}) {
        auto table = edo::io::open_table(dir.file("t.npy"));
        edo::PackOptions opt;
        opt.tiers.push_back(edo::parse_tier_spec(std::string("hashed:rest:") + spec));
        opt.freq = freq;
        opt.device = device;
        opt.hash_fit.gpu_block_rows = block_rows;
        opt.hash_fit.allow_partial = true;
        const std::string path = dir.file(device == edo::Device::cpu ? "cpu.edo" : "gpu.edo");
        edo::pack_to_edo(*table, path, opt);
        bytes[device == edo::Device::cpu ? 0 : 1] = file_bytes(path);
      }
      CHECK(bytes[0].size() > 0);
      CHECK(bytes[0] == bytes[1]);
    }
  }
}
