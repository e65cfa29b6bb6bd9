// SPDX-License-Identifier: Apache-2.0
// Small work runs on the calling thread (lib/core/include/edo/parallel.hpp): it opens no
// parallel region, so libgomp, which creates its worker threads at the first
// region of more than one thread, never creates them. ctest runs every test
// case in a process of its own, where the thread count before and after says
// whether a team was ever formed.
#include "test_packed.hpp"
#include "test_util.hpp"

#include <edo/codec.hpp>
#include <edo/make_codec.hpp>
#include <edo/parallel.hpp>
#include <edo/reader.hpp>

#include <omp.h>

#include <filesystem>

namespace {

size_t thread_count() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

}  // namespace

TEST_CASE("parallel: small encodes, decodes, checks and lookups create no OpenMP threads") {
  CHECK_FALSE(edo::parallel_worth(edo::kParallelMinWork - 1));
  CHECK(edo::parallel_worth(edo::kParallelMinWork));

  // A small packed file, written on one thread before counting.
  omp_set_num_threads(1);
  const edo::test::Packed packed({"hot:rows=10%:fp16", "warm:rows=40%:int8", "cold:rest:int4"});
  omp_set_num_threads(omp_get_num_procs());
  const uint64_t rows = packed.rows, dim = packed.dim;
  const std::vector<float>& x = packed.values;
  if (omp_get_max_threads() < 2) {
    MESSAGE("one core: nothing to tell apart");
    return;
  }

  const size_t before = thread_count();
  const edo::Reader reader = edo::Reader::open(packed.path);
  std::vector<float> out(64 * dim);
  for (int round = 0; round < 200; ++round) {
    std::vector<int64_t> ids(64);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 37 + round) % rows);
    reader.lookup(ids.data(), ids.size(), out.data());
    reader.decode_rows(static_cast<uint64_t>(round), 8, out.data());
  }
  for (const char* spec : {"fp16", "int8", "int4:group=4", "fp8:e4m3", "bin"}) {
    const auto codec = edo::make_codec(spec, dim);
    std::vector<uint8_t> codes(64 * codec->code_size());
    codec->encode(x.data(), 64, codes.data());
    codec->decode(codes.data(), 64, out.data());
    edo::check_magnitudes(*codec, x.data(), out.data(), 64, {});
  }
  CHECK(thread_count() == before);

  // The control: work worth sharing does form a team (so the count above can tell).
  std::vector<float> big(edo::kParallelMinWork * 8);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i % 97) * 0.01f;
  const auto codec = edo::make_codec("int8", 64);
  std::vector<uint8_t> codes(big.size() / 64 * codec->code_size());
  codec->encode(big.data(), big.size() / 64, codes.data());
  // Only a process of its own (as under ctest) starts without libgomp's threads.
  WARN(thread_count() > before);
}
