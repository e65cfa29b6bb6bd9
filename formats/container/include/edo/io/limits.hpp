// SPDX-License-Identifier: Apache-2.0
// Bounds every layer checks a declared shape against, from the container up.
#pragma once

#include <cstdint>

namespace edo::io {

// Widest table any tool reads or writes (columns). A wider declared shape is
// a hostile or broken file, refused before anything is sized by it.
inline constexpr uint64_t kMaxDim = uint64_t{1} << 24;

}  // namespace edo::io
