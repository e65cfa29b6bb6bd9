// SPDX-License-Identifier: Apache-2.0
// Sparse tiers decoded on the GPU (kernels/sparse.cu) must equal the CPU
// decode bit for bit, and a hostile file must be the same error. Skips
// (passes with a message) when no GPU is present.
#include "test_gpu_decode.hpp"
#include "test_util.hpp"

#include <edo/device.hpp>
#include <edo/io/container.hpp>
#include <edo/io/table.hpp>
#include <edo/pack.hpp>
#include <edo/random.hpp>
#include <edo/reader.hpp>

#include <cstring>
#include <string>
#include <vector>

using edo::test::decode;
using edo::test::error_of;
using edo::test::open_on;
using edo::test::same_bits;
using edo::test::skip_without_gpu;

namespace {

// A packed file: the `hot` first rows fp32, the rest one sparse tier "all"
// (hot = 0: the sparse tier alone). A few rows all zero or nearly.
struct SparseFile {
  edo::test::TempDir dir;
  uint64_t rows, dim;
  std::string path = dir.file("s.edo");

  SparseFile(const std::string& spec, uint64_t d, uint64_t hot, uint64_t n = 300) : rows(n), dim(d) {
    edo::Rng rng(23);
    std::vector<float> x(rows * dim);
    for (auto& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
    for (uint64_t j = 0; j < dim; ++j) x[17 * dim + j] = 0.0f;
    for (uint64_t j = 1; j < dim; ++j) x[18 * dim + j] = 0.0f;
    auto w = edo::io::create_table(dir.file("t.npy"), rows, dim);
    w->write_f32(x.data(), rows);
    w->commit();
    auto table = edo::io::open_table(dir.file("t.npy"));
    edo::PackOptions opt;
    if (hot > 0) opt.tiers.push_back(edo::parse_tier_spec("hot:rows=" + std::to_string(hot) + ":fp32"));
    opt.tiers.push_back(edo::parse_tier_spec("all:rest:" + spec));
    opt.allow_larger_sparse = true;
    edo::pack_to_edo(*table, path, opt);
  }
};

void check_gpu_matches_cpu(const std::string& path) {
  const edo::Reader cpu = open_on(path, edo::Device::cpu), gpu = open_on(path, edo::Device::cuda);
  const uint64_t rows = cpu.rows();
  CHECK(same_bits(decode(cpu, 0, rows), decode(gpu, 0, rows)));
  // Ranges starting mid-tier and on odd rows: slices that do not start at value 0.
  for (const auto& [begin, count] :
       std::vector<std::pair<uint64_t, uint64_t>>{{1, 1}, {37, 200}, {151, 149}, {17, 2}}) {
    CAPTURE(begin);
    CHECK(same_bits(decode(cpu, begin, count), decode(gpu, begin, count)));
  }
  std::vector<float> all_cpu(rows * cpu.dim()), all_gpu(rows * cpu.dim());
  cpu.decode_all(all_cpu.data());
  gpu.decode_all(all_gpu.data());
  CHECK(same_bits(all_cpu, all_gpu));
}

// The tier's sections' offsets in the file.
struct Where {
  uint64_t offsets = 0, indices = 0, masks = 0;
};
Where sections_of(const std::string& path) {
  const edo::io::Container c = edo::io::Container::open(path);
  Where w;
  for (const auto& s : c.sections()) {
    if (s.name == "all/offsets") w.offsets = s.offset;
    if (s.name == "all/indices") w.indices = s.offset;
    if (s.name == "all/masks") w.masks = s.offset;
  }
  return w;
}

uint32_t get_u32(const std::string& bytes, uint64_t at) {
  uint32_t v;
  std::memcpy(&v, bytes.data() + at, 4);
  return v;
}
void put_u32(std::string& bytes, uint64_t at, uint32_t v) { std::memcpy(bytes.data() + at, &v, 4); }

}  // namespace

TEST_CASE("sparse cuda: GPU decode matches the CPU (skipped without a GPU)") {
  if (skip_without_gpu()) return;
  // dim 20: u8 columns; 300: u16 columns; 1500: masks wider than a warp's 32 words.
  for (const char* form : {"csr", "bitmap"})
    for (const char* values : {"fp32", "fp16", "bf16", "int8", "int4"})
      for (const uint64_t dim : {uint64_t{20}, uint64_t{300}, uint64_t{1500}}) {
        const std::string spec = std::string(form) + ":density=0.3,values=" + values;
        CAPTURE(spec);
        CAPTURE(dim);
        const SparseFile tiered(spec, dim, 10);
        check_gpu_matches_cpu(tiered.path);
        if (dim == 20) {
          const SparseFile alone(spec, dim, 0);
          check_gpu_matches_cpu(alone.path);
        }
      }
}

TEST_CASE("sparse cuda: a hostile file is the same error on the GPU, never a read outside its sections") {
  if (skip_without_gpu()) return;
  // The CPU's error, the same on the GPU (or, where the change leaves every
  // row valid, the same rows).
  const auto same_result = [](const std::string& hostile, const std::string& path, const char* what) {
    CAPTURE(what);
    edo::test::write_bytes(path, hostile);
    const edo::Reader cpu = open_on(path, edo::Device::cpu), gpu = open_on(path, edo::Device::cuda);
    std::vector<float> out_cpu(cpu.rows() * cpu.dim()), out_gpu(out_cpu.size());
    std::string want;
    try {
      cpu.decode_all(out_cpu.data());
    } catch (const edo::Error& e) {
      want = e.what();
    }
    if (want.empty()) {
      gpu.decode_all(out_gpu.data());
      CHECK(same_bits(out_cpu, out_gpu));
      return false;
    }
    CHECK(want.find("tier 'all': row ") != std::string::npos);
    CHECK(error_of([&] { gpu.decode_all(out_gpu.data()); }) == want);
    return true;
  };
  for (const char* spec : {"csr:k=4,values=int8", "bitmap:k=4,values=fp32", "csr:k=4,values=int4"}) {
    CAPTURE(spec);
    const SparseFile f(spec, 20, 10);
    const std::string bytes = edo::test::read_bytes(f.path), h_path = f.dir.file("h.edo");
    const Where w = sections_of(f.path);
    REQUIRE(w.offsets > 0);
    const bool csr = std::string(spec).starts_with("csr");
    const uint64_t first = csr ? w.indices : w.masks;
    REQUIRE(first > 0);
    std::string h = bytes;
    put_u32(h, w.offsets + 4 * 3, 0x7ffffff0u);  // row 2's end beyond the values
    CHECK(same_result(h, h_path, "offset beyond nnz"));
    h = bytes;
    h[first] = static_cast<char>(csr ? 200 : 0xff);  // row 0: column 200 / more bits than values
    CHECK(same_result(h, h_path, "index or mask"));
    put_u32(h, w.offsets + 4 * 41, get_u32(h, w.offsets + 4 * 40) - 2);  // and row 40 ends before it starts
    CHECK(same_result(h, h_path, "a bad row before bad offsets"));
    h = bytes;
    put_u32(h, w.offsets + 4 * 5, get_u32(h, w.offsets + 4 * 5) + 1);  // row 4 one more value, row 5 one fewer
    CHECK(same_result(h, h_path, "an odd int4 start, or a mask that disagrees") ==
          !std::string(spec).ends_with("int8"));
    h = bytes;
    put_u32(h, w.offsets + 4 * 7, get_u32(h, w.offsets + 4 * 6) + 21);  // row 6: more values than dim
    CHECK(same_result(h, h_path, "a row of more than dim values"));
  }
  // Columns out of order but below dim (no writer makes them): decoded in
  // order, the last value of a repeated column winning, as on the CPU.
  const SparseFile f("csr:k=6,values=fp32", 20, 0);
  std::string h = edo::test::read_bytes(f.path);
  const Where w = sections_of(f.path);
  std::swap(h[w.indices], h[w.indices + 3]);
  h[w.indices + 8] = h[w.indices + 7];
  edo::test::write_bytes(f.dir.file("u.edo"), h);
  check_gpu_matches_cpu(f.dir.file("u.edo"));
}
