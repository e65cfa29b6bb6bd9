#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Formats every C++ and CUDA source git tracks with the root .clang-format,
# or with --check lists the files that differ and exits 1 (ctest cli.format).
# usage: scripts/format.sh [--check]
set -euo pipefail
cd "$(dirname "$0")/.."
formatter="${CLANG_FORMAT:-clang-format}"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' '*.inc')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    "$formatter" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}"
    exit 1
  fi
  echo "format: ${#files[@]} files match .clang-format"
  exit 0
fi
"$formatter" -i "${files[@]}"
