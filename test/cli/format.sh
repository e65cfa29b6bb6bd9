#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The tree matches .clang-format. Skips without clang-format 14 (the version
# scripts/bootstrap.sh installs from Debian): other majors format differently.
#   format.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
src=$(cd "$2" && pwd)
if ! command -v clang-format >/dev/null; then
  echo "skipped: clang-format not found"; exit 0
fi
major=$(clang-format --version | sed -n 's/.*version \([0-9]*\).*/\1/p')
if [ "$major" != 14 ]; then
  echo "skipped: clang-format $major formats differently from the 14 the tree is checked with"; exit 0
fi
if ! git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $src is not a git checkout"; exit 0
fi
exec bash "$src/scripts/format.sh" --check
