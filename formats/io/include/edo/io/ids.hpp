// SPDX-License-Identifier: Apache-2.0
// Row ids to look up (edo-lookup --ids). Two forms are read:
//   - text, one id a line: a decimal integer >= 0 with optional whitespace
//     around it; '#' starts a comment, blank lines are skipped;
//   - a .npy of integers (any of numpy's integer dtypes), shape (N,) or (N, 1).
// Input that starts with the .npy magic is read as .npy, anything else as
// text. Negative, non-integer or oversized ids (above 2^63 - 1) are errors
// naming the line (text) or the entry (.npy). Ids at or beyond a table's
// rows are kept: what they get is the reader's policy (UnknownIdPolicy).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edo::io {

struct IdList {
  std::vector<int64_t> ids;
  // The text line of each id (1-based), for errors about a particular id;
  // empty for .npy input (the entry index is the position).
  std::vector<uint64_t> lines;
  // Where entry i came from, for messages: "line L" or "entry i".
  std::string where(size_t i) const;
};

// The ids of `bytes` (a whole input); `display` names it in errors.
IdList parse_ids(std::string_view bytes, const std::string& display);
// The ids of a file, or of standard input for "-" (read to its end).
IdList read_ids(const std::string& path);

}  // namespace edo::io
