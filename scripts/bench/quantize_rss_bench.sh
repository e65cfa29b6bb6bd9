#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 3): peak resident memory of edo-quantize on a table larger
# than half of this machine's memory (streaming must keep it under 1 GB).
#
# usage: scripts/bench/quantize_rss_bench.sh [CODEC] [DIR]
# default int8, in /tmp. Writes a synthetic npy of 0.55x MemTotal (dim 128) and
# the .edo beside it; both are deleted on exit. Needs /usr/bin/python3 with numpy.
set -euo pipefail
cd "$(dirname "$0")/../.."
codec="${1:-int8}"; dir="${2:-/tmp}"
bin="${EDO_BUILD_DIR:-build}/edo-quantize"
[ -x "$bin" ] || { echo "build first: cmake --build build" >&2; exit 1; }
mem_kb=$(awk '/^MemTotal/ {print $2}' /proc/meminfo)
dim=128
rows=$(( mem_kb * 1024 * 55 / 100 / (4 * dim) ))
need_kb=$(( rows * dim * 4 / 1024 * 13 / 10 ))  # the table plus the largest .edo (fp16), roughly
avail_kb=$(df -Pk "$dir" | awk 'NR == 2 {print $4}')
(( avail_kb > need_kb )) || { echo "$dir: needs $((need_kb >> 20)) GiB free, has $((avail_kb >> 20)) GiB" >&2; exit 1; }
file="$dir/edo-rss-bench-${rows}x${dim}.npy"; out="$dir/edo-rss-bench.edo"; log="$dir/edo-rss-bench.time"
trap 'rm -f "$file" "$out" "$log"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $((mem_kb >> 20)) GiB RAM, load average $(cut -d' ' -f1 /proc/loadavg)"
echo "generating $file ($rows x $dim fp32) ..."
/usr/bin/python3 scripts/bench/make_synthetic.py "$file" "$rows" "$dim"
bytes=$(stat -c %s "$file")
/usr/bin/time -v "$bin" "$file" -o "$out" --codec "$codec" --quiet > /dev/null 2> "$log"
awk -v b="$bytes" -v m="$mem_kb" -v o="$(stat -c %s "$out")" -F': ' '
  /Maximum resident set size/ {rss = $2}
  /Elapsed \(wall clock\)/ {wall = $2}
  END {
    printf "input           : %.2f GB (%.2fx of RAM)\n", b / 1e9, b / (m * 1024);
    printf "output          : %.2f GB\n", o / 1e9;
    printf "wall time       : %s\n", wall;
    printf "peak RSS        : %.0f MB (%.4fx of the input, goal < 1000 MB)\n", rss / 1024, rss * 1024 / b;
  }' "$log"
