// SPDX-License-Identifier: Apache-2.0
// Where a tier's bytes are meant to live when served, a closed set every
// layer names: the container's manifest, the reader, the planner, reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edo {

// Where a tier's bytes are meant to live when served: a hint the reader acts
// on (ReaderOptions::device) and reports, never a correctness matter.
enum class Residency : uint8_t { host, gpu, disk };
std::optional<Residency> parse_residency(std::string_view text);  // "host", "gpu", "disk"
const char* residency_name(Residency r);

}  // namespace edo
