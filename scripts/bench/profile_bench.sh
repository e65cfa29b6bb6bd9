#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark: edo-profile on a large synthetic npy, against `cat FILE > /dev/null`
# (the read ceiling from the page cache) in the same run, with peak resident memory.
#
# usage: scripts/bench/profile_bench.sh [ROWS] [DIM] [DIR]
# default 8388608 x 128 float32 = 4 GiB in ${DIR:-/tmp}. Needs /usr/bin/python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-8388608}"; dim="${2:-128}"; dir="${3:-/tmp}"
file="$dir/edo-bench-${rows}x${dim}.npy"
bin="${EDO_BUILD_DIR:-build}/edo-profile"
[ -x "$bin" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
[ -f "$file" ] || /usr/bin/python3 scripts/bench/make_synthetic.py "$file" "$rows" "$dim"
bytes=$(stat -c %s "$file")
load() { cut -d' ' -f1 /proc/loadavg; }
echo "file: $file ($bytes bytes), machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(load)"
cat "$file" > /dev/null  # warm the page cache for both contenders

best() { sort -n | head -1; }
t_cat=$(for i in 1 2 3; do /usr/bin/time -f %e cat "$file" 2>&1 >/dev/null; done | best)
runs=$(for i in 1 2 3; do /usr/bin/time -f '%e %M' "$bin" --quiet --json "$file" 2>&1 >/dev/null | tail -1; done)
t_edo=$(echo "$runs" | awk '{print $1}' | best)
rss_kb=$(echo "$runs" | awk '{print $2}' | sort -n | tail -1)
awk -v b="$bytes" -v c="$t_cat" -v e="$t_edo" -v r="$rss_kb" 'BEGIN {
  printf "cat > /dev/null : %6.2f s  %6.2f GB/s\n", c, b / c / 1e9;
  printf "edo-profile     : %6.2f s  %6.2f GB/s  (%.2fx the time of cat)\n", e, b / e / 1e9, e / c;
  printf "peak RSS        : %6.0f MB  (goal < 1000 MB)\n", r / 1024;
}'
echo "best of 3 runs each; load average at the end $(load)"
