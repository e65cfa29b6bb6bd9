// SPDX-License-Identifier: Apache-2.0
// Byte counts as users type them (edo-pack --budget 'bytes<=2G', edo-lookup
// --max-resident 1G): one grammar for every flag that takes one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace edo {

// 1073741824, 1.5M, 2G, 64k, 2GB, 2GiB, 512B: a decimal with no sign, then
// optionally K, M, G or T (powers of 1024, either case) and optionally B or
// iB after it (B alone after the number too); fractions of a byte rounded
// down. nullopt for anything else, or a count of 2^63 bytes or more.
std::optional<uint64_t> parse_byte_count(std::string_view text);

}  // namespace edo
