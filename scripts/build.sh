#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures and builds edo (Release) into build/ (or $EDO_BUILD_DIR).
# The compiler's full output goes to BUILD_DIR/build.log; stderr gets one line
# saying what is built and where the log is, the progress every 10%, and on
# failure the log's last lines. A first build took 7 to 19 minutes on the
# project's 2-core VMs (CUDA kernels and the libFuzzer targets included;
# docs/DEVELOPING.md, "Build and test times", has each measurement).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${EDO_BUILD_DIR:-build}"
jobs="${EDO_JOBS:-$(nproc)}"
mkdir -p "$build_dir"
log="$build_dir/build.log"
start=$(date +%s)
echo "build: edo (Release) in $build_dir with $jobs jobs; a first build took 7 to 19 minutes on 2 cores" \
  "(docs/DEVELOPING.md); the full output is in $log" >&2
if ! { cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" && cmake --build "$build_dir" -j "$jobs"; } \
  > >(tee "$log" | awk '
        match($0, /^\[ *[0-9]+%\]/) {
          p = substr($0, RSTART + 1, RLENGTH - 3) + 0
          if (p >= shown + 10) { shown = p - p % 10; printf "build: %d%%\n", shown > "/dev/stderr"; fflush("/dev/stderr") }
        }') 2>&1; then
  sleep 0.2  # let the log's writer finish
  echo "build: FAILED; the last lines of $log:" >&2
  tail -n 30 "$log" >&2
  exit 1
fi
sleep 0.2
echo "build: done in $(( $(date +%s) - start )) s." >&2
if ls "$build_dir"/python/edo/_edo.*.so >/dev/null 2>&1; then
  echo "build: the Python module: PYTHONPATH=$build_dir/python /usr/bin/python3 -c 'import edo; print(edo.__version__)'" >&2
fi
