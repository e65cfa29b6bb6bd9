#!/usr/bin/env bash
# Installs dependencies, builds, and runs the whole test suite through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
scripts/build.sh
cd "${EDO_BUILD_DIR:-build}"
# ctest runs two tests at a time and each uses every core through OpenMP and
# OpenBLAS; idle OpenMP threads that spin instead of sleeping slow the
# oversubscribed machine down several times over.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
ctest --output-on-failure -j "${EDO_JOBS:-$(nproc)}" --timeout 900
