#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# EDO_READER_ONLY (what pip install . configures) looks for none of FAISS,
# HDF5, BLAS, LAPACK, libzip, zlib, CLI11 or doctest: a configure with each
# of them disabled succeeds and leaves no trace of them in its cache; and the
# Python module this build made needs none of them at run time (its NEEDED
# entries).
#   reader_only.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
disabled=()
for pkg in faiss HDF5 BLAS LAPACK CLI11 doctest ZLIB; do disabled+=("-DCMAKE_DISABLE_FIND_PACKAGE_$pkg=ON"); done
if ! cmake -S "$src" -B "$work/ro" -DEDO_READER_ONLY=ON -DEDO_ENABLE_CUDA=OFF "${disabled[@]}" >"$work/configure.log" 2>&1; then
  fail "a reader-only configure looked for a package it must not: $(grep -A3 -i 'error' "$work/configure.log" | head -8)"
else
  grep -q "the reader library and the Python module only" "$work/configure.log" || fail "no reader-only line in the configure"
  if grep -E '^(LIBZIP_|__pkg_config_checked_LIBZIP|HDF5_|faiss_DIR|BLAS_|LAPACK_|CLI11_DIR|doctest_DIR)' \
    "$work/ro/CMakeCache.txt" | grep -v -- '-NOTFOUND' | grep -q .; then
    fail "the reader-only cache holds: $(grep -E '^(LIBZIP_|HDF5_|faiss_DIR|BLAS_|LAPACK_|CLI11_DIR|doctest_DIR)' \
      "$work/ro/CMakeCache.txt" | head -3)"
  fi
  grep -q '^EDO_READER_ONLY:BOOL=ON' "$work/ro/CMakeCache.txt" || fail "EDO_READER_ONLY not in the cache"
fi
# The module of this build (the same target, linked against the reader alone).
module=$(ls "$build"/python/edo/_edo.*.so 2>/dev/null | head -n 1)
if [ -n "$module" ] && command -v readelf >/dev/null; then
  readelf -d "$module" | grep NEEDED >"$work/needed"
  if grep -Ei 'faiss|hdf5|blas|lapack|zip|libz\.|CLI11|doctest' "$work/needed"; then
    fail "the Python module needs a library the reader must not: $(cat "$work/needed")"
  fi
  echo "reader_only: the module needs $(sed 's/.*\[\(.*\)\]/\1/' "$work/needed" | tr '\n' ' ')"
fi
echo "reader_only: $failures failure(s)"
[ "$failures" -eq 0 ]
