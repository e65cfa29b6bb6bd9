// The reader's tier views by kind, opened by open_tier() (tiers.cpp).
// Internal to lib/reader.
#pragma once

#include <edo/io/container.hpp>
#include <edo/tier.hpp>

#include <nlohmann/json.hpp>

#include <memory>

namespace edo {

std::unique_ptr<TierView> open_sparse_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);
// "zero": every row decodes to zeros; no sections.
std::unique_ptr<TierView> open_zero_tier(const io::Container& c, const io::TierInfo& info);
// "centroids:C": C shared vectors and each row's index among them.
std::unique_ptr<TierView> open_centroid_tier(const io::Container& c, const io::TierInfo& info);
// "nearest:cos|l2": each row answered by another table row (TierView::redirect).
std::unique_ptr<TierView> open_nearest_tier(const io::Container& c, const io::TierInfo& info, const nlohmann::json& jt);

}  // namespace edo
