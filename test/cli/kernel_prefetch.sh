#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The pooling kernels keep their prefetches: GCC 12 silently drops a
# function's prefetches for shapes that look harmless (a null test first, a
# test for eight lines, a loop of nothing but prefetches; see
# lib/reader/pool_kernels_simd.inc), which took pooled lookups to a third of
# their speed with no test failing. Each kernel object must hold prefetch
# instructions. Not a timing: a check of what the compiler emitted.
#   kernel_prefetch.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
if ! command -v objdump >/dev/null; then
  echo "skipped: no objdump"
  exit 0
fi
for name in pool_kernels pool_kernels_avx2 pool_kernels_avx512; do
  obj=$(find "$build/CMakeFiles/edo_reader.dir" -name "$name.cpp.o" | head -n 1)
  [ -n "$obj" ] || { fail "no object for $name.cpp in $build"; continue; }
  count=$(objdump -d "$obj" | grep -c 'prefetch')
  [ "$count" -ge 4 ] || fail "$name.cpp.o holds $count prefetch instructions"
done
echo "kernel_prefetch: $failures failure(s)"
[ "$failures" -eq 0 ]
