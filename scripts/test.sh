#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
cd "${EDO_BUILD_DIR:-build}"
ctest --output-on-failure -j "${EDO_JOBS:-$(nproc)}" --timeout 900
