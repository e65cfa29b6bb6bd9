// SPDX-License-Identifier: Apache-2.0
// TEXMEX vector files (.fvecs, .bvecs, .ivecs): each record is a little-endian
// int32 dimension followed by that many float32 / uint8 / int32 values.
// As tables they open through open_table(); this header adds the whole-file
// read of an .ivecs, the format of ANN ground-truth neighbour lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace edo::io {

// Records wider than this are taken as corruption, not data.
inline constexpr uint64_t kMaxVecsDim = uint64_t{1} << 24;
// read_ivecs() refuses files larger than this (it holds the whole file).
inline constexpr uint64_t kMaxIvecsBytes = uint64_t{1} << 30;

// Reads every record of an .ivecs file, row-major, without the per-record
// dimension words. Sets *rows and *dim. Throws edo::Error naming `path` on a
// malformed, empty or oversized file.
std::vector<int32_t> read_ivecs(const std::string& path, uint64_t* rows, uint64_t* dim);

}  // namespace edo::io
