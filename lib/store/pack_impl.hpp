// Internal to lib/store: pack.cpp, plan.cpp and table_writer.cpp.
#pragma once

#include <edo/io/table.hpp>

#include <cstdint>
#include <vector>

namespace edo::detail {

// One streaming pass: the XXH64 of the fp32 rows in order and, when asked,
// every row's L2 norm (the hot-order proxy without frequencies).
struct TablePass {
  uint64_t digest = 0;
  std::vector<double> norms;
};
TablePass digest_and_norms(io::TableReader& input, bool want_norms, size_t block_bytes);

}  // namespace edo::detail
