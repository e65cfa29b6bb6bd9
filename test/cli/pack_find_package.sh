#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the build into a temporary prefix, builds test/find_package (a
# separate CMake project using find_package(edo COMPONENTS reader)) against
# it, checks that its example_lookup links the reader library alone, and that
# it returns the same rows as the in-tree build.
#   pack_find_package.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/install.log"
test -f "$tmp/prefix/include/edo/reader.hpp"
test -f "$tmp/prefix/lib/cmake/edo/edoConfig.cmake" || test -f "$tmp/prefix/lib64/cmake/edo/edoConfig.cmake"
if ! cmake -S "$src/test/find_package" -B "$tmp/consumer" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1; then
  cat "$tmp/configure.log"; exit 1
fi
if ! cmake --build "$tmp/consumer" -j2 >"$tmp/build.log" 2>&1; then
  cat "$tmp/build.log"; exit 1
fi

# A serving program links edo::reader alone: no FAISS, HDF5, BLAS, LAPACK or
# CUDA runtime among its libraries, none linked in statically either.
for exe in "$tmp/consumer/example_lookup" "$build/example_lookup" "$tmp/consumer/reader_every_function"; do
  if readelf -d "$exe" | grep NEEDED | grep -Ei 'faiss|hdf5|blas|lapack|cudart|zip'; then
    echo "$exe: needs a library edo::reader must not pull in"; exit 1
  fi
  n=$(nm -C "$exe" | grep -c -E 'faiss::|cblas_|dsyevd|H5[A-Z]' || true)
  [ "$n" -eq 0 ] || { echo "$exe: $n FAISS/BLAS/LAPACK/HDF5 symbols linked in"; exit 1; }
done

"$build/edo-pack" "$src/data-samples/glove.6B.50d.10k.npy" -o "$tmp/g.edo" -q \
  --tier hot:rows=5%:fp16:gpu --tier cold:rest:int8 >/dev/null
"$tmp/consumer/example_lookup" "$tmp/g.edo" 0 42 9999 >"$tmp/installed.txt"
"$build/example_lookup" "$tmp/g.edo" 0 42 9999 >"$tmp/in_tree.txt"
cmp "$tmp/installed.txt" "$tmp/in_tree.txt"
"$tmp/consumer/reader_every_function" "$tmp/g.edo" >"$tmp/every.txt" || { cat "$tmp/every.txt"; exit 1; }
grep -q '^every reader function linked and answered$' "$tmp/every.txt"
grep -q '^tier hot: 500 rows, fp16, gpu$' "$tmp/installed.txt"
test "$(grep -c '^[0-9]*:' "$tmp/installed.txt")" -eq 3
# An id outside the table is a one-line error, exit 1.
if "$tmp/consumer/example_lookup" "$tmp/g.edo" 10000 2>"$tmp/err.txt"; then echo "id 10000 accepted"; exit 1; fi
grep -q 'id 10000' "$tmp/err.txt"
# A reader-only consumer that links edo::edo is told which component to ask
# for, not that hdf5::hdf5 is missing.
mkdir -p "$tmp/wrong"
cat >"$tmp/wrong/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.24)
project(edo_wrong_component LANGUAGES CXX)
find_package(edo REQUIRED COMPONENTS reader)
add_executable(x x.cpp)
target_link_libraries(x PRIVATE edo::edo)
CMAKE
echo 'int main() { return 0; }' >"$tmp/wrong/x.cpp"
if cmake -S "$tmp/wrong" -B "$tmp/wrong/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/wrong.log" 2>&1; then
  echo "a reader-only consumer linking edo::edo configured"; exit 1
fi
grep -q "edo_needs_find_package_edo_COMPONENTS_edo_not_only_reader" "$tmp/wrong.log" ||
  { echo "no hint to ask for COMPONENTS edo:"; cat "$tmp/wrong.log"; exit 1; }
if grep -q "hdf5" "$tmp/wrong.log"; then echo "the error still talks of hdf5:"; cat "$tmp/wrong.log"; exit 1; fi

echo "find_package(edo): ok"
