// SPDX-License-Identifier: Apache-2.0
// Batch lookup throughput of a packed .edo (mmapped, CPU; GPU when present)
// next to a plain gather from the fp32 table in memory, in the same run, and
// the time Reader::open takes.
//   bench_lookup FILE.edo ORIGINAL.npy FREQ.npy [BATCH [IDS.npy]]
// IDS.npy (an integer .npy of BATCH ids) replaces the ids drawn by frequency,
// so another reader (the Python module) can be timed on the same ids.
#include <edo/device.hpp>
#include <edo/eval.hpp>
#include <edo/io/freq.hpp>
#include <edo/io/ids.hpp>
#include <edo/io/table.hpp>
#include <edo/reader.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

// Best batches per second over rounds of at least 0.3 s.
template <class Fn>
double batches_per_second(Fn&& fn) {
  double best = 0;
  for (int round = 0; round < 5; ++round) {
    const auto t0 = Clock::now();
    uint64_t n = 0;
    double s = 0;
    do {
      fn();
      ++n;
      s = std::chrono::duration<double>(Clock::now() - t0).count();
    } while (s < 0.3);
    best = std::max(best, static_cast<double>(n) / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 4) return std::fprintf(stderr, "usage: %s FILE.edo ORIGINAL.npy FREQ.npy [BATCH [IDS.npy]]\n", argv[0]), 2;
  const size_t batch = argc > 4 ? std::stoul(argv[4]) : 4096;
  std::vector<double> open_ms;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = Clock::now();
    const edo::Reader r = edo::Reader::open(argv[1]);
    open_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(open_ms.begin(), open_ms.end());
  const edo::Reader reader = edo::Reader::open(argv[1]);
  const uint64_t dim = reader.dim();
  auto original = edo::io::open_table(argv[2]);
  std::vector<float> table(original->rows() * dim);
  original->read_f32(0, original->rows(), table.data());
  const std::vector<double> freq = edo::io::read_frequencies(argv[3], reader.rows());
  const std::vector<uint64_t> drawn = edo::sample_weighted_ids(freq, batch, 7);
  std::vector<int64_t> ids(drawn.begin(), drawn.end());
  if (argc > 5) ids = edo::io::read_ids(argv[5]).ids;
  if (ids.size() != batch) return std::fprintf(stderr, "%s: %zu ids, not %zu\n", argv[5], ids.size(), batch), 2;
  std::vector<float> out(batch * dim);

  const double gather = batches_per_second([&] {
    for (size_t i = 0; i < batch; ++i)
      std::memcpy(out.data() + i * dim, table.data() + ids[i] * dim, dim * sizeof(float));
  });
  const double lookup = batches_per_second([&] { reader.lookup(ids.data(), ids.size(), out.data()); });
  std::printf("file %s: %llu x %llu, %llu bytes, %zu tiers\n", argv[1], static_cast<unsigned long long>(reader.rows()),
              static_cast<unsigned long long>(dim), static_cast<unsigned long long>(reader.file_bytes()),
              reader.tiers().size());
  std::printf("open (median of 20)          %10.3f ms\n", open_ms[open_ms.size() / 2]);
  std::printf("fp32 gather, in memory       %10.3g rows/s\n", gather * static_cast<double>(batch));
  std::printf("edo lookup, mmapped, CPU     %10.3g rows/s  (%.2fx the gather)\n", lookup * static_cast<double>(batch),
              lookup / gather);
  if (edo::cuda_available()) {
    edo::ReaderOptions opt;
    opt.device = edo::Device::cuda;
    const edo::Reader gpu = edo::Reader::open(argv[1], opt);
    edo::DeviceBuffer d_out(out.size() * sizeof(float));
    const double g = batches_per_second([&] { gpu.lookup_device(ids.data(), ids.size(), d_out.as<float>()); });
    std::printf("edo lookup, GPU (to device)  %10.3g rows/s\n", g * static_cast<double>(batch));
  }
}
