#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# No function in lib/, formats/ or apps/ is longer than 120 lines (CONTRIBUTING in
# README: measured by Universal Ctags). Skips without Universal Ctags.
#   function_length.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
src=$(cd "$2" && pwd)
if ! ctags --version 2>/dev/null | grep -q 'Universal Ctags'; then
  echo "skipped: Universal Ctags not found (scripts/bootstrap.sh installs it)"; exit 0
fi
if ! git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "skipped: $src is not a git checkout"; exit 0
fi
exec bash "$src/scripts/function_length.sh" 120
