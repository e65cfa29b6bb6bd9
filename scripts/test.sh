#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
cd "${EDO_BUILD_DIR:-build}"
# ctest runs two tests at a time and each uses every core through OpenMP and
# OpenBLAS. The tools and the test binary make idle OpenMP threads sleep by
# themselves (lib/edo/passive_wait.hpp), so nothing is exported here: CI runs
# what users run.
ctest --output-on-failure -j "${EDO_JOBS:-$(nproc)}" --timeout 900
