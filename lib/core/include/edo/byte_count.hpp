// SPDX-License-Identifier: Apache-2.0
// Byte counts as users type them (edo-pack --budget 'bytes<=2G', edo-lookup
// --max-resident 1G): one grammar for every flag that takes one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edo {

// 1073741824, 1.5M, 2G, 64k, 2GiB, 2GB, 512B, as dd and numfmt read them: a
// decimal with no sign, then optionally a unit: K, M, G or T (either case)
// alone or followed by iB are powers of 1024 (2G = 2GiB = 2^31), followed by
// B powers of 1000 (2GB = 2e9); B alone is bytes. Fractions of a byte
// rounded down. nullopt for anything else, or a count of 2^63 bytes or more
// (docs/CLI.md, "Sizes").
std::optional<uint64_t> parse_byte_count(std::string_view text);

}  // namespace edo
