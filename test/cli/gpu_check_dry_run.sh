#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scripts/gpu-check.sh --dry-run on this build's binaries: the bundle a GPU
# machine gets is made, its size (with the working tree) is under the 64 MiB
# that travels, it unpacks, every binary finds its libraries in it and starts,
# every GPU test is reachable, and the run without a GPU says so cleanly.
#   gpu_check_dry_run.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
if ! grep -q 'EDO_BUILD_CUDA_STRING "ON"' "$build/generated/edo/build_info.hpp"; then
  echo "skipped: this build has no CUDA, so there is no GPU bundle to check"
  exit 0
fi
if [ ! -x "$build/scripts/bench/gpu/edo_bench_gpu" ]; then
  echo "skipped: edo_bench_gpu is not built (EDO_BUILD_BENCH=OFF?)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --fast-compress: xz -1 keeps this test quick; the real bundle (xz -9) is smaller still.
bash "$src/scripts/gpu-check.sh" --dry-run --no-build --fast-compress --build-dir "$build" \
  --bundle-file "$tmp/edo-gpu.tar.xz"
