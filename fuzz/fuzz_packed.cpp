// SPDX-License-Identifier: Apache-2.0
// libFuzzer target for tiered .edo files: the container, then the row-to-tier
// map (formats/container/rowmap.cpp: the packed map or its runs) and the lookup
// addressing the reader does with it:
// every row located, its code row bounds-checked against the tier's codes
// section and read, then the whole-map validation.
//
// Like fuzz_container, each input is tried as given and with its header and
// manifest checksums recomputed, so mutations reach the row map.
#include <edo/checked.hpp>
#include <edo/error.hpp>
#include <edo/io/container.hpp>

#include <edo/io/rowmap.hpp>
#include "reseal.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

void open_and_look_up(const uint8_t* data, size_t size) {
  try {
    const auto c = edo::io::Container::view(data, size, "fuzz-input", edo::io::Verify::structure);
    const nlohmann::json& m = c.manifest();
    if (!m.contains("rowmap") || !m["rowmap"].is_object()) return;
    const nlohmann::json& rm = m["rowmap"];
    const bool runs = rm.contains("runs") && rm["runs"].is_string();
    if (!runs && (!rm.contains("tier") || !rm["tier"].is_string() || !rm.contains("rank") || !rm["rank"].is_string()))
      return;
    std::vector<uint64_t> tier_rows;
    std::vector<edo::io::SectionView> codes;
    std::vector<uint64_t> code_size;
    for (size_t t = 0; t < c.tiers().size(); ++t) {
      const auto& info = c.tiers()[t];
      tier_rows.push_back(info.rows);
      const auto it = info.sections.find("codes");
      codes.push_back(it == info.sections.end() ? edo::io::SectionView{} : c.section(it->second));
      const nlohmann::json& jt = m["tiers"][t];
      code_size.push_back(
          jt.contains("code_size") && jt["code_size"].is_number_unsigned() ? jt["code_size"].get<uint64_t>() : 0);
    }
    const auto walk = [&](const auto& map) {
      uint64_t sum = 0;
      const uint64_t limit = c.rows() < 4096 ? c.rows() : 4096;
      for (uint64_t row = 0; row < limit; ++row) {
        edo::io::RowMap::Location loc;
        if (!map.try_locate(row, loc)) continue;
        // The reader's bounds rule: index < tier rows and rows * code_size == the codes section size.
        const auto need = edo::checked_mul(tier_rows[loc.tier], code_size[loc.tier]);
        if (!need || *need != codes[loc.tier].size || code_size[loc.tier] == 0) continue;
        const uint8_t* p = codes[loc.tier].data + loc.index * code_size[loc.tier];
        for (uint64_t b = 0; b < code_size[loc.tier]; ++b) sum += p[b];
      }
      map.validate();
      volatile uint64_t sink = sum;
      (void)sink;
    };
    if (runs) {
      const auto section = c.section(rm["runs"].get<std::string>());
      walk(edo::io::RowRuns(section.data, section.size, c.rows(), tier_rows, "fuzz-input"));
      return;
    }
    const auto tier = c.section(rm["tier"].get<std::string>());
    const auto rank = c.section(rm["rank"].get<std::string>());
    walk(edo::io::RowMap(tier.data, tier.size, rank.data, rank.size, c.rows(), tier_rows, "fuzz-input"));
  } catch (const edo::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  open_and_look_up(data, size);
  std::vector<uint8_t> sealed(data, data + size);
  if (edo::fuzz::reseal(sealed)) open_and_look_up(sealed.data(), sealed.size());
  return 0;
}
