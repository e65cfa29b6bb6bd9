// SPDX-License-Identifier: Apache-2.0
// Lossless tiers decoded on the GPU (kernels/lossless.cu) must equal the CPU
// decode bit for bit, and a hostile file must be the same error. Skips
// (passes with a message) when no GPU is present.
#include "test_gpu_decode.hpp"
#include "test_util.hpp"

#include <edo/device.hpp>
#include <edo/float16.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using edo::test::decode;
using edo::test::error_of;
using edo::test::open_on;
using edo::test::same_bits;
using edo::test::skip_without_gpu;

namespace {

struct LosslessFile {
  edo::test::TempDir dir;
  uint64_t rows, dim;
  std::string path = dir.file("l.edo");

  // Gaussian values rounded to bf16, one hot fp32 tier of 10 rows before the lossless one.
  LosslessFile(const std::string& spec, uint64_t d, uint64_t n) : rows(n), dim(d) {
    edo::Rng rng(29);
    std::vector<float> x(rows * dim);
    for (auto& v : x) {
      const double g = std::sqrt(-2.0 * std::log(1.0 - rng.uniform())) * std::cos(6.283185307179586 * rng.uniform());
      v = edo::bits_float(edo::float_bits(static_cast<float>(g)) & 0xffff0000u);
    }
    auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(x.data(), rows);
    w->commit();
    auto table = edo::io::open_table(dir.file("t.npy"));
    edo::PackOptions opt;
    opt.tiers = {edo::parse_tier_spec("hot:rows=10:fp32"), edo::parse_tier_spec("all:rest:" + spec)};
    edo::pack_to_edo(*table, path, opt);
  }
};

}  // namespace

TEST_CASE("lossless cuda: GPU decode matches the CPU and refuses what it refuses (skipped without a GPU)") {
  if (skip_without_gpu()) return;
  // 4,000 wide: three segments of their own code; fp32: three raw bytes a value.
  for (const auto& [spec, dim, rows] :
       std::vector<std::tuple<std::string, uint64_t, uint64_t>>{{"lossless:values=bf16", 20, 300},
                                                                {"lossless:values=fp16", 300, 300},
                                                                {"lossless:values=fp32", 50, 300},
                                                                {"lossless:values=bf16", 4000, 2100}}) {
    CAPTURE(spec);
    CAPTURE(dim);
    const LosslessFile f(spec, dim, rows);
    const edo::Reader cpu = open_on(f.path, edo::Device::cpu, edo::io::Verify::structure),
                      gpu = open_on(f.path, edo::Device::cuda, edo::io::Verify::structure);
    CHECK(same_bits(decode(cpu, 0, rows), decode(gpu, 0, rows)));
    for (const auto& [begin, count] : std::vector<std::pair<uint64_t, uint64_t>>{{11, 1}, {37, 200}, {151, 149}})
      CHECK(same_bits(decode(cpu, begin, count), decode(gpu, begin, count)));
    if (dim != 20) continue;
    // Code bytes that are no row's: the same error from both devices.
    std::string bytes = edo::test::read_bytes(f.path);
    const edo::io::Container c = edo::io::Container::open(f.path);
    for (const auto& s : c.sections())
      if (s.name == "all/codes")
        for (uint64_t k = 0; k < 4; ++k) bytes[s.offset + 40 + k] = static_cast<char>(0xff);
    edo::test::write_bytes(f.dir.file("h.edo"), bytes);
    const edo::Reader hc = open_on(f.dir.file("h.edo"), edo::Device::cpu, edo::io::Verify::structure),
                      hg = open_on(f.dir.file("h.edo"), edo::Device::cuda, edo::io::Verify::structure);
    std::vector<float> all(rows * dim);
    const std::string want = error_of([&] { hc.decode_all(all.data()); });
    CHECK(error_of([&] { hg.decode_all(all.data()); }) == want);
  }
}
