# SPDX-License-Identifier: Apache-2.0
# Sourced by the fuzz tests (fuzz_parsers.sh, fuzz_roundtrip.sh), not a test itself.
#
# clang before 15 cannot compile libstdc++'s std::source_location (it needs
# __builtin_source_location), so <source_location> declares nothing and
# edo/device.hpp does not compile. For such a compiler every source gets a
# stand-in built on the older __builtin_FILE/__builtin_LINE (forced include).
# The fuzz targets call nothing that takes a source_location across the
# gcc-built libraries, so its layout never meets theirs.
#
#   fuzz_source_location_compat CXX WORK_DIR   sets compat_flags (empty when not needed)
fuzz_source_location_compat() {
  local cxx=$1 work=$2
  compat_flags=()
  printf '%s\n' '#include <source_location>' \
    'int main() { return static_cast<int>(std::source_location::current().line()); }' >"$work/source_location.cpp"
  if "$cxx" -std=c++20 -fsyntax-only "$work/source_location.cpp" >/dev/null 2>&1; then return 0; fi
  mkdir -p "$work/compat"
  cat >"$work/compat/source_location_compat.hpp" <<'EOF_COMPAT'
// Written by test/cli/fuzz_compat.bash: std::source_location for a clang whose
// libstdc++ <source_location> is empty (clang < 15). Fuzz builds only.
#pragma once
#include <source_location>
#ifndef __cpp_lib_source_location
#include <cstdint>
namespace std {
struct source_location {
  static constexpr source_location current(const char* file = __builtin_FILE(),
                                           const char* function = __builtin_FUNCTION(),
                                           uint_least32_t line = __builtin_LINE(),
                                           uint_least32_t column = __builtin_COLUMN()) noexcept {
    source_location l;
    l.file_ = file, l.function_ = function, l.line_ = line, l.column_ = column;
    return l;
  }
  constexpr source_location() noexcept = default;
  constexpr uint_least32_t line() const noexcept { return line_; }
  constexpr uint_least32_t column() const noexcept { return column_; }
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr const char* function_name() const noexcept { return function_; }

 private:
  const char* file_ = "";
  const char* function_ = "";
  uint_least32_t line_ = 0, column_ = 0;
};
}  // namespace std
#endif
EOF_COMPAT
  compat_flags=(-include "$work/compat/source_location_compat.hpp")
}
