// SPDX-License-Identifier: Apache-2.0
// Shard-set files: the bytes as a set file, opened (every entry's checks run;
// the shards it names do not exist, or are the fuzzer's own files).
#include "input_file.hpp"

#include <edo/error.hpp>
#include <edo/shard_set.hpp>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const std::string& path = edo::fuzz::input_file(data, size);
    if (!edo::is_shard_set_file(path)) return 0;
    const edo::ShardSet set = edo::ShardSet::open(path);
    std::vector<float> row(set.dim());
    set.decode_rows(0, 1, row.data());
  } catch (const edo::Error&) {
  }
  return 0;
}
