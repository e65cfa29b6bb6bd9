// SPDX-License-Identifier: Apache-2.0
// Pooled lookups (Reader::lookup_bags): bags of ids summed, averaged or
// max-pooled per bag, as torch.nn.EmbeddingBag and FBGEMM's table-batched
// embeddings pool them.
#include "pool_kernels.hpp"
#include "reader_impl.hpp"

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
#include <memory>
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

void finish_bag(PoolMode mode, size_t n, uint64_t dim, float* out) {
  if (mode != PoolMode::mean || n == 0) return;
  const float factor = math::pool_mean_factor(n);
  for (uint64_t j = 0; j < dim; ++j) out[j] *= factor;
}

// Ids a pooling stream resolves at once (and about the ids a helper claims):
// its scratch (20 KiB, on the stack) stays in the L1 and L2 caches, and the
// prefetches run ahead across bags all the way through it.
constexpr size_t kStreamIds = 1024;
// Ids a GPU pooling window gathers at once (lookup_bags_device).
constexpr size_t kDeviceRows = 65536;

// Whether every id is in [0, rows): a pass the compiler vectorizes.
bool ids_inside(const int64_t* ids, size_t n, uint64_t rows) {
  bool inside = true;
  for (size_t k = 0; k < n; ++k) inside &= static_cast<uint64_t>(ids[k]) < rows;
  return inside;
}

}  // namespace

// Bags [b0, b1) pooled as one stream of ids: resolved kStreamIds at a time,
// each id's row address noted, then every bag's runs of ids in one tier
// handed to that tier (TierView::pool), in the bag's order, so each sum
// sees the reference's rows in the reference's order.
void Reader::Impl::pool_bags(const Bags& bags, size_t b0, size_t b1, PoolMode mode, float* out) const {
  std::array<uint32_t, kStreamIds> tier;
  std::array<uint64_t, kStreamIds> local;
  std::array<const uint8_t*, kStreamIds> codes;
  std::array<uint32_t, kStreamIds> row_bytes;  // rows of several tiers: each row's size, for its prefetch
  const uint32_t unknown = unknown_slot();
  // Every id in tier 0 (one tier, and no unknown id answered by the default vector): a bag's ids are one run.
  const bool one_tier = tiers.size() == 1 && options.unknown_ids != UnknownIdPolicy::default_vector;
  const bool identity = one_tier && map->kind() == IdMapKind::identity && !keyed_any && !redirecting_any;
  const size_t lo = bag_begin(bags, b0), hi = bag_end(bags, b1 - 1);
  size_t bag = b0;
  for (size_t at = lo; at == lo || at < hi; at += kStreamIds) {
    const size_t m = std::min(kStreamIds, hi - at), piece_end = at + m;
    // Ids of an identity map that all lie in the table are their own local ids.
    const uint64_t* locals = local.data();
    if (identity && ids_inside(bags.ids + at, m, rows)) {
      locals = reinterpret_cast<const uint64_t*>(bags.ids + at);
      std::fill(tier.begin(), tier.begin() + m, 0u);
    } else {
      resolve_ids(bags.ids + at, m, tier.data(), local.data(), at);
    }
    if (one_tier) {
      tiers[0]->row_addresses(locals, m, codes.data());
    } else {
      for (size_t k = 0; k < m; ++k) {
        codes[k] = tier[k] < unknown ? tiers[tier[k]]->row_address(local[k]) : nullptr;
        row_bytes[k] = tier[k] < unknown ? fetch_bytes[tier[k]] : 64;
      }
    }
    // Every bag with ids in this piece; a bag that goes on past it is taken up again by the next.
    for (; bag < b1; ++bag) {
      const size_t begin = bag_begin(bags, bag), end = bag_end(bags, bag);
      const size_t stop = std::min(end, piece_end);
      float* acc = out + static_cast<uint64_t>(bag) * dim;
      for (size_t i = std::max(begin, at); i < stop;) {
        const uint32_t t = tier[i - at];
        size_t j = one_tier ? stop : i + 1;
        while (j < stop && tier[j - at] == t) ++j;
        TierRows run;
        run.local = locals + (i - at);
        run.weights = bags.weights ? bags.weights + i : nullptr;
        run.n = j - i;
        run.codes = codes.data() + (i - at);
        run.ahead = piece_end - j;
        run.prefetch_bytes = widest_fetch;
        run.row_bytes = one_tier ? nullptr : row_bytes.data() + (i - at);
        run.dim = dim;
        if (t < unknown)
          tiers[t]->pool(run, mode, i == begin, acc);
        else
          detail::pool_vector(default_vector.data(), run, mode, i == begin, acc);
        i = j;
      }
      if (end > piece_end) break;
      finish_bag(mode, end - begin, dim, acc);
    }
  }
}

void Reader::lookup_bags(const Bags& bags, PoolMode mode, float* out) const {
  require_table("lookup_bags");
  check_bags(bags, mode, path());
  const uint64_t d = dim();
  std::fill(out, out + bags.count * d, 0.0f);
  if (bags.count == 0) return;
  // Runs of consecutive bags holding about kStreamIds ids (a bigger bag
  // alone), shared with idle cores (share_work); each bag is pooled by one
  // thread, so the sums do not depend on which.
  std::vector<size_t> chunk{0};
  for (size_t b = 1; b < bags.count; ++b)
    if (bag_begin(bags, b) - bag_begin(bags, chunk.back()) >= kStreamIds) chunk.push_back(b);
  chunk.push_back(bags.count);
  const auto pool_chunk = [&](size_t c) { impl_->pool_bags(bags, chunk[c], chunk[c + 1], mode, out); };
  const size_t chunks = chunk.size() - 1;
  if (chunks > 1 && parallel_worth(static_cast<uint64_t>(bags.ids_count) * d))
    share_work(chunks, pool_chunk);
  else
    for (size_t c = 0; c < chunks; ++c) pool_chunk(c);
}

void Reader::lookup_bags_device(const Bags& bags, PoolMode mode, float* out_device) const {
  require_table("lookup_bags_device");
#ifdef EDO_HAVE_CUDA
  lookup_device(bags.ids, 0, out_device);  // refuses a reader not opened for the GPU, before any allocation
  check_bags(bags, mode, path());
  const uint64_t d = dim();
  if (bags.count == 0) return;
  // Windows of consecutive bags of at most kDeviceRows ids (a bigger bag
  // alone, in pieces). A window whose rows all lie in resident tiers is
  // pooled straight from their codes (cuda::pool_codes); any other has its
  // rows gathered and decoded by lookup_device(), then folded by the
  // pooling kernel.
  const size_t window_rows = std::min(kDeviceRows, std::max<size_t>(bags.ids_count, 1));
  std::vector<cuda::DeviceCodeTier> resident(impl_->unknown_slot() + 1, cuda::DeviceCodeTier{{}, nullptr});
  for (size_t t = 0; t < impl_->device_tiers.size(); ++t)
    if (impl_->device_tiers[t]) resident[t] = {impl_->device_tiers[t]->layout, impl_->device_tiers[t]->device_codes()};
  DeviceBuffer d_resident(resident.size() * sizeof(cuda::DeviceCodeTier));
  d_resident.upload(resident.data(), d_resident.bytes());
  std::vector<uint32_t> tier(window_rows);
  std::vector<uint64_t> local(window_rows);
  DeviceBuffer d_tier(window_rows * sizeof(uint32_t)), d_local(window_rows * sizeof(uint64_t));
  std::unique_ptr<DeviceBuffer> rows;  // decoded rows, for the windows that need them
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
      impl_->resolve_ids(bags.ids + at, n, tier.data(), local.data(), at);
      const bool from_codes =
          std::all_of(tier.begin(), tier.begin() + n, [&](uint32_t t) { return resident[t].codes != nullptr; });
      if (from_codes && n > 0) {
        d_tier.upload(tier.data(), n * sizeof(uint32_t));
        d_local.upload(local.data(), n * sizeof(uint64_t));
      } else if (n > 0) {
        if (!rows) rows = std::make_unique<DeviceBuffer>(window_rows * d * sizeof(float));
        lookup_device(bags.ids + at, n, rows->as<float>());
      }
      d_begin.upload(begin.data(), begin.size() * sizeof(uint64_t));
      d_end.upload(end.data(), end.size() * sizeof(uint64_t));
      d_count.upload(count.data(), count.size() * sizeof(uint64_t));
      d_first.upload(first.data(), first.size());
      if (bags.weights && n > 0) d_weights.upload(bags.weights + at, n * sizeof(float));
      const float* weights = bags.weights ? d_weights.as<float>() : nullptr;
      float* out = out_device + static_cast<uint64_t>(b) * d;
      if (from_codes) {
        cuda::pool_codes(mode, d_resident.as<cuda::DeviceCodeTier>(), d_tier.as<uint32_t>(), d_local.as<uint64_t>(),
                         d_begin.as<uint64_t>(), d_end.as<uint64_t>(), d_first.as<uint8_t>(), d_count.as<uint64_t>(),
                         weights, e - b, static_cast<uint32_t>(d), out);
        check_cuda_launch("pool_codes");
      } else {
        cuda::pool_rows(mode, rows->as<float>(), d_begin.as<uint64_t>(), d_end.as<uint64_t>(), d_first.as<uint8_t>(),
                        d_count.as<uint64_t>(), weights, e - b, d, out);
        check_cuda_launch("pool_rows");
      }
    }
    b = e;
  }
  // The launches are asynchronous: a fault in one shows here, as lookup_device's do.
  if (const cudaError_t e = cuda::synchronize(); e != cudaSuccess)
    EDO_FAIL("{}: GPU pooled lookup failed: {}", path(), cudaGetErrorString(e));
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
  // Decoded rows folded value by value with pool_math.hpp's operations (the portable kernel's fold).
  const auto reference_fold = detail::pool_kernels(CpuPath::portable).fold;
  for (size_t b = 0; b < bags.count; ++b) {
    const size_t begin = bag_begin(bags, b), end = bag_end(bags, b);
    float* o = out + b * d;
    for (size_t at = begin; at < end; ++at) {
      lookup(bags.ids + at, 1, row.data());
      reference_fold(mode, row.data(), 1, bags.weights ? bags.weights + at : nullptr, d, at == begin, o);
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
