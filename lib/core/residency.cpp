// SPDX-License-Identifier: Apache-2.0
#include <edo/residency.hpp>

namespace edo {

std::optional<Residency> parse_residency(std::string_view text) {
  if (text == "host") return Residency::host;
  if (text == "gpu") return Residency::gpu;
  if (text == "disk") return Residency::disk;
  return std::nullopt;
}

const char* residency_name(Residency r) {
  switch (r) {
    case Residency::gpu:
      return "gpu";
    case Residency::disk:
      return "disk";
    case Residency::host:
      break;
  }
  return "host";
}

}  // namespace edo
