// SPDX-License-Identifier: Apache-2.0
// Byte counts as users type them (edo/byte_count.hpp).
#include <edo/byte_count.hpp>

#include <charconv>
#include <cmath>
#include <string>

namespace edo {

std::optional<uint64_t> parse_byte_count(std::string_view text) {
  // dd's and numfmt's reading: "K" and "KiB" are powers of 1024, "KB" of 1000.
  int base = 1024;
  if (text.ends_with("iB")) {
    text.remove_suffix(2);
  } else if (text.size() >= 2 && text.ends_with('B') &&
             std::string_view("KMGTkmgt").find(text[text.size() - 2]) != std::string_view::npos) {
    text.remove_suffix(1);
    base = 1000;
  } else if (text.ends_with('B')) {
    text.remove_suffix(1);
  }
  double unit = 1;
  if (!text.empty()) {
    const std::string_view units = "KMGT", lower = "kmgt";
    size_t u = units.find(text.back());
    if (u == std::string_view::npos) u = lower.find(text.back());
    if (u != std::string_view::npos) {
      unit = std::pow(static_cast<double>(base), static_cast<double>(u + 1));
      text.remove_suffix(1);
    }
  }
  if (text.empty() || text.front() == '-' || text.front() == '+') return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(v)) return std::nullopt;
  const double bytes = std::floor(v * unit);
  if (!(bytes < 9.2e18)) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

}  // namespace edo
