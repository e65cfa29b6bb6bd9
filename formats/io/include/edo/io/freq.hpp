// SPDX-License-Identifier: Apache-2.0
// Per-row access counts ("frequency files") for a table of R rows.
//
// Two forms are read:
//   - a .npy of R integer or float counts, shape (R,) or (R, 1);
//   - text, one "id count" pair per line: whitespace separated, ids 0-based
//     and below R, '#' starts a comment, blank lines are skipped, ids that do
//     not appear count 0.
// A file is read as .npy when its name ends in .npy or it starts with the
// .npy magic, as text otherwise. Negative, NaN, infinite or non-numeric
// counts, repeated or out-of-range ids are errors that name the line (text)
// or the entry (.npy).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace edo::io {

std::vector<double> read_frequencies(const std::string& path, uint64_t rows);

// The text form, from memory; `display` names the input in errors.
std::vector<double> parse_frequency_text(std::string_view text, uint64_t rows, const std::string& display);

// Per-id weights of pooled lookups (edo-lookup --weights): a .npy of `count`
// numbers (any numeric dtype, shape (N,) or (N, 1)), each finite, of either
// sign; an error naming the file and the entry otherwise.
std::vector<float> read_weights(const std::string& path, uint64_t count);

}  // namespace edo::io
