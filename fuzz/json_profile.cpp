// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for profile parts, the JSON edo-profile reads back with
// --merge (written by edo-profile --shard I/N --json; docs/SCALE.md); run by
// test/cli/fuzz_roundtrip.sh. The input is one part, or a JSON array of up
// to four parts (the files of one --merge). Each goes through what
// edo-profile --merge does: parsed (invalid JSON and non-parts refused as the
// tool refuses them), the options taken from the first part
// (profile_part_options), the parts folded into the table's profile
// (merge_profile_parts), and the report written as JSON and as text. Only
// edo::Error may come out of the library; a crash, a sanitizer report, an
// input slower than the runner's timeout or memory beyond its limit is a
// finding. The PCA spectrum's width is capped at 64 columns here (a part
// may ask for any --max-pca-dim, and a PCA of d columns costs d^3): the merge
// itself runs whatever the part says.
#include <edo/error.hpp>
#include <edo/profile.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  nlohmann::json j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  std::vector<nlohmann::json> parts;
  if (j.is_array() && !j.empty() && j.size() <= 4) {
    for (auto& p : j) parts.push_back(std::move(p));
  } else {
    parts.push_back(std::move(j));
  }
  std::vector<std::string> names;
  for (const nlohmann::json& p : parts) {
    if (!edo::is_profile_part(p)) return 0;  // edo-profile: "not a profile part"
    names.push_back("part-" + std::to_string(names.size()) + ".json");
  }
  try {
    edo::ProfileOptions options = edo::profile_part_options(parts[0], edo::ProfileOptions{});
    options.max_pca_dim = std::min<uint64_t>(options.max_pca_dim, 64);
    const edo::TableProfile p = edo::merge_profile_parts(parts, names, options);
    const std::string json = edo::profile_report_json(p, nullptr, nullptr).dump(2);
    const std::string text = edo::profile_report_text(p, nullptr, nullptr, "");
    volatile size_t sink = json.size() + text.size();
    (void)sink;
  } catch (const edo::Error&) {
  }
  return 0;
}
