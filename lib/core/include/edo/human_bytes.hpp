// SPDX-License-Identifier: Apache-2.0
// Byte counts for people: decimal units (1 KB = 1000 B), as every report prints them.
#pragma once

#include <fmt/format.h>

#include <string>

namespace edo {

// "512 B", "1.23 MB" (`decimals` after the point above a kilobyte).
inline std::string human_bytes(double bytes, int decimals = 2) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (bytes >= 1000 && u < 4) {
    bytes /= 1000;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.{}f} {}", bytes, decimals, units[u]);
}

}  // namespace edo
