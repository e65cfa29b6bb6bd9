// SPDX-License-Identifier: Apache-2.0
#include <edo/error.hpp>
#include <edo/matrix.hpp>

namespace edo {

Metric parse_metric(std::string_view name) {
  if (name == "ip") return Metric::ip;
  if (name == "l2") return Metric::l2;
  if (name == "cos") return Metric::cos;
  EDO_USAGE_FAIL("unknown metric '{}' (expected ip, l2 or cos)", name);
}

const char* metric_name(Metric m) {
  switch (m) {
    case Metric::ip:
      return "ip";
    case Metric::l2:
      return "l2";
    case Metric::cos:
      return "cos";
  }
  return "?";
}

}  // namespace edo
