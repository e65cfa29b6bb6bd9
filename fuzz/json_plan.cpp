// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for plan files, the JSON edo-pack reads back with
// --config (written by edo-profile --plan --plan-config; docs/PACK.md, "Plan
// files"); run by test/cli/fuzz_roundtrip.sh. The input is the file:
// read_plan_file() opens it as edo-pack does, then what edo-pack does with
// the tiers follows: check_tier_specs() against a 1000 x 16 table (every
// codec's tier builder made at that width), and the tier slices of a hot
// order (tier_cuts(), tier_of_rows()) under access counts with ties and a
// head. Only edo::Error may come out. What must also hold, else abort():
//  - every tier read formats back to the same TierSpec (format_tier_spec(),
//    parse_tier_spec()), and the tiers written as a plan (plan_to_json())
//    read back the same (plan_from_json());
//  - the cuts, when accepted, start at 0, end at the table's rows, never
//    decrease, and give each row the tier whose slice of the order holds it.
//
// A row count of 2^53 or more ("rows=1e30") is refused at parse: it once
// parsed and printed through an undefined cast (seed huge_row_count.json).
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/pack.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

std::string describe(const edo::TierSpec& t) {
  return edo::format_tier_spec(t) + " (share kind " + std::to_string(static_cast<int>(t.share)) + ", value " +
         std::to_string(t.value) + ", codec '" + t.codec + "')";
}

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "json_plan: %s\n", what.c_str());
  std::abort();
}

constexpr uint64_t kRows = 1000, kDim = 16;

void check_slices(const std::vector<edo::TierSpec>& tiers) {
  std::vector<double> weights(kRows);
  for (uint64_t r = 0; r < kRows; ++r) weights[r] = static_cast<double>((r * 7919) % 13) + (r % 50 == 0 ? 1e4 : 0);
  const std::vector<uint64_t> order = edo::hot_order(weights);
  std::vector<uint64_t> cuts;
  try {
    cuts = edo::tier_cuts(tiers, order, weights);
  } catch (const edo::Error&) {
    return;
  }
  if (cuts.size() != tiers.size() + 1 || cuts.front() != 0 || cuts.back() != kRows)
    fail("tier_cuts gave " + std::to_string(cuts.size()) + " cuts from " + std::to_string(cuts.front()) + " to " +
         std::to_string(cuts.back()) + " for " + std::to_string(tiers.size()) + " tiers of " + std::to_string(kRows) +
         " rows");
  for (size_t t = 0; t + 1 < cuts.size(); ++t)
    if (cuts[t] > cuts[t + 1]) fail("tier_cuts decrease at tier " + std::to_string(t));
  const std::vector<uint8_t> tier_of = edo::tier_of_rows(order, cuts);
  if (tier_of.size() != kRows) fail("tier_of_rows gave the wrong number of rows");
  for (size_t t = 0; t + 1 < cuts.size(); ++t)
    for (uint64_t k = cuts[t]; k < cuts[t + 1]; ++k)
      if (tier_of[order[k]] != t) fail("row " + std::to_string(order[k]) + " is not in the tier of its slice");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<edo::TierSpec> tiers;
  try {
    tiers = edo::read_plan_file(edo::fuzz::input_file(data, size));
  } catch (const edo::Error&) {
    return 0;
  }
  if (tiers.empty()) fail("read_plan_file returned no tiers");
  for (const edo::TierSpec& t : tiers) {
    const std::string text = edo::format_tier_spec(t);
    edo::TierSpec back;
    try {
      back = edo::parse_tier_spec(text);
    } catch (const edo::Error& e) {
      fail("tier '" + text + "' does not parse back: " + e.what());
    }
    if (!(back == t)) fail("tier " + describe(t) + " parses back to " + describe(back));
  }
  try {
    if (!(edo::plan_from_json(edo::plan_to_json(tiers), "plan") == tiers))
      fail("the tiers written as a plan read back differently: " + edo::plan_to_json(tiers).dump());
  } catch (const edo::Error& e) {
    fail(std::string("the tiers written as a plan do not read back: ") + e.what());
  }
  try {
    edo::check_tier_specs(tiers, kRows, kDim);
  } catch (const edo::Error&) {
    return 0;
  }
  check_slices(tiers);
  return 0;
}
