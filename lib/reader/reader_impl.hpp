// SPDX-License-Identifier: Apache-2.0
// The reader's state (Reader::Impl), shared by reader.cpp (opening, rows)
// and bags.cpp (pooled lookups). Internal to lib/reader.
#pragma once

#include "first_read_check.hpp"
#include "lookup_group.hpp"
#include "page_cache.hpp"

#include <edo/error.hpp>
#include <edo/io/container.hpp>
#include <edo/io/rowmap.hpp>
#include <edo/parallel.hpp>
#include <edo/reader.hpp>
#include <edo/tier.hpp>
#include <edo/work_share.hpp>

#ifdef EDO_HAVE_CUDA
#include <edo/codec_math.hpp>
#include <edo/device.hpp>
#endif

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace edo {

struct Reader::Impl {
  io::Container container;
  ReaderOptions options;
  // A model file's tables, in directory order, each opened at its first
  // use: held open, 65,536 tables' Readers took 513 MB to serve one row.
  mutable std::vector<std::unique_ptr<Reader>> model_tables;
  mutable std::mutex model_tables_mutex;
  ReaderOptions table_options;                 // how a model's tables open
  std::vector<uint32_t> model_tables_by_name;  // indices into model_tables in name order, for table(name)

  const Reader& model_table(size_t i) const {
    const std::lock_guard lock(model_tables_mutex);
    if (!model_tables[i])
      model_tables[i] =
          std::make_unique<Reader>(from_container(container.model_table(i, table_options.verify), table_options));
    return *model_tables[i];
  }
  std::vector<std::unique_ptr<TierView>> tiers;
  std::vector<TierStats> stats;
  std::unique_ptr<IdMap> map;
  std::vector<float> default_vector;
  uint64_t rows = 0, dim = 0;
  bool redirecting_any = false;  // a tier answers its ids with other rows (TierView::redirects)
  std::vector<bool> keyed;       // by tier: TierView::keyed_by_id
  bool keyed_any = false;
  std::unique_ptr<detail::PageCache> cache;  // ReaderOptions::max_resident
  std::vector<bool> cached;                  // by tier: read through the cache
  uint32_t hash_slot = 0;                    // the first keyed tier: unknown ids' tier under UnknownIdPolicy::hash
  // By tier: its per-row payload's check on first read (io::Verify::small), or null.
  std::vector<std::shared_ptr<const detail::FirstReadCheck>> first_read;
#ifdef EDO_HAVE_CUDA
  // A tier the GPU gathers and decodes: its codes in device memory (gpu
  // tiers), or host tiers' codes reached as options.host_access says.
  struct DeviceTier {
    math::ScalarLayout layout;
    std::unique_ptr<DeviceBuffer> codes;
    std::unique_ptr<PinnedHostView> pinned;
    std::unique_ptr<ManagedCopy> managed;
    const uint8_t* device_codes() const {
      if (codes) return codes->as<uint8_t>();
      if (pinned) return static_cast<const uint8_t*>(pinned->device_pointer());
      return static_cast<const uint8_t*>(managed->get());
    }
  };
  std::vector<std::optional<DeviceTier>> device_tiers;
#endif

  explicit Impl(io::Container c, const ReaderOptions& opt) : container(std::move(c)), options(opt) {}

  // Unknown ids take tier index tiers.size().
  uint32_t unknown_slot() const { return static_cast<uint32_t>(tiers.size()); }

  // Tier and local id of every id; throws on the first (lowest position) bad
  // id, naming its position in the caller's batch (`first` + k).
  void resolve_ids(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local, uint64_t first = 0) const {
    const size_t bad = map->resolve(ids, n, tier, local);
    if (bad < n) EDO_CORRUPT_FAIL("{}: row map is corrupt at row {}", container.path(), ids[bad]);
    if (keyed_any)
      for (size_t i = 0; i < n; ++i)
        if (tier[i] < tiers.size() && keyed[tier[i]]) local[i] = static_cast<uint64_t>(ids[i]);
    if (redirecting_any) follow_redirects(ids, n, tier, local);
    if (options.unknown_ids == UnknownIdPolicy::default_vector) return;
    const uint32_t unknown = unknown_slot();
    const bool hashing = options.unknown_ids == UnknownIdPolicy::hash;
    for (size_t i = 0; i < n; ++i) {
      if (tier[i] != unknown) continue;
      if (hashing && ids[i] >= 0) {
        tier[i] = hash_slot;
        local[i] = static_cast<uint64_t>(ids[i]);
        continue;
      }
      EDO_FAIL("{}: id {} (batch position {}) is {} ({} rows)", container.path(), ids[i], first + i,
               hashing ? "negative, which no hash serves" : "outside the table", rows);
    }
  }

  // Ids resolved to a redirecting tier take the tier and local id of the
  // row it names, which must be a stored row (no chains, no cycles).
  void follow_redirects(const int64_t* ids, size_t n, uint32_t* tier, uint64_t* local) const {
    for (size_t i = 0; i < n; ++i) {
      if (tier[i] >= tiers.size() || !tiers[tier[i]]->redirects()) continue;
      const uint64_t target = tiers[tier[i]]->redirect(local[i]);
      const auto id = static_cast<int64_t>(target);
      if (target >= rows || map->resolve(&id, 1, tier + i, local + i) != 1 || tier[i] >= tiers.size() ||
          tiers[tier[i]]->redirects())
        EDO_CORRUPT_FAIL("{}: row {} is answered by row {}, which is not a stored row", container.path(), ids[i],
                         target);
      if (keyed[tier[i]]) local[i] = target;
    }
  }

  // Positions grouped by tier (stable): positions of tier t are
  // order[start[t] .. start[t+1]).
  static void group_by_tier(const uint32_t* tier, size_t n, uint32_t slots, std::vector<uint64_t>& start,
                            std::vector<uint64_t>& order) {
    start.assign(slots + 1, 0);
    for (size_t i = 0; i < n; ++i) ++start[tier[i] + 1];
    for (uint32_t t = 0; t < slots; ++t) start[t + 1] += start[t];
    std::vector<uint64_t> next(start.begin(), start.end() - 1);
    order.resize(n);
    for (size_t i = 0; i < n; ++i) order[next[tier[i]]++] = i;
  }

  // Decodes m rows of slot t, local ids local[0..m), into out + dst[k] * dim.
  void gather(uint32_t t, const uint64_t* local, const uint64_t* dst, size_t m, float* out) const {
    if (t < tiers.size()) return tiers[t]->gather(local, dst, m, out);
    for (size_t k = 0; k < m; ++k) std::memcpy(out + dst[k] * dim, default_vector.data(), dim * sizeof(float));
  }

  // Ids a lookup resolves and groups at a time: its scratch (28 KiB) stays
  // in the L1/L2 cache, and blocks are what threads share out.
  static constexpr size_t kLookupBlock = 1024;
  // Ids a helper claims at once: a batch of 4096 is eight claims, small
  // enough that a helper descheduled mid-claim holds the call up little.
  static constexpr size_t kShareBlock = 512;
  // Tier slots (tiers and the unknown slot) up to which lookup_block counts
  // and groups tier by tier.
  static constexpr uint32_t kFewSlots = 4;

  // Looks up m <= kLookupBlock ids into out (row k at out + k * dim); `first`
  // is the block's position in the caller's batch, for error messages.
  void lookup_block(const int64_t* ids, size_t m, float* out, uint64_t first) const {
    static const std::array<uint64_t, kLookupBlock> identity = [] {
      std::array<uint64_t, kLookupBlock> a{};
      for (size_t k = 0; k < kLookupBlock; ++k) a[k] = k;
      return a;
    }();
    std::array<uint32_t, kLookupBlock> tier;
    std::array<uint64_t, kLookupBlock> local;
    resolve_ids(ids, m, tier.data(), local.data(), first);
    const uint32_t slots = unknown_slot() + 1;
    // Counted tier by tier while few: a count kept in a register vectorizes,
    // a histogram in memory waits on its own last store at every id.
    std::array<uint32_t, io::kMaxTiers + 2> count{};
    if (slots <= kFewSlots) {
      for (uint32_t t = 0; t < slots; ++t)
        count[t] = static_cast<uint32_t>(std::count(tier.data(), tier.data() + m, t));
    } else {
      for (size_t k = 0; k < m; ++k) ++count[tier[k]];
    }
    // The common case, one tier (or every id in one tier): in batch order.
    uint32_t used = 0;
    for (uint32_t t = 0; t < slots; ++t) used += count[t] > 0;
    if (used == 1)
      for (uint32_t t = 0; t < slots; ++t)
        if (count[t] == m) return gather(t, local.data(), identity.data(), m, out);
    // Otherwise (local id, position) runs, one per tier: few tiers by a
    // branch-free pass each, many by one counting-sort pass.
    std::array<uint32_t, io::kMaxTiers + 2> start{};
    for (uint32_t t = 0, sum = 0; t < slots; ++t) start[t] = sum, sum += count[t];
    // Spare room: detail::group_tier writes up to 4 entries past its run,
    // which the next tier's run overwrites (or nobody reads, after the last).
    std::array<uint64_t, kLookupBlock + 4> grouped_local, position;
    if (used <= kFewSlots) {
      for (uint32_t t = 0; t < slots; ++t)
        if (count[t] > 0)
          detail::group_tier(tier.data(), local.data(), m, t, grouped_local.data() + start[t],
                             position.data() + start[t]);
    } else {
      std::array<uint32_t, io::kMaxTiers + 2> next = start;
      for (size_t k = 0; k < m; ++k) {
        const uint32_t at = next[tier[k]]++;
        grouped_local[at] = local[k];
        position[at] = k;
      }
    }
    for (uint32_t t = 0; t < slots; ++t)
      if (count[t] > 0) gather(t, grouped_local.data() + start[t], position.data() + start[t], count[t], out);
  }

  // Blocks of the batch are shared with idle cores (share_work: the calling
  // thread never waits for a helper that has not started) when the batch is
  // worth it; the error of the lowest failing block (so of the first bad id)
  // is thrown. Each block writes only its own rows.
  void lookup(const int64_t* ids, size_t n, float* out) const {
    const size_t blocks = (n + kShareBlock - 1) / kShareBlock;
    const auto run = [&](size_t b) {
      const size_t begin = b * kShareBlock;
      lookup_block(ids + begin, std::min(kShareBlock, n - begin), out + begin * dim, begin);
    };
    if (blocks <= 1 || !parallel_worth(n * dim)) {
      for (size_t b = 0; b < blocks; ++b) run(b);
      return;
    }
    share_work(blocks, run);
  }

  // By tier: the bytes a prefetch of its row covers (TierView::fetch_bytes,
  // at least a line), and the most of them: a pooled lookup's one prefetch
  // distance (pool_kernels.hpp, PoolRun). Set by load().
  std::vector<uint32_t> fetch_bytes;
  uint32_t widest_fetch = 64;
  // Bags [b0, b1) of `bags` pooled into their rows of `out` (bags.cpp).
  void pool_bags(const Bags& bags, size_t b0, size_t b1, PoolMode mode, float* out) const;

  void load();
  std::vector<std::vector<io::SectionInfo>> check_small_sections() const;
  void defer_payload_checks(const std::vector<std::vector<io::SectionInfo>>& payload);
  void bound_memory();
  void upload_gpu_tiers();
};

}  // namespace edo
