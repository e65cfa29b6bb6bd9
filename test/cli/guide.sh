#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Every recipe of docs/GUIDE.md runs as written: each ```sh block, from the
# repository's root, with the build the test was given as B. A block that
# fails fails the test, with its output.
#   guide.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
mkdir -p "$work/blocks"
sh_blocks "$src/docs/GUIDE.md" "$work/blocks"
ran=0
for block in "$work"/blocks/*.sh; do
  grep -q '^B=build;' "$block" || { fail "docs/GUIDE.md block $(basename "$block") does not start B=build;"; continue; }
  ran=$((ran + 1))
  (cd "$src" && TMPDIR="$work" bash -eo pipefail <(sed "s#^B=build;#B=$build;#" "$block")) >"$work/out" 2>&1
  code=$?
  [ "$code" = 0 ] || fail "docs/GUIDE.md block $(basename "$block") exited $code: $(tail -8 "$work/out")"
done
[ "$ran" -eq 3 ] || fail "docs/GUIDE.md has $ran recipes, not 3"
echo "guide: $ran recipes, $failures failure(s)"
[ "$failures" -eq 0 ]
