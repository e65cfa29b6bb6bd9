#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs dependencies, builds, and runs the test suite through ctest.
#   scripts/test.sh           every test (CI runs this)
#   scripts/test.sh --quick   all but the tests labelled slow or fuzz (test/CMakeLists.txt, "Labels")
set -euo pipefail
cd "$(dirname "$0")/.."
select=()
case "${1:-}" in
  --quick) select=(-LE 'slow|fuzz') ;;
  "") ;;
  *) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
scripts/bootstrap.sh
scripts/build.sh
cd "${EDO_BUILD_DIR:-build}"
# ctest runs two tests at a time and each uses every core through OpenMP and
# OpenBLAS. Small work stays on one thread (lib/core/include/edo/parallel.hpp), so nothing
# like OMP_WAIT_POLICY is exported here: CI runs what users run.
ctest --output-on-failure -j "${EDO_JOBS:-$(nproc)}" --timeout 900 "${select[@]}"
