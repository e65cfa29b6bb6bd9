#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark: a table encoded in N shards (edo-quantize --shard I/N, run
# two at a time with xargs -P on this machine's cores) and merged
# (edo-pack --merge), against one process on the same table in the same
# run: wall times, peak RSS per process, byte identity of the merged file,
# and the per-shard rates docs/SCALE.md projects from.
#
# usage: scripts/bench/shard_bench.sh [ROWS] [DIM] [SHARDS] [DIR]
# default 33554432 x 128 float32 = 16 GiB, 8 shards, in ${DIR:-/tmp}. Needs /usr/bin/python3 with numpy
# and about 2.6x the table's size free on DIR's disk.
set -euo pipefail
cd "$(dirname "$0")/../.."
rows="${1:-33554432}"; dim="${2:-128}"; shards="${3:-8}"; dir="${4:-/tmp}"
build="${EDO_BUILD_DIR:-build}"
table="$dir/edo-shard-bench-${rows}x${dim}.npy"
work="$dir/edo-shard-bench"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
[ -f "$table" ] || /usr/bin/python3 scripts/bench/make_synthetic.py "$table" "$rows" "$dim"
cores=$(nproc)
echo "table: $table ($(stat -c %s "$table") bytes), $shards shards, machine: $cores cores," \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), load average $(cut -d' ' -f1 /proc/loadavg)"
cat "$table" > /dev/null  # the page cache, as far as it holds it, for every contender alike
timed() {  # label command...: one line "label seconds peak_MB"
  local label=$1; shift
  /usr/bin/time -f "$label %e %M" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%s %s %.0f\n", $1, $2, $3 / 1024}'
}
# Profile, trained state and one process: the rates of each step.
timed profile "$build/edo-profile" --json --quiet "$table"
timed train "$build/edo-quantize" "$table" -o "$work/model.edo" --codec pq:m=16 --train-only -q
timed whole "$build/edo-quantize" "$table" -o "$work/whole.edo" --codec int8 -q
# The shards, as many at once as there are cores, each timed alone.
start=$(date +%s.%N)
seq 0 $((shards - 1)) | xargs -P "$cores" -I{} /usr/bin/time -f "shard{} %e %M" -o "$work/time.{}" \
  "$build/edo-quantize" "$table" -o "$work/part-{}.edo" --codec int8 --shard "{}/$shards" -q --json \
  >/dev/null 2>&1
end=$(date +%s.%N)
for i in $(seq 0 $((shards - 1))); do awk '{printf "%s %s %.0f\n", $1, $2, $3 / 1024}' "$work/time.$i"; done
echo "shards_wall $(echo "$end - $start" | bc) -"
timed merge "$build/edo-pack" --merge "$work"/part-*.edo -o "$work/merged.edo" -q
if cmp -s "$work/whole.edo" "$work/merged.edo"; then echo "identical yes -"; else echo "identical NO -"; fi
echo "bytes $(stat -c %s "$work/whole.edo") -"
echo "columns: step, wall seconds, peak RSS MB; load average at the end $(cut -d' ' -f1 /proc/loadavg)"
