#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The licence: LICENSE is the Apache License 2.0, every source file git
# tracks names it in an SPDX line among its first three lines, and the
# Python package's metadata says so.
#   licence.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/checks.bash" "$@"  # build, src, work (removed at exit), expect, fail, err_has
cd "$src" || exit 1
grep -q 'Apache License' LICENSE 2>/dev/null && grep -q 'Version 2.0, January 2004' LICENSE ||
  fail "LICENSE is not the Apache License 2.0"
for f in SECURITY.md CONTRIBUTING.md CHANGELOG.md python/README.md; do
  [ -s "$f" ] || fail "$f is missing"
done
grep -q 'license = {text = "Apache-2.0"}' pyproject.toml || fail "pyproject.toml names no licence"
checked=0
if git rev-parse --git-dir >/dev/null 2>&1; then
  while IFS= read -r f; do
    case "$f" in test/data/* | fuzz/corpus/* | data-samples/*) continue ;; esac
    case "$f" in
      *.cpp | *.hpp | *.cu | *.cuh | *.h | *.inc | *.py | *.pyi | *.sh | *.bash | *.cmake | *.in | */CMakeLists.txt | \
        CMakeLists.txt | .ci/run | pyproject.toml) ;;
      *) continue ;;
    esac
    checked=$((checked + 1))
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || fail "$f: no SPDX line in its first three lines"
  done < <(git ls-files)
  [ "$checked" -gt 300 ] || fail "only $checked source files found"
else
  echo "licence: not a git checkout; the SPDX lines are not checked"
fi
[ "$failures" -eq 0 ] || exit 1
echo "licence: LICENSE and $checked source files"
