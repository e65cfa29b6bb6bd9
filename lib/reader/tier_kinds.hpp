// SPDX-License-Identifier: Apache-2.0
// The reader's tier views by kind, opened by open_tier() (tiers.cpp).
// Internal to lib/reader.
#pragma once

#include <edo/codec.hpp>
#include <edo/io/container.hpp>
#include <edo/tier.hpp>

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>

namespace edo {

// A tier's stats before its kind adds codec, code size and bytes.
TierStats tier_base_stats(const io::TierInfo& info, TierKind kind);
// The section of `info` in role `role`, which must hold exactly `want` bytes
// (nullopt: the size overflowed); adds its size to stats.bytes. Throws
// naming the file and the tier.
io::SectionView tier_section(const io::Container& c, const io::TierInfo& info, const char* role,
                             std::optional<uint64_t> want, TierStats& stats);

std::unique_ptr<TierView> open_sparse_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);
// "lossless:values=V": values stored bit for bit, their exponents Huffman-coded (lossless.hpp).
std::unique_ptr<TierView> open_lossless_tier(const io::Container& c, const io::TierInfo& info,
                                             const nlohmann::json& jt);
// "zero": every row decodes to zeros; no sections.
std::unique_ptr<TierView> open_zero_tier(const io::Container& c, const io::TierInfo& info);
// "centroids:C": C shared vectors and each row's index among them.
std::unique_ptr<TierView> open_centroid_tier(const io::Container& c, const io::TierInfo& info);
// "nearest:cos|l2": each row answered by another table row (TierView::redirect).
std::unique_ptr<TierView> open_nearest_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);
// "hash:..." or "qr:...": shared tables addressed from the id (hash.hpp).
std::unique_ptr<TierView> open_hashed_tier(const io::Container& c, const io::TierInfo& info);
// "group:groups=C,residual=...": a base vector per group plus each row's residual.
std::unique_ptr<TierView> open_grouped_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);
// A codec's state blobs (float32, or float16 where "state_dtypes" says) from the tier's sections other than `skip`,
// shaped by the manifest's "state_shapes".
std::vector<NamedBlob> load_codec_state(const io::Container& c, const io::TierInfo& tier, const nlohmann::json& jt,
                                        std::initializer_list<const char*> skip);

}  // namespace edo
