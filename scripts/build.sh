#!/usr/bin/env bash
# Configures and builds edo (Release) into build/ (or $EDO_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${EDO_BUILD_DIR:-build}"
jobs="${EDO_JOBS:-$(nproc)}"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" -j "$jobs"
