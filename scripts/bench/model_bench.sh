#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark (issue 45): a whole model in one run against the per-table runs a
# user scripts today, on the synthetic recommender of scripts/make_models.py
# (the 26 Criteo cardinalities, each capped at CAP rows, dim 64, Zipf counts).
# For edo-quantize (int8) and edo-pack (hot 10% fp16, rest int4, per-table
# counts): wall time and peak RSS of the model run, and the summed wall time
# and the largest peak RSS of the 26 table runs, in the same run; the read
# ceiling is `cat` of the tables' bytes to /dev/null (page cache warm).
#
# usage: scripts/bench/model_bench.sh [CAP] [DIR]    (default 1000000, /tmp)
# 1M: 5.57M rows, 1.43 GB of fp32, about a minute to generate. Needs
# /usr/bin/python3 with numpy. Everything it writes is removed on exit.
set -euo pipefail
cd "$(dirname "$0")/../.."
cap="${1:-1000000}"; dir="${2:-/tmp}"
build="${EDO_BUILD_DIR:-build}"
Q="$build/edo-quantize"; P="$build/edo-pack"
[ -x "$Q" ] || { echo "build first: scripts/build.sh" >&2; exit 1; }
work=$(mktemp -d "$dir/edo-model-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)," \
  "$(awk '/^MemTotal/ {printf "%d GiB RAM", $2 / 1048576}' /proc/meminfo), load average $(cut -d' ' -f1 /proc/loadavg)"
/usr/bin/python3 scripts/make_models.py criteo "$work/criteo" --cap "$cap" --freq-dir "$work/freq"
bytes=$(du -cb "$work"/criteo/*.npy | tail -1 | cut -f1)
echo "model: 26 tables, $(( bytes / 1000000 )) MB of fp32 (cap $cap rows a table)"

# run LOG CMD...: runs CMD under /usr/bin/time; prints "wall_seconds peak_rss_kb".
run() {
  local log=$1; shift
  /usr/bin/time -f '%e %M' -o "$log" "$@" >/dev/null 2>"$log.err" || { cat "$log.err" >&2; exit 1; }
  cat "$log"
}
ceiling=$(run "$work/t" cat "$work"/criteo/*.npy)
cat "$work"/criteo/*.npy >/dev/null  # warm
ceiling=$(run "$work/t" cat "$work"/criteo/*.npy)

bench() {  # NAME model-command-args... -- per-table-args (TABLE replaced)
  local name=$1; shift
  local model_args=() table_args=()
  while [ "$1" != "--" ]; do model_args+=("$1"); shift; done
  shift
  table_args=("$@")
  local m; m=$(run "$work/t" "${model_args[@]}")
  local wall_sum=0 rss_max=0 t
  for f in "$work"/criteo/*.npy; do
    t=$(basename "$f" .npy)
    local args=("${table_args[@]//TABLE/$t}")
    local r; r=$(run "$work/t" "${args[@]}")
    wall_sum=$(awk -v a="$wall_sum" -v b="${r% *}" 'BEGIN {print a + b}')
    rss_max=$(( ${r#* } > rss_max ? ${r#* } : rss_max ))
  done
  awk -v n="$name" -v mw="${m% *}" -v mr="${m#* }" -v tw="$wall_sum" -v tr="$rss_max" -v cw="${ceiling% *}" \
    -v b="$bytes" 'BEGIN {
      printf "%-14s model run %7.2f s, peak RSS %5.0f MB | 26 table runs %7.2f s (%.2fx the model run), largest peak RSS %5.0f MB | read ceiling %.2f s (model run %.1fx it), %.2f GB/s\n",
        n, mw, mr / 1024, tw, tw / mw, tr / 1024, cw, mw / (cw > 0 ? cw : 0.01), b / mw / 1e9 }'
}
bench "edo-quantize" "$Q" "$work/criteo" -o "$work/m.edo" --codec int8 -q -- \
  "$Q" "$work/criteo/TABLE.npy" -o "$work/TABLE.edo" --codec int8 -q
rm -f "$work"/*.edo
bench "edo-pack" "$P" "$work/criteo" -o "$work/m.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int4 \
  --freq-dir "$work/freq" -q -- \
  "$P" "$work/criteo/TABLE.npy" -o "$work/TABLE.edo" --tier hot:rows=10%:fp16 --tier cold:rest:int4 \
  --freq "$work/freq/TABLE.npy" -q
