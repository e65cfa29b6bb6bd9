// SPDX-License-Identifier: Apache-2.0
// Pooled lookups (Reader::lookup_bags): bags of ids summed, averaged or
// max-pooled per bag, as torch.nn.EmbeddingBag and FBGEMM's table-batched
// embeddings pool them.
#include <edo/error.hpp>
#include <edo/parallel.hpp>
#include <edo/reader.hpp>
#include <edo/work_share.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/cuda/lookup.cuh>
#include <edo/device.hpp>
#endif

#include <algorithm>
#include <cstring>
#include <exception>
#include <limits>
#include <vector>

namespace edo {

const char* pool_mode_name(PoolMode mode) {
  switch (mode) {
    case PoolMode::sum:
      return "sum";
    case PoolMode::mean:
      return "mean";
    case PoolMode::max:
      return "max";
  }
  return "sum";
}

PoolMode parse_pool_mode(std::string_view name) {
  if (name == "sum") return PoolMode::sum;
  if (name == "mean") return PoolMode::mean;
  if (name == "max") return PoolMode::max;
  EDO_USAGE_FAIL("pooling mode '{}': expected sum, mean or max", name);
}

namespace {

// Where bag b's ids begin and end, after check_bags().
size_t bag_begin(const Bags& b, size_t bag) { return static_cast<size_t>(b.offsets[bag]); }
size_t bag_end(const Bags& b, size_t bag) {
  return bag + 1 < b.count ? static_cast<size_t>(b.offsets[bag + 1]) : b.ids_count;
}

}  // namespace

void check_bags(const Bags& b, PoolMode mode, std::string_view what) {
  if (b.weights && mode != PoolMode::sum)
    EDO_USAGE_FAIL("{}: per-id weights pool with mode sum only (as EmbeddingBag's), not {}", what,
                   pool_mode_name(mode));
  if (b.count == 0) return;
  if (b.offsets[0] != 0) EDO_FAIL("{}: offsets: the first bag starts at {}, not 0", what, b.offsets[0]);
  for (size_t i = 1; i < b.count; ++i)
    if (b.offsets[i] < b.offsets[i - 1])
      EDO_FAIL("{}: offsets: bag offset {} ({}) is below the one before it ({})", what, i, b.offsets[i],
               b.offsets[i - 1]);
  if (static_cast<uint64_t>(b.offsets[b.count - 1]) > b.ids_count)
    EDO_FAIL("{}: offsets: the last bag starts at {}, beyond the {} ids", what, b.offsets[b.count - 1], b.ids_count);
}

namespace {

// Folds `n` decoded rows (ids [first, first + n) of the bag) into `out`,
// value by value as the GPU's pooling kernel does (pool_math.hpp).
void fold(PoolMode mode, const float* rows, size_t n, const float* weights, uint64_t dim, bool first_rows, float* out) {
  for (size_t k = 0; k < n; ++k) {
    const float* row = rows + k * dim;
    if (mode == PoolMode::max) {
      if (first_rows && k == 0) {
        std::memcpy(out, row, dim * sizeof(float));
        continue;
      }
      for (uint64_t j = 0; j < dim; ++j) out[j] = math::pool_max(out[j], row[j]);
      continue;
    }
    if (weights) {
      const float w = weights[k];
      for (uint64_t j = 0; j < dim; ++j) out[j] = math::pool_weighted_sum(out[j], w, row[j]);
    } else {
      for (uint64_t j = 0; j < dim; ++j) out[j] = math::pool_sum(out[j], row[j]);
    }
  }
}

void finish_bag(PoolMode mode, size_t n, uint64_t dim, float* out) {
  if (mode != PoolMode::mean || n == 0) return;
  const float factor = math::pool_mean_factor(n);
  for (uint64_t j = 0; j < dim; ++j) out[j] *= factor;
}

// Rows decoded at once: a buffer that stays in the core's cache (at most
// 256 rows and 256 KiB, at least one row), whatever the bags' sizes.
constexpr size_t kRowsAtOnce = 256;
constexpr size_t kBufferBytes = size_t{1} << 18;
size_t rows_at_once(uint64_t dim) {
  return std::clamp<size_t>(kBufferBytes / (std::max<uint64_t>(dim, 1) * sizeof(float)), 1, kRowsAtOnce);
}
// Ids a GPU pooling window gathers at once (lookup_bags_device).
constexpr size_t kDeviceRows = 65536;
// Bags a helper claims at once.
constexpr size_t kBagsAtOnce = 16;

}  // namespace

void Reader::lookup_bags(const Bags& bags, PoolMode mode, float* out) const {
  require_table("lookup_bags");
  check_bags(bags, mode, path());
  const uint64_t d = dim();
  std::fill(out, out + bags.count * d, 0.0f);
  // Bags shared with idle cores a few at a time (share_work); each bag is
  // folded by one thread, so the sums do not depend on which. The rows of
  // consecutive small bags are decoded in one lookup (one resolve, one
  // prefetching gather per tier over all of them), then folded bag by bag.
  const size_t at_once = rows_at_once(d);
  const auto pool_bags = [&](size_t chunk) {
    thread_local std::vector<float> rows;
    rows.resize(at_once * d);
    const size_t first = chunk * kBagsAtOnce, last = std::min(bags.count, first + kBagsAtOnce);
    for (size_t b = first; b < last;) {
      // Bags [b, e) whose ids fit the buffer together (at least bag b, in pieces if it is bigger).
      size_t e = b + 1;
      while (e < last && bag_end(bags, e) - bag_begin(bags, b) <= at_once) ++e;
      const size_t begin = bag_begin(bags, b), end = bag_end(bags, e - 1);
      for (size_t at = begin; at < end; at += at_once) {
        const size_t n = std::min(at_once, end - at);
        lookup(bags.ids + at, n, rows.data());
        // Each bag's share of the rows [at, at + n): bags that start before `at` continue.
        for (size_t bag = b; bag < e; ++bag) {
          const size_t lo = std::max(bag_begin(bags, bag), at), hi = std::min(bag_end(bags, bag), at + n);
          if (lo >= hi) continue;
          fold(mode, rows.data() + (lo - at) * d, hi - lo, bags.weights ? bags.weights + lo : nullptr, d,
               lo == bag_begin(bags, bag), out + static_cast<uint64_t>(bag) * d);
        }
      }
      for (size_t bag = b; bag < e; ++bag)
        finish_bag(mode, bag_end(bags, bag) - bag_begin(bags, bag), d, out + static_cast<uint64_t>(bag) * d);
      b = e;
    }
  };
  const size_t chunks = (bags.count + kBagsAtOnce - 1) / kBagsAtOnce;
  if (parallel_worth(static_cast<uint64_t>(bags.ids_count) * d))
    share_work(chunks, pool_bags);
  else
    for (size_t c = 0; c < chunks; ++c) pool_bags(c);
}

void Reader::lookup_bags_device(const Bags& bags, PoolMode mode, float* out_device) const {
  require_table("lookup_bags_device");
#ifdef EDO_HAVE_CUDA
  lookup_device(bags.ids, 0, out_device);  // refuses a reader not opened for the GPU, before any allocation
  check_bags(bags, mode, path());
  const uint64_t d = dim();
  if (bags.count == 0) return;
  // Windows of consecutive bags of at most kDeviceRows ids (a bigger bag
  // alone, in pieces): rows gathered and decoded by lookup_device(), then
  // folded by the pooling kernel.
  const size_t window_rows = std::min(kDeviceRows, std::max<size_t>(bags.ids_count, 1));
  DeviceBuffer rows(window_rows * d * sizeof(float));
  DeviceBuffer d_begin(kDeviceRows * sizeof(uint64_t)), d_end(kDeviceRows * sizeof(uint64_t));
  DeviceBuffer d_count(kDeviceRows * sizeof(uint64_t)), d_first(kDeviceRows);
  DeviceBuffer d_weights(bags.weights ? window_rows * sizeof(float) : 1);
  std::vector<uint64_t> begin, end, count;
  std::vector<uint8_t> first;
  for (size_t b = 0; b < bags.count;) {
    size_t e = b + 1;
    while (e < bags.count && e - b < kDeviceRows && bag_end(bags, e) - bag_begin(bags, b) <= kDeviceRows) ++e;
    const size_t lo = bag_begin(bags, b), hi = bag_end(bags, e - 1);
    for (size_t at = lo; at == lo || at < hi; at += kDeviceRows) {
      const size_t n = std::min(kDeviceRows, hi - at);
      begin.clear(), end.clear(), count.clear(), first.clear();
      for (size_t bag = b; bag < e; ++bag) {
        const size_t bag_lo = std::max(bag_begin(bags, bag), at), bag_hi = std::min(bag_end(bags, bag), at + n);
        begin.push_back(bag_lo - at);
        end.push_back(std::max(bag_lo, bag_hi) - at);
        first.push_back(bag_begin(bags, bag) >= at);
        count.push_back(bag_end(bags, bag) <= at + n ? bag_end(bags, bag) - bag_begin(bags, bag) : 0);
      }
      if (n > 0) lookup_device(bags.ids + at, n, rows.as<float>());
      d_begin.upload(begin.data(), begin.size() * sizeof(uint64_t));
      d_end.upload(end.data(), end.size() * sizeof(uint64_t));
      d_count.upload(count.data(), count.size() * sizeof(uint64_t));
      d_first.upload(first.data(), first.size());
      if (bags.weights && n > 0) d_weights.upload(bags.weights + at, n * sizeof(float));
      cuda::pool_rows(mode, rows.as<float>(), d_begin.as<uint64_t>(), d_end.as<uint64_t>(), d_first.as<uint8_t>(),
                      d_count.as<uint64_t>(), bags.weights ? d_weights.as<float>() : nullptr, e - b, d,
                      out_device + static_cast<uint64_t>(b) * d);
      check_cuda_launch("pool_rows");
    }
    b = e;
  }
#else
  (void)bags, (void)mode, (void)out_device;
  require_device(Device::cuda);
#endif
}

void Reader::lookup_bags_reference(const Bags& bags, PoolMode mode, float* out) const {
  require_table("lookup_bags");
  check_bags(bags, mode, path());
  const uint64_t d = dim();
  std::fill(out, out + bags.count * d, 0.0f);
  std::vector<float> row(d);
  for (size_t b = 0; b < bags.count; ++b) {
    const size_t begin = bag_begin(bags, b), end = bag_end(bags, b);
    float* o = out + b * d;
    for (size_t at = begin; at < end; ++at) {
      lookup(bags.ids + at, 1, row.data());
      fold(mode, row.data(), 1, bags.weights ? bags.weights + at : nullptr, d, at == begin, o);
    }
    finish_bag(mode, end - begin, d, o);
  }
}

void Reader::lookup_bags(std::span<const TableBags> sets, PoolMode mode) const {
  std::vector<const Reader*> readers;
  readers.reserve(sets.size());
  for (const TableBags& t : sets) readers.push_back(&table(t.table));  // every name checked first
  for (size_t i = 0; i < sets.size(); ++i) readers[i]->lookup_bags(sets[i].bags, mode, sets[i].out);
}

}  // namespace edo
